//! The local validator, case by case: objects against small schemas, as the API server judges them.
use super::*;
use crate::schema::parse::parse_crd_schema;
use serde_json::json;

fn schema() -> Schema {
    parse_crd_schema(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "port": {"x-kubernetes-int-or-string": true},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}}),
        "s",
    )
    .unwrap()
}

fn violations(object: Value) -> Vec<String> {
    validate_object(&schema(), &object)
        .violations
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_valid_object_passes() {
    let ok = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"}, "spec": {
        "size": 3, "mode": "fast", "name": "abc", "tags": ["a", "b"], "labels": {"k": "v"},
        "port": "http", "extra": {"anything": [1, 2]}}});
    assert_eq!(violations(ok), Vec::<String>::new());
}

#[test]
fn each_constraint_is_enforced() {
    let cases = [
        (json!({"spec": {}}), ".spec.size: Required value"),
        (
            json!({"spec": {"size": 0}}),
            ".spec.size: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            json!({"spec": {"size": 1.5}}),
            ".spec.size: Invalid value: number: must be of type integer",
        ),
        (
            json!({"spec": {"size": 1, "mode": "slow"}}),
            ".spec.mode: Unsupported value: \"slow\"",
        ),
        (
            json!({"spec": {"size": 1, "name": "abcdef"}}),
            ".spec.name: Too long",
        ),
        (
            json!({"spec": {"size": 1, "name": "AB"}}),
            ".spec.name: Invalid value: \"AB\": should match",
        ),
        (
            json!({"spec": {"size": 1, "tags": ["a", "a"]}}),
            ".spec.tags[1]: Duplicate value",
        ),
        (
            json!({"spec": {"size": 1, "labels": {"k": 1}}}),
            ".spec.labels.k: Invalid value: integer: must be of type string",
        ),
        (
            json!({"spec": {"size": 1, "port": true}}),
            ".spec.port: Invalid value: boolean: must be of type int-or-string",
        ),
        (
            json!({"spec": {"size": 1, "color": "red"}}),
            ".spec.color: unknown field",
        ),
    ];
    for (object, want) in cases {
        let got = violations(object.clone());
        assert!(
            got.iter().any(|v| v.starts_with(want)),
            "{object}: wanted {want:?}, got {got:?}"
        );
    }
}

/// An object whose field `v` has the schema `v`.
fn field(v: Value) -> Schema {
    parse_crd_schema(&json!({"type": "object", "properties": {"v": v}}), "s").unwrap()
}

#[test]
fn a_date_time_whose_time_starts_with_a_wide_character_is_invalid() {
    // Found by fuzzing: slicing the time by bytes panicked inside a character.
    let s = field(json!({"type": "string", "format": "date-time"}));
    for text in [
        "2024-01-01T日本語",
        "2024-01-01T1日:00:00",
        "2024-01-01T12日00:00",
    ] {
        let outcome = validate_object(&s, &json!({"v": text}));
        assert_eq!(
            outcome.violations,
            [Violation {
                path: ".v".into(),
                message: format!("Invalid value: {text:?}: must be of format date-time"),
            }]
        );
    }
    assert!(validate_object(&s, &json!({"v": "2024-01-01T12:00:00Z"})).is_valid());
}

#[test]
fn a_pattern_is_compiled_once_and_kept() {
    let pattern = "^kept-[0-9]+$";
    let s = field(json!({"type": "string", "pattern": pattern}));
    assert!(validate_object(&s, &json!({"v": "kept-1"})).is_valid());
    let kept = |p: &str| PATTERNS.kept(p).map(|re| re.is_some());
    assert_eq!(kept(pattern), Some(true));
    assert!(!validate_object(&s, &json!({"v": "other"})).is_valid());
    // Patterns the regex crate does not read are kept too, as unchecked.
    let lookahead = "^(?=a)a$";
    let s = field(json!({"type": "string", "pattern": lookahead}));
    for _ in 0..2 {
        let outcome = validate_object(&s, &json!({"v": "a"}));
        assert!(outcome.is_valid());
        assert_eq!(
            outcome.unchecked,
            [format!(
                ".v: pattern {lookahead:?} (not a regular expression this tool reads as Go does)"
            )]
        );
    }
    assert_eq!(kept(lookahead), Some(false));
}

