//! PURE: N-way findings in one walk over all sources at once (not pairwise).
//!
//! Classes are judged from the baseline (the first source, or `--baseline`): a client that works
//! against the baseline writes the same object to every source. `breaking` means that object can
//! be rejected or lose data on another source; `changes-stored-data` that it is accepted but
//! stored with other values (a default gone or changed); `changes-selection` that a field
//! selector is refused; `compatible` means another source accepts at least as much;
//! `informational` means validation is unaffected. Where the baseline does not
//! have an API, version or field at all, the first source that does stands in for it below that
//! point, and the others are reported as additions relative to the baseline.
use std::collections::BTreeSet;

use serde_json::Value;

// The findings are the diff's output; they are defined apart so that the witness search, which
// refines them, does not depend on the diff.
pub use super::finding::{Change, Class, Finding};
use super::finding::{Datum, Shown, shown};
use super::model::{
    AdditionalProperties, ApiDef, RareKeywords, Schema, SchemaNode, SharedText, VersionDef,
    same_schema, short, shorten, version_priority,
};
use super::pattern::{self, Comparison};

/// Every rule id the diff can produce, for `--ignore` validation and the documentation.
pub const RULES: &[(&str, &str)] = &[
    ("api-removed", "breaking: the API is not served by a source"),
    (
        "api-added",
        "compatible: the API is served by a source the baseline lacks it in",
    ),
    ("scope-changed", "breaking"),
    (
        "names-changed",
        "breaking: kind, plural, singular or listKind differ",
    ),
    ("shortNames-changed", "informational"),
    ("categories-changed", "informational"),
    (
        "version-removed",
        "breaking: a version is missing or not served",
    ),
    ("version-added", "compatible"),
    ("storageVersion-changed", "informational"),
    ("deprecated-changed", "informational"),
    (
        "subresources-changed",
        "changes-stored-data where a status subresource is added (a create drops .status); breaking where it is removed (status updates are refused) or scale is changed; compatible where the baseline's schema has no .status",
    ),
    ("printerColumns-changed", "informational"),
    (
        "selectableFields-removed",
        "changes-selection: a field selector the baseline serves is refused",
    ),
    ("selectableFields-added", "compatible"),
    ("conversion-changed", "informational"),
    (
        "field-removed",
        "breaking (compatible where unknown fields are preserved)",
    ),
    (
        "field-added",
        "compatible (breaking where the baseline keeps unknown fields: they become validated)",
    ),
    ("type-changed", "breaking"),
    (
        "type-widened",
        "compatible: integer to number, or to int-or-string",
    ),
    ("required-added", "breaking"),
    ("required-removed", "compatible"),
    (
        "enum-narrowed",
        "breaking: values removed, or an enum added",
    ),
    (
        "enum-widened",
        "compatible: values added (old clients may read unknown values)",
    ),
    ("enum-changed", "breaking: values added and removed"),
    (
        "default-added",
        "changes-stored-data: an object without the field is stored with the default (on create, on update and when read back)",
    ),
    (
        "default-removed",
        "changes-stored-data: an object without the field is stored without it (breaking where it is then rejected)",
    ),
    (
        "default-changed",
        "changes-stored-data: an object without the field is stored with another value (breaking where it is then rejected)",
    ),
    ("nullable-narrowed", "breaking"),
    ("nullable-widened", "compatible"),
    (
        "pattern-narrowed",
        "breaking: a pattern added, or one that accepts only some of the strings the baseline's does",
    ),
    (
        "pattern-widened",
        "compatible: a pattern removed, or one that accepts every string the baseline's does and more",
    ),
    (
        "pattern-changed",
        "breaking: rejects strings the baseline's pattern accepts, and accepts others",
    ),
    (
        "pattern-undecided",
        "breaking: the patterns differ and could not be compared (syntax not read as Go reads it, or too large)",
    ),
    ("format-narrowed", "breaking"),
    ("format-widened", "compatible"),
    ("format-changed", "breaking"),
    ("maxLength-narrowed", "breaking"),
    ("maxLength-widened", "compatible"),
    ("minLength-narrowed", "breaking"),
    ("minLength-widened", "compatible"),
    ("maxItems-narrowed", "breaking"),
    ("maxItems-widened", "compatible"),
    ("minItems-narrowed", "breaking"),
    ("minItems-widened", "compatible"),
    ("maxProperties-narrowed", "breaking"),
    ("maxProperties-widened", "compatible"),
    ("minProperties-narrowed", "breaking"),
    ("minProperties-widened", "compatible"),
    ("maximum-narrowed", "breaking"),
    ("maximum-widened", "compatible"),
    ("minimum-narrowed", "breaking"),
    ("minimum-widened", "compatible"),
    ("multipleOf-narrowed", "breaking"),
    ("multipleOf-widened", "compatible"),
    ("multipleOf-changed", "breaking"),
    ("uniqueItems-narrowed", "breaking"),
    ("uniqueItems-widened", "compatible"),
    (
        "x-kubernetes-validations-added",
        "breaking: a CEL rule added",
    ),
    (
        "x-kubernetes-validations-removed",
        "compatible: a CEL rule removed",
    ),
    (
        "x-kubernetes-validations-changed",
        "informational: same rule, other message or reason",
    ),
    (
        "x-kubernetes-preserve-unknown-fields-narrowed",
        "breaking: unknown fields are pruned",
    ),
    ("x-kubernetes-preserve-unknown-fields-widened", "compatible"),
    ("x-kubernetes-embedded-resource-changed", "breaking"),
    (
        "x-kubernetes-list-type-widened",
        "compatible: set or map -> atomic, duplicate items accepted",
    ),
    (
        "x-kubernetes-list-type-narrowed",
        "breaking: atomic -> set or map, duplicate items refused",
    ),
    ("x-kubernetes-list-type-changed", "breaking: set <-> map"),
    (
        "x-kubernetes-list-map-keys-changed",
        "breaking: other keys of a map list (with the list type, one finding)",
    ),
    ("x-kubernetes-map-type-changed", "breaking"),
    (
        "additionalProperties-changed",
        "breaking: a map in one source, not in another (compatible where the other accepts any keys)",
    ),
    (
        "valueValidation-added",
        "breaking: allOf/anyOf/oneOf/not added",
    ),
    ("valueValidation-removed", "compatible"),
    ("valueValidation-changed", "breaking"),
    ("description-changed", "informational"),
    ("title-changed", "informational"),
    (
        "example-changed",
        "informational: the API server does not validate with it",
    ),
    (
        "extension-changed",
        "informational: other x-kubernetes-* extensions",
    ),
];

