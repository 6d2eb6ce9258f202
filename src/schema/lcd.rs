//! PURE: the lowest common denominator of N schemas: a schema that accepts only objects every
//! source accepts (with fieldValidation=Strict), keeping as much as that allows.
//!
//! Symmetric by construction: every combination below is commutative and sets are kept sorted,
//! so the result does not depend on the order of the sources. A field that only some sources
//! know is dropped (and listed); a conflict under an optional field drops that field with the
//! reason; a conflict that reaches a required field or the root means there is no LCD for that
//! version, and the reason is given per path.
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};

use super::json_text::{PrettyJson, push_json_pretty};
use super::model::{
    AdditionalProperties, ApiDef, CelRule, Schema, SchemaNode, push_schema_json, same_schema,
    to_json, version_priority,
};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    pub version: String,
    pub path: String,
    /// The sources whose schema has the field.
    pub sources: Vec<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    /// Empty for conflicts of the API itself.
    pub version: String,
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lcd {
    /// The CRD manifest every source accepts; `None` when there is none (see `conflicts`).
    pub manifest: Option<Manifest>,
    /// The LCD schema per version (also for built-in types, which get no manifest).
    pub schemas: BTreeMap<String, Schema>,
    pub dropped: Vec<Dropped>,
    pub conflicts: Vec<Conflict>,
    /// Things given up that do not change which objects are accepted (differing defaults, ...).
    pub notes: Vec<String>,
}

/// An LCD's CRD manifest. Its schemas, most of its bytes, stay schemas (shared with
/// [`Lcd::schemas`]) and are written straight from them as JSON: building a JSON tree of each
/// only to print it took a tenth of `--lcd`'s time.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The manifest, with `null` for the `schema` of each of `spec.versions`.
    outline: Value,
    /// The schema of each of `spec.versions`, in their order.
    schemas: Vec<Schema>,
}

impl Manifest {
    /// The whole manifest as JSON.
    pub fn to_value(&self) -> Value {
        let mut value = self.outline.clone();
        if let Some(versions) = value
            .pointer_mut("/spec/versions")
            .and_then(Value::as_array_mut)
        {
            for (version, schema) in versions.iter_mut().zip(&self.schemas) {
                version["schema"] = object([("openAPIV3Schema", to_json(schema))]);
            }
        }
        value
    }

    /// Appends what `json_text::push_json_pretty(out, &self.to_value(), level)` would.
    pub fn push_json_pretty(&self, out: &mut Vec<u8>, level: usize) {
        // Each object on the way to the schemas, written member by member, with `at` for the
        // value of each member.
        fn members(
            out: &mut Vec<u8>,
            value: &Value,
            level: usize,
            mut at: impl FnMut(&mut Vec<u8>, &str, &Value),
        ) {
            match value {
                Value::Object(map) => {
                    let mut object = PrettyJson::object(out, level);
                    for (key, member) in map {
                        at(object.key(key), key, member);
                    }
                    object.end();
                }
                other => push_json_pretty(out, other, level),
            }
        }
        let mut schemas = self.schemas.iter();
        members(out, &self.outline, level, |out, key, value| match key {
            "spec" => members(out, value, level + 1, |out, key, value| {
                match (key, value) {
                    ("versions", Value::Array(versions)) => {
                        let mut array = PrettyJson::array(out, level + 2);
                        for version in versions {
                            members(array.item(), version, level + 3, |out, key, value| {
                                if key == "schema"
                                    && let Some(schema) = schemas.next()
                                {
                                    let mut object = PrettyJson::object(out, level + 4);
                                    push_schema_json(
                                        object.key("openAPIV3Schema"),
                                        schema,
                                        level + 5,
                                    );
                                    object.end();
                                } else {
                                    push_json_pretty(out, value, level + 4);
                                }
                            });
                        }
                        array.end();
                    }
                    _ => push_json_pretty(out, value, level + 2),
                }
            }),
            _ => push_json_pretty(out, value, level + 1),
        });
    }
}

impl Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

