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
use crate::sync;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

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
use super::model::{Observed, Side};
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
    budgets: Store<PodDisruptionBudget>,
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
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
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
        let (store, writer) = reflector::store();
        let bump = self.bump.clone();
        let health = self.health.clone();
        let events = watcher(api, config).default_backoff().reflect(writer);
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
        store
    }

    fn side(&mut self, side: Side, cluster: &Cluster, at: &Location) -> SideStores {
        let client = cluster.client.clone();
        let ns = at.namespace.as_str();
        let all = watcher::Config::default;
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
            volumes: self.start(side, "PersistentVolumes", Api::all(client.clone()), all()),
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
            tasks: starter.tasks,
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
        sync::lock(&self.health).listed.len() == self.tasks.len()
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
            observe::side_view(
                &side.at,
                &scope,
                self.set(side.side).as_deref(),
                side.pods.state().iter().map(|p| p.as_ref()),
                side.claims.state().iter().map(|c| c.as_ref()),
                side.volumes.state().iter().map(|v| v.as_ref()),
                side.budgets.state().iter().map(|b| b.as_ref()),
            )
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
