//! `kill -9` of the controller at random points of a migration and of a rollback, restarting
//! it each time: the next process resumes from the journal and the Lease in the members, and
//! the run completes with no ordinal in both clusters and every claim on its original volume.
//!
//! The points are drawn from a printed seed (`KM_KILL_SEED` replays them) and spread over the
//! run's steps: each comes a random number of writes after the restarted controller is ready,
//! writes that the test sees on the members (the run's and those its writes cause), and a
//! random delay after that. A kill while the new process still waits for the Lease the killed
//! one left is a point too. The health check of the last ordinal holds the run until the last
//! kill, so that a fast run cannot end with fewer.
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kubectl_migrate::controller::api::Phase;

use super::e2e_controller::{Controller, apply, condition, wait_condition, wait_for};
use super::e2e_controller_gates::{Gate, LIMIT, Scene};
use support::process::KillPoints;
use support::sts::{WatchThread, assert_moved, assert_rolled_back};
use support::{CONTEXT_A, CONTEXT_B, client};

/// The bar: at least this many kills in one run.
const KILLS: usize = 8;

/// The set's size: enough steps for the kills to spread over.
const REPLICAS: i32 = 5;

/// Counts the changes of the objects a migration writes or causes (StatefulSets, pods,
/// claims, the journal) in one namespace of both members.
struct Writes {
    count: Arc<AtomicU64>,
    _watches: WatchThread,
}

/// Counts `api`'s changes after its first list into `count`; says `listed` once listed.
async fn count_changes<K>(api: Api<K>, count: Arc<AtomicU64>, listed: std::sync::mpsc::Sender<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::InitDone) => {
                let _ = listed.send(());
            }
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                count.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

impl Writes {
    /// Starts counting in namespace `ns` of km-a and km-b; returns once every watch listed.
    fn start(ns: &str) -> Writes {
        let count: Arc<AtomicU64> = Arc::default();
        let (counted, ns) = (count.clone(), ns.to_string());
        let what = "the watches that count the members' writes";
        let watches = WatchThread::start(what, 8, move |listed| async move {
            let mut tasks = Vec::new();
            for context in [CONTEXT_A, CONTEXT_B] {
                let c = client(context).await;
                let (n, l) = (&counted, &listed);
                tasks.extend([
                    tokio::spawn(count_changes(
                        Api::<StatefulSet>::namespaced(c.clone(), &ns),
                        n.clone(),
                        l.clone(),
                    )),
                    tokio::spawn(count_changes(
                        Api::<Pod>::namespaced(c.clone(), &ns),
                        n.clone(),
                        l.clone(),
                    )),
                    tokio::spawn(count_changes(
                        Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns),
                        n.clone(),
                        l.clone(),
                    )),
                    tokio::spawn(count_changes(
                        Api::<ConfigMap>::namespaced(c, &ns),
                        n.clone(),
                        l.clone(),
                    )),
                ]);
            }
            tasks
        });
        Writes {
            count,
            _watches: watches,
        }
    }

    fn seen(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }
}

/// Runs the controller on `scene`'s migration and SIGKILLs it at `KILLS` random points
/// from `points`, restarting it after each; then lets `gate` pass the check of `last`, which
/// it holds so that the run cannot end before the last kill, and returns the controller
/// started after that kill, which is left to finish.
async fn kill_controller_at_random_points(
    scene: &Scene,
    writes: &Writes,
    points: &mut KillPoints,
    (gate, last): (&Gate, i32),
) -> Controller {
    for kill in 1..=KILLS {
        let mut controller = Controller::start(&scene.home.name).await;
        let after_writes = points.between(0, 2);
        let delay = Duration::from_millis(points.between(0, 800));
        let from = writes.seen();
        let deadline = tokio::time::Instant::now() + LIMIT;
        while writes.seen() < from + after_writes && !gate.checking(last) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no write on the members for {LIMIT:?} after the restart before kill {kill}; controller log:\n{}",
                controller.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(delay).await;
        let exit = controller.kill();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&exit),
            Some(9),
            "kill {kill}: the controller had exited before it ({exit:?}); log:\n{}",
            controller.log()
        );
        eprintln!(
            "kill {kill}: {after_writes} write(s) after the restart, then {delay:?} ({} writes seen so far{})",
            writes.seen(),
            if gate.checking(last) {
                format!("; ordinal {last} held in its check")
            } else {
                String::new()
            }
        );
    }
    gate.release([last]);
    Controller::start(&scene.home.name).await
}

#[tokio::test]
async fn a_migration_completes_through_kill_9_of_the_controller_at_random_points() {
    let scene = Scene::with_replicas("ctl-kill", REPLICAS).await;
    // Every health check passes at once (one more step per ordinal to be killed in) but the
    // last one's, ordinal 0's, held until the last kill.
    scene.gate.release(1..REPLICAS);
    let writes = Writes::start(scene.pair.ns());
    let mut points = KillPoints::seeded();
    apply(
        &scene.home.name,
        "killed",
        scene.spec(serde_json::json!({})),
    );
    let held = (&scene.gate, 0);
    let controller = kill_controller_at_random_points(&scene, &writes, &mut points, held).await;
    let done = wait_condition(&scene.api(), "killed", "Ready", "True", LIMIT, &controller).await;
    eprintln!("{} writes seen in all", writes.seen());
    assert_eq!(condition(&done, "Ready").reason, "Completed");
    let status = done.status.clone().unwrap();
    assert_eq!(
        (status.phase, status.ordinals_moved, status.ordinals_left),
        (Some(Phase::Completed), Some(REPLICAS as i64), Some(0))
    );
    assert_moved(&scene.pair, &scene.before, REPLICAS).await;
    scene.observer.assert_never_split();
}

#[tokio::test]
async fn a_rollback_mid_way_completes_through_kill_9_of_the_controller_at_random_points() {
    let scene = Scene::with_replicas("ctl-kill-back", REPLICAS).await;
    let api = scene.api();
    // Four of the five ordinals (4 to 1) move undisturbed; the rollback of them is what is
    // killed.
    scene.gate.release(1..REPLICAS);
    let controller = Controller::start(&scene.home.name).await;
    let spec = scene.spec(serde_json::json!({"maxOrdinals": 4}));
    apply(&scene.home.name, "killed", spec);
    let limit_reached = |c: &Condition| c.reason == "MaxOrdinalsReached";
    let what = "waiting at spec.maxOrdinals";
    wait_for(&api, "killed", what, limit_reached, LIMIT, &controller).await;
    drop(controller);
    // The way back has a check of its own, which holds ordinal 4, the last to come back.
    let back_check = Gate::new();
    back_check.release(1..4);
    let writes = Writes::start(scene.pair.ns());
    let mut points = KillPoints::seeded();
    let turn = serde_json::json!({"rollback": true, "healthCheck": back_check.command()});
    scene.patch("killed", turn);
    let held = (&back_check, 4);
    let controller = kill_controller_at_random_points(&scene, &writes, &mut points, held).await;
    let back = wait_condition(&api, "killed", "Ready", "True", LIMIT, &controller).await;
    eprintln!("{} writes seen in all", writes.seen());
    assert_eq!(condition(&back, "Ready").reason, "RolledBack");
    assert_eq!(back.status.unwrap().phase, Some(Phase::RolledBack));
    assert_rolled_back(&scene.pair, &scene.before, REPLICAS).await;
    scene.observer.assert_never_split();
}
