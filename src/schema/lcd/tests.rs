//! Unit tests of the LCD, then property tests: soundness (whatever the LCD accepts, every source
//! accepts), independence of the order of the sources, and the diff's classes against the
//! validator, over random related structural schemas.
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::*;
use crate::schema::diff::{Class, diff_api};
use crate::schema::load::{
    Selection, apis_from_documents, crd_from_spec_text, crd_from_value, parse_documents,
    stored_apis_from_documents,
};
use crate::schema::model::{ApiDef, RareKeywords, Schema, SchemaNode, to_json};
use crate::schema::parse::parse_crd_schema;
use crate::schema::validate::validate_object;

const HEAD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
";

fn api_yaml(text: &str) -> ApiDef {
    let docs = parse_documents(text, "test.yaml").unwrap();
    let mut apis = apis_from_documents(docs, "test.yaml", &Selection::default()).unwrap();
    assert_eq!(apis.len(), 1, "{text}");
    apis.pop_first().unwrap().1
}

/// A CRD with one version v1 whose root schema is `root` (YAML flow style).
fn crd_root(root: &str) -> ApiDef {
    api_yaml(&format!(
        "{HEAD}  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {root}\n"
    ))
}

/// A CRD with one version v1 whose optional `.spec` has the schema `spec`.
fn crd(spec: &str) -> ApiDef {
    crd_root(&format!("{{type: object, properties: {{spec: {spec}}}}}"))
}

/// One schema node written in YAML flow style.
fn node(flow: &str) -> Schema {
    let docs =
        parse_documents(&format!("type: object\nproperties:\n  x: {flow}\n"), "node").unwrap();
    let mut root = parse_crd_schema(&docs[0], "node").unwrap();
    root.properties.remove("x").unwrap()
}

const LABELS: [&str; 3] = ["one", "two", "three"];

fn lcd(apis: &[&ApiDef]) -> Lcd {
    let some: Vec<Option<&ApiDef>> = apis.iter().map(|a| Some(*a)).collect();
    let labels: Vec<String> = LABELS[..apis.len()].iter().map(|l| l.to_string()).collect();
    lcd_api(&some, &labels)
}

fn spec(l: &Lcd) -> &Schema {
    assert_eq!(l.conflicts, Vec::new(), "no LCD");
    &l.schemas["v1"].properties["spec"]
}

fn dropped(version: &str, path: &str, sources: &[&str], reason: &str) -> Dropped {
    Dropped {
        version: version.into(),
        path: path.into(),
        sources: sources.iter().map(|s| s.to_string()).collect(),
        reason: reason.into(),
    }
}

fn conflict(version: &str, path: &str, reason: &str) -> Conflict {
    Conflict {
        version: version.into(),
        path: path.into(),
        reason: reason.into(),
    }
}

fn valid(schema: &Schema, object: Value) -> bool {
    validate_object(schema, &object).is_valid()
}

// ---- fields

#[test]
fn a_field_only_some_sources_have_is_dropped_and_listed_with_them() {
    let both = crd("{type: object, properties: {a: {type: string}, b: {type: integer}}}");
    let one = crd("{type: object, properties: {a: {type: string}}}");
    let l = lcd(&[&both, &both, &one]);
    assert_eq!(
        spec(&l),
        &node("{type: object, properties: {a: {type: string}}}")
    );
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec.b",
            &["one", "two"],
            "not a field in three"
        )]
    );
    assert!(l.manifest.is_some());
}

#[test]
fn a_required_field_missing_in_a_source_is_a_conflict_naming_the_path() {
    let required = crd_root(
        "{type: object, required: [spec], properties: {spec: {type: object, required: [b], properties: {a: {type: string}, b: {type: string}}}}}",
    );
    let lacking = crd_root(
        "{type: object, required: [spec], properties: {spec: {type: object, properties: {a: {type: string}}}}}",
    );
    let l = lcd(&[&required, &lacking]);
    assert_eq!(
        l.conflicts,
        [
            conflict("v1", ".spec.b", "not a field in two"),
            conflict("v1", ".spec.b", "required, so it cannot be dropped"),
            conflict("v1", ".spec", "required, so it cannot be dropped"),
        ]
    );
    assert_eq!(l.manifest, None);
    assert!(l.schemas.is_empty());
}

#[test]
fn a_conflict_below_an_optional_field_drops_that_field_with_the_reason() {
    let required =
        crd("{type: object, required: [b], properties: {a: {type: string}, b: {type: string}}}");
    let lacking = crd("{type: object, properties: {a: {type: string}}}");
    let l = lcd(&[&required, &lacking]);
    assert_eq!(l.conflicts, Vec::new());
    assert_eq!(l.schemas["v1"], node("{type: object}"));
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec",
            &["one", "two"],
            ".spec.b: not a field in two; .spec.b: required, so it cannot be dropped"
        )]
    );
}

#[test]
fn a_type_conflict_under_an_optional_field_drops_it_with_the_reason() {
    let l = lcd(&[
        &crd("{type: object, properties: {a: {type: string}, x: {type: string}}}"),
        &crd("{type: object, properties: {a: {type: string}, x: {type: integer}}}"),
    ]);
    assert_eq!(
        spec(&l),
        &node("{type: object, properties: {a: {type: string}}}")
    );
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec.x",
            &["one", "two"],
            "type conflict: string in one, integer in two"
        )]
    );
}

#[test]
fn integer_and_number_make_integer_and_int_or_string_narrows() {
    let int = crd("{type: object, properties: {num: {type: integer}}}");
    let num = crd("{type: object, properties: {num: {type: number}}}");
    let want = node("{type: object, properties: {num: {type: integer}}}");
    assert_eq!(spec(&lcd(&[&int, &num])), &want);
    assert_eq!(spec(&lcd(&[&num, &int])), &want);
    let ios = crd("{type: object, properties: {num: {x-kubernetes-int-or-string: true}}}");
    let text = crd("{type: object, properties: {num: {type: string}}}");
    assert_eq!(
        spec(&lcd(&[&ios, &text])),
        &node("{type: object, properties: {num: {type: string}}}")
    );
    assert_eq!(spec(&lcd(&[&ios, &num, &int])), &want);
    assert_eq!(
        spec(&lcd(&[&ios, &ios])),
        &node("{type: object, properties: {num: {x-kubernetes-int-or-string: true}}}")
    );
}

#[test]
fn enums_intersect() {
    let l = lcd(&[
        &crd("{type: object, properties: {m: {type: string, enum: [c, a, b]}}}"),
        &crd("{type: object, properties: {m: {type: string, enum: [d, c, b]}}}"),
        &crd("{type: object, properties: {m: {type: string}}}"),
    ]);
    assert_eq!(
        spec(&l),
        &node("{type: object, properties: {m: {type: string, enum: [b, c]}}}")
    );
    let l = lcd(&[
        &crd("{type: object, properties: {a: {type: string}, m: {type: string, enum: [a]}}}"),
        &crd("{type: object, properties: {a: {type: string}, m: {type: string, enum: [b]}}}"),
    ]);
    assert_eq!(
        spec(&l),
        &node("{type: object, properties: {a: {type: string}}}")
    );
    assert_eq!(l.dropped.len(), 1);
    assert_eq!(l.dropped[0].path, ".spec.m");
    assert!(
        l.dropped[0]
            .reason
            .starts_with("no enum value is allowed everywhere"),
        "{:?}",
        l.dropped
    );
}

#[test]
fn bounds_are_the_tightest_of_each() {
    let l = lcd(&[
        &crd(
            "{type: object, properties: {
               s: {type: string, maxLength: 10, minLength: 1},
               num: {type: integer, maximum: 10, minimum: 0, exclusiveMinimum: true},
               l: {type: array, maxItems: 3, items: {type: string}},
               m: {type: object, minProperties: 1, additionalProperties: {type: string}}}}",
        ),
        &crd(
            "{type: object, properties: {
               s: {type: string, maxLength: 5, minLength: 2},
               num: {type: integer, maximum: 10, exclusiveMaximum: true, minimum: -5},
               l: {type: array, maxItems: 5, minItems: 1, items: {type: string}},
               m: {type: object, maxProperties: 4, minProperties: 2, additionalProperties: {type: string}}}}",
        ),
    ]);
    assert_eq!(
        spec(&l),
        &node(
            "{type: object, properties: {
               s: {type: string, maxLength: 5, minLength: 2},
               num: {type: integer, maximum: 10, exclusiveMaximum: true, minimum: 0, exclusiveMinimum: true},
               l: {type: array, maxItems: 3, minItems: 1, items: {type: string}},
               m: {type: object, maxProperties: 4, minProperties: 2, additionalProperties: {type: string}}}}"
        )
    );
    // Bounds that leave nothing: the optional field is dropped.
    let l = lcd(&[
        &crd("{type: object, properties: {a: {type: string}, num: {type: integer, minimum: 5}}}"),
        &crd("{type: object, properties: {a: {type: string}, num: {type: integer, maximum: 4}}}"),
    ]);
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec.num",
            &["one", "two"],
            "no number is allowed everywhere (minimum 5, maximum 4)"
        )]
    );
}

