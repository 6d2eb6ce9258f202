//! The schema model: one normalized tree per API version, whatever it was read from (a CRD's
//! `openAPIV3Schema` or a built-in type of an OpenAPI v3 document; see [`super::parse`]), so that
//! the diff, the LCD and the validator only know one shape.
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// One node of a (structural) schema, behind a shared pointer. A node's fields take some 600
/// bytes, mostly empty options; this way a node moves as a pointer, a map of properties (whose
/// B-tree leaves hold eleven values each) holds pointers instead of eleven nodes, and a copy
/// (the LCD keeps what all sources have alike; its manifest shares the LCD's schemas) shares
/// the node instead of copying its whole subtree. Changing a shared node copies that node, not
/// its children, first.
#[derive(Clone, PartialEq, Default)]
pub struct Schema(std::sync::Arc<SchemaNode>);

impl std::ops::Deref for Schema {
    type Target = SchemaNode;
    fn deref(&self) -> &SchemaNode {
        &self.0
    }
}

impl std::ops::DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut SchemaNode {
        std::sync::Arc::make_mut(&mut self.0)
    }
}

impl From<SchemaNode> for Schema {
    fn from(node: SchemaNode) -> Schema {
        Schema(std::sync::Arc::new(node))
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The fields of one schema node. Fields the API server ignores for validation, such as
/// `example` and `externalDocs`, are not kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaNode {
    /// `object`, `array`, `string`, `integer`, `number` or `boolean`; `None` for int-or-string,
    /// for a node that only preserves unknown fields, and inside value validations.
    pub type_: Option<String>,
    pub int_or_string: bool,
    pub format: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub default: Option<Value>,
    pub nullable: bool,
    pub enum_values: Option<Vec<Value>>,
    pub pattern: Option<String>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub unique_items: bool,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    /// Sorted and without duplicates.
    pub required: Vec<String>,
    pub properties: BTreeMap<String, Schema>,
    pub additional_properties: Option<AdditionalProperties>,
    pub items: Option<Schema>,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    pub validations: Vec<CelRule>,
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Schema>,
    /// Other `x-kubernetes-*` extensions (patch strategy, merge key, ...): informational only.
    pub extensions: BTreeMap<String, Value>,
}

/// Whether two nodes are equal. Sources that hold the very same CRD share one parsed copy, so
/// their nodes are often the same node, which is equal without looking.
pub fn same_schema(a: &Schema, b: &Schema) -> bool {
    std::sync::Arc::ptr_eq(&a.0, &b.0) || a == b
}

#[derive(Debug, Clone, PartialEq)]
pub enum AdditionalProperties {
    /// `additionalProperties: true/false`.
    Allowed(bool),
    /// A map whose values follow this schema.
    Schema(Schema),
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CelRule {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<String>,
    pub field_path: Option<String>,
    pub optional_old_self: Option<bool>,
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
    let text = v.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

/// Serializes a schema back into the JSONSchemaProps shape of a CRD (used for the LCD).
pub fn to_json(s: &Schema) -> Value {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    if let Some(t) = &s.type_ {
        put("type", Value::String(t.clone()));
    }
    if let Some(f) = &s.format {
        put("format", Value::String(f.clone()));
    }
    if let Some(t) = &s.title {
        put("title", Value::String(t.clone()));
    }
    if let Some(d) = &s.description {
        put("description", Value::String(d.clone()));
    }
    if let Some(d) = &s.default {
        put("default", d.clone());
    }
    if s.nullable {
        put("nullable", Value::Bool(true));
    }
    if let Some(e) = &s.enum_values {
        put("enum", Value::Array(e.clone()));
    }
    if let Some(p) = &s.pattern {
        put("pattern", Value::String(p.clone()));
    }
    for (k, v) in [
        ("maxLength", s.max_length),
        ("minLength", s.min_length),
        ("maxItems", s.max_items),
        ("minItems", s.min_items),
        ("maxProperties", s.max_properties),
        ("minProperties", s.min_properties),
    ] {
        if let Some(v) = v {
            put(k, Value::from(v));
        }
    }
    for (k, v) in [
        ("maximum", s.maximum),
        ("minimum", s.minimum),
        ("multipleOf", s.multiple_of),
    ] {
        if let Some(v) = v {
            put(k, number_value(v));
        }
    }
    if s.exclusive_maximum {
        put("exclusiveMaximum", Value::Bool(true));
    }
    if s.exclusive_minimum {
        put("exclusiveMinimum", Value::Bool(true));
    }
    if s.unique_items {
        put("uniqueItems", Value::Bool(true));
    }
    if !s.required.is_empty() {
        put("required", Value::from(s.required.clone()));
    }
    if !s.properties.is_empty() {
        put(
            "properties",
            Value::Object(
                s.properties
                    .iter()
                    .map(|(k, v)| (k.clone(), to_json(v)))
                    .collect(),
            ),
        );
    }
    match &s.additional_properties {
        Some(AdditionalProperties::Allowed(b)) => put("additionalProperties", Value::Bool(*b)),
        Some(AdditionalProperties::Schema(v)) => put("additionalProperties", to_json(v)),
        None => {}
    }
    if let Some(i) = &s.items {
        put("items", to_json(i));
    }
    for (k, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        if !list.is_empty() {
            put(k, Value::Array(list.iter().map(to_json).collect()));
        }
    }
    if s.int_or_string {
        put("x-kubernetes-int-or-string", Value::Bool(true));
    }
    if let Some(n) = &s.not {
        put("not", to_json(n));
    }
    if s.preserve_unknown_fields {
        put("x-kubernetes-preserve-unknown-fields", Value::Bool(true));
    }
    if s.embedded_resource {
        put("x-kubernetes-embedded-resource", Value::Bool(true));
    }
    if let Some(t) = &s.list_type {
        put("x-kubernetes-list-type", Value::String(t.clone()));
    }
    if !s.list_map_keys.is_empty() {
        put(
            "x-kubernetes-list-map-keys",
            Value::from(s.list_map_keys.clone()),
        );
    }
    if let Some(t) = &s.map_type {
        put("x-kubernetes-map-type", Value::String(t.clone()));
    }
    if !s.validations.is_empty() {
        put(
            "x-kubernetes-validations",
            Value::Array(s.validations.iter().map(cel_to_json).collect()),
        );
    }
    Value::Object(m)
}

/// What `json_text::push_json_pretty(out, &to_json(s), level)` writes, without building the
/// `Value`: the LCD manifests are mostly schemas. Members come in the order of their keys, as
/// in a `serde_json` map (tests check the two agree).
pub fn push_schema_json(out: &mut Vec<u8>, s: &Schema, level: usize) {
    use super::json_text::{PrettyJson, push_json_bool, push_json_pretty, push_json_string};
    fn schemas(object: &mut PrettyJson, key: &str, list: &[Schema], level: usize) {
        if !list.is_empty() {
            let mut array = PrettyJson::array(object.key(key), level);
            for s in list {
                push_schema_json(array.item(), s, level + 1);
            }
            array.end();
        }
    }
    fn strings(object: &mut PrettyJson, key: &str, list: &[String], level: usize) {
        if !list.is_empty() {
            let mut array = PrettyJson::array(object.key(key), level);
            for s in list {
                push_json_string(array.item(), s);
            }
            array.end();
        }
    }
    fn string(object: &mut PrettyJson, key: &str, value: &Option<String>) {
        if let Some(v) = value {
            push_json_string(object.key(key), v);
        }
    }
    fn flag(object: &mut PrettyJson, key: &str, set: bool) {
        if set {
            push_json_bool(object.key(key), true);
        }
    }
    fn count(object: &mut PrettyJson, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            use std::io::Write;
            write!(object.key(key), "{v}").expect("writing to memory");
        }
    }
    fn number(object: &mut PrettyJson, key: &str, value: Option<f64>, level: usize) {
        if let Some(v) = value {
            push_json_pretty(object.key(key), &number_value(v), level);
        }
    }
    let inner = level + 1;
    let mut object = PrettyJson::object(out, level);
    match &s.additional_properties {
        Some(AdditionalProperties::Allowed(b)) => {
            push_json_bool(object.key("additionalProperties"), *b)
        }
        Some(AdditionalProperties::Schema(v)) => {
            push_schema_json(object.key("additionalProperties"), v, inner)
        }
        None => {}
    }
    schemas(&mut object, "allOf", &s.all_of, inner);
    schemas(&mut object, "anyOf", &s.any_of, inner);
    if let Some(d) = &s.default {
        push_json_pretty(object.key("default"), d, inner);
    }
    string(&mut object, "description", &s.description);
    if let Some(values) = &s.enum_values {
        let mut array = PrettyJson::array(object.key("enum"), inner);
        for v in values {
            push_json_pretty(array.item(), v, inner + 1);
        }
        array.end();
    }
    flag(&mut object, "exclusiveMaximum", s.exclusive_maximum);
    flag(&mut object, "exclusiveMinimum", s.exclusive_minimum);
    string(&mut object, "format", &s.format);
    if let Some(items) = &s.items {
        push_schema_json(object.key("items"), items, inner);
    }
    count(&mut object, "maxItems", s.max_items);
    count(&mut object, "maxLength", s.max_length);
    count(&mut object, "maxProperties", s.max_properties);
    number(&mut object, "maximum", s.maximum, inner);
    count(&mut object, "minItems", s.min_items);
    count(&mut object, "minLength", s.min_length);
    count(&mut object, "minProperties", s.min_properties);
    number(&mut object, "minimum", s.minimum, inner);
    number(&mut object, "multipleOf", s.multiple_of, inner);
    if let Some(not) = &s.not {
        push_schema_json(object.key("not"), not, inner);
    }
    flag(&mut object, "nullable", s.nullable);
    schemas(&mut object, "oneOf", &s.one_of, inner);
    string(&mut object, "pattern", &s.pattern);
    if !s.properties.is_empty() {
        let mut properties = PrettyJson::object(object.key("properties"), inner);
        for (name, property) in &s.properties {
            push_schema_json(properties.key(name), property, inner + 1);
        }
        properties.end();
    }
    strings(&mut object, "required", &s.required, inner);
    string(&mut object, "title", &s.title);
    string(&mut object, "type", &s.type_);
    flag(&mut object, "uniqueItems", s.unique_items);
    flag(
        &mut object,
        "x-kubernetes-embedded-resource",
        s.embedded_resource,
    );
    flag(&mut object, "x-kubernetes-int-or-string", s.int_or_string);
    strings(
        &mut object,
        "x-kubernetes-list-map-keys",
        &s.list_map_keys,
        inner,
    );
    string(&mut object, "x-kubernetes-list-type", &s.list_type);
    string(&mut object, "x-kubernetes-map-type", &s.map_type);
    flag(
        &mut object,
        "x-kubernetes-preserve-unknown-fields",
        s.preserve_unknown_fields,
    );
    if !s.validations.is_empty() {
        let mut array = PrettyJson::array(object.key("x-kubernetes-validations"), inner);
        for rule in &s.validations {
            push_json_pretty(array.item(), &cel_to_json(rule), inner + 1);
        }
        array.end();
    }
    object.end();
}

fn cel_to_json(r: &CelRule) -> Value {
    let mut m = Map::new();
    m.insert("rule".into(), Value::String(r.rule.clone()));
    for (k, v) in [
        ("message", &r.message),
        ("messageExpression", &r.message_expression),
        ("reason", &r.reason),
        ("fieldPath", &r.field_path),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), Value::String(v.clone()));
        }
    }
    if let Some(o) = r.optional_old_self {
        m.insert("optionalOldSelf".into(), Value::Bool(o));
    }
    Value::Object(m)
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
#[derive(Debug, Clone, PartialEq)]
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

#[derive(Debug, Clone, PartialEq)]
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
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo"];
        v.sort_by_key(|a| std::cmp::Reverse(version_priority(a)));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }
}