/// Finds every difference of one API across the sources (`None` where a source lacks it).
pub fn diff_api(apis: &[Option<&ApiDef>], baseline: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(base) = pick_baseline(apis, baseline) else {
        return out;
    };
    out.extend(api_presence(apis, baseline));
    api_attributes(apis, base, &mut out);
    for version in version_names(apis) {
        version_findings(apis, base, version, &mut out);
    }
    for f in &mut out {
        explain(f);
    }
    out
}

/// The API missing from some sources: removed where the baseline has it, else added.
fn api_presence(apis: &[Option<&ApiDef>], baseline: usize) -> Option<Finding> {
    if apis.iter().all(Option::is_some) {
        return None;
    }
    let values: Vec<Option<String>> = apis.iter().map(|a| a.map(|a| a.kind.clone())).collect();
    let data: Vec<Value> = values.iter().map(|v| v.as_data()).collect();
    let (change, class, msg) = if apis[baseline].is_some() {
        (
            Change::Removed,
            Class::Breaking,
            "not served by every source",
        )
    } else {
        (
            Change::Added,
            Class::Compatible,
            "not served by the baseline",
        )
    };
    Some(api_finding(
        "api",
        change,
        class,
        msg.to_string(),
        shown(values, data),
    ))
}

/// The API's own attributes (scope, names, short names, categories, storage version,
/// conversion) that differ from the baseline's.
fn api_attributes(apis: &[Option<&ApiDef>], base: usize, out: &mut Vec<Finding>) {
    let base_api = apis[base].expect("picked");
    let present: Vec<&ApiDef> = apis.iter().flatten().copied().collect();
    let all = |f: &dyn Fn(&ApiDef) -> String| -> Vec<Option<String>> {
        apis.iter().map(|a| a.map(f)).collect()
    };
    let all_data = |f: &dyn Fn(&ApiDef) -> Value| -> Vec<Value> {
        apis.iter().map(|a| a.map_or(Value::Null, f)).collect()
    };
    let differs = |f: &dyn Fn(&ApiDef) -> String| present.iter().any(|a| f(a) != f(base_api));
    let api_rules: [ApiRule; 6] = [
        ("scope", Class::Breaking, &|a| a.scope.clone(), &|a| {
            a.scope.as_str().into()
        }),
        (
            "names",
            Class::Breaking,
            &|a| {
                format!(
                    "{}/{}/{}/{}",
                    a.kind,
                    a.plural,
                    a.singular.as_deref().unwrap_or("-"),
                    a.list_kind.as_deref().unwrap_or("-")
                )
            },
            &|a| {
                serde_json::json!({"kind": a.kind, "plural": a.plural,
                    "singular": a.singular, "listKind": a.list_kind})
            },
        ),
        (
            "shortNames",
            Class::Informational,
            &|a| join(&a.short_names),
            &|a| a.short_names.as_data(),
        ),
        (
            "categories",
            Class::Informational,
            &|a| join(&a.categories),
            &|a| a.categories.as_data(),
        ),
        (
            "storageVersion",
            Class::Informational,
            &|a| a.storage_version().unwrap_or("-").to_string(),
            &|a| a.storage_version().into(),
        ),
        (
            "conversion",
            Class::Informational,
            &|a| a.conversion.clone().unwrap_or_else(|| "None".into()),
            &|a| a.conversion.as_data(),
        ),
    ];
    for (attribute, class, f, d) in api_rules {
        if differs(f) {
            out.push(api_finding(
                attribute,
                Change::Changed,
                class,
                format!("{attribute} differs"),
                shown(all(f), all_data(d)),
            ));
        }
    }
}

/// Every version any source serves, in Kubernetes' priority order.
fn version_names<'a>(apis: &[Option<&'a ApiDef>]) -> Vec<&'a String> {
    let mut names: Vec<&String> = apis
        .iter()
        .flatten()
        .flat_map(|a| a.versions.keys())
        .collect();
    names.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
    names.dedup();
    names
}

/// One version: whether every source serves it, its attributes, its selectable fields and its
/// schema, judged against the baseline's (or, where the baseline does not serve it, the first
/// source's that does).
fn version_findings(apis: &[Option<&ApiDef>], base: usize, version: &str, out: &mut Vec<Finding>) {
    let served: Vec<Option<&VersionDef>> = apis
        .iter()
        .map(|a| a.and_then(|a| a.versions.get(version)).filter(|v| v.served))
        .collect();
    let vbase = if served[base].is_some() {
        Some(base)
    } else {
        served.iter().position(Option::is_some)
    };
    let Some(vbase) = vbase else { return };
    out.extend(version_presence(apis, &served, base, version));
    version_attributes(&served, vbase, version, out);
    selectable_fields(&served, vbase, version, out);
    let nodes: Vec<Option<&Schema>> = served.iter().map(|v| v.map(|v| &v.schema)).collect();
    let mut walker = Walker {
        version: version.to_string(),
        out,
    };
    walker.node(&nodes, vbase, "");
}

/// The version not served by every source that has the API: removed where the baseline serves
/// it, else added.
fn version_presence(
    apis: &[Option<&ApiDef>],
    served: &[Option<&VersionDef>],
    base: usize,
    version: &str,
) -> Option<Finding> {
    let lacking = (0..apis.len()).any(|i| apis[i].is_some() && served[i].is_none());
    if !lacking {
        return None;
    }
    let defined = |i: usize| apis[i].and_then(|a| a.versions.get(version));
    let values: Vec<Option<String>> = (0..apis.len())
        .map(|i| {
            defined(i).map(|v| {
                let mut flags = vec![if v.served { "served" } else { "not served" }];
                if v.storage {
                    flags.push("storage");
                }
                flags.join(", ")
            })
        })
        .collect();
    let data: Vec<Value> = (0..apis.len())
        .map(|i| {
            defined(i).map_or(
                Value::Null,
                |v| serde_json::json!({"served": v.served, "storage": v.storage}),
            )
        })
        .collect();
    let (change, class) = if served[base].is_some() {
        (Change::Removed, Class::Breaking)
    } else {
        (Change::Added, Class::Compatible)
    };
    let (values, data) = shown(values, data);
    Some(Finding {
        version: Some(version.to_string()),
        path: String::new(),
        attribute: "version".into(),
        change,
        class,
        message: format!("{version} is not served by every source"),
        values,
        data,
        sample: None,
        witness: None,
        no_witness: None,
    })
}