#[test]
fn numbers_spelt_differently_are_the_same_value() {
    let l = lcd(&[
        &crd(
            "{type: object, properties: {e: {type: number, enum: [0.5, 1.0, 2.0], default: 1.0}, s: {type: string, minLength: 0}}}",
        ),
        &crd(
            "{type: object, properties: {e: {type: number, enum: [0.5, 1, 2], default: 1}, s: {type: string}}}",
        ),
    ]);
    assert!(l.dropped.is_empty(), "{:?}", l.dropped);
    assert_eq!(
        spec(&l),
        &node(
            "{type: object, properties: {e: {type: number, enum: [0.5, 1, 2], default: 1}, s: {type: string}}}"
        )
    );
}

#[test]
fn patterns_of_every_source_are_kept() {
    let l = lcd(&[
        &crd("{type: object, properties: {p: {type: string, pattern: 'b$'}}}"),
        &crd("{type: object, properties: {p: {type: string, pattern: '^a'}}}"),
        &crd("{type: object, properties: {p: {type: string, pattern: '^a'}}}"),
    ]);
    let p = &spec(&l).properties["p"];
    assert_eq!(
        p,
        &node("{type: string, pattern: '^a', allOf: [{pattern: 'b$'}]}")
    );
    let root = &l.schemas["v1"];
    assert!(valid(root, json!({"spec": {"p": "ab"}})));
    assert!(!valid(root, json!({"spec": {"p": "a"}})));
    assert!(!valid(root, json!({"spec": {"p": "b"}})));
    // A pattern that accepts all a narrower one does adds nothing; of two accepting the same
    // strings, one is kept.
    let l = lcd(&[
        &crd("{type: object, properties: {p: {type: string, pattern: '^a'}}}"),
        &crd("{type: object, properties: {p: {type: string, pattern: '^ab'}}}"),
        &crd("{type: object, properties: {p: {type: string, pattern: '^(ab)'}}}"),
    ]);
    assert_eq!(
        &spec(&l).properties["p"],
        &node("{type: string, pattern: '^(ab)'}")
    );
    // A multipleOf another keeps only the coarser step; unrelated ones are both kept.
    let l = lcd(&[
        &crd("{type: object, properties: {num: {type: integer, multipleOf: 2}}}"),
        &crd("{type: object, properties: {num: {type: integer, multipleOf: 4}}}"),
        &crd("{type: object, properties: {num: {type: integer, multipleOf: 3}}}"),
    ]);
    assert_eq!(
        spec(&l).properties["num"],
        node("{type: integer, multipleOf: 3, allOf: [{multipleOf: 4}]}")
    );
}

#[test]
fn cel_rules_are_unioned() {
    let l = lcd(&[
        &crd(
            "{type: object, x-kubernetes-validations: [{rule: 'self.a > 0', message: positive}], properties: {a: {type: integer}}}",
        ),
        &crd(
            "{type: object, x-kubernetes-validations: [{rule: 'self.a < 10'}, {rule: ' self.a  > 0'}], properties: {a: {type: integer}}}",
        ),
    ]);
    let rules: Vec<(String, Option<String>)> = spec(&l)
        .validations
        .iter()
        .map(|r| (r.key(), r.message.clone()))
        .collect();
    assert_eq!(
        rules,
        [
            ("self.a < 10".to_string(), None),
            // Of two spellings of one rule, one is kept (the same whatever the order).
            ("self.a > 0".to_string(), None),
        ]
    );
    assert_eq!(l.dropped, Vec::new());
}

#[test]
fn a_dropped_field_a_rule_refers_to_stays_declared_but_unsettable() {
    let with_x = crd(
        "{type: object, x-kubernetes-validations: [{rule: '!has(self.x) || self.x > 0'}], properties: {a: {type: string}, x: {type: integer}}}",
    );
    let without = crd("{type: object, properties: {a: {type: string}}}");
    let l = lcd(&[&with_x, &without]);
    let s = spec(&l);
    assert_eq!(
        s.validations.iter().map(|r| r.key()).collect::<Vec<_>>(),
        ["!has(self.x) || self.x > 0"]
    );
    let x = &s.properties["x"];
    assert_eq!(x.type_name(), "integer");
    assert_eq!(
        x.validations,
        [CelRule {
            rule: "false".into(),
            message: Some(".spec.x is not settable: not every cluster accepts it".into()),
            message_expression: None,
            reason: None,
            field_path: None,
            optional_old_self: None,
        }]
    );
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec.x",
            &["one"],
            "not a field in two (kept declared but unsettable, because a rule refers to it: !has(self.x) || self.x > 0)"
        )]
    );
    // The source's rule holds for x = 1 and is evaluated; `false` rejects x all the same.
    let outcome = validate_object(&l.schemas["v1"], &json!({"spec": {"x": 1}}));
    assert!(outcome.unchecked.is_empty(), "{:?}", outcome.unchecked);
    assert_eq!(
        outcome
            .violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [".spec.x: Invalid value: .spec.x is not settable: not every cluster accepts it"]
    );
    assert!(valid(&l.schemas["v1"], json!({"spec": {"a": "x"}})));
    // The manifest stays a valid CRD.
    crd_from_value(&manifest_of(&l), "lcd", &Selection::default()).unwrap();
}

#[test]
fn a_field_dropped_where_unknown_fields_are_kept_stays_declared_but_unsettable() {
    // Undeclared, `.spec.x` would be one of the unknown fields every source keeps, and take
    // any value; but `one` rejects a string there and `two` an integer.
    let l = lcd(&[
        &crd(
            "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {x: {type: integer, nullable: true}}}",
        ),
        &crd(
            "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {x: {type: string}}}",
        ),
        &crd("{type: object, x-kubernetes-preserve-unknown-fields: true}"),
    ]);
    let s = spec(&l);
    assert!(s.preserve_unknown_fields);
    let x = &s.properties["x"];
    assert_eq!(
        (x.type_name().as_str(), x.nullable, x.validations.len()),
        ("integer", false, 1)
    );
    assert_eq!(x.validations[0].rule, "false");
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec.x",
            &["one", "two"],
            "type conflict: integer in one, string in two (kept declared but unsettable, because unknown fields are kept there)"
        )]
    );
    let root = &l.schemas["v1"];
    for value in [json!(1), json!("a"), json!([1]), Value::Null] {
        assert!(!valid(root, json!({"spec": {"x": value}})), "x: {value}");
    }
    assert!(valid(root, json!({"spec": {"other": [1]}})));
    crd_from_value(&manifest_of(&l), "lcd", &Selection::default()).unwrap();
}

#[test]
fn a_map_against_fixed_fields_keeps_the_fixed_fields_the_map_accepts() {
    let map = crd(
        "{type: object, properties: {labels: {type: object, additionalProperties: {type: string, maxLength: 10}}}}",
    );
    let fixed = crd(
        "{type: object, properties: {labels: {type: object, properties: {team: {type: string}}}}}",
    );
    let want = node(
        "{type: object, properties: {labels: {type: object, properties: {team: {type: string, maxLength: 10}}}}}",
    );
    assert_eq!(spec(&lcd(&[&map, &fixed])), &want);
    assert_eq!(spec(&lcd(&[&fixed, &map])), &want);
    let l = lcd(&[&map, &fixed]);
    let root = &l.schemas["v1"];
    assert!(valid(root, json!({"spec": {"labels": {"team": "x"}}})));
    assert!(!valid(root, json!({"spec": {"labels": {"owner": "x"}}})));
    // Two maps make a map of the common values.
    let short = crd(
        "{type: object, properties: {labels: {type: object, additionalProperties: {type: string, maxLength: 3}}}}",
    );
    assert_eq!(
        spec(&lcd(&[&map, &short])),
        &node(
            "{type: object, properties: {labels: {type: object, additionalProperties: {type: string, maxLength: 3}}}}"
        )
    );
}

