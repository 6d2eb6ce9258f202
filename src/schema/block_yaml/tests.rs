//! The fast reader against the reference reader (`manifest::yaml`): whenever it gives values,
//! they are the reference's. Texts are also written by serde-saphyr's emitter, as machines write them.
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{leading_spaces, parse_documents};

/// The reference reader's documents (without the empty ones, as kubectl reads them).
fn reference(text: &str) -> Result<Vec<Value>, String> {
    crate::manifest::yaml::documents(text, "t").map_err(|e| e.to_string())
}

/// Checks the fast reader against the reference; true when it took the text.
fn agrees(text: &str) -> bool {
    let Some(fast) = parse_documents(text) else {
        return false;
    };
    match reference(text) {
        Ok(expected) => assert_eq!(fast, expected, "the fast reader differs on:\n{text}"),
        Err(e) => panic!("the fast reader accepted what the reference rejects ({e}):\n{text}"),
    }
    true
}

fn taken(text: &str) -> Vec<Value> {
    assert!(
        agrees(text),
        "the fast reader left this to the reference:\n{text}"
    );
    parse_documents(text).unwrap()
}

fn left(text: &str) {
    assert!(
        parse_documents(text).is_none(),
        "the fast reader should leave this to the reference:\n{text}"
    );
}

#[test]
fn reads_the_constructs_crd_manifests_use() {
    let text = "\
# a comment
---
apiVersion: v1
kind: Thing   # trailing comment
metadata:
  name: a-b.example.com
  annotations: {}
  labels: []
spec:
  count: 3
  negative: -12
  ratio: 0.25
  enabled: true
  disabled: false
  empty:
  quoted: \"x: \\\"y\\\" \\\\ \\n\"
  single: 'it''s # not a comment'
  url: http://example.com/a#b
  pattern: ^[a-z]+$
  version: 0.93.0
  indexes: 0,2-3
  list:
  - a
  - 7
  -
    nested: 1
  - key: v
    other:
    - x
    deeper:
      z: 1
  text: |-
    line one

      indented # not a comment
    line three
  clip: |
    kept newline


  after: done
---
- top
- level
";
    let docs = taken(text);
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1], json!(["top", "level"]));
    let spec = &docs[0]["spec"];
    assert_eq!(spec["quoted"], json!("x: \"y\" \\ \n"));
    assert_eq!(spec["single"], json!("it's # not a comment"));
    assert_eq!(spec["url"], json!("http://example.com/a#b"));
    assert_eq!(spec["empty"], Value::Null);
    assert_eq!(
        spec["text"],
        json!("line one\n\n  indented # not a comment\nline three")
    );
    assert_eq!(spec["clip"], json!("kept newline\n"));
    assert_eq!(spec["list"][3]["other"], json!(["x"]));
    assert_eq!(docs[0]["kind"], json!("Thing"));
    assert_eq!(spec["version"], json!("0.93.0"));
    assert_eq!(spec["indexes"], json!("0,2-3"));
}

#[test]
fn folds_what_emitters_wrap() {
    let docs = taken(
        "\
folded: >-
  one
  two

  three
    more indented
  four
plain: a long line
  wrapped  here

  and here
quoted: \"with \\
  escaped break, folded
  break, kept \\  \n  spaces and \\u00e9\"
single: 'it''s
  wrapped'
items:
- >
  folded item
",
    );
    assert_eq!(
        docs[0],
        json!({
            "folded": "one two\nthree\n  more indented\nfour",
            "plain": "a long line wrapped  here\nand here",
            "quoted": "with escaped break, folded break, kept   spaces and é",
            "single": "it's wrapped",
            "items": ["folded item\n"],
        })
    );
}

#[test]
fn reads_empty_and_keep_chomped_block_scalars() {
    let docs = taken("a: |\nb: |+\n  keep\n\nc: >+\n  x\n  y\n\n\nd: 1\n");
    assert_eq!(
        docs[0],
        json!({"a": "", "b": "keep\n\n", "c": "x y\n\n\n", "d": 1})
    );
}

#[test]
fn numbers_resolve_by_the_reference_rules() {
    for (text, want) in [
        ("a: 0x1F\n", json!(31)),
        ("a: 012\n", json!(10)),
        ("a: 1e3\n", json!(1000.0)),
        ("a: +1\n", json!(1)),
        ("a: 1_000\n", json!(1000)),
        ("a: 5.0\n", json!(5.0)),
    ] {
        assert_eq!(taken(text), vec![json!({ "a": want })], "{text}");
    }
}

#[test]
fn leaves_everything_else_to_the_reference() {
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a: |2\n   x\n",
        "a: .inf\n",
        "a: nan\n",
        "a: Infinity\n",
        "null: 1\n",
        "yes: 1\n",
        "a: 10Gi\n",
        "a: 1\na: 2\n",
        "\"quoted key\": 1\n",
        "? complex\n: key\n",
        "<<: {}\n",
        "a:\tb\n",
        "a: b\r\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\n...\n",
        "  indented: root\n",
        "a: 1\n b: 2\n",
        "a: - b\n",
        "just a scalar\n",
        "a: \"\\q\"\n",
        "a: b: c\n",
        "a: trailing colon:\n",
    ] {
        left(text);
        // Whatever the reference makes of it, the fast reader did not guess.
        let _ = reference(text);
    }
}

