//! The engine's unit tests. Each test mirrors one upstream case of kubernetes v1.36.3,
//! pkg/controller/job (pod_failure_policy_test.go, job_controller_test.go,
//! backoff_utils_test.go, indexed_job_utils_test.go, success_policy_test.go): one module per
//! upstream test function, one Rust test per case, named after the case (snake_case) and
//! quoting it in its doc comment. The Job spec and the pods are the upstream ones; the
//! expectations are the upstream ones.
//!
//! How upstream's harness maps onto the engine:
//! - Feature gates: upstream runs the v1.36.3 code at an emulated version and then overrides
//!   some gates; [`emulated`] does the same with [`Semantics`].
//! - Pod names: the engine names pods `<job>-<pod>` / `<job>-<i>-<pod>` (real names are
//!   random), so an upstream message naming `mypod-0` is compared with the engine's name put in
//!   its place ([`renamed`]); everything else in the message is upstream's text.
//! - Pods: upstream hands one syncJob a set of pods; the engine plays pod outcomes in order.
//!   Running pods are the Job's other slots, a pod's `job-index-failure-count` annotation is the
//!   index's failure count before it ([`Start::index_failures`]), and a failed pod that already
//!   has a replacement is a failure followed by a still-running slot.
//! - Where upstream's single sync sees a state the engine does not model (a slot whose pod was
//!   never created, a Job condition set beforehand, pods still terminating after one sync), the
//!   case is either adapted with the difference stated in its doc comment, or not mirrored.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use super::super::model::{PodCondition, ReplacementPolicy, parse_intervals};
use super::*;

/// Whether the pod counts as failed at all, before any rule (isPodFailed): only such pods become
/// outcomes, which is how the upstream cases below are translated into scenarios.
fn counts_as_failed(
    job: &JobModel,
    phase_failed: bool,
    terminating: bool,
    sem: &Semantics,
) -> bool {
    if phase_failed {
        return true;
    }
    terminating && !only_replaces_failed_pods(job, sem)
}

/// The feature gates upstream's job tests override.
#[derive(Debug, Clone, Copy)]
enum Gate {
    BackoffLimitPerIndex,
    PodReplacementPolicy,
    ManagedBy,
    SuccessPolicy,
}

/// What the v1.36.3 controller does when a test emulates 1.`minor`
/// (`SetFeatureGateEmulationVersionDuringTest`) and then sets `gates`
/// (`SetFeatureGatesDuringTest`). The switches derived from the gates follow the v1.36.3 code:
/// `delayTerminalCondition()` is JobManagedBy || JobPodReplacementPolicy, and
/// `newSuccessCondition` writes CompletionsReached whenever JobSuccessPolicy is on.
fn emulated(minor: u32, gates: &[(Gate, bool)]) -> Semantics {
    let mut sem = Semantics::for_minor(minor).expect("a supported minor");
    for (gate, on) in gates {
        match gate {
            Gate::BackoffLimitPerIndex => sem.job_backoff_limit_per_index = *on,
            Gate::PodReplacementPolicy => sem.job_pod_replacement_policy = *on,
            Gate::ManagedBy => sem.job_managed_by = *on,
            Gate::SuccessPolicy => sem.job_success_policy = *on,
        }
    }
    sem.two_step_terminal_conditions = sem.job_managed_by || sem.job_pod_replacement_policy;
    sem.completions_reached_reason = sem.job_success_policy;
    sem
}

/// The Job of upstream's tests (`foobar` in `default`, a template with one container) with
/// `spec`, through the API defaults of [`JobModel::from_job`].
fn job(spec: Value) -> JobModel {
    let mut spec = spec;
    spec["template"] = json!({"spec": {"containers": [{"name": "", "image": "foo/bar"}]}});
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "foobar", "namespace": "default"},
        "spec": spec,
    }))
    .expect("a Job");
    JobModel::from_job(&job).expect("a Job model")
}

/// The rules of a podFailurePolicy, through the same conversion.
fn rules(rules: Value) -> Vec<Rule> {
    job(json!({"podFailurePolicy": {"rules": rules}}))
        .pod_failure_policy
        .expect("a policy")
}

/// A container with `state.terminated.exitCode`.
fn terminated(name: &str, exit_code: i32) -> ContainerState {
    ContainerState {
        name: name.into(),
        exit_code: Some(exit_code),
    }
}

/// A container without `state.terminated`.
fn not_terminated(name: &str) -> ContainerState {
    ContainerState {
        name: name.into(),
        exit_code: None,
    }
}

fn pod_condition(type_: &str, status: &str) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        reason: None,
    }
}

/// A failed pod named as upstream's `validPodObjectMeta` (`mypod`).
fn mypod(containers: Vec<ContainerState>, conditions: Vec<PodCondition>) -> FailedPod {
    FailedPod {
        name: "mypod".into(),
        containers,
        init_containers: Vec::new(),
        conditions,
    }
}

fn failed(index: Option<i32>, pod: FailedPod) -> Outcome {
    Outcome {
        index,
        result: PodResult::Failed(pod),
        after_seconds: 0,
    }
}

fn succeeded(index: Option<i32>) -> Outcome {
    Outcome {
        index,
        result: PodResult::Succeeded,
        after_seconds: 0,
    }
}

fn after(seconds: u64, outcome: Outcome) -> Outcome {
    Outcome {
        after_seconds: seconds,
        ..outcome
    }
}

/// A failed pod with no container statuses nor conditions (`phase(v1.PodFailed)`).
fn phase_failed() -> FailedPod {
    FailedPod::default()
}

fn condition(type_: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.into(),
        message: message.into(),
    }
}

/// Upstream's message with the pod name it contains replaced by the engine's.
fn renamed(upstream: &str, upstream_pod: &str, engine_pod: &str) -> String {
    assert!(upstream.contains(upstream_pod), "{upstream:?}");
    upstream.replace(upstream_pod, engine_pod)
}

/// The three results of matchPodFailurePolicy; `want_action: None` is upstream's nil action,
/// which the engine reports as no rule and the default `Count`.
fn assert_match(
    got: PolicyMatch,
    want_message: Option<&str>,
    want_count_failed: bool,
    want_action: Option<&str>,
) {
    assert_eq!(got.fail_job_message.as_deref(), want_message, "message");
    assert_eq!(got.counted, want_count_failed, "countFailed");
    match want_action {
        Some(action) => {
            assert!(got.rule.is_some(), "a rule matched: {got:?}");
            assert_eq!(got.action, action, "action");
        }
        None => {
            assert_eq!(got.rule, None, "no rule matched: {got:?}");
            assert_eq!(got.action, "Count", "the default action");
        }
    }
}

fn index_failures(pairs: &[(i32, i32)]) -> BTreeMap<i32, i32> {
    pairs.iter().copied().collect()
}

/// pod_failure_policy_test.go, TestMatchPodFailurePolicy: matchPodFailurePolicy on one failed
/// pod `default/mypod`. Cases without `enableJobBackoffLimitPerIndex` emulate 1.32 with
/// JobBackoffLimitPerIndex off.
mod match_pod_failure_policy {
    use super::*;

    fn sem(enable_job_backoff_limit_per_index: bool) -> Semantics {
        if enable_job_backoff_limit_per_index {
            emulated(36, &[(Gate::BackoffLimitPerIndex, true)])
        } else {
            emulated(32, &[(Gate::BackoffLimitPerIndex, false)])
        }
    }

    fn run(policy: Option<Value>, pod: &FailedPod, blpi: bool) -> PolicyMatch {
        let rules = policy.map(rules);
        match_policy(rules.as_deref(), pod, "default", &sem(blpi))
    }

