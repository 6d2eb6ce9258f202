//! Helpers for the statefulset migration tests: sample sets, running the plugin, an observer
//! that watches both clusters for split brain, and snapshots that prove nothing changed.

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
    /// The destination: km-b, unless made with `Pair::to`.
    pub ns_a: TestNamespace,
    #[allow(dead_code)] // held for its Drop, which deletes the namespace
    pub ns_b: TestNamespace,
}

impl Pair {
    pub async fn new(prefix: &str) -> Pair {
        Pair::to(prefix, CONTEXT_B).await
    }

    /// A pair whose destination is `destination` (the tests that take an API server down use
    /// the outage cluster).
    pub async fn to(prefix: &str, destination: &str) -> Pair {
        let a = client(CONTEXT_A).await;
        let b = client(destination).await;
        let ns_a = TestNamespace::create(&a, CONTEXT_A, prefix).await;
        let ns_b = TestNamespace::create_named(&b, destination, &ns_a.name).await;
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
            let list = list(&claims).await;
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
        for claim in list(&claims).await {
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

    /// pod name -> uid of the set's pods in one cluster: the same uid later means the pod was
    /// never deleted (a re-created pod gets a new one).
    pub async fn pod_uids(&self, in_b: bool) -> BTreeMap<String, String> {
        let c = if in_b { &self.b } else { &self.a };
        list(&Api::<Pod>::namespaced(c.clone(), self.ns()))
            .await
            .into_iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("web-"))
            })
            .map(|p| (p.metadata.name.unwrap(), p.metadata.uid.unwrap()))
            .collect()
    }

    pub async fn volume(&self, in_b: bool, name: &str) -> Option<PersistentVolume> {
        let c = if in_b { &self.b } else { &self.a };
        Api::<PersistentVolume>::all(c.clone())
            .get_opt(name)
            .await
            .unwrap()
    }

    /// What a client has written to everything this migration could touch, in both clusters.
    /// Each object's state leaves out `status`, `resourceVersion` and `managedFields`:
    /// controllers keep updating status (a StatefulSet's revisions and counts settle after a
    /// patch), and those are not writes by the plugin, which never writes a status.
    pub async fn snapshot(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (label, c) in [("a", &self.a), ("b", &self.b)] {
            let ns = self.ns();
            for s in list(&Api::<StatefulSet>::namespaced(c.clone(), ns)).await {
                out.insert(object_key(label, "sts", &s), written_state(&s));
            }
            for s in list(&Api::<PersistentVolumeClaim>::namespaced(c.clone(), ns)).await {
                out.insert(object_key(label, "pvc", &s), written_state(&s));
            }
            for s in list(&Api::<ConfigMap>::namespaced(c.clone(), ns)).await {
                out.insert(object_key(label, "cm", &s), written_state(&s));
            }
            for s in list(&Api::<PersistentVolume>::all(c.clone())).await {
                let claim_ns = s
                    .spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .and_then(|r| r.namespace.as_deref());
                if claim_ns == Some(ns) {
                    out.insert(object_key(label, "pv", &s), written_state(&s));
                }
            }
        }
        out
    }
}

/// Every claim of A is in B, bound, pointing at the same volume and host path; every PV Retain.
pub async fn assert_moved(pair: &Pair, before: &BTreeMap<String, (String, String)>, replicas: i32) {
    pair.wait_ready(true, replicas).await;
    let a = pair.sets(false).get("web").await.unwrap();
    assert_eq!(a.spec.unwrap().replicas, Some(0), "source scaled to zero");
    let b = pair.sets(true).get("web").await.unwrap();
    let spec = b.spec.unwrap();
    assert_eq!(
        (spec.replicas, spec.ordinals.and_then(|o| o.start)),
        (Some(replicas), Some(0))
    );
    let after = pair.claims(true).await;
    assert_eq!(
        &after, before,
        "every claim points at the same volume and storage in B"
    );
    for (claim, (volume, _)) in before {
        let pv = pair
            .volume(true, volume)
            .await
            .unwrap_or_else(|| panic!("PV {volume} missing in B"));
        assert_eq!(
            pv.status.and_then(|s| s.phase).as_deref(),
            Some("Bound"),
            "PV {volume} of {claim} bound in B"
        );
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain")
        );
        let original = pair
            .volume(false, volume)
            .await
            .unwrap_or_else(|| panic!("PV {volume} lost in A"));
        assert_eq!(
            original
                .spec
                .unwrap()
                .persistent_volume_reclaim_policy
                .as_deref(),
            Some("Retain")
        );
    }
}

/// Every object `api` lists.
async fn list<K>(api: &Api<K>) -> Vec<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default()).await.unwrap().items
}

fn object_key<K: kube::Resource>(cluster: &str, kind: &str, object: &K) -> String {
    let name = object.meta().name.as_deref().unwrap_or_default();
    format!("{cluster}/{kind}/{name}")
}

