//! `failure-policy explain` on a live Job with mixed failures: a failure no rule matches
//! (counted), an eviction (ignored by rule 1), and exit code 2 (counted by rule 2). The Job keeps
//! running; explain must name each failed pod's rule, the distance to each limit, and what the
//! next failure of each common kind would do.
use crate::support;

use std::path::Path;

use serde_json::Value;
use support::jobs::{ScenarioFile, run_scenario_and};
use support::{CONTEXT_C, client, kubeconfig_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_names_each_failed_pods_rule_the_limits_and_the_next_failures() {
    let client = client(CONTEXT_C).await;
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/failure-policy-explain/mixed.yaml");
    let file = ScenarioFile::read(&path);
    let mut explained: Option<(Value, String)> = None;
    let observed = run_scenario_and(
        &client,
        CONTEXT_C,
        "explain-mixed",
        &file,
        |namespace, job| {
            let run = |args: &[&str]| explain_output(namespace, job, 100, args);
            let json: Value = serde_json::from_str(&run(&["-o", "json"])).unwrap();
            explained = Some((json, run(&[])));
            // What a person sees: each table's rows whole at every width, coloured.
            let kubeconfig = kubeconfig_path();
            support::pty::check_at_every_width(
                Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
                &[
                    "failure-policy",
                    "explain",
                    job,
                    "-n",
                    namespace,
                    "--context",
                    CONTEXT_C,
                ],
                &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
                &std::env::temp_dir(),
                &[
                    &[
                        "POD",
                        "INDEX",
                        "EXIT CODES",
                        "CONDITIONS",
                        "RULE",
                        "ACTION",
                        "COUNTED",
                    ],
                    &["main=1", "-", "Count", "yes"],
                    &["main=2", "2", "Count", "yes"],
                    &["LIMIT", "VALUE", "USED", "REMAINING"],
                    &["backoffLimit", "3", "2"],
                    &["activeDeadlineSeconds", "3600s"],
                    &["OOM-killed (exit code 137)", "0", "FailJob"],
                ],
            );
        },
    )
    .await;
    assert_eq!(
        (observed.failed, observed.succeeded),
        (2, 0),
        "the Job is still running"
    );
    let (report, table) = explained.expect("explain ran");

    assert_eq!(
        report["kubernetesVersion"],
        format!("1.{}", client.apiserver_version().await.unwrap().minor)
    );
    assert_eq!(
        (report["failed"].as_i64(), report["finished"].as_str()),
        (Some(2), None)
    );
    let pods = report["failedPods"].as_array().unwrap();
    assert_eq!(pods.len(), 3, "{report:#}");
    let summary: Vec<(String, Value, String, bool)> = pods
        .iter()
        .map(|p| {
            (
                p["exitCodes"].to_string(),
                p["policy"]["rule"].clone(),
                p["policy"]["action"].as_str().unwrap().to_string(),
                p["policy"]["counted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary[0],
        (r#"{"main":1}"#.into(), Value::Null, "Count".into(), true)
    );
    assert_eq!(
        (summary[1].1.clone(), summary[1].2.as_str(), summary[1].3),
        (Value::from(1), "Ignore", false)
    );
    assert!(
        pods[1]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "DisruptionTarget"
                && c["status"] == "True"
                && c["reason"] == "EvictionByEvictionAPI"),
        "{}",
        pods[1]
    );
    assert_eq!(
        summary[2],
        (r#"{"main":2}"#.into(), Value::from(2), "Count".into(), true)
    );

    let limit = |name: &str| {
        report["limits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["limit"] == name)
            .cloned()
            .unwrap()
    };
    let backoff = limit("backoffLimit");
    assert_eq!(
        (&backoff["value"], &backoff["used"], &backoff["remaining"]),
        (&Value::from(3), &Value::from(2), &Value::from(1))
    );
    let deadline = limit("activeDeadlineSeconds");
    assert_eq!(deadline["value"], 3600);
    assert_eq!(report["schemaVersion"], 4);

    let next = |kind: &str| {
        report["next"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["failure"].as_str().unwrap().starts_with(kind))
            .cloned()
            .unwrap()
    };
    assert_eq!(
        next("exit code 1")["outcome"],
        "counted (3 failed); a replacement pod follows"
    );
    let oom = next("OOM-killed");
    assert_eq!(
        (oom["rule"].as_i64(), oom["action"].as_str()),
        (Some(0), Some("FailJob"))
    );
    assert!(
        oom["outcome"]
            .as_str()
            .unwrap()
            .starts_with("the Job fails: PodFailurePolicy (Container main for pod"),
        "{oom}"
    );
    assert_eq!(
        next("evicted")["outcome"],
        "ignored (not counted); a replacement pod follows"
    );
    assert_eq!(next("preempted")["action"], "Ignore");

    for want in [
        "Failed pods:",
        "Limits:",
        "backoffLimit",
        "The next failure:",
        "OOM-killed (exit code 137)",
        "FailJob",
    ] {
        assert!(table.contains(want), "missing {want:?} in\n{table}");
    }
}

/// `failure-policy explain JOB -n NAMESPACE --context km-c ARGS` at `columns`: its stdout (it
/// must succeed).
fn explain_output(namespace: &str, job: &str, columns: u16, args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("kubectl-migrate")
        .unwrap()
        .env("NO_COLOR", "1")
        .env("COLUMNS", columns.to_string())
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["failure-policy", "explain", job, "-n", namespace])
        .args(["--context", CONTEXT_C])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the scenario file `name` and explains its Job at the end: (JSON, table).
async fn explained(name: &str) -> (Value, String) {
    let (json, text, _) = explained_with_observed(name).await;
    (json, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_indexed_jobs_the_prediction_is_for_the_index_closest_to_its_limit() {
    let (report, table) = explained("per-index").await;
    let per_index = report["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["limit"] == "backoffLimitPerIndex")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            &per_index["index"],
            &per_index["used"],
            &per_index["remaining"]
        ),
        (&Value::from(1), &Value::from(1), &Value::from(0)),
        "{report:#}"
    );
    let exit_1 = report["next"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["failure"] == "exit code 1")
        .cloned()
        .unwrap();
    assert_eq!(exit_1["index"], 1, "{exit_1}");
    assert_eq!(
        exit_1["outcome"], "index 1 fails for good; the Job goes on",
        "{exit_1}"
    );
    assert!(
        table.contains("The next failure, of index 1 (the running index closest to its limit):"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_shows_its_final_conditions_and_no_predictions() {
    let (report, table) = explained("finished").await;
    assert!(
        report["finished"]
            .as_str()
            .is_some_and(|f| f.starts_with("Failed (PodFailurePolicy)")),
        "{report:#}"
    );
    assert_eq!(report["next"], serde_json::json!([]), "{report:#}");
    assert!(
        report["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Failed"),
        "{report:#}"
    );
    // The rule matched a condition with status False: it is shown, with its status.
    let ignored = &report["failedPods"][0];
    assert_eq!(ignored["policy"]["action"], "Ignore", "{ignored}");
    assert!(
        ignored["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "DisruptionTarget" && c["status"] == "False"),
        "{ignored}"
    );
    assert!(
        table.contains("DisruptionTarget=False/NotDisrupted"),
        "{table}"
    );
    assert!(
        table.contains("; finished: Failed (PodFailurePolicy)"),
        "{table}"
    );
    assert!(
        table.contains("The next failure: none, the Job has finished"),
        "{table}"
    );
}

/// Issue 32, item 6: for each failed pod no rule matched, explain says why: the exit code it
/// ended with is in no onExitCodes rule, or no container ended with one at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pod_no_rule_matched_says_why() {
    let (report, text) = explained("no-rule-matched").await;
    let why: Vec<&str> = report["failedPods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["noRuleMatched"].as_str().unwrap_or_default())
        .collect();
    let exit_1 = "exit code(s) 1 match no onExitCodes rule; none of its conditions has the type and status of an onPodConditions pattern";
    let no_exit = "no container ended with a non-zero exit code (onExitCodes rules skip containers that exit 0 or have not ended)";
    assert_eq!(why.len(), 2, "{report:#}");
    assert!(why.contains(&exit_1), "{report:#}");
    assert!(why.iter().any(|w| w.starts_with(no_exit)), "{report:#}");
    // The lines are broken to the terminal's width; the words are what count.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!(": no rule matched: {exit_1}")),
        "{text}"
    );
    assert!(
        words.contains(&format!(": no rule matched: {no_exit}")),
        "{text}"
    );
}

/// Runs the scenario file `name`, explains its Job at the end, and returns what the cluster
/// ended with too.
async fn explained_with_observed(name: &str) -> (Value, String, support::jobs::Observed) {
    let client = client(CONTEXT_C).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/failure-policy-explain")
        .join(format!("{name}.yaml"));
    let file = ScenarioFile::read(&path);
    let mut explained = None;
    let observed = run_scenario_and(&client, CONTEXT_C, name, &file, |namespace, job| {
        let json =
            serde_json::from_str(&explain_output(namespace, job, 120, &["-o", "json"])).unwrap();
        explained = Some((json, explain_output(namespace, job, 120, &[])));
    })
    .await;
    let (json, text) = explained.expect("explain ran");
    (json, text, observed)
}

/// Issue 32, item 6: a pod deleted while running that stays Terminating (its node is gone)
/// under podReplacementPolicy Failed is shown, with why the Job has no pod running: the
/// controller waits for it to reach phase Failed before it counts or replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_pod_without_a_replacement_is_explained() {
    let (report, text, observed) = explained_with_observed("terminating").await;
    // What the controller did: no replacement, nothing counted, one pod terminating.
    assert_eq!(
        (observed.active, observed.terminating, observed.failed),
        (0, Some(1), 0),
        "{observed:?}"
    );
    let terminating = report["terminatingPods"].as_array().unwrap();
    assert_eq!(terminating.len(), 1, "{report:#}");
    let pod = &terminating[0];
    assert_eq!(
        (pod["counted"].as_bool(), pod["replaced"].as_bool()),
        (Some(false), Some(false)),
        "{pod}"
    );
    let why = "neither counted nor replaced until it reaches phase Failed: podReplacementPolicy Failed waits for it";
    assert!(pod["why"].as_str().unwrap().starts_with(why), "{pod}");
    assert_eq!(report["failedPods"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["failuresWithoutPod"], Value::Null, "{report:#}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Terminating pods (deleted, not stopped yet):"),
        "{text}"
    );
    assert!(
        words.contains(&format!("{}: {why}", pod["pod"].as_str().unwrap())),
        "{text}"
    );
}

/// Issue 32, item 6: status.failed reconciled with the pods listed. The Job fails at its first
/// failure with three pods running; the controller deletes the other two, counts them and they
/// are gone: 3 failed, one failed pod left, and explain says where the other two went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counted_failures_without_a_pod_are_accounted_for() {
    let (report, text, observed) = explained_with_observed("deleted-when-failed").await;
    assert_eq!(observed.failed, 3, "{observed:?}");
    assert_eq!(report["failed"], 3, "{report:#}");
    assert_eq!(
        report["failedPods"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    let gone = &report["failuresWithoutPod"];
    assert_eq!(gone["count"], 2, "{report:#}");
    let why = "when the Job failed, the controller deleted the pods still running and counted them (through the pod failure policy); a deleted pod is removed once counted";
    assert!(gone["why"].as_str().unwrap().starts_with(why), "{gone}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!(
            "2 of the 3 counted failures have no pod any more: {why}"
        )),
        "{text}"
    );
}

/// Issue 32, item 6: the next-failure table covers the Job's own rules: each exit code of its
/// FailJob rule (one line, the codes leading to the same), its condition, and a code outside
/// its NotIn rule, each with what the controller would do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_failure_table_covers_the_jobs_own_rules() {
    let (report, text, observed) = explained_with_observed("own-rules").await;
    assert_eq!((observed.failed, observed.active), (1, 1), "{observed:?}");
    let namespace = report["job"].as_str().unwrap().split('/').next().unwrap();
    // The line for `failure`: its rule, action and what follows.
    let next = |failure: &str| {
        let line = report["next"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["failure"] == failure)
            .cloned()
            .unwrap_or_else(|| panic!("no line for {failure:?}: {report:#}"));
        (
            line["rule"].as_i64(),
            line["action"].as_str().unwrap().to_string(),
            line["outcome"].as_str().unwrap().to_string(),
        )
    };
    let fails = |message: &str| format!("the Job fails: PodFailurePolicy ({message})");
    let pod = format!("{namespace}/own-rules-<pod>");
    assert_eq!(
        next("exit code 42, 43 in container main"),
        (
            Some(0),
            "FailJob".into(),
            fails(&format!(
                "Container main for pod {pod} failed with exit code <code> matching FailJob rule at index 0"
            ))
        )
    );
    assert_eq!(
        next("condition ConfigIssue"),
        (
            Some(1),
            "FailJob".into(),
            fails(&format!(
                "Pod {pod} has condition ConfigIssue matching FailJob rule at index 1"
            ))
        )
    );
    assert_eq!(
        next("exit code 4 in container sidecar (not in 1, 2, 3)"),
        (
            Some(2),
            "Ignore".into(),
            "ignored (not counted); a replacement pod follows".into()
        )
    );
    // The common kinds are still there, and a kind the rules name once more is not repeated.
    assert_eq!(
        next("exit code 1").2,
        "counted (2 failed); a replacement pod follows"
    );
    assert_eq!(report["next"].as_array().unwrap().len(), 8, "{report:#}");
    for want in [
        "exit code 42, 43 in container main",
        "condition ConfigIssue",
        "(not in 1, 2, 3)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}
