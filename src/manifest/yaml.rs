//! A manifest's text -> the JSON documents kubectl sends to the API server for it.
//!
//! kubectl reads files with apimachinery's YAML-or-JSON decoder: text that starts with `{` is a
//! stream of JSON values, anything else is YAML that sigs.k8s.io/yaml converts to JSON with
//! go-yaml v2 underneath. That conversion keeps YAML 1.1's scalar rules, which differ from the
//! YAML 1.2 that Rust's YAML crates implement: `yes`/`on`/`y` (in three spellings each) are
//! booleans, `010` is octal, `1__0` is 10, and mapping keys that resolve to something other than
//! a string are written back as strings (`y:` -> `"true"`, `1e3:` -> `"1000"`).
//!
//! The syntax is granit-parser's (the event layer under serde-saphyr): this module owns only
//! what sigs.k8s.io/yaml decides differently, [`resolve_plain`] and the key conversion, and
//! builds the documents without recursion, so nesting is bounded by [`MAX_DEPTH`] rather than
//! by the stack. `tests/suite/yaml_truth.rs` holds it to the real library.
use std::borrow::Cow;
use std::collections::HashMap;

use granit_parser::{Event, Options, Parser, ScalarStyle, Span, StructureStyle, Tag};
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// How deeply mappings and sequences may nest in a document, in YAML and in JSON (where it is
/// serde_json's own limit). Real CRDs stay far below it; past it a reader would spend stack
/// on every level, so the file is refused with a message that says why.
pub const MAX_DEPTH: usize = 128;

/// How many nodes aliases may copy in one file: a few aliases of aliases can otherwise ask for
/// billions ("billion laughs").
const MAX_ALIAS_NODES: usize = 1_000_000;

/// The documents of `text` (a file named `source` in messages), as kubectl would send them:
/// empty and `null` documents are left out, as kubectl's resource builder does.
pub fn documents(text: &str, source: &str) -> Result<Vec<Value>> {
    if looks_like_json(text) {
        match json_documents(text) {
            Ok(docs) => return Ok(docs),
            // Flow-style YAML starts with `{` too.
            Err(json) => {
                return yaml_documents(text, source).map_err(|yaml| {
                    if json.to_string().contains("recursion limit") {
                        yaml
                    } else {
                        Error::input_because(source, "invalid JSON", json)
                    }
                });
            }
        }
    }
    yaml_documents(text, source)
}

/// Whether `text` is tried as JSON first (it starts with `{`, as kubectl's decoder decides).
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

fn json_documents(text: &str) -> serde_json::Result<Vec<Value>> {
    let mut docs = Vec::new();
    for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let doc = doc?;
        if !doc.is_null() {
            docs.push(doc);
        }
    }
    Ok(docs)
}

/// A plain scalar as sigs.k8s.io/yaml resolves it (go-yaml v2's rules).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Above `i64::MAX`: a number as a value, but not a key kubectl can convert.
    Uint(u64),
    Float(f64),
    Str(Cow<'a, str>),
}

/// What a plain (unquoted, untagged) scalar means to go-yaml v2.
pub fn resolve_plain(text: &str) -> Scalar<'_> {
    match resolve_number_or_word(text) {
        Some(scalar) => scalar,
        None => Scalar::Str(Cow::Borrowed(text)),
    }
}

/// The non-string meanings of `text`, or `None` for a string.
fn resolve_number_or_word(text: &str) -> Option<Scalar<'static>> {
    let first = *text.as_bytes().first().unwrap_or(&b'~');
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => word(text),
        b'.' => word(text).or_else(|| decimal_float(text)),
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(special) = word(text) {
                return Some(special);
            }
            let plain: Cow<'_, str> = if text.contains('_') {
                Cow::Owned(text.replace('_', ""))
            } else {
                Cow::Borrowed(text)
            };
            go_integer(&plain).or_else(|| decimal_float(&plain))
        }
        _ => None,
    }
}

