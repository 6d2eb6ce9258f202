//! The shared cluster-connection layer against the real local clusters: contexts from a merged
//! KUBECONFIG or separate files, exec credential plugins, missing contexts and dead servers.
mod support;

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use support::{CONTEXT_A, CONTEXT_B};

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    cmd
}

fn server_version(output: &std::process::Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    report["server"].clone()
}

#[test]
fn version_reports_the_pinned_server_version_for_each_context() {
    let kubeconfig = support::kubeconfig_path();
    for context in [CONTEXT_A, CONTEXT_B] {
        let output = plugin()
            .args(["version", "-o", "json", "--context", context])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .output()
            .unwrap();
        let server = server_version(&output);
        assert_eq!(server["gitVersion"], support::pinned_kubernetes_version());
        assert_eq!(server["context"], context);
    }
}

#[test]
fn contexts_come_from_a_merged_kubeconfig_list() {
    let merged = std::env::join_paths([
        support::single_cluster_kubeconfig("a"),
        support::single_cluster_kubeconfig("b"),
    ])
    .unwrap();
    let output = plugin()
        .env("KUBECONFIG", merged)
        .args(["version", "-o", "json", "--context", CONTEXT_B])
        .output()
        .unwrap();
    assert_eq!(server_version(&output)["context"], CONTEXT_B);
    // Without --context the first file's current-context wins, as kubectl does.
    let merged = std::env::join_paths([
        support::single_cluster_kubeconfig("b"),
        support::single_cluster_kubeconfig("a"),
    ])
    .unwrap();
    let output = plugin()
        .env("KUBECONFIG", merged)
        .args(["version", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(server_version(&output)["context"], CONTEXT_B);
}

#[test]
fn a_missing_context_is_an_error_that_lists_the_available_ones() {
    let output = plugin()
        .args(["version", "--context", "prod"])
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("context \"prod\" not found"), "{stderr}");
    assert!(
        stderr.contains("available contexts: km-a, km-b"),
        "{stderr}"
    );
    // The client's version is still shown, as by kubectl version.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("COMPONENT"), "{stdout}");
    assert!(!stdout.contains("server "), "{stdout}");
}

#[test]
fn a_kubeconfig_list_skips_files_that_do_not_exist_as_kubectl_does() {
    let dir = tempfile::tempdir().unwrap();
    let list = std::env::join_paths([
        dir.path().join("missing-first"),
        support::single_cluster_kubeconfig("b"),
        dir.path().join("missing-last"),
    ])
    .unwrap();
    let output = plugin()
        .env("KUBECONFIG", list)
        .args(["version", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(server_version(&output)["context"], CONTEXT_B);
}

#[test]
fn v6_logs_every_request_as_kubectl_does() {
    let output = plugin()
        .args(["version", "--context", CONTEXT_A, "-v=6"])
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path())
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("GET https://") && l.contains("/version 200 OK in "))
        .unwrap_or_else(|| panic!("no request line: {stderr}"));
    assert!(line.ends_with(" milliseconds"), "{line}");
    // Without -v=6, no request lines.
    let quiet = plugin()
        .args(["version", "--context", CONTEXT_A, "-vv"])
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(!stderr.contains("GET https://"), "{stderr}");
    assert!(stderr.contains("connecting to context km-a"), "{stderr}");
}

/// The admin client certificate and key embedded by start.sh, as PEM text.
fn admin_credentials() -> (String, String) {
    let text = std::fs::read_to_string(support::single_cluster_kubeconfig("a")).unwrap();
    let field = |name: &str| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} in kubeconfig"));
        let b64 = line.split_once(':').unwrap().1.trim();
        let out = std::process::Command::new("base64")
            .arg("-d")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().unwrap().write_all(b64.as_bytes())?;
                child.wait_with_output()
            });
        String::from_utf8(out.unwrap().stdout).unwrap()
    };
    (field("client-certificate-data:"), field("client-key-data:"))
}

#[test]
fn exec_credential_plugins_are_run_for_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = admin_credentials();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
        "status": {"clientCertificateData": cert, "clientKeyData": key}
    });
    std::fs::write(dir.path().join("credential.json"), credential.to_string()).unwrap();
    let marker = dir.path().join("plugin-ran");
    let script = dir.path().join("credential-plugin.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntouch '{}'\ncat '{}'\n",
            marker.display(),
            dir.path().join("credential.json").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let original = std::fs::read_to_string(support::single_cluster_kubeconfig("a")).unwrap();
    let server = original
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap();
    let ca = original
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .unwrap();
    let kubeconfig = dir.path().join("exec-kubeconfig");
    std::fs::write(&kubeconfig, format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: exec\nclusters:\n- name: a\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n\
         contexts:\n- name: exec\n  context: {{cluster: a, user: exec-user}}\nusers:\n- name: exec-user\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        script.display()
    )).unwrap();

    let output = plugin()
        .args(["version", "-o", "json"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert_eq!(
        server_version(&output)["gitVersion"],
        support::pinned_kubernetes_version()
    );
    assert!(marker.exists(), "the exec plugin was not run");
}

fn kubeconfig_for_server(dir: &Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(&path, format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\nclusters:\n- name: dead\n  cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}\n\
         contexts:\n- name: dead\n  context: {{cluster: dead, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
    )).unwrap();
    path
}

#[test]
fn a_server_that_never_answers_fails_within_the_request_timeout() {
    // Accepts TCP connections and then says nothing, like a black-holed load balancer.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let _hold = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(8) {
            held.push(stream);
        }
        std::thread::sleep(Duration::from_secs(60));
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_for_server(dir.path(), &format!("https://{addr}"));
    let started = Instant::now();
    let output = plugin()
        .args(["version", "--request-timeout", "2s"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("did not answer within 2s (--request-timeout)"),
        "{stderr}"
    );
    assert!(
        elapsed < Duration::from_secs(15),
        "gave up only after {elapsed:?}"
    );
}

#[test]
fn a_refused_connection_names_the_context_and_the_reason() {
    // Bind and drop to get a port that nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_for_server(dir.path(), &format!("https://127.0.0.1:{port}"));
    let output = plugin()
        .args(["version"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cluster \"dead\""), "{stderr}");
    assert!(
        stderr.to_lowercase().contains("connection refused"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("client      {}", env!("CARGO_PKG_VERSION"))),
        "the client's version, whatever the server: {stdout}"
    );
}
