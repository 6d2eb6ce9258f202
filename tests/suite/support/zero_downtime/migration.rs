//! What moves the database, and the measurement of a move under load.
//!
//! A `Migration` performs one move of the database's StatefulSet and returns when it is done;
//! `measure` runs it while the clients write and read, and gathers what they saw. The plugin's
//! CLI is one implementation (forward, `--rollback`, killed and resumed, `--batch auto`); the
//! baselines are others (the manual KEP-3335 procedure, and stopping everything then recreating
//! it in the destination, what a backup/restore move does). The in-cluster controller of issue 30
//! will be one more: it performs the move by writing its resource and waiting for its status,
//! and `measure` gives the same figures for it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Clusters;
use super::database::{CLAIM_TEMPLATE, Database, SET, Side};
use super::load::{self, Load, Summary, Verification};
use super::manual_kep::{self, ManualKep};
use super::runner::{PodRunner, Refusal};

/// Something that moves the database from one cluster to the other.
pub trait Migration {
    /// What the reports call it.
    fn name(&self) -> String;
    /// Where the database runs once the move is done.
    fn lands_in(&self) -> Side;
    /// Performs the move; returns once it has completed, with notes for the report (or why it
    /// failed).
    fn perform(&mut self, db: &Database) -> Result<String, String>;
}

/// The plugin's CLI: `kubectl migrate statefulset db --context <source> --to-context
/// <destination> --yes -o json` with `args`, optionally SIGKILLed `kills` times at random points
/// and rerun (each rerun resumes), then run to completion.
pub struct Plugin {
    pub name: String,
    pub args: Vec<String>,
    pub kills: u32,
    /// Each run's output goes here.
    pub log_dir: PathBuf,
}

impl Plugin {
    pub fn new(name: &str, args: &[&str], log_dir: PathBuf) -> Plugin {
        Plugin {
            name: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            kills: 0,
            log_dir,
        }
    }

    fn command(&self, db: &Database) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kubectl-migrate"));
        command
            .env("KUBECONFIG", &db.clusters.kubeconfig)
            .env("NO_COLOR", "1")
            .args([
                "statefulset",
                SET,
                "-n",
                &db.namespace,
                "--context",
                db.context(Side::Source),
                "--to-context",
                db.context(Side::Destination),
                "--yes",
                "-o",
                "json",
            ])
            .args(&self.args)
            .stdin(Stdio::null());
        command
    }

    fn log(&self, db: &Database, run: u32) -> Result<(std::fs::File, std::fs::File), String> {
        std::fs::create_dir_all(&self.log_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.log_dir.display()))?;
        let path = |what: &str| {
            self.log_dir.join(format!(
                "{}-{}-run{run}.{what}",
                db.namespace,
                self.name.replace(' ', "-")
            ))
        };
        let open = |p: PathBuf| {
            std::fs::File::create(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))
        };
        Ok((open(path("events.jsonl"))?, open(path("stderr"))?))
    }

    /// Starts a run, waits until it has taken the lease and started a step, lets it work a random
    /// while, and SIGKILLs it. False when the run ended by itself first (the move is complete).
    fn kill_once(&self, db: &Database, run: u32, rng: &mut u64) -> Result<bool, String> {
        let (mut events, stderr) = self.log(db, run)?;
        let mut child = self
            .command(db)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start the plugin: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (started, lines) = std::sync::mpsc::channel();
        // Copies the events to the log, and says when the first step starts.
        let reader = std::thread::spawn(move || {
            let mut told = false;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = std::io::Write::write_all(&mut events, format!("{line}\n").as_bytes());
                if !told && line.contains(r#""event":"step-started""#) {
                    told = true;
                    let _ = started.send(());
                }
            }
        });
        let took_a_step = lines.recv().is_ok();
        let killed = if took_a_step {
            // The random point: up to 1 s into the run's work. A move of three members takes a
            // few seconds of work, so most runs are killed and eight kills usually fit; a run
            // that completes first ends the series (the notes say how many kills there were).
            std::thread::sleep(Duration::from_millis(next_random(rng) % 1000));
            child.try_wait().map_err(|e| e.to_string())?.is_none() && child.kill().is_ok()
        } else {
            false
        };
        let status = child.wait().map_err(|e| e.to_string())?;
        let _ = reader.join();
        if !killed && !status.success() {
            return Err(format!(
                "run {run} of the plugin failed by itself ({status}); see {}",
                self.log_dir.display()
            ));
        }
        Ok(killed)
    }
}

