//! The pod runner: a kubelet for the pods of one label in every local cluster, which runs each
//! pod's container as a real process on this machine.
//!
//! KWOK plays the kubelet for every other pod (they run nothing); the pods labelled
//! `kubectl-migrate.test/pod-runner=<runner id>` get, from this runner:
//! - a process, started once the pod is bound to a node and its claims to volumes, with the
//!   container's command and environment (`process_spec`) and the claims' hostPath volumes as
//!   its directories; restarted after a crash (restartPolicy Always), with a short back-off;
//! - the pod's IP: `127.<net>.<ordinal>.1`, where `<net>` is the pod's annotation
//!   `kubectl-migrate.test/loopback-net` and `<ordinal>` its StatefulSet ordinal, so that member
//!   `k` keeps its address in whichever cluster it runs, as cross-cluster DNS would give it;
//! - readiness from the process: the readiness gate condition `kubectl-migrate.test/process-ready`,
//!   set from the container's readiness probe (or from the process running, without one). KWOK
//!   turns it into the pod's Ready condition as the kubelet would (tests/cluster/pod-runner-stages.yaml);
//! - termination as a kubelet does it: once the pod is terminating, SIGTERM, the grace period,
//!   SIGKILL, and only after the process has exited the pod's deletion (grace 0, UID
//!   precondition), so the pod object never disappears while its process runs.
//!
//! The split-brain detector: before it starts a process the runner takes an exclusive lock
//! (flock) on each of the pod's volume directories, held until the process has exited. A pod whose
//! directory is locked by another pod's process, in any cluster and even by another runner, gets
//! no process: the runner refuses, records the refusal (`refusals()`), writes a line beginning
//! with `SPLIT BRAIN` to its log (`pod-runner.log` in its log directory) and to stderr, sets the
//! pod's gate condition False with reason `DataDirInUse`, and tries again until the directory is
//! free or the pod goes.
//!
//! The runner runs on a thread of its own with its own runtime (tests run the plugin with blocking
//! calls), and every process it starts is killed if that thread ends (PR_SET_PDEATHSIG), so
//! nothing outlives a test that dies.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use http_body_util::Empty;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::watch;

use super::process_spec::{HttpProbe, Placement, ProcessSpec, Readiness};

/// The label that hands a pod to a runner; its value is the runner's id.
pub const RUNNER_LABEL: &str = "kubectl-migrate.test/pod-runner";
/// The readiness gate whose condition the runner sets from the process's health.
pub const PROCESS_READY: &str = "kubectl-migrate.test/process-ready";
/// The pod annotation that names the second octet of the pod's loopback address.
pub const LOOPBACK_NET: &str = "kubectl-migrate.test/loopback-net";
/// The line that starts every refusal in the runner's log.
pub const SPLIT_BRAIN: &str = "SPLIT BRAIN";

const ORDINAL_LABEL: &str = "apps.kubernetes.io/pod-index";
const LOCK_FILE: &str = ".pod-runner.lock";
const HOLDER_FILE: &str = ".pod-runner.holder";
/// How often a pod waiting for its volumes, or for a directory in use, is looked at again.
const RETRY: Duration = Duration::from_millis(500);
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(10);
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// The address of ordinal `ordinal` in loopback network `net`.
pub fn pod_ip(net: u8, ordinal: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, net, ordinal, 1)
}

pub struct RunnerConfig {
    pub kubeconfig: PathBuf,
    pub contexts: Vec<String>,
    /// The label value of the pods this runner runs.
    pub id: String,
    /// Where programs are looked up before PATH (the cluster binaries: etcd).
    pub program_dirs: Vec<PathBuf>,
    /// Its log and one log file per process.
    pub log_dir: PathBuf,
}

/// A pod in one cluster, as the runner's records name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodRef {
    pub context: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl std::fmt::Display for PodRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let uid = self.uid.get(..8).unwrap_or(&self.uid);
        write!(
            f,
            "{}/{}/{} (uid {uid})",
            self.context, self.namespace, self.name
        )
    }
}

