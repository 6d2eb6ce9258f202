//! Benchmark: `schema-diff --lcd` against live clusters, against the raw CRD LIST it has to read.
//!
//!   cargo bench --bench schema_diff_live
//!
//! Needs the local clusters of `tests/cluster/start.sh a b c` and, as the cluster tests do,
//! KM_TEST_KUBECONFIG and KM_TEST_BIN_DIR (which holds kubectl). In one run it:
//!
//! 1. installs, server-side (untimed), ten copies of the prometheus-operator CRDs under ten API
//!    groups (`monitoring-N.bench.example.com`) in each cluster: release v0.68.0 in km-a,
//!    v0.93.0 in km-b and km-c (100 CRDs per cluster, 44-47 MB of YAML; real CRDs, from the Go
//!    module proxy like the real-world tests');
//! 2. measures, interleaved and KM_BENCH_RUNS times (default 5; medians reported):
//!    - **baseline**: `kubectl get --raw /apis/apiextensions.k8s.io/v1/customresourcedefinitions`
//!      to /dev/null, of the three clusters at once, as the tool reads them, until the slowest
//!      is done (the least a tool must do: ask for the CRDs and read them); on two cores three
//!      API servers encoding 45 MB each share the CPU, so each cluster's LIST alone is also
//!      measured, for information;
//!    - **tool**: `kubectl-migrate schema-diff --context km-a --context km-b --context km-c --lcd
//!      -o json`, spawn to exit, with its peak RSS and CPU time (GNU time);
//! 3. prints the ratio of the tool to the slowest cluster's raw LIST and the verdicts on the
//!    targets (<= 1.3x, <= 300 MB), writes them to target/bench-schema-diff-live.txt, and
//!    exits 1 when a target is missed;
//! 4. deletes the CRDs again (KM_BENCH_KEEP=1 keeps them).
//!
//! The tool binary is the one cargo builds for this bench (target/release/kubectl-migrate);
//! KM_BENCH_BIN overrides it. KM_BENCH_BASE_BIN names another build (a previous commit's) to
//! run in the same rounds, by turns with this one: the report adds its figures and the ratio
//! of this build's to them, and the two must print the same. KM_BENCH_COPIES (default 10) sets
//! the copies per cluster.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only says how to run it.
mod common;
#[allow(dead_code)] // only the release download and its checks are used here
#[path = "../tests/suite/support/real_world.rs"]
mod real_world;

use common::ClusterBench;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const CONTEXTS: [(&str, &str); 3] = [
    ("km-a", "v0.68.0"),
    ("km-b", "v0.93.0"),
    ("km-c", "v0.93.0"),
];
const TARGET_RATIO: f64 = 1.3;
const TARGET_RSS_MB: f64 = 300.0;
/// Issue 27: within this ratio of the previous build (with KM_BENCH_BASE_BIN).
const TARGET_BASE_RATIO: f64 = 1.2;
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

const BENCH: ClusterBench = ClusterBench {
    name: "schema_diff_live",
    start: "tests/cluster/start.sh a b c",
};

