//! `APICompatibility` resources against the real clusters: the controller runs as a process
//! against km-c, the members are km-a and km-b (or km-outage, whose API server the outage test
//! restarts). Each condition's every status is followed through a watch of the resource, so a
//! flip and its return are both seen however close together they are written.
use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kubectl_migrate::controller::api::APICompatibility;
use tokio::sync::mpsc;

use super::e2e_controller::{
    Controller, apply_text, event_reasons, install_crds, kubeconfig_secret,
};
use support::sts::kubectl;
use support::{CONTEXT_C, TestNamespace, client, kubeconfig_path, unique_suffix};

/// Long enough for a busy machine; the benchmark measures how fast it really is.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// A CRD `widgets.GROUP` whose `spec.size` is an integer of at most `maximum`.
pub(crate) fn widgets(group: &str, maximum: u32) -> String {
    crd(group, "Widget", maximum, serde_json::json!({}))
}

/// A CRD of `kind` (plural: lower case with an s) in `group`, labelled `labels`, whose
/// `spec.size` is an integer of at most `maximum`.
fn crd(group: &str, kind: &str, maximum: u32, labels: serde_json::Value) -> String {
    let singular = kind.to_lowercase();
    let plural = format!("{singular}s");
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "labels": labels},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "maximum": maximum}
                    }}
                }}}
            }]
        }
    })
    .to_string()
}