/// One process the runner started, from start to exit.
#[derive(Debug, Clone)]
pub struct ProcessLife {
    pub pod: PodRef,
    pub dirs: Vec<PathBuf>,
    pub pid: u32,
    pub started: Instant,
    pub exited: Option<Instant>,
    /// How it ended, in words.
    pub exit: Option<String>,
}

/// A process the runner refused to start because a directory of its pod was in use.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub pod: PodRef,
    pub dir: PathBuf,
    /// Who held the directory, as its holder wrote it.
    pub holder: String,
    pub at: Instant,
}

#[derive(Default)]
struct Records {
    lives: Vec<ProcessLife>,
    refusals: Vec<Refusal>,
}

/// What the runner's tasks share: its records and its log.
struct Journal {
    records: Mutex<Records>,
    log: Mutex<File>,
}

impl Journal {
    fn note(&self, line: &str) {
        let line = format!("{} pod-runner: {line}", Timestamp::now());
        eprintln!("{line}");
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(log, "{line}");
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct PodRunner {
    id: String,
    log_dir: PathBuf,
    journal: Arc<Journal>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PodRunner {
    /// Starts the runner and returns once it watches every cluster.
    pub fn start(config: RunnerConfig) -> Result<PodRunner, String> {
        std::fs::create_dir_all(&config.log_dir)
            .map_err(|e| format!("cannot create {}: {e}", config.log_dir.display()))?;
        let log_path = config.log_dir.join("pod-runner.log");
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        let journal = Arc::new(Journal {
            records: Mutex::default(),
            log: Mutex::new(log),
        });
        let (stop, stopped) = watch::channel(false);
        let (ready, watching) = std::sync::mpsc::channel();
        let (id, log_dir) = (config.id.clone(), config.log_dir.clone());
        let thread = std::thread::Builder::new()
            .name(format!("pod-runner-{id}"))
            .spawn({
                let journal = journal.clone();
                move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the pod runner");
                    runtime.block_on(run(config, journal, stopped, ready));
                }
            })
            .map_err(|e| format!("cannot start the pod runner's thread: {e}"))?;
        let runner = PodRunner {
            id,
            log_dir,
            journal,
            stop: Some(stop),
            thread: Some(thread),
        };
        match watching.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(())) => Ok(runner),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the pod runner's watches did not start within 60s".into()),
        }
    }

    /// The label value that hands a pod to this runner.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    /// Every process started so far, running or exited.
    pub fn processes(&self) -> Vec<ProcessLife> {
        self.journal.records().lives.clone()
    }

    /// Every start the split-brain detector refused so far.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.journal.records().refusals.clone()
    }

    /// Pairs of processes that had the same directory open at the same time, by the runner's
    /// records: none, as long as the lock holds. Checked apart from the lock, from the times alone.
    pub fn overlaps(&self) -> Vec<String> {
        overlaps(&self.processes())
    }

    /// Stops every process (as for a deleted pod: SIGTERM, grace period, SIGKILL), finishes the
    /// deletion of terminating pods, and ends the runner. Pods that are not terminating stay, with
    /// their gate False: delete them while the runner runs, or they stay Terminating.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for PodRunner {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Processes whose lives on one directory overlap in time.
pub fn overlaps(lives: &[ProcessLife]) -> Vec<String> {
    let mut by_dir: BTreeMap<&Path, Vec<&ProcessLife>> = BTreeMap::new();
    for life in lives {
        for dir in &life.dirs {
            by_dir.entry(dir).or_default().push(life);
        }
    }
    let mut found = Vec::new();
    for (dir, lives) in by_dir {
        for (i, a) in lives.iter().enumerate() {
            for b in &lives[i + 1..] {
                let a_end = a.exited.unwrap_or_else(Instant::now);
                let b_end = b.exited.unwrap_or_else(Instant::now);
                if a.started < b_end && b.started < a_end {
                    found.push(format!(
                        "{} had processes of {} (pid {}) and {} (pid {}) at the same time",
                        dir.display(),
                        a.pod,
                        a.pid,
                        b.pod,
                        b.pid
                    ));
                }
            }
        }
    }
    found
}

/// What the watches say about a pod: its latest state, or that it is gone from the API.
#[derive(Clone)]
enum Seen {
    Present(Box<Pod>),
    Gone,
}

