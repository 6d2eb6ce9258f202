//! The database: etcd as a StatefulSet `db` of N members, one claim each, run by the pod runner.
//!
//! Member k is `db-k`, with data in its claim's volume and the address `127.<net>.<k>.1` (the pod
//! IP the runner gives it, ports 2379 and 2380) in whichever cluster it runs, so a member that
//! moves restarts with the same name, data directory and peer URL and rejoins as itself: no
//! member is added or removed. Members start together (podManagementPolicy Parallel), as etcd's
//! bootstrap needs a quorum before any member is healthy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, Pod, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubectl_migrate::cluster::describe_kube_error as in_words;
use serde_json::{Value, json};

use super::runner::{LOOPBACK_NET, PROCESS_READY, PodRunner, RUNNER_LABEL, pod_ip};
use super::{Clusters, wait_until};

pub const SET: &str = "db";
pub const CLAIM_TEMPLATE: &str = "data";
const CLIENT_PORT: u16 = 2379;
const PEER_PORT: u16 = 2380;
/// Members starting, a move's last member rejoining: each within this.
const READY_LIMIT: Duration = Duration::from_secs(180);

/// Where the set runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Source,
    Destination,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub members: i32,
    /// A PodDisruptionBudget with this maxUnavailable in the source, selecting the members.
    pub max_unavailable: Option<i32>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            members: 3,
            max_unavailable: None,
        }
    }
}

pub struct Database<'c> {
    pub clusters: &'c Clusters,
    pub namespace: String,
    pub members: i32,
    /// The second octet of the members' addresses.
    pub net: u8,
    torn_down: bool,
}

