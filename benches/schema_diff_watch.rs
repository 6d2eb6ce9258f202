//! Benchmark: `schema-diff --watch` against live clusters: how long from a CRD write to its
//! event line, and whether memory stays flat over many changes.
//!
//!   cargo bench --bench schema_diff_watch
//!
//! Needs the local clusters of `tests/cluster/start.sh a b c` and, as the cluster tests do,
//! KM_TEST_KUBECONFIG and KM_TEST_BIN_DIR (which holds kubectl). In one run it:
//!
//! 1. installs one CRD (`gadgets.bench-watch.example.com`) in km-a, km-b and km-c (untimed);
//! 2. **latency**: starts the tool (`--watch -o json`, the default debounce) and, as the
//!    baseline, `kubectl get crd --watch` on km-b; then KM_BENCH_CHANGES times (default 20)
//!    narrows or widens an enum of the CRD on km-b and takes the time from sending the write
//!    to the raw watch's line and to the tool's event line (medians reported);
//! 3. **memory**: starts the tool again with `--debounce 10ms` and makes 1,000 such changes
//!    (KM_BENCH_MANY), each waited for; samples the tool's RSS after the first 100 and at the
//!    end;
//! 4. prints the figures and the verdicts on the targets (median write-to-event <= 2 s with the
//!    default debounce; RSS at the end <= 1.2x RSS after 100 changes), writes them to
//!    target/bench-schema-diff-watch.txt, exits 1 when a target is missed, and deletes the CRD.
//!
//! The tool binary is the one cargo builds for this bench; KM_BENCH_BIN overrides it.
//! Under `cargo test --all-targets` (no `--bench` argument) it only says how to run it.
mod common;
use common::ClusterBench;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

const GROUP: &str = "bench-watch.example.com";
const NAME: &str = "gadgets.bench-watch.example.com";
const CONTEXTS: [&str; 3] = ["km-a", "km-b", "km-c"];
const TARGET_MEDIAN: Duration = Duration::from_secs(2);
const TARGET_RSS_GROWTH: f64 = 1.2;

fn crd(modes: &[&str]) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": versions(modes),
        }
    })
}

fn versions(modes: &[&str]) -> Value {
    json!([{
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "mode": {"type": "string", "enum": modes},
            }
        }}}}
    }])
}

/// A child whose stdout lines arrive on a channel with the time each was read.
struct Lines {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Lines {
    fn spawn(command: &mut Command) -> Lines {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        let out = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if send.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Lines { child, lines }
    }

