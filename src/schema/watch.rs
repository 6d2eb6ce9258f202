//! `schema-diff --watch` in the domain: [`watch`] (the engine: clusters in, typed events out to
//! a [`Listener`]) and its pure core here, which says what changed for one API between two
//! comparisons of it (findings that appeared or went away, sources that gained or lost it, the
//! LCD narrowed or widened) and how bad that is. The commands layer prints, pages and exports
//! the events.
//!
//! - `feed`: per cluster, a kube-runtime watcher of its CRDs and a probe (I/O);
//! - `monitor`: the sources as last seen, the debounce, and what recomputes on a change (no I/O);
//! - `listener`: what a watch tells its [`Listener`], and the settings it is given;
//! - `shared`: one cluster's feed followed by several watches (a controller's checks);
//! - `engine`: the loop that feeds the monitor and ends at `stop` or when the listener says so.
mod engine;
mod feed;
mod listener;
mod monitor;
mod shared;

use serde::Serialize;

use super::diff::{self, Class};
use super::lcd::Manifest;
use super::load::{self, Selection};
use super::report::{ApiReport, FindingReport};
pub use engine::{run, run_shared, watch};
pub use feed::Unanswered;
pub use listener::{ApiUpdate, Ended, Flow, Listener, Note, Settings};
pub use shared::SharedFeed;

/// The version of the NDJSON event lines (`-o json`).
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// Now, as events give their time: RFC 3339, UTC, to the second.
pub fn timestamp() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    now.round(k8s_openapi::jiff::Unit::Second)
        .unwrap_or(now)
        .to_string()
}

/// What the watch keeps of one API between changes.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiState {
    pub findings: Vec<FindingReport>,
    /// Per source, in source order: the versions it serves, `None` where it lacks the API.
    pub served: Vec<(String, Option<Vec<String>>)>,
    /// The LCD manifest; `None` when the sources have no LCD (or the API is built in).
    pub lcd: Option<Manifest>,
}

impl ApiState {
    /// The state of an API from its report (compared with `Outcome::Both`); the report keeps
    /// its findings but gives up its LCD, which the table and JSON report do not show.
    pub fn of(report: &mut ApiReport) -> ApiState {
        let lcd = report
            .lcd
            .take()
            .and_then(|l| l.exists.then_some(l.manifest).flatten());
        ApiState {
            findings: report.findings.clone(),
            served: report
                .presence
                .iter()
                .map(|p| {
                    let served = p
                        .versions
                        .iter()
                        .filter(|v| v.served)
                        .map(|v| v.name.clone());
                    (p.source.clone(), p.present.then(|| served.collect()))
                })
                .collect(),
            lcd,
        }
    }

    /// The findings of `class` that concern `source`, i.e. where its value differs from the
    /// baseline's (as the metrics count them per source).
    pub fn count(&self, source: &str, baseline: &str, class: Class) -> usize {
        self.findings
            .iter()
            .filter(|f| f.class == class && concerns(f, source, baseline))
            .count()
    }
}

/// Whether `source` is one of the sources a finding is about: not the baseline, and its value
/// differs from the baseline's.
pub fn concerns(f: &FindingReport, source: &str, baseline: &str) -> bool {
    let value = |label: &str| f.values.iter().find(|v| v.source == label);
    match (value(source), value(baseline)) {
        (Some(v), Some(b)) => source != baseline && (v.value != b.value || v.text != b.text),
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventType {
    /// The initial report, before any change.
    Initial,
    /// An API changed on one or more sources.
    Change,
    /// A cluster stopped answering.
    SourceLost,
    /// A cluster answers again; changes made meanwhile follow as `change` events.
    SourceBack,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Initial => "initial",
            EventType::Change => "change",
            EventType::SourceLost => "source-lost",
            EventType::SourceBack => "source-back",
        }
    }
}

/// How an API's presence changed across all sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiChange {
    /// No source had it before.
    Added,
    /// No source has it now.
    Removed,
    Changed,
}