/// The version's attributes (deprecated, subresources, printer columns) that differ from the
/// baseline version's.
fn version_attributes(
    served: &[Option<&VersionDef>],
    vbase: usize,
    version: &str,
    out: &mut Vec<Finding>,
) {
    let vdef = served[vbase].expect("served");
    let flag_rules: [VersionRule; 3] = [
        (
            "deprecated",
            Class::Informational,
            &|v| v.deprecated.to_string(),
            &|v| v.deprecated.into(),
        ),
        (
            "subresources",
            Class::Breaking,
            &|v| v.subresources.to_string(),
            &|v| v.subresources.clone(),
        ),
        (
            "printerColumns",
            Class::Informational,
            &|v| Value::from(v.printer_columns.clone()).to_string(),
            &|v| v.printer_columns.clone().into(),
        ),
    ];
    for (attribute, class, f, d) in flag_rules {
        if served.iter().flatten().any(|v| f(v) != f(vdef)) {
            let class = if attribute == "subresources" {
                served
                    .iter()
                    .flatten()
                    .map(|v| subresources_class(vdef, v))
                    .max()
                    .unwrap_or(class)
            } else {
                class
            };
            out.push(Finding {
                version: Some(version.to_string()),
                path: String::new(),
                attribute: attribute.into(),
                change: Change::Changed,
                class,
                message: format!("{attribute} differ"),
                values: served
                    .iter()
                    .map(|v| v.map(|v| short_text(&f(v)).into()))
                    .collect(),
                data: served
                    .iter()
                    .map(|v| v.map_or(Value::Null, d).into())
                    .collect(),
                sample: None,
                witness: None,
                no_witness: None,
            });
        }
    }
}

/// Selectable fields the baseline version has and another source's lacks (removed), or the
/// other way round (added): one finding each way.
fn selectable_fields(
    served: &[Option<&VersionDef>],
    vbase: usize,
    version: &str,
    out: &mut Vec<Finding>,
) {
    let vdef = served[vbase].expect("served");
    let fields = |v: &VersionDef| -> BTreeSet<String> {
        v.selectable_fields
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    for (i, v) in served.iter().enumerate() {
        let Some(v) = v else { continue };
        if i == vbase {
            continue;
        }
        let (b, o) = (fields(vdef), fields(v));
        for (change, class, set) in [
            (
                Change::Removed,
                Class::ChangesSelection,
                b.difference(&o).count(),
            ),
            (Change::Added, Class::Compatible, o.difference(&b).count()),
        ] {
            if set > 0
                && !out.iter().any(|f| {
                    f.attribute == "selectableFields"
                        && f.change == change
                        && f.version.as_deref() == Some(version)
                })
            {
                out.push(Finding {
                    version: Some(version.to_string()),
                    path: String::new(),
                    attribute: "selectableFields".into(),
                    change,
                    class,
                    message: "selectable fields differ".into(),
                    values: served
                        .iter()
                        .map(|v| v.map(|v| join(&fields(v)).into()))
                        .collect(),
                    data: served
                        .iter()
                        .map(|v| {
                            v.map_or(Value::Null, |v| v.selectable_fields.clone().into())
                                .into()
                        })
                        .collect(),
                    sample: None,
                    witness: None,
                    no_witness: None,
                });
            }
        }
    }
}

/// Constraints whose narrowing the API server ratchets: an update that leaves such a field
/// unchanged is not re-validated against it (Kubernetes 1.30 and later).
const RATCHETED: &[&str] = &[
    "enum",
    "pattern",
    "format",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "maximum",
    "minimum",
    "multipleOf",
    "uniqueItems",
    "x-kubernetes-validations",
    "required",
    "nullable",
    "valueValidation",
];

/// Says in the message what the path and the class mean for users: `.status` is written by
/// controllers, and narrowed constraints are ratcheted on update.
fn explain(f: &mut Finding) {
    if f.class != Class::Breaking {
        return;
    }
    let narrowed = matches!(f.change, Change::Narrowed | Change::Changed | Change::Added)
        && RATCHETED.contains(&f.attribute.as_str());
    if narrowed {
        f.message.push_str(
            " (ratcheting: updates that keep a stored value unchanged still pass, Kubernetes 1.30+)",
        );
    }
    if f.path == ".status" || f.path.starts_with(".status.") || f.path.starts_with(".status[") {
        f.message = format!(
            "under .status (written by the controller, not by clients): {}",
            f.message
        );
    }
}

/// What a change of subresources does to clients of the baseline. A status subresource added
/// makes a create drop `.status`: every object is accepted as before, but stored without it
/// (where the baseline's schema has a `.status` to write). One removed also refuses the status
/// updates a controller of the baseline makes (`PUT .../status`). A scale subresource removed
/// or changed breaks `kubectl scale` and autoscalers.
fn subresources_class(base: &VersionDef, other: &VersionDef) -> Class {
    let has = |v: &VersionDef, k: &str| v.subresources.get(k).is_some_and(|x| !x.is_null());
    if has(base, "status") && !has(other, "status") {
        Class::Breaking
    } else if !has(base, "status") && has(other, "status") {
        if base.schema.properties.contains_key("status") {
            Class::ChangesStoredData
        } else {
            Class::Compatible
        }
    } else if has(base, "scale")
        && other.subresources.get("scale") != base.subresources.get("scale")
    {
        Class::Breaking
    } else if base.subresources == other.subresources {
        Class::Informational
    } else {
        Class::Compatible
    }
}

fn pick_baseline(apis: &[Option<&ApiDef>], baseline: usize) -> Option<usize> {
    if apis.get(baseline).is_some_and(Option::is_some) {
        Some(baseline)
    } else {
        apis.iter().position(Option::is_some)
    }
}

fn api_finding(
    attribute: &str,
    change: Change,
    class: Class,
    message: String,
    (values, data): Shown,
) -> Finding {
    Finding {
        version: None,
        path: String::new(),
        attribute: attribute.into(),
        change,
        class,
        message,
        values,
        data,
        sample: None,
        witness: None,
        no_witness: None,
    }
}

fn join<'a>(set: impl IntoIterator<Item = &'a String>) -> String {
    let v: Vec<&str> = set.into_iter().map(String::as_str).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

fn short_text(s: &str) -> String {
    shorten(s, 40)
}

/// Where a rule looks: the node of each source, the baseline's index, the path.
struct At<'n, 's> {
    nodes: &'n [Option<&'s Schema>],
    base: usize,
    path: &'n str,
}