/// The LCD of one API across all sources (`labels[i]` names `apis[i]`).
pub fn lcd_api(apis: &[Option<&ApiDef>], labels: &[String]) -> Lcd {
    let mut lcd = Lcd {
        manifest: None,
        schemas: BTreeMap::new(),
        dropped: Vec::new(),
        conflicts: Vec::new(),
        notes: Vec::new(),
    };
    let conflict = |lcd: &mut Lcd, reason: String| {
        lcd.conflicts.push(Conflict {
            version: String::new(),
            path: String::new(),
            reason,
        })
    };
    let missing: Vec<&str> = apis
        .iter()
        .zip(labels)
        .filter(|(a, _)| a.is_none())
        .map(|(_, l)| l.as_str())
        .collect();
    if !missing.is_empty() {
        conflict(&mut lcd, format!("not served by {}", missing.join(", ")));
        return lcd;
    }
    let apis: Vec<&ApiDef> = apis.iter().flatten().copied().collect();
    let first = apis[0];
    for (what, get) in [
        (
            "scope",
            (|a: &ApiDef| a.scope.clone()) as fn(&ApiDef) -> String,
        ),
        ("kind", |a| a.kind.clone()),
        ("plural", |a| a.plural.clone()),
    ] {
        let values: BTreeSet<String> = apis.iter().map(|a| get(a)).collect();
        if values.len() > 1 {
            conflict(
                &mut lcd,
                format!(
                    "{what} differs: {}",
                    values.into_iter().collect::<Vec<_>>().join(" vs ")
                ),
            );
        }
    }
    if !lcd.conflicts.is_empty() {
        return lcd;
    }
    let mut versions: Vec<&String> = first
        .versions
        .iter()
        .filter(|(name, v)| {
            v.served
                && apis
                    .iter()
                    .all(|a| a.versions.get(*name).is_some_and(|v| v.served))
        })
        .map(|(name, _)| name)
        .collect();
    versions.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
    if versions.is_empty() {
        conflict(&mut lcd, "no version is served by every source".into());
        return lcd;
    }
    let mut version_manifests = Vec::new();
    let mut manifest_schemas = Vec::new();
    for version in &versions {
        let nodes: Vec<&Schema> = apis.iter().map(|a| &a.versions[*version].schema).collect();
        let mut walk = LcdWalk {
            version: version.to_string(),
            labels,
            dropped: &mut lcd.dropped,
            notes: &mut lcd.notes,
            outer_rules: Vec::new(),
        };
        match walk.node(&nodes, "") {
            Ok(schema) => {
                lcd.schemas.insert(version.to_string(), schema);
            }
            Err(reasons) => {
                for (path, reason) in reasons {
                    lcd.conflicts.push(Conflict {
                        version: version.to_string(),
                        path: if path.is_empty() { ".".into() } else { path },
                        reason,
                    });
                }
            }
        }
    }
    if !lcd.conflicts.is_empty() || first.builtin {
        return lcd;
    }
    // The storage version: the one most sources store in, ties to the highest priority.
    let storage = versions
        .iter()
        .max_by_key(|v| {
            (
                apis.iter()
                    .filter(|a| a.storage_version() == Some(v.as_str()))
                    .count(),
                version_priority(v),
            )
        })
        .map(|v| v.to_string())
        .unwrap_or_default();
    for version in &versions {
        let defs: Vec<&super::model::VersionDef> =
            apis.iter().map(|a| &a.versions[*version]).collect();
        let mut v = serde_json::Map::new();
        v.insert("name".into(), json!(version));
        v.insert("served".into(), json!(true));
        v.insert("storage".into(), json!(**version == storage));
        if defs.iter().all(|d| d.deprecated) {
            v.insert("deprecated".into(), json!(true));
        }
        // Filled in by `Manifest`.
        v.insert("schema".into(), Value::Null);
        manifest_schemas.push(lcd.schemas[version.as_str()].clone());
        let subresources = &defs[0].subresources;
        if defs.iter().all(|d| &d.subresources == subresources) {
            if !subresources.is_null() {
                v.insert("subresources".into(), subresources.clone());
            }
        } else {
            lcd.notes.push(format!(
                "{version}: subresources differ between sources; the LCD has none"
            ));
        }
        let columns = common(defs.iter().map(|d| &d.printer_columns));
        if !columns.is_empty() {
            v.insert("additionalPrinterColumns".into(), Value::Array(columns));
        }
        let fields: Vec<Value> = common(defs.iter().map(|d| &d.selectable_fields))
            .into_iter()
            .filter(|f| {
                f.get("jsonPath")
                    .and_then(Value::as_str)
                    .is_some_and(|p| path_exists(&lcd.schemas[version.as_str()], p))
            })
            .collect();
        if !fields.is_empty() {
            v.insert("selectableFields".into(), Value::Array(fields));
        }
        version_manifests.push(Value::Object(v));
    }
    if apis
        .iter()
        .any(|a| a.conversion.as_deref() == Some("Webhook"))
    {
        lcd.notes
            .push("a source converts through a webhook; the LCD uses strategy None".into());
    }
    let mut names = serde_json::Map::new();
    names.insert("kind".into(), json!(first.kind));
    names.insert("plural".into(), json!(first.plural));
    for (key, get) in [
        (
            "singular",
            (|a: &ApiDef| a.singular.clone()) as fn(&ApiDef) -> Option<String>,
        ),
        ("listKind", |a| a.list_kind.clone()),
    ] {
        let values: BTreeSet<Option<String>> = apis.iter().map(|a| get(a)).collect();
        if let [Some(v)] = values.into_iter().collect::<Vec<_>>().as_slice() {
            names.insert(key.into(), json!(v));
        }
    }
    for (key, get) in [
        (
            "shortNames",
            (|a: &ApiDef| &a.short_names) as fn(&ApiDef) -> &BTreeSet<String>,
        ),
        ("categories", |a| &a.categories),
    ] {
        let shared: Vec<&String> = get(first)
            .iter()
            .filter(|s| apis.iter().all(|a| get(a).contains(*s)))
            .collect();
        if !shared.is_empty() {
            names.insert(key.into(), json!(shared));
        }
    }
    let mut annotations = serde_json::Map::new();
    annotations.insert("kubectl-migrate.io/lcd-of".into(), json!(labels.join(", ")));
    // Groups under k8s.io and kubernetes.io need it, or the API server rejects the CRD.
    if let Some(approved) = apis.iter().filter_map(|a| a.api_approved.as_ref()).min() {
        annotations.insert("api-approved.kubernetes.io".into(), json!(approved));
    }
    // Built by moving the parts in: `json!` would copy each of them whole.
    let outline = object([
        ("apiVersion", json!("apiextensions.k8s.io/v1")),
        ("kind", json!("CustomResourceDefinition")),
        (
            "metadata",
            object([
                ("name", json!(first.name)),
                ("annotations", Value::Object(annotations)),
            ]),
        ),
        (
            "spec",
            object([
                ("group", json!(first.group)),
                ("scope", json!(first.scope)),
                ("names", Value::Object(names)),
                ("versions", Value::Array(version_manifests)),
            ]),
        ),
    ]);
    lcd.manifest = Some(Manifest {
        outline,
        schemas: manifest_schemas,
    });
    lcd
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Entries present in every list (by equality), in the first list's order.
fn common<'a>(mut lists: impl Iterator<Item = &'a Vec<Value>>) -> Vec<Value> {
    let Some(first) = lists.next() else {
        return Vec::new();
    };
    let rest: Vec<&Vec<Value>> = lists.collect();
    first
        .iter()
        .filter(|v| rest.iter().all(|l| l.contains(v)))
        .cloned()
        .collect()
}