/// `kubectl apply` of `manifest` in `context`.
pub(crate) fn apply_in(context: &str, manifest: &str) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), manifest).unwrap();
    let out = kubectl(&[
        "--context",
        context,
        "apply",
        "-f",
        file.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// Deletes the test's CRDs from the members when dropped.
struct Crds {
    group: String,
    members: Vec<String>,
}

impl Drop for Crds {
    fn drop(&mut self) {
        for context in &self.members {
            let _ = kubectl(&[
                "--context",
                context,
                "delete",
                "crd",
                &format!("widgets.{}", self.group),
                &format!("gizmos.{}", self.group),
                "--ignore-not-found",
                "--wait=false",
            ]);
        }
    }
}

/// A namespace in km-c with the members' kubeconfig Secrets, `widgets.GROUP` (maximum 10) in
/// each member, and the controller on that namespace.
pub(crate) struct Scene {
    pub(crate) home: TestNamespace,
    pub(crate) group: String,
    pub(crate) members: Vec<String>,
    pub(crate) management: Client,
    pub(crate) controller: Controller,
    _crds: Crds,
}

impl Scene {
    /// `clusters` as start.sh names them (`a`, `outage`); their contexts are `km-<cluster>`.
    pub(crate) async fn new(prefix: &str, clusters: &[&str]) -> Scene {
        install_crds();
        let management = client(CONTEXT_C).await;
        let home = TestNamespace::create(&management, CONTEXT_C, prefix).await;
        let group = format!("{prefix}-{}.example.com", unique_suffix());
        let members: Vec<String> = clusters.iter().map(|c| format!("km-{c}")).collect();
        let crds = Crds {
            group: group.clone(),
            members: members.clone(),
        };
        for (cluster, context) in clusters.iter().zip(&members) {
            kubeconfig_secret(&home.name, cluster);
            apply_in(context, &widgets(&group, 10));
        }
        let controller = Controller::start(&home.name).await;
        Scene {
            home,
            group,
            members,
            management,
            controller,
            _crds: crds,
        }
    }

    pub(crate) fn api(&self) -> Api<APICompatibility> {
        Api::namespaced(self.management.clone(), &self.home.name)
    }

    /// Applies an APICompatibility `name` of the members, on the test's group; returns its
    /// conditions as they are written.
    pub(crate) async fn check(&self, name: &str) -> Conditions {
        self.check_with(name, serde_json::json!({})).await
    }

    /// [`Scene::check`] with more of the spec (`extra`'s fields).
    async fn check_with(&self, name: &str, extra: serde_json::Value) -> Conditions {
        let members: Vec<serde_json::Value> = self
            .members
            .iter()
            .map(|m| serde_json::json!({"name": m}))
            .collect();
        let mut doc = serde_json::json!({
            "apiVersion": "kubectl-migrate.io/v1alpha1",
            "kind": "APICompatibility",
            "metadata": {"name": name, "namespace": self.home.name},
            "spec": {"members": members, "groups": [self.group]},
        });
        for (k, v) in extra.as_object().unwrap() {
            doc["spec"][k] = v.clone();
        }
        let conditions = Conditions::follow(self.api(), name);
        apply_text(&doc.to_string());
        conditions
    }

    /// Writes `widgets.GROUP` with `maximum` in member `context`.
    pub(crate) fn widgets_in(&self, context: &str, maximum: u32) {
        apply_in(context, &widgets(&self.group, maximum));
    }
}

/// Every condition the resource's status has had, in order, from a watch of it.
pub(crate) struct Conditions {
    rx: mpsc::UnboundedReceiver<(Condition, APICompatibility)>,
    /// Received but not waited for yet.
    pending: Vec<(Condition, APICompatibility)>,
    _task: tokio::task::JoinHandle<()>,
}

impl Conditions {
    pub(crate) fn follow(api: Api<APICompatibility>, name: &str) -> Conditions {
        let (tx, rx) = mpsc::unbounded_channel();
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let task = tokio::spawn(async move {
            let mut last: Vec<Condition> = Vec::new();
            let mut stream = std::pin::pin!(watcher(api, config).applied_objects());
            while let Some(Ok(obj)) = stream.next().await {
                let now = obj
                    .status
                    .as_ref()
                    .map(|s| s.conditions.clone())
                    .unwrap_or_default();
                for c in &now {
                    let same = |o: &Condition| {
                        o.type_ == c.type_ && o.status == c.status && o.message == c.message
                    };
                    if !last.iter().any(same) && tx.send((c.clone(), obj.clone())).is_err() {
                        return;
                    }
                }
                last = now;
            }
        });
        Conditions {
            rx,
            pending: Vec::new(),
            _task: task,
        }
    }

    /// The next time condition `type_` is written with `status` (its earlier writes are passed
    /// over; other conditions' are kept for their own waits); the condition and the resource
    /// as written.
    pub(crate) async fn wait(
        &mut self,
        type_: &str,
        status: &str,
        limit: Duration,
        controller: &Controller,
    ) -> (Condition, APICompatibility) {
        let deadline = tokio::time::Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            while let Some(i) = self.pending.iter().position(|(c, _)| c.type_ == type_) {
                let (c, obj) = self.pending.remove(i);
                if c.status == status {
                    return (c, obj);
                }
                seen.push(format!("{} {}: {}", c.type_, c.status, c.message));
            }
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(written)) => self.pending.push(written),
                _ => panic!(
                    "{type_}={status} was not written within {limit:?}; written meanwhile: {seen:#?}\ncontroller log:\n{}",
                    controller.log()
                ),
            }
        }
    }
}