struct Walker<'o> {
    version: String,
    out: &'o mut Vec<Finding>,
}

/// What one rule says about one source relative to the baseline.
type Verdict = Option<(Change, Class, String)>;

/// A verdict with, where the rule can show one, a value the baseline accepts and the source
/// rejects.
struct Judgement {
    change: Change,
    class: Class,
    message: String,
    sample: Option<String>,
}

impl From<(Change, Class, String)> for Judgement {
    fn from((change, class, message): (Change, Class, String)) -> Judgement {
        Judgement {
            change,
            class,
            message,
            sample: None,
        }
    }
}

/// An attribute of the API: its id, its class, how the table shows it, and its data.
type ApiRule<'a> = (
    &'a str,
    Class,
    &'a dyn Fn(&ApiDef) -> String,
    &'a dyn Fn(&ApiDef) -> Value,
);
type VersionRule<'a> = (
    &'a str,
    Class,
    &'a dyn Fn(&VersionDef) -> String,
    &'a dyn Fn(&VersionDef) -> Value,
);

impl Walker<'_> {
    fn push(
        &mut self,
        path: &str,
        attribute: &str,
        verdict: impl Into<Judgement>,
        (values, data): Shown,
    ) {
        let Judgement {
            change,
            class,
            message,
            sample,
        } = verdict.into();
        // One finding per (path, attribute, change); several sources can share it.
        if let Some(existing) = self.out.iter_mut().rev().take(8).find(|f| {
            f.path == path
                && f.attribute == attribute
                && f.change == change
                && f.version.as_deref() == Some(&self.version)
        }) {
            existing.class = existing.class.max(class);
            return;
        }
        self.out.push(Finding {
            version: Some(self.version.clone()),
            path: if path.is_empty() {
                ".".into()
            } else {
                path.into()
            },
            attribute: attribute.into(),
            change,
            class,
            message,
            values,
            data,
            sample,
            witness: None,
            no_witness: None,
        });
    }

    /// Applies one attribute rule to every source against the baseline.
    fn rule<T: AsData, S: Into<SharedText>, J: Into<Judgement>>(
        &mut self,
        at: &At,
        attribute: &str,
        get: impl Fn(&Schema) -> T,
        show: impl Fn(&T) -> S,
        judge: impl Fn(&T, &T) -> Option<J>,
    ) {
        let (nodes, base, path) = (at.nodes, at.base, at.path);
        let base_value = get(nodes[base].expect("baseline node"));
        let mut values: Option<Shown> = None;
        for (i, node) in nodes.iter().enumerate() {
            let Some(node) = node else { continue };
            if i == base {
                continue;
            }
            let value = get(node);
            if let Some(verdict) = judge(&base_value, &value) {
                let values = values
                    .get_or_insert_with(|| {
                        let got: Vec<Option<T>> = nodes.iter().map(|n| n.map(&get)).collect();
                        (
                            got.iter()
                                .map(|v| v.as_ref().map(|v| show(v).into()))
                                .collect(),
                            got.iter()
                                .map(|v| {
                                    v.as_ref()
                                        .map_or(Datum::Value(Value::Null), AsData::as_datum)
                                })
                                .collect(),
                        )
                    })
                    .clone();
                self.push(path, attribute, verdict, values);
            }
        }
    }

    fn node(&mut self, nodes: &[Option<&Schema>], base: usize, path: &str) {
        // Equal nodes differ nowhere below (diff(s, s) is empty): most of a large comparison
        // is such subtrees, and comparing them is far cheaper than applying every rule.
        if let [Some(first), rest @ ..] = nodes
            && rest
                .iter()
                .all(|n| n.is_some_and(|n| same_schema(n, first)))
        {
            return;
        }
        let at = At { nodes, base, path };
        self.rule(&at, "type", |s| s.type_name(), String::clone, judge_type);
        self.rule(
            &at,
            "enum",
            |s| s.enum_values.clone(),
            show_enum,
            judge_enum,
        );
        self.rule(
            &at,
            "default",
            |s| s.default.clone(),
            show_opt_value,
            judge_default,
        );
        self.rule(
            &at,
            "nullable",
            |s| s.nullable,
            bool::to_string,
            |b, o| judge_flag(*b, *o, "null values"),
        );
        self.rule(
            &at,
            "pattern",
            |s| s.pattern.clone(),
            show_opt,
            judge_pattern,
        );
        self.rule(
            &at,
            "format",
            |s| s.format.clone(),
            show_opt,
            |b, o| judge_constraint(b, o, "format"),
        );
        type Count = fn(&Schema) -> Option<u64>;
        let upper: [(&str, Count); 3] = [
            ("maxLength", |s| s.max_length),
            ("maxItems", |s| s.max_items),
            ("maxProperties", |s| s.max_properties),
        ];
        for (attribute, get) in upper {
            self.rule(&at, attribute, get, show_opt_num, |b, o| {
                judge_bound(b.map(|v| v as f64), o.map(|v| v as f64), false, false, true)
            });
        }
        let lower: [(&str, Count); 3] = [
            ("minLength", |s| s.min_length),
            ("minItems", |s| s.min_items),
            ("minProperties", |s| s.min_properties),
        ];
        for (attribute, get) in lower {
            self.rule(&at, attribute, get, show_opt_num, |b, o| {
                judge_bound(
                    b.map(|v| v as f64),
                    o.map(|v| v as f64),
                    false,
                    false,
                    false,
                )
            });
        }
        self.rule(
            &at,
            "maximum",
            |s| (s.maximum, s.exclusive_maximum),
            show_bound,
            |b, o| judge_bound(b.0, o.0, b.1, o.1, true),
        );
        self.rule(
            &at,
            "minimum",
            |s| (s.minimum, s.exclusive_minimum),
            show_bound,
            |b, o| judge_bound(b.0, o.0, b.1, o.1, false),
        );
        self.rule(
            &at,
            "multipleOf",
            |s| s.multiple_of,
            show_opt_f,
            judge_multiple_of,
        );
        self.rule(
            &at,
            "uniqueItems",
            |s| s.unique_items,
            bool::to_string,
            |b, o| judge_flag(!*b, !*o, "duplicate items"),
        );
        // Rules are matched by expression: one finding for added ones, one for removed ones.
        for judge in [judge_rules_added, judge_rules_removed, judge_rules_reworded] {
            self.rule(
                &at,
                "x-kubernetes-validations",
                |s| s.validations.clone(),
                show_rules,
                judge,
            );
        }
        self.rule(
            &at,
            "x-kubernetes-preserve-unknown-fields",
            |s| s.preserve_unknown_fields,
            bool::to_string,
            |b, o| judge_flag(*b, *o, "unknown fields"),
        );
        self.rule(
            &at,
            "x-kubernetes-embedded-resource",
            |s| s.embedded_resource,
            bool::to_string,
            judge_any_change(bool::to_string),
        );
        // Absent means atomic for arrays and granular for objects: no difference.
        self.rule(
            &at,
            "x-kubernetes-list-type",
            list_type,
            show_opt,
            judge_list_type,
        );
        // Keys matter where both sides are map lists; a change to or from one is the list
        // type's finding alone.
        self.rule(
            &at,
            "x-kubernetes-list-map-keys",
            |s| (list_type(s).as_deref() == Some("map")).then(|| s.list_map_keys.clone()),
            |k| k.as_ref().map(|k| k.join(", ")).unwrap_or_default(),
            |b, o| match (b, o) {
                (Some(_), Some(_)) => judge_any_change(|k: &Option<Vec<String>>| {
                    format!("[{}]", k.as_deref().unwrap_or_default().join(", "))
                })(b, o),
                _ => None,
            },
        );
        self.rule(
            &at,
            "x-kubernetes-map-type",
            map_type,
            show_opt,
            judge_any_change(show_opt),
        );
        self.rule(&at, "valueValidation", junctions, show_opt, judge_junctions);
        self.rule(
            &at,
            "description",
            |s| s.description.clone(),
            show_opt_text,
            judge_informational,
        );
        self.rule(
            &at,
            "title",
            |s| s.title.clone(),
            show_opt,
            judge_informational,
        );
        self.rule(
            &at,
            "example",
            |s| s.example.as_deref().cloned(),
            show_opt_value,
            judge_informational,
        );
        self.rule(
            &at,
            "extension",
            |s| s.extensions.clone(),
            show_extensions,
            judge_informational,
        );
        self.rule(
            &at,
            "additionalProperties",
            map_shape,
            String::clone,
            |b, o| {
                if b == o {
                    None
                } else if o == "any keys" {
                    Some((Change::Changed, Class::Compatible, format!("{b} -> {o}")))
                } else {
                    Some((Change::Changed, Class::Breaking, format!("{b} -> {o}")))
                }
            },
        );
        self.required(nodes, base, path);
        self.properties(nodes, base, path);
        // Array items and map values.
        let items: Vec<Option<&Schema>> = nodes
            .iter()
            .map(|n| n.and_then(|n| n.items.as_ref()))
            .collect();
        if let Some(b) = sub_baseline(&items, base) {
            self.node(&items, b, &format!("{path}[*]"));
        }
        let values: Vec<Option<&Schema>> = nodes
            .iter()
            .map(|n| n.and_then(|n| n.map_values()))
            .collect();
        if let Some(b) = sub_baseline(&values, base) {
            self.node(&values, b, &format!("{path}.*"));
        }
    }

    fn required(&mut self, nodes: &[Option<&Schema>], base: usize, path: &str) {
        let base_node = nodes[base].expect("baseline");
        let mut names: BTreeSet<&String> = BTreeSet::new();
        for n in nodes.iter().flatten() {
            names.extend(n.required.iter());
        }
        for name in names {
            let child = format!("{path}.{name}");
            let values: Vec<Option<String>> = nodes
                .iter()
                .map(|n| {
                    n.map(|n| {
                        if n.is_required(name) {
                            "required"
                        } else {
                            "optional"
                        }
                        .to_string()
                    })
                })
                .collect();
            let data: Vec<Value> = nodes
                .iter()
                .map(|n| n.map_or(Value::Null, |n| n.is_required(name).into()))
                .collect();
            let values = shown(values, data);
            for (i, n) in nodes.iter().enumerate() {
                let Some(n) = n else { continue };
                if i == base {
                    continue;
                }
                match (base_node.is_required(name), n.is_required(name)) {
                    (false, true) => self.push(
                        &child,
                        "required",
                        (
                            Change::Added,
                            Class::Breaking,
                            format!("{name} became required"),
                        ),
                        values.clone(),
                    ),
                    (true, false) => self.push(
                        &child,
                        "required",
                        (
                            Change::Removed,
                            Class::Compatible,
                            format!("{name} is no longer required"),
                        ),
                        values.clone(),
                    ),
                    _ => {}
                }
            }
        }
    }

    fn properties(&mut self, nodes: &[Option<&Schema>], base: usize, path: &str) {
        let mut names: BTreeSet<&String> = BTreeSet::new();
        for n in nodes.iter().flatten() {
            names.extend(n.properties.keys());
        }
        for name in names {
            let child_path = format!("{path}.{name}");
            let children: Vec<Option<&Schema>> = nodes
                .iter()
                .map(|n| n.and_then(|n| n.properties.get(name.as_str())))
                .collect();
            let names: Vec<Option<String>> =
                children.iter().map(|c| c.map(|c| c.type_name())).collect();
            let data: Vec<Value> = names.iter().map(AsData::as_data).collect();
            let values = shown(names, data);
            let base_child = children[base];
            for (i, node) in nodes.iter().enumerate() {
                let Some(node) = node else { continue };
                if i == base {
                    continue;
                }
                match (base_child, children[i]) {
                    (Some(_), None) => {
                        let (class, why) = if node.keeps_unknown_fields() {
                            (
                                Class::Compatible,
                                "not in the schema, but unknown fields are kept there",
                            )
                        } else {
                            (
                                Class::Breaking,
                                "rejected with fieldValidation=Strict, pruned otherwise",
                            )
                        };
                        self.push(
                            &child_path,
                            "field",
                            (Change::Removed, class, format!("field missing: {why}")),
                            values.clone(),
                        );
                    }
                    (None, Some(added)) => {
                        let base_node = nodes[base].expect("baseline node");
                        // Where the baseline keeps unknown fields, objects written against it
                        // may carry anything under this name; now it is validated.
                        let verdict = if base_node.keeps_unknown_fields()
                            && !accepts_anything(added)
                        {
                            (
                                Change::Added,
                                Class::Breaking,
                                "field added where the baseline keeps unknown fields: values stored there are now validated".into(),
                            )
                        } else {
                            (Change::Added, Class::Compatible, "field added".into())
                        };
                        self.push(&child_path, "field", verdict, values.clone())
                    }
                    _ => {}
                }
            }
            if let Some(b) = sub_baseline(&children, base) {
                self.node(&children, b, &child_path);
            }
        }
    }
}

