//! Bad input for `failure-policy check` and `simulate`: every manifest of
//! `tests/data/failure-policy-invalid/` is refused locally with the API server's own messages
//! (check: exit 1, simulate: exit 2), and the real judge, a server-side dry-run create on the
//! local cluster km-b (Kubernetes 1.36), rejects it with exactly the same causes, in the same
//! order, and the same `status.message`. The `valid-*.yaml` manifests pass both. A few CLI
//! checks (version support, usage errors, a file that is not a Job) need no cluster.
//!
//! The expected messages below are written out in full: they are what the server answered when
//! the table was written, and the cluster test re-checks them against the server on every run.
use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::PostParams;
use kubectl_migrate::failure_policy::read_job;
use serde_json::Value;
use support::jobs::OtherVersion;
use support::{CONTEXT_B, TestNamespace, client, kubeconfig_path};

/// apimachinery's label-key name message (ValidateQualifiedName of a condition type).
const LABEL_KEY_NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or \
    '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
    or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// Each invalid manifest and the messages the API server gives for it, in its order.
fn invalid_cases() -> Vec<(&'static str, Vec<String>)> {
    let rule0 = "spec.podFailurePolicy.rules[0]";
    let s = |v: &str| v.to_string();
    vec![
        (
            "backoff-limit-per-index-non-indexed.yaml",
            vec![s(
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
            )],
        ),
        (
            "bad-condition-status.yaml",
            vec![format!(
                "{rule0}.onPodConditions[0].status: Unsupported value: \"Yes\": supported values: \
                 \"False\", \"True\", \"Unknown\""
            )],
        ),
        (
            "bad-managed-by.yaml",
            vec![s(
                "spec.managedBy: Invalid value: \"kueue\": must be a domain-prefixed path (such as \
                 \"acme.io/foo\")",
            )],
        ),
        (
            "both-requirements.yaml",
            vec![format!(
                "{rule0}: Invalid value: specifying both OnExitCodes and OnPodConditions is not \
                 supported"
            )],
        ),
        (
            "default-restart-policy-always.yaml",
            vec![s(
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \
                 \"Never\"",
            )],
        ),
        (
            "duplicate-values.yaml",
            vec![format!("{rule0}.onExitCodes.values[1]: Duplicate value: 1")],
        ),
        (
            "empty-values.yaml",
            vec![format!(
                "{rule0}.onExitCodes.values: Invalid value: []: at least one value is required"
            )],
        ),
        (
            "failindex-without-backoff-limit-per-index.yaml",
            vec![format!(
                "{rule0}.action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex \
                 to be set"
            )],
        ),
        (
            "in-with-zero.yaml",
            vec![format!(
                "{rule0}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"
            )],
        ),
        (
            "indexed-pod-hostname-too-long.yaml",
            vec![s("metadata.name: Invalid value: \
                 \"fp-a-very-long-job-name-that-leaves-no-room-for-the-index-0000\": will not able \
                 to create pod with invalid DNS label: \
                 fp-a-very-long-job-name-that-leaves-no-room-for-the-index-0000-9")],
        ),
        (
            "invalid-condition-type.yaml",
            vec![format!(
                "{rule0}.onPodConditions[0].type: Invalid value: \"Disruption Target\": \
                 {LABEL_KEY_NAME_PART}"
            )],
        ),
        (
            "max-failed-indexes-above-completions.yaml",
            vec![s(
                "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions",
            )],
        ),
        (
            "max-failed-indexes-without-backoff-limit-per-index.yaml",
            vec![s(
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            )],
        ),
        (
            "negative-backoff-limit-per-index.yaml",
            vec![s(
                "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
            )],
        ),
        (
            "no-image.yaml",
            vec![s("spec.template.spec.containers[0].image: Required value")],
        ),
        (
            "no-requirement.yaml",
            vec![format!(
                "{rule0}: Invalid value: specifying one of OnExitCodes and OnPodConditions is \
                 required"
            )],
        ),
        (
            "replacement-terminating-with-policy.yaml",
            vec![s(
                "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported \
                 values: \"Failed\"",
            )],
        ),
        (
            "restart-on-failure-with-policy.yaml",
            vec![s(
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is \
                 supported when podFailurePolicy is specified",
            )],
        ),
        (
            "succeeded-count-above-completions.yaml",
            vec![s(
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than \
                 or equal to 3 (the number of specified completions)",
            )],
        ),
        (
            "succeeded-indexes-descending.yaml",
            vec![s(
                "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"3-1\": error \
                 parsing succeededIndexes: non-increasing order, previous: 3, current: 1",
            )],
        ),
        (
            "succeeded-indexes-too-large.yaml",
            vec![s(
                "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"0,2-3\": error \
                 parsing succeededIndexes: too large index: \"3\"",
            )],
        ),
        (
            "success-policy-non-indexed.yaml",
            vec![s("spec.successPolicy: Invalid value: \
                 {\"Rules\":[{\"SucceededIndexes\":\"0-1\",\"SucceededCount\":1}]}: requires \
                 indexed completion mode")],
        ),
        (
            "too-many-rules.yaml",
            vec![s(
                "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items",
            )],
        ),
        (
            "too-many-values.yaml",
            vec![format!(
                "{rule0}.onExitCodes.values: Too many: 256: must have at most 255 items"
            )],
        ),
        (
            "two-problems-in-zero-unordered.yaml",
            vec![
                format!(
                    "{rule0}.onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In \
                     operator"
                ),
                format!("{rule0}.onExitCodes.values: Invalid value: [5,0]: must be ordered"),
            ],
        ),
        (
            "two-problems-succeeded-indexes-and-count.yaml",
            vec![
                s(
                    "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"0,x\": error \
                   parsing succeededIndexes: cannot convert string to integer for index: \"x\"",
                ),
                s(
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less \
                   than or equal to 0 (the number of indexes in the specified succeededIndexes \
                   field)",
                ),
            ],
        ),
        (
            "two-problems-unknown-restart-policy.yaml",
            vec![
                s(
                    "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported \
                   values: \"Always\", \"OnFailure\", \"Never\"",
                ),
                s(
                    "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported \
                   values: \"OnFailure\", \"Never\"",
                ),
            ],
        ),
        (
            "unknown-action.yaml",
            vec![format!(
                "{rule0}.action: Unsupported value: \"Retry\": supported values: \"Count\", \
                 \"FailIndex\", \"FailJob\", \"Ignore\""
            )],
        ),
        (
            "unknown-completion-mode.yaml",
            vec![s(
                "spec.completionMode: Unsupported value: \"Indexd\": supported values: \
                 \"NonIndexed\", \"Indexed\"",
            )],
        ),
        (
            "unknown-container-name.yaml",
            vec![format!(
                "{rule0}.onExitCodes.containerName: Invalid value: \"sidecar\": must be one of the \
                 container or initContainer names in the pod template"
            )],
        ),
        (
            "unknown-operator.yaml",
            vec![format!(
                "{rule0}.onExitCodes.operator: Unsupported value: \"Between\": supported values: \
                 \"In\", \"NotIn\""
            )],
        ),
        (
            "unordered-values.yaml",
            vec![format!(
                "{rule0}.onExitCodes.values: Invalid value: [3,2]: must be ordered"
            )],
        ),
    ]
}