#[test]
fn cel_rules_are_evaluated_and_those_not_decided_are_unchecked() {
    let s = parse_crd_schema(
        &json!({"type": "object", "properties": {"a": {"type": "integer"}, "q": {"type": "string"}},
            "x-kubernetes-validations": [
                {"rule": "self.a == 1", "message": "a must be 1", "fieldPath": ".a"},
                {"rule": "quantity(self.q).isGreaterThan(quantity('1'))"},
                {"rule": "self.a == oldSelf.a"}]}),
        "s",
    )
    .unwrap();
    let outcome = validate_object(&s, &json!({"a": 2, "q": "2"}));
    assert_eq!(
        outcome.violations,
        [Violation {
            path: ".a".into(),
            message: "Invalid value: a must be 1".into()
        }]
    );
    assert_eq!(outcome.unchecked.len(), 2, "{:?}", outcome.unchecked);
    assert!(outcome.unchecked[0].contains("quantity()"));
    assert!(outcome.unchecked[1].contains("update only"));
    assert!(validate_object(&s, &json!({"a": 1, "q": "2"})).is_valid());
}

/// A pattern is read as Go reads it, the one reading the diff uses: `\d` is an ASCII digit.
#[test]
fn a_pattern_is_read_as_go_reads_it() {
    let s = parse_crd_schema(
        &json!({"type": "object", "properties": {"d": {"type": "string", "pattern": "^\\d+$"}}}),
        "s",
    )
    .unwrap();
    let valid = |text: &str| validate_object(&s, &json!({ "d": text })).is_valid();
    assert!(valid("12"));
    assert!(!valid("١٢"), "Arabic-Indic digits are not Go's \\d");
    assert!(!valid("１２"), "fullwidth digits are not Go's \\d");
}

/// Enum members are compared by value, numbers inside lists and objects included.
#[test]
fn enum_members_are_compared_by_value_at_any_depth() {
    let s = parse_crd_schema(
        &json!({"type": "object", "properties": {
            "pair": {"type": "array", "items": {"type": "number"}, "enum": [[1, 2.5], [3.0]]},
            "point": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                      "enum": [{"x": 1, "y": [2]}]}
        }}),
        "s",
    )
    .unwrap();
    let valid = |object: Value| validate_object(&s, &object).is_valid();
    assert!(valid(json!({"pair": [1.0, 2.5]})));
    assert!(valid(json!({"pair": [3]})));
    assert!(valid(json!({"point": {"y": [2.0], "x": 1.0}})));
    assert!(!valid(json!({"pair": [2.5, 1]})), "order counts in a list");
    assert!(!valid(json!({"pair": [1, 2.5, 3]})));
    assert!(!valid(json!({"point": {"x": 1, "y": [2], "z": 0}})));
}

/// Defaults are applied by the object's members and the schema's defaulted properties: a wide
/// object node with one default among many, and a default inside a map's values.
#[test]
fn defaults_reach_absent_fields_and_map_values() {
    let mut properties = serde_json::Map::new();
    for i in 0..1000 {
        properties.insert(format!("f{i}"), json!({"type": "string"}));
    }
    properties.insert(
        "f500".into(),
        json!({"type": "string", "default": "d", "enum": ["d"]}),
    );
    properties.insert(
        "m".into(),
        json!({"type": "object", "additionalProperties":
            {"type": "object", "properties": {"k": {"type": "integer", "default": 7}}}}),
    );
    let s = parse_crd_schema(&json!({"type": "object", "properties": properties}), "s").unwrap();
    let mut object = json!({"f1": "x", "f500": null, "m": {"a": {}, "b": {"k": 1}}});
    apply_defaults(&s, &mut object);
    assert_eq!(
        object,
        json!({"f1": "x", "f500": "d", "m": {"a": {"k": 7}, "b": {"k": 1}}})
    );
    // A default set later is seen: a change to the node drops what was worked out from it.
    let mut changed = s.clone();
    changed.properties.get_mut("f1").expect("f1").default = Some(json!("later"));
    let mut object = json!({});
    apply_defaults(&changed, &mut object);
    assert_eq!(object["f1"], "later");
    let mut object = json!({});
    apply_defaults(&s, &mut object);
    assert_eq!(object.get("f1"), None, "the original is unchanged");
}
