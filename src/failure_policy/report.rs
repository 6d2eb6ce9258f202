//! What failure-policy reports: the timeline, the check and the explanation, as data with a
//! `schemaVersion` (the commands layer renders them as tables, JSON or YAML).
use serde::Serialize;

use super::check::{Problem, Support};
use super::engine::{PolicyMatch, Semantics, Simulation};
use std::collections::BTreeMap;

use super::model::{JobModel, PodCondition};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulateReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    pub semantics: Semantics,
    #[serde(flatten)]
    pub simulation: Simulation,
}

impl SimulateReport {
    pub fn new(job: &JobModel, sem: &Semantics, simulation: Simulation) -> SimulateReport {
        SimulateReport {
            schema_version: 1,
            job: format!("{}/{}", job.namespace, job.name),
            kubernetes_version: format!("1.{}", sem.minor),
            semantics: sem.clone(),
            simulation,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVerdict {
    pub context: String,
    pub accepted: bool,
    /// Why the server rejected it; or, accepted, what else to know (the name is taken).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    /// What the exit code says: `valid` (0); `invalid`, `unsupported` (valid, but a feature
    /// it uses is off at that version) or `rejected` (by the server's dry run), each 1.
    pub verdict: String,
    pub valid: bool,
    /// The whole message, as the API server would answer a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub problems: Vec<Problem>,
    pub support: Vec<Support>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVerdict>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedPodLine {
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// Container name -> exit code, for the containers that ended.
    pub exit_codes: BTreeMap<String, i32>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub init_exit_codes: BTreeMap<String, i32>,
    /// The pod's conditions that can match a rule (the usual Ready ones left out).
    pub conditions: Vec<PodCondition>,
    pub policy: PolicyMatch,
    /// When the Job has rules and none matched: why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_rule_matched: Option<String>,
}

/// How close the Job is to one of its limits. Counts are failures, indexes or, for
/// activeDeadlineSeconds, seconds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    pub limit: String,
    /// Null: unlimited.
    pub value: Option<i64>,
    pub used: i64,
    /// Null: unlimited.
    pub remaining: Option<i64>,
    /// backoffLimitPerIndex: the index closest to the limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// maxFailedIndexes: the failed indexes, as the controller writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexes: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobConditionLine {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextFailure {
    pub failure: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    pub rule: Option<usize>,
    pub action: String,
    pub outcome: String,
}

/// A pod being deleted that has not stopped yet, and what the controller does about it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminatingPodLine {
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// Whether its failure is in `status.failed` already.
    pub counted: bool,
    /// Whether the controller creates its replacement before it stops.
    pub replaced: bool,
    /// Why, in words.
    pub why: String,
}

/// Failures `status.failed` counts whose pods are no longer listed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailuresWithoutPod {
    pub count: i32,
    /// Where those pods went, in words.
    pub why: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    /// The terminal condition (Failed or Complete), if the Job has finished.
    pub finished: Option<String>,
    /// FailureTarget or SuccessCriteriaMet: the Job is ending (its pods are terminating).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ending: Option<String>,
    /// The Job's conditions with status True.
    pub conditions: Vec<JobConditionLine>,
    /// The Job or its pods kept changing while they were read (the controller was updating
    /// them); the counts may not agree.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub changing: bool,
    pub failed: i32,
    pub succeeded: i32,
    pub failed_indexes: Option<String>,
    pub failed_pods: Vec<FailedPodLine>,
    /// Pods being deleted that have not stopped.
    pub terminating_pods: Vec<TerminatingPodLine>,
    /// `status.failed` counts more failures than the pods listed account for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures_without_pod: Option<FailuresWithoutPod>,
    pub limits: Vec<Limit>,
    pub next: Vec<NextFailure>,
}
