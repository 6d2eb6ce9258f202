//! Two operators on one migration, against the real local clusters. The Lease behaves like
//! client-go's leader election: two runs started at once, 100 ms or 700 ms apart (one drives,
//! the other is refused with the lease message or waits and finds it done); a driver SIGKILLed
//! and replaced at once (taken over once the lease has gone unrenewed for its duration); a
//! driver SIGSTOPped past its lease while another takes over (after SIGCONT it stops without
//! writing and leaves the other's lease alone); the destination's kube-apiserver stopped for
//! longer than the lease (the driver stops resumably, a rerun completes). The split-brain
//! observer watches every one of them.
//!
//! The test that stops an apiserver migrates to the outage cluster, which no other test uses.
use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::Value;
use support::sts::{Pair, SplitBrainObserver, assert_moved, migrate_to, run, state_dir, stderr};
use support::{CONTEXT_B, CONTEXT_OUTAGE, OUTAGE_CLUSTER, take_outage_cluster};

/// client-go's default, which the tool uses.
const LEASE_DURATION: Duration = Duration::from_secs(15);

/// A run of the plugin with `-o json`: its events as they come, its stderr lines (each with
/// the moment it arrived) at the end.
struct Running {
    child: Child,
    events: mpsc::Receiver<Value>,
    stderr: std::thread::JoinHandle<Vec<(Instant, String)>>,
}

impl Running {
    fn start(ns: &str, args: &[&str]) -> Running {
        Running::start_to(ns, CONTEXT_B, args)
    }