impl<'c> Database<'c> {
    /// Creates the namespace and headless Service in both clusters and the database in the
    /// source, run by `runner`, and returns once every member is Ready.
    pub fn create(
        clusters: &'c Clusters,
        runner: &PodRunner,
        options: &Options,
    ) -> Result<Database<'c>, String> {
        let namespace = format!("zd-{}", unique_suffix());
        let net = free_net(options.members)?;
        let db = Database {
            clusters,
            namespace,
            members: options.members,
            net,
            torn_down: false,
        };
        for context in [&clusters.source, &clusters.destination] {
            db.create_namespace(context)?;
        }
        let client = clusters.client(&clusters.source);
        if let Some(max_unavailable) = options.max_unavailable {
            let budget: PodDisruptionBudget = from_json(json!({
                "metadata": {"name": SET},
                "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": SET}}}
            }))?;
            clusters
                .block_on(
                    Api::<PodDisruptionBudget>::namespaced(client.clone(), &db.namespace)
                        .create(&PostParams::default(), &budget),
                )
                .map_err(|e| format!("creating the PodDisruptionBudget: {}", in_words(&e)))?;
        }
        let set: StatefulSet = from_json(statefulset(
            &db.namespace,
            runner.id(),
            net,
            options.members,
        ))?;
        clusters
            .block_on(
                Api::<StatefulSet>::namespaced(client, &db.namespace)
                    .create(&PostParams::default(), &set),
            )
            .map_err(|e| format!("creating the StatefulSet: {}", in_words(&e)))?;
        db.wait_serving_in(Side::Source)?;
        Ok(db)
    }

    pub fn context(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.clusters.source,
            Side::Destination => &self.clusters.destination,
        }
    }

    /// The members' client URLs.
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.members)
            .map(|k| format!("http://{}:{CLIENT_PORT}", pod_ip(self.net, k as u8)))
            .collect()
    }

    fn api<K>(&self, context: &str) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.clusters.client(context), &self.namespace)
    }

    fn create_namespace(&self, context: &str) -> Result<(), String> {
        let client = self.clusters.client(context);
        let namespace: Namespace = from_json(json!({"metadata": {"name": self.namespace}}))?;
        self.clusters
            .block_on(
                Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace),
            )
            .map_err(|e| {
                format!(
                    "creating namespace {} in {context}: {}",
                    self.namespace,
                    in_words(&e)
                )
            })?;
        // Pods are admitted once the namespace's default ServiceAccount exists.
        let accounts: Api<ServiceAccount> = self.api(context);
        wait_until(
            Duration::from_secs(90),
            "the default ServiceAccount",
            || match self.clusters.block_on(accounts.get_opt("default")) {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err("not created yet".into()),
                Err(e) => Err(in_words(&e)),
            },
        )?;
        let service: Service = from_json(json!({
            "metadata": {"name": SET},
            "spec": {"clusterIP": "None", "selector": {"app": SET},
                     "ports": [{"name": "client", "port": CLIENT_PORT}, {"name": "peer", "port": PEER_PORT}]}
        }))?;
        self.clusters
            .block_on(
                self.api::<Service>(context)
                    .create(&PostParams::default(), &service),
            )
            .map_err(|e| format!("creating the Service in {context}: {}", in_words(&e)))?;
        Ok(())
    }

    fn pods(&self, context: &str) -> Result<Vec<Pod>, String> {
        let api: Api<Pod> = self.api(context);
        self.clusters
            .block_on(api.list(&ListParams::default().labels(&format!("app={SET}"))))
            .map(|l| l.items)
            .map_err(|e| format!("listing pods in {context}: {}", in_words(&e)))
    }

    /// Waits until every member runs and is Ready on `side` and none is left on the other.
    pub fn wait_serving_in(&self, side: Side) -> Result<(), String> {
        let (here, there) = match side {
            Side::Source => (self.context(Side::Source), self.context(Side::Destination)),
            Side::Destination => (self.context(Side::Destination), self.context(Side::Source)),
        };
        let what = format!(
            "all {} members of {}/{SET} Ready in {here}, none in {there}",
            self.members, self.namespace
        );
        wait_until(READY_LIMIT, &what, || {
            let ready: Vec<String> = self
                .pods(here)?
                .iter()
                .filter(|p| is_ready(p))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            let left = self.pods(there)?.len();
            if ready.len() == self.members as usize && left == 0 {
                Ok(())
            } else {
                let ready = if ready.is_empty() {
                    "none".to_string()
                } else {
                    ready.join(", ")
                };
                Err(format!("Ready in {here}: {ready}; pods in {there}: {left}"))
            }
        })
    }

    /// Removes the database: the StatefulSets first, then waits until the runner has stopped
    /// every member and the pods are gone (a namespace deleted under them would leave pods that
    /// no runner finishes), then the namespaces. With `release_volumes` (the benchmark, which
    /// runs again on the same clusters), the volumes go back to the pool: see [`Self::release`].
    pub fn tear_down(mut self, release_volumes: bool) -> Result<(), String> {
        self.torn_down = true;
        self.remove(release_volumes)
    }

    fn remove(&self, release_volumes: bool) -> Result<(), String> {
        let source = self.context(Side::Source).to_string();
        let destination = self.context(Side::Destination).to_string();
        // Held before any claim goes: a move can leave a volume with reclaim policy Delete
        // (a rollback gives the originals their policy back), and the PV controller would then
        // delete it, and its directory too when that lies under /tmp.
        let volumes = if release_volumes {
            self.hold_volumes()?
        } else {
            Vec::new()
        };
        for context in [&source, &destination] {
            let sets: Api<StatefulSet> = self.api(context);
            match self
                .clusters
                .block_on(sets.delete(SET, &DeleteParams::default()))
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => {
                    return Err(format!(
                        "deleting the StatefulSet in {context}: {}",
                        in_words(&e)
                    ));
                }
            }
        }
        wait_until(Duration::from_secs(120), "the members to stop", || {
            let left = self.pods(&source)?.len() + self.pods(&destination)?.len();
            if left == 0 {
                Ok(())
            } else {
                Err(format!("{left} pods left"))
            }
        })?;
        for context in [&source, &destination] {
            let namespaces: Api<Namespace> = Api::all(self.clusters.client(context));
            let _ = self
                .clusters
                .block_on(namespaces.delete(&self.namespace, &DeleteParams::default()));
        }
        if release_volumes {
            self.release(&volumes)?;
        }
        Ok(())
    }

    /// Every PV in either cluster whose claim is (or was) one of the database's, set to reclaim
    /// policy Retain.
    fn hold_volumes(&self) -> Result<Vec<HeldVolume>, String> {
        let retain = json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}});
        let mut held = Vec::new();
        for side in [Side::Source, Side::Destination] {
            let context = self.context(side);
            let pvs: Api<PersistentVolume> = Api::all(self.clusters.client(context));
            let list = self
                .clusters
                .block_on(pvs.list(&ListParams::default()))
                .map_err(|e| format!("listing the PVs of {context}: {}", in_words(&e)))?;
            for pv in list.items {
                let spec = pv.spec.unwrap_or_default();
                let claimed_here = spec.claim_ref.as_ref().and_then(|c| c.namespace.as_deref())
                    == Some(self.namespace.as_str());
                let (Some(name), Some(host_path), true) =
                    (pv.metadata.name, spec.host_path, claimed_here)
                else {
                    continue;
                };
                match self.clusters.block_on(pvs.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&retain),
                )) {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => continue,
                    Err(e) => {
                        return Err(format!(
                            "setting PV {name} in {context} to Retain: {}",
                            in_words(&e)
                        ));
                    }
                }
                held.push(HeldVolume {
                    side,
                    name,
                    path: PathBuf::from(host_path.path),
                    created: pv.metadata.creation_timestamp,
                });
            }
        }
        Ok(held)
    }

    /// Gives the held volumes back, once the claims have gone with the namespaces (until then
    /// the PV binder would bind a PV whose claimRef is cleared to its claim again): the copies
    /// (a PV on the directory of an older one) are deleted, then each original is emptied and
    /// made Available again with the pool's reclaim policy. Whichever cluster the last move left
    /// the database in, and whatever policy it left, the pool is as it was.
    fn release(&self, volumes: &[HeldVolume]) -> Result<(), String> {
        for side in [Side::Source, Side::Destination] {
            let context = self.context(side);
            let claims: Api<PersistentVolumeClaim> = self.api(context);
            wait_until(
                Duration::from_secs(120),
                &format!("the database's claims in {context} to go"),
                || match self.clusters.block_on(claims.list(&ListParams::default())) {
                    Ok(list) if list.items.is_empty() => Ok(()),
                    Ok(list) => Err(format!("{} left", list.items.len())),
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    Err(e) => Err(in_words(&e)),
                },
            )?;
        }
        let (originals, copies) = originals_and_copies(volumes);
        for copy in copies {
            let context = self.context(copy.side);
            let pvs: Api<PersistentVolume> = Api::all(self.clusters.client(context));
            let _ = self
                .clusters
                .block_on(pvs.delete(&copy.name, &DeleteParams::default()));
            // Given back before its copy has gone, an original could be bound by the next
            // database, whose move the copy of the same name would then stop at preflight.
            wait_until(
                Duration::from_secs(120),
                &format!("the copy {} in {context} to go", copy.name),
                || match self.clusters.block_on(pvs.get_opt(&copy.name)) {
                    Ok(None) => Ok(()),
                    Ok(Some(_)) => Err("still there".into()),
                    Err(e) => Err(in_words(&e)),
                },
            )?;
        }
        let give_back =
            json!({"spec": {"claimRef": null, "persistentVolumeReclaimPolicy": "Delete"}});
        for original in originals {
            let context = self.context(original.side);
            let pvs: Api<PersistentVolume> = Api::all(self.clusters.client(context));
            empty_directory(&original.path)?;
            self.clusters
                .block_on(pvs.patch(
                    &original.name,
                    &PatchParams::default(),
                    &Patch::Merge(&give_back),
                ))
                .map_err(|e| {
                    format!(
                        "giving PV {} in {context} back to the pool: {}",
                        original.name,
                        in_words(&e)
                    )
                })?;
        }
        Ok(())
    }
}

