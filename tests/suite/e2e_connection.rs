//! The shared cluster-connection layer against the real local clusters: contexts from a merged
//! KUBECONFIG or separate files, exec credential plugins, missing contexts and dead servers, and
//! every failure on the way to a cluster said in kubectl's words, never in Rust debug text.
use crate::support;

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
    support::assert_in_words("version --context prod", &stderr);
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

/// The server of `cluster` and its CA (base64 PEM), from the kubeconfig start.sh wrote for it.
fn endpoint(cluster: &str) -> (String, String) {
    let text = std::fs::read_to_string(support::single_cluster_kubeconfig(cluster)).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in the kubeconfig of {cluster}"))
            .trim()
            .to_string()
    };
    (field("server:"), field("certificate-authority-data:"))
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

    let (server, ca) = endpoint("a");
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
    support::assert_in_words("version against a silent server", &stderr);
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
    // The reason, as kubectl says it.
    assert!(
        stderr.contains(&format!(
            "The connection to the server 127.0.0.1:{port} was refused - did you specify the right host or port?"
        )),
        "{stderr}"
    );
    support::assert_in_words("version against a closed port", &stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("client      {}", env!("CARGO_PKG_VERSION"))),
        "the client's version, whatever the server: {stdout}"
    );
}

/// A port on 127.0.0.1 that nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server that accepts connections and never says a word, like a black-holed load
/// balancer; it lives as long as the test process.
fn silent_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    addr
}

/// A web server that is no Kubernetes API server: it answers every request with an HTML page
/// "404 Not Found", in plain HTTP; it lives as long as the test process.
fn web_server() -> std::net::SocketAddr {
    use std::io::Read;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let page = "<!DOCTYPE html>\n<html><body><h1>Not Found</h1></body></html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    addr
}

/// A token of a new ServiceAccount `nobody` in `namespace` that no RBAC rule names, from the
/// TokenRequest API.
async fn token_without_rbac(admin: &kube::Client, namespace: &str) -> String {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::{Api, PostParams};
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let account = serde_json::from_value(serde_json::json!({"metadata": {"name": "nobody"}}));
    accounts
        .create(&PostParams::default(), &account.unwrap())
        .await
        .expect("create ServiceAccount nobody");
    let request: TokenRequest =
        serde_json::from_value(serde_json::json!({"spec": {"expirationSeconds": 600}})).unwrap();
    let granted = accounts
        .create_token_request("nobody", &PostParams::default(), &request)
        .await
        .expect("a token for nobody");
    granted
        .status
        .and_then(|s| s.token)
        .expect("the token request's token")
}

/// A kubeconfig with a context per way, `(context, its cluster's YAML, its user's YAML)`, each
/// with a cluster and a user of its own and namespace `ns`.
fn kubeconfig_of(path: &Path, ns: &str, ways: &[(&str, String, String)]) {
    let mut clusters = String::new();
    let mut contexts = String::new();
    let mut users = String::new();
    for (name, cluster, user) in ways {
        clusters += &format!("- name: {name}\n  cluster:\n    {cluster}\n");
        contexts += &format!(
            "- name: {name}\n  context: {{cluster: {name}, user: {name}, namespace: {ns}}}\n"
        );
        users += &format!("- name: {name}\n  user:\n    {user}\n");
    }
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n{clusters}contexts:\n{contexts}users:\n{users}"
        ),
    )
    .unwrap();
}

