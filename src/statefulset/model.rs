//! Plain data that the pure core works on: what was observed in both clusters and the journal.
//! No API types here, so the decisions can be unit- and property-tested without a cluster.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::budget::{BudgetSpec, RecordedBudget};

/// Which cluster a step acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Source,
    Destination,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Source => Side::Destination,
            Side::Destination => Side::Source,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Forward,
    Rollback,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    pub when_scaled: String,
    pub when_deleted: String,
}

impl Retention {
    pub fn retain() -> Retention {
        Retention {
            when_scaled: "Retain".into(),
            when_deleted: "Retain".into(),
        }
    }
    pub fn is_retain(&self) -> bool {
        self.when_scaled == "Retain" && self.when_deleted == "Retain"
    }
}

/// The kinds of object, besides the set and its volumes, that a migration may create in the
/// destination: the namespace (`--create-namespace`) and what the pods use
/// (`--copy-dependencies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ObjectKind {
    Namespace,
    Service,
    ConfigMap,
    Secret,
    ServiceAccount,
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ObjectKind::Namespace => "Namespace",
            ObjectKind::Service => "Service",
            ObjectKind::ConfigMap => "ConfigMap",
            ObjectKind::Secret => "Secret",
            ObjectKind::ServiceAccount => "ServiceAccount",
        })
    }
}

/// One object by kind and name (namespaced ones live in the destination namespace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectRef {
    pub kind: ObjectKind,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// What the destination lacks before the reconciler can start, as preflight found it: the
/// namespace, and the objects the pods use. Planned and made before the first scale-down.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preparation {
    pub create_namespace: bool,
    /// Objects to copy from the source namespace, in the order they are copied.
    pub copies: Vec<ObjectRef>,
    /// The PodDisruptionBudgets that select the set, with their original specs (from the
    /// journal once it exists).
    pub budgets: Vec<RecordedBudget>,
    /// Shared or fresh volumes: whether the plan copies claims.
    pub volumes: VolumeMode,
}

/// The parts of a StatefulSet that the decisions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetView {
    pub uid: String,
    pub resource_version: String,
    pub generation: i64,
    pub replicas: i32,
    pub start: i32,
    pub observed_generation: i64,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub retention: Retention,
    /// Our annotation on a destination set: the uid of the source it was created for.
    pub migrated_from_uid: Option<String>,
    pub claim_templates: Vec<String>,
}

impl SetView {
    /// The ordinals this set owns: [start, start + replicas).
    pub fn range(&self) -> std::ops::Range<i32> {
        self.start..self.start + self.replicas
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    pub name: String,
    pub uid: String,
    pub ready: bool,
    /// Has a deletionTimestamp: still counts as existing for the no-split-brain rule.
    pub terminating: bool,
    /// Pending, Running, Succeeded, Failed (or empty before the kubelet says).
    pub phase: String,
    /// Why the pod is not Ready, as the scheduler and the kubelet say it.
    pub not_ready: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimView {
    pub volume_name: Option<String>,
    pub bound: bool,
    /// Created by this tool as a copy (label), so it may delete it on rollback.
    pub copied: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeView {
    pub reclaim_policy: String,
    /// namespace/name of the claim the PV is bound or reserved to.
    pub claim: Option<(String, String)>,
    pub copied: bool,
}

/// One cluster's view of the migrated set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterView {
    pub set: Option<SetView>,
    /// Pods of the set by ordinal, Terminating ones included.
    pub pods: BTreeMap<i32, PodView>,
    /// PVCs of the set by name.
    pub claims: BTreeMap<String, ClaimView>,
    /// PVs bound to those claims, by name.
    pub volumes: BTreeMap<String, VolumeView>,
    /// The PodDisruptionBudgets the journal records, by name, as this cluster has them.
    pub budgets: BTreeMap<String, BudgetSpec>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    pub source: ClusterView,
    pub destination: ClusterView,
}

impl Observed {
    pub fn side(&self, side: Side) -> &ClusterView {
        match side {
            Side::Source => &self.source,
            Side::Destination => &self.destination,
        }
    }

    pub fn side_mut(&mut self, side: Side) -> &mut ClusterView {
        match side {
            Side::Source => &mut self.source,
            Side::Destination => &mut self.destination,
        }
    }
}

/// Where the destination's pods get their volumes (`--volumes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeMode {
    /// The source's claims and PVs are copied: both clusters reach the same storage.
    #[default]
    Shared,
    /// The destination's pods get new claims from its volumeClaimTemplates; the application
    /// rebuilds each replica from its peers. The source's claims and PVs stay (Retain) for a
    /// rollback, which gives each ordinal back its original claims.
    Fresh,
}

impl VolumeMode {
    pub fn is_shared(&self) -> bool {
        *self == VolumeMode::Shared
    }

    /// The flag that selects this mode.
    pub fn flag(&self) -> &'static str {
        match self {
            VolumeMode::Shared => "--volumes=shared",
            VolumeMode::Fresh => "--volumes=fresh",
        }
    }
}