/// The patterns a value must match everywhere, without those implied by another: a pattern
/// that accepts every string a narrower one accepts adds nothing (of patterns accepting the
/// same strings, the first is kept). Patterns that cannot be compared are all kept.
fn narrowest(patterns: BTreeSet<&String>) -> Vec<&String> {
    use super::pattern::{Comparison, compare};
    let all: Vec<&String> = patterns.into_iter().collect();
    let implied = |i: usize| {
        all.iter().enumerate().any(|(j, other)| {
            j != i
                && match compare(all[i], other) {
                    Comparison::Narrowed { .. } => true,
                    Comparison::Equal => j < i,
                    _ => false,
                }
        })
    };
    (0..all.len())
        .filter(|&i| !implied(i))
        .map(|i| all[i])
        .collect()
}

/// Whether a simple `.a.b` JSON path names a field of the schema.
fn path_exists(schema: &Schema, path: &str) -> bool {
    let mut node = schema;
    for part in path.trim_start_matches('.').split('.') {
        match node.properties.get(part) {
            Some(n) => node = n,
            None => return false,
        }
    }
    true
}

type Reasons = Vec<(String, String)>;

struct LcdWalk<'a> {
    version: String,
    labels: &'a [String],
    dropped: &'a mut Vec<Dropped>,
    notes: &'a mut Vec<String>,
    /// The CEL rules of the enclosing nodes: they can name fields further down
    /// (`self.jobs.exists(j, has(j.after))`).
    outer_rules: Vec<String>,
}

