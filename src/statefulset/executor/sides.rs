//! The two sides of a migration: each cluster, where the set lives in it, and the names that
//! messages use. Fixed for a run; every part of the executor reads them.
use k8s_openapi::api::core::v1::PersistentVolume;
use kube::Api;

use crate::cluster::{Cluster, Namespaced};
use crate::statefulset::model::{Names, Side};
use crate::statefulset::observe::Location;

pub struct Sides {
    pub source: Cluster,
    pub destination: Cluster,
    pub source_at: Location,
    pub destination_at: Location,
    pub names: Names,
}

impl Sides {
    pub fn cluster(&self, side: Side) -> &Cluster {
        match side {
            Side::Source => &self.source,
            Side::Destination => &self.destination,
        }
    }

    pub fn location(&self, side: Side) -> &Location {
        match side {
            Side::Source => &self.source_at,
            Side::Destination => &self.destination_at,
        }
    }

    /// The context `side` names, for messages.
    pub fn context(&self, side: Side) -> &str {
        self.names.context(side)
    }

    /// Objects of kind `K` in the set's namespace on `side`.
    pub fn namespaced<K>(&self, side: Side) -> Api<K>
    where
        K: Namespaced,
    {
        Api::namespaced(
            self.cluster(side).client.clone(),
            &self.location(side).namespace,
        )
    }

    /// The PVs of `side` (cluster-wide objects).
    pub fn volumes(&self, side: Side) -> Api<PersistentVolume> {
        Api::all(self.cluster(side).client.clone())
    }
}
