//! `--cleanup`: after a completed migration, the source's leftover StatefulSet, PVC and PV
//! objects go (never the storage: every PV is set to Retain first), and on request the
//! destination's PVs get back the reclaim policies they had in the source and its StatefulSet
//! the PVC retention policy the source had. What is already done is not done (or reported) again.
//!
//! [`judge`] is pure: from the journal and what both clusters show, what cleaning up would
//! remove, or why it must not run. [`perform`] does it through the executor.
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde::Serialize;

use super::executor::{Executor, set, volumes};
use super::journal::Stored;
use super::model::{Direction, Journal, Observed, Retention, Side};
use super::words;
use crate::error::Result;

/// What a cleanup does, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupPlan {
    /// Source PVs to set to Retain before any claim goes.
    pub protect: Vec<String>,
    /// The source StatefulSet, if it is still there.
    pub statefulset: Option<String>,
    pub claims: Vec<String>,
    pub volumes: Vec<String>,
    /// Destination PVs and the policy each gets back.
    pub restore: BTreeMap<String, String>,
    /// The PVC retention policy the destination StatefulSet gets back (the source's original).
    pub restore_retention: Option<Retention>,
}

impl CleanupPlan {
    /// Nothing left to do: a second `--cleanup` finds the work of the first done.
    pub fn is_empty(&self) -> bool {
        self == &CleanupPlan::default()
    }
}

/// PURE: what `--cleanup` would do now, or why it must not run.
pub fn judge(
    name: &str,
    journal: Option<&Journal>,
    observed: &Observed,
    restore_reclaim_policy: bool,
    source_context: &str,
) -> std::result::Result<CleanupPlan, String> {
    let Some(journal) = journal else {
        return Err(no_migration(name));
    };
    if !journal.complete || journal.direction != Direction::Forward {
        return Err(
            "the migration is not complete; --cleanup runs only after it (see --status)".into(),
        );
    }
    if let Some(set) = &observed.source.set
        && (set.replicas > 0 || !observed.source.pods.is_empty())
    {
        return Err(format!(
            "the source StatefulSet still runs pods in {source_context}; not cleaning up"
        ));
    }
    let source = &observed.source;
    // Only what differs now, so that a second run neither repeats nor re-reports a restore.
    // The copies carry the source PVs' names and get the source's originals back; the PVs the
    // destination's controller made (fresh volumes) get their own.
    let restore = if restore_reclaim_policy {
        journal
            .original_reclaim_policies
            .iter()
            .chain(&journal.original_destination_reclaim_policies)
            .filter(|(volume, policy)| {
                observed
                    .destination
                    .volumes
                    .get(*volume)
                    .is_some_and(|v| &v.reclaim_policy != *policy)
            })
            .map(|(v, p)| (v.clone(), p.clone()))
            .collect()
    } else {
        BTreeMap::new()
    };
    let restore_retention = observed
        .destination
        .set
        .as_ref()
        .filter(|set| restore_reclaim_policy && set.retention != journal.original_retention)
        .map(|_| journal.original_retention.clone());
    Ok(CleanupPlan {
        // Retain first, always: deleting a claim must never delete the storage the destination
        // uses.
        protect: source
            .volumes
            .iter()
            .filter(|(_, v)| v.reclaim_policy != "Retain")
            .map(|(n, _)| n.clone())
            .collect(),
        statefulset: source.set.as_ref().map(|_| name.to_string()),
        claims: source.claims.keys().cloned().collect(),
        volumes: source.volumes.keys().cloned().collect(),
        restore,
        restore_retention,
    })
}

/// Why there is nothing to clean up without a journal.
pub fn no_migration(name: &str) -> String {
    format!("no migration of {name} found; nothing to clean up")
}

/// What `plan` deletes from the source, in words; `None` when nothing.
fn deletions(plan: &CleanupPlan, set: &str, source_context: &str) -> Option<String> {
    (plan.statefulset.is_some() || !plan.claims.is_empty() || !plan.volumes.is_empty()).then(|| {
        format!(
            "delete the leftover {}{} and {} of {set} in {source_context} (the storage is kept)",
            if plan.statefulset.is_some() {
                "StatefulSet, "
            } else {
                ""
            },
            words::count(plan.claims.len() as i64, "PVC", "PVCs"),
            words::count(plan.volumes.len() as i64, "PV object", "PV objects"),
        )
    })
}

/// PURE: after a complete migration, what `--cleanup` would then delete, as a next step to
/// tell (`Done` and `--status`); `None` when it has nothing to delete or cannot run yet.
pub fn offer(
    name: &str,
    journal: Option<&Journal>,
    observed: &Observed,
    source_context: &str,
) -> Option<String> {
    let plan = judge(name, journal, observed, false, source_context).ok()?;
    deletions(&plan, name, source_context).map(|what| format!("--cleanup would {what}"))
}

