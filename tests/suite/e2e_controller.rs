//! `kubectl migrate controller run` against the real local clusters, the way kubebuilder
//! projects test a controller (`make run`): the binary runs as a process against km-c, the
//! management cluster; km-a and km-b are the members, their kubeconfigs in Secrets of the
//! resource's namespace. StatefulSetMigrations are applied with kubectl.
use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::ListParams;
use kube::{Api, Client};
use kubectl_migrate::controller::api::StatefulSetMigration;

use support::process::{self, http_get};
use support::sts::{Pair, SplitBrainObserver, assert_moved, kubectl, plugin};
use support::{CONTEXT_C, TestNamespace, client, poll_until, single_cluster_kubeconfig};

/// The controller as a process, stopped with SIGTERM when dropped (if the test did not).
pub(crate) struct Controller {
    child: Child,
    log: PathBuf,
    /// Where its probes and metrics are served.
    addr: String,
    _dir: tempfile::TempDir,
}

impl Controller {
    /// Starts it on the resources of `namespace` in km-c; returns once /readyz answers 200.
    pub(crate) async fn start(namespace: &str) -> Controller {
        Controller::start_with(namespace, &[]).await
    }

    /// [`Controller::start`] with more arguments (another --kubeconfig, say).
    pub(crate) async fn start_with(namespace: &str, extra: &[&str]) -> Controller {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("controller.log");
        let addr = format!("127.0.0.1:{}", process::free_port());
        let child = plugin()
            .args(["controller", "run", "--context", CONTEXT_C, "-n", namespace])
            .args(["--probe-addr", &addr, "-v=1"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let controller = Controller {
            child,
            log,
            addr: addr.clone(),
            _dir: dir,
        };
        poll_until(
            Duration::from_secs(60),
            "the controller's /readyz",
            || async { http_get(&addr, "/readyz").is_some_and(|r| r.starts_with("HTTP/1.1 200")) },
        )
        .await;
        let health = http_get(&addr, "/healthz").unwrap();
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        let metrics = http_get(&addr, "/metrics").unwrap();
        assert!(
            metrics.contains("kubectl_migrate_controller_reconciles_total"),
            "{metrics}"
        );
        controller
    }

    /// The body of its answer to GET `path` (a probe or /metrics).
    pub(crate) fn answer(&self, path: &str) -> String {
        let response = http_get(&self.addr, path).unwrap_or_default();
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or(response)
    }

    /// The value of the unlabelled metric `name` (without the controller's prefix) in its
    /// /metrics, if it serves it.
    pub(crate) fn metric(&self, name: &str) -> Option<f64> {
        let wanted = format!("kubectl_migrate_controller_{name} ");
        self.answer("/metrics")
            .lines()
            .find_map(|l| l.strip_prefix(&wanted)?.trim().parse().ok())
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, as the kubelet stops a Pod; the exit status.
    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        self.child.wait().unwrap()
    }

    /// SIGKILL (`kill -9`): no shutdown of any kind; the exit status.
    pub(crate) fn kill(&mut self) -> std::process::ExitStatus {
        self.child.kill().unwrap();
        self.child.wait().unwrap()
    }

    /// Sends the process `signal` (a name as `kill -s` takes it).
    pub(crate) fn signal(&self, signal: &str) {
        process::signal(&self.child, signal);
    }

    /// The exit status, which must come within `limit`.
    pub(crate) fn exited_within(&mut self, limit: Duration) -> std::process::ExitStatus {
        let log = self.log.clone();
        process::exit_within(&mut self.child, limit, "the signal", move || {
            std::fs::read_to_string(&log).unwrap_or_default()
        })
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.terminate();
        }
    }
}

/// The CRD, applied from deploy/crds/ as a user would (idempotent across tests).
pub(crate) fn install_crds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "wait",
        "--for=condition=Established",
        "crd/statefulsetmigrations.kubectl-migrate.io",
        "crd/apicompatibilities.kubectl-migrate.io",
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// The member `cluster`'s kubeconfig in Secret `km-<cluster>-kubeconfig` of `namespace` in km-c.
pub(crate) fn kubeconfig_secret(namespace: &str, cluster: &str) {
    let file = single_cluster_kubeconfig(cluster);
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "-n",
        namespace,
        "create",
        "secret",
        "generic",
        &format!("km-{cluster}-kubeconfig"),
        &format!("--from-file=value={}", file.display()),
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// `kubectl apply` of a StatefulSetMigration in km-c.
pub(crate) fn apply(namespace: &str, name: &str, spec: serde_json::Value) {
    let doc = serde_json::json!({
        "apiVersion": "kubectl-migrate.io/v1alpha1",
        "kind": "StatefulSetMigration",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    });
    apply_text(&doc.to_string());
}

/// `kubectl apply -f -` of `text` (YAML or JSON) in km-c.
pub(crate) fn apply_text(text: &str) {
    let out = kubectl_with_input(&["--context", CONTEXT_C, "apply", "-f", "-"], text);
    assert!(out.status.success(), "{out:?}");
}

/// kubectl `args` with `input` on its stdin.
pub(crate) fn kubectl_with_input(args: &[&str], input: &str) -> std::process::Output {
    let mut child = std::process::Command::new(support::cluster_bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Waits until the resource's condition `type_` has `status`; returns the resource.
pub(crate) async fn wait_condition(
    api: &Api<StatefulSetMigration>,
    name: &str,
    type_: &str,
    status: &str,
    limit: Duration,
    controller: &Controller,
) -> StatefulSetMigration {
    // A run that is starting is Ready=False too (reason Running): wait for its end.
    wait_for(
        api,
        name,
        &format!("{type_}={status}"),
        |c| c.type_ == type_ && c.status == status && c.reason != "Running",
        limit,
        controller,
    )
    .await
}

/// Waits until one of the resource's conditions is `wanted`, for the resource's current
/// generation; returns the resource.
pub(crate) async fn wait_for(
    api: &Api<StatefulSetMigration>,
    name: &str,
    what: &str,
    wanted: impl Fn(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition) -> bool,
    limit: Duration,
    controller: &Controller,
) -> StatefulSetMigration {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let obj = api.get(name).await.unwrap();
        let found = obj.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| wanted(c) && c.observed_generation == obj.metadata.generation)
        });
        if found.is_some() {
            return obj;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {name} to be {what}; status: {}\ncontroller log:\n{}",
            serde_json::to_string_pretty(&obj.status).unwrap(),
            controller.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(crate) fn condition<'a>(
    obj: &'a StatefulSetMigration,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    obj.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .unwrap_or_else(|| panic!("no {type_} condition: {:?}", obj.status))
}

/// The reasons of the Events on the resource `name`, in order of first occurrence.
pub(crate) async fn event_reasons(c: &Client, namespace: &str, name: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(c.clone(), namespace);
    let mut list = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items;
    list.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
    let mut reasons: Vec<String> = list.into_iter().filter_map(|e| e.reason).collect();
    reasons.dedup();
    reasons
}

/// Nothing of a migration in the destination: no journal ConfigMap, no Lease.
async fn assert_untouched_destination(pair: &Pair) {
    let maps: Api<ConfigMap> = Api::namespaced(pair.b.clone(), pair.ns());
    let names: Vec<String> = maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert!(names.is_empty(), "ConfigMaps written in km-b: {names:?}");
    let leases: Api<Lease> = Api::namespaced(pair.b.clone(), pair.ns());
    let leases = leases.list(&ListParams::default()).await.unwrap().items;
    assert!(leases.is_empty(), "a Lease was taken in km-b: {leases:?}");
}

#[tokio::test]
async fn an_applied_migration_completes_with_no_ordinal_in_both_clusters() {
    install_crds();
    let c = client(CONTEXT_C).await;
    let home = TestNamespace::create(&c, CONTEXT_C, "ctl-run").await;
    kubeconfig_secret(&home.name, "a");
    kubeconfig_secret(&home.name, "b");
    let pair = Pair::new("ctl-run").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let observer = SplitBrainObserver::start(pair.ns());
    let mut controller = Controller::start(&home.name).await;
    apply(
        &home.name,
        "move-web",
        serde_json::json!({
            "statefulSetName": "web",
            "source": {"name": "km-a", "namespace": pair.ns()},
            "destination": {"name": "km-b", "namespace": pair.ns()},
            "batch": 1,
        }),
    );
    let api: Api<StatefulSetMigration> = Api::namespaced(c.clone(), &home.name);
    let done = wait_condition(
        &api,
        "move-web",
        "Ready",
        "True",
        Duration::from_secs(600),
        &controller,
    )
    .await;
    assert_moved(&pair, &before, 3).await;
    observer.assert_never_split();

    let status = done.status.clone().unwrap();
    assert_eq!(
        status.phase,
        Some(kubectl_migrate::controller::api::Phase::Completed)
    );
    assert_eq!(
        (status.ordinals_moved, status.ordinals_left),
        (Some(3), Some(0))
    );
    assert!(
        status
            .lease_holder
            .as_deref()
            .is_some_and(|h| h.starts_with("kubectl-migrate-controller/")),
        "{status:?}"
    );
    let ready = condition(&done, "Ready");
    assert_eq!(ready.reason, "Completed");
    assert_eq!(ready.observed_generation, done.metadata.generation);
    assert!(
        ready.message.contains("every ordinal of web runs in km-b")
            && ready.message.contains("--cleanup"),
        "{ready:?}"
    );
    assert_eq!(condition(&done, "Progressing").status, "False");
    assert_eq!(
        done.metadata.finalizers.as_deref(),
        Some(&["kubectl-migrate.io/stop-safely".to_string()][..])
    );
    let status_text = serde_json::to_string(&done.status).unwrap();
    support::assert_in_words("the status", &status_text);
    assert!(!status_text.contains("BEGIN"), "{status_text}");

    // The Events tell the story: started, each step, completed.
    let reasons = event_reasons(&c, &home.name, "move-web").await;
    assert_eq!(
        reasons.first().map(String::as_str),
        Some("Started"),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"Step".to_string()), "{reasons:?}");
    assert_eq!(
        reasons.last().map(String::as_str),
        Some("Completed"),
        "{reasons:?}"
    );

    // SIGTERM ends it cleanly; no credentials reached its log.
    let exit = controller.terminate();
    let log = controller.log();
    assert!(exit.success(), "{exit:?}\n{log}");
    assert!(
        !log.contains("client-key-data") && !log.contains("BEGIN"),
        "{log}"
    );
    support::assert_in_words("the controller's log", &log);

    // A new controller leaves the completed migration alone: no run, no write, no Event.
    let stopped = api.get("move-web").await.unwrap();
    let reasons = event_reasons(&c, &home.name, "move-web").await;
    let restarted = Controller::start(&home.name).await;
    let said = format!("{}/move-web: ended for good at generation", home.name);
    poll_until(
        Duration::from_secs(60),
        "the new controller to pass over the migration",
        || async { restarted.log().contains(&said) },
    )
    .await;
    let after = api.get("move-web").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, stopped.metadata.resource_version,
        "the new controller wrote the resource"
    );
    assert_eq!(event_reasons(&c, &home.name, "move-web").await, reasons);
}

