//! The model's one definition, keyword by keyword: every keyword of a schema node goes through
//! every form a schema takes (read by the parser from an OpenAPI document and from a CRD, written
//! as a JSON value, as JSON and YAML text, packed and unpacked) and comes back the same.
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::*;
use crate::schema::json_view::Json;
use crate::schema::parse::{NoRefs, parse_crd_schema, parse_openapi_schema};
use crate::schema::stored::{Packed, StoredApi};

#[test]
fn versions_sort_like_kubernetes() {
    let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo"];
    v.sort_by_key(|a| std::cmp::Reverse(version_priority(a)));
    assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
}

/// A node with every keyword set, each to a value the parser keeps as it is (a lower bound of 0,
/// for one, it drops). Struct literals without `..`: a keyword added to the model does not
/// compile here until it has a value, and the tests below then take it through every form.
pub(crate) fn every_keyword() -> Schema {
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
            rare: RareKeywords {
                minimum: Some(n as f64),
                ..RareKeywords::default()
            }
            .into(),
            ..SchemaNode::default()
        }
        .into()
    };
    // Inside allOf, anyOf, oneOf and not a CRD allows value validations only.
    let check = |n: u64| -> Schema {
        SchemaNode {
            rare: RareKeywords {
                minimum: Some(n as f64),
                ..RareKeywords::default()
            }
            .into(),
            ..SchemaNode::default()
        }
        .into()
    };
    SchemaNode {
        type_: Some("object".into()),
        int_or_string: true,
        description: Some("d\nmore \"quoted\"".into()),
        nullable: true,
        properties: BTreeMap::from([("a".into(), leaf(1)), ("b".into(), leaf(2))]),
        additional_properties: Some(AdditionalProperties::Schema(leaf(3))),
        items: Some(leaf(4)),
        preserve_unknown_fields: true,
        rare: RareKeywords {
            format: Some("date-time".into()),
            title: Some("t".into()),
            default: Some(json!({"a": [1, -2, 0.5, null, true, "s"]})),
            enum_values: Some(vec![json!("a"), json!(2), json!(null)]),
            example: Some(Box::new(json!({"e": [1.5]}))),
            pattern: Some("^a+$".into()),
            max_length: Some(u64::MAX),
            min_length: Some(1),
            maximum: Some(-0.0),
            exclusive_maximum: true,
            minimum: Some(1.5),
            exclusive_minimum: true,
            multiple_of: Some(0.25),
            max_items: Some(7),
            min_items: Some(2),
            unique_items: true,
            max_properties: Some(9),
            min_properties: Some(300),
            required: vec!["a".into(), "b".into()],
            embedded_resource: true,
            list_type: Some("map".into()),
            list_map_keys: vec!["name".into()],
            map_type: Some("granular".into()),
            validations: vec![rule(1), rule(2)],
            all_of: vec![check(5)],
            any_of: vec![check(6), check(7)],
            one_of: vec![check(8)],
            not: Some(check(9)),
            extensions: BTreeMap::from([("x-kubernetes-patch-strategy".into(), json!("merge"))]),
        }
        .into(),
    }
    .into()
}

/// The keywords of the model, as its serde definition names them: the members of the JSON of
/// a node with every keyword set, each with its value.
fn keywords() -> serde_json::Map<String, Value> {
    match to_json(&every_keyword()) {
        Value::Object(members) => members,
        other => panic!("a schema is written as an object, not {other}"),
    }
}

/// The sample leaves no keyword empty (an empty one is not written, so it would go untested):
/// as many keywords are written as the node and its rare keywords have fields (`Debug` lists
/// them all; the node's `rare` is not a keyword).
#[test]
fn every_keyword_is_sampled() {
    fn fields(debug: String) -> usize {
        debug
            .lines()
            .filter(|line| {
                line.starts_with("    ") && !line.starts_with("     ") && line.contains(':')
            })
            .count()
    }
    let node = fields(format!(
        "{:#?}",
        SchemaNode {
            rare: Rare::default(),
            ..SchemaNode::default()
        }
    ));
    let rare = fields(format!("{:#?}", RareKeywords::default()));
    let written: Vec<String> = keywords().keys().cloned().collect();
    assert_eq!(
        written.len(),
        node - 1 + rare,
        "keywords written: {written:?}"
    );
}

