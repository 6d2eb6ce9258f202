//! Preflight refuses a migration whose pods no destination node can take (exit 4, nothing written
//! in either cluster), and lets one through when a destination node fits.
//!
//! Other tests schedule pods on these clusters at the same time, so the shared nodes are never
//! tainted or relabelled: the refusals use labels only source nodes have, and the taint case
//! uses nodes of its own that only its pods select.
use crate::support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;
use support::sts::{
    Pair, SplitBrainObserver, assert_rolled_back, json as object, migrate, run, stderr,
};

/// Runs the migration for real (`--yes`) and expects the preflight refusal with every `needle`
/// on stderr, and no change in either cluster.
async fn refused_at_preflight(pair: &Pair, needles: &[&str]) {
    let before = pair.snapshot().await;
    let ns = pair.ns().to_string();
    let out = tokio::task::spawn_blocking(move || run(migrate(&ns, &["--yes"])))
        .await
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "exit code; stderr: {err}");
    for needle in ["preflight failed"].iter().chain(needles) {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
    assert_eq!(
        pair.snapshot().await,
        before,
        "a refused migration changed something"
    );
    assert!(
        pair.sets(true).get_opt("web").await.unwrap().is_none(),
        "no StatefulSet in the destination"
    );
}

#[tokio::test]
async fn pods_that_need_a_source_node_label_are_refused_before_any_write() {
    let pair = Pair::new("sched-label").await;
    // The case: pods pinned to the source's nodes by their hostname label.
    let pinned = json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "nodeSelector": {"kubernetes.io/hostname": "a-node-1"},
        "containers": [{"name": "app", "image": "registry.example/app:1"}]}}});
    pair.create_set(1, &["data"], "OrderedReady", pinned).await;
    refused_at_preflight(
        &pair,
        &[
            "pods of web (ordinal 0) cannot be scheduled in km-b",
            "b-node-0: nodeSelector kubernetes.io/hostname=a-node-1, node has kubernetes.io/hostname=b-node-0",
            "b-node-2: nodeSelector kubernetes.io/hostname=a-node-1, node has kubernetes.io/hostname=b-node-2",
        ],
    )
    .await;
}

/// A node of this test's own, deleted when dropped. KWOK (started with --manage-all-nodes)
/// makes it Ready.
struct OwnNode {
    context: &'static str,
    name: String,
}

impl OwnNode {
    async fn create(
        client: &Client,
        context: &'static str,
        name: &str,
        labels: serde_json::Value,
        taints: serde_json::Value,
    ) -> OwnNode {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels,
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"taints": taints}
        }))
        .unwrap();
        let nodes: Api<Node> = Api::all(client.clone());
        nodes.create(&PostParams::default(), &node).await.unwrap();
        let guard = OwnNode {
            context,
            name: name.to_string(),
        };
        support::poll_until(
            Duration::from_secs(60),
            &format!("node {name} Ready in {context}"),
            || async {
                let node = nodes.get(name).await.unwrap();
                node.status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            },
        )
        .await;
        guard
    }
}

impl Drop for OwnNode {
    fn drop(&mut self) {
        // Through kubectl: a kube client cannot be driven from Drop inside the test's runtime.
        let _ = support::sts::kubectl(&[
            "--context",
            self.context,
            "delete",
            "node",
            &self.name,
            "--wait=false",
        ]);
    }
}

#[tokio::test]
async fn a_taint_on_every_node_the_pods_select_is_refused_before_any_write() {
    let pair = Pair::new("sched-taint").await;
    let suffix = support::unique_suffix();
    let name = format!("km-sched-{suffix}");
    let labels = json!({"km-sched": suffix, "kubernetes.io/hostname": name});
    // Each node keeps every other test's pods away with a taint only this test's pods tolerate;
    // the destination's has one more that they do not tolerate.
    let own = json!({"key": "km-sched", "value": suffix, "effect": "NoSchedule"});
    let blocked = json!({"key": "km-sched-blocked", "value": suffix, "effect": "NoExecute"});
    let _source_node = OwnNode::create(
        &pair.a,
        support::CONTEXT_A,
        &name,
        labels.clone(),
        json!([own]),
    )
    .await;
    let _destination_node = OwnNode::create(
        &pair.b,
        support::CONTEXT_B,
        &name,
        labels,
        json!([own, blocked]),
    )
    .await;
    let template = json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "nodeSelector": {"km-sched": suffix},
        "tolerations": [{"key": "km-sched", "operator": "Exists"}],
        "containers": [{"name": "app", "image": "registry.example/app:1"}]}}});
    pair.create_set(1, &["data"], "OrderedReady", template)
        .await;
    refused_at_preflight(
        &pair,
        &[
            "pods of web (ordinal 0) cannot be scheduled in km-b",
            &format!("{name}: taint km-sched-blocked={suffix}:NoExecute not tolerated"),
            // The shared nodes fail alike, so they share a line.
            &format!("b-node-0, b-node-1, b-node-2: nodeSelector km-sched={suffix}, node has no label km-sched"),
        ],
    )
    .await;
}

