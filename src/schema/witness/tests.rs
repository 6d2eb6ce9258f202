//! Witnesses, rule by rule: small CRD pairs are diffed, the search runs, and every breaking
//! finding's witness is checked with the validator: the baseline accepts it, the other rejects
//! it (or, for defaults and status, accepts it and stores something else).
use proptest::prelude::*;

use super::*;
use crate::schema::diff::diff_api;
use crate::schema::load::{Selection, apis_from_documents, parse_documents};

const HEAD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
";

fn api_yaml(text: &str) -> ApiDef {
    let docs = parse_documents(text, "test.yaml").unwrap();
    let mut apis = apis_from_documents(docs, "test.yaml", &Selection::default()).unwrap();
    apis.pop_first().unwrap().1
}

/// A namespaced CRD, one version v1 whose `.spec` is `spec` (YAML flow style).
fn crd(spec: &str) -> ApiDef {
    crd_with("Namespaced", "v1", spec, "")
}

fn crd_with(scope: &str, version: &str, spec: &str, extra: &str) -> ApiDef {
    api_yaml(&format!(
        "{HEAD}  scope: {scope}\n  versions:\n  - name: {version}\n    served: true\n    storage: true\n{extra}    schema:\n      openAPIV3Schema: {{type: object, properties: {{spec: {spec}, status: {{type: object, properties: {{count: {{type: integer}}}}}}}}}}\n"
    ))
}

fn findings_of(apis: &[Option<&ApiDef>]) -> Vec<Finding> {
    let mut f = diff_api(apis, 0);
    attach(apis, 0, &mut f, true);
    f
}

fn root(api: &ApiDef) -> &Schema {
    &api.versions.values().next().unwrap().schema
}

/// The one breaking finding of `rule` between `a` and `b`, with its witness checked.
fn witnessed(a: &ApiDef, b: &ApiDef, rule: &str) -> Witness {
    witnessed_as(a, b, rule, Class::Breaking)
}

/// The one finding of `rule` between `a` and `b`, of `class`, with its witness checked.
fn witnessed_as(a: &ApiDef, b: &ApiDef, rule: &str, class: Class) -> Witness {
    let found = findings_of(&[Some(a), Some(b)]);
    let f = found
        .iter()
        .find(|f| f.rule() == rule)
        .unwrap_or_else(|| panic!("no {rule} in {found:#?}"));
    assert_eq!(f.class, class, "{f:#?}");
    let w = f
        .witness
        .clone()
        .unwrap_or_else(|| panic!("{rule}: no witness: {:?}", f.no_witness));
    assert_eq!(w.source, 1);
    assert_eq!(w.object["kind"], "Widget");
    assert_eq!(w.object["metadata"]["name"], OBJECT_NAME);
    let base = validate_object(root(a), &w.object);
    assert!(
        base.is_valid(),
        "{rule}: the baseline rejects {}: {base:?}",
        w.object
    );
    if w.expect == Expect::Rejected && b.versions.contains_key("v1") && a.scope == b.scope {
        let other = validate_object(root(b), &w.object);
        assert!(!other.is_valid(), "{rule}: the other accepts {}", w.object);
    }
    w
}

