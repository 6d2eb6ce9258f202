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
use serde_json::Value;

use super::model::{
    AdditionalProperties, ApiDef, CelRule, RareKeywords, Schema, SchemaNode, same_schema,
    version_priority,
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

/// An LCD's CRD manifest, as serde writes it. Its schemas, most of its bytes, stay schemas
/// (shared with [`Lcd::schemas`]) and are written straight from the model: building a JSON tree
/// of each only to print it took a tenth of `--lcd`'s time. Members are declared in the order
/// of their names, so that the JSON comes out sorted, as a `serde_json` map has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Metadata {
    annotations: BTreeMap<String, String>,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Spec {
    group: String,
    names: Names,
    scope: String,
    versions: Vec<VersionManifest>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Names {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    categories: Vec<String>,
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    list_kind: Option<String>,
    plural: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    short_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    singular: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionManifest {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    additional_printer_columns: Vec<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deprecated: bool,
    name: String,
    schema: VersionSchema,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    selectable_fields: Vec<Value>,
    served: bool,
    storage: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    subresources: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct VersionSchema {
    #[serde(rename = "openAPIV3Schema")]
    open_api_v3_schema: Schema,
}

impl Manifest {
    /// The whole manifest as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a manifest is JSON")
    }

    /// The manifest as a YAML document, as `--lcd-dir` files and the controller's ConfigMap
    /// hold it.
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(&self.to_value()).expect("JSON values are YAML")
    }

    /// Appends the manifest as `serde_json::to_writer_pretty` writes it, as if nested `level`
    /// deep (two spaces a level) in pretty JSON around it, as a `List`'s items are: written at
    /// the top, then indented after each line break (a pretty printer writes line breaks only
    /// between tokens; inside strings they are escaped).
    pub fn push_json_pretty(&self, out: &mut Vec<u8>, level: usize) {
        if level == 0 {
            serde_json::to_writer_pretty(out, self).expect("writing to memory");
            return;
        }
        thread_local! {
            static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        TEXT.with_borrow_mut(|text| {
            text.clear();
            serde_json::to_writer_pretty(&mut *text, self).expect("writing to memory");
            let indent = vec![b' '; 2 * level];
            let mut from = 0;
            for at in memchr::memchr_iter(b'\n', text) {
                out.extend_from_slice(&text[from..=at]);
                out.extend_from_slice(&indent);
                from = at + 1;
            }
            out.extend_from_slice(&text[from..]);
        });
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
    let mut version_manifests = Vec::new();
    for version in &versions {
        let defs: Vec<&super::model::VersionDef> =
            apis.iter().map(|a| &a.versions[*version]).collect();
        let schema = &lcd.schemas[version.as_str()];
        let subresources = &defs[0].subresources;
        let same_subresources = defs.iter().all(|d| &d.subresources == subresources);
        if !same_subresources {
            lcd.notes.push(format!(
                "{version}: subresources differ between sources; the LCD has none"
            ));
        }
        version_manifests.push(VersionManifest {
            additional_printer_columns: common(defs.iter().map(|d| &d.printer_columns)),
            deprecated: defs.iter().all(|d| d.deprecated),
            name: version.to_string(),
            schema: VersionSchema {
                open_api_v3_schema: schema.clone(),
            },
            selectable_fields: common(defs.iter().map(|d| &d.selectable_fields))
                .into_iter()
                .filter(|f| {
                    f.get("jsonPath")
                        .and_then(Value::as_str)
                        .is_some_and(|p| path_exists(schema, p))
                })
                .collect(),
            served: true,
            storage: **version == storage,
            subresources: (same_subresources && !subresources.is_null())
                .then(|| subresources.clone()),
        });
    }
    if apis
        .iter()
        .any(|a| a.conversion.as_deref() == Some("Webhook"))
    {
        lcd.notes
            .push("a source converts through a webhook; the LCD uses strategy None".into());
    }
    // A name all sources agree on, and the short names and categories all of them have.
    let agreed_name = |get: fn(&ApiDef) -> &Option<String>| {
        let values: BTreeSet<&Option<String>> = apis.iter().map(|a| get(a)).collect();
        match values.into_iter().collect::<Vec<_>>().as_slice() {
            [Some(v)] => Some(v.clone()),
            _ => None,
        }
    };
    let shared = |get: fn(&ApiDef) -> &BTreeSet<String>| -> Vec<String> {
        get(first)
            .iter()
            .filter(|s| apis.iter().all(|a| get(a).contains(*s)))
            .cloned()
            .collect()
    };
    let mut annotations = BTreeMap::new();
    annotations.insert("kubectl-migrate.io/lcd-of".into(), labels.join(", "));
    // Groups under k8s.io and kubernetes.io need it, or the API server rejects the CRD.
    if let Some(approved) = apis.iter().filter_map(|a| a.api_approved.as_ref()).min() {
        annotations.insert("api-approved.kubernetes.io".into(), approved.clone());
    }
    lcd.manifest = Some(Manifest {
        api_version: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: Metadata {
            annotations,
            name: first.name.clone(),
        },
        spec: Spec {
            group: first.group.clone(),
            names: Names {
                categories: shared(|a| &a.categories),
                kind: first.kind.clone(),
                list_kind: agreed_name(|a| &a.list_kind),
                plural: first.plural.clone(),
                short_names: shared(|a| &a.short_names),
                singular: agreed_name(|a| &a.singular),
            },
            scope: first.scope.clone(),
            versions: version_manifests,
        },
    });
    lcd
}

/// A schema as compact JSON: an order for schemas that does not depend on the sources' order.
fn json_text(schema: &Schema) -> String {
    serde_json::to_string(schema).expect("a schema is JSON")
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

    /// The LCD of `nodes`, keyword by keyword; children go through [`LcdWalk::node`].
    fn merge(&mut self, nodes: &[&Schema], path: &str) -> Result<Schema, Reasons> {
        let mut out = SchemaNode::default();
        let mut conflicts = Vec::new();
        let sources = Sources {
            nodes,
            labels: self.labels,
        };
        merge_type(&sources, &mut out, &mut conflicts);
        let nodes = &constraining(nodes);
        merge_flags_and_texts(nodes, &mut out, &mut conflicts);
        match agreed(nodes, |n| n.default.clone()) {
            Some(d) => out.default = d,
            None => self.notes.push(format!(
                "{}: {}: defaults differ; the LCD has none",
                self.version,
                display(path)
            )),
        }
        merge_enum(&sources, nodes, &mut out, &mut conflicts);
        merge_counts(nodes, &mut out, &mut conflicts);
        merge_numeric_bounds(nodes, &mut out, &mut conflicts);
        merge_value_validations(nodes, &mut out);
        merge_rules(nodes, &mut out);
        merge_list_and_map_semantics(&sources, nodes, &mut out, &mut conflicts);
        let mut reasons: Reasons = conflicts
            .into_iter()
            .map(|reason| (path.to_string(), reason))
            .collect();

        let outer_rules = self.outer_rules.len();
        self.outer_rules.extend(
            nodes
                .iter()
                .flat_map(|n| n.validations.iter().map(CelRule::key)),
        );
        self.merge_items(nodes, path, &mut out, &mut reasons);
        self.merge_fields(nodes, path, &mut out, &mut reasons);
        self.outer_rules.truncate(outer_rules);
        self.require_map_list_keys(path, &mut out);
        if reasons.is_empty() {
            Ok(out.into())
        } else {
            Err(reasons)
        }
    }

    /// Array items: the LCD of every source's.
    fn merge_items(
        &mut self,
        nodes: &[&Schema],
        path: &str,
        out: &mut SchemaNode,
        reasons: &mut Reasons,
    ) {
        let items: Vec<&Schema> = nodes.iter().filter_map(|n| n.items.as_ref()).collect();
        if !items.is_empty() {
            match self.node(&items, &format!("{path}[*]")) {
                Ok(i) => out.items = Some(i),
                Err(r) => reasons.extend(r),
            }
        }
    }

    /// Object fields and map values; required names too, declared or not. A field not every
    /// source accepts is dropped where it may be; see [`LcdWalk::merge_field`].
    fn merge_fields(
        &mut self,
        nodes: &[&Schema],
        path: &str,
        out: &mut SchemaNode,
        reasons: &mut Reasons,
    ) {
        let object_like = nodes.iter().any(|n| {
            !n.properties.is_empty() || n.additional_properties.is_some() || !n.required.is_empty()
        });
        if !object_like {
            return;
        }
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
        let required: BTreeSet<&String> = nodes.iter().flat_map(|n| n.required.iter()).collect();
        let mut names: BTreeSet<&String> = nodes.iter().flat_map(|n| n.properties.keys()).collect();
        if !all_maps {
            names.extend(required.iter().copied());
        }
        for name in names {
            let field = Field {
                name,
                required: required.contains(name),
                in_map: all_maps,
            };
            self.merge_field(nodes, path, &field, out, reasons);
        }
        if !all_maps {
            out.required = required
                .into_iter()
                .filter(|r| out.properties.contains_key(*r) || out.keeps_unknown_fields())
                .cloned()
                .collect();
        }
    }

    /// One field (or, in a map, one key a source names): its LCD, or it is dropped, kept
    /// declared but unsettable, or there is no LCD.
    fn merge_field(
        &mut self,
        nodes: &[&Schema],
        path: &str,
        field: &Field<'_>,
        out: &mut SchemaNode,
        reasons: &mut Reasons,
    ) {
        let name = field.name;
        // This runs for every property of every API: the path is built without `format!`, and
        // the sources' labels are collected only for a dropped field.
        let mut child_path = String::with_capacity(path.len() + 1 + name.len());
        child_path.push_str(path);
        child_path.push('.');
        child_path.push_str(name);
        let slots: Vec<Slot> = nodes.iter().map(|n| slot(n, name)).collect();
        // A required name no source declares, where every source keeps unknown fields: nothing
        // to merge (it stays required, as an unknown field).
        if slots.iter().all(|s| matches!(s, Slot::Anything)) {
            return;
        }
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
            self.node(&schemas_of(&slots), &child_path)
        };
        match outcome {
            Ok(child) => {
                if !field.in_map {
                    out.properties.insert(name.clone(), child);
                }
            }
            Err(child_reasons) if !field.required => self.drop_field(
                nodes,
                &child_path,
                field,
                &slots,
                child_reasons,
                out,
                reasons,
            ),
            Err(child_reasons) => {
                reasons.extend(child_reasons);
                reasons.push((child_path, "required, so it cannot be dropped".into()));
            }
        }
    }

    /// An optional field not every source accepts: dropped (and listed), or kept declared but
    /// unsettable where dropping it would accept more (a rule names it, or unknown fields are
    /// kept there), or, for a map key a rule names, no LCD.
    #[allow(clippy::too_many_arguments)]
    fn drop_field(
        &mut self,
        nodes: &[&Schema],
        child_path: &str,
        field: &Field<'_>,
        slots: &[Slot<'_>],
        child_reasons: Reasons,
        out: &mut SchemaNode,
        reasons: &mut Reasons,
    ) {
        let mut reason = child_reasons
            .iter()
            .map(|(p, r)| {
                if p == child_path {
                    r.clone()
                } else {
                    format!("{}: {r}", display(p))
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let kept_because = match rule_mentions(nodes, &self.outer_rules, field.name) {
            // A rule names the field, so it must stay declared for the rule to compile: keep
            // one source's declaration, made unsettable.
            Some(rule) if !field.in_map => Some(format!("a rule refers to it: {rule}")),
            Some(rule) => {
                reasons.push((
                    child_path.to_string(),
                    format!("cannot drop the key: a rule refers to it ({rule})"),
                ));
                None
            }
            // Undeclared, the field would be one of the unknown fields kept here, which take
            // any value.
            None if !field.in_map && out.keeps_unknown_fields() => {
                Some("unknown fields are kept there".to_string())
            }
            None => None,
        };
        if let Some(because) = kept_because {
            out.properties
                .insert(field.name.clone(), unsettable(slots, child_path));
            reason += &format!(" (kept declared but unsettable, because {because})");
        }
        let having = labels_where(slots, self.labels, |s| matches!(s, Slot::Schema(_)))
            .cloned()
            .collect();
        self.dropped.push(Dropped {
            version: self.version.clone(),
            path: child_path.to_string(),
            sources: having,
            reason,
        });
    }

    /// The API server wants every key of a map list required or defaulted. Where the sources'
    /// defaults differ the LCD has none, so it requires the key instead.
    fn require_map_list_keys(&mut self, path: &str, out: &mut SchemaNode) {
        if out.list_type.as_deref() != Some("map") {
            return;
        }
        // Both are the node's own fields; the keys are read through its rare keywords.
        let SchemaNode { items, rare, .. } = out;
        let Some(items) = items.as_mut() else {
            return;
        };
        for key in &rare.list_map_keys {
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
}

/// A field being merged: its name, whether a source requires it, and whether it is a key of
/// maps (every source a map there) rather than a declared property.
struct Field<'n> {
    name: &'n String,
    required: bool,
    in_map: bool,
}

/// The schemas the sources that have one give a field.
fn schemas_of<'s>(slots: &[Slot<'s>]) -> Vec<&'s Schema> {
    slots
        .iter()
        .filter_map(|s| match s {
            Slot::Schema(s) => Some(*s),
            _ => None,
        })
        .collect()
}

/// A field kept declared (one source's declaration, the same whatever the sources' order) with
/// a rule that refuses any value.
fn unsettable(slots: &[Slot<'_>], path: &str) -> Schema {
    let mut kept = schemas_of(slots)
        .into_iter()
        .min_by_key(|s| json_text(s))
        .cloned()
        .unwrap_or_default();
    // CEL rules do not run on null.
    kept.nullable = false;
    kept.validations = vec![CelRule {
        rule: "false".into(),
        message: Some(format!(
            "{} is not settable: not every cluster accepts it",
            display(path)
        )),
        message_expression: None,
        reason: None,
        field_path: None,
        optional_old_self: None,
    }];
    kept
}

/// Every source's node at one path, with the sources' labels: what conflicts name.
struct Sources<'a> {
    nodes: &'a [&'a Schema],
    labels: &'a [String],
}

impl Sources<'_> {
    /// `show` of each source's node, with the source: `string in a, integer in b`.
    fn describe(&self, show: impl Fn(&Schema) -> String) -> String {
        self.nodes
            .iter()
            .zip(self.labels)
            .map(|(n, l)| format!("{} in {l}", show(n)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The type: the one every typed source has, or the narrower of integer and number, or of
/// int-or-string and either; nodes typed only by "preserve unknown fields" accept any type.
fn merge_type(sources: &Sources<'_>, out: &mut SchemaNode, conflicts: &mut Vec<String>) {
    let types: BTreeSet<String> = sources
        .nodes
        .iter()
        .filter(|n| n.type_.is_some() || n.int_or_string)
        .map(|n| n.type_name())
        .collect();
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
                None => conflicts.push(format!(
                    "type conflict: {}",
                    sources.describe(|n| n.type_name())
                )),
            }
        }
    }
}

/// The nodes that constrain anything: one that accepts anything (untyped, keeping unknown
/// fields, without properties) does not constrain the rest. All of them when none does.
fn constraining<'s>(nodes: &[&'s Schema]) -> Vec<&'s Schema> {
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
    if constraining.is_empty() {
        nodes.to_vec()
    } else {
        constraining
    }
}

/// Flags (each the stricter setting), and the title and description.
fn merge_flags_and_texts(nodes: &[&Schema], out: &mut SchemaNode, conflicts: &mut Vec<String>) {
    out.preserve_unknown_fields = nodes.iter().all(|n| n.preserve_unknown_fields);
    out.nullable = nodes.iter().all(|n| n.nullable);
    out.unique_items = nodes.iter().any(|n| n.unique_items);
    let embedded: BTreeSet<bool> = nodes.iter().map(|n| n.embedded_resource).collect();
    if embedded.len() > 1 {
        conflicts.push("x-kubernetes-embedded-resource differs".into());
    }
    out.embedded_resource = nodes.iter().any(|n| n.embedded_resource);
    out.title = agreed(nodes, |n| n.title.clone()).flatten();
    out.example = agreed(nodes, |n| n.example.clone()).flatten();
    // Descriptions differ in wording all the time; keep one (the smallest, for symmetry).
    out.description = nodes.iter().filter_map(|n| n.description.clone()).min();
}

/// enum: the values every source that has an enum allows.
fn merge_enum(
    sources: &Sources<'_>,
    nodes: &[&Schema],
    out: &mut SchemaNode,
    conflicts: &mut Vec<String>,
) {
    let enums: Vec<&Vec<Value>> = nodes
        .iter()
        .filter_map(|n| n.enum_values.as_ref())
        .collect();
    let Some(first) = enums.first() else {
        return;
    };
    let mut values: Vec<Value> = first
        .iter()
        .filter(|v| enums.iter().all(|e| e.contains(v)))
        .cloned()
        .collect();
    values.sort_by_key(ToString::to_string);
    values.dedup();
    if values.is_empty() {
        conflicts.push(format!(
            "no enum value is allowed everywhere: {}",
            sources.describe(|n| {
                n.enum_values
                    .as_ref()
                    .map(|e| Value::from(e.clone()).to_string())
                    .unwrap_or_else(|| "any".into())
            })
        ));
    }
    out.enum_values = Some(values);
}

/// Length and count bounds: the tightest of each.
fn merge_counts(nodes: &[&Schema], out: &mut SchemaNode, conflicts: &mut Vec<String>) {
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
            conflicts.push(format!(
                "no {what} count is allowed everywhere (at least {lo}, at most {hi})"
            ));
        }
    }
}