/// The confirmation question: what goes from the source and what comes back in the destination.
pub fn question(plan: &CleanupPlan, set: &str, ex: &Executor) -> String {
    let mut parts = Vec::new();
    parts.extend(deletions(plan, set, &ex.sides.source.context));
    if !plan.restore.is_empty() {
        parts.push(format!(
            "restore the original reclaim policy of {} in {}",
            words::count(plan.restore.len() as i64, "PV", "PVs"),
            ex.sides.destination.context
        ));
    }
    if let Some(r) = &plan.restore_retention {
        parts.push(format!(
            "set the PVC retention policy of {set} in {} back to whenScaled={}, whenDeleted={}",
            ex.sides.destination.context, r.when_scaled, r.when_deleted
        ));
    }
    let mut text = parts.join("; ");
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    text
}

/// What `--cleanup` removed (and restored).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CleanupReport {
    pub schema_version: u32,
    pub statefulset: Option<String>,
    pub claims: Vec<String>,
    pub volumes: Vec<String>,
    pub restored_reclaim_policies: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_retention: Option<Retention>,
    /// Set when there was nothing left to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Carries out `plan`, then records in the journal that the source is cleaned up.
pub async fn perform(ex: &Executor, plan: &CleanupPlan, stored: &Stored) -> Result<CleanupReport> {
    let mut report = CleanupReport {
        schema_version: 1,
        ..Default::default()
    };
    for volume in &plan.protect {
        volumes::set_reclaim_policy(&ex.writer, Side::Source, volume, "Retain").await?;
    }
    if let Some(set) = &plan.statefulset {
        ex.writer
            .delete_until_gone(
                &ex.waits,
                Side::Source,
                "StatefulSet",
                &ex.sides.namespaced::<StatefulSet>(Side::Source),
                set,
            )
            .await?;
        report.statefulset = Some(set.clone());
    }
    for claim in &plan.claims {
        ex.writer
            .delete_until_gone(
                &ex.waits,
                Side::Source,
                "PVC",
                &ex.sides.namespaced::<PersistentVolumeClaim>(Side::Source),
                claim,
            )
            .await?;
        report.claims.push(claim.clone());
    }
    for volume in &plan.volumes {
        volumes::delete_retained_volume(&ex.writer, &ex.waits, Side::Source, volume).await?;
        report.volumes.push(volume.clone());
    }
    for (volume, policy) in &plan.restore {
        volumes::restore_policy(&ex.writer, Side::Destination, volume, policy).await?;
        report
            .restored_reclaim_policies
            .insert(volume.clone(), policy.clone());
    }
    if let Some(retention) = &plan.restore_retention {
        set::restore_retention(&ex.writer, Side::Destination, retention).await?;
        report.restored_retention = Some(retention.clone());
    }
    // The journal was read before the deletes; a fresh read gives the version to replace.
    let fresh = super::journal::load(
        &ex.sides.destination,
        &ex.sides.destination_at.namespace,
        &ex.sides.names.set,
    )
    .await?
    .unwrap_or_else(|| stored.clone());
    ex.journal
        .update(
            &ex.writer,
            Some(&fresh),
            "record the cleanup in the journal",
            |j| j.cleaned_up = true,
        )
        .await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::model::*;

    fn journal(complete: bool, direction: Direction) -> Journal {
        Journal {
            name: "web".into(),
            source_context: "a".into(),
            source_server: "https://a".into(),
            source_namespace: "ns".into(),
            source_uid: "u".into(),
            destination_namespace: "ns".into(),
            replicas: 2,
            start: 0,
            claim_templates: vec!["data".into()],
            original_reclaim_policies: [
                ("pv-0".to_string(), "Delete".to_string()),
                ("pv-1".to_string(), "Retain".to_string()),
            ]
            .into(),
            original_destination_reclaim_policies: Default::default(),
            original_retention: Retention::retain(),
            direction,
            verified_bound: 0,
            complete,
            completed_by: None,
            cleaned_up: false,
            health_check: None,
            created: vec![],
            budgets: vec![],
            volumes: Default::default(),
        }
    }

    fn set(replicas: i32) -> SetView {
        fixtures::set("u", 0, replicas, Retention::retain())
    }

    /// A migrated set: the source at 0 replicas with its claims and PVs (one still Delete), the
    /// destination holding copies of both PVs.
    fn migrated() -> Observed {
        let mut source = ClusterView {
            set: Some(set(0)),
            ..Default::default()
        };
        let mut destination = ClusterView::default();
        for (k, policy) in [(0, "Delete"), (1, "Retain")] {
            let volume = format!("pv-{k}");
            fixtures::add_claim(
                &mut source,
                "ns",
                &claim_name("data", "web", k),
                &volume,
                policy,
            );
            destination.volumes.insert(
                volume,
                VolumeView {
                    reclaim_policy: "Retain".into(),
                    claim: None,
                    copied: true,
                },
            );
        }
        Observed {
            source,
            destination,
        }
    }

    #[test]
    fn protects_before_it_removes_and_restores_only_on_request() {
        let j = journal(true, Direction::Forward);
        let plan = judge("web", Some(&j), &migrated(), false, "a").unwrap();
        assert_eq!(plan.protect, ["pv-0"]);
        assert_eq!(plan.statefulset.as_deref(), Some("web"));
        assert_eq!(plan.claims, ["data-web-0", "data-web-1"]);
        assert_eq!(plan.volumes, ["pv-0", "pv-1"]);
        assert!(plan.restore.is_empty());
        let plan = judge("web", Some(&j), &migrated(), true, "a").unwrap();
        assert_eq!(
            plan.restore,
            [("pv-0".to_string(), "Delete".to_string())].into(),
            "only policies other than Retain, on PVs the destination has"
        );
    }

    #[test]
    fn fresh_volumes_get_their_own_originals_back_on_request() {
        let mut j = journal(true, Direction::Forward);
        j.volumes = VolumeMode::Fresh;
        j.original_destination_reclaim_policies = [
            ("fresh-0".to_string(), "Delete".to_string()),
            ("fresh-1".to_string(), "Retain".to_string()),
        ]
        .into();
        let mut observed = migrated();
        // The destination's controller made new claims and PVs; nothing was copied.
        observed.destination = ClusterView::default();
        for k in 0..2 {
            fixtures::add_claim(
                &mut observed.destination,
                "ns",
                &claim_name("data", "web", k),
                &format!("fresh-{k}"),
                "Retain",
            );
        }
        let plan = judge("web", Some(&j), &observed, true, "a").unwrap();
        assert_eq!(
            plan.restore,
            [("fresh-0".to_string(), "Delete".to_string())].into(),
            "the fresh PVs' originals, not the source PVs' (those are not in the destination)"
        );
        assert!(
            judge("web", Some(&j), &observed, false, "a")
                .unwrap()
                .restore
                .is_empty()
        );
    }

    #[test]
    fn refuses_without_a_complete_forward_migration() {
        let observed = migrated();
        let err = judge("web", None, &observed, false, "a").unwrap_err();
        assert!(err.contains("nothing to clean up"), "{err}");
        let unfinished = journal(false, Direction::Forward);
        let err = judge("web", Some(&unfinished), &observed, false, "a").unwrap_err();
        assert!(err.contains("not complete"), "{err}");
        let rolled_back = journal(true, Direction::Rollback);
        assert!(judge("web", Some(&rolled_back), &observed, false, "a").is_err());
    }

    #[test]
    fn refuses_while_the_source_still_runs_pods() {
        let j = journal(true, Direction::Forward);
        let mut observed = migrated();
        observed.source.set = Some(set(1));
        let err = judge("web", Some(&j), &observed, false, "km-a").unwrap_err();
        assert!(err.contains("still runs pods in km-a"), "{err}");
        let mut observed = migrated();
        observed.source.pods.insert(
            0,
            PodView {
                name: "web-0".into(),
                uid: "p".into(),
                ready: false,
                terminating: true,
                phase: "Running".into(),
                not_ready: None,
            },
        );
        assert!(judge("web", Some(&j), &observed, false, "a").is_err());
    }

    #[test]
    fn a_second_cleanup_finds_nothing_to_do() {
        let j = journal(true, Direction::Forward);
        let mut observed = migrated();
        observed.source = ClusterView::default();
        // The first run restored pv-0's policy.
        observed
            .destination
            .volumes
            .get_mut("pv-0")
            .unwrap()
            .reclaim_policy = "Delete".into();
        let plan = judge("web", Some(&j), &observed, true, "a").unwrap();
        assert!(plan.is_empty(), "{plan:?}");
        assert!(
            !judge("web", Some(&j), &migrated(), true, "a")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_destination_set_gets_the_sources_retention_policy_back_on_request() {
        let mut j = journal(true, Direction::Forward);
        j.original_retention = Retention {
            when_scaled: "Delete".into(),
            when_deleted: "Retain".into(),
        };
        let mut observed = migrated();
        observed.destination.set = Some(set(2));
        let plan = judge("web", Some(&j), &observed, false, "a").unwrap();
        assert_eq!(plan.restore_retention, None, "only on request");
        let plan = judge("web", Some(&j), &observed, true, "a").unwrap();
        assert_eq!(plan.restore_retention, Some(j.original_retention.clone()));
        observed.destination.set.as_mut().unwrap().retention = j.original_retention.clone();
        let plan = judge("web", Some(&j), &observed, true, "a").unwrap();
        assert_eq!(plan.restore_retention, None, "already restored");
    }

    #[test]
    fn an_already_removed_source_set_is_not_removed_again() {
        let j = journal(true, Direction::Forward);
        let mut observed = migrated();
        observed.source.set = None;
        let plan = judge("web", Some(&j), &observed, false, "a").unwrap();
        assert_eq!(plan.statefulset, None);
    }
}