#[test]
fn each_narrowed_constraint_has_a_witness_at_its_path() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "{type: object, properties: {a: {type: string, maxLength: 10}}}",
            "{type: object, properties: {a: {type: string, maxLength: 5}}}",
            "maxLength-narrowed",
            ".spec.a: \"aaaaaa\"",
        ),
        (
            "{type: object, properties: {a: {type: string}}}",
            "{type: object, properties: {a: {type: string, minLength: 3}}}",
            "minLength-narrowed",
            ".spec.a: \"aa\"",
        ),
        (
            "{type: object, properties: {a: {type: string, enum: [p, q]}}}",
            "{type: object, properties: {a: {type: string, enum: [p]}}}",
            "enum-narrowed",
            ".spec.a: \"q\"",
        ),
        (
            "{type: object, properties: {a: {type: string}}}",
            "{type: object, properties: {a: {type: string, enum: [x]}}}",
            "enum-narrowed",
            ".spec.a: \"a\"",
        ),
        (
            "{type: object, properties: {a: {type: string, pattern: '^[a-z]+$'}}}",
            "{type: object, properties: {a: {type: string, pattern: '^[a-c]+$'}}}",
            "pattern-narrowed",
            ".spec.a: \"d\"",
        ),
        (
            "{type: object, properties: {a: {type: string}}}",
            "{type: object, properties: {a: {type: integer}}}",
            "type-changed",
            ".spec.a: \"1\"",
        ),
        (
            "{type: object, properties: {a: {type: integer, maximum: 10}}}",
            "{type: object, properties: {a: {type: integer, maximum: 5}}}",
            "maximum-narrowed",
            ".spec.a: 6",
        ),
        (
            "{type: object, properties: {a: {type: integer, minimum: 0}}}",
            "{type: object, properties: {a: {type: integer, minimum: 0, exclusiveMinimum: true}}}",
            "minimum-narrowed",
            ".spec.a: 0",
        ),
        (
            "{type: object, properties: {a: {type: integer, multipleOf: 2}}}",
            "{type: object, properties: {a: {type: integer, multipleOf: 4}}}",
            "multipleOf-narrowed",
            ".spec.a: 2",
        ),
        (
            "{type: object, properties: {a: {type: array, items: {type: string}, maxItems: 5}}}",
            "{type: object, properties: {a: {type: array, items: {type: string}, maxItems: 2}}}",
            "maxItems-narrowed",
            ".spec.a: [\"a\",\"aa\",\"aaa\"]",
        ),
        (
            "{type: object, properties: {a: {type: array, items: {type: string}}}}",
            "{type: object, properties: {a: {type: array, items: {type: string}, x-kubernetes-list-type: set}}}",
            "x-kubernetes-list-type-narrowed",
            ".spec.a: [\"a\",\"a\"]",
        ),
        (
            "{type: object, properties: {a: {type: string, nullable: true}}}",
            "{type: object, properties: {a: {type: string}}}",
            "nullable-narrowed",
            ".spec.a: null",
        ),
        (
            "{type: object, x-kubernetes-preserve-unknown-fields: true}",
            "{type: object}",
            "x-kubernetes-preserve-unknown-fields-narrowed",
            ".spec: {\"km-unknown\":\"km\"}",
        ),
        (
            "{type: object, properties: {a: {type: string}}}",
            "{type: object, properties: {a: {type: string, format: date-time}}}",
            "format-narrowed",
            ".spec.a: \"a\"",
        ),
        (
            "{type: object, properties: {a: {type: string}, b: {type: string}}}",
            "{type: object, properties: {a: {type: string}}}",
            "field-removed",
            ".spec.b: \"a\"",
        ),
        (
            "{type: object, properties: {a: {type: string}}}",
            "{type: object, required: [a], properties: {a: {type: string}}}",
            "required-added",
            ".spec without a",
        ),
        (
            "{type: object, x-kubernetes-preserve-unknown-fields: true}",
            "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}",
            "field-added",
            ".spec.a: \"km\"",
        ),
        (
            "{type: object, properties: {m: {type: object, additionalProperties: {type: string}, maxProperties: 3}}}",
            "{type: object, properties: {m: {type: object, additionalProperties: {type: string}, maxProperties: 1}}}",
            "maxProperties-narrowed",
            ".spec.m: {\"k0\":\"a\",\"k1\":\"aa\"}",
        ),
    ];
    for (a, b, rule, short) in cases {
        let w = witnessed(&crd(a), &crd(b), rule);
        assert_eq!(&w.short, short, "{rule}");
        assert_eq!(w.expect, Expect::Rejected, "{rule}");
        assert!(
            !w.reasons.is_empty(),
            "{rule}: the validator's reasons are kept"
        );
    }
}

#[test]
fn a_default_changed_or_removed_is_shown_by_the_object_without_the_field_as_each_side_stores_it() {
    let old = crd("{type: object, properties: {a: {type: string, default: old}}}");
    let new = crd("{type: object, properties: {a: {type: string, default: new}}}");
    let none = crd("{type: object, properties: {a: {type: string}}}");
    for (other, rule, stored) in [
        (&new, "default-changed", Some("new")),
        (&none, "default-removed", None),
    ] {
        let w = witnessed_as(&old, other, rule, Class::ChangesStoredData);
        assert_eq!(w.expect, Expect::StoredDifferently);
        assert_eq!(w.short, ".spec without a");
        assert!(w.object["spec"].get("a").is_none(), "{}", w.object);
        let [(0, base), (1, theirs)] = &w.stored[..] else {
            panic!("{rule}: what each side stores: {:?}", w.stored)
        };
        assert_eq!(base["spec"]["a"], "old", "{rule}");
        assert_eq!(
            theirs["spec"].get("a").and_then(Value::as_str),
            stored,
            "{rule}"
        );
        assert!(
            other_accepts(other, &w.object),
            "{rule}: nothing is rejected"
        );
    }
}

