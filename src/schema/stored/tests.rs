//! The packed form: values and whole APIs come back exactly as they were packed.
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::schema::model::{AdditionalProperties, Schema, VersionDef};

proptest! {
    #[test]
    fn packing_gives_back_the_same_value(v in crate::schema::json_view::tests::json_value()) {
        prop_assert_eq!(Packed::pack(&v).unpack::<Value>(), v);
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
        let back: Value = Packed::pack(&v).unpack();
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

/// Every field set: each one must come back, in its place.
#[test]
fn every_field_of_the_model_comes_back() {
    let full = crate::schema::model::tests::every_keyword();
    let mut nested = full.clone();
    nested.additional_properties = Some(AdditionalProperties::Allowed(false));
    nested.properties.insert("full".into(), full.clone());
    let version = |schema: Schema, storage: bool| VersionDef {
        served: true,
        storage,
        deprecated: !storage,
        schema,
        subresources: json!({"status": {}}),
        printer_columns: vec![json!({"name": "Age", "jsonPath": ".metadata.creationTimestamp"})],
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
    assert_eq!(Packed::pack(&api).unpack::<ApiDef>(), api);
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
    assert_eq!(Packed::pack(&bare).unpack::<ApiDef>(), bare);
}

/// A description of megabytes is kept beside the packed bytes and shared with the model and
/// the unpacked node, not copied into them.
#[test]
fn large_texts_are_shared_not_packed() {
    use crate::schema::model::SchemaNode;
    let node: Schema = SchemaNode {
        description: Some("a long description ".repeat(10_000).into()),
        type_: Some("object".into()),
        ..SchemaNode::default()
    }
    .into();
    let packed = Packed::pack(&node);
    assert!(packed.0.len() < 100, "{packed:?}");
    let back: Schema = packed.unpack();
    assert_eq!(back, node);
    assert!(std::ptr::eq(
        back.description.as_deref().expect("a description"),
        node.description.as_deref().expect("a description")
    ));
    // Short texts are packed as before.
    let short: Schema = SchemaNode {
        description: Some("short".into()),
        ..SchemaNode::default()
    }
    .into();
    let packed = Packed::pack(&short);
    assert!(packed.1.is_empty());
    assert_eq!(packed.unpack::<Schema>(), short);
}
