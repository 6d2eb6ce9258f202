//! What one source (a cluster or a set of files) serves, as loaded.
use std::collections::BTreeMap;

use super::stored::StoredApi;

/// Everything one source (a cluster or a set of files) serves.
#[derive(Debug, Clone)]
pub struct SourceSchemas {
    /// The context name or the path, as shown in the output.
    pub label: String,
    pub origin: Origin,
    pub apis: BTreeMap<String, StoredApi>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Origin {
    Cluster {
        context: String,
        server: String,
        version: String,
    },
    File {
        path: String,
    },
}