#[test]
fn a_default_removed_from_a_required_field_is_breaking_shown_by_the_object_rejected() {
    // cert-manager's issuerRef.group style, made required: the default was what let an
    // object leave it out.
    let a = crd(
        "{type: object, required: [group], properties: {group: {type: string, default: cert-manager.io}}}",
    );
    let b = crd("{type: object, required: [group], properties: {group: {type: string}}}");
    let w = witnessed(&a, &b, "default-removed");
    assert_eq!(w.expect, Expect::Rejected);
    assert_eq!(w.short, ".spec without group");
    assert!(
        w.reasons.iter().any(|r| r.contains(".spec.group")),
        "{:?}",
        w.reasons
    );
}

#[test]
fn a_selectable_field_removed_is_shown_by_the_field_selector_the_other_refuses() {
    let spec = "{type: object, properties: {color: {type: string, enum: [red, blue]}}}";
    let a = crd_with(
        "Namespaced",
        "v1",
        spec,
        "    selectableFields: [{jsonPath: .spec.color}]\n",
    );
    let b = crd(spec);
    let w = witnessed_as(&a, &b, "selectableFields-removed", Class::ChangesSelection);
    assert_eq!(w.expect, Expect::SelectorRefused);
    assert_eq!(w.field_selector.as_deref(), Some("spec.color=red"));
    assert_eq!(w.object["spec"]["color"], "red", "an object it selects");
    assert_eq!(w.short, "--field-selector spec.color=red");
    assert!(
        other_accepts(&b, &w.object),
        "the object itself is accepted"
    );
}

fn other_accepts(api: &ApiDef, object: &Value) -> bool {
    validate_object(root(api), object).is_valid()
}

#[test]
fn api_level_findings_are_shown_by_the_smallest_object() {
    let spec = "{type: object, required: [a], properties: {a: {type: string, minLength: 2}}}";
    let a = crd(spec);
    let cluster = crd_with("Cluster", "v1", spec, "");
    let w = witnessed(&a, &cluster, "scope-changed");
    assert!(
        w.object.get("spec").is_none(),
        "only what the root requires: {}",
        w.object
    );
    let other_version = crd_with("Namespaced", "v2", spec, "");
    let w = witnessed(&a, &other_version, "version-removed");
    assert_eq!(w.short, "Widget km-witness");
    // The API missing from a source altogether.
    let apis = [Some(&a), None];
    let found = findings_of(&apis);
    let f = found.iter().find(|f| f.rule() == "api-removed").unwrap();
    assert_eq!(f.witness.as_ref().map(|w| w.source), Some(1));
}

#[test]
fn a_status_subresource_added_is_shown_by_a_status_dropped_on_create() {
    let spec = "{type: object}";
    let a = crd(spec);
    let b = crd_with("Namespaced", "v1", spec, "    subresources: {status: {}}\n");
    let w = witnessed_as(&a, &b, "subresources-changed", Class::ChangesStoredData);
    assert_eq!(w.expect, Expect::StoredDifferently);
    assert_eq!(w.object["status"], json!({"count": 0}));
    // As each side stores it: the baseline with the status, the other without.
    assert_eq!(w.stored.len(), 2);
    assert_eq!(w.stored[0], (0, w.object.clone()));
    assert_eq!(w.stored[1].0, 1);
    assert!(w.stored[1].1.get("status").is_none(), "{}", w.stored[1].1);
    assert_eq!(w.stored[1].1["metadata"], w.object["metadata"]);
    // Removed: the same object, stored the other way round.
    let back = witnessed(&b, &a, "subresources-changed");
    assert!(back.stored[0].1.get("status").is_none());
    assert_eq!(back.stored[1], (1, back.object.clone()));
}

