//! Observation through watches started once per run: each side's StatefulSet, pods, claims,
//! PVs and budgets, and the journal, kept in kube-runtime reflector stores. A loop iteration
//! then reads memory instead of making about a dozen requests, and waits wake on the watch
//! events instead of starting watches of their own. The views built from the stores are the
//! ones `observe` builds from requests (`observe::side_view`), so the decisions are the same.
//!
//! A cache can lag behind a write the run has just made; that is safe for the same reasons
//! lists from the API server's watch cache are (see `observe::observe_side`): it can only show
//! an older state, every write has a precondition or is create-if-absent, and the split-brain
//! check re-reads live. The reconciler waits for the caches to show its last step's effect
//! before it decides again (`reconcile`), so a lag costs no repeated writes.
//!
//! The controller runs many migrations between the same member clusters: there a [`Hub`]
//! keeps one watch per kind, member and namespace (and one of PVs per member), shared by every
//! run that names them, so the watches on a member do not grow with the migrations. A run on
//! the hub reads the shared stores by namespace and name, and is woken only by events of its
//! own objects (see [`Interest`]).
use crate::sync;
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::journal::{self, Stored};
use super::model::{ClaimView, Observed, Side, VolumeView};
use super::observe::{self, Location, Scope};
use crate::cluster::Cluster;
use crate::error::{Error, Result};

/// One side's caches.
struct SideStores {
    side: Side,
    /// The side's cluster, named in an error of its watches.
    cluster: Cluster,
    at: Location,
    sets: Store<StatefulSet>,
    pods: Store<Pod>,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    /// Counts the PV watch's events, each counted once the store has it.
    volumes_version: Arc<AtomicU64>,
    /// The last PV views built, kept while neither the PVs nor the claims changed.
    volumes_memo: Mutex<Option<VolumesMemo>>,
    budgets: Store<PodDisruptionBudget>,
}

/// [`SideStores::volume_views`] as last built: of the PV store at `version`, for `claims`.
struct VolumesMemo {
    version: u64,
    claims: BTreeMap<String, ClaimView>,
    volumes: BTreeMap<String, VolumeView>,
}

impl SideStores {
    /// The PV views of this side for `claims`. The PV store holds every PV of the cluster (a
    /// pool of hundreds) and most of the loop's wake-ups are of pods: while neither the PVs
    /// nor the claims changed, the last views are reused instead of judging every PV again.
    fn volume_views(&self, claims: &BTreeMap<String, ClaimView>) -> BTreeMap<String, VolumeView> {
        // Read before the store: a store newer than its version only makes the memo recomputed
        // once more.
        let version = self.volumes_version.load(Ordering::Acquire);
        let mut memo = sync::lock(&self.volumes_memo);
        if let Some(m) = memo.as_ref()
            && m.version == version
            && &m.claims == claims
        {
            return m.volumes.clone();
        }
        let volumes = observe::volume_views(
            &self.at,
            claims,
            self.volumes.state().iter().map(|v| v.as_ref()),
        );
        *memo = Some(VolumesMemo {
            version,
            claims: claims.clone(),
            volumes: volumes.clone(),
        });
        volumes
    }
}

/// Why a watcher cannot deliver right now, kept until its next event.
#[derive(Debug, Clone)]
enum Failure {
    /// The API server refused (its status, e.g. 403 without the watch permission).
    Refused(Box<kube::core::Status>),
    /// The connection or the stream broke; the watcher retries with a backoff.
    Broken(String),
}

