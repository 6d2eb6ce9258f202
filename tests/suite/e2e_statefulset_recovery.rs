//! The destination StatefulSet deleted mid-migration (issue 28, hole 1), on the real local
//! clusters: the next run stops before any write and names the recovery; the recovery never
//! deletes a running pod.
use crate::support;

use std::time::Duration;

use support::poll_until;
use support::sts::{Pair, assert_moved, kubectl, migrate, run, stderr};

/// Moves ordinals 3 and 2 of a set of 4 with two --step runs, then deletes the destination
/// StatefulSet with `cascade` and waits until the delete has finished.
async fn two_moved_then_destination_deleted(prefix: &str, cascade: &str) -> Pair {
    let pair = Pair::new(prefix).await;
    pair.create_set(4, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    for _ in 0..2 {
        let out = run(migrate(pair.ns(), &["--yes", "--step"]));
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    }
    pair.wait_ready(true, 2).await;
    let deleted = kubectl(&[
        "--context",
        "km-b",
        "-n",
        pair.ns(),
        "delete",
        "statefulset",
        "web",
        &format!("--cascade={cascade}"),
        "--wait=true",
    ]);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    let sets = pair.sets(true);
    poll_until(
        Duration::from_secs(60),
        "the destination set gone",
        || async { sets.get_opt("web").await.unwrap().is_none() },
    )
    .await;
    pair
}

/// Reruns the migration, which must stop (exit 1) without writing to anything it could touch;
/// returns what it said.
async fn refused_without_writes(pair: &Pair) -> String {
    let before = pair.snapshot().await;
    let out = run(migrate(pair.ns(), &["--yes"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        pair.snapshot().await,
        before,
        "a refused run wrote something"
    );
    stderr(&out)
}

#[tokio::test]
async fn a_destination_deleted_with_its_pods_orphaned_is_recreated_over_them_never_under() {
    let pair = two_moved_then_destination_deleted("gone-orphan", "orphan").await;
    let orphans = pair.pod_uids(true).await;
    assert_eq!(
        orphans.keys().collect::<Vec<_>>(),
        ["web-2", "web-3"],
        "the orphaned pods still run in B"
    );
    let source_pods = pair.pod_uids(false).await;
    let claims = pair.claims(false).await;

    let err = refused_without_writes(&pair).await;
    assert!(
        err.contains("the destination StatefulSet web was deleted mid-migration")
            && err.contains("pods web-2, web-3 still run there without it")
            && err.contains("Nothing was written")
            && err.contains(
                "Rerun with --recreate-destination to create it again with ordinals.start=2, replicas=2"
            )
            && err.contains("or with --rollback --recreate-destination to move every ordinal back"),
        "{err}"
    );
    assert!(!err.contains("scaled down by hand"), "{err}");
    assert!(pair.sets(true).get_opt("web").await.unwrap().is_none());
    assert_eq!(
        pair.pod_uids(true).await,
        orphans,
        "an orphaned pod was deleted"
    );

    let out = run(migrate(pair.ns(), &["--yes", "--recreate-destination"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_moved(&pair, &claims, 4).await;
    let after = pair.pod_uids(true).await;
    for (pod, uid) in &orphans {
        assert_eq!(
            after.get(pod),
            Some(uid),
            "{pod} was deleted and re-created"
        );
    }
    // Ordinals 0 and 1 moved as usual: their source pods went only when they moved.
    assert_eq!(source_pods.len(), 2);
}

#[tokio::test]
async fn a_destination_deleted_with_its_pods_is_named_and_rolled_back_without_it() {
    let pair = two_moved_then_destination_deleted("gone-cascade", "background").await;
    let pods = pair.b.clone();
    let ns = pair.ns().to_string();
    poll_until(Duration::from_secs(60), "the pods of B gone", || async {
        let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(pods.clone(), &ns);
        api.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    let source_pods = pair.pod_uids(false).await;
    let claims = pair.claims(false).await;

    let err = refused_without_writes(&pair).await;
    assert!(
        err.contains("was deleted mid-migration with its pods")
            && err.contains("ordinals [2, 4) left the source and run nowhere now")
            && err.contains(
                "--recreate-destination to create it again with ordinals.start=2, replicas=2"
            )
            && err.contains("or with --rollback to bring them back to the source"),
        "{err}"
    );

    let out = run(migrate(pair.ns(), &["--yes", "--rollback"]));
    assert!(out.status.success(), "{}", stderr(&out));
    pair.wait_ready(false, 4).await;
    let after = pair.pod_uids(false).await;
    for (pod, uid) in &source_pods {
        assert_eq!(after.get(pod), Some(uid), "{pod} in A was deleted");
    }
    assert_eq!(
        pair.claims(false).await,
        claims,
        "the claims of A as they were"
    );
    assert!(
        pair.claims(true).await.is_empty(),
        "the copies in B are deleted by the rollback"
    );
}

/// A ValidatingAdmissionPolicy in B that refuses the journal of `web` in `namespaces` and the
/// deletion of leases in the first of them: a run then stops after it made the namespace and
/// took the lease, before its journal exists, and cannot give the lease back (as a killed run).
struct JournalRefused {
    name: String,
}

impl JournalRefused {
    async fn install(pair: &Pair, namespaces: [&str; 2]) -> JournalRefused {
        let name = format!("refuse-journal-{}", namespaces[0]);
        let listed = namespaces.map(|n| format!("'{n}'")).join(", ");
        let policy = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]},
                    {"apiGroups": ["coordination.k8s.io"], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["leases"]}
                ]},
                "validations": [{
                    "expression": format!(
                        "request.operation == 'DELETE' ? request.namespace != '{}' : !(request.namespace in [{listed}] && object.metadata.name == 'kubectl-migrate-web')",
                        namespaces[0]
                    ),
                    "message": "refused by the test: a run that stops before its journal"
                }]
            }
        });
        let binding = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}
        });
        for object in [policy, binding] {
            apply_in_b(&object);
        }
        // In force once a journal in the namespace that exists is refused (dry run).
        let probe = pair.ns().to_string();
        poll_until(
            Duration::from_secs(60),
            "the admission policy in force",
            || {
                let probe = probe.clone();
                async move {
                    let out = kubectl(&[
                        "--context",
                        "km-b",
                        "-n",
                        &probe,
                        "create",
                        "configmap",
                        "kubectl-migrate-web",
                        "--dry-run=server",
                    ]);
                    !out.status.success()
                }
            },
        )
        .await;
        JournalRefused { name }
    }

    fn remove(&self) {
        for kind in [
            "validatingadmissionpolicybinding",
            "validatingadmissionpolicy",
        ] {
            let out = kubectl(&["--context", "km-b", "delete", kind, &self.name]);
            assert!(out.status.success(), "{}", stderr(&out));
        }
    }
}