/// What a source says about one property name: its own schema, "anything" (it keeps unknown
/// fields), or nothing (the field would be rejected).
enum Slot<'s> {
    Schema(&'s Schema),
    Anything,
    Unknown,
}

/// The labels of the sources whose slot is `wanted`.
fn labels_where<'l>(
    slots: &[Slot<'_>],
    labels: &'l [String],
    wanted: impl Fn(&Slot<'_>) -> bool,
) -> impl Iterator<Item = &'l String> {
    slots
        .iter()
        .zip(labels)
        .filter(move |(s, _)| wanted(s))
        .map(|(_, l)| l)
}

fn slot<'s>(parent: &'s Schema, name: &str) -> Slot<'s> {
    if let Some(s) = parent.properties.get(name) {
        Slot::Schema(s)
    } else if let Some(values) = parent.map_values() {
        Slot::Schema(values)
    } else if parent.keeps_unknown_fields() {
        Slot::Anything
    } else {
        Slot::Unknown
    }
}

/// Whether merging `s` with copies of itself gives `s` back: merging sorts enum values and CEL
/// rules, moves value validations (allOf, anyOf, oneOf, not) under allOf, drops required names
/// that are not properties and requires map-list keys without a default, so a node that needs
/// none of that, all the way down, is its own LCD. (Tests check this against `merge`.)
fn merge_keeps(s: &Schema) -> bool {
    let enum_sorted = s.enum_values.as_ref().is_none_or(|values| {
        values
            .windows(2)
            .all(|w| w[0].to_string().cmp(&w[1].to_string()).is_lt())
    });
    let rules_sorted = s.validations.windows(2).all(|w| w[0].key() < w[1].key());
    let required_declared =
        s.keeps_unknown_fields() || s.required.iter().all(|r| s.properties.contains_key(r));
    // Merging requires a map list's keys that have no default (built-in types have some).
    let map_keys_settled = s.list_type.as_deref() != Some("map")
        || s.items.as_ref().is_none_or(|items| {
            s.list_map_keys.iter().all(|key| {
                items
                    .properties
                    .get(key)
                    .is_none_or(|k| k.default.is_some())
                    || items.is_required(key)
            })
        });
    enum_sorted
        && rules_sorted
        && required_declared
        && map_keys_settled
        && s.all_of.is_empty()
        && s.any_of.is_empty()
        && s.one_of.is_empty()
        && s.not.is_none()
        && s.properties.values().all(merge_keeps)
        && s.items.as_ref().is_none_or(merge_keeps)
        && match &s.additional_properties {
            Some(AdditionalProperties::Schema(a)) => merge_keeps(a),
            _ => true,
        }
}

