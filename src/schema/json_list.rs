//! Reading a large JSON object, such as the List that `kubectl get crds -o json` prints, one
//! member (and one `items` element) at a time.
//!
//! serde_json reads from a slice several times faster than from a reader: it finds the ends of
//! strings and blanks by searching a slice, but takes a reader's bytes one at a time. So each
//! value's bytes are found first (by its brackets and strings, in a buffer that holds little
//! more than that value) and then given to serde_json as a slice, which checks them in full.
//!
//! Anything this reader does not understand, down to the first syntax error, ends it with
//! `None`: the caller then reads the text the ordinary way, which gives the same result or
//! reports the error as always.

use std::collections::BTreeSet;
use std::io::Read;

use serde_json::Value;

/// What the object held besides its `items`.
pub struct Outline {
    /// Every member's key (each appears once: a repeated key ends the read).
    pub keys: BTreeSet<String>,
    /// The value of the `kind` member, if any.
    pub kind: Option<Value>,
}

/// Nesting this deep inside one value is left to the ordinary reader: serde_json limits the
/// nesting of a whole text (128), and a value inside the List starts two levels down.
const MAX_DEPTH: usize = 100;

/// How much is read at a time.
const CHUNK: u64 = 1 << 16;

/// How much is read first: enough to see whether the text opens an object at all (most files
/// given are YAML), without a large buffer for each.
const FIRST: u64 = 256;

/// Reads the JSON object in `reader`, handing each element of its `items` array (its bytes
/// without blanks, a complete JSON value) to `item`, which may stop the read with `None`. The other
/// members are parsed, and only the `kind` is kept.
///
/// `None` when the text is not a single JSON object with an array as `items` (if present), has
/// a repeated key, a syntax error or anything else but blanks after the object, or cannot be
/// read.
pub fn each_item(reader: impl Read, item: impl FnMut(Compact) -> Option<()>) -> Option<Outline> {
    each_item_read_by(reader, CHUNK, item)
}

/// [`each_item`], reading `chunk` bytes at a time.
fn each_item_read_by(
    reader: impl Read,
    chunk: u64,
    mut item: impl FnMut(Compact) -> Option<()>,
) -> Option<Outline> {
    let mut kind = None;
    let keys = Pieces::new(reader, chunk).object(|text, key| {
        if key == "items" {
            text.expect(b'[')?;
            if text.blank_then()? == b']' {
                text.at += 1;
                return Some(());
            }
            loop {
                text.forget_read();
                text.value()?;
                // Checked as UTF-8 once: serde_json then reads each string without checking it
                // again (from a slice, it checks every string on its own).
                item(Compact {
                    text: std::str::from_utf8(&text.compact).ok()?,
                    commas: &text.commas,
                })?;
                if text.comma_or(b']')? {
                    return Some(());
                }
            }
        }
        text.value()?;
        let value: Value = serde_json::from_slice(&text.compact).ok()?;
        if key == "kind" {
            kind = Some(value);
        }
        Some(())
    })?;
    Some(Outline { keys, kind })
}

/// One value of the text, without blanks.
pub struct Compact<'a> {
    pub text: &'a str,
    /// Where the commas between its own members or elements are (not those nested deeper).
    commas: &'a [usize],
}