/// The small record kept in the destination cluster (a ConfigMap). Everything else is derived
/// from what the clusters show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub name: String,
    pub source_context: String,
    pub source_server: String,
    pub source_namespace: String,
    pub source_uid: String,
    pub destination_namespace: String,
    /// The source's replicas and ordinals.start when the migration began: ordinals [start, start+replicas).
    pub replicas: i32,
    pub start: i32,
    pub claim_templates: Vec<String>,
    /// The PVs' reclaim policies before we set them to Retain, by PV name.
    pub original_reclaim_policies: BTreeMap<String, String>,
    /// The same for the PVs of claims the destination's controller made (`--volumes=fresh`),
    /// recorded before each is set to Retain: a rollback gives them back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub original_destination_reclaim_policies: BTreeMap<String, String>,
    pub original_retention: Retention,
    pub direction: Direction,
    /// Ordinals on the receiving side whose readiness (and health check) has been confirmed:
    /// forward, those >= this bound; rollback, those < it.
    pub verified_bound: i32,
    pub complete: bool,
    /// The lease holder (`host/pid/random`) of the run that marked the migration complete: a
    /// run that finds it complete names who did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_by: Option<String>,
    /// --cleanup removed the source's leftovers; rollback is no longer possible.
    #[serde(default)]
    pub cleaned_up: bool,
    /// The --health-check the migration was started with: a resume without it is refused
    /// unless the user says so (--no-health-check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<String>,
    /// What this migration created in the destination besides copies of the set and its
    /// volumes (the namespace, copied dependencies): a rollback removes exactly these. A copy
    /// is recorded before it is created, so a crash in between cannot orphan it; the namespace,
    /// which holds the journal, is recorded by its label when the journal is written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<ObjectRef>,
    /// The PodDisruptionBudgets that select the set, with their original specs: split between
    /// the clusters while it moves, restored at the end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<RecordedBudget>,
    /// Shared (copied) or fresh volumes in the destination; a journal without it is shared.
    #[serde(default, skip_serializing_if = "VolumeMode::is_shared")]
    pub volumes: VolumeMode,
}

impl Journal {
    pub fn end(&self) -> i32 {
        self.start + self.replicas
    }

    /// The reclaim policies recorded before this migration set PVs on `side` to Retain.
    pub fn original_policies(&self, side: Side) -> &BTreeMap<String, String> {
        match side {
            Side::Source => &self.original_reclaim_policies,
            Side::Destination => &self.original_destination_reclaim_policies,
        }
    }

    /// [`Self::original_policies`], to record one.
    pub fn original_policies_mut(&mut self, side: Side) -> &mut BTreeMap<String, String> {
        match side {
            Side::Source => &mut self.original_reclaim_policies,
            Side::Destination => &mut self.original_destination_reclaim_policies,
        }
    }
}

/// `<template>-<set>-<ordinal>`, the name the StatefulSet controller gives a pod's claim.
/// Names used in messages.
#[derive(Debug, Clone)]
pub struct Names {
    pub set: String,
    pub source_context: String,
    pub source_namespace: String,
    pub destination_context: String,
    pub destination_namespace: String,
}

impl Names {
    /// Set web in namespace db, from km-a to km-b: the names the unit tests use.
    #[cfg(test)]
    pub fn fixture() -> Names {
        Names {
            set: "web".into(),
            source_context: "km-a".into(),
            source_namespace: "db".into(),
            destination_context: "km-b".into(),
            destination_namespace: "db".into(),
        }
    }

    pub fn context(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_context,
            Side::Destination => &self.destination_context,
        }
    }
    pub fn namespace(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_namespace,
            Side::Destination => &self.destination_namespace,
        }
    }
    /// `context/namespace/set` on `side`.
    pub fn set_at(&self, side: Side) -> String {
        format!(
            "{}/{}/{}",
            self.context(side),
            self.namespace(side),
            self.set
        )
    }
}

pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// Building blocks of observations, for the tests of the pure cores.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A settled set (every replica Ready) of `replicas` from ordinal `start`, whose claims come
    /// from `templates`, with the PVC retention policy `retention`.
    pub fn set(uid: &str, start: i32, replicas: i32, retention: Retention) -> SetView {
        SetView {
            uid: uid.into(),
            resource_version: "1".into(),
            generation: 1,
            replicas,
            start,
            observed_generation: 1,
            ready_replicas: replicas,
            available_replicas: replicas,
            retention,
            migrated_from_uid: None,
            claim_templates: vec!["data".into()],
        }
    }

    /// `claim` in namespace `ns`, bound to PV `volume` whose reclaim policy is `policy`.
    pub fn add_claim(view: &mut ClusterView, ns: &str, claim: &str, volume: &str, policy: &str) {
        view.claims.insert(
            claim.into(),
            ClaimView {
                volume_name: Some(volume.into()),
                bound: true,
                copied: false,
            },
        );
        view.volumes.insert(
            volume.into(),
            VolumeView {
                reclaim_policy: policy.into(),
                claim: Some((ns.into(), claim.into())),
                copied: false,
            },
        );
    }
}