/// A node that takes any value (untyped, keeping unknown fields, with nothing declared).
fn accepts_anything(s: &Schema) -> bool {
    s.type_.is_none()
        && !s.int_or_string
        && s.preserve_unknown_fields
        && s.properties.is_empty()
        && s.additional_properties.is_none()
        && s.items.is_none()
        && s.enum_values.is_none()
        && s.validations.is_empty()
        && s.all_of.is_empty()
        && s.any_of.is_empty()
        && s.one_of.is_empty()
        && s.not.is_none()
}

/// The baseline's own child if it has one, else the first source's that does.
fn sub_baseline(children: &[Option<&Schema>], base: usize) -> Option<usize> {
    if children.iter().flatten().count() < 2 {
        return None;
    }
    if children[base].is_some() {
        Some(base)
    } else {
        children.iter().position(Option::is_some)
    }
}

fn list_type(s: &Schema) -> Option<String> {
    match (&s.list_type, s.type_.as_deref()) {
        (None, Some("array")) => Some("atomic".into()),
        (t, _) => t.clone(),
    }
}

/// What each side accepts: an atomic list takes any items, a set or a map list refuses
/// duplicates (by value, or by key), so a move to atomic accepts more and one from it less.
fn judge_list_type(b: &Option<String>, o: &Option<String>) -> Verdict {
    let atomic = |t: &Option<String>| t.as_deref().is_none_or(|t| t == "atomic");
    let shown = format!("{} -> {}", show_opt(b), show_opt(o));
    match (atomic(b), atomic(o)) {
        _ if b == o => None,
        (false, true) => Some((Change::Widened, Class::Compatible, shown)),
        (true, false) => Some((Change::Narrowed, Class::Breaking, shown)),
        _ => Some((Change::Changed, Class::Breaking, shown)),
    }
}

