//! The validator on schemas made up by the fuzzer: a structured schema (every keyword the
//! model reads, names and strings from a small alphabet so that they meet) is written as
//! JSON, read as a CRD schema (structural) and as an OpenAPI schema (lenient), and whatever
//! reads is used to validate made-up objects. A CRD schema must write out and read back the
//! same, and two of them (as two sources of one CRD) go through the diff and the LCD.
#![no_main]

use arbitrary::Arbitrary;
use kubectl_migrate::schema::model::{ApiDef, Schema, VersionDef, to_json};
use kubectl_migrate::schema::parse::{NoRefs, parse_crd_schema, parse_openapi_schema};
use kubectl_migrate::schema::validate::validate_object;
use kubectl_migrate::schema::{diff, lcd};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[derive(Debug, Arbitrary)]
enum Name {
    A,
    B,
    C,
    ApiVersion,
    Kind,
    Metadata,
    Other(String),
}

impl Name {
    fn text(&self) -> String {
        match self {
            Name::A => "a".into(),
            Name::B => "b".into(),
            Name::C => "c".into(),
            Name::ApiVersion => "apiVersion".into(),
            Name::Kind => "kind".into(),
            Name::Metadata => "metadata".into(),
            Name::Other(s) => s.clone(),
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Text {
    Word,
    Date,
    DateTime,
    Uuid,
    Ip,
    Other(String),
}

impl Text {
    fn text(&self) -> String {
        match self {
            Text::Word => "abc".into(),
            Text::Date => "2024-01-31".into(),
            Text::DateTime => "2024-01-31T12:00:00Z".into(),
            Text::Uuid => "123e4567-e89b-12d3-a456-426614174000".into(),
            Text::Ip => "10.0.0.1".into(),
            Text::Other(s) => s.clone(),
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Format {
    DateTime,
    Date,
    Uuid,
    Byte,
    Ipv4,
    Ipv6,
    Int32,
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Pattern {
    Letters,
    Anchored,
    Other(String),
}

#[derive(Debug, Arbitrary)]
struct Rule {
    constant_false: bool,
    message: Option<String>,
}

#[derive(Debug, Arbitrary)]
struct ArbSchema {
    type_: Option<Type>,
    int_or_string: bool,
    nullable: bool,
    preserve_unknown_fields: Option<bool>,
    embedded_resource: bool,
    format: Option<Format>,
    pattern: Option<Pattern>,
    enum_values: Option<Vec<ArbValue>>,
    max_length: Option<u8>,
    min_length: Option<u8>,
    maximum: Option<f64>,
    minimum: Option<i16>,
    exclusive_maximum: bool,
    exclusive_minimum: bool,
    multiple_of: Option<f64>,
    max_items: Option<u8>,
    min_items: Option<u8>,
    unique_items: bool,
    max_properties: Option<u8>,
    min_properties: Option<u8>,
    required: Vec<Name>,
    properties: Vec<(Name, ArbSchema)>,
    additional_properties: Option<Result<bool, Box<ArbSchema>>>,
    items: Option<Box<ArbSchema>>,
    list_type: Option<Option<String>>,
    list_map_keys: Vec<Name>,
    validations: Vec<Rule>,
    all_of: Vec<ArbSchema>,
    any_of: Vec<ArbSchema>,
    one_of: Vec<ArbSchema>,
    not: Option<Box<ArbSchema>>,
    default: Option<ArbValue>,
}

#[derive(Debug, Arbitrary)]
enum ArbValue {
    Null,
    Bool(bool),
    Int(i64),
    Small(i8),
    Float(f64),
    Text(Text),
    Array(Vec<ArbValue>),
    Object(Vec<(Name, ArbValue)>),
}

impl ArbValue {
    fn json(&self) -> Value {
        match self {
            ArbValue::Null => Value::Null,
            ArbValue::Bool(b) => json!(b),
            ArbValue::Int(i) => json!(i),
            ArbValue::Small(i) => json!(i),
            ArbValue::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            ArbValue::Text(t) => json!(t.text()),
            ArbValue::Array(items) => Value::Array(items.iter().map(ArbValue::json).collect()),
            ArbValue::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.text(), v.json()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

fn number(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

impl ArbSchema {
    fn json(&self) -> Value {
        let mut o = Map::new();
        let mut put = |k: &str, v: Value| {
            o.insert(k.to_string(), v);
        };
        if let Some(t) = &self.type_ {
            put(
                "type",
                json!(match t {
                    Type::Object => "object",
                    Type::Array => "array",
                    Type::String => "string",
                    Type::Integer => "integer",
                    Type::Number => "number",
                    Type::Boolean => "boolean",
                    Type::Other(s) => s.as_str(),
                }),
            );
        }
        if self.int_or_string {
            put("x-kubernetes-int-or-string", json!(true));
        }
        if self.nullable {
            put("nullable", json!(true));
        }
        if let Some(p) = self.preserve_unknown_fields {
            put("x-kubernetes-preserve-unknown-fields", json!(p));
        }
        if self.embedded_resource {
            put("x-kubernetes-embedded-resource", json!(true));
        }
        if let Some(f) = &self.format {
            put(
                "format",
                json!(match f {
                    Format::DateTime => "date-time",
                    Format::Date => "date",
                    Format::Uuid => "uuid",
                    Format::Byte => "byte",
                    Format::Ipv4 => "ipv4",
                    Format::Ipv6 => "ipv6",
                    Format::Int32 => "int32",
                    Format::Other(s) => s.as_str(),
                }),
            );
        }
        if let Some(p) = &self.pattern {
            put(
                "pattern",
                json!(match p {
                    Pattern::Letters => "[a-z]+",
                    Pattern::Anchored => "^a(b|c)*$",
                    Pattern::Other(s) => s.as_str(),
                }),
            );
        }
        if let Some(values) = &self.enum_values {
            put(
                "enum",
                Value::Array(values.iter().map(ArbValue::json).collect()),
            );
        }
        let mut count = |k: &str, v: Option<u8>| {
            if let Some(v) = v {
                put(k, json!(v));
            }
        };
        count("maxLength", self.max_length);
        count("minLength", self.min_length);
        count("maxItems", self.max_items);
        count("minItems", self.min_items);
        count("maxProperties", self.max_properties);
        count("minProperties", self.min_properties);
        if let Some(m) = self.maximum {
            put("maximum", number(m));
        }
        if let Some(m) = self.minimum {
            put("minimum", json!(m));
        }
        if self.exclusive_maximum {
            put("exclusiveMaximum", json!(true));
        }
        if self.exclusive_minimum {
            put("exclusiveMinimum", json!(true));
        }
        if let Some(m) = self.multiple_of {
            put("multipleOf", number(m));
        }
        if self.unique_items {
            put("uniqueItems", json!(true));
        }
        if !self.required.is_empty() {
            put(
                "required",
                Value::Array(self.required.iter().map(|n| json!(n.text())).collect()),
            );
        }
        if !self.properties.is_empty() {
            put(
                "properties",
                Value::Object(
                    self.properties
                        .iter()
                        .map(|(k, s)| (k.text(), s.json()))
                        .collect(),
                ),
            );
        }
        match &self.additional_properties {
            Some(Ok(b)) => put("additionalProperties", json!(b)),
            Some(Err(s)) => put("additionalProperties", s.json()),
            None => {}
        }
        if let Some(items) = &self.items {
            put("items", items.json());
        }
        if let Some(t) = &self.list_type {
            put(
                "x-kubernetes-list-type",
                json!(t.as_deref().unwrap_or("map")),
            );
        }
        if !self.list_map_keys.is_empty() {
            put(
                "x-kubernetes-list-map-keys",
                Value::Array(self.list_map_keys.iter().map(|n| json!(n.text())).collect()),
            );
        }
        if !self.validations.is_empty() {
            put(
                "x-kubernetes-validations",
                Value::Array(
                    self.validations
                        .iter()
                        .map(|r| {
                            let rule = if r.constant_false {
                                "false"
                            } else {
                                "self.a == 1"
                            };
                            match &r.message {
                                Some(m) => json!({"rule": rule, "message": m}),
                                None => json!({"rule": rule}),
                            }
                        })
                        .collect(),
                ),
            );
        }
        for (k, list) in [
            ("allOf", &self.all_of),
            ("anyOf", &self.any_of),
            ("oneOf", &self.one_of),
        ] {
            if !list.is_empty() {
                put(k, Value::Array(list.iter().map(ArbSchema::json).collect()));
            }
        }
        if let Some(n) = &self.not {
            put("not", n.json());
        }
        if let Some(d) = &self.default {
            put("default", d.json());
        }
        Value::Object(o)
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    schema: ArbSchema,
    other: ArbSchema,
    objects: Vec<ArbValue>,
}

/// A one-version CRD with this schema, as a source would hold it.
fn crd(schema: Schema) -> ApiDef {
    ApiDef {
        name: "gadgets.km.example.com".into(),
        group: "km.example.com".into(),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
        singular: None,
        list_kind: None,
        short_names: Default::default(),
        categories: Default::default(),
        scope: "Namespaced".into(),
        builtin: false,
        versions: [(
            "v1".to_string(),
            VersionDef {
                served: true,
                storage: true,
                deprecated: false,
                schema,
                subresources: Value::Null,
                printer_columns: Vec::new(),
                selectable_fields: Vec::new(),
            },
        )]
        .into(),
        conversion: None,
        api_approved: None,
    }
}

fuzz_target!(|input: Input| {
    let raw = input.schema.json();
    let objects: Vec<Value> = input.objects.iter().map(ArbValue::json).collect();
    if let Ok(schema) = parse_crd_schema(&raw, "s") {
        for object in &objects {
            let _ = validate_object(&schema, object);
        }
        // Written out (as LCD manifests are), it reads back and writes out the same; the
        // informational x-kubernetes-* extensions are not written.
        let written = to_json(&schema);
        let read = parse_crd_schema(&written, "s")
            .unwrap_or_else(|e| panic!("written schema does not read back: {e:?}\n{written}"));
        assert_eq!(to_json(&read), written);
    }
    if let Ok(schema) = parse_openapi_schema(&raw, "s", &NoRefs) {
        for object in &objects {
            let _ = validate_object(&schema, object);
        }
    }
    let (Ok(a), Ok(b)) = (
        parse_crd_schema(&raw, "a"),
        parse_crd_schema(&input.other.json(), "b"),
    ) else {
        return;
    };
    let (a, b) = (crd(a), crd(b));
    let labels = vec!["a".to_string(), "b".to_string()];
    for pair in [[Some(&a), Some(&b)], [Some(&b), Some(&a)]] {
        let _ = diff::diff_api(&pair, 0);
        let common = lcd::lcd_api(&pair, &labels);
        // What the LCD accepts, every source accepts (as the LCD's property tests hold it).
        if let (true, Some(schema)) = (common.conflicts.is_empty(), common.schemas.get("v1")) {
            for object in &objects {
                if validate_object(schema, object).is_valid() {
                    for source in [&a, &b] {
                        let outcome = validate_object(&source.versions["v1"].schema, object);
                        assert!(outcome.is_valid(), "{object}: {outcome:?}");
                    }
                }
            }
        }
    }
});