impl<'a> Compact<'a> {
    /// Calls `member` with the key and the text of each member of this value, which must be
    /// an object (with no key repeated). `None` as for [`each_item`].
    pub fn each_member(&self, mut member: impl FnMut(&str, &'a str) -> Option<()>) -> Option<()> {
        let inside = self.text.strip_prefix('{')?.strip_suffix('}')?;
        if inside.is_empty() {
            return Some(());
        }
        let mut keys = BTreeSet::new();
        let mut start = 0;
        // Commas are counted from the opening brace, which `inside` leaves out.
        for end in self.commas.iter().map(|c| c - 1).chain([inside.len()]) {
            let pair = inside.get(start..end)?;
            let key_end = string_len(pair.as_bytes())?;
            let key: String = serde_json::from_str(&pair[..key_end]).ok()?;
            let value = pair[key_end..].strip_prefix(':')?;
            member(&key, value)?;
            if !keys.insert(key) {
                return None;
            }
            start = end + 1;
        }
        Some(())
    }
}

/// The length of the JSON string at the start of `bytes`, quotes included.
fn string_len(bytes: &[u8]) -> Option<usize> {
    let mut index = 1;
    if bytes.first() != Some(&b'"') {
        return None;
    }
    loop {
        let found = memchr::memchr2(b'"', b'\\', bytes.get(index..)?)?;
        if bytes[index + found] == b'"' {
            return Some(index + found + 1);
        }
        index += found + 2;
    }
}

/// The text being read: `buffer[at..]` is what has been read but not yet looked at.
struct Pieces<R> {
    reader: R,
    chunk: u64,
    buffer: Vec<u8>,
    at: usize,
    /// The last value read, without blanks.
    compact: Vec<u8>,
    /// Where the commas of the last value's own members or elements are in `compact`.
    commas: Vec<usize>,
    /// Whether anything has been read yet.
    started: bool,
    failed: bool,
}

/// Whether `byte` may be part of a number, `true`, `false` or `null`.
fn in_scalar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'.')
}

impl<R: Read> Pieces<R> {
    fn new(reader: R, chunk: u64) -> Self {
        Pieces {
            reader,
            chunk,
            buffer: Vec::new(),
            at: 0,
            compact: Vec::new(),
            commas: Vec::new(),
            started: false,
            failed: false,
        }
    }

