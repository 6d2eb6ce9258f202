//! `kubectl migrate statefulset` against the real local clusters: migrations with both pod
//! management policies under a split-brain observer, crashes at every step boundary and at random
//! points, drift, rollback, status, cleanup, events and health checks.
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use support::sts::{
    Pair, SplitBrainObserver, assert_moved, assert_rolled_back, kill_at_random_points, kubectl,
    migrate, run, stderr,
};

/// A move under the split-brain observer; `polling` observes with requests on every loop
/// iteration (`KUBECTL_MIGRATE_OBSERVE=poll`) instead of watches. The -v=6 request lines show
/// which way it observed.
async fn migration_moves_everything(policy: &str, polling: bool) {
    let mode = if polling { "poll" } else { "watch" };
    let pair = Pair::new(&format!("mig-{}-{mode}", policy.to_lowercase())).await;
    pair.create_set(5, &["data", "logs"], policy, serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    assert_eq!(before.len(), 10);
    let observer = SplitBrainObserver::start(pair.ns());
    let mut command = migrate(pair.ns(), &["--yes", "-v=6"]);
    command.env("KUBECTL_MIGRATE_OBSERVE", mode);
    let out = run(command);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Done: web runs in km-b"), "{err}");
    // What is left to do, and what it deletes, in the Done line and in --status.
    let offer = "--cleanup would delete the leftover StatefulSet, 10 PVCs and 10 PV objects of web in km-a (the storage is kept)";
    assert!(
        err.contains(&format!("\nOnce it serves well there, {offer}.")),
        "{err}"
    );
    let status = run(migrate(pair.ns(), &["--status"]));
    assert!(
        String::from_utf8_lossy(&status.stdout)
            .contains(&format!("next: nothing left to do; {offer}\n")),
        "{status:?}"
    );
    assert_moved(&pair, &before, 5).await;
    observer.assert_never_split();
    let requests = |what: &dyn Fn(&str) -> bool| err.lines().filter(|l| what(l)).count();
    // Watches of all PVs: a wait for one PV (that the PV controller has seen a copy) watches
    // that PV alone when there are no caches.
    let volume_watches = requests(&|l| {
        l.contains("/persistentvolumes?")
            && l.contains("watch=true")
            && !l.contains("fieldSelector=metadata.name")
    });
    let pod_list_requests =
        requests(&|l| l.starts_with("GET ") && l.contains("/pods?") && !l.contains("watch=true"));
    if polling {
        assert_eq!(
            volume_watches, 0,
            "no watch of all PVs when polling:\n{err}"
        );
        assert!(
            pod_list_requests > 20,
            "pods listed on every iteration:\n{err}"
        );
    } else {
        // Once per cluster, for the whole run.
        assert_eq!(volume_watches, 2, "one PV watch per cluster:\n{err}");
        assert!(pod_list_requests < 10, "pods come from the watch:\n{err}");
    }
}

#[tokio::test]
async fn moves_five_replicas_with_two_claim_templates_ordered_ready() {
    migration_moves_everything("OrderedReady", false).await;
}

#[tokio::test]
async fn moves_five_replicas_with_two_claim_templates_parallel() {
    migration_moves_everything("Parallel", false).await;
}

#[tokio::test]
async fn moves_five_replicas_observing_by_polling() {
    migration_moves_everything("Parallel", true).await;
}

/// Runs the tool with -o json and SIGKILLs it right after its first finished step; returns
/// true when the run ended by itself instead (nothing left to do).
fn run_until_first_step_then_kill(ns: &str) -> bool {
    let mut child = migrate(ns, &["--yes", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        let event: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        if event["event"] == "step-finished" {
            child.kill().unwrap();
            child.wait().unwrap();
            return false;
        }
    }
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "a run that was not killed failed: {status}"
    );
    true
}

#[tokio::test]
async fn sigkill_at_every_step_boundary_then_rerun_completes() {
    let pair = Pair::new("crash-steps").await;
    pair.create_set(4, &["data", "logs"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let observer = SplitBrainObserver::start(pair.ns());
    let ns = pair.ns().to_string();
    let kills = tokio::task::spawn_blocking(move || {
        let mut kills = 0;
        while !run_until_first_step_then_kill(&ns) {
            kills += 1;
            assert!(kills < 300, "no end in sight");
        }
        kills
    })
    .await
    .unwrap();
    assert!(
        kills >= 20,
        "expected a kill at each of the many step boundaries, got {kills}"
    );
    assert_moved(&pair, &before, 4).await;
    observer.assert_never_split();
}

#[tokio::test]
async fn sigkill_at_random_points_then_rerun_completes() {
    let pair = Pair::new("crash-random").await;
    pair.create_set(4, &["data"], "Parallel", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let observer = SplitBrainObserver::start(pair.ns());
    let ns = pair.ns().to_string();
    tokio::task::spawn_blocking(move || {
        kill_at_random_points(&ns, &["--yes", "-o", "json"], 24);
        let out = run(migrate(&ns, &["--yes"]));
        assert!(
            out.status.success(),
            "the final run failed: {}",
            stderr(&out)
        );
    })
    .await
    .unwrap();
    assert_moved(&pair, &before, 4).await;
    observer.assert_never_split();
}

#[tokio::test]
async fn json_events_stream_every_step_with_time_ordinal_and_cluster() {
    let pair = Pair::new("events").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let out = run(migrate(pair.ns(), &["--yes", "-o", "json"]));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every line once per key, one time format, a schema version, and a last line that says
    // how it ended.
    let time = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$").unwrap();
    for (line, e) in text.lines().zip(&events) {
        for key in e.as_object().unwrap().keys() {
            assert_eq!(line.matches(&format!("\"{key}\":")).count(), 1, "{line}");
        }
        assert!(time.is_match(e["time"].as_str().unwrap()), "{line}");
        assert_eq!(e["schemaVersion"], 1, "{line}");
    }
    let last = events.last().unwrap();
    assert_eq!(
        (&last["event"], &last["result"], &last["exitCode"]),
        (&"done".into(), &"succeeded".into(), &0.into()),
        "{last}"
    );
    let events: Vec<serde_json::Value> = events
        .into_iter()
        .filter(|e| e["event"].as_str().unwrap().starts_with("step-"))
        .collect();
    let started = events
        .iter()
        .filter(|e| e["event"] == "step-started")
        .count();
    let finished = events
        .iter()
        .filter(|e| e["event"] == "step-finished")
        .count();
    // A step whose object changed under it ends as "step-retried" and is decided again.
    let retried = events
        .iter()
        .filter(|e| e["event"] == "step-retried")
        .count();
    assert!(
        started >= 10 && started == finished + retried,
        "{started} started, {finished} finished, {retried} retried"
    );
    for e in &events {
        assert!(e["time"].as_str().is_some_and(|t| t.contains('T')), "{e}");
        assert!(e["cluster"] == "km-a" || e["cluster"] == "km-b", "{e}");
        assert!(e["ordinals"].is_array() && e["step"].is_string(), "{e}");
    }
    let copies: Vec<i64> = events
        .iter()
        .filter(|e| e["step"] == "copy-claim" && e["event"] == "step-finished")
        .map(|e| e["ordinals"][0].as_i64().unwrap())
        .collect();
    assert_eq!(copies, [1, 0], "highest ordinal first");
}

#[tokio::test]
async fn health_check_runs_per_ordinal_with_its_environment_and_a_failure_stops_resumably() {
    let pair = Pair::new("health").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("checks");
    // Fails once for ordinal 1, then passes.
    let check = format!(
        "echo \"$ORDINAL $POD $NAMESPACE $CONTEXT\" >> {log}; if [ \"$ORDINAL\" = 1 ] && [ ! -e {log}.failed ]; then touch {log}.failed; exit 7; fi",
        log = log.display()
    );
    let out = run(migrate(pair.ns(), &["--yes", "--health-check", &check]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("health check") && err.contains("ordinal 1"),
        "{err}"
    );
    assert!(
        err.contains("resumed with:") && err.contains("kubectl migrate statefulset web"),
        "{err}"
    );
    let out = run(migrate(pair.ns(), &["--yes", "--health-check", &check]));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = std::fs::read_to_string(&log).unwrap();
    let ns = pair.ns();
    assert_eq!(
        lines,
        format!("2 web-2 {ns} km-b\n1 web-1 {ns} km-b\n1 web-1 {ns} km-b\n0 web-0 {ns} km-b\n")
    );
}

#[tokio::test]
async fn a_source_scaled_down_by_hand_mid_run_stops_safely_and_explains() {
    let pair = Pair::new("drift-down").await;
    pair.create_set(4, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let observer = SplitBrainObserver::start(pair.ns());
    let kubeconfig = support::kubeconfig_path();
    // After ordinal 3 arrives, someone scales the source from 3 to 1 by hand.
    let check = format!(
        "[ \"$ORDINAL\" != 3 ] || {kubectl} --kubeconfig {kc} --context km-a -n {ns} scale statefulset web --replicas=1 >&2",
        kubectl = support::cluster_bin_dir().join("kubectl").display(),
        kc = kubeconfig.display(),
        ns = pair.ns()
    );
    let out = run(migrate(pair.ns(), &["--yes", "--health-check", &check]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("scaled it down by hand") && err.contains("Nothing more was changed"),
        "{err}"
    );
    let b = pair.sets(true).get("web").await.unwrap().spec.unwrap();
    assert_eq!(
        (b.replicas, b.ordinals.and_then(|o| o.start)),
        (Some(1), Some(3)),
        "the destination was left alone"
    );
    observer.assert_never_split();
}

/// The destination scaled down by hand between two --step runs: the next run names the
/// destination, changes nothing, and does not rescale it; the README promises that drift
/// stops the tool and is never "fixed".
#[tokio::test]
async fn a_destination_scaled_down_by_hand_is_named_and_left_alone() {
    let pair = Pair::new("drift-dest").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    for _ in 0..2 {
        let out = run(migrate(pair.ns(), &["--yes", "--step"]));
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    }
    let scaled = kubectl(&[
        "--context",
        "km-b",
        "-n",
        pair.ns(),
        "scale",
        "statefulset",
        "web",
        "--replicas=0",
    ]);
    assert!(scaled.status.success());
    let before = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--yes", "--step"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the destination was scaled down by hand")
            && err.contains("ordinals.start=1, replicas=2")
            && err.contains("Nothing more was changed"),
        "{err}"
    );
    assert!(
        !err.contains("the source has"),
        "the source is not blamed: {err}"
    );
    assert_eq!(
        pair.snapshot().await,
        before,
        "a drift stop wrote something"
    );
}

#[tokio::test]
async fn a_source_scaled_up_by_hand_mid_run_stops_safely_and_explains() {
    let pair = Pair::new("drift-up").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let kubeconfig = support::kubeconfig_path();
    let check = format!(
        "[ \"$ORDINAL\" != 2 ] || {kubectl} --kubeconfig {kc} --context km-a -n {ns} scale statefulset web --replicas=3 >&2",
        kubectl = support::cluster_bin_dir().join("kubectl").display(),
        kc = kubeconfig.display(),
        ns = pair.ns()
    );
    let out = run(migrate(pair.ns(), &["--yes", "--health-check", &check]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("assigned to both clusters")
            && err.contains("Scale the source back to 2 replicas"),
        "{err}"
    );
    let b = pair.sets(true).get("web").await.unwrap().spec.unwrap();
    assert_eq!(
        (b.replicas, b.ordinals.and_then(|o| o.start)),
        (Some(1), Some(2)),
        "the destination was left alone"
    );
}

const WHEN_SCALED_DELETE: &str = r#"{"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}}"#;

#[tokio::test]
async fn step_pauses_off_a_terminal_and_rollback_from_the_middle_returns_everything() {
    let pair = Pair::new("rollback-mid").await;
    pair.create_set(
        4,
        &["data"],
        "OrderedReady",
        serde_json::from_str(WHEN_SCALED_DELETE).unwrap(),
    )
    .await;
    let before = pair.claims(false).await;
    let observer = SplitBrainObserver::start(pair.ns());
    for expected_in_b in [1, 2] {
        let out = run(migrate(pair.ns(), &["--yes", "--step"]));
        assert_eq!(
            out.status.code(),
            Some(3),
            "a --step run pauses with exit 3"
        );
        assert!(
            stderr(&out).contains("paused after one step (--step)")
                && stderr(&out).contains("Resume with:"),
            "{}",
            stderr(&out)
        );
        let b = pair.sets(true).get("web").await.unwrap().spec.unwrap();
        assert_eq!(b.replicas, Some(expected_in_b));
    }
    // whenScaled=Delete was held at Retain: the claims of moved ordinals still exist in A.
    assert_eq!(pair.claims(false).await, before);
    let status = run(migrate(pair.ns(), &["--status", "-o", "json"]));
    assert!(status.status.success());
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(report["journal"]["direction"], "forward");
    assert_eq!(report["destination"]["replicas"], 2);
    let rows = report["ordinals"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["ordinal"], 3);
    assert_eq!(report["schemaVersion"], 1);
    // Data, not table words: the pod as an object, null where there is none.
    assert_eq!(rows[0]["destinationPod"]["ready"], true);
    assert_eq!(rows[0]["destinationPod"]["name"], "web-3");
    assert!(rows[0]["sourcePod"].is_null(), "{report}");
    assert_eq!(rows[0]["claims"][0]["inSource"], true);
    assert_eq!(rows[0]["claims"][0]["inDestination"], true);
    assert!(
        report["nextStep"].as_str().unwrap().contains("set km-a"),
        "{report}"
    );

    let out = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Rolled back: web runs in km-a"));
    assert_rolled_back(&pair, &before, 4).await;
    observer.assert_never_split();
}

#[tokio::test]
async fn rollback_from_the_end_returns_everything_and_cleanup_is_refused_after_it() {
    let pair = Pair::new("rollback-end").await;
    pair.create_set(
        3,
        &["data", "logs"],
        "Parallel",
        serde_json::from_str(WHEN_SCALED_DELETE).unwrap(),
    )
    .await;
    let before = pair.claims(false).await;
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert!(out.status.success());
    for in_b in [false, true] {
        let events = migration_events(&pair, in_b, "MigrationStep").await;
        assert!(
            events.len() >= 6,
            "each step is an Event on the StatefulSet in {}: {events:#?}",
            if in_b { "km-b" } else { "km-a" }
        );
        for e in &events {
            let holder = e.reporting_instance.as_deref().unwrap_or_default();
            assert!(!holder.is_empty(), "{e:?}");
            let note = e.note.as_deref().unwrap_or_default();
            assert!(note.contains(&format!("lease held by {holder}")), "{note}");
            assert!(note.contains("km-a -> km-b"), "{note}");
        }
        assert!(
            events.iter().any(|e| e.action.as_deref() == Some("resize")),
            "{events:#?}"
        );
        // describe lists the Events whose `regarding` carries the set's uid.
        let context = if in_b { "km-b" } else { "km-a" };
        let described = kubectl(&[
            "--context",
            context,
            "-n",
            pair.ns(),
            "describe",
            "sts",
            "web",
        ]);
        let described = String::from_utf8_lossy(&described.stdout);
        assert!(
            described.contains("MigrationStep"),
            "kubectl describe sts web in {context} shows the migration's Events:\n{described}"
        );
    }
    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(pair.ns(), &["--rollback", "--yes", "--batch", "2"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_rolled_back(&pair, &before, 3).await;
    observer.assert_never_split();
    for in_b in [false, true] {
        let events = migration_events(&pair, in_b, "MigrationRollbackStep").await;
        assert!(!events.is_empty(), "the rollback's steps are Events too");
    }
    let out = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("nothing to roll back"),
        "{}",
        stderr(&out)
    );
}

/// The Events (events.k8s.io/v1) the tool recorded on StatefulSet web with `reason`.
async fn migration_events(
    pair: &Pair,
    in_b: bool,
    reason: &str,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    let client = if in_b { &pair.b } else { &pair.a };
    let api: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(client.clone(), pair.ns());
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reporting_controller.as_deref() == Some("kubectl-migrate.io/statefulset")
                && e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("web")
        })
        .collect()
}

#[tokio::test]
async fn cleanup_removes_the_source_leftovers_but_never_the_storage() {
    let pair = Pair::new("cleanup").await;
    pair.create_set(
        2,
        &["data"],
        "OrderedReady",
        serde_json::from_str(WHEN_SCALED_DELETE).unwrap(),
    )
    .await;
    let before = pair.claims(false).await;
    let early = run(migrate(pair.ns(), &["--cleanup", "--yes"]));
    assert_eq!(
        early.status.code(),
        Some(1),
        "cleanup before any migration is refused"
    );
    let out = run(migrate(pair.ns(), &["--yes", "--batch", "2"]));
    assert!(out.status.success());
    let out = run(migrate(
        pair.ns(),
        &[
            "--cleanup",
            "--yes",
            "--restore-reclaim-policy",
            "-o",
            "json",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["claims"].as_array().unwrap().len(), 2);
    assert!(pair.sets(false).get_opt("web").await.unwrap().is_none());
    // Deletion waits for the pvc-protection finalizer, which goes once no pod uses the claim.
    support::poll_until(Duration::from_secs(30), "claims gone from A", || async {
        pair.claims(false).await.is_empty()
    })
    .await;
    for (volume, path) in before.values() {
        // The same finalizer wait for the PV objects (pv-protection), once their claims are gone.
        support::poll_until(
            Duration::from_secs(30),
            &format!("PV object {volume} removed from A"),
            || async { pair.volume(false, volume).await.is_none() },
        )
        .await;
        let pv = pair.volume(true, volume).await.expect("PV kept in B");
        assert_eq!(
            pv.status.clone().and_then(|s| s.phase).as_deref(),
            Some("Bound")
        );
        let spec = pv.spec.unwrap();
        assert_eq!(spec.host_path.unwrap().path, *path, "same storage");
        assert_eq!(
            spec.persistent_volume_reclaim_policy.as_deref(),
            Some("Delete"),
            "original reclaim policy restored on request"
        );
    }
    let retention = pair.sets(true).get("web").await.unwrap().spec.unwrap();
    assert_eq!(
        retention
            .persistent_volume_claim_retention_policy
            .and_then(|r| r.when_scaled)
            .as_deref(),
        Some("Delete"),
        "the destination set gets the source's original PVC retention back"
    );
    pair.wait_ready(true, 2).await;
    // A second cleanup finds the work done and says so, removing and reporting nothing.
    let out = run(migrate(
        pair.ns(),
        &[
            "--cleanup",
            "--yes",
            "--restore-reclaim-policy",
            "-o",
            "json",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["claims"], serde_json::json!([]), "{report}");
    assert_eq!(report["volumes"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["restoredReclaimPolicies"],
        serde_json::json!({}),
        "{report}"
    );
    assert!(report.get("restoredRetention").is_none(), "{report}");
    assert!(
        report["note"]
            .as_str()
            .unwrap_or("")
            .contains("already cleaned up"),
        "{report}"
    );
    let again = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("no longer possible"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test]
async fn server_dry_run_checks_every_write_and_changes_nothing() {
    let pair = Pair::new("dry-run").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--dry-run=server", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schemaVersion"], 1);
    let checks = report["serverDryRun"].as_array().unwrap();
    assert!(
        checks.len() >= 6 && checks.iter().all(|c| c["ok"] == true),
        "{report}"
    );
    let client = run(migrate(pair.ns(), &["--dry-run"]));
    assert!(client.status.success());
    assert!(
        String::from_utf8_lossy(&client.stdout)
            .contains("patch destination to ordinals.start=0, replicas=2 in one request")
    );
    assert_eq!(pair.snapshot().await, before, "a dry run wrote something");
}

#[tokio::test]
async fn ctrl_c_stops_at_a_safe_point_with_exit_3_and_the_resume_command() {
    let pair = Pair::new("sigint").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let ns = pair.ns().to_string();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = migrate(&ns, &["--yes", "-o", "json", "--health-check", "sleep 2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for line in lines.by_ref() {
            let event: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            if event["event"] == "step-started" && event["step"] == "verify" {
                break;
            }
        }
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        lines.for_each(drop);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("interrupted (Ctrl-C) at a safe point")
            && err.contains("Resume with:")
            && err.contains("kubectl migrate statefulset web")
            && err.contains("--health-check 'sleep 2'"),
        "the resume command keeps the health check: {err}"
    );
    let out = run(migrate(pair.ns(), &["--yes", "--health-check", "sleep 2"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_moved(&pair, &before, 3).await;
}

/// The observer itself must be able to fail: two pods of one ordinal at once are caught.
#[tokio::test]
#[should_panic(expected = "split brain observed")]
async fn the_observer_catches_a_real_overlap() {
    let pair = Pair::new("observer").await;
    let observer = SplitBrainObserver::start(pair.ns());
    for client in [&pair.a, &pair.b] {
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(client.clone(), pair.ns());
        let pod = support::sts::json(serde_json::json!({
            "metadata": {"name": "web-0"},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
        }));
        pods.create(&Default::default(), &pod).await.unwrap();
    }
    // Judged once both creations have reached the observer, however slow the watches are.
    observer.wait_for_created(2).await;
    observer.assert_never_split();
}

/// The journal deleted mid-migration, and then the destination set too (the "obvious fix"):
/// every run refuses and names --rebuild-journal, which rebuilds it from the copy labels and
/// the annotations protection left, so that the migration completes with every ordinal and a
/// rollback restores the original policies.
#[tokio::test]
async fn a_deleted_journal_is_rebuilt_from_the_clusters_and_the_migration_goes_on() {
    let pair = Pair::new("rebuild").await;
    pair.create_set(
        3,
        &["data"],
        "OrderedReady",
        serde_json::from_str(WHEN_SCALED_DELETE).unwrap(),
    )
    .await;
    let before = pair.claims(false).await;
    let out = run(migrate(pair.ns(), &["--yes", "--step"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let gone = kubectl(&[
        "--context",
        "km-b",
        "-n",
        pair.ns(),
        "delete",
        "configmap",
        "kubectl-migrate-web",
    ]);
    assert!(gone.status.success());
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("journal is gone") && stderr(&out).contains("--rebuild-journal"),
        "{}",
        stderr(&out)
    );
    let gone = kubectl(&[
        "--context",
        "km-b",
        "-n",
        pair.ns(),
        "delete",
        "statefulset",
        "web",
    ]);
    assert!(gone.status.success());
    let snapshot = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("claims copied by an earlier migration of web (data-web-2)")
            && stderr(&out).contains("--rebuild-journal"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pair.snapshot().await, snapshot, "a refusal wrote something");
    let out = run(migrate(
        pair.ns(),
        &["--rebuild-journal", "--yes", "-o", "json"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let rebuilt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let journal = &rebuilt["journal"];
    assert_eq!(journal["replicas"], 3, "{rebuilt}");
    assert!(
        journal["originalReclaimPolicies"]
            .as_object()
            .unwrap()
            .values()
            .all(|p| p == "Delete"),
        "the originals come back from the PV annotations: {rebuilt}"
    );
    assert_eq!(journal["originalRetention"]["whenScaled"], "Delete");
    assert_eq!(rebuilt["warnings"], serde_json::json!([]), "{rebuilt}");
    let again = run(migrate(pair.ns(), &["--rebuild-journal", "--yes"]));
    assert_eq!(
        again.status.code(),
        Some(1),
        "a journal is never overwritten"
    );
    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_moved(&pair, &before, 3).await;
    let out = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_rolled_back(&pair, &before, 3).await;
    observer.assert_never_split();
}
