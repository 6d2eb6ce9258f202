//! Reads both clusters into the plain [`Observed`] struct. No decisions here.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::ListParams;

use super::copy::{COPY_LABEL, SOURCE_UID_ANNOTATION};
use super::model::{ClaimView, ClusterView, Observed, PodView, Retention, SetView, VolumeView};
use crate::cluster::Cluster;
use crate::error::Result;

/// Where the set lives on one side.
#[derive(Debug, Clone)]
pub struct Location {
    pub namespace: String,
    pub name: String,
    /// The value of [`COPY_LABEL`] on copies made for this migration.
    pub copy_label: String,
}

/// PURE: the set as the decisions see it. It runs on every loop iteration: the fields are read
/// borrowed, and only the ones the view keeps are copied (not the spec's pod template).
pub fn set_view(set: &StatefulSet) -> SetView {
    let spec = set.spec.as_ref();
    let status = set.status.as_ref();
    let retention = spec.and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let policy = |p: Option<&String>| p.cloned().unwrap_or_else(|| "Retain".into());
    SetView {
        uid: set.metadata.uid.clone().unwrap_or_default(),
        resource_version: set.metadata.resource_version.clone().unwrap_or_default(),
        generation: set.metadata.generation.unwrap_or_default(),
        replicas: spec.and_then(|s| s.replicas).unwrap_or(1),
        start: spec
            .and_then(|s| s.ordinals.as_ref())
            .and_then(|o| o.start)
            .unwrap_or(0),
        observed_generation: status
            .and_then(|s| s.observed_generation)
            .unwrap_or_default(),
        ready_replicas: status.and_then(|s| s.ready_replicas).unwrap_or_default(),
        available_replicas: status
            .and_then(|s| s.available_replicas)
            .unwrap_or_default(),
        retention: Retention {
            when_scaled: policy(retention.and_then(|r| r.when_scaled.as_ref())),
            when_deleted: policy(retention.and_then(|r| r.when_deleted.as_ref())),
        },
        migrated_from_uid: set
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SOURCE_UID_ANNOTATION).cloned()),
        claim_templates: spec
            .and_then(|s| s.volume_claim_templates.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|t| t.metadata.name.clone())
            .collect(),
    }
}

/// The ordinal of a pod named `<set>-<n>`.
pub fn ordinal_of(set: &str, pod: &str) -> Option<i32> {
    let rest = pod.strip_prefix(set)?.strip_prefix('-')?;
    if rest.is_empty()
        || !rest.bytes().all(|b| b.is_ascii_digit())
        || (rest.len() > 1 && rest.starts_with('0'))
    {
        return None;
    }
    rest.parse().ok()
}

/// The ordinal of a claim named `<template>-<set>-<n>` for one of `templates`.
pub fn claim_ordinal(templates: &[String], set: &str, claim: &str) -> Option<i32> {
    templates
        .iter()
        .find_map(|t| ordinal_of(set, claim.strip_prefix(t)?.strip_prefix('-')?))
}

pub fn pod_view(pod: &Pod) -> PodView {
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    PodView {
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        ready,
        terminating: pod.metadata.deletion_timestamp.is_some(),
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
        not_ready: (!ready).then(|| not_ready_reason(pod)),
    }
}

