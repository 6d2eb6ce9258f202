//! The human gates of a StatefulSetMigration mid-way (spec.maxOrdinals, spec.paused,
//! spec.rollback), deleting it mid-way, and stopping the controller mid-run: each stops at a
//! safe point and leaves a state that the controller or the CLI goes on from. The same set-up
//! as `e2e_controller`: the controller as a process against km-c, km-a and km-b as members.
//!
//! "Mid-way" is made exact by the migration's health check, which holds each ordinal until the
//! test releases it ([`Gate`]): the test acts while ordinal K is being checked, so no test
//! depends on how fast the clusters are.
use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::ListParams;
use kube::{Api, Client};
use kubectl_migrate::controller::api::{Phase, StatefulSetMigration};

use super::e2e_controller::{
    Controller, apply, condition, install_crds, kubeconfig_secret, wait_condition, wait_for,
};
use support::process;
use support::sts::{Pair, SplitBrainObserver, assert_moved, assert_rolled_back, kubectl};
use support::sts::{migrate, run, stderr};
use support::{CONTEXT_C, TestNamespace, client, poll_until};

/// Long enough for a step on a busy machine; every wait ends as soon as its condition holds.
pub(crate) const LIMIT: Duration = Duration::from_secs(300);

/// How soon SIGTERM ends the controller whatever its runs are doing: well inside a Pod's
/// default grace period (30 s).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

/// A health check that holds ordinal K until the test releases it: it marks `at-K` when it
/// starts and waits for `go-K`.
pub(crate) struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, mark: &str, ordinal: i32) -> PathBuf {
        self.dir.path().join(format!("{mark}-{ordinal}"))
    }

    /// The spec's healthCheck.
    pub(crate) fn command(&self) -> String {
        let dir = self.dir.path().display();
        format!("touch {dir}/at-$ORDINAL; until [ -e {dir}/go-$ORDINAL ]; do sleep 0.1; done")
    }

    /// Whether ordinal `ordinal`'s health check has run.
    pub(crate) fn checking(&self, ordinal: i32) -> bool {
        self.path("at", ordinal).exists()
    }

    /// Waits until ordinal `ordinal`'s health check runs.
    pub(crate) async fn wait_checking(&self, ordinal: i32, controller: &Controller) {
        self.wait_checked_by(ordinal, "controller", || controller.log())
            .await;
    }

    /// [`Gate::wait_checking`] by a `runner` other than the controller, whose `log` tells
    /// why when the check never runs.
    async fn wait_checked_by(&self, ordinal: i32, runner: &str, log: impl Fn() -> String) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        while !self.checking(ordinal) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the health check of ordinal {ordinal} never ran; {runner} log:\n{}",
                log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Forgets that ordinal `ordinal`'s check ran, to see it run again.
    fn forget(&self, ordinal: i32) {
        std::fs::remove_file(self.path("at", ordinal)).unwrap();
    }

    /// Whether a process of the check still runs (its command line names the gate's
    /// directory).
    fn check_running(&self) -> bool {
        let dir = self.dir.path().display().to_string();
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(&dir))
        })
    }

    pub(crate) fn release(&self, ordinals: impl IntoIterator<Item = i32>) {
        for k in ordinals {
            std::fs::write(self.path("go", k), "").unwrap();
        }
    }
}

/// The PVC retention the rollback restores (so that `assert_rolled_back` can check it).
fn when_scaled_delete() -> serde_json::Value {
    serde_json::json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}})
}

/// A namespace of km-c with both members' kubeconfig Secrets, a set in km-a (three replicas
/// unless [`Scene::with_replicas`] says), the observer, and the resource's spec (held by
/// `gate`).
pub(crate) struct Scene {
    pub(crate) c: Client,
    pub(crate) home: TestNamespace,
    pub(crate) pair: Pair,
    pub(crate) before: std::collections::BTreeMap<String, (String, String)>,
    pub(crate) observer: SplitBrainObserver,
    pub(crate) gate: Gate,
}

impl Scene {
    pub(crate) async fn new(prefix: &str) -> Scene {
        Scene::with_replicas(prefix, 3).await
    }

