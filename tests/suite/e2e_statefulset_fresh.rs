//! `--volumes=fresh` on the real local clusters: the destination's pods get new claims bound to
//! PVs of the destination's own pool, the source's claims and PVs stay as they were (Retain)
//! through SIGKILLs at random points, and a rollback gives every ordinal its original claims.
use crate::support;

use support::sts::{
    Pair, SplitBrainObserver, kill_at_random_points, kubectl, migrate, run, stderr,
};

const CHECK: &str = "test -n \"$POD\"";

#[tokio::test]
async fn fresh_volumes_bind_new_claims_keep_the_sources_and_roll_back_onto_them() {
    let pair = Pair::new("fresh").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    assert_eq!(before.len(), 3);

    // Without a gate (or an explicit "none"), refused before anything is read or written.
    let snapshot = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--volumes=fresh", "--yes"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--health-check"), "{}", stderr(&out));
    assert_eq!(pair.snapshot().await, snapshot, "a refusal wrote something");

    // The plan says which mode runs and copies no claim.
    let plan = run(migrate(
        pair.ns(),
        &[
            "--volumes=fresh",
            "--health-check",
            CHECK,
            "--dry-run",
            "-o",
            "json",
        ],
    ));
    assert!(plan.status.success(), "{}", stderr(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(plan["plan"]["volumes"], "fresh", "{plan}");
    let actions = plan_actions(&plan);
    assert!(
        !actions.iter().any(|a| a.starts_with("copy PVC")),
        "{actions:?}"
    );
    // ... and that the PV of each new claim is set to Retain, its policy recorded first.
    for claim in before.keys() {
        let protect = format!(
            "set the reclaim policy of the PV of new PVC {claim} to Retain (recorded first in the journal"
        );
        assert!(
            actions.iter().any(|a| a.starts_with(&protect)),
            "{protect}: {actions:?}"
        );
    }

    let observer = SplitBrainObserver::start(pair.ns());
    let ns = pair.ns().to_string();
    tokio::task::spawn_blocking(move || {
        let args = ["--volumes=fresh", "--health-check", CHECK, "--yes"];
        kill_at_random_points(&ns, &args, 8);
        let out = run(migrate(&ns, &args));
        assert!(
            out.status.success(),
            "the final run failed: {}",
            stderr(&out)
        );
        // A resume must name the mode it was started with.
        let out = run(migrate(&ns, &["--health-check", CHECK, "--yes"]));
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
        assert!(stderr(&out).contains("--volumes=fresh"), "{}", stderr(&out));
    })
    .await
    .unwrap();
    pair.wait_ready(true, 3).await;

    let moved = pair.claims(true).await;
    assert_eq!(
        moved.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "one claim per ordinal in B"
    );
    for (claim, (volume, _)) in &moved {
        assert!(
            !volume.is_empty() && before.values().all(|(v, _)| v != volume),
            "{claim} in B is bound to {volume:?}, not a new PV of B's pool"
        );
        let pv = pair.volume(true, volume).await.unwrap();
        assert_eq!(pv.status.and_then(|s| s.phase).as_deref(), Some("Bound"));
    }
    assert_eq!(
        pair.claims(false).await,
        before,
        "the source's claims and PVs untouched"
    );
    for (volume, _) in before.values() {
        let pv = pair.volume(false, volume).await.unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain"),
            "{volume} kept for a rollback"
        );
    }

    // Each new PV is Retain, and the journal holds the policy it had (the pool's Delete).
    let journal = journal(&pair).await;
    for (volume, _) in moved.values() {
        let pv = pair.volume(true, volume).await.unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain"),
            "{volume} in B"
        );
        assert_eq!(
            journal["originalDestinationReclaimPolicies"][volume], "Delete",
            "{journal}"
        );
    }

    // --status shows each claim's volume in each cluster: the kept one and the fresh one.
    let out = run(migrate(pair.ns(), &["--status", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["volumes"], "fresh", "{status}");
    for row in status["ordinals"].as_array().unwrap() {
        let claim = &row["claims"][0];
        let name = claim["claim"].as_str().unwrap();
        assert_eq!(
            claim["volume"].as_str(),
            Some(before[name].0.as_str()),
            "{row}"
        );
        assert_eq!(
            claim["destinationVolume"].as_str(),
            Some(moved[name].0.as_str()),
            "{row}"
        );
        assert_eq!(claim["sourceReclaimPolicy"], "Retain", "{row}");
        let fresh = pair.volume(true, &moved[name].0).await.unwrap();
        assert_eq!(
            claim["destinationReclaimPolicy"].as_str(),
            fresh
                .spec
                .unwrap()
                .persistent_volume_reclaim_policy
                .as_deref(),
            "{row}"
        );
    }

    // A rollback planned, by the client and by the servers, writes nothing; it needs neither
    // --volumes=fresh nor --health-check again (the journal has them), and it restores the
    // new PVs' policies.
    let snapshot = pair.snapshot().await;
    let out = run(migrate(
        pair.ns(),
        &["--rollback", "--dry-run", "-o", "json"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["plan"]["direction"], "rollback", "{plan}");
    assert_eq!(plan["plan"]["volumes"], "fresh", "{plan}");
    let actions = plan_actions(&plan);
    for (volume, _) in moved.values() {
        let restore = format!("restore reclaim policy Delete on PV {volume}");
        assert!(
            actions.contains(&restore.as_str()),
            "{restore}: {actions:?}"
        );
    }
    assert!(
        actions
            .iter()
            .any(|a| a.starts_with("run health check `test -n")),
        "the journal's health check: {actions:?}"
    );
    let out = run(migrate(
        pair.ns(),
        &["--rollback", "--dry-run=server", "-o", "json"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts = judged["serverDryRun"].as_array().unwrap();
    assert!(
        verdicts.iter().any(|v| v["action"]
            .as_str()
            .unwrap()
            .starts_with("set the reclaim policy of PV")),
        "{judged}"
    );
    assert!(verdicts.iter().all(|v| v["ok"] == true), "{judged}");
    assert_eq!(
        pair.snapshot().await,
        snapshot,
        "a planned rollback wrote something"
    );

    let out = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert!(
        out.status.success(),
        "the rollback failed: {}",
        stderr(&out)
    );
    let kept = format!(
        "PVCs {}, made for the moved pods (--volumes=fresh), their PVs back at the reclaim policies they had",
        moved.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    assert!(stderr(&out).contains(&kept), "{}", stderr(&out));
    assert_eq!(pair.claims(true).await, moved, "the fresh claims are kept");
    for (volume, _) in moved.values() {
        assert_policy_given_back(&pair, volume).await;
    }
    pair.wait_ready(false, 3).await;
    assert_eq!(
        pair.claims(false).await,
        before,
        "every ordinal back on its original claim"
    );
    observer.assert_never_split();

    // Nothing of the migration is left, but the kept claims stop a new one: --status says
    // what preflight says instead of offering a start.
    let out = run(migrate(pair.ns(), &["--status", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let next = status["nextStep"].as_str().unwrap();
    assert!(
        next.starts_with("none yet: preflight refuses a migration now:"),
        "{next}"
    );
    let first = moved.keys().next().unwrap();
    assert!(next.contains(first.as_str()), "{next}");
}

/// The journal deleted after a step with fresh volumes: `--rebuild-journal` finds the new PVs'
/// original policies in the annotations protection left on them (writing only the journal),
/// so that a rollback from the rebuilt journal gives them back.
#[tokio::test]
async fn a_rebuilt_journal_recovers_the_fresh_volumes_policies_for_a_rollback() {
    let pair = Pair::new("fresh-rebuild").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let fresh = ["--volumes=fresh", "--health-check", CHECK];
    let out = run(migrate(
        pair.ns(),
        &[&fresh[..], &["--yes", "--step"]].concat(),
    ));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let moved = pair.claims(true).await;
    assert_eq!(moved.len(), 1, "ordinal 1 on a new claim in B: {moved:?}");
    let (volume, _) = moved.values().next().unwrap().clone();
    assert_eq!(
        journal(&pair).await["originalDestinationReclaimPolicies"][&volume],
        "Delete"
    );
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

    let snapshot = pair.snapshot().await;
    let out = run(migrate(
        pair.ns(),
        &[&fresh[..], &["--rebuild-journal", "--yes", "-o", "json"]].concat(),
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let rebuilt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rebuilt["journal"]["originalDestinationReclaimPolicies"],
        serde_json::json!({ volume.clone(): "Delete" }),
        "{rebuilt}"
    );
    // Every original is known: the PVs' from their annotations, the source's retention because
    // it was Retain from the start (held policies carry their annotation), so nothing is warned.
    assert_eq!(rebuilt["warnings"], serde_json::json!([]), "{rebuilt}");
    assert_eq!(
        rebuilt["journal"]["originalRetention"],
        serde_json::json!({"whenScaled": "Retain", "whenDeleted": "Retain"}),
        "{rebuilt}"
    );
    assert_eq!(
        changed(&snapshot, &pair.snapshot().await),
        ["b/cm/kubectl-migrate-web"],
        "the rebuild writes the journal and nothing else"
    );

    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(pair.ns(), &["--rollback", "--yes"]));
    assert!(
        out.status.success(),
        "the rollback failed: {}",
        stderr(&out)
    );
    assert_policy_given_back(&pair, &volume).await;
    pair.wait_ready(false, 2).await;
    assert_eq!(
        pair.claims(false).await,
        before,
        "every ordinal on its original claim"
    );
    observer.assert_never_split();
}

/// After a migration with fresh volumes, `--cleanup --restore-reclaim-policy` gives the new PVs
/// in the destination the policies they had (the pool's Delete), writing only those PVs and the
/// journal there; a second cleanup finds nothing left.
#[tokio::test]
async fn cleanup_restores_the_fresh_volumes_policies_on_request() {
    let pair = Pair::new("fresh-cleanup").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let out = run(migrate(
        pair.ns(),
        &["--volumes=fresh", "--health-check", CHECK, "--yes"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    pair.wait_ready(true, 2).await;
    let moved = pair.claims(true).await;
    assert_eq!(moved.len(), 2, "{moved:?}");

    let snapshot = pair.snapshot().await;
    let out = run(migrate(pair.ns(), CLEANUP));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let restored: serde_json::Value = moved
        .values()
        .map(|(volume, _)| (volume.clone(), serde_json::json!("Delete")))
        .collect::<serde_json::Map<_, _>>()
        .into();
    assert_eq!(report["restoredReclaimPolicies"], restored, "{report}");
    for (volume, _) in moved.values() {
        assert_policy_given_back(&pair, volume).await;
    }
    let after = pair.snapshot().await;
    let mut written_in_b: Vec<String> = moved
        .values()
        .map(|(volume, _)| format!("b/pv/{volume}"))
        .chain(["b/cm/kubectl-migrate-web".to_string()])
        .collect();
    written_in_b.sort();
    assert_eq!(
        changed(&snapshot, &after)
            .into_iter()
            .filter(|key| key.starts_with("b/"))
            .collect::<Vec<_>>(),
        written_in_b,
        "in B, only the new PVs and the journal are written"
    );
    assert_eq!(
        pair.claims(true).await,
        moved,
        "the claims in B are untouched"
    );
    pair.wait_ready(true, 2).await;

    let out = run(migrate(pair.ns(), CLEANUP));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        pair.snapshot().await,
        after,
        "a second cleanup wrote something"
    );
}

const CLEANUP: &[&str] = &[
    "--cleanup",
    "--restore-reclaim-policy",
    "--yes",
    "-o",
    "json",
];

/// PV `volume` in B has its pool's policy (Delete) back, and no annotation keeping another.
async fn assert_policy_given_back(pair: &Pair, volume: &str) {
    let pv = pair.volume(true, volume).await.unwrap();
    assert_eq!(
        pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
        Some("Delete"),
        "{volume} in B has its policy back"
    );
    let kept = pv
        .metadata
        .annotations
        .unwrap_or_default()
        .remove("migrate.kubectl.io/original-reclaim-policy");
    assert_eq!(kept, None, "{volume} in B");
}

/// The keys (`cluster/kind/name`) of the objects written between two snapshots: changed,
/// created or deleted.
fn changed(
    before: &std::collections::BTreeMap<String, String>,
    after: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|key| before.get(*key) != after.get(*key))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The migration's journal, as the plugin wrote it in B.
async fn journal(pair: &Pair) -> serde_json::Value {
    let maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(pair.b.clone(), pair.ns());
    let map = maps.get("kubectl-migrate-web").await.unwrap();
    serde_json::from_str(&map.data.unwrap()["journal.json"]).unwrap()
}

/// The actions of a plan's steps (`--dry-run -o json`).
fn plan_actions(plan: &serde_json::Value) -> Vec<&str> {
    plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap())
        .collect()
}
