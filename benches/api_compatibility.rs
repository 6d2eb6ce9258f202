//! Benchmark: the controller's `APICompatibility` against live clusters: how long from an
//! incompatible CRD write on a member to `Compatible=False` in the management cluster, and from
//! the fix to `True` again.
//!
//!   cargo bench --bench api_compatibility
//!
//! Needs the local clusters of `tests/cluster/start.sh a b c` and, as the cluster tests do,
//! KM_TEST_KUBECONFIG and KM_TEST_BIN_DIR (which holds kubectl). In one run it:
//!
//! 1. installs the CRDs of deploy/crds in km-c, a namespace with km-a's and km-b's kubeconfig
//!    Secrets, and `widgets.bench-compat.example.com` (`spec.size` at most 10) in km-a and km-b
//!    (untimed);
//! 2. starts the controller (`controller run --context km-c`) and an APICompatibility of km-a and
//!    km-b, and waits for `Compatible=True`;
//! 3. KM_BENCH_FLIPS times (default 7) lowers the maximum on km-b to 5 and raises it back,
//!    taking the time from sending each write to the raw watch of the CRD on km-b (the baseline)
//!    and to the condition's flip as a watch of the resource in km-c sees it;
//! 4. prints the medians and the verdict on the target (median write-to-False <= 2 s), writes
//!    them to target/bench-api-compatibility.txt, exits 1 when the target is missed, and
//!    deletes what it made.
//!
//! The tool binary is the one cargo builds for this bench; KM_BENCH_BIN overrides it.
//! Under `cargo test --all-targets` (no `--bench` argument) it only says how to run it.
mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::Kubectl;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kubectl_migrate::controller::api::APICompatibility;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const GROUP: &str = "bench-compat.example.com";
const NAME: &str = "widgets.bench-compat.example.com";
const TARGET_MEDIAN: Duration = Duration::from_secs(2);
const LIMIT: Duration = Duration::from_secs(60);
const HOW_TO_START: &str = "start the local clusters and export their paths, e.g.\n  \
    export KM_CLUSTERS_DIR=$PWD/target/bench-clusters\n  \
    kubeconfig=$(tests/cluster/start.sh a b c) && export KM_TEST_KUBECONFIG=$kubeconfig\n  \
    bin=$(tests/cluster/build.sh) && export KM_TEST_BIN_DIR=$bin\n  \
    cargo bench --bench api_compatibility\n  \
    tests/cluster/stop.sh   # afterwards (with the same KM_CLUSTERS_DIR)";

fn versions(maximum: u32) -> Value {
    json!([{
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"size": {"type": "integer", "maximum": maximum}}
        }}}}
    }])
}

fn crd(maximum: u32) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": versions(maximum),
        }
    })
}

