//! The writes to the StatefulSet on either side: the destination's creation, the resizes that
//! move ordinals (each one request with a resourceVersion precondition, checked against split
//! brain right before), and the PVC retention policy held and restored.
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetOrdinals};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::Patch;
use serde_json::json;

use super::writer::Writer;
use crate::error::{Error, Result};
use crate::statefulset::copy::{ORIGINAL_RETENTION_ANNOTATION, destination_set};
use crate::statefulset::journal::Stored;
use crate::statefulset::model::{Observed, Retention, Side, pod_name};

fn sets(w: &Writer, side: Side) -> Api<StatefulSet> {
    w.sides.namespaced(side)
}

/// Creates the destination set from the source's (`class_map` renames its StorageClasses):
/// with replicas 0 and its ordinals starting where the source's end, or over `range` (start,
/// replicas) when it is created again after it was deleted mid-migration.
pub async fn create_destination(
    w: &Writer,
    class_map: &BTreeMap<String, String>,
    stored: Option<&Stored>,
    observed: &Observed,
    range: Option<(i32, i32)>,
) -> Result<()> {
    let sides = &w.sides;
    let name = &sides.names.set;
    // The end of the source's range: recorded in the journal, or (in a dry run before the
    // journal exists) as the source shows it now.
    let end = match (stored, &observed.source.set) {
        (Some(s), _) => s.journal.end(),
        (None, Some(set)) if w.is_dry_run() => set.start + set.replicas,
        (None, _) => {
            return Err(Error::Failed {
                message: "the journal is needed to create the destination".into(),
            });
        }
    };
    let source = sides
        .source
        .call(
            "read the source StatefulSet",
            sets(w, Side::Source).get(name),
        )
        .await?;
    let origin = format!(
        "{}/{}/{name}",
        sides.source.context, sides.source_at.namespace
    );
    let mut set = destination_set(
        &source,
        &sides.destination_at.namespace,
        end,
        class_map,
        &sides.destination_at.copy_label,
        &origin,
    );
    let action = match range {
        Some((start, replicas)) => {
            let spec = set.spec.get_or_insert_with(Default::default);
            spec.replicas = Some(replicas);
            spec.ordinals = Some(StatefulSetOrdinals { start: Some(start) });
            "re-create the destination StatefulSet"
        }
        None => "create the destination StatefulSet",
    };
    // Already there: the next observation checks that it is ours.
    w.write(
        Side::Destination,
        action,
        sets(w, Side::Destination).create(&w.post_params(), &set),
        Some(409),
    )
    .await?;
    Ok(())
}

/// Sets the set on `side` to `start` and `replicas` in one request, conditional on the version
/// `observed` shows.
pub async fn resize(
    w: &Writer,
    side: Side,
    start: i32,
    replicas: i32,
    observed: &Observed,
) -> Result<()> {
    let name = &w.sides.names.set;
    let action = format!("set StatefulSet {name} to ordinals.start={start}, replicas={replicas}");
    let Some(set) = observed.side(side).set.as_ref() else {
        if w.is_dry_run() {
            w.not_checked(
                side,
                &action,
                "the StatefulSet is created by an earlier write of the plan",
            );
            return Ok(());
        }
        return Err(Error::Failed {
            message: format!(
                "StatefulSet {name} does not exist in {}",
                w.sides.context(side)
            ),
        });
    };
    // Moving ordinals into one cluster: re-check right before the write that none of them runs
    // in the other cluster, so a change since the observation cannot cause split brain.
    let current_end = set.start + if set.replicas > 0 { set.replicas } else { 0 };
    let arriving: Vec<i32> = match side {
        Side::Destination => (start..set.start.min(start + replicas)).collect(),
        Side::Source => (current_end..start + replicas).collect(),
    };
    if !arriving.is_empty() && !w.is_dry_run() {
        refuse_split_brain(w, side, &arriving).await?;
    }
    // One request for start and replicas, conditional on the version we decided on. A
    // start that stays is left out, so a set without spec.ordinals never gains one.
    let patch = if start == set.start {
        json!({
            "metadata": {"resourceVersion": set.resource_version},
            "spec": {"replicas": replicas}
        })
    } else {
        json!({
            "metadata": {"resourceVersion": set.resource_version},
            "spec": {"replicas": replicas, "ordinals": {"start": start}}
        })
    };
    let result = w
        .write(
            side,
            &action,
            sets(w, side).patch(name, &w.merge_params(), &Patch::Merge(&patch)),
            None,
        )
        .await;
    match result {
        Err(e) if e.http_status() == Some(409) => Err(Error::Conflict(format!(
            "StatefulSet {name} changed while this step was decided"
        ))),
        other => other.map(|_| ()),
    }
}

/// Fails if a pod of the ordinals `arriving` on `side` runs in the other cluster, by live reads
/// (a GET goes to etcd), never the watch caches.
async fn refuse_split_brain(w: &Writer, side: Side, arriving: &[i32]) -> Result<()> {
    let other = side.other();
    let names: Vec<String> = arriving
        .iter()
        .map(|k| pod_name(&w.sides.names.set, *k))
        .collect();
    let pods: Api<Pod> = w.sides.namespaced(other);
    let cluster = w.sides.cluster(other);
    let found = futures::future::try_join_all(
        names
            .iter()
            .map(|n| cluster.call("read a pod", pods.get_opt(n))),
    )
    .await?;
    for (name, pod) in names.iter().zip(found) {
        if pod.is_some() {
            return Err(Error::Failed {
                message: format!(
                    "pod {name} appeared in {} just before it was to start in {}; not starting it",
                    w.sides.context(other),
                    w.sides.context(side)
                ),
            });
        }
    }
    Ok(())
}

/// Holds the source's PVC retention policy at Retain, keeping the original in an annotation.
pub async fn hold_retention(w: &Writer, observed: &Observed) -> Result<()> {
    let original = observed
        .source
        .set
        .as_ref()
        .map(|s| serde_json::to_string(&s.retention).unwrap_or_default());
    let patch = json!({
        "metadata": {"annotations": {ORIGINAL_RETENTION_ANNOTATION: original}},
        "spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Retain"}}});
    patch_set(
        w,
        Side::Source,
        "hold the PVC retention policy at Retain",
        &patch,
    )
    .await
}

/// Gives the set on `side` the PVC retention policy it (or the source) had.
pub async fn restore_retention(w: &Writer, side: Side, original: &Retention) -> Result<()> {
    let patch = json!({
        "metadata": {"annotations": {ORIGINAL_RETENTION_ANNOTATION: null}},
        "spec": {"persistentVolumeClaimRetentionPolicy": {
            "whenScaled": original.when_scaled, "whenDeleted": original.when_deleted}}});
    patch_set(w, side, "restore the PVC retention policy", &patch).await
}

async fn patch_set(w: &Writer, side: Side, action: &str, patch: &serde_json::Value) -> Result<()> {
    let name = &w.sides.names.set;
    w.write(
        side,
        &format!("{action} (StatefulSet {name})"),
        sets(w, side).patch(name, &w.merge_params(), &Patch::Merge(patch)),
        None,
    )
    .await?;
    Ok(())
}
