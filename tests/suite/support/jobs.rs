//! The real-controller side of the `failure-policy simulate` differential test: runs one scenario
//! file (`tests/data/failure-policy/*.yaml`, one Job and an ordered list of pod outcomes) against
//! the real kube-controller-manager of a local cluster and returns the Job status it ended with.
//!
//! How pods are driven (KWOK v0.8.0 stages, see `stages.yaml` in the cluster bin dir):
//! - Held: KWOK's `pod-complete` stage turns every Running pod owned by a Job into Succeeded at
//!   once. The chaos stage `pod-container-running-failed` selects Running, non-deleted pods with
//!   the label `pod-container-running-failed.stage.kwok.x-k8s.io=true` and has weight 10000,
//!   while `pod-complete` has no weight, so KWOK always picks chaos for labelled pods. Its delay
//!   is `/delay` (default 1 s) plus jitter up to `/jitter-delay` (default 1 s); when the jitter is
//!   not above the delay KWOK uses the *jitter* (lifecycle.go `Stage.Delay`), so `/delay: 24h`
//!   alone fires after about 1 s. The template therefore gets the label and both `/delay` and
//!   `/jitter-delay` set to 24h: every pod is Running and nothing happens to it.
//! - KWOK re-plans a pod's stage on every change of the pod (a new resourceVersion cancels the
//!   queued job), in event order (one preprocess worker), so changing a pod's annotations
//!   re-schedules its chaos stage with the new values.
//! - Fail through chaos: the pod's annotations get `/delay` and `/jitter-delay` `0s`,
//!   `/exit-code` and, when only one container fails, `/container-name`. The stage then writes
//!   phase Failed, Ready/ContainersReady False and replaces `containerStatuses`: the named
//!   container (or every container when no name is given) terminated with the exit code, reason
//!   `containerFailed`; the other containers stay running. It never touches
//!   `initContainerStatuses` and merges `conditions` by type (strategic merge patch).
//!   Used when the outcome's `exitCodes` names one container, or all containers with one code.
//! - Init-container exit codes and pod conditions are written first by a strategic merge status
//!   patch on the still Running pod (the Job controller never evaluates Running pods), then the
//!   chaos stage fires and keeps them. Conditions get `lastTransitionTime: now`: the disruption
//!   controller sets a DisruptionTarget=True condition on a non-terminal pod to False once it is
//!   older than 2 minutes, and without a time it is "old" at once (seen here).
//! - Fail through a status patch: exit codes that differ between several containers (e.g.
//!   `{main: 1, sidecar: 0}`) cannot be expressed by the chaos stage, and neither can an outcome
//!   with no container exit code; then one status patch writes phase Failed, the container and
//!   init container statuses (listed ones terminated with their codes, the others as KWOK left
//!   them) and the conditions.
//! - Delete: the pod is deleted with its grace period. Neither the chaos stage nor
//!   `pod-complete` touches a pod with a deletionTimestamp, and `pod-delete` removes it only once
//!   the Job controller drops its finalizer: a pod it neither counts nor replaces
//!   (podReplacementPolicy Failed) stays Terminating, as on a node that is gone. When the outcome
//!   says how it ends, a status patch then writes phase Failed, as a kubelet would.
//! - Succeed: the chaos label is removed from that one pod; `pod-complete` then marks it
//!   Succeeded with every container terminated with exit code 0 (no delay).
//!
//! Outcomes are applied one at a time. Before each one the harness waits until the Job is
//! quiescent: nothing uncounted, and exactly as many Running pods as the controller wants
//! (manageJob's wantActive, limited for Indexed Jobs by the indexes neither succeeded nor
//! failed), so the pods present when an outcome lands never depend on timing (replacement
//! pods come after the 10 s, 20 s, ... re-creation backoff), and until the outcome is due: the
//! sum of the `after`s so far, counted from the Job's `status.startTime` (the origin of
//! activeDeadlineSeconds too; a scenario leaves a few seconds of margin around the deadline and
//! the backoffs). After it, the harness waits until
//! the controller has accounted for the pod (its `batch.kubernetes.io/job-tracking` finalizer is
//! gone and `uncountedTerminatedPods` is empty) or the Job has a FailureTarget, Failed,
//! SuccessCriteriaMet or Complete condition; from then on the remaining outcomes are skipped.
//!
//! The end is stable when the Job has Failed or Complete with nothing uncounted and no pod
//! terminating (unchanged for 1 s), or, without any ending condition and without an
//! activeDeadlineSeconds due within minutes (which ends the Job in time), is quiescent and
//! unchanged for 3 s. When a Job ends, the controller deletes its active pods; KWOK's `pod-delete` stage
//! force-deletes them and they go once the controller drops their finalizer. They count as
//! failed (through the pod failure policy) except after SuccessCriteriaMet.
//!
//! Messages that name a pod are normalised: `<namespace>/<pod:K>` where K is the position of the
//! outcome that targeted that pod in `scenario.outcomes`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};

use super::TestNamespace;

