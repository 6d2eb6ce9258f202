//! The report: a stable, documented shape for JSON/YAML (`schemaVersion` 1, described in the
//! README). The commands layer renders it (a grouped, coloured table; Markdown for PR comments).
use serde::Serialize;

use super::diff::{Class, Finding};
use super::lcd::{Conflict, Dropped};
use super::model::Origin;

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
    /// `breaking`, `any` or `none`.
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
    pub compatible: usize,
    pub informational: usize,
    /// Findings at or above --fail-on (what the exit code is based on).
    pub failing: usize,
}

impl Summary {
    /// Counts one API's report; `threshold` is --fail-on's class.
    pub fn count(&mut self, api: &ApiReport, threshold: Option<Class>) {
        self.apis += 1;
        if !api.findings.is_empty() {
            self.apis_with_differences += 1;
        }
        for f in &api.findings {
            match f.class {
                Class::Breaking => self.breaking += 1,
                Class::Compatible => self.compatible += 1,
                Class::Informational => self.informational += 1,
            }
            if threshold.is_some_and(|t| f.class >= t) {
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

#[derive(Debug, Serialize)]
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
    /// A value the baseline accepts and another source rejects (patterns: a shortest such
    /// string); left out where the rule shows none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<String>,
    /// One per source, in source order; `value` is null where the source lacks the node.
    pub values: Vec<SourceValue>,
}

#[derive(Debug, Serialize)]
pub struct SourceValue {
    pub source: String,
    /// The attribute as data; null where the source lacks the node or the attribute.
    pub value: serde_json::Value,
    /// As the table shows it; null where the source lacks the node.
    pub text: Option<String>,
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
            witness: f.witness.clone(),
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