struct Shared {
    journal: Arc<Journal>,
    http: HttpClient<HttpConnector, Empty<bytes::Bytes>>,
    program_dirs: Vec<PathBuf>,
    log_dir: PathBuf,
}

async fn run(
    config: RunnerConfig,
    journal: Arc<Journal>,
    mut stop: watch::Receiver<bool>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let mut clients = Vec::new();
    for context in &config.contexts {
        match super::connect(&config.kubeconfig, context).await {
            Ok(client) => clients.push((context.clone(), client)),
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        }
    }
    let shared = Arc::new(Shared {
        journal: journal.clone(),
        http: HttpClient::builder(TokioExecutor::new()).build_http(),
        program_dirs: config.program_dirs.clone(),
        log_dir: config.log_dir.clone(),
    });
    let selector = format!("{RUNNER_LABEL}={}", config.id);
    let mut events =
        futures::stream::select_all(clients.iter().enumerate().map(|(side, (_, client))| {
            watcher(
                Api::<Pod>::all(client.clone()),
                watcher::Config::default().labels(&selector),
            )
            .map(move |event| (side, event))
            .boxed()
        }));
    journal.note(&format!(
        "runs the pods labelled {selector} in {}",
        config.contexts.join(", ")
    ));

    let mut pods: HashMap<(usize, String), watch::Sender<Seen>> = HashMap::new();
    // Pods whose worker has finished: later events about them (our own deletion) are not new pods.
    let mut finished: HashSet<(usize, String)> = HashSet::new();
    let mut relisted: HashMap<usize, HashSet<String>> = HashMap::new();
    let mut listed: HashSet<usize> = HashSet::new();
    let mut ready = Some(ready);
    let mut workers = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            Some(done) = workers.join_next(), if !workers.is_empty() => {
                if let Ok(key) = done {
                    pods.remove(&key);
                    finished.insert(key);
                }
            }
            event = events.next() => {
                let Some((side, event)) = event else { break };
                let (context, client) = &clients[side];
                let pod = match event {
                    Ok(watcher::Event::Init) => {
                        relisted.insert(side, HashSet::new());
                        continue;
                    }
                    Ok(watcher::Event::InitDone) => {
                        // Pods that went while the watch was down.
                        let seen = relisted.remove(&side).unwrap_or_default();
                        for ((s, uid), tx) in &pods {
                            if *s == side && !seen.contains(uid) {
                                let _ = tx.send(Seen::Gone);
                            }
                        }
                        listed.insert(side);
                        if listed.len() == clients.len()
                            && let Some(ready) = ready.take()
                        {
                            let _ = ready.send(Ok(()));
                        }
                        continue;
                    }
                    Ok(watcher::Event::InitApply(pod)) => {
                        if let (Some(seen), Some(uid)) = (relisted.get_mut(&side), &pod.metadata.uid) {
                            seen.insert(uid.clone());
                        }
                        Seen::Present(Box::new(pod))
                    }
                    Ok(watcher::Event::Apply(pod)) => Seen::Present(Box::new(pod)),
                    Ok(watcher::Event::Delete(pod)) => {
                        if let Some(tx) = pod.metadata.uid.clone().and_then(|uid| pods.get(&(side, uid))) {
                            let _ = tx.send(Seen::Gone);
                        }
                        continue;
                    }
                    Err(e) => {
                        journal.note(&format!(
                            "watch of pods in {context}: {} (retrying)",
                            kubectl_migrate::cluster::describe_watch_error(&e)
                        ));
                        continue;
                    }
                };
                let Seen::Present(object) = &pod else { continue };
                let Some(uid) = object.metadata.uid.clone() else { continue };
                let key = (side, uid.clone());
                if finished.contains(&key) {
                    continue;
                }
                if let Some(tx) = pods.get(&key) {
                    let _ = tx.send(pod);
                    continue;
                }
                let pod_ref = PodRef {
                    context: context.clone(),
                    namespace: object.metadata.namespace.clone().unwrap_or_default(),
                    name: object.metadata.name.clone().unwrap_or_default(),
                    uid,
                };
                let (tx, rx) = watch::channel(pod);
                pods.insert(key.clone(), tx);
                let worker = Worker {
                    shared: shared.clone(),
                    client: client.clone(),
                    pod: pod_ref,
                    seen: rx,
                    stop: stop.clone(),
                };
                workers.spawn(async move {
                    worker.run().await;
                    key
                });
            }
        }
    }
    // Shutdown: every worker sees the stop signal and stops its process.
    while workers.join_next().await.is_some() {}
    journal.note("stopped");
}