    fn start_to(ns: &str, destination: &str, args: &[&str]) -> Running {
        let mut child = migrate_to(ns, destination, args)
            .args(["-o", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (send, events) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let line = line.unwrap();
                let event = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if send.send(event).is_err() {
                    return;
                }
            }
        });
        let pipe = BufReader::new(child.stderr.take().unwrap());
        let stderr = std::thread::spawn(move || {
            pipe.lines()
                .map(|line| (Instant::now(), line.unwrap()))
                .collect()
        });
        Running {
            child,
            events,
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads events until one is a `phase` (`step-started`, ...) of one of `steps`; panics if
    /// the run ends first.
    fn wait_for_step(&self, phase: &str, steps: &[&str]) {
        loop {
            let event = self
                .events
                .recv_timeout(Duration::from_secs(180))
                .unwrap_or_else(|e| panic!("no {phase} of {steps:?} ({e})"));
            if event["event"] == phase && steps.iter().any(|s| event["step"] == *s) {
                return;
            }
        }
    }

    /// The events that have come so far and were not read yet.
    fn drain(&self) -> Vec<Value> {
        self.events.try_iter().collect()
    }

    /// Waits for the exit; the status, the events not read yet, and stderr.
    fn finish(self) -> (ExitStatus, Vec<Value>, String) {
        let (status, events, lines) = self.finish_timed();
        let err: Vec<String> = lines.into_iter().map(|(_, line)| line).collect();
        (status, events, err.join("\n"))
    }

    /// As `finish`, with stderr as lines and the moment each arrived.
    fn finish_timed(mut self) -> (ExitStatus, Vec<Value>, Vec<(Instant, String)>) {
        let status = self.child.wait().unwrap();
        let lines = self.stderr.join().unwrap();
        eprintln!("--- run {} exited {status}", self.child.id());
        for (_, line) in &lines {
            eprintln!("{line}");
        }
        (status, self.events.iter().collect(), lines)
    }
}

fn signal(pid: u32, signal: &str) {
    let out = std::process::Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kill -s {signal} {pid}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A process held with SIGSTOP; SIGCONT when dropped, so that a failing test cannot leave it
/// stopped.
struct Stopped(u32);

impl Stopped {
    fn stop(pid: u32) -> Stopped {
        signal(pid, "STOP");
        Stopped(pid)
    }

    /// The kube-apiserver of `cluster`, by the PID start.sh recorded.
    fn apiserver(cluster: &str) -> Stopped {
        let pids = std::fs::read_to_string(state_dir().join("pids")).unwrap();
        let pid = pids
            .lines()
            .find(|l| l.contains(&format!(" {cluster}/kube-apiserver ")))
            .and_then(|l| l.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no kube-apiserver of {cluster} in {pids}"));
        Stopped::stop(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-s", "CONT", &self.0.to_string()])
            .output();
    }
}

/// A set of 3 with one claim each in A, its claims as they were, and the split-brain observer.
struct Scene {
    pair: Pair,
    before: BTreeMap<String, (String, String)>,
    observer: SplitBrainObserver,
}

impl Scene {
    async fn new(prefix: &str) -> Scene {
        Scene::to(prefix, CONTEXT_B).await
    }

    async fn to(prefix: &str, destination: &str) -> Scene {
        let pair = Pair::to(prefix, destination).await;
        pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
            .await;
        let before = pair.claims(false).await;
        let observer = SplitBrainObserver::start_to(pair.ns(), destination);
        Scene {
            pair,
            before,
            observer,
        }
    }

    /// The Events the run with process id `pid` posted about the migration.
    async fn events_by(&self, pid: u32) -> usize {
        let clients = [self.pair.a.clone(), self.pair.b.clone()];
        events_posted_by(&clients, self.pair.ns(), pid).await
    }

    /// Everything moved, no two pods of an ordinal ever ran at once, and the lease was given
    /// back.
    async fn assert_moved_and_released(self) {
        assert_moved(&self.pair, &self.before, 3).await;
        let lease = Api::<Lease>::namespaced(self.pair.b.clone(), self.pair.ns())
            .get_opt("kubectl-migrate-web")
            .await
            .unwrap();
        assert!(lease.is_none(), "the last driver kept its lease: {lease:?}");
        self.observer.assert_never_split();
    }
}

/// Steps that write; `wait-pods-gone` and `wait-ready` with a health check only read.
fn writes(event: &Value) -> bool {
    event["event"] == "write"
        || (event["event"] == "step-finished"
            && !matches!(
                event["step"].as_str(),
                Some("wait-pods-gone" | "wait-ready")
            ))
}

/// The Events (events.k8s.io) about the migration that the run with process id `pid` posted,
/// in both clusters: their `reportingInstance` is the run's lease holder, `host/pid/random`.
async fn events_posted_by(clients: &[kube::Client], ns: &str, pid: u32) -> usize {
    let mut count = 0;
    for client in clients {
        let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), ns)
            .list(&Default::default())
            .await
            .unwrap();
        count += events
            .items
            .iter()
            .filter(|e| {
                e.reporting_instance
                    .as_deref()
                    .is_some_and(|i| i.contains(&format!("/{pid}/")))
            })
            .count();
    }
    count
}

/// One round: two identical runs, `delay` apart. Exactly one drives (starts steps, exit 0).
/// The other starts no step, writes nothing (no Event either) and never says `Done`: whatever
/// the interleaving, it exits 1 naming the driver, refused because it saw the driver renew the
/// lease, lost the race to create it, or took the lease the driver gave back and found the
/// migration completed by it. Only a run whose first look came after the driver had finished
/// (no race at all: a rerun) may exit 0, saying the migration was already complete, by whom.
/// Never an apply conflict.
async fn two_runs(delay: Duration, args: &'static [&'static str]) {
    let scene = Scene::new("two-runs").await;
    let ns = scene.pair.ns().to_string();
    let runs = tokio::task::spawn_blocking(move || {
        let first = Running::start(&ns, args);
        std::thread::sleep(delay);
        let second = Running::start(&ns, args);
        let pids = [first.pid(), second.pid()];
        (pids, [first.finish(), second.finish()])
    })
    .await
    .unwrap();
    let (pids, [first, second]) = runs;
    let drove = |events: &[Value]| events.iter().any(|e| e["event"] == "step-started");
    let (driver, other, (status, driver_events, err), (other_status, other_events, other_err)) =
        match (drove(&first.1), drove(&second.1)) {
            (true, false) => (pids[0], pids[1], first, second),
            (false, true) => (pids[1], pids[0], second, first),
            both => panic!("exactly one run drives, not {both:?}: {first:?} {second:?}"),
        };
    assert!(status.success(), "the driver failed: {err}");
    assert_eq!(
        driver_events.last().map(|e| e["result"].clone()),
        Some("succeeded".into()),
        "{driver_events:?}"
    );
    let wrote: Vec<&Value> = other_events.iter().filter(|e| writes(e)).collect();
    assert!(wrote.is_empty(), "the other run wrote: {wrote:?}");
    assert!(
        !other_err.contains("Done:")
            && !other_err.contains("ordinal moved")
            && !other_err.contains("ordinals moved"),
        "the other run claims the migration: {other_err}"
    );
    assert!(
        !other_err.to_lowercase().contains("conflict"),
        "the lease message, not an apply conflict: {other_err}"
    );
    let names_driver = other_err.contains(&format!("/{driver}/"));
    let result = other_events.last().map(|e| e["result"].clone());
    if other_status.success() {
        assert!(
            other_err.contains("the migration of web is already complete (completed by")
                && names_driver,
            "the other run exited 0 though the driver was still at work when it started: {other_err}"
        );
    } else {
        assert_eq!(other_status.code(), Some(1), "{other_err}");
        assert!(
            names_driver
                && (other_err.contains("is driving this migration")
                    || other_err.contains(
                        "completed the migration of web while this run waited for its turn"
                    ))
                && other_err.contains("Nothing was moved by this run"),
            "the other run names the driver: {other_err}"
        );
        assert_eq!(result, Some("refused".into()), "{other_events:?}");
    }
    assert_eq!(
        scene.events_by(other).await,
        0,
        "Events posted by the run that did not drive"
    );
    scene.assert_moved_and_released().await;
}

#[tokio::test]
async fn two_runs_started_100ms_apart_one_drives_and_the_other_is_refused_by_the_lease() {
    // A quick migration may end before the other run has seen a renewal: it then takes the
    // lease the driver gave back and finds the migration completed by the driver. With a
    // health check the driver renews while the other watches. At 700 ms the other starts while
    // the driver writes (the window in which its preflight used to meet the driver's
    // StatefulSet as an apply conflict). At once, both may try to create the lease: the one
    // that loses that race names the other.
    const CHECKED: &[&str] = &["--yes", "--health-check", "sleep 2"];
    tokio::join!(
        two_runs(Duration::from_millis(100), &["--yes"]),
        two_runs(Duration::from_millis(100), CHECKED),
        two_runs(Duration::from_millis(700), CHECKED),
        two_runs(Duration::ZERO, CHECKED),
    );
}

#[tokio::test]
async fn a_run_started_right_after_the_driver_was_sigkilled_takes_over_after_expiry() {
    let scene = Scene::new("killed-driver").await;
    let ns = scene.pair.ns().to_string();
    let (killed, (status, _, lines)) = tokio::task::spawn_blocking(move || {
        let mut driver = Running::start(&ns, &["--yes"]);
        // Once the first ordinal has arrived: its wait for Ready pods, or its verification
        // alone when the run found them Ready already.
        driver.wait_for_step("step-finished", &["wait-ready", "verify"]);
        driver.child.kill().unwrap();
        let killed = driver.pid();
        driver.finish();
        (killed, Running::start(&ns, &["--yes"]).finish_timed())
    })
    .await
    .unwrap();
    assert!(status.success(), "{lines:?}");
    let at = |text: &str| {
        lines
            .iter()
            .find(|(_, line)| line.contains(text) && line.contains(&format!("/{killed}/")))
            .unwrap_or_else(|| panic!("no line with {text:?} naming the killed run: {lines:?}"))
            .0
    };
    let watched = at("took over").duration_since(at("is held by"));
    // Its last renewal was up to a retry period before the kill, so a run that compared the
    // renew time with its clock would take over sooner; one that guessed from the process
    // table, at once.
    assert!(
        watched >= LEASE_DURATION - Duration::from_millis(300),
        "took over after watching the lease for {watched:?}"
    );
    scene.assert_moved_and_released().await;
}

#[tokio::test]
async fn a_driver_stopped_past_its_lease_stops_after_sigcont_and_leaves_the_new_lease_alone() {
    let scene = Scene::new("stopped-driver").await;
    let ns = scene.pair.ns().to_string();
    // The health check gives a quiet moment to stop the driver in: no request in flight.
    let args = ["--yes", "--health-check", "sleep 2"];
    let clients = [scene.pair.a.clone(), scene.pair.b.clone()];
    let runtime = tokio::runtime::Handle::current();
    let (stopped_pid, new_pid, stopped, new, (posted_while_stopped, status)) =
        tokio::task::spawn_blocking(move || {
            let driver = Running::start(&ns, &args);
            driver.wait_for_step("step-started", &["verify"]);
            let pause = Stopped::stop(driver.pid());
            let second = Running::start(&ns, &args);
            // It starts a step only once it holds the lease: taken over, 15 s after its first
            // look.
            second.wait_for_step("step-started", &["verify"]);
            // Whatever it said before it was stopped has been read by now.
            driver.drain();
            let posted = runtime.block_on(events_posted_by(&clients, &ns, driver.pid()));
            // --status names the run that drives now.
            let status = run(migrate_to(&ns, CONTEXT_B, &["--status"]));
            let status = String::from_utf8_lossy(&status.stdout).into_owned();
            drop(pause);
            let pids = (driver.pid(), second.pid());
            (
                pids.0,
                pids.1,
                driver.finish(),
                second.finish(),
                (posted, status),
            )
        })
        .await
        .unwrap();
    assert!(
        status.contains("; lease held by ") && status.contains(&format!("/{new_pid}/")),
        "--status names the driver: {status}"
    );
    let (status, after_cont, err) = stopped;
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains("took over the migration's Lease")
            && err.contains(&format!("/{new_pid}/"))
            && err.contains("Resume with:"),
        "the stopped driver says who took over: {err}"
    );
    let wrote: Vec<&Value> = after_cont.iter().filter(|e| writes(e)).collect();
    assert!(wrote.is_empty(), "wrote after SIGCONT: {wrote:?}");
    // Its Events are writes too: the steps it finished before the stop were posted then, or
    // are not posted at all once it has lost the lease.
    assert!(
        posted_while_stopped > 0,
        "the driver posted no Event before it was stopped"
    );
    assert_eq!(
        scene.events_by(stopped_pid).await,
        posted_while_stopped,
        "Events posted by the driver after it lost its lease"
    );
    let (status, _, err) = new;
    assert!(status.success(), "{err}");
    assert!(
        err.contains(&format!("/{stopped_pid}/")) && !err.contains("deleted by someone else"),
        "{err}"
    );
    scene.assert_moved_and_released().await;
}

