//! Proves that the local clusters are real: the StatefulSet controller, the PV binder, the Job
//! controller and kubectl's plugin mechanism all do their real work. Fails when the clusters are
//! absent (see support/).
use crate::support;

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::Api;
use kube::api::{ListParams, PostParams};
use support::{CONTEXT_A, TestNamespace, client, poll_until};

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn statefulset_with_volume_claim_templates_becomes_ready_and_bound() {
    let client = client(CONTEXT_A).await;
    let ns = TestNamespace::create(&client, CONTEXT_A, "smoke-sts").await;
    let services: Api<Service> = Api::namespaced(client.clone(), &ns.name);
    services
        .create(
            &PostParams::default(),
            &from_json(serde_json::json!({
                "metadata": {"name": "web"},
                "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}
            })),
        )
        .await
        .unwrap();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns.name);
    sets.create(&PostParams::default(), &from_json(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web", "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    })))
    .await
    .unwrap();

    poll_until(Duration::from_secs(90), "3 ready replicas", || async {
        let s = sets.get("web").await.unwrap();
        s.status.and_then(|st| st.ready_replicas).unwrap_or(0) == 3
    })
    .await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let mut names: Vec<String> = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| p.metadata.name.unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["web-0", "web-1", "web-2"]);

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    poll_until(Duration::from_secs(30), "3 bound PVCs", || async {
        let list = claims.list(&ListParams::default()).await.unwrap().items;
        list.len() == 3
            && list
                .iter()
                .all(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await;
    for claim in claims.list(&ListParams::default()).await.unwrap().items {
        let volume = claim.spec.unwrap().volume_name.unwrap_or_default();
        assert!(
            volume.starts_with("a-pv-"),
            "claim bound to a static pool PV by the binder, got {volume:?}"
        );
    }
}

#[tokio::test]
async fn job_failure_with_exit_code_42_is_counted_by_the_job_controller() {
    let client = client(CONTEXT_A).await;
    let ns = TestNamespace::create(&client, CONTEXT_A, "smoke-job").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns.name);
    jobs.create(&PostParams::default(), &from_json(serde_json::json!({
        "metadata": {"name": "fails"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {
                    "labels": {"pod-container-running-failed.stage.kwok.x-k8s.io": "true"},
                    "annotations": {"pod-container-running-failed.stage.kwok.x-k8s.io/exit-code": "42"}
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            }
        }
    })))
    .await
    .unwrap();

    poll_until(Duration::from_secs(90), "the Job to fail", || async {
        let job = jobs.get("fails").await.unwrap();
        let status = job.status.unwrap_or_default();
        status.failed == Some(1)
            && status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Failed" && c.status == "True")
    })
    .await;
    let job = jobs.get("fails").await.unwrap();
    let failed = job
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Failed")
        .unwrap();
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let pod = pods
        .list(&ListParams::default().labels("job-name=fails"))
        .await
        .unwrap()
        .items
        .pop()
        .expect("the job's pod is kept");
    let terminated = pod.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .expect("terminated container");
    assert_eq!(terminated.exit_code, 42);
}

#[test]
fn kubectl_finds_the_plugin_on_path() {
    let output = Command::new(support::cluster_bin_dir().join("kubectl"))
        .args(["migrate", "--help"])
        .env("PATH", support::path_with(&[]))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "kubectl migrate --help failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Usage: kubectl migrate"), "{stdout}");
    assert!(stdout.contains("statefulset"), "{stdout}");
}

#[test]
fn kubectl_plugin_completion_reaches_kubectl_complete_migrate() {
    // Install the committed script, as install.sh does, next to nothing else.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kubectl_complete-migrate");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("completions/kubectl_complete-migrate"),
        &script,
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let kubectl = support::cluster_bin_dir().join("kubectl");
    let complete = |words: &[&str]| {
        let output = Command::new(&kubectl)
            .arg("__complete")
            .arg("migrate")
            .args(words)
            .env("PATH", support::path_with(&[dir.path()]))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let subcommands = complete(&[""]);
    for sub in ["statefulset", "schema-diff", "failure-policy"] {
        assert!(
            subcommands.lines().any(|l| l == sub),
            "{sub} not offered: {subcommands}"
        );
    }
    let formats = complete(&["version", "-o", ""]);
    assert!(formats.lines().any(|l| l == "yaml"), "{formats}");
}

/// `kubectl migrate <TAB>` asks the clusters for what only they know: namespaces for -n and
/// --to-namespace, StatefulSet names, CRD names for schema-diff, and contexts, following the
/// --context and -n typed before the cursor.
#[tokio::test]
async fn kubectl_plugin_completion_offers_what_the_clusters_hold() {
    let client = client(CONTEXT_A).await;
    let ns = TestNamespace::create(&client, CONTEXT_A, "complete").await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns.name);
    sets.create(
        &PostParams::default(),
        &from_json(serde_json::json!({
            "metadata": {"name": "ledger"},
            "spec": {"replicas": 0, "serviceName": "ledger", "selector": {"matchLabels": {"app": "ledger"}},
                     "template": {"metadata": {"labels": {"app": "ledger"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}
        })),
    )
    .await
    .unwrap();
    let group = format!("{}.complete.example.com", ns.name);
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let crd = crds
        .create(
            &PostParams::default(),
            &from_json(serde_json::json!({
                "metadata": {"name": format!("gadgets.{group}")},
                "spec": {"group": group, "scope": "Namespaced",
                         "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                         "versions": [{"name": "v1", "served": true, "storage": true,
                                       "schema": {"openAPIV3Schema": {"type": "object"}}}]}
            })),
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kubectl_complete-migrate");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("completions/kubectl_complete-migrate"),
        &script,
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let kubectl = support::cluster_bin_dir().join("kubectl");
    let complete = |words: &[&str]| {
        let output = Command::new(&kubectl)
            .arg("__complete")
            .arg("migrate")
            .args(words)
            .env("PATH", support::path_with(&[dir.path()]))
            .env("KUBECONFIG", support::kubeconfig_path())
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    };
    let has = |text: &str, want: &str| text.lines().any(|l| l == want);
    let namespaces = complete(&["statefulset", "--context", "km-a", "-n", ""]);
    assert!(has(&namespaces, &ns.name), "{namespaces}");
    let to_namespaces = complete(&["sts", "x", "--to-context", "km-a", "--to-namespace", ""]);
    assert!(has(&to_namespaces, &ns.name), "{to_namespaces}");
    let sets_offered = complete(&["statefulset", "--context", "km-a", "-n", &ns.name, ""]);
    assert!(has(&sets_offered, "ledger"), "{sets_offered}");
    let contexts = complete(&["statefulset", "ledger", "--to-context", ""]);
    for context in ["km-a", "km-b", "km-c"] {
        assert!(has(&contexts, context), "{contexts}");
    }
    let names = complete(&[
        "schema-diff",
        "--context",
        "km-a",
        "--context",
        "km-b",
        "gad",
    ]);
    assert!(has(&names, &format!("gadgets.{group}")), "{names}");
    let _ = crds
        .delete(&crd.metadata.name.unwrap(), &Default::default())
        .await;
}