#[tokio::test]
async fn bad_specs_say_why_in_a_condition_and_write_nothing_on_the_members() {
    install_crds();
    let c = client(CONTEXT_C).await;
    let home = TestNamespace::create(&c, CONTEXT_C, "ctl-bad").await;
    let elsewhere = TestNamespace::create(&c, CONTEXT_C, "ctl-other").await;
    kubeconfig_secret(&home.name, "a");
    kubeconfig_secret(&elsewhere.name, "b");
    let pair = Pair::new("ctl-bad").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let snapshot = pair.snapshot().await;
    let controller = Controller::start(&home.name).await;
    let source = serde_json::json!({"name": "km-a", "namespace": pair.ns()});
    // km-b's kubeconfig is only in another namespace: not there by convention...
    apply(
        &home.name,
        "missing-secret",
        serde_json::json!({
            "statefulSetName": "web", "source": source,
            "destination": {"name": "km-b", "namespace": pair.ns()},
        }),
    );
    // ...and refused when named explicitly.
    apply(
        &home.name,
        "borrowed-secret",
        serde_json::json!({
            "statefulSetName": "web", "source": source,
            "destination": {"name": "km-b", "namespace": pair.ns(), "kubeconfigSecret": {"name": "km-b-kubeconfig", "namespace": elsewhere.name}},
        }),
    );
    // A set that does not exist, between reachable members (km-a to itself in another
    // namespace, whose kubeconfig is here).
    apply(
        &home.name,
        "unknown-set",
        serde_json::json!({
            "statefulSetName": "nope", "source": source,
            "destination": {"name": "km-a", "namespace": "ctl-nowhere"},
        }),
    );
    let api: Api<StatefulSetMigration> = Api::namespaced(c.clone(), &home.name);
    let limit = Duration::from_secs(120);
    for (name, reason, words) in [
        (
            "missing-secret",
            "KubeconfigUnavailable",
            format!(
                "Secret km-b-kubeconfig does not exist in namespace {}",
                home.name
            ),
        ),
        (
            "borrowed-secret",
            "InvalidSpec",
            format!(
                "names Secret km-b-kubeconfig in namespace {}; a migration may use the Secrets of its own namespace ({}) only",
                elsewhere.name, home.name
            ),
        ),
        ("unknown-set", "PreflightFailed", "nope".to_string()),
    ] {
        let obj = wait_condition(&api, name, "Ready", "False", limit, &controller).await;
        let ready = condition(&obj, "Ready");
        assert_eq!(ready.reason, reason, "{name}: {ready:?}");
        assert!(ready.message.contains(&words), "{name}: {ready:?}");
        support::assert_in_words(name, &ready.message);
        let status = obj.status.as_ref().unwrap();
        assert_eq!(
            status.phase,
            Some(kubectl_migrate::controller::api::Phase::Failed),
            "{name}"
        );
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains(&words)),
            "{name}: {status:?}"
        );
        let reasons = event_reasons(&c, &home.name, name).await;
        assert!(reasons.contains(&reason.to_string()), "{name}: {reasons:?}");
    }
    assert_untouched_destination(&pair).await;
    assert_eq!(pair.snapshot().await, snapshot, "the members changed");
}