/// Numeric bounds: the smallest maximum (exclusive wins a tie) and the largest minimum.
fn merge_numeric_bounds(nodes: &[&Schema], out: &mut SchemaNode, conflicts: &mut Vec<String>) {
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
        conflicts.push(format!(
            "no number is allowed everywhere (minimum {lo}, maximum {hi})"
        ));
    }
}

/// Patterns, formats and `multipleOf`: the one that implies the others in the keyword, the
/// rest under allOf; and every source's value validations (allOf, anyOf, oneOf, not), all of
/// them, under allOf.
fn merge_value_validations(nodes: &[&Schema], out: &mut SchemaNode) {
    // Constraints that cannot be merged into one keyword go into allOf.
    let mut extra: Vec<Schema> = Vec::new();
    let patterns: BTreeSet<&String> = nodes.iter().filter_map(|n| n.pattern.as_ref()).collect();
    let mut patterns = narrowest(patterns).into_iter();
    out.pattern = patterns.next().cloned();
    extra.extend(patterns.map(|p| {
        SchemaNode::from(RareKeywords {
            pattern: Some(p.clone()),
            ..RareKeywords::default()
        })
        .into()
    }));
    let formats: BTreeSet<&String> = nodes.iter().filter_map(|n| n.format.as_ref()).collect();
    let mut formats = formats.into_iter();
    out.format = formats.next().cloned();
    extra.extend(formats.map(|f| {
        SchemaNode::from(RareKeywords {
            format: Some(f.clone()),
            ..RareKeywords::default()
        })
        .into()
    }));
    let mut multiples = coarsest_steps(nodes).into_iter();
    out.multiple_of = multiples.next();
    extra.extend(multiples.map(|m| {
        SchemaNode::from(RareKeywords {
            multiple_of: Some(m),
            ..RareKeywords::default()
        })
        .into()
    }));
    let mut junctions: Vec<Schema> = Vec::new();
    for n in nodes {
        junctions.extend(n.all_of.iter().cloned());
        if !n.any_of.is_empty() {
            junctions.push(
                SchemaNode::from(RareKeywords {
                    any_of: n.any_of.clone(),
                    ..RareKeywords::default()
                })
                .into(),
            );
        }
        if !n.one_of.is_empty() {
            junctions.push(
                SchemaNode::from(RareKeywords {
                    one_of: n.one_of.clone(),
                    ..RareKeywords::default()
                })
                .into(),
            );
        }
        if let Some(not) = &n.not {
            junctions.push(
                SchemaNode::from(RareKeywords {
                    not: Some(not.clone()),
                    ..RareKeywords::default()
                })
                .into(),
            );
        }
    }
    junctions.extend(extra);
    let mut keyed: BTreeMap<String, Schema> = BTreeMap::new();
    for j in junctions {
        keyed.insert(json_text(&j), j);
    }
    out.all_of = keyed.into_values().collect();
}