    /// Reads the whole text as one JSON object, calling `member` with each key when the
    /// member's value is next (it must consume it), and gives the keys, each of which may
    /// appear once. Only blanks may follow the object.
    fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &str) -> Option<()>,
    ) -> Option<BTreeSet<String>> {
        let mut keys = BTreeSet::new();
        self.expect(b'{')?;
        if self.blank_then()? == b'}' {
            self.at += 1;
        } else {
            loop {
                self.value()?;
                let key: String = serde_json::from_slice(&self.compact).ok()?;
                self.expect(b':')?;
                member(self, &key)?;
                if !keys.insert(key) {
                    return None;
                }
                if self.comma_or(b'}')? {
                    break;
                }
                self.forget_read();
            }
        }
        match self.blank_then() {
            None if !self.failed => Some(keys),
            _ => None,
        }
    }

    /// Reads more onto the buffer (at first only a little); false at the end of the text or
    /// when it cannot be read.
    fn more(&mut self) -> bool {
        let size = if self.started {
            self.chunk
        } else {
            self.chunk.min(FIRST)
        };
        self.started = true;
        match (&mut self.reader).take(size).read_to_end(&mut self.buffer) {
            Ok(n) => n > 0,
            Err(_) => {
                self.failed = true;
                false
            }
        }
    }

    /// Drops what has been looked at, so that the buffer holds about one value at a time.
    fn forget_read(&mut self) {
        if self.at >= self.chunk as usize {
            self.buffer.drain(..self.at);
            self.at = 0;
        }
    }

    /// The byte at `index`, reading on as needed; `None` past the end.
    fn byte(&mut self, index: usize) -> Option<u8> {
        while index >= self.buffer.len() {
            if !self.more() {
                return None;
            }
        }
        Some(self.buffer[index])
    }

    /// Skips blanks (JSON's four), to the next byte, which is not consumed.
    fn blank_then(&mut self) -> Option<u8> {
        loop {
            if let Some(skip) = self.buffer[self.at..]
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            {
                self.at += skip;
                return Some(self.buffer[self.at]);
            }
            self.at = self.buffer.len();
            if !self.more() {
                return None;
            }
        }
    }

    /// Consumes `byte` after any blanks.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.blank_then()? == byte).then(|| self.at += 1)
    }

    /// Consumes a comma (false: more follows) or `close` (true) after any blanks.
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        let next = self.blank_then()?;
        self.at += 1;
        match next {
            b',' => Some(false),
            b if b == close => Some(true),
            _ => None,
        }
    }

    /// Consumes the value that starts after any blanks, leaving its bytes in `self.compact`
    /// without the blanks between its tokens (and where its own commas are in `self.commas`).
    ///
    /// Only brackets, strings and blanks are followed here; serde_json checks the rest when it
    /// parses the bytes (a stray `]` for a `}` included). Blanks are dropped because serde_json
    /// skips them one at a time, and pretty-printed JSON is mostly indentation. Dropping them
    /// changes nothing, except between two scalars (`[1 2]` would read as `[12]`), which is
    /// never valid JSON and so ends the read.
    fn value(&mut self) -> Option<()> {
        self.blank_then()?;
        self.compact.clear();
        self.commas.clear();
        let mut index = self.at;
        // The bytes from here up to `index` go to `compact` as they are, in one copy, at the
        // next blank or at the end.
        let mut kept_from = index;
        let mut depth = 0;
        loop {
            let byte = self.byte(index)?;
            match byte {
                b'"' => index = self.string_end(index)?,
                b'{' | b'[' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                    index += 1;
                }
                b'}' | b']' => {
                    depth = usize::checked_sub(depth, 1)?;
                    index += 1;
                }
                // Most runs between blanks are a lone colon or comma: no search for those.
                b':' if depth > 0 => {
                    index += 1;
                    continue;
                }
                b',' if depth > 0 => {
                    if depth == 1 {
                        self.commas.push(self.compact.len() + (index - kept_from));
                    }
                    index += 1;
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\n' => {
                    self.compact
                        .extend_from_slice(&self.buffer[kept_from..index]);
                    index = self.blanks_end(index)?;
                    kept_from = index;
                    let next = self.byte(index)?;
                    if self.compact.last().is_some_and(|&b| in_scalar(b)) && in_scalar(next) {
                        return None;
                    }
                    continue;
                }
                // A number, true, false or null at the top, up to what may follow it.
                _ if depth == 0 => {
                    while !matches!(
                        self.byte(index)?,
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'
                    ) {
                        index += 1;
                    }
                }
                _ => {
                    // Inside brackets: scalars, colons and commas, up to what follows them.
                    let rest = &self.buffer[index..];
                    let run = rest
                        .iter()
                        .position(|b| {
                            matches!(
                                b,
                                b'"' | b'{' | b'}' | b'[' | b']' | b' ' | b'\t' | b'\r' | b'\n'
                            )
                        })
                        .unwrap_or(rest.len());
                    if depth == 1 {
                        let at = self.compact.len() + (index - kept_from);
                        let commas = memchr::memchr_iter(b',', &rest[..run]);
                        self.commas.extend(commas.map(|i| at + i));
                    }
                    index += run;
                    continue;
                }
            }
            if depth == 0 {
                self.compact
                    .extend_from_slice(&self.buffer[kept_from..index]);
                self.at = index;
                return Some(());
            }
        }
    }

    /// The index just after the blanks that start at `index` (reading on as needed; `None` at
    /// the end of the text). Indentation is mostly spaces, skipped eight at a time.
    fn blanks_end(&mut self, mut index: usize) -> Option<usize> {
        loop {
            self.byte(index)?;
            let rest = &self.buffer[index..];
            let mut skip = 0;
            loop {
                // Deep indentation (most of a pretty-printed schema) goes 32 at a time.
                while let Some(block) = rest.get(skip..skip + 32) {
                    if <[u8; 32]>::try_from(block).expect("32 bytes") != [b' '; 32] {
                        break;
                    }
                    skip += 32;
                }
                while let Some(word) = rest.get(skip..skip + 8) {
                    // How many of the eight bytes are spaces before anything else.
                    let other = u64::from_le_bytes(word.try_into().expect("eight bytes"))
                        ^ u64::from_le_bytes([b' '; 8]);
                    let spaces = other.trailing_zeros() as usize / 8;
                    skip += spaces;
                    if spaces < 8 {
                        break;
                    }
                }
                match rest.get(skip) {
                    Some(b' ' | b'\t' | b'\r' | b'\n') => skip += 1,
                    Some(_) => return Some(index + skip),
                    None => break,
                }
            }
            index += skip;
        }
    }

    /// The index just after the string that opens at `open`.
    fn string_end(&mut self, open: usize) -> Option<usize> {
        let mut index = open + 1;
        loop {
            self.byte(index)?;
            match memchr::memchr2(b'"', b'\\', &self.buffer[index..]) {
                Some(found) if self.buffer[index + found] == b'"' => {
                    return Some(index + found + 1);
                }
                // An escape: the byte after the backslash never ends the string.
                Some(found) => index += found + 2,
                None => index = self.buffer.len(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Items and outline, which must not depend on how much is read at a time.
    fn read(text: &str) -> Option<(Vec<Value>, Vec<String>, Option<Value>)> {
        let mut results = [1, 2, 3, 7, CHUNK].map(|chunk| {
            let mut items = Vec::new();
            let outline = each_item_read_by(text.as_bytes(), chunk, |item| {
                items.push(serde_json::from_str(item.text).ok()?);
                Some(())
            })?;
            Some((items, outline.keys.into_iter().collect(), outline.kind))
        });
        assert!(
            results.windows(2).all(|w| w[0] == w[1]),
            "{text:?} read in pieces: {results:?}"
        );
        results[0].take()
    }

    #[test]
    fn a_pretty_list_gives_its_items_and_kind() {
        let list = json!({
            "apiVersion": "v1",
            "items": [{"a": "x]}\"\\", "b": [1, {"c": null}]}, "s", 1.5e3, true, [], {}],
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        });
        for text in [
            serde_json::to_string(&list).unwrap(),
            serde_json::to_string_pretty(&list).unwrap() + "\n\n",
        ] {
            let (items, keys, kind) = read(&text).unwrap();
            assert_eq!(Value::Array(items), list["items"]);
            assert_eq!(keys, ["apiVersion", "items", "kind", "metadata"]);
            assert_eq!(kind, Some(json!("List")));
        }
        assert_eq!(read(" {} ").unwrap(), (vec![], vec![], None));
        // More blanks than the first read holds.
        let late = format!("{}{{\"items\":[1]}}", " ".repeat(2 * FIRST as usize));
        assert_eq!(read(&late).unwrap().0, [json!(1)]);
        assert_eq!(read(r#"{"items":[]}"#).unwrap().0, Vec::<Value>::new());
        let spaced =
            read(" { \"items\" : [ 1 , [ true ,\r\n\tnull ] , \" a \" ] , \"kind\" : 2 } \n");
        assert_eq!(
            spaced.unwrap(),
            (
                vec![json!(1), json!([true, null]), json!(" a ")],
                vec!["items".into(), "kind".into()],
                Some(json!(2))
            )
        );
    }

    #[test]
    fn anything_else_is_left_to_the_ordinary_reader() {
        for text in [
            "",
            "[]",
            "{",
            r#"{"items":{}}"#,
            r#"{"items":[1,]}"#,
            r#"{"items":[1 2]}"#,
            r#"{"items":[{"a":1]]}"#,
            r#"{"a":1,}"#,
            r#"{"a":1}x"#,
            r#"{"a":1}{}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":tru}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":"\q"}"#,
            r#"{"items":["unterminated]}"#,
            r#"{"items":[1 2]}"#,
            r#"{"items":[{"a":tr ue}]}"#,
            r#"{"items":[-1 .5]}"#,
            r#"{"kind":nu ll}"#,
        ] {
            assert_eq!(read(text), None, "{text:?}");
        }
        let deep = format!("{{\"items\":[{}{}]}}", "[".repeat(101), "]".repeat(101));
        assert_eq!(read(&deep), None);
        let stopped = each_item(r#"{"items":[1,2]}"#.as_bytes(), |_| None);
        assert!(stopped.is_none());
    }

    /// The members of each item of `{"items": [items]}`, with the bytes of their values.
    fn members(items: &str) -> Vec<Option<Vec<(String, String)>>> {
        let mut found = Vec::new();
        let list = format!(r#"{{"items": [{items}]}}"#);
        each_item(list.as_bytes(), |item| {
            let mut members = Vec::new();
            let read = item.each_member(|key, text| {
                members.push((key.to_string(), text.to_string()));
                Some(())
            });
            found.push(read.map(|()| members));
            Some(())
        })
        .unwrap();
        found
    }

    #[test]
    fn members_come_with_their_bytes_without_blanks() {
        let pairs = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        assert_eq!(
            members(r#"{"a": 1, "b\",": {"c": [ 1, "x, y" ], "d": 2}, "e": "}"}, {}"#),
            [
                pairs(&[
                    ("a", "1"),
                    ("b\",", r#"{"c":[1,"x, y"],"d":2}"#),
                    ("e", r#""}""#)
                ]),
                pairs(&[]),
            ]
        );
        assert_eq!(
            members(r#"{"a":1,"a":1}, [1, 2], "s", {"a"}, {1:2}, {"a":1,"b"}"#),
            [None, None, None, None, None, None]
        );
    }

    /// `value` as JSON text, compact for an `indent` of 0, else pretty-printed with that many
    /// spaces per level (deep indentation is read in blocks of 32).
    fn indented(value: &Value, indent: usize) -> String {
        use serde::Serialize;
        if indent == 0 {
            return serde_json::to_string(value).unwrap();
        }
        let spaces = vec![b' '; indent];
        let formatter = serde_json::ser::PrettyFormatter::with_indent(&spaces);
        let mut text = Vec::new();
        value
            .serialize(&mut serde_json::Serializer::with_formatter(
                &mut text, formatter,
            ))
            .unwrap();
        String::from_utf8(text).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn members_and_items_come_back_as_serde_json_reads_them(
            members in proptest::collection::btree_map(
                "(?s).{0,6}", crate::schema::json_view::tests::json_value(), 0..5),
            items in proptest::collection::vec(crate::schema::json_view::tests::json_value(), 0..5),
            indent in 0usize..20,
        ) {
            let mut object: serde_json::Map<String, Value> = members.into_iter().collect();
            object.insert("items".into(), Value::Array(items.clone()));
            let object = Value::Object(object);
            let text = indented(&object, indent);
            // What serde_json reads back, which is not always what it wrote (floats).
            let object: Value = serde_json::from_str(&text).unwrap();
            let (read_items, keys, kind) = read(&text).unwrap();
            proptest::prop_assert_eq!(&Value::Array(read_items), &object["items"]);
            let expected: BTreeSet<String> = object.as_object().unwrap().keys().cloned().collect();
            let expected: Vec<String> = expected.into_iter().collect();
            proptest::prop_assert_eq!(keys, expected);
            proptest::prop_assert_eq!(kind, object.get("kind").cloned());
        }

        #[test]
        fn members_of_items_are_as_serde_json_reads_them(
            item in proptest::collection::btree_map(
                "(?s).{0,6}", crate::schema::json_view::tests::json_value(), 0..5),
            indent in 0usize..20,
        ) {
            let item = Value::Object(item.into_iter().collect());
            let text = indented(&item, indent);
            let [members] = &members(&text)[..] else { panic!("one item") };
            let members: serde_json::Map<String, Value> = members
                .clone()
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k, serde_json::from_str(&v).unwrap()))
                .collect();
            proptest::prop_assert_eq!(Value::Object(members), serde_json::from_str::<Value>(&text).unwrap());
        }
    }
}
