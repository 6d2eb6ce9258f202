//! The schema model: one normalized tree per API version, whatever it was read from (a CRD's
//! `openAPIV3Schema` or a built-in type of an OpenAPI v3 document; see [`super::parse`]), so that
//! the diff, the LCD and the validator only know one shape.
//!
//! [`SchemaNode`] is the one definition of a schema node's keywords: serde derives from it the
//! JSON a schema is written as (the LCD manifests, with `serde_json`'s own printer) and the
//! packed form sources are kept in ([`super::stored`]). The parser reads the same keywords with
//! the API server's checks. A keyword added here reaches every form; `model/tests.rs` takes each
//! keyword through all of them.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One node of a (structural) schema, behind a shared pointer. A node's fields take some 600
/// bytes, mostly empty options; this way a node moves as a pointer, a map of properties (whose
/// B-tree leaves hold eleven values each) holds pointers instead of eleven nodes, and a copy
/// (the LCD keeps what all sources have alike; its manifest shares the LCD's schemas) shares
/// the node instead of copying its whole subtree. Changing a shared node copies that node, not
/// its children, first.
#[derive(Clone, Default)]
pub struct Schema(std::sync::Arc<Shared>);

/// A node and what is worked out from it once, kept beside it until it changes.
#[derive(Clone, Default)]
struct Shared {
    node: SchemaNode,
    /// [`Schema::defaulted_properties`]: the validator defaults every object it checks, and a
    /// witness search checks thousands against the same schema, whose objects may have
    /// hundreds of thousands of properties; scanning them all for defaults each time made the
    /// search quadratic. Boxed, so that a node with its counts stays within 640 bytes, the
    /// allocator's size class (the next one is 768: 20% more memory for every node).
    defaulted: std::sync::OnceLock<Box<DefaultedNames>>,
}

/// The names of a node's properties that have a `default`.
#[derive(Clone)]
struct DefaultedNames(Box<[String]>);

impl std::ops::Deref for Schema {
    type Target = SchemaNode;
    fn deref(&self) -> &SchemaNode {
        &self.0.node
    }
}

/// A change goes through here, so what was worked out from the node is dropped with it (a
/// child's `default` changes through its parent's `properties`, which passes here too).
impl std::ops::DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut SchemaNode {
        let shared = std::sync::Arc::make_mut(&mut self.0);
        shared.defaulted = std::sync::OnceLock::new();
        &mut shared.node
    }
}

impl From<SchemaNode> for Schema {
    fn from(node: SchemaNode) -> Schema {
        Schema(std::sync::Arc::new(Shared {
            node,
            defaulted: std::sync::OnceLock::new(),
        }))
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.0.node == other.0.node
    }
}

impl Schema {
    /// The names of the properties that have a `default`, in name order; worked out once per
    /// node.
    pub fn defaulted_properties(&self) -> &[String] {
        let names = self.0.defaulted.get_or_init(|| {
            Box::new(DefaultedNames(
                self.properties
                    .iter()
                    .filter(|(_, p)| p.default.is_some())
                    .map(|(name, _)| name.clone())
                    .collect(),
            ))
        });
        &names.0
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.node.fmt(f)
    }
}

/// Written and read as the node it points to.
impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.node.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Schema, D::Error> {
        SchemaNode::deserialize(deserializer).map(Schema::from)
    }
}

/// The keywords of one schema node, named as the API server's `JSONSchemaProps` names them.
/// Keywords the API server ignores for validation are not kept (`externalDocs`, `id`,
/// `$schema`), except `example`, whose change is reported. Empty and false keywords are not
/// written.
///
/// The fields are declared in the order of their names: serde writes them in declaration order,
/// and so writes the members sorted, as a `serde_json` map has them (kubectl's output, and this
/// tool's before, are compared against that).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SchemaNode {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<AdditionalProperties>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub all_of: Vec<Schema>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub any_of: Vec<Schema>,
    /// `default: null` is a default too.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub default: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<Value>>,
    /// Informational: a change is reported, never judged (boxed: most nodes have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Box<Value>>,
    #[serde(skip_serializing_if = "is_false")]
    pub exclusive_maximum: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub exclusive_minimum: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Schema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_properties: Option<u64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "integral_as_integer"
    )]
    pub maximum: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_properties: Option<u64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "integral_as_integer"
    )]
    pub minimum: Option<f64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "integral_as_integer"
    )]
    pub multiple_of: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not: Option<Schema>,
    #[serde(skip_serializing_if = "is_false")]
    pub nullable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<Schema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, Schema>,
    /// Sorted and without duplicates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `object`, `array`, `string`, `integer`, `number` or `boolean`; `None` for int-or-string,
    /// for a node that only preserves unknown fields, and inside value validations.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub unique_items: bool,
    #[serde(
        rename = "x-kubernetes-embedded-resource",
        skip_serializing_if = "is_false"
    )]
    pub embedded_resource: bool,
    #[serde(
        rename = "x-kubernetes-int-or-string",
        skip_serializing_if = "is_false"
    )]
    pub int_or_string: bool,
    #[serde(
        rename = "x-kubernetes-list-map-keys",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub list_map_keys: Vec<String>,
    #[serde(
        rename = "x-kubernetes-list-type",
        skip_serializing_if = "Option::is_none"
    )]
    pub list_type: Option<String>,
    #[serde(
        rename = "x-kubernetes-map-type",
        skip_serializing_if = "Option::is_none"
    )]
    pub map_type: Option<String>,
    #[serde(
        rename = "x-kubernetes-preserve-unknown-fields",
        skip_serializing_if = "is_false"
    )]
    pub preserve_unknown_fields: bool,
    #[serde(
        rename = "x-kubernetes-validations",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub validations: Vec<CelRule>,
    /// Other `x-kubernetes-*` extensions (patch strategy, merge key, ...; in OpenAPI documents
    /// any `x-*`): informational only, written back as they were read.
    #[serde(flatten)]
    pub extensions: BTreeMap<String, Value>,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