    /// TestMatchPodFailurePolicy: "unknown action for rule matching by exit codes - skip rule
    /// with unknown action".
    #[test]
    fn unknown_action_for_rule_matching_by_exit_codes_skip_rule_with_unknown_action() {
        let policy = json!([
            {"action": "UnknownAction", "onExitCodes": {"operator": "In", "values": [1, 2]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 3]}},
        ]);
        let pod = mypod(vec![terminated("main-container", 2)], vec![]);
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "unknown action for rule matching by pod conditions - skip
    /// rule with unknown action".
    #[test]
    fn unknown_action_for_rule_matching_by_pod_conditions_skip_rule_with_unknown_action() {
        let policy = json!([
            {"action": "UnkonwnAction", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "unknown operator - rule with unknown action is skipped for
    /// onExitCodes".
    #[test]
    fn unknown_operator_rule_with_unknown_action_is_skipped_for_on_exit_codes() {
        let policy = json!([
            {"action": "Ignore", "onExitCodes": {"operator": "UnknownOperator", "values": [1, 2]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 3]}},
        ]);
        let pod = mypod(vec![terminated("main-container", 2)], vec![]);
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "no policy rules".
    #[test]
    fn no_policy_rules() {
        let pod = mypod(vec![terminated("", 2)], vec![]);
        assert_match(run(None, &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "ignore rule matched for exit codes".
    #[test]
    fn ignore_rule_matched_for_exit_codes() {
        let policy = json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        ]);
        let pod = mypod(vec![terminated("", 2)], vec![]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "ignore rule matched on negative exit codes - needed for
    /// Windows support".
    #[test]
    fn ignore_rule_matched_on_negative_exit_codes_needed_for_windows_support() {
        let policy = json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [-1073741676, -1073741510]}},
        ]);
        let pod = mypod(vec![terminated("", -1073741510)], vec![]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "FailJob rule matched for exit codes".
    #[test]
    fn fail_job_rule_matched_for_exit_codes() {
        let policy = json!([
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        ]);
        let pod = mypod(vec![terminated("main-container", 2)], vec![]);
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 0",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "successful containers are skipped by the rules".
    #[test]
    fn successful_containers_are_skipped_by_the_rules() {
        let policy = json!([
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [111]}},
        ]);
        let mut pod = mypod(
            vec![
                terminated("main-container", 111),
                terminated("suppport-container", 0),
            ],
            vec![],
        );
        pod.init_containers = vec![terminated("init-container", 0)];
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "FailIndex rule matched for exit codes;
    /// JobBackoffLimitPerIndex enabled".
    #[test]
    fn fail_index_rule_matched_for_exit_codes_job_backoff_limit_per_index_enabled() {
        let policy = json!([
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        ]);
        let pod = mypod(vec![terminated("", 2)], vec![]);
        assert_match(run(Some(policy), &pod, true), None, true, Some("FailIndex"));
    }

    /// TestMatchPodFailurePolicy: "FailIndex rule matched for exit codes;
    /// JobBackoffLimitPerIndex disabled".
    #[test]
    fn fail_index_rule_matched_for_exit_codes_job_backoff_limit_per_index_disabled() {
        let policy = json!([
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        ]);
        let pod = mypod(vec![terminated("", 2)], vec![]);
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "pod failure policy with NotIn operator and value 0".
    #[test]
    fn pod_failure_policy_with_not_in_operator_and_value_0() {
        let policy = json!([
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}},
        ]);
        let pod = mypod(
            vec![
                terminated("main-container", 1),
                terminated("suppport-container", 0),
            ],
            vec![],
        );
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Container main-container for pod default/mypod failed with exit code 1 matching FailJob rule at index 0",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "second jobfail rule matched for exit codes".
    #[test]
    fn second_jobfail_rule_matched_for_exit_codes() {
        let policy = json!([
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [4, 5, 6]}},
        ]);
        let pod = mypod(vec![terminated("main-container", 6)], vec![]);
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Container main-container for pod default/mypod failed with exit code 6 matching FailJob rule at index 1",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "count rule matched for exit codes".
    #[test]
    fn count_rule_matched_for_exit_codes() {
        let policy = json!([
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        ]);
        let pod = mypod(vec![not_terminated("foo"), terminated("bar", 2)], vec![]);
        assert_match(run(Some(policy), &pod, false), None, true, Some("Count"));
    }

    /// TestMatchPodFailurePolicy: "FailIndex rule matched for pod conditions;
    /// JobBackoffLimitPerIndex enabled".
    #[test]
    fn fail_index_rule_matched_for_pod_conditions_job_backoff_limit_per_index_enabled() {
        let policy = json!([
            {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, true), None, true, Some("FailIndex"));
    }

    /// TestMatchPodFailurePolicy: "FailIndex rule matched for pod conditions;
    /// JobBackoffLimitPerIndex disabled".
    #[test]
    fn fail_index_rule_matched_for_pod_conditions_job_backoff_limit_per_index_disabled() {
        let policy = json!([
            {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "ignore rule matched for pod conditions".
    #[test]
    fn ignore_rule_matched_for_pod_conditions() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "ignore rule matches by the status=False".
    #[test]
    fn ignore_rule_matches_by_the_status_false() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "False")]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "ignore rule matches by the status=Unknown".
    #[test]
    fn ignore_rule_matches_by_the_status_unknown() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "Unknown"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "Unknown")]);
        assert_match(run(Some(policy), &pod, false), None, false, Some("Ignore"));
    }

    /// TestMatchPodFailurePolicy: "ignore rule does not match when status for pattern is False,
    /// but actual True".
    #[test]
    fn ignore_rule_does_not_match_when_status_for_pattern_is_false_but_actual_true() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "ignore rule does not match when status for pattern is True,
    /// but actual False".
    #[test]
    fn ignore_rule_does_not_match_when_status_for_pattern_is_true_but_actual_false() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "False")]);
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "default - do not match condition with status=False".
    #[test]
    fn default_do_not_match_condition_with_status_false() {
        let policy = json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "False")]);
        assert_match(run(Some(policy), &pod, false), None, true, None);
    }

    /// TestMatchPodFailurePolicy: "job fail rule matched for pod conditions".
    #[test]
    fn job_fail_rule_matched_for_pod_conditions() {
        let policy = json!([
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(
            run(Some(policy), &pod, false),
            Some(
                "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
            ),
            true,
            Some("FailJob"),
        );
    }

    /// TestMatchPodFailurePolicy: "count rule matched for pod conditions".
    #[test]
    fn count_rule_matched_for_pod_conditions() {
        let policy = json!([
            {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        assert_match(run(Some(policy), &pod, false), None, true, Some("Count"));
    }

    /// TestMatchPodFailurePolicy: "no rule matched" (despite its name, its first rule, Count
    /// NotIn [8], matches exit code 32).
    #[test]
    fn no_rule_matched() {
        let policy = json!([
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [8]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6, 7]}},
            {"action": "Count", "onPodConditions": [{"type": "ResourceLimitExceeded", "status": "True"}]},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]);
        let pod = mypod(vec![terminated("", 32)], vec![]);
        let got = run(Some(policy), &pod, false);
        assert_eq!(got.rule, Some(0));
        assert_match(got, None, true, Some("Count"));
    }
}

/// job_controller_test.go, TestSyncJobWithJobPodFailurePolicy: one syncJob over the Job's pods
/// (`mypod-<i>`). Every case here leaves JobPodReplacementPolicy off, so upstream emulates 1.33
/// with JobPodReplacementPolicy off and JobManagedBy as the case says; the harness sets
/// podReplacementPolicy Failed, which is also the API default with a podFailurePolicy.
mod sync_job_with_job_pod_failure_policy {
    use super::*;

    fn sem(enable_job_managed_by: bool) -> Semantics {
        emulated(
            33,
            &[
                (Gate::PodReplacementPolicy, false),
                (Gate::ManagedBy, enable_job_managed_by),
            ],
        )
    }

    /// upstream's `onExitCodeRules`.
    fn on_exit_code_rules() -> Value {
        json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6, 7]}},
        ])
    }

    fn one_pod_job(backoff_limit: i32, policy: Value) -> JobModel {
        let model = job(json!({
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": backoff_limit,
            "podFailurePolicy": {"rules": policy},
        }));
        assert_eq!(model.pod_replacement_policy, ReplacementPolicy::Failed);
        model
    }

    fn pod(containers: Vec<ContainerState>, conditions: Vec<PodCondition>) -> FailedPod {
        FailedPod {
            name: String::new(),
            containers,
            init_containers: Vec::new(),
            conditions,
        }
    }

    fn pod_failure_policy_conditions(message: &str) -> Vec<Condition> {
        vec![
            condition("FailureTarget", "PodFailurePolicy", message),
            condition("Failed", "PodFailurePolicy", message),
        ]
    }

    /// TestSyncJobWithJobPodFailurePolicy: "default handling for pod failure if the container
    /// matching the exit codes does not match the containerName restriction".
    #[test]
    fn default_handling_for_pod_failure_if_the_container_matching_the_exit_codes_does_not_match_the_container_name_restriction()
     {
        let job = one_pod_job(
            6,
            json!([
                {"action": "Ignore", "onExitCodes": {"containerName": "main-container", "operator": "In", "values": [1, 2, 3]}},
                {"action": "FailJob", "onExitCodes": {"containerName": "main-container", "operator": "In", "values": [5, 6, 7]}},
            ]),
        );
        let p = pod(
            vec![
                terminated("monitoring-container", 5),
                terminated("main-container", 42),
            ],
            vec![],
        );
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.succeeded, f.failed), (1, 0, 1));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "running pod should not result in job fail based on
    /// OnExitCodes". A running pod is never evaluated: it is not failed (isPodFailed), so it is
    /// no outcome, and the Job keeps it as its one active pod.
    #[test]
    fn running_pod_should_not_result_in_job_fail_based_on_on_exit_codes() {
        let job = one_pod_job(6, on_exit_code_rules());
        let sem = sem(false);
        assert!(!counts_as_failed(&job, false, false, &sem));
        let sim = simulate(&job, &sem, &[]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 0, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail job based on OnExitCodes".
    #[test]
    fn fail_job_based_on_on_exit_codes() {
        let job = one_pod_job(6, on_exit_code_rules());
        let p = pod(vec![terminated("main-container", 5)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let message = renamed(
            "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1",
            "mypod-0",
            "foobar-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail job with multiple pods". `mypod-0` is running
    /// (the Job's other slot) when `mypod-1` fails; the Job deletes it and counts it as failed.
    #[test]
    fn fail_job_with_multiple_pods() {
        let job = job(json!({
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": 6,
            "podFailurePolicy": {"rules": on_exit_code_rules()},
        }));
        let p = pod(vec![terminated("main-container", 5)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let message = renamed(
            "Container main-container for pod default/mypod-1 failed with exit code 5 matching FailJob rule at index 1",
            "mypod-1",
            "foobar-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 2, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail indexed job based on OnExitCodes".
    #[test]
    fn fail_indexed_job_based_on_on_exit_codes() {
        let job = job(json!({
            "completionMode": "Indexed",
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "podFailurePolicy": {"rules": on_exit_code_rules()},
        }));
        let p = pod(vec![terminated("main-container", 5)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(Some(0), p)]);
        let message = renamed(
            "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1",
            "mypod-0",
            "foobar-0-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail job based on OnExitCodes with NotIn operator".
    #[test]
    fn fail_job_based_on_on_exit_codes_with_not_in_operator() {
        let job = one_pod_job(
            6,
            json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6, 7]}}]),
        );
        let p = pod(vec![terminated("main-container", 42)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let message = renamed(
            "Container main-container for pod default/mypod-0 failed with exit code 42 matching FailJob rule at index 0",
            "mypod-0",
            "foobar-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "default handling job based on OnExitCodes with NotIn
    /// operator".
    #[test]
    fn default_handling_job_based_on_on_exit_codes_with_not_in_operator() {
        let job = one_pod_job(
            6,
            json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6, 7]}}]),
        );
        let p = pod(vec![terminated("main-container", 5)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail job based on OnExitCodes for InitContainer".
    #[test]
    fn fail_job_based_on_on_exit_codes_for_init_container() {
        let job = one_pod_job(6, on_exit_code_rules());
        let mut p = pod(vec![terminated("main-container", 143)], vec![]);
        p.init_containers = vec![terminated("init-container", 5)];
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let message = renamed(
            "Container init-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1",
            "mypod-0",
            "foobar-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "ignore pod failure; both rules are matching, the
    /// first is executed only".
    #[test]
    fn ignore_pod_failure_both_rules_are_matching_the_first_is_executed_only() {
        let job = one_pod_job(0, on_exit_code_rules());
        let p = pod(
            vec![terminated("container1", 2), terminated("container2", 6)],
            vec![],
        );
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 0, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "ignore pod failure based on OnExitCodes".
    #[test]
    fn ignore_pod_failure_based_on_on_exit_codes() {
        let job = one_pod_job(0, on_exit_code_rules());
        let p = pod(vec![terminated("", 1)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 0, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "default job based on OnExitCodes".
    #[test]
    fn default_job_based_on_on_exit_codes() {
        let job = one_pod_job(0, on_exit_code_rules());
        let p = pod(vec![terminated("", 10)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition(
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )]
        );
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "default job based on OnExitCodes; JobManagedBy
    /// enabled triggers adding interim condition".
    #[test]
    fn default_job_based_on_on_exit_codes_job_managed_by_enabled_triggers_adding_interim_condition()
    {
        let job = one_pod_job(0, on_exit_code_rules());
        let p = pod(vec![terminated("", 10)], vec![]);
        let sim = simulate(&job, &sem(true), &[failed(None, p)]);
        let message = "Job has reached the specified backoff limit";
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "BackoffLimitExceeded", message),
                condition("Failed", "BackoffLimitExceeded", message),
            ]
        );
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "count pod failure based on OnExitCodes; both rules
    /// are matching, the first is executed only".
    #[test]
    fn count_pod_failure_based_on_on_exit_codes_both_rules_are_matching_the_first_is_executed_only()
    {
        let job = one_pod_job(
            6,
            json!([
                {"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 2]}},
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [2, 3]}},
            ]),
        );
        let p = pod(vec![terminated("", 2)], vec![]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "count pod failure based on OnPodConditions; both
    /// rules are matching, the first is executed only". (The container's terminated state has
    /// only FinishedAt: exit code 0.)
    #[test]
    fn count_pod_failure_based_on_on_pod_conditions_both_rules_are_matching_the_first_is_executed_only()
     {
        let job = one_pod_job(
            6,
            json!([
                {"action": "Count", "onPodConditions": [{"type": "ResourceLimitExceeded", "status": "True"}]},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]),
        );
        let p = pod(
            vec![terminated("", 0)],
            vec![
                pod_condition("ResourceLimitExceeded", "True"),
                pod_condition("DisruptionTarget", "True"),
            ],
        );
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "ignore pod failure based on OnPodConditions".
    #[test]
    fn ignore_pod_failure_based_on_on_pod_conditions() {
        let job = one_pod_job(
            0,
            json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
        );
        let p = pod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 0, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "ignore pod failure based on OnPodConditions, ignored
    /// failures delays pod recreation". The pod is Failed and being deleted. Upstream's
    /// `wantStatusActive: 0` is the replacement waiting for the backoff: the ignored failure
    /// counts towards the backoff record, so the replacement waits 10 s (k/k #119378).
    #[test]
    fn ignore_pod_failure_based_on_on_pod_conditions_ignored_failures_delays_pod_recreation() {
        let job = one_pod_job(
            0,
            json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
        );
        let sem = sem(false);
        assert!(counts_as_failed(&job, true, true, &sem));
        let p = pod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        let sim = simulate(&job, &sem, &[failed(None, p)]);
        let step = &sim.steps[0];
        assert!(!step.counted);
        assert_eq!(step.backoff_seconds, Some(10));
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.failed, f.succeeded), (0, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "fail job based on OnPodConditions".
    #[test]
    fn fail_job_based_on_on_pod_conditions() {
        let job = one_pod_job(
            6,
            json!([{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
        );
        let p = pod(vec![], vec![pod_condition("DisruptionTarget", "True")]);
        let sim = simulate(&job, &sem(false), &[failed(None, p)]);
        let message = renamed(
            "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0",
            "mypod-0",
            "foobar-<pod>",
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, pod_failure_policy_conditions(&message));
        assert_eq!((f.active, f.failed, f.succeeded), (0, 1, 0));
    }

    /// TestSyncJobWithJobPodFailurePolicy: "terminating Pod not considered failed when
    /// JobPodFailurePolicy is enabled and used". The pod only has a deletionTimestamp: with a
    /// podFailurePolicy it is not failed (so no outcome), and with podReplacementPolicy Failed
    /// it is not replaced either (upstream's active 0).
    #[test]
    fn terminating_pod_not_considered_failed_when_job_pod_failure_policy_is_enabled_and_used() {
        let job = job(json!({
            "parallelism": 1,
            "backoffLimit": 0,
            "podFailurePolicy": {"rules": [
                {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]},
        }));
        let sem = sem(false);
        assert!(!counts_as_failed(&job, false, true, &sem));
        assert_eq!(job.pod_replacement_policy, ReplacementPolicy::Failed);
        let sim = simulate(&job, &sem, &[]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.failed, f.succeeded), (0, 0));
    }
}

/// job_controller_test.go, TestSyncJobWithJobBackoffLimitPerIndex. Upstream emulates 1.32 when
/// JobBackoffLimitPerIndex is off, else 1.33 when JobPodReplacementPolicy is off, else 1.34
/// when JobManagedBy is off, then sets the three gates as the case says.
mod sync_job_with_job_backoff_limit_per_index {
    use super::*;

    fn sem(blpi: bool, replacement: bool, managed_by: bool) -> Semantics {
        let minor = if !blpi {
            32
        } else if !replacement {
            33
        } else if !managed_by {
            34
        } else {
            36
        };
        emulated(
            minor,
            &[
                (Gate::BackoffLimitPerIndex, blpi),
                (Gate::PodReplacementPolicy, replacement),
                (Gate::ManagedBy, managed_by),
            ],
        )
    }

    /// Indexed, parallelism = completions = `n`, backoffLimitPerIndex 1, plus `extra`.
    fn per_index_job(n: i32, extra: Value) -> JobModel {
        let mut spec = json!({
            "parallelism": n,
            "completions": n,
            "backoffLimit": i32::MAX,
            "completionMode": "Indexed",
            "backoffLimitPerIndex": 1,
        });
        for (k, v) in extra.as_object().expect("an object") {
            spec[k] = v.clone();
        }
        job(spec)
    }

    fn exit_3(name: &str) -> FailedPod {
        FailedPod {
            containers: vec![terminated(name, 3)],
            ..FailedPod::default()
        }
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "successful job after a single failure within
    /// index".
    #[test]
    fn successful_job_after_a_single_failure_within_index() {
        let job = per_index_job(2, json!({}));
        let outcomes = [
            failed(Some(0), phase_failed()),
            succeeded(Some(0)),
            succeeded(Some(1)),
        ];
        let sim = simulate(&job, &sem(true, true, false), &outcomes);
        let message = "Reached expected number of succeeded pods";
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("SuccessCriteriaMet", "CompletionsReached", message),
                condition("Complete", "CompletionsReached", message),
            ]
        );
        assert_eq!((f.failed, f.succeeded), (1, 2));
        assert_eq!(f.completed_indexes.as_deref(), Some("0,1"));
        assert_eq!(f.failed_indexes.as_deref(), Some(""));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "single failed pod replaced already". Index 0's
    /// replacement (pending) and index 1's pod are the two active pods.
    #[test]
    fn single_failed_pod_replaced_already() {
        let job = per_index_job(2, json!({}));
        let sim = simulate(
            &job,
            &sem(true, true, false),
            &[failed(Some(0), phase_failed())],
        );
        assert_eq!(sim.steps[0].index_failures, Some(1));
        assert_eq!(sim.steps[0].index_failed, Some(false));
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (2, 1, 0));
        assert_eq!(f.failed_indexes.as_deref(), Some(""));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "single failed index due to exceeding the backoff
    /// limit per index, the job continues". The failed pod carries index failure count 1.
    #[test]
    fn single_failed_index_due_to_exceeding_the_backoff_limit_per_index_the_job_continues() {
        let job = per_index_job(2, json!({}));
        let start = Start {
            index_failures: index_failures(&[(0, 1)]),
            ..Start::default()
        };
        let sim = simulate_from(
            &job,
            &sem(true, true, false),
            &start,
            &[failed(Some(0), phase_failed())],
        );
        assert_eq!(sim.steps[0].index_failed, Some(true));
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 1, 0));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "single failed index due to FailIndex action, the
    /// job continues".
    #[test]
    fn single_failed_index_due_to_fail_index_action_the_job_continues() {
        let job = per_index_job(
            2,
            json!({"podFailurePolicy": {"rules": [
                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
            ]}}),
        );
        let sim = simulate(
            &job,
            &sem(true, true, false),
            &[failed(Some(0), exit_3(""))],
        );
        assert_eq!(sim.steps[0].index_failed, Some(true));
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (1, 1, 0));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed index due to FailJob action".
    /// Adapted: upstream's single sync sees index 0's failed pod only (index 1's pod was never
    /// created), so failed is 1. In the engine every slot is filled, so index 1's running pod
    /// is deleted and counted as well: 1 + 1 (what the real controller reports for the same
    /// Job, tests/data/failure-policy/indexed-failjob-overrides-per-index.yaml). Everything
    /// else is upstream's.
    #[test]
    fn job_failed_index_due_to_fail_job_action() {
        let job = per_index_job(
            2,
            json!({
                "backoffLimit": 6,
                "podFailurePolicy": {"rules": [
                    {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
                ]},
            }),
        );
        let sim = simulate(
            &job,
            &sem(true, true, false),
            &[failed(Some(0), exit_3("x"))],
        );
        let message = renamed(
            "Container x for pod default/mypod-0 failed with exit code 3 matching FailJob rule at index 0",
            "mypod-0",
            "foobar-0-<pod>",
        );
        assert!(sim.steps[0].counted);
        assert_eq!(sim.steps[0].index_failed, Some(false));
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "PodFailurePolicy", &message),
                condition("Failed", "PodFailurePolicy", &message),
            ]
        );
        assert_eq!(f.failed, 1 + 1);
        assert_eq!((f.active, f.succeeded), (0, 0));
        assert_eq!(f.failed_indexes.as_deref(), Some(""));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job pod failure ignored due to matching Ignore
    /// action".
    #[test]
    fn job_pod_failure_ignored_due_to_matching_ignore_action() {
        let job = per_index_job(
            2,
            json!({
                "backoffLimit": 6,
                "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
                ]},
            }),
        );
        let sim = simulate(
            &job,
            &sem(true, true, false),
            &[failed(Some(0), exit_3("x"))],
        );
        assert_eq!(sim.steps[0].index_failures, Some(0));
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (2, 0, 0));
        assert_eq!(f.failed_indexes.as_deref(), Some(""));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to exceeding backoffLimit before
    /// backoffLimitPerIndex". Adapted: upstream's single sync sees both failed pods and no
    /// replacement yet, so failed is 2. In the engine index 0's replacement is running when
    /// index 1's pod fails, and is deleted and counted: 2 + 1 (what the real controller reports,
    /// tests/data/failure-policy/indexed-backoff-limit-before-per-index.yaml). Everything else
    /// is upstream's.
    #[test]
    fn job_failed_due_to_exceeding_backoff_limit_before_backoff_limit_per_index() {
        let job = per_index_job(2, json!({"backoffLimit": 1}));
        let sim = simulate(
            &job,
            &sem(true, true, false),
            &[
                failed(Some(0), phase_failed()),
                failed(Some(1), phase_failed()),
            ],
        );
        assert_eq!(sim.steps[0].index_failed, Some(false));
        assert_eq!(sim.steps[1].index_failed, Some(false));
        let message = "Job has reached the specified backoff limit";
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "BackoffLimitExceeded", message),
                condition("Failed", "BackoffLimitExceeded", message),
            ]
        );
        assert_eq!(f.failed, 2 + 1);
        assert_eq!(f.succeeded, 0);
        assert_eq!(f.failed_indexes.as_deref(), Some(""));
    }

    fn failed_indexes_case(sem: &Semantics) -> Simulation {
        let job = per_index_job(2, json!({}));
        let start = Start {
            index_failures: index_failures(&[(0, 1)]),
            ..Start::default()
        };
        simulate_from(
            &job,
            sem,
            &start,
            &[failed(Some(0), phase_failed()), succeeded(Some(1))],
        )
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to failed indexes".
    #[test]
    fn job_failed_due_to_failed_indexes() {
        let sim = failed_indexes_case(&sem(true, true, false));
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "FailedIndexes", "Job has failed indexes"),
                condition("Failed", "FailedIndexes", "Job has failed indexes"),
            ]
        );
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to failed indexes;
    /// JobPodReplacementPolicy and JobManagedBy disabled".
    #[test]
    fn job_failed_due_to_failed_indexes_job_pod_replacement_policy_and_job_managed_by_disabled() {
        let sim = failed_indexes_case(&sem(true, false, false));
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition(
                "Failed",
                "FailedIndexes",
                "Job has failed indexes"
            )]
        );
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to failed indexes; JobManagedBy
    /// enabled".
    #[test]
    fn job_failed_due_to_failed_indexes_job_managed_by_enabled() {
        let sim = failed_indexes_case(&sem(true, false, true));
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "FailedIndexes", "Job has failed indexes"),
                condition("Failed", "FailedIndexes", "Job has failed indexes"),
            ]
        );
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to exceeding max failed indexes;
    /// JobPodReplacementPolicy and JobManagedBy disabled". Indexes 0 and 2 fail on their second
    /// failure, index 1 succeeds, index 3's running pod is deleted and counted.
    #[test]
    fn job_failed_due_to_exceeding_max_failed_indexes_job_pod_replacement_policy_and_job_managed_by_disabled()
     {
        let job = per_index_job(4, json!({"maxFailedIndexes": 1}));
        let start = Start {
            index_failures: index_failures(&[(0, 1), (2, 1)]),
            ..Start::default()
        };
        let sim = simulate_from(
            &job,
            &sem(true, false, false),
            &start,
            &[
                failed(Some(0), phase_failed()),
                succeeded(Some(1)),
                failed(Some(2), phase_failed()),
            ],
        );
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition(
                "Failed",
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes"
            )]
        );
        assert_eq!((f.failed, f.succeeded), (3, 1));
        assert_eq!(f.failed_indexes.as_deref(), Some("0,2"));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }

    /// TestSyncJobWithJobBackoffLimitPerIndex: "job with finished indexes; failedIndexes are
    /// cleaned when JobBackoffLimitPerIndex disabled". The Job's status says index 0 failed and
    /// index 1 succeeded (succeeded 1, as the controller recomputes it from completedIndexes).
    #[test]
    fn job_with_finished_indexes_failed_indexes_are_cleaned_when_job_backoff_limit_per_index_disabled()
     {
        let job = per_index_job(3, json!({}));
        let start = Start {
            succeeded: 1,
            failed_indexes: BTreeSet::from([0]),
            succeeded_indexes: BTreeSet::from([1]),
            ..Start::default()
        };
        let sim = simulate_from(&job, &sem(false, true, false), &start, &[]);
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (2, 0, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
        assert_eq!(f.failed_indexes, None);
    }
}

/// job_controller_test.go, TestSyncJobWithJobSuccessPolicy. Upstream emulates 1.32 when
/// JobBackoffLimitPerIndex or JobSuccessPolicy is off, else 1.34 when JobManagedBy is off, then
/// sets the four gates as the case says.
mod sync_job_with_job_success_policy {
    use super::*;

    fn sem(success_policy: bool, blpi: bool, replacement: bool, managed_by: bool) -> Semantics {
        let minor = if !blpi || !success_policy {
            32
        } else if !managed_by {
            34
        } else {
            36
        };
        emulated(
            minor,
            &[
                (Gate::BackoffLimitPerIndex, blpi),
                (Gate::SuccessPolicy, success_policy),
                (Gate::PodReplacementPolicy, replacement),
                (Gate::ManagedBy, managed_by),
            ],
        )
    }

    fn indexed(n: i32, extra: Value) -> JobModel {
        let mut spec = json!({
            "completionMode": "Indexed",
            "parallelism": n,
            "completions": n,
            "backoffLimit": i32::MAX,
        });
        for (k, v) in extra.as_object().expect("an object") {
            spec[k] = v.clone();
        }
        job(spec)
    }

    fn zero_one_count_one() -> Value {
        json!({"rules": [{"succeededIndexes": "0,1", "succeededCount": 1}]})
    }

    fn success_policy_conditions() -> Vec<Condition> {
        vec![
            condition(
                "SuccessCriteriaMet",
                "SuccessPolicy",
                "Matched rules at index 0",
            ),
            condition("Complete", "SuccessPolicy", "Matched rules at index 0"),
        ]
    }

    /// TestSyncJobWithJobSuccessPolicy: "job with successPolicy; jobPodReplacementPolicy feature
    /// disabled; job has SuccessCriteriaMet condition if job meets to successPolicy and some
    /// indexes fail". Index 0's first pod fails (its replacement runs), index 1 succeeds,
    /// index 2 runs.
    #[test]
    fn job_with_success_policy_job_pod_replacement_policy_feature_disabled_job_has_success_criteria_met_condition_if_job_meets_to_success_policy_and_some_indexes_fail()
     {
        let job = indexed(3, json!({"successPolicy": zero_one_count_one()}));
        let sim = simulate(
            &job,
            &sem(true, false, false, false),
            &[failed(Some(0), phase_failed()), succeeded(Some(1))],
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, success_policy_conditions());
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
        assert_eq!(f.failed_indexes, None);
    }

    /// TestSyncJobWithJobSuccessPolicy: "job with podFailurePolicy and successPolicy;
    /// jobPodReplacementPolicy feature disabled; job has SuccessCriteriaMet condition if job
    /// meets to successPolicy and doesn't meet to podFailurePolicy".
    #[test]
    fn job_with_pod_failure_policy_and_success_policy_job_pod_replacement_policy_feature_disabled_job_has_success_criteria_met_condition_if_job_meets_to_success_policy_and_doesn_t_meet_to_pod_failure_policy()
     {
        let job = indexed(
            2,
            json!({
                "successPolicy": zero_one_count_one(),
                "podFailurePolicy": {"rules": [
                    {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                ]},
            }),
        );
        let sim = simulate(
            &job,
            &sem(true, false, false, false),
            &[failed(Some(0), phase_failed()), succeeded(Some(1))],
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, success_policy_conditions());
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }

    /// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and backoffLimitPerIndex;
    /// jobPodReplacementPolicy feature enabled; job has a failed condition when job meets to
    /// both successPolicy and backoffLimitPerIndex". Index 0's pod carries failure count 1.
    #[test]
    fn job_with_success_policy_and_backoff_limit_per_index_job_pod_replacement_policy_feature_enabled_job_has_a_failed_condition_when_job_meets_to_both_success_policy_and_backoff_limit_per_index()
     {
        let job = indexed(
            2,
            json!({"backoffLimitPerIndex": 1, "successPolicy": zero_one_count_one()}),
        );
        let start = Start {
            index_failures: index_failures(&[(0, 1)]),
            ..Start::default()
        };
        let sim = simulate_from(
            &job,
            &sem(true, true, true, false),
            &start,
            &[failed(Some(0), phase_failed()), succeeded(Some(1))],
        );
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "FailedIndexes", "Job has failed indexes"),
                condition("Failed", "FailedIndexes", "Job has failed indexes"),
            ]
        );
        assert_eq!((f.failed, f.succeeded), (1, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
        assert_eq!(f.failed_indexes.as_deref(), Some("0"));
    }

    /// TestSyncJobWithJobSuccessPolicy: "job without successPolicy; jobSuccessPolicy is enabled;
    /// job got SuccessCriteriaMet and Completion with CompletionsReached reason conditions".
    #[test]
    fn job_without_success_policy_job_success_policy_is_enabled_job_got_success_criteria_met_and_completion_with_completions_reached_reason_conditions()
     {
        let job = indexed(1, json!({}));
        let sim = simulate(&job, &sem(true, false, false, true), &[succeeded(Some(0))]);
        let message = "Reached expected number of succeeded pods";
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("SuccessCriteriaMet", "CompletionsReached", message),
                condition("Complete", "CompletionsReached", message),
            ]
        );
        assert_eq!((f.failed, f.succeeded), (0, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("0"));
    }

    /// TestSyncJobWithJobSuccessPolicy: "when the JobSuccessPolicy is disabled, the Job never
    /// got SuccessCriteriaMet condition even if the Job has the successPolicy field". Indexes 0
    /// and 2 run, index 1 succeeds.
    #[test]
    fn when_the_job_success_policy_is_disabled_the_job_never_got_success_criteria_met_condition_even_if_the_job_has_the_success_policy_field()
     {
        let job = indexed(3, json!({"successPolicy": zero_one_count_one()}));
        let sim = simulate(
            &job,
            &sem(false, false, false, false),
            &[succeeded(Some(1))],
        );
        let f = &sim.final_status;
        assert_eq!(f.conditions, vec![]);
        assert_eq!((f.active, f.failed, f.succeeded), (2, 0, 1));
        assert_eq!(f.completed_indexes.as_deref(), Some("1"));
    }
}

/// success_policy_test.go, TestMatchSuccessPolicy: matchSuccessPolicy on a set of succeeded
/// indexes (completions 10). Played as successes of an Indexed Job with completions and
/// parallelism 10, in an order where the set is complete at the last success: a match must
/// come exactly then (so every success is applied), and none otherwise.
mod match_success_policy {
    use super::*;

    fn play(rules: Value, order: &[i32]) -> Simulation {
        let job = job(json!({
            "completionMode": "Indexed",
            "completions": 10,
            "parallelism": 10,
            "successPolicy": {"rules": rules},
        }));
        let outcomes: Vec<Outcome> = order.iter().map(|i| succeeded(Some(*i))).collect();
        simulate(
            &job,
            &emulated(36, &[(Gate::SuccessPolicy, true)]),
            &outcomes,
        )
    }

    fn assert_met(sim: &Simulation, want_message: Option<&str>, succeeded_indexes: &str) {
        assert!(
            sim.steps.iter().all(|s| s.result == "succeeded"),
            "{:?}",
            sim.steps
        );
        // The set, not its text: upstream's case has no Job status to compare with.
        let completed = sim
            .final_status
            .completed_indexes
            .as_deref()
            .expect("Indexed");
        assert_eq!(
            parse_intervals(completed),
            parse_intervals(succeeded_indexes),
            "completedIndexes {completed:?}"
        );
        let want = match want_message {
            Some(message) => vec![
                condition("SuccessCriteriaMet", "SuccessPolicy", message),
                condition("Complete", "SuccessPolicy", message),
            ],
            None => vec![],
        };
        assert_eq!(sim.final_status.conditions, want);
        if want_message.is_some() {
            let last = sim.steps.last().expect("a step");
            assert_eq!(last.conditions_added.len(), 2, "met at the last success");
        }
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes is specified; succeededIndexes matched
    /// rules".
    #[test]
    fn rules_succeeded_indexes_is_specified_succeeded_indexes_matched_rules() {
        let sim = play(json!([{"succeededIndexes": "0-2"}]), &[4, 5, 6, 7, 0, 1, 2]);
        assert_met(&sim, Some("Matched rules at index 0"), "0-2,4-7");
    }

    /// TestMatchSuccessPolicy: "rules.succeededCount is specified; succeededIndexes didn't match
    /// rules".
    #[test]
    fn rules_succeeded_count_is_specified_succeeded_indexes_didn_t_match_rules() {
        let sim = play(json!([{"succeededCount": 4}]), &[0, 1, 2]);
        assert_met(&sim, None, "0-2");
    }

    /// TestMatchSuccessPolicy: "multiple rules; rules.succeededIndexes is specified;
    /// succeededIndexes met one of rules".
    #[test]
    fn multiple_rules_rules_succeeded_indexes_is_specified_succeeded_indexes_met_one_of_rules() {
        let sim = play(
            json!([{"succeededIndexes": "9"}, {"succeededIndexes": "4,6"}]),
            &[0, 1, 2, 5, 7, 4, 6],
        );
        assert_met(&sim, Some("Matched rules at index 1"), "0-2,4-7");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes and rules.succeededCount are specified;
    /// succeededIndexes didn't match rules".
    #[test]
    fn rules_succeeded_indexes_and_rules_succeeded_count_are_specified_succeeded_indexes_didn_t_match_rules()
     {
        let sim = play(
            json!([{"succeededIndexes": "3-6", "succeededCount": 2}]),
            &[0, 1, 2, 6, 7],
        );
        assert_met(&sim, None, "0-2,6-7");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes is specified; succeededIndexes matched
    /// rules; rules is proper subset of succeededIndexes".
    #[test]
    fn rules_succeeded_indexes_is_specified_succeeded_indexes_matched_rules_rules_is_proper_subset_of_succeeded_indexes()
     {
        let sim = play(
            json!([{"succeededIndexes": "2-4,6-8"}]),
            &[1, 5, 9, 2, 3, 4, 6, 7, 8],
        );
        assert_met(&sim, Some("Matched rules at index 0"), "1-9");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes is specified; succeededIndexes didn't
    /// match rules; rules is an empty set". (succeededIndexes "" is valid; the controller skips
    /// the rule.)
    #[test]
    fn rules_succeeded_indexes_is_specified_succeeded_indexes_didn_t_match_rules_rules_is_an_empty_set()
     {
        let sim = play(json!([{"succeededIndexes": ""}]), &[1, 2, 3]);
        assert_met(&sim, None, "1-3");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes is specified; succeededIndexes didn't
    /// match rules; rules overlaps succeededIndexes at first".
    #[test]
    fn rules_succeeded_indexes_is_specified_succeeded_indexes_didn_t_match_rules_rules_overlaps_succeeded_indexes_at_first()
     {
        let sim = play(
            json!([{"succeededIndexes": "1-3,5-7"}]),
            &[2, 3, 4, 6, 7, 8],
        );
        assert_met(&sim, None, "2-4,6-8");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes and rules.succeededCount are specified;
    /// succeededIndexes matched rules; rules overlaps succeededIndexes at first".
    #[test]
    fn rules_succeeded_indexes_and_rules_succeeded_count_are_specified_succeeded_indexes_matched_rules_rules_overlaps_succeeded_indexes_at_first()
     {
        let sim = play(
            json!([{"succeededIndexes": "1-3,5-7", "succeededCount": 4}]),
            &[4, 8, 2, 3, 6, 7],
        );
        assert_met(&sim, Some("Matched rules at index 0"), "2-4,6-8");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes and rules.succeededCount are specified;
    /// succeededIndexes matched rules; rules completely overlaps succeededIndexes".
    #[test]
    fn rules_succeeded_indexes_and_rules_succeeded_count_are_specified_succeeded_indexes_matched_rules_rules_completely_overlaps_succeeded_indexes()
     {
        let sim = play(
            json!([{"succeededIndexes": "0-4,6-9", "succeededCount": 5}]),
            &[1, 2, 3, 7, 8],
        );
        assert_met(&sim, Some("Matched rules at index 0"), "1-3,7-8");
    }

    /// TestMatchSuccessPolicy: "rules.succeededIndexes is specified; succeededIndexes didn't
    /// match rules; rules overlaps multiple succeededIndexes at last".
    #[test]
    fn rules_succeeded_indexes_is_specified_succeeded_indexes_didn_t_match_rules_rules_overlaps_multiple_succeeded_indexes_at_last()
     {
        let sim = play(
            json!([{"succeededIndexes": "0-6,8-9"}]),
            &[1, 2, 3, 5, 6, 7, 8, 9],
        );
        assert_met(&sim, None, "1-3,5-9");
    }
}

/// job_controller_test.go, TestSyncJobPastDeadline: a Job started `startTime` seconds ago with
/// activeDeadlineSeconds. Upstream emulates 1.33 when JobPodReplacementPolicy is off, then sets
/// it and JobManagedBy as the case says. The Job is newJob(parallelism, completions,
/// backoffLimit, NonIndexed); the engine sees the deadline pass at the outcome of a pod still
/// running then (the outcome itself never applies).
mod sync_job_past_deadline {
    use super::*;

    fn sem(replacement: bool, managed_by: bool) -> Semantics {
        emulated(
            if replacement { 34 } else { 33 },
            &[
                (Gate::PodReplacementPolicy, replacement),
                (Gate::ManagedBy, managed_by),
            ],
        )
    }

    fn new_job(parallelism: i32, completions: i32, backoff_limit: i32, deadline: i64) -> JobModel {
        job(json!({
            "parallelism": parallelism,
            "completions": completions,
            "backoffLimit": backoff_limit,
            "activeDeadlineSeconds": deadline,
        }))
    }

    const DEADLINE_MESSAGE: &str = "Job was active longer than specified deadline";

    /// TestSyncJobPastDeadline: "activeDeadlineSeconds less than single pod execution". The
    /// one active pod is still running at 10 s: deleted, and counted as failed.
    #[test]
    fn active_deadline_seconds_less_than_single_pod_execution() {
        let job = new_job(1, 1, 6, 10);
        let sim = simulate(&job, &sem(false, false), &[after(15, succeeded(None))]);
        let results: Vec<(Option<usize>, u64, &str)> = sim
            .steps
            .iter()
            .map(|s| (s.outcome, s.at_seconds, s.result.as_str()))
            .collect();
        assert_eq!(results, [(None, 10, "deadline"), (Some(1), 15, "skipped")]);
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition("Failed", "DeadlineExceeded", DEADLINE_MESSAGE)]
        );
        assert_eq!((f.active, f.succeeded, f.failed), (0, 0, 1));
    }

    /// TestSyncJobPastDeadline: "activeDeadlineSeconds bigger than single pod execution". One
    /// pod succeeded (at 5 s), the second is still running at 15 s.
    #[test]
    fn active_deadline_seconds_bigger_than_single_pod_execution() {
        let job = new_job(1, 2, 6, 10);
        let sim = simulate(
            &job,
            &sem(false, false),
            &[after(5, succeeded(None)), after(10, succeeded(None))],
        );
        assert_eq!(sim.steps[1].result, "deadline");
        assert_eq!(sim.steps[2].result, "skipped");
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition("Failed", "DeadlineExceeded", DEADLINE_MESSAGE)]
        );
        assert_eq!((f.active, f.succeeded, f.failed), (0, 1, 1));
    }

    fn backoff_limit_and_deadline(sem: &Semantics) -> Simulation {
        // backoffLimit 0 (the case leaves it at zero), deadline 1 s: the pod failed within the
        // deadline; at 10 s (upstream's sync, startTime 10 s ago) the deadline has passed too.
        let job = new_job(1, 1, 0, 1);
        let sim = simulate(
            &job,
            sem,
            &[
                failed(None, phase_failed()),
                after(10, failed(None, phase_failed())),
            ],
        );
        assert_eq!(sim.steps[1].result, "skipped");
        assert!(sim.steps[1].conditions_added.is_empty());
        sim
    }

    /// TestSyncJobPastDeadline: "activeDeadlineSeconds with backofflimit reach": the backoff
    /// limit wins over the deadline.
    #[test]
    fn active_deadline_seconds_with_backofflimit_reach() {
        let sim = backoff_limit_and_deadline(&sem(false, false));
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![condition(
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )]
        );
        assert_eq!((f.active, f.succeeded, f.failed), (0, 0, 1));
    }

    /// TestSyncJobPastDeadline: "activeDeadlineSeconds exceeded and backofflimit reached;
    /// JobManagedBy enabled".
    #[test]
    fn active_deadline_seconds_exceeded_and_backofflimit_reached_job_managed_by_enabled() {
        let sim = backoff_limit_and_deadline(&sem(false, true));
        let message = "Job has reached the specified backoff limit";
        let f = &sim.final_status;
        assert_eq!(
            f.conditions,
            vec![
                condition("FailureTarget", "BackoffLimitExceeded", message),
                condition("Failed", "BackoffLimitExceeded", message),
            ]
        );
        assert_eq!((f.active, f.succeeded, f.failed), (0, 0, 1));
    }
}

/// backoff_utils_test.go, TestGetRemainingBackoffTime: the delay after n failures in a row
/// with a 5 s base and a 700 s cap, at the moment of the last failure.
mod get_remaining_backoff_time {
    use super::*;

    fn sem() -> Semantics {
        let mut sem = Semantics::newest();
        sem.backoff_base_seconds = 5;
        sem.backoff_cap_seconds = 700;
        sem
    }

    /// TestGetRemainingBackoffTime: "no failures".
    #[test]
    fn no_failures() {
        assert_eq!(backoff(&sem(), 0), 0);
    }

    /// TestGetRemainingBackoffTime: "one failure; current time and failure time are same".
    #[test]
    fn one_failure_current_time_and_failure_time_are_same() {
        assert_eq!(backoff(&sem(), 1), 5);
    }

    /// TestGetRemainingBackoffTime: "three failures; current time and failure time are same".
    #[test]
    fn three_failures_current_time_and_failure_time_are_same() {
        assert_eq!(backoff(&sem(), 3), 20);
    }

    /// TestGetRemainingBackoffTime: "eight failures; current time and failure time are same;
    /// backoff not exceeding maxBackoff".
    #[test]
    fn eight_failures_current_time_and_failure_time_are_same_backoff_not_exceeding_max_backoff() {
        assert_eq!(backoff(&sem(), 8), 640);
    }

    /// TestGetRemainingBackoffTime: "nine failures; current time and failure time are same;
    /// backoff exceeding maxBackoff".
    #[test]
    fn nine_failures_current_time_and_failure_time_are_same_backoff_exceeding_max_backoff() {
        assert_eq!(backoff(&sem(), 9), 700);
    }
}

/// backoff_utils_test.go, TestGetRemainingBackoffTimePerIndex: the delay of an index's
/// replacement, from the last failed pod's counted and ignored failure counts (+1 for that
/// pod), 5 s base, 700 s cap. Played as that pod's failure on a per-index Job whose limit it
/// does not reach.
mod get_remaining_backoff_time_per_index {
    use super::*;

    fn last_failure_delay(start: Start) -> Option<u64> {
        let job = job(json!({
            "completionMode": "Indexed",
            "completions": 1,
            "parallelism": 1,
            "backoffLimitPerIndex": 6,
        }));
        let mut sem = Semantics::newest();
        sem.backoff_base_seconds = 5;
        sem.backoff_cap_seconds = 700;
        let sim = simulate_from(&job, &sem, &start, &[failed(Some(0), phase_failed())]);
        sim.steps[0].backoff_seconds
    }

    /// TestGetRemainingBackoffTimePerIndex: "two prev failures; current time and failure time
    /// are same".
    #[test]
    fn two_prev_failures_current_time_and_failure_time_are_same() {
        let start = Start {
            index_failures: index_failures(&[(0, 2)]),
            ..Start::default()
        };
        assert_eq!(last_failure_delay(start), Some(20));
    }

    /// TestGetRemainingBackoffTimePerIndex: "one prev failure counted and one ignored; current
    /// time and failure time are same".
    #[test]
    fn one_prev_failure_counted_and_one_ignored_current_time_and_failure_time_are_same() {
        let start = Start {
            index_failures: index_failures(&[(0, 1)]),
            index_ignored: index_failures(&[(0, 1)]),
            ..Start::default()
        };
        assert_eq!(last_failure_delay(start), Some(20));
    }
}

/// backoff_utils_test.go, TestNewBackoffRecord: failuresAfterLastSuccess, read through the
/// delay before the next pod (10 s base): n failures in a row wait 10 s * 2^(n-1).
mod new_backoff_record {
    use super::*;

    fn play(start: &Start, outcomes: &[Outcome]) -> Simulation {
        let job = job(json!({"parallelism": 1, "completions": 10, "backoffLimit": 6}));
        simulate_from(&job, &Semantics::newest(), start, outcomes)
    }

    fn fail() -> Outcome {
        failed(None, phase_failed())
    }

    /// TestNewBackoffRecord: "Empty backoff store and one new failure".
    #[test]
    fn empty_backoff_store_and_one_new_failure() {
        let sim = play(&Start::default(), &[fail()]);
        assert_eq!(sim.steps[0].backoff_seconds, Some(10));
    }

    /// TestNewBackoffRecord: "Empty backoff store and two new failures".
    #[test]
    fn empty_backoff_store_and_two_new_failures() {
        let sim = play(&Start::default(), &[fail(), fail()]);
        assert_eq!(sim.steps[1].backoff_seconds, Some(20));
    }

    /// TestNewBackoffRecord: "Empty backoff store, two failures followed by success". The
    /// record is back to 0: the success has no delay, and a later failure is again the first.
    #[test]
    fn empty_backoff_store_two_failures_followed_by_success() {
        let sim = play(
            &Start::default(),
            &[fail(), fail(), succeeded(None), fail()],
        );
        assert_eq!(sim.steps[2].backoff_seconds, None);
        assert_eq!(sim.steps[3].backoff_seconds, Some(10));
    }

    /// TestNewBackoffRecord: "Empty backoff store, two failures, one success and two more
    /// failures".
    #[test]
    fn empty_backoff_store_two_failures_one_success_and_two_more_failures() {
        let sim = play(
            &Start::default(),
            &[fail(), fail(), succeeded(None), fail(), fail()],
        );
        assert_eq!(sim.steps[4].backoff_seconds, Some(20));
    }

    /// TestNewBackoffRecord: "Backoff store having failure count 2 and one new failure".
    #[test]
    fn backoff_store_having_failure_count_2_and_one_new_failure() {
        let start = Start {
            recent_failures: 2,
            ..Start::default()
        };
        let sim = play(&start, &[fail()]);
        assert_eq!(sim.steps[0].backoff_seconds, Some(40));
    }
}

/// indexed_job_utils_test.go, TestIsIndexFailed: whether a failed pod fails its index
/// (completions 2). The engine needs the Job to be Indexed, as validation does.
mod is_index_failed {
    use super::*;

    fn index_failed(spec: Value, start: Start, index: i32, pod: FailedPod) -> Option<bool> {
        let mut spec = spec;
        spec["completionMode"] = json!("Indexed");
        spec["completions"] = json!(2);
        let job = job(spec);
        let sem = emulated(36, &[(Gate::BackoffLimitPerIndex, true)]);
        let sim = simulate_from(&job, &sem, &start, &[failed(Some(index), pod)]);
        sim.steps[0].index_failed
    }

    /// TestIsIndexFailed: "failed pod exceeding backoffLimitPerIndex, when
    /// backoffLimitPerIndex=0".
    #[test]
    fn failed_pod_exceeding_backoff_limit_per_index_when_backoff_limit_per_index_0() {
        let got = index_failed(
            json!({"backoffLimitPerIndex": 0}),
            Start::default(),
            0,
            phase_failed(),
        );
        assert_eq!(got, Some(true));
    }

    /// TestIsIndexFailed: "failed pod exceeding backoffLimitPerIndex, when
    /// backoffLimitPerIndex=1". The pod carries index failure count 1.
    #[test]
    fn failed_pod_exceeding_backoff_limit_per_index_when_backoff_limit_per_index_1() {
        let start = Start {
            index_failures: index_failures(&[(1, 1)]),
            ..Start::default()
        };
        let got = index_failed(json!({"backoffLimitPerIndex": 1}), start, 1, phase_failed());
        assert_eq!(got, Some(true));
    }

    /// TestIsIndexFailed: "matching FailIndex pod failure policy".
    #[test]
    fn matching_fail_index_pod_failure_policy() {
        let got = index_failed(
            json!({
                "backoffLimitPerIndex": 1,
                "podFailurePolicy": {"rules": [
                    {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
                ]},
            }),
            Start::default(),
            0,
            FailedPod {
                containers: vec![terminated("", 3)],
                ..FailedPod::default()
            },
        );
        assert_eq!(got, Some(true));
    }
}

/// pkg/features/kube_features.go (versioned specs, v1.31.0 for the releases before the
/// versioned table) and job_controller.go: the defaults [`Semantics::for_minor`] gives.
mod kube_features {
    use super::*;

    /// JobBackoffLimitPerIndex and JobPodReplacementPolicy beta (on) in 1.29, JobSuccessPolicy
    /// beta in 1.31, JobManagedBy beta in 1.32; from 1.31 on, delayTerminalCondition() is
    /// JobManagedBy || JobPodReplacementPolicy and newSuccessCondition writes CompletionsReached
    /// whenever JobSuccessPolicy is on.
    #[test]
    fn for_minor_follows_the_default_feature_gates() {
        for minor in OLDEST_MINOR..=NEWEST_MINOR {
            let sem = Semantics::for_minor(minor).unwrap();
            assert!(sem.job_pod_failure_policy, "1.{minor}");
            assert_eq!(sem.job_backoff_limit_per_index, minor >= 29, "1.{minor}");
            assert_eq!(sem.job_pod_replacement_policy, minor >= 29, "1.{minor}");
            assert_eq!(sem.job_success_policy, minor >= 31, "1.{minor}");
            assert_eq!(sem.job_managed_by, minor >= 32, "1.{minor}");
            if minor >= 31 {
                assert_eq!(
                    sem.two_step_terminal_conditions,
                    sem.job_managed_by || sem.job_pod_replacement_policy,
                    "1.{minor}"
                );
                assert_eq!(
                    sem.completions_reached_reason, sem.job_success_policy,
                    "1.{minor}"
                );
            }
            assert_eq!(
                (sem.backoff_base_seconds, sem.backoff_cap_seconds),
                (10, 600)
            );
        }
    }
}

/// Not upstream cases: inputs found by fuzzing.
mod fuzzed {
    use super::*;

    /// Two outcomes each after some 10^19 seconds (`after=3000000000000000h`) overflowed the
    /// Job's clock. It saturates; with or without a deadline, the steps stay in order.
    #[test]
    fn times_past_the_largest_u64_saturate() {
        let huge = 3_000_000_000_000_000 * 3600;
        let outcomes = [after(huge, succeeded(None)), after(huge, succeeded(None))];
        let sim = simulate(
            &job(json!({"completions": 2})),
            &Semantics::newest(),
            &outcomes,
        );
        let at: Vec<u64> = sim.steps.iter().map(|s| s.at_seconds).collect();
        assert_eq!(at, [huge, u64::MAX]);
        assert_eq!(sim.final_status.succeeded, 2);
        let with_deadline = job(json!({"completions": 2, "activeDeadlineSeconds": 10}));
        let sim = simulate(&with_deadline, &Semantics::newest(), &outcomes);
        let at: Vec<u64> = sim.steps.iter().map(|s| s.at_seconds).collect();
        assert_eq!(at, [10, huge, u64::MAX]);
        assert_eq!(
            sim.final_status.conditions.last(),
            Some(&condition(
                "Failed",
                "DeadlineExceeded",
                "Job was active longer than specified deadline"
            ))
        );
    }
}

/// Not upstream cases: activeDeadlineSeconds as an event in time (issue 32, item 1), each held
/// to the real controller by a scenario of tests/data/failure-policy/ (named in the comment).
mod deadline_as_an_event {
    use proptest::prelude::*;

    use super::*;

    const DEADLINE_MESSAGE: &str = "Job was active longer than specified deadline";

    fn exit_1() -> Outcome {
        failed(None, mypod(vec![terminated("", 1)], vec![]))
    }

    /// deadline-replacement-due-after-deadline.yaml: the second failure's replacement is due at
    /// 35 s (20 s backoff), after the deadline at 25 s: when the deadline passes no pod runs,
    /// so nothing is deleted and the third outcome never happens.
    #[test]
    fn a_replacement_due_after_the_deadline_is_never_created_nor_counted() {
        let job = job(json!({"backoffLimit": 6, "activeDeadlineSeconds": 25}));
        let sim = simulate(
            &job,
            &Semantics::newest(),
            &[exit_1(), after(15, exit_1()), after(20, succeeded(None))],
        );
        let results: Vec<(Option<usize>, u64, &str, i32)> = sim
            .steps
            .iter()
            .map(|s| (s.outcome, s.at_seconds, s.result.as_str(), s.failed))
            .collect();
        assert_eq!(
            results,
            [
                (Some(1), 0, "failed", 1),
                (Some(2), 15, "failed", 2),
                (None, 25, "deadline", 2),
                (Some(3), 35, "skipped", 2),
            ]
        );
        assert_eq!(sim.steps[1].backoff_seconds, Some(20));
        assert_eq!(
            sim.final_status.conditions,
            [
                condition("FailureTarget", "DeadlineExceeded", DEADLINE_MESSAGE),
                condition("Failed", "DeadlineExceeded", DEADLINE_MESSAGE),
            ]
        );
        assert_eq!((sim.final_status.failed, sim.final_status.active), (2, 0));
    }

    /// deadline-without-a-later-outcome.yaml: no outcome comes after the deadline, and the Job
    /// fails at it all the same.
    #[test]
    fn the_deadline_passes_without_an_outcome_after_it() {
        let job = job(json!({"backoffLimit": 6, "activeDeadlineSeconds": 25}));
        let sim = simulate(&job, &Semantics::newest(), &[exit_1(), after(14, exit_1())]);
        let last = sim.steps.last().unwrap();
        assert_eq!(
            (last.outcome, last.at_seconds, last.result.as_str()),
            (None, 25, "deadline")
        );
        assert_eq!(
            sim.final_status.conditions.last(),
            Some(&condition("Failed", "DeadlineExceeded", DEADLINE_MESSAGE))
        );
        assert_eq!(sim.final_status.failed, 2);
    }

    /// deadline-deletes-running-pods.yaml: two pods run at the deadline (one a replacement
    /// created after its 10 s backoff): both are deleted and counted.
    #[test]
    fn pods_running_at_the_deadline_are_deleted_and_counted() {
        let job = job(json!({"completions": 2, "parallelism": 2, "activeDeadlineSeconds": 20}));
        let sim = simulate(&job, &Semantics::for_minor(30).unwrap(), &[exit_1()]);
        let last = sim.steps.last().unwrap();
        assert_eq!((last.result.as_str(), last.failed), ("deadline", 3));
        // 1.30: Failed at once, without FailureTarget.
        assert_eq!(
            sim.final_status.conditions,
            [condition("Failed", "DeadlineExceeded", DEADLINE_MESSAGE)]
        );
    }

    /// ignore-ready-running-pods-at-*.yaml: the pods the controller deletes as the Job fails
    /// go through the policy as they are, Ready: an Ignore rule for Ready keeps them out of
    /// the count, one for Ready=False does not.
    #[test]
    fn running_pods_deleted_as_the_job_fails_go_through_the_policy() {
        let run = |status: &str, spec: Value| {
            let mut spec = spec;
            spec["podFailurePolicy"] = json!({"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "Ready", "status": status}]}
            ]});
            simulate(&job(spec), &Semantics::newest(), &[exit_1()]).final_status
        };
        let backoff = json!({"completions": 2, "parallelism": 2, "backoffLimit": 0});
        let deadline = json!({"completions": 2, "parallelism": 2, "activeDeadlineSeconds": 20});
        assert_eq!(run("True", backoff.clone()).failed, 1);
        assert_eq!(run("False", backoff).failed, 2);
        assert_eq!(run("True", deadline.clone()).failed, 1);
        assert_eq!(run("False", deadline).failed, 3);
    }

    /// A Job without a deadline that the outcomes do not finish is still running.
    #[test]
    fn without_a_deadline_nothing_happens_on_its_own() {
        let sim = simulate(&job(json!({})), &Semantics::newest(), &[exit_1()]);
        assert_eq!(sim.steps.len(), 1);
        assert!(sim.final_status.conditions.is_empty());
        assert_eq!(sim.final_status.active, 1);
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        (0u64..40, any::<bool>(), 0i32..3).prop_map(|(after_seconds, succeed, code)| Outcome {
            index: None,
            result: if succeed {
                PodResult::Succeeded
            } else {
                PodResult::Failed(mypod(vec![terminated("", code)], vec![]))
            },
            after_seconds,
        })
    }

    proptest! {
        /// For any NonIndexed Job with a deadline and any outcomes: the Job always ends; at
        /// most one deadline event, at exactly the deadline, after which every outcome is
        /// skipped; it adds exactly the pods running then (never more than parallelism) to
        /// failed; and a Job the outcomes end before the deadline has no deadline event.
        #[test]
        fn the_deadline_is_one_event_at_its_time(
            parallelism in 1i32..4,
            completions in 1i32..4,
            backoff_limit in 0i32..4,
            deadline in 1i64..120,
            outcomes in proptest::collection::vec(outcome(), 0..8),
            minor in 30u32..=36,
        ) {
            let job = job(json!({
                "parallelism": parallelism,
                "completions": completions,
                "backoffLimit": backoff_limit,
                "activeDeadlineSeconds": deadline,
            }));
            let sem = Semantics::for_minor(minor).unwrap();
            let sim = simulate(&job, &sem, &outcomes);
            prop_assert!(
                sim.final_status.conditions.iter().any(|c| c.type_ == "Failed" || c.type_ == "Complete"),
                "the Job did not end: {:?}", sim.final_status
            );
            let events: Vec<usize> = sim.steps.iter().enumerate()
                .filter(|(_, s)| s.outcome.is_none()).map(|(n, _)| n).collect();
            prop_assert!(events.len() <= 1);
            prop_assert_eq!(sim.steps.len(), outcomes.len() + events.len());
            if let Some(&n) = events.first() {
                let event = &sim.steps[n];
                prop_assert_eq!(event.at_seconds, deadline as u64);
                prop_assert_eq!(event.result.as_str(), "deadline");
                let before = if n == 0 { 0 } else { sim.steps[n - 1].failed };
                let deleted = event.failed - before;
                prop_assert!((0..=parallelism).contains(&deleted), "deleted {}", deleted);
                prop_assert!(sim.steps[n + 1..].iter().all(|s| s.result == "skipped"));
                prop_assert!(sim.steps[..n].iter().all(|s| s.at_seconds < deadline as u64));
                prop_assert_eq!(
                    sim.final_status.conditions.last().map(|c| c.reason.as_str()),
                    Some("DeadlineExceeded")
                );
            } else {
                prop_assert!(sim.final_status.conditions.iter().all(|c| c.reason != "DeadlineExceeded"));
            }
        }

        /// A deadline later than every outcome changes nothing the outcomes decided: the same
        /// steps, then at most the deadline event.
        #[test]
        fn a_late_deadline_changes_no_outcome(
            parallelism in 1i32..4,
            completions in 1i32..4,
            outcomes in proptest::collection::vec(outcome(), 0..8),
        ) {
            let spec = json!({"parallelism": parallelism, "completions": completions});
            let total: u64 = outcomes.iter().map(|o| o.after_seconds).sum();
            let mut with_deadline = spec.clone();
            with_deadline["activeDeadlineSeconds"] = json!(total + 1);
            let sem = Semantics::newest();
            let plain = simulate(&job(spec), &sem, &outcomes);
            let timed = simulate(&job(with_deadline), &sem, &outcomes);
            prop_assert_eq!(&timed.steps[..outcomes.len()], &plain.steps[..]);
            prop_assert_eq!(
                timed.steps.len() > outcomes.len(),
                plain.final_status.conditions.is_empty()
            );
        }
    }
}

/// Not upstream cases: restartPolicy OnFailure (issue 32, item 2). pastBackoffLimitOnFailure
/// sums the restartCount of the running pods' containers; held to the real controller by
/// tests/data/failure-policy/restart-on-failure-*.yaml.
mod restarts_on_failure {
    use proptest::prelude::*;

    use super::*;

    fn on_failure(spec: Value) -> JobModel {
        let mut model = job(spec);
        model.restart_policy = "OnFailure".into();
        model
    }

    fn restarted(index: Option<i32>) -> Outcome {
        Outcome {
            index,
            result: PodResult::Restarted(1),
            after_seconds: 0,
        }
    }

    /// restart-on-failure-reaches-backoff-limit.yaml: no pod fails, the restarts reach
    /// backoffLimit 2, and the running pod is deleted and counted.
    #[test]
    fn restarts_reaching_the_backoff_limit_fail_the_job() {
        let job = on_failure(json!({"backoffLimit": 2}));
        let sim = simulate(
            &job,
            &Semantics::newest(),
            &[restarted(None), restarted(None)],
        );
        let steps: Vec<(&str, Option<u32>, i32)> = sim
            .steps
            .iter()
            .map(|s| (s.result.as_str(), s.restarts, s.failed))
            .collect();
        assert_eq!(
            steps,
            [("restarted", Some(1), 0), ("restarted", Some(2), 1)]
        );
        assert_eq!(
            sim.final_status
                .conditions
                .last()
                .map(|c| c.reason.as_str()),
            Some("BackoffLimitExceeded")
        );
    }

    /// With backoffLimit 0 any restart fails the Job.
    #[test]
    fn with_backoff_limit_0_one_restart_fails_the_job() {
        let job = on_failure(json!({"backoffLimit": 0}));
        let sim = simulate(&job, &Semantics::for_minor(30).unwrap(), &[restarted(None)]);
        assert_eq!(
            sim.final_status.conditions,
            [condition(
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )]
        );
        assert_eq!(sim.final_status.failed, 1);
    }

    /// restart-on-failure-then-success.yaml: a pod that ends takes its restarts with it.
    #[test]
    fn the_restarts_of_a_pod_that_ended_no_longer_count() {
        let job = on_failure(
            json!({"backoffLimit": 2, "completions": 2, "parallelism": 2,
            "completionMode": "Indexed"}),
        );
        let sim = simulate(
            &job,
            &Semantics::newest(),
            &[
                restarted(Some(0)),
                succeeded(Some(0)),
                restarted(Some(1)),
                succeeded(Some(1)),
            ],
        );
        assert_eq!(sim.steps[2].restarts, Some(1));
        assert_eq!(
            (sim.final_status.failed, sim.final_status.succeeded),
            (0, 2)
        );
        assert_eq!(
            sim.final_status.conditions.last().map(|c| c.type_.as_str()),
            Some("Complete")
        );
    }

    proptest! {
        /// Restarts never change the counts unless they end the Job, and then with
        /// BackoffLimitExceeded exactly when the running pods' restarts reach backoffLimit;
        /// with restartPolicy Never restarts are refused before the engine (scenario::resolve).
        #[test]
        fn restarts_count_only_against_the_backoff_limit(
            backoff_limit in 0i32..4,
            parallelism in 1i32..3,
            kinds in proptest::collection::vec(0u8..3, 1..10),
        ) {
            let job = on_failure(json!({"backoffLimit": backoff_limit, "parallelism": parallelism,
                "completions": 4}));
            let outcomes: Vec<Outcome> = kinds.iter().map(|k| match k {
                0 => restarted(None),
                1 => succeeded(None),
                _ => failed(None, mypod(vec![terminated("", 1)], vec![])),
            }).collect();
            let sim = simulate(&job, &Semantics::newest(), &outcomes);
            let mut before = (0, 0);
            for step in &sim.steps {
                if step.result == "restarted" {
                    let restarts = i64::from(step.restarts.unwrap());
                    let reached = if backoff_limit == 0 { restarts > 0 } else { restarts >= i64::from(backoff_limit) };
                    if step.conditions_added.is_empty() {
                        prop_assert!(!reached);
                        prop_assert_eq!((step.failed, step.succeeded), before);
                    } else {
                        prop_assert!(reached);
                        prop_assert_eq!(step.conditions_added.last().unwrap().reason.as_str(), "BackoffLimitExceeded");
                        prop_assert!(step.failed > before.0);
                    }
                }
                before = (step.failed, step.succeeded);
            }
        }
    }
}

/// Issue 32, item 3: a Running pod deleted (or evicted) before it terminates, under each
/// podReplacementPolicy (the differential scenarios `deleted-*` hold these to the controller).
mod deleted_pods {
    use super::*;

    fn deleted(ends: Option<FailedPod>) -> Outcome {
        Outcome {
            index: None,
            result: PodResult::Deleted(ends),
            after_seconds: 0,
        }
    }

    #[test]
    fn terminating_or_failed_counts_a_deleted_pod_at_once_and_replaces_it() {
        let job = job(json!({"backoffLimit": 1}));
        let sim = simulate(
            &job,
            &Semantics::newest(),
            &[deleted(None), after(15, succeeded(None))],
        );
        let step = &sim.steps[0];
        assert_eq!(
            (step.result.as_str(), step.counted, step.failed),
            ("deleted", true, 1)
        );
        assert_eq!(step.backoff_seconds, Some(10), "replaced after the backoff");
        assert_eq!(
            (sim.final_status.failed, sim.final_status.succeeded),
            (1, 1)
        );
        assert_eq!(
            sim.final_status.conditions.last().unwrap().type_,
            "Complete"
        );
    }

    #[test]
    fn replacement_policy_failed_holds_a_terminating_pod_until_the_job_ends() {
        let job = job(json!({"podReplacementPolicy": "Failed", "activeDeadlineSeconds": 20}));
        let sim = simulate(&job, &Semantics::newest(), &[deleted(None)]);
        let step = &sim.steps[0];
        assert_eq!(
            (step.result.as_str(), step.counted, step.failed),
            ("deleted", false, 0)
        );
        assert_eq!(step.backoff_seconds, None, "no replacement");
        let deadline = &sim.steps[1];
        assert_eq!(
            (deadline.result.as_str(), deadline.at_seconds),
            ("deadline", 20)
        );
        assert!(
            deadline
                .note
                .as_deref()
                .unwrap()
                .contains("1 Terminating pod")
        );
        assert_eq!(sim.final_status.failed, 1, "counted once the Job failed");
        assert_eq!(sim.final_status.active, 0);
    }

    #[test]
    fn a_held_pod_keeps_its_slot_so_the_job_waits_for_it() {
        let spec = |policy: &str| {
            job(json!({"completions": 2, "parallelism": 2, "podReplacementPolicy": policy}))
        };
        let outcomes = [deleted(None), after(12, succeeded(None))];
        let held = simulate(&spec("Failed"), &Semantics::newest(), &outcomes);
        assert_eq!(
            held.final_status.active, 0,
            "the slot is held, not refilled"
        );
        assert!(held.final_status.conditions.is_empty(), "the Job waits");
        let replaced = simulate(
            &spec("TerminatingOrFailed"),
            &Semantics::newest(),
            &outcomes,
        );
        assert_eq!(replaced.final_status.active, 1, "the replacement runs");
        assert_eq!(replaced.final_status.failed, 1);
    }

    #[test]
    fn a_deleted_pod_that_reaches_failed_goes_through_the_policy() {
        let job = job(json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}));
        let evicted = mypod(
            vec![terminated("", 143)],
            vec![pod_condition("DisruptionTarget", "True")],
        );
        let sim = simulate(
            &job,
            &Semantics::newest(),
            &[deleted(Some(evicted)), after(15, succeeded(None))],
        );
        assert_eq!(sim.steps[0].policy.as_ref().unwrap().action, "Ignore");
        assert_eq!(
            (sim.final_status.failed, sim.final_status.succeeded),
            (0, 1)
        );
    }

    /// Before JobPodReplacementPolicy (1.28), a policy kept the pod uncounted but the
    /// controller replaced it at once.
    #[test]
    fn before_the_replacement_gate_a_terminating_pod_is_replaced_but_not_counted() {
        let job = job(json!({"podFailurePolicy": {"rules": []}}));
        let sim = simulate(&job, &Semantics::for_minor(28).unwrap(), &[deleted(None)]);
        assert_eq!((sim.steps[0].counted, sim.final_status.failed), (false, 0));
        assert_eq!(sim.final_status.active, 1);
    }
}

/// Issue 32, item 6: explain says why no rule matched a failed pod.
#[test]
fn why_no_rule_matched_names_the_skipped_containers_and_conditions() {
    let exit_rules = rules(json!([{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]}}]));
    let exited_0 = mypod(vec![terminated("main", 0)], vec![]);
    assert!(
        why_no_rule_matched(&exit_rules, &exited_0)
            .unwrap()
            .starts_with("no container ended with a non-zero exit code")
    );
    let not_ended = mypod(vec![not_terminated("main")], vec![]);
    assert!(
        why_no_rule_matched(&exit_rules, &not_ended)
            .unwrap()
            .contains("have not ended")
    );
    let exited_1 = mypod(vec![terminated("main", 1)], vec![]);
    assert_eq!(
        why_no_rule_matched(&exit_rules, &exited_1).as_deref(),
        Some("exit code(s) 1 match no onExitCodes rule")
    );
    let condition_rules = rules(json!([{"action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget"}]}]));
    let other = mypod(vec![], vec![pod_condition("ConfigIssue", "True")]);
    assert!(
        why_no_rule_matched(&condition_rules, &other)
            .unwrap()
            .contains("type and status")
    );
    assert_eq!(why_no_rule_matched(&[], &exited_1), None);
}