/// The controller process, killed when dropped.
struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn client(kubeconfig: &Path, context: &str) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).unwrap(),
        &KubeConfigOptions {
            context: Some(context.into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// The `Compatible` status of every write of the resource that changed it, with when it was
/// seen.
fn follow_compatible(
    api: kube::Api<APICompatibility>,
    name: &str,
) -> mpsc::UnboundedReceiver<(Instant, String)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut last = String::new();
        let mut stream = std::pin::pin!(watcher(api, config).applied_objects());
        while let Some(Ok(obj)) = stream.next().await {
            let status = obj
                .status
                .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Compatible"))
                .map(|c| c.status)
                .unwrap_or_default();
            if status != last {
                last = status.clone();
                if tx.send((Instant::now(), status)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// When each write of the CRD on the member is seen by a raw watch (the baseline).
fn follow_crd(api: kube::Api<CustomResourceDefinition>) -> mpsc::UnboundedReceiver<Instant> {
    let (tx, rx) = mpsc::unbounded_channel();
    let config = watcher::Config::default().fields(&format!("metadata.name={NAME}"));
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(api, config).applied_objects());
        while let Some(Ok(_)) = stream.next().await {
            if tx.send(Instant::now()).is_err() {
                return;
            }
        }
    });
    rx
}

async fn until<T>(
    rx: &mut mpsc::UnboundedReceiver<T>,
    what: &str,
    wanted: impl Fn(&T) -> bool,
) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(v)) if wanted(&v) => return v,
            Ok(Some(_)) => {}
            _ => panic!("{what} not seen within {LIMIT:?}"),
        }
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "benches/api_compatibility.rs: not run outside `cargo bench` (it needs the local \
             clusters); run `cargo bench --bench api_compatibility`"
        );
        return;
    }
    let env = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{name} is not set: {HOW_TO_START}"))
    };
    let kubeconfig = env("KM_TEST_KUBECONFIG");
    let kubectl = Kubectl {
        bin: env("KM_TEST_BIN_DIR").join("kubectl"),
        kubeconfig: kubeconfig.clone(),
    };
    let tool = std::env::var_os("KM_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate")),
        PathBuf::from,
    );
    let flips: usize = std::env::var("KM_BENCH_FLIPS")
        .ok()
        .map_or(7, |v| v.parse().expect("KM_BENCH_FLIPS is a number"))
        .max(5);
    let namespace = format!("bench-compat-{}", std::process::id());

    // Untimed set-up.
    let crds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
    kubectl.run(
        "km-c",
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            crds.to_str().unwrap(),
        ],
        None,
    );
    kubectl.run(
        "km-c",
        &[
            "wait",
            "--for=condition=Established",
            "crd/apicompatibilities.kubectl-migrate.io",
        ],
        None,
    );
    kubectl.run("km-c", &["create", "namespace", &namespace], None);
    for cluster in ["a", "b"] {
        let file = kubeconfig
            .parent()
            .unwrap()
            .join(cluster)
            .join("kubeconfig");
        kubectl.run(
            "km-c",
            &[
                "-n",
                &namespace,
                "create",
                "secret",
                "generic",
                &format!("km-{cluster}-kubeconfig"),
                &format!("--from-file=value={}", file.display()),
            ],
            None,
        );
        let context = format!("km-{cluster}");
        kubectl.run(&context, &["apply", "-f", "-"], Some(&crd(10).to_string()));
        kubectl.run(
            &context,
            &[
                "wait",
                "--for=condition=Established",
                &format!("crd/{NAME}"),
            ],
            None,
        );
    }
    let controller = Controller(
        Command::new(&tool)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["controller", "run", "--context", "km-c", "-n", &namespace])
            .args(["--probe-addr", "127.0.0.1:0", "--leader-elect=false"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the controller starts"),
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (raw_ms, false_ms, true_ms) = runtime.block_on(async {
        let management = client(&kubeconfig, "km-c").await;
        let member: kube::Api<CustomResourceDefinition> =
            kube::Api::all(client(&kubeconfig, "km-b").await);
        let checks: kube::Api<APICompatibility> = kube::Api::namespaced(management, &namespace);
        let mut compatible = follow_compatible(checks, "bench");
        let mut raw = follow_crd(member.clone());
        kubectl.run(
            "km-c",
            &["apply", "-f", "-"],
            Some(
                &json!({
                    "apiVersion": "kubectl-migrate.io/v1alpha1",
                    "kind": "APICompatibility",
                    "metadata": {"name": "bench", "namespace": namespace},
                    "spec": {"members": [{"name": "km-a"}, {"name": "km-b"}], "groups": [GROUP]},
                })
                .to_string(),
            ),
        );
        until(&mut compatible, "Compatible=True at the start", |(_, s)| {
            s == "True"
        })
        .await;
        until(&mut raw, "the CRD's first list", |_| true).await;
        let (mut raw_ms, mut false_ms, mut true_ms) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..flips {
            for (maximum, wanted) in [(5, "False"), (10, "True")] {
                let patch = json!({"spec": {"versions": versions(maximum)}});
                // From the moment the write is sent: a watch may see it before its answer.
                let sent = Instant::now();
                member
                    .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .expect("patch the CRD on km-b");
                let seen_raw = until(&mut raw, "the CRD write on km-b", |_| true).await;
                let (seen, _) = until(
                    &mut compatible,
                    &format!("Compatible={wanted}"),
                    |(_, s)| s == wanted,
                )
                .await;
                raw_ms.push(seen_raw.duration_since(sent).as_secs_f64() * 1e3);
                let ms = seen.duration_since(sent).as_secs_f64() * 1e3;
                if wanted == "False" {
                    false_ms.push(ms);
                } else {
                    true_ms.push(ms);
                }
            }
        }
        (raw_ms, false_ms, true_ms)
    });
    drop(controller);
    let _ = Command::new(&kubectl.bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--context",
            "km-c",
            "delete",
            "namespace",
            &namespace,
            "--wait=false",
        ])
        .output();
    for context in ["km-a", "km-b"] {
        let _ = Command::new(&kubectl.bin)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--context", context, "delete", "crd", NAME, "--wait=false"])
            .output();
    }

    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (raw_median, false_median, true_median) =
        (median(raw_ms), median(false_ms), median(true_ms));
    let ok = false_median <= TARGET_MEDIAN.as_secs_f64() * 1e3;
    let mut report = String::new();
    writeln!(
        report,
        "APICompatibility, {flips} flips of widgets on km-b (members km-a, km-b; controller on km-c)"
    )
    .unwrap();
    writeln!(
        report,
        "  write -> raw watch of the CRD on km-b:  median {raw_median:.0} ms (baseline)"
    )
    .unwrap();
    writeln!(
        report,
        "  incompatible write -> Compatible=False: median {false_median:.0} ms ({:.1}x the baseline; the debounce is 300 ms), target <= {} ms: {}",
        false_median / raw_median.max(1.0),
        TARGET_MEDIAN.as_millis(),
        if ok { "met" } else { "MISSED" }
    )
    .unwrap();
    writeln!(
        report,
        "  fixing write -> Compatible=True:       median {true_median:.0} ms"
    )
    .unwrap();
    print!("{report}");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-api-compatibility.txt");
    std::fs::write(&out, &report).unwrap();
    if !ok {
        std::process::exit(1);
    }
}