/// Every way a command can fail on its way to a cluster (refused by RBAC, not logged in, a
/// closed port, a silent server, a CA that does not match, a port that speaks no TLS, a web
/// server that is no API server, a credential plugin that fails, a CA file that is missing, an
/// unknown context, an object that does not exist), for each
/// command family: said in kubectl's words with the context named, the next command where the
/// user can fix it, each family's exit code, and no Rust debug text anywhere on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_on_the_way_to_a_cluster_is_said_in_words() {
    let admin = support::client(CONTEXT_A).await;
    let ns = support::TestNamespace::create(&admin, CONTEXT_A, "words").await;
    let token = token_without_rbac(&admin, &ns.name).await;
    let (server, ca) = endpoint("a");
    let refused = closed_port();
    let silent = silent_server();
    let web = web_server();

    let dir = tempfile::tempdir().unwrap();
    // A CA of its own, which did not sign the API server's certificate.
    let other_ca = dir.path().join("other-ca.crt");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=not-the-clusters-ca", "-keyout"])
        .arg(dir.path().join("other-ca.key"))
        .arg("-out")
        .arg(&other_ca)
        .output()
        .expect("openssl (scripts/test.sh checks that it is installed)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let plugin_script = dir.path().join("credential-plugin.sh");
    std::fs::write(
        &plugin_script,
        "#!/bin/sh\necho 'your session has expired; log in again' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &plugin_script,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let trusted = format!("server: {server}\n    certificate-authority-data: {ca}");
    let bearer = format!("token: {token}");
    let insecure =
        |address: String| format!("server: {address}\n    insecure-skip-tls-verify: true");
    let ways = [
        ("nobody", trusted.clone(), bearer.clone()),
        ("stranger", trusted.clone(), "token: not-a-token".into()),
        (
            "dead",
            format!("server: https://127.0.0.1:{refused}"),
            bearer.clone(),
        ),
        (
            "silent",
            insecure(format!("https://{silent}")),
            bearer.clone(),
        ),
        (
            "not-tls",
            insecure(format!("https://{web}")),
            bearer.clone(),
        ),
        (
            "not-kubernetes",
            format!("server: http://{web}"),
            bearer.clone(),
        ),
        (
            "other-ca",
            format!(
                "server: {server}\n    certificate-authority: {}",
                other_ca.display()
            ),
            bearer.clone(),
        ),
        (
            "no-ca-file",
            format!(
                "server: {server}\n    certificate-authority: {}",
                dir.path().join("missing-ca.crt").display()
            ),
            bearer.clone(),
        ),
        (
            "plugin-fails",
            trusted.clone(),
            format!(
                "exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never",
                plugin_script.display()
            ),
        ),
    ];
    let kubeconfig = dir.path().join("kubeconfig");
    kubeconfig_of(&kubeconfig, &ns.name, &ways);
    let kc = kubeconfig.display().to_string();
    let admin_kc = support::kubeconfig_path().display().to_string();
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n",
    )
    .unwrap();
    let job = job.display().to_string();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/schema/widgets-a.yaml")
        .display()
        .to_string();

    let forbidden = |resource: &str| {
        format!(
            "Error from server (Forbidden): {resource} is forbidden: User \"system:serviceaccount:{}:nobody\" cannot",
            ns.name
        )
    };
    let can_i = format!(
        "to see what context \"nobody\" may do: kubectl auth can-i --list --kubeconfig {kc} --context nobody"
    );
    let refused_words = format!(
        "The connection to the server 127.0.0.1:{refused} was refused - did you specify the right host or port? \
         Check the server of context \"dead\" with kubectl config view --minify --kubeconfig {kc} --context dead"
    );
    let untrusted = "Unable to connect to the server: the server's certificate is signed by an authority the kubeconfig does not trust; \
        check the server and the certificate authority of context \"other-ca\" with kubectl config view --minify";
    let unauthorized = format!(
        "You must be logged in to the server (Unauthorized); renew the credentials of context \"stranger\", then check them with kubectl auth whoami --kubeconfig {kc} --context stranger"
    );
    let timed_out = format!(
        "cluster \"silent\" (https://{silent}) did not answer within 2s (--request-timeout); check that it is up, or give it longer with --request-timeout"
    );
    let plugin_failed = format!(
        "cluster \"plugin-fails\" ({server}): Unable to connect to the server: cannot get credentials: \
         the exec credential plugin exited with code 1: your session has expired; log in again"
    );
    let missing_ca = format!(
        "cannot read the certificate authority file {}/missing-ca.crt",
        dir.path().display()
    );
    let unknown = "context \"prod\" not found";

    // (arguments, exit code, what stderr says)
    let sts = |context: &str| -> Vec<String> {
        [
            "statefulset",
            "web",
            "--context",
            context,
            "--to-kubeconfig",
            &admin_kc,
            "--to-context",
            CONTEXT_B,
            "--dry-run",
        ]
        .map(String::from)
        .to_vec()
    };
    let words = |w: &[&str]| -> Vec<String> { w.iter().map(|s| s.to_string()).collect() };
    let cases: Vec<(Vec<String>, i32, Vec<String>)> = vec![
        // version
        (
            words(&["version", "--context", "stranger"]),
            1,
            vec![unauthorized.clone()],
        ),
        (
            words(&["version", "--context", "dead"]),
            1,
            vec![refused_words.clone()],
        ),
        (
            words(&["version", "--context", "silent", "--request-timeout", "2s"]),
            1,
            vec![timed_out.clone()],
        ),
        (
            words(&["version", "--context", "not-tls"]),
            1,
            vec![format!(
                "cluster \"not-tls\" (https://{web}): cannot reach the API server: Unable to connect to the server: \
                 the server does not speak TLS (is its address http://, or the port of another service?)"
            )],
        ),
        (
            words(&[
                "failure-policy",
                "explain",
                "train",
                "--context",
                "not-kubernetes",
            ]),
            1,
            vec![format!(
                "cluster \"not-kubernetes\" (http://{web}): read the server's version: Error from server (NotFound): \
                 the server answered 404 Not Found with a page that is no Kubernetes answer (is this the API server's address?)"
            )],
        ),
        (
            words(&["version", "--context", "other-ca"]),
            1,
            vec![untrusted.into()],
        ),
        (
            words(&["version", "--context", "plugin-fails"]),
            1,
            vec![plugin_failed],
        ),
        (
            words(&["version", "--context", "no-ca-file"]),
            1,
            vec![missing_ca.clone()],
        ),
        (
            words(&["version", "--context", "prod"]),
            1,
            vec![unknown.into()],
        ),
        // failure-policy
        (
            words(&["failure-policy", "explain", "train", "--context", "nobody"]),
            1,
            vec![
                format!("cluster \"nobody\" ({server}): get Job {}/train: ", ns.name),
                forbidden("jobs.batch \"train\""),
                can_i.clone(),
            ],
        ),
        (
            words(&["failure-policy", "check", "-f", &job, "--context", "nobody"]),
            1,
            vec![forbidden("jobs.batch"), can_i.clone()],
        ),
        (
            words(&[
                "failure-policy",
                "explain",
                "train",
                "--context",
                "stranger",
            ]),
            1,
            vec![unauthorized.clone()],
        ),
        (
            words(&["failure-policy", "explain", "train", "--context", "dead"]),
            1,
            vec![refused_words.clone()],
        ),
        (
            words(&[
                "failure-policy",
                "explain",
                "no-such-job",
                "-n",
                &ns.name,
                "--kubeconfig",
                &admin_kc,
                "--context",
                CONTEXT_A,
            ]),
            2,
            vec![format!(
                "Job \"no-such-job\" not found in namespace \"{}\" of km-a",
                ns.name
            )],
        ),
        (
            words(&["failure-policy", "explain", "train", "--context", "prod"]),
            1,
            vec![unknown.into()],
        ),
        // schema-diff: every error exits 2 or more, as kubectl diff's
        (
            words(&["schema-diff", "--context", "nobody", "-f", &crds]),
            2,
            vec![
                format!("cluster \"nobody\" ({server}): list CustomResourceDefinitions: "),
                forbidden("customresourcedefinitions.apiextensions.k8s.io"),
                can_i.clone(),
            ],
        ),
        (
            words(&["schema-diff", "--context", "dead", "-f", &crds]),
            2,
            vec![refused_words.clone()],
        ),
        (
            words(&[
                "schema-diff",
                "--context",
                "silent",
                "-f",
                &crds,
                "--request-timeout",
                "2s",
            ]),
            2,
            vec![timed_out.clone()],
        ),
        (
            words(&["schema-diff", "--context", "other-ca", "-f", &crds]),
            2,
            vec![untrusted.into()],
        ),
        (
            words(&["schema-diff", "--context", "prod", "-f", &crds]),
            2,
            vec![unknown.into()],
        ),
        (
            words(&[
                "schema-diff",
                "--kubeconfig",
                &admin_kc,
                "--context",
                CONTEXT_A,
                "--context",
                CONTEXT_B,
                "--builtin",
                "apps/v1/nosuch",
            ]),
            2,
            vec!["no source serves apps/v1/nosuch".into()],
        ),
        // statefulset
        // (preflight asks the server what the user may do, and says so in its own words)
        (
            sts("nobody"),
            4,
            vec![format!(
                "nobody denies: get statefulsets.apps in namespace {}",
                ns.name
            )],
        ),
        (
            sts("dead"),
            4,
            vec![format!("source: cluster \"dead\""), refused_words.clone()],
        ),
        (sts("stranger"), 4, vec![unauthorized.clone()]),
        (sts("prod"), 1, vec![format!("source: {unknown}")]),
        (
            words(&[
                "statefulset",
                "nosuch",
                "--kubeconfig",
                &admin_kc,
                "--context",
                CONTEXT_A,
                "--to-context",
                CONTEXT_B,
                "--dry-run",
            ]),
            4,
            vec!["StatefulSet nosuch not found in namespace default of km-a".into()],
        ),
    ];

    let mut failed = Vec::new();
    for (args, code, needles) in &cases {
        let output = plugin()
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let what = format!("kubectl migrate {}", args.join(" "));
        eprintln!("--- {what}: exit {:?}\n{stderr}", output.status.code());
        if output.status.code() != Some(*code) {
            failed.push(format!(
                "{what}: exit {:?}, not {code}",
                output.status.code()
            ));
        }
        for needle in needles {
            if !stderr.contains(needle.as_str()) {
                failed.push(format!("{what}: {needle:?} missing"));
            }
        }
        let debug = support::debug_text(&stderr);
        if !debug.is_empty() {
            failed.push(format!("{what}: Rust debug text {debug:?}"));
        }
    }
    assert!(failed.is_empty(), "\n{}", failed.join("\n"));
}

