//! The journal (a ConfigMap in the destination namespace) and the Lease that keeps two operators
//! from driving the same migration at once. Both use optimistic concurrency.
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

use super::model::Journal;
use crate::cluster::Cluster;
use crate::error::{Error, Result};

const JOURNAL_KEY: &str = "journal.json";
const LEASE_SECONDS: i32 = 20;

pub fn object_name(set: &str) -> String {
    format!("kubectl-migrate-{set}")
}

/// A journal as read, with the resourceVersion to update it against.
#[derive(Debug, Clone)]
pub struct Stored {
    pub journal: Journal,
    pub resource_version: String,
}

pub async fn load(cluster: &Cluster, namespace: &str, set: &str) -> Result<Option<Stored>> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
    let Some(cm) = cluster
        .call("read the migration journal", api.get_opt(&object_name(set)))
        .await?
    else {
        return Ok(None);
    };
    let text = cm.data.as_ref().and_then(|d| d.get(JOURNAL_KEY)).ok_or_else(|| Error::Failed {
        message: format!("ConfigMap {namespace}/{} exists but holds no journal; it was not written by kubectl-migrate", object_name(set)),
    })?;
    let journal = serde_json::from_str(text).map_err(|e| Error::Failed {
        message: format!(
            "the journal {namespace}/{} is not readable ({e}); it was changed by hand",
            object_name(set)
        ),
    })?;
    Ok(Some(Stored {
        journal,
        resource_version: cm.metadata.resource_version.unwrap_or_default(),
    }))
}

fn config_map(journal: &Journal, namespace: &str, resource_version: Option<String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(object_name(&journal.name)),
            namespace: Some(namespace.into()),
            resource_version,
            labels: Some(
                [(
                    "app.kubernetes.io/managed-by".to_string(),
                    "kubectl-migrate".to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        data: Some(
            [(
                JOURNAL_KEY.to_string(),
                serde_json::to_string_pretty(journal).expect("journal serializes"),
            )]
            .into(),
        ),
        ..Default::default()
    }
}

pub async fn create(cluster: &Cluster, namespace: &str, journal: &Journal) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
    cluster
        .call(
            "write the migration journal",
            api.create(
                &PostParams::default(),
                &config_map(journal, namespace, None),
            ),
        )
        .await?;
    Ok(())
}

/// Replaces the journal, failing if someone else changed it since `stored` was read.
pub async fn update(
    cluster: &Cluster,
    namespace: &str,
    stored: &Stored,
    journal: &Journal,
) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
    let cm = config_map(journal, namespace, Some(stored.resource_version.clone()));
    match api
        .replace(&object_name(&journal.name), &PostParams::default(), &cm)
        .await
    {
        Ok(_) => Ok(()),
        // Someone (or an earlier attempt of ours) wrote it since we read it: decide again.
        Err(e) if crate::cluster::is_status(&e, 409) => Err(Error::Conflict(
            "the migration journal changed since it was read".into(),
        )),
        Err(e) => cluster.fail("update the migration journal", e),
    }
}

pub async fn delete(cluster: &Cluster, namespace: &str, set: &str) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
    let result = api
        .delete(&object_name(set), &DeleteParams::default())
        .await;
    cluster.already_done("delete the migration journal", result, 404)
}

/// This process, as a lease holder: `host/pid`.
pub fn holder_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!("{host}/{}", std::process::id())
}

/// A holder on this host whose process is gone (killed, crashed) holds nothing.
fn holder_is_dead_here(holder: &str) -> bool {
    let mine = holder_identity();
    let (my_host, _) = mine.rsplit_once('/').unwrap_or((&mine, ""));
    match holder.rsplit_once('/') {
        Some((host, pid)) if host == my_host => pid
            .parse::<u32>()
            .is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists()),
        _ => false,
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// Holds the migration's Lease while the returned guard lives, renewing it in the background.
pub struct LeaseGuard {
    renew: tokio::task::JoinHandle<()>,
    api: Api<Lease>,
    name: String,
}

pub async fn acquire_lease(cluster: &Cluster, namespace: &str, set: &str) -> Result<LeaseGuard> {
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), namespace);
    let name = object_name(set);
    let me = holder_identity();
    let existing = cluster
        .call("read the migration lease", api.get_opt(&name))
        .await?;
    let mut lease = existing.clone().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: None,
    });
    if let Some(spec) = existing.as_ref().and_then(|l| l.spec.as_ref()) {
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let expired = spec.renew_time.as_ref().is_none_or(|t| {
            let age = k8s_openapi::jiff::Timestamp::now().duration_since(t.0);
            age.as_secs() > i64::from(spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS))
        });
        if !holder.is_empty() && holder != me && !expired && !holder_is_dead_here(&holder) {
            return Err(Error::Failed {
                message: format!(
                    "another kubectl-migrate ({holder}) is driving this migration (Lease {namespace}/{name} in {}); wait for it to finish, or for the lease to expire within {LEASE_SECONDS}s if it died",
                    cluster.context
                ),
            });
        }
    }
    let spec = lease.spec.get_or_insert_with(Default::default);
    spec.holder_identity = Some(me.clone());
    spec.lease_duration_seconds = Some(LEASE_SECONDS);
    spec.acquire_time = Some(now());
    spec.renew_time = Some(now());
    let result = if existing.is_some() {
        api.replace(&name, &PostParams::default(), &lease).await
    } else {
        api.create(&PostParams::default(), &lease).await
    };
    if let Err(e) = result {
        let conflict = crate::cluster::is_status(&e, 409);
        return Err(if conflict {
            Error::Failed {
                message:
                    "another kubectl-migrate took the migration lease at the same moment; try again"
                        .into(),
            }
        } else {
            cluster.api_error("take the migration lease", e)
        });
    }
    let renew_api = api.clone();
    let renew_name = name.clone();
    let renew = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs((LEASE_SECONDS / 4) as u64)).await;
            if let Ok(mut lease) = renew_api.get(&renew_name).await
                && lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.as_deref())
                    == Some(me.as_str())
            {
                lease.spec.get_or_insert_with(Default::default).renew_time = Some(now());
                let _ = renew_api
                    .replace(&renew_name, &PostParams::default(), &lease)
                    .await;
            }
        }
    });
    Ok(LeaseGuard { renew, api, name })
}

impl LeaseGuard {
    /// Gives the lease back so that the next run need not wait for it to expire.
    pub async fn release(self) {
        self.renew.abort();
        let _ = self.api.delete(&self.name, &DeleteParams::default()).await;
    }
}
