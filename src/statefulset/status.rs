//! `--status`: both sides, where every claim and volume is, the journal, and what the next run
//! will do. Built from the same observation and decision as a real run, so it cannot disagree.
use serde::Serialize;

use super::decide::{Settings, next_step};
use super::model::{Journal, Names, Observed, VolumeMode};
use super::observe::claim_ordinal;
use super::step::Step;

/// What `--status` says next when nothing of a migration exists yet (and preflight would let
/// it start).
pub const START: &str = "start the migration: protect the PVs, then move ordinals highest first";

/// The version of the `--status` document.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub schema_version: u32,
    pub statefulset: String,
    pub source: SideSummary,
    pub destination: SideSummary,
    pub journal: Option<JournalSummary>,
    pub ordinals: Vec<OrdinalRow>,
    /// `shared` (the claims are copied) or `fresh`: the journal's, else this run's.
    pub volumes: VolumeMode,
    pub next_step: String,
    /// The run that holds the migration's Lease now (`host/pid/random`): it is driving.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_holder: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideSummary {
    pub context: String,
    pub namespace: String,
    pub exists: bool,
    pub start: Option<i32>,
    pub replicas: Option<i32>,
    pub ready_replicas: Option<i32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalSummary {
    pub direction: String,
    pub original_replicas: i32,
    pub original_start: i32,
    pub verified_bound: i32,
    pub complete: bool,
    pub cleaned_up: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrdinalRow {
    pub ordinal: i32,
    /// The ordinal's pod in each cluster; null where there is none.
    pub source_pod: Option<PodState>,
    pub destination_pod: Option<PodState>,
    pub claims: Vec<ClaimRow>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    pub name: String,
    /// Pending, Running, ... as the pod's status says.
    pub phase: String,
    pub ready: bool,
    pub terminating: bool,
    /// Why it is not Ready, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_ready: Option<String>,
}

impl PodState {
    /// One word for a table cell.
    pub fn word(&self) -> &str {
        match (self.terminating, self.ready) {
            (true, _) => "Terminating",
            (false, true) => "Ready",
            (false, false) if self.phase.is_empty() => "Pending",
            (false, false) => &self.phase,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRow {
    pub claim: String,
    /// The claim's volume: the source's where the claim is there (a copy keeps its volume).
    pub volume: Option<String>,
    /// The destination's claim's volume when it is another one (`--volumes=fresh`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_volume: Option<String>,
    pub in_source: bool,
    pub in_destination: bool,
    pub source_reclaim_policy: Option<String>,
    pub destination_reclaim_policy: Option<String>,
}

fn pod_state(view: &super::model::ClusterView, k: i32) -> Option<PodState> {
    view.pods.get(&k).map(|p| PodState {
        name: p.name.clone(),
        phase: p.phase.clone(),
        ready: p.ready,
        terminating: p.terminating,
        not_ready: p.not_ready.clone(),
    })
}

pub fn report(
    journal: Option<&Journal>,
    observed: &Observed,
    settings: &Settings,
    names: &Names,
) -> StatusReport {
    let summary = |view: &super::model::ClusterView, context: &str, namespace: &str| SideSummary {
        context: context.into(),
        namespace: namespace.into(),
        exists: view.set.is_some(),
        start: view.set.as_ref().map(|s| s.start),
        replicas: view.set.as_ref().map(|s| s.replicas),
        ready_replicas: view.set.as_ref().map(|s| s.ready_replicas),
    };
    let templates: Vec<String> = journal
        .map(|j| j.claim_templates.clone())
        .or_else(|| {
            observed
                .source
                .set
                .as_ref()
                .map(|s| s.claim_templates.clone())
        })
        .unwrap_or_default();
    let mut ordinals: std::collections::BTreeSet<i32> = observed
        .source
        .pods
        .keys()
        .chain(observed.destination.pods.keys())
        .copied()
        .collect();
    for claim in observed
        .source
        .claims
        .keys()
        .chain(observed.destination.claims.keys())
    {
        ordinals.extend(claim_ordinal(&templates, &settings.name, claim));
    }
    if let Some(j) = journal {
        ordinals.extend(j.start..j.end());
    }
    let rows = ordinals
        .into_iter()
        .rev()
        .map(|k| OrdinalRow {
            ordinal: k,
            source_pod: pod_state(&observed.source, k),
            destination_pod: pod_state(&observed.destination, k),
            claims: templates
                .iter()
                .map(|t| {
                    let claim = super::model::claim_name(t, &settings.name, k);
                    let s = observed.source.claims.get(&claim);
                    let d = observed.destination.claims.get(&claim);
                    let volume = s.or(d).and_then(|c| c.volume_name.clone());
                    let destination_volume = d
                        .and_then(|c| c.volume_name.clone())
                        .filter(|v| Some(v) != volume.as_ref());
                    let policy = |view: &super::model::ClusterView, volume: Option<&String>| {
                        volume
                            .and_then(|v| view.volumes.get(v))
                            .map(|v| v.reclaim_policy.clone())
                    };
                    ClaimRow {
                        in_source: s.is_some(),
                        in_destination: d.is_some(),
                        source_reclaim_policy: policy(&observed.source, volume.as_ref()),
                        destination_reclaim_policy: policy(
                            &observed.destination,
                            destination_volume.as_ref().or(volume.as_ref()),
                        ),
                        volume,
                        destination_volume,
                        claim,
                    }
                })
                .collect(),
        })
        .collect();
    let next = if journal.is_none() && observed.destination.set.is_none() {
        START.to_string()
    } else {
        let step = next_step(journal, observed, settings);
        let offer = (step == Step::Done)
            .then(|| {
                super::cleanup::offer(&settings.name, journal, observed, &names.source_context)
            })
            .flatten();
        match offer {
            Some(offer) => format!("{}; {offer}", step.describe(names)),
            None => step.describe(names),
        }
    };
    StatusReport {
        schema_version: SCHEMA_VERSION,
        statefulset: settings.name.clone(),
        source: summary(
            &observed.source,
            &names.source_context,
            &names.source_namespace,
        ),
        destination: summary(
            &observed.destination,
            &names.destination_context,
            &names.destination_namespace,
        ),
        journal: journal.map(|j| JournalSummary {
            direction: format!("{:?}", j.direction).to_lowercase(),
            original_replicas: j.replicas,
            original_start: j.start,
            verified_bound: j.verified_bound,
            complete: j.complete,
            cleaned_up: j.cleaned_up,
        }),
        ordinals: rows,
        volumes: journal.map_or(VolumeMode::Shared, |j| j.volumes),
        next_step: next,
        lease_holder: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::model::*;

    /// Ordinal 0's claim with the volume `destination` has in the destination (none: only in
    /// the source).
    fn claim_row(in_destination: Option<(&str, &str)>) -> ClaimRow {
        let mut source = ClusterView {
            set: Some(fixtures::set("u", 0, 1, Retention::retain())),
            ..Default::default()
        };
        fixtures::add_claim(&mut source, "db", "data-web-0", "pv-a", "Retain");
        let mut destination = ClusterView::default();
        if let Some((volume, policy)) = in_destination {
            fixtures::add_claim(&mut destination, "db", "data-web-0", volume, policy);
        }
        let observed = Observed {
            source,
            destination,
        };
        let settings = Settings {
            name: "web".into(),
            batch: 1,
            recreate_destination: false,
        };
        let mut report = report(None, &observed, &settings, &Names::fixture());
        report.ordinals.pop().unwrap().claims.pop().unwrap()
    }

    #[test]
    fn a_fresh_claim_shows_its_own_volume_and_policy_beside_the_sources() {
        let row = claim_row(Some(("pv-b", "Delete")));
        assert_eq!(row.volume.as_deref(), Some("pv-a"));
        assert_eq!(row.destination_volume.as_deref(), Some("pv-b"));
        assert_eq!(row.source_reclaim_policy.as_deref(), Some("Retain"));
        assert_eq!(row.destination_reclaim_policy.as_deref(), Some("Delete"));
    }

    #[test]
    fn a_copied_claim_shares_the_volume_and_names_it_once() {
        let row = claim_row(Some(("pv-a", "Delete")));
        assert_eq!(row.destination_volume, None);
        assert_eq!(row.destination_reclaim_policy.as_deref(), Some("Delete"));
        let json = serde_json::to_value(&row).unwrap();
        assert!(json.get("destinationVolume").is_none(), "{json}");
        let row = claim_row(None);
        assert_eq!((row.in_source, row.in_destination), (true, false));
        assert_eq!(row.destination_reclaim_policy, None);
    }
}