/// How the LCD changed: narrowed means some object every source accepted before is refused by
/// the LCD now; widened, the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LcdChange {
    Narrowed,
    Widened,
    NarrowedAndWidened,
    /// Only what does not decide acceptance (descriptions, defaults, ...).
    Reworded,
    /// There was an LCD and there is none now.
    Lost,
    /// There was none and there is one now.
    Found,
}

impl LcdChange {
    pub fn as_str(self) -> &'static str {
        match self {
            LcdChange::Narrowed => "narrowed",
            LcdChange::Widened => "widened",
            LcdChange::NarrowedAndWidened => "narrowed and widened",
            LcdChange::Reworded => "reworded",
            LcdChange::Lost => "lost",
            LcdChange::Found => "found",
        }
    }

    fn breaks(self) -> bool {
        matches!(
            self,
            LcdChange::Narrowed | LcdChange::NarrowedAndWidened | LcdChange::Lost
        )
    }
}

/// One source's presence before and after (the versions it serves; `null` without the API).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceChange {
    pub source: String,
    pub before: Option<Vec<String>>,
    pub after: Option<Vec<String>>,
}

/// One line of the watch's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchEvent {
    pub schema_version: u32,
    /// RFC 3339, UTC.
    pub time: String,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The sources whose change (or outage) this is.
    pub sources: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// How bad the change is: `breaking` when something that worked before may fail now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_change: Option<ApiChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub presence: Vec<PresenceChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_findings: Vec<FindingReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gone_findings: Vec<FindingReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lcd: Option<LcdChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl WatchEvent {
    /// Whether `--fail-on` counts this event, as the one-shot diff counts a finding: its class,
    /// or the class of a finding it brings, is one of the set (`--on-breaking` and `--exit-on
    /// breaking` act on these).
    pub fn fails(&self, fail_on: &super::FailOn) -> bool {
        self.class
            .into_iter()
            .chain(self.new_findings.iter().map(|f| f.class))
            .any(|c| fail_on.fails(c))
    }

    /// A `source-lost` or `source-back` event.
    pub fn source(kind: EventType, source: &str, time: String, message: Option<String>) -> Self {
        WatchEvent {
            schema_version: EVENT_SCHEMA_VERSION,
            time,
            kind,
            sources: vec![source.to_string()],
            api: None,
            class: None,
            api_change: None,
            presence: Vec::new(),
            new_findings: Vec::new(),
            gone_findings: Vec::new(),
            lcd: None,
            message,
        }
    }
}

/// A finding's identity across comparisons: where, which rule, and what it says (which names
/// the values, so a finding whose values changed is one gone and one new).
fn same_finding(a: &FindingReport, b: &FindingReport) -> bool {
    a.version == b.version
        && a.path == b.path
        && a.rule == b.rule
        && a.message == b.message
        && a.class == b.class
}

