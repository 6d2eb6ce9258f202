//! PURE: a local validator for structural schemas, with the API server's fieldValidation=Strict
//! view of unknown fields. Used by `--object`, the witness search and the LCD property tests.
//! CEL rules are evaluated ([`super::cel`]); those it cannot decide, and transition rules (which
//! a create does not run), are listed as unchecked so nobody mistakes "no violation" for
//! "checked".

use regex::Regex;
use serde_json::Value;

use super::cel::{self, Verdict};
use super::model::{AdditionalProperties, Schema};
use super::pattern;
use crate::sync::Memo;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    /// CEL rules (and formats we do not know) that apply but were not evaluated.
    pub unchecked: Vec<String>,
}

impl Outcome {
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Validates a whole object (its root may carry apiVersion, kind and metadata without the schema
/// listing them, as the API server allows).
///
/// As the server does on create, the schema's defaults are applied first (a rule that reads a
/// defaulted field sees the default).
pub fn validate_object(schema: &Schema, object: &Value) -> Outcome {
    validate_defaulted(schema, object, true)
}

/// Validates a field's `default` against the field's own schema, as the API server does before
/// it accepts a CRD: a default the schema rejects would make every object without the field
/// invalid.
pub fn validate_default(schema: &Schema, default: &Value) -> Outcome {
    validate_defaulted(schema, default, false)
}

fn validate_defaulted(schema: &Schema, value: &Value, root: bool) -> Outcome {
    let mut defaulted = value.clone();
    apply_defaults(schema, &mut defaulted);
    let mut v = Validator::default();
    v.node(schema, &defaulted, "", root);
    v.out
}

/// Fills in the defaults of absent fields (and a null where the field is not nullable), in
/// the default values too, as the API server's structural defaulting does.
pub fn apply_defaults(schema: &Schema, value: &mut Value) {
    match value {
        // By the object's members and the schema's defaulted properties, never all of the
        // schema's properties: this runs for every object the witness search tries.
        Value::Object(map) => {
            for name in schema.defaulted_properties() {
                let prop = &schema.properties[name];
                let missing = match map.get(name) {
                    None => true,
                    Some(Value::Null) => !prop.nullable,
                    Some(_) => false,
                };
                if missing && let Some(d) = &prop.default {
                    map.insert(name.clone(), d.clone());
                }
            }
            for (name, child) in map.iter_mut() {
                match schema.properties.get(name) {
                    Some(prop) => apply_defaults(prop, child),
                    None => {
                        if let Some(values) = schema.map_values() {
                            apply_defaults(values, child);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &schema.items {
                for i in items {
                    apply_defaults(item, i);
                }
            }
        }
        _ => {}
    }
}

#[derive(Default)]
struct Validator {
    out: Outcome,
}

const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl Validator {
    fn fail(&mut self, path: &str, message: impl Into<String>) {
        self.out.violations.push(Violation {
            path: if path.is_empty() {
                ".".into()
            } else {
                path.into()
            },
            message: message.into(),
        });
    }

    fn node(&mut self, s: &Schema, value: &Value, path: &str, root: bool) {
        if value.is_null() {
            if !s.nullable && s.type_.is_some() {
                self.fail(path, "Invalid value: null: must not be null");
            }
            return;
        }
        if !self.type_matches(s, value, path) {
            return;
        }
        self.values(s, value, path);
        match value {
            Value::Object(map) => {
                let keeps_unknown = s.preserve_unknown_fields
                    || matches!(
                        s.additional_properties,
                        Some(AdditionalProperties::Allowed(true))
                    );
                for (key, child) in map {
                    let child_path = format!("{path}.{key}");
                    if (root || s.embedded_resource) && key == "metadata" {
                        // The server validates metadata as ObjectMeta; a schema may only
                        // restrict the name (and generateName) further.
                        let meta = s.properties.get(key);
                        for field in ["name", "generateName"] {
                            if let (Some(f), Some(v)) =
                                (meta.and_then(|m| m.properties.get(field)), child.get(field))
                            {
                                self.node(f, v, &format!("{child_path}.{field}"), false);
                            }
                        }
                        continue;
                    }
                    if let Some(prop) = s.properties.get(key) {
                        self.node(prop, child, &child_path, false);
                    } else if let Some(values) = s.map_values() {
                        self.node(values, child, &child_path, false);
                    } else if (root || s.embedded_resource) && ROOT_FIELDS.contains(&key.as_str()) {
                        // Validated by the server as ObjectMeta / type meta.
                    } else if !keeps_unknown && s.type_.is_some() {
                        self.fail(
                            &child_path,
                            "unknown field (rejected with fieldValidation=Strict)",
                        );
                    }
                }
                for r in &s.required {
                    if map.get(r).is_none_or(Value::is_null) {
                        self.fail(&format!("{path}.{r}"), "Required value");
                    }
                }
                let n = map.len() as u64;
                if s.max_properties.is_some_and(|m| n > m) {
                    self.fail(
                        path,
                        format!(
                            "Too many: {n}: must have at most {} properties",
                            s.max_properties.unwrap()
                        ),
                    );
                }
                if s.min_properties.is_some_and(|m| n < m) {
                    self.fail(
                        path,
                        format!(
                            "Invalid value: must have at least {} properties",
                            s.min_properties.unwrap()
                        ),
                    );
                }
                if s.embedded_resource {
                    for k in ["apiVersion", "kind"] {
                        if map.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                            self.fail(&format!("{path}.{k}"), "Required value: must not be empty");
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = &s.items {
                    for (i, item) in items.iter().enumerate() {
                        self.node(item_schema, item, &format!("{path}[{i}]"), false);
                    }
                }
                let n = items.len() as u64;
                if s.max_items.is_some_and(|m| n > m) {
                    self.fail(
                        path,
                        format!(
                            "Too many: {n}: must have at most {} items",
                            s.max_items.unwrap()
                        ),
                    );
                }
                if s.min_items.is_some_and(|m| n < m) {
                    self.fail(
                        path,
                        format!(
                            "Invalid value: must have at least {} items",
                            s.min_items.unwrap()
                        ),
                    );
                }
                if s.unique_items || s.list_type.as_deref() == Some("set") {
                    for (i, item) in items.iter().enumerate() {
                        if items[..i].contains(item) {
                            self.fail(&format!("{path}[{i}]"), format!("Duplicate value: {item}"));
                        }
                    }
                }
                if s.list_type.as_deref() == Some("map") {
                    let keys: Vec<Vec<Option<&Value>>> = items
                        .iter()
                        .map(|item| s.list_map_keys.iter().map(|k| item.get(k)).collect())
                        .collect();
                    for (i, k) in keys.iter().enumerate() {
                        if keys[..i].contains(k) {
                            self.fail(
                                &format!("{path}[{i}]"),
                                "Duplicate value: list map keys must be unique",
                            );
                        }
                    }
                }
            }
            _ => {}
        }
        for rule in &s.validations {
            let at = if path.is_empty() { "." } else { path };
            // The constant `false` needs no interpreter (the LCD marks fields unsettable with it).
            if rule.key() == "false" {
                let message = rule.message.as_deref().unwrap_or("failed rule: false");
                self.fail(path, format!("Invalid value: {message}"));
                continue;
            }
            let compiled = cel::compiled(rule);
            let verdict = match &*compiled {
                Err(why) => Verdict::Undecided(why.clone()),
                // Transition rules come back undecided from evaluate itself.
                Ok(r) => r.evaluate(s, value),
            };
            match verdict {
                Verdict::Pass => {}
                Verdict::Fail(message) => {
                    let field = rule.field_path.as_deref().unwrap_or_default();
                    self.fail(
                        &format!("{path}{field}"),
                        format!("Invalid value: {message}"),
                    );
                }
                Verdict::Undecided(why) => self
                    .out
                    .unchecked
                    .push(format!("{at}: CEL rule {:?}: {why}", rule.key())),
            }
        }
    }

    fn type_matches(&mut self, s: &Schema, value: &Value, path: &str) -> bool {
        let ok = if s.int_or_string {
            is_integer(value) || value.is_string()
        } else {
            match s.type_.as_deref() {
                None => true,
                Some("object") => value.is_object(),
                Some("array") => value.is_array(),
                Some("string") => value.is_string(),
                Some("integer") => is_integer(value),
                Some("number") => value.is_number(),
                Some("boolean") => value.is_boolean(),
                Some(_) => false,
            }
        };
        if !ok {
            self.fail(
                path,
                format!(
                    "Invalid value: {}: must be of type {}",
                    type_of(value),
                    s.type_name()
                ),
            );
        }
        ok
    }

    /// Value validations that also apply inside allOf/anyOf/oneOf/not.
    fn values(&mut self, s: &Schema, value: &Value, path: &str) {
        if let Some(values) = &s.enum_values
            && !values.iter().any(|v| json_equal(v, value))
        {
            let allowed: Vec<String> = values.iter().map(ToString::to_string).collect();
            self.fail(
                path,
                format!(
                    "Unsupported value: {value}: supported values: {}",
                    allowed.join(", ")
                ),
            );
        }
        if let Some(text) = value.as_str() {
            let len = text.chars().count() as u64;
            if s.max_length.is_some_and(|m| len > m) {
                self.fail(
                    path,
                    format!(
                        "Too long: may not be more than {} bytes",
                        s.max_length.unwrap()
                    ),
                );
            }
            if s.min_length.is_some_and(|m| len < m) {
                self.fail(
                    path,
                    format!(
                        "Invalid value: should be at least {} chars long",
                        s.min_length.unwrap()
                    ),
                );
            }
            if let Some(p) = &s.pattern {
                match compiled(p) {
                    Some(re) if !re.is_match(text) => {
                        self.fail(path, format!("Invalid value: {text:?}: should match '{p}'"))
                    }
                    Some(_) => {}
                    None => self.out.unchecked.push(format!(
                        "{path}: pattern {p:?} (not a regular expression this tool reads as Go does)"
                    )),
                }
            }
            if let Some(f) = &s.format {
                match format_ok(f, text) {
                    Some(true) => {}
                    Some(false) => self.fail(
                        path,
                        format!("Invalid value: {text:?}: must be of format {f}"),
                    ),
                    None => self.out.unchecked.push(format!("{path}: format {f}")),
                }
            }
        }
        if let Some(n) = value.as_f64() {
            if let Some(m) = s.maximum
                && (n > m || (s.exclusive_maximum && n == m))
            {
                let how = if s.exclusive_maximum {
                    "less than"
                } else {
                    "less than or equal to"
                };
                self.fail(path, format!("Invalid value: {n}: must be {how} {m}"));
            }
            if let Some(m) = s.minimum
                && (n < m || (s.exclusive_minimum && n == m))
            {
                let how = if s.exclusive_minimum {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                self.fail(path, format!("Invalid value: {n}: must be {how} {m}"));
            }
            if let Some(m) = s.multiple_of
                && m != 0.0
                && (n / m).fract().abs() > 1e-9
            {
                self.fail(
                    path,
                    format!("Invalid value: {n}: must be a multiple of {m}"),
                );
            }
        }
        for j in &s.all_of {
            self.junction(j, value, path);
        }
        if !s.any_of.is_empty() && !s.any_of.iter().any(|j| junction_ok(j, value)) {
            self.fail(
                path,
                "Invalid value: must validate at least one schema (anyOf)",
            );
        }
        if !s.one_of.is_empty() && s.one_of.iter().filter(|j| junction_ok(j, value)).count() != 1 {
            self.fail(
                path,
                "Invalid value: must validate one and only one schema (oneOf)",
            );
        }
        if let Some(not) = &s.not
            && junction_ok(not, value)
        {
            self.fail(path, "Invalid value: must not validate the schema (not)");
        }
    }

    /// A value-validation schema: its constraints, and those of the properties it names.
    fn junction(&mut self, j: &Schema, value: &Value, path: &str) {
        self.values(j, value, path);
        if let Value::Object(map) = value {
            for (k, child) in &j.properties {
                if let Some(v) = map.get(k) {
                    self.junction(child, v, &format!("{path}.{k}"));
                }
            }
            for r in &j.required {
                if !map.contains_key(r) {
                    self.fail(&format!("{path}.{r}"), "Required value");
                }
            }
        }
        if let (Value::Array(items), Some(item)) = (value, &j.items) {
            for (i, v) in items.iter().enumerate() {
                self.junction(item, v, &format!("{path}[{i}]"));
            }
        }
    }
}

/// The compiled `pattern`, or `None` when it is not read here ([`pattern::regex`], the one
/// reading of a Go pattern, which the diff uses too). Each pattern is compiled once and kept (by
/// its text): values are validated by the thousand against the few patterns of a schema. The
/// cache is emptied when it reaches [`PATTERNS_KEPT`] patterns, so that schemas made up by the
/// thousand (property tests, fuzzing) do not grow it for ever.
fn compiled(pattern: &str) -> Option<Regex> {
    PATTERNS.get_or_compute(pattern, || pattern::regex(pattern).ok())
}

static PATTERNS: Memo<String, Option<Regex>> = Memo::new(PATTERNS_KEPT);
const PATTERNS_KEPT: usize = 4096;

fn junction_ok(j: &Schema, value: &Value) -> bool {
    let mut v = Validator::default();
    v.junction(j, value, "");
    v.out.violations.is_empty()
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Whether an enum member and a value are the same JSON value, numbers by value at any depth
/// (`1` and `1.0`, in a list or an object too): kubectl sends both as `1`, and the enum's
/// members were read so.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64() == b.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The formats we check; `None` for the ones we do not (reported as unchecked).
fn format_ok(format: &str, text: &str) -> Option<bool> {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    Some(match format {
        "int32" | "int64" | "float" | "double" | "password" | "" => true,
        "byte" => {
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=\n\r".contains(&b))
                && text.trim_end_matches('=').len() % 4 != 1
        }
        "date" => {
            let p: Vec<&str> = text.split('-').collect();
            p.len() == 3 && digits(p[0], 4) && digits(p[1], 2) && digits(p[2], 2)
        }
        "date-time" | "datetime" => {
            let (date, time) = match text.split_once(['T', 't']) {
                Some(x) => x,
                None => return Some(false),
            };
            // By `get`: the time may start with a character of several bytes.
            format_ok("date", date) == Some(true)
                && time.len() >= 8
                && time.get(0..2).is_some_and(|hour| digits(hour, 2))
                && time.get(2..3) == Some(":")
        }
        "uuid" => {
            let p: Vec<&str> = text.split('-').collect();
            p.len() == 5
                && [8, 4, 4, 4, 12]
                    .iter()
                    .zip(&p)
                    .all(|(n, s)| s.len() == *n && s.bytes().all(|b| b.is_ascii_hexdigit()))
        }
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
