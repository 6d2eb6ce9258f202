//! One normalized schema tree per source, built once. CRD `openAPIV3Schema`s and the component
//! schemas of an OpenAPI v3 document (built-in types, `$ref`s resolved) both end up here, so the
//! diff, the LCD and the validator only know one shape.
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::json_view::{JsonObject, JsonView};

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

/// Where a parse problem is, and what it is. Paths use the API server's notation, so messages
/// read like its own (`...openAPIV3Schema.properties[spec].type: Required value: ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// How strictly to read a schema: CRDs must be structural (the API server insists on it), the
/// built-in types of an OpenAPI document are taken as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    Structural,
    Lenient,
}

/// Resolves `$ref`s of an OpenAPI v3 document while parsing.
pub trait RefResolver {
    fn resolve(&self, reference: &str) -> Option<&Value>;
}

/// No `$ref`s allowed (CRDs).
pub struct NoRefs;
impl RefResolver for NoRefs {
    fn resolve(&self, _: &str) -> Option<&Value> {
        None
    }
}

/// Parses a structural CRD schema (`openAPIV3Schema`), checking the API server's structural
/// rules. `path` names the node in messages.
pub fn parse_crd_schema(value: &impl JsonView, path: &str) -> Result<Schema, Vec<SchemaError>> {
    let mut parser = Parser {
        strictness: Strictness::Structural,
        resolver: &NoRefs,
        errors: Vec::new(),
        ref_stack: Vec::new(),
    };
    let schema = parser.node(value, At::Root(path), Position::Root);
    if parser.errors.is_empty() {
        Ok(schema)
    } else {
        Err(parser.errors)
    }
}

/// Parses a schema of an OpenAPI v3 document, following `$ref`s through `resolver`. A type that
/// refers to itself is cut at the second visit and kept as an opaque object.
pub fn parse_openapi_schema(
    value: &Value,
    path: &str,
    resolver: &dyn RefResolver,
) -> Result<Schema, Vec<SchemaError>> {
    let mut parser = Parser {
        strictness: Strictness::Lenient,
        resolver,
        errors: Vec::new(),
        ref_stack: Vec::new(),
    };
    let schema = parser.node(value, At::Root(path), Position::Root);
    if parser.errors.is_empty() {
        Ok(schema)
    } else {
        Err(parser.errors)
    }
}

