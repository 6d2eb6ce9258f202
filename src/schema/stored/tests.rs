//! The packed form: values and whole APIs come back exactly as they were packed.
use super::*;
use proptest::prelude::*;
use serde_json::json;

use crate::schema::model::{push_schema_json, to_json};

proptest! {
    #[test]
    fn packing_gives_back_the_same_value(v in crate::schema::json_text::tests::json_value()) {
        prop_assert_eq!(Packed::pack(&v).unpack(), v);
    }
}

#[test]
fn numbers_keep_their_kind_and_bits() {
    for v in [
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(0.1),
        json!(1.7976931348623157e308),
        json!(5e-324),
        json!(-0.0),
        json!(1.0),
    ] {
        let back = Packed::pack(&v).unpack();
        assert_eq!(back, v);
        assert_eq!(
            (back.is_u64(), back.is_i64(), back.is_f64()),
            (v.is_u64(), v.is_i64(), v.is_f64())
        );
        if let (Some(a), Some(b)) = (back.as_f64(), v.as_f64()) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
    }
}

#[test]
fn a_stored_crd_unpacks_to_the_same_api() {
    let manifest = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "widgets.example.com",
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111",
            },
        },
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"n": {"type": "number", "maximum": 0.1}}}}}]
        },
    });
    let api = crate::schema::load::crd_from_value(
        &manifest,
        "w",
        &crate::schema::load::Selection::default(),
    )
    .unwrap()
    .unwrap();
    let stored = StoredApi::crd(&api);
    assert_eq!(stored.def().as_ref(), &api);
    assert_eq!(stored.served, ["v1"]);
    assert!(stored.same_crd_as(&StoredApi::crd(&api.clone())));
    let mut other = api.clone();
    other
        .versions
        .get_mut("v1")
        .unwrap()
        .schema
        .properties
        .clear();
    assert!(!stored.same_crd_as(&StoredApi::crd(&other)));
}

/// A schema with every field set (the struct literal names every field, so a new field
/// must be added here too).
fn every_field() -> Schema {
    let rule = |n: u64| CelRule {
        rule: format!("self.n > {n}"),
        message: Some("m".into()),
        message_expression: Some("'me'".into()),
        reason: Some("FieldValueInvalid".into()),
        field_path: Some(".n".into()),
        optional_old_self: Some(n.is_multiple_of(2)),
    };
    let leaf = |n: u64| -> Schema {
        SchemaNode {
            type_: Some("integer".into()),
            minimum: Some(n as f64),
            ..SchemaNode::default()
        }
        .into()
    };
    SchemaNode {
        type_: Some("object".into()),
        int_or_string: true,
        format: Some("date-time".into()),
        title: Some("t".into()),
        description: Some("d\nmore".into()),
        default: Some(json!({"a": [1, -2, 0.5, null, true, "s"]})),
        nullable: true,
        enum_values: Some(vec![json!("a"), json!(2)]),
        pattern: Some("^a+$".into()),
        max_length: Some(u64::MAX),
        min_length: Some(1),
        maximum: Some(-0.0),
        exclusive_maximum: true,
        minimum: Some(f64::MIN_POSITIVE),
        exclusive_minimum: true,
        multiple_of: Some(0.25),
        max_items: Some(7),
        min_items: Some(0),
        unique_items: true,
        max_properties: Some(9),
        min_properties: Some(300),
        required: vec!["a".into(), "b".into()],
        properties: BTreeMap::from([("a".into(), leaf(1)), ("b".into(), leaf(2))]),
        additional_properties: Some(AdditionalProperties::Schema(leaf(3))),
        items: Some(leaf(4)),
        preserve_unknown_fields: true,
        embedded_resource: true,
        list_type: Some("map".into()),
        list_map_keys: vec!["name".into()],
        map_type: Some("granular".into()),
        validations: vec![rule(1), rule(2)],
        all_of: vec![leaf(5)],
        any_of: vec![leaf(6), leaf(7)],
        one_of: vec![leaf(8)],
        not: Some(leaf(9)),
        extensions: BTreeMap::from([("x-kubernetes-patch-strategy".into(), json!("merge"))]),
    }
    .into()
}

/// The LCD manifests write schemas straight to JSON: every field as `to_json` has it.
#[test]
fn every_field_is_written_as_to_json_has_it() {
    let full = every_field();
    let mut nested = full.clone();
    nested.properties.insert("full".into(), full.clone());
    for (schema, level) in [(&full, 0), (&nested, 3)] {
        let (mut written, mut expected) = (Vec::new(), Vec::new());
        push_schema_json(&mut written, schema, level);
        crate::schema::json_text::push_json_pretty(&mut expected, &to_json(schema), level);
        assert_eq!(
            String::from_utf8(written).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }
}

/// Every field set: each one must come back, in its place.
#[test]
fn every_field_of_the_model_comes_back() {
    let full = every_field();
    let mut nested = full.clone();
    nested.additional_properties = Some(AdditionalProperties::Allowed(false));
    nested.properties.insert("full".into(), full.clone());
    let version = |schema: Schema, storage: bool| VersionDef {
        served: true,
        storage,
        deprecated: !storage,
        schema,
        subresources: json!({"status": {}}),
        printer_columns: vec![
            json!({"name": "Age", "jsonPath": ".metadata.creationTimestamp"}),
        ],
        selectable_fields: vec![json!({"jsonPath": ".spec.color"})],
    };
    let api = ApiDef {
        name: "widgets.example.com".into(),
        group: "example.com".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        singular: Some("widget".into()),
        list_kind: Some("WidgetList".into()),
        short_names: BTreeSet::from(["wd".into()]),
        categories: BTreeSet::from(["all".into(), "fun".into()]),
        scope: "Namespaced".into(),
        builtin: true,
        versions: BTreeMap::from([
            ("v1".into(), version(nested, true)),
            ("v2".into(), version(full, false)),
        ]),
        conversion: Some("Webhook".into()),
        api_approved: Some("unapproved".into()),
    };
    assert_eq!(Packed::api(&api).unpack_api(), api);
    let bare = ApiDef {
        short_names: BTreeSet::new(),
        categories: BTreeSet::new(),
        singular: None,
        list_kind: None,
        builtin: false,
        versions: BTreeMap::new(),
        conversion: None,
        api_approved: None,
        ..api.clone()
    };
    assert_eq!(Packed::api(&bare).unpack_api(), bare);
}
