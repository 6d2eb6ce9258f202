//! A Job manifest as `failure-policy check/simulate FILE` reads it: parsed, validated as the
//! API server would, its features checked for every version, modelled, and (when valid, as
//! `simulate` requires) played through the engine with a few outcomes.
#![no_main]

mod common;

use kubectl_migrate::failure_policy::engine::{Outcome, PodResult};
use kubectl_migrate::failure_policy::model::{ContainerState, FailedPod, JobModel, PodCondition};
use kubectl_migrate::failure_policy::{check, invalid_job_message, parse_job};
use libfuzzer_sys::fuzz_target;

/// The API server's soft limit on an Indexed Job's completions (with backoffLimitPerIndex).
const MAX_INDEXES: i32 = 100_000;

/// A failure of each kind the rules look at, and a success, for each index (or once).
fn outcomes(model: &JobModel) -> Vec<Outcome> {
    let exits = |code: i32, names: &[String]| -> Vec<ContainerState> {
        names
            .iter()
            .map(|n| ContainerState {
                name: n.clone(),
                exit_code: Some(code),
            })
            .collect()
    };
    let failures = [
        FailedPod {
            containers: exits(1, &model.containers),
            ..Default::default()
        },
        FailedPod {
            init_containers: exits(137, &model.init_containers),
            ..Default::default()
        },
        FailedPod {
            conditions: vec![PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("EvictionByEvictionAPI".into()),
            }],
            ..Default::default()
        },
    ];
    let indexes: Vec<Option<i32>> = if model.indexed {
        (0..model.completions.unwrap_or(0).min(3))
            .map(Some)
            .collect()
    } else {
        vec![None]
    };
    let mut out = Vec::new();
    for index in indexes {
        for pod in &failures {
            out.push(Outcome {
                index,
                result: PodResult::Failed(pod.clone()),
                after_seconds: 30,
            });
        }
        out.push(Outcome {
            index,
            result: PodResult::Succeeded,
            after_seconds: 1,
        });
    }
    out
}

fuzz_target!(|text: &str| {
    let Ok(job) = parse_job(text, "job.yaml") else {
        return;
    };
    let problems = check::validate(&job);
    let message = invalid_job_message(&job, &problems);
    assert!(message.starts_with("Job.batch "));
    for sem in common::versions() {
        let _ = check::support(&job, &sem);
    }
    // `simulate` models a Job only once it is valid (`explain` models Jobs the server took).
    if !problems.is_empty() {
        return;
    }
    // Known and left for now: the engine and the model hold an Indexed Job's indexes one by
    // one (a map of every index, succeededIndexes as a set), so a valid Job with completions
    // near i32::MAX takes minutes and gigabytes. Up to the API server's soft limit they are
    // quick.
    let spec = job.spec.as_ref();
    let indexed = spec.and_then(|s| s.completion_mode.as_deref()) == Some("Indexed");
    if indexed && spec.and_then(|s| s.completions).unwrap_or(0) > MAX_INDEXES {
        return;
    }
    let Ok(model) = JobModel::from_job(&job) else {
        return;
    };
    common::simulate_all(&model, &outcomes(&model));
});