/// A member that is there, `null` included (a plain `Option` reads `null` as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Bounds are kept as `f64`; integral ones are written as integers (`maximum: 10`, not `10.0`),
/// as [`number_value`] shows them.
fn integral_as_integer<S: Serializer>(
    bound: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match bound {
        Some(v) => number_value(*v).serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// Whether two nodes are equal. Sources that hold the very same CRD share one parsed copy, so
/// their nodes are often the same node, which is equal without looking.
pub fn same_schema(a: &Schema, b: &Schema) -> bool {
    std::sync::Arc::ptr_eq(&a.0, &b.0) || a == b
}

/// `additionalProperties`: a flag, or the schema of a map's values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AdditionalProperties {
    /// `additionalProperties: true/false`.
    Allowed(bool),
    /// A map whose values follow this schema.
    Schema(Schema),
}

/// Read by what the member is (serde's `untagged` would first copy a whole map's schema into a
/// buffer of its own to try each variant).
impl<'de> Deserialize<'de> for AdditionalProperties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = AdditionalProperties;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a boolean or a schema")
            }
            fn visit_bool<E>(self, allowed: bool) -> Result<AdditionalProperties, E> {
                Ok(AdditionalProperties::Allowed(allowed))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<AdditionalProperties, A::Error> {
                let node =
                    SchemaNode::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(AdditionalProperties::Schema(node.into()))
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// One `x-kubernetes-validations` entry (fields in the order of their names, as in
/// [`SchemaNode`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CelRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub rule: String,
}

/// Rules order by their expression first (the LCD keeps the least of the rules that share one).
impl Ord for CelRule {
    fn cmp(&self, other: &CelRule) -> std::cmp::Ordering {
        type Key<'r> = (
            &'r String,
            &'r Option<String>,
            &'r Option<String>,
            &'r Option<String>,
            &'r Option<String>,
            Option<bool>,
        );
        fn key(r: &CelRule) -> Key<'_> {
            (
                &r.rule,
                &r.message,
                &r.message_expression,
                &r.reason,
                &r.field_path,
                r.optional_old_self,
            )
        }
        key(self).cmp(&key(other))
    }
}

impl PartialOrd for CelRule {
    fn partial_cmp(&self, other: &CelRule) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl CelRule {
    /// Rules are matched across sources by their expression, whitespace-insensitively.
    pub fn key(&self) -> String {
        self.rule.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl SchemaNode {
    /// The name users see for the node's type.
    pub fn type_name(&self) -> String {
        if self.int_or_string {
            "int-or-string".into()
        } else if let Some(t) = &self.type_ {
            t.clone()
        } else if self.preserve_unknown_fields {
            "any".into()
        } else {
            "untyped".into()
        }
    }

    pub fn map_values(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .binary_search_by(|r| r.as_str().cmp(name))
            .is_ok()
    }

    /// Whether unknown properties are kept at this object node (so a field one source lacks is
    /// still stored there, just not validated).
    pub fn keeps_unknown_fields(&self) -> bool {
        self.preserve_unknown_fields
            || matches!(
                self.additional_properties,
                Some(AdditionalProperties::Allowed(true))
            )
    }
}

/// A value, shortened for messages.
pub fn short(v: &Value) -> String {
    shorten(&v.to_string(), 60)
}

/// `text` cut to `max` characters, the last one the UI's one truncation marker, `…`.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let kept: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// A schema as JSON, in the `JSONSchemaProps` shape of a CRD.
pub fn to_json(s: &Schema) -> Value {
    serde_json::to_value(s).expect("a schema is JSON")
}

/// Integers stay integers in the output (`maximum: 10`, not `10.0`).
pub fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// One API (a CRD, or a built-in resource) as one source serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiDef {
    /// `plural.group` for CRDs; `group/version/resource` for built-in types.
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub singular: Option<String>,
    pub list_kind: Option<String>,
    pub short_names: BTreeSet<String>,
    pub categories: BTreeSet<String>,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    pub builtin: bool,
    pub versions: BTreeMap<String, VersionDef>,
    /// CRD conversion strategy (None, Webhook).
    pub conversion: Option<String>,
    /// The CRD's `api-approved.kubernetes.io` annotation, which the API server requires for
    /// groups under k8s.io and kubernetes.io.
    pub api_approved: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionDef {
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub schema: Schema,
    /// Raw `subresources` (status, scale), `Value::Null` when none.
    pub subresources: Value,
    pub printer_columns: Vec<Value>,
    pub selectable_fields: Vec<Value>,
}

impl ApiDef {
    /// Versions in Kubernetes' priority order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others).
    pub fn versions_by_priority(&self) -> Vec<&String> {
        let mut names: Vec<&String> = self.versions.keys().collect();
        names.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
        names
    }

    pub fn storage_version(&self) -> Option<&str> {
        self.versions
            .iter()
            .find(|(_, v)| v.storage)
            .map(|(n, _)| n.as_str())
    }
}

/// Kubernetes orders versions GA > beta > alpha, then by number; unparseable names sort last.
pub fn version_priority(name: &str) -> (u8, u64, u64) {
    let Some(rest) = name.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    for (prefix, level) in [("beta", 2), ("alpha", 1)] {
        if let Some(n) = tail.strip_prefix(prefix)
            && let Ok(minor) = n.parse::<u64>()
        {
            return (level, major, minor);
        }
    }
    (0, 0, 0)
}

#[cfg(test)]
pub(crate) mod tests;