fn apply_in_b(object: &serde_json::Value) {
    let path = std::env::temp_dir().join(format!(
        "{}-{}.json",
        object["metadata"]["name"].as_str().unwrap(),
        object["kind"].as_str().unwrap()
    ));
    std::fs::write(&path, object.to_string()).unwrap();
    let out = kubectl(&["--context", "km-b", "apply", "-f", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn a_run_stopped_before_its_journal_leaves_what_status_names_and_rollback_deletes() {
    let pair = Pair::new("no-journal").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let to = format!("{}-to", pair.ns());
    let refusal = JournalRefused::install(&pair, [&to, pair.ns()]).await;
    let source_pods = pair.pod_uids(false).await;
    let source = pair.snapshot().await;
    let to_flags = ["--to-namespace", to.as_str()];

    let args = [
        &["--yes", "--create-namespace", "--copy-dependencies"][..],
        &to_flags,
    ]
    .concat();
    let out = run(migrate(pair.ns(), &args));
    assert!(
        !out.status.success(),
        "the journal was refused: {}",
        stderr(&out)
    );
    let namespace = kubectl(&[
        "--context",
        "km-b",
        "get",
        "namespace",
        &to,
        "-o",
        "jsonpath={.metadata.labels.app\\.kubernetes\\.io/managed-by}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&namespace.stdout),
        "kubectl-migrate",
        "{}",
        stderr(&namespace)
    );
    let lease = kubectl(&[
        "--context",
        "km-b",
        "-n",
        &to,
        "get",
        "lease",
        "kubectl-migrate-web",
    ]);
    assert!(
        lease.status.success(),
        "the lease stays: {}",
        stderr(&lease)
    );

    let out = run(migrate(pair.ns(), &[&["--status"][..], &to_flags].concat()));
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("stopped before it wrote its journal")
            && said.contains(&format!("namespace {to} in km-b (created by it)"))
            && said.contains(&format!("Lease {to}/kubectl-migrate-web in km-b"))
            && said.contains("--rollback (or --cleanup) to delete the namespace"),
        "{said}"
    );

    refusal.remove();
    let out = run(migrate(
        pair.ns(),
        &[&["--rollback", "--yes"][..], &to_flags].concat(),
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let gone = kubectl(&["--context", "km-b", "get", "namespace", &to]);
    assert!(!gone.status.success(), "namespace {to} is deleted");
    assert_eq!(
        pair.snapshot().await,
        source,
        "the migration's objects as they were"
    );
    assert_eq!(
        pair.pod_uids(false).await,
        source_pods,
        "a pod in A was deleted"
    );
    let out = run(migrate(
        pair.ns(),
        &[&["--rollback", "--yes"][..], &to_flags].concat(),
    ));
    assert!(
        stderr(&out).contains("no migration of web found"),
        "{}",
        stderr(&out)
    );
}
