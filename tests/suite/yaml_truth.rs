//! The tool reads manifests as kubectl sends them: `manifest::yaml::documents` is held to
//! tests/yamltruth, a helper built from the Go module proxy that converts with the very code
//! kubectl uses (apimachinery's YAML-or-JSON decoder, sigs.k8s.io/yaml, go-yaml v2). Whatever
//! the helper returns the reader must return (numbers compared by value: kubectl writes 5.0 as
//! 5); whatever kubectl refuses, the reader refuses.
//!
//! Generated CRD-like documents are written in many YAML styles (quoting, block scalars,
//! comments, anchors, merge keys, flow style, CRLF, BOM, several documents, YAML 1.1 words and
//! numbers, keys YAML 1.1 converts, `!!binary` and `!!null` tags, `?` and `-` in flow style, YAML
//! 1.1's line breaks NEL, LS and PS, directives, a BOM after a separator), and so are the fixed
//! cases and the real-world CRD files.
use crate::support;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use kubectl_migrate::manifest::yaml;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use support::real_world::all_pairs;
use support::{same_json, yaml_truth};

/// The reader's result against kubectl's, explained when they differ.
fn agree(text: &str) -> Result<(), String> {
    let ours = yaml::documents(text, "case");
    let truth = yaml_truth(text);
    match (&ours, &truth) {
        (Ok(a), Ok(b)) if a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b)) => {
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!(
            "the reader and kubectl differ on:\n---8<---\n{text}\n---8<---\nreader:  {}\nkubectl: {}",
            match &ours {
                Ok(d) => serde_json::to_string(d).unwrap(),
                Err(e) => format!("error: {e}"),
            },
            match &truth {
                Ok(d) => serde_json::to_string(d).unwrap(),
                Err(e) => format!("error: {e}"),
            }
        )),
    }
}

fn assert_agree(text: &str) {
    if let Err(e) = agree(text) {
        panic!("{e}");
    }
}

#[test]
fn the_examples_of_the_issue_read_as_kubectl_reads_them() {
    for text in [
        "enum: [oN, oFF]\ndefault: oN\n",
        "description: yEs\n",
        "default: 1.0\nenum: [0.5, 1.0, 2.0]\n",
        "maxItems: 5.0\nminItems: 1e1\n",
        "y: 1\n010: 2\n0x10: 3\n1e3: 4\n",
        "a: 010\nb: 0X10\nc: 1__0\nd: 0b101\ne: 0o17\nf: 08\ng: +7\nh: -0x10\n",
        "{apiVersion: v1, kind: List, items: []}",
        "{\"a\": 1} {\"b\": 2}\n",
        "{\"a\": 1.0, \"b\": [1e3]}",
        "a: x\u{2028}  y\n",
        "a: \"x\u{2028}  y\"\n",
        "a:\tb\n",
        "a: ~\nb: null\nc:\nd: Null\n",
        "a: .inf\n",
        "a: .nan\n",
        "~: 1\n",
        "18446744073709551615: 1\n",
        "a: 18446744073709551615\n",
        "a: 1e400\n",
        "x: \"a\\/b\"\n",
        "--- |\n  text\n",
        "a: |\n  no line break at the end",
        "base: &b {p: 1, q: 2}\nm:\n  <<: *b\n  q: 3\nr:\n  q: 3\n  <<: *b\n",
        "a: &a {k: 1}\nb: &b {k: 2, j: 2}\nc: {<<: [*a, *b]}\n",
        "a: !!int \"7\"\nb: !!str 5\nc: !!float 2\nd: !custom yes\n",
        "\u{feff}a: 1\n",
        "a: 1\r\nb: [x, y]\r\n",
        "---\n---\nnull\n---\na: 1\n...\n---\nb: 2\n",
        "a: 2024-01-01\nb: 12:30\nc: 1.2.3\n",
    ] {
        assert_agree(text);
    }
}

#[test]
fn the_real_world_crd_files_read_as_kubectl_reads_them() {
    let mut files = 0;
    for pair in all_pairs() {
        for file in [&pair.old, &pair.new] {
            let text = std::fs::read_to_string(file).unwrap();
            assert_agree(&text);
            files += 1;
        }
    }
    assert_eq!(files, 16);
}

/// Each cause of disagreement the issue found, with the variants around it that kubectl reads
/// differently from a YAML 1.2 reader. `expect_refused` says which kubectl refuses, so that a
/// helper that accepted or refused everything would fail here.
fn assert_agree_on(cases: &[(&str, bool)]) {
    for (text, refused) in cases {
        assert_eq!(
            yaml_truth(text).is_err(),
            *refused,
            "kubectl's reading of {text:?} is not what this test expects"
        );
        assert_agree(text);
    }
}