fn map_type(s: &Schema) -> Option<String> {
    match (&s.map_type, s.type_.as_deref()) {
        (None, Some("object")) => Some("granular".into()),
        (t, _) => t.clone(),
    }
}

fn map_shape(s: &Schema) -> String {
    match &s.additional_properties {
        Some(AdditionalProperties::Schema(_)) => "map".into(),
        Some(AdditionalProperties::Allowed(true)) => "any keys".into(),
        _ if s.type_.as_deref() == Some("object") || !s.properties.is_empty() => {
            "fixed fields".into()
        }
        _ => "-".into(),
    }
}

fn junctions(s: &Schema) -> Option<String> {
    if s.all_of.is_empty() && s.any_of.is_empty() && s.one_of.is_empty() && s.not.is_none() {
        return None;
    }
    let j = SchemaNode::from(RareKeywords {
        all_of: s.all_of.clone(),
        any_of: s.any_of.clone(),
        one_of: s.one_of.clone(),
        not: s.not.clone(),
        ..RareKeywords::default()
    });
    Some(serde_json::to_string(&j).expect("a schema is JSON"))
}

fn show_opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// [`show_opt`], sharing the text.
fn show_opt_text(v: &Option<SharedText>) -> SharedText {
    v.clone().unwrap_or_else(|| "-".into())
}

fn show_opt_num(v: &Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
}

fn show_opt_f(v: &Option<f64>) -> String {
    v.map(|n| super::model::number_value(n).to_string())
        .unwrap_or_else(|| "-".into())
}

fn show_bound(v: &(Option<f64>, bool)) -> String {
    match v {
        (Some(n), true) => format!("{} (exclusive)", super::model::number_value(*n)),
        (Some(n), false) => super::model::number_value(*n).to_string(),
        (None, _) => "-".into(),
    }
}

fn show_opt_value(v: &Option<Value>) -> String {
    v.as_ref().map(short).unwrap_or_else(|| "-".into())
}

fn show_enum(v: &Option<Vec<Value>>) -> String {
    match v {
        None => "-".into(),
        Some(values) => {
            let items: Vec<String> = values
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect();
            short_text(&items.join(", "))
        }
    }
}

/// `key: value` pairs, strings unquoted (not Rust's debug notation).
fn show_extensions(e: &std::collections::BTreeMap<String, Value>) -> String {
    if e.is_empty() {
        return "-".into();
    }
    let pairs: Vec<String> = e
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect();
    short_text(&pairs.join(", "))
}

fn show_rules(v: &Rules) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(|r| r.key()).collect::<Vec<_>>().join("; ")
    }
}

fn judge_type(b: &String, o: &String) -> Verdict {
    if b == o || o == "any" {
        return None;
    }
    let widened = matches!(
        (b.as_str(), o.as_str()),
        ("integer", "number") | ("integer", "int-or-string") | ("string", "int-or-string")
    );
    if widened {
        Some((
            Change::Widened,
            Class::Compatible,
            format!("type {b} -> {o}"),
        ))
    } else {
        Some((Change::Changed, Class::Breaking, format!("type {b} -> {o}")))
    }
}

