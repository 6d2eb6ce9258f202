//! `failure-policy simulate --scenario`: a scenario file is read whole before anything runs,
//! and what it cannot model is refused with the file, the line and the field (issue 32, item 4).
use assert_cmd::Command;

fn simulate(job: &str, scenario: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let job_path = dir.path().join("job.yaml");
    let scenario_path = dir.path().join("outcomes.yaml");
    std::fs::write(&job_path, job).unwrap();
    std::fs::write(&scenario_path, scenario).unwrap();
    Command::cargo_bin("kubectl-migrate")
        .unwrap()
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["failure-policy", "simulate", "-f"])
        .arg(&job_path)
        .arg("--scenario")
        .arg(&scenario_path)
        .output()
        .unwrap()
}

const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: app:1}]\n";

#[test]
fn a_field_it_cannot_model_is_refused_with_its_file_and_line() {
    let out = simulate(
        JOB,
        "outcomes:\n- fail:\n    exitCodes: {main: 1}\n- fail:\n    conditions:\n    - {type: DisruptionTarget, status: Maybe}\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "bad input: {stderr}");
    assert!(out.stdout.is_empty(), "nothing is simulated");
    assert!(
        stderr.contains("outcomes.yaml: not a scenario: line 6 ")
            && stderr.contains("condition status \"Maybe\": it is True, False or Unknown"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        1,
        "one line, no quoted source: {stderr}"
    );
}

#[test]
fn a_deleted_pod_is_simulated_from_a_file() {
    let out = simulate(
        JOB,
        "outcomes:\n- delete: {}\n- after: 15s\n  succeed: {}\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("deleted"), "{stdout}");
}
