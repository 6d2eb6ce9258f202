//! `--volumes=fresh` on the real local clusters: the destination's pods get new claims bound to
//! PVs of the destination's own pool, the source's claims and PVs stay as they were (Retain)
//! through SIGKILLs at random points, and a rollback gives every ordinal its original claims.
use crate::support;

use support::sts::{Pair, SplitBrainObserver, kill_at_random_points, migrate, run, stderr};

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
    let actions: Vec<&str> = plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    assert!(
        !actions.iter().any(|a| a.starts_with("copy PVC")),
        "{actions:?}"
    );

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

    // --status shows each claim's volume in each cluster: the kept one and the fresh one.
    let out = run(migrate(pair.ns(), &["--status", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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

    let out = run(migrate(
        pair.ns(),
        &[
            "--volumes=fresh",
            "--health-check",
            CHECK,
            "--rollback",
            "--yes",
        ],
    ));
    assert!(
        out.status.success(),
        "the rollback failed: {}",
        stderr(&out)
    );
    let kept = format!(
        "PVC(s) {}, made for the moved pods (--volumes=fresh)",
        moved.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    assert!(stderr(&out).contains(&kept), "{}", stderr(&out));
    assert_eq!(pair.claims(true).await, moved, "the fresh claims are kept");
    pair.wait_ready(false, 3).await;
    assert_eq!(
        pair.claims(false).await,
        before,
        "every ordinal back on its original claim"
    );
    observer.assert_never_split();
}
