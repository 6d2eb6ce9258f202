//! PURE: the Job controller's failure decisions, one pod outcome at a time, for a chosen
//! Kubernetes version ([`Semantics`]). Every consumer (the timeline printer, `explain`,
//! `check` and the differential test against the real kube-controller-manager) uses these
//! functions, so they cannot disagree with each other.
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::model::{Action, ContainerState, FailedPod, JobModel, Rule, format_intervals};

/// What differs between Kubernetes versions, as far as Jobs are concerned.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Semantics {
    /// The minor version: 36 for 1.36.
    pub minor: u32,
    /// Feature gates at their default for that version.
    pub job_pod_failure_policy: bool,
    pub pod_disruption_conditions: bool,
    pub job_backoff_limit_per_index: bool,
    pub job_pod_replacement_policy: bool,
    pub job_success_policy: bool,
    pub job_managed_by: bool,
    /// FailureTarget/SuccessCriteriaMet first, Failed/Complete once no pod is terminating.
    pub two_step_terminal_conditions: bool,
    /// A plain completion is reported with reason CompletionsReached (else no reason).
    pub completions_reached_reason: bool,
    pub backoff_base_seconds: u64,
    pub backoff_cap_seconds: u64,
}

pub const OLDEST_MINOR: u32 = 26;
pub const NEWEST_MINOR: u32 = 36;

impl Semantics {
    /// The defaults of a 1.`minor` control plane.
    pub fn for_minor(minor: u32) -> Result<Semantics, String> {
        if !(OLDEST_MINOR..=NEWEST_MINOR).contains(&minor) {
            return Err(format!(
                "Kubernetes 1.{minor} is not supported: use 1.{OLDEST_MINOR} to 1.{NEWEST_MINOR}"
            ));
        }
        let replacement = minor >= 29;
        let managed_by = minor >= 32;
        Ok(Semantics {
            minor,
            job_pod_failure_policy: minor >= 26,
            pod_disruption_conditions: minor >= 26,
            job_backoff_limit_per_index: minor >= 29,
            job_pod_replacement_policy: replacement,
            job_success_policy: minor >= 31,
            job_managed_by: managed_by,
            two_step_terminal_conditions: minor >= 31 && (replacement || managed_by),
            // newSuccessCondition sets CompletionsReached whenever JobSuccessPolicy is on
            // (beta, on by default, from 1.31: v1.31.0 job_controller.go).
            completions_reached_reason: minor >= 31,
            backoff_base_seconds: 10,
            backoff_cap_seconds: 600,
        })
    }

    pub fn newest() -> Semantics {
        Semantics::for_minor(NEWEST_MINOR).expect("newest is supported")
    }

    /// Parses "1.34", "v1.34.2" or "34".
    pub fn parse_version(text: &str) -> Result<Semantics, String> {
        let t = text.trim().trim_start_matches('v');
        let minor = match t.split('.').collect::<Vec<_>>().as_slice() {
            ["1", m, ..] => m.parse::<u32>().ok(),
            [m] => m.parse::<u32>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("{text:?} is not a Kubernetes version; use e.g. 1.34"))?;
        Semantics::for_minor(minor)
    }
}

/// The outcome of one pod, in scenario order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodResult {
    Failed(FailedPod),
    Succeeded,
    /// restartPolicy OnFailure: this many containers of the running pod exited and were
    /// restarted in place (each restart adds 1 to the pod's restartCount).
    Restarted(u32),
    /// The running pod is deleted (or evicted). `Some`: its containers then stop and it
    /// reaches phase Failed in this state; `None`: it stays Terminating (its node is gone).
    Deleted(Option<FailedPod>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The index, for Indexed Jobs.
    pub index: Option<i32>,
    pub result: PodResult,
    /// Seconds since the previous outcome (the Job's start for the first).
    pub after_seconds: u64,
}

/// What the policy says about one failed pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyMatch {
    /// The index of the first matching rule, if any.
    pub rule: Option<usize>,
    /// The action taken: the rule's, or `Count` when nothing matched.
    pub action: String,
    /// Whether the failure counts towards backoffLimit (and the per-index limit).
    pub counted: bool,
    /// The FailJob message, exactly as the controller writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_job_message: Option<String>,
}