/// Which watchers have listed once, and which cannot deliver now.
#[derive(Default)]
struct Health {
    listed: BTreeSet<(Side, &'static str)>,
    failing: BTreeMap<(Side, &'static str), Failure>,
}

type Shared = Arc<Mutex<Health>>;

pub struct Watched {
    source: SideStores,
    destination: SideStores,
    journal: Store<ConfigMap>,
    set: String,
    /// Counts watch events (and failures), so that waiters wake on any change.
    changed: watch::Receiver<u64>,
    health: Shared,
    /// The watches of a run of its own, ended with it.
    tasks: Vec<tokio::task::AbortHandle>,
    /// How many watches it reads (each lists once before a snapshot is taken).
    expected: usize,
    /// The shared watches it reads and its subscriptions to them, on a [`Hub`].
    _shared: Vec<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The events of a watch of `api`, each applied to `writer`'s store before it is passed on and
/// counted in `version` once applied. The store keeps all of an object but its managedFields,
/// which nothing here reads and which are often half of an object: every view built from the
/// store copies less, and a controller's stores of many namespaces hold less. (A write never
/// sends a stored object back, and an update without managedFields keeps the server's anyway.)
fn into_store<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    version: Arc<AtomicU64>,
) -> impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    watcher(api, config)
        .default_backoff()
        .modify(|object: &mut K| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .inspect(move |_| {
            version.fetch_add(1, Ordering::Release);
        })
}

/// Starts one watcher into a new store; its task ends when the [`Watched`] is dropped.
struct Starter {
    bump: Arc<watch::Sender<u64>>,
    health: Shared,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Starter {
    fn start<K>(
        &mut self,
        side: Side,
        what: &'static str,
        api: Api<K>,
        config: watcher::Config,
    ) -> Store<K>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
    {
        self.start_versioned(side, what, api, config).0
    }

    /// [`Starter::start`], with a count of the events the store has applied.
    fn start_versioned<K>(
        &mut self,
        side: Side,
        what: &'static str,
        api: Api<K>,
        config: watcher::Config,
    ) -> (Store<K>, Arc<AtomicU64>)
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let (store, writer) = reflector::store();
        let bump = self.bump.clone();
        let health = self.health.clone();
        let version = Arc::new(AtomicU64::new(0));
        let events = into_store(api, config, writer, version.clone());
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let mut health = sync::lock(&health);
                match event {
                    // The reflector has applied the event before it is passed on.
                    Ok(event) => {
                        health.failing.remove(&(side, what));
                        if matches!(event, watcher::Event::InitDone) {
                            health.listed.insert((side, what));
                        }
                    }
                    Err(e) => {
                        health.failing.insert((side, what), failure_of(e));
                    }
                }
                drop(health);
                bump.send_modify(|n| *n += 1);
            }
        });
        self.tasks.push(task.abort_handle());
        (store, version)
    }

    fn side(&mut self, side: Side, cluster: &Cluster, at: &Location) -> SideStores {
        let client = cluster.client.clone();
        let ns = at.namespace.as_str();
        let all = watcher::Config::default;
        let (volumes, volumes_version) =
            self.start_versioned(side, "PersistentVolumes", Api::all(client.clone()), all());
        SideStores {
            side,
            cluster: cluster.clone(),
            at: at.clone(),
            sets: self.start(
                side,
                "the StatefulSet",
                Api::namespaced(client.clone(), ns),
                all().fields(&format!("metadata.name={}", at.name)),
            ),
            // Every pod named like an ordinal counts, owned or not: all the namespace's pods.
            pods: self.start(side, "pods", Api::namespaced(client.clone(), ns), all()),
            claims: self.start(
                side,
                "PersistentVolumeClaims",
                Api::namespaced(client.clone(), ns),
                all(),
            ),
            // The PVs the claims name are not labelled, and new ones appear (a fresh claim's,
            // a copy): all of them, as a controller's informer does.
            volumes,
            volumes_version,
            volumes_memo: Mutex::default(),
            budgets: self.start(
                side,
                "PodDisruptionBudgets",
                Api::namespaced(client, ns),
                all(),
            ),
        }
    }
}

fn failure_of(e: watcher::Error) -> Failure {
    let refused = match &e {
        watcher::Error::WatchError(status) => Some(status.clone()),
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => Some(status.clone()),
        _ => None,
    };
    match refused {
        // 410 Gone only means: list again, which the watcher does.
        Some(status) if status.code != 410 => Failure::Refused(status),
        _ => Failure::Broken(crate::cluster::describe_watch_error(&e)),
    }
}

impl Watched {
    /// Starts the watches of both sides and of the journal (in the destination's namespace).
    pub fn start(clusters: [&Cluster; 2], at: [&Location; 2], set: &str) -> Watched {
        let (bump, changed) = watch::channel(0u64);
        let mut starter = Starter {
            bump: Arc::new(bump),
            health: Shared::default(),
            tasks: Vec::new(),
        };
        let source = starter.side(Side::Source, clusters[0], at[0]);
        let destination = starter.side(Side::Destination, clusters[1], at[1]);
        let journal = starter.start(
            Side::Destination,
            "the migration journal",
            Api::namespaced(clusters[1].client.clone(), &at[1].namespace),
            watcher::Config::default()
                .fields(&format!("metadata.name={}", journal::object_name(set))),
        );
        Watched {
            source,
            destination,
            journal,
            set: set.to_string(),
            changed,
            health: starter.health,
            expected: starter.tasks.len(),
            tasks: starter.tasks,
            _shared: Vec::new(),
        }
    }