/// A PV the database's claims used, held with reclaim policy Retain until it is given back.
struct HeldVolume {
    side: Side,
    name: String,
    path: PathBuf,
    created: Option<Time>,
}

/// The originals (per directory, the PV created first: the pool's) and the copies a move made
/// of them (the later ones on the same directory).
fn originals_and_copies(volumes: &[HeldVolume]) -> (Vec<&HeldVolume>, Vec<&HeldVolume>) {
    let mut by_path: BTreeMap<&Path, Vec<&HeldVolume>> = BTreeMap::new();
    for v in volumes {
        by_path.entry(&v.path).or_default().push(v);
    }
    let (mut originals, mut copies) = (Vec::new(), Vec::new());
    for mut same_directory in by_path.into_values() {
        same_directory.sort_by(|a, b| a.created.cmp(&b.created));
        let mut same_directory = same_directory.into_iter();
        originals.extend(same_directory.next());
        copies.extend(same_directory);
    }
    (originals, copies)
}

impl Drop for Database<'_> {
    /// A test that failed half-way still removes its database, best effort.
    fn drop(&mut self) {
        if !self.torn_down
            && let Err(e) = self.remove(false)
        {
            eprintln!("zero-downtime: could not remove {}: {e}", self.namespace);
        }
    }
}

