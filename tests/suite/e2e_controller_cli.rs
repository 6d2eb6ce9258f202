//! `kubectl migrate statefulset ... --in-cluster`: the CLI hands the run to the controller as a
//! StatefulSetMigration in km-c and follows it to the end; a rollback goes through the same
//! resource. Refusals write nothing; `-o yaml --dry-run=client` prints what the server accepts.
use crate::support;

use kube::Api;
use kubectl_migrate::controller::api::{Phase, StatefulSetMigration};

use crate::e2e_controller::{Controller, install_crds, kubectl_with_input};
use crate::e2e_controller_gates::Scene;
use support::pty::{Spawn, Term};
use support::sts::{Pair, assert_moved, assert_rolled_back, plugin};
use support::{CONTEXT_C, TestNamespace, client, poll_until};

const WAIT: std::time::Duration = std::time::Duration::from_secs(180);

/// `kubectl migrate statefulset web` from km-a to km-b in `ns`, handed to the controller whose
/// resources live in namespace `home` of km-c.
fn in_cluster(ns: &str, home: &str, extra: &[&str]) -> std::process::Output {
    plugin()
        .args(["statefulset", "web", "--context", "km-a", "-n", ns])
        .args(["--to-context", "km-b", "--in-cluster"])
        .args([
            "--management-context",
            CONTEXT_C,
            "--management-namespace",
            home,
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// No StatefulSetMigration was created.
async fn assert_none(api: &Api<StatefulSetMigration>) {
    let found = api.list(&Default::default()).await.unwrap().items;
    assert!(found.is_empty(), "{} created", found.len());
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn the_cli_hands_the_run_to_the_controller_and_follows_it_both_ways() {
    let Scene {
        c,
        home,
        pair,
        before,
        observer,
        ..
    } = Scene::with_replicas("ctl-cli", 2).await;
    let controller = Controller::start(&home.name).await;

    let out = in_cluster(pair.ns(), &home.name, &["--yes"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{stdout}\n{stderr}\n{}",
        controller.log()
    );
    assert!(
        stdout.starts_with("statefulsetmigration.kubectl-migrate.io/web ")
            && stdout.contains("every ordinal of web runs in km-b"),
        "{stdout}"
    );
    assert!(
        stderr.contains("asked the controller in km-c to move web"),
        "{stderr}"
    );
    support::assert_in_words("the output", &format!("{stdout}{stderr}"));
    assert_moved(&pair, &before, 2).await;
    let api: Api<StatefulSetMigration> = Api::namespaced(c.clone(), &home.name);
    let resource = api.get("web").await.unwrap();
    assert_eq!(
        resource.status.as_ref().and_then(|s| s.phase),
        Some(Phase::Completed)
    );
    assert_eq!(resource.spec.source.namespace.as_deref(), Some(pair.ns()));

    // The same command again finds its resource and follows it: nothing more to do.
    let again = in_cluster(pair.ns(), &home.name, &["--yes"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("exists already: following it"));

    // --rollback turns the same resource around.
    let back = in_cluster(pair.ns(), &home.name, &["--rollback", "--yes"]);
    let (stdout, stderr) = (text(&back.stdout), text(&back.stderr));
    assert!(
        back.status.success(),
        "{stdout}\n{stderr}\n{}",
        controller.log()
    );
    let resource = api.get("web").await.unwrap();
    assert!(resource.spec.rollback);
    assert_eq!(
        resource.status.as_ref().and_then(|s| s.phase),
        Some(Phase::RolledBack)
    );
    assert_rolled_back(&pair, &before, 2).await;
    observer.assert_never_split();
}

#[tokio::test]
async fn refusals_write_nothing_and_the_dry_run_prints_what_the_server_accepts() {
    install_crds();
    let c = client(CONTEXT_C).await;
    let home = TestNamespace::create(&c, CONTEXT_C, "ctl-cli-no").await;
    let pair = Pair::new("ctl-cli-no").await;
    let api: Api<StatefulSetMigration> = Api::namespaced(c.clone(), &home.name);

    // No kubeconfig Secrets in km-c: preflight names both, with the command that creates them.
    let out = in_cluster(pair.ns(), &home.name, &["--yes"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    for secret in ["km-a-kubeconfig", "km-b-kubeconfig"] {
        assert!(
            stderr.contains(&format!("no Secret {secret} in namespace {}", home.name)),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("create secret generic km-a-kubeconfig --from-file=value="),
        "{stderr}"
    );
    assert_none(&api).await;

    // What a resource cannot say is refused before any request.
    let out = in_cluster(pair.ns(), &home.name, &["--on-timeout=rollback", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--on-timeout=rollback"),
        "{}",
        text(&out.stderr)
    );
    let out = in_cluster(pair.ns(), &home.name, &["--step"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_none(&api).await;

    // For Git: the resource as YAML, which the API server accepts as it is.
    let out = in_cluster(
        pair.ns(),
        &home.name,
        &[
            "--dry-run=client",
            "-o",
            "yaml",
            "--batch",
            "2",
            "--timeout",
            "90s",
        ],
    );
    let yaml = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for line in [
        "kind: StatefulSetMigration",
        "statefulSetName: web",
        "batch: 2",
        "timeout: 1m30s",
    ] {
        assert!(yaml.contains(line), "{line}:\n{yaml}");
    }
    let create = [
        "--context",
        CONTEXT_C,
        "create",
        "--dry-run=server",
        "-f",
        "-",
    ];
    let accepted = kubectl_with_input(&create, &yaml);
    assert!(
        accepted.status.success(),
        "{}\n{yaml}",
        text(&accepted.stderr)
    );
    assert_none(&api).await;
}

/// On a terminal at 80 columns: the question says what the controller will be asked, the
/// progress display follows the resource, and Ctrl-C stops following only (exit 3, the command
/// that follows again) while the controller completes the migration.
#[tokio::test]
async fn on_a_terminal_it_asks_follows_and_ctrl_c_stops_only_the_following() {
    let Scene {
        c,
        home,
        pair,
        before,
        observer,
        ..
    } = Scene::with_replicas("ctl-cli-pty", 2).await;
    let _controller = Controller::start(&home.name).await;

    let (ns, home_ns) = (pair.ns().to_string(), home.name.clone());
    let (asked, following, stopped) = tokio::task::spawn_blocking(move || {
        let kubeconfig = support::kubeconfig_path();
        let args = [
            "statefulset",
            "web",
            "--context",
            "km-a",
            "-n",
            &ns,
            "--to-context",
            "km-b",
            "--in-cluster",
            "--management-context",
            CONTEXT_C,
            "--management-namespace",
            &home_ns,
            "--health-check",
            "sleep 3",
        ];
        let mut term = Term::spawn(Spawn {
            program: std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
            args: &args,
            env: &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
            cwd: None,
            cols: 80,
            rows: 40,
        });
        let asked = term.wait_for("the question", WAIT, |s| s.contains("Continue? [y/N]"));
        term.send("y\r");
        let following = term.wait_for("the progress display", WAIT, |s| {
            s.lines().any(|l| l.starts_with("web (in the cluster) ["))
        });
        term.send("\x03");
        (asked, following, term.finish(WAIT))
    })
    .await
    .unwrap();
    assert!(
        asked.contains("ask the controller in km-c to move web from km-a/"),
        "{asked}"
    );
    assert!(following.contains("web (in the cluster) ["), "{following}");
    assert_eq!(stopped.code, 3, "{}", stopped.screen);
    assert!(
        stopped
            .screen
            .contains("stopped following web; the controller goes on with it")
            && stopped
                .screen
                .contains("--in-cluster --management-context km-c"),
        "{}",
        stopped.screen
    );
    // Only the command to copy runs past 80 columns: it stays one line, whole.
    let follow_again = format!(
        "kubectl migrate statefulset web --context km-a -n {} --to-context km-b --health-check 'sleep 3' --in-cluster --management-context km-c --management-namespace {}",
        pair.ns(),
        home.name
    );
    assert!(
        stopped
            .wrapped
            .iter()
            .all(|row| follow_again.contains(row.trim())),
        "{:?}\n{}",
        stopped.wrapped,
        stopped.screen
    );
    assert!(!stopped.cursor_hidden, "{}", stopped.screen);

    // The controller went on without the terminal.
    let api: Api<StatefulSetMigration> = Api::namespaced(c.clone(), &home.name);
    poll_until(WAIT, "the controller completes the migration", || async {
        let found = api.get("web").await.unwrap();
        found.status.and_then(|s| s.phase) == Some(Phase::Completed)
    })
    .await;
    assert_moved(&pair, &before, 2).await;
    observer.assert_never_split();
}
