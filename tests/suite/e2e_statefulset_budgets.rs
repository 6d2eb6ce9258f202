//! PodDisruptionBudgets during a migration, on the real local clusters: split between the two
//! clusters at each step so that together they never allow more evictions than the original,
//! restored at the end and on rollback, and a batch the budget cannot afford refused up front.
use crate::support;

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::PostParams;
use support::sts::{Pair, SplitBrainObserver, migrate, run, stderr};

fn budgets(pair: &Pair, in_b: bool) -> Api<PodDisruptionBudget> {
    Api::namespaced(
        if in_b { pair.b.clone() } else { pair.a.clone() },
        pair.ns(),
    )
}

async fn create_budget(pair: &Pair, spec: serde_json::Value) {
    let mut spec = spec;
    spec["selector"] = serde_json::json!({"matchLabels": {"app": "web"}});
    let pdb: PodDisruptionBudget = support::sts::json(serde_json::json!({
        "metadata": {"name": "web-pdb"}, "spec": spec
    }));
    budgets(pair, false)
        .create(&PostParams::default(), &pdb)
        .await
        .unwrap();
}

/// `minAvailable` / `maxUnavailable` of the budget in one cluster, as JSON (null when unset),
/// or None when the budget is not there.
async fn budget_spec(pair: &Pair, in_b: bool) -> Option<serde_json::Value> {
    let pdb = budgets(pair, in_b).get_opt("web-pdb").await.unwrap()?;
    let spec = serde_json::to_value(pdb.spec.unwrap()).unwrap();
    Some(serde_json::json!({
        "minAvailable": spec["minAvailable"],
        "maxUnavailable": spec["maxUnavailable"],
    }))
}

/// The budget writes of a `-o json` run, replayed over the starting specs; after each one the
/// two sides together must require at least `required` available pods (each side's share is a
/// `minAvailable` count while the set moves).
fn replay_budget_writes(
    stdout: &[u8],
    mut specs: BTreeMap<String, serde_json::Value>,
    required: i64,
    replicas: i64,
) -> usize {
    let mut writes = 0;
    for line in String::from_utf8_lossy(stdout).lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        if e["event"] != "step-finished" || e["step"] != "set-budget" {
            continue;
        }
        writes += 1;
        let side = e["detail"]["side"].as_str().unwrap().to_string();
        match e["detail"]["spec"].clone() {
            serde_json::Value::Null => specs.remove(&side),
            spec => specs.insert(side, spec),
        };
        let counted: i64 = specs
            .values()
            .map(|s| match (&s["minAvailable"], &s["maxUnavailable"]) {
                (serde_json::Value::Number(n), _) => n.as_i64().unwrap(),
                (_, serde_json::Value::Number(n)) => replicas - n.as_i64().unwrap(),
                // A percentage is only ever the original, restored when all pods are on one side.
                _ => required,
            })
            .sum();
        assert!(
            counted >= required,
            "after {e}: the budgets require {counted} available pods, the original {required}"
        );
    }
    writes
}