/// PURE: why `pod` is not Ready, in the words of whoever holds it back: the scheduler (a
/// PodScheduled condition that is False), the kubelet (a container waiting or terminated), or
/// the Ready condition itself.
pub fn not_ready_reason(pod: &Pod) -> String {
    if pod.metadata.deletion_timestamp.is_some() {
        return "Terminating".into();
    }
    let status = pod.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".into());
    let conditions = status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let said = |reason: Option<&String>, message: Option<&String>| match (reason, message) {
        (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
        (Some(r), _) => r.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => String::new(),
    };
    if let Some(c) = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    {
        let why = said(c.reason.as_ref(), c.message.as_ref());
        return format!("{phase}, not scheduled: {why}");
    }
    let containers = status
        .and_then(|s| s.init_container_statuses.as_ref())
        .into_iter()
        .flatten()
        .chain(
            status
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten(),
        );
    for c in containers.filter(|c| !c.ready) {
        let Some(state) = c.state.as_ref() else {
            continue;
        };
        if let Some(w) = &state.waiting {
            return format!(
                "{phase}, container {} waiting: {}",
                c.name,
                said(w.reason.as_ref(), w.message.as_ref())
            );
        }
        if let Some(t) = &state.terminated {
            let why = said(t.reason.as_ref(), t.message.as_ref());
            return format!(
                "{phase}, container {} terminated with exit code {}{}",
                c.name,
                t.exit_code,
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            );
        }
    }
    match conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status != "True")
    {
        Some(c) => {
            let why = said(c.reason.as_ref(), c.message.as_ref());
            if why.is_empty() {
                format!("{phase}, not Ready")
            } else {
                format!("{phase}, not Ready: {why}")
            }
        }
        None => format!("{phase}, not Ready yet"),
    }
}

/// How many warning events a waiting pod's reason and a timeout error quote.
pub const WARNINGS_TOLD: usize = 3;

/// When an event last happened, by whichever clock its reporter filled in.
fn last_seen(event: &Event) -> Option<k8s_openapi::jiff::Timestamp> {
    let series = event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref());
    [
        series.map(|t| t.0),
        event.last_timestamp.as_ref().map(|t| t.0),
        event.event_time.as_ref().map(|t| t.0),
        event.metadata.creation_timestamp.as_ref().map(|t| t.0),
    ]
    .into_iter()
    .flatten()
    .max()
}

/// PURE: the latest Warning events about the pod with `uid`, newest first and one per reason
/// (a reason repeats with its newest message), at most `most`: `Reason: message (N times)`.
/// Events of an earlier pod of the same name are not this pod's, and a reason whose newest
/// message `said` already holds (the scheduler puts its verdict in both) would only repeat it.
pub fn latest_warnings(events: &[Event], uid: &str, said: &str, most: usize) -> Vec<String> {
    let mut warnings: Vec<&Event> = events
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .filter(|e| e.involved_object.uid.as_deref() == Some(uid))
        .collect();
    warnings.sort_by_key(|e| std::cmp::Reverse(last_seen(e)));
    let mut told: Vec<String> = Vec::new();
    let mut reasons: BTreeSet<String> = BTreeSet::new();
    for e in warnings {
        let reason = e.reason.clone().unwrap_or_default();
        if !reasons.insert(reason.clone()) {
            continue;
        }
        let count = e
            .series
            .as_ref()
            .and_then(|s| s.count)
            .or(e.count)
            .unwrap_or(1);
        let message = e.message.clone().unwrap_or_default();
        let message = message.trim();
        // Judged on the reason's newest event, so that an older verdict of the scheduler's is
        // not dug up once the status says the newer one.
        if !message.is_empty() && said.contains(message) {
            continue;
        }
        let mut line = match (reason.is_empty(), message.is_empty()) {
            (false, false) => format!("{reason}: {message}"),
            (false, true) => reason,
            _ => message.to_string(),
        };
        if count > 1 {
            line.push_str(&format!(" ({count} times)"));
        }
        told.push(line);
        if told.len() == most {
            break;
        }
    }
    told
}

/// The latest Warning events of a pod (see [`latest_warnings`]). Best effort: events are a
/// help to the reader, so a denied or failed read says nothing rather than stopping a wait.
pub async fn pod_warnings(events: &Api<Event>, pod: &str, uid: &str, said: &str) -> Vec<String> {
    let lp = ListParams::default()
        .fields(&format!("involvedObject.name={pod},type=Warning"))
        .match_any();
    match events.list(&lp).await {
        Ok(list) => latest_warnings(&list.items, uid, said, WARNINGS_TOLD),
        Err(_) => Vec::new(),
    }
}

/// What to read besides the set and its pods: the claims of these templates, the
/// PodDisruptionBudgets of these names. Fixed for a migration once the journal is written.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub templates: Vec<String>,
    pub budgets: Vec<String>,
}