/// Where a node is, in the API server's notation; written out only for a message.
#[derive(Clone, Copy)]
enum At<'a> {
    Root(&'a str),
    /// `{parent}.properties[{name}]`
    Property(&'a At<'a>, &'a str),
    /// `{parent}.{key}`
    Key(&'a At<'a>, &'a str),
    /// `{parent}.{key}[{index}]`
    Item(&'a At<'a>, &'a str, usize),
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Root(path) => f.write_str(path),
            At::Property(parent, name) => write!(f, "{parent}.properties[{name}]"),
            At::Key(parent, key) => write!(f, "{parent}.{key}"),
            At::Item(parent, key, index) => write!(f, "{parent}.{key}[{index}]"),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Root,
    /// Under properties/items/additionalProperties.
    Field,
    /// Inside allOf/anyOf/oneOf/not, where only value validations may appear.
    Junction,
}

struct Parser<'a> {
    strictness: Strictness,
    resolver: &'a dyn RefResolver,
    errors: Vec<SchemaError>,
    ref_stack: Vec<String>,
}

/// The keys a CRD schema may carry; anything else is rejected like the API server does.
const KNOWN_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "default",
    "example",
    "externalDocs",
    "nullable",
    "enum",
    "pattern",
    "maxLength",
    "minLength",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "multipleOf",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "id",
    "$schema",
];

/// Keys that are valid JSON Schema but that structural schemas forbid.
const FORBIDDEN_IN_CRDS: &[&str] = &[
    "$ref",
    "patternProperties",
    "dependencies",
    "definitions",
    "additionalItems",
];

impl Parser<'_> {
    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(SchemaError {
            path: path.to_string(),
            message: message.into(),
        });
    }

    fn node<V: JsonView>(&mut self, value: &V, path: At<'_>, position: Position) -> Schema {
        let Some(object) = value.as_object() else {
            self.error(
                &path.to_string(),
                format!("Invalid value: {}: must be an object", short_view(value)),
            );
            return Schema::default();
        };
        if self.strictness == Strictness::Lenient
            && let Some(object) = value.as_serde_value().and_then(Value::as_object)
            && let Some(resolved) = self.follow_ref(object, path)
        {
            return resolved;
        }
        let mut s = Schema::default();
        let structural = self.strictness == Strictness::Structural;
        for (key, v) in object.members() {
            match key {
                "type" => s.type_ = self.string(v, path, key),
                "format" => s.format = self.string(v, path, key),
                "title" => s.title = self.string(v, path, key),
                "description" => s.description = self.string(v, path, key),
                "default" => s.default = Some(canonical_numbers(v.to_value())),
                "nullable" => s.nullable = self.boolean(v, path, key),
                "enum" => match v.as_array() {
                    Some(values) => {
                        s.enum_values = Some(
                            values
                                .iter()
                                .map(|v| canonical_numbers(v.to_value()))
                                .collect(),
                        )
                    }
                    None => self.error(&format!("{path}.enum"), "Invalid value: must be a list"),
                },
                "pattern" => s.pattern = self.string(v, path, key),
                "maxLength" => s.max_length = self.count(v, path, key),
                // A zero lower bound constrains nothing: written or not, the same schema.
                "minLength" => s.min_length = self.count(v, path, key).filter(|&n| n > 0),
                "maxItems" => s.max_items = self.count(v, path, key),
                "minItems" => s.min_items = self.count(v, path, key).filter(|&n| n > 0),
                "maxProperties" => s.max_properties = self.count(v, path, key),
                "minProperties" => {
                    s.min_properties = self.count(v, path, key).filter(|&n| n > 0);
                }
                "maximum" => s.maximum = self.number(v, path, key),
                "minimum" => s.minimum = self.number(v, path, key),
                "multipleOf" => s.multiple_of = self.number(v, path, key),
                "exclusiveMaximum" => s.exclusive_maximum = self.boolean(v, path, key),
                "exclusiveMinimum" => s.exclusive_minimum = self.boolean(v, path, key),
                "uniqueItems" => s.unique_items = self.boolean(v, path, key),
                "required" => s.required = self.string_list(v, path, key),
                "properties" => match v.as_object() {
                    Some(props) => {
                        for (name, prop) in props.members() {
                            let child = self.node(
                                prop,
                                At::Property(&path, name),
                                field_position(position),
                            );
                            s.properties.insert(name.to_string(), child);
                        }
                    }
                    None => self.error(
                        &format!("{path}.properties"),
                        "Invalid value: must be a map",
                    ),
                },
                "additionalProperties" => {
                    s.additional_properties = Some(match v.as_bool() {
                        Some(b) => AdditionalProperties::Allowed(b),
                        None => AdditionalProperties::Schema(self.node(
                            v,
                            At::Key(&path, "additionalProperties"),
                            field_position(position),
                        )),
                    })
                }
                "items" => match v.as_array() {
                    Some(_) => self.error(
                        &format!("{path}.items"),
                        "Forbidden: items must be a schema object and not an array",
                    ),
                    None => {
                        s.items =
                            Some(self.node(v, At::Key(&path, "items"), field_position(position)))
                    }
                },
                "allOf" | "anyOf" | "oneOf" => {
                    let int_or_string = object
                        .get("x-kubernetes-int-or-string")
                        .and_then(V::as_bool)
                        == Some(true);
                    let list = self.junction_list(v, path, key, int_or_string);
                    match key {
                        "allOf" => s.all_of = list,
                        "anyOf" => s.any_of = list,
                        _ => s.one_of = list,
                    }
                }
                "not" => s.not = Some(self.node(v, At::Key(&path, "not"), Position::Junction)),
                "x-kubernetes-preserve-unknown-fields" => {
                    s.preserve_unknown_fields = self.boolean(v, path, key)
                }
                "x-kubernetes-embedded-resource" => {
                    s.embedded_resource = self.boolean(v, path, key)
                }
                "x-kubernetes-int-or-string" => s.int_or_string = self.boolean(v, path, key),
                "x-kubernetes-list-type" => s.list_type = self.string(v, path, key),
                "x-kubernetes-map-type" => s.map_type = self.string(v, path, key),
                "x-kubernetes-list-map-keys" => s.list_map_keys = self.string_list(v, path, key),
                "x-kubernetes-validations" => s.validations = self.cel_rules(v, path),
                "example" | "externalDocs" | "id" | "$schema" => {}
                other
                    if other.starts_with("x-kubernetes-")
                        || (!structural && other.starts_with("x-")) =>
                {
                    s.extensions.insert(other.to_string(), v.to_value());
                }
                other if structural && FORBIDDEN_IN_CRDS.contains(&other) => self.error(
                    &format!("{path}.{other}"),
                    "Forbidden: must not be used in a structural schema",
                ),
                other if structural && !KNOWN_KEYS.contains(&other) => self.error(
                    &format!("{path}.{other}"),
                    "Forbidden: unknown field in a CRD schema",
                ),
                _ => {}
            }
        }
        // OpenAPI v3 documents of built-in types spell int-or-string as a string format.
        if s.format.as_deref() == Some("int-or-string") {
            s.format = None;
            s.type_ = None;
            s.int_or_string = true;
        }
        if s.int_or_string {
            // The structural form carries `anyOf: [{type: integer}, {type: string}]`; it says
            // nothing beyond the flag.
            s.any_of
                .retain(|a| !is_bare_type(a, "integer") && !is_bare_type(a, "string"));
            if s.type_.is_none() || structural {
                s.type_ = None;
            }
        }
        s.required.sort();
        s.required.dedup();
        if structural {
            self.check_structural(&s, path, position);
        }
        s
    }

    /// `{"$ref": X}` or the `{"allOf": [{"$ref": X}], "description": ...}` wrapper of OpenAPI v3
    /// documents: the referenced schema, with the wrapper's description and default on top.
    fn follow_ref(&mut self, object: &Map<String, Value>, path: At<'_>) -> Option<Schema> {
        let reference = object.get("$ref").and_then(Value::as_str).or_else(|| {
            match object
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        })?;
        if self.ref_stack.iter().any(|r| r == reference) {
            // A recursive type (for example JSONSchemaProps): keep the node but stop descending.
            return Some(
                SchemaNode {
                    type_: Some("object".into()),
                    preserve_unknown_fields: true,
                    description: Some(format!("recursive reference to {reference}, not expanded")),
                    ..SchemaNode::default()
                }
                .into(),
            );
        }
        let Some(target) = self.resolver.resolve(reference) else {
            self.error(
                &path.to_string(),
                format!("unresolvable $ref {reference:?}"),
            );
            return Some(Schema::default());
        };
        self.ref_stack.push(reference.to_string());
        let mut schema = self.node(target, path, Position::Field);
        self.ref_stack.pop();
        if let Some(d) = object.get("description").and_then(Value::as_str) {
            schema.description = Some(d.to_string());
        }
        if let Some(d) = object.get("default") {
            // Built-in documents put `default: {}` on every embedded struct; it means nothing.
            if d != &Value::Object(Map::new()) {
                schema.default = Some(d.clone());
            }
        }
        Some(schema)
    }

    /// The API server's structural-schema rules that concern one node.
    fn check_structural(&mut self, s: &Schema, path: At<'_>, position: Position) {
        match position {
            Position::Junction => {
                for (set, what) in [
                    (s.type_.is_some(), "type"),
                    (s.default.is_some(), "default"),
                    (s.nullable, "nullable"),
                    (s.description.is_some(), "description"),
                    (s.additional_properties.is_some(), "additionalProperties"),
                    (
                        s.preserve_unknown_fields,
                        "x-kubernetes-preserve-unknown-fields",
                    ),
                    (s.embedded_resource, "x-kubernetes-embedded-resource"),
                ] {
                    if set {
                        self.error(
                            &format!("{path}.{what}"),
                            "Forbidden: must be empty to be structural",
                        );
                    }
                }
                return;
            }
            Position::Root => {
                if s.additional_properties.is_some() {
                    self.error(
                        &format!("{path}.additionalProperties"),
                        "Forbidden: must not be used at the root",
                    );
                }
                if s.type_.as_deref() != Some("object") {
                    self.error(
                        &format!("{path}.type"),
                        "Unsupported value: must be object at the root",
                    );
                }
            }
            Position::Field => {}
        }
        let has_type = s.type_.as_deref().is_some_and(|t| !t.is_empty());
        if !has_type && !s.int_or_string && !s.preserve_unknown_fields {
            self.error(
                &format!("{path}.type"),
                "Required value: must not be empty for specified fields",
            );
        }
        if let Some(t) = s.type_.as_deref()
            && !["object", "array", "string", "integer", "number", "boolean"].contains(&t)
        {
            self.error(
                &format!("{path}.type"),
                format!(
                    "Unsupported value: {t:?}: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                ),
            );
        }
        if !s.properties.is_empty() && s.additional_properties.is_some() {
            self.error(
                &format!("{path}.additionalProperties"),
                "Forbidden: additionalProperties and properties are mutual exclusive",
            );
        }
        if s.type_.as_deref() == Some("array") && s.items.is_none() {
            self.error(
                &format!("{path}.items"),
                "Required value: must be specified for type array",
            );
        }
        if s.unique_items {
            self.error(
                &format!("{path}.uniqueItems"),
                "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            );
        }
        if matches!(
            s.additional_properties,
            Some(AdditionalProperties::Allowed(false))
        ) {
            self.error(
                &format!("{path}.additionalProperties"),
                "Forbidden: additionalProperties cannot be set to false",
            );
        }
        if s.int_or_string && s.type_.is_some() {
            self.error(
                &format!("{path}.type"),
                "Invalid value: must be empty if x-kubernetes-int-or-string is true",
            );
        }
        if let Some(default) = &s.default {
            for violation in super::validate::validate_default(s, default).violations {
                let inner = violation.path.trim_start_matches('.');
                let at = if inner.is_empty() {
                    format!("{path}.default")
                } else {
                    format!("{path}.default.{inner}")
                };
                self.error(&at, violation.message);
            }
        }
    }

    /// `int_or_string`: the structural exception `anyOf: [{type: integer}, {type: string}]`
    /// next to `x-kubernetes-int-or-string: true` may carry types.
    fn junction_list<V: JsonView>(
        &mut self,
        v: &V,
        path: At<'_>,
        key: &str,
        int_or_string: bool,
    ) -> Vec<Schema> {
        match v.as_array() {
            Some(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let bare_type = item
                        .as_object()
                        .filter(|o| o.len() == 1)
                        .and_then(|o| o.get("type"))
                        .and_then(V::as_str);
                    match bare_type {
                        Some(t @ ("integer" | "string")) if int_or_string => SchemaNode {
                            type_: Some(t.to_string()),
                            ..SchemaNode::default()
                        }
                        .into(),
                        _ => self.node(item, At::Item(&path, key, i), Position::Junction),
                    }
                })
                .collect(),
            None => {
                self.error(&format!("{path}.{key}"), "Invalid value: must be a list");
                Vec::new()
            }
        }
    }

    fn cel_rules<V: JsonView>(&mut self, v: &V, path: At<'_>) -> Vec<CelRule> {
        let Some(items) = v.as_array() else {
            self.error(
                &format!("{path}.x-kubernetes-validations"),
                "Invalid value: must be a list",
            );
            return Vec::new();
        };
        let mut rules = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let text = |k: &str| item.get(k).and_then(V::as_str).map(str::to_string);
            match text("rule") {
                Some(rule) if !rule.trim().is_empty() => rules.push(CelRule {
                    rule,
                    message: text("message"),
                    message_expression: text("messageExpression"),
                    reason: text("reason"),
                    field_path: text("fieldPath"),
                    optional_old_self: item.get("optionalOldSelf").and_then(V::as_bool),
                }),
                _ => self.error(
                    &format!("{path}.x-kubernetes-validations[{i}].rule"),
                    "Required value",
                ),
            }
        }
        rules
    }

    fn string(&mut self, v: &impl JsonView, path: At<'_>, key: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.error(
                    &format!("{path}.{key}"),
                    format!("Invalid value: {}: must be a string", short_view(v)),
                );
                None
            }
        }
    }

    fn boolean(&mut self, v: &impl JsonView, path: At<'_>, key: &str) -> bool {
        match v.as_bool() {
            Some(b) => b,
            None => {
                self.error(
                    &format!("{path}.{key}"),
                    format!("Invalid value: {}: must be a boolean", short_view(v)),
                );
                false
            }
        }
    }

    fn count(&mut self, v: &impl JsonView, path: At<'_>, key: &str) -> Option<u64> {
        // kubectl sends an integral float as an integer (5.0 and 1e1 as 5 and 10).
        let integral = || {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && (0.0..9.0e15).contains(f))
                .map(|f| f as u64)
        };
        match v.as_u64().or_else(integral) {
            Some(n) => Some(n),
            None => {
                self.error(
                    &format!("{path}.{key}"),
                    format!(
                        "Invalid value: {}: must be a non-negative integer",
                        short_view(v)
                    ),
                );
                None
            }
        }
    }

    fn number(&mut self, v: &impl JsonView, path: At<'_>, key: &str) -> Option<f64> {
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                self.error(
                    &format!("{path}.{key}"),
                    format!("Invalid value: {}: must be a number", short_view(v)),
                );
                None
            }
        }
    }

    fn string_list<V: JsonView>(&mut self, v: &V, path: At<'_>, key: &str) -> Vec<String> {
        match v.as_array() {
            Some(items) if items.iter().all(|i| i.as_str().is_some()) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => {
                self.error(
                    &format!("{path}.{key}"),
                    "Invalid value: must be a list of strings",
                );
                Vec::new()
            }
        }
    }
}