/// The exclusive lock on a volume directory, held while a process may use it. A flock: it
/// excludes every other open of the lock file, in this process or another, and goes with the
/// process that holds it.
struct DirLock {
    dir: PathBuf,
    _file: File,
}

enum Lock {
    Taken(DirLock),
    /// Someone else holds it; who, as the holder wrote it.
    InUse(String),
}

impl DirLock {
    fn take(dir: &Path, holder: &str) -> Result<Lock, String> {
        let path = dir.join(LOCK_FILE);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {
                // Read only by a refused start, to name who holds the directory.
                let _ = std::fs::write(dir.join(HOLDER_FILE), holder);
                Ok(Lock::Taken(DirLock {
                    dir: dir.to_path_buf(),
                    _file: file,
                }))
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(Lock::InUse(
                std::fs::read_to_string(dir.join(HOLDER_FILE))
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "a process that left no name".into()),
            )),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(format!("cannot lock {}: {e}", path.display()))
            }
        }
    }
}

/// Why the worker stopped waiting.
enum Wake {
    /// The pod changed, or the time was up: look again.
    Look,
    /// The runner is stopping.
    Stop,
}

struct Worker {
    shared: Arc<Shared>,
    client: Client,
    pod: PodRef,
    seen: watch::Receiver<Seen>,
    stop: watch::Receiver<bool>,
}

