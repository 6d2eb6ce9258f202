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
        let (started, steps) = std::sync::mpsc::channel();
        // Copies the events to the log, and says when each step starts.
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = std::io::Write::write_all(&mut events, format!("{line}\n").as_bytes());
                if line.contains(r#""event":"step-started""#) {
                    let _ = started.send(());
                }
            }
        });
        // The random point: in the first or second step the run starts, up to 0.2 s after it
        // started. Each run resumes where the last was killed, so the kills spread over the whole
        // move (a move of three members is about 20 steps). Later points let the move complete
        // after 6 or 7 kills: the clusters go on stopping and starting pods while a resume waits
        // for the lease, so a run finds much of its waiting done. A run that completes first
        // ends the series (the notes say how many kills there were).
        let step = 1 + next_random(rng) % 2;
        let reached = (0..step).all(|_| steps.recv().is_ok());
        let killed = if reached {
            std::thread::sleep(Duration::from_millis(next_random(rng) % 200));
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

/// The in-cluster controller (issue 30), run as a process against a management cluster as its
/// own tests run it: the move is a StatefulSetMigration applied with kubectl in a namespace of
/// the database's name there, with the members' kubeconfigs in Secrets beside it; it is done when
/// the resource's Ready condition is True.
pub struct Controller {
    /// The management cluster's context (km-c).
    pub management: String,
    /// The controller's log goes here.
    pub log_dir: PathBuf,
}

const CONTROLLER_LIMIT: Duration = Duration::from_secs(300);

impl Migration for Controller {
    fn name(&self) -> String {
        "in-cluster controller".into()
    }

    fn lands_in(&self) -> Side {
        Side::Destination
    }

    fn perform(&mut self, db: &Database) -> Result<String, String> {
        let clusters = db.clusters;
        let management = self.management.as_str();
        let crds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
        let crds = crds.to_string_lossy();
        let kubectl =
            |args: &[&str], stdin: Option<&str>| clusters.kubectl(management, args, stdin);
        kubectl(
            &["apply", "--server-side", "--force-conflicts", "-f", &crds],
            None,
        )?;
        kubectl(
            &[
                "wait",
                "--for=condition=Established",
                "crd/statefulsetmigrations.kubectl-migrate.io",
            ],
            None,
        )?;
        let namespace = db.namespace.as_str();
        kubectl(&["create", "namespace", namespace], None)?;
        let state = clusters
            .kubeconfig
            .parent()
            .unwrap_or(std::path::Path::new("."));
        for side in [Side::Source, Side::Destination] {
            let context = db.context(side);
            // start.sh writes each cluster's own kubeconfig next to the combined one.
            let file = state
                .join(context.trim_start_matches("km-"))
                .join("kubeconfig");
            kubectl(
                &[
                    "-n",
                    namespace,
                    "create",
                    "secret",
                    "generic",
                    &format!("{context}-kubeconfig"),
                    &format!("--from-file=value={}", file.display()),
                ],
                None,
            )?;
        }
        let mut controller = self.start(clusters, namespace)?;
        let resource = serde_json::json!({
            "apiVersion": "kubectl-migrate.io/v1alpha1",
            "kind": "StatefulSetMigration",
            "metadata": {"name": SET, "namespace": namespace},
            "spec": {
                "statefulSetName": SET,
                "source": {"name": db.context(Side::Source), "namespace": namespace},
                "destination": {"name": db.context(Side::Destination), "namespace": namespace},
            }
        });
        let done = kubectl(&["apply", "-f", "-"], Some(&resource.to_string())).and_then(|_| {
            super::wait_until(
                CONTROLLER_LIMIT,
                "the StatefulSetMigration to be Ready",
                || {
                    let out = kubectl(
                        &[
                            "-n",
                            namespace,
                            "get",
                            "statefulsetmigration",
                            SET,
                            "-o",
                            "json",
                        ],
                        None,
                    )?;
                    let object: serde_json::Value = serde_json::from_str(&out)
                        .map_err(|e| format!("kubectl get printed no JSON: {e}"))?;
                    match ready(&object) {
                        Some(("True", _)) => Ok(()),
                        Some(("False", reason)) if reason != "Running" => Err(format!(
                            "the controller stopped the move: {}",
                            object["status"]
                        )),
                        _ => Err(format!("not yet: {}", object["status"])),
                    }
                },
            )
        });
        // SIGTERM: the controller stops at a safe point, as in a rollout of its Deployment.
        if let Some(pid) = rustix::process::Pid::from_raw(controller.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let _ = controller.wait();
        let _ = kubectl(&["delete", "namespace", namespace, "--wait=false"], None);
        done.map(|()| String::new())
            .map_err(|e| format!("{e}; the controller's log is in {}", self.log_dir.display()))
    }
}

impl Controller {
    /// Starts `kubectl-migrate controller run` on `namespace` of the management cluster and
    /// returns once its /readyz answers.
    fn start(&self, clusters: &Clusters, namespace: &str) -> Result<std::process::Child, String> {
        std::fs::create_dir_all(&self.log_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.log_dir.display()))?;
        let log_path = self.log_dir.join(format!("{namespace}-controller.log"));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for the controller's probes: {e}"))?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-migrate"))
            .env("KUBECONFIG", &clusters.kubeconfig)
            .args([
                "controller",
                "run",
                "--context",
                &self.management,
                "-n",
                namespace,
            ])
            .args(["--probe-addr", &addr, "-v=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start the controller: {e}"))?;
        let answered =
            super::wait_until(Duration::from_secs(60), "the controller's /readyz", || {
                if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                    return Err(format!("the controller exited ({status})"));
                }
                readyz(&addr)
            });
        if let Err(e) = answered {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{e}; its log is {}", log_path.display()));
        }
        Ok(child)
    }
}

/// The Ready condition of a StatefulSetMigration: its status and reason.
fn ready(object: &serde_json::Value) -> Option<(&str, &str)> {
    let condition = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?;
    Some((
        condition["status"].as_str()?,
        condition["reason"].as_str().unwrap_or_default(),
    ))
}

/// GET /readyz on `addr`: Ok once it answers 200.
fn readyz(addr: &str) -> Result<(), String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    if answer.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        Err(format!(
            "answered {}",
            answer.lines().next().unwrap_or("nothing")
        ))
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
