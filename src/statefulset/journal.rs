//! The journal: a ConfigMap in the destination namespace, updated with resourceVersion
//! preconditions. (The Lease of the same name is in `lease`.)
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ObjectMeta;

use super::model::Journal;
use crate::cluster::Cluster;
use crate::error::Result;

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

/// A journal ConfigMap that holds no journal this tool can read.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error(
        "ConfigMap {object} exists but holds no journal; it was not written by kubectl-migrate"
    )]
    Empty { object: String },
    #[error("the journal {object} was changed by hand and is not readable")]
    Invalid {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

impl crate::error::DomainError for Unreadable {}

/// The journal that `cm` (the journal's ConfigMap, read or watched) holds.
pub fn parse(cm: &ConfigMap, namespace: &str, set: &str) -> Result<Stored> {
    Ok(Stored {
        journal: read(cm, &format!("{namespace}/{}", object_name(set)))?,
        resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
    })
}

/// The journal in `cm`, the ConfigMap `object` (`namespace/name`, for messages).
fn read(cm: &ConfigMap, object: &str) -> std::result::Result<Journal, Unreadable> {
    let object = || object.to_string();
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(JOURNAL_KEY))
        .ok_or_else(|| Unreadable::Empty { object: object() })?;
    serde_json::from_str(text).map_err(|source| Unreadable::Invalid {
        object: object(),
        source,
    })
}

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

/// The ConfigMap that holds `journal`, to create (no resourceVersion) or to replace (the one read).
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn holding(data: Option<&str>) -> ConfigMap {
        ConfigMap {
            data: data.map(|text| [(JOURNAL_KEY.to_string(), text.to_string())].into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_journal_that_cannot_be_read_says_why_and_keeps_the_parse_error() {
        let empty = parse(&holding(None), "db", "web").unwrap_err();
        assert_eq!(
            empty.to_string(),
            "ConfigMap db/kubectl-migrate-web exists but holds no journal; it was not written by kubectl-migrate"
        );
        let invalid = parse(&holding(Some("{")), "db", "web").unwrap_err();
        assert!(
            invalid.report().starts_with(
                "the journal db/kubectl-migrate-web was changed by hand and is not readable: EOF while parsing"
            ),
            "{invalid}"
        );
        let unreadable = read(&holding(Some("{")), "db/kubectl-migrate-web").unwrap_err();
        let source = unreadable.source().expect("the parse error is kept");
        assert!(source.is::<serde_json::Error>(), "{source}");
    }
}
