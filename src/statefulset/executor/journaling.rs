//! The journal's writes: created once (never overwritten), replaced with a precondition on the
//! version read, deleted at the end of a rollback. The version of the run's last write is kept,
//! so that the loop can tell a cache that does not show it yet (see `reconcile`).
use crate::sync;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use super::writer::{Writer, Written};
use crate::error::{Error, Result};
use crate::statefulset::journal::{self, Stored};
use crate::statefulset::model::{Journal, Side};

#[derive(Default)]
pub struct Journaling {
    /// The resourceVersion of the run's last write of the journal (`None`: none, or deleted).
    written: Mutex<Option<String>>,
}

impl Journaling {
    /// The resourceVersion of this run's last write (create or update) of the journal.
    pub fn written(&self) -> Option<String> {
        sync::lock(&self.written).clone()
    }

    /// Notes the version of the run's write of the journal (`None`: deleted). A dry run's
    /// writes change nothing, so it notes none.
    fn wrote(&self, w: &Writer, resource_version: Option<String>) {
        if !w.is_dry_run() {
            *sync::lock(&self.written) = resource_version;
        }
    }

    /// `write` of the journal, noting the version it wrote.
    async fn noting(
        &self,
        w: &Writer,
        write: impl Future<Output = kube::Result<ConfigMap>>,
    ) -> kube::Result<ConfigMap> {
        let written = write.await?;
        self.wrote(w, written.metadata.resource_version.clone());
        Ok(written)
    }

    /// Creates the journal ConfigMap; `AlreadyDone` if one exists (never overwritten).
    pub async fn create(&self, w: &Writer, journal: &Journal, action: &str) -> Result<Written> {
        let namespace = &w.sides.destination_at.namespace;
        let api: Api<ConfigMap> = w.sides.namespaced(Side::Destination);
        let cm = journal::config_map(journal, namespace, None);
        w.write(
            Side::Destination,
            action,
            self.noting(w, api.create(&w.post_params(), &cm)),
            Some(409),
        )
        .await
    }

    /// Replaces the journal with `change` applied, failing with a conflict if someone else
    /// changed it since `stored` was read.
    pub async fn update(
        &self,
        w: &Writer,
        stored: Option<&Stored>,
        action: &str,
        change: impl FnOnce(&mut Journal),
    ) -> Result<()> {
        let Some(stored) = stored else {
            if w.is_dry_run() {
                w.not_checked(
                    Side::Destination,
                    action,
                    "updates the journal that the first write of the plan creates",
                );
                return Ok(());
            }
            return Err(Error::Failed {
                message: format!("cannot {action}: the migration journal is missing"),
            });
        };
        let mut journal = stored.journal.clone();
        change(&mut journal);
        let namespace = &w.sides.destination_at.namespace;
        let api: Api<ConfigMap> = w.sides.namespaced(Side::Destination);
        let cm = journal::config_map(&journal, namespace, Some(stored.resource_version.clone()));
        let name = journal::object_name(&journal.name);
        let params = w.post_params();
        let replace = self.noting(w, api.replace(&name, &params, &cm));
        let result = w.write(Side::Destination, action, replace, None).await;
        match result {
            // Someone (or an earlier attempt of ours) wrote it since we read it: decide again.
            Err(e) if e.http_status() == Some(409) => Err(Error::Conflict(
                "the migration journal changed since it was read".into(),
            )),
            other => other.map(|_| ()),
        }
    }

    /// [`Journaling::update`] on the journal as it is now.
    pub async fn update_fresh(
        &self,
        w: &Writer,
        action: &str,
        change: impl FnOnce(&mut Journal),
    ) -> Result<()> {
        let sides = &w.sides;
        let stored = journal::load(
            &sides.destination,
            &sides.destination_at.namespace,
            &sides.names.set,
        )
        .await?;
        self.update(w, stored.as_ref(), action, change).await
    }

    pub async fn delete(&self, w: &Writer) -> Result<()> {
        self.wrote(w, None);
        let api: Api<ConfigMap> = w.sides.namespaced(Side::Destination);
        w.write(
            Side::Destination,
            "delete the migration journal",
            api.delete(
                &journal::object_name(&w.sides.names.set),
                &w.delete_params(),
            ),
            Some(404),
        )
        .await?;
        Ok(())
    }
}