#[test]
fn a_default_added_is_shown_by_the_object_without_the_field_as_each_side_stores_it() {
    let a = crd("{type: object, properties: {size: {type: integer}}}");
    let b = crd("{type: object, properties: {size: {type: integer, default: 3}}}");
    let w = witnessed_as(&a, &b, "default-added", Class::ChangesStoredData);
    assert_eq!(w.expect, Expect::StoredDifferently);
    assert!(w.object["spec"].get("size").is_none(), "{}", w.object);
    assert_eq!(w.stored[0].1["spec"], json!({}));
    assert_eq!(w.stored[1].1["spec"], json!({"size": 3}));
}

#[test]
fn findings_no_object_can_show_say_why() {
    let a = crd(
        "{type: object, properties: {m: {type: object, additionalProperties: {type: string}}}}",
    );
    let b = crd(
        "{type: object, properties: {m: {type: object, additionalProperties: {type: string}, x-kubernetes-map-type: atomic}}}",
    );
    let found = findings_of(&[Some(&a), Some(&b)]);
    let f = found
        .iter()
        .find(|f| f.rule() == "x-kubernetes-map-type-changed")
        .unwrap();
    assert!(f.witness.is_none());
    assert!(
        f.no_witness
            .as_deref()
            .unwrap()
            .contains("server-side apply"),
        "{f:?}"
    );
}

#[test]
fn witnesses_are_the_same_from_run_to_run() {
    let a = crd(
        "{type: object, properties: {a: {type: array, items: {type: object, properties: {k: {type: string}, v: {type: integer}}}}}}",
    );
    let b = crd(
        "{type: object, properties: {a: {type: array, items: {type: object, required: [k], properties: {k: {type: string}, v: {type: integer, maximum: 3}}}}}}",
    );
    let once = findings_of(&[Some(&a), Some(&b)]);
    let again = findings_of(&[Some(&a), Some(&b)]);
    assert_eq!(once, again);
    assert!(
        once.iter()
            .filter(|f| f.class == Class::Breaking)
            .all(|f| f.witness.is_some())
    );
}

#[test]
fn paths_are_read_and_written_step_by_step() {
    let s = steps(".spec.rules[*].matches.*.name");
    assert_eq!(
        s,
        [
            Step::Property("spec".into()),
            Step::Property("rules".into()),
            Step::Items(0),
            Step::Property("matches".into()),
            Step::MapValues,
            Step::Property("name".into()),
        ]
    );
    assert_eq!(concrete(&s), ".spec.rules[0].matches.km.name");
    assert_eq!(steps("."), []);
    assert_eq!(concrete(&[]), ".");
}

#[test]
fn the_smallest_value_meets_every_bound() {
    let a = crd(
        "{type: object, required: [num, s, l, p], properties: {num: {type: integer, minimum: 3, exclusiveMinimum: true, multipleOf: 5}, s: {type: string, minLength: 4, pattern: '^x[0-9]+$'}, l: {type: array, minItems: 2, x-kubernetes-list-type: set, items: {type: string, enum: [a, b, c]}}, p: {type: object, minProperties: 2, additionalProperties: {type: boolean}}}}",
    );
    let spec = &root(&a).properties["spec"];
    let value = Generator::new(7).minimal(spec);
    assert_eq!(
        value,
        json!({"num": 5, "s": "x000", "l": ["a", "b"], "p": {"k0": false, "k1": true}})
    );
    assert!(validate_object(spec, &value).is_valid());
}