pub const CHAOS_LABEL: &str = "pod-container-running-failed.stage.kwok.x-k8s.io";
const CHAOS_DELAY: &str = "pod-container-running-failed.stage.kwok.x-k8s.io/delay";
const CHAOS_JITTER: &str = "pod-container-running-failed.stage.kwok.x-k8s.io/jitter-delay";
const CHAOS_EXIT_CODE: &str = "pod-container-running-failed.stage.kwok.x-k8s.io/exit-code";
const CHAOS_CONTAINER: &str = "pod-container-running-failed.stage.kwok.x-k8s.io/container-name";
/// Long enough that no held pod fails during a test run.
const HOLD: &str = "24h";
const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Bumped to make KWOK look at a pod again if a stage did not fire (never needed so far).
const NUDGE_ANNOTATION: &str = "kubectl-migrate.test/nudge";

/// Conditions after which the Job takes no further outcome.
const ENDING_CONDITIONS: [&str; 4] = ["FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"];

// ---------------------------------------------------------------------------------------------
// The scenario file format (shared contract with the simulator).

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub description: String,
    /// A full batch/v1 Job manifest.
    pub job: serde_json::Value,
    pub scenario: Scenario,
}

/// The outcomes, in the simulator's own types: the harness and `simulate` read one format.
pub type Scenario = kubectl_migrate::failure_policy::scenario::ScenarioFile;
pub type Outcome = kubectl_migrate::failure_policy::scenario::OutcomeSpec;
pub type Failure = kubectl_migrate::failure_policy::scenario::FailSpec;
pub type RestartSpec = kubectl_migrate::failure_policy::scenario::RestartSpec;
pub type DeleteSpec = kubectl_migrate::failure_policy::scenario::DeleteSpec;

impl ScenarioFile {
    pub fn read(path: &std::path::Path) -> ScenarioFile {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let file: ScenarioFile = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not a valid scenario: {e}", path.display()));
        for (k, o) in file.scenario.outcomes.iter().enumerate() {
            assert!(
                [
                    o.fail.is_some(),
                    o.succeed.is_some(),
                    o.restart.is_some(),
                    o.delete.is_some()
                ]
                .iter()
                .filter(|given| **given)
                .count()
                    == 1,
                "{}: outcome {k} must have exactly one of fail / succeed / restart / delete",
                path.display()
            );
        }
        assert!(
            !file.scenario.outcomes.is_empty(),
            "{}: no outcomes",
            path.display()
        );
        file
    }
}

// ---------------------------------------------------------------------------------------------
// What the harness reports.

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObservedCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// The Job's counters right after the controller accounted for one outcome's pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub failed: i32,
    pub succeeded: i32,
    pub failed_indexes: Option<String>,
    pub completed_indexes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeRecord {
    /// Position in `scenario.outcomes`.
    pub outcome: usize,
    pub applied: bool,
    /// kwok-chaos, kwok-chaos+status-prepatch, status-patch or kwok-pod-complete.
    pub method: Option<String>,
    /// For skipped outcomes: the Job's first ending condition (FailureTarget, SuccessCriteriaMet).
    pub skipped_because: Option<String>,
    /// Counters once the pod was accounted for, when the Job had no ending condition yet.
    pub counters_after: Option<Counters>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    /// In status order, messages normalised (see the module docs).
    pub conditions: Vec<ObservedCondition>,
    pub failed: i32,
    pub succeeded: i32,
    /// As the API reports them (null when absent).
    pub failed_indexes: Option<String>,
    pub completed_indexes: Option<String>,
    pub active: i32,
    pub terminating: Option<i32>,
    pub outcomes: Vec<OutcomeRecord>,
}

// ---------------------------------------------------------------------------------------------
// Running a scenario.

pub struct Run {
    name: String,
    jobs: Api<Job>,
    pods: Api<Pod>,
    job_name: String,
    namespace: String,
    /// Pod name -> the outcome that targeted it.
    targeted: BTreeMap<String, usize>,
}

/// Runs `file` in a fresh namespace of `context` and returns the observed final status.
/// Panics (with the Job's status and pods) when anything does not reach the expected state.
pub async fn run_scenario(
    client: &Client,
    context: &str,
    name: &str,
    file: &ScenarioFile,
) -> Observed {
    run_scenario_and(client, context, name, file, |_, _| {}).await
}