/// The object as JSON without the parts that change when nobody but a controller writes.
fn written_state<K: serde::Serialize>(object: &K) -> String {
    let mut value = serde_json::to_value(object).unwrap();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    if let Some(meta) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    value.to_string()
}

/// Everything is back in A as it was: replicas, pods, claims and volumes, policies, no leftovers in B.
pub async fn assert_rolled_back(
    pair: &Pair,
    before: &BTreeMap<String, (String, String)>,
    replicas: i32,
) {
    pair.wait_ready(false, replicas).await;
    assert!(
        pair.sets(true).get_opt("web").await.unwrap().is_none(),
        "destination StatefulSet removed"
    );
    assert!(
        pair.claims(true).await.is_empty(),
        "no claim copies left in B"
    );
    assert_eq!(&pair.claims(false).await, before);
    for (volume, _) in before.values() {
        assert!(
            pair.volume(true, volume).await.is_none(),
            "PV copy {volume} removed from B"
        );
        let pv = pair.volume(false, volume).await.unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Delete"),
            "original policy restored on {volume}"
        );
    }
    let spec = pair.sets(false).get("web").await.unwrap().spec.unwrap();
    // Exactly what was there: the source never had spec.ordinals, so it has none now.
    assert_eq!(spec.ordinals, None, "the rollback added spec.ordinals");
    let retention = spec.persistent_volume_claim_retention_policy.unwrap();
    assert_eq!(
        retention.when_scaled.as_deref(),
        Some("Delete"),
        "original retention policy restored"
    );
    let out = kubectl(&[
        "--context",
        "km-b",
        "-n",
        pair.ns(),
        "get",
        "configmap",
        "kubectl-migrate-web",
    ]);
    assert!(!out.status.success(), "journal removed");
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

/// Starts `kubectl migrate statefulset web ARGS` `runs` times and SIGKILLs each run between 20
/// and 400 ms in, at points drawn from a seed that is printed (to replay a failure).
pub fn kill_at_random_points(ns: &str, args: &[&str], runs: usize) {
    let mut points = super::process::KillPoints::seeded();
    for _ in 0..runs {
        let mut child = migrate(ns, args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(points.between(20, 399)));
        let _ = child.kill();
        child.wait().unwrap();
    }
}

/// Runs `cmd`, shows what it said, and fails when a failing run says it in Rust debug text.
pub fn run(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap();
    let what = format!("{:?}", cmd.get_args().collect::<Vec<_>>());
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- {what} exited {:?}\n{stderr}", out.status.code());
    if !out.status.success() {
        super::assert_in_words(&what, &stderr);
    }
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

/// Watches the pods of `web` in both clusters and records, per pod, the etcd revisions at which
/// it was created and deleted. The test clusters share one etcd, so revisions of both clusters
/// are one global order: two pods of the same ordinal overlapped exactly when each was created
/// before the other was deleted. (Comparing live reads instead cannot prove simultaneity.)
/// Terminating pods still exist; only the DELETED event ends a pod.
pub struct SplitBrainObserver {
    pods: Arc<Mutex<BTreeMap<String, PodLife>>>,
    events: Arc<Mutex<usize>>,
    watches: WatchThread,
}

/// Watches on a thread and runtime of their own: the tests run the plugin with blocking calls,
/// which would starve watches on the test's runtime exactly while the migration runs. They
/// run until [`WatchThread::stop`], or end on their own once it is dropped.
pub struct WatchThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WatchThread {
    /// Runs the tasks that `spawn` starts, and returns once `lists` of them have said on the
    /// sender it gets that their first list is done (`what` names them when they do not).
    pub fn start<F, Fut>(what: &str, lists: usize, spawn: F) -> WatchThread
    where
        F: FnOnce(std::sync::mpsc::Sender<()>) -> Fut + Send + 'static,
        Fut: Future<Output = Vec<tokio::task::JoinHandle<()>>>,
    {
        let (listed, lists_done) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let tasks = spawn(listed).await;
                let _ = stopped.await;
                for task in tasks {
                    task.abort();
                }
            });
        });
        for _ in 0..lists {
            lists_done
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{what} did not start"));
        }
        WatchThread {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Ends the watches; what they saw is all in.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the watch thread ended cleanly");
        }
    }
}

#[derive(Debug, Clone)]
struct PodLife {
    side: usize,
    ordinal: i32,
    name: String,
    /// 0 when it existed before the observer started.
    created: u64,
    deleted: Option<u64>,
    /// Seen or lost only across a re-list (watch restart): its bounds are not exact, so it is
    /// not judged rather than judged wrongly.
    uncertain: bool,
}

/// The ordinal of a StatefulSet's pod (`SET-N`); the name says which set.
fn ordinal(name: &str) -> Option<i32> {
    name.rsplit_once('-')?.1.parse().ok()
}