/// parse -> model -> JSON -> parse, each keyword alone and all at once (as an OpenAPI
/// document's schema: a CRD's structural rules refuse some of them together).
#[test]
fn every_keyword_is_read_and_written_back() {
    let read = |json: &Value| {
        parse_openapi_schema(json, "s", &NoRefs)
            .unwrap_or_else(|e| panic!("{json} does not read: {e:?}"))
    };
    for (keyword, value) in keywords() {
        let alone = Value::Object([(keyword.clone(), value)].into_iter().collect());
        let node = read(&alone);
        assert_ne!(*node, SchemaNode::default(), "{keyword} is not read");
        assert_eq!(to_json(&node), alone, "{keyword} is not written as read");
    }
    let full = every_keyword();
    assert_eq!(read(&to_json(&full)), full);
}

/// parse -> model -> JSON -> parse as a CRD's schema, with the API server's structural checks,
/// from a `serde_json` value and from the borrowed view the loader reads manifests into: each
/// keyword on a field of its own, in an object that keeps unknown fields (so that an object
/// default is kept whole). `uniqueItems` is the one keyword a CRD refuses anywhere.
#[test]
fn every_keyword_is_read_and_written_back_in_a_crd() {
    for (keyword, value) in keywords() {
        if keyword == "uniqueItems" {
            let refused = parse_crd_schema(
                &json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
                "s",
            );
            assert!(refused.is_err(), "a CRD with uniqueItems is refused");
            continue;
        }
        let mut field = serde_json::Map::new();
        match keyword.as_str() {
            // The flag is the type: a CRD's int-or-string field has none.
            "type" | "x-kubernetes-int-or-string" => {}
            _ => {
                field.insert("type".into(), json!("object"));
                field.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
        }
        field.insert(keyword.clone(), value);
        let field = Value::Object(field);
        let crd = json!({"type": "object", "properties": {"f": field}});
        let text = crd.to_string();
        let borrowed: Json<'_> = serde_json::from_str(&text).unwrap();
        for read in [
            parse_crd_schema(&crd, "s"),
            parse_crd_schema(&borrowed, "s"),
        ] {
            let schema = read.unwrap_or_else(|e| {
                let errors: Vec<String> = e.iter().map(ToString::to_string).collect();
                panic!("{keyword}: {crd} is refused: {}", errors.join("; "))
            });
            assert_eq!(
                to_json(&schema),
                crd,
                "{keyword} is not written as a CRD has it"
            );
            assert_eq!(parse_crd_schema(&to_json(&schema), "s").unwrap(), schema);
        }
    }
}

/// model -> JSON text -> model and model -> YAML text -> model, through serde alone, as the
/// written LCD manifests are what other tools (kubectl among them) read.
#[test]
fn every_keyword_comes_back_from_its_text() {
    let full = every_keyword();
    for text in [
        serde_json::to_string(&full).unwrap(),
        serde_json::to_string_pretty(&full).unwrap(),
    ] {
        let back: Schema = serde_json::from_str(&text).unwrap();
        assert_eq!(back, full, "{text}");
    }
    let yaml = serde_saphyr::to_string(&to_json(&full)).unwrap();
    let back: Schema = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, full, "{yaml}");
}