/// The controller's matchPodFailurePolicy: rules in order, the first match wins.
pub fn match_policy(
    rules: Option<&[Rule]>,
    pod: &FailedPod,
    namespace: &str,
    semantics: &Semantics,
) -> PolicyMatch {
    let default = PolicyMatch {
        rule: None,
        action: "Count".into(),
        counted: true,
        fail_job_message: None,
    };
    let Some(rules) = rules.filter(|_| semantics.job_pod_failure_policy) else {
        return default;
    };
    for (index, rule) in rules.iter().enumerate() {
        let matched: Option<String> = if let Some(req) = &rule.on_exit_codes {
            matching_container(pod, req).map(|c| {
                format!(
                    "Container {} for pod {namespace}/{} failed with exit code {} matching {} rule at index {index}",
                    c.name,
                    pod.name,
                    c.exit_code.unwrap_or_default(),
                    rule.action.as_str()
                )
            })
        } else if !rule.on_pod_conditions.is_empty() {
            matching_condition(pod, rule).map(|t| {
                format!(
                    "Pod {namespace}/{} has condition {t} matching {} rule at index {index}",
                    pod.name,
                    rule.action.as_str()
                )
            })
        } else {
            None
        };
        let Some(message) = matched else { continue };
        let result = |action: &str, counted: bool, message: Option<String>| PolicyMatch {
            rule: Some(index),
            action: action.into(),
            counted,
            fail_job_message: message,
        };
        match &rule.action {
            Action::Ignore => return result("Ignore", false, None),
            Action::Count => return result("Count", true, None),
            Action::FailJob => return result("FailJob", true, Some(message)),
            Action::FailIndex if semantics.job_backoff_limit_per_index => {
                return result("FailIndex", true, None);
            }
            // FailIndex without the feature, or an unknown action: the rule is skipped.
            Action::FailIndex | Action::Unknown(_) => continue,
        }
    }
    default
}

/// Why no rule of the policy matched a failed pod, in words (`None` when one did, or there are
/// no rules): the pod's exit codes and conditions against the kinds of rules there are.
pub fn why_no_rule_matched(rules: &[Rule], pod: &FailedPod) -> Option<String> {
    if rules.is_empty() {
        return None;
    }
    let mut why = Vec::new();
    if rules.iter().any(|r| r.on_exit_codes.is_some()) {
        let codes: Vec<String> = pod
            .containers
            .iter()
            .chain(&pod.init_containers)
            .filter_map(|c| c.exit_code.filter(|code| *code != 0))
            .map(|code| code.to_string())
            .collect();
        why.push(if codes.is_empty() {
            "no container ended with a non-zero exit code (onExitCodes rules skip containers that exit 0 or have not ended)".to_string()
        } else {
            format!("exit code(s) {} match no onExitCodes rule", codes.join(", "))
        });
    }
    if rules.iter().any(|r| !r.on_pod_conditions.is_empty()) {
        why.push(if pod.conditions.is_empty() {
            "the pod has no condition an onPodConditions rule can match".to_string()
        } else {
            "none of its conditions has the type and status of an onPodConditions pattern"
                .to_string()
        });
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Containers first, then init containers; a container that has not terminated, or exited 0,
/// never matches (for either operator).
fn matching_container<'p>(
    pod: &'p FailedPod,
    req: &super::model::ExitCodesRule,
) -> Option<&'p ContainerState> {
    pod.containers.iter().chain(&pod.init_containers).find(|c| {
        let Some(code) = c.exit_code else {
            return false;
        };
        if code == 0 {
            return false;
        }
        if req.container_name.as_ref().is_some_and(|n| n != &c.name) {
            return false;
        }
        match req.operator.as_str() {
            "In" => req.values.contains(&code),
            "NotIn" => !req.values.contains(&code),
            _ => false,
        }
    })
}

/// The pod's conditions in pod order, each against every pattern; type and status must match.
fn matching_condition(pod: &FailedPod, rule: &Rule) -> Option<String> {
    pod.conditions.iter().find_map(|c| {
        rule.on_pod_conditions
            .iter()
            .any(|p| p.type_ == c.type_ && p.status == c.status)
            .then(|| c.type_.clone())
    })
}

/// A Job condition as the controller writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// One line of the timeline: an outcome of the scenario, or an event that happens on its own
/// (the Job's deadline passing).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// 1-based position in the scenario; `None` for an event (`result` says which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// Seconds since the Job started.
    pub at_seconds: u64,
    pub pod: String,
    /// `failed`, `succeeded`, `restarted` (a container of a running pod, restartPolicy
    /// OnFailure), `deleted` (a running pod deleted or evicted), `skipped` (the Job or index had already finished), or the event `deadline`
    /// (activeDeadlineSeconds passed).
    pub result: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyMatch>,
    pub counted: bool,
    pub failed: i32,
    pub succeeded: i32,
    /// The index's failure count (per-index Jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_failures: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_failed: Option<bool>,
    /// The delay before the controller creates the replacement pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_seconds: Option<u64>,
    /// restartPolicy OnFailure: the container restarts of the running pods, which count
    /// toward backoffLimit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarts: Option<u32>,
    pub conditions_added: Vec<Condition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The outcome's time is before the pod it targets can exist (its `after` is shorter
    /// than the controller's re-creation delay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalStatus {
    pub conditions: Vec<Condition>,
    pub failed: i32,
    pub succeeded: i32,
    /// Per-index Jobs only (as the controller sets it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_indexes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_indexes: Option<String>,
    /// Pods still running at the end of the scenario.
    pub active: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Simulation {
    pub steps: Vec<Step>,
    #[serde(rename = "final")]
    pub final_status: FinalStatus,
}

