//! The database: etcd as a StatefulSet `db` of N members, one claim each, run by the pod runner.
//!
//! Member k is `db-k`, with data in its claim's volume and the address `127.<net>.<k>.1` (the pod
//! IP the runner gives it, ports 2379 and 2380) in whichever cluster it runs, so a member that
//! moves restarts with the same name, data directory and peer URL and rejoins as itself: no
//! member is added or removed. Members start together (podManagementPolicy Parallel), as etcd's
//! bootstrap needs a quorum before any member is healthy.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, Pod, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
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
                .map_err(|e| format!("creating the PodDisruptionBudget: {e}"))?;
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
            .map_err(|e| format!("creating the StatefulSet: {e}"))?;
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
            .map_err(|e| format!("creating namespace {} in {context}: {e}", self.namespace))?;
        // Pods are admitted once the namespace's default ServiceAccount exists.
        let accounts: Api<ServiceAccount> = self.api(context);
        wait_until(
            Duration::from_secs(90),
            "the default ServiceAccount",
            || match self.clusters.block_on(accounts.get_opt("default")) {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err("not created yet".into()),
                Err(e) => Err(e.to_string()),
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
            .map_err(|e| format!("creating the Service in {context}: {e}"))?;
        Ok(())
    }

    fn pods(&self, context: &str) -> Result<Vec<Pod>, String> {
        let api: Api<Pod> = self.api(context);
        self.clusters
            .block_on(api.list(&ListParams::default().labels(&format!("app={SET}"))))
            .map(|l| l.items)
            .map_err(|e| format!("listing pods in {context}: {e}"))
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
                Err(format!(
                    "Ready in {here}: {ready:?}; pods in {there}: {left}"
                ))
            }
        })
    }

    /// Removes the database: the StatefulSets first, then waits until the runner has stopped
    /// every member and the pods are gone (a namespace deleted under them would leave pods that
    /// no runner finishes), then the namespaces. With `release_volumes` (the benchmark, which
    /// runs again on the same clusters), also deletes the volume copies in the destination,
    /// empties the volumes and gives the source's back to the pool.
    pub fn tear_down(mut self, release_volumes: bool) -> Result<(), String> {
        self.torn_down = true;
        self.remove(release_volumes)
    }

    fn remove(&self, release_volumes: bool) -> Result<(), String> {
        let source = self.context(Side::Source).to_string();
        let destination = self.context(Side::Destination).to_string();
        let volumes = self.volumes(&source)?;
        for context in [&source, &destination] {
            let sets: Api<StatefulSet> = self.api(context);
            match self
                .clusters
                .block_on(sets.delete(SET, &DeleteParams::default()))
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(format!("deleting the StatefulSet in {context}: {e}")),
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

    /// The volumes of the database's claims in `context`: (PV name, host path).
    fn volumes(&self, context: &str) -> Result<Vec<(String, PathBuf)>, String> {
        let client = self.clusters.client(context);
        let claims: Api<PersistentVolumeClaim> = self.api(context);
        let pvs: Api<PersistentVolume> = Api::all(client);
        let claims = self
            .clusters
            .block_on(claims.list(&ListParams::default()))
            .map_err(|e| format!("listing claims in {context}: {e}"))?;
        let mut out = Vec::new();
        for name in claims
            .items
            .iter()
            .filter_map(|c| c.spec.as_ref()?.volume_name.clone())
        {
            let pv = self
                .clusters
                .block_on(pvs.get(&name))
                .map_err(|e| format!("reading PV {name} in {context}: {e}"))?;
            if let Some(path) = pv.spec.and_then(|s| s.host_path).map(|h| h.path) {
                out.push((name, PathBuf::from(path)));
            }
        }
        Ok(out)
    }

    /// Deletes the PV copies in the destination, empties the volumes and makes the source's PVs
    /// Available again, with the pool's reclaim policy.
    fn release(&self, volumes: &[(String, PathBuf)]) -> Result<(), String> {
        let copies: Api<PersistentVolume> =
            Api::all(self.clusters.client(self.context(Side::Destination)));
        let originals: Api<PersistentVolume> =
            Api::all(self.clusters.client(self.context(Side::Source)));
        let release =
            json!({"spec": {"claimRef": null, "persistentVolumeReclaimPolicy": "Delete"}});
        // The claims go with the namespaces. Until they have, the PV binder would bind an
        // original whose claimRef is cleared to its claim again, and then fail it (reclaim
        // Delete of a hostPath volume) when the claim goes.
        let claims: Api<PersistentVolumeClaim> = self.api(self.context(Side::Source));
        wait_until(
            Duration::from_secs(120),
            "the database's claims to go",
            || match self.clusters.block_on(claims.list(&ListParams::default())) {
                Ok(list) if list.items.is_empty() => Ok(()),
                Ok(list) => Err(format!("{} left", list.items.len())),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(e.to_string()),
            },
        )?;
        for (name, path) in volumes {
            let _ = self
                .clusters
                .block_on(copies.delete(name, &DeleteParams::default()));
            // The copy goes once its claim has gone with the namespace. Given back before that,
            // the original could be bound by the next database, whose move the copy of the
            // same name in the destination would then stop at preflight.
            wait_until(
                Duration::from_secs(120),
                &format!("the copy of {name} to go"),
                || match self.clusters.block_on(copies.get_opt(name)) {
                    Ok(None) => Ok(()),
                    Ok(Some(_)) => Err("still there".into()),
                    Err(e) => Err(e.to_string()),
                },
            )?;
            empty_directory(path)?;
            self.clusters
                .block_on(originals.patch(name, &PatchParams::default(), &Patch::Merge(&release)))
                .map_err(|e| format!("giving {name} back to the pool: {e}"))?;
        }
        Ok(())
    }
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
        let entry = entry.map_err(|e| e.to_string())?;
        let p = entry.path();
        let removed = if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
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