impl Scope {
    /// What a migration with this journal reads.
    pub fn of(journal: &super::model::Journal) -> Scope {
        Scope {
            templates: journal.claim_templates.clone(),
            budgets: journal.budgets.iter().map(|b| b.name.clone()).collect(),
        }
    }
}

/// Reads one side.
pub async fn observe_side(cluster: &Cluster, at: &Location, scope: &Scope) -> Result<ClusterView> {
    let templates = &scope.templates;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), &at.namespace);
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), &at.namespace);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), &at.namespace);
    let volumes: Api<PersistentVolume> = Api::all(cluster.client.clone());
    // Lists come from the API server's watch cache (resourceVersion=0): a consistent list waits
    // for the cache to catch up after every write, which made each loop ~100 ms slower. A stale
    // list is safe here: it can only show an older state, every write has a precondition or is
    // create-if-absent, and the one check that guards against split brain re-reads live
    // (act::resize). The StatefulSets themselves are read with consistent GETs.
    let lp = ListParams::default().match_any();
    // PVs are cluster-wide and may be many: list only our copies by label, and get the ones
    // the claims name.
    let copies = ListParams::default()
        .match_any()
        .labels(&format!("{COPY_LABEL}={}", at.copy_label));
    // Budgets are read only when the journal names some: most sets have none.
    let budgets = async {
        if scope.budgets.is_empty() {
            return Ok(Vec::new());
        }
        let api: Api<PodDisruptionBudget> = Api::namespaced(cluster.client.clone(), &at.namespace);
        Ok(cluster
            .call("list PodDisruptionBudgets", api.list(&lp))
            .await?
            .items)
    };
    let (set, pod_list, claim_list, copy_list, budget_list) = tokio::try_join!(
        cluster.call("read the StatefulSet", sets.get_opt(&at.name)),
        cluster.call("list pods", pods.list(&lp)),
        cluster.call("list PersistentVolumeClaims", claims.list(&lp)),
        cluster.call("list PersistentVolumes", volumes.list(&copies)),
        budgets,
    )?;
    let named: BTreeSet<String> = claim_list
        .items
        .iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .and_then(|n| claim_ordinal(templates, &at.name, n))
                .is_some()
        })
        .filter_map(|c| c.spec.as_ref().and_then(|s| s.volume_name.clone()))
        .filter(|v| {
            !v.is_empty()
                && !copy_list
                    .items
                    .iter()
                    .any(|pv| pv.metadata.name.as_ref() == Some(v))
        })
        .collect();
    let fetched = futures::future::try_join_all(
        named
            .iter()
            .map(|v| cluster.call("read a PersistentVolume", volumes.get_opt(v))),
    )
    .await?;
    let fetched: Vec<PersistentVolume> = fetched.into_iter().flatten().collect();
    Ok(side_view(
        at,
        scope,
        set.as_ref(),
        &pod_list.items,
        &claim_list.items,
        copy_list.items.iter().chain(&fetched),
        &budget_list,
    ))
}

/// PURE: one side as the decisions see it, from its objects: the set (if any), the pods,
/// claims and budgets of its namespace, and PVs (any superset of the ones the set's claims
/// name and the copies; the others are left out here).
pub fn side_view<'a>(
    at: &Location,
    scope: &Scope,
    set: Option<&StatefulSet>,
    pod_list: impl IntoIterator<Item = &'a Pod>,
    claim_list: impl IntoIterator<Item = &'a PersistentVolumeClaim>,
    volume_list: impl IntoIterator<Item = &'a PersistentVolume>,
    budget_list: impl IntoIterator<Item = &'a PodDisruptionBudget>,
) -> ClusterView {
    let templates = &scope.templates;
    let mut view = ClusterView {
        set: set.map(set_view),
        budgets: budget_list
            .into_iter()
            .filter_map(|b| {
                let name = b.metadata.name.clone()?;
                scope
                    .budgets
                    .contains(&name)
                    .then(|| (name, super::budget::spec_of(b)))
            })
            .collect(),
        ..Default::default()
    };
    // Every pod named like an ordinal counts, owned or not: safety over precision.
    for pod in pod_list {
        if let Some(k) = pod
            .metadata
            .name
            .as_deref()
            .and_then(|n| ordinal_of(&at.name, n))
        {
            view.pods.insert(k, pod_view(pod));
        }
    }
    for claim in claim_list {
        let name = claim.metadata.name.clone().unwrap_or_default();
        if claim_ordinal(templates, &at.name, &name).is_none() {
            continue;
        }
        let copied = claim
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(COPY_LABEL))
            == Some(&at.copy_label);
        view.claims.insert(
            name,
            ClaimView {
                volume_name: claim
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_name.clone())
                    .filter(|v| !v.is_empty()),
                bound: claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"),
                copied,
            },
        );
    }
    view.volumes = volume_views(at, &view.claims, volume_list);
    view
}