impl Worker {
    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.pod.namespace)
    }

    fn note(&self, line: &str) {
        self.shared.journal.note(&format!("{}: {line}", self.pod));
    }

    /// The pod as last seen, or None once it is gone.
    fn current(&self) -> Option<Pod> {
        match &*self.seen.borrow() {
            Seen::Present(pod) => Some((**pod).clone()),
            Seen::Gone => None,
        }
    }

    /// Waits until the pod changes, `limit` passes, or the runner stops.
    async fn wait(&mut self, limit: Duration) -> Wake {
        tokio::select! {
            _ = self.stop.changed() => Wake::Stop,
            // The runner's loop has ended: it is stopping.
            changed = self.seen.changed() => if changed.is_ok() { Wake::Look } else { Wake::Stop },
            _ = tokio::time::sleep(limit) => Wake::Look,
        }
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    async fn run(mut self) {
        // 1. Bound to a node, claims bound to volumes, directories free: then the process.
        let (pod, dirs, locks) = loop {
            if self.stopping() {
                return;
            }
            let Some(pod) = self.current() else { return };
            if pod.metadata.deletion_timestamp.is_some() {
                // Never started: nothing to stop, finish the deletion as a kubelet would.
                self.finish_deletion().await;
                return;
            }
            let bound = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some();
            if bound {
                match self.place(&pod).await {
                    Ok(Some(placed)) => break placed,
                    Ok(None) => {}
                    Err(e) => self.set_gate(false, "CannotRun", &e).await,
                }
            }
            if let Wake::Stop = self.wait(RETRY).await {
                return;
            }
        };
        let ip = pod_ip_of(&pod);
        let placement = Placement {
            volumes: &dirs,
            pod_ip: ip,
            program_dirs: &self.shared.program_dirs,
        };
        let spec = match ProcessSpec::for_pod(&pod, &placement) {
            Ok(spec) => spec,
            Err(e) => {
                self.note(&format!("cannot run: {e}"));
                self.set_gate(false, "CannotRun", &e).await;
                drop(locks);
                self.park().await;
                return;
            }
        };
        if let Some(ip) = ip {
            self.set_pod_ip(ip).await;
        }
        let lock_dirs: Vec<PathBuf> = locks.iter().map(|l| l.dir.clone()).collect();
        self.supervise(&spec, &lock_dirs).await;
        drop(locks);
        if self.leaving() && self.current().is_some() {
            self.finish_deletion().await;
        }
    }

    /// The pod's volume directories, locked; `None` while a claim is not bound yet, or while a
    /// directory is in use (refused, recorded); an error when the pod cannot run at all.
    async fn place(
        &self,
        pod: &Pod,
    ) -> Result<Option<(Pod, BTreeMap<String, PathBuf>, Vec<DirLock>)>, String> {
        let Some(dirs) = self.volume_dirs(pod).await? else {
            return Ok(None);
        };
        let mut unique: Vec<&PathBuf> = dirs.values().collect();
        unique.sort();
        unique.dedup();
        let holder = format!("{} in process of runner {}", self.pod, std::process::id());
        let mut locks = Vec::new();
        for dir in unique {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            match DirLock::take(dir, &holder)? {
                Lock::Taken(lock) => locks.push(lock),
                Lock::InUse(other) => {
                    self.refuse(dir, &other).await;
                    return Ok(None);
                }
            }
        }
        Ok(Some((pod.clone(), dirs, locks)))
    }

    async fn refuse(&self, dir: &Path, holder: &str) {
        let first = {
            let mut records = self.shared.journal.records();
            let first = !records
                .refusals
                .iter()
                .any(|r| r.pod == self.pod && r.dir == dir);
            if first {
                records.refusals.push(Refusal {
                    pod: self.pod.clone(),
                    dir: dir.to_path_buf(),
                    holder: holder.to_string(),
                    at: Instant::now(),
                });
            }
            first
        };
        let message = format!(
            "{} is in use by {holder}; no second process is started on it",
            dir.display()
        );
        if first {
            self.shared
                .journal
                .note(&format!("{SPLIT_BRAIN}: refused {}: {message}", self.pod));
            self.set_gate(false, "DataDirInUse", &message).await;
        }
    }

    /// Volume name -> host directory for every claim and hostPath volume; None while a claim is
    /// not bound yet.
    async fn volume_dirs(&self, pod: &Pod) -> Result<Option<BTreeMap<String, PathBuf>>, String> {
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), &self.pod.namespace);
        let volumes: Api<PersistentVolume> = Api::all(self.client.clone());
        let mut dirs = BTreeMap::new();
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if let Some(host) = &volume.host_path {
                dirs.insert(volume.name.clone(), PathBuf::from(&host.path));
                continue;
            }
            let Some(source) = &volume.persistent_volume_claim else {
                continue;
            };
            let claim = timed(claims.get_opt(&source.claim_name)).await?;
            let bound_to = claim.and_then(|c| {
                let bound = c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
                c.spec.and_then(|s| s.volume_name).filter(|_| bound)
            });
            let Some(pv_name) = bound_to else {
                return Ok(None);
            };
            let pv = timed(volumes.get_opt(&pv_name)).await?.ok_or_else(|| {
                format!("volume {pv_name} of claim {} is missing", source.claim_name)
            })?;
            let path = pv
                .spec
                .and_then(|s| s.host_path)
                .map(|h| h.path)
                .ok_or_else(|| {
                    format!("volume {pv_name} is not a hostPath volume; the runner has nowhere to put it")
                })?;
            dirs.insert(volume.name.clone(), PathBuf::from(path));
        }
        Ok(Some(dirs))
    }

    /// Runs the process until the pod terminates or goes (or the runner stops): restarts it when
    /// it exits, probes it, reports its readiness, then stops it within the grace period.
    async fn supervise(&mut self, spec: &ProcessSpec, dirs: &[PathBuf]) {
        let mut backoff = Duration::from_secs(1);
        let mut readiness = Readiness::new();
        'restart: loop {
            let (mut child, life) = match self.spawn(spec, dirs) {
                Ok(started) => started,
                Err(e) => {
                    self.note(&e);
                    self.set_gate(false, "CannotRun", &e).await;
                    match self.wait(backoff).await {
                        Wake::Stop => return,
                        Wake::Look if self.leaving() => return,
                        Wake::Look => continue 'restart,
                    }
                }
            };
            if spec.readiness.is_none() {
                readiness.ready = true;
                self.set_gate(
                    true,
                    "ProcessRunning",
                    "the process runs (no readiness probe)",
                )
                .await;
            }
            let mut probe_at = tokio::time::Instant::now()
                + spec
                    .readiness
                    .as_ref()
                    .map_or(Duration::ZERO, |p| p.initial_delay);
            let exit = loop {
                tokio::select! {
                    status = child.wait() => break describe_exit(status),
                    _ = self.stop.changed() => {
                        self.terminate(&mut child, life, spec.grace, "the runner stops").await;
                        self.set_gate(false, "RunnerStopped", "the pod runner stopped the process").await;
                        return;
                    }
                    changed = self.seen.changed() => {
                        if changed.is_err() || self.leaving() {
                            let why = if self.current().is_some() { "the pod is terminating" } else { "the pod was deleted" };
                            self.terminate(&mut child, life, self.grace(spec), why).await;
                            return;
                        }
                    }
                    _ = tokio::time::sleep_until(probe_at), if spec.readiness.is_some() => {
                        let probe = spec.readiness.as_ref().expect("guarded");
                        probe_at = tokio::time::Instant::now() + probe.period;
                        let ok = self.probe(probe).await;
                        if let Some(ready) = readiness.observe(ok, probe) {
                            if ready {
                                backoff = Duration::from_secs(1);
                                self.set_gate(true, "ProbeSucceeded", &format!("{} answers", probe.url)).await;
                            } else {
                                self.set_gate(false, "ProbeFailed", &format!("{} does not answer", probe.url)).await;
                            }
                        }
                    }
                }
            };
            self.record_exit(life, &exit);
            self.note(&format!(
                "process exited ({exit}); restarting in {backoff:?}"
            ));
            readiness.reset();
            self.set_gate(
                false,
                "ProcessExited",
                &format!("the process exited ({exit})"),
            )
            .await;
            match self.wait(backoff).await {
                Wake::Stop => return,
                Wake::Look if self.leaving() => return,
                Wake::Look => {}
            }
            backoff = (backoff * 2).min(MAX_RESTART_BACKOFF);
        }
    }

    /// The pod is terminating or gone.
    fn leaving(&self) -> bool {
        self.current()
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
    }

    /// The grace period: the one the deletion asked for, else the pod's.
    fn grace(&self, spec: &ProcessSpec) -> Duration {
        self.current()
            .and_then(|p| p.metadata.deletion_grace_period_seconds)
            .map_or(spec.grace, |s| Duration::from_secs(s.max(0) as u64))
    }

    fn spawn(
        &self,
        spec: &ProcessSpec,
        dirs: &[PathBuf],
    ) -> Result<(tokio::process::Child, usize), String> {
        let log_path = self.shared.log_dir.join(format!(
            "{}_{}_{}_{}.log",
            self.pod.context,
            self.pod.namespace,
            self.pod.name,
            self.pod.uid.get(..8).unwrap_or(&self.pod.uid)
        ));
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        let mut command = tokio::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOSTNAME", &self.pod.name)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; the closure touches nothing else.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", spec.program.display()))?;
        let pid = child.id().unwrap_or(0);
        let index = {
            let mut records = self.shared.journal.records();
            records.lives.push(ProcessLife {
                pod: self.pod.clone(),
                dirs: dirs.to_vec(),
                pid,
                started: Instant::now(),
                exited: None,
                exit: None,
            });
            records.lives.len() - 1
        };
        self.note(&format!(
            "started {} (pid {pid}) on {}; output in {}",
            spec.program.display(),
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            log_path.display()
        ));
        Ok((child, index))
    }

    fn record_exit(&self, life: usize, how: &str) {
        let mut records = self.shared.journal.records();
        let life = &mut records.lives[life];
        life.exited = Some(Instant::now());
        life.exit = Some(how.to_string());
    }

    /// SIGTERM, then SIGKILL after `grace`; returns once the process has exited.
    async fn terminate(
        &self,
        child: &mut tokio::process::Child,
        life: usize,
        grace: Duration,
        why: &str,
    ) {
        if let Some(pid) = child
            .id()
            .and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let exit = match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => describe_exit(status),
            Err(_) => {
                let _ = child.start_kill();
                format!(
                    "killed after the grace period of {grace:?}: {}",
                    describe_exit(child.wait().await)
                )
            }
        };
        self.record_exit(life, &exit);
        self.note(&format!("stopped: {why}; {exit}"));
    }

    /// Deletes the terminating pod now that nothing runs for it, as the kubelet does: grace 0, and
    /// only this pod (UID precondition), never a successor of the same name.
    async fn finish_deletion(&self) {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(self.pod.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match timed(self.pods().delete(&self.pod.name, &params)).await {
            Ok(_) => self.note("deleted"),
            // Gone already, or a successor of the same name (the UID precondition failed).
            Err(e) if matches!(e.code, Some(404 | 409)) => {}
            Err(e) => self.note(&format!("could not delete the pod: {e}")),
        }
    }

    /// Waits, doing nothing, until the pod goes or the runner stops.
    async fn park(&mut self) {
        loop {
            if let Wake::Stop = self.wait(Duration::from_secs(3600)).await {
                return;
            }
            if self.leaving() {
                if self.current().is_some() {
                    self.finish_deletion().await;
                }
                return;
            }
        }
    }

    async fn probe(&self, probe: &HttpProbe) -> bool {
        let Ok(uri) = probe.url.parse::<http::Uri>() else {
            return false;
        };
        match tokio::time::timeout(probe.timeout, self.shared.http.get(uri)).await {
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                (200..400).contains(&status)
            }
            _ => false,
        }
    }

    async fn set_gate(&self, ready: bool, reason: &str, message: &str) {
        let condition = PodCondition {
            type_: PROCESS_READY.into(),
            status: if ready { "True" } else { "False" }.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_transition_time: Some(Time(Timestamp::now())),
            ..PodCondition::default()
        };
        self.patch_status(serde_json::json!({"status": {"conditions": [condition]}}))
            .await;
    }

    async fn set_pod_ip(&self, ip: Ipv4Addr) {
        let ip = ip.to_string();
        self.patch_status(serde_json::json!({"status": {"podIP": ip, "podIPs": [{"ip": ip}]}}))
            .await;
    }

    async fn patch_status(&self, patch: serde_json::Value) {
        if let Err(e) = timed(self.pods().patch_status(
            &self.pod.name,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        ))
        .await
        {
            // A pod deleted meanwhile has no status to write; anything else is worth a line.
            if e.code != Some(404) {
                self.note(&format!("could not update the pod's status: {e}"));
            }
        }
    }
}