impl Migration for Plugin {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn lands_in(&self) -> Side {
        if self.args.iter().any(|a| a == "--rollback") {
            Side::Source
        } else {
            Side::Destination
        }
    }

    fn perform(&mut self, db: &Database) -> Result<String, String> {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        let mut rng = seed;
        let mut killed = 0;
        let mut run = 0;
        while killed < self.kills {
            run += 1;
            if !self.kill_once(db, run, &mut rng)? {
                break;
            }
            killed += 1;
        }
        run += 1;
        let (events, stderr) = self.log(db, run)?;
        let status = self
            .command(db)
            .stdout(events)
            .stderr(stderr)
            .status()
            .map_err(|e| format!("cannot start the plugin: {e}"))?;
        if !status.success() {
            return Err(format!(
                "the plugin's last run failed ({status}); its output is in {}",
                self.log_dir.display()
            ));
        }
        Ok(if self.kills > 0 {
            format!("{killed} SIGKILLs, {run} runs (kill seed {seed})")
        } else {
            String::new()
        })
    }
}

/// The manual KEP-3335 procedure, one kubectl call per step (manual_kep.rs).
pub struct ManualProcedure;

impl Migration for ManualProcedure {
    fn name(&self) -> String {
        "manual KEP procedure".into()
    }

    fn lands_in(&self) -> Side {
        Side::Destination
    }

    fn perform(&mut self, db: &Database) -> Result<String, String> {
        let mut kubectl = Kubectl {
            clusters: db.clusters,
            calls: 0,
        };
        procedure(db).run(&mut kubectl)?;
        Ok(format!("{} kubectl calls", kubectl.calls))
    }
}

/// Stop everything, then recreate it in the destination on the same volumes: what a
/// backup/restore move (Velero, pv-migrate) does, without its copying of the data.
pub struct StopAndRecreate;

impl Migration for StopAndRecreate {
    fn name(&self) -> String {
        "stop, then recreate".into()
    }

    fn lands_in(&self) -> Side {
        Side::Destination
    }

    fn perform(&mut self, db: &Database) -> Result<String, String> {
        let kep = procedure(db);
        let mut kubectl = Kubectl {
            clusters: db.clusters,
            calls: 0,
        };
        let mut protected = Vec::new();
        for ordinal in 0..db.members {
            protected.extend(kep.protect(&mut kubectl, ordinal)?);
        }
        let set = format!("statefulset/{SET}");
        kubectl.run(
            db.context(Side::Source),
            &["-n", &db.namespace, "scale", &set, "--replicas=0"],
        )?;
        for ordinal in 0..db.members {
            kep.wait_pod_gone(&mut kubectl, ordinal)?;
        }
        kep.copy(&mut kubectl, protected)?;
        kep.create_destination(&mut kubectl, db.members, 0)?;
        kep.wait_rollout(&mut kubectl, db.context(Side::Destination))?;
        Ok(format!("{} kubectl calls", kubectl.calls))
    }
}

fn procedure<'a>(db: &'a Database) -> ManualKep<'a> {
    ManualKep {
        namespace: &db.namespace,
        set: SET,
        claim_templates: &[CLAIM_TEMPLATE],
        replicas: db.members,
        source: db.context(Side::Source),
        destination: db.context(Side::Destination),
    }
}

/// kubectl against the clusters, counting its calls.
pub struct Kubectl<'c> {
    pub clusters: &'c Clusters,
    pub calls: usize,
}