    fn side(&self, side: Side) -> &SideStores {
        match side {
            Side::Source => &self.source,
            Side::Destination => &self.destination,
        }
    }

    /// A receiver that wakes on every watch event from now on.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    fn all_ready(&self) -> bool {
        sync::lock(&self.health).listed.len() == self.expected
    }

    fn any_failing(&self) -> bool {
        !sync::lock(&self.health).failing.is_empty()
    }

    /// Waits until every watch has listed once, or one of them fails.
    pub async fn ready(&self) {
        self.until(|w| w.all_ready() || w.any_failing()).await
    }

    /// The journal and both sides as the caches show them now. An error while a watch cannot
    /// deliver (retried like a failed request: see `reconcile::is_transient`), so nothing is
    /// decided on a view that may be missing a kind of object.
    pub fn snapshot(&self) -> Result<(Option<Stored>, Observed)> {
        let failing = sync::lock(&self.health)
            .failing
            .iter()
            .next()
            .map(|(k, v)| (*k, v.clone()));
        if let Some(((side, what), failure)) = failing {
            let source = match failure {
                Failure::Refused(status) => kube::Error::Api(status),
                Failure::Broken(message) => kube::Error::Service(message.into()),
            };
            return Err(self
                .side(side)
                .cluster
                .api_error(&format!("watch {what}"), source));
        }
        if !self.all_ready() {
            return Err(Error::Conflict("the watches have not listed yet".into()));
        }
        let namespace = &self.destination.at.namespace;
        let stored = self
            .journal
            .get(&ObjectRef::new(&journal::object_name(&self.set)).within(namespace))
            .map(|cm| journal::parse(&cm, namespace, &self.set))
            .transpose()?;
        let scope = match &stored {
            Some(s) => Scope::of(&s.journal),
            // As `Run::observe` without a journal: the source's templates, no budgets.
            None => Scope {
                templates: self
                    .set(Side::Source)
                    .map(|s| observe::set_view(&s).claim_templates)
                    .unwrap_or_default(),
                budgets: Vec::new(),
            },
        };
        let view = |side: &SideStores| {
            let mut view = observe::side_view(
                &side.at,
                &scope,
                self.set(side.side).as_deref(),
                side.pods.state().iter().map(|p| p.as_ref()),
                side.claims.state().iter().map(|c| c.as_ref()),
                std::iter::empty(),
                side.budgets.state().iter().map(|b| b.as_ref()),
            );
            view.volumes = side.volume_views(&view.claims);
            view
        };
        Ok((
            stored,
            Observed {
                source: view(&self.source),
                destination: view(&self.destination),
            },
        ))
    }

    /// The set on `side` as cached.
    pub fn set(&self, side: Side) -> Option<Arc<StatefulSet>> {
        let s = self.side(side);
        s.sets
            .get(&ObjectRef::new(&s.at.name).within(&s.at.namespace))
    }

    /// The pod `name` on `side` as cached.
    pub fn pod(&self, side: Side, name: &str) -> Option<Arc<Pod>> {
        let s = self.side(side);
        s.pods.get(&ObjectRef::new(name).within(&s.at.namespace))
    }

    /// The claim `name` on `side` as cached.
    pub fn claim(&self, side: Side, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        let s = self.side(side);
        s.claims.get(&ObjectRef::new(name).within(&s.at.namespace))
    }

    /// The PV `name` on `side` as cached.
    pub fn volume(&self, side: Side, name: &str) -> Option<Arc<PersistentVolume>> {
        self.side(side).volumes.get(&ObjectRef::new(name))
    }

    /// Waits until `holds` is true of the caches, checking after every watch event.
    pub async fn until(&self, mut holds: impl FnMut(&Watched) -> bool) {
        let mut changed = self.subscribe();
        loop {
            changed.borrow_and_update();
            if holds(self) {
                return;
            }
            if changed.changed().await.is_err() {
                // The watches ended (the run is ending): nothing will change any more.
                return std::future::pending().await;
            }
        }
    }
}

