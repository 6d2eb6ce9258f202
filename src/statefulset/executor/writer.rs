//! Every write of a migration goes through [`Writer::write`]: made only while the run holds the
//! migration's Lease, or (`--dry-run=server`) sent with `dryRun=All`, its verdict recorded
//! instead of stopping at a rejection. A dry run goes through this code, never through a copy
//! of the writes.
use crate::sync;
use std::sync::{Arc, Mutex};

use kube::Api;
use kube::api::{DeleteParams, PatchParams, PostParams, Preconditions};
use serde::Serialize;

use super::sides::Sides;
use super::waits::{Waits, Watchable};
use crate::error::{Error, Result};
use crate::statefulset::lease;
use crate::statefulset::model::Side;

pub const FIELD_MANAGER: &str = "kubectl-migrate";

/// What the server said of one dry-run write.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DryRunResult {
    pub action: String,
    pub cluster: String,
    /// The server did not reject it (accepted, or not checkable here).
    pub ok: bool,
    /// `accepted`, `rejected`, or `not-checked` (the write acts on an object an earlier write of
    /// the plan creates, so a server cannot judge it before that write is made).
    pub state: &'static str,
    pub message: String,
}

/// How a write went in the writer's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Made (or, in a dry run, accepted or recorded).
    Done,
    /// The server answered with the status that means there was nothing to do.
    AlreadyDone,
}

/// The writes to both sides, gated by the lease, in the run's mode.
pub struct Writer {
    pub sides: Arc<Sides>,
    /// `Some` in the dry-run mode: the verdicts so far.
    dry_run: Option<Mutex<Vec<DryRunResult>>>,
    /// The migration's Lease while the run holds it; every write checks it first.
    lease: Mutex<Option<lease::Held>>,
}

impl Writer {
    pub fn new(sides: Arc<Sides>) -> Writer {
        Writer {
            sides,
            dry_run: None,
            lease: Mutex::new(None),
        }
    }

    /// From now on, dry-runs every write and records the verdicts (see [`Writer::verdicts`]).
    pub fn dry_run(&mut self) {
        self.dry_run = Some(Mutex::new(Vec::new()));
    }

    pub fn is_dry_run(&self) -> bool {
        self.dry_run.is_some()
    }

    /// The dry-run verdicts, in the order of the writes.
    pub fn verdicts(&self) -> Vec<DryRunResult> {
        self.dry_run
            .as_ref()
            .map(|log| sync::lock(log).clone())
            .unwrap_or_default()
    }

    fn record(&self, side: Side, action: &str, state: &'static str, message: String) {
        if let Some(log) = &self.dry_run {
            sync::lock(log).push(DryRunResult {
                action: action.to_string(),
                cluster: self.sides.context(side).to_string(),
                ok: state != "rejected",
                state,
                message,
            });
        }
    }

    /// In a dry run, notes a write that cannot be judged yet; otherwise nothing.
    pub fn not_checked(&self, side: Side, action: &str, why: &str) {
        self.record(side, action, "not-checked", why.to_string());
    }

    /// From now on, every write checks `held` first (`None`: no lease, no checks).
    pub fn hold(&self, held: Option<lease::Held>) {
        *sync::lock(&self.lease) = held;
    }

    /// The run deletes the namespace its lease lives in: the lease goes with it, expectedly.
    pub fn lease_goes_with_namespace(&self) {
        if let Some(held) = self.held() {
            held.goes_with_namespace();
        }
    }

    /// The lease the run holds now, if any, for a write made off the run's path (an Event).
    pub fn held(&self) -> Option<lease::Held> {
        sync::lock(&self.lease).clone()
    }

    /// Whether the run may write now, by the lease it holds (see [`lease::Held::ensure`]).
    pub async fn ensure_lease(&self) -> Result<()> {
        match self.held() {
            Some(held) => held.ensure().await,
            None => Ok(()),
        }
    }

    /// Resolves, with the reason, when the lease the run holds is lost; never without one.
    pub async fn lease_lost(&self) -> String {
        match self.held() {
            Some(held) => held.lost().await,
            None => std::future::pending().await,
        }
    }

    pub fn post_params(&self) -> PostParams {
        PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            dry_run: self.is_dry_run(),
        }
    }

    pub fn merge_params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            dry_run: self.is_dry_run(),
            ..Default::default()
        }
    }

    pub fn delete_params(&self) -> DeleteParams {
        DeleteParams {
            dry_run: self.is_dry_run(),
            ..Default::default()
        }
    }

    /// One write on `side`: its request (built with this mode's params) under the request
    /// timeout, made only while the run holds the migration's lease (when it holds one). `done`
    /// is the HTTP status that means there is nothing to do (409 for a create, 404 for a
    /// delete). In a dry run the verdict is recorded, and a rejection does not stop the run:
    /// the next write is judged too.
    pub async fn write<T>(
        &self,
        side: Side,
        action: &str,
        request: impl Future<Output = kube::Result<T>>,
        done: Option<u16>,
    ) -> Result<Written> {
        let cluster = self.sides.cluster(side);
        if !self.is_dry_run() {
            self.ensure_lease().await?;
        }
        // A request that hangs (the server stopped answering) ends when the lease is lost.
        let result = tokio::select! {
            biased;
            result = cluster.call(action, request) => result,
            reason = self.lease_lost() => return Err(Error::LeaseLost { reason }),
        };
        let status = result.as_ref().err().and_then(Error::http_status);
        let outcome = match result {
            Ok(_) => Ok(Written::Done),
            Err(_) if status.is_some() && status == done => Ok(Written::AlreadyDone),
            Err(e) => Err(e),
        };
        if self.is_dry_run() {
            match &outcome {
                Ok(Written::Done) => self.record(side, action, "accepted", "accepted".into()),
                Ok(Written::AlreadyDone) => self.record(
                    side,
                    action,
                    "accepted",
                    "nothing to do: already done".into(),
                ),
                Err(e) => {
                    let message = match e {
                        Error::Cluster { source, .. } => match source.as_ref() {
                            kube::Error::Api(s) => s.message.clone(),
                            other => crate::cluster::describe_kube_error(other),
                        },
                        other => other.report(),
                    };
                    self.record(side, action, "rejected", message);
                }
            }
            return Ok(outcome.unwrap_or(Written::Done));
        }
        outcome
    }

    /// Deletes `name` (the object as read now: a uid precondition) and waits until it is gone,
    /// so that the next observation cannot see it again and delete it twice. Gone already is
    /// fine; an object replaced since the read is a conflict (decide again).
    pub async fn delete_until_gone<K>(
        &self,
        waits: &Waits,
        side: Side,
        what: &str,
        api: &Api<K>,
        name: &str,
    ) -> Result<()>
    where
        K: Watchable,
    {
        let cluster = self.sides.cluster(side);
        let Some(object) = cluster
            .call(&format!("read {what} {name}"), api.get_opt(name))
            .await?
        else {
            return Ok(());
        };
        let uid = object.meta().uid.clone().unwrap_or_default();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..self.delete_params()
        };
        let action = format!("delete {what} {name}");
        match self
            .write(side, &action, api.delete(name, &params), Some(404))
            .await
        {
            Err(e) if e.http_status() == Some(409) => {
                return Err(Error::Conflict(format!(
                    "{what} {name} was replaced since it was read"
                )));
            }
            other => other?,
        };
        if self.is_dry_run() {
            return Ok(());
        }
        waits.gone(what, api, name, &uid).await
    }
}