#[test]
fn binary_scalars_are_decoded_from_base64_as_kubectl_does() {
    assert_agree_on(&[
        ("a: !!binary aGVsbG8=\n", false),
        ("a: !!binary |\n  aGVs\n  bG8=\n", false),
        ("a: !!binary \"aGVsbG9=\"\n", false),
        ("a: !!binary ''\n", false),
        ("a: !!binary /w==\n", false),
        ("a: !!binary 4oA=\n", false),
        ("!!binary aGVsbG8=: 1\n", false),
        ("a: !!binary aGVsbG8\n", true),
        ("a: !!binary \"aGVs bG8=\"\n", true),
        ("a: !!binary >\n  aGVs\n  bG8=\n", true),
    ]);
}

#[test]
fn null_tags_read_as_kubectl_reads_them() {
    assert_agree_on(&[
        ("a: !!null \"\"\n", false),
        ("a: !!null ''\n", false),
        ("a: !!null\n", false),
        ("a: !!null ~\n", false),
        ("a: !!null \"Null\"\n", false),
        ("a: !!null x\n", true),
        ("!!null \"\": 1\n", true),
    ]);
}

#[test]
fn a_question_mark_in_flow_starts_a_key_as_kubectl_reads_it() {
    assert_agree_on(&[
        ("a: [a, ?x]\n", false),
        ("[?1, ?y]\n", false),
        ("a: [?x y, ?x: 1]\n", false),
        ("a: {?x: 1, ?y}\n", false),
        ("a: ?x\n", false),
        ("a: [?]\n", true),
    ]);
}

#[test]
fn a_lone_dash_in_flow_is_a_string_as_kubectl_reads_it() {
    assert_agree_on(&[
        ("a: [a, -]\n", false),
        ("a: [-, -x, -]\n", false),
        ("a: {-: -}\n", false),
        ("a: [a, - ]\n", true),
        ("a: [- x]\n", true),
    ]);
}

#[test]
fn next_lines_fold_as_kubectl_folds_them() {
    assert_agree_on(&[
        ("a: x\u{85}  y\n", false),
        ("a: 'x\u{85}y'\n", false),
        ("a: \"x\u{85}  y\"\n", false),
        ("a: x\u{85}b: 1\n", false),
        ("a: 1 # note\u{85}b: 2\n", false),
        ("a: x\u{85}y\n", true),
        ("a: |\n  x\u{85}y\n", true),
    ]);
}

#[test]
fn a_line_separator_breaks_a_plain_scalar_as_kubectl_reads_it() {
    assert_agree_on(&[
        ("a: x\u{2028}  y\n", false),
        ("a: \"x\u{2028}y\"\n", false),
        ("a: x\u{2028}b: 1\n", false),
        ("a: x\u{2029}  y\n", false),
        ("a: x\u{2028}y\n", true),
        ("a: x\u{2029}y\n", true),
    ]);
}

#[test]
fn directives_are_refused_as_kubectl_refuses_them() {
    assert_agree_on(&[
        ("%YAML 1.1\n---\na: 1\n", true),
        ("%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n", true),
        ("a: 1\n---\n%YAML 1.2\n---\nb: 2\n", true),
        ("a: 100%\nb: '\n%x'\n", false),
    ]);
}

