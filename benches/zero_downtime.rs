//! Benchmark: zero downtime, measured on a real replicated database (issue 33).
//!
//!   cargo bench --bench zero_downtime
//!
//! Needs the local clusters of `tests/cluster/start.sh a b c` (which start KWOK with
//! tests/cluster/pod-runner-stages.yaml) and, as the cluster tests do, KM_TEST_KUBECONFIG (the
//! path start.sh prints) and KM_TEST_BIN_DIR (the output of tests/cluster/build.sh, which holds
//! kubectl and etcd). In one run, with one pod runner (tests/suite/support/zero_downtime) running
//! every etcd member as a real process on its volume's directory, it moves a 3-member etcd
//! StatefulSet from km-a to km-b while clients write and read through every member:
//!
//! 1. with the plugin, then back with `--rollback`;
//! 2. with the plugin SIGKILLed 8 times at random points, each run resumed by the next;
//! 3. with the plugin and `--batch auto`, under a PodDisruptionBudget of maxUnavailable 1;
//! 4. with the in-cluster controller (issue 30): `kubectl-migrate controller run` against km-c,
//!    the management cluster, and a StatefulSetMigration applied there;
//! 5. by hand, the manual KEP-3335 procedure (one kubectl call per step);
//! 6. by stopping every member, then recreating the set in the destination on the same volumes
//!    (what a backup/restore move does, without its copying of the data).
//!
//! For each: the longest time without an acknowledged write, the failed requests, the
//! acknowledged writes and how many of them a final read no longer finds (must be 0), reads that
//! missed an acknowledged write, and whether the runner saw a data directory opened twice. The
//! figures go to stderr and target/bench-zero-downtime.txt; each database is removed afterwards
//! and its volumes are given back to the pool.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only says how to run it.
mod common;
#[path = "../tests/suite/support/zero_downtime/mod.rs"]
mod zero_downtime;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use common::ClusterBench;
use zero_downtime::Clusters;
use zero_downtime::database::{Database, Options};
use zero_downtime::migration::{
    Controller, ManualProcedure, Measurement, Migration, Plugin, StopAndRecreate, measure,
};
use zero_downtime::runner::PodRunner;

const SOURCE: &str = "km-a";
const DESTINATION: &str = "km-b";
/// Where the in-cluster controller runs and its StatefulSetMigration lives.
const MANAGEMENT: &str = "km-c";
const KILLS: u32 = 8;

const BENCH: ClusterBench = ClusterBench {
    name: "zero_downtime",
    start: "tests/cluster/start.sh a b c",
};

fn main() {
    if !BENCH.invoked("it moves an etcd cluster between the local clusters seven times") {
        return;
    }
    let clusters = Clusters::connect(
        &BENCH.path("KM_TEST_KUBECONFIG"),
        &BENCH.path("KM_TEST_BIN_DIR"),
        SOURCE,
        DESTINATION,
    )
    .unwrap_or_else(|e| BENCH.fail(&format!("{e}\n{}", BENCH.how_to_run())));
    let started = Instant::now();
    let id = format!("bench-{}", std::process::id());
    let runner = clusters
        .start_runner(&id)
        .unwrap_or_else(|e| BENCH.fail(&format!("cannot start the pod runner: {e}")));
    let logs = runner.log_dir().join("plugin");
    let plugin = |name: &str, args: &[&str], kills: u32| {
        let mut plugin = Plugin::new(name, args, logs.clone());
        plugin.kills = kills;
        plugin
    };

    let mut figures = Vec::new();
    let runs: Vec<(Options, Vec<Box<dyn Migration>>)> = vec![
        (
            Options::default(),
            vec![
                Box::new(plugin("plugin", &[], 0)),
                Box::new(plugin("plugin --rollback", &["--rollback"], 0)),
            ],
        ),
        (
            Options::default(),
            vec![Box::new(plugin(
                &format!("plugin, {KILLS} SIGKILLs and resumes"),
                &[],
                KILLS,
            ))],
        ),
        (
            Options {
                max_unavailable: Some(1),
                ..Options::default()
            },
            vec![Box::new(plugin(
                "plugin --batch auto, PDB maxUnavailable 1",
                &["--batch", "auto"],
                0,
            ))],
        ),
        (
            Options::default(),
            vec![Box::new(Controller {
                management: MANAGEMENT.into(),
                log_dir: logs.clone(),
            })],
        ),
        (Options::default(), vec![Box::new(ManualProcedure)]),
        (Options::default(), vec![Box::new(StopAndRecreate)]),
    ];
    for (options, migrations) in runs {
        figures.extend(run(&clusters, &runner, &options, migrations));
    }
    let overlaps = runner.overlaps();
    runner.stop();

    let report = report(&figures, &overlaps, started.elapsed().as_secs());
    eprintln!("{report}");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-zero-downtime.txt");
    if let Err(e) = std::fs::write(&out, &report) {
        eprintln!("bench: cannot write {}: {e}", out.display());
    }
    let plugin_lost: usize = figures
        .iter()
        .filter(|m| m.name.starts_with("plugin"))
        .map(|m| m.verification.lost.len())
        .sum();
    if plugin_lost > 0 || !overlaps.is_empty() {
        BENCH.fail(
            "the plugin lost acknowledged writes, or a data directory was opened twice (the \
             figures above; the pod runner's log says which)",
        );
    }
}

