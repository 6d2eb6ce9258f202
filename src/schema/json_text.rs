//! Pretty JSON text written straight from data, byte for byte as `serde_json::to_writer_pretty`
//! writes it. Going through serde's serializer took as long as computing the LCD manifests that
//! `schema-diff --lcd` prints, tens of megabytes of them.

/// Appends `value` to `out` exactly as `serde_json::to_writer_pretty` writes it, as if nested
/// `level` deep (two spaces a level).
pub fn push_json_pretty(out: &mut Vec<u8>, value: &serde_json::Value, level: usize) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => push_json_bool(out, *b),
        Value::Number(n) => {
            use std::io::Write;
            write!(out, "{n}").expect("writing to memory");
        }
        Value::String(s) => push_json_string(out, s),
        Value::Array(items) => {
            let mut array = PrettyJson::array(out, level);
            for item in items {
                push_json_pretty(array.item(), item, level + 1);
            }
            array.end();
        }
        Value::Object(map) => {
            let mut object = PrettyJson::object(out, level);
            for (key, item) in map {
                push_json_pretty(object.key(key), item, level + 1);
            }
            object.end();
        }
    }
}

pub fn push_json_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// An object or array being written as [`push_json_pretty`] writes them, member by member, for
/// writers of other data than `serde_json::Value`s. Each member's value is to be written at
/// `level + 1`.
pub struct PrettyJson<'o> {
    out: &'o mut Vec<u8>,
    level: usize,
    close: u8,
    members: usize,
}

impl<'o> PrettyJson<'o> {
    pub fn object(out: &'o mut Vec<u8>, level: usize) -> Self {
        out.push(b'{');
        PrettyJson {
            out,
            level,
            close: b'}',
            members: 0,
        }
    }

    pub fn array(out: &'o mut Vec<u8>, level: usize) -> Self {
        out.push(b'[');
        PrettyJson {
            out,
            level,
            close: b']',
            members: 0,
        }
    }

    /// Starts the next element of an array; its value is to be written to what this returns.
    pub fn item(&mut self) -> &mut Vec<u8> {
        self.out
            .extend_from_slice(if self.members == 0 { b"\n" } else { b",\n" });
        push_indent(self.out, self.level + 1);
        self.members += 1;
        self.out
    }

    /// Starts the next member of an object with its key; its value is to be written to what
    /// this returns.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.item();
        push_json_string(self.out, key);
        self.out.extend_from_slice(b": ");
        self.out
    }

    /// Closes it: `{}` or `[]` when it has no members.
    pub fn end(self) {
        if self.members > 0 {
            self.out.push(b'\n');
            push_indent(self.out, self.level);
        }
        self.out.push(self.close);
    }
}

/// Two spaces per level.
fn push_indent(out: &mut Vec<u8>, level: usize) {
    const SPACES: &[u8] = &[b' '; 64];
    match SPACES.get(..2 * level) {
        Some(spaces) => out.extend_from_slice(spaces),
        None => out.extend(std::iter::repeat_n(b' ', 2 * level)),
    }
}

/// A JSON string, escaped as serde_json escapes it: quote, backslash and the control
/// characters (`\b \t \n \f \r` by name, the others as `\u00xx`), nothing else.
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // Per byte: 0 for none, the letter of a short escape, or `u` for `\u00xx`.
    const ESCAPE: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut b = 0;
        while b < 0x20 {
            table[b] = b'u';
            b += 1;
        }
        table[0x08] = b'b';
        table[0x09] = b't';
        table[0x0a] = b'n';
        table[0x0c] = b'f';
        table[0x0d] = b'r';
        table[b'"' as usize] = b'"';
        table[b'\\' as usize] = b'\\';
        table
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut from = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none of them needs escaping (most text).
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape = ESCAPE[usize::from(b)];
        i += 1;
        if escape == 0 {
            continue;
        }
        let i = i - 1;
        out.extend_from_slice(&bytes[from..i]);
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// Whether any of the eight bytes in `word` is a control character, a quote or a backslash
/// (the classic "has a zero byte" bit trick, exact for "any").
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    below_space
        | zero_in(word ^ (ONES * u64::from(b'"')))
        | zero_in(word ^ (ONES * u64::from(b'\\')))
        != 0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Any JSON value, with strings that need escaping (for the tests of other modules too).
    pub(crate) fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "(?s).{0,40}".prop_map(Value::String),
            "[a-z\"\\\\\n\t\r\u{1}\u{8}\u{c}\u{1f}\u{7f}é ]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("(?s).{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn pretty_json_is_serde_jsons(value in json_value()) {
            let mut ours = Vec::new();
            push_json_pretty(&mut ours, &value, 0);
            proptest::prop_assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string_pretty(&value).unwrap()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn words_need_escaping_where_a_byte_does(word in proptest::prelude::any::<u64>()) {
            let any_byte = word
                .to_le_bytes()
                .iter()
                .any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            proptest::prop_assert_eq!(needs_escape(word), any_byte);
        }
    }

    #[test]
    fn each_byte_that_needs_escaping_is_found_at_each_place() {
        for byte in 0..=u8::MAX {
            for place in 0..8 {
                let mut bytes = *b"abcdefgh";
                bytes[place] = byte;
                let escaped = byte < 0x20 || byte == b'"' || byte == b'\\';
                assert_eq!(
                    needs_escape(u64::from_le_bytes(bytes)),
                    escaped,
                    "byte {byte:#x} at {place}"
                );
            }
        }
    }

    #[test]
    fn pretty_json_nests_at_the_level_given() {
        let value = serde_json::json!({"a": [1, {"b": "c\u{1}\"", "d": {}}, []], "e": -0.5});
        let mut ours = b"[\n  ".to_vec();
        push_json_pretty(&mut ours, &value, 1);
        ours.extend_from_slice(b"\n]");
        let whole = serde_json::to_string_pretty(&serde_json::json!([value])).unwrap();
        assert_eq!(String::from_utf8(ours).unwrap(), whole);
    }
}