#[tokio::test]
async fn pods_whose_affinity_a_destination_node_meets_move_onto_it() {
    let pair = Pair::new("sched-fits").await;
    // One node of each cluster meets the required affinity; the destination's pod must land on
    // its one.
    let affine = json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a-node-1", "b-node-2"]}]}]}}},
        "containers": [{"name": "app", "image": "registry.example/app:1"}]}}});
    pair.create_set(1, &["data"], "OrderedReady", affine).await;
    let observer = SplitBrainObserver::start(pair.ns());
    let ns = pair.ns().to_string();
    let out = tokio::task::spawn_blocking(move || run(migrate(&ns, &["--yes"])))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    observer.assert_never_split();
    pair.wait_ready(true, 1).await;
    let pod = Api::<Pod>::namespaced(pair.b.clone(), pair.ns())
        .get("web-0")
        .await
        .unwrap();
    assert_eq!(
        pod.spec.and_then(|s| s.node_name).as_deref(),
        Some("b-node-2"),
        "the destination pod runs on the one node its affinity allows"
    );
}

/// A set of one whose pod needs a node running an anchor pod that only the source namespace
/// has: preflight cannot judge pod affinity (it depends on what else runs), so the migration
/// moves ordinal 0 and its pod in the destination is never scheduled.
async fn set_that_cannot_run_in_b(prefix: &str) -> (Pair, String) {
    let pair = Pair::new(prefix).await;
    let suffix = support::unique_suffix();
    let anchor: Pod = object(
        json!({"metadata": {"name": "anchor", "labels": {"km-anchor": suffix}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}),
    );
    Api::<Pod>::namespaced(pair.a.clone(), pair.ns())
        .create(&PostParams::default(), &anchor)
        .await
        .unwrap();
    let affine = json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"km-anchor": suffix}}, "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{"name": "app", "image": "registry.example/app:1"}]}},
        // As the rollback tests' sets, so that a rollback restores it.
        "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}});
    pair.create_set(1, &["data"], "OrderedReady", affine).await;
    (pair, suffix)
}

#[tokio::test]
async fn a_pod_the_preflight_cannot_judge_times_out_with_its_reason_and_warnings() {
    let (pair, suffix) = set_that_cannot_run_in_b("sched-wait").await;
    let ns = pair.ns().to_string();
    // Long enough for the warning events to be read while waiting (every 5 s).
    let migration =
        tokio::task::spawn_blocking(move || run(migrate(&ns, &["--yes", "--timeout", "12s"])));
    // KWOK plays the kubelet and reports no events: report a failed mount as a kubelet would.
    let pods: Api<Pod> = Api::namespaced(pair.b.clone(), pair.ns());
    support::poll_until(Duration::from_secs(10), "web-0 in km-b", || async {
        pods.get_opt("web-0").await.unwrap().is_some()
    })
    .await;
    let uid = pods.get("web-0").await.unwrap().metadata.uid.unwrap();
    let event: Event = object(json!({"metadata": {"name": format!("web-0.{suffix}")},
        "involvedObject": {"kind": "Pod", "namespace": pair.ns(), "name": "web-0", "uid": uid},
        "type": "Warning", "reason": "FailedMount", "message": format!("volume {suffix} is stuck"),
        "source": {"component": "kubelet"}, "count": 3,
        // Later than any scheduler event of this run, so that it is the latest warning whenever
        // the tool reads the events (a real kubelet's would be current too).
        "firstTimestamp": "2099-01-01T00:00:00Z", "lastTimestamp": "2099-01-01T00:01:00Z"}));
    Api::<Event>::namespaced(pair.b.clone(), pair.ns())
        .create(&PostParams::default(), &event)
        .await
        .unwrap();
    let out = migration.await.unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "exit code; stderr: {err}");
    let warned = format!("FailedMount: volume {suffix} is stuck (3 times)");
    for needle in [
        // While waiting: the scheduler's reason, then with the latest warning event.
        "waiting for web-0: Pending, not scheduled: Unschedulable: 0/",
        &format!("; latest warning: {warned}"),
        // In the error: the ordinal is down, why, and both ways on.
        "ordinal 0 of web is down: gone from km-a, not Ready in km-b.\n",
        "timed out after 12s (--timeout) waiting for pod 0 to be Ready in km-b",
        "\nweb-0: Pending, not scheduled: Unschedulable: 0/",
        "didn't match pod affinity rules",
        &format!("\nweb-0 warning: {warned}"),
        "keep waiting with:\n  kubectl migrate statefulset web ",
        " --timeout 12s --yes\nor move it back to km-a with:\n  kubectl migrate statefulset web ",
        " --timeout 12s --yes --rollback",
    ] {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
    // Down indeed: gone from the source, not running in the destination.
    assert!(
        pair.pod_uids(false).await.is_empty(),
        "web-0 still runs in km-a"
    );
}

#[tokio::test]
async fn on_timeout_rollback_moves_the_ordinal_back_at_once_and_exits_1() {
    let (pair, _) = set_that_cannot_run_in_b("sched-back").await;
    let before = pair.claims(false).await;
    let ns = pair.ns().to_string();
    let out = tokio::task::spawn_blocking(move || {
        run(migrate(
            &ns,
            &["--yes", "--timeout", "5s", "--on-timeout=rollback"],
        ))
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "exit code; stderr: {err}");
    for needle in [
        "ordinal 0 of web was not Ready in km-b within --timeout; rolling back (--on-timeout=rollback):\n",
        "web-0: Pending, not scheduled: Unschedulable: 0/",
        "Rolled back: web runs in km-a",
        "the migration of web was rolled back (--on-timeout=rollback): ordinal 0 was not Ready in km-b within --timeout; it runs in km-a again",
    ] {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
    // Back where it was, nothing of the migration left in the destination.
    assert_rolled_back(&pair, &before, 1).await;
    assert!(
        pair.pod_uids(true).await.is_empty(),
        "a pod was left in km-b"
    );
}