/// PURE: the PVs of one side that the decisions see, of `volume_list` (any superset): those
/// bound to `claims`, named by them, or copies of this migration's.
pub fn volume_views<'a>(
    at: &Location,
    claims: &BTreeMap<String, ClaimView>,
    volume_list: impl IntoIterator<Item = &'a PersistentVolume>,
) -> BTreeMap<String, VolumeView> {
    // The watch cache holds every PV of the cluster (a pool of hundreds), and this runs on every
    // loop iteration: each PV is judged on borrowed fields, and only the set's own are copied.
    let referenced: std::collections::BTreeSet<&str> = claims
        .values()
        .filter_map(|c| c.volume_name.as_deref())
        .collect();
    let mut volumes = BTreeMap::new();
    for volume in volume_list {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let spec = volume.spec.as_ref();
        let claim_ref = spec.and_then(|s| s.claim_ref.as_ref());
        let ours = claim_ref.is_some_and(|r| {
            r.namespace.as_deref().unwrap_or_default() == at.namespace
                && claims.contains_key(r.name.as_deref().unwrap_or_default())
        });
        let copied = volume
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(COPY_LABEL))
            == Some(&at.copy_label);
        if ours || copied || referenced.contains(name) {
            volumes.insert(
                name.to_string(),
                VolumeView {
                    reclaim_policy: spec
                        .and_then(|s| s.persistent_volume_reclaim_policy.clone())
                        .unwrap_or_else(|| "Retain".into()),
                    claim: claim_ref.map(|r| {
                        (
                            r.namespace.clone().unwrap_or_default(),
                            r.name.clone().unwrap_or_default(),
                        )
                    }),
                    copied,
                },
            );
        }
    }
    volumes
}