/// As [`run_scenario`], and calls `inspect(namespace, job name)` once the Job is stable, before
/// anything is cleaned up (for tests that look at the live Job, such as `explain`).
pub async fn run_scenario_and(
    client: &Client,
    context: &str,
    name: &str,
    file: &ScenarioFile,
    inspect: impl FnOnce(&str, &str),
) -> Observed {
    let ns = TestNamespace::create(client, context, "fp").await;
    let manifest = prepare_job(&file.job, &ns.name);
    let job_name = manifest["metadata"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: job.metadata.name is required"))
        .to_string();
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &ApiResource::erase::<Job>(&()));
    let object: DynamicObject = serde_json::from_value(manifest).unwrap();
    if let Err(e) = dynamic.create(&PostParams::default(), &object).await {
        panic!("{name}: the API server rejected the Job: {e}");
    }
    let _job_guard = JobGuard {
        context: context.to_string(),
        namespace: ns.name.clone(),
        name: job_name.clone(),
    };
    let mut run = Run {
        name: name.to_string(),
        jobs: Api::namespaced(client.clone(), &ns.name),
        pods: Api::namespaced(client.clone(), &ns.name),
        job_name,
        namespace: ns.name.clone(),
        targeted: BTreeMap::new(),
    };
    let mut records = Vec::new();
    let mut ended: Option<String> = None;
    // Seconds from the Job's startTime (the origin of activeDeadlineSeconds too) at which each
    // outcome is due: the sum of the `after`s so far.
    let mut due_seconds = 0u64;
    for (k, outcome) in file.scenario.outcomes.iter().enumerate() {
        if let Some(after) = &outcome.after {
            due_seconds += kubectl_migrate::duration::parse(after)
                .unwrap_or_else(|e| panic!("{name}: outcome {k}: after: {e}"))
                .as_secs();
        }
        let pod = match &ended {
            None => match run.wait_for_target_pod(k, outcome, due_seconds).await {
                Ok(pod) => Some(pod),
                Err(why) => {
                    ended = Some(why);
                    None
                }
            },
            Some(_) => None,
        };
        let Some(pod) = pod else {
            records.push(OutcomeRecord {
                outcome: k,
                applied: false,
                method: None,
                skipped_because: ended.clone(),
                counters_after: None,
            });
            continue;
        };
        let pod_name = pod.metadata.name.clone().unwrap();
        run.targeted.insert(pod_name.clone(), k);
        if let Some(restart) = &outcome.restart {
            // The pod runs on and nothing in the Job changes unless the restarts reach
            // backoffLimit, which a scenario does only with its last outcome (wait_stable then
            // waits for the ending): no counters are read here.
            let method = run.restart(&pod, restart).await;
            eprintln!("[{name}] outcome {k}: restarted containers of pod {pod_name} via {method}");
            records.push(OutcomeRecord {
                outcome: k,
                applied: true,
                method: Some(method.to_string()),
                skipped_because: None,
                counters_after: None,
            });
            continue;
        }
        let (method, (job, ending)) = match (&outcome.fail, &outcome.delete) {
            (Some(failure), _) => (
                run.fail(&pod, failure).await,
                run.wait_accounted(&pod_name, true).await,
            ),
            (None, Some(delete)) => run.delete(&pod, delete).await,
            (None, None) => (
                run.succeed(&pod).await,
                run.wait_accounted(&pod_name, false).await,
            ),
        };
        let status = job.status.unwrap_or_default();
        let counters_after = ending.is_none().then(|| Counters {
            failed: status.failed.unwrap_or(0),
            succeeded: status.succeeded.unwrap_or(0),
            failed_indexes: status.failed_indexes.clone(),
            completed_indexes: status.completed_indexes.clone(),
        });
        eprintln!(
            "[{name}] outcome {k}: {} pod {pod_name} via {method}{}",
            match (&outcome.fail, &outcome.delete) {
                (Some(_), _) => "failed",
                (None, Some(_)) => "deleted",
                (None, None) => "succeeded",
            },
            ending
                .as_ref()
                .map(|e| format!("; Job now has {e}"))
                .unwrap_or_default()
        );
        records.push(OutcomeRecord {
            outcome: k,
            applied: true,
            method: Some(method.to_string()),
            skipped_because: None,
            counters_after,
        });
        ended = ending;
    }
    let job = run.wait_stable().await;
    inspect(&ns.name, &run.job_name);
    let status = job.status.unwrap_or_default();
    let observed = Observed {
        conditions: status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| ObservedCondition {
                message: c.message.map(|m| run.normalise(&m)),
                type_: c.type_,
                status: c.status,
                reason: c.reason,
            })
            .collect(),
        failed: status.failed.unwrap_or(0),
        succeeded: status.succeeded.unwrap_or(0),
        failed_indexes: status.failed_indexes,
        completed_indexes: status.completed_indexes,
        active: status.active.unwrap_or(0),
        terminating: status.terminating,
        outcomes: records,
    };
    if std::env::var_os("KM_FP_KEEP_NAMESPACES").is_some() {
        eprintln!("[{name}] keeping namespace {}", ns.name);
        std::mem::forget(ns);
    }
    observed
}

/// Deletes the Job before its namespace goes (declared after the namespace guard, so it drops
/// first). Needed: when a Job with a pod failure policy has not finished, its Running pods keep
/// the job-tracking finalizer after the namespace controller deletes them (a terminating pod
/// only counts as failed once its phase is Failed, which KWOK never writes), the Job itself
/// was not deleted in our runs, and the namespace stayed Terminating for good. Once the Job is
/// gone, the controller frees the orphaned pods.
struct JobGuard {
    context: String,
    namespace: String,
    name: String,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if std::env::var_os("KM_FP_KEEP_NAMESPACES").is_some() {
            return;
        }
        let _ = std::process::Command::new(super::cluster_bin_dir().join("kubectl"))
            .arg("--kubeconfig")
            .arg(super::kubeconfig_path())
            .args(["--context", &self.context, "-n", &self.namespace])
            .args([
                "delete",
                "job",
                &self.name,
                "--cascade=background",
                "--wait=false",
            ])
            .output();
    }
}

