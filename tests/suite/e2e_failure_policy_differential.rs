//! The differential test: every scenario of `tests/data/failure-policy/` runs against the real
//! Job controller of the local cluster km-c (see support/jobs.rs for how pods are held,
//! failed and succeeded) and through the simulator, and the two must agree exactly: the Job's
//! conditions (type, status, reason, message), status.failed, succeeded, failedIndexes and
//! completedIndexes, which outcomes were skipped because the Job had finished, and the counters
//! after each outcome. A mismatch prints both sides; it is a simulator bug, never a reason to
//! loosen this test. What the controller decided is also written to
//! `target/failure-policy-observed.json`.
//!
//! Environment: KM_FP_ONLY=a,b (run only scenario files whose name contains one of these; the
//! result then goes to target/failure-policy-observed.partial.json), KM_FP_CONCURRENCY (default
//! 10 scenarios at a time), KM_FP_KEEP_NAMESPACES (keep the namespaces for debugging).
use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kubectl_migrate::failure_policy::{check, engine, model::JobModel, scenario};
use support::jobs::{Observed, OtherVersion, ScenarioFile, run_scenario};
use support::{CONTEXT_C, client};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/failure-policy")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_scenario_file_parses_and_has_a_description() {
    let files = scenario_files();
    assert!(
        files.len() >= 25,
        "at least 25 scenarios, found {}",
        files.len()
    );
    for f in files {
        let s = ScenarioFile::read(&f);
        assert!(!s.description.trim().is_empty(), "{}", f.display());
        assert!(!s.description.contains('\n'), "{}", f.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_agrees_with_the_real_job_controller_on_every_scenario() {
    agrees_on_every_scenario(
        client(CONTEXT_C).await,
        CONTEXT_C,
        "failure-policy-observed",
    )
    .await;
}

/// The same against the clusters of the other pinned versions (tests/cluster/versions.env), which
/// scripts/test.sh starts beside the others: the version table of src/failure_policy/SEMANTICS.md
/// held to real controllers of other minors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_agrees_with_the_job_controller_of_the_older_version() {
    agrees_at(OtherVersion::Older, "failure-policy-observed-older").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_agrees_with_the_job_controller_of_the_middle_version() {
    agrees_at(OtherVersion::Middle, "failure-policy-observed-middle").await;
}

async fn agrees_at(version: OtherVersion, written_as: &str) {
    agrees_on_every_scenario(version.client().await, version.context(), written_as).await;
}

async fn agrees_on_every_scenario(client: kube::Client, context: &'static str, written_as: &str) {
    let version = client.apiserver_version().await.expect("server version");
    let semantics = engine::Semantics::for_minor(version.minor.parse().expect("numeric minor"))
        .expect("the cluster's version is supported");
    let only: Vec<String> = std::env::var("KM_FP_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let concurrency: usize = std::env::var("KM_FP_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let files: Vec<PathBuf> = scenario_files()
        .into_iter()
        .filter(|f| {
            let name = f.file_name().unwrap().to_string_lossy();
            only.is_empty() || only.iter().any(|o| name.contains(o.as_str()))
        })
        .collect();
    assert!(!files.is_empty(), "no scenario selected");
    let started = std::time::Instant::now();

    // Each scenario in its own task, so that one that panics is reported with the others.
    let results: Vec<(String, Result<Observed, String>)> = futures::stream::iter(files)
        .map(|path| {
            let client = client.clone();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let task = tokio::spawn({
                let name = name.clone();
                async move {
                    let file = ScenarioFile::read(&path);
                    run_scenario(&client, context, &name, &file).await
                }
            });
            async move {
                let result = task.await.map_err(|e| match e.try_into_panic() {
                    Ok(p) => p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panicked".to_string()),
                    Err(e) => e.to_string(),
                });
                (name, result)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;

    let mut observed: BTreeMap<String, Observed> = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, result) in results {
        match result {
            Ok(o) => {
                observed.insert(name, o);
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    let out = target_dir().join(if only.is_empty() {
        format!("{written_as}.json")
    } else {
        format!("{written_as}.partial.json")
    });
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&observed).unwrap() + "\n",
    )
    .unwrap();
    eprintln!(
        "{} scenarios observed in {:?}, written to {}",
        observed.len(),
        started.elapsed(),
        out.display()
    );
    for (name, o) in &observed {
        let conditions: Vec<String> = o
            .conditions
            .iter()
            .map(|c| {
                format!(
                    "{}={}:{}",
                    c.type_,
                    c.status,
                    c.reason.as_deref().unwrap_or("")
                )
            })
            .collect();
        eprintln!(
            "  {name}: failed={} succeeded={} failedIndexes={:?} active={} [{}]",
            o.failed,
            o.succeeded,
            o.failed_indexes,
            o.active,
            conditions.join(" ")
        );
    }
    assert!(
        failures.is_empty(),
        "{} scenario(s) did not reach a stable end:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    let mut mismatches = Vec::new();
    for (name, real) in &observed {
        let file = ScenarioFile::read(&scenario_dir().join(name));
        let (mut predicted, finishing) = predict(&file, &semantics, name);
        let real = comparable(real);
        // The outcome that finishes the Job: the controller writes the counts and the ending
        // condition in two status updates (1.30 does), and the harness may read between them.
        // Counters read there must still be the simulator's.
        for (line, with_counters) in finishing {
            if real.get(line) == Some(&with_counters) {
                predicted[line] = with_counters;
            }
        }
        if predicted != real {
            mismatches.push(format!(
                "{name} ({}):\n{}",
                file.description,
                side_by_side(&predicted, &real)
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "the simulator disagrees with the Job controller (Kubernetes 1.{}) on {} of {} scenario(s):\n\n{}",
        semantics.minor,
        mismatches.len(),
        observed.len(),
        mismatches.join("\n\n")
    );
}

/// What is compared, as lines, so a mismatch reads as a diff.
fn comparable(o: &Observed) -> Vec<String> {
    let mut lines: Vec<String> = o
        .conditions
        .iter()
        .map(|c| {
            format!(
                "condition {} {} reason={:?} message={:?}",
                c.type_,
                c.status,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default()
            )
        })
        .collect();
    lines.push(format!("failed={} succeeded={}", o.failed, o.succeeded));
    lines.push(format!("failedIndexes={:?}", o.failed_indexes));
    lines.push(format!(
        "completedIndexes={:?}",
        o.completed_indexes.clone().filter(|c| !c.is_empty())
    ));
    for r in &o.outcomes {
        let after = r
            .counters_after
            .as_ref()
            .map(|c| format!(" failed={} succeeded={}", c.failed, c.succeeded))
            .unwrap_or_default();
        lines.push(format!(
            "outcome {}: {}{after}",
            r.outcome,
            if r.applied { "applied" } else { "skipped" }
        ));
    }
    lines
}

/// The simulator's answer in the same shape. Pod names in messages are written as the harness
/// normalises real ones: `<namespace>/<pod:K>`, K being the outcome that hit the pod.
/// The simulator's lines, and for the outcome that finishes the Job, its line with the counters
/// after it (line index, line): what the harness records if it reads the Job between the
/// controller's count and its ending condition.
fn predict(
    file: &ScenarioFile,
    semantics: &engine::Semantics,
    name: &str,
) -> (Vec<String>, Vec<(usize, String)>) {
    let job: Job =
        serde_json::from_value(file.job.clone()).unwrap_or_else(|e| panic!("{name}: job: {e}"));
    let problems = check::validate(&job);
    assert!(
        problems.is_empty(),
        "{name}: the Job is invalid: {problems:?}"
    );
    let model = JobModel::from_job(&job).unwrap();
    let text = std::fs::read_to_string(scenario_dir().join(name)).unwrap();
    let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let specs = serde_json::from_value::<scenario::ScenarioFile>(value["scenario"].clone())
        .unwrap_or_else(|e| panic!("{name}: not a scenario: {e}"))
        .outcomes;
    let outcomes = scenario::resolve(&specs, &model).unwrap_or_else(|e| panic!("{name}: {e}"));
    let sim = engine::simulate(&model, semantics, &outcomes);
    let normalise = |message: &str| {
        // Each FailJob message names the pod of the step that matched; its outcome number is
        // recorded with the step.
        for step in &sim.steps {
            if let Some(n) = step.outcome
                && step
                    .policy
                    .as_ref()
                    .and_then(|p| p.fail_job_message.as_deref())
                    == Some(message)
            {
                let from = format!("{}/{} ", model.namespace, step.pod);
                return message.replacen(&from, &format!("<namespace>/<pod:{}> ", n - 1), 1);
            }
        }
        message.to_string()
    };
    let f = &sim.final_status;
    let mut lines: Vec<String> = f
        .conditions
        .iter()
        .map(|c| {
            format!(
                "condition {} {} reason={:?} message={:?}",
                c.type_,
                c.status,
                c.reason,
                normalise(&c.message)
            )
        })
        .collect();
    lines.push(format!("failed={} succeeded={}", f.failed, f.succeeded));
    lines.push(format!("failedIndexes={:?}", f.failed_indexes));
    lines.push(format!(
        "completedIndexes={:?}",
        f.completed_indexes.clone().filter(|c| !c.is_empty())
    ));
    // Counters are read after an outcome only while the Job had not finished.
    let mut finished = false;
    let mut finishing = Vec::new();
    for step in &sim.steps {
        // An event (the deadline) has no line of its own: the harness sees it as the Job's
        // conditions and as the outcomes after it being skipped.
        let Some(number) = step.outcome else {
            finished |= !step.conditions_added.is_empty();
            continue;
        };
        let applied = step.result != "skipped";
        // A restart changes no counter unless it ends the Job: the harness reads none.
        let after = if applied
            && !finished
            && step.conditions_added.is_empty()
            && step.result != "restarted"
        {
            format!(" failed={} succeeded={}", step.failed, step.succeeded)
        } else {
            String::new()
        };
        if applied && !finished && !step.conditions_added.is_empty() {
            finishing.push((
                lines.len(),
                format!(
                    "outcome {}: applied failed={} succeeded={}",
                    number - 1,
                    step.failed,
                    step.succeeded
                ),
            ));
        }
        finished |= !step.conditions_added.is_empty();
        lines.push(format!(
            "outcome {}: {}{after}",
            number - 1,
            if applied { "applied" } else { "skipped" }
        ));
    }
    (lines, finishing)
}

fn side_by_side(predicted: &[String], real: &[String]) -> String {
    let width = predicted
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .min(110);
    let mut out = format!("  {:<width$}   {}\n", "SIMULATOR", "JOB CONTROLLER");
    for i in 0..predicted.len().max(real.len()) {
        let p = predicted.get(i).map(String::as_str).unwrap_or("");
        let r = real.get(i).map(String::as_str).unwrap_or("");
        let mark = if p == r { " " } else { "!" };
        out += &format!("{mark} {p:<width$}   {r}\n");
    }
    out
}