/// The pod's loopback address, from its network annotation and StatefulSet ordinal.
fn pod_ip_of(pod: &Pod) -> Option<Ipv4Addr> {
    let net = pod
        .metadata
        .annotations
        .as_ref()?
        .get(LOOPBACK_NET)?
        .parse()
        .ok()?;
    let ordinal = pod
        .metadata
        .labels
        .as_ref()?
        .get(ORDINAL_LABEL)?
        .parse()
        .ok()?;
    Some(pod_ip(net, ordinal))
}

fn describe_exit(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            // etcd, like many Go programs, re-raises SIGTERM once it has shut down cleanly.
            (None, Some(signal)) => match signal {
                9 => "ended by SIGKILL".to_string(),
                15 => "ended by SIGTERM".to_string(),
                _ => format!("ended by signal {signal}"),
            },
            _ => s.to_string(),
        },
        Err(e) => format!("cannot wait for it: {e}"),
    }
}

/// A failed API call: the server's status code when it answered, and what happened in words.
struct ApiFailure {
    code: Option<u16>,
    message: String,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<ApiFailure> for String {
    fn from(e: ApiFailure) -> String {
        e.message
    }
}

/// An API call with a bound.
async fn timed<T>(
    call: impl std::future::Future<Output = kube::Result<T>>,
) -> Result<T, ApiFailure> {
    match tokio::time::timeout(API_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(kube::Error::Api(status))) => Err(ApiFailure {
            code: Some(status.code),
            message: format!("{} ({})", status.message, status.reason),
        }),
        Ok(Err(e)) => Err(ApiFailure {
            code: None,
            message: e.to_string(),
        }),
        Err(_) => Err(ApiFailure {
            code: None,
            message: format!("no answer within {API_TIMEOUT:?}"),
        }),
    }
}
