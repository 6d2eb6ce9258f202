//! Reading a schema into the model ([`super::model`]): a CRD's `openAPIV3Schema`, checked as
//! the API server checks it (structural rules, then each default against its field, with the
//! server's paths and messages), and the component schemas of an OpenAPI v3 document (built-in
//! types, `$ref`s resolved), taken as they are.
use serde_json::{Map, Value};

use super::json_view::{JsonObject, JsonView};
use super::model::{AdditionalProperties, CelRule, Schema, SchemaNode, SharedText, short};
use super::validate::validate_default;

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
    parser.check_defaults(&schema, At::Root(path));
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
                // Straight from the borrowed text into the shared one: a description may be
                // most of a file of a hundred megabytes.
                "description" => s.description = self.text(v, path, key),
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
                "example" => s.example = Some(Box::new(canonical_numbers(v.to_value()))),
                "externalDocs" | "id" | "$schema" => {}
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
                // Every key of a CRD schema has its arm above; anything else is refused, as the API
                // server refuses it.
                other if structural => self.error(
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
            if !s.any_of.is_empty() {
                s.any_of
                    .retain(|a| !is_bare_type(a, "integer") && !is_bare_type(a, "string"));
            }
            if s.type_.is_none() || structural {
                s.type_ = None;
            }
        }
        // Read before written: writing a rare keyword gives the node its box of them (some
        // 600 bytes, see `RareKeywords`), and sorting an empty list on every node gave every
        // node one: 180 MB for a CRD of 300,000 properties while it was loaded.
        if !s.required.is_empty() {
            s.required.sort();
            s.required.dedup();
        }
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
                    description: Some(
                        format!("recursive reference to {reference}, not expanded").into(),
                    ),
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
            schema.description = Some(d.into());
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
    }

    /// The API server's last check of a CRD schema, a pass over the parsed tree: a `default`
    /// must be accepted by its own field's schema (else every object without the field would be
    /// invalid). Value validations (allOf, anyOf, oneOf, not) carry no defaults, so the pass
    /// does not descend into them.
    fn check_defaults(&mut self, s: &Schema, path: At<'_>) {
        if let Some(AdditionalProperties::Schema(values)) = &s.additional_properties {
            self.check_defaults(values, At::Key(&path, "additionalProperties"));
        }
        if let Some(items) = &s.items {
            self.check_defaults(items, At::Key(&path, "items"));
        }
        for (name, property) in &s.properties {
            self.check_defaults(property, At::Property(&path, name));
        }
        if let Some(default) = &s.default {
            for violation in validate_default(s, default).violations {
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

    /// [`Parser::string`], shared (see [`SharedText`]).
    fn text(&mut self, v: &impl JsonView, path: At<'_>, key: &str) -> Option<SharedText> {
        match v.as_str() {
            Some(s) => Some(SharedText::read(s)),
            None => {
                self.string(v, path, key);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::to_json;
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
}
