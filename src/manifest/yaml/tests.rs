use serde_json::json;

use super::*;

fn read(text: &str) -> Vec<Value> {
    documents(text, "t.yaml").unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn one(text: &str) -> Value {
    let mut docs = read(text);
    assert_eq!(docs.len(), 1, "{text:?}: {docs:?}");
    docs.remove(0)
}

#[test]
fn yaml_1_1_words_resolve_only_in_the_spellings_go_yaml_lists() {
    for (word, want) in [
        ("yes", json!(true)),
        ("Yes", json!(true)),
        ("YES", json!(true)),
        ("y", json!(true)),
        ("On", json!(true)),
        ("off", json!(false)),
        ("N", json!(false)),
        ("oN", json!("oN")),
        ("yEs", json!("yEs")),
        ("oFF", json!("oFF")),
        ("~", json!(null)),
        ("Null", json!(null)),
        ("nULL", json!("nULL")),
    ] {
        assert_eq!(one(&format!("v: {word}"))["v"], want, "{word}");
    }
}

#[test]
fn numbers_resolve_as_go_parses_them() {
    for (text, want) in [
        ("010", json!(8)),
        ("0x10", json!(16)),
        ("0X10", json!(16)),
        ("-0x10", json!(-16)),
        ("0o17", json!(15)),
        ("0b101", json!(5)),
        ("1__0", json!(10)),
        ("+7", json!(7)),
        ("08", json!(8.0)),
        ("1e3", json!(1000.0)),
        ("5.0", json!(5.0)),
        (".5", json!(0.5)),
        ("1.", json!(1.0)),
        ("18446744073709551615", json!(18_446_744_073_709_551_615u64)),
        ("-9223372036854775808", json!(i64::MIN)),
        ("1e400", json!("1e400")),
        ("1.2.3", json!("1.2.3")),
        ("0x", json!("0x")),
        ("2024-01-01", json!("2024-01-01")),
        ("1_000.5", json!(1000.5)),
    ] {
        assert_eq!(one(&format!("v: {text}"))["v"], want, "{text}");
    }
}

#[test]
fn quoted_and_block_scalars_stay_strings() {
    let doc = one("a: 'yes'\nb: \"010\"\nc: |\n  on\nd: >-\n  1e3\n");
    assert_eq!(
        doc,
        json!({"a": "yes", "b": "010", "c": "on\n", "d": "1e3"})
    );
}

#[test]
fn keys_are_converted_as_sigs_k8s_io_yaml_writes_them() {
    let doc = one("y: 1\n010: 2\n0x10: 3\n1e3: 4\ntrue: 5\n0.5: 6\n1e6: 7\n1234567.0: 8\n");
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in ["true", "8", "16", "1000", "0.5", "1e+06", "1.234567e+06"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert_eq!(
        doc["true"],
        json!(5),
        "the later of two keys that convert alike wins"
    );
}

#[test]
fn keys_kubectl_cannot_convert_are_refused() {
    for text in [
        "~: 1\n",
        "18446744073709551615: 1\n",
        "[a]: 1\n",
        "? {a: 1}\n: 2\n",
    ] {
        let err = documents(text, "k.yaml").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("k.yaml: line 1"), "{err}");
    }
}

#[test]
fn g32_formatting_matches_go() {
    for (f, want) in [
        (1000.0, "1000"),
        (0.1, "0.1"),
        (1e6, "1e+06"),
        (123_456.0, "123456"),
        (1.5e10, "1.5e+10"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (std::f64::consts::PI, "3.1415927"),
        (0.0, "0"),
    ] {
        assert_eq!(go_format_g32(f), want, "{f}");
    }
}

#[test]
fn tags_decide_as_go_yaml_does() {
    let doc = one("a: !!str 5\nb: !!int \"7\"\nc: !!float 2\nd: !custom yes\ne: !!bool 'on'\n");
    assert_eq!(
        doc,
        json!({"a": "5", "b": 7, "c": 2.0, "d": "yes", "e": true})
    );
    assert!(documents("a: !!int x\n", "t").is_err());
}

#[test]
fn merge_keys_and_aliases() {
    let doc = one("base: &b {p: 1, q: 2}\nm:\n  <<: *b\n  q: 3\nr:\n  q: 3\n  <<: *b\nl: *b\n");
    assert_eq!(doc["m"], json!({"p": 1, "q": 3}));
    assert_eq!(
        doc["r"],
        json!({"p": 1, "q": 2}),
        "a merge overwrites what came before it"
    );
    assert_eq!(doc["l"], json!({"p": 1, "q": 2}));
    let seq = one("a: &a {k: 1}\nb: &b {k: 2, j: 2}\nc: {<<: [*a, *b]}\n");
    assert_eq!(
        seq["c"],
        json!({"k": 1, "j": 2}),
        "earlier mappings of a sequence win"
    );
    assert!(documents("a: {<<: 1}\n", "t").is_err());
}

#[test]
fn alias_bombs_are_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = documents(&text, "bomb.yaml").unwrap_err();
    assert!(err.to_string().contains("aliases expand"), "{err}");
}

#[test]
fn empty_and_null_documents_are_left_out() {
    let docs = read("---\n---\nnull\n---\na: 1\n...\n---\n~\n---\nb: 2\n");
    assert_eq!(docs, vec![json!({"a": 1}), json!({"b": 2})]);
}

#[test]
fn json_streams_and_flow_yaml_that_starts_with_a_brace() {
    assert_eq!(
        read("{\"a\": 1} {\"b\": 2}"),
        vec![json!({"a": 1}), json!({"b": 2})]
    );
    assert_eq!(
        one("{apiVersion: v1, kind: List, items: []}"),
        json!({"apiVersion": "v1", "kind": "List", "items": []})
    );
    let err = documents("{\"a\": [1, }", "bad.json").unwrap_err();
    assert!(err.to_string().contains("invalid JSON"), "{err}");
}

#[test]
fn infinities_and_nan_cannot_be_sent() {
    for text in ["v: .inf\n", "v: -.Inf\n", "v: .NaN\n"] {
        let err = documents(text, "f.yaml").unwrap_err();
        assert!(err.to_string().contains("not a JSON number"), "{err}");
    }
    assert_eq!(one(".inf: 1\n"), json!({".inf": 1}), "as a key it is text");
}

#[test]
fn one_depth_limit_for_yaml_and_json_and_no_crash_far_past_it() {
    let nested = |depth: usize, open: &str, close: &str| {
        format!("{}1{}", open.repeat(depth), close.repeat(depth))
    };
    // Flow and block YAML, and JSON, are held to the same limit.
    for depth in [MAX_DEPTH - 1, MAX_DEPTH] {
        documents(&nested(depth, "[", "]"), "ok").unwrap();
        documents(&nested(depth, "{\"a\": ", "}"), "ok").unwrap();
    }
    let block = |depth: usize| -> String {
        let keys: String = (0..depth)
            .map(|i| format!("{}a:\n", "  ".repeat(i)))
            .collect();
        format!("{keys}{}1\n", "  ".repeat(depth))
    };
    documents(&block(MAX_DEPTH), "ok").unwrap();
    for text in [
        nested(MAX_DEPTH + 1, "[", "]"),
        nested(MAX_DEPTH + 1, "{\"a\": ", "}"),
        block(MAX_DEPTH + 1),
        nested(4000, "[", "]"),
        (0..4000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect(),
    ] {
        let err = documents(&text, "deep.yaml").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string()
                .contains(&format!("deeper than {MAX_DEPTH} levels")),
            "{err}"
        );
    }
}

#[test]
fn what_go_yaml_refuses_or_reads_otherwise_is_refused_or_read_so() {
    for (text, needle) in [
        ("x: \"a\\/b\"\n", "unknown escape"),
        ("--- |\n  text\n", "invalid document separator"),
    ] {
        let err = documents(text, "g.yaml").unwrap_err();
        assert!(err.to_string().contains(needle), "{text:?}: {err}");
    }
    assert_eq!(
        one("x: \"a\\\\/b\"\n")["x"],
        json!("a\\/b"),
        "an escaped backslash is fine"
    );
    assert_eq!(one("--- # a comment\na: 1\n"), json!({"a": 1}));
    assert_eq!(
        one("a: |\n  x")["a"],
        json!("x\n"),
        "a block scalar ends with a line break"
    );
    assert_eq!(one("a: x\u{2028}  y\n")["a"], json!("x\u{2028}y"));
    assert_eq!(one("a: \"x  \u{2028}  y\"\n")["a"], json!("x\u{2028}y"));
}
