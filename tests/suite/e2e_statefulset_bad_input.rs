//! Bad input for `kubectl migrate statefulset`: each case gives a clear message and its
//! documented exit code, and the clusters are provably unchanged (everything but status compared).
use crate::support;

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::Api;
use kube::api::PostParams;
use support::sts::{Pair, json, kubectl, migrate, migrate_to, plugin, run, stderr};

/// Runs `cmd`, expects `code` and every `needle` on stderr, and nothing changed in either cluster.
/// Runs `cmd`, expecting exit `code`, every needle on stderr and no change; returns stderr.
async fn refused(pair: &Pair, cmd: std::process::Command, code: i32, needles: &[&str]) -> String {
    let before = pair.snapshot().await;
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "exit code; stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
    assert!(out.stdout.is_empty(), "no data on stdout for a refusal");
    assert_eq!(
        pair.snapshot().await,
        before,
        "a refused command changed something"
    );
    err
}

#[tokio::test]
async fn refusals_on_a_healthy_set_change_nothing() {
    let pair = Pair::new("bad").await;
    pair.create_set(1, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let ns = pair.ns().to_string();

    // 1. the StatefulSet does not exist
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "nope",
        "-n",
        &ns,
        "--context",
        "km-a",
        "--to-context",
        "km-b",
        "--yes",
    ]);
    refused(
        &pair,
        cmd,
        4,
        &[
            "preflight failed",
            "StatefulSet nope not found in namespace",
        ],
    )
    .await;
    // 2. unknown source context
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "web",
        "-n",
        &ns,
        "--context",
        "km-x",
        "--to-context",
        "km-b",
        "--yes",
    ]);
    // A configuration error: exit 1, as for every command (README: exit codes).
    refused(
        &pair,
        cmd,
        1,
        &[
            "source: context \"km-x\" not found",
            "available contexts: km-a, km-b",
        ],
    )
    .await;
    // 3. unknown destination context
    refused(
        &pair,
        migrate_to(&ns, "km-z", &["--yes"]),
        1,
        &["destination: context \"km-z\" not found"],
    )
    .await;
    // 3b. read-only --status with an unknown destination context: the same code
    refused(
        &pair,
        migrate_to(&ns, "km-z", &["--status"]),
        1,
        &["destination: context \"km-z\" not found"],
    )
    .await;
    // 4. the source namespace does not exist
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "web",
        "-n",
        "no-such-ns",
        "--context",
        "km-a",
        "--to-context",
        "km-b",
        "--yes",
    ]);
    refused(&pair, cmd, 4, &["namespace no-such-ns not found in km-a"]).await;
    // 5. the destination namespace does not exist, without --create-namespace
    refused(
        &pair,
        migrate(&ns, &["--to-namespace", "missing-dest", "--yes"]),
        4,
        &[
            "namespace missing-dest does not exist in km-b",
            "--create-namespace",
        ],
    )
    .await;
    // 6. not on a terminal and no --yes
    refused(
        &pair,
        migrate(&ns, &[]),
        1,
        &["needs confirmation", "stdin is not a terminal", "--yes"],
    )
    .await;
    // 7. --batch 0, and a negative one: a plain error, not clap's "use -- -1" tip
    refused(
        &pair,
        migrate(&ns, &["--batch", "0", "--yes"]),
        2,
        &["--batch"],
    )
    .await;
    refused(
        &pair,
        migrate(&ns, &["--batch", "-1", "--yes"]),
        2,
        &[
            "invalid value '-1' for '--batch <N|auto>'",
            "at least 1 or `auto`",
        ],
    )
    .await;
    // 7b. a destination namespace that cannot exist, caught before any cluster call
    refused(
        &pair,
        migrate(&ns, &["--to-namespace", "Bad_NS", "--yes"]),
        2,
        &["--to-namespace \"Bad_NS\" is not a valid namespace name"],
    )
    .await;
    // 8. a malformed --storage-class-map
    refused(
        &pair,
        migrate(&ns, &["--storage-class-map", "standard", "--yes"]),
        2,
        &["expected OLD=NEW"],
    )
    .await;
    // 9. a --storage-class-map target that does not exist in the destination
    refused(
        &pair,
        migrate(&ns, &["--storage-class-map", "standard=gold", "--yes"]),
        4,
        &["StorageClass gold does not exist in km-b"],
    )
    .await;
    // 10. source and destination are the same place
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "web",
        "-n",
        &ns,
        "--context",
        "km-a",
        "--to-context",
        "km-a",
        "--yes",
    ]);
    refused(&pair, cmd, 2, &["source and destination are the same"]).await;
    // 11. an invalid name
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "Web_1",
        "-n",
        &ns,
        "--context",
        "km-a",
        "--to-context",
        "km-b",
        "--yes",
    ]);
    refused(&pair, cmd, 2, &["not a valid StatefulSet name"]).await;
    // 12. conflicting modes
    refused(
        &pair,
        migrate(&ns, &["--status", "--dry-run"]),
        2,
        &["--dry-run applies to a migration or a rollback; --status already changes nothing"],
    )
    .await;
    // 13. rollback with no migration
    refused(
        &pair,
        migrate(&ns, &["--rollback", "--yes"]),
        1,
        &["nothing to roll back"],
    )
    .await;
    // 14. cleanup with no migration
    refused(
        &pair,
        migrate(&ns, &["--cleanup", "--yes"]),
        1,
        &["nothing to clean up"],
    )
    .await;
    // 15. an unreachable destination
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(&dead, format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: d\n  cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}\ncontexts:\n- name: dead\n  context: {{cluster: d, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
    )).unwrap();
    let mut cmd = migrate_to(&ns, "dead", &["--yes"]);
    cmd.arg("--to-kubeconfig").arg(&dead);
    refused(
        &pair,
        cmd,
        4,
        &[
            "destination: cluster \"dead\"",
            "cannot reach the API server",
        ],
    )
    .await;
    // 16. the headless Service is missing in the destination, without --copy-dependencies
    assert!(
        kubectl(&["--context", "km-b", "-n", &ns, "delete", "service", "web"])
            .status
            .success()
    );
    refused(
        &pair,
        migrate(&ns, &["--yes"]),
        4,
        &[
            "Service web (the StatefulSet's serviceName) does not exist in km-b",
            "--copy-dependencies",
        ],
    )
    .await;
    // 17. a PV of the set already exists in the destination under the same name
    let claims = pair.claims(false).await;
    let (volume, _) = claims.values().next().unwrap();
    let squatter: PersistentVolume = json(serde_json::json!({
        "metadata": {"name": volume},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "hostPath": {"path": "/elsewhere"}}
    }));
    Api::<PersistentVolume>::all(pair.b.clone())
        .create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    refused(
        &pair,
        migrate(&ns, &["--yes", "--copy-dependencies"]),
        4,
        &[&format!(
            "a PV named {volume} already exists in km-b and was not copied by this migration"
        )],
    )
    .await;
    Api::<PersistentVolume>::all(pair.b.clone())
        .delete(volume, &Default::default())
        .await
        .unwrap();
    // 18. a claim of the set already exists in the destination (it would shadow the moved data)
    let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim = json(serde_json::json!({
        "metadata": {"name": "data-web-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }));
    let claims =
        Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::namespaced(pair.b.clone(), &ns);
    claims.create(&PostParams::default(), &claim).await.unwrap();
    // km-b's volume controller binds the new claim to a free PV of its pool, in several
    // writes; the snapshot that proves the refusal changed nothing must come after them.
    support::poll_until(
        Duration::from_secs(60),
        "the squatting claim bound in B",
        || async {
            let claim = claims.get("data-web-0").await.unwrap();
            claim.status.and_then(|s| s.phase).as_deref() == Some("Bound")
        },
    )
    .await;
    refused(
        &pair,
        migrate(&ns, &["--yes", "--copy-dependencies"]),
        4,
        &[
            "PVC data-web-0 already exists in km-b",
            "was not copied by this migration",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_foreign_statefulset_in_the_destination_is_never_touched() {
    let pair = Pair::new("foreign").await;
    pair.create_set(1, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let foreign = serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "other"}]}}}
    });
    pair.sets(true)
        .create(&PostParams::default(), &json(foreign))
        .await
        .unwrap();
    refused(
        &pair,
        migrate(pair.ns(), &["--yes"]),
        4,
        &[
            "already exists in km-b",
            "was not created by this migration",
            "refusing to touch it",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_storage_class_missing_in_the_destination_is_reported() {
    let pair = Pair::new("no-class").await;
    let class = format!("gold-{}", support::unique_suffix());
    let manifest = format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {class}}}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: Immediate\n---\n\
         apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {class}-pv}}\nspec: {{capacity: {{storage: 1Gi}}, accessModes: [ReadWriteOnce], storageClassName: {class}, hostPath: {{path: /tmp/{class}}}}}\n"
    );
    let mut apply = std::process::Command::new(support::cluster_bin_dir().join("kubectl"));
    apply
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path())
        .args(["--context", "km-a", "apply", "-f", "-"])
        .stdin(std::process::Stdio::piped());
    let mut child = apply.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), manifest.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    let vct = serde_json::json!({"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]});
    pair.create_set(1, &["data"], "OrderedReady", vct).await;
    refused(
        &pair,
        migrate(pair.ns(), &["--yes"]),
        4,
        &[
            &format!("StorageClass {class} does not exist in km-b"),
            "--storage-class-map",
        ],
    )
    .await;
    // Mapping it to one that exists there makes the same command pass preflight.
    let out = run(migrate(
        pair.ns(),
        &[
            "--dry-run",
            "--storage-class-map",
            &format!("{class}=standard"),
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn an_unhealthy_source_and_a_missing_configmap_are_reported_together() {
    let pair = Pair::new("unhealthy").await;
    pair.create_set(1, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    // A new revision whose pod can never be scheduled, and that needs a ConfigMap B lacks.
    let patch = serde_json::json!({"spec": {"template": {"spec": {
        "nodeSelector": {"no-such-label": "x"},
        "containers": [{"name": "app", "image": "registry.example/app:2", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}}});
    pair.sets(false)
        .patch(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    support::poll_until(
        Duration::from_secs(60),
        "the source to become unhealthy",
        || async {
            let s = pair
                .sets(false)
                .get("web")
                .await
                .unwrap()
                .status
                .unwrap_or_default();
            s.ready_replicas.unwrap_or(0) == 0
        },
    )
    .await;
    refused(
        &pair,
        migrate(pair.ns(), &["--yes"]),
        4,
        &[
            "only 0 of 1 replicas of web are Ready",
            "--allow-unhealthy",
            "ConfigMap settings used by the pod template does not exist in km-b",
        ],
    )
    .await;
}

#[tokio::test]
async fn rbac_denials_in_the_destination_are_listed_before_anything_is_written() {
    let pair = Pair::new("rbac").await;
    pair.create_set(1, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let ns = pair.ns().to_string();
    for args in [
        vec!["create", "serviceaccount", "restricted"],
        vec![
            "create",
            "role",
            "read-sets",
            "--verb=get,list",
            "--resource=statefulsets,pods,configmaps",
        ],
        vec![
            "create",
            "rolebinding",
            "restricted-read",
            "--role=read-sets",
            &format!("--serviceaccount={ns}:restricted"),
        ],
    ] {
        let mut full = vec!["--context", "km-b", "-n", &ns];
        full.extend(args);
        let out = kubectl(&full);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let token = kubectl(&[
        "--context",
        "km-b",
        "-n",
        &ns,
        "create",
        "token",
        "restricted",
    ]);
    let token = String::from_utf8(token.stdout).unwrap().trim().to_string();
    let server = String::from_utf8(
        kubectl(&[
            "config",
            "view",
            "--minify",
            "--context",
            "km-b",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ])
        .stdout,
    )
    .unwrap();
    let ca = String::from_utf8(
        kubectl(&[
            "config",
            "view",
            "--raw",
            "--minify",
            "--context",
            "km-b",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ])
        .stdout,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("restricted");
    std::fs::write(&kubeconfig, format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster: {{server: \"{server}\", certificate-authority-data: {ca}}}\ncontexts:\n- name: restricted-b\n  context: {{cluster: b, user: r}}\nusers:\n- name: r\n  user: {{token: {token}}}\n"
    )).unwrap();
    let mut cmd = migrate_to(&ns, "restricted-b", &["--yes"]);
    cmd.arg("--to-kubeconfig").arg(&kubeconfig);
    refused(
        &pair,
        cmd,
        4,
        &[
            "restricted-b denies:",
            "create statefulsets.apps in namespace",
            "create persistentvolumes",
            "update configmaps",
        ],
    )
    .await;
}

#[tokio::test]
async fn create_namespace_and_copy_dependencies_make_a_bare_destination_work() {
    let pair = Pair::new("bare").await;
    let config = serde_json::json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "app", "image": "i", "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}}]}]}}});
    for args in [
        vec!["create", "configmap", "settings", "--from-literal=a=b"],
        vec!["create", "secret", "generic", "creds", "--from-literal=p=q"],
    ] {
        let mut full = vec!["--context", "km-a", "-n", pair.ns()];
        full.extend(args);
        assert!(kubectl(&full).status.success());
    }
    pair.create_set(2, &["data"], "OrderedReady", config).await;
    let target = format!("{}-moved", pair.ns());
    let out = run(migrate(
        pair.ns(),
        &[
            "--to-namespace",
            &target,
            "--create-namespace",
            "--copy-dependencies",
            "--yes",
            "-o",
            "json",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    // Every write is a step, these included, in the order planned.
    let prepared: Vec<String> = step_events(&out.stdout, "step-finished")
        .iter()
        .filter(|e| e["cluster"] == "km-b")
        .filter_map(|e| match e["step"].as_str() {
            Some("create-namespace") => Some("Namespace".to_string()),
            Some("copy-object") => Some(format!(
                "{} {}",
                e["detail"]["kind"].as_str().unwrap(),
                e["detail"]["name"].as_str().unwrap()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        prepared,
        [
            "Namespace",
            "Service web",
            "ConfigMap settings",
            "Secret creds"
        ],
        "one step per object made"
    );
    for kind in [
        "service/web",
        "configmap/settings",
        "secret/creds",
        "statefulset/web",
        "pvc/data-web-0",
    ] {
        assert!(
            kubectl(&["--context", "km-b", "-n", &target, "get", kind])
                .status
                .success(),
            "{kind} missing in {target}"
        );
    }
    // The journal records what was created, so that a rollback removes exactly that.
    let journal = kubectl(&[
        "--context",
        "km-b",
        "-n",
        &target,
        "get",
        "configmap",
        "kubectl-migrate-web",
        "-o",
        "jsonpath={.data.journal\\.json}",
    ]);
    let journal: serde_json::Value = serde_json::from_slice(&journal.stdout).unwrap();
    let created: Vec<String> = journal["created"]
        .as_array()
        .expect("the journal lists what it created")
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        created,
        [
            format!("Namespace {target}"),
            "Service web".to_string(),
            "ConfigMap settings".to_string(),
            "Secret creds".to_string()
        ]
    );
    // The source keeps its own copies of what was copied.
    let out = run(migrate(
        pair.ns(),
        &[
            "--to-namespace",
            &target,
            "--rollback",
            "--yes",
            "-o",
            "json",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let removed: Vec<String> = step_events(&out.stdout, "step-finished")
        .iter()
        .filter_map(|e| match e["step"].as_str() {
            Some("delete-created") => Some(format!(
                "{} {}",
                e["detail"]["kind"].as_str().unwrap(),
                e["detail"]["name"].as_str().unwrap()
            )),
            Some("delete-namespace") => Some("Namespace".to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        [
            "Service web",
            "ConfigMap settings",
            "Secret creds",
            "Namespace"
        ],
        "one delete per object the migration created, the namespace last"
    );
    let out = kubectl(&["--context", "km-b", "get", "namespace", &target]);
    assert!(
        !out.status.success(),
        "the namespace the migration created is gone: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    for kind in ["configmap/settings", "secret/creds", "statefulset/web"] {
        assert!(
            kubectl(&["--context", "km-a", "-n", pair.ns(), "get", kind])
                .status
                .success(),
            "{kind} must stay in the source"
        );
    }
}

/// Events named `name` from `-o json` output.
fn step_events(stdout: &[u8], name: &str) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == name)
        .collect()
}

#[tokio::test]
async fn a_rollback_keeps_what_the_migration_did_not_create_and_says_why() {
    let pair = Pair::new("bare-kept").await;
    let config = serde_json::json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "app", "image": "i", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}});
    let mut full = vec!["--context", "km-a", "-n", pair.ns()];
    full.extend(["create", "configmap", "settings", "--from-literal=a=b"]);
    assert!(kubectl(&full).status.success());
    pair.create_set(1, &["data"], "OrderedReady", config).await;
    let target = format!("{}-moved", pair.ns());
    let _cleanup = support::TestNamespace::create_named_existing(support::CONTEXT_B, &target);
    let out = run(migrate(
        pair.ns(),
        &[
            "--to-namespace",
            &target,
            "--create-namespace",
            "--copy-dependencies",
            "--yes",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    // Someone adopts the copied ConfigMap and adds an object of their own to the namespace.
    let b = |args: &[&str]| {
        let mut full = vec!["--context", "km-b", "-n", &target];
        full.extend(args);
        assert!(kubectl(&full).status.success(), "kubectl {args:?}");
    };
    b(&[
        "label",
        "configmap",
        "settings",
        "migrate.kubectl.io/copy-of-",
    ]);
    b(&["create", "configmap", "handmade", "--from-literal=x=y"]);
    let out = run(migrate(
        pair.ns(),
        &["--to-namespace", &target, "--rollback", "--yes"],
    ));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("ConfigMap settings stays in km-b: it lacks this migration's label"),
        "{err}"
    );
    assert!(
        err.contains(&format!("namespace {target} stays in km-b: it holds"))
            && err.contains("ConfigMap handmade")
            && err.contains("ConfigMap settings"),
        "{err}"
    );
    for kind in ["configmap/settings", "configmap/handmade"] {
        assert!(
            kubectl(&["--context", "km-b", "-n", &target, "get", kind])
                .status
                .success(),
            "{kind} must stay"
        );
    }
    for kind in [
        "service/web",
        "statefulset/web",
        "configmap/kubectl-migrate-web",
    ] {
        assert!(
            !kubectl(&["--context", "km-b", "-n", &target, "get", kind])
                .status
                .success(),
            "{kind} must be gone"
        );
    }
    let _cleanup = support::TestNamespace::create_named_existing(support::CONTEXT_B, &target);
}

#[tokio::test]
async fn declining_the_prompt_on_a_terminal_changes_nothing_and_exits_3() {
    let pair = Pair::new("prompt").await;
    pair.create_set(1, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.snapshot().await;
    // `script` gives the tool a real terminal; we answer its question with "n".
    let command_line = format!(
        "{} statefulset web -n {} --context km-a --to-context km-b",
        env!("CARGO_BIN_EXE_kubectl-migrate"),
        pair.ns()
    );
    let (status, screen) = tokio::task::spawn_blocking(move || {
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command_line, "/dev/null"])
            .env("KUBECONFIG", support::kubeconfig_path())
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("`script` (util-linux) runs the tool on a pseudo-terminal");
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (send, chunks) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = std::io::Read::read(&mut stdout, &mut buf) {
                if send.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        // The answer goes in once the question is on the screen, however long the preflight
        // took.
        let mut screen = Vec::new();
        while !String::from_utf8_lossy(&screen).contains("Continue? [y/N]") {
            match chunks.recv_timeout(Duration::from_secs(120)) {
                Ok(chunk) => screen.extend(chunk),
                Err(e) => panic!(
                    "no question within 120 s ({e}): {}",
                    String::from_utf8_lossy(&screen)
                ),
            }
        }
        // A line, as a person answers: the prompt waits for Enter.
        std::io::Write::write_all(&mut stdin, b"n\r").unwrap();
        // Bounded, so that an answer the tool does not take fails the test instead of hanging it.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                child.kill().ok();
                panic!(
                    "the tool did not end within 120 s of the answer: {}",
                    String::from_utf8_lossy(&screen)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        drop(stdin);
        reader.join().unwrap();
        screen.extend(chunks.try_iter().flatten());
        (status, String::from_utf8_lossy(&screen).into_owned())
    })
    .await
    .unwrap();
    assert!(screen.contains("Plan: move StatefulSet web"), "{screen}");
    assert!(screen.contains("Continue? [y/N]"), "{screen}");
    assert!(
        screen.contains("Stopped: not confirmed; nothing was changed"),
        "{screen}"
    );
    assert_eq!(status.code(), Some(3), "{screen}");
    assert_eq!(
        pair.snapshot().await,
        before,
        "a declined migration changed something"
    );
}

/// A StatefulSet at 0 replicas (which is also what an already migrated source looks like) has
/// nothing to move: refused before any write.
#[tokio::test]
async fn a_set_at_zero_replicas_is_refused_before_any_write() {
    let pair = Pair::new("zero").await;
    pair.create_set(0, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    refused(
        &pair,
        migrate(pair.ns(), &["--yes"]),
        4,
        &["web has 0 replicas in km-a: there is nothing to move"],
    )
    .await;
}

/// A resume is a decision like a start: off a terminal it needs --yes, and it keeps the
/// health check the migration was started with unless told --no-health-check.
#[tokio::test]
async fn a_resume_asks_and_keeps_its_health_check() {
    let pair = Pair::new("resume").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let first = run(migrate(
        pair.ns(),
        &["--yes", "--step", "--health-check", "true"],
    ));
    assert_eq!(first.status.code(), Some(3), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("--health-check true"),
        "the resume command keeps the check: {}",
        stderr(&first)
    );
    // It shows what remains as a start shows its plan, and the next step is the plan's first.
    let err = refused(
        &pair,
        migrate(pair.ns(), &["--health-check", "true"]),
        1,
        &[
            "Plan: move StatefulSet web from km-a/",
            "(ordinals [1, 0], highest first)\n",
            "Resume the migration of StatefulSet web (km-a to km-b): 1 of 3 ordinals verified in km-b; next: ",
            "needs confirmation",
            "--yes",
        ],
    )
    .await;
    // Ordinal 2 has moved; the first step left is the source's scale-down for ordinal 1, in
    // the plan and as the next step.
    assert!(
        !err.contains("[2] "),
        "the resume plans a move done already: {err}"
    );
    let ns = pair.ns();
    for needle in [
        "\n  1. [1] scale source to 1 replica and wait until pod 1 is gone".to_string(),
        format!("; next: set km-a/{ns}/web to ordinals.start=0, replicas=1 needs confirmation"),
    ] {
        assert!(err.contains(&needle), "{needle:?} missing from: {err}");
    }
    refused(
        &pair,
        migrate(pair.ns(), &["--yes", "--step"]),
        4,
        &[
            "was started with --health-check 'true'",
            "--no-health-check",
        ],
    )
    .await;
    let done = run(migrate(pair.ns(), &["--yes", "--no-health-check"]));
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        pair.sets(true)
            .get("web")
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3)
    );
}

#[tokio::test]
async fn server_dry_run_into_a_namespace_to_be_created_plans_every_write_and_says_what_it_could_not_check()
 {
    let pair = Pair::new("dry-new-ns").await;
    let config = serde_json::json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "app", "image": "i", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}});
    let mut full = vec!["--context", "km-a", "-n", pair.ns()];
    full.extend(["create", "configmap", "settings", "--from-literal=a=b"]);
    assert!(kubectl(&full).status.success());
    pair.create_set(2, &["data"], "OrderedReady", config).await;
    let before = pair.snapshot().await;
    let target = format!("{}-new", pair.ns());
    let out = run(migrate(
        pair.ns(),
        &[
            "--to-namespace",
            &target,
            "--create-namespace",
            "--copy-dependencies",
            "--dry-run=server",
            "-o",
            "json",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The plan lists every write, the preparation first, in the order it is made.
    let writes: Vec<&str> = report["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["writes"] == true)
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    let position = |prefix: &str| {
        writes
            .iter()
            .position(|w| w.starts_with(prefix))
            .unwrap_or_else(|| panic!("no planned write {prefix:?} in {writes:#?}"))
    };
    let order = [
        position(&format!("create namespace {target}")),
        position("write the migration journal"),
        position("copy Service web from km-a"),
        position("copy ConfigMap settings from km-a"),
        position("protect PV"),
        position("scale source to"),
    ];
    assert!(order.is_sorted(), "{order:?} in {writes:#?}");
    // The namespace creation is judged by the server; what goes into it is named as not checked.
    let checks = report["serverDryRun"].as_array().unwrap();
    let state_of = |prefix: &str| {
        checks
            .iter()
            .find(|c| c["action"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no verdict for {prefix:?} in {checks:#?}"))
    };
    assert_eq!(
        state_of(&format!("create namespace {target}"))["state"],
        "accepted"
    );
    let copy = state_of("copy ConfigMap settings");
    assert_eq!(copy["state"], "not-checked", "{copy}");
    assert!(
        copy["message"]
            .as_str()
            .unwrap()
            .contains(&format!("namespace {target} does not exist yet")),
        "{copy}"
    );
    assert!(
        checks.iter().all(|c| c["ok"] == true),
        "nothing rejected: {checks:#?}"
    );
    assert_eq!(pair.snapshot().await, before, "a dry run wrote something");
    let ns = kubectl(&["--context", "km-b", "get", "namespace", &target]);
    assert!(!ns.status.success(), "the dry run created {target}");
}

/// --create-namespace judges what the pods need against the namespace as it will be, empty:
/// the headless Service and the ConfigMap are missing there, with or without the server's dry
/// run, and nothing is created (issue 28, hole 2).
#[tokio::test]
async fn a_namespace_to_be_created_lacks_what_the_pods_need_and_nothing_is_written() {
    let pair = Pair::new("bad-newns").await;
    let config = serde_json::json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "app", "image": "i", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}});
    let full = [
        "--context",
        "km-a",
        "-n",
        pair.ns(),
        "create",
        "configmap",
        "settings",
        "--from-literal=a=b",
    ];
    assert!(kubectl(&full).status.success());
    pair.create_set(1, &["data"], "OrderedReady", config).await;
    let target = format!("{}-new", pair.ns());
    for dry_run in [None, Some("--dry-run=server")] {
        let mut args = vec!["--to-namespace", &target, "--create-namespace", "--yes"];
        args.extend(dry_run);
        let place = format!("km-b/{target} (which --create-namespace creates empty)");
        refused(
            &pair,
            migrate(pair.ns(), &args),
            4,
            &[
                &format!("Service web (the StatefulSet's serviceName) does not exist in {place}; create it or pass --copy-dependencies"),
                &format!("ConfigMap settings used by the pod template does not exist in {place}"),
            ],
        )
        .await;
        let namespace = kubectl(&["--context", "km-b", "get", "namespace", &target]);
        assert!(
            !namespace.status.success(),
            "namespace {target} was created ({dry_run:?})"
        );
    }
}