fn main() {
    if !BENCH.invoked("it installs 300 large CRDs in the local clusters") {
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
    let base_tool = std::env::var_os("KM_BENCH_BASE_BIN").map(PathBuf::from);
    let runs = number("KM_BENCH_RUNS", 5).max(1);
    let copies = number("KM_BENCH_COPIES", 10).max(1);
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "GNU time (/usr/bin/time) is needed for peak RSS: apt-get install time"
    );
    let kubectl_at = |context: &str| {
        let mut c = Command::new(&kubectl);
        c.arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--context", context]);
        c
    };

    let work = tempfile::tempdir().expect("a scratch directory");
    let mut names = Vec::new();
    let mut yaml_bytes = Vec::new();
    for (context, release) in CONTEXTS {
        let dir = work.path().join(context);
        std::fs::create_dir(&dir).unwrap();
        let source = real_world::module_dir(real_world::PROMETHEUS_OPERATOR.module, release)
            .join("example/prometheus-operator-crd");
        let mut bytes = 0;
        for entry in std::fs::read_dir(&source).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for copy in 0..copies {
                let group = format!("monitoring-{copy}.bench.example.com");
                let renamed = text.replace("monitoring.coreos.com", &group);
                let file = dir.join(format!(
                    "{copy}-{}",
                    path.file_name().unwrap().to_string_lossy()
                ));
                bytes += renamed.len();
                std::fs::write(&file, renamed).unwrap();
                if context == "km-a" {
                    let plural = path
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .trim_start_matches("monitoring.coreos.com_")
                        .trim_end_matches(".yaml")
                        .to_string();
                    names.push(format!("{plural}.{group}"));
                }
            }
        }
        yaml_bytes.push(bytes);
        eprintln!(
            "bench: installing {} CRDs ({release}) in {context}",
            names.len()
        );
        let out = kubectl_at(context)
            .args(["apply", "--server-side", "--force-conflicts", "-f"])
            .arg(&dir)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "apply in {context}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (context, _) in CONTEXTS {
        wait_established(&kubectl_at, context, &names);
    }

    // Interleaved, so that both see the same machine.
    let mut raw: Vec<Vec<f64>> = vec![Vec::new(); CONTEXTS.len()];
    let mut together = Vec::new();
    let mut tool_runs = ToolRuns::default();
    let mut base_runs = ToolRuns::default();
    let schema_diff = |binary: &Path, output: &Path, runs: &mut ToolRuns| {
        let figures = work.path().join("time.txt");
        let started = Instant::now();
        let status = Command::new(time)
            .args(["-f", "%M %U %S", "-o"])
            .arg(&figures)
            .arg(binary)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("schema-diff")
            .args(CONTEXTS.iter().flat_map(|(c, _)| ["--context", c]))
            .args(["--lcd", "-o", "json"])
            .env("NO_COLOR", "1")
            .stdout(std::fs::File::create(output).unwrap())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        runs.walls.push(started.elapsed().as_secs_f64());
        assert!(
            status.code().is_some_and(|c| c <= 1),
            "schema-diff ({}) exited {status}",
            binary.display()
        );
        let text = std::fs::read_to_string(&figures).unwrap();
        let f: Vec<f64> = text
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if let [kib, user, system] = f.as_slice() {
            runs.rss_mb.push(kib * 1024.0 / 1e6);
            runs.cpus.push(user + system);
        }
    };
    let (output, base_output) = (
        work.path().join("lcd.json"),
        work.path().join("base-lcd.json"),
    );
    for round in 0..runs {
        for (i, (context, _)) in CONTEXTS.iter().enumerate() {
            let started = Instant::now();
            let status = kubectl_at(context)
                .args(["get", "--raw", CRDS])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            raw[i].push(started.elapsed().as_secs_f64());
            assert!(status.success(), "kubectl get --raw in {context}");
        }
        let started = Instant::now();
        let lists: Vec<_> = CONTEXTS
            .iter()
            .map(|(context, _)| {
                kubectl_at(context)
                    .args(["get", "--raw", CRDS])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut list in lists {
            assert!(list.wait().unwrap().success(), "kubectl get --raw");
        }
        together.push(started.elapsed().as_secs_f64());
        match &base_tool {
            // The two builds by turns, each first in every other round.
            Some(base) if round % 2 == 1 => {
                schema_diff(base, &base_output, &mut base_runs);
                schema_diff(&tool, &output, &mut tool_runs);
            }
            Some(base) => {
                schema_diff(&tool, &output, &mut tool_runs);
                schema_diff(base, &base_output, &mut base_runs);
            }
            None => schema_diff(&tool, &output, &mut tool_runs),
        }
        if base_tool.is_some() {
            assert!(
                std::fs::read(&output).unwrap() == std::fs::read(&base_output).unwrap(),
                "this build and KM_BENCH_BASE_BIN print different LCDs"
            );
        }
    }

    let raw_medians: Vec<f64> = raw.iter().map(|r| median(r)).collect();
    let alone = raw_medians.iter().copied().fold(0.0, f64::max);
    let slowest = median(&together);
    let (wall, peak) = (median(&tool_runs.walls), tool_runs.peak());
    let ratio = wall / slowest;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kubectl-migrate schema-diff against live clusters ({runs} runs each, interleaved; median, min-max)"
    );
    let _ = writeln!(out, "reproduce: cargo bench --bench schema_diff_live");
    let _ = writeln!(out, "load average at the end: {}", load_average());
    for (i, (context, release)) in CONTEXTS.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {context}: {} CRDs, prometheus-operator {release} x{copies}, {:.1} MB of YAML; raw LIST {:.3} s ({:.3}-{:.3})",
            names.len(),
            yaml_bytes[i] as f64 / 1e6,
            raw_medians[i],
            min(&raw[i]),
            max(&raw[i]),
        );
    }
    let _ = writeln!(
        out,
        "  baseline, the three raw LISTs at once, until the slowest is done: {slowest:.3} s ({:.3}-{:.3}); the slowest alone: {alone:.3} s",
        min(&together),
        max(&together),
    );
    let _ = writeln!(
        out,
        "  schema-diff --lcd of the three: {}",
        tool_runs.describe()
    );
    if base_tool.is_some() {
        let _ = writeln!(
            out,
            "  the previous build, the same: {}; tool / slowest raw LIST {:.2}",
            base_runs.describe(),
            median(&base_runs.walls) / slowest
        );
    }
    let ratio_met = ratio <= TARGET_RATIO;
    let rss_met = peak <= TARGET_RSS_MB;
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    let _ = writeln!(
        out,
        "target: tool / slowest raw LIST <= {TARGET_RATIO}: {ratio:.2}, {} (against the slowest alone: {:.2}); peak RSS <= {TARGET_RSS_MB:.0} MB: {peak:.0} MB, {}",
        verdict(ratio_met),
        wall / alone,
        verdict(rss_met)
    );
    let mut base_met = true;
    if base_tool.is_some() {
        let (wall_ratio, rss_ratio) = (wall / median(&base_runs.walls), peak / base_runs.peak());
        base_met = wall_ratio <= TARGET_BASE_RATIO && rss_ratio <= TARGET_BASE_RATIO;
        let _ = writeln!(
            out,
            "target: within {TARGET_BASE_RATIO}x of the previous build (its ratio to the raw LIST, measured in the same rounds): wall {wall_ratio:.2}, peak RSS {rss_ratio:.2}, {}",
            verdict(base_met)
        );
    }
    print!("{out}");
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-schema-diff-live.txt");
    if std::fs::write(&report, &out).is_ok() {
        eprintln!("bench: figures written to {}", report.display());
    }

    if std::env::var_os("KM_BENCH_KEEP").is_none() {
        for (context, _) in CONTEXTS {
            let _ = kubectl_at(context)
                .args(["delete", "crd", "--wait=false"])
                .args(&names)
                .stdout(Stdio::null())
                .status();
        }
    }
    if !(ratio_met && rss_met && base_met) {
        std::process::exit(1);
    }
}