/// The scenario's Job in `namespace`, its pods held Running by the chaos stage.
pub fn prepare_job(job: &serde_json::Value, namespace: &str) -> serde_json::Value {
    let mut job = job.clone();
    let obj = job.as_object_mut().expect("job must be a mapping");
    obj.entry("apiVersion").or_insert("batch/v1".into());
    obj.entry("kind").or_insert("Job".into());
    job["metadata"]["namespace"] = namespace.into();
    let template = &mut job["spec"]["template"];
    assert!(template.is_object(), "job.spec.template is required");
    if template.get("metadata").is_none() {
        template["metadata"] = serde_json::json!({});
    }
    for field in ["labels", "annotations"] {
        let map = &mut template["metadata"][field];
        if map.is_null() {
            *map = serde_json::json!({});
        }
        assert!(
            map.as_object()
                .unwrap()
                .keys()
                .all(|k| !k.starts_with(CHAOS_LABEL)),
            "the harness owns the KWOK chaos {field} of the pod template"
        );
    }
    template["metadata"]["labels"][CHAOS_LABEL] = "true".into();
    template["metadata"]["annotations"][CHAOS_DELAY] = HOLD.into();
    template["metadata"]["annotations"][CHAOS_JITTER] = HOLD.into();
    job
}

fn now() -> serde_json::Value {
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ))
    .unwrap()
}

/// The first (in status order) True condition of one of `types`. The controller appends
/// FailureTarget / SuccessCriteriaMet before Failed / Complete, so the first one does not depend
/// on when we look.
fn has_true_condition(job: &Job, types: &[&str]) -> Option<String> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.status == "True" && types.contains(&c.type_.as_str()))
        .map(|c| c.type_.clone())
}

/// Whether the Job's activeDeadlineSeconds passes within `window` from now.
fn deadline_within(job: &Job, window: Duration) -> bool {
    let deadline = job.spec.as_ref().and_then(|s| s.active_deadline_seconds);
    let started = job.status.as_ref().and_then(|s| s.start_time.as_ref());
    match (deadline, started) {
        (Some(deadline), Some(started)) => {
            let elapsed = k8s_openapi::jiff::Timestamp::now()
                .duration_since(started.0)
                .as_secs();
            deadline - elapsed <= window.as_secs() as i64
        }
        _ => false,
    }
}

fn uncounted_empty(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.uncounted_terminated_pods.as_ref())
        .is_none_or(|u| {
            u.failed.as_ref().is_none_or(|f| f.is_empty())
                && u.succeeded.as_ref().is_none_or(|s| s.is_empty())
        })
}

/// Parses the API's interval lists, "0,2-4".
pub fn parse_indexes(text: Option<&str>) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in text.unwrap_or("").split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<i32>().unwrap()..=b.parse::<i32>().unwrap()),
            None => {
                out.insert(part.parse::<i32>().unwrap());
            }
        }
    }
    out
}

fn pod_index(pod: &Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Deleted, not finished, and not yet released by the Job controller.
fn is_held_terminating(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_some()
        && phase != Some("Succeeded")
        && phase != Some("Failed")
        && pod
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == TRACKING_FINALIZER)
}

fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none()
        && phase != Some("Succeeded")
        && phase != Some("Failed")
}

fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// How many pods the controller keeps running (manageJob's wantActive; for Indexed Jobs also
/// limited by the indexes that are neither succeeded nor failed, as firstPendingIndexes is).
fn wanted_active(job: &Job, active_now: usize) -> usize {
    let spec = job.spec.as_ref().unwrap();
    let status = job.status.clone().unwrap_or_default();
    let parallelism = spec.parallelism.unwrap_or(1).max(0) as usize;
    let succeeded = status.succeeded.unwrap_or(0).max(0) as usize;
    match spec.completions {
        None if succeeded > 0 => active_now,
        None => parallelism,
        Some(c) if is_indexed(job) => {
            let mut finished = parse_indexes(status.completed_indexes.as_deref());
            finished.extend(parse_indexes(status.failed_indexes.as_deref()));
            (c.max(0) as usize)
                .saturating_sub(finished.len())
                .min(parallelism)
        }
        Some(c) => (c.max(0) as usize)
            .saturating_sub(succeeded)
            .min(parallelism),
    }
}

/// Nothing uncounted and exactly the pods the controller wants, all Running. A deleted pod
/// that still has the controller's finalizer is one it neither counted nor replaced
/// (podReplacementPolicy Failed): it holds its slot.
fn quiescent(job: &Job, pods: &[Pod]) -> bool {
    let active: Vec<&Pod> = pods.iter().filter(|p| is_active(p)).collect();
    let held = pods.iter().filter(|p| is_held_terminating(p)).count();
    let want = wanted_active(job, active.len()).saturating_sub(held);
    uncounted_empty(job)
        && active.len() == want
        && active.iter().all(|p| is_running(p))
        && job.status.as_ref().and_then(|s| s.active).unwrap_or(0) as usize == want
}

