//! Fixed, valid Jobs for the failure-policy targets, and every supported version.
#![allow(dead_code)]

use std::sync::OnceLock;

use kubectl_migrate::failure_policy::engine::{self, NEWEST_MINOR, OLDEST_MINOR, Semantics};
use kubectl_migrate::failure_policy::model::JobModel;
use kubectl_migrate::failure_policy::{check, parse_job};

const JOBS: [&str; 3] = [
    // Non-indexed, a policy with every kind of rule, an init container, a deadline.
    r#"
apiVersion: batch/v1
kind: Job
metadata: {name: policy, namespace: ns}
spec:
  completions: 3
  parallelism: 2
  backoffLimit: 2
  activeDeadlineSeconds: 600
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
    - action: Count
      onExitCodes: {operator: NotIn, values: [0, 1]}
    - action: FailJob
      onPodConditions: [{type: ConfigIssue, status: "False"}]
  template:
    spec:
      restartPolicy: Never
      initContainers: [{name: setup, image: x}]
      containers: [{name: main, image: x}, {name: sidecar, image: x}]
"#,
    // Indexed, with a limit per index, FailIndex and a success policy.
    r#"
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 2
  backoffLimitPerIndex: 1
  maxFailedIndexes: 2
  podFailurePolicy:
    rules:
    - action: FailIndex
      onExitCodes: {operator: In, values: [3]}
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
  successPolicy:
    rules:
    - {succeededIndexes: "0,2-3", succeededCount: 2}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: x}]
"#,
    // A work queue (completions unset), no policy, pods replaced once failed.
    r#"
apiVersion: batch/v1
kind: Job
metadata: {name: queue}
spec:
  parallelism: 3
  backoffLimit: 1
  podReplacementPolicy: Failed
  template:
    spec:
      restartPolicy: OnFailure
      containers: [{name: main, image: x}]
"#,
];

pub fn models() -> &'static [JobModel] {
    static MODELS: OnceLock<Vec<JobModel>> = OnceLock::new();
    MODELS.get_or_init(|| {
        JOBS.iter()
            .map(|text| {
                let job = parse_job(text, "job").expect("a fixture parses");
                assert_eq!(check::validate(&job), Vec::new(), "a fixture is valid");
                JobModel::from_job(&job).expect("a fixture has a model")
            })
            .collect()
    })
}

pub fn versions() -> impl Iterator<Item = Semantics> {
    (OLDEST_MINOR..=NEWEST_MINOR).map(|m| Semantics::for_minor(m).expect("supported"))
}

/// Runs the outcomes through the engine for every version: the timeline has one step per
/// outcome (a skipped one too) and at most one event of its own, the deadline passing.
pub fn simulate_all(model: &JobModel, outcomes: &[engine::Outcome]) {
    for sem in versions() {
        let sim = engine::simulate(model, &sem, outcomes);
        let of_outcomes = sim.steps.iter().filter(|s| s.outcome.is_some()).count();
        assert_eq!(of_outcomes, outcomes.len());
        assert!(sim.steps.len() - of_outcomes <= 1, "more than one event");
    }
}