/// Messages and reasons the controller writes (pkg/controller/job).
pub mod reasons {
    pub const BACKOFF_LIMIT: (&str, &str) = (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    );
    pub const DEADLINE: (&str, &str) = (
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    );
    pub const MAX_FAILED_INDEXES: (&str, &str) = (
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes",
    );
    pub const FAILED_INDEXES: (&str, &str) = ("FailedIndexes", "Job has failed indexes");
    pub const POD_FAILURE_POLICY: &str = "PodFailurePolicy";
    pub const SUCCESS_POLICY: &str = "SuccessPolicy";
    pub const COMPLETIONS_REACHED: (&str, &str) = (
        "CompletionsReached",
        "Reached expected number of succeeded pods",
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexState {
    Pending,
    Succeeded,
    Failed,
}

struct Sim<'a> {
    job: &'a JobModel,
    sem: &'a Semantics,
    failed: i32,
    succeeded: i32,
    /// Per index (Indexed Jobs), with running counts so each step costs O(log n).
    indexes: BTreeMap<i32, IndexState>,
    pending_indexes: i32,
    failed_indexes: BTreeSet<i32>,
    succeeded_indexes: BTreeSet<i32>,
    index_failures: BTreeMap<i32, i32>,
    index_ignored: BTreeMap<i32, i32>,
    /// Failures (counted or ignored) since the last success: drives the re-creation backoff.
    backoff_failures: u32,
    conditions: Vec<Condition>,
    /// Set once a terminal decision is taken.
    finished: bool,
    now: u64,
    pods_created: usize,
    /// Pods running besides the one whose outcome is being applied: deleted, and counted as
    /// failed, when the Job fails.
    others_active: i32,
    last_was_success: bool,
    /// Work-queue Jobs (completions unset): pods running. After the first success no new pod
    /// is created.
    work_queue_running: i32,
    /// When the replacement of a failed pod is created, per index (None: the one pod of a Job
    /// with parallelism 1), and after what delay: an outcome for that pod cannot come earlier.
    replaced_at: BTreeMap<Option<i32>, (u64, u64)>,
    /// Pods not re-created yet because of the Job's re-creation backoff, and when they all
    /// come (the backoff is one record for the whole Job).
    missing: i32,
    missing_until: u64,
    /// The same per index, when the backoff is per index (backoffLimitPerIndex).
    index_missing_until: BTreeMap<i32, u64>,
    /// restartPolicy OnFailure: container restarts of the running pods, oldest pod first
    /// (NonIndexed: outcomes happen to the oldest running pod, as the differential harness
    /// picks it), or per index.
    restarts: std::collections::VecDeque<u32>,
    index_restarts: BTreeMap<i32, u32>,
    /// Deleted pods still Terminating that the controller neither counts nor replaces
    /// (podReplacementPolicy Failed): they hold their slot until the Job finishes.
    terminating: i32,
}

/// Where a live Job stands, for "what would the next failure do" (explain).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Start {
    pub failed: i32,
    pub succeeded: i32,
    pub index_failures: BTreeMap<i32, i32>,
    pub index_ignored: BTreeMap<i32, i32>,
    pub failed_indexes: BTreeSet<i32>,
    pub succeeded_indexes: BTreeSet<i32>,
    /// Failures since the last success (drives the backoff).
    pub recent_failures: u32,
    pub elapsed_seconds: u64,
}

/// Runs the scenario through the controller's decisions, from a new Job.
pub fn simulate(job: &JobModel, sem: &Semantics, outcomes: &[Outcome]) -> Simulation {
    simulate_from(job, sem, &Start::default(), outcomes)
}