/// Watches shared by the runs of one process (the controller's): one per kind, member cluster
/// and namespace, and one of PVs per member, kept while a run reads them.
pub struct Hub {
    watches: Mutex<HashMap<HubKey, Weak<dyn Any + Send + Sync>>>,
    /// The runs in their start-up (preflight's reads) at once: each reads its namespaces whole,
    /// and fifty doing so together held most of the controller's peak memory.
    start_ups: Arc<tokio::sync::Semaphore>,
}

/// How many runs of a [`Hub`] may be in their start-up at once.
const START_UPS_AT_ONCE: usize = 4;

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            watches: Mutex::default(),
            start_ups: Arc::new(tokio::sync::Semaphore::new(START_UPS_AT_ONCE)),
        }
    }
}

/// A run's turn to start up on a [`Hub`], given back when its watches start, when it waits for
/// its lease, or when it ends.
pub type StartUp = tokio::sync::OwnedSemaphorePermit;

/// A watch on the hub: the member's identity, the kind, the namespace (none: all of them).
type HubKey = (String, &'static str, Option<String>);

/// A member cluster as runs on a [`Hub`] name it: `identity` is the same for the same
/// credentials and server (the controller's: the kubeconfig Secret and a hash of its content),
/// and its connection is shared too.
#[derive(Clone)]
pub struct Member {
    pub identity: String,
    pub cluster: Cluster,
    /// The client's read timeout, if any: each watch asks the server to end it sooner (and
    /// goes on from where it was), so a quiet watch is not cut as a dead connection.
    pub read_timeout: Option<std::time::Duration>,
}

/// How much sooner than the client's read timeout the server ends a watch.
const WATCH_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

/// PURE: the server-side timeout of a watch through a client that gives up reading after
/// `read_timeout` (none: the watcher's default), at least a second.
pub fn watch_timeout(read_timeout: Option<std::time::Duration>) -> Option<u32> {
    read_timeout.map(|t| {
        let secs = t.saturating_sub(WATCH_MARGIN).as_secs().max(1);
        u32::try_from(secs).unwrap_or(u32::MAX)
    })
}

/// One shared watch: its store and who listens; its task ends with the last reader.
struct SharedWatch<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    /// Counts the events, each counted once the store has it.
    version: Arc<AtomicU64>,
    state: Arc<Mutex<WatchState>>,
    task: tokio::task::AbortHandle,
}

impl<K: Resource<DynamicType = ()> + 'static> Drop for SharedWatch<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Default)]
struct WatchState {
    listed: bool,
    failing: Option<Failure>,
    listeners: Vec<Weak<Listener>>,
}

/// A run's subscription to one shared watch: the health and wake-ups of its [`Watched`].
struct Listener {
    key: (Side, &'static str),
    health: Shared,
    bump: Arc<watch::Sender<u64>>,
    interest: Arc<Interest>,
}

impl Listener {
    /// Copies the watch's state into the run's health.
    fn sync(&self, listed: bool, failing: Option<&Failure>) {
        let mut health = sync::lock(&self.health);
        if listed {
            health.listed.insert(self.key);
        }
        match failing {
            Some(f) => health.failing.insert(self.key, f.clone()),
            None => health.failing.remove(&self.key),
        };
    }
}

/// Which objects' events wake a run: those named after its set (the set, its pods
/// `SET-N`, its claims `TEMPLATE-SET-N` and the PVs bound to them, its journal). Events of
/// objects without such a name (a PV not bound yet, a budget) wake every run.
pub struct Interest {
    set: String,
    prefix: String,
    infix: String,
    journal: String,
}

impl Interest {
    pub fn of(set: &str) -> Interest {
        Interest {
            set: set.to_string(),
            prefix: format!("{set}-"),
            infix: format!("-{set}-"),
            journal: journal::object_name(set),
        }
    }

    /// PURE: whether an event of an object with these `names` may concern the run. A name of
    /// another set that shares the prefix (`web-a` for `web`) wakes it too: harmless.
    pub fn wants(&self, names: &[String]) -> bool {
        names.iter().any(|n| {
            *n == self.set
                || *n == self.journal
                || n.starts_with(&self.prefix)
                || n.contains(&self.infix)
        })
    }
}

/// The names an event of `object` is judged by: its own.
fn own_name<K: Resource<DynamicType = ()>>(object: &K) -> Option<Vec<String>> {
    Some(vec![object.meta().name.clone().unwrap_or_default()])
}

/// A PV's own name and its claim's; none while it is bound to no claim (every run looks).
fn volume_names(volume: &PersistentVolume) -> Option<Vec<String>> {
    let claim = volume.spec.as_ref()?.claim_ref.as_ref()?.name.clone()?;
    Some(vec![
        volume.metadata.name.clone().unwrap_or_default(),
        claim,
    ])
}

/// A budget selects pods by label, not name: every run looks.
fn any_run<K>(_: &K) -> Option<Vec<String>> {
    None
}

impl Hub {
    /// Waits for a turn to start up (see [`Hub::start_ups`]).
    pub async fn start_up(&self) -> Option<StartUp> {
        self.start_ups.clone().acquire_owned().await.ok()
    }