pub async fn observe(
    source: (&Cluster, &Location),
    destination: (&Cluster, &Location),
    scope: &Scope,
) -> Result<Observed> {
    let (source, destination) = tokio::try_join!(
        observe_side(source.0, source.1, scope),
        observe_side(destination.0, destination.1, scope)
    )?;
    Ok(Observed {
        source,
        destination,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "web-3"}, "status": status}))
            .unwrap()
    }

    fn event(uid: &str, type_: &str, reason: &str, at: &str, extra: serde_json::Value) -> Event {
        let mut e = serde_json::json!({"metadata": {"name": format!("web-3.{reason}{at}")},
            "involvedObject": {"kind": "Pod", "name": "web-3", "uid": uid},
            "type": type_, "reason": reason, "message": format!("{reason} at {at}"),
            "lastTimestamp": at});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        serde_json::from_value(e).unwrap()
    }

    #[test]
    fn the_latest_warnings_of_this_pod_come_newest_first_one_per_reason() {
        let none = serde_json::json!({});
        let events = [
            event(
                "u1",
                "Warning",
                "FailedMount",
                "2026-01-01T10:00:00Z",
                none.clone(),
            ),
            event(
                "u1",
                "Normal",
                "Scheduled",
                "2026-01-01T10:05:00Z",
                none.clone(),
            ),
            event(
                "u1",
                "Warning",
                "FailedMount",
                "2026-01-01T10:04:00Z",
                serde_json::json!({"count": 4}),
            ),
            // An earlier pod of the same name.
            event(
                "u0",
                "Warning",
                "BackOff",
                "2026-01-01T10:06:00Z",
                none.clone(),
            ),
            // A newer reporter fills in only the series' time.
            event(
                "u1",
                "Warning",
                "FailedScheduling",
                "2026-01-01T09:00:00Z",
                serde_json::json!({"lastTimestamp": null, "eventTime": "2026-01-01T09:00:00.000000Z",
                    "series": {"count": 2, "lastObservedTime": "2026-01-01T10:03:00.000000Z"}}),
            ),
            event(
                "u1",
                "Warning",
                "FailedAttachVolume",
                "2026-01-01T10:01:00Z",
                none.clone(),
            ),
        ];
        assert_eq!(
            latest_warnings(&events, "u1", "", 3),
            [
                "FailedMount: FailedMount at 2026-01-01T10:04:00Z (4 times)",
                "FailedScheduling: FailedScheduling at 2026-01-01T09:00:00Z (2 times)",
                "FailedAttachVolume: FailedAttachVolume at 2026-01-01T10:01:00Z",
            ]
        );
        assert_eq!(latest_warnings(&events, "u1", "", 1).len(), 1);
        assert!(latest_warnings(&events, "u9", "", 3).is_empty());
        // What the pod's status already says is not said again.
        assert_eq!(
            latest_warnings(
                &events,
                "u1",
                "Pending, not scheduled: Unschedulable: FailedMount at 2026-01-01T10:04:00Z",
                1
            ),
            ["FailedScheduling: FailedScheduling at 2026-01-01T09:00:00Z (2 times)"]
        );
        assert!(
            !latest_warnings(
                &events,
                "u1",
                "Pending, not scheduled: Unschedulable: FailedMount at 2026-01-01T10:04:00Z",
                3
            )
            .iter()
            .any(|w| w.starts_with("FailedMount")),
            "an older message of a reason the status speaks for is not dug up"
        );
    }

    #[test]
    fn a_pod_says_why_it_is_not_ready() {
        let unschedulable = pod(serde_json::json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}]}));
        assert_eq!(
            not_ready_reason(&unschedulable),
            "Pending, not scheduled: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
        );
        let pulling = pod(serde_json::json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
              "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}]}));
        assert_eq!(
            not_ready_reason(&pulling),
            "Pending, container app waiting: ImagePullBackOff: Back-off pulling image"
        );
        let crashed = pod(serde_json::json!({"phase": "Running",
            "containerStatuses": [{"name": "app", "ready": false, "restartCount": 1, "image": "x", "imageID": "",
              "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}));
        assert_eq!(
            not_ready_reason(&crashed),
            "Running, container app terminated with exit code 137: OOMKilled"
        );
        let probing = pod(serde_json::json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}));
        assert_eq!(
            not_ready_reason(&probing),
            "Running, not Ready: ContainersNotReady"
        );
        assert_eq!(
            not_ready_reason(&pod(serde_json::json!({}))),
            "Pending, not Ready yet"
        );
        let view = pod_view(&unschedulable);
        assert_eq!(
            (view.phase.as_str(), view.ready, view.not_ready.is_some()),
            ("Pending", false, true)
        );
    }

    #[test]
    fn ordinals_are_read_from_names_strictly() {
        assert_eq!(ordinal_of("web", "web-0"), Some(0));
        assert_eq!(ordinal_of("web", "web-12"), Some(12));
        assert_eq!(ordinal_of("web", "web-db-1"), None);
        assert_eq!(ordinal_of("web", "web-01"), None);
        assert_eq!(ordinal_of("web", "webx-1"), None);
        assert_eq!(ordinal_of("web", "web-"), None);
        let t = vec!["data".to_string(), "logs".to_string()];
        assert_eq!(claim_ordinal(&t, "web", "logs-web-3"), Some(3));
        assert_eq!(claim_ordinal(&t, "web", "cache-web-3"), None);
    }
}