#[test]
fn a_byte_order_mark_after_a_separator_is_read_as_kubectl_reads_it() {
    assert_agree_on(&[
        ("a: 1\n---\n\u{feff}b: 2\n", false),
        ("\u{feff}a: 1\n---\n\u{feff}b: 2\n---\n\u{feff}\n", false),
        ("a: 1\n---\n\u{feff}# c\nb: 2\n", false),
        ("a: 1\n---\n# c\n\u{feff}b: 2\n", false),
        // A separator that ends no document stays in the next one, and the mark is content.
        ("---\n\u{feff}a: 1\n", false),
        ("a: 1\n---\n---\n\u{feff}b: 2\n", false),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Generated documents in varied styles.

/// Scalars whose reading YAML 1.1 and 1.2 disagree on, and ordinary ones.
const WORDS: &[&str] = &[
    "on",
    "On",
    "ON",
    "oN",
    "off",
    "OFF",
    "oFF",
    "yes",
    "Yes",
    "yEs",
    "no",
    "NO",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "True",
    "tRUE",
    "false",
    "~",
    "null",
    "Null",
    "nULL",
    "010",
    "0x1F",
    "0X10",
    "1__0",
    "1_000",
    "1e3",
    "1E3",
    "5.0",
    ".5",
    "+7",
    "-0x10",
    "08",
    "0b101",
    "0o17",
    "-0",
    "2024-01-01",
    "12:30",
    "1.2.3",
    "0.1",
    "-1.5e-3",
    "string",
    "Widget",
    "a b",
    "x-y",
    "100m",
    "10Gi",
    "^[a-z]+$",
    "self.size() > 0",
];

/// Keys: property names, some of which YAML 1.1 converts.
const KEYS: &[&str] = &[
    "name", "spec", "y", "n", "on", "no", "010", "0x10", "1e3", "true", "0.5", "12", "x-y",
    "Widget", "a b",
];

/// Members whose keys stay distinct once kubectl converts them. Two keys that convert alike
/// but were read as different types (`"0.5"` and `0.5`, `y` and `true`) come out of a Go map
/// in random order, so kubectl itself gives either value: such maps are not generated.
fn distinct_keys(members: Vec<(&'static str, Node)>) -> Vec<(&'static str, Node)> {
    let converted = |key: &'static str| match key {
        "y" | "on" | "true" => "true",
        "n" | "no" => "false",
        other => other,
    };
    let mut seen = std::collections::BTreeSet::new();
    members
        .into_iter()
        .filter(|(key, _)| seen.insert(converted(key)))
        .collect()
}

#[derive(Debug, Clone)]
enum Node {
    Scalar(&'static str),
    Map(Vec<(&'static str, Node)>),
    Seq(Vec<Node>),
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop::sample::select(WORDS).prop_map(Node::Scalar);
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(KEYS), inner.clone()), 1..5)
                .prop_map(|members| Node::Map(distinct_keys(members))),
            prop::collection::vec(inner, 1..4).prop_map(Node::Seq),
        ]
    })
}

/// A CRD-shaped document around a generated `default`, `enum` and property tree.
fn crd(properties: Node, default: Node, members: Vec<&'static str>) -> Node {
    let schema = Node::Map(vec![
        ("type", Node::Scalar("object")),
        ("description", Node::Scalar(members[0])),
        ("properties", properties),
        ("default", default),
        (
            "enum",
            Node::Seq(members.iter().map(|m| Node::Scalar(m)).collect()),
        ),
    ]);
    Node::Map(vec![
        ("apiVersion", Node::Scalar("apiextensions.k8s.io/v1")),
        ("kind", Node::Scalar("CustomResourceDefinition")),
        (
            "spec",
            Node::Map(vec![
                ("group", Node::Scalar("km.example.com")),
                (
                    "versions",
                    Node::Seq(vec![Node::Map(vec![
                        ("name", Node::Scalar("v1")),
                        ("served", Node::Scalar("true")),
                        ("schema", Node::Map(vec![("openAPIV3Schema", schema)])),
                    ])]),
                ),
            ]),
        ),
    ])
}

/// How to write things, drawn per decision from a stream of choices.
struct Style<I: Iterator<Item = u8>>(I);

impl<I: Iterator<Item = u8>> Style<I> {
    fn pick(&mut self, n: u8) -> u8 {
        self.0.next().unwrap_or(0) % n
    }

    fn scalar(&mut self, text: &str, indent: usize) -> String {
        match self.pick(16) {
            0 | 1 => format!("'{}'", text.replace('\'', "''")),
            2 | 3 => format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")),
            4 | 5 => format!("|-\n{}{text}", " ".repeat(indent + 2)),
            6 | 7 => format!(">\n{}{text}\n", " ".repeat(indent + 2)),
            8 => format!("!!binary {}", BASE64_STANDARD.encode(text)),
            9 => "!!null \"\"".to_string(),
            10 => self.broken_line(text, indent),
            _ => text.to_string(),
        }
    }

    /// A plain scalar broken by a line break only YAML 1.1 knows (NEL, LS, PS), continued on
    /// the same text's next "line" indented enough, or not at all (which kubectl refuses).
    fn broken_line(&mut self, text: &str, indent: usize) -> String {
        let line_break = ['\u{85}', '\u{2028}', '\u{2029}'][usize::from(self.pick(3))];
        let continued = if self.pick(4) == 0 {
            String::new()
        } else {
            " ".repeat(indent + 2)
        };
        format!("{text}{line_break}{continued}{text}")
    }

    fn flow(&mut self, node: &Node) -> String {
        match node {
            Node::Scalar(s) => match self.pick(3) {
                0 => format!("\"{s}\""),
                _ => s.to_string(),
            },
            Node::Map(members) => {
                let inner: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", self.flow(v)))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
            Node::Seq(items) => {
                let mut inner: Vec<String> = items
                    .iter()
                    .map(|v| match (v, self.pick(8)) {
                        // go-yaml starts a key at `?` in flow style, blank or not.
                        (Node::Scalar(s), 0) => format!("?{s}"),
                        _ => self.flow(v),
                    })
                    .collect();
                if self.pick(8) == 0 {
                    // A lone `-`, a string to go-yaml.
                    inner.push("-".into());
                }
                format!("[{}]", inner.join(", "))
            }
        }
    }

    /// A value after `key:` or `-`, at `indent`.
    fn value(&mut self, node: &Node, indent: usize, out: &mut String) {
        match node {
            Node::Scalar(s) => {
                let written = self.scalar(s, indent);
                out.push(' ');
                out.push_str(&written);
                if !written.ends_with('\n') {
                    out.push_str(self.comment());
                    out.push('\n');
                }
            }
            _ if self.pick(5) == 0 => {
                out.push(' ');
                out.push_str(&self.flow(node));
                out.push('\n');
            }
            _ => {
                out.push('\n');
                self.block(node, indent + 2, out);
            }
        }
    }

    fn comment(&mut self) -> &'static str {
        if self.pick(6) == 0 {
            " # note: yes"
        } else {
            ""
        }
    }

    fn block(&mut self, node: &Node, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match node {
            Node::Scalar(s) => {
                out.push_str(&pad);
                out.push_str(s);
                out.push('\n');
            }
            Node::Map(members) => {
                for (key, value) in members {
                    let key = match self.pick(6) {
                        0 => format!("\"{key}\""),
                        _ => key.to_string(),
                    };
                    out.push_str(&format!("{pad}{key}:"));
                    self.value(value, indent, out);
                }
            }
            Node::Seq(items) => {
                for item in items {
                    out.push_str(&format!("{pad}-"));
                    self.value(item, indent, out);
                }
            }
        }
    }
}

fn write_yaml(docs: &[Node], choices: Vec<u8>) -> String {
    let mut style = Style(choices.into_iter().cycle());
    let mut out = String::new();
    if style.pick(8) == 0 {
        out.push('\u{feff}');
    }
    if style.pick(16) == 0 {
        // Directives, which kubectl refuses.
        out.push_str(
            ["%YAML 1.1\n", "%TAG !e! tag:example.com,2000:\n"][usize::from(style.pick(2))],
        );
    }
    for (i, doc) in docs.iter().enumerate() {
        if i > 0 || style.pick(2) == 0 {
            out.push_str("---\n");
            if style.pick(6) == 0 {
                // kubectl reads each document on its own, so a byte-order mark may start it.
                out.push('\u{feff}');
            }
        }
        if style.pick(4) == 0 {
            out.push_str("# a comment line\n");
        }
        style.block(doc, 0, &mut out);
        if style.pick(6) == 0 {
            out.push_str("...\n");
        }
    }
    if style.pick(5) == 0 {
        out = out.replace('\n', "\r\n");
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_crds_read_as_kubectl_reads_them(
        docs in prop::collection::vec(
            (node(), node(), prop::collection::vec(prop::sample::select(WORDS), 1..5))
                .prop_map(|(p, d, m)| crd(p, d, m)),
            1..3,
        ),
        choices in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let text = write_yaml(&docs, choices);
        agree(&text).map_err(TestCaseError::fail)?;
    }

    /// Anchors, aliases and merge keys, in block and flow style.
    #[test]
    fn anchors_aliases_and_merges_read_as_kubectl_reads_them(
        base in prop::collection::vec((prop::sample::select(KEYS), prop::sample::select(WORDS)), 1..4),
        over in prop::collection::vec((prop::sample::select(KEYS), prop::sample::select(WORDS)), 0..3),
        merge_first in any::<bool>(),
        scalar in prop::sample::select(WORDS),
    ) {
        let map = |m: &[(&str, &str)]| -> String {
            m.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
        };
        let own = map(&over);
        let merged = if merge_first {
            format!("{{<<: *base{}{own}}}", if own.is_empty() { "" } else { ", " })
        } else {
            format!("{{{own}{}<<: *base}}", if own.is_empty() { "" } else { ", " })
        };
        let text = format!(
            "base: &base {{{}}}\nvalue: &v {scalar}\nmerged: {merged}\ncopy: *base\nagain: *v\n",
            map(&base)
        );
        agree(&text).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn the_property_tests_can_fail() {
    // A harness that agreed with anything would pass above: kubectl's reading of a YAML 1.1
    // word must differ from a YAML 1.2 reader's.
    let text = "a: oN\nb: 010\ny: 1\n";
    let yaml_1_2: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    let truth = yaml_truth(text).unwrap();
    assert!(
        !same_json(&yaml_1_2[0], &truth[0]),
        "{yaml_1_2:?} vs {truth:?}"
    );
    assert_agree(text);
}