#[test]
fn flags_that_allow_more_need_every_source_and_differing_defaults_are_noted() {
    let l = lcd(&[
        &crd(
            "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string, nullable: true, default: xx}}}",
        ),
        &crd("{type: object, properties: {a: {type: string, nullable: true, default: yy}}}"),
    ]);
    assert_eq!(
        spec(&l),
        &node("{type: object, properties: {a: {type: string, nullable: true}}}")
    );
    assert_eq!(
        l.notes,
        ["v1: .spec.a: defaults differ; the LCD has none".to_string()]
    );
}

#[test]
fn a_required_field_no_source_declares_stays_required_where_all_keep_unknown_fields() {
    // Found by fuzzing: the merge of the field's (no) schemas indexed an empty list.
    let requiring = crd(
        "{type: object, x-kubernetes-preserve-unknown-fields: true, required: [x], properties: {a: {type: string}}}",
    );
    let open = crd("{type: object, x-kubernetes-preserve-unknown-fields: true}");
    let l = lcd(&[&requiring, &open]);
    let s = spec(&l);
    assert_eq!(s.required, ["x"]);
    assert_eq!(s.properties.keys().collect::<Vec<_>>(), ["a"]);
    assert!(s.preserve_unknown_fields);
    assert!(valid(
        &l.schemas["v1"],
        json!({"spec": {"x": [1], "a": "b"}})
    ));
    assert!(!valid(&l.schemas["v1"], json!({"spec": {"a": "b"}})));
}

#[test]
fn a_required_name_is_kept_where_no_source_declares_any_field() {
    // Found by fuzzing: without properties, the names the sources require were dropped, and the
    // LCD accepted objects a source rejects.
    let requiring =
        crd("{type: object, x-kubernetes-preserve-unknown-fields: true, required: [x]}");
    let open = crd("{type: object, x-kubernetes-preserve-unknown-fields: true}");
    let l = lcd(&[&requiring, &open]);
    assert_eq!(spec(&l).required, ["x"]);
    assert!(!valid(&l.schemas["v1"], json!({"spec": {}})));
    assert!(valid(&l.schemas["v1"], json!({"spec": {"x": 1}})));
    // A source that requires a name it does not accept: as with declared fields, the object
    // holding it has no LCD (here the optional .spec, which is dropped).
    let strict = crd("{type: object, required: [x]}");
    let l = lcd(&[&strict, &open]);
    assert_eq!(
        l.dropped,
        [dropped(
            "v1",
            ".spec",
            &["one", "two"],
            ".spec.x: not a field in one; .spec.x: required, so it cannot be dropped"
        )]
    );
}

// ---- versions and the manifest

fn version(name: &str, served: bool, storage: bool, extra: &str) -> String {
    format!(
        "  - name: {name}\n    served: {served}\n    storage: {storage}\n    schema: {{openAPIV3Schema: {{type: object, properties: {{spec: {{type: object, properties: {{a: {{type: string}}}}}}}}}}}}\n{extra}"
    )
}

fn crd_versions(versions: &[String]) -> ApiDef {
    api_yaml(&format!("{HEAD}{}", versions.concat()))
}

/// The LCD's manifest as JSON, checking on the way that it is printed as that JSON is, at the
/// top and as an item of a `List` (nested two deep).
fn manifest_of(l: &Lcd) -> Value {
    let manifest = l.manifest.as_ref().expect("a manifest");
    let value = manifest.to_value();
    let mut top = Vec::new();
    manifest.push_json_pretty(&mut top, 0);
    assert_eq!(
        String::from_utf8(top).unwrap(),
        serde_json::to_string_pretty(&value).unwrap()
    );
    let mut item = b"{\n  \"items\": [\n    ".to_vec();
    manifest.push_json_pretty(&mut item, 2);
    item.extend_from_slice(b"\n  ]\n}");
    assert_eq!(
        String::from_utf8(item).unwrap(),
        serde_json::to_string_pretty(&json!({ "items": [value] })).unwrap()
    );
    value
}

