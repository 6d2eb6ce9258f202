//! The report: a stable, documented shape for JSON/YAML (`schemaVersion` 1, described in the
//! README). The commands layer renders it (a grouped, coloured table; Markdown for PR comments).
use serde::Serialize;

use super::diff::{Class, Finding};
use super::finding::Datum;
use super::lcd::{Conflict, Dropped};
use super::model::SharedText;
use super::source::Origin;
use super::witness::Expect;

/// The version of the comparison report. 2: each source's value is data (`value`), with the
/// table's text beside it (`text`); in 1 `value` was the text.
pub const SCHEMA_VERSION: u32 = 2;

/// The version of the `--object` report.
pub const OBJECTS_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    pub sources: Vec<SourceInfo>,
    /// The label of the source others are judged against.
    pub baseline: String,
    /// The classes that fail, comma-separated (`breaking`, `unproven`, `changes-stored-data`,
    /// `changes-selection`), or `any` or `none`.
    pub fail_on: String,
    pub ignored_rules: Vec<String>,
    pub summary: Summary,
    pub apis: Vec<ApiReport>,
    /// Shown in the table only with --all.
    #[serde(skip)]
    pub show_informational: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    pub label: String,
    #[serde(flatten)]
    pub origin: Origin,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub apis: usize,
    pub apis_with_differences: usize,
    pub breaking: usize,
    pub unproven: usize,
    pub changes_stored_data: usize,
    pub changes_selection: usize,
    pub compatible: usize,
    pub informational: usize,
    /// Findings of a class --fail-on names (what the exit code is based on).
    pub failing: usize,
}

impl Summary {
    /// Counts one API's report.
    pub fn count(&mut self, api: &ApiReport, fail_on: &super::FailOn) {
        self.apis += 1;
        if !api.findings.is_empty() {
            self.apis_with_differences += 1;
        }
        for f in &api.findings {
            match f.class {
                Class::Breaking => self.breaking += 1,
                Class::Compatible => self.compatible += 1,
                Class::Unproven => self.unproven += 1,
                Class::ChangesStoredData => self.changes_stored_data += 1,
                Class::ChangesSelection => self.changes_selection += 1,
                Class::Informational => self.informational += 1,
            }
            if fail_on.fails(f.class) {
                self.failing += 1;
            }
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiReport {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub builtin: bool,
    pub presence: Vec<Presence>,
    pub findings: Vec<FindingReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lcd: Option<LcdReport>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Presence {
    pub source: String,
    pub present: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub versions: Vec<VersionPresence>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionPresence {
    pub name: String,
    pub served: bool,
    pub storage: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub path: String,
    pub attribute: String,
    pub change: String,
    /// `attribute-change`, the id `--ignore` takes.
    pub rule: String,
    pub class: Class,
    pub message: String,
    /// Under `.status`: written by controllers, not by clients.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub under_status: bool,
    /// For breaking findings: an object the baseline accepts and another source rejects or
    /// stores differently.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessReport>,
    /// Why a breaking (or unproven) finding has no witness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_witness: Option<String>,
    /// One per source, in source order; `value` is null where the source lacks the node.
    pub values: Vec<SourceValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessReport {
    /// The source that rejects it (or stores it differently).
    pub source: String,
    pub expect: Expect,
    /// The table's short form.
    pub short: String,
    /// Why the source rejects it, as the local validator says.
    pub reasons: Vec<String>,
    pub object: serde_json::Value,
    /// For a default removed or changed: the object as each source stores it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<StoredBy>,
    /// For a selectable field removed: the field selector the baseline serves and the source
    /// refuses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// For an update refused (a transition rule added): the update of `object` that the
    /// baseline accepts and the source refuses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<serde_json::Value>,
    /// With --prove: what the servers said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

/// The object as one source stores it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredBy {
    pub source: String,
    pub object: serde_json::Value,
}

/// A witness dry-run on the servers of the baseline and of the other source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proof {
    /// `proven`: the baseline's server accepts and the other's rejects (or stores otherwise);
    /// `disagrees`: the servers contradict the local judgement (a defect of this tool);
    /// `not-a-cluster`: a source is a file, so nothing was asked.
    pub verdict: String,
    pub baseline: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_message: Option<String>,
    pub other: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceValue {
    pub source: String,
    /// The attribute as data; null where the source lacks the node or the attribute.
    pub value: Datum,
    /// As the table shows it; null where the source lacks the node.
    pub text: Option<SharedText>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LcdReport {
    pub exists: bool,
    pub dropped: Vec<Dropped>,
    pub conflicts: Vec<Conflict>,
    pub notes: Vec<String>,
    /// The CRD manifest every source accepts (CRDs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<super::lcd::Manifest>,
}

impl FindingReport {
    pub fn new(f: &Finding, labels: &[String]) -> FindingReport {
        FindingReport {
            version: f.version.clone(),
            path: f.path.clone(),
            attribute: f.attribute.clone(),
            change: f.change.as_str().to_string(),
            rule: f.rule(),
            class: f.class,
            message: f.message.clone(),
            under_status: f.path == ".status"
                || f.path.starts_with(".status.")
                || f.path.starts_with(".status["),
            witness: f.witness.as_ref().map(|w| WitnessReport {
                source: labels[w.source].clone(),
                expect: w.expect,
                short: w.short.clone(),
                reasons: w.reasons.clone(),
                object: w.object.clone(),
                stored: w
                    .stored
                    .iter()
                    .map(|(i, object)| StoredBy {
                        source: labels[*i].clone(),
                        object: object.clone(),
                    })
                    .collect(),
                field_selector: w.field_selector.clone(),
                update: w.update.clone(),
                proof: None,
            }),
            no_witness: f.no_witness.clone(),
            values: f
                .values
                .iter()
                .zip(&f.data)
                .zip(labels)
                .map(|((text, value), l)| SourceValue {
                    source: l.clone(),
                    value: value.clone(),
                    text: text.clone(),
                })
                .collect(),
        }
    }
}

/// `--object`: which sources accept which object.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    pub schema_version: u32,
    pub objects: Vec<ObjectResult>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectResult {
    /// `kind/name` (from file, document N).
    pub object: String,
    pub file: String,
    pub results: Vec<SourceVerdict>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceVerdict {
    pub source: String,
    /// `accepted`, `rejected`, or `unknown-api` when the source does not serve the type.
    pub local: String,
    pub local_reasons: Vec<String>,
    /// CEL rules and formats that apply but could not be checked locally.
    pub unchecked: Vec<String>,
    /// With --server: `accepted` / `rejected` / `not-a-cluster`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_message: Option<String>,
}

impl ObjectReport {
    /// 1 when some source rejects an object.
    pub fn exit_code(&self) -> u8 {
        if self.rejected_anywhere() {
            super::exit::DIFFERENT
        } else {
            super::exit::SAME
        }
    }

    pub fn rejected_anywhere(&self) -> bool {
        self.objects.iter().any(|o| {
            o.results.iter().any(|r| {
                r.local != "accepted"
                    || r.server
                        .as_deref()
                        .is_some_and(|s| s != "accepted" && s != "not-a-cluster")
            })
        })
    }
}