/// Runs the scenario from a given state.
/// Pods that get no outcome keep running, so a Job with activeDeadlineSeconds that the outcomes
/// do not finish ends at its deadline: the last step is then that event.
pub fn simulate_from(
    job: &JobModel,
    sem: &Semantics,
    start: &Start,
    outcomes: &[Outcome],
) -> Simulation {
    let mut sim = Sim::new(job, sem, start);
    let mut steps = Vec::with_capacity(outcomes.len() + 1);
    for (n, outcome) in outcomes.iter().enumerate() {
        let at = sim.now.saturating_add(outcome.after_seconds);
        steps.extend(sim.deadline_passes(Some(at)));
        steps.push(sim.apply(n + 1, outcome));
    }
    steps.extend(sim.deadline_passes(None));
    Simulation {
        steps,
        final_status: sim.final_status(),
    }
}

/// The controller's onlyReplaceFailedPods: a terminating pod is neither counted nor replaced
/// until it reaches phase Failed (podReplacementPolicy Failed, which a podFailurePolicy
/// implies; before JobPodReplacementPolicy, a podFailurePolicy alone).
pub fn only_replaces_failed_pods(job: &JobModel, sem: &Semantics) -> bool {
    let policy = job.pod_failure_policy.is_some() && sem.job_pod_failure_policy;
    let replacement = sem.job_pod_replacement_policy
        && job.pod_replacement_policy == super::model::ReplacementPolicy::Failed;
    policy || replacement
}

/// A pod that is running and ready, as the policy sees it when the Job ends and the controller
/// deletes it: no container has ended, and the conditions the kubelet sets (KWOK sets all but
/// PodReadyToStartContainers).
pub fn running_pod() -> FailedPod {
    let condition = |type_: &str| super::model::PodCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: None,
    };
    FailedPod {
        name: String::new(),
        containers: Vec::new(),
        init_containers: Vec::new(),
        conditions: [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        .map(condition)
        .into(),
    }
}

/// The re-creation delay after the n-th failure in a row: base * 2^(n-1), capped.
pub fn backoff(sem: &Semantics, failures: u32) -> u64 {
    if failures == 0 {
        return 0;
    }
    let exponent = (failures - 1).min(32);
    sem.backoff_base_seconds
        .saturating_mul(1u64 << exponent)
        .min(sem.backoff_cap_seconds)
}

