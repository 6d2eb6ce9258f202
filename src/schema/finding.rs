//! PURE: what the diff finds and the witness search attaches, as data. Both walks produce and
//! refine these (the diff finds, the witness search shows or decides), and the report reads them;
//! neither walk needs the other to name them.
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Informational,
    Compatible,
    /// May break, but not shown to: a CEL rule added that no generated object breaks, or one
    /// that could not be evaluated here. Between compatible and breaking, so that
    /// `--fail-on unproven` fails on both it and breaking.
    Unproven,
    Breaking,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Informational => "informational",
            Class::Compatible => "compatible",
            Class::Unproven => "unproven",
            Class::Breaking => "breaking",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Removed,
    Changed,
    /// Accepts less than the baseline.
    Narrowed,
    /// Accepts more than the baseline.
    Widened,
    /// Differs, and whether it accepts less could not be told (it is counted as breaking).
    Undecided,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::Narrowed => "narrowed",
            Change::Widened => "widened",
            Change::Undecided => "undecided",
        }
    }
}

/// One difference at one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `None` for differences of the API itself (scope, names, versions).
    pub version: Option<String>,
    /// JSON path from the object root (`.spec.ports[*].port`, `.metadata.labels.*`); empty for
    /// API-level findings.
    pub path: String,
    /// What differs: `field`, `type`, `enum`, `maxLength`, `x-kubernetes-validations`, ...
    pub attribute: String,
    pub change: Change,
    pub class: Class,
    pub message: String,
    /// One entry per source, in source order, as the table shows it; `None` where the source
    /// does not have the node.
    pub values: Vec<Option<String>>,
    /// The same as data, for JSON: null where the source lacks the node or the attribute.
    pub data: Vec<Value>,
    /// A value the baseline accepts and another source rejects, where the rule itself shows one
    /// (patterns: a shortest such string); the witness search starts from it.
    pub sample: Option<String>,
    /// An object the baseline accepts and another source rejects or stores differently
    /// (breaking findings; see [`super::witness`]).
    pub witness: Option<Witness>,
    /// Why a breaking finding has no witness.
    pub no_witness: Option<String>,
}

impl Finding {
    /// The id used by `--ignore`: `enum-widened`, `field-removed`, ...
    pub fn rule(&self) -> String {
        format!("{}-{}", self.attribute, self.change.as_str())
    }
}

/// What the other source does with the witness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Refuses it (with fieldValidation=Strict).
    Rejected,
    /// Accepts it but stores something else (a default, a status dropped on create).
    StoredDifferently,
}

/// An object that shows a finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// The source (index) that rejects it or stores it differently.
    pub source: usize,
    pub expect: Expect,
    /// The whole manifest: apiVersion, kind, metadata.name, and what the schema needs.
    pub object: Value,
    /// A short form for the table: `.spec.x: "a"`, `.spec without x`, ...
    pub short: String,
    /// Why the other source rejects it, as the local validator says.
    pub reasons: Vec<String>,
}