/// A small random schema for a string or an integer field, and a narrowing of it.
fn narrowed_pair() -> impl Strategy<Value = (String, String, &'static str)> {
    prop_oneof![
        (1u32..20, 0u32..19).prop_map(|(hi, lower)| {
            let lo = lower.min(hi - 1);
            (
                format!("{{type: string, maxLength: {hi}}}"),
                format!("{{type: string, maxLength: {lo}}}"),
                "maxLength-narrowed",
            )
        }),
        (-50i32..50, 1i32..40).prop_map(|(hi, less)| {
            (
                format!("{{type: integer, maximum: {hi}}}"),
                format!("{{type: integer, maximum: {}}}", hi - less),
                "maximum-narrowed",
            )
        }),
        (1usize..5).prop_map(|keep| {
            let all = ["a", "b", "c", "d", "e"];
            (
                format!("{{type: string, enum: [{}]}}", all.join(", ")),
                format!("{{type: string, enum: [{}]}}", all[..keep].join(", ")),
                "enum-narrowed",
            )
        }),
        (1u32..6, 0u32..5).prop_map(|(hi, lower)| {
            (
                format!("{{type: array, items: {{type: integer}}, maxItems: {hi}}}"),
                format!(
                    "{{type: array, items: {{type: integer}}, maxItems: {}}}",
                    lower.min(hi - 1)
                ),
                "maxItems-narrowed",
            )
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every narrowing gets a witness; the baseline accepts it and the other rejects it, for
    /// a reason at the narrowed field.
    #[test]
    fn every_narrowing_has_a_witness_the_validator_confirms((a, b, rule) in narrowed_pair(), nested in any::<bool>()) {
        let wrap = |s: &str| if nested {
            format!("{{type: object, properties: {{list: {{type: array, items: {{type: object, properties: {{f: {s}}}}}}}}}}}")
        } else {
            format!("{{type: object, properties: {{f: {s}}}}}")
        };
        let (a, b) = (crd(&wrap(&a)), crd(&wrap(&b)));
        let w = witnessed(&a, &b, rule);
        let at = if nested { ".spec.list[0].f" } else { ".spec.f" };
        prop_assert!(w.reasons.iter().any(|r| r.starts_with(at)), "{:?}", w.reasons);
    }
}

/// Issue 29 defect 10: the new schema narrows `.spec.size` and adds an unrelated CEL rule
/// that refuses `extra`. Objects that set `extra` break both; the witness breaks only its own.
#[test]
fn a_witness_breaks_its_own_finding_and_not_an_unrelated_added_rule() {
    let a = crd(
        "{type: object, properties: {size: {type: integer}, extra: {type: boolean}, name: {type: string}}}",
    );
    let b = crd(
        "{type: object, x-kubernetes-validations: [{rule: '!has(self.extra)'}], properties: {size: {type: integer, maximum: 0}, extra: {type: boolean}, name: {type: string, maxLength: 1}}}",
    );
    for (rule, at) in [
        ("maximum-narrowed", ".spec.size"),
        ("maxLength-narrowed", ".spec.name"),
    ] {
        let w = witnessed(&a, &b, rule);
        assert!(
            w.reasons.iter().all(|r| r.starts_with(at)),
            "{rule}: the witness is rejected for other reasons too: {:?} ({})",
            w.reasons,
            w.object
        );
        assert!(w.object["spec"].get("extra").is_none(), "{}", w.object);
    }
}

/// Issue 31 item 1: `minimum` added with `format: int32` and `maximum` is shown by a value
/// below the minimum, not by one above the maximum; `minLength: 1` added by `""`.
#[test]
fn a_witness_is_rejected_for_its_own_findings_reason() {
    let a = crd("{type: object, properties: {port: {type: integer}, host: {type: string}}}");
    let b = crd(
        "{type: object, properties: {port: {type: integer, format: int32, minimum: 1, maximum: 65535}, host: {type: string, minLength: 1}}}",
    );
    let w = witnessed(&a, &b, "minimum-narrowed");
    assert!(
        w.reasons
            .iter()
            .all(|r| r.contains("must be greater than or equal to 1")),
        "{:?} ({})",
        w.reasons,
        w.object
    );
    let w = witnessed(&a, &b, "minLength-narrowed");
    assert_eq!(w.object["spec"]["host"], "", "{}", w.object);
}

/// Issue 29 defect 10: a CEL rule that fails once the other source's default is applied was
/// shown in the table as defaulted (`{"extra":false,"size":1}`) and in JSON as sent
/// (`{"size":1}`); both show the object as sent.
#[test]
fn the_table_and_json_show_the_same_cel_witness() {
    let a = crd("{type: object, properties: {size: {type: integer}}}");
    let b = crd(
        "{type: object, x-kubernetes-validations: [{rule: '!has(self.extra)'}], properties: {size: {type: integer}, extra: {type: boolean, default: false}}}",
    );
    let w = witnessed(&a, &b, "x-kubernetes-validations-added");
    assert!(w.object["spec"].get("extra").is_none(), "{}", w.object);
    assert_eq!(
        w.short,
        format!(".spec: {}", short_value(&w.object["spec"])),
        "{}",
        w.object
    );
}

#[test]
fn a_cel_rule_added_is_shown_by_an_object_the_other_rejects_for_that_rule_alone() {
    // The new schema also requires `b`: an object without it breaks the rule and the required
    // field; one with it breaks the rule alone.
    let a = crd("{type: object, properties: {a: {type: integer}, b: {type: string}}}");
    let b = crd(
        "{type: object, required: [b], x-kubernetes-validations: [{rule: '!has(self.a) || self.a < 50'}], properties: {a: {type: integer}, b: {type: string}}}",
    );
    let f = cel_finding(&a, &b);
    assert_eq!(f.class, Class::Breaking, "{f:#?}");
    let w = f.witness.as_ref().expect("a witness");
    let reasons: Vec<String> = validate_object(root(&b), &w.object)
        .violations
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        reasons.len(),
        1,
        "the rule's reason alone: {reasons:?} for {}",
        w.object
    );
    assert!(w.object["spec"].get("b").is_some(), "{}", w.object);
}

#[test]
fn a_min_length_the_baselines_pattern_already_implies_has_no_witness_and_says_why() {
    // prometheus-operator's tokenUrl, from 0.93 back to 0.68.
    let a = crd("{type: object, properties: {u: {type: string, pattern: '^(http|https)://.+$'}}}");
    let b = crd("{type: object, properties: {u: {type: string, minLength: 1}}}");
    let found = findings_of(&[Some(&a), Some(&b)]);
    let f = found
        .iter()
        .find(|f| f.rule() == "minLength-narrowed")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert!(f.witness.is_none(), "{f:#?}");
    assert_eq!(
        f.no_witness.as_deref(),
        Some(
            "no object exists: the baseline's pattern \"^(http|https)://.+$\" accepts no empty string"
        )
    );
    // Where the pattern allows a short enough string, that is the witness.
    let c = crd("{type: object, properties: {u: {type: string, pattern: '^a*$'}}}");
    let w = witnessed(&c, &b, "minLength-narrowed");
    assert_eq!(w.short, ".spec.u: \"\"");
}

/// The finding of the CEL rule added between `a` and `b`.
fn cel_finding(a: &ApiDef, b: &ApiDef) -> Finding {
    let found = findings_of(&[Some(a), Some(b)]);
    found
        .into_iter()
        .find(|f| f.attribute == "x-kubernetes-validations")
        .expect("a CEL rule added")
}

/// The update witness of the one transition rule added between `a` and `b`, checked: both
/// sides create the object, the baseline accepts the update, the added rule refuses it.
fn update_witness(a: &ApiDef, b: &ApiDef, rule: &str) -> Witness {
    let f = cel_finding(a, b);
    assert_eq!(f.class, Class::Breaking, "{f:#?}");
    let w = f.witness.clone().expect("a witness");
    assert_eq!(w.expect, Expect::UpdateRejected);
    let update = w.update.clone().expect("an update");
    for (side, object) in [("baseline", root(a)), ("other", root(b))] {
        let create = validate_object(object, &w.object);
        assert!(
            create.is_valid(),
            "the {side} refuses the create: {create:?}"
        );
    }
    let base = validate_object(root(a), &update);
    assert!(base.is_valid(), "the baseline refuses the update: {base:?}");
    let compiled = cel::compiled(&crate::schema::model::CelRule {
        rule: rule.into(),
        message: None,
        message_expression: None,
        reason: None,
        field_path: None,
        optional_old_self: None,
    });
    let Ok(compiled) = &*compiled else { panic!() };
    let spec = &root(b).properties["spec"];
    assert!(
        matches!(
            compiled.evaluate_update(spec, &update["spec"], &w.object["spec"]),
            Verdict::Fail(_)
        ),
        "the rule lets {} become {update}",
        w.object
    );
    assert!(w.short.contains(" updated to "), "{}", w.short);
    w
}

#[test]
fn a_transition_rule_added_is_shown_by_an_update_the_other_refuses() {
    // kueue's ResourceFlavor, v0.9.0 -> v0.10.0: the spec is frozen once a topology is named.
    let flavor = |extra: &str| {
        crd(&format!(
            "{{type: object, x-kubernetes-validations: [{{rule: '!has(self.topologyName) || self.nodeLabels.size() >= 1'}}{extra}], properties: {{nodeLabels: {{type: object, additionalProperties: {{type: string}}}}, topologyName: {{type: string}}, tolerations: {{type: array, items: {{type: string}}}}}}}}"
        ))
    };
    let rule = "!has(oldSelf.topologyName) || self == oldSelf";
    let a = flavor("");
    let b = flavor(&format!(", {{rule: '{rule}'}}"));
    let w = update_witness(&a, &b, rule);
    assert!(
        w.object["spec"].get("topologyName").is_some(),
        "{}",
        w.object
    );
    // Plain immutability.
    let a = crd("{type: object, properties: {u: {type: string}}}");
    let b = crd(
        "{type: object, x-kubernetes-validations: [{rule: 'self == oldSelf'}], properties: {u: {type: string}}}",
    );
    update_witness(&a, &b, "self == oldSelf");
}

#[test]
fn a_transition_rule_that_refuses_no_update_is_unproven_and_one_under_items_is_undecided() {
    let a = crd("{type: object, properties: {u: {type: integer}}}");
    let b = crd(
        "{type: object, x-kubernetes-validations: [{rule: 'self == oldSelf || self != oldSelf'}], properties: {u: {type: integer}}}",
    );
    let f = cel_finding(&a, &b);
    assert_eq!(f.class, Class::Unproven, "{f:#?}");
    assert!(f.message.contains("updates generated"), "{}", f.message);
    let a = crd("{type: object, properties: {l: {type: array, items: {type: string}}}}");
    let b = crd(
        "{type: object, properties: {l: {type: array, items: {type: string, x-kubernetes-validations: [{rule: 'self == oldSelf'}]}}}}",
    );
    let f = cel_finding(&a, &b);
    assert_eq!(f.class, Class::Unproven, "{f:#?}");
    assert_eq!(f.change, Change::Undecided);
    assert!(f.message.contains("list's items"), "{}", f.message);
}

#[test]
fn a_baseline_whose_rules_refuse_its_smallest_object_is_searched_around_what_they_select() {
    // JobSet v0.8.0 back to v0.5.0: `self.replicatedJobs[0]` refuses a spec without jobs.
    let a = crd(
        "{type: object, x-kubernetes-validations: [{rule: '!has(self.jobs[0].after)'}], properties: {jobs: {type: array, items: {type: object, properties: {after: {type: string}}}}, coordinator: {type: string}}}",
    );
    let b = crd(
        "{type: object, properties: {jobs: {type: array, items: {type: object, properties: {after: {type: string}}}}}}",
    );
    let w = witnessed(&a, &b, "field-removed");
    assert_eq!(w.short, ".spec.coordinator: \"a\"");
    assert_eq!(w.object["spec"]["jobs"], json!([{}]), "{}", w.object);
}

/// Our own StatefulSetMigration: its rule `self.source.name != self.destination.name || ...`
/// refuses the smallest object (both names `a`), so the search fills the two compared fields
/// with distinct values, and a breaking change to it has a witness.
#[test]
fn a_rule_comparing_two_fields_gets_distinct_values_in_our_own_crd() {
    let released =
        include_str!("../../../api/released/statefulsetmigrations.kubectl-migrate.io.yaml");
    let narrowed = released.replacen("maxLength: 253", "maxLength: 3", 1);
    assert_ne!(released, narrowed);
    let (a, b) = (api_yaml(released), api_yaml(&narrowed));
    let found = findings_of(&[Some(&a), Some(&b)]);
    let f = found
        .iter()
        .find(|f| f.rule() == "maxLength-narrowed")
        .unwrap();
    let w = f.witness.as_ref().unwrap_or_else(|| panic!("{f:#?}"));
    let spec = &w.object["spec"];
    assert!(
        spec["statefulSetName"]
            .as_str()
            .is_some_and(|s| s.len() > 3),
        "{spec}"
    );
    assert_ne!(
        spec["source"]["name"], spec["destination"]["name"],
        "{spec}"
    );
    assert!(validate_object(root(&a), &w.object).is_valid());
    assert!(!validate_object(root(&b), &w.object).is_valid());
}

/// A rule that asks two fields to be equal gets them equal.
#[test]
fn a_rule_asking_two_fields_equal_gets_equal_values() {
    let spec = "{type: object, required: [a, b, c], x-kubernetes-validations: [{rule: 'self.a == self.b'}], properties: {a: {type: string, minLength: 2}, b: {type: string}, c: {type: integer}}}";
    let a = crd(spec);
    let b = crd(&spec.replace("c: {type: integer}", "c: {type: integer, minimum: 5}"));
    let w = witnessed(&a, &b, "minimum-narrowed");
    assert_eq!(w.object["spec"]["a"], w.object["spec"]["b"], "{}", w.object);
}