    /// The same with a set of `replicas`.
    pub(crate) async fn with_replicas(prefix: &str, replicas: i32) -> Scene {
        install_crds();
        let c = client(CONTEXT_C).await;
        let home = TestNamespace::create(&c, CONTEXT_C, prefix).await;
        kubeconfig_secret(&home.name, "a");
        kubeconfig_secret(&home.name, "b");
        let pair = Pair::new(prefix).await;
        pair.create_set(replicas, &["data"], "OrderedReady", when_scaled_delete())
            .await;
        let before = pair.claims(false).await;
        let observer = SplitBrainObserver::start(pair.ns());
        Scene {
            c,
            home,
            pair,
            before,
            observer,
            gate: Gate::new(),
        }
    }

    pub(crate) fn spec(&self, extra: serde_json::Value) -> serde_json::Value {
        let mut spec = serde_json::json!({
            "statefulSetName": "web",
            "source": {"name": "km-a", "namespace": self.pair.ns()},
            "destination": {"name": "km-b", "namespace": self.pair.ns()},
            "healthCheck": self.gate.command(),
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    }

    pub(crate) fn api(&self) -> Api<StatefulSetMigration> {
        Api::namespaced(self.c.clone(), &self.home.name)
    }

    /// Applies migration `name` with the default spec, lets ordinal 2 move and holds the run in
    /// ordinal 1's health check.
    pub(crate) async fn hold_at_ordinal_1(&self, name: &str, controller: &Controller) {
        apply(&self.home.name, name, self.spec(serde_json::json!({})));
        self.gate.wait_checking(2, controller).await;
        self.gate.release([2]);
        self.gate.wait_checking(1, controller).await;
    }

    /// `kubectl patch stsm NAME --type merge` of the spec, as a person or GitOps would.
    pub(crate) fn patch(&self, name: &str, spec: serde_json::Value) {
        let patch = serde_json::json!({ "spec": spec }).to_string();
        let out = kubectl(&[
            "--context",
            CONTEXT_C,
            "-n",
            &self.home.name,
            "patch",
            "stsm",
            name,
            "--type",
            "merge",
            "-p",
            &patch,
        ]);
        assert!(out.status.success(), "{out:?}");
    }

    /// The replicas of the set in km-a and in km-b (0 when it is not there).
    async fn replicas(&self) -> (i32, i32) {
        let mut counts = [0; 2];
        for (i, in_b) in [false, true].into_iter().enumerate() {
            let set = self.pair.sets(in_b).get_opt("web").await.unwrap();
            counts[i] = set.and_then(|s| s.spec?.replicas).unwrap_or(0);
        }
        (counts[0], counts[1])
    }

    /// The notes of the resource's Events with `reason`.
    async fn notes(&self, name: &str, reason: &str) -> Vec<String> {
        let events: Api<Event> = Api::namespaced(self.c.clone(), &self.home.name);
        events
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect()
    }

    /// Waits for the Stopped Event on `name` that gives `reason` (never Ctrl-C: the controller
    /// names why it stops a run).
    async fn wait_stopped(&self, name: &str, reason: &str) {
        let note = self.wait_note(name, "Stopped", reason).await;
        assert!(!note.contains("Ctrl-C"), "{note}");
    }

    /// Waits for an Event `reason` on `name` whose note has `words`; returns the note.
    async fn wait_note(&self, name: &str, reason: &str, words: &str) -> String {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let notes = self.notes(name, reason).await;
            if let Some(note) = notes.iter().find(|n| n.contains(words)) {
                return note.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {reason} Event on {name} says {words:?}; those there: {notes:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// Waits until the resource's Progressing condition has `reason`.
async fn wait_reason(
    api: &Api<StatefulSetMigration>,
    name: &str,
    reason: &str,
    controller: &Controller,
) -> StatefulSetMigration {
    let what = format!("Progressing with reason {reason}");
    let wanted = |c: &Condition| c.type_ == "Progressing" && c.reason == reason;
    wait_for(api, name, &what, wanted, LIMIT, controller).await
}

#[tokio::test]
async fn max_ordinals_then_paused_then_rollback_each_take_effect_mid_way() {
    let scene = Scene::new("ctl-gates").await;
    let controller = Controller::start(&scene.home.name).await;
    let api = scene.api();
    apply(
        &scene.home.name,
        "gated",
        scene.spec(serde_json::json!({"maxOrdinals": 1})),
    );
    // The first ordinal (the highest) moves; then the run waits at the limit.
    scene.gate.wait_checking(2, &controller).await;
    // The run reads both members through shared watches, which /metrics counts.
    let watches = controller.metric("shared_watches");
    assert!(watches.is_some_and(|n| n > 0.0), "{watches:?}");
    scene.gate.release([2]);
    let waiting = wait_reason(&api, "gated", "MaxOrdinalsReached", &controller).await;
    // A run waiting at the limit has ended, and no watch outlives the runs reading it.
    poll_until(LIMIT, "the shared watches to end with the run", || async {
        controller.metric("shared_watches") == Some(0.0)
    })
    .await;
    let status = waiting.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Paused));
    assert_eq!(
        (status.ordinals_moved, status.ordinals_left),
        (Some(1), Some(2))
    );
    let progressing = condition(&waiting, "Progressing");
    assert_eq!(
        progressing.message,
        format!(
            "moved 1 ordinal(s) of web, as many as spec.maxOrdinals (1) allows; raise it to go on: kubectl patch stsm gated -n {} --type merge -p '{{\"spec\":{{\"maxOrdinals\":2}}}}'",
            scene.home.name
        )
    );
    assert_eq!(condition(&waiting, "Ready").reason, "MaxOrdinalsReached");
    assert_eq!(scene.replicas().await, (2, 1), "one ordinal moved, no more");
    scene
        .wait_note("gated", "MaxOrdinalsReached", "raise it")
        .await;

    // Raising the limit goes on; spec.paused stops the run at the next safe point: the ordinal
    // being checked finishes, no other starts.
    scene.patch("gated", serde_json::json!({"maxOrdinals": 3}));
    scene.gate.wait_checking(1, &controller).await;
    scene.patch("gated", serde_json::json!({"paused": true}));
    scene.gate.release([1]);
    let paused = wait_reason(&api, "gated", "Paused", &controller).await;
    assert_eq!(paused.status.as_ref().unwrap().phase, Some(Phase::Paused));
    let message = &condition(&paused, "Progressing").message;
    assert!(
        message.starts_with("paused by spec.paused; set it to false to go on"),
        "{message}"
    );
    scene
        .wait_stopped("gated", "paused by spec.paused at a safe point")
        .await;
    assert_eq!(
        scene.replicas().await,
        (1, 2),
        "the paused run moved no more"
    );

    // Rolling back from here brings everything back to km-a.
    scene.gate.release([0, 1, 2]);
    scene.patch(
        "gated",
        serde_json::json!({"paused": false, "rollback": true}),
    );
    let back = wait_condition(&api, "gated", "Ready", "True", LIMIT, &controller).await;
    assert_eq!(condition(&back, "Ready").reason, "RolledBack");
    assert_eq!(back.status.as_ref().unwrap().phase, Some(Phase::RolledBack));
    assert_rolled_back(&scene.pair, &scene.before, 3).await;
    scene.observer.assert_never_split();
}

#[tokio::test]
async fn a_migration_deleted_mid_way_stops_and_the_cli_resumes_or_rolls_it_back() {
    let scene = Scene::new("ctl-delete").await;
    let controller = Controller::start(&scene.home.name).await;
    scene.hold_at_ordinal_1("doomed", &controller).await;
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "-n",
        &scene.home.name,
        "delete",
        "stsm",
        "doomed",
        "--wait=false",
    ]);
    assert!(out.status.success(), "{out:?}");
    // The finalizer holds the resource until the run has stopped at its safe point.
    let api = scene.api();
    assert!(api.get_opt("doomed").await.unwrap().is_some());
    scene.gate.release([1]);
    poll_until(LIMIT, "the deleted resource to go", || async {
        api.get_opt("doomed").await.unwrap().is_none()
    })
    .await;
    let note = scene
        .wait_note("doomed", "Stopped", "deleted mid-way")
        .await;
    assert!(note.contains("--rollback"), "{note}");
    scene
        .wait_stopped(
            "doomed",
            "the StatefulSetMigration was deleted at a safe point",
        )
        .await;
    assert_eq!(scene.replicas().await, (1, 2));

    // The CLI sees a migration it can resume, and rolls it back.
    let status = run(migrate(scene.pair.ns(), &["--status", "-o", "json"]));
    assert!(status.status.success(), "{}", stderr(&status));
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(report["journal"]["direction"], "forward", "{report}");
    assert_eq!(report["destination"]["replicas"], 2, "{report}");
    scene.gate.release([0, 1, 2]);
    // The journal holds the health check the migration runs with; the CLI passes it again.
    let check = scene.gate.command();
    let out = run(migrate(
        scene.pair.ns(),
        &["--rollback", "--yes", "--health-check", &check],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Rolled back: web runs in km-a"));
    assert_rolled_back(&scene.pair, &scene.before, 3).await;
    drop(controller);
    scene.observer.assert_never_split();
}

/// SIGTERM while a health check hangs: the controller does not wait for the check (a Pod's
/// grace period would end it with SIGKILL), it abandons it at a safe point and exits 0; the
/// check is not recorded, so the CLI sees the migration resumable and the next run checks
/// the ordinal again.
#[tokio::test]
async fn sigterm_abandons_a_hanging_health_check_and_the_next_run_checks_again() {
    let scene = Scene::new("ctl-term").await;
    let mut controller = Controller::start(&scene.home.name).await;
    scene.hold_at_ordinal_1("moving", &controller).await;
    controller.signal("TERM");
    let exit = controller.exited_within(SHUTDOWN_LIMIT);
    let log = controller.log();
    assert!(exit.success(), "{exit:?}\n{log}");
    assert!(
        !scene.gate.check_running(),
        "the abandoned health check outlived the controller"
    );
    scene
        .wait_stopped("moving", "the controller is shutting down at a safe point")
        .await;
    assert_eq!(scene.replicas().await, (1, 2), "stopped mid-way");

    // Ordinal 1 runs in km-b but was never verified: the CLI sees a migration to resume
    // with that check.
    let status = run(migrate(scene.pair.ns(), &["--status", "-o", "json"]));
    assert!(status.status.success(), "{}", stderr(&status));
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let journal = &report["journal"];
    assert_eq!(
        (
            &journal["direction"],
            &journal["verifiedBound"],
            &journal["complete"]
        ),
        (&"forward".into(), &2.into(), &false.into()),
        "{report}"
    );
    assert_eq!(report["nextStep"], "verify ordinal 1 in km-b", "{report}");
    assert!(
        report["leaseHolder"].is_null(),
        "the Lease was kept: {report}"
    );

    // A restarted controller runs the check of ordinal 1 again and completes once it passes.
    scene.gate.forget(1);
    let controller = Controller::start(&scene.home.name).await;
    scene.gate.wait_checking(1, &controller).await;
    scene.gate.release([1, 0]);
    let done = wait_condition(&scene.api(), "moving", "Ready", "True", LIMIT, &controller).await;
    assert_eq!(condition(&done, "Ready").reason, "Completed");
    assert_moved(&scene.pair, &scene.before, 3).await;
    scene.observer.assert_never_split();
}

/// Ctrl-C while the CLI's health check hangs: the same as the controller's SIGTERM. The run
/// stops at once with exit 3 and the command that resumes it, which checks the ordinal again.
#[tokio::test]
async fn ctrl_c_abandons_a_hanging_health_check_of_the_cli() {
    let scene = Scene::new("cli-check").await;
    let check = scene.gate.command();
    let log = scene.gate.dir.path().join("cli.log");
    let mut cli = migrate(scene.pair.ns(), &["--yes", "--health-check", &check])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    scene.gate.wait_checked_by(2, "the CLI's", said).await;
    // SIGINT to the process alone, as `kill -INT` sends it: the check does not get it.
    process::signal(&cli, "INT");
    let exit = process::exit_within(&mut cli, SHUTDOWN_LIMIT, "SIGINT", said);
    let err = said();
    assert_eq!(exit.code(), Some(3), "{err}");
    assert!(
        err.contains("interrupted (Ctrl-C) at a safe point") && err.contains("Resume with:"),
        "{err}"
    );
    assert!(
        !scene.gate.check_running(),
        "the abandoned health check outlived the CLI"
    );
    let status = run(migrate(scene.pair.ns(), &["--status", "-o", "json"]));
    assert!(status.status.success(), "{}", stderr(&status));
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(report["journal"]["verifiedBound"], 3, "{report}");
    assert_eq!(report["nextStep"], "verify ordinal 2 in km-b", "{report}");

    scene.gate.forget(2);
    scene.gate.release([2, 1, 0]);
    let out = run(migrate(
        scene.pair.ns(),
        &["--yes", "--health-check", &check],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        scene.gate.checking(2),
        "the resumed run did not check ordinal 2 again"
    );
    assert_moved(&scene.pair, &scene.before, 3).await;
    scene.observer.assert_never_split();
}
