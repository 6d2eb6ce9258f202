//! PURE: what the diff finds and the witness search attaches, as data. Both walks produce and
//! refine these (the diff finds, the witness search shows or decides), and the report reads them;
//! neither walk needs the other to name them.
use serde::Serialize;
use serde_json::Value;

use super::model::SharedText;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Informational,
    Compatible,
    /// Every object is accepted as before, but some field selector is refused: a selectable
    /// field removed.
    ChangesSelection,
    /// Every object is accepted as before, but some is stored with other values: a default
    /// removed or changed.
    ChangesStoredData,
    /// May break, but not shown to: a CEL rule added that no generated object breaks, or one
    /// that could not be evaluated here.
    Unproven,
    Breaking,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Informational => "informational",
            Class::Compatible => "compatible",
            Class::ChangesSelection => "changes-selection",
            Class::ChangesStoredData => "changes-stored-data",
            Class::Unproven => "unproven",
            Class::Breaking => "breaking",
        }
    }

    /// Every class, mildest first.
    pub const ALL: [Class; 6] = [
        Class::Informational,
        Class::Compatible,
        Class::ChangesSelection,
        Class::ChangesStoredData,
        Class::Unproven,
        Class::Breaking,
    ];

    /// Whether a client of the baseline can notice it: an object refused (or maybe refused),
    /// stored with other values, or a selector refused. The findings that get a witness.
    pub fn is_noticeable(self) -> bool {
        matches!(
            self,
            Class::ChangesSelection | Class::ChangesStoredData | Class::Unproven | Class::Breaking
        )
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

/// A source's value of a finding's attribute as data (for JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Value(Value),
    /// A JSON string, shared with the model rather than copied (a description may be a
    /// hundred megabytes).
    Text(SharedText),
}

impl From<Value> for Datum {
    fn from(value: Value) -> Datum {
        Datum::Value(value)
    }
}

/// As the JSON it stands for.
impl Serialize for Datum {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Datum::Value(value) => value.serialize(serializer),
            Datum::Text(text) => serializer.serialize_str(text),
        }
    }
}

/// What a finding shows of each source: as the table shows it, and as data.
pub type Shown = (Vec<Option<SharedText>>, Vec<Datum>);

/// [`Shown`] from text and data of their own.
pub fn shown(values: Vec<Option<String>>, data: Vec<Value>) -> Shown {
    (
        values
            .into_iter()
            .map(|v| v.map(SharedText::from))
            .collect(),
        data.into_iter().map(Datum::Value).collect(),
    )
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
    /// does not have the node. Shared with the model where it is its text (a description).
    pub values: Vec<Option<SharedText>>,
    /// The same as data, for JSON: null where the source lacks the node or the attribute.
    pub data: Vec<Datum>,
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
    /// Accepts it, but refuses a list request that selects it by a field (`fieldSelector`).
    SelectorRefused,
    /// Creates it as the baseline does, but refuses an update of it (a transition rule: one
    /// that reads `oldSelf`) that the baseline accepts.
    UpdateRejected,
}

impl Expect {
    /// As a sentence says it: "rejected by b".
    pub fn words(self) -> &'static str {
        match self {
            Expect::Rejected => "rejected",
            Expect::StoredDifferently => "stored differently",
            Expect::SelectorRefused => "not selectable",
            Expect::UpdateRejected => "update rejected",
        }
    }
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
    /// For [`Expect::StoredDifferently`] by a default: the object as the baseline stores it,
    /// then as the other source does (source index, object).
    pub stored: Vec<(usize, Value)>,
    /// For [`Expect::SelectorRefused`]: the field selector (`spec.color=a`) the baseline
    /// accepts and the other source refuses.
    pub field_selector: Option<String>,
    /// For [`Expect::UpdateRejected`]: the update of `object` that the baseline accepts and
    /// the other source refuses.
    pub update: Option<Value>,
}