    /// The watch of `what` (`api`, `config`) on `member` in `namespace`, started unless a
    /// run already reads it. `names` says whose events wake which runs.
    fn watch<K>(
        &self,
        member: &Member,
        what: &'static str,
        namespace: Option<&str>,
        config: watcher::Config,
        names: fn(&K) -> Option<Vec<String>>,
    ) -> Arc<SharedWatch<K>>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
        K: Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        let api = match namespace {
            Some(ns) => Api::namespaced(member.cluster.client.clone(), ns),
            None => Api::all(member.cluster.client.clone()),
        };
        self.watch_api(member, what, namespace, api, config, names)
    }

    fn watch_api<K>(
        &self,
        member: &Member,
        what: &'static str,
        namespace: Option<&str>,
        api: Api<K>,
        config: watcher::Config,
        names: fn(&K) -> Option<Vec<String>>,
    ) -> Arc<SharedWatch<K>>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
        K: Send + Sync + 'static,
    {
        let key = (member.identity.clone(), what, namespace.map(str::to_string));
        let config = match watch_timeout(member.read_timeout) {
            Some(secs) => config.timeout(secs),
            None => config,
        };
        let mut watches = sync::lock(&self.watches);
        let running = watches
            .get(&key)
            .and_then(Weak::upgrade)
            .and_then(|w| w.downcast::<SharedWatch<K>>().ok());
        if let Some(watch) = running {
            return watch;
        }
        let (store, writer) = reflector::store();
        let state = Arc::new(Mutex::new(WatchState::default()));
        let version = Arc::new(AtomicU64::new(0));
        let events = into_store(api, config, writer, version.clone());
        let task = tokio::spawn({
            let state = state.clone();
            async move {
                let mut events = std::pin::pin!(events);
                while let Some(event) = events.next().await {
                    let names = match &event {
                        Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o)) => names(o),
                        _ => None,
                    };
                    let mut state = sync::lock(&state);
                    match event {
                        Ok(event) => {
                            state.failing = None;
                            if matches!(event, watcher::Event::InitDone) {
                                state.listed = true;
                            }
                        }
                        Err(e) => state.failing = Some(failure_of(e)),
                    }
                    state.listeners.retain(|l| l.strong_count() > 0);
                    let (listed, failing) = (state.listed, state.failing.clone());
                    for listener in state.listeners.iter().filter_map(Weak::upgrade) {
                        listener.sync(listed, failing.as_ref());
                        if names.as_deref().is_none_or(|n| listener.interest.wants(n)) {
                            listener.bump.send_modify(|n| *n += 1);
                        }
                    }
                }
            }
        })
        .abort_handle();
        let watch = Arc::new(SharedWatch {
            store,
            version,
            state,
            task,
        });
        watches.retain(|_, w| w.strong_count() > 0);
        let erased: Arc<dyn Any + Send + Sync> = watch.clone();
        watches.insert(key, Arc::downgrade(&erased));
        watch
    }

    /// How many watches the hub runs now.
    pub fn watches(&self) -> usize {
        sync::lock(&self.watches)
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

/// A run's subscriptions to shared watches, held by its [`Watched`].
struct Subscriber<'h> {
    hub: &'h Hub,
    bump: Arc<watch::Sender<u64>>,
    health: Shared,
    interest: Arc<Interest>,
    held: Vec<Arc<dyn Any + Send + Sync>>,
}