#[tokio::test]
async fn an_incompatible_crd_change_on_a_member_flips_compatible_and_back() {
    let scene = Scene::new("compat", &["a", "b"]).await;
    let (a, b) = (scene.members[0].clone(), scene.members[1].clone());
    let mut conditions = scene.check("widgets").await;
    let (compatible, _) = conditions
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(
        compatible.message,
        format!("no finding of class breaking in 1 API of {a}, {b} (baseline {a})")
    );
    let (reachable, _) = conditions
        .wait("Reachable", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(reachable.reason, "MembersAnswer");

    // A lower maximum on km-b: an object km-a accepts, km-b rejects.
    scene.widgets_in(&b, 5);
    let (incompatible, obj) = conditions
        .wait("Compatible", "False", LIMIT, &scene.controller)
        .await;
    assert_eq!(incompatible.reason, "IncompatibleFindings");
    let m = &incompatible.message;
    let api = format!("widgets.{}", scene.group);
    assert!(
        m.starts_with(&format!(
            "1 finding of class breaking between {a}, {b} (baseline {a}): {api} v1 .spec.size: "
        )) && m.contains("(breaking; witness ")
            && m.contains(&format!("rejected by {b})")),
        "{m}"
    );
    support::assert_in_words("the Compatible condition", m);
    let status = obj.status.unwrap();
    assert_eq!(status.incompatible_findings, Some(1));
    assert_eq!(status.apis, Some(1));
    let change = status.last_change.expect("the change is in the status");
    assert_eq!(
        (change.api.as_str(), change.members, change.change.as_str()),
        (api.as_str(), vec![b.clone()], "changed")
    );
    assert_eq!(change.class.as_deref(), Some("breaking"));
    assert!(change.time.ends_with('Z'), "{}", change.time);
    assert_eq!(incompatible.observed_generation, obj.metadata.generation);

    // Fixed: compatible again.
    scene.widgets_in(&b, 10);
    conditions
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;

    let reasons = event_reasons(&scene.management, &scene.home.name, "widgets").await;
    let flips: Vec<&str> = reasons
        .iter()
        .map(String::as_str)
        .filter(|r| *r == "IncompatibleFindings" || *r == "NoIncompatibleFinding")
        .collect();
    assert_eq!(
        flips,
        [
            "NoIncompatibleFinding",
            "IncompatibleFindings",
            "NoIncompatibleFinding"
        ],
        "an Event on every flip: {reasons:?}"
    );
    let metrics = scene.controller.answer("/metrics");
    assert!(
        metrics.contains(
            "kubectl_migrate_controller_condition_flips_total{condition=\"Compatible\",status=\"False\"} 1"
        ),
        "{metrics}"
    );
    let table = kubectl(&[
        "--context",
        CONTEXT_C,
        "-n",
        &scene.home.name,
        "get",
        "apicompat",
    ]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "COMPATIBLE", "REACHABLE", "FINDINGS", "AGE"],
        "{table}"
    );
    assert_eq!(lines[1][..4], ["widgets", "True", "True", "0"], "{table}");
}

#[tokio::test]
async fn a_selector_compares_only_the_crds_whose_labels_match() {
    let scene = Scene::new("compat-sel", &["a", "b"]).await;
    let (a, b) = (scene.members[0].clone(), scene.members[1].clone());
    let checked = serde_json::json!({"compat": "checked"});
    let group = scene.group.as_str();
    // Widgets, the same in both, are labelled; gizmos differ (km-b's maximum is lower) and
    // are not, so the selector alone keeps the check compatible.
    for member in [&a, &b] {
        apply_in(member, &crd(group, "Widget", 10, checked.clone()));
    }
    apply_in(&a, &crd(group, "Gizmo", 10, serde_json::json!({})));
    apply_in(&b, &crd(group, "Gizmo", 5, serde_json::json!({})));
    let selector = serde_json::json!({"selector": {"matchLabels": checked}});
    let mut conditions = scene.check_with("selected", selector).await;
    let (compatible, obj) = conditions
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(
        compatible.message,
        format!("no finding of class breaking in 1 API of {a}, {b} (baseline {a})")
    );
    assert_eq!(obj.status.unwrap().apis, Some(1));

    // Labelled in both members, the gizmos are compared from the next change seen.
    apply_in(&a, &crd(group, "Gizmo", 10, checked.clone()));
    apply_in(&b, &crd(group, "Gizmo", 5, checked.clone()));
    // Labelled in one member first, the gizmos may be seen missing from the other for a
    // moment; the comparison of both follows.
    let finding = format!("gizmos.{group} v1 .spec.size: ");
    let (mut incompatible, mut obj) = conditions
        .wait("Compatible", "False", LIMIT, &scene.controller)
        .await;
    while !incompatible.message.contains(&finding) {
        assert!(
            incompatible.message.contains(&format!("gizmos.{group}")),
            "{}",
            incompatible.message
        );
        (incompatible, obj) = conditions
            .wait("Compatible", "False", LIMIT, &scene.controller)
            .await;
    }
    let status = obj.status.unwrap();
    assert_eq!(
        (status.apis, status.incompatible_findings),
        (Some(2), Some(1))
    );

    // Unlabelled again, they are left out again (once in both members).
    apply_in(&a, &crd(group, "Gizmo", 10, serde_json::json!({})));
    apply_in(&b, &crd(group, "Gizmo", 5, serde_json::json!({})));
    loop {
        let (_, obj) = conditions
            .wait("Compatible", "True", LIMIT, &scene.controller)
            .await;
        if obj.status.unwrap().apis == Some(1) {
            break;
        }
    }
}