fn judge_enum(b: &Option<Vec<Value>>, o: &Option<Vec<Value>>) -> Verdict {
    let as_set = |v: &Vec<Value>| v.iter().map(ToString::to_string).collect::<BTreeSet<_>>();
    match (b, o) {
        (None, None) => None,
        (None, Some(_)) => Some((Change::Narrowed, Class::Breaking, "enum added".into())),
        (Some(_), None) => Some((Change::Widened, Class::Compatible, "enum removed".into())),
        (Some(b), Some(o)) => {
            let (b, o) = (as_set(b), as_set(o));
            let removed: Vec<&String> = b.difference(&o).collect();
            let added: Vec<&String> = o.difference(&b).collect();
            let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
            match (removed.is_empty(), added.is_empty()) {
                (true, true) => None,
                (false, true) => Some((
                    Change::Narrowed,
                    Class::Breaking,
                    format!("values removed: {}", list(&removed)),
                )),
                (true, false) => Some((
                    Change::Widened,
                    Class::Compatible,
                    format!("values added: {}", list(&added)),
                )),
                (false, false) => Some((
                    Change::Changed,
                    Class::Breaking,
                    format!(
                        "values removed: {}; added: {}",
                        list(&removed),
                        list(&added)
                    ),
                )),
            }
        }
    }
}

fn judge_default(b: &Option<Value>, o: &Option<Value>) -> Verdict {
    match (b, o) {
        (None, Some(v)) => Some((
            Change::Added,
            Class::ChangesStoredData,
            format!("default {} added", short(v)),
        )),
        (Some(v), None) => Some((
            Change::Removed,
            Class::ChangesStoredData,
            format!("default {} removed", short(v)),
        )),
        (Some(x), Some(y)) if x != y => Some((
            Change::Changed,
            Class::ChangesStoredData,
            format!("default {} -> {}", short(x), short(y)),
        )),
        _ => None,
    }
}

/// A boolean that allows something when true (null values, unknown fields, ...).
fn judge_flag(b: bool, o: bool, what: &str) -> Verdict {
    match (b, o) {
        (true, false) => Some((
            Change::Narrowed,
            Class::Breaking,
            format!("{what} no longer allowed"),
        )),
        (false, true) => Some((
            Change::Widened,
            Class::Compatible,
            format!("{what} allowed"),
        )),
        _ => None,
    }
}

/// A constraint that only restricts (pattern, format): adding narrows, removing widens.
fn judge_constraint(b: &Option<String>, o: &Option<String>, what: &str) -> Verdict {
    match (b, o) {
        (None, Some(v)) => Some((
            Change::Narrowed,
            Class::Breaking,
            format!("{what} '{v}' added"),
        )),
        (Some(v), None) => Some((
            Change::Widened,
            Class::Compatible,
            format!("{what} '{v}' removed"),
        )),
        (Some(x), Some(y)) if x != y => Some((
            Change::Changed,
            Class::Breaking,
            format!("{what} '{x}' -> '{y}'"),
        )),
        _ => None,
    }
}

/// Patterns are compared by the strings they accept (as Go's regexp does, unanchored); one
/// added narrows, one removed widens.
fn judge_pattern(b: &Option<String>, o: &Option<String>) -> Option<Judgement> {
    let (Some(x), Some(y)) = (b, o) else {
        return judge_constraint(b, o, "pattern").map(Judgement::from);
    };
    let shown = format!("pattern '{x}' -> '{y}'");
    let lost = |w: &String| format!("{shown}: {w:?} is no longer accepted");
    let (change, class, message, sample) = match pattern::compare(x, y) {
        Comparison::Equal => return None,
        Comparison::Widened { example } => (
            Change::Widened,
            Class::Compatible,
            format!("{shown}: accepts more, such as {example:?}"),
            None,
        ),
        Comparison::Narrowed { witness } => (
            Change::Narrowed,
            Class::Breaking,
            lost(&witness),
            Some(witness),
        ),
        Comparison::Changed { witness, example } => {
            let gained = example.map(|e| format!(", and {e:?} now is"));
            let message = lost(&witness) + &gained.unwrap_or_default();
            (Change::Changed, Class::Breaking, message, Some(witness))
        }
        Comparison::Undecided { reason } => (
            Change::Undecided,
            Class::Breaking,
            format!("{shown}: could not be compared, so taken as breaking: {reason}"),
            None,
        ),
    };
    Some(Judgement {
        change,
        class,
        message,
        sample,
    })
}

/// Bounds: `upper` for maxima (smaller is narrower), else minima (larger is narrower).
fn judge_bound(b: Option<f64>, o: Option<f64>, b_excl: bool, o_excl: bool, upper: bool) -> Verdict {
    let show = |v: f64, excl: bool| {
        let n = super::model::number_value(v).to_string();
        if excl { format!("{n} (exclusive)") } else { n }
    };
    match (b, o) {
        (None, None) => None,
        (None, Some(v)) => Some((
            Change::Narrowed,
            Class::Breaking,
            format!("bound {} added", show(v, o_excl)),
        )),
        (Some(v), None) => Some((
            Change::Widened,
            Class::Compatible,
            format!("bound {} removed", show(v, b_excl)),
        )),
        (Some(x), Some(y)) => {
            if x == y && b_excl == o_excl {
                return None;
            }
            let tighter = if x == y {
                o_excl && !b_excl
            } else if upper {
                y < x
            } else {
                y > x
            };
            let msg = format!("{} -> {}", show(x, b_excl), show(y, o_excl));
            if tighter {
                Some((Change::Narrowed, Class::Breaking, msg))
            } else {
                Some((Change::Widened, Class::Compatible, msg))
            }
        }
    }
}

fn judge_multiple_of(b: &Option<f64>, o: &Option<f64>) -> Verdict {
    let divides = |d: f64, n: f64| d != 0.0 && (n / d).fract() == 0.0;
    match (b, o) {
        (None, None) => None,
        (None, Some(v)) => Some((
            Change::Narrowed,
            Class::Breaking,
            format!("multipleOf {v} added"),
        )),
        (Some(v), None) => Some((
            Change::Widened,
            Class::Compatible,
            format!("multipleOf {v} removed"),
        )),
        (Some(x), Some(y)) if x == y => None,
        (Some(x), Some(y)) => {
            let msg = format!("{x} -> {y}");
            if divides(*y, *x) {
                Some((Change::Widened, Class::Compatible, msg))
            } else if divides(*x, *y) {
                Some((Change::Narrowed, Class::Breaking, msg))
            } else {
                Some((Change::Changed, Class::Breaking, msg))
            }
        }
    }
}

