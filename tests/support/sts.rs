//! Helpers for the statefulset migration tests: sample sets, running the plugin, an observer
//! that watches both clusters for split brain, and snapshots that prove nothing changed.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Service,
};
use kube::api::{ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use super::{CONTEXT_A, CONTEXT_B, TestNamespace, client, kubeconfig_path, poll_until};

/// A namespace of the same name in both clusters, with the headless Service in both.
pub struct Pair {
    pub a: Client,
    pub b: Client,
    pub ns_a: TestNamespace,
    pub ns_b: TestNamespace,
}

impl Pair {
    pub async fn new(prefix: &str) -> Pair {
        let a = client(CONTEXT_A).await;
        let b = client(CONTEXT_B).await;
        let ns_a = TestNamespace::create(&a, CONTEXT_A, prefix).await;
        let ns_b = TestNamespace::create_named(&b, CONTEXT_B, &ns_a.name).await;
        for c in [&a, &b] {
            let services: Api<Service> = Api::namespaced(c.clone(), &ns_a.name);
            services.create(&PostParams::default(), &json(serde_json::json!({
                "metadata": {"name": "web"},
                "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}
            }))).await.unwrap();
        }
        Pair { a, b, ns_a, ns_b }
    }

    pub fn ns(&self) -> &str {
        &self.ns_a.name
    }

    pub fn sets(&self, in_b: bool) -> Api<StatefulSet> {
        Api::namespaced(
            if in_b { self.b.clone() } else { self.a.clone() },
            self.ns(),
        )
    }

    /// Creates StatefulSet `web` in A with `replicas` and the claim templates, and waits until
    /// every pod is Ready and every claim Bound.
    pub async fn create_set(
        &self,
        replicas: i32,
        templates: &[&str],
        policy: &str,
        extra_spec: serde_json::Value,
    ) -> StatefulSet {
        let vcts: Vec<serde_json::Value> = templates
            .iter()
            .map(|t| serde_json::json!({"metadata": {"name": t}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
            .collect();
        let mut spec = serde_json::json!({
            "serviceName": "web", "replicas": replicas, "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}},
            "volumeClaimTemplates": vcts
        });
        merge(&mut spec, extra_spec);
        let set: StatefulSet = json(serde_json::json!({"metadata": {"name": "web"}, "spec": spec}));
        self.sets(false)
            .create(&PostParams::default(), &set)
            .await
            .unwrap();
        self.wait_ready(false, replicas).await;
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(self.a.clone(), self.ns());
        let expected = replicas as usize * templates.len();
        poll_until(Duration::from_secs(60), "claims bound in A", || async {
            let list = claims.list(&ListParams::default()).await.unwrap().items;
            list.len() == expected
                && list
                    .iter()
                    .all(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        })
        .await;
        self.sets(false).get("web").await.unwrap()
    }

    pub async fn wait_ready(&self, in_b: bool, replicas: i32) {
        let sets = self.sets(in_b);
        poll_until(Duration::from_secs(90), "StatefulSet ready", || async {
            let s = sets.get("web").await.unwrap();
            let st = s.status.unwrap_or_default();
            st.ready_replicas.unwrap_or(0) == replicas && st.replicas == replicas
        })
        .await;
    }

    /// claim name -> (volume name, host path of the volume) in one cluster.
    pub async fn claims(&self, in_b: bool) -> BTreeMap<String, (String, String)> {
        let c = if in_b { &self.b } else { &self.a };
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(c.clone(), self.ns());
        let pvs: Api<PersistentVolume> = Api::all(c.clone());
        let mut out = BTreeMap::new();
        for claim in claims.list(&ListParams::default()).await.unwrap().items {
            let volume = claim.spec.and_then(|s| s.volume_name).unwrap_or_default();
            let path = pvs
                .get(&volume)
                .await
                .ok()
                .and_then(|pv| pv.spec)
                .and_then(|s| s.host_path)
                .map(|h| h.path)
                .unwrap_or_default();
            out.insert(claim.metadata.name.unwrap(), (volume, path));
        }
        out
    }

    pub async fn volume(&self, in_b: bool, name: &str) -> Option<PersistentVolume> {
        let c = if in_b { &self.b } else { &self.a };
        Api::<PersistentVolume>::all(c.clone())
            .get_opt(name)
            .await
            .unwrap()
    }

    /// resourceVersions of everything this migration could touch, in both clusters.
    pub async fn snapshot(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (label, c) in [("a", &self.a), ("b", &self.b)] {
            let lp = ListParams::default();
            let ns = self.ns();
            for s in Api::<StatefulSet>::namespaced(c.clone(), ns)
                .list(&lp)
                .await
                .unwrap()
                .items
            {
                out.insert(
                    format!("{label}/sts/{}", s.metadata.name.unwrap()),
                    s.metadata.resource_version.unwrap(),
                );
            }
            for s in Api::<PersistentVolumeClaim>::namespaced(c.clone(), ns)
                .list(&lp)
                .await
                .unwrap()
                .items
            {
                out.insert(
                    format!("{label}/pvc/{}", s.metadata.name.unwrap()),
                    s.metadata.resource_version.unwrap(),
                );
            }
            for s in Api::<ConfigMap>::namespaced(c.clone(), ns)
                .list(&lp)
                .await
                .unwrap()
                .items
            {
                out.insert(
                    format!("{label}/cm/{}", s.metadata.name.unwrap()),
                    s.metadata.resource_version.unwrap(),
                );
            }
            for s in Api::<PersistentVolume>::all(c.clone())
                .list(&lp)
                .await
                .unwrap()
                .items
            {
                let claim_ns = s
                    .spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .and_then(|r| r.namespace.clone());
                if claim_ns.as_deref() == Some(ns) {
                    out.insert(
                        format!("{label}/pv/{}", s.metadata.name.unwrap()),
                        s.metadata.resource_version.unwrap(),
                    );
                }
            }
        }
        out
    }
}

pub fn json<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn merge(base: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(b), serde_json::Value::Object(e)) = (base.as_object_mut(), extra) {
        for (k, v) in e {
            b.insert(k, v);
        }
    }
}

/// The plugin binary, run with the test clusters' kubeconfig and no terminal.
pub fn plugin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-migrate"));
    cmd.env("KUBECONFIG", kubeconfig_path())
        .env("NO_COLOR", "1")
        .env("PATH", super::path_with(&[]))
        .stdin(std::process::Stdio::null());
    cmd
}

/// `kubectl migrate statefulset web -n NS --context km-a --to-context km-b ARGS...`
pub fn migrate(ns: &str, args: &[&str]) -> Command {
    migrate_to(ns, CONTEXT_B, args)
}

/// The same with another destination context.
pub fn migrate_to(ns: &str, to_context: &str, args: &[&str]) -> Command {
    let mut cmd = plugin();
    cmd.args([
        "statefulset",
        "web",
        "-n",
        ns,
        "--context",
        CONTEXT_A,
        "--to-context",
        to_context,
    ])
    .args(args);
    cmd
}

pub fn run(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap();
    eprintln!(
        "--- {:?} exited {:?}\n{}",
        cmd.get_args().collect::<Vec<_>>(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn kubectl(args: &[&str]) -> Output {
    Command::new(super::cluster_bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .output()
        .unwrap()
}

pub fn state_dir() -> PathBuf {
    kubeconfig_path().parent().unwrap().to_path_buf()
}

/// Watches the pods of `web` in both clusters. Whenever an ordinal seems to run in both, it
/// confirms with live reads (watch streams may lag) and records a violation if both exist.
pub struct SplitBrainObserver {
    violations: Arc<Mutex<Vec<String>>>,
    events: Arc<Mutex<usize>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn ordinal(name: &str) -> Option<i32> {
    name.strip_prefix("web-")?.parse().ok()
}

impl SplitBrainObserver {
    pub fn start(a: &Client, b: &Client, ns: &str) -> SplitBrainObserver {
        let present: Arc<Mutex<[BTreeMap<i32, String>; 2]>> = Arc::default();
        let violations: Arc<Mutex<Vec<String>>> = Arc::default();
        let events: Arc<Mutex<usize>> = Arc::default();
        let apis = [
            Api::<Pod>::namespaced(a.clone(), ns),
            Api::<Pod>::namespaced(b.clone(), ns),
        ];
        let mut tasks = Vec::new();
        for side in 0..2 {
            let (api, other_api) = (apis[side].clone(), apis[1 - side].clone());
            let (present, violations, events) =
                (present.clone(), violations.clone(), events.clone());
            tasks.push(tokio::spawn(async move {
                let mut stream = watcher(api.clone(), watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while let Some(event) = stream.next().await {
                    let Ok(event) = event else { continue };
                    *events.lock().unwrap() += 1;
                    let mut arrived = Vec::new();
                    {
                        let mut p = present.lock().unwrap();
                        match event {
                            watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                                let name = pod.metadata.name.clone().unwrap_or_default();
                                if let Some(k) = ordinal(&name) {
                                    p[side].insert(k, name.clone());
                                    if p[1 - side].contains_key(&k) {
                                        arrived.push(name);
                                    }
                                }
                            }
                            watcher::Event::Delete(pod) => {
                                if let Some(k) = pod.metadata.name.as_deref().and_then(ordinal) {
                                    p[side].remove(&k);
                                }
                            }
                            watcher::Event::Init | watcher::Event::InitDone => {}
                        }
                    }
                    for name in arrived {
                        // Both live reads must find the pod for it to be a real overlap.
                        let here = api.get_opt(&name).await.ok().flatten().is_some();
                        let there = other_api.get_opt(&name).await.ok().flatten().is_some();
                        if here && there {
                            violations
                                .lock()
                                .unwrap()
                                .push(format!("pod {name} exists in both clusters"));
                        }
                    }
                }
            }));
        }
        SplitBrainObserver {
            violations,
            events,
            tasks,
        }
    }

    /// Stops watching; panics if any ordinal ran in both clusters, or if nothing was seen.
    pub fn assert_never_split(self) {
        for t in &self.tasks {
            t.abort();
        }
        let seen = *self.events.lock().unwrap();
        assert!(seen > 0, "the observer saw no pod events at all");
        let v = self.violations.lock().unwrap();
        assert!(v.is_empty(), "split brain observed: {v:?}");
    }
}
