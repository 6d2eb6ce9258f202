//! Benchmark: the failure-policy engine.
//!
//!   cargo bench --bench failure_policy
//!
//! 1. Pod-failure evaluations per second against a 20-rule policy, on one thread: a mix of pods
//!    that match the last rule, match nothing (all 20 rules scanned) or match early. Target:
//!    at least 1,000,000 per second. The baseline, measured in the same run, is the cost of
//!    just walking the same pods' container and condition lists.
//! 2. `simulate` of a 10,000-index Indexed Job scenario (every index fails once, then
//!    succeeds), end to end through the release binary. Target: at most 1 s. Baseline: the same
//!    binary running `check` on the same Job (start-up, parsing, validation).
//!
//! Exits non-zero when a target is missed. Figures go to stdout and target/bench-failure-policy.txt.
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kubectl_migrate::failure_policy::engine::{Semantics, match_policy};
use kubectl_migrate::failure_policy::model::{
    Action, ConditionPattern, ContainerState, ExitCodesRule, FailedPod, PodCondition, Rule,
};

fn policy() -> Vec<Rule> {
    let mut rules = Vec::new();
    for i in 0..19 {
        if i % 2 == 0 {
            rules.push(Rule {
                action: if i % 4 == 0 {
                    Action::Ignore
                } else {
                    Action::Count
                },
                on_exit_codes: Some(ExitCodesRule {
                    container_name: Some(if i % 3 == 0 {
                        "main".into()
                    } else {
                        "sidecar".into()
                    }),
                    operator: "In".into(),
                    values: (1..=20).map(|v| 100 + i * 20 + v).collect(),
                }),
                on_pod_conditions: Vec::new(),
            });
        } else {
            rules.push(Rule {
                action: Action::Ignore,
                on_exit_codes: None,
                on_pod_conditions: vec![
                    ConditionPattern {
                        type_: format!("Custom{i}"),
                        status: "True".into(),
                    },
                    ConditionPattern {
                        type_: "DisruptionTarget".into(),
                        status: "False".into(),
                    },
                ],
            });
        }
    }
    rules.push(Rule {
        action: Action::FailJob,
        on_exit_codes: Some(ExitCodesRule {
            container_name: None,
            operator: "In".into(),
            values: vec![42, 137],
        }),
        on_pod_conditions: Vec::new(),
    });
    rules
}

fn pods() -> Vec<FailedPod> {
    let conditions = vec![
        PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            reason: None,
        },
        PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some("EvictionByEvictionAPI".into()),
        },
    ];
    let pod = |main: i32, sidecar: Option<i32>, conditions: Vec<PodCondition>| FailedPod {
        name: "job-abcde".into(),
        containers: vec![
            ContainerState {
                name: "main".into(),
                exit_code: Some(main),
            },
            ContainerState {
                name: "sidecar".into(),
                exit_code: sidecar,
            },
        ],
        init_containers: vec![ContainerState {
            name: "setup".into(),
            exit_code: Some(0),
        }],
        conditions,
    };
    vec![
        pod(137, Some(0), Vec::new()),    // the last rule (FailJob)
        pod(1, None, conditions.clone()), // no rule: all 20 scanned
        pod(101, Some(0), Vec::new()),    // the first rule
        pod(3, Some(2), conditions),      // no rule
    ]
}

fn evaluations_per_second() -> (f64, f64) {
    let rules = policy();
    let pods = pods();
    let sem = Semantics::newest();
    let n = 2_000_000;
    // Baseline: touching the same data without deciding anything.
    let start = Instant::now();
    let mut sum = 0i64;
    for i in 0..n {
        let p = black_box(&pods[i % pods.len()]);
        for c in p.containers.iter().chain(&p.init_containers) {
            sum += c.exit_code.unwrap_or(0) as i64;
        }
        sum += p.conditions.len() as i64;
    }
    black_box(sum);
    let baseline = start.elapsed();
    let start = Instant::now();
    let mut counted = 0usize;
    for i in 0..n {
        let m = match_policy(
            Some(black_box(&rules)),
            black_box(&pods[i % pods.len()]),
            "ns",
            &sem,
        );
        counted += usize::from(m.counted);
    }
    black_box(counted);
    let engine = start.elapsed();
    (
        n as f64 / engine.as_secs_f64(),
        engine.as_secs_f64() / baseline.as_secs_f64().max(1e-9),
    )
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time_binary(bin: &Path, args: &[&str]) -> Duration {
    let runs = (0..5)
        .map(|_| {
            let start = Instant::now();
            let out = Command::new(bin)
                .args(args)
                .output()
                .expect("run the binary");
            let took = start.elapsed();
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            took
        })
        .collect();
    median(runs)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("failure_policy benchmark: run it with `cargo bench --bench failure_policy`");
        return;
    }
    let mut report = String::new();
    let mut ok = true;
    let (per_second, ratio) = evaluations_per_second();
    let line = format!(
        "pod-failure evaluations, 20-rule policy, one thread: {:.0}/s (target >= 1,000,000/s); {ratio:.1}x the cost of walking the pods' lists",
        per_second
    );
    println!("{line}");
    report += &line;
    report.push('\n');
    ok &= per_second >= 1_000_000.0;

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.yaml");
    let scenario = dir.path().join("scenario.yaml");
    let indexes = 10_000;
    std::fs::write(
        &job,
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: wide}}\nspec:\n  completionMode: Indexed\n  completions: {indexes}\n  parallelism: 100\n  backoffLimitPerIndex: 1\n  maxFailedIndexes: 1000\n  podFailurePolicy:\n    rules:\n    - {{action: Ignore, onPodConditions: [{{type: DisruptionTarget}}]}}\n    - {{action: FailIndex, onExitCodes: {{operator: In, values: [3]}}}}\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: main, image: busybox}}]\n"
        ),
    )
    .unwrap();
    let mut text = String::from("outcomes:\n");
    for i in 0..indexes {
        text += &format!(
            "- {{index: {i}, fail: {{exitCodes: {{main: 1}}}}}}\n- {{index: {i}, succeed: {{}}}}\n"
        );
    }
    std::fs::write(&scenario, text).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_kubectl-migrate"));
    let (job_s, scenario_s) = (job.to_str().unwrap(), scenario.to_str().unwrap());
    let simulate = time_binary(
        bin,
        &[
            "failure-policy",
            "simulate",
            "-f",
            job_s,
            "--scenario",
            scenario_s,
            "-o",
            "json",
        ],
    );
    let baseline = time_binary(bin, &["failure-policy", "check", "-f", job_s, "-o", "json"]);
    let line = format!(
        "simulate, 10,000-index Indexed Job, 20,000 outcomes, end to end: {:.3} s median of 5 (target <= 1 s); {:.1}x `check` of the same Job ({:.3} s)",
        simulate.as_secs_f64(),
        simulate.as_secs_f64() / baseline.as_secs_f64(),
        baseline.as_secs_f64()
    );
    println!("{line}");
    report += &line;
    report.push('\n');
    ok &= simulate <= Duration::from_secs(1);
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-failure-policy.txt");
    let _ = std::fs::write(target, &report);
    if !ok {
        eprintln!("a target was missed");
        std::process::exit(1);
    }
}