impl LcdWalk<'_> {
    fn node(&mut self, nodes: &[&Schema], path: &str) -> Result<Schema, Reasons> {
        // What every source has alike is its own LCD, with nothing dropped, where merging would
        // not reorder it: most of a large comparison is such subtrees.
        if let [first, rest @ ..] = nodes
            && rest.iter().all(|n| same_schema(n, first))
            && merge_keeps(first)
        {
            return Ok((*first).clone());
        }
        self.merge(nodes, path)
    }

    /// The LCD of `nodes`, attribute by attribute; children go through [`LcdWalk::node`].
    fn merge(&mut self, nodes: &[&Schema], path: &str) -> Result<Schema, Reasons> {
        let mut out = SchemaNode::default();
        let mut reasons: Reasons = Vec::new();
        let mut fail = |reason: String| reasons.push((path.to_string(), reason));
        let describe = |f: &dyn Fn(&Schema) -> String| -> String {
            nodes
                .iter()
                .zip(self.labels)
                .map(|(n, l)| format!("{} in {l}", f(n)))
                .collect::<Vec<_>>()
                .join(", ")
        };

        // Type. Nodes typed only by "preserve unknown fields" accept any type.
        let typed: Vec<&&Schema> = nodes
            .iter()
            .filter(|n| n.type_.is_some() || n.int_or_string)
            .collect();
        let types: BTreeSet<String> = typed.iter().map(|n| n.type_name()).collect();
        let kinds: Vec<&str> = types.iter().map(String::as_str).collect();
        match kinds.as_slice() {
            [] => {}
            [one] if *one == "int-or-string" => out.int_or_string = true,
            [one] => out.type_ = Some(one.to_string()),
            _ => {
                let mut set: BTreeSet<&str> = kinds.iter().copied().collect();
                set.remove("int-or-string");
                let narrowed = match set.into_iter().collect::<Vec<_>>().as_slice() {
                    ["integer", "number"] | ["integer"] => Some("integer"),
                    ["string"] => Some("string"),
                    _ => None,
                };
                match narrowed {
                    Some(t) => out.type_ = Some(t.into()),
                    None => fail(format!("type conflict: {}", describe(&|n| n.type_name()))),
                }
            }
        }
        // Nodes that accept anything do not constrain the rest.
        let constraining: Vec<&Schema> = nodes
            .iter()
            .copied()
            .filter(|n| {
                !(n.type_.is_none()
                    && !n.int_or_string
                    && n.preserve_unknown_fields
                    && n.properties.is_empty())
            })
            .collect();
        let nodes: &[&Schema] = if constraining.is_empty() {
            nodes
        } else {
            &constraining
        };
        out.preserve_unknown_fields = nodes.iter().all(|n| n.preserve_unknown_fields);
        out.nullable = nodes.iter().all(|n| n.nullable);
        out.unique_items = nodes.iter().any(|n| n.unique_items);
        let embedded: BTreeSet<bool> = nodes.iter().map(|n| n.embedded_resource).collect();
        if embedded.len() > 1 {
            fail("x-kubernetes-embedded-resource differs".into());
        }
        out.embedded_resource = nodes.iter().any(|n| n.embedded_resource);
        out.title = agreed(nodes, |n| n.title.clone()).flatten();
        // Descriptions differ in wording all the time; keep one (the smallest, for symmetry).
        out.description = nodes.iter().filter_map(|n| n.description.clone()).min();
        match agreed(nodes, |n| n.default.clone()) {
            Some(d) => out.default = d,
            None => self.notes.push(format!(
                "{}: {}: defaults differ; the LCD has none",
                self.version,
                display(path)
            )),
        }
        // enum: the intersection.
        let enums: Vec<&Vec<Value>> = nodes
            .iter()
            .filter_map(|n| n.enum_values.as_ref())
            .collect();
        if !enums.is_empty() {
            let mut values: Vec<Value> = enums[0]
                .iter()
                .filter(|v| enums.iter().all(|e| e.contains(v)))
                .cloned()
                .collect();
            values.sort_by_key(ToString::to_string);
            values.dedup();
            if values.is_empty() {
                fail(format!(
                    "no enum value is allowed everywhere: {}",
                    describe(&|n| {
                        n.enum_values
                            .as_ref()
                            .map(|e| Value::from(e.clone()).to_string())
                            .unwrap_or_else(|| "any".into())
                    })
                ));
            }
            out.enum_values = Some(values);
        }
        // Length/count bounds: the tightest of each.
        type Count = fn(&Schema) -> Option<u64>;
        let max_of = |get: Count| nodes.iter().filter_map(|n| get(n)).max();
        let min_of = |get: Count| nodes.iter().filter_map(|n| get(n)).min();
        out.max_length = min_of(|n| n.max_length);
        out.min_length = max_of(|n| n.min_length);
        out.max_items = min_of(|n| n.max_items);
        out.min_items = max_of(|n| n.min_items);
        out.max_properties = min_of(|n| n.max_properties);
        out.min_properties = max_of(|n| n.min_properties);
        for (what, lo, hi) in [
            ("length", out.min_length, out.max_length),
            ("items", out.min_items, out.max_items),
            ("properties", out.min_properties, out.max_properties),
        ] {
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo > hi
            {
                fail(format!(
                    "no {what} count is allowed everywhere (at least {lo}, at most {hi})"
                ));
            }
        }
        // Numeric bounds: the smallest maximum (exclusive wins a tie) and the largest minimum.
        let maxima: Vec<(f64, bool)> = nodes
            .iter()
            .filter_map(|n| n.maximum.map(|m| (m, n.exclusive_maximum)))
            .collect();
        if let Some(&(m, _)) = maxima.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
            out.maximum = Some(m);
            out.exclusive_maximum = maxima.iter().any(|&(v, e)| v == m && e);
        }
        let minima: Vec<(f64, bool)> = nodes
            .iter()
            .filter_map(|n| n.minimum.map(|m| (m, n.exclusive_minimum)))
            .collect();
        if let Some(&(m, _)) = minima.iter().max_by(|a, b| a.0.total_cmp(&b.0)) {
            out.minimum = Some(m);
            out.exclusive_minimum = minima.iter().any(|&(v, e)| v == m && e);
        }
        if let (Some(lo), Some(hi)) = (out.minimum, out.maximum)
            && (lo > hi || (lo == hi && (out.exclusive_minimum || out.exclusive_maximum)))
        {
            fail(format!(
                "no number is allowed everywhere (minimum {lo}, maximum {hi})"
            ));
        }
        // Constraints that cannot be merged into one keyword go into allOf.
        let mut extra: Vec<Schema> = Vec::new();
        let patterns: BTreeSet<&String> = nodes.iter().filter_map(|n| n.pattern.as_ref()).collect();
        let mut patterns = narrowest(patterns).into_iter();
        out.pattern = patterns.next().cloned();
        extra.extend(patterns.map(|p| {
            SchemaNode {
                pattern: Some(p.clone()),
                ..SchemaNode::default()
            }
            .into()
        }));
        let formats: BTreeSet<&String> = nodes.iter().filter_map(|n| n.format.as_ref()).collect();
        let mut formats = formats.into_iter();
        out.format = formats.next().cloned();
        extra.extend(formats.map(|f| {
            SchemaNode {
                format: Some(f.clone()),
                ..SchemaNode::default()
            }
            .into()
        }));
        let multiples: Vec<f64> = {
            let mut m: Vec<f64> = nodes.iter().filter_map(|n| n.multiple_of).collect();
            m.sort_by(f64::total_cmp);
            m.dedup();
            // A multiple of a larger step is a multiple of its divisors: keep only the steps no
            // other step is a multiple of.
            m.iter()
                .copied()
                .filter(|x| !m.iter().any(|y| y != x && (y / x).fract() == 0.0))
                .collect()
        };
        let mut multiples = multiples.into_iter();
        out.multiple_of = multiples.next();
        extra.extend(multiples.map(|m| {
            SchemaNode {
                multiple_of: Some(m),
                ..SchemaNode::default()
            }
            .into()
        }));
        // Value validations: every source's, all of them.
        let mut junctions: Vec<Schema> = Vec::new();
        for n in nodes {
            junctions.extend(n.all_of.iter().cloned());
            if !n.any_of.is_empty() {
                junctions.push(
                    SchemaNode {
                        any_of: n.any_of.clone(),
                        ..SchemaNode::default()
                    }
                    .into(),
                );
            }
            if !n.one_of.is_empty() {
                junctions.push(
                    SchemaNode {
                        one_of: n.one_of.clone(),
                        ..SchemaNode::default()
                    }
                    .into(),
                );
            }
            if let Some(not) = &n.not {
                junctions.push(
                    SchemaNode {
                        not: Some(not.clone()),
                        ..SchemaNode::default()
                    }
                    .into(),
                );
            }
        }
        junctions.extend(extra);
        let mut keyed: BTreeMap<String, Schema> = BTreeMap::new();
        for j in junctions {
            keyed.insert(to_json(&j).to_string(), j);
        }
        out.all_of = keyed.into_values().collect();
        // CEL rules: all of them (deduplicated by expression).
        let mut rules: BTreeMap<String, CelRule> = BTreeMap::new();
        for r in nodes.iter().flat_map(|n| n.validations.iter()) {
            rules
                .entry(r.key())
                .and_modify(|kept| {
                    if r < kept {
                        *kept = r.clone()
                    }
                })
                .or_insert_with(|| r.clone());
        }
        out.validations = rules.into_values().collect();
        // List semantics: set and map are stricter than atomic; they must agree with each other.
        let list_types: BTreeSet<&str> = nodes
            .iter()
            .filter(|n| n.type_.as_deref() == Some("array"))
            .map(|n| n.list_type.as_deref().unwrap_or("atomic"))
            .collect();
        let strict: Vec<&str> = list_types
            .iter()
            .copied()
            .filter(|t| *t != "atomic")
            .collect();
        match strict.as_slice() {
            [] => out.list_type = agreed(nodes, |n| n.list_type.clone()).flatten(),
            [one] => out.list_type = Some(one.to_string()),
            _ => fail(format!(
                "x-kubernetes-list-type conflict: {}",
                describe(&|n| n.list_type.clone().unwrap_or_else(|| "atomic".into()))
            )),
        }
        let keys: BTreeSet<&Vec<String>> = nodes
            .iter()
            .filter(|n| !n.list_map_keys.is_empty())
            .map(|n| &n.list_map_keys)
            .collect();
        if keys.len() > 1 {
            fail(format!(
                "x-kubernetes-list-map-keys differ: {}",
                describe(&|n| n.list_map_keys.join(","))
            ));
        }
        out.list_map_keys = keys.into_iter().next().cloned().unwrap_or_default();
        // map-type only changes how apply merges; any common choice accepts the same objects.
        out.map_type = nodes.iter().filter_map(|n| n.map_type.clone()).min();
        out.extensions = agreed(nodes, |n| n.extensions.clone()).unwrap_or_default();

        let outer_rules = self.outer_rules.len();
        self.outer_rules.extend(
            nodes
                .iter()
                .flat_map(|n| n.validations.iter().map(CelRule::key)),
        );
        // Array items.
        let items: Vec<&Schema> = nodes.iter().filter_map(|n| n.items.as_ref()).collect();
        if !items.is_empty() {
            match self.node(&items, &format!("{path}[*]")) {
                Ok(i) => out.items = Some(i),
                Err(r) => reasons.extend(r),
            }
        }
        // Object fields and map values; required names too, declared or not.
        let object_like = nodes.iter().any(|n| {
            !n.properties.is_empty() || n.additional_properties.is_some() || !n.required.is_empty()
        });
        if object_like {
            let all_maps = nodes.iter().all(|n| n.map_values().is_some());
            if all_maps {
                let values: Vec<&Schema> = nodes.iter().filter_map(|n| n.map_values()).collect();
                match self.node(&values, &format!("{path}.*")) {
                    Ok(v) => out.additional_properties = Some(AdditionalProperties::Schema(v)),
                    Err(r) => reasons.extend(r),
                }
            } else if nodes.iter().all(|n| {
                matches!(
                    n.additional_properties,
                    Some(AdditionalProperties::Allowed(true))
                )
            }) {
                out.additional_properties = Some(AdditionalProperties::Allowed(true));
            }
            let required: BTreeSet<&String> =
                nodes.iter().flat_map(|n| n.required.iter()).collect();
            let mut names: BTreeSet<&String> =
                nodes.iter().flat_map(|n| n.properties.keys()).collect();
            if !all_maps {
                names.extend(required.iter().copied());
            }
            for name in names {
                // This runs for every property of every API: the path is built without
                // `format!`, and the sources' labels are collected only for a dropped field.
                let mut child_path = String::with_capacity(path.len() + 1 + name.len());
                child_path.push_str(path);
                child_path.push('.');
                child_path.push_str(name);
                let slots: Vec<Slot> = nodes.iter().map(|n| slot(n, name)).collect();
                // A required name no source declares, where every source keeps unknown fields:
                // nothing to merge (it stays required below, as an unknown field).
                if slots.iter().all(|s| matches!(s, Slot::Anything)) {
                    continue;
                }
                let is_required = required.contains(name);
                let outcome = if slots.iter().any(|s| matches!(s, Slot::Unknown)) {
                    let unknown_in: Vec<&str> =
                        labels_where(&slots, self.labels, |s| matches!(s, Slot::Unknown))
                            .map(String::as_str)
                            .collect();
                    Err(vec![(
                        child_path.clone(),
                        format!("not a field in {}", unknown_in.join(", ")),
                    )])
                } else {
                    let schemas: Vec<&Schema> = slots
                        .iter()
                        .filter_map(|s| match s {
                            Slot::Schema(s) => Some(*s),
                            _ => None,
                        })
                        .collect();
                    self.node(&schemas, &child_path)
                };
                match outcome {
                    Ok(child) => {
                        if !all_maps {
                            out.properties.insert(name.clone(), child);
                        }
                    }
                    Err(child_reasons) if !is_required => {
                        let mut reason = child_reasons
                            .iter()
                            .map(|(p, r)| {
                                if p == &child_path {
                                    r.clone()
                                } else {
                                    format!("{}: {r}", display(p))
                                }
                            })
                            .collect::<Vec<_>>()
                            .join("; ");
                        let kept_because = match rule_mentions(nodes, &self.outer_rules, name) {
                            // A rule names the field, so it must stay declared for the rule to
                            // compile: keep one source's declaration, made unsettable.
                            Some(rule) if !all_maps => Some(format!("a rule refers to it: {rule}")),
                            Some(rule) => {
                                reasons.push((
                                    child_path.clone(),
                                    format!("cannot drop the key: a rule refers to it ({rule})"),
                                ));
                                None
                            }
                            // Undeclared, the field would be one of the unknown fields kept
                            // here, which take any value.
                            None if !all_maps && out.keeps_unknown_fields() => {
                                Some("unknown fields are kept there".to_string())
                            }
                            None => None,
                        };
                        if let Some(because) = kept_because {
                            let mut kept = slots
                                .iter()
                                .filter_map(|s| match s {
                                    Slot::Schema(s) => Some(*s),
                                    _ => None,
                                })
                                .min_by_key(|s| to_json(s).to_string())
                                .cloned()
                                .unwrap_or_default();
                            // CEL rules do not run on null.
                            kept.nullable = false;
                            kept.validations = vec![CelRule {
                                rule: "false".into(),
                                message: Some(format!(
                                    "{} is not settable: not every cluster accepts it",
                                    display(&child_path)
                                )),
                                message_expression: None,
                                reason: None,
                                field_path: None,
                                optional_old_self: None,
                            }];
                            out.properties.insert(name.clone(), kept);
                            reason +=
                                &format!(" (kept declared but unsettable, because {because})");
                        }
                        let having =
                            labels_where(&slots, self.labels, |s| matches!(s, Slot::Schema(_)))
                                .cloned()
                                .collect();
                        self.dropped.push(Dropped {
                            version: self.version.clone(),
                            path: child_path.clone(),
                            sources: having,
                            reason,
                        });
                    }
                    Err(child_reasons) => {
                        reasons.extend(child_reasons);
                        reasons.push((
                            child_path.clone(),
                            "required, so it cannot be dropped".into(),
                        ));
                    }
                }
            }
            if !all_maps {
                out.required = required
                    .into_iter()
                    .filter(|r| out.properties.contains_key(*r) || out.keeps_unknown_fields())
                    .cloned()
                    .collect();
            }
        }
        self.outer_rules.truncate(outer_rules);
        // The API server wants every key of a map list required or defaulted. Where the
        // sources' defaults differ the LCD has none, so it requires the key instead.
        if out.list_type.as_deref() == Some("map")
            && let Some(items) = out.items.as_mut()
        {
            for key in &out.list_map_keys {
                if items
                    .properties
                    .get(key)
                    .is_some_and(|k| k.default.is_none())
                    && !items.is_required(key)
                {
                    items.required.push(key.clone());
                    items.required.sort();
                    self.notes.push(format!(
                        "{}: {}[*].{key}: a key of a map list needs a default, and the sources' defaults differ; the LCD requires it",
                        self.version,
                        display(path)
                    ));
                }
            }
        }
        if reasons.is_empty() {
            Ok(out.into())
        } else {
            Err(reasons)
        }
    }
}