/// PURE: the change of API `name` from `before` to `after` (`None`: no source has it), seen
/// after `sources` changed; `None` when nothing a user would see changed.
pub fn change(
    name: &str,
    before: Option<&ApiState>,
    after: Option<&ApiState>,
    sources: Vec<String>,
    time: String,
) -> Option<WatchEvent> {
    let empty = ApiState {
        findings: Vec::new(),
        served: Vec::new(),
        lcd: None,
    };
    let (old, new) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
    let api_change = match (before, after) {
        (None, None) => return None,
        (None, Some(_)) => ApiChange::Added,
        (Some(_), None) => ApiChange::Removed,
        (Some(_), Some(_)) => ApiChange::Changed,
    };
    let new_findings: Vec<FindingReport> = new
        .findings
        .iter()
        .filter(|f| !old.findings.iter().any(|o| same_finding(o, f)))
        .cloned()
        .collect();
    let gone_findings: Vec<FindingReport> = old
        .findings
        .iter()
        .filter(|f| !new.findings.iter().any(|n| same_finding(n, f)))
        .cloned()
        .collect();
    let served_of = |state: &ApiState, source: &str| {
        state
            .served
            .iter()
            .find(|(s, _)| s == source)
            .and_then(|(_, v)| v.clone())
    };
    let mut labels: Vec<&String> = old.served.iter().map(|(s, _)| s).collect();
    for (s, _) in &new.served {
        if !labels.contains(&s) {
            labels.push(s);
        }
    }
    let presence: Vec<PresenceChange> = labels
        .into_iter()
        .map(|s| PresenceChange {
            source: s.clone(),
            before: served_of(old, s),
            after: served_of(new, s),
        })
        .filter(|p| p.before != p.after)
        .collect();
    // The worst a client of the old LCD can notice in the new one besides a refusal (a
    // default or a selectable field gone), which the event's class then carries.
    let mut lcd_noticed = None;
    let lcd = match (&old.lcd, &new.lcd) {
        (Some(a), Some(b)) if a == b => None,
        (Some(a), Some(b)) => {
            let (change, worst) = lcd_diff(a, b);
            lcd_noticed = worst.filter(|c| c.is_noticeable());
            Some(change)
        }
        (Some(_), None) => Some(LcdChange::Lost),
        (None, Some(_)) if before.is_some() => Some(LcdChange::Found),
        (None, _) => None,
    };
    if new_findings.is_empty() && gone_findings.is_empty() && presence.is_empty() && lcd.is_none() {
        return None;
    }
    let lost_service = presence.iter().any(|p| match (&p.before, &p.after) {
        (Some(b), Some(a)) => b.iter().any(|v| !a.contains(v)),
        (Some(_), None) => true,
        _ => false,
    });
    let worst_new = new_findings
        .iter()
        .map(|f| f.class)
        .chain(lcd_noticed)
        .max();
    let class = if api_change == ApiChange::Added {
        // Nothing can have relied on an API no source had.
        Class::Compatible
    } else if lost_service || lcd.is_some_and(LcdChange::breaks) {
        Class::Breaking
    } else {
        let only_wording = lcd.is_none_or(|l| l == LcdChange::Reworded)
            && presence.is_empty()
            && gone_findings
                .iter()
                .all(|f| f.class == Class::Informational);
        match worst_new {
            Some(c) if c > Class::Compatible => c,
            _ if only_wording => worst_new.unwrap_or(Class::Informational),
            _ => Class::Compatible,
        }
    };
    Some(WatchEvent {
        schema_version: EVENT_SCHEMA_VERSION,
        time,
        kind: EventType::Change,
        sources,
        api: Some(name.to_string()),
        class: Some(class),
        api_change: Some(api_change),
        presence,
        new_findings,
        gone_findings,
        lcd,
        message: None,
    })
}

/// PURE: how the LCD went from `before` to `after`, by diffing the two manifests as two sources
/// with `before` as the baseline: a breaking (or maybe breaking) finding means an object the old
/// LCD accepted is refused now.
pub fn lcd_change(before: &Manifest, after: &Manifest) -> LcdChange {
    lcd_diff(before, after).0
}

/// PURE: [`lcd_change`], and the worst class of the findings between the two LCDs (`None`
/// where one does not read as a CRD).
fn lcd_diff(before: &Manifest, after: &Manifest) -> (LcdChange, Option<Class>) {
    let def = |m: &Manifest| {
        load::crd_from_value(&m.to_value(), "LCD", &Selection::default())
            .ok()
            .flatten()
    };
    let (Some(a), Some(b)) = (def(before), def(after)) else {
        return (LcdChange::NarrowedAndWidened, None);
    };
    let findings = diff::diff_api(&[Some(&a), Some(&b)], 0);
    let worst = findings.iter().map(|f| f.class).max();
    let narrowed = findings
        .iter()
        .any(|f| matches!(f.class, Class::Breaking | Class::Unproven));
    let widened = findings.iter().any(|f| f.class == Class::Compatible);
    let change = match (narrowed, widened) {
        (true, true) => LcdChange::NarrowedAndWidened,
        (true, false) => LcdChange::Narrowed,
        (false, true) => LcdChange::Widened,
        (false, false) => LcdChange::Reworded,
    };
    (change, worst)
}

#[cfg(test)]
mod tests;