fn revision(pod: &Pod) -> u64 {
    pod.metadata
        .resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// Watches pods of one cluster into `pods`; says `ready` once the first list is done.
async fn watch_side(
    side: usize,
    api: Api<Pod>,
    pods: Arc<Mutex<BTreeMap<String, PodLife>>>,
    events: Arc<Mutex<usize>>,
    ready: std::sync::mpsc::Sender<()>,
) {
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut listed_once = false;
    let mut watching = false;
    let mut relisted: Vec<String> = Vec::new();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        *events.lock().unwrap() += 1;
        let mut pods = pods.lock().unwrap();
        match event {
            watcher::Event::Init => {
                relisted.clear();
                watching = false;
            }
            watcher::Event::InitApply(pod) | watcher::Event::Apply(pod) => {
                let (Some(uid), Some(name)) = (pod.metadata.uid.clone(), pod.metadata.name.clone())
                else {
                    continue;
                };
                let Some(k) = ordinal(&name) else { continue };
                // A pod first seen in a re-list was created at an unknown revision.
                let from_relist = listed_once && !watching;
                if !watching {
                    relisted.push(uid.clone());
                }
                pods.entry(uid).or_insert_with(|| PodLife {
                    side,
                    ordinal: k,
                    name,
                    created: if listed_once { revision(&pod) } else { 0 },
                    deleted: None,
                    uncertain: from_relist,
                });
            }
            watcher::Event::Delete(pod) => {
                if let Some(life) = pod.metadata.uid.as_ref().and_then(|u| pods.get_mut(u)) {
                    life.deleted = Some(revision(&pod));
                }
            }
            watcher::Event::InitDone => {
                if listed_once {
                    // Pods that vanished while the watch was down: end unknown.
                    for (uid, life) in pods.iter_mut() {
                        if life.side == side && life.deleted.is_none() && !relisted.contains(uid) {
                            life.uncertain = true;
                        }
                    }
                } else {
                    let _ = ready.send(());
                }
                listed_once = true;
                watching = true;
            }
        }
    }
}

impl SplitBrainObserver {
    /// Starts watching the pods of namespace `ns` in both clusters, on a thread and runtime of
    /// its own: the tests run the plugin with blocking calls, which would starve watches on
    /// the test's runtime exactly while the migration runs. Returns once both watches listed.
    pub fn start(ns: &str) -> SplitBrainObserver {
        SplitBrainObserver::start_to(ns, CONTEXT_B)
    }

    /// The same with `destination` in place of km-b.
    pub fn start_to(ns: &str, destination: &str) -> SplitBrainObserver {
        let pods: Arc<Mutex<BTreeMap<String, PodLife>>> = Arc::default();
        let events: Arc<Mutex<usize>> = Arc::default();
        let (watched, counted, ns) = (pods.clone(), events.clone(), ns.to_string());
        let destination = destination.to_string();
        let what = "the split-brain observer's watches";
        let watches = WatchThread::start(what, 2, move |ready| async move {
            let mut tasks = Vec::new();
            for (side, context) in [CONTEXT_A, &destination].into_iter().enumerate() {
                let api = Api::<Pod>::namespaced(client(context).await, &ns);
                tasks.push(tokio::spawn(watch_side(
                    side,
                    api,
                    watched.clone(),
                    counted.clone(),
                    ready.clone(),
                )));
            }
            tasks
        });
        SplitBrainObserver {
            pods,
            events,
            watches,
        }
    }

    /// Waits until the observer has seen `count` pods created since it started.
    pub async fn wait_for_created(&self, count: usize) {
        poll_until(
            Duration::from_secs(60),
            &format!("the split-brain observer to see {count} pods created"),
            || {
                let seen = self
                    .pods
                    .lock()
                    .unwrap()
                    .values()
                    .filter(|life| life.created > 0)
                    .count();
                async move { seen >= count }
            },
        )
        .await;
    }

    /// Stops watching; panics if any ordinal had pods in both clusters at once, or if nothing
    /// was seen at all.
    pub fn assert_never_split(mut self) {
        self.watches.stop();
        let seen = *self.events.lock().unwrap();
        assert!(seen > 0, "the observer saw no pod events at all");
        let pods = self.pods.lock().unwrap();
        let lives: Vec<&PodLife> = pods.values().filter(|l| !l.uncertain).collect();
        let mut violations = Vec::new();
        for x in lives.iter().filter(|l| l.side == 0) {
            for y in lives
                .iter()
                .filter(|l| l.side == 1 && l.ordinal == x.ordinal && l.name == x.name)
            {
                let x_end = x.deleted.unwrap_or(u64::MAX);
                let y_end = y.deleted.unwrap_or(u64::MAX);
                if x.created < y_end && y.created < x_end {
                    violations.push(format!(
                        "{} existed in both clusters: A {:?}..{:?}, B {:?}..{:?} (etcd revisions)",
                        x.name, x.created, x.deleted, y.created, y.deleted
                    ));
                }
            }
        }
        assert!(
            violations.is_empty(),
            "split brain observed: {violations:?}"
        );
    }
}