#[tokio::test]
async fn max_unavailable_is_split_at_every_step_and_restored_on_both_sides() {
    let pair = Pair::new("pdb-max").await;
    pair.create_set(4, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    create_budget(&pair, serde_json::json!({"maxUnavailable": 1})).await;
    let original = budget_spec(&pair, false).await.unwrap();
    let observer = SplitBrainObserver::start(pair.ns());
    let plan = run(migrate(pair.ns(), &["--dry-run", "-o", "json"]));
    assert!(plan.status.success(), "{}", stderr(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let planned = plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["action"]
                .as_str()
                .unwrap()
                .starts_with("set PodDisruptionBudget web-pdb")
        })
        .count();
    assert!(planned >= 5, "the plan lists the budget writes: {plan}");
    let out = run(migrate(pair.ns(), &["--yes", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    observer.assert_never_split();
    let start = BTreeMap::from([("source".to_string(), original.clone())]);
    let writes = replay_budget_writes(&out.stdout, start, 3, 4);
    assert_eq!(writes, planned, "the run made the budget writes it planned");
    assert_eq!(budget_spec(&pair, false).await, Some(original.clone()));
    assert_eq!(
        budget_spec(&pair, true).await,
        Some(original.clone()),
        "the destination's copy ends as the original"
    );
    // The real disruption controller agrees: all four pods in B, one disruption allowed there.
    support::poll_until(
        std::time::Duration::from_secs(30),
        "the disruption controller's verdict in B",
        || async {
            budgets(&pair, true)
                .get("web-pdb")
                .await
                .ok()
                .and_then(|b| b.status)
                .is_some_and(|s| s.disruptions_allowed == Some(1) && s.expected_pods == Some(4))
        },
    )
    .await;
    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(pair.ns(), &["--rollback", "--yes", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    observer.assert_never_split();
    let start = BTreeMap::from([
        ("source".to_string(), original.clone()),
        ("destination".to_string(), original.clone()),
    ]);
    assert!(replay_budget_writes(&out.stdout, start, 3, 4) >= 4);
    assert_eq!(budget_spec(&pair, false).await, Some(original));
    assert_eq!(
        budget_spec(&pair, true).await,
        None,
        "the rollback deletes the copy"
    );
}

#[tokio::test]
async fn a_min_available_percentage_allows_the_batch_it_can_afford() {
    let pair = Pair::new("pdb-pct").await;
    pair.create_set(4, &["data"], "Parallel", serde_json::json!({}))
        .await;
    create_budget(&pair, serde_json::json!({"minAvailable": "50%"})).await;
    let original = budget_spec(&pair, false).await.unwrap();
    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(pair.ns(), &["--yes", "--batch", "2", "-o", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    observer.assert_never_split();
    let start = BTreeMap::from([("source".to_string(), original.clone())]);
    assert!(replay_budget_writes(&out.stdout, start, 2, 4) >= 3);
    assert_eq!(budget_spec(&pair, false).await, Some(original.clone()));
    assert_eq!(budget_spec(&pair, true).await, Some(original));
}

#[tokio::test]
async fn a_batch_the_budget_cannot_afford_is_refused_before_any_write() {
    let pair = Pair::new("pdb-refuse").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    create_budget(&pair, serde_json::json!({"minAvailable": 2})).await;
    let before = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--yes", "--batch", "2"]));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("PodDisruptionBudget web-pdb (minAvailable 2) allows 1 disruption of the 3 pods, but --batch 2")
            && err.contains("use --batch 1 or less"),
        "{err}"
    );
    assert_eq!(pair.snapshot().await, before, "a refusal wrote something");
    budgets(&pair, false)
        .patch(
            "web-pdb",
            &Default::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"minAvailable": "100%"}})),
        )
        .await
        .unwrap();
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("PodDisruptionBudget web-pdb (minAvailable 100%) allows no disruption"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pair.snapshot().await, before, "a refusal wrote something");
}

/// The ordinals of each move of a `-o json` run, in order. A move ends with its wait for Ready
/// pods, which also records them as verified when there is no health check, or, when the run
/// finds them Ready already, with the verification alone; with a health check, with both.
fn moved_batches(stdout: &[u8]) -> Vec<Vec<i64>> {
    let mut batches: Vec<Vec<i64>> = Vec::new();
    for event in String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| {
            e["event"] == "step-finished" && (e["step"] == "wait-ready" || e["step"] == "verify")
        })
    {
        let ordinals: Vec<i64> = event["ordinals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_i64().unwrap())
            .collect();
        if batches.last() != Some(&ordinals) {
            batches.push(ordinals);
        }
    }
    batches
}

#[tokio::test]
async fn batch_auto_moves_as_many_as_the_budget_allows_and_rolls_back_alike() {
    let pair = Pair::new("pdb-auto").await;
    pair.create_set(5, &["data"], "Parallel", serde_json::json!({}))
        .await;
    create_budget(&pair, serde_json::json!({"maxUnavailable": 2})).await;
    let original = budget_spec(&pair, false).await.unwrap();
    let observer = SplitBrainObserver::start(pair.ns());
    let out = run(migrate(
        pair.ns(),
        &["--yes", "--batch", "auto", "-o", "json"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "--batch auto: 2 ordinals per step, as many as PodDisruptionBudget web-pdb allows"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        moved_batches(&out.stdout),
        [vec![3, 4], vec![1, 2], vec![0]],
        "two at a time, highest first"
    );
    let start = BTreeMap::from([("source".to_string(), original.clone())]);
    replay_budget_writes(&out.stdout, start, 3, 5);
    pair.wait_ready(true, 5).await;

    // One step of the rollback; then --status with --batch auto names the step such a run
    // takes next: the one of two ordinals per step, not of one.
    let out = run(migrate(
        pair.ns(),
        &[
            "--rollback",
            "--yes",
            "--batch",
            "auto",
            "--step",
            "-o",
            "json",
        ],
    ));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(moved_batches(&out.stdout).len(), 1, "{}", stderr(&out));
    let next_step = |batch: &str| {
        let out = run(migrate(
            pair.ns(),
            &["--status", "--batch", batch, "-o", "json"],
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        status["nextStep"].as_str().unwrap().to_string()
    };
    let auto = next_step("auto");
    assert_eq!(auto, next_step("2"));
    assert_ne!(
        auto,
        next_step("1"),
        "the next step is the same with one ordinal per step"
    );
    let out = run(migrate(
        pair.ns(),
        &["--rollback", "--yes", "--batch", "auto", "-o", "json"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(moved_batches(&out.stdout).len(), 2, "{}", stderr(&out));
    observer.assert_never_split();
    pair.wait_ready(false, 5).await;
    assert_eq!(budget_spec(&pair, false).await, Some(original));
}