#[tokio::test]
async fn the_destination_apiserver_unreachable_longer_than_the_lease_stops_the_driver() {
    let _outage = take_outage_cluster().await;
    let scene = Scene::to("apiserver-down", CONTEXT_OUTAGE).await;
    let ns = scene.pair.ns().to_string();
    let args = ["--yes", "--health-check", "sleep 2"];
    let (status, err, stopped_while_down) = tokio::task::spawn_blocking(move || {
        let mut driver = Running::start_to(&ns, CONTEXT_OUTAGE, &args);
        driver.wait_for_step("step-started", &["verify"]);
        let down = Stopped::apiserver(OUTAGE_CLUSTER);
        let since = Instant::now();
        let mut exited = None;
        while since.elapsed() < LEASE_DURATION + Duration::from_secs(5) {
            exited = exited.or_else(|| driver.child.try_wait().unwrap());
            std::thread::sleep(Duration::from_millis(200));
        }
        drop(down);
        let (status, _, err) = driver.finish();
        (status, err, exited.is_some())
    })
    .await
    .unwrap();
    assert!(
        stopped_while_down,
        "the driver was still running {LEASE_DURATION:?} after {CONTEXT_OUTAGE} stopped answering: {err}"
    );
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains("could not renew the migration's Lease")
            && err.contains("Resume with:\n  kubectl migrate statefulset web"),
        "{err}"
    );
    let out = run(migrate_to(scene.pair.ns(), CONTEXT_OUTAGE, &args));
    assert!(
        out.status.success(),
        "the resumed run failed: {}",
        stderr(&out)
    );
    scene.assert_moved_and_released().await;
}
