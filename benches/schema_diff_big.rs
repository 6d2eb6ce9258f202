//! Benchmark: `kubectl migrate schema-diff` on big schemas (issue 31, item 6).
//!
//!   cargo bench --bench schema_diff_big
//!
//! It generates, deterministically, in a temporary directory:
//!
//! - **wide**: one CRD whose `spec` has 300,000 properties (block YAML, about 14 MB), and a
//!   copy where every 1,000th property changed (its type, an enum added, or a description
//!   added: 300 findings, two thirds of them breaking, each with a witness to search for);
//!   the same at 150,000 properties, to show that the time grows linearly;
//! - **description**: one CRD whose root schema has a 100 MB description, and the same CRD
//!   without it and with one field more.
//!
//! and times, RUNS times each (median), `schema-diff -f A -f B -o json` on each pair and
//! `--lcd -o json` on the wide one, spawn to exit, with wall time, CPU time and peak RSS from
//! `/usr/bin/time`. KM_BENCH_BASE_BIN names another build (an earlier commit's) to run by turns
//! in the same run; its figures and the ratios are printed beside. Targets: the wide diff in at
//! most 3 s and 300 MB; the description diff in at most twice the file's size of memory; the
//! wide diff at 300,000 properties within 2.5x its time at 150,000. The figures go to stdout
//! and target/bench-schema-diff-big.txt; a missed target exits 1. KM_BENCH_RUNS (default 3)
//! sets the runs, KM_BENCH_KEEP=1 keeps the inputs.
//!
//! Under `cargo test --all-targets` (no `--bench`) it only checks, on a small wide pair, that
//! the tool takes the generated sources and finds their changes.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const WIDE: usize = 300_000;
const DESCRIPTION_BYTES: usize = 100_000_000;
const RUNS: usize = 3;
const TARGET_WIDE_SECONDS: f64 = 3.0;
/// Megabytes of 10^6 bytes.
const TARGET_WIDE_MB: f64 = 300.0;
/// Peak RSS at most this many times the description file's size.
const TARGET_DESCRIPTION_RATIO: f64 = 2.0;
/// Twice the properties in at most this many times the time.
const TARGET_DOUBLING_RATIO: f64 = 2.5;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let tool = std::env::var_os("KM_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate")));
    let work = tempfile::Builder::new()
        .prefix("km-bench-schema-diff-big-")
        .tempdir()
        .expect("a temporary directory");
    if !bench {
        eprintln!(
            "benches/schema_diff_big.rs: not a benchmark run (that is `cargo bench --bench \
             schema_diff_big`); checking a small wide pair"
        );
        let pair = wide_pair(work.path(), 3_000);
        let out = Command::new(&tool)
            .args(pair.diff_args())
            .output()
            .expect("the tool runs");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report");
        let findings = report["apis"][0]["findings"].as_array().expect("findings");
        assert_eq!(findings.len(), 3, "one finding per changed property");
        return;
    }
    let time = Path::new("/usr/bin/time");
    assert!(
        time.is_file(),
        "this bench measures with GNU time: apt-get install time"
    );
    let base = std::env::var_os("KM_BENCH_BASE_BIN").map(PathBuf::from);
    let runs = std::env::var("KM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(RUNS)
        .max(1);
    let started = Instant::now();
    let half = wide_pair(work.path(), WIDE / 2);
    let wide = wide_pair(work.path(), WIDE);
    let described = description_pair(work.path(), DESCRIPTION_BYTES);
    eprintln!(
        "bench: generated {:.1} MB (wide), {:.1} MB (half as wide), {:.1} MB (description) in {:.1} s",
        wide.bytes as f64 / 1e6,
        half.bytes as f64 / 1e6,
        described.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let cases: [(&str, Vec<String>); 4] = [
        ("wide, diff", wide.diff_args()),
        ("wide, diff + LCD", wide.lcd_args()),
        ("half as wide, diff", half.diff_args()),
        ("description, diff", described.diff_args()),
    ];
    let builds: Vec<(&str, PathBuf)> = std::iter::once(("this build", tool.clone()))
        .chain(base.map(|b| ("base build", b)))
        .collect();
    // measured[case][build]
    let mut measured: Vec<Vec<Vec<Run>>> = vec![vec![Vec::new(); builds.len()]; cases.len()];
    for round in 0..runs {
        eprintln!("bench: round {}/{runs}", round + 1);
        for (c, (_, args)) in cases.iter().enumerate() {
            // By turns: each build first in every other round.
            let mut order: Vec<usize> = (0..builds.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for b in order {
                measured[c][b].push(run(time, &builds[b].1, args, work.path()));
            }
        }
    }
    let mut report = format!(
        "schema-diff on big schemas, {runs} runs each (median), load {}\n\n",
        load_average()
    );
    let _ = writeln!(
        report,
        "{:<22} {:<11} {:>8} {:>8} {:>9}",
        "input", "build", "wall s", "CPU s", "peak MB"
    );
    let mut figures = Vec::new();
    for (c, (name, _)) in cases.iter().enumerate() {
        let mut per_build = Vec::new();
        for (b, (build, _)) in builds.iter().enumerate() {
            let f = Figures::of(&measured[c][b]);
            let _ = writeln!(
                report,
                "{name:<22} {build:<11} {:>8.2} {:>8.2} {:>9.0}",
                f.wall, f.cpu, f.peak_mb
            );
            per_build.push(f);
        }
        if let [this, base] = per_build.as_slice() {
            let _ = writeln!(
                report,
                "{:<22} {:<11} {:>8.2} {:>8.2} {:>9.2}",
                "",
                "ratio",
                this.wall / base.wall,
                this.cpu / base.cpu,
                this.peak_mb / base.peak_mb
            );
        }
        figures.push(per_build[0]);
    }
    let (wide_f, half_f, desc_f) = (figures[0], figures[2], figures[3]);
    let description_mb = described.largest_file as f64 / 1e6;
    let verdicts = [
        (
            format!(
                "wide diff: {:.2} s, {:.0} MB (targets {TARGET_WIDE_SECONDS} s, {TARGET_WIDE_MB} MB)",
                wide_f.wall, wide_f.peak_mb
            ),
            wide_f.wall <= TARGET_WIDE_SECONDS && wide_f.peak_mb <= TARGET_WIDE_MB,
        ),
        (
            format!(
                "description diff: {:.0} MB for a {description_mb:.0} MB file ({:.2}x; target {TARGET_DESCRIPTION_RATIO}x)",
                desc_f.peak_mb,
                desc_f.peak_mb / description_mb
            ),
            desc_f.peak_mb <= TARGET_DESCRIPTION_RATIO * description_mb,
        ),
        (
            format!(
                "linear: twice the properties in {:.2}x the CPU time (target {TARGET_DOUBLING_RATIO}x)",
                wide_f.cpu / half_f.cpu
            ),
            wide_f.cpu / half_f.cpu <= TARGET_DOUBLING_RATIO,
        ),
    ];
    report.push('\n');
    for (text, met) in &verdicts {
        let _ = writeln!(report, "{}: {text}", if *met { "met" } else { "MISSED" });
    }
    print!("{report}");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-schema-diff-big.txt");
    std::fs::write(&out, &report).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    if std::env::var_os("KM_BENCH_KEEP").is_some() {
        eprintln!("bench: inputs kept in {}", work.keep().display());
    } else {
        drop(work);
    }
    if verdicts.iter().any(|(_, met)| !met) {
        std::process::exit(1);
    }
}

/// Two sources of one CRD, as directories.
struct Pair {
    a: PathBuf,
    b: PathBuf,
    /// Both sources' bytes.
    bytes: u64,
    largest_file: u64,
}

impl Pair {
    fn diff_args(&self) -> Vec<String> {
        let mut args = vec!["schema-diff".to_string()];
        for dir in [&self.a, &self.b] {
            args.push("-f".into());
            args.push(dir.display().to_string());
        }
        args.extend(["-o".into(), "json".into()]);
        args
    }

    fn lcd_args(&self) -> Vec<String> {
        let mut args = self.diff_args();
        args.push("--lcd".into());
        args
    }
}

/// The CRD's text up to its root schema's members, indented for them.
fn crd_head(name: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
         name: {name}s.big.example.com\nspec:\n  group: big.example.com\n  names:\n    \
         kind: {name}\n    plural: {name}s\n  scope: Namespaced\n  versions:\n  - name: v1\n    \
         served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        \
         type: object\n"
    )
}

/// `properties` properties under `spec`; in the changed copy every 1,000th one changed.
fn wide_pair(dir: &Path, properties: usize) -> Pair {
    let write = |side: &str, changed: bool| {
        let mut text = crd_head("Wide");
        text.push_str("        properties:\n          spec:\n            type: object\n            properties:\n");
        for i in 0..properties {
            let _ = writeln!(text, "              f{i}:");
            match (changed && i % 1000 == 500, i % 3) {
                (true, 0) => text.push_str("                type: integer\n"),
                (true, 1) => {
                    text.push_str("                type: string\n                enum: [a, b]\n")
                }
                (true, _) => text.push_str(
                    "                type: string\n                description: a field\n",
                ),
                (false, _) => text.push_str("                type: string\n"),
            }
        }
        write_source(dir, &format!("wide-{properties}-{side}"), &text)
    };
    let (a, a_bytes) = write("a", false);
    let (b, b_bytes) = write("b", true);
    Pair {
        a,
        b,
        bytes: a_bytes + b_bytes,
        largest_file: a_bytes.max(b_bytes),
    }
}

/// The CRD with a description of `bytes` bytes on its root schema; the other source without
/// it and with a field more.
fn description_pair(dir: &Path, bytes: usize) -> Pair {
    let fields = "        properties:\n          spec:\n            type: object\n";
    let mut big = crd_head("Described");
    big.push_str("        description: ");
    let words = "a long description of an API ";
    big.extend(std::iter::repeat_n(words, bytes / words.len()));
    big.push('\n');
    big.push_str(fields);
    let (a, a_bytes) = write_source(dir, "description-a", &big);
    let mut small = crd_head("Described");
    small.push_str(fields);
    small.push_str("            properties:\n              size:\n                type: integer\n");
    let (b, b_bytes) = write_source(dir, "description-b", &small);
    Pair {
        a,
        b,
        bytes: a_bytes + b_bytes,
        largest_file: a_bytes.max(b_bytes),
    }
}

fn write_source(dir: &Path, name: &str, text: &str) -> (PathBuf, u64) {
    let source = dir.join(name);
    std::fs::create_dir_all(&source).expect("a source directory");
    let file = source.join("crd.yaml");
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    (source, text.len() as u64)
}

#[derive(Clone)]
struct Run {
    wall: f64,
    cpu: f64,
    peak_kib: u64,
}

/// One run under GNU time, output discarded; a run that fails stops the bench.
fn run(time: &Path, tool: &Path, args: &[String], dir: &Path) -> Run {
    let figures = dir.join("time.txt");
    let started = Instant::now();
    let out = Command::new(time)
        .args(["-f", "%M %U %S", "-o"])
        .arg(&figures)
        .arg(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", tool.display()));
    let wall = started.elapsed().as_secs_f64();
    // schema-diff exits 1 when it finds breaking changes, as these inputs have.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{} {} failed: {}",
        tool.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&figures).expect("GNU time's figures");
    let f: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let [kib, user, system] = f[..] else {
        panic!("GNU time wrote {text:?}");
    };
    Run {
        wall,
        cpu: user + system,
        peak_kib: kib as u64,
    }
}

#[derive(Clone, Copy)]
struct Figures {
    wall: f64,
    cpu: f64,
    peak_mb: f64,
}

impl Figures {
    fn of(runs: &[Run]) -> Figures {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Figures {
            wall: median(runs.iter().map(|r| r.wall).collect()),
            cpu: median(runs.iter().map(|r| r.cpu).collect()),
            peak_mb: median(
                runs.iter()
                    .map(|r| r.peak_kib as f64 * 1024.0 / 1e6)
                    .collect(),
            ),
        }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