/// A CEL rule or value validation on these nodes that names the field (or a rule of an
/// enclosing node that may): dropping the field would make the CRD invalid (the rule would not
/// compile), and dropping the rule would accept objects the source rejects.
fn rule_mentions(nodes: &[&Schema], outer_rules: &[String], name: &str) -> Option<String> {
    let needle = format!(".{name}");
    let own = nodes
        .iter()
        .flat_map(|n| n.validations.iter().map(CelRule::key));
    for text in own.chain(outer_rules.iter().cloned()) {
        if text.match_indices(&needle).any(|(i, _)| {
            let after = text[i + needle.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        }) {
            return Some(text);
        }
    }
    for n in nodes {
        let junctions = n
            .all_of
            .iter()
            .chain(&n.any_of)
            .chain(&n.one_of)
            .chain(n.not.as_ref());
        for j in junctions {
            if mentions_property(j, name) {
                return Some(format!("allOf/anyOf/oneOf/not mentions {name}"));
            }
        }
    }
    None
}

fn mentions_property(s: &Schema, name: &str) -> bool {
    s.properties.contains_key(name)
        || s.required.iter().any(|r| r == name)
        || s.all_of
            .iter()
            .chain(&s.any_of)
            .chain(&s.one_of)
            .chain(s.not.as_ref())
            .any(|j| mentions_property(j, name))
}

/// The common value when every node agrees, else `None`.
fn agreed<T: PartialEq>(nodes: &[&Schema], get: impl Fn(&Schema) -> T) -> Option<T> {
    let first = get(nodes[0]);
    nodes[1..].iter().all(|n| get(n) == first).then_some(first)
}

fn display(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

#[cfg(test)]
mod tests;
