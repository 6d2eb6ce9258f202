//! Helpers for tests that drive the real local clusters started by `tests/cluster/start.sh`
//! (through `scripts/test.sh`). When the clusters are missing these helpers panic with a message
//! that says how to start them: a cluster test never skips silently.

pub mod jobs;
pub mod process;
pub mod pty;
pub mod real_world;
pub mod sts;
pub mod zero_downtime;

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

pub const CONTEXT_A: &str = "km-a";
pub const CONTEXT_B: &str = "km-b";
/// The third cluster, where schema-diff tests install the LCD.
pub const CONTEXT_C: &str = "km-c";

/// The cluster whose API server tests stop or restart (`take_outage_cluster`). No other test
/// uses it, so that an outage never reaches a test that did not cause it.
pub const CONTEXT_OUTAGE: &str = "km-outage";
/// The name start.sh and restart-apiserver.sh know `CONTEXT_OUTAGE` by.
pub const OUTAGE_CLUSTER: &str = "outage";

/// Tests that take the outage cluster's API server down run one at a time.
static OUTAGE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The outage cluster for the caller alone until the guard drops.
pub async fn take_outage_cluster() -> tokio::sync::MutexGuard<'static, ()> {
    OUTAGE.lock().await
}

/// The same for a test that is not async.
pub fn take_outage_cluster_blocking() -> tokio::sync::MutexGuard<'static, ()> {
    OUTAGE.blocking_lock()
}
const HOW_TO_START: &str = "the local clusters are not running: run `scripts/test.sh` (it builds \
    and starts them), or start them with `tests/cluster/start.sh a b c outage` and export \
    KM_TEST_KUBECONFIG=<the path it prints> and KM_TEST_BIN_DIR=<the output of tests/cluster/build.sh>";

/// The combined kubeconfig written by start.sh.
pub fn kubeconfig_path() -> PathBuf {
    let path = std::env::var_os("KM_TEST_KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("KM_TEST_KUBECONFIG is not set; {HOW_TO_START}"));
    assert!(
        path.is_file(),
        "KM_TEST_KUBECONFIG={} does not exist; {HOW_TO_START}",
        path.display()
    );
    path
}

/// The directory of the control-plane binaries (kubectl among them).
pub fn cluster_bin_dir() -> PathBuf {
    let dir = std::env::var_os("KM_TEST_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("KM_TEST_BIN_DIR is not set; {HOW_TO_START}"));
    assert!(
        dir.join("kubectl").is_file(),
        "no kubectl in KM_TEST_BIN_DIR={}; {HOW_TO_START}",
        dir.display()
    );
    dir
}

/// The per-cluster kubeconfig that start.sh wrote next to the combined one.
pub fn single_cluster_kubeconfig(cluster: &str) -> PathBuf {
    let path = kubeconfig_path()
        .parent()
        .unwrap()
        .join(cluster)
        .join("kubeconfig");
    assert!(
        path.is_file(),
        "{} is missing; {HOW_TO_START}",
        path.display()
    );
    path
}

/// The pinned Kubernetes version, read from the one place it is pinned.
pub fn pinned_kubernetes_version() -> String {
    pinned("KUBERNETES_VERSION")
}

/// The version pinned as `name` in tests/cluster/versions.env.
pub fn pinned(name: &str) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/versions.env"),
    )
    .unwrap();
    let prefix = format!("{name}=");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{name} in versions.env"))
        .trim()
        .to_string()
}

/// A client for `context`, checked to be reachable so that a dead cluster fails here, loudly.
pub async fn client(context: &str) -> Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig_path()).expect("readable kubeconfig");
    let options = KubeConfigOptions {
        context: Some(context.to_string()),
        ..Default::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap_or_else(|e| panic!("context {context}: {e}; {HOW_TO_START}"));
    let client = Client::try_from(config).expect("client");
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => client,
        Ok(Err(e)) => panic!("cluster {context} is not reachable: {e}; {HOW_TO_START}"),
        Err(_) => panic!("cluster {context} did not answer within 10s; {HOW_TO_START}"),
    }
}

/// A fresh namespace, deleted when the guard drops, so tests never see each other's objects.
pub struct TestNamespace {
    pub name: String,
    context: String,
}

impl TestNamespace {
    pub async fn create(client: &Client, context: &str, prefix: &str) -> TestNamespace {
        Self::create_named(client, context, &format!("{prefix}-{}", unique_suffix())).await
    }