#[tokio::test]
async fn a_member_that_never_answered_makes_compatible_unknown_not_absent() {
    let scene = Scene::new("compat-never", &["a"]).await;
    // km-ghost: km-a's kubeconfig, with a server address where nothing listens.
    let text = std::fs::read_to_string(support::single_cluster_kubeconfig("a")).unwrap();
    let nowhere = format!("https://127.0.0.1:{}", support::process::free_port());
    let ghost: String = text
        .lines()
        .map(|l| match l.split_once("server:") {
            Some((indent, _)) => format!("{indent}server: {nowhere}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(ghost.contains(&nowhere), "no server line in:\n{text}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), ghost).unwrap();
    let out = kubectl(&[
        "--context",
        CONTEXT_C,
        "-n",
        &scene.home.name,
        "create",
        "secret",
        "generic",
        "km-ghost-kubeconfig",
        &format!("--from-file=value={}", file.path().display()),
    ]);
    assert!(out.status.success(), "{out:?}");
    let members = serde_json::json!({"members": [{"name": "km-a"}, {"name": "km-ghost"}]});
    let mut conditions = scene.check_with("never", members).await;
    let (reachable, _) = conditions
        .wait("Reachable", "False", LIMIT, &scene.controller)
        .await;
    assert!(
        reachable
            .message
            .starts_with("1 member does not answer: km-ghost: "),
        "{}",
        reachable.message
    );
    let (compatible, obj) = conditions
        .wait("Compatible", "Unknown", LIMIT, &scene.controller)
        .await;
    assert_eq!(compatible.reason, "MemberUnreachable");
    assert_eq!(
        compatible.message,
        "not compared yet: member km-ghost does not answer; compared once every member answers"
    );
    let status = obj.status.unwrap();
    assert_eq!((status.apis, status.incompatible_findings), (None, None));
}

#[tokio::test]
async fn a_members_api_server_stopped_and_restarted_flips_reachable_and_back() {
    let _outage = support::take_outage_cluster().await;
    let scene = Scene::new("compat-outage", &["a", support::OUTAGE_CLUSTER]).await;
    let down = scene.members[1].clone();
    let mut conditions = scene.check("outage").await;
    conditions
        .wait("Reachable", "True", LIMIT, &scene.controller)
        .await;
    conditions
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;

    let restart = tokio::task::spawn_blocking(|| {
        Command::new(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/restart-apiserver.sh"),
        )
        .args([support::OUTAGE_CLUSTER, "4"])
        .env("KM_CLUSTERS_DIR", kubeconfig_path().parent().unwrap())
        .output()
        .unwrap()
    });
    let (unreachable, obj) = conditions
        .wait("Reachable", "False", LIMIT, &scene.controller)
        .await;
    assert_eq!(unreachable.reason, "MemberUnreachable");
    assert!(
        unreachable
            .message
            .starts_with(&format!("1 member does not answer: {down}: ")),
        "{}",
        unreachable.message
    );
    support::assert_in_words("the Reachable condition", &unreachable.message);
    // The verdict it cannot renew is not kept as if fresh.
    let (stale, _) = conditions
        .wait("Compatible", "Unknown", LIMIT, &scene.controller)
        .await;
    assert_eq!(stale.reason, "MemberUnreachable");
    assert!(
        stale.message.starts_with(&format!(
            "not compared while member {down} does not answer; the last comparison, at "
        )) && stale.message.ends_with(&format!(
            ": no finding of class breaking in 1 API of {}, {down} (baseline {})",
            scene.members[0], scene.members[0]
        )),
        "{}",
        stale.message
    );
    support::assert_in_words("the Compatible condition", &stale.message);
    let members = obj.status.unwrap().members;
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(members[0].reachable && !members[1].reachable, "{members:?}");
    let restarted = restart.await.unwrap();
    assert!(
        restarted.status.success(),
        "restart-apiserver.sh: {}",
        String::from_utf8_lossy(&restarted.stderr)
    );
    let (back, obj) = conditions
        .wait("Reachable", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(back.reason, "MembersAnswer");
    assert!(obj.status.unwrap().members.iter().all(|m| m.reachable));
    conditions
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;
    let reasons = event_reasons(&scene.management, &scene.home.name, "outage").await;
    assert!(
        reasons.iter().any(|r| r == "MemberUnreachable"),
        "an Event when it went: {reasons:?}"
    );
}

/// The CRD watches member `context`'s API server serves now, from its own gauge.
fn crd_watches(context: &str) -> u64 {
    let out = kubectl(&["--context", context, "get", "--raw", "/metrics"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_longrunning_requests{")
                && l.contains("resource=\"customresourcedefinitions\"")
                && l.contains("verb=\"WATCH\"")
        })
        .map(|l| {
            let value = l.rsplit(' ').next().unwrap_or_default();
            value.parse::<f64>().unwrap_or_else(|_| panic!("{l}")) as u64
        })
        .sum()
}

/// `kubectl delete` of the APICompatibility resources `names` in `namespace` of km-c.
fn delete_checks(namespace: &str, names: &[&str]) {
    let mut args = vec![
        "--context",
        CONTEXT_C,
        "-n",
        namespace,
        "delete",
        "apicompat",
    ];
    args.extend(names);
    let deleted = kubectl(&args);
    assert!(deleted.status.success(), "{deleted:?}");
}

/// Waits until member `context` serves `want` CRD watches.
async fn wait_for_crd_watches(context: &str, want: u64, controller: &Controller) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut seen = Vec::new();
    loop {
        let now = crd_watches(context);
        if now == want {
            return;
        }
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{context} did not come to {want} CRD watches within {LIMIT:?}; it served {seen:?}\ncontroller log:\n{}",
            controller.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn checks_naming_the_same_members_share_one_crd_watch_per_member() {
    // km-outage is this test's alone while it holds it: its API server's gauge of CRD watches
    // moves by the controller's only (km-a's moves with the other tests too).
    let _outage = support::take_outage_cluster().await;
    let scene = Scene::new("compat-shared", &["a", support::OUTAGE_CLUSTER]).await;
    let shared = scene.members[1].clone();
    let before = crd_watches(&shared);
    let names = ["first", "second", "third"];
    let mut checks = Vec::new();
    for name in names {
        checks.push(scene.check(name).await);
    }
    for conditions in &mut checks {
        conditions
            .wait("Compatible", "True", LIMIT, &scene.controller)
            .await;
    }

    // Every check hears the change, so every watch it follows is established: one.
    scene.widgets_in(&shared, 5);
    for conditions in &mut checks {
        let (incompatible, _) = conditions
            .wait("Compatible", "False", LIMIT, &scene.controller)
            .await;
        assert_eq!(incompatible.reason, "IncompatibleFindings");
    }
    assert_eq!(
        crd_watches(&shared),
        before + 1,
        "three checks of {shared} follow one CRD watch of it\ncontroller log:\n{}",
        scene.controller.log()
    );

    // Two checks go; the third still follows the member, on the same watch.
    let ns = scene.home.name.as_str();
    delete_checks(ns, &names[..2]);
    scene.widgets_in(&shared, 10);
    checks[2]
        .wait("Compatible", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(crd_watches(&shared), before + 1);

    // The last check naming the member goes: so does the watch.
    delete_checks(ns, &names[2..]);
    wait_for_crd_watches(&shared, before, &scene.controller).await;
}

/// `spec.size`'s maximum in the LCD of `api` that ConfigMap `lcd` holds.
fn lcd_maximum(lcd: &ConfigMap, api: &str) -> Option<u64> {
    let text = lcd.data.as_ref()?.get(&format!("{api}.yaml"))?;
    let manifest: serde_json::Value = serde_saphyr::from_str(text).unwrap();
    manifest
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/maximum")?
        .as_u64()
}

#[tokio::test]
async fn the_lcd_is_kept_in_a_config_map_the_check_owns() {
    let scene = Scene::new("compat-lcd", &["a", "b"]).await;
    let b = scene.members[1].clone();
    let api = format!("widgets.{}", scene.group);
    let config_maps: Api<ConfigMap> = Api::namespaced(scene.management.clone(), &scene.home.name);
    // Someone else's ConfigMap, of the name a second check asks for.
    let theirs: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "taken"},
        "data": {"note": "mine"},
    }))
    .unwrap();
    let theirs = config_maps
        .create(&Default::default(), &theirs)
        .await
        .unwrap();

    let mut conditions = scene
        .check_with("kept", serde_json::json!({"lcdConfigMap": "widgets-lcd"}))
        .await;
    let (written, obj) = conditions
        .wait("LCDWritten", "True", LIMIT, &scene.controller)
        .await;
    assert_eq!(
        written.message,
        "ConfigMap widgets-lcd holds the LCD of 1 of 1 API"
    );
    let lcd = config_maps.get("widgets-lcd").await.unwrap();
    let owner = &lcd.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), Some(&owner.uid), owner.controller),
        ("APICompatibility", obj.metadata.uid.as_ref(), Some(true))
    );
    assert_eq!(lcd_maximum(&lcd, &api), Some(10), "{lcd:?}");
    // What it holds is a CRD that a real API server accepts as it stands.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        &lcd.data.as_ref().unwrap()[&format!("{api}.yaml")],
    )
    .unwrap();
    let accepted = kubectl(&[
        "--context",
        CONTEXT_C,
        "apply",
        "--dry-run=server",
        "-f",
        file.path().to_str().unwrap(),
    ]);
    assert!(accepted.status.success(), "{accepted:?}");

    // km-b accepts less now: so does the LCD.
    scene.widgets_in(&b, 5);
    support::poll_until(LIMIT, "the LCD to narrow to maximum 5", || async {
        let lcd = config_maps.get("widgets-lcd").await.unwrap();
        lcd_maximum(&lcd, &api) == Some(5)
    })
    .await;

    // A ConfigMap the check does not own is left alone, and the condition says why.
    let mut other = scene
        .check_with("other", serde_json::json!({"lcdConfigMap": "taken"}))
        .await;
    let (refused, _) = other
        .wait("LCDWritten", "False", LIMIT, &scene.controller)
        .await;
    assert_eq!(refused.reason, "ConfigMapNotOwned");
    assert_eq!(
        refused.message,
        "ConfigMap taken exists and has no owner, not this resource; it is left alone: delete it, or name another in spec.lcdConfigMap"
    );
    let untouched = config_maps.get("taken").await.unwrap();
    assert_eq!(
        untouched.metadata.resource_version,
        theirs.metadata.resource_version
    );
    let reasons = event_reasons(&scene.management, &scene.home.name, "other").await;
    assert!(
        reasons.iter().any(|r| r == "ConfigMapNotOwned"),
        "an Event says it: {reasons:?}"
    );

    // Deleted with its check.
    delete_checks(&scene.home.name, &["kept"]);
    support::poll_until(LIMIT, "the LCD ConfigMap to go with its check", || async {
        config_maps.get_opt("widgets-lcd").await.unwrap().is_none()
    })
    .await;
}