impl Kubectl<'_> {
    fn run(&mut self, context: &str, args: &[&str]) -> Result<String, String> {
        manual_kep::Kubectl::call(self, context, args, None, false)
    }
}

impl manual_kep::Kubectl for Kubectl<'_> {
    fn call(
        &mut self,
        context: &str,
        args: &[&str],
        stdin: Option<&str>,
        _waits: bool,
    ) -> Result<String, String> {
        self.calls += 1;
        self.clusters.kubectl(context, args, stdin)
    }
}

/// What the clients saw while one migration ran.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub name: String,
    /// From the start of the move to its end, as the migration reported it.
    pub moved_in: Duration,
    pub load: Summary,
    pub verification: Verification,
    /// Starts the split-brain detector refused for this database's pods.
    pub refusals: Vec<Refusal>,
    /// Processes of this database that had a directory open at the same time (by the runner's
    /// records): none, when the detector works.
    pub overlaps: Vec<String>,
    pub notes: String,
}

impl Measurement {
    /// The figures in one line of words.
    pub fn summary(&self) -> String {
        let windows = &self.load.error_windows;
        let longest_window = windows.iter().map(|(from, to)| *to - *from).max();
        format!(
            "{}: moved in {:.1} s; longest time without an acknowledged write {} ms; {} writes \
             acknowledged, {} lost; {} requests failed, in {} error window{} (longest {} ms); {} \
             stale reads{}",
            self.name,
            self.moved_in.as_secs_f64(),
            self.load.longest_gap.as_millis(),
            self.verification.acked,
            self.verification.lost.len(),
            self.load.failed(),
            windows.len(),
            if windows.len() == 1 { "" } else { "s" },
            longest_window.unwrap_or_default().as_millis(),
            self.load.stale_reads.len(),
            if self.notes.is_empty() {
                String::new()
            } else {
                format!("; {}", self.notes)
            }
        )
    }
}

/// Acknowledged writes waited for before the move (the clients work) and after it (the
/// database serves from where it landed).
const SETTLE_WRITES: u64 = 100;
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

/// Runs `migration` on `db` while the clients write and read, then reads every key back.
/// Errors: the move failed, the database did not serve before or after, or the final read failed;
/// the figures themselves (lost writes, refusals) are for the caller to judge.
pub fn measure(
    db: &Database,
    runner: &PodRunner,
    migration: &mut dyn Migration,
) -> Result<Measurement, String> {
    let name = migration.name();
    let endpoints = db.endpoints();
    let load = Load::start(endpoints.clone());
    load.wait_for_acks(SETTLE_WRITES, SETTLE_LIMIT)
        .map_err(|e| format!("{name}: before the move: {e}"))?;
    eprintln!(
        "zero-downtime: {name}: moving {}/{SET} under load",
        db.namespace
    );
    let started = Instant::now();
    let notes = migration.perform(db).map_err(|e| format!("{name}: {e}"))?;
    let moved_in = started.elapsed();
    db.wait_serving_in(migration.lands_in())
        .map_err(|e| format!("{name}: after the move: {e}"))?;
    load.wait_for_acks(SETTLE_WRITES, SETTLE_LIMIT)
        .map_err(|e| format!("{name}: after the move: {e}"))?;
    let records = load.stop();
    let verification = load::verify(&endpoints, &records).map_err(|e| format!("{name}: {e}"))?;
    let in_this_database = |pod: &super::runner::PodRef| pod.namespace == db.namespace;
    Ok(Measurement {
        name,
        moved_in,
        load: Summary::of(&records),
        verification,
        refusals: runner
            .refusals()
            .into_iter()
            .filter(|r| in_this_database(&r.pod))
            .collect(),
        overlaps: super::runner::overlaps(
            &runner
                .processes()
                .into_iter()
                .filter(|l| in_this_database(&l.pod))
                .collect::<Vec<_>>(),
        ),
        notes,
    })
}

fn next_random(state: &mut u64) -> u64 {
    // xorshift64
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