type Rules = Vec<super::model::CelRule>;

/// An attribute's value as data for the JSON report; null where it is unset.
trait AsData {
    fn as_data(&self) -> Value;

    /// [`AsData::as_data`], sharing what is shared (see [`SharedText`]).
    fn as_datum(&self) -> Datum {
        Datum::Value(self.as_data())
    }
}

impl AsData for SharedText {
    fn as_data(&self) -> Value {
        self.as_str().into()
    }

    fn as_datum(&self) -> Datum {
        Datum::Text(self.clone())
    }
}

impl AsData for String {
    fn as_data(&self) -> Value {
        self.as_str().into()
    }
}

impl AsData for bool {
    fn as_data(&self) -> Value {
        (*self).into()
    }
}

impl AsData for Vec<String> {
    fn as_data(&self) -> Value {
        self.iter().map(String::as_str).collect()
    }
}

impl AsData for BTreeSet<String> {
    fn as_data(&self) -> Value {
        self.iter().map(String::as_str).collect()
    }
}

impl AsData for std::collections::BTreeMap<String, Value> {
    fn as_data(&self) -> Value {
        Value::Object(self.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

impl AsData for Value {
    fn as_data(&self) -> Value {
        self.clone()
    }
}

impl AsData for Vec<Value> {
    fn as_data(&self) -> Value {
        self.clone().into()
    }
}

impl AsData for u64 {
    fn as_data(&self) -> Value {
        (*self).into()
    }
}

impl AsData for f64 {
    fn as_data(&self) -> Value {
        super::model::number_value(*self)
    }
}

/// A bound and whether it is exclusive.
impl AsData for (Option<f64>, bool) {
    fn as_data(&self) -> Value {
        match self {
            (Some(n), exclusive) => {
                serde_json::json!({"value": super::model::number_value(*n), "exclusive": exclusive})
            }
            (None, _) => Value::Null,
        }
    }
}

impl AsData for super::model::CelRule {
    fn as_data(&self) -> Value {
        let mut rule = serde_json::Map::new();
        rule.insert("rule".into(), self.rule.as_str().into());
        for (key, value) in [
            ("message", &self.message),
            ("messageExpression", &self.message_expression),
            ("reason", &self.reason),
            ("fieldPath", &self.field_path),
        ] {
            if let Some(v) = value {
                rule.insert(key.into(), v.as_str().into());
            }
        }
        if let Some(b) = self.optional_old_self {
            rule.insert("optionalOldSelf".into(), b.into());
        }
        Value::Object(rule)
    }
}

impl AsData for Rules {
    fn as_data(&self) -> Value {
        self.iter().map(AsData::as_data).collect()
    }
}

impl<T: AsData> AsData for Option<T> {
    fn as_data(&self) -> Value {
        self.as_ref().map_or(Value::Null, AsData::as_data)
    }

    fn as_datum(&self) -> Datum {
        self.as_ref()
            .map_or(Datum::Value(Value::Null), AsData::as_datum)
    }
}

fn rule_keys(v: &Rules) -> BTreeSet<String> {
    v.iter().map(|r| r.key()).collect()
}

fn judge_rules_added(b: &Rules, o: &Rules) -> Verdict {
    let (bk, ok) = (rule_keys(b), rule_keys(o));
    let added: Vec<&str> = ok.difference(&bk).map(String::as_str).collect();
    (!added.is_empty()).then(|| {
        (
            Change::Added,
            Class::Breaking,
            format!("rule added: {}", added.join("; ")),
        )
    })
}

fn judge_rules_removed(b: &Rules, o: &Rules) -> Verdict {
    let (bk, ok) = (rule_keys(b), rule_keys(o));
    let removed: Vec<&str> = bk.difference(&ok).map(String::as_str).collect();
    (!removed.is_empty()).then(|| {
        (
            Change::Removed,
            Class::Compatible,
            format!("rule removed: {}", removed.join("; ")),
        )
    })
}

/// The same expression with another message, reason or fieldPath.
fn judge_rules_reworded(b: &Rules, o: &Rules) -> Verdict {
    let normalized = |v: &Rules| -> BTreeSet<super::model::CelRule> {
        v.iter()
            .map(|r| super::model::CelRule {
                rule: r.key(),
                ..r.clone()
            })
            .collect()
    };
    let (bn, on) = (normalized(b), normalized(o));
    let reworded: Vec<String> = bn
        .difference(&on)
        .filter(|r| on.iter().any(|x| x.rule == r.rule))
        .map(|r| r.rule.clone())
        .collect();
    (!reworded.is_empty()).then(|| {
        (
            Change::Changed,
            Class::Informational,
            format!(
                "message, reason or fieldPath changed: {}",
                reworded.join("; ")
            ),
        )
    })
}

/// Any difference breaks; the message shows both values as the table does (`show`).
fn judge_any_change<T: PartialEq>(show: impl Fn(&T) -> String) -> impl Fn(&T, &T) -> Verdict {
    move |b, o| {
        (b != o).then(|| {
            (
                Change::Changed,
                Class::Breaking,
                format!("{} -> {}", show(b), show(o)),
            )
        })
    }
}

fn judge_junctions(b: &Option<String>, o: &Option<String>) -> Verdict {
    match (b, o) {
        (None, Some(_)) => Some((
            Change::Added,
            Class::Breaking,
            "allOf/anyOf/oneOf/not added (not analysed further)".into(),
        )),
        (Some(_), None) => Some((
            Change::Removed,
            Class::Compatible,
            "allOf/anyOf/oneOf/not removed".into(),
        )),
        (Some(x), Some(y)) if x != y => Some((
            Change::Changed,
            Class::Breaking,
            "allOf/anyOf/oneOf/not changed (not analysed further)".into(),
        )),
        _ => None,
    }
}

fn judge_informational<T: PartialEq>(b: &T, o: &T) -> Verdict {
    (b != o).then(|| (Change::Changed, Class::Informational, "differs".into()))
}

#[cfg(test)]
mod tests;