impl Subscriber<'_> {
    /// Listens to `watch` as `what` of `side`; its store.
    fn listen<K>(&mut self, side: Side, what: &'static str, watch: Arc<SharedWatch<K>>) -> Store<K>
    where
        K: Resource<DynamicType = ()> + Send + Sync + 'static,
    {
        let listener = Arc::new(Listener {
            key: (side, what),
            health: self.health.clone(),
            bump: self.bump.clone(),
            interest: self.interest.clone(),
        });
        {
            let mut state = sync::lock(&watch.state);
            listener.sync(state.listed, state.failing.as_ref());
            state.listeners.push(Arc::downgrade(&listener));
        }
        let store = watch.store.clone();
        self.held.push(watch);
        self.held.push(listener);
        store
    }

    fn side(&mut self, side: Side, member: &Member, at: &Location) -> SideStores {
        let ns = Some(at.namespace.as_str());
        let all = watcher::Config::default;
        let hub = self.hub;
        let sets = hub.watch(member, "StatefulSets", ns, all(), own_name);
        let pods = hub.watch(member, "pods", ns, all(), own_name);
        let claims = hub.watch(member, "PersistentVolumeClaims", ns, all(), own_name);
        let volumes = hub.watch_api(
            member,
            "PersistentVolumes",
            None,
            Api::all(member.cluster.client.clone()),
            all(),
            volume_names,
        );
        let budgets = hub.watch(member, "PodDisruptionBudgets", ns, all(), any_run);
        SideStores {
            side,
            cluster: member.cluster.clone(),
            at: at.clone(),
            sets: self.listen(side, "StatefulSets", sets),
            pods: self.listen(side, "pods", pods),
            claims: self.listen(side, "PersistentVolumeClaims", claims),
            volumes_version: volumes.version.clone(),
            volumes: self.listen(side, "PersistentVolumes", volumes),
            volumes_memo: Mutex::default(),
            budgets: self.listen(side, "PodDisruptionBudgets", budgets),
        }
    }
}

impl Watched {
    /// [`Watched::start`] on the shared watches of `hub`: both sides' and the journal's
    /// (ConfigMaps of the destination's namespace), read by `set`'s names.
    pub fn start_on(hub: &Hub, members: [&Member; 2], at: [&Location; 2], set: &str) -> Watched {
        let (bump, changed) = watch::channel(0u64);
        let mut subscriber = Subscriber {
            hub,
            bump: Arc::new(bump),
            health: Shared::default(),
            interest: Arc::new(Interest::of(set)),
            held: Vec::new(),
        };
        let source = subscriber.side(Side::Source, members[0], at[0]);
        let destination = subscriber.side(Side::Destination, members[1], at[1]);
        let maps = hub.watch(
            members[1],
            "ConfigMaps",
            Some(&at[1].namespace),
            watcher::Config::default(),
            own_name,
        );
        let journal = subscriber.listen(Side::Destination, "the migration journal", maps);
        Watched {
            source,
            destination,
            journal,
            set: set.to_string(),
            changed,
            health: subscriber.health,
            tasks: Vec::new(),
            expected: subscriber.held.len() / 2,
            _shared: subscriber.held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        "[a-z]([a-z0-9-]{0,10}[a-z0-9])?"
    }

    proptest! {
        /// A run is woken by every event of its own objects: the set, its pods, its claims
        /// (and the PVs bound to them) and its journal.
        #[test]
        fn a_run_hears_of_its_own_objects(set in name(), template in name(), ordinal in 0u32..500) {
            let interest = Interest::of(&set);
            for own in [
                set.clone(),
                format!("{set}-{ordinal}"),
                format!("{template}-{set}-{ordinal}"),
                journal::object_name(&set),
            ] {
                prop_assert!(interest.wants(std::slice::from_ref(&own)), "{own} of {set}");
            }
        }

        /// Another set's objects wake it only when that set's name starts with its own.
        #[test]
        fn a_run_sleeps_through_other_sets(set in name(), other in name(), ordinal in 0u32..500) {
            prop_assume!(!other.starts_with(&set) && !other.contains(&format!("-{set}")));
            prop_assume!(!set.contains(&other) && !set.starts_with("data"));
            let interest = Interest::of(&set);
            let pod = format!("{other}-{ordinal}");
            let claim = format!("data-{other}-{ordinal}");
            prop_assert!(!interest.wants(std::slice::from_ref(&pod)), "{}", pod);
            prop_assert!(!interest.wants(std::slice::from_ref(&claim)), "{}", claim);
        }
    }

    #[test]
    fn a_watch_ends_before_the_client_gives_up_reading() {
        use std::time::Duration;
        assert_eq!(watch_timeout(None), None);
        assert_eq!(watch_timeout(Some(Duration::from_secs(30))), Some(25));
        assert_eq!(watch_timeout(Some(Duration::from_secs(3))), Some(1));
    }
}