/// One build's runs of `schema-diff --lcd`.
#[derive(Default)]
struct ToolRuns {
    walls: Vec<f64>,
    cpus: Vec<f64>,
    rss_mb: Vec<f64>,
}

impl ToolRuns {
    fn peak(&self) -> f64 {
        self.rss_mb.iter().copied().fold(0.0, f64::max)
    }

    fn describe(&self) -> String {
        format!(
            "{:.3} s ({:.3}-{:.3}), CPU {:.2} s, peak RSS {:.0} MB",
            median(&self.walls),
            min(&self.walls),
            max(&self.walls),
            median(&self.cpus),
            self.peak()
        )
    }
}

fn wait_established(kubectl_at: &dyn Fn(&str) -> Command, context: &str, names: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = kubectl_at(context)
            .args(["get", "crd", "-o", "json"])
            .output()
            .unwrap();
        let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let established = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|crd| {
                        names.iter().any(|n| crd["metadata"]["name"] == n.as_str())
                            && crd["status"]["conditions"].as_array().is_some_and(|cs| {
                                cs.iter()
                                    .any(|c| c["type"] == "Established" && c["status"] == "True")
                            })
                    })
                    .count()
            })
            .unwrap_or(0);
        if established == names.len() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: {established} of {} CRDs Established after 120 s",
            names.len()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(0.0, f64::max)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
