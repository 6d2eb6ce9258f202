//! The shipped RBAC suffices, and grants no more Secrets than it should: the controller runs
//! with a ServiceAccount token bound to deploy/rbac.yaml (requested with the TokenRequest API,
//! as the kubelet mounts one into the Pod) and completes a migration.
use crate::support;

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubectl_migrate::controller::api::APICompatibility;

use super::e2e_controller::{Controller, apply, apply_text, condition, wait_condition};
use super::e2e_controller_compat::Conditions;
use super::e2e_controller_gates::{LIMIT, Scene};
use support::sts::{assert_moved, kubectl};
use support::{CONTEXT_C, single_cluster_kubeconfig};

const SERVICE_ACCOUNT: &str =
    "system:serviceaccount:kubectl-migrate-system:kubectl-migrate-controller";

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file)
}

/// Whether the controller's ServiceAccount may `verb` `resource` in `namespace`.
fn can_i(verb: &str, resource: &str, namespace: &str) -> bool {
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "auth",
        "can-i",
        verb,
        resource,
        "-n",
        namespace,
        "--as",
        SERVICE_ACCOUNT,
    ]);
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// A kubeconfig for km-c that authenticates with `token` only.
fn token_kubeconfig(token: &str, dir: &Path) -> PathBuf {
    let c = single_cluster_kubeconfig("c");
    let out = kubectl(&[
        "--kubeconfig",
        c.to_str().unwrap(),
        "config",
        "view",
        "--raw",
        "--minify",
        "--flatten",
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let mut config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let users = config["users"].as_array_mut().unwrap();
    assert_eq!(users.len(), 1, "{config}");
    users[0]["user"] = serde_json::json!({ "token": token });
    let path = dir.join("service-account.kubeconfig");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[tokio::test]
async fn the_controller_completes_a_migration_with_only_the_shipped_rbac() {
    let scene = Scene::new("ctl-rbac").await;
    for file in ["namespace.yaml", "rbac.yaml"] {
        apply_text(&std::fs::read_to_string(deploy(file)).unwrap());
    }
    // The example binding, for this test's namespace instead of `shop`.
    let binding = std::fs::read_to_string(deploy("examples/team-rolebinding.yaml")).unwrap();
    apply_text(&binding.replace(
        "namespace: shop",
        &format!("namespace: {}", scene.home.name),
    ));
    // Least privilege: the kubeconfig Secrets of a bound namespace, and no others.
    assert!(can_i("get", "secrets", &scene.home.name));
    assert!(!can_i("get", "secrets", "default"));
    assert!(!can_i("list", "secrets", &scene.home.name));
    assert!(!can_i("get", "leases", &scene.home.name));
    // LCD ConfigMaps: in a bound namespace only, and never deleted by the controller.
    assert!(can_i("create", "configmaps", &scene.home.name));
    assert!(!can_i("create", "configmaps", "default"));
    assert!(!can_i("delete", "configmaps", &scene.home.name));

    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "-n",
        "kubectl-migrate-system",
        "create",
        "token",
        "kubectl-migrate-controller",
        "--duration",
        "1h",
    ]);
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = token_kubeconfig(token.trim(), dir.path());
    let whoami = kubectl(&[
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--context",
        CONTEXT_C,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&whoami.stdout),
        SERVICE_ACCOUNT,
        "{whoami:?}"
    );
    let controller = Controller::start_with(
        &scene.home.name,
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--leader-election-namespace",
            "kubectl-migrate-system",
        ],
    )
    .await;
    scene.gate.release([0, 1, 2]);
    apply(
        &scene.home.name,
        "with-rbac",
        scene.spec(serde_json::json!({})),
    );
    let done = wait_condition(
        &scene.api(),
        "with-rbac",
        "Ready",
        "True",
        LIMIT,
        &controller,
    )
    .await;
    assert_eq!(condition(&done, "Ready").reason, "Completed");
    assert_moved(&scene.pair, &scene.before, 3).await;

    // An APICompatibility that keeps its LCD in a ConfigMap (of no API here: only the
    // permissions are at stake).
    let checks: Api<APICompatibility> = Api::namespaced(scene.c.clone(), &scene.home.name);
    let mut conditions = Conditions::follow(checks, "lcd");
    apply_text(
        &serde_json::json!({
            "apiVersion": "kubectl-migrate.io/v1alpha1",
            "kind": "APICompatibility",
            "metadata": {"name": "lcd", "namespace": scene.home.name},
            "spec": {
                "members": [{"name": "km-a"}, {"name": "km-b"}],
                "groups": ["nothing.example.com"],
                "lcdConfigMap": "lcd",
            },
        })
        .to_string(),
    );
    conditions
        .wait("LCDWritten", "True", LIMIT, &controller)
        .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(scene.c.clone(), &scene.home.name);
    assert!(config_maps.get_opt("lcd").await.unwrap().is_some());

    let log = controller.log();
    assert!(
        !log.contains("Forbidden") && !log.contains("forbidden"),
        "the RBAC refused something:\n{log}"
    );
    assert!(!log.contains(token.trim()), "the token reached the log");
    scene.observer.assert_never_split();
}

#[test]
fn deploy_is_accepted_by_a_real_api_server_as_kustomize_builds_it() {
    // The namespace first: a server dry run of the objects in it needs it to exist.
    apply_text(&std::fs::read_to_string(deploy("namespace.yaml")).unwrap());
    let dir = deploy("");
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "apply",
        "-k",
        dir.to_str().unwrap(),
        "--dry-run=server",
        "--server-side",
        "--force-conflicts",
    ]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    for object in [
        "deployment.apps/kubectl-migrate-controller",
        "clusterrole.rbac.authorization.k8s.io/kubectl-migrate-controller",
        "customresourcedefinition.apiextensions.k8s.io/statefulsetmigrations.kubectl-migrate.io",
        "customresourcedefinition.apiextensions.k8s.io/apicompatibilities.kubectl-migrate.io",
    ] {
        assert!(said.contains(object), "{said}");
    }
}