fn empty_directory(path: &std::path::Path) -> Result<(), String> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let p = entry.path();
        let is_dir = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?
            .is_dir();
        let removed = if is_dir {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        removed.map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
    }
    Ok(())
}

/// The StatefulSet: etcd members with their data on their claims, run by pod runner `runner_id`.
pub fn statefulset(namespace: &str, runner_id: &str, net: u8, members: i32) -> Value {
    let initial_cluster = (0..members)
        .map(|k| format!("{SET}-{k}=http://{}:{PEER_PORT}", pod_ip(net, k as u8)))
        .collect::<Vec<_>>()
        .join(",");
    json!({
        "metadata": {"name": SET, "labels": {"app": SET}},
        "spec": {
            "serviceName": SET,
            "replicas": members,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": SET}},
            "template": {
                "metadata": {
                    "labels": {"app": SET, RUNNER_LABEL: runner_id},
                    "annotations": {LOOPBACK_NET: net.to_string()}
                },
                "spec": {
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 30,
                    "readinessGates": [{"conditionType": PROCESS_READY}],
                    "containers": [{
                        "name": "etcd",
                        "image": "registry.k8s.io/etcd:3.6.16-0",
                        "command": ["etcd"],
                        "args": [
                            "--name=$(POD_NAME)",
                            "--data-dir=/var/lib/etcd/data",
                            format!("--listen-peer-urls=http://$(POD_IP):{PEER_PORT}"),
                            format!("--initial-advertise-peer-urls=http://$(POD_IP):{PEER_PORT}"),
                            format!("--listen-client-urls=http://$(POD_IP):{CLIENT_PORT}"),
                            format!("--advertise-client-urls=http://$(POD_IP):{CLIENT_PORT}"),
                            format!("--initial-cluster={initial_cluster}"),
                            "--initial-cluster-state=new",
                            format!("--initial-cluster-token={namespace}")
                        ],
                        "env": [
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                        ],
                        "ports": [
                            {"name": "client", "containerPort": CLIENT_PORT},
                            {"name": "peer", "containerPort": PEER_PORT}
                        ],
                        // /health answers once the member has a leader and serves a
                        // linearizable read: it has rejoined the quorum.
                        "readinessProbe": {
                            "httpGet": {"path": "/health", "port": "client"},
                            "periodSeconds": 1, "failureThreshold": 3
                        },
                        "volumeMounts": [{"name": CLAIM_TEMPLATE, "mountPath": "/var/lib/etcd"}]
                    }]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": CLAIM_TEMPLATE},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    })
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A loopback network for a new database: its own, within this process, and with its members'
/// addresses free on this machine.
fn free_net(members: i32) -> Result<u8, String> {
    // Spread over processes (several test binaries, benches), then handed out in turn.
    static NEXT: AtomicU8 = AtomicU8::new(0);
    let _ = NEXT.compare_exchange(
        0,
        40 + (std::process::id() % 200) as u8,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..200 {
        let net = NEXT.fetch_add(1, Ordering::Relaxed);
        let net = if (40..240).contains(&net) {
            net
        } else {
            NEXT.store(41, Ordering::Relaxed);
            40
        };
        let free = (0..members).all(|k| {
            [CLIENT_PORT, PEER_PORT]
                .iter()
                .all(|port| std::net::TcpListener::bind((pod_ip(net, k as u8), *port)).is_ok())
        });
        if free {
            return Ok(net);
        }
    }
    Err("no free loopback network 127.40-239.*.1 for the database's members".into())
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value)
        .map_err(|e| format!("a manifest of the harness does not parse: {e}"))
}

fn unique_suffix() -> String {
    use std::sync::atomic::AtomicU32;
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{:x}{:x}",
        nanos % 0xfffff,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