/// The words go-yaml v2 resolves by table, in exactly the spellings it lists.
fn word(text: &str) -> Option<Scalar<'static>> {
    Some(match text {
        "" | "~" | "null" | "Null" | "NULL" => Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Scalar::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Scalar::Bool(false)
        }
        ".nan" | ".NaN" | ".NAN" => Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Scalar::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Scalar::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: an optional sign, then a
/// `0x`, `0o`, `0b` or bare `0` (octal) prefix, or decimal digits.
fn go_integer(text: &str) -> Option<Scalar<'static>> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let signed = body.len() != text.len();
    let prefixed = |lower: &str, upper: &str| {
        body.strip_prefix(lower)
            .or_else(|| body.strip_prefix(upper))
    };
    let (radix, digits) = if let Some(d) = prefixed("0x", "0X") {
        (16, d)
    } else if let Some(d) = prefixed("0b", "0B") {
        (2, d)
    } else if let Some(d) = prefixed("0o", "0O") {
        (8, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    // from_str_radix would take a sign of its own.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        let value = -i128::from(magnitude);
        i64::try_from(value).ok().map(Scalar::Int)
    } else if let Ok(value) = i64::try_from(magnitude) {
        Some(Scalar::Int(value))
    } else if !signed {
        Some(Scalar::Uint(magnitude))
    } else {
        None
    }
}

/// go-yaml v2's float syntax, `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, and a
/// value Go's ParseFloat accepts (a finite one: an overflow is an error there).
fn decimal_float(text: &str) -> Option<Scalar<'static>> {
    let bytes = text.as_bytes();
    let mut i = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let whole = digits(i);
    i += whole;
    if bytes.get(i) == Some(&b'.') {
        let fraction = digits(i + 1);
        if whole == 0 && fraction == 0 {
            return None;
        }
        i += 1 + fraction;
    } else if whole == 0 {
        return None;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        i += usize::from(matches!(bytes.get(i), Some(b'-' | b'+')));
        let exponent = digits(i);
        if exponent == 0 {
            return None;
        }
        i += exponent;
    }
    if i != bytes.len() {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    value.is_finite().then_some(Scalar::Float(value))
}

/// A resolved key as sigs.k8s.io/yaml writes it into JSON, or why it cannot.
fn key_text(key: Scalar<'_>) -> std::result::Result<String, &'static str> {
    match key {
        Scalar::Str(s) => Ok(s.into_owned()),
        Scalar::Int(n) => Ok(n.to_string()),
        Scalar::Bool(b) => Ok(b.to_string()),
        Scalar::Float(f) => Ok(go_format_g32(f)),
        Scalar::Uint(_) => Err("an integer key above 2^63-1 cannot be converted to JSON"),
        Scalar::Null => Err("a null key cannot be converted to JSON"),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` (how sigs.k8s.io/yaml spells a float key),
/// with go-yaml's `.inf`/`-.inf`/`.nan`.
fn go_format_g32(f: f64) -> String {
    #[allow(clippy::cast_possible_truncation)] // Go converts to float32 the same way.
    let x = f as f32;
    if x.is_nan() {
        return ".nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    // Rust's exponent form has the shortest digits that read back as the same f32.
    let shortest = format!("{:e}", x.abs());
    let (mantissa, exponent) = shortest.split_once('e').expect("exponent form");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let digit = |i: i32| {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .map_or('0', |&d| char::from(d))
    };
    let count = i32::try_from(digits.len()).expect("few digits");
    let mut out = String::from(sign);
    // %e below 1e-4 and from 1e6 on, as Go does for the shortest form.
    if !(-4..6).contains(&exponent) {
        out.push(digit(0));
        if count > 1 {
            out.push('.');
            (1..count).for_each(|i| out.push(digit(i)));
        }
        let e_sign = if exponent < 0 { '-' } else { '+' };
        out.push_str(&format!("e{e_sign}{:02}", exponent.abs()));
        return out;
    }
    let point = exponent + 1;
    if point > 0 {
        (0..point).for_each(|i| out.push(digit(i)));
    } else {
        out.push('0');
    }
    if count > point {
        out.push('.');
        (point..count).for_each(|i| out.push(digit(i)));
    }
    out
}

/// kubectl splits a stream into documents at lines that start with `---` before it parses them,
/// and refuses such a line with anything but a comment after the marker (`--- |`, `--- {}`).
fn check_separators(text: &str, source: &str) -> Result<()> {
    for (index, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                return Err(Error::input(
                    format!("{source}: line {}", index + 1),
                    format!(
                        "invalid document separator {line:?}: kubectl allows only a comment after ---"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Escapes YAML 1.2 added that go-yaml refuses: `\/` in a double-quoted scalar.
fn check_escapes(raw: &str) -> std::result::Result<(), &'static str> {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.next() == Some('/') {
            return Err("found unknown escape character \\/ (YAML 1.1 has no such escape)");
        }
    }
    Ok(())
}

/// The text as kubectl hands it to go-yaml, and as granit-parser then reads it like go-yaml:
///
/// - kubectl splits the stream at `---` lines first and go-yaml reads each part on its own,
///   skipping a byte-order mark at its start: such a mark on the line after a separator that
///   ends a part goes. (A separator with nothing before it in its part stays in the part, and
///   a mark after it is content.)
/// - YAML 1.1 (go-yaml) breaks lines at NEL (U+0085), which it reads as a line feed; YAML 1.2
///   (granit) sees an ordinary character.
fn as_kubectl_splits(text: &str) -> Cow<'_, str> {
    let bom_after_separator = text.contains('\u{feff}')
        && text
            .split_inclusive('\n')
            .zip(text.split('\n').skip(1))
            .any(|(line, next)| is_separator(line) && next.starts_with('\u{feff}'));
    if !bom_after_separator && !text.contains('\u{85}') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    // Whether the part being read has a line yet, and whether the line before ended a part.
    let (mut part_has_lines, mut part_starts) = (false, true);
    for line in text.split_inclusive('\n') {
        let line = match line.strip_prefix('\u{feff}') {
            Some(rest) if part_starts => rest,
            _ => line,
        };
        part_starts = is_separator(line) && part_has_lines;
        part_has_lines = !part_starts;
        out.push_str(&line.replace('\u{85}', "\n"));
    }
    Cow::Owned(out)
}

/// A line kubectl splits documents at: `---`, then nothing but blanks or a comment.
fn is_separator(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
}

/// LS and PS (U+2028, U+2029) break lines in YAML 1.1 as NEL does, so the structure is read
/// from a copy where each is blanks and a line feed of the same byte length (a plain scalar
/// continued at column 0 is then an error, as in kubectl). The values of the scalars that held
/// one are read again from the text itself: see [`with_yaml_1_1_breaks`].
fn breaks_as_line_feeds(text: &str) -> Cow<'_, str> {
    if !text.contains(['\u{2028}', '\u{2029}']) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace(['\u{2028}', '\u{2029}'], "  \n"))
}

/// A plain or quoted scalar whose source (`raw`, its span in the text) holds LS or PS, as
/// go-yaml folds it: the break stays in the value and the blanks around it go.
fn with_yaml_1_1_breaks(raw: &str) -> Option<String> {
    let (event, _) = Parser::new_from_str(raw)
        .filter_map(std::result::Result::ok)
        .find(|(event, _)| matches!(event, Event::Scalar(..)))?;
    let Event::Scalar(text, ..) = event else {
        return None;
    };
    Some(yaml_1_1_breaks(text).into_owned())
}

/// YAML 1.1 also breaks lines at LS and PS (U+2028, U+2029), which go-yaml keeps in the
/// value, dropping the blanks around them as around any line break; YAML 1.2 readers see
/// ordinary characters.
fn yaml_1_1_breaks(text: Cow<'_, str>) -> Cow<'_, str> {
    if !text.contains(['\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut after_break = false;
    for c in text.chars() {
        match c {
            '\u{2028}' | '\u{2029}' => {
                out.truncate(out.trim_end_matches([' ', '\t']).len());
                out.push(c);
                after_break = true;
            }
            ' ' | '\t' if after_break => {}
            _ => {
                after_break = false;
                out.push(c);
            }
        }
    }
    Cow::Owned(out)
}

/// A node being built: a sequence, or a mapping with the key waiting for its value.
enum Open {
    Sequence {
        items: Vec<Value>,
        anchor: usize,
        flow: bool,
    },
    Mapping {
        members: Map<String, Value>,
        anchor: usize,
        key: Option<Key>,
        flow: bool,
    },
}

impl Open {
    fn is_flow(&self) -> bool {
        match self {
            Open::Sequence { flow, .. } | Open::Mapping { flow, .. } => *flow,
        }
    }
}

/// A mapping key read, before its value.
enum Key {
    Text(String),
    /// `<<`: the value is merged into the mapping.
    Merge,
}

/// What `source` is called at `span` in messages.
fn at(source: &str, span: &Span) -> String {
    format!("{source}: line {}", span.start.line())
}

/// How many lone dashes in flow style one file may have: each is read by parsing again.
const MAX_LONE_DASHES: usize = 64;

fn yaml_documents(text: &str, source: &str) -> Result<Vec<Value>> {
    check_separators(text, source)?;
    let mut split = as_kubectl_splits(text);
    let lone_dash = std::cell::Cell::new(None);
    for _ in 0..MAX_LONE_DASHES {
        match read_split(&split, source, &lone_dash) {
            Err(_) if lone_dash.get().is_some() => {
                // go-yaml reads a `-` before `,`, `]` or `}` in flow style as the string "-";
                // granit-parser refuses it, so it is quoted and the text read again.
                let at = lone_dash.take().expect("checked above");
                split = Cow::Owned(format!("{}\"-\"{}", &split[..at], &split[at + 1..]));
            }
            read => return read,
        }
    }
    Err(Error::input(
        source,
        format!("more than {MAX_LONE_DASHES} lone dashes (-) in flow collections"),
    ))
}

/// The documents of `split` (the text as kubectl splits it). When granit-parser refuses a `-`
/// that go-yaml reads as a string, its byte offset is left in `lone_dash`.
fn read_split(
    split: &str,
    source: &str,
    lone_dash: &std::cell::Cell<Option<usize>>,
) -> Result<Vec<Value>> {
    let input = breaks_as_line_feeds(split);
    // Where `input` differs from `split` (LS and PS), scalars are read again from `split`.
    let values_from = matches!(input, Cow::Owned(_)).then_some(split);
    let input = &*input;
    let mut options = Options::default();
    options.emit_comments = false;
    // go-yaml refuses directives: kubectl's split at `---` leaves each one without its document.
    options.disallow_directives = true;
    // A byte-order mark inside a document is content to go-yaml (libyaml).
    options.bom_inside_document_as_content = true;
    // The scanner reads ahead of the events, so its limits are ours: past them it says why.
    options.flow_nesting_limit = MAX_DEPTH;
    options.block_nesting_limit = MAX_DEPTH;
    let parser = Parser::new_from_str_with_options(input, options);
    let invalid = |e: granit_parser::ScanError| {
        if matches!(e.kind(), granit_parser::ErrorKind::RecursionLimitExceeded) {
            return too_deep_at(source, e.marker().line());
        }
        if matches!(
            e.kind(),
            granit_parser::ErrorKind::PlainScalarStartsWithDashFlowIndicator
        ) && let Some(at) = e.marker().byte_offset()
            && matches!(
                split.as_bytes().get(at..at + 2),
                Some([b'-', b',' | b']' | b'}'])
            )
        {
            lone_dash.set(Some(at));
        }
        Error::input_because(source, "invalid YAML", e)
    };
    let mut docs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, (Value, usize)> = HashMap::new();
    let mut alias_nodes = 0usize;
    // The finished node of the current document.
    let mut root: Option<Value> = None;
    for event in parser {
        let (event, span) = event.map_err(invalid)?;
        let (value, anchor) = match event {
            Event::DocumentStart(..) => {
                anchors.clear();
                continue;
            }
            Event::DocumentEnd => {
                if let Some(doc) = root.take()
                    && !doc.is_null()
                {
                    docs.push(doc);
                }
                continue;
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(too_deep(source, &span));
                }
                stack.push(match event {
                    Event::SequenceStart(style, ..) => Open::Sequence {
                        items: Vec::new(),
                        anchor,
                        flow: style == StructureStyle::Flow,
                    },
                    Event::MappingStart(style, ..) => Open::Mapping {
                        members: Map::new(),
                        anchor,
                        key: None,
                        flow: style == StructureStyle::Flow,
                    },
                    _ => unreachable!("matched above"),
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Open::Sequence { items, anchor, .. }) => (Value::Array(items), anchor),
                _ => unreachable!("the parser pairs sequence events"),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Open::Mapping {
                    members, anchor, ..
                }) => (Value::Object(members), anchor),
                _ => unreachable!("the parser pairs mapping events"),
            },
            Event::Scalar(text, style, anchor, tag) => {
                if style == ScalarStyle::DoubleQuoted {
                    check_escapes(span.slice(input).unwrap_or(""))
                        .map_err(|m| Error::input(at(source, &span), m))?;
                }
                let raw = values_from
                    .zip(span.byte_range())
                    .and_then(|(split, range)| split.get(range))
                    .filter(|raw| raw.contains(['\u{2028}', '\u{2029}']));
                let text = match (style, raw) {
                    (
                        ScalarStyle::Plain | ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted,
                        Some(raw),
                    ) => Cow::Owned(with_yaml_1_1_breaks(raw).ok_or_else(|| {
                        Error::input(at(source, &span), "a line separator go-yaml cannot read")
                    })?),
                    _ => text,
                };
                let plain = style == ScalarStyle::Plain && tag.is_none();
                // In flow style go-yaml reads `?` as the start of a key even without a blank
                // after it (`[a, ?x]` holds the mapping {x: null}).
                let flow_key = match stack.last() {
                    Some(open) if plain && open.is_flow() => text.strip_prefix('?'),
                    _ => None,
                };
                if let Some(key) = flow_key
                    && matches!(stack.last(), Some(Open::Sequence { .. }))
                {
                    let key = key_text(resolve_plain(key))
                        .map_err(|m| Error::input(at(source, &span), m))?;
                    let mut pair = Map::new();
                    pair.insert(key, Value::Null);
                    (Value::Object(pair), anchor)
                } else if let Some(Open::Mapping {
                    key: key @ None, ..
                }) = stack.last_mut()
                {
                    // A key: kept until its value is read.
                    let text = match flow_key {
                        Some(rest) => Cow::Owned(rest.to_string()),
                        None => text,
                    };
                    *key = Some(if plain && text == "<<" {
                        Key::Merge
                    } else {
                        let scalar = scalar(text, style, tag.as_deref())
                            .map_err(|m| Error::input(at(source, &span), m))?;
                        Key::Text(key_text(scalar).map_err(|m| Error::input(at(source, &span), m))?)
                    });
                    if anchor != 0 {
                        // An anchored key is only ever used as a key again: keep it as text.
                        if let Some(Key::Text(t)) = key {
                            anchors.insert(anchor, (Value::String(t.clone()), 1));
                        }
                    }
                    continue;
                } else {
                    let scalar = scalar(text, style, tag.as_deref())
                        .map_err(|m| Error::input(at(source, &span), m))?;
                    (json_of(scalar, source, &span)?, anchor)
                }
            }
            Event::Alias(id) => {
                let Some((value, size)) = anchors.get(&id) else {
                    return Err(Error::input(
                        at(source, &span),
                        "an alias refers to an anchor that is not complete here",
                    ));
                };
                alias_nodes += size;
                if alias_nodes > MAX_ALIAS_NODES {
                    return Err(Error::input(
                        at(source, &span),
                        format!("aliases expand to more than {MAX_ALIAS_NODES} nodes"),
                    ));
                }
                if let Some(Open::Mapping {
                    key: key @ None, ..
                }) = stack.last_mut()
                {
                    let text = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => {
                            return Err(Error::input(
                                at(source, &span),
                                "a mapping or sequence as a key cannot be converted to JSON",
                            ));
                        }
                    };
                    *key = Some(Key::Text(text));
                    continue;
                }
                (value.clone(), 0)
            }
            _ => continue,
        };
        if anchor != 0 {
            anchors.insert(anchor, (value.clone(), node_count(&value)));
        }
        match stack.last_mut() {
            None => root = Some(value),
            Some(Open::Sequence { items, .. }) => items.push(value),
            Some(Open::Mapping { members, key, .. }) => match key.take() {
                None => {
                    return Err(Error::input(
                        at(source, &span),
                        "a mapping or sequence as a key cannot be converted to JSON",
                    ));
                }
                Some(Key::Text(k)) => {
                    members.insert(k, value);
                }
                Some(Key::Merge) => {
                    merge(members, value).map_err(|m| Error::input(at(source, &span), m))?
                }
            },
        }
    }
    Ok(docs)
}

/// go-yaml v2's merge: a mapping's members are set in place (over those before the `<<`); of a
/// sequence of mappings, the earlier ones win.
fn merge(members: &mut Map<String, Value>, value: Value) -> std::result::Result<(), &'static str> {
    const WANT_MAP: &str = "a merge (<<) needs a mapping or a sequence of mappings";
    match value {
        Value::Object(from) => members.extend(from),
        Value::Array(items) => {
            for item in items.into_iter().rev() {
                let Value::Object(from) = item else {
                    return Err(WANT_MAP);
                };
                members.extend(from);
            }
        }
        _ => return Err(WANT_MAP),
    }
    Ok(())
}

fn node_count(value: &Value) -> usize {
    let mut count = 0;
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        count += 1;
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.values()),
            _ => {}
        }
    }
    count
}

fn too_deep(source: &str, span: &Span) -> Error {
    too_deep_at(source, span.start.line())
}

fn too_deep_at(source: &str, line: usize) -> Error {
    Error::input(
        format!("{source}: line {line}"),
        format!("mappings and sequences nest deeper than {MAX_DEPTH} levels"),
    )
}

/// A scalar of any style, with its tag, as go-yaml v2 decodes it into an `interface{}`.
fn scalar<'a>(
    text: Cow<'a, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> std::result::Result<Scalar<'a>, String> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain {
            match resolve_number_or_word(&text) {
                Some(s) => s,
                None => Scalar::Str(text),
            }
        } else {
            Scalar::Str(text)
        });
    };
    let core = (tag.handle() == "tag:yaml.org,2002:").then(|| tag.suffix());
    let want = match core {
        Some(want @ ("bool" | "int" | "float" | "null")) => want,
        Some("binary") => return go_base64(&text).map(Scalar::Str),
        // `!!str`, `!!timestamp` (kept as its text), and tags go-yaml does not resolve.
        _ => return Ok(Scalar::Str(text)),
    };
    let resolved = resolve_number_or_word(&text);
    match (want, resolved) {
        ("bool", Some(b @ Scalar::Bool(_))) => Ok(b),
        ("int", Some(n @ (Scalar::Int(_) | Scalar::Uint(_)))) => Ok(n),
        ("float", Some(f @ Scalar::Float(_))) => Ok(f),
        ("null", Some(Scalar::Null)) => Ok(Scalar::Null),
        #[allow(clippy::cast_precision_loss)] // As Go converts.
        ("float", Some(Scalar::Int(n))) => Ok(Scalar::Float(n as f64)),
        #[allow(clippy::cast_precision_loss)]
        ("float", Some(Scalar::Uint(n))) => Ok(Scalar::Float(n as f64)),
        _ => Err(format!("cannot decode {text:?} as a !!{want}")),
    }
}

/// A `!!binary` scalar as go-yaml decodes it (Go's standard base64, which skips line breaks)
/// and kubectl then writes it into JSON: each byte that is not UTF-8 becomes U+FFFD.
fn go_base64(text: &str) -> std::result::Result<Cow<'static, str>, String> {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const GO_STD_ENCODING: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );
    let joined: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    let bytes = GO_STD_ENCODING
        .decode(joined)
        .map_err(|_| "a !!binary value that is not base64".to_string())?;
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
    }
    Ok(Cow::Owned(out))
}

fn json_of(scalar: Scalar<'_>, source: &str, span: &Span) -> Result<Value> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(n) => Value::from(n),
        Scalar::Uint(n) => Value::from(n),
        Scalar::Float(f) => match Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => {
                return Err(Error::input(
                    at(source, span),
                    format!(
                        "{} is not a JSON number; kubectl cannot send it either",
                        go_format_g32(f)
                    ),
                ));
            }
        },
        Scalar::Str(s) => Value::String(s.into_owned()),
    })
}

#[cfg(test)]
mod tests;