/// One database, moved by each of `migrations` in turn, then removed with its volumes released.
fn run(
    clusters: &Clusters,
    runner: &PodRunner,
    options: &Options,
    migrations: Vec<Box<dyn Migration>>,
) -> Vec<Measurement> {
    let db = Database::create(clusters, runner, options).unwrap_or_else(|e| halted(runner, &e));
    let mut figures = Vec::new();
    for mut migration in migrations {
        let m = measure(&db, runner, migration.as_mut()).unwrap_or_else(|e| halted(runner, &e));
        eprintln!("bench: {}", m.summary());
        figures.push(m);
    }
    db.tear_down(true)
        .unwrap_or_else(|e| halted(runner, &format!("removing the database: {e}")));
    figures
}

fn line(m: &Measurement) -> String {
    format!(
        "{:<44} {:>8.1} {:>10} {:>8} {:>8} {:>6} {:>6}  {}",
        m.name,
        m.moved_in.as_secs_f64(),
        m.load.longest_gap.as_millis(),
        m.load.failed(),
        m.verification.acked,
        m.verification.lost.len(),
        m.load.stale_reads.len(),
        m.notes
    )
}

fn report(figures: &[Measurement], overlaps: &[String], seconds: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "zero downtime: a 3-member etcd StatefulSet moved {SOURCE} -> {DESTINATION} under load \
         (3 writers at 40 writes/s, 1 reader at 40 reads/s, through every member)\n"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>8} {:>10} {:>8} {:>8} {:>6} {:>6}  notes",
        "move", "took s", "gap ms", "failed", "acked", "lost", "stale"
    );
    for m in figures {
        let _ = writeln!(out, "{}", line(m));
    }
    let _ = writeln!(
        out,
        "\ngap ms: the longest time without an acknowledged write; failed: requests (writes and \
         reads) with an error or no answer within 2 s; lost: acknowledged writes a final read \
         does not find; stale: reads that missed a write acknowledged before they were sent."
    );
    let refused: usize = figures.iter().map(|m| m.refusals.len()).sum();
    let _ = writeln!(
        out,
        "data directories opened twice: {} (refused starts: {refused}); whole run {seconds} s",
        overlaps.len()
    );
    for overlap in overlaps {
        let _ = writeln!(out, "  {overlap}");
    }
    out
}

/// Ends a run that failed half-way, saying what to do: the clusters may keep what it made.
fn halted(runner: &PodRunner, error: &str) -> ! {
    BENCH.fail(&format!(
        "{error}\nThe clusters may keep this run's database (a namespace zd-...) and its volumes. \
         Stop them (tests/cluster/stop.sh) and start them again before the next run. The pod \
         runner's and the plugin's logs are in {}",
        runner.log_dir().display()
    ))
}