    pub async fn create_named(client: &Client, context: &str, name: &str) -> TestNamespace {
        let name = name.to_string();
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        // Admission needs the namespace's default ServiceAccount before it accepts pods.
        let sa: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(client.clone(), &name);
        poll_until(
            Duration::from_secs(90),
            "default ServiceAccount",
            || async { sa.get_opt("default").await.ok().flatten().is_some() },
        )
        .await;
        TestNamespace {
            name,
            context: context.to_string(),
        }
    }
}

impl TestNamespace {
    /// Takes over deleting a namespace that something else created.
    pub fn create_named_existing(context: &str, name: &str) -> TestNamespace {
        TestNamespace {
            name: name.to_string(),
            context: context.to_string(),
        }
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // Through kubectl, because a kube client cannot be driven from Drop inside the test's
        // runtime. Best effort: the clusters are thrown away after the run anyway.
        let _ = std::process::Command::new(cluster_bin_dir().join("kubectl"))
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args([
                "--context",
                &self.context,
                "delete",
                "namespace",
                &self.name,
                "--wait=false",
            ])
            .output();
    }
}

/// Six hex digits, different for every call in a run and, from its start time, between runs.
/// Always six: the names made with it appear on the screens the tests assert, whose lines must
/// not wrap differently from one test to the next (the counter is shared by the whole suite).
pub fn unique_suffix() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static START: OnceLock<u32> = OnceLock::new();
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let start = *START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    });
    let n = start.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:06x}", n & 0xff_ffff)
}

/// Polls `check` until it holds; panics with `what` after `limit`.
pub async fn poll_until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// PATH with the cluster binaries (kubectl), the freshly built plugin and `extra` first.
pub fn path_with(extra: &[&Path]) -> std::ffi::OsString {
    let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-migrate"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut dirs: Vec<PathBuf> = extra.iter().map(|p| p.to_path_buf()).collect();
    dirs.push(plugin_dir);
    dirs.push(cluster_bin_dir());
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// The documents of a manifest exactly as kubectl sends them (tests/yamltruth: apimachinery's
/// YAML-or-JSON decoder and sigs.k8s.io/yaml), or kubectl's reason to refuse it. The helper is
/// `KM_YAML_TRUTH` (scripts/test.sh builds it), or built here by tests/yamltruth/build.sh.
pub fn yaml_truth(text: &str) -> Result<Vec<serde_json::Value>, String> {
    use std::io::Write;
    use std::sync::OnceLock;
    static HELPER: OnceLock<PathBuf> = OnceLock::new();
    let helper = HELPER.get_or_init(|| {
        if let Some(path) = std::env::var_os("KM_YAML_TRUTH") {
            return PathBuf::from(path);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/yamltruth/build.sh");
        let out = std::process::Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed (it needs Go and the Go module proxy): {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    });
    let mut child = std::process::Command::new(helper)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run the YAML truth helper {}: {e}", helper.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("the helper prints JSON"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// JSON values equal with numbers compared by value (kubectl writes 5.0 as 5, 1e3 as 1000).
pub fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The Rust debug output in `text`, which no message may show (every message is words): an
/// `Option`, a struct (`Status { status: .. }`), the names kube and hyper give their layers, a
/// path quoted as a Rust string inside quotes.
pub fn debug_text(text: &str) -> Vec<String> {
    let mut found: Vec<String> = [
        "Some(",
        "None)",
        "Status {",
        "Error {",
        "ApiError:",
        "ServiceError:",
        "HyperError:",
        "client error (",
        "'\"",
    ]
    .into_iter()
    .filter(|needle| text.contains(needle))
    .map(String::from)
    .collect();
    // `Name { field: ...`: a struct as `{:?}` writes it.
    for (at, _) in text.match_indices(" { ") {
        let rest = &text[at + " { ".len()..];
        let field = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(rest, |end| &rest[..end]);
        if !field.is_empty() && rest[field.len()..].starts_with(':') {
            found.push(format!("{{ {field}:"));
        }
    }
    found
}

/// Fails when the stderr of `what` shows Rust debug output (see [`debug_text`]).
pub fn assert_in_words(what: &str, stderr: &str) {
    let found = debug_text(stderr);
    assert!(
        found.is_empty(),
        "{what}: Rust debug text {found:?} on stderr:\n{stderr}"
    );
}