/// One-line flow sequences of words are read (an enum of a wide CRD sent the whole file to the
/// reference reader); anything else in brackets is still left to it.
#[test]
fn flow_sequences_of_words_are_read_as_the_reference_reads_them() {
    for (text, expected) in [
        ("a: [x, z]\n", json!({"a": ["x", "z"]})),
        ("a: [x,z]\n", json!({"a": ["x", "z"]})),
        ("a: [ x , z ]  # c\n", json!({"a": ["x", "z"]})),
        ("a: [one]\n", json!({"a": ["one"]})),
        (
            "a:\n- [v1.2.3, a-b, a_b, a.b, x/y]\n",
            json!({"a": [["v1.2.3", "a-b", "a_b", "a.b", "x/y"]]}),
        ),
        (
            "e:\n  enum: [Always, IfNotPresent]\n  type: string\n",
            json!({"e": {"enum": ["Always", "IfNotPresent"], "type": "string"}}),
        ),
    ] {
        assert_eq!(taken(text), [expected], "{text}");
    }
    for text in [
        "a: [x, y\n",
        "a: [x,\n  y]\n",
        "a: [x, y] z\n",
        "a: [x, , y]\n",
        "a: [x, y,]\n",
        "a: [x, -]\n",
        "a: [x, ?y]\n",
        "a: [x: y]\n",
        "a: [x, [y]]\n",
        "a: [x, 'y']\n",
        "a: [x y, z]\n",
        "a: [yes, no]\n",
        "a: [x, y]\n",
        "a: [x, null]\n",
        "a: [1, 2]\n",
        "a: [x#y]\n",
        "a: [ ]\n",
        "a: [x]\n  b: 1\n",
    ] {
        left(text);
        let _ = reference(text);
    }
}

#[test]
fn errors_are_left_to_the_reference_for_its_messages() {
    for text in [
        "a: 1\n  - b\n",
        "a:\n  - b\n  c: d\n",
        "- a\nb: c\n",
        "a: \"open\n",
        "a: 'open\n",
    ] {
        left(text);
    }
}

/// Every YAML file the tests use. Most are written by hand, in flow style, and are left to
/// the reference; written out again by serde-saphyr's emitter, as a machine writes them, they
/// must nearly all be taken.
#[test]
fn agrees_with_the_reference_on_the_test_data() {
    let mut files = Vec::new();
    collect_yaml(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .as_path(),
        &mut files,
    );
    assert!(files.len() > 20, "test data not found: {files:?}");
    let (mut rewritten, mut fast) = (0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        agrees(&text);
        let Ok(docs) = reference(&text) else {
            continue;
        };
        let machine: Vec<String> = docs
            .iter()
            .map(|d| serde_saphyr::to_string(d).unwrap())
            .collect();
        rewritten += 1;
        if agrees(&machine.join("---\n")) {
            fast += 1;
        }
    }
    assert!(
        fast * 10 >= rewritten * 9,
        "the fast reader took only {fast} of {rewritten} machine-written files"
    );
}

fn collect_yaml(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_yaml(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Scalars that are easy to get wrong: special words, numbers, indicators, comments, quotes.
fn tricky_string() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a", "Z", "yes", "No", "on", "true", "FALSE", "null", "~", "nan", "inf", "0", "-1", "12",
        "1.2.3", "0,1", "007", "1.5", "-0.0", "1e5", "0x1", ".inf", "_", "^", "$", "/", "(", ":",
        ": ", " #", "#", "-", "- ", "'", "\"", "\\", "\\n", " ", "  ", "\n", "\n\n", "{", "}", "[",
        "]", ",", "&", "*", "!", "|", ">", "%", "@", "?", "é", "日本", "http://x", "a: b",
    ]);
    // Long ones too: emitters fold those over several lines.
    prop_oneof![
        3 => prop::collection::vec(pieces.clone(), 0..5),
        1 => prop::collection::vec(pieces, 20..60),
    ]
    .prop_map(|p| p.concat())
}

fn tricky_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        tricky_string().prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(tricky_string(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A block emitter of its own, sloppy on purpose: it writes every string plainly, quoted or
/// as a literal block, whether or not that keeps its meaning. The property only asks the fast
/// reader to agree with the reference, whatever the text means.
fn emit(value: &Value, indent: usize, style: &mut impl Iterator<Item = u8>, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{k}:"));
                emit_value(v, indent, style, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                emit_value(v, indent, style, out);
            }
        }
        other => emit_value(other, indent, style, out),
    }
}