/// The check for debug text finds what kube and hyper print, as this crate printed it before.
#[test]
fn the_debug_text_check_sees_what_it_looks_for() {
    for seen in [
        "cannot reach the API server: ServiceError: client error (Connect): tcp connect error",
        "ApiError: pods is forbidden: Forbidden (Status { status: Some(Failure), code: 403 })",
        "failed to read kubeconfig from '\"/x\"': No such file",
        "Output { status: ExitStatus(unix_wait_status(256)), stdout: [] }",
    ] {
        assert!(!support::debug_text(seen).is_empty(), "{seen}");
    }
    assert!(
        support::debug_text(
            "Error from server (Forbidden): pods is forbidden: User \"u\" cannot list resource \"pods\" in API group \"\""
        )
        .is_empty()
    );
}

/// Every request names the tool and its build in the User-Agent, as kubectl does
/// (`kubectl-migrate/vVERSION (os/arch) COMMIT`), so that audit logs attribute it: seen by a
/// server that records the first request's headers.
#[test]
fn requests_send_the_tools_user_agent() {
    use std::io::Read;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (seen, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let _ = seen.send(String::from_utf8_lossy(&request[..n]).into_owned());
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: recorder\n  context:\n    cluster: c\n    user: u\n\
             current-context: recorder\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-migrate"))
        .args(["version", "--context", "recorder", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let request = heard
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap_or_else(|_| {
            panic!(
                "no request arrived: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let agent = request
        .lines()
        .find_map(|l| {
            l.strip_prefix("user-agent: ")
                .or_else(|| l.strip_prefix("User-Agent: "))
        })
        .unwrap_or_else(|| panic!("no User-Agent in:\n{request}"));
    let version = env!("CARGO_PKG_VERSION");
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let prefix = format!(
        "kubectl-migrate/v{version} ({}/{arch}) ",
        std::env::consts::OS
    );
    assert!(
        agent.starts_with(&prefix),
        "{agent:?} does not start with {prefix:?}"
    );
    let commit = &agent[prefix.len()..];
    assert!(
        !commit.is_empty()
            && commit
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == '-' || c.is_ascii_lowercase()),
        "{agent:?} ends with no commit"
    );
}