/// The `multipleOf` steps a value must be a multiple of everywhere, smallest first, without
/// those implied by another: a multiple of a larger step is a multiple of its divisors.
fn coarsest_steps(nodes: &[&Schema]) -> Vec<f64> {
    let mut m: Vec<f64> = nodes.iter().filter_map(|n| n.multiple_of).collect();
    m.sort_by(f64::total_cmp);
    m.dedup();
    m.iter()
        .copied()
        .filter(|x| !m.iter().any(|y| y != x && (y / x).fract() == 0.0))
        .collect()
}

/// CEL rules: all of them, one per expression (of those that share one, the least).
fn merge_rules(nodes: &[&Schema], out: &mut SchemaNode) {
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
}

/// How lists and maps merge on apply, and the other extensions: set and map lists are stricter
/// than atomic ones and must agree with each other, as must the keys of map lists.
fn merge_list_and_map_semantics(
    sources: &Sources<'_>,
    nodes: &[&Schema],
    out: &mut SchemaNode,
    conflicts: &mut Vec<String>,
) {
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
        _ => conflicts.push(format!(
            "x-kubernetes-list-type conflict: {}",
            sources.describe(|n| n.list_type.clone().unwrap_or_else(|| "atomic".into()))
        )),
    }
    let keys: BTreeSet<&Vec<String>> = nodes
        .iter()
        .filter(|n| !n.list_map_keys.is_empty())
        .map(|n| &n.list_map_keys)
        .collect();
    if keys.len() > 1 {
        conflicts.push(format!(
            "x-kubernetes-list-map-keys differ: {}",
            sources.describe(|n| n.list_map_keys.join(","))
        ));
    }
    out.list_map_keys = keys.into_iter().next().cloned().unwrap_or_default();
    // map-type only changes how apply merges; any common choice accepts the same objects.
    out.map_type = nodes.iter().filter_map(|n| n.map_type.clone()).min();
    out.extensions = agreed(nodes, |n| n.extensions.clone()).unwrap_or_default();
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