fn emit_value(
    value: &Value,
    indent: usize,
    style: &mut impl Iterator<Item = u8>,
    out: &mut String,
) {
    let choice = style.next().unwrap_or(0);
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            emit(value, indent + 2, style, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            // Sequences in mappings are written at the key's indent or deeper.
            emit(
                value,
                indent + 2 * usize::from(choice.is_multiple_of(2)),
                style,
                out,
            );
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        Value::String(s) => match choice % 5 {
            0 => out.push_str(&format!(" {s}\n")),
            1 => out.push_str(&format!(" {}\n", serde_json::to_string(s).unwrap())),
            2 => out.push_str(&format!(" '{}'\n", s.replace('\'', "''"))),
            style => {
                let folded = style == 4;
                out.push_str(match (folded, s.ends_with('\n')) {
                    (false, true) => " |\n",
                    (false, false) => " |-\n",
                    (true, true) => " >\n",
                    (true, false) => " >-\n",
                });
                for line in s.lines() {
                    out.push_str(&format!("{}  {line}\n", " ".repeat(indent)));
                }
            }
        },
        Value::Null => out.push('\n'),
        other => out.push_str(&format!(" {other}\n")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// What serde-saphyr's own emitter writes is read the same way, and mostly fast.
    #[test]
    fn agrees_on_serde_saphyr_output(value in tricky_value()) {
        let text = serde_saphyr::to_string(&value).unwrap();
        agrees(&text);
    }

    #[test]
    fn agrees_on_sloppy_block_yaml(value in tricky_value(), styles in prop::collection::vec(any::<u8>(), 64)) {
        let mut out = String::new();
        emit(&value, 0, &mut styles.into_iter().cycle(), &mut out);
        agrees(&out);
    }

    /// Damaged text: a byte inserted or removed anywhere.
    #[test]
    fn agrees_on_damaged_text(
        value in tricky_value(),
        at in any::<prop::sample::Index>(),
        insert in prop::sample::select(vec![" ", "  ", "\n", "-", ":", "#", "'", "\"", "|", "a", "- ", ": "]),
        remove in any::<bool>(),
    ) {
        let mut text = serde_saphyr::to_string(&value).unwrap();
        if !text.is_empty() {
            let mut i = at.index(text.len());
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            if remove {
                text.remove(i);
            } else {
                text.insert_str(i, insert);
            }
        }
        agrees(&text);
    }

    /// Leading spaces counted a word at a time, as a plain loop counts them.
    #[test]
    fn leading_spaces_are_counted_as_a_loop_counts_them(text in "[ ]{0,20}[ a\n\t]{0,20}") {
        let bytes = text.as_bytes();
        prop_assert_eq!(
            leading_spaces(bytes),
            bytes.iter().take_while(|&&b| b == b' ').count()
        );
    }
}

#[test]
fn a_continued_plain_scalar_whose_first_line_ends_in_a_colon_is_left_to_the_reference() {
    // Found by fuzzing: with a blank line between, the two lines were folded into "b:\nc",
    // where the reference reports "mapping values are not allowed in this context".
    for text in [
        "a: b:\n\n  c\n",
        "a: b:\n    \n    c\n",
        "a: b:\n  c\n",
        "- b:\n\n  c\n",
    ] {
        left(text);
        assert!(reference(text).is_err(), "{text:?}");
    }
    // Without a continuation it stays a key with a null value, as the reference reads it.
    assert_eq!(taken("a:\n  b:\n"), [json!({"a": {"b": null}})]);
}

#[test]
fn characters_yaml_does_not_allow_are_left_to_the_reference() {
    // Found by fuzzing: the fast reader took a NUL that the reference rejects.
    let bad = [
        '\0', '\u{1}', '\u{b}', '\u{c}', '\u{1b}', '\u{7f}', '\u{80}', '\u{84}', '\u{86}',
        '\u{9f}', '\u{fffe}', '\u{ffff}',
    ];
    for c in bad {
        for text in [
            format!("a: b{c}c\n"),
            format!("a: 'b{c}c'\n"),
            format!("a: \"b{c}c\"\n"),
            format!("# x{c}\na: b\n"),
            format!("a: |\n  b{c}c\n"),
        ] {
            left(&text);
            assert!(reference(&text).is_err(), "{text:?}");
        }
    }
    for c in [
        '\u{85}', '\u{a0}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{e000}', '日',
    ] {
        for text in [
            format!("a: b{c}c\n"),
            format!("a: 'b{c}c'\n"),
            format!("# x{c}\na: b\n"),
        ] {
            agrees(&text);
        }
    }
}

#[test]
fn a_byte_order_mark_anywhere_is_left_to_the_reference() {
    // kubectl drops one that starts a document after `---` and keeps the others as content.
    for text in [
        "a: 1\n---\n\u{feff}b: 2\n",
        "---\n\u{feff}a: 1\n",
        "\u{feff}a: 1\n",
    ] {
        left(text);
        assert!(reference(text).is_ok(), "{text:?}");
    }
}