const VALID: [&str; 3] = [
    "valid-indexed-per-index.yaml",
    "valid-non-indexed.yaml",
    "valid-on-failure-no-policy.yaml",
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/failure-policy-invalid")
}

fn job_name(file: &Path) -> String {
    read_job(file)
        .map(|input| input.job)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .metadata
        .name
        .expect("every manifest has a name")
}

/// The API server's aggregate of a list of messages (`errors.NewInvalid`).
fn server_message(name: &str, messages: &[String]) -> String {
    if messages.len() == 1 {
        format!("Job.batch {name:?} is invalid: {}", messages[0])
    } else {
        format!("Job.batch {name:?} is invalid: [{}]", messages.join(", "))
    }
}

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd`; a failing run must say why in words (no Rust debug text).
fn run(cmd: &mut Command) -> Ran {
    let out = cmd.output().unwrap();
    if !out.status.success() {
        support::assert_in_words(
            &format!("{:?}", cmd.get_args().collect::<Vec<_>>()),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `failure-policy check -f FILE -o json ARGS...`: exit code and the parsed report.
fn check(file: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let ran = run(plugin()
        .args(["failure-policy", "check", "-f"])
        .arg(file)
        .args(["-o", "json"])
        .args(args));
    let report: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: check printed no JSON report ({e}); exit {:?}; stdout: {}; stderr: {}",
            file.display(),
            ran.code,
            ran.stdout,
            ran.stderr
        )
    });
    (ran.code, report, ran.stderr)
}

/// `check` with a server-side dry-run on km-b, in namespace `ns`.
fn check_on_cluster(file: &Path, ns: &str) -> (Option<i32>, Value, String) {
    let kubeconfig = kubeconfig_path();
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path");
    check(
        file,
        &["--kubeconfig", kubeconfig, "--context", CONTEXT_B, "-n", ns],
    )
}

/// The report's problems as (path, message) pairs, in order.
fn problems(report: &Value) -> Vec<(String, String)> {
    report["problems"]
        .as_array()
        .expect("problems is a list")
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_data_directory_holds_exactly_the_cases_tested_here() {
    let cases = invalid_cases();
    assert!(cases.len() >= 14, "at least 14 invalid manifests");
    let on_disk: BTreeSet<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = cases
        .iter()
        .map(|(f, _)| f.to_string())
        .chain(VALID.iter().map(|f| f.to_string()))
        .collect();
    assert_eq!(
        on_disk, listed,
        "every file is tested, every tested file exists"
    );
    // One problem each, except the few that are named for their two.
    for (file, expected) in &cases {
        let want = if file.starts_with("two-problems-") {
            2
        } else {
            1
        };
        assert_eq!(expected.len(), want, "{file}");
    }
    // Job names are distinct, so a server answer can never be mistaken for another's.
    let names: BTreeSet<String> = on_disk
        .iter()
        .map(|f| job_name(&data_dir().join(f)))
        .collect();
    assert_eq!(names.len(), on_disk.len(), "distinct Job names");
}

#[test]
fn every_invalid_manifest_is_refused_locally_with_the_servers_messages() {
    for (file, expected) in invalid_cases() {
        let path = data_dir().join(file);
        let name = job_name(&path);

        let (code, report, stderr) = check(&path, &[]);
        assert_eq!(code, Some(1), "{file}: check exits 1; stderr: {stderr}");
        assert_eq!(report["valid"], Value::Bool(false), "{file}");
        assert_eq!(report["job"], Value::String(name.clone()), "{file}");
        let got = problems(&report);
        let messages: Vec<String> = got.iter().map(|(_, m)| m.clone()).collect();
        assert_eq!(
            messages, expected,
            "{file}: problems, in the server's order"
        );
        for (path, message) in &got {
            assert!(
                message.starts_with(&format!("{path}: ")),
                "{file}: a problem's message starts with its path: {message}"
            );
        }
        assert_eq!(
            report["message"].as_str(),
            Some(server_message(&name, &expected).as_str()),
            "{file}: the whole message"
        );
        assert!(
            report.get("server").is_none(),
            "{file}: no server without --context"
        );

        // simulate refuses the same Job, with the same words, as bad input.
        let ran = run(plugin()
            .args(["failure-policy", "simulate", "-f"])
            .arg(&path)
            .args(["--fail", "exit=1"]));
        assert_eq!(
            ran.code,
            Some(2),
            "{file}: simulate exits 2; stderr: {}",
            ran.stderr
        );
        assert!(
            ran.stderr
                .contains(&format!("Job.batch {name:?} is invalid: ")),
            "{file}: simulate names the Job: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains(&server_message(&name, &expected)),
            "{file}: simulate gives the server's message: {}",
            ran.stderr
        );
        assert!(
            ran.stdout.is_empty(),
            "{file}: no timeline for an invalid Job"
        );
    }
}

#[test]
fn the_valid_manifests_pass_locally() {
    for file in VALID {
        let path = data_dir().join(file);
        let (code, report, stderr) = check(&path, &[]);
        assert_eq!(code, Some(0), "{file}: {report}; stderr: {stderr}");
        assert_eq!(report["valid"], Value::Bool(true), "{file}");
        assert_eq!(problems(&report), vec![], "{file}");
        assert!(report.get("message").is_none(), "{file}");
        let indexed = read_job(&path)
            .map(|input| input.job)
            .unwrap()
            .spec
            .unwrap()
            .completion_mode
            .as_deref()
            == Some("Indexed");
        let fail = if indexed { "index=0,exit=1" } else { "exit=1" };
        let ran = run(plugin()
            .args(["failure-policy", "simulate", "-f"])
            .arg(&path)
            .args(["--fail", fail, "-o", "json"]));
        assert_eq!(
            ran.code,
            Some(0),
            "{file}: simulate runs; stderr: {}",
            ran.stderr
        );
    }
}

#[test]
fn an_older_version_reports_backoff_limit_per_index_as_alpha_and_off() {
    let path = data_dir().join("valid-indexed-per-index.yaml");
    let (code, report, _) = check(&path, &["--k8s-version", "1.28"]);
    assert_eq!(code, Some(1), "unsupported at 1.28: exit 1; {report}");
    assert_eq!(report["kubernetesVersion"], "1.28");
    assert_eq!(
        report["valid"],
        Value::Bool(true),
        "valid, but not supported"
    );
    let per_index = report["support"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["feature"]
                .as_str()
                .unwrap()
                .starts_with("backoffLimitPerIndex")
        })
        .expect("backoffLimitPerIndex is in the support list");
    assert_eq!(per_index["used"], Value::Bool(true));
    assert_eq!(per_index["enabled"], Value::Bool(false));
    assert_eq!(per_index["state"], "alpha (off by default)");
    assert!(
        per_index["consequence"]
            .as_str()
            .is_some_and(|c| c.contains("drops the per-index fields")),
        "{per_index}"
    );
    // The verdict says what the exit code says, in JSON and on the first line of the text.
    assert_eq!(report["verdict"], "unsupported", "{report}");
    let text = run(plugin()
        .args(["failure-policy", "check", "-f"])
        .arg(&path)
        .args(["--k8s-version", "1.28"]));
    assert_eq!(text.code, Some(1));
    assert!(
        text.stdout.starts_with("unsupported: Job ")
            && text
                .stdout
                .lines()
                .next()
                .unwrap()
                .contains("off at Kubernetes 1.28"),
        "{}",
        text.stdout
    );
    // The same Job at 1.33, where the feature is GA, is fine.
    let (code, report, _) = check(&path, &["--k8s-version", "1.33"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["verdict"], "valid", "{report}");
}

#[test]
fn a_namespace_missing_on_the_cluster_or_at_odds_with_the_manifest_is_a_usage_error() {
    let path = data_dir().join("valid-indexed-per-index.yaml");
    let kubeconfig = kubeconfig_path();
    let ran = run(plugin()
        .args(["failure-policy", "check", "-f"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--context",
            CONTEXT_B,
            "-n",
            "no-such-namespace-here",
            "-o",
            "json",
        ]));
    assert_eq!(ran.code, Some(2), "stderr: {}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "namespace \"no-such-namespace-here\" does not exist in km-b: the dry run creates the Job there"
        ),
        "{}",
        ran.stderr
    );
    assert!(ran.stdout.is_empty(), "{}", ran.stdout);

    // -n against a manifest that names another namespace, refused before any cluster call.
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("job.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("metadata:", "metadata:\n  namespace: team-a", 1);
    std::fs::write(&elsewhere, text).unwrap();
    for sub in [
        &["check"][..],
        &["simulate", "--fail", "exit=1,index=0"][..],
    ] {
        let ran = run(plugin()
            .arg("failure-policy")
            .args(&sub[..1])
            .arg("-f")
            .arg(&elsewhere)
            .args(&sub[1..])
            .args(["-n", "team-b"]));
        assert_eq!(ran.code, Some(2), "{sub:?}: {}", ran.stderr);
        assert!(
            ran.stderr
                .contains("the namespace of the Job (\"team-a\") does not match -n \"team-b\""),
            "{sub:?}: {}",
            ran.stderr
        );
    }
}

#[test]
fn simulate_takes_the_namespace_from_n_and_its_messages_say_what_is_meant() {
    let path = data_dir().join("valid-indexed-per-index.yaml");
    let simulate = |args: &[&str]| {
        run(plugin()
            .args(["failure-policy", "simulate", "-f"])
            .arg(&path)
            .args(args))
    };
    let ran = simulate(&["--fail", "exit=1,index=0", "-n", "team-b", "-o", "json"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert!(
        report["job"].as_str().unwrap().starts_with("team-b/"),
        "{report}"
    );
    let completions = serde_saphyr::from_str::<Value>(&std::fs::read_to_string(&path).unwrap())
        .unwrap()["spec"]["completions"]
        .as_i64()
        .unwrap();
    let outside = format!("index={completions}");
    let ran = simulate(&["--fail", &format!("exit=1,{outside}")]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains(&format!(
            "index {completions} is outside 0..{}",
            completions - 1
        )),
        "{}",
        ran.stderr
    );
    // A Job without init containers.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.yaml");
    std::fs::write(
        &plain,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: plain}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n",
    )
    .unwrap();
    let ran = run(plugin()
        .args(["failure-policy", "simulate", "-f"])
        .arg(&plain)
        .args(["--fail", "init=setup:5"]));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("the Job has no init containers, so none named \"setup\""),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("(it has: )"), "{}", ran.stderr);
    // The second failure of index 0 comes at once, before the controller re-creates its pod.
    let ran = simulate(&["--fail", "exit=1,index=0", "--fail", "exit=1,index=0"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "warning: outcome 2 at 0s is before its pod can exist: the controller creates it at 10s"
        ),
        "{}",
        ran.stderr
    );
    let ran = simulate(&[
        "--fail",
        "exit=1,index=0",
        "--fail",
        "exit=1,index=0,after=10s",
    ]);
    assert!(!ran.stderr.contains("warning"), "{}", ran.stderr);
}

#[test]
fn usage_errors_and_bad_input_exit_2() {
    let path = data_dir().join("valid-indexed-per-index.yaml");
    // A version the tool does not know.
    let ran = run(plugin()
        .args(["failure-policy", "check", "-f"])
        .arg(&path)
        .args(["--k8s-version", "1.20"]));
    assert_eq!(ran.code, Some(2), "stderr: {}", ran.stderr);
    assert!(ran.stderr.contains("1.20"), "{}", ran.stderr);
    assert!(ran.stdout.is_empty());

    // A file that is not a Job, named in the message.
    let dir = tempfile::tempdir().unwrap();
    let not_a_job = dir.path().join("configmap.yaml");
    std::fs::write(
        &not_a_job,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n",
    )
    .unwrap();
    for (sub, extra) in [("check", &[][..]), ("simulate", &["--fail", "exit=1"][..])] {
        let ran = run(plugin()
            .args(["failure-policy", sub, "-f"])
            .arg(&not_a_job)
            .args(extra));
        assert_eq!(ran.code, Some(2), "{sub}: stderr: {}", ran.stderr);
        assert!(
            ran.stderr.contains(&not_a_job.display().to_string()),
            "{sub}: names the file: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("not a batch/v1 Job"),
            "{sub}: {}",
            ran.stderr
        );
        assert!(ran.stdout.is_empty());
    }

    // A file that does not exist.
    let missing = dir.path().join("missing.yaml");
    let ran = run(plugin()
        .args(["failure-policy", "check", "-f"])
        .arg(&missing));
    assert_eq!(ran.code, Some(2), "stderr: {}", ran.stderr);
    assert!(ran.stderr.contains("missing.yaml"), "{}", ran.stderr);
}

/// The real judge: a server-side dry-run create of each manifest on km-b.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_rejects_each_invalid_manifest_with_the_same_messages() {
    let client = client(CONTEXT_B).await;
    let ns = TestNamespace::create(&client, CONTEXT_B, "fp-check").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns.name);
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };

    for (file, expected) in invalid_cases() {
        let path = data_dir().join(file);
        let job = read_job(&path).unwrap().job;
        let name = job.metadata.name.clone().unwrap();
        let status = match jobs.create(&dry_run, &job).await {
            Ok(_) => panic!("{file}: the API server accepted the Job"),
            Err(kube::Error::Api(s)) => s,
            Err(e) => panic!("{file}: {e}"),
        };
        assert_eq!(status.code, 422, "{file}: {status:?}");
        assert_eq!(status.reason, "Invalid", "{file}");
        let causes: Vec<(String, String)> = status
            .details
            .as_ref()
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| (c.field.clone(), format!("{}: {}", c.field, c.message)))
                    .collect()
            })
            .unwrap_or_default();

        // Ours, from the binary exactly as a user runs it.
        let (code, report, stderr) = tokio::task::spawn_blocking({
            let path = path.clone();
            move || check(&path, &[])
        })
        .await
        .unwrap();
        assert_eq!(code, Some(1), "{file}: stderr: {stderr}");
        let ours = problems(&report);
        assert_eq!(
            ours, causes,
            "{file}: our problems (path, message) equal the server's causes, in order"
        );
        let ours_set: BTreeSet<&String> = ours.iter().map(|(_, m)| m).collect();
        let server_set: BTreeSet<&String> = causes.iter().map(|(_, m)| m).collect();
        assert_eq!(ours_set, server_set, "{file}: the same set of messages");
        assert_eq!(
            report["message"].as_str(),
            Some(status.message.as_str()),
            "{file}: the whole message equals the server's status.message"
        );
        // And the table above says what the server says.
        let server_messages: Vec<String> = causes.iter().map(|(_, m)| m.clone()).collect();
        assert_eq!(
            server_messages, expected,
            "{file}: the expected table is the server's"
        );
        assert_eq!(status.message, server_message(&name, &expected), "{file}");

        // check --context does the same dry-run and reports the rejection.
        let (code, report, stderr) = tokio::task::spawn_blocking({
            let path = path.clone();
            let ns = ns.name.clone();
            move || check_on_cluster(&path, &ns)
        })
        .await
        .unwrap();
        assert_eq!(code, Some(1), "{file}: stderr: {stderr}");
        assert_eq!(report["kubernetesVersion"], "1.36", "{file}");
        let server = &report["server"];
        assert_eq!(server["context"], CONTEXT_B, "{file}: {report}");
        assert_eq!(server["accepted"], Value::Bool(false), "{file}: {report}");
        assert_eq!(
            server["message"].as_str(),
            Some(status.message.as_str()),
            "{file}: the server's own words"
        );
        assert_eq!(
            report["message"], server["message"],
            "{file}: ours and the server's, side by side, are equal"
        );
    }

    for file in VALID {
        let path = data_dir().join(file);
        let job = read_job(&path).unwrap().job;
        if let Err(e) = jobs.create(&dry_run, &job).await {
            panic!("{file}: the API server rejected a valid Job: {e}");
        }
        let (code, report, stderr) = tokio::task::spawn_blocking({
            let path = path.clone();
            let ns = ns.name.clone();
            move || check_on_cluster(&path, &ns)
        })
        .await
        .unwrap();
        assert_eq!(code, Some(0), "{file}: {report}; stderr: {stderr}");
        assert_eq!(report["valid"], Value::Bool(true), "{file}");
        assert_eq!(
            report["server"]["accepted"],
            Value::Bool(true),
            "{file}: {report}"
        );
        assert!(
            report["server"].get("message").is_none(),
            "{file}: {report}"
        );
    }
    // Dry runs leave nothing behind.
    let left = jobs.list(&Default::default()).await.unwrap();
    assert!(left.items.is_empty(), "a dry-run created a Job");
}

#[test]
fn simulate_with_two_contexts_takes_each_clusters_version() {
    let path = data_dir().join("valid-indexed-per-index.yaml");
    let kubeconfig = kubeconfig_path();
    let ran = run(plugin()
        .args(["failure-policy", "simulate", "-f"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--context", CONTEXT_B, "--context", "km-c"])
        .args(["--fail", "exit=1,index=0", "-o", "json"]));
    assert_eq!(ran.code, Some(0), "the same version: {}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    let minor = report["simulations"][0]["kubernetesVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        report["labels"],
        serde_json::json!([format!("{CONTEXT_B} ({minor})"), format!("km-c ({minor})")])
    );
    assert_eq!(report["differences"], serde_json::json!([]));
    // Three are refused: two at a time.
    let ran = run(plugin()
        .args(["failure-policy", "simulate", "-f"])
        .arg(&path)
        .args([
            "--k8s-version",
            "1.30",
            "--k8s-version",
            "1.33",
            "--k8s-version",
            "1.36",
        ])
        .args(["--fail", "exit=1,index=0"]));
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("simulate compares two at a time"),
        "{}",
        ran.stderr
    );
}

/// A Job of the same name in the namespace does not change the verdict: the server judges the
/// object before it looks for the name, so the dry-run of a valid Job is accepted, with a note
/// that creating it needs the name free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_the_same_name_in_the_namespace_does_not_change_the_verdict() {
    let client = client(CONTEXT_B).await;
    let ns = TestNamespace::create(&client, CONTEXT_B, "fp-taken").await;
    let path = data_dir().join(VALID[0]);
    let job = read_job(&path).unwrap().job;
    Api::<Job>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let ns_name = ns.name.clone();
    let (code, report, stderr) =
        tokio::task::spawn_blocking(move || check_on_cluster(&path, &ns_name))
            .await
            .unwrap();
    assert_eq!(code, Some(0), "{report}; stderr: {stderr}");
    let text = report.to_string();
    assert!(
        text.contains("\"accepted\":true") && text.contains("exists in"),
        "{report}"
    );
}

/// The same judge at the older pinned version (1.30): for every manifest of the data directory,
/// `check --k8s-version` of that version says what that server's dry run says: the same
/// problems, in order and word for word, or none when it accepts the Job (it drops the fields
/// of features that are off there, such as successPolicy and managedBy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_api_server_agrees_with_check_at_its_version() {
    api_server_agrees_with_check_at_its_version(OtherVersion::Older).await;
}

/// The same at the middle pinned version (1.33), whose server has successPolicy and managedBy
/// but still prints an `[]int32` in Go syntax.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_of_the_middle_version_agrees_with_check_at_its_version() {
    api_server_agrees_with_check_at_its_version(OtherVersion::Middle).await;
}

async fn api_server_agrees_with_check_at_its_version(at: OtherVersion) {
    let client = at.client().await;
    let version = client.apiserver_version().await.unwrap();
    let minor = format!("1.{}", version.minor);
    let ns = TestNamespace::create(&client, at.context(), "fp-check-other").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns.name);
    let files: Vec<&str> = invalid_cases()
        .into_iter()
        .map(|(f, _)| f)
        .chain(VALID.iter().copied())
        .collect();
    let mut disagree = Vec::new();
    for file in &files {
        let path = data_dir().join(file);
        let job = read_job(&path).unwrap().job;
        let causes = dry_run_causes(&jobs, &job, file).await;
        let (code, report, stderr) = tokio::task::spawn_blocking({
            let minor = minor.clone();
            move || check(&path, &["--k8s-version", &minor])
        })
        .await
        .unwrap();
        assert_eq!(report["kubernetesVersion"], minor.as_str(), "{file}");
        // Accepted by the server: not invalid (it may still be `unsupported`, exit 1, when
        // the Job uses a feature the server drops).
        if causes.is_empty() && report["verdict"] == "invalid" {
            disagree.push(format!(
                "{file}: accepted by the server, invalid for check (exit {code:?}): {stderr}"
            ));
        }
        let ours = problems(&report);
        if ours != causes {
            disagree.push(format!("{file}:\n  check:  {ours:?}\n  server: {causes:?}"));
        }
    }
    assert!(
        disagree.is_empty(),
        "check --k8s-version {minor} disagrees with the {minor} API server on {} of {} manifests:\n{}",
        disagree.len(),
        files.len(),
        disagree.join("\n")
    );
}

/// The causes (field, message) of the server's dry-run create of `job`: none when it accepts
/// it. `what` names the Job in a failure.
async fn dry_run_causes(jobs: &Api<Job>, job: &Job, what: &str) -> Vec<(String, String)> {
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match jobs.create(&dry_run, job).await {
        Ok(_) => Vec::new(),
        Err(kube::Error::Api(s)) if s.code == 422 => s
            .details
            .iter()
            .flat_map(|d| &d.causes)
            .map(|c| {
                let message = without_addresses(&c.message);
                (c.field.clone(), format!("{}: {message}", c.field))
            })
            .collect(),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// `message` with the addresses of Go pointers (`(*int32)(0xc000a1b2c0)`, up to 1.33) said as
/// check says them: `(0x…)`. They are the server's memory, the same for no two requests.
fn without_addresses(message: &str) -> String {
    regex::Regex::new(r"\(0x[0-9a-f]+\)")
        .unwrap()
        .replace_all(message, "(0x…)")
        .into_owned()
}

/// Generated Jobs for the container part of the pod template's validation: no containers, names
/// empty, not DNS labels, too long or used twice (between containers and init containers too),
/// images unset, empty or blank, and a rule naming a container that may not be there. A fixed
/// seed, so that a disagreement is reproduced by the next run.
fn generated_jobs(count: usize) -> Vec<Job> {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    // Mostly good values, so that one Job has few problems and some have none.
    let name = prop_oneof![
        6 => prop::sample::select(vec!["main", "sidecar", "setup", "worker"]).prop_map(str::to_string),
        1 => prop::sample::select(vec![
            String::new(),
            "Main".to_string(),
            "side_car".to_string(),
            "-main".to_string(),
            "c".repeat(64),
        ]),
    ];
    let image = prop_oneof![
        6 => Just(Some("busybox")),
        1 => prop::sample::select(vec![None, Some(""), Some(" "), Some("registry.example/app:1")]),
    ];
    let container = (name, image).prop_map(|(name, image)| {
        let mut c = serde_json::json!({ "name": name });
        if let Some(image) = image {
            c["image"] = image.into();
        }
        c
    });
    let containers = prop_oneof![
        8 => prop::collection::vec(container.clone(), 1..3),
        1 => Just(Vec::new()),
    ];
    let init = prop::collection::vec(container, 0..2);
    let rule_container = prop::option::of(prop::sample::select(vec!["main", "sidecar", "setup"]));
    let strategy = (containers, init, rule_container);
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    (0..count)
        .map(|i| {
            let (containers, init, rule_container) =
                strategy.new_tree(&mut runner).unwrap().current();
            let mut pod = serde_json::json!({ "restartPolicy": "Never", "containers": containers });
            if !init.is_empty() {
                pod["initContainers"] = init.into();
            }
            let mut spec = serde_json::json!({ "backoffLimit": 2, "template": { "spec": pod } });
            if let Some(c) = rule_container {
                spec["podFailurePolicy"] = serde_json::json!({ "rules": [{
                    "action": "FailJob",
                    "onExitCodes": { "containerName": c, "operator": "In", "values": [42] }
                }]});
            }
            serde_json::from_value(serde_json::json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": { "name": format!("generated-{i}") },
                "spec": spec,
            }))
            .unwrap()
        })
        .collect()
}

/// check at the server's version against the server's dry run, for the generated Jobs: the same
/// problems in the same order, word for word, or none.
async fn generated_jobs_agree_with_the_dry_run(client: kube::Client, context: &str) {
    use kubectl_migrate::failure_policy::{check::validate_at, engine::Semantics};
    let minor: u32 = client
        .apiserver_version()
        .await
        .unwrap()
        .minor
        .parse()
        .unwrap();
    let ns = TestNamespace::create(&client, context, "fp-generated").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns.name);
    let generated = generated_jobs(60);
    let mut disagree = Vec::new();
    let mut rejected = 0;
    for job in &generated {
        let causes = dry_run_causes(&jobs, job, &serde_json::to_string(job).unwrap()).await;
        rejected += usize::from(!causes.is_empty());
        let ours: Vec<(String, String)> = validate_at(job, &Semantics::for_minor(minor).unwrap())
            .into_iter()
            .map(|p| (p.path, p.message))
            .collect();
        if ours != causes {
            disagree.push(format!(
                "{}:\n  check:  {ours:?}\n  server: {causes:?}",
                serde_json::to_string(&job.spec).unwrap()
            ));
        }
    }
    assert!(
        disagree.is_empty(),
        "check at 1.{minor} disagrees with the 1.{minor} API server on {} of {} generated Jobs:\n{}",
        disagree.len(),
        generated.len(),
        disagree.join("\n")
    );
    // The generator is worth something only if it makes both kinds.
    assert!(
        rejected > 10 && rejected < generated.len() - 10,
        "{rejected} of {} generated Jobs rejected",
        generated.len()
    );
}

/// Issue 32, item 5: the pod template's containers are validated as the 1.36 server does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_pod_templates_agree_with_the_api_server() {
    generated_jobs_agree_with_the_dry_run(client(CONTEXT_B).await, CONTEXT_B).await;
}

/// The same at the other pinned versions (1.30, 1.33).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_pod_templates_agree_with_the_older_api_server() {
    let at = OtherVersion::Older;
    generated_jobs_agree_with_the_dry_run(at.client().await, at.context()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_pod_templates_agree_with_the_api_server_of_the_middle_version() {
    let at = OtherVersion::Middle;
    generated_jobs_agree_with_the_dry_run(at.client().await, at.context()).await;
}