impl<'a> Sim<'a> {
    fn new(job: &'a JobModel, sem: &'a Semantics, start: &Start) -> Sim<'a> {
        let mut sim = Sim {
            job,
            sem,
            failed: start.failed,
            succeeded: start.succeeded,
            indexes: BTreeMap::new(),
            pending_indexes: 0,
            failed_indexes: BTreeSet::new(),
            succeeded_indexes: BTreeSet::new(),
            index_failures: start.index_failures.clone(),
            index_ignored: start.index_ignored.clone(),
            backoff_failures: start.recent_failures,
            conditions: Vec::new(),
            finished: false,
            now: start.elapsed_seconds,
            pods_created: 0,
            others_active: 0,
            last_was_success: false,
            work_queue_running: job.parallelism,
            replaced_at: BTreeMap::new(),
            missing: 0,
            missing_until: 0,
            index_missing_until: BTreeMap::new(),
            restarts: Default::default(),
            index_restarts: BTreeMap::new(),
            terminating: 0,
        };
        if job.indexed {
            // Without the per-index feature the controller ignores status.failedIndexes
            // (hasBackoffLimitPerIndex is false) and such indexes are pending again.
            let per_index =
                job.backoff_limit_per_index.is_some() && sem.job_backoff_limit_per_index;
            for i in 0..job.completions.unwrap_or(0) {
                let state = if per_index && start.failed_indexes.contains(&i) {
                    IndexState::Failed
                } else if start.succeeded_indexes.contains(&i) {
                    IndexState::Succeeded
                } else {
                    IndexState::Pending
                };
                sim.set_index(i, state);
            }
        }
        sim
    }

    /// Whether outcomes for `index` are for one pod at a time, whose replacement is timed.
    fn one_slot(&self, index: Option<i32>) -> bool {
        index.is_some() || self.job.parallelism == 1
    }

    /// The `number`-th outcome of the scenario (from 1), as the controller takes it.
    fn apply(&mut self, number: usize, outcome: &Outcome) -> Step {
        // Saturating: times past u64::MAX seconds only matter against the deadline, which
        // they are past anyway.
        self.now = self.now.saturating_add(outcome.after_seconds);
        let mut step = self.step(Some(number), self.now, String::new());
        step.index = outcome.index;
        step.pod = self.pod_name(outcome.index);
        if self.one_slot(outcome.index)
            && let Some((created, delay)) = self.replaced_at.remove(&outcome.index)
            && self.now < created
        {
            step.warning = Some(format!(
                "outcome {number} at {}s is before its pod can exist: the controller creates it at {created}s, {delay}s after the failure before (add to its after)",
                self.now
            ));
        }
        if self.finished {
            step.result = "skipped".into();
            step.note
                .get_or_insert_with(|| "the Job has already finished".into());
            step.failed = self.failed;
            step.succeeded = self.succeeded;
            return step;
        }
        if let Some(note) = outcome.index.and_then(|i| self.index_finished(i)) {
            step.result = "skipped".into();
            step.note = Some(note);
            return step;
        }
        if let PodResult::Restarted(n) = outcome.result {
            self.pod_restarted(outcome.index, n, &mut step);
            return step;
        }
        // The pod ends: its restarts no longer count.
        match outcome.index {
            Some(i) => {
                self.index_restarts.remove(&i);
            }
            None => {
                self.restarts.pop_front();
            }
        }
        self.pods_created += 1;
        // Every slot is filled when a pod finishes (the differential harness waits for that);
        // the pod that finishes here is no longer one of them.
        self.missing = 0;
        self.index_missing_until.clear();
        self.others_active = (self.active() - 1).max(0);
        self.last_was_success = outcome.result == PodResult::Succeeded;
        match &outcome.result {
            PodResult::Succeeded => self.pod_succeeded(outcome.index, &mut step),
            PodResult::Failed(pod) => self.pod_failed(pod, outcome.index, &mut step),
            PodResult::Deleted(ends) => {
                if !self.pod_deleted(ends.as_ref(), outcome.index, &mut step) {
                    return step;
                }
            }
            PodResult::Restarted(_) => unreachable!("handled above"),
        }
        self.after_pod(outcome.index, &mut step);
        step
    }

    /// A running pod is deleted. As the controller's isPodFailed: unless it only replaces
    /// failed pods (podReplacementPolicy Failed, the default with a podFailurePolicy), a
    /// terminating pod is failed at once: counted and replaced. Otherwise it is a failure only
    /// once it reaches phase Failed; until then it keeps its slot. Returns whether the pod
    /// ended now (false: it stays Terminating and nothing else happens).
    fn pod_deleted(
        &mut self,
        ends: Option<&FailedPod>,
        index: Option<i32>,
        step: &mut Step,
    ) -> bool {
        let waits = only_replaces_failed_pods(self.job, self.sem);
        let failed_at_once = !waits;
        match (failed_at_once, ends) {
            (true, _) => {
                // What the pod ends with does not matter: it was counted when it was deleted
                // (there is no policy to look at it).
                self.pod_failed(&FailedPod::default(), index, step);
                step.note = Some(
                    "deleted while running: podReplacementPolicy TerminatingOrFailed counts a terminating pod as failed and replaces it at once".into(),
                );
            }
            (false, Some(pod)) => {
                self.pod_failed(pod, index, step);
                if waits {
                    step.note = Some(
                        "deleted while running; podReplacementPolicy Failed: counted and replaced only once it reached phase Failed".into(),
                    );
                }
            }
            (false, None) if self.sem.job_pod_replacement_policy => {
                self.terminating += 1;
                step.note = Some(
                    "deleted while running and still Terminating: podReplacementPolicy Failed neither counts nor replaces it until it reaches phase Failed".into(),
                );
            }
            (false, None) => {
                // Before JobPodReplacementPolicy: replaced at once, counted only if it fails.
                step.note = Some(
                    "deleted while running and still Terminating: replaced at once; counted only if it reaches phase Failed".into(),
                );
            }
        }
        step.result = "deleted".into();
        if ends.is_some() || failed_at_once {
            return true;
        }
        step.failed = self.failed;
        step.succeeded = self.succeeded;
        false
    }

    /// Containers of a running pod restarted (restartPolicy OnFailure): the pod runs on, and
    /// the restarts of all running pods count toward backoffLimit. If they reach it, every
    /// running pod, this one too, is deleted and counted as failed.
    fn pod_restarted(&mut self, index: Option<i32>, containers: u32, step: &mut Step) {
        step.result = "restarted".into();
        let pod = match index {
            Some(i) => self.index_restarts.entry(i).or_default(),
            None => {
                if self.restarts.is_empty() {
                    self.restarts.push_back(0);
                }
                self.restarts.front_mut().expect("just filled")
            }
        };
        *pod = pod.saturating_add(containers);
        self.missing = 0;
        self.index_missing_until.clear();
        self.others_active = self.active();
        self.last_was_success = false;
        let added = self.decide();
        step.conditions_added.extend(added);
        step.restarts = Some(self.restart_count());
        step.failed = self.failed;
        step.succeeded = self.succeeded;
    }

    /// The sum of the running pods' container restarts.
    fn restart_count(&self) -> u32 {
        self.restarts
            .iter()
            .chain(self.index_restarts.values())
            .fold(0u32, |sum, r| sum.saturating_add(*r))
    }

    /// pastBackoffLimitOnFailure: with restartPolicy OnFailure, the running pods' restarts
    /// reach backoffLimit (any restart at all when it is 0).
    fn past_backoff_limit_on_failure(&self) -> bool {
        if self.job.restart_policy != "OnFailure" {
            return false;
        }
        let restarts = i64::from(self.restart_count());
        let limit = i64::from(self.job.backoff_limit);
        if limit == 0 {
            restarts > 0
        } else {
            restarts >= limit
        }
    }

    /// Why an outcome for `index` has no pod to happen to: the index is done, or not the Job's.
    fn index_finished(&self, index: i32) -> Option<String> {
        match self.indexes.get(&index) {
            Some(IndexState::Pending) => None,
            Some(IndexState::Failed) => Some(format!(
                "index {index} has already failed; it is not retried"
            )),
            Some(IndexState::Succeeded) => Some(format!("index {index} has already succeeded")),
            None => Some(match self.job.completions.unwrap_or(0) {
                0 => format!("index {index}: the Job has no indexes"),
                c => format!("index {index} is outside 0..{}", c - 1),
            }),
        }
    }

    fn pod_succeeded(&mut self, index: Option<i32>, step: &mut Step) {
        step.result = "succeeded".into();
        self.succeeded += 1;
        self.backoff_failures = 0;
        if let Some(i) = index {
            self.set_index(i, IndexState::Succeeded);
        }
    }

    /// A pod failed: the pod failure policy decides whether it counts; the index or the Job
    /// may fail with it, or a replacement follows after a backoff.
    fn pod_failed(&mut self, pod: &FailedPod, index: Option<i32>, step: &mut Step) {
        let (job, sem) = (self.job, self.sem);
        step.result = "failed".into();
        let mut pod = pod.clone();
        pod.name = step.pod.clone();
        let m = match_policy(job.pod_failure_policy.as_deref(), &pod, &job.namespace, sem);
        step.counted = m.counted;
        self.backoff_failures += 1;
        if m.counted {
            self.failed += 1;
        }
        if let Some(i) = index
            && job.backoff_limit_per_index.is_some()
            && sem.job_backoff_limit_per_index
        {
            self.index_failed(i, &m, step);
        } else {
            step.backoff_seconds = Some(backoff(sem, self.backoff_failures));
        }
        let fail_job = m.fail_job_message.clone();
        step.policy = Some(m);
        if let Some(message) = fail_job {
            let added = self.finish_failed(reasons::POD_FAILURE_POLICY, message);
            step.conditions_added.extend(added);
        }
    }

    /// A pod of index `i` failed, with backoffLimitPerIndex: the index's counts, and whether
    /// the index fails for good.
    fn index_failed(&mut self, i: i32, m: &PolicyMatch, step: &mut Step) {
        let (count, ignored) = if m.counted {
            (
                *self
                    .index_failures
                    .entry(i)
                    .and_modify(|c| *c += 1)
                    .or_insert(1),
                self.index_ignored.get(&i).copied().unwrap_or(0),
            )
        } else {
            (
                self.index_failures.get(&i).copied().unwrap_or(0),
                *self
                    .index_ignored
                    .entry(i)
                    .and_modify(|c| *c += 1)
                    .or_insert(1),
            )
        };
        step.index_failures = Some(count);
        let limit = self.job.backoff_limit_per_index.unwrap_or(i32::MAX);
        let index_fails = m.action == "FailIndex" || (m.counted && count > limit);
        step.index_failed = Some(index_fails);
        if index_fails {
            self.set_index(i, IndexState::Failed);
        } else {
            step.backoff_seconds = Some(backoff(self.sem, (count + ignored) as u32));
        }
    }

    /// After a pod finished: the controller's decision on the Job, and when the replacement
    /// comes.
    fn after_pod(&mut self, index: Option<i32>, step: &mut Step) {
        let job = self.job;
        if !job.indexed && job.completions.is_none() && !self.finished {
            self.work_queue_running -= 1;
            if self.succeeded == 0 {
                self.work_queue_running += 1;
            }
        }
        if !self.finished {
            let added = self.decide();
            step.conditions_added.extend(added);
        }
        if self.finished {
            step.backoff_seconds = None;
        }
        step.failed = self.failed;
        step.succeeded = self.succeeded;
        if let Some(delay) = step.backoff_seconds {
            let due = step.at_seconds.saturating_add(delay);
            if self.one_slot(index) {
                self.replaced_at.insert(index, (due, delay));
            }
            match index {
                Some(i) if step.index_failures.is_some() => {
                    self.index_missing_until.insert(i, due);
                }
                _ => {
                    self.missing += 1;
                    self.missing_until = due;
                }
            }
        }
    }

    /// The Job's deadline, if it passes before `until` (or at all, with `None`: the pods
    /// without an outcome keep running): the Job fails then, and the pods running at that
    /// moment are deleted and counted. A pod still waiting out its re-creation backoff does not
    /// exist yet, so it is not counted.
    fn deadline_passes(&mut self, until: Option<u64>) -> Option<Step> {
        let deadline = u64::try_from(self.job.active_deadline_seconds?).ok()?;
        if self.finished || until.is_some_and(|t| t < deadline) {
            return None;
        }
        let at = deadline.max(self.now);
        let running = self.running_at(at);
        let terminating = self.terminating;
        self.others_active = running;
        let added = self.finish_failed(reasons::DEADLINE.0, reasons::DEADLINE.1.to_string());
        let note = match (running, terminating) {
            (0, 1..) => format!(
                "activeDeadlineSeconds ({deadline}s) passed: the controller counted the {terminating} Terminating pod(s) it had not replaced as failed"
            ),
            (n, 1..) => format!(
                "activeDeadlineSeconds ({deadline}s) passed: the controller deleted the {n} running pod(s) and counted them as failed, and the {terminating} Terminating pod(s) too"
            ),
            (0, _) => format!(
                "activeDeadlineSeconds ({deadline}s) passed while no pod was running (the next was still waiting out its re-creation backoff)"
            ),
            (n, _) => format!(
                "activeDeadlineSeconds ({deadline}s) passed: the controller deleted the {n} running pod(s) and counted them as failed"
            ),
        };
        let mut step = self.step(None, at, "deadline".into());
        step.conditions_added = added;
        step.note = Some(note);
        Some(step)
    }

    /// A step at `at` with the Job's counts as they are, nothing decided yet.
    fn step(&self, outcome: Option<usize>, at: u64, result: String) -> Step {
        Step {
            outcome,
            index: None,
            at_seconds: at,
            pod: String::new(),
            result,
            policy: None,
            counted: false,
            failed: self.failed,
            succeeded: self.succeeded,
            index_failures: None,
            index_failed: None,
            backoff_seconds: None,
            restarts: None,
            conditions_added: Vec::new(),
            note: None,
            warning: None,
        }
    }

    /// Pods running at `at`: the ones the controller wants, less those it has not re-created
    /// yet.
    fn running_at(&self, at: u64) -> i32 {
        let missing = if at < self.missing_until {
            self.missing
        } else {
            0
        };
        let index_missing = self
            .index_missing_until
            .iter()
            .filter(|&(i, &due)| due > at && self.indexes.get(i) == Some(&IndexState::Pending))
            .count() as i32;
        (self.active() - missing - index_missing).max(0)
    }

    /// The Job's status after the last outcome.
    fn final_status(&self) -> FinalStatus {
        let (job, sem) = (self.job, self.sem);
        FinalStatus {
            conditions: self.conditions.clone(),
            failed: self.failed,
            succeeded: self.succeeded,
            failed_indexes: (job.indexed
                && job.backoff_limit_per_index.is_some()
                && sem.job_backoff_limit_per_index)
                .then(|| format_intervals(&self.failed_indexes)),
            completed_indexes: job
                .indexed
                .then(|| format_intervals(&self.succeeded_indexes)),
            active: if self.finished { 0 } else { self.active() },
        }
    }
}

