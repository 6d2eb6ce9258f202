//! The journal: a ConfigMap in the destination namespace, updated with resourceVersion
//! preconditions. (The Lease of the same name is in `lease`.)
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ObjectMeta;

use super::model::Journal;
use crate::cluster::Cluster;
use crate::error::{Error, Result};

const JOURNAL_KEY: &str = "journal.json";

/// The name of the journal and of the Lease of the migration of `set`.
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
    cluster
        .call("read the migration journal", api.get_opt(&object_name(set)))
        .await?
        .map(|cm| parse(&cm, namespace, set))
        .transpose()
}

/// The journal that `cm` (the journal's ConfigMap, read or watched) holds.
pub fn parse(cm: &ConfigMap, namespace: &str, set: &str) -> Result<Stored> {
    let text = cm.data.as_ref().and_then(|d| d.get(JOURNAL_KEY)).ok_or_else(|| Error::Failed {
        message: format!("ConfigMap {namespace}/{} exists but holds no journal; it was not written by kubectl-migrate", object_name(set)),
    })?;
    let journal = serde_json::from_str(text).map_err(|e| Error::Failed {
        message: format!(
            "the journal {namespace}/{} is not readable ({e}); it was changed by hand",
            object_name(set)
        ),
    })?;
    Ok(Stored {
        journal,
        resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
    })
}

/// The ConfigMap that holds `journal`, to create (no resourceVersion) or to replace (the one read).
/// The metadata of the journal and the Lease: their name, the version a write expects, and
/// the label that says which tool manages them.
pub fn metadata(name: String, resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        resource_version,
        labels: Some(
            [(
                "app.kubernetes.io/managed-by".to_string(),
                "kubectl-migrate".to_string(),
            )]
            .into(),
        ),
        ..Default::default()
    }
}

pub fn config_map(
    journal: &Journal,
    namespace: &str,
    resource_version: Option<String>,
) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            ..metadata(object_name(&journal.name), resource_version)
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