/// model -> packed -> model, each keyword alone, all at once, and as the schema of a CRD
/// kept packed by its source.
#[test]
fn every_keyword_comes_back_unpacked() {
    for (keyword, value) in keywords() {
        let node: Schema = serde_json::from_value(json!({ keyword.clone(): value })).unwrap();
        assert_eq!(Packed::pack(&node).unpack::<Schema>(), node, "{keyword}");
    }
    let full = every_keyword();
    assert_eq!(Packed::pack(&full).unpack::<Schema>(), full);
    let api = ApiDef {
        name: "widgets.example.com".into(),
        group: "example.com".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        singular: None,
        list_kind: None,
        short_names: BTreeSet::new(),
        categories: BTreeSet::new(),
        scope: "Namespaced".into(),
        builtin: false,
        versions: BTreeMap::from([(
            "v1".into(),
            VersionDef {
                served: true,
                storage: true,
                deprecated: false,
                schema: full,
                subresources: Value::Null,
                printer_columns: Vec::new(),
                selectable_fields: Vec::new(),
            },
        )]),
        conversion: None,
        api_approved: None,
    };
    assert_eq!(StoredApi::crd(&api).def().as_ref(), &api);
}

/// Written straight from the model, a schema's members come sorted, as a `serde_json` map has
/// them: the LCD manifests read as they did when they were written from JSON values. (Other
/// `x-*` extensions, which a CRD does not have, come after the keywords.)
#[test]
fn keywords_are_written_in_the_order_of_their_names() {
    let mut full = every_keyword();
    full.extensions.clear();
    let mut nested = full.clone();
    nested.properties.insert("full".into(), full.clone());
    for schema in [full, nested] {
        assert_eq!(
            serde_json::to_string_pretty(&schema).unwrap(),
            serde_json::to_string_pretty(&to_json(&schema)).unwrap()
        );
    }
}

/// A node with its reference counts and its worked-out defaults stays within the allocator's
/// 160-byte size class (the next one is 192: 20% more for every node), and a node with none
/// of the rare keywords has no box for them.
#[test]
fn a_node_fits_its_size_class() {
    assert!(std::mem::size_of::<Shared>() + 16 <= 160);
    let leaf: Schema =
        serde_json::from_value(json!({"type": "string", "description": "d"})).unwrap();
    assert!(leaf.rare.0.is_none(), "read");
    let mut emptied = SchemaNode::from(RareKeywords {
        maximum: Some(1.0),
        ..RareKeywords::default()
    });
    assert!(emptied.rare.0.is_some());
    emptied.maximum = None;
    assert!(Schema::from(emptied).rare.0.is_none(), "emptied");
    assert!(
        Packed::pack(&every_keyword()).unpack::<Schema>().properties["a"]
            .rare
            .0
            .is_some()
    );
}

/// A node the parser reads without rare keywords has no box of them: every node had one (some
/// 600 bytes), 180 MB for a CRD of 300,000 properties.
#[test]
fn parsed_nodes_without_rare_keywords_have_no_box() {
    let schema = parse_crd_schema(
        &json!({"type": "object", "properties": {"a": {"type": "string", "description": "d"}},
                "required": ["a"]}),
        "s",
    )
    .expect("a structural schema");
    assert!(schema.rare.0.is_some(), "required is a rare keyword");
    assert!(schema.properties["a"].rare.0.is_none());
}

/// A long text read from a file that is mostly that text is a part of the file's text, not a
/// copy; shorter ones, or ones read elsewhere, are copies.
#[test]
fn long_texts_share_the_file_text() {
    let file = std::sync::Arc::new(format!("description: {}\n", "x".repeat(ASIDE_BYTES)));
    let part = &file["description: ".len()..file.len() - 1];
    let read = SharedText::within(&file, || SharedText::read(part));
    assert_eq!(read, part);
    assert!(std::ptr::eq(read.as_str(), part), "shared");
    let short = SharedText::within(&file, || SharedText::read(&part[..10]));
    assert!(
        !std::ptr::eq(short.as_str().as_ptr(), part.as_ptr()),
        "copied"
    );
    let outside = SharedText::read(part);
    assert!(!std::ptr::eq(outside.as_str(), part), "copied");
    assert_eq!(outside, read);
}