impl Run {
    async fn job(&self) -> Job {
        self.jobs.get(&self.job_name).await.unwrap()
    }

    async fn job_pods(&self) -> Vec<Pod> {
        self.pods
            .list(
                &ListParams::default()
                    .labels(&format!("batch.kubernetes.io/job-name={}", self.job_name)),
            )
            .await
            .unwrap()
            .items
    }

    /// A description of the Job and its pods for timeout messages.
    async fn dump(&self) -> String {
        let job = self.job().await;
        let mut out = format!(
            "job status: {}\npods:",
            serde_json::to_string(&job.status).unwrap()
        );
        for p in self.job_pods().await {
            out.push_str(&format!(
                "\n  {} index={:?} phase={:?} deleting={} finalizers={:?}",
                p.metadata.name.as_deref().unwrap_or_default(),
                pod_index(&p),
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                p.metadata.deletion_timestamp.is_some(),
                p.metadata.finalizers.as_deref().unwrap_or_default()
            ));
        }
        out
    }

    async fn timed_out(&self, what: &str) -> ! {
        panic!(
            "[{}] timed out waiting for {what} (namespace {})\n{}",
            self.name,
            self.namespace,
            self.dump().await
        );
    }

    /// The Running pod for outcome `k` once the Job is quiescent and `due_seconds` have passed
    /// since its startTime, or Err(condition types) when the Job already has an ending
    /// condition (activeDeadlineSeconds may pass while waiting).
    async fn wait_for_target_pod(
        &self,
        k: usize,
        outcome: &Outcome,
        due_seconds: u64,
    ) -> Result<Pod, String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
        loop {
            // Pods first: the Job's status is written after the pods change, so a Job read
            // after them is at least as new (the other order can pair a stale Job with pods
            // released since).
            let pods = self.job_pods().await;
            let job = self.job().await;
            if let Some(ending) = has_true_condition(&job, &ENDING_CONDITIONS) {
                return Err(ending);
            }
            let started = job
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .map(|t| t.0);
            let due = started.is_some_and(|t| {
                k8s_openapi::jiff::Timestamp::now()
                    .duration_since(t)
                    .as_secs()
                    >= due_seconds as i64
            });
            let indexed = is_indexed(&job);
            assert_eq!(
                indexed,
                outcome.index.is_some(),
                "[{}] outcome {k}: `index` is required for Indexed Jobs and only for them",
                self.name
            );
            if let Some(ix) = outcome.index {
                let status = job.status.clone().unwrap_or_default();
                let done = parse_indexes(status.completed_indexes.as_deref())
                    .union(&parse_indexes(status.failed_indexes.as_deref()))
                    .copied()
                    .collect::<BTreeSet<_>>();
                assert!(
                    !done.contains(&ix),
                    "[{}] outcome {k}: index {ix} already succeeded or failed: {status:?}",
                    self.name
                );
            }
            if due && quiescent(&job, &pods) {
                let mut candidates: Vec<&Pod> = pods
                    .iter()
                    .filter(|p| is_running(p))
                    .filter(|p| outcome.index.is_none() || pod_index(p) == outcome.index)
                    .collect();
                candidates.sort_by_key(|p| {
                    (
                        p.metadata.creation_timestamp.clone(),
                        p.metadata.name.clone(),
                    )
                });
                if let Some(p) = candidates.first() {
                    return Ok((*p).clone());
                }
            }
            if tokio::time::Instant::now() > deadline {
                self.timed_out(&format!("a Running pod for outcome {k}"))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    async fn fail(&self, pod: &Pod, failure: &Failure) -> &'static str {
        let name = pod.metadata.name.clone().unwrap();
        let spec = pod.spec.as_ref().unwrap();
        let containers: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
        let inits: Vec<&str> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        for c in failure.exit_codes.keys() {
            assert!(
                containers.contains(&c.as_str()),
                "[{}] exitCodes names {c}, not a container of the pod ({containers:?})",
                self.name
            );
        }
        for c in failure.init_exit_codes.keys() {
            assert!(
                inits.contains(&c.as_str()),
                "[{}] initExitCodes names {c}, not an init container of the pod ({inits:?})",
                self.name
            );
        }
        let codes: BTreeSet<i32> = failure.exit_codes.values().copied().collect();
        // What the chaos stage can express: one container, or all of them with one code.
        // The chaos stage ignores deleted pods.
        let chaos: Option<(i32, Option<&str>)> = match failure.exit_codes.len() {
            _ if pod.metadata.deletion_timestamp.is_some() => None,
            0 => None,
            1 if containers.len() > 1 => {
                let (c, code) = failure.exit_codes.iter().next().unwrap();
                Some((*code, Some(c.as_str())))
            }
            n if n == containers.len() && codes.len() == 1 => {
                Some((*codes.iter().next().unwrap(), None))
            }
            _ => None,
        };
        let status = pod.status.clone().unwrap_or_default();
        let now = now();
        let terminated = |code: i32| {
            serde_json::json!({"terminated": {
                "exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "startedAt": now, "finishedAt": now,
            }})
        };
        // Every status, in spec order; listed ones terminated, the others as they are.
        let rebuild = |names: &[&str],
                       current: &Option<Vec<k8s_openapi::api::core::v1::ContainerStatus>>,
                       codes: &BTreeMap<String, i32>| {
            names
                .iter()
                .map(|n| {
                    let mut s = current
                        .iter()
                        .flatten()
                        .find(|s| s.name == *n)
                        .map(|s| serde_json::to_value(s).unwrap())
                        .unwrap_or_else(|| {
                            serde_json::json!({"name": n, "image": "", "imageID": "",
                                "ready": false, "restartCount": 0})
                        });
                    if let Some(code) = codes.get(*n) {
                        s["state"] = terminated(*code);
                        s["ready"] = false.into();
                        s["started"] = false.into();
                    }
                    s
                })
                .collect::<Vec<_>>()
        };
        let conditions: Vec<serde_json::Value> = failure
            .conditions
            .iter()
            .map(|c| {
                serde_json::json!({
                    "type": c.type_, "status": c.status, "reason": c.reason,
                    "message": c.message, "lastTransitionTime": now,
                })
            })
            .collect();
        let pp = PatchParams::default();
        match chaos {
            Some((code, container)) => {
                let prepatch = !failure.init_exit_codes.is_empty() || !conditions.is_empty();
                if prepatch {
                    let mut patch = serde_json::json!({"status": {}});
                    if !conditions.is_empty() {
                        patch["status"]["conditions"] = conditions.into();
                    }
                    if !failure.init_exit_codes.is_empty() {
                        patch["status"]["initContainerStatuses"] = rebuild(
                            &inits,
                            &status.init_container_statuses,
                            &failure.init_exit_codes,
                        )
                        .into();
                    }
                    self.pods
                        .patch_status(&name, &pp, &Patch::Strategic(patch))
                        .await
                        .unwrap_or_else(|e| panic!("[{}] status pre-patch: {e}", self.name));
                }
                let patch = serde_json::json!({"metadata": {"annotations": {
                    CHAOS_DELAY: "0s", CHAOS_JITTER: "0s",
                    CHAOS_EXIT_CODE: code.to_string(),
                    CHAOS_CONTAINER: container,
                }}});
                self.pods
                    .patch(&name, &pp, &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("[{}] chaos trigger: {e}", self.name));
                if prepatch {
                    "kwok-chaos+status-prepatch"
                } else {
                    "kwok-chaos"
                }
            }
            None => {
                let mut all_conditions = vec![
                    serde_json::json!({"type": "Ready", "status": "False", "lastTransitionTime": now}),
                    serde_json::json!({"type": "ContainersReady", "status": "False", "lastTransitionTime": now}),
                ];
                all_conditions.extend(conditions);
                let mut patch = serde_json::json!({"status": {
                    "phase": "Failed",
                    "conditions": all_conditions,
                    "containerStatuses": rebuild(&containers, &status.container_statuses, &failure.exit_codes),
                }});
                if !inits.is_empty() {
                    patch["status"]["initContainerStatuses"] = rebuild(
                        &inits,
                        &status.init_container_statuses,
                        &failure.init_exit_codes,
                    )
                    .into();
                }
                let result = self
                    .pods
                    .patch_status(&name, &pp, &Patch::Strategic(patch))
                    .await
                    .unwrap_or_else(|e| panic!("[{}] status patch: {e}", self.name));
                assert_eq!(
                    result.status.and_then(|s| s.phase).as_deref(),
                    Some("Failed")
                );
                "status-patch"
            }
        }
    }

    /// Containers of a Running pod exit and restart in place (restartPolicy OnFailure), as a
    /// kubelet reports it: restartCount + 1 and the exit in lastState; the pod stays Running.
    async fn restart(&self, pod: &Pod, restart: &RestartSpec) -> &'static str {
        let name = pod.metadata.name.clone().unwrap();
        let status = pod.status.clone().unwrap_or_default();
        let now = now();
        let bump = |current: &Option<Vec<k8s_openapi::api::core::v1::ContainerStatus>>,
                    codes: &BTreeMap<String, i32>| {
            for c in codes.keys() {
                assert!(
                    current.iter().flatten().any(|s| &s.name == c),
                    "[{}] restart names {c}, which has no status in the pod",
                    self.name
                );
            }
            current
                .iter()
                .flatten()
                .map(|s| {
                    let mut v = serde_json::to_value(s).unwrap();
                    if let Some(code) = codes.get(&s.name) {
                        v["restartCount"] = (s.restart_count + 1).into();
                        v["lastState"] = serde_json::json!({"terminated": {
                            "exitCode": code, "reason": "Error",
                            "startedAt": now, "finishedAt": now,
                        }});
                    }
                    v
                })
                .collect::<Vec<_>>()
        };
        let mut patch = serde_json::json!({"status": {
            "containerStatuses": bump(&status.container_statuses, &restart.exit_codes),
        }});
        if !restart.init_exit_codes.is_empty() {
            patch["status"]["initContainerStatuses"] =
                bump(&status.init_container_statuses, &restart.init_exit_codes).into();
        }
        let result = self
            .pods
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .unwrap_or_else(|e| panic!("[{}] restart status patch: {e}", self.name));
        assert_eq!(
            result.status.and_then(|s| s.phase).as_deref(),
            Some("Running")
        );
        "status-patch-restart"
    }