fn manifest_versions(l: &Lcd) -> Vec<(String, bool)> {
    manifest_of(l)["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["storage"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn only_versions_every_source_serves_are_kept() {
    let both = crd_versions(&[
        version("v1", true, true, ""),
        version("v2", true, false, ""),
    ]);
    let v2_unserved = crd_versions(&[
        version("v1", true, true, ""),
        version("v2", false, false, ""),
    ]);
    let l = lcd(&[&both, &v2_unserved]);
    assert_eq!(l.schemas.keys().collect::<Vec<_>>(), ["v1"]);
    assert_eq!(manifest_versions(&l), [("v1".to_string(), true)]);
    let only_v2 = crd_versions(&[version("v2", true, true, "")]);
    let only_v1 = crd_versions(&[version("v1", true, true, "")]);
    let l = lcd(&[&only_v1, &only_v2]);
    assert_eq!(
        l.conflicts,
        [conflict("", "", "no version is served by every source")]
    );
    assert_eq!(l.manifest, None);
}

#[test]
fn the_storage_version_is_where_most_sources_store_ties_to_the_highest() {
    let v1 = crd_versions(&[
        version("v1", true, true, ""),
        version("v2", true, false, ""),
    ]);
    let v2 = crd_versions(&[
        version("v1", true, false, ""),
        version("v2", true, true, ""),
    ]);
    let stores = |l: &Lcd| -> Vec<String> {
        manifest_versions(l)
            .into_iter()
            .filter(|(_, s)| *s)
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(stores(&lcd(&[&v1, &v1, &v2])), ["v1"]);
    assert_eq!(stores(&lcd(&[&v2, &v1, &v1])), ["v1"]);
    assert_eq!(stores(&lcd(&[&v1, &v2])), ["v2"]);
    assert_eq!(stores(&lcd(&[&v2, &v1])), ["v2"]);
    // Versions are listed by priority.
    assert_eq!(
        manifest_versions(&lcd(&[&v1, &v2]))
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        ["v2", "v1"]
    );
}

#[test]
fn the_api_must_be_served_everywhere_with_one_scope_and_kind() {
    let w = crd("{type: object}");
    let l = lcd_api(&[Some(&w), None], &["one".into(), "two".into()]);
    assert_eq!(l.conflicts, [conflict("", "", "not served by two")]);
    let mut cluster = w.clone();
    cluster.scope = "Cluster".into();
    let l = lcd(&[&w, &cluster]);
    assert_eq!(
        l.conflicts,
        [conflict("", "", "scope differs: Cluster vs Namespaced")]
    );
}

#[test]
fn the_manifest_is_a_crd_that_parses_back_to_the_lcd() {
    let one = api_yaml(&format!(
        "{}{}",
        HEAD.replace(
            "kind: Widget}",
            "kind: Widget, shortNames: [wd, w], categories: [all]}"
        ),
        version(
            "v1",
            true,
            true,
            "    subresources: {status: {}}
    additionalPrinterColumns: [{name: A, type: string, jsonPath: .spec.a}]
    selectableFields: [{jsonPath: .spec.a}]
",
        )
        .replace(
            "{a: {type: string}}",
            "{a: {type: string, maxLength: 5}, b: {type: integer}}"
        )
    ));
    let two = api_yaml(&format!(
        "{}{}",
        HEAD.replace(
            "kind: Widget}",
            "kind: Widget, shortNames: [wd], categories: [all, extra]}"
        ),
        version(
            "v1",
            true,
            true,
            "    subresources: {status: {}}
    additionalPrinterColumns: [{name: A, type: string, jsonPath: .spec.a}, {name: B, type: integer, jsonPath: .spec.b}]
    selectableFields: [{jsonPath: .spec.a}]
",
        )
        .replace("{a: {type: string}}", "{a: {type: string, maxLength: 3}}")
    ));
    let l = lcd(&[&one, &two]);
    let manifest = manifest_of(&l);
    assert_eq!(
        manifest["metadata"]["annotations"]["kubectl-migrate.io/lcd-of"],
        "one, two"
    );
    let back = crd_from_value(&manifest, "lcd", &Selection::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            back.name.as_str(),
            back.group.as_str(),
            back.kind.as_str(),
            back.scope.as_str()
        ),
        ("widgets.example.com", "example.com", "Widget", "Namespaced")
    );
    assert_eq!(back.short_names, BTreeSet::from(["wd".to_string()]));
    assert_eq!(back.categories, BTreeSet::from(["all".to_string()]));
    assert_eq!(back.singular.as_deref(), Some("widget"));
    let v1 = &back.versions["v1"];
    assert!(v1.served && v1.storage && !v1.deprecated);
    assert_eq!(v1.schema, l.schemas["v1"]);
    assert_eq!(
        v1.schema.properties["spec"],
        node("{type: object, properties: {a: {type: string, maxLength: 3}}}")
    );
    assert_eq!(v1.subresources, json!({"status": {}}));
    assert_eq!(
        v1.printer_columns,
        [json!({"name": "A", "type": "string", "jsonPath": ".spec.a"})]
    );
    assert_eq!(v1.selectable_fields, [json!({"jsonPath": ".spec.a"})]);
    // Differing subresources are left out, with a note.
    let plain = crd_versions(&[version("v1", true, true, "")]);
    let l = lcd(&[&one, &plain]);
    let back = crd_from_value(&manifest_of(&l), "lcd", &Selection::default())
        .unwrap()
        .unwrap();
    assert_eq!(back.versions["v1"].subresources, Value::Null);
    assert!(
        l.notes
            .contains(&"v1: subresources differ between sources; the LCD has none".to_string()),
        "{:?}",
        l.notes
    );
}

/// What `LcdWalk::merge` makes of `nodes` (one per source) at `.x`, with what it dropped and
/// noted.
fn merge_at_root(nodes: &[&Schema]) -> (Result<Schema, Reasons>, Vec<Dropped>, Vec<String>) {
    let labels: Vec<String> = (0..nodes.len()).map(|i| format!("source-{i}")).collect();
    let (mut dropped, mut notes) = (Vec::new(), Vec::new());
    let mut walk = LcdWalk {
        version: "v1".into(),
        labels: &labels,
        dropped: &mut dropped,
        notes: &mut notes,
        outer_rules: Vec::new(),
    };
    let merged = walk.merge(nodes, ".x");
    (merged, dropped, notes)
}

/// Every node of the fixture CRDs and of the built-in types captured from real API servers
/// (descriptions, defaults, CEL rules, list types and all) that `merge_keeps` accepts is given
/// back by merging it with an equal copy, with nothing dropped or noted: so the walk's shortcut
/// for equal nodes gives what merging them would.
#[test]
fn merging_equal_real_nodes_gives_them_back_where_merge_keeps_them() {
    fn each_node(s: &Schema, out: &mut Vec<Schema>) {
        out.push(s.clone());
        let children = s
            .properties
            .values()
            .chain(s.items.as_ref())
            .chain(match &s.additional_properties {
                Some(AdditionalProperties::Schema(a)) => Some(a),
                _ => None,
            })
            .chain(s.all_of.iter().chain(&s.any_of).chain(&s.one_of))
            .chain(s.not.as_ref());
        for child in children {
            each_node(child, out);
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema");
    let mut nodes = Vec::new();
    for file in [
        "widgets-a.yaml",
        "widgets-b.yaml",
        "openapi/v1.36/apis-apps-v1.json",
        "openapi/v1.36/api-v1.json",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let docs = parse_documents(&text, file).unwrap();
        for api in apis_from_documents(docs, file, &Selection::default())
            .unwrap()
            .values()
        {
            for v in api.versions.values() {
                each_node(&v.schema, &mut nodes);
            }
        }
    }
    let kept: Vec<&Schema> = nodes.iter().filter(|n| merge_keeps(n)).collect();
    assert!(
        kept.len() > 1000 && kept.len() * 10 > nodes.len() * 8,
        "merge_keeps took only {} of {} nodes",
        kept.len(),
        nodes.len()
    );
    for node in kept {
        let (merged, dropped, notes) = merge_at_root(&[node, &node.clone()]);
        assert_eq!(merged, Ok(node.clone()));
        assert!(
            dropped.is_empty() && notes.is_empty(),
            "{dropped:?} {notes:?}"
        );
    }
}

// ---- the pieces of a merge, each on its own

/// Runs one piece of a merge on nodes written in YAML flow style: what it sets, and the
/// conflicts it finds.
fn piece(
    merge: impl Fn(&[&Schema], &mut SchemaNode, &mut Vec<String>),
    flows: &[&str],
) -> (SchemaNode, Vec<String>) {
    let schemas: Vec<Schema> = flows.iter().map(|f| node(f)).collect();
    let nodes: Vec<&Schema> = schemas.iter().collect();
    let (mut out, mut conflicts) = (SchemaNode::default(), Vec::new());
    merge(&nodes, &mut out, &mut conflicts);
    (out, conflicts)
}

/// A piece that names each source's value in its conflicts, run on all sources at once.
fn piece_naming_sources(
    merge: impl Fn(&Sources<'_>, &[&Schema], &mut SchemaNode, &mut Vec<String>),
    flows: &[&str],
) -> (SchemaNode, Vec<String>) {
    let labels: Vec<String> = LABELS[..flows.len()]
        .iter()
        .map(|l| l.to_string())
        .collect();
    piece(
        |nodes, out, conflicts| {
            let sources = Sources {
                nodes,
                labels: &labels,
            };
            merge(&sources, nodes, out, conflicts)
        },
        flows,
    )
}

#[test]
fn the_type_is_the_narrower_where_one_accepts_the_other() {
    let of = |flows: &[&str]| piece_naming_sources(|s, _, o, c| merge_type(s, o, c), flows);
    let (out, conflicts) = of(&["{type: integer}", "{type: number}"]);
    assert_eq!(
        (out.type_.as_deref(), conflicts.len()),
        (Some("integer"), 0)
    );
    let (out, _) = of(&["{x-kubernetes-int-or-string: true}", "{type: string}"]);
    assert_eq!(out.type_.as_deref(), Some("string"));
    let (out, _) = of(&[
        "{x-kubernetes-int-or-string: true}",
        "{x-kubernetes-int-or-string: true}",
    ]);
    assert!(out.int_or_string && out.type_.is_none());
    // Untyped nodes that keep anything do not take part.
    let (out, _) = of(&[
        "{type: boolean}",
        "{x-kubernetes-preserve-unknown-fields: true}",
    ]);
    assert_eq!(out.type_.as_deref(), Some("boolean"));
    let (_, conflicts) = of(&["{type: string}", "{type: integer}"]);
    assert_eq!(conflicts, ["type conflict: string in one, integer in two"]);
}

#[test]
fn nodes_that_accept_anything_do_not_constrain() {
    let schemas = [
        node("{x-kubernetes-preserve-unknown-fields: true}"),
        node("{type: string, maxLength: 3}"),
    ];
    let nodes: Vec<&Schema> = schemas.iter().collect();
    assert_eq!(constraining(&nodes), [&schemas[1]]);
    let anything = [&schemas[0], &schemas[0]];
    assert_eq!(constraining(&anything), anything);
}

#[test]
fn an_enum_is_the_values_every_source_allows() {
    let of = |flows: &[&str]| piece_naming_sources(merge_enum, flows);
    let (out, conflicts) = of(&[
        "{type: string, enum: [b, a, c]}",
        "{type: string, enum: [c, b]}",
    ]);
    assert_eq!(out.enum_values, Some(vec![json!("b"), json!("c")]));
    assert!(conflicts.is_empty());
    let (out, _) = of(&["{type: string}", "{type: string, enum: [a]}"]);
    assert_eq!(out.enum_values, Some(vec![json!("a")]));
    let (_, conflicts) = of(&[
        "{type: string, enum: [a]}",
        "{type: string, enum: [b]}",
        "{type: string}",
    ]);
    assert_eq!(
        conflicts,
        [r#"no enum value is allowed everywhere: ["a"] in one, ["b"] in two, any in three"#]
    );
}

#[test]
fn counts_and_numbers_are_bounded_by_the_tightest_alone() {
    let (out, conflicts) = piece(
        merge_counts,
        &[
            "{type: string, maxLength: 5, minLength: 1}",
            "{type: string, maxLength: 3}",
        ],
    );
    assert_eq!((out.max_length, out.min_length), (Some(3), Some(1)));
    assert!(conflicts.is_empty());
    let (_, conflicts) = piece(
        merge_counts,
        &[
            "{type: array, items: {type: string}, minItems: 4}",
            "{type: array, items: {type: string}, maxItems: 2}",
        ],
    );
    assert_eq!(
        conflicts,
        ["no items count is allowed everywhere (at least 4, at most 2)"]
    );
    let (out, _) = piece(
        merge_numeric_bounds,
        &[
            "{type: number, maximum: 5, minimum: 0}",
            "{type: number, maximum: 5, exclusiveMaximum: true, minimum: 1}",
        ],
    );
    assert_eq!(
        (
            out.maximum,
            out.exclusive_maximum,
            out.minimum,
            out.exclusive_minimum
        ),
        (Some(5.0), true, Some(1.0), false)
    );
    let (_, conflicts) = piece(
        merge_numeric_bounds,
        &[
            "{type: number, minimum: 2}",
            "{type: number, maximum: 2, exclusiveMaximum: true}",
        ],
    );
    assert_eq!(
        conflicts,
        ["no number is allowed everywhere (minimum 2, maximum 2)"]
    );
}

#[test]
fn steps_implied_by_a_coarser_one_are_left_out() {
    let schemas: Vec<Schema> = [
        "{type: number, multipleOf: 2}",
        "{type: number, multipleOf: 6}",
        "{type: number, multipleOf: 0.5}",
        "{type: number, multipleOf: 5}",
    ]
    .iter()
    .map(|f| node(f))
    .collect();
    let nodes: Vec<&Schema> = schemas.iter().collect();
    // A multiple of 6 is a multiple of 2 and of 0.5.
    assert_eq!(coarsest_steps(&nodes), [5.0, 6.0]);
}

#[test]
fn value_validations_all_go_under_all_of() {
    let (out, _) = piece(
        |nodes, out, _| merge_value_validations(nodes, out),
        &[
            "{type: string, pattern: '^[a-z]+$', anyOf: [{maxLength: 2}, {minLength: 5}]}",
            "{type: string, pattern: '^[a-z]+$', format: date-time, not: {maxLength: 1}}",
        ],
    );
    assert_eq!(out.pattern.as_deref(), Some("^[a-z]+$"));
    assert_eq!(out.format.as_deref(), Some("date-time"));
    let junctions: Vec<String> = out.all_of.iter().map(json_text).collect();
    assert_eq!(
        junctions,
        [
            r#"{"anyOf":[{"maxLength":2},{"minLength":5}]}"#,
            r#"{"not":{"maxLength":1}}"#
        ]
    );
}

#[test]
fn rules_are_kept_once_per_expression() {
    let (out, _) = piece(
        |nodes, out, _| merge_rules(nodes, out),
        &[
            "{type: object, x-kubernetes-validations: [{rule: 'self.a  > 1', message: z}, {rule: 'has(self.b)'}]}",
            "{type: object, x-kubernetes-validations: [{rule: 'self.a > 1', message: a}]}",
        ],
    );
    let kept: Vec<(&str, Option<&str>)> = out
        .validations
        .iter()
        .map(|r| (r.rule.as_str(), r.message.as_deref()))
        .collect();
    // Of the rules that share an expression, the least (by its text first) is kept.
    assert_eq!(kept, [("has(self.b)", None), ("self.a  > 1", Some("z"))]);
}

#[test]
fn list_semantics_must_agree_where_they_are_strict() {
    let of = |flows: &[&str]| piece_naming_sources(merge_list_and_map_semantics, flows);
    let (out, conflicts) = of(&[
        "{type: array, items: {type: string}}",
        "{type: array, items: {type: string}, x-kubernetes-list-type: set}",
    ]);
    assert_eq!(
        (out.list_type.as_deref(), conflicts.len()),
        (Some("set"), 0)
    );
    let (_, conflicts) = of(&[
        "{type: array, items: {type: string}, x-kubernetes-list-type: set}",
        "{type: array, items: {type: object, required: [k], properties: {k: {type: string}}}, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k]}",
    ]);
    assert_eq!(
        conflicts,
        ["x-kubernetes-list-type conflict: set in one, map in two"]
    );
    let map_list = |key: &str| {
        format!(
            "{{type: array, items: {{type: object, required: [{key}], properties: {{{key}: {{type: string}}}}}}, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [{key}]}}"
        )
    };
    let (_, conflicts) = of(&[&map_list("k"), &map_list("j")]);
    assert_eq!(
        conflicts,
        ["x-kubernetes-list-map-keys differ: k in one, j in two"]
    );
}

// ---- property tests

mod properties {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::sample::{select, subsequence};

    const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
    const WORDS: [&str; 5] = ["a", "b", "ab", "abc", "ba"];
    const INTS: [i64; 6] = [-1, 0, 1, 2, 5, 7];
    const PATTERNS: [&str; 5] = ["^[a-z]+$", "^a", "b$", "^[a-c]*$", "^[0-9]+$"];

    fn typed(t: &str) -> SchemaNode {
        SchemaNode {
            type_: Some(t.into()),
            ..SchemaNode::default()
        }
    }

    fn string_leaf() -> impl Strategy<Value = Schema> {
        (
            proptest::option::weighted(0.3, subsequence(WORDS.to_vec(), 1..=3)),
            proptest::option::weighted(0.3, 0u64..5),
            proptest::option::weighted(0.2, 0u64..3),
            proptest::option::weighted(0.3, select(PATTERNS.to_vec())),
            proptest::bool::weighted(0.15),
        )
            .prop_map(|(values, max, min, pattern, nullable)| {
                SchemaNode {
                    nullable,
                    rare: RareKeywords {
                        enum_values: values.map(|v| v.into_iter().map(Value::from).collect()),
                        // Never below the minimum: the base schemas accept something.
                        max_length: max.map(|m| m + 1 + min.unwrap_or(0)),
                        min_length: min,
                        pattern: pattern.map(String::from),
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("string")
                }
                .into()
            })
    }

    fn integer_leaf() -> impl Strategy<Value = Schema> {
        (
            proptest::option::weighted(0.3, subsequence(INTS.to_vec(), 1..=3)),
            proptest::option::weighted(0.3, (-2i64..3, proptest::bool::weighted(0.2))),
            proptest::option::weighted(0.3, (2i64..10, proptest::bool::weighted(0.2))),
            proptest::option::weighted(0.1, select(vec![2.0, 3.0])),
            proptest::bool::weighted(0.15),
        )
            .prop_map(|(values, min, max, step, nullable)| {
                SchemaNode {
                    nullable,
                    rare: RareKeywords {
                        enum_values: values.map(|v| v.into_iter().map(Value::from).collect()),
                        minimum: min.map(|m| m.0 as f64),
                        exclusive_minimum: min.is_some_and(|m| m.1),
                        // At least two above the minimum, so integers remain between exclusive bounds.
                        maximum: max.map(|m| (m.0 + min.map_or(-2, |m| m.0)) as f64),
                        exclusive_maximum: max.is_some_and(|m| m.1),
                        multiple_of: step,
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("integer")
                }
                .into()
            })
    }

    fn number_leaf() -> impl Strategy<Value = Schema> {
        (
            proptest::option::weighted(0.3, (select(vec![-1.5, 0.0, 0.5]), any::<bool>())),
            proptest::option::weighted(0.3, (select(vec![1.0, 2.5, 10.0]), any::<bool>())),
            proptest::bool::weighted(0.15),
        )
            .prop_map(|(min, max, nullable)| {
                SchemaNode {
                    nullable,
                    rare: RareKeywords {
                        minimum: min.map(|m| m.0),
                        exclusive_minimum: min.is_some_and(|m| m.1),
                        maximum: max.map(|m| m.0),
                        exclusive_maximum: max.is_some_and(|m| m.1),
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("number")
                }
                .into()
            })
    }

    fn leaf() -> impl Strategy<Value = Schema> {
        prop_oneof![
            3 => string_leaf(),
            2 => integer_leaf(),
            1 => number_leaf(),
            1 => proptest::bool::weighted(0.15).prop_map(|nullable| SchemaNode {
                nullable,
                ..typed("boolean")
            }.into()),
            1 => Just(SchemaNode {
                int_or_string: true,
                ..SchemaNode::default()
            }.into()),
        ]
    }

    /// Any node; `depth` bounds the nesting of objects, arrays and maps.
    fn node(depth: u32) -> BoxedStrategy<Schema> {
        if depth == 0 {
            return leaf().boxed();
        }
        prop_oneof![
            3 => leaf(),
            1 => object(depth - 1),
            1 => array(depth - 1),
            1 => map(depth - 1),
        ]
        .boxed()
    }

    fn object(depth: u32) -> BoxedStrategy<Schema> {
        (
            vec((0..NAMES.len(), node(depth)), 0..4),
            vec(proptest::bool::weighted(0.3), NAMES.len()),
            proptest::bool::weighted(0.2),
            proptest::bool::weighted(0.1),
            proptest::option::weighted(0.1, 0u64..2),
            proptest::option::weighted(0.1, 1u64..4),
        )
            .prop_map(|(props, required, preserve, nullable, min, max)| {
                let properties: BTreeMap<String, Schema> = props
                    .into_iter()
                    .map(|(i, s)| (NAMES[i].to_string(), s))
                    .collect();
                let required = NAMES
                    .iter()
                    .zip(required)
                    .filter(|(n, r)| *r && properties.contains_key(**n))
                    .map(|(n, _)| n.to_string())
                    .collect();
                SchemaNode {
                    properties,
                    preserve_unknown_fields: preserve,
                    nullable,
                    rare: RareKeywords {
                        required,
                        min_properties: min,
                        max_properties: max,
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("object")
                }
                .into()
            })
            .boxed()
    }

    fn array(depth: u32) -> BoxedStrategy<Schema> {
        let bounds = (
            proptest::option::weighted(0.2, 0u64..3),
            proptest::option::weighted(0.2, 0u64..3),
        )
            .prop_map(|(min, max)| (min, max.map(|m| m + 1 + min.unwrap_or(0))));
        let scalars = (
            leaf(),
            select(vec![None, Some("atomic"), Some("set")]),
            bounds.clone(),
        )
            .prop_map(|(items, list_type, (min, max))| {
                SchemaNode {
                    items: Some(items),
                    rare: RareKeywords {
                        list_type: list_type.map(String::from),
                        min_items: min,
                        max_items: max,
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("array")
                }
                .into()
            });
        let objects = (
            object(depth),
            select(vec![None, Some("atomic"), Some("map")]),
            bounds,
        )
            .prop_map(|(mut items, list_type, (min, max))| {
                let mut list_map_keys = Vec::new();
                if list_type == Some("map") {
                    items
                        .properties
                        .insert("name".into(), typed("string").into());
                    items.required.push("name".into());
                    items.required.sort();
                    list_map_keys.push("name".to_string());
                }
                SchemaNode {
                    items: Some(items),
                    rare: RareKeywords {
                        list_type: list_type.map(String::from),
                        list_map_keys,
                        min_items: min,
                        max_items: max,
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("array")
                }
                .into()
            });
        prop_oneof![2 => scalars, 1 => objects].boxed()
    }

    fn map(depth: u32) -> BoxedStrategy<Schema> {
        (
            prop_oneof![3 => leaf().boxed(), 1 => object(depth)],
            proptest::option::weighted(0.2, 1u64..4),
        )
            .prop_map(|(values, max)| {
                SchemaNode {
                    additional_properties: Some(AdditionalProperties::Schema(values)),
                    rare: RareKeywords {
                        max_properties: max,
                        ..RareKeywords::default()
                    }
                    .into(),
                    ..typed("object")
                }
                .into()
            })
            .boxed()
    }

    /// A root schema (an object that is not nullable).
    fn root() -> impl Strategy<Value = Schema> {
        object(2).prop_map(|mut s| {
            s.nullable = false;
            s
        })
    }

    // -- related variants

    #[derive(Debug, Clone)]
    enum Mutation {
        DropProperty,
        AddProperty(usize, Schema),
        ChangeBound(u8, i64),
        NarrowEnum,
        WidenEnum,
        MakeRequired,
        ChangeType(Schema),
        ToggleNullable,
        TogglePreserveUnknown,
        ChangePattern,
        ChangeListType,
    }

    fn mutation() -> impl Strategy<Value = (Mutation, usize, usize)> {
        let m = prop_oneof![
            2 => Just(Mutation::DropProperty),
            2 => (0..NAMES.len(), node(1)).prop_map(|(i, s)| Mutation::AddProperty(i, s)),
            3 => (0u8..4, -2i64..10).prop_map(|(k, v)| Mutation::ChangeBound(k, v)),
            2 => Just(Mutation::NarrowEnum),
            2 => Just(Mutation::WidenEnum),
            2 => Just(Mutation::MakeRequired),
            2 => leaf().prop_map(Mutation::ChangeType),
            1 => Just(Mutation::ToggleNullable),
            1 => Just(Mutation::TogglePreserveUnknown),
            1 => Just(Mutation::ChangePattern),
            1 => Just(Mutation::ChangeListType),
        ];
        (m, any::<usize>(), any::<usize>())
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Step {
        Prop(String),
        Items,
        Values,
    }

    fn paths(s: &Schema, here: Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(here.clone());
        for (name, child) in &s.properties {
            let mut p = here.clone();
            p.push(Step::Prop(name.clone()));
            paths(child, p, out);
        }
        if let Some(items) = &s.items {
            let mut p = here.clone();
            p.push(Step::Items);
            paths(items, p, out);
        }
        if let Some(values) = s.map_values() {
            let mut p = here;
            p.push(Step::Values);
            paths(values, p, out);
        }
    }

    fn at<'s>(s: &'s mut Schema, path: &[Step]) -> &'s mut Schema {
        let Some((first, rest)) = path.split_first() else {
            return s;
        };
        let child = match first {
            Step::Prop(name) => s.properties.get_mut(name).unwrap(),
            Step::Items => s.items.as_mut().unwrap(),
            Step::Values => match &mut s.additional_properties {
                Some(AdditionalProperties::Schema(v)) => v,
                _ => unreachable!(),
            },
        };
        at(child, rest)
    }

    fn is(s: &Schema, t: &str) -> bool {
        s.type_.as_deref() == Some(t)
    }

    fn fixed_object(s: &Schema) -> bool {
        is(s, "object") && s.additional_properties.is_none()
    }

    fn applies(m: &Mutation, s: &Schema, root: bool) -> bool {
        match m {
            Mutation::DropProperty => !s.properties.is_empty(),
            Mutation::AddProperty(..) | Mutation::TogglePreserveUnknown => fixed_object(s),
            Mutation::ChangeBound(..) => s.type_.is_some(),
            Mutation::NarrowEnum => is(s, "string") || is(s, "integer"),
            Mutation::WidenEnum => s.enum_values.is_some(),
            Mutation::MakeRequired => s.properties.keys().any(|k| !s.is_required(k)),
            Mutation::ChangeType(_) | Mutation::ToggleNullable => !root,
            Mutation::ChangePattern => is(s, "string"),
            Mutation::ChangeListType => is(s, "array"),
        }
    }

    fn apply(root: &mut Schema, (m, pick, sub): &(Mutation, usize, usize)) {
        let mut all = Vec::new();
        paths(root, Vec::new(), &mut all);
        let candidates: Vec<Vec<Step>> = all
            .into_iter()
            .filter(|p| {
                let mut copy = root.clone();
                applies(m, at(&mut copy, p), p.is_empty())
            })
            .collect();
        if candidates.is_empty() {
            return;
        }
        let path = &candidates[pick % candidates.len()];
        let s = at(root, path);
        let sub = *sub;
        match m {
            Mutation::DropProperty => {
                let name = s
                    .properties
                    .keys()
                    .nth(sub % s.properties.len())
                    .unwrap()
                    .clone();
                s.properties.remove(&name);
                s.required.retain(|r| *r != name);
            }
            Mutation::AddProperty(i, child) => {
                s.properties
                    .entry(NAMES[*i].to_string())
                    .or_insert_with(|| child.clone());
            }
            Mutation::ChangeBound(kind, v) => {
                let (v, kind) = (*v, *kind);
                let count = v.rem_euclid(6) as u64;
                match s.type_.as_deref() {
                    Some("string") => match kind {
                        0 => s.max_length = Some(count),
                        1 => s.min_length = Some(count.min(3)),
                        _ => (s.max_length, s.min_length) = (None, None),
                    },
                    Some("array") => match kind {
                        0 => s.max_items = Some(count),
                        1 => s.min_items = Some(count.min(2)),
                        _ => (s.max_items, s.min_items) = (None, None),
                    },
                    Some("object") => match kind {
                        0 => s.max_properties = Some(count),
                        1 => s.min_properties = Some(count.min(2)),
                        _ => (s.max_properties, s.min_properties) = (None, None),
                    },
                    Some(numeric) => {
                        let value = if numeric == "number" {
                            v as f64 / 2.0
                        } else {
                            v as f64
                        };
                        match kind {
                            0 => s.maximum = Some(value),
                            1 => s.minimum = Some(value),
                            2 => {
                                s.exclusive_maximum = s.maximum.is_some() && !s.exclusive_maximum;
                                s.exclusive_minimum = s.minimum.is_some() && !s.exclusive_minimum;
                            }
                            _ => {
                                (s.maximum, s.minimum) = (None, None);
                                (s.exclusive_maximum, s.exclusive_minimum) = (false, false);
                            }
                        }
                    }
                    None => {}
                }
            }
            Mutation::NarrowEnum => match &mut s.enum_values {
                Some(values) if values.len() > 1 => {
                    values.remove(sub % values.len());
                }
                Some(_) => {}
                None => {
                    s.enum_values = Some(if is(s, "string") {
                        vec![json!(WORDS[sub % 5]), json!(WORDS[(sub + 2) % 5])]
                    } else {
                        vec![json!(INTS[sub % 6]), json!(INTS[(sub + 3) % 6])]
                    })
                }
            },
            Mutation::WidenEnum => {
                let extra = if is(s, "string") {
                    json!(WORDS[sub % 5])
                } else {
                    json!(INTS[sub % 6])
                };
                let values = s.enum_values.as_mut().unwrap();
                if sub % 4 == 0 {
                    s.enum_values = None;
                } else if !values.contains(&extra) {
                    values.push(extra);
                }
            }
            Mutation::MakeRequired => {
                let optional: Vec<String> = s
                    .properties
                    .keys()
                    .filter(|k| !s.is_required(k))
                    .cloned()
                    .collect();
                s.required.push(optional[sub % optional.len()].clone());
                s.required.sort();
            }
            Mutation::ChangeType(new) => *s = new.clone(),
            Mutation::ToggleNullable => s.nullable = !s.nullable,
            Mutation::TogglePreserveUnknown => {
                s.preserve_unknown_fields = !s.preserve_unknown_fields
            }
            Mutation::ChangePattern => {
                s.pattern = PATTERNS
                    .get(sub % (PATTERNS.len() + 1))
                    .map(|p| p.to_string())
            }
            Mutation::ChangeListType => {
                let object_items = s.items.as_ref().is_some_and(|i| is(i, "object"));
                let choices: &[Option<&str>] = if object_items {
                    &[None, Some("atomic")]
                } else {
                    &[None, Some("atomic"), Some("set")]
                };
                s.list_type = choices[sub % choices.len()].map(String::from);
                s.list_map_keys.clear();
            }
        }
    }

    /// The base schema with up to three random mutations.
    fn variant(base: Schema) -> impl Strategy<Value = Schema> {
        vec(mutation(), 0..=3).prop_map(move |ms| {
            let mut s = base.clone();
            for m in &ms {
                apply(&mut s, m);
            }
            s
        })
    }

    fn related_triple() -> impl Strategy<Value = (Schema, Schema, Schema)> {
        root().prop_flat_map(|base| (variant(base.clone()), variant(base.clone()), variant(base)))
    }

    fn related_pair() -> impl Strategy<Value = (Schema, Schema)> {
        root().prop_flat_map(|base| (variant(base.clone()), variant(base)))
    }

    /// Keys put into specs to break them: schema keywords, spec fields and unknown ones.
    const GARBLED_KEYS: &[&str] = &[
        "type",
        "default",
        "enum",
        "properties",
        "items",
        "required",
        "maxLength",
        "minimum",
        "nullable",
        "additionalProperties",
        "allOf",
        "not",
        "x-kubernetes-validations",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-int-or-string",
        "x-custom",
        "pattern",
        "names",
        "versions",
        "group",
        "scope",
        "served",
        "storage",
        "schema",
        "openAPIV3Schema",
        "plural",
        "kind",
        "subresources",
    ];

    /// What a file's stored APIs hold (or its error), to compare two ways of reading it.
    fn defs(
        read: crate::error::Result<BTreeMap<String, crate::schema::stored::StoredApi>>,
    ) -> String {
        let read = read.map(|apis| {
            apis.iter()
                .map(|(name, api)| (name.clone(), api.def().into_owned()))
                .collect::<Vec<_>>()
        });
        format!("{read:?}")
    }

    /// The CRD manifest of a generated schema, and a copy in which one key of one object of
    /// its spec is set to random JSON (mostly breaking it).
    fn manifest_and_garbled() -> impl Strategy<Value = (Value, Value)> {
        let garbage = crate::schema::json_view::tests::json_value();
        let key = prop::sample::select(GARBLED_KEYS);
        (root(), garbage, any::<prop::sample::Index>(), key).prop_map(|(s, garbage, place, key)| {
            let manifest = manifest_with(&s);
            let mut garbled = manifest.clone();
            let mut objects = Vec::new();
            object_pointers(&garbled["spec"], "/spec".to_string(), &mut objects);
            garbled.pointer_mut(place.get::<String>(&objects)).unwrap()[key] = garbage;
            (manifest, garbled)
        })
    }

    /// JSON pointers of every object in `value`.
    fn object_pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(members) => {
                out.push(at.clone());
                for (key, member) in members {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    object_pointers(member, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    object_pointers(item, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// An API serving `schema` as v1, built through the CRD loader (so it is checked to be
    /// structural).
    fn api_of(schema: &Schema) -> ApiDef {
        let manifest = manifest_with(schema);
        match crd_from_value(&manifest, "generated", &Selection::default()) {
            Ok(Some(api)) => api,
            other => panic!("generated schema is not a valid CRD: {other:?}\n{manifest:#}"),
        }
    }

    /// A CRD manifest serving `schema` as v1.
    fn manifest_with(schema: &Schema) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"openAPIV3Schema": to_json(schema)}}]
            }
        })
    }

    fn schema_of(api: &ApiDef) -> &Schema {
        &api.versions["v1"].schema
    }

    // -- objects directed by a schema

    /// Objects are derived from one seed proptest picks.
    struct Gen(crate::rng::SplitMix64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0.next_u64()
        }

        fn below(&mut self, n: usize) -> usize {
            self.0.below(n)
        }

        fn chance(&mut self, p: f64) -> bool {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
        }

        fn pick<'v, T>(&mut self, v: &'v [T]) -> &'v T {
            &v[self.below(v.len())]
        }

        /// A value of any shape (a wrong type, mostly).
        fn junk(&mut self) -> Value {
            let any = [
                Value::Null,
                json!(true),
                json!(1),
                json!(2.5),
                json!("a"),
                json!("ab"),
                json!([]),
                json!(["a"]),
                json!({}),
                json!({"a": "x"}),
            ];
            self.pick(&any).clone()
        }

        /// Mostly one of the candidates the node accepts on its own.
        fn scalar(&mut self, s: &Schema, candidates: Vec<Value>) -> Value {
            let ok: Vec<Value> = candidates
                .iter()
                .filter(|v| validate_object(s, v).is_valid())
                .cloned()
                .collect();
            if !ok.is_empty() && self.chance(0.9) {
                self.pick(&ok).clone()
            } else {
                self.pick(&candidates).clone()
            }
        }

        fn value(&mut self, s: &Schema) -> Value {
            if self.chance(0.03) {
                return self.junk();
            }
            if s.nullable && self.chance(0.1) {
                return Value::Null;
            }
            if let Some(values) = &s.enum_values
                && !values.is_empty()
                && self.chance(0.9)
            {
                return self.pick(values).clone();
            }
            let strings = || -> Vec<Value> {
                [
                    "", "a", "b", "c", "ab", "ba", "abc", "cab", "abcdef", "xyz", "A1", "12",
                ]
                .iter()
                .map(|w| json!(w))
                .collect()
            };
            let integers = || -> Vec<Value> {
                let mut v: Vec<Value> = (-3..=12).map(|i| json!(i)).collect();
                for b in [s.minimum, s.maximum].into_iter().flatten() {
                    v.push(json!(b.floor() as i64 - 1));
                    v.push(json!(b.floor() as i64 + 1));
                }
                v
            };
            if s.int_or_string {
                let mut c = strings();
                c.extend(integers());
                return self.scalar(s, c);
            }
            match s.type_.as_deref() {
                None => self.junk(),
                Some("string") => self.scalar(s, strings()),
                Some("integer") => self.scalar(s, integers()),
                Some("number") => {
                    let mut c = integers();
                    c.extend([-1.5, -0.5, 0.5, 1.5, 2.5, 9.5].map(|f| json!(f)));
                    self.scalar(s, c)
                }
                Some("boolean") => json!(self.chance(0.5)),
                Some("array") => {
                    let items = s.items.as_ref().cloned().unwrap_or_default();
                    let lo = s.min_items.unwrap_or(0) as usize;
                    let hi = (s.max_items.unwrap_or(3) as usize).min(lo + 3).max(lo);
                    let n = lo + self.below(hi - lo + 1);
                    let mut out: Vec<Value> = Vec::new();
                    for _ in 0..n {
                        let v = self.value(&items);
                        let key = |v: &Value| {
                            s.list_map_keys
                                .iter()
                                .map(|k| v.get(k).cloned())
                                .collect::<Vec<_>>()
                        };
                        let duplicate = match s.list_type.as_deref() {
                            Some("set") => out.contains(&v),
                            Some("map") => out.iter().any(|o| key(o) == key(&v)),
                            _ => false,
                        };
                        if !duplicate || self.chance(0.1) {
                            out.push(v);
                        }
                    }
                    Value::Array(out)
                }
                Some("object") => {
                    let mut out = serde_json::Map::new();
                    if let Some(values) = s.map_values() {
                        for _ in 0..self.below(4) {
                            let key = self.pick(&["k1", "k2", "k3", "a"]).to_string();
                            out.insert(key, self.value(values));
                        }
                    }
                    for (name, prop) in &s.properties {
                        let wanted = if s.is_required(name) { 0.95 } else { 0.6 };
                        if self.chance(wanted) {
                            out.insert(name.clone(), self.value(prop));
                        }
                    }
                    // Fields the schema does not declare (another source may).
                    let extra = if s.keeps_unknown_fields() { 0.5 } else { 0.15 };
                    if self.chance(extra) {
                        let name = self.pick(&["a", "b", "c", "d", "e", "zz"]).to_string();
                        let v = self.junk();
                        out.entry(name).or_insert(v);
                    }
                    Value::Object(out)
                }
                Some(_) => self.junk(),
            }
        }
    }

    fn show(schema: &Schema) -> String {
        serde_json::to_string(&to_json(schema)).unwrap()
    }

    const PERMUTATIONS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];

    type Summary = (
        BTreeMap<String, Schema>,
        BTreeSet<(String, String)>,
        BTreeSet<(String, String)>,
    );

    fn summary(l: &Lcd) -> Summary {
        (
            l.schemas.clone(),
            l.dropped
                .iter()
                .map(|d| (d.version.clone(), d.path.clone()))
                .collect(),
            l.conflicts
                .iter()
                .map(|c| (c.version.clone(), c.path.clone()))
                .collect(),
        )
    }

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 256,
            max_global_rejects: 1 << 16,
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// The walk's shortcut for equal nodes gives what merging them gives.
        #[test]
        fn merging_equal_nodes_gives_them_back_where_merge_keeps_them(s in node(3)) {
            let copy = s.clone();
            let (merged, dropped, notes) = merge_at_root(&[&s, &copy, &s]);
            if merge_keeps(&s) {
                prop_assert_eq!(merged, Ok(s.clone()));
                prop_assert!(dropped.is_empty() && notes.is_empty(), "{:?} {:?}", dropped, notes);
            }
        }

        /// JSON Lists are read with each spec in the tree that borrows its strings: every
        /// manifest, valid or broken anywhere in its spec, reads as its `Value` reads.
        #[test]
        fn a_spec_read_from_text_reads_as_its_value_reads(
            (manifest, garbled) in manifest_and_garbled(),
        ) {
            for manifest in [manifest, garbled] {
                let mut members = manifest.as_object().unwrap().clone();
                let spec = serde_json::to_string_pretty(&members.remove("spec").unwrap()).unwrap();
                // Both read the same text: a float written out does not always read back
                // as the very same float.
                let mut manifest = Value::Object(members.clone());
                manifest["spec"] = serde_json::from_str(&spec).unwrap();
                let direct = crd_from_value(&manifest, "m", &Selection::default());
                let from_text = crd_from_spec_text(&members, &spec, "m", &Selection::default());
                prop_assert_eq!(format!("{:?}", from_text), format!("{:?}", Some(direct)));
            }
        }

        /// Block-YAML files are read into that tree too: a CRD, a file with a second, broken
        /// document, and a List of both read as from the `Value`s of `parse_documents`.
        #[test]
        fn block_yaml_documents_read_as_their_values_read(
            (manifest, garbled) in manifest_and_garbled(),
        ) {
            let one = serde_saphyr::to_string(&manifest).unwrap();
            let two = format!("{one}---\n{}", serde_saphyr::to_string(&garbled).unwrap());
            let list = json!({"apiVersion": "v1", "kind": "List", "items": [manifest, garbled]});
            let three = serde_saphyr::to_string(&list).unwrap();
            let selection = Selection::default();
            let read = |text: &str| {
                let borrowed = crate::schema::block_yaml::parse_borrowed(text)
                    .map(|d| defs(stored_apis_from_documents(&d, "f.yaml", &selection)));
                let docs = parse_documents(text, "f.yaml");
                let values = docs.and_then(|d| stored_apis_from_documents(&d, "f.yaml", &selection));
                (borrowed, defs(values))
            };
            let (borrowed, values) = read(&one);
            prop_assert_eq!(borrowed, Some(values));
            for text in [two, three] {
                if let (Some(borrowed), values) = read(&text) {
                    prop_assert_eq!(borrowed, values);
                }
            }
        }

        #[test]
        fn a_schema_compared_with_itself_has_no_findings(s in root()) {
            let api = api_of(&s);
            prop_assert_eq!(diff_api(&[Some(&api), Some(&api)], 0), Vec::new());
            let copy = api.clone();
            prop_assert_eq!(
                diff_api(&[Some(&api), Some(&copy), Some(&api)], 0),
                Vec::new()
            );
        }

        #[test]
        fn the_lcd_of_copies_drops_nothing_and_accepts_the_same(
            s in root(),
            seed in any::<u64>(),
        ) {
            let api = api_of(&s);
            let l = lcd(&[&api, &api, &api]);
            prop_assert_eq!(&l.conflicts, &Vec::new());
            prop_assert_eq!(&l.dropped, &Vec::new());
            let (own, common) = (schema_of(&api), &l.schemas["v1"]);
            let mut g = Gen(crate::rng::SplitMix64(seed));
            for from in [own, common] {
                for _ in 0..16 {
                    let object = g.value(from);
                    prop_assert_eq!(
                        validate_object(own, &object).is_valid(),
                        validate_object(common, &object).is_valid(),
                        "{} under {} and its LCD {}", object, show(own), show(common)
                    );
                }
            }
        }

        #[test]
        fn every_object_the_lcd_accepts_every_source_accepts(
            (a, b, c) in related_triple(),
            seed in any::<u64>(),
        ) {
            let apis = [api_of(&a), api_of(&b), api_of(&c)];
            let l = lcd(&[&apis[0], &apis[1], &apis[2]]);
            prop_assume!(l.conflicts.is_empty());
            let common = &l.schemas["v1"];
            // The manifest is a CRD that reads back to the same schema.
            let back = crd_from_value(&manifest_of(&l), "lcd", &Selection::default());
            prop_assert!(back.is_ok(), "{:?}", back);
            prop_assert_eq!(&back.unwrap().unwrap().versions["v1"].schema, common);
            let mut g = Gen(crate::rng::SplitMix64(seed));
            let sources: Vec<&Schema> = apis.iter().map(schema_of).collect();
            let generators = [(common, 24), (sources[0], 8), (sources[1], 8), (sources[2], 8)];
            for (from, count) in generators {
                for _ in 0..count {
                    let object = g.value(from);
                    if !validate_object(common, &object).is_valid() {
                        continue;
                    }
                    for (label, source) in LABELS.iter().zip(&sources) {
                        let outcome = validate_object(source, &object);
                        prop_assert!(
                            outcome.is_valid(),
                            "{} is valid under the LCD {}\nbut not under {} {}: {:?}",
                            object, show(common), label, show(source), outcome.violations
                        );
                    }
                }
            }
        }

        #[test]
        fn the_lcd_does_not_depend_on_the_order_of_the_sources(
            (a, b, c) in related_triple(),
        ) {
            let apis = [api_of(&a), api_of(&b), api_of(&c)];
            let in_order = |order: [usize; 3]| {
                let some: Vec<Option<&ApiDef>> = order.iter().map(|i| Some(&apis[*i])).collect();
                let labels: Vec<String> = order.iter().map(|i| LABELS[*i].to_string()).collect();
                lcd_api(&some, &labels)
            };
            let first = summary(&in_order(PERMUTATIONS[0]));
            for order in &PERMUTATIONS[1..] {
                prop_assert_eq!(&summary(&in_order(*order)), &first, "order {:?}", order);
            }
        }

        #[test]
        fn without_a_breaking_finding_the_other_source_accepts_what_the_baseline_accepts(
            (a, b) in related_pair(),
            seed in any::<u64>(),
        ) {
            let (base, other) = (api_of(&a), api_of(&b));
            let findings = diff_api(&[Some(&base), Some(&other)], 0);
            prop_assume!(findings.iter().all(|f| f.class != Class::Breaking));
            let (base, other) = (schema_of(&base), schema_of(&other));
            let mut g = Gen(crate::rng::SplitMix64(seed));
            for _ in 0..24 {
                let object = g.value(base);
                if !validate_object(base, &object).is_valid() {
                    continue;
                }
                let outcome = validate_object(other, &object);
                prop_assert!(
                    outcome.is_valid(),
                    "{} is valid under the baseline {}\nbut not under {}: {:?}\nfindings: {:?}",
                    object, show(base), show(other), outcome.violations,
                    findings.iter().map(|f| format!("{} {} {}", f.rule(), f.path, f.class.as_str())).collect::<Vec<_>>()
                );
            }
        }
    }
}