impl Sim<'_> {
    fn pod_name(&self, index: Option<i32>) -> String {
        match index {
            Some(i) => format!("{}-{i}-<pod>", self.job.name),
            None => format!("{}-<pod>", self.job.name),
        }
    }

    fn set_index(&mut self, index: i32, state: IndexState) {
        match self.indexes.insert(index, state) {
            Some(IndexState::Pending) => self.pending_indexes -= 1,
            Some(IndexState::Failed) => {
                self.failed_indexes.remove(&index);
            }
            Some(IndexState::Succeeded) => {
                self.succeeded_indexes.remove(&index);
            }
            None => {}
        }
        match state {
            IndexState::Pending => self.pending_indexes += 1,
            IndexState::Failed => {
                self.failed_indexes.insert(index);
            }
            IndexState::Succeeded => {
                self.succeeded_indexes.insert(index);
            }
        }
    }

    /// Pods the controller keeps running: parallelism, limited by the work left.
    fn active(&self) -> i32 {
        let left = if self.job.indexed {
            self.pending_indexes
        } else {
            match self.job.completions {
                Some(c) => (c - self.succeeded).max(0),
                None => self.work_queue_running,
            }
        };
        // A Terminating pod that is not replaced holds its slot.
        (left.min(self.job.parallelism) - self.terminating).max(0)
    }

    /// The Job fails: the target condition (two-step) and the final one; pods still running
    /// are deleted and count as failed.
    fn finish_failed(&mut self, reason: &str, message: String) -> Vec<Condition> {
        // The pods still running, and those left Terminating, are deleted and counted as
        // failed through the policy, as they are: Ready, no container ended. An Ignore rule
        // for a condition they have keeps them out of the count.
        let counted = match_policy(
            self.job.pod_failure_policy.as_deref(),
            &running_pod(),
            &self.job.namespace,
            self.sem,
        )
        .counted;
        if counted {
            self.failed += self.others_active + self.terminating;
        }
        self.terminating = 0;
        self.finished = true;
        let mut added = Vec::new();
        if self.sem.two_step_terminal_conditions || reason == reasons::POD_FAILURE_POLICY {
            added.push(condition("FailureTarget", reason, &message));
        }
        added.push(condition("Failed", reason, &message));
        self.conditions.extend(added.clone());
        added
    }

    fn finish_succeeded(&mut self, reason: &str, message: String) -> Vec<Condition> {
        self.finished = true;
        let mut added = Vec::new();
        // A successPolicy match is always recorded as SuccessCriteriaMet first (syncJob), as
        // FailJob always goes through FailureTarget.
        if self.sem.two_step_terminal_conditions || reason == reasons::SUCCESS_POLICY {
            added.push(condition("SuccessCriteriaMet", reason, &message));
        }
        added.push(condition("Complete", reason, &message));
        self.conditions.extend(added.clone());
        added
    }

    /// syncJob's order: backoff limit, deadline (checked by the caller), failed indexes, then
    /// success.
    fn decide(&mut self) -> Vec<Condition> {
        if self.failed > self.job.backoff_limit || self.past_backoff_limit_on_failure() {
            return self.finish_failed(reasons::BACKOFF_LIMIT.0, reasons::BACKOFF_LIMIT.1.into());
        }
        let per_index = self.job.indexed
            && self.job.backoff_limit_per_index.is_some()
            && self.sem.job_backoff_limit_per_index;
        if per_index {
            let failed_indexes = self.failed_indexes.len() as i32;
            let succeeded_indexes = self.succeeded_indexes.len() as i32;
            if let Some(max) = self.job.max_failed_indexes
                && failed_indexes > max
            {
                return self.finish_failed(
                    reasons::MAX_FAILED_INDEXES.0,
                    reasons::MAX_FAILED_INDEXES.1.into(),
                );
            }
            if failed_indexes > 0
                && failed_indexes + succeeded_indexes >= self.job.completions.unwrap_or(0)
            {
                return self
                    .finish_failed(reasons::FAILED_INDEXES.0, reasons::FAILED_INDEXES.1.into());
            }
        }
        // Only a success can newly satisfy a success policy.
        if self.job.indexed
            && self.last_was_success
            && self.sem.job_success_policy
            && let Some(rules) = &self.job.success_policy
        {
            let done = &self.succeeded_indexes;
            if !done.is_empty() {
                for (i, rule) in rules.iter().enumerate() {
                    let matched = match (&rule.succeeded_indexes, rule.succeeded_count) {
                        // succeededIndexes "" is valid, and the controller skips the rule.
                        (Some(set), _) if set.is_empty() => false,
                        (Some(set), Some(count)) => set.intersection(done).count() as i32 >= count,
                        (Some(set), None) => set.is_subset(done),
                        (None, Some(count)) => done.len() as i32 >= count,
                        (None, None) => false,
                    };
                    if matched {
                        return self.finish_succeeded(
                            reasons::SUCCESS_POLICY,
                            format!("Matched rules at index {i}"),
                        );
                    }
                }
            }
        }
        let complete = if self.job.indexed {
            self.succeeded_indexes.len() == self.indexes.len()
        } else {
            match self.job.completions {
                Some(c) => self.succeeded >= c,
                // A work queue is done once one pod succeeded and the others have finished.
                None => self.succeeded > 0 && self.work_queue_running == 0,
            }
        };
        if complete {
            let (reason, message) = if self.sem.completions_reached_reason {
                reasons::COMPLETIONS_REACHED
            } else {
                ("", "")
            };
            return self.finish_succeeded(reason, message.into());
        }
        Vec::new()
    }
}

fn condition(type_: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.into(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests;
