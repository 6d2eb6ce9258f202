//! Reads both clusters into the plain [`Observed`] struct. No decisions here.
use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
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

pub fn set_view(set: &StatefulSet) -> SetView {
    let spec = set.spec.clone().unwrap_or_default();
    let status = set.status.clone().unwrap_or_default();
    let retention = spec
        .persistent_volume_claim_retention_policy
        .unwrap_or_default();
    SetView {
        uid: set.metadata.uid.clone().unwrap_or_default(),
        resource_version: set.metadata.resource_version.clone().unwrap_or_default(),
        generation: set.metadata.generation.unwrap_or_default(),
        replicas: spec.replicas.unwrap_or(1),
        start: spec.ordinals.and_then(|o| o.start).unwrap_or(0),
        observed_generation: status.observed_generation.unwrap_or_default(),
        ready_replicas: status.ready_replicas.unwrap_or_default(),
        available_replicas: status.available_replicas.unwrap_or_default(),
        retention: Retention {
            when_scaled: retention.when_scaled.unwrap_or_else(|| "Retain".into()),
            when_deleted: retention.when_deleted.unwrap_or_else(|| "Retain".into()),
        },
        migrated_from_uid: set
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SOURCE_UID_ANNOTATION).cloned()),
        claim_templates: spec
            .volume_claim_templates
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| t.metadata.name)
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
    }
}

/// Reads one side. `templates` are the set's claim templates (from the journal or the source).
pub async fn observe_side(
    cluster: &Cluster,
    at: &Location,
    templates: &[String],
) -> Result<ClusterView> {
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
    let (set, pod_list, claim_list, copy_list) = tokio::try_join!(
        cluster.call("read the StatefulSet", sets.get_opt(&at.name)),
        cluster.call("list pods", pods.list(&lp)),
        cluster.call("list PersistentVolumeClaims", claims.list(&lp)),
        cluster.call("list PersistentVolumes", volumes.list(&copies)),
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
    let volume_list: Vec<PersistentVolume> = copy_list
        .items
        .into_iter()
        .chain(fetched.into_iter().flatten())
        .collect();
    let mut view = ClusterView {
        set: set.as_ref().map(set_view),
        ..Default::default()
    };
    // Every pod named like an ordinal counts, owned or not: safety over precision.
    for pod in &pod_list.items {
        if let Some(k) = pod
            .metadata
            .name
            .as_deref()
            .and_then(|n| ordinal_of(&at.name, n))
        {
            view.pods.insert(k, pod_view(pod));
        }
    }
    for claim in &claim_list.items {
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
    for volume in &volume_list {
        let name = volume.metadata.name.clone().unwrap_or_default();
        let spec = volume.spec.clone().unwrap_or_default();
        let claim = spec.claim_ref.as_ref().map(|r| {
            (
                r.namespace.clone().unwrap_or_default(),
                r.name.clone().unwrap_or_default(),
            )
        });
        let ours = claim
            .as_ref()
            .is_some_and(|(ns, n)| ns == &at.namespace && view.claims.contains_key(n));
        let copied = volume
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(COPY_LABEL))
            == Some(&at.copy_label);
        let referenced = view
            .claims
            .values()
            .any(|c| c.volume_name.as_deref() == Some(name.as_str()));
        if ours || copied || referenced {
            view.volumes.insert(
                name,
                VolumeView {
                    reclaim_policy: spec
                        .persistent_volume_reclaim_policy
                        .unwrap_or_else(|| "Retain".into()),
                    claim,
                    copied,
                },
            );
        }
    }
    Ok(view)
}

pub async fn observe(
    source: (&Cluster, &Location),
    destination: (&Cluster, &Location),
    templates: &[String],
) -> Result<Observed> {
    let (source, destination) = tokio::try_join!(
        observe_side(source.0, source.1, templates),
        observe_side(destination.0, destination.1, templates)
    )?;
    Ok(Observed {
        source,
        destination,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