    /// Deletes a Running pod as a user or an eviction does (its grace period), and, when the
    /// outcome says how it ends, writes that end as a kubelet would: phase Failed. KWOK's
    /// `pod-delete` stage removes the pod once the controller drops its finalizer; KWOK never
    /// ends it by itself. Returns the method and the Job once the controller has dealt with
    /// the deletion: the pod accounted for, or (not ending) still Terminating with its
    /// finalizer and counted in the Job's status.terminating.
    async fn delete(
        &self,
        pod: &Pod,
        delete: &DeleteSpec,
    ) -> (&'static str, (Job, Option<String>)) {
        let name = pod.metadata.name.clone().unwrap();
        self.pods
            .delete(&name, &kube::api::DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("[{}] deleting pod {name}: {e}", self.name));
        if let Some(failure) = &delete.fail {
            let deleted = self.pods.get_opt(&name).await.unwrap();
            let Some(deleted) = deleted.filter(is_held_terminating) else {
                // Counted at once and released (podReplacementPolicy TerminatingOrFailed):
                // nothing is left to end.
                return ("delete", self.wait_accounted(&name, true).await);
            };
            let method = self.fail(&deleted, failure).await;
            assert_eq!(
                method, "status-patch",
                "a deleted pod ends by a status patch"
            );
            return (
                "delete+status-patch",
                self.wait_accounted(&name, true).await,
            );
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
        loop {
            // The pods first, then the Job: the controller records the pod as uncounted before
            // it drops the finalizer, so a pod seen released is in the Job read after it. Read
            // the other way round, a Job from before the deletion and a pod released since
            // passed for a deletion not counted (seen at 1.30 on a busy machine: failed=0).
            let pods = self.job_pods().await;
            let held = pods
                .iter()
                .any(|p| p.metadata.name.as_deref() == Some(&name) && is_held_terminating(p));
            let held_pods = pods.iter().filter(|p| is_held_terminating(p)).count();
            let job = self.job().await;
            if let Some(ending) = has_true_condition(&job, &ENDING_CONDITIONS) {
                return ("delete", (job, Some(ending)));
            }
            if !held && uncounted_empty(&job) {
                return ("delete", (job, None));
            }
            // Held, not counted, and the controller has seen the deletion: it counts every held
            // pod in status.terminating, in the same sync that would have counted this one as
            // failed. (A Job unchanged for 2 s stood for this before, and was too short on a busy
            // machine: seen at 1.33.)
            let terminating = job.status.as_ref().and_then(|s| s.terminating).unwrap_or(0);
            if held
                && uncounted_empty(&job)
                && usize::try_from(terminating).unwrap_or(0) >= held_pods
            {
                return ("delete", (job, None));
            }
            if tokio::time::Instant::now() > deadline {
                self.timed_out(&format!("the controller to deal with deleted pod {name}"))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn succeed(&self, pod: &Pod) -> &'static str {
        let name = pod.metadata.name.clone().unwrap();
        let patch = serde_json::json!({"metadata": {"labels": {CHAOS_LABEL: null}}});
        self.pods
            .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("[{}] removing the chaos label: {e}", self.name));
        "kwok-pod-complete"
    }

    /// Waits until the controller accounted for `pod_name`; returns the Job then and its ending
    /// condition types, if any.
    async fn wait_accounted(&self, pod_name: &str, failing: bool) -> (Job, Option<String>) {
        let start = tokio::time::Instant::now();
        let deadline = start + Duration::from_secs(300);
        let mut nudges = 0;
        loop {
            let pod = self.pods.get_opt(pod_name).await.unwrap();
            let phase = pod
                .as_ref()
                .and_then(|p| p.status.as_ref())
                .and_then(|s| s.phase.clone());
            let expected = if failing { "Failed" } else { "Succeeded" };
            if let Some(p) = &pod
                && is_running(p)
                && start.elapsed() > Duration::from_secs(10 * (nudges + 1))
            {
                // KWOK did not act on the change; make it look at the pod again.
                nudges += 1;
                eprintln!("[{}] nudging KWOK for {pod_name} ({nudges})", self.name);
                let patch = serde_json::json!({"metadata": {"annotations": {
                    NUDGE_ANNOTATION: nudges.to_string()}}});
                self.pods
                    .patch(pod_name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap();
            }
            if let Some(ph) = &phase {
                assert!(
                    ph == expected || ph == "Running" || ph == "Pending",
                    "[{}] pod {pod_name} became {ph}, expected {expected}",
                    self.name
                );
            }
            let finalizer_gone = pod.as_ref().is_none_or(|p| {
                !p.metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == TRACKING_FINALIZER)
            });
            let job = self.job().await;
            if let Some(ending) = has_true_condition(&job, &ENDING_CONDITIONS) {
                return (job, Some(ending));
            }
            if finalizer_gone && phase.as_deref() != Some("Running") && uncounted_empty(&job) {
                return (job, None);
            }
            if tokio::time::Instant::now() > deadline {
                self.timed_out(&format!("the controller to account for pod {pod_name}"))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the Job has Failed/Complete with nothing left to count, or (without an
    /// ending condition) is quiescent and unchanged for 3 s.
    async fn wait_stable(&self) -> Job {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
        let mut last: Option<String> = None;
        let mut since = tokio::time::Instant::now();
        loop {
            // Pods first, as in wait_for_target_pod.
            let pods = self.job_pods().await;
            let job = self.job().await;
            let mut snapshot = job.status.clone().unwrap_or_default();
            snapshot.conditions.iter_mut().flatten().for_each(|c| {
                c.last_probe_time = None;
                c.last_transition_time = None;
            });
            let snapshot = serde_json::to_string(&snapshot).unwrap();
            if last.as_ref() != Some(&snapshot) {
                last = Some(snapshot);
                since = tokio::time::Instant::now();
            }
            let unchanged = since.elapsed();
            let done = if has_true_condition(&job, &["Failed", "Complete"]).is_some() {
                // status.terminating is not updated once the Job has finished (1.30 keeps 1
                // there after the pod is gone): the pods say whether one is terminating.
                uncounted_empty(&job)
                    && pods.iter().all(|p| p.metadata.deletion_timestamp.is_none())
                    && unchanged >= Duration::from_secs(1)
            } else if has_true_condition(&job, &["FailureTarget", "SuccessCriteriaMet"]).is_some() {
                false
            } else if deadline_within(&job, Duration::from_secs(240)) {
                // The pods without an outcome keep running: the deadline will end the Job
                // (a scenario's deadline is seconds away; a Job kept for explain's tests has
                // one an hour away and is stable without it).
                false
            } else {
                quiescent(&job, &pods) && unchanged >= Duration::from_secs(3)
            };
            if done {
                return job;
            }
            if tokio::time::Instant::now() > deadline {
                self.timed_out("the Job to become stable").await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// `<ns>/<pod>` -> `<namespace>/<pod:K>`.
    fn normalise(&self, message: &str) -> String {
        let mut out = message.to_string();
        for (pod, k) in &self.targeted {
            out = out.replace(
                &format!("{}/{pod}", self.namespace),
                &format!("<namespace>/<pod:{k}>"),
            );
        }
        out.replace(&self.namespace, "<namespace>")
    }
}

/// A control plane of an older pinned version (tests/cluster/versions.env), which the
/// failure-policy differentials run against as they run against the newest: scripts/test.sh
/// starts each in a cluster of its own, with its own kubeconfig.
#[derive(Clone, Copy, Debug)]
pub enum OtherVersion {
    /// OLDER_KUBERNETES_VERSION: 1.30, before JobSuccessPolicy and the two-step terminal
    /// conditions.
    Older,
    /// MIDDLE_KUBERNETES_VERSION: one between, where those are on and the Job API server still
    /// prints Go syntax.
    Middle,
}

impl OtherVersion {
    /// Its cluster's context.
    pub fn context(self) -> &'static str {
        match self {
            OtherVersion::Older => "km-older",
            OtherVersion::Middle => "km-middle",
        }
    }

    /// Its cluster's name for start.sh.
    fn cluster(self) -> &'static str {
        self.context().trim_start_matches("km-")
    }

    /// The variable of versions.env that pins it.
    pub fn pinned_as(self) -> &'static str {
        match self {
            OtherVersion::Older => "OLDER_KUBERNETES_VERSION",
            OtherVersion::Middle => "MIDDLE_KUBERNETES_VERSION",
        }
    }

    /// The variable the tests read its cluster's kubeconfig from.
    fn kubeconfig_variable(self) -> &'static str {
        match self {
            OtherVersion::Older => "KM_TEST_OLDER_KUBECONFIG",
            OtherVersion::Middle => "KM_TEST_MIDDLE_KUBECONFIG",
        }
    }

    /// A client of its cluster, checked to run the pinned version; panics, saying how to start
    /// the cluster, when it is absent.
    pub async fn client(self) -> Client {
        let (variable, cluster) = (self.kubeconfig_variable(), self.cluster());
        let path = std::env::var_os(variable).unwrap_or_else(|| {
            panic!(
                "{variable} is not set: run scripts/test.sh, or start the {cluster} cluster with \
                 KM_KUBERNETES_VERSION=<{} of tests/cluster/versions.env> \
                 KM_CLUSTERS_DIR=target/test-clusters-{cluster} KM_PORT_BASE=<a free port> \
                 tests/cluster/start.sh {cluster} and export {variable}=<the path it prints>",
                self.pinned_as()
            )
        });
        let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("readable kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions {
                context: Some(self.context().into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("the context {} in {variable}: {e}", self.context()));
        let client = Client::try_from(config).unwrap();
        let version = client
            .apiserver_version()
            .await
            .unwrap_or_else(|e| panic!("the {cluster} cluster does not answer: {e}"));
        assert_eq!(
            version.git_version,
            super::pinned(self.pinned_as()),
            "the {cluster} cluster runs the version pinned as {}",
            self.pinned_as()
        );
        client
    }
}