    /// The next line that `wanted` accepts, within 60 s.
    fn until(&self, what: &str, wanted: impl Fn(&str) -> bool) -> Instant {
        loop {
            let (at, line) = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no line for {what} within 60s ({e})"));
            if wanted(&line) {
                return at;
            }
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_change(line: &str) -> bool {
    line.contains("\"type\":\"change\"")
}

const BENCH: ClusterBench = ClusterBench {
    name: "schema_diff_watch",
    start: "tests/cluster/start.sh a b c",
};

fn main() {
    if !BENCH.invoked("it needs the local clusters") {
        return;
    }
    let kubeconfig = BENCH.path("KM_TEST_KUBECONFIG");
    let kubectl = BENCH.path("KM_TEST_BIN_DIR").join("kubectl");
    let tool = std::env::var_os("KM_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate")),
        PathBuf::from,
    );
    let number = |name: &str, default: usize| {
        std::env::var(name).ok().map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
        })
    };
    let changes = number("KM_BENCH_CHANGES", 20).max(2);
    let many = number("KM_BENCH_MANY", 1000).max(200);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::read_from(&kubeconfig).unwrap(),
            &KubeConfigOptions {
                context: Some("km-b".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client);
    let write = |modes: &[&str]| -> Instant {
        let patch = json!({"spec": {"versions": versions(modes)}});
        // From the moment the write is sent: the watches may see it before its answer arrives.
        let sent = Instant::now();
        runtime
            .block_on(crds.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)))
            .expect("patch the CRD on km-b");
        sent
    };
    let kubectl_at = |context: &str| {
        let mut c = Command::new(&kubectl);
        c.arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--context", context]);
        c
    };
    for context in CONTEXTS {
        let mut apply = kubectl_at(context)
            .args(["apply", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        serde_json::to_writer(apply.stdin.take().unwrap(), &crd(&["a", "b", "c"])).unwrap();
        assert!(
            apply.wait().unwrap().success(),
            "install {NAME} in {context}"
        );
        let established = kubectl_at(context)
            .args([
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd",
                NAME,
            ])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(established.success(), "{NAME} Established in {context}");
    }
    let watch_tool = |debounce: Option<&str>| {
        let mut c = Command::new(&tool);
        c.arg("--kubeconfig").arg(&kubeconfig).args([
            "schema-diff",
            "--watch",
            "-o",
            "json",
            "--group",
            GROUP,
        ]);
        for context in CONTEXTS {
            c.args(["--context", context]);
        }
        if let Some(d) = debounce {
            c.args(["--debounce", d]);
        }
        let lines = Lines::spawn(&mut c);
        lines.until("the initial report", |l| l.contains("\"type\":\"initial\""));
        lines
    };
    let modes = |i: usize| -> &'static [&'static str] {
        if i.is_multiple_of(2) {
            &["a", "b"]
        } else {
            &["a", "b", "c"]
        }
    };

    // Latency, against the raw watch of the same cluster.
    let raw =
        Lines::spawn(kubectl_at("km-b").args(["get", "crd", NAME, "--watch-only", "-o", "name"]));
    let tool_watch = watch_tool(None);
    // The raw watch has no initial line with --watch-only; give it a moment to be established.
    std::thread::sleep(Duration::from_secs(2));
    let mut raw_ms = Vec::new();
    let mut tool_ms = Vec::new();
    for i in 0..changes {
        let written = write(modes(i));
        let seen_raw = raw.until("the raw watch", |_| true);
        let seen_tool = tool_watch.until("the tool's event", is_change);
        raw_ms.push(seen_raw.duration_since(written).as_secs_f64() * 1e3);
        tool_ms.push(seen_tool.duration_since(written).as_secs_f64() * 1e3);
    }
    drop(tool_watch);
    drop(raw);

    // Memory over many changes.
    let tool_watch = watch_tool(Some("10ms"));
    let mut rss_100 = 0;
    let started = Instant::now();
    for i in 0..many {
        write(modes(i));
        tool_watch.until("the tool's event", is_change);
        if i + 1 == 100 {
            rss_100 = tool_watch.rss_kib();
        }
    }
    let rss_end = tool_watch.rss_kib();
    let many_secs = started.elapsed().as_secs_f64();
    drop(tool_watch);
    let _ = kubectl_at("km-a")
        .args(["delete", "crd", NAME, "--wait=false"])
        .output();
    for context in ["km-b", "km-c"] {
        let _ = kubectl_at(context)
            .args(["delete", "crd", NAME, "--wait=false"])
            .output();
    }

    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (raw_median, tool_median) = (median(&mut raw_ms), median(&mut tool_ms));
    let growth = rss_end as f64 / rss_100 as f64;
    let latency_ok = tool_median <= TARGET_MEDIAN.as_secs_f64() * 1e3;
    let memory_ok = growth <= TARGET_RSS_GROWTH;
    let mut report = String::new();
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    writeln!(
        report,
        "schema-diff --watch, {changes} changes on km-b, 3 clusters"
    )
    .unwrap();
    writeln!(
        report,
        "  write -> raw watch line (kubectl get --watch): median {raw_median:.0} ms (baseline)"
    )
    .unwrap();
    writeln!(
        report,
        "  write -> tool event line (debounce 1s):        median {tool_median:.0} ms ({:.0} ms after the raw watch; the debounce is 1000 ms), {:.1}x the baseline, target <= {} ms: {}",
        tool_median - raw_median,
        tool_median / raw_median.max(1.0),
        TARGET_MEDIAN.as_millis(),
        verdict(latency_ok)
    )
    .unwrap();
    writeln!(
        report,
        "  memory over {many} changes (--debounce 10ms, {many_secs:.0} s): RSS {} MiB after 100, {} MiB at the end, {growth:.2}x, target <= {TARGET_RSS_GROWTH}x: {}",
        rss_100 / 1024,
        rss_end / 1024,
        verdict(memory_ok)
    )
    .unwrap();
    print!("{report}");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-schema-diff-watch.txt");
    std::fs::write(&out, &report).unwrap();
    if !(latency_ok && memory_ok) {
        std::process::exit(1);
    }
}