/// `value` with every number that is integral written as an integer: kubectl sends 1.0 and 1e3
/// as 1 and 1000 (and the API server keeps what it gets), so numbers compare by value.
pub fn canonical_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            // Integral and exact in an f64: the integer it stands for.
            #[allow(clippy::cast_possible_truncation)]
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(canonical_numbers).collect()),
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k, canonical_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

fn field_position(parent: Position) -> Position {
    match parent {
        Position::Junction => Position::Junction,
        _ => Position::Field,
    }
}

fn is_bare_type(s: &Schema, t: &str) -> bool {
    **s == SchemaNode {
        type_: Some(t.to_string()),
        ..SchemaNode::default()
    }
}

/// A value of either tree, shortened for messages.
fn short_view(v: &impl JsonView) -> String {
    match v.as_serde_value() {
        Some(value) => short(value),
        None => short(&v.to_value()),
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

/// Everything one source (a cluster or a set of files) serves.
#[derive(Debug, Clone)]
pub struct SourceSchemas {
    /// The context name or the path, as shown in the output.
    pub label: String,
    pub origin: Origin,
    pub apis: BTreeMap<String, super::stored::StoredApi>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Origin {
    Cluster {
        context: String,
        server: String,
        version: String,
    },
    File {
        path: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_node_without_type_is_not_structural() {
        let err = parse_crd_schema(
            &json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
            "openAPIV3Schema",
        )
        .unwrap_err();
        assert_eq!(
            err[0].to_string(),
            "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified fields"
        );
    }

    #[test]
    fn a_default_the_field_rejects_is_refused() {
        let err = parse_crd_schema(
            &json!({"type": "object", "properties": {
                "a": {"type": "integer", "default": {}},
                "b": {"type": "object", "properties": {"x": {"type": "string", "enum": ["p"]}},
                      "default": {"x": "q"}},
                "c": {"type": "string", "default": "ok", "enum": ["ok"]}
            }}),
            "s",
        )
        .unwrap_err();
        let text: Vec<String> = err.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 2, "{text:#?}");
        assert!(text[0].starts_with("s.properties[a].default: Invalid value"));
        assert!(text[1].starts_with("s.properties[b].default.x: Unsupported value"));
    }

    #[test]
    fn int_or_string_in_both_spellings_is_one_flag() {
        let crd = parse_crd_schema(
            &json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
            "s",
        )
        .unwrap();
        let port = &crd.properties["port"];
        assert!(port.int_or_string && port.type_.is_none() && port.any_of.is_empty());
        let doc = parse_openapi_schema(
            &json!({"type": "string", "format": "int-or-string"}),
            "s",
            &NoRefs,
        )
        .unwrap();
        assert!(doc.int_or_string && doc.format.is_none());
    }

    #[test]
    fn forbidden_constructs_are_named() {
        let err = parse_crd_schema(
            &json!({"type": "object", "properties": {
                "a": {"type": "array", "items": [{"type": "string"}]},
                "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                "c": {"type": "string", "$ref": "#/x"},
                "d": {"type": "string", "anyOf": [{"type": "string"}]}
            }}),
            "s",
        )
        .unwrap_err();
        let text: Vec<String> = err.iter().map(ToString::to_string).collect();
        for want in [
            "s.properties[a].items: Forbidden: items must be a schema object",
            "s.properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "s.properties[c].$ref: Forbidden",
            "s.properties[d].anyOf[0].type: Forbidden: must be empty to be structural",
        ] {
            assert!(
                text.iter().any(|t| t.starts_with(want)),
                "missing {want:?} in {text:#?}"
            );
        }
    }

    #[test]
    fn refs_are_followed_and_recursion_is_cut() {
        struct Doc(Value);
        impl RefResolver for Doc {
            fn resolve(&self, r: &str) -> Option<&Value> {
                self.0.get(r.strip_prefix("#/components/schemas/")?)
            }
        }
        let doc = Doc(json!({
            "Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "child": {"allOf": [{"$ref": "#/components/schemas/Node"}], "description": "next"}
            }}
        }));
        let s =
            parse_openapi_schema(&json!({"$ref": "#/components/schemas/Node"}), "s", &doc).unwrap();
        let child = &s.properties["child"];
        assert!(child.preserve_unknown_fields, "recursion is cut: {child:?}");
        assert_eq!(s.properties["name"].type_name(), "string");
    }

    #[test]
    fn serializing_back_round_trips() {
        let input = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "enum": ["x", "y"], "maxLength": 5, "pattern": "^[a-z]+$"},
            "n": {"type": "integer", "minimum": 1, "maximum": 10, "exclusiveMaximum": true},
            "l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "p": {"x-kubernetes-int-or-string": true},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }, "x-kubernetes-validations": [{"rule": "self.n > 0", "message": "positive"}]});
        let parsed = parse_crd_schema(&input, "s").unwrap();
        assert_eq!(to_json(&parsed), input);
        assert_eq!(parse_crd_schema(&to_json(&parsed), "s").unwrap(), parsed);
    }

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo"];
        v.sort_by_key(|a| std::cmp::Reverse(version_priority(a)));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }
}
