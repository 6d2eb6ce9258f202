//! Every write of a migration, in one place, and each reconciler step performed idempotently:
//! creates tolerate "already exists", patches carry resourceVersion preconditions, waits use
//! watches and give up after --timeout.
//!
//! The executor has two modes. It writes, or (`--dry-run=server`) it sends each of the same
//! requests with `dryRun=All` and records the server's verdict instead of stopping at a
//! rejection: a dry run goes through this code, never through a copy of the writes.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::wait::{await_condition, conditions};
use serde::Serialize;
use serde_json::json;
use tokio::sync::Notify;

use super::copy::{
    ORIGINAL_POLICY_ANNOTATION, ORIGINAL_RETENTION_ANNOTATION, copy_claim, copy_volume,
    destination_set,
};
use super::decide::verified_bound_after;
use super::journal::{self, Stored};
use super::lease;
use super::model::Names;
use super::model::{
    Direction, Journal, ObjectKind, ObjectRef, Observed, RecordedBudget, Retention, Side,
    VolumeMode, pod_name,
};
use super::observe::Location;
use super::step::Step;
use super::watched::Watched;
use crate::cluster::{Cluster, Namespaced};
use crate::duration::humanize;
use crate::error::{Error, Result};

pub const FIELD_MANAGER: &str = "kubectl-migrate";

/// Set by Ctrl-C; waits end early and the loop stops at the next safe point.
#[derive(Clone, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl Interrupt {
    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
    pub async fn wait(&self) {
        let notified = self.notify.notified();
        if self.is_set() {
            return;
        }
        notified.await;
    }
}

/// What a step tells as it goes, besides its result: sent to the loop, which tells the
/// operator (see `reconcile`).
#[derive(Debug, Clone)]
pub enum Note {
    /// A pod the step waits for is not there yet, and why.
    Waiting { pod: String, reason: String },
    /// A request failed in a way worth retrying; the step is tried again after `delay`.
    Retrying { message: String, delay: Duration },
    /// Something the step leaves in place on purpose, and why.
    Kept(String),
    /// Time a step that is not a wait spent waiting for the cluster (a claim to be bound).
    Waited(Duration),
}

/// Where a step's notes go; a closed channel (a dry run's) drops them.
pub type Notes = tokio::sync::mpsc::UnboundedSender<Note>;

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

/// How a write went in the executor's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Made (or, in a dry run, accepted or recorded).
    Done,
    /// The server answered with the status that means there was nothing to do.
    AlreadyDone,
}

/// How often a wait for a pod reads the pod's warning events.
const WARNING_POLL: Duration = Duration::from_secs(5);

/// The pod a wait is on, as the operator is told of it.
#[derive(Debug, Default)]
struct Waiting {
    pod: String,
    uid: String,
    /// Why it is not Ready; `None` once it is.
    reason: Option<String>,
    /// Its latest warning event.
    warning: Option<String>,
}

impl Waiting {
    /// What to tell: the reason, and the latest warning with it.
    fn text(&self) -> Option<String> {
        let reason = self.reason.as_ref()?;
        Some(match &self.warning {
            Some(w) => format!("{reason}; latest warning: {w}"),
            None => reason.clone(),
        })
    }
}

pub struct Executor {
    pub source: Cluster,
    pub destination: Cluster,
    pub source_at: Location,
    pub destination_at: Location,
    pub names: Names,
    pub class_map: BTreeMap<String, String>,
    pub health_check: Option<String>,
    pub timeout: Duration,
    pub volumes: VolumeMode,
    /// This process as the lease holder, named in the Events of the steps.
    pub holder: String,
    pub interrupt: Interrupt,
    /// `Some` in the dry-run mode: the verdicts so far.
    dry_run: Option<Mutex<Vec<DryRunResult>>>,
    /// The migration's Lease while the run holds it; every write checks it first.
    lease: Mutex<Option<lease::Held>>,
    /// The reconciler's watch caches while it runs; the waits then wake on their events.
    watched: Mutex<Option<Arc<Watched>>>,
    /// The resourceVersion of the run's last write of the journal (see `journal_written`).
    journal_written: Mutex<Option<String>>,
    /// The Event writes of finished steps, in the background; each says why it failed.
    recording: Mutex<Vec<tokio::task::JoinHandle<Option<String>>>>,
}

impl Executor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: Cluster,
        destination: Cluster,
        source_at: Location,
        destination_at: Location,
        names: Names,
        class_map: BTreeMap<String, String>,
        health_check: Option<String>,
        timeout: Duration,
        volumes: VolumeMode,
        holder: String,
    ) -> Executor {
        Executor {
            source,
            destination,
            source_at,
            destination_at,
            names,
            class_map,
            health_check,
            timeout,
            volumes,
            holder,
            interrupt: Interrupt::default(),
            watched: Mutex::default(),
            recording: Mutex::default(),
            journal_written: Mutex::default(),
            dry_run: None,
            lease: Mutex::new(None),
        }
    }

    /// From now on, dry-runs every write and records the verdicts (see [`Executor::verdicts`]).
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
            .map(|log| log.lock().expect("no panics while holding it").clone())
            .unwrap_or_default()
    }

    fn record(&self, side: Side, action: &str, state: &'static str, message: String) {
        if let Some(log) = &self.dry_run {
            log.lock()
                .expect("no panics while holding it")
                .push(DryRunResult {
                    action: action.to_string(),
                    cluster: self.names.context(side).to_string(),
                    ok: state != "rejected",
                    state,
                    message,
                });
        }
    }

    /// In a dry run, notes a write that cannot be judged yet; otherwise nothing.
    pub(super) fn not_checked(&self, side: Side, action: &str, why: &str) {
        self.record(side, action, "not-checked", why.to_string());
    }

    /// From now on, every write checks `held` first (`None`: no lease, no checks).
    pub fn hold(&self, held: Option<lease::Held>) {
        *self.lease.lock().expect("no panics while holding it") = held;
    }

    /// The run deletes the namespace its lease lives in: the lease goes with it, expectedly.
    pub fn lease_goes_with_namespace(&self) {
        if let Some(held) = self.held() {
            held.goes_with_namespace();
        }
    }

    fn held(&self) -> Option<lease::Held> {
        self.lease
            .lock()
            .expect("no panics while holding it")
            .clone()
    }

    /// The resourceVersion of this run's last write (create or update) of the journal.
    pub fn journal_written(&self) -> Option<String> {
        self.journal_written
            .lock()
            .expect("no panics while holding it")
            .clone()
    }

    /// Notes the version of the run's write of the journal (`None`: deleted). A dry run's
    /// writes change nothing, so it notes none.
    fn wrote_journal(&self, resource_version: Option<String>) {
        if !self.is_dry_run() {
            *self
                .journal_written
                .lock()
                .expect("no panics while holding it") = resource_version;
        }
    }

    /// `write` of the journal, noting the version it wrote (see `journal_written`).
    async fn noting_journal(
        &self,
        write: impl Future<Output = kube::Result<k8s_openapi::api::core::v1::ConfigMap>>,
    ) -> kube::Result<k8s_openapi::api::core::v1::ConfigMap> {
        let written = write.await?;
        self.wrote_journal(written.metadata.resource_version.clone());
        Ok(written)
    }

    /// Lets the waits use the reconciler's watch caches (`None`: watch of their own).
    pub fn watch_with(&self, watched: Option<Arc<Watched>>) {
        *self.watched.lock().expect("no panics while holding it") = watched;
    }

    pub fn watched(&self) -> Option<Arc<Watched>> {
        self.watched
            .lock()
            .expect("no panics while holding it")
            .clone()
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
    pub fn namespaced<K>(&self, side: Side) -> Api<K>
    where
        K: Namespaced,
    {
        Api::namespaced(
            self.cluster(side).client.clone(),
            &self.location(side).namespace,
        )
    }
    fn sets(&self, side: Side) -> Api<StatefulSet> {
        self.namespaced(side)
    }
    fn pods(&self, side: Side) -> Api<Pod> {
        self.namespaced(side)
    }
    fn claims(&self, side: Side) -> Api<PersistentVolumeClaim> {
        self.namespaced(side)
    }
    fn volumes(&self, side: Side) -> Api<PersistentVolume> {
        Api::all(self.cluster(side).client.clone())
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
    fn delete_params(&self) -> DeleteParams {
        DeleteParams {
            dry_run: self.is_dry_run(),
            ..Default::default()
        }
    }

    /// One write on `side`: its request (built with this mode's params) under the request
    /// timeout, made only while the run holds the migration's lease (when it holds one). `done` is the HTTP status that means there is nothing to do (409 for a create,
    /// 404 for a delete). In a dry run the verdict is recorded, and a rejection does not stop
    /// the run: the next write is judged too.
    pub async fn write<T>(
        &self,
        side: Side,
        action: &str,
        request: impl Future<Output = kube::Result<T>>,
        done: Option<u16>,
    ) -> Result<Written> {
        let cluster = self.cluster(side);
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
                            other => other.to_string(),
                        },
                        other => other.to_string(),
                    };
                    self.record(side, action, "rejected", message);
                }
            }
            return Ok(outcome.unwrap_or(Written::Done));
        }
        outcome
    }

    /// Records a finished step as a Kubernetes Event (events.k8s.io/v1) on the StatefulSet in
    /// both clusters, so that `kubectl events` or `kubectl describe sts` on either side shows
    /// that a migration runs, how far it is, and who holds its lease. Best effort and in the
    /// background, off the path of the move: an Event that cannot be written (a namespace not
    /// created yet) never stops it; [`Executor::recorded`] tells the failures. Not in a dry
    /// run, where no step is taken.
    pub fn record_step(&self, step: &Step, description: &str, rollback: bool) {
        if self.is_dry_run() {
            return;
        }
        let action = step.kind();
        let holder = &self.holder;
        let reason = if rollback {
            "MigrationRollbackStep"
        } else {
            "MigrationStep"
        };
        let note = format!(
            "{description} ({} -> {}; lease held by {holder})",
            self.names.source_context, self.names.destination_context
        );
        // The API server refuses notes over 1 kB.
        let note: String = note.chars().take(1000).collect();
        let writes = [Side::Source, Side::Destination].map(|side| {
            let namespace = self.location(side).namespace.clone();
            let event = json!({
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"generateName": format!("{}.migrate-", self.names.set)},
                "eventTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                    k8s_openapi::jiff::Timestamp::now()
                ),
                "reportingController": "kubectl-migrate.io/statefulset",
                "reportingInstance": holder.chars().take(128).collect::<String>(),
                "action": action,
                "reason": reason,
                "type": "Normal",
                "note": note,
                "regarding": {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "namespace": namespace,
                    "name": self.names.set,
                },
            });
            let api: Api<k8s_openapi::api::events::v1::Event> = self.namespaced(side);
            let cluster = self.cluster(side).clone();
            async move {
                let event: k8s_openapi::api::events::v1::Event = serde_json::from_value(event)
                    .map_err(|e| format!("building the Event: {e}"))?;
                cluster
                    .call(
                        "record an Event",
                        api.create(&PostParams::default(), &event),
                    )
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        });
        let [source, destination] = writes;
        let task = tokio::spawn(async move {
            let (a, b) = tokio::join!(source, destination);
            let failures: Vec<String> = [a, b].into_iter().filter_map(|r| r.err()).collect();
            (!failures.is_empty()).then(|| failures.join("; "))
        });
        self.recording
            .lock()
            .expect("no panics while holding it")
            .push(task);
    }

    /// The Events that could not be recorded (see [`Executor::record_step`]), of the writes
    /// finished so far; with `all`, of every write, waiting a little for the last ones.
    pub async fn recorded(&self, all: bool) -> Vec<String> {
        let tasks: Vec<_> = {
            let mut recording = self.recording.lock().expect("no panics while holding it");
            let (done, running) = std::mem::take(&mut *recording)
                .into_iter()
                .partition(|t| all || t.is_finished());
            *recording = running;
            done
        };
        // One deadline for them all: a cluster that stopped answering holds up the end once.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut failures = Vec::new();
        for task in tasks {
            match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(Some(failure))) => failures.push(failure),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => failures.push(e.to_string()),
                Err(_) => failures.push("no answer within 5 s".into()),
            }
        }
        failures
    }

    /// Performs `step`. The caller observed `observed` and `stored` just before deciding; what
    /// the step waits for goes to `notes`.
    pub async fn perform(
        &self,
        step: &Step,
        stored: Option<&Stored>,
        observed: &Observed,
        notes: &Notes,
    ) -> Result<()> {
        match step {
            Step::CreateNamespace => super::dependencies::create_namespace(self).await,
            Step::WriteJournal => self.write_journal(observed).await,
            Step::CopyObject { kind, name } => {
                super::dependencies::copy(self, stored, *kind, name).await
            }
            Step::DeleteCreated { kind, name } => {
                let kept = super::dependencies::delete_created(self, *kind, name).await?;
                if let Some(why) = kept {
                    let _ = notes.send(Note::Kept(why));
                }
                Ok(())
            }
            Step::DeleteNamespace => {
                let kept = super::dependencies::delete_namespace(self).await?;
                if let Some(why) = kept {
                    let _ = notes.send(Note::Kept(why));
                }
                Ok(())
            }
            Step::ProtectVolumes { side, volumes } => {
                if *side == Side::Source {
                    self.record_original_policies(stored, observed, volumes)
                        .await?;
                }
                for volume in volumes {
                    // The source's PVs keep their original policy in an annotation too.
                    let original = (*side == Side::Source)
                        .then(|| observed.source.volumes.get(volume))
                        .flatten()
                        .map(|v| v.reclaim_policy.as_str());
                    self.set_reclaim_policy_marked(*side, volume, "Retain", original)
                        .await?;
                }
                Ok(())
            }
            Step::HoldRetention => {
                let original = observed
                    .source
                    .set
                    .as_ref()
                    .map(|s| serde_json::to_string(&s.retention).unwrap_or_default());
                let patch = json!({
                    "metadata": {"annotations": {ORIGINAL_RETENTION_ANNOTATION: original}},
                    "spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Retain"}}});
                self.patch_set(
                    Side::Source,
                    "hold the PVC retention policy at Retain",
                    &patch,
                )
                .await
            }
            Step::CreateDestination => self.create_destination(stored, observed).await,
            Step::Resize {
                side,
                start,
                replicas,
            } => self.resize(*side, *start, *replicas, observed).await,
            Step::WaitPodsGone { side, ordinals } => {
                if self.is_dry_run() {
                    return Ok(());
                }
                self.wait_pods_gone(*side, ordinals, observed).await
            }
            Step::CopyClaim { to, claim, .. } => self.copy_claim(*to, claim, notes).await,
            Step::WaitReady { side, ordinals } => {
                if self.is_dry_run() {
                    return Ok(());
                }
                self.wait_ready(*side, ordinals, notes).await?;
                // With no health check to run, verifying is only recording: do it now and save
                // a round of observation per ordinal.
                if self.health_check.is_none() && !self.interrupt.is_set() {
                    self.verify(*side, ordinals, stored).await?;
                }
                Ok(())
            }
            Step::Verify { side, ordinals } => self.verify(*side, ordinals, stored).await,
            Step::SetBudget { side, name, spec } => {
                let original = stored
                    .and_then(|s| s.journal.budgets.iter().find(|b| &b.name == name))
                    .map(|b| &b.original);
                super::disruption::set(self, *side, name, spec.as_ref(), original).await
            }
            Step::MarkComplete => {
                self.update_journal(stored, "mark the migration complete", |j| j.complete = true)
                    .await
            }
            Step::DeleteCopy { claim, volume } => {
                self.delete_copy(claim.as_deref(), volume.as_deref()).await
            }
            Step::DeleteDestination => {
                let sets = self.sets(Side::Destination);
                self.delete_until_gone(Side::Destination, "StatefulSet", &sets, &self.names.set)
                    .await
            }
            Step::RestoreRetention => {
                let Some(stored) = stored else {
                    return Err(Error::Failed {
                        message: "the journal is needed to restore the retention policy".into(),
                    });
                };
                self.restore_retention(Side::Source, &stored.journal.original_retention)
                    .await
            }
            Step::RestoreVolume { volume, policy } => {
                self.set_reclaim_policy_marked(Side::Source, volume, policy, None)
                    .await
            }
            Step::DeleteJournal => self.delete_journal().await,
            Step::Done => Ok(()),
            Step::Stop { reason } => Err(Error::Failed {
                message: reason.clone(),
            }),
        }
    }

    /// The journal a run starts with, from what the source shows now.
    fn new_journal(
        &self,
        observed: &Observed,
        created: Vec<ObjectRef>,
        budgets: Vec<RecordedBudget>,
    ) -> Result<Journal> {
        let set = observed.source.set.as_ref().ok_or_else(|| Error::Failed {
            message: format!(
                "the source StatefulSet {} does not exist; there is nothing to record",
                self.names.set
            ),
        })?;
        Ok(Journal {
            name: self.names.set.clone(),
            source_context: self.source.context.clone(),
            source_server: self.source.server.clone(),
            source_namespace: self.source_at.namespace.clone(),
            source_uid: set.uid.clone(),
            destination_namespace: self.destination_at.namespace.clone(),
            replicas: set.replicas,
            start: set.start,
            claim_templates: set.claim_templates.clone(),
            original_reclaim_policies: observed
                .source
                .volumes
                .iter()
                .map(|(n, v)| (n.clone(), v.reclaim_policy.clone()))
                .collect(),
            original_retention: set.retention.clone(),
            direction: Direction::Forward,
            verified_bound: set.start + set.replicas,
            complete: false,
            cleaned_up: false,
            health_check: self.health_check.clone(),
            created,
            budgets,
            volumes: self.volumes,
        })
    }

    async fn write_journal(&self, observed: &Observed) -> Result<()> {
        // A namespace this run created carries our label; a dry run has not created it.
        let created = if !self.is_dry_run() && super::dependencies::namespace_is_ours(self).await? {
            vec![ObjectRef {
                kind: ObjectKind::Namespace,
                name: self.destination_at.namespace.clone(),
            }]
        } else {
            vec![]
        };
        let budgets = super::disruption::selecting(self).await?;
        let journal = self.new_journal(observed, created, budgets)?;
        self.create_journal(&journal, "write the migration journal")
            .await?;
        Ok(())
    }

    /// Creates the journal ConfigMap; `AlreadyDone` if one exists (never overwritten).
    pub(super) async fn create_journal(&self, journal: &Journal, action: &str) -> Result<Written> {
        let namespace = &self.destination_at.namespace;
        let api = self.namespaced(Side::Destination);
        let cm = journal::config_map(journal, namespace, None);
        self.write(
            Side::Destination,
            action,
            self.noting_journal(api.create(&self.post_params(), &cm)),
            Some(409),
        )
        .await
    }

    /// Replaces the journal with `change` applied, failing with a conflict if someone else
    /// changed it since `stored` was read.
    pub async fn update_journal(
        &self,
        stored: Option<&Stored>,
        action: &str,
        change: impl FnOnce(&mut Journal),
    ) -> Result<()> {
        let Some(stored) = stored else {
            if self.is_dry_run() {
                self.not_checked(
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
        let namespace = &self.destination_at.namespace;
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> = self.namespaced(Side::Destination);
        let cm = journal::config_map(&journal, namespace, Some(stored.resource_version.clone()));
        let name = journal::object_name(&journal.name);
        let params = self.post_params();
        let replace = self.noting_journal(api.replace(&name, &params, &cm));
        let result = self.write(Side::Destination, action, replace, None).await;
        match result {
            // Someone (or an earlier attempt of ours) wrote it since we read it: decide again.
            Err(e) if e.http_status() == Some(409) => Err(Error::Conflict(
                "the migration journal changed since it was read".into(),
            )),
            other => other.map(|_| ()),
        }
    }

    /// [`Executor::update_journal`] on the journal as it is now.
    pub async fn update_journal_fresh(
        &self,
        action: &str,
        change: impl FnOnce(&mut Journal),
    ) -> Result<()> {
        let stored = journal::load(
            &self.destination,
            &self.destination_at.namespace,
            &self.names.set,
        )
        .await?;
        self.update_journal(stored.as_ref(), action, change).await
    }

    async fn delete_journal(&self) -> Result<()> {
        self.wrote_journal(None);
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> = self.namespaced(Side::Destination);
        self.write(
            Side::Destination,
            "delete the migration journal",
            api.delete(
                &journal::object_name(&self.names.set),
                &self.delete_params(),
            ),
            Some(404),
        )
        .await?;
        Ok(())
    }

    /// The original policy must be in the journal before the PV is changed, or it is lost.
    async fn record_original_policies(
        &self,
        stored: Option<&Stored>,
        observed: &Observed,
        volumes: &[String],
    ) -> Result<()> {
        let Some(stored) = stored else { return Ok(()) };
        let missing: Vec<&String> = volumes
            .iter()
            .filter(|v| !stored.journal.original_reclaim_policies.contains_key(*v))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        self.update_journal(Some(stored), "record the original reclaim policies", |j| {
            for volume in missing {
                let policy = observed
                    .source
                    .volumes
                    .get(volume)
                    .map(|v| v.reclaim_policy.clone());
                j.original_reclaim_policies
                    .insert(volume.clone(), policy.unwrap_or_else(|| "Delete".into()));
            }
        })
        .await
    }

    pub async fn set_reclaim_policy(&self, side: Side, volume: &str, policy: &str) -> Result<()> {
        let patch = json!({"spec": {"persistentVolumeReclaimPolicy": policy}});
        self.patch_volume(side, volume, policy, &patch).await
    }

    /// Sets a PV's policy and its original-policy annotation (`None` removes it) at once.
    async fn set_reclaim_policy_marked(
        &self,
        side: Side,
        volume: &str,
        policy: &str,
        original: Option<&str>,
    ) -> Result<()> {
        let patch = json!({
            "metadata": {"annotations": {ORIGINAL_POLICY_ANNOTATION: original}},
            "spec": {"persistentVolumeReclaimPolicy": policy}});
        self.patch_volume(side, volume, policy, &patch).await
    }

    async fn patch_volume(
        &self,
        side: Side,
        volume: &str,
        policy: &str,
        patch: &serde_json::Value,
    ) -> Result<()> {
        self.write(
            side,
            &format!("set the reclaim policy of PV {volume} to {policy}"),
            self.volumes(side)
                .patch(volume, &self.merge_params(), &Patch::Merge(patch)),
            None,
        )
        .await?;
        Ok(())
    }

    /// Gives the set on `side` the PVC retention policy it (or the source) had.
    pub(super) async fn restore_retention(&self, side: Side, original: &Retention) -> Result<()> {
        let patch = json!({
            "metadata": {"annotations": {ORIGINAL_RETENTION_ANNOTATION: null}},
            "spec": {"persistentVolumeClaimRetentionPolicy": {
                "whenScaled": original.when_scaled, "whenDeleted": original.when_deleted}}});
        self.patch_set(side, "restore the PVC retention policy", &patch)
            .await
    }

    async fn patch_set(&self, side: Side, action: &str, patch: &serde_json::Value) -> Result<()> {
        self.write(
            side,
            &format!("{action} (StatefulSet {})", self.names.set),
            self.sets(side)
                .patch(&self.names.set, &self.merge_params(), &Patch::Merge(patch)),
            None,
        )
        .await?;
        Ok(())
    }

    async fn create_destination(&self, stored: Option<&Stored>, observed: &Observed) -> Result<()> {
        // The end of the source's range: recorded in the journal, or (in a dry run before the
        // journal exists) as the source shows it now.
        let end = match (stored, &observed.source.set) {
            (Some(s), _) => s.journal.end(),
            (None, Some(set)) if self.is_dry_run() => set.start + set.replicas,
            (None, _) => {
                return Err(Error::Failed {
                    message: "the journal is needed to create the destination".into(),
                });
            }
        };
        let source = self
            .source
            .call(
                "read the source StatefulSet",
                self.sets(Side::Source).get(&self.names.set),
            )
            .await?;
        let origin = format!(
            "{}/{}/{}",
            self.source.context, self.source_at.namespace, self.names.set
        );
        let set = destination_set(
            &source,
            &self.destination_at.namespace,
            end,
            &self.class_map,
            &self.destination_at.copy_label,
            &origin,
        );
        // Already there: the next observation checks that it is ours.
        self.write(
            Side::Destination,
            "create the destination StatefulSet",
            self.sets(Side::Destination)
                .create(&self.post_params(), &set),
            Some(409),
        )
        .await?;
        Ok(())
    }

    async fn resize(
        &self,
        side: Side,
        start: i32,
        replicas: i32,
        observed: &Observed,
    ) -> Result<()> {
        let action = format!(
            "set StatefulSet {} to ordinals.start={start}, replicas={replicas}",
            self.names.set
        );
        let Some(set) = observed.side(side).set.as_ref() else {
            if self.is_dry_run() {
                self.not_checked(
                    side,
                    &action,
                    "the StatefulSet is created by an earlier write of the plan",
                );
                return Ok(());
            }
            return Err(Error::Failed {
                message: format!(
                    "StatefulSet {} does not exist in {}",
                    self.names.set,
                    self.names.context(side)
                ),
            });
        };
        // Moving ordinals into one cluster: re-check right before the write that none of them runs
        // in the other cluster, so a change since the observation cannot cause split brain.
        let current_end = set.start + if set.replicas > 0 { set.replicas } else { 0 };
        let arriving: Vec<i32> = match side {
            Side::Destination => (start..set.start.min(start + replicas)).collect(),
            Side::Source => (current_end..start + replicas).collect(),
        };
        if !arriving.is_empty() && !self.is_dry_run() {
            let other = side.other();
            // Live reads (a GET goes to etcd), never the watch caches.
            let names: Vec<String> = arriving
                .iter()
                .map(|k| pod_name(&self.names.set, *k))
                .collect();
            let pods = self.pods(other);
            let found = futures::future::try_join_all(
                names
                    .iter()
                    .map(|n| self.cluster(other).call("read a pod", pods.get_opt(n))),
            )
            .await?;
            for (name, pod) in names.iter().zip(found) {
                if pod.is_some() {
                    return Err(Error::Failed {
                        message: format!(
                            "pod {name} appeared in {} just before it was to start in {}; not starting it",
                            self.names.context(other),
                            self.names.context(side)
                        ),
                    });
                }
            }
        }
        // One request for start and replicas, conditional on the version we decided on. A
        // start that stays is left out, so a set without spec.ordinals never gains one.
        let patch = if start == set.start {
            json!({
                "metadata": {"resourceVersion": set.resource_version},
                "spec": {"replicas": replicas}
            })
        } else {
            json!({
                "metadata": {"resourceVersion": set.resource_version},
                "spec": {"replicas": replicas, "ordinals": {"start": start}}
            })
        };
        let result = self
            .write(
                side,
                &action,
                self.sets(side)
                    .patch(&self.names.set, &self.merge_params(), &Patch::Merge(&patch)),
                None,
            )
            .await;
        match result {
            Err(e) if e.http_status() == Some(409) => Err(Error::Conflict(format!(
                "StatefulSet {} changed while this step was decided",
                self.names.set
            ))),
            other => other.map(|_| ()),
        }
    }

    /// Waits until `holds` is true of object `name` of `api`: on the reconciler's watch
    /// caches (`cached` finds it there) while it runs, else on a watch of its own.
    async fn until<K>(
        &self,
        api: &Api<K>,
        name: &str,
        cached: impl Fn(&Watched) -> Option<Arc<K>>,
        holds: impl kube::runtime::wait::Condition<K>,
    ) -> std::result::Result<(), kube::runtime::wait::Error>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        match self.watched() {
            Some(w) => {
                w.until(|w| holds.matches_object(cached(w).as_deref()))
                    .await;
                Ok(())
            }
            None => await_condition(api.clone(), name, holds).await.map(|_| ()),
        }
    }

    /// Runs `fut` under --timeout, ending early on Ctrl-C.
    async fn bounded<T>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T>>,
    ) -> Result<Option<T>> {
        tokio::select! {
            r = tokio::time::timeout(self.timeout, fut) => match r {
                Ok(r) => r.map(Some),
                Err(_) => Err(Error::Failed { message: format!("timed out after {} (--timeout) waiting for {what}; rerun to keep waiting", humanize(self.timeout)) }),
            },
            _ = self.interrupt.wait() => Ok(None),
        }
    }

    async fn wait_pods_gone(
        &self,
        side: Side,
        ordinals: &[i32],
        observed: &Observed,
    ) -> Result<()> {
        let view = observed.side(side);
        let what = format!(
            "pod(s) {ordinals:?} to be gone from {}",
            self.names.context(side)
        );
        let api = self.pods(side);
        self.bounded(&what, async {
            for k in ordinals {
                let Some(pod) = view.pods.get(k) else {
                    continue;
                };
                self.until(
                    &api,
                    &pod.name,
                    |w| w.pod(side, &pod.name),
                    conditions::is_deleted(&pod.uid),
                )
                .await
                .map_err(|e| Error::Failed {
                    message: format!("watching pod {}: {e}", pod.name),
                })?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn wait_ready(&self, side: Side, ordinals: &[i32], notes: &Notes) -> Result<()> {
        let what = format!(
            "pod(s) {ordinals:?} to be Ready in {}",
            self.names.context(side)
        );
        let sets = self.sets(side);
        let pods = self.pods(side);
        let events: Api<Event> = self.namespaced(side);
        let name = self.names.set.clone();
        // The pod waited for and why it is not Ready; a poll adds its latest warning event.
        let waiting = Mutex::new(Waiting::default());
        let told = Mutex::new(None::<String>);
        // Each new thing the pod says is told once.
        let tell = |w: &Waiting| {
            let Some(text) = w.text() else { return };
            let mut told = told.lock().expect("no panics while holding it");
            if told.as_ref() != Some(&text) {
                *told = Some(text.clone());
                let _ = notes.send(Note::Waiting {
                    pod: w.pod.clone(),
                    reason: text,
                });
            }
        };
        let pods_ready = async {
            for k in ordinals {
                let pod = pod_name(&name, *k);
                self.until(
                    &pods,
                    &pod,
                    |w| w.pod(side, &pod),
                    |p: Option<&Pod>| {
                        let reason = match p {
                            None => Some("not created yet".to_string()),
                            Some(p) if p.metadata.deletion_timestamp.is_some() => {
                                Some("Terminating".to_string())
                            }
                            Some(p) => super::observe::pod_view(p).not_ready,
                        };
                        let uid = p.and_then(|p| p.metadata.uid.clone()).unwrap_or_default();
                        let mut w = waiting.lock().expect("no panics while holding it");
                        if w.pod != pod || w.uid != uid {
                            // Another pod: its own events, not the last one's.
                            *w = Waiting {
                                pod: pod.clone(),
                                uid,
                                ..Waiting::default()
                            };
                        }
                        w.reason = reason;
                        tell(&w);
                        w.reason.is_none()
                    },
                )
                .await
                .map_err(|e| Error::Failed {
                    message: format!("watching pod {pod}: {e}"),
                })?;
            }
            // minReadySeconds: the controller counts a pod available only after that long.
            self.until(
                &sets,
                &name,
                |w| w.set(side),
                |s: Option<&StatefulSet>| {
                    s.is_some_and(|s| {
                        let v = super::observe::set_view(s);
                        v.observed_generation >= v.generation && v.available_replicas >= v.replicas
                    })
                },
            )
            .await
            .map_err(|e| Error::Failed {
                message: format!("watching StatefulSet {name}: {e}"),
            })?;
            Ok(())
        };
        // Events are polled, not watched: only a pod that keeps us waiting is worth the reads.
        let warnings = async {
            loop {
                tokio::time::sleep(WARNING_POLL).await;
                let (pod, uid, said) = {
                    let w = waiting.lock().expect("no panics while holding it");
                    (
                        w.pod.clone(),
                        w.uid.clone(),
                        w.reason.clone().unwrap_or_default(),
                    )
                };
                if uid.is_empty() {
                    continue;
                }
                let latest = super::observe::pod_warnings(&events, &pod, &uid, &said)
                    .await
                    .into_iter()
                    .next();
                let mut w = waiting.lock().expect("no panics while holding it");
                if w.uid == uid && w.warning != latest {
                    w.warning = latest;
                    tell(&w);
                }
            }
        };
        let waited = self
            .bounded(&what, async {
                tokio::select! {
                    r = pods_ready => r,
                    never = warnings => never,
                }
            })
            .await;
        let last = waiting.into_inner().expect("no panics while holding it");
        match waited {
            // Say why the pod is not Ready, not only that time ran out: its state and the
            // latest warnings about it (a failed mount or image pull, the scheduler's verdicts).
            Err(Error::Failed { message }) if last.reason.is_some() => {
                let reason = last.reason.clone().unwrap_or_default();
                let mut message = format!("{message}\n{}: {reason}", last.pod);
                if !last.uid.is_empty() {
                    let warnings =
                        super::observe::pod_warnings(&events, &last.pod, &last.uid, &reason).await;
                    for w in warnings {
                        message.push_str(&format!("\n{} warning: {w}", last.pod));
                    }
                }
                Err(Error::Failed { message })
            }
            waited => waited.map(|_| ()),
        }
    }

    async fn verify(&self, side: Side, ordinals: &[i32], stored: Option<&Stored>) -> Result<()> {
        if let Some(command) = &self.health_check
            && !self.is_dry_run()
        {
            for k in ordinals {
                self.health_check(command, side, *k).await?;
            }
        }
        self.update_journal(
            stored,
            &format!("record ordinal(s) {ordinals:?} as verified"),
            |j| j.verified_bound = verified_bound_after(j.direction, ordinals, j.verified_bound),
        )
        .await
    }

    async fn health_check(&self, command: &str, side: Side, k: i32) -> Result<()> {
        let status = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("ORDINAL", k.to_string())
            .env("POD", pod_name(&self.names.set, k))
            .env("NAMESPACE", &self.location(side).namespace)
            .env("CONTEXT", self.names.context(side))
            // stdout carries our data (-o json); the check's output goes to stderr.
            .stdout(std::process::Stdio::from(std::io::stderr()))
            .stdin(std::process::Stdio::null())
            .status()
            .await
            .map_err(|source| Error::Io {
                what: format!("run the health check `{command}`"),
                source,
            })?;
        // The terminal's Ctrl-C reaches the check too; our own flag may not be set yet.
        let interrupted = std::os::unix::process::ExitStatusExt::signal(&status) == Some(2);
        if !status.success() && (interrupted || self.interrupt.is_set()) {
            return Err(Error::Cancelled(format!(
                "interrupted (Ctrl-C) during the health check of ordinal {k}"
            )));
        }
        if !status.success() {
            return Err(Error::Failed {
                message: format!(
                    "health check `{command}` failed for ordinal {k} in {} ({status}); the migration stopped with ordinal {k} running in {}",
                    self.names.context(side),
                    self.names.context(side)
                ),
            });
        }
        Ok(())
    }

    async fn copy_claim(&self, to: Side, claim: &str, notes: &Notes) -> Result<()> {
        let from = to.other();
        // The source's claim and PV do not change during a move (their protection is shown
        // in the caches before a move starts): read from the caches when the loop has them.
        let cached = self.watched();
        let original = match cached.as_ref().and_then(|w| w.claim(from, claim)) {
            Some(c) => (*c).clone(),
            None => {
                self.cluster(from)
                    .call(&format!("read PVC {claim}"), self.claims(from).get(claim))
                    .await?
            }
        };
        let volume_name = original
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .ok_or_else(|| Error::Failed {
                message: format!(
                    "PVC {claim} in {} is not bound to a PV; nothing to move",
                    self.names.context(from)
                ),
            })?;
        let volume = match cached.as_ref().and_then(|w| w.volume(from, &volume_name)) {
            Some(v) => (*v).clone(),
            None => {
                self.cluster(from)
                    .call(
                        &format!("read PV {volume_name}"),
                        self.volumes(from).get(&volume_name),
                    )
                    .await?
            }
        };
        let at = self.location(to);
        let origin = format!("{}/{}", self.names.context(from), volume_name);
        let volume_copy = copy_volume(
            &volume,
            &at.namespace,
            claim,
            &self.class_map,
            &at.copy_label,
            &origin,
        );
        let created = self
            .write(
                to,
                &format!("copy PV {volume_name}"),
                self.volumes(to).create(&self.post_params(), &volume_copy),
                Some(409),
            )
            .await?;
        if created == Written::AlreadyDone {
            // Fine if it is the copy a crashed run already made; anything else is not ours.
            let existing = self
                .cluster(to)
                .call("read PV", self.volumes(to).get(&volume_name))
                .await?;
            let reserved = existing
                .spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .map(|r| (r.namespace.clone(), r.name.clone()));
            if reserved != Some((Some(at.namespace.clone()), Some(claim.to_string()))) {
                return Err(Error::Failed {
                    message: format!(
                        "PV {volume_name} already exists in {} and belongs to something else; not overwriting it",
                        self.names.context(to)
                    ),
                });
            }
        }
        let claim_copy = copy_claim(
            &original,
            &at.namespace,
            &self.class_map,
            &at.copy_label,
            &format!("{}/{}", self.names.context(from), claim),
        );
        self.write(
            to,
            &format!("copy PVC {claim}"),
            self.claims(to).create(&self.post_params(), &claim_copy),
            Some(409),
        )
        .await?;
        if self.is_dry_run() {
            return Ok(());
        }
        // A pod whose claim is not bound yet is unschedulable, and the scheduler tries it again
        // only after a backoff: the copy is done when the PV controller has bound the pair.
        let what = format!("PVC {claim} to be bound in {}", self.names.context(to));
        let waiting = std::time::Instant::now();
        self.bounded(&what, async {
            let bound = |c: Option<&PersistentVolumeClaim>| {
                c.and_then(|c| c.status.as_ref())
                    .and_then(|s| s.phase.as_deref())
                    == Some("Bound")
            };
            self.until(&self.claims(to), claim, |w| w.claim(to, claim), bound)
                .await
                .map_err(|e| Error::Failed {
                    message: format!("watching PVC {claim}: {e}"),
                })
        })
        .await?;
        let _ = notes.send(Note::Waited(waiting.elapsed()));
        Ok(())
    }

    async fn delete_copy(&self, claim: Option<&str>, volume: Option<&str>) -> Result<()> {
        let dest = Side::Destination;
        if let Some(claim) = claim {
            self.delete_until_gone(dest, "PVC", &self.claims(dest), claim)
                .await?;
        }
        if let Some(volume) = volume {
            self.delete_retained_volume(dest, volume).await?;
        }
        Ok(())
    }

    /// Deletes the PV object `volume` on `side`, only if its reclaim policy keeps the storage.
    pub async fn delete_retained_volume(&self, side: Side, volume: &str) -> Result<()> {
        let cluster = self.cluster(side);
        let pv = cluster
            .call(
                &format!("read PV {volume}"),
                self.volumes(side).get_opt(volume),
            )
            .await?;
        let Some(pv) = pv else { return Ok(()) };
        let policy = pv
            .spec
            .and_then(|s| s.persistent_volume_reclaim_policy)
            .unwrap_or_default();
        if policy != "Retain" {
            return Err(Error::Failed {
                message: format!(
                    "PV {volume} in {} has reclaim policy {policy}; refusing to delete it",
                    cluster.context
                ),
            });
        }
        self.delete_until_gone(side, "PV", &self.volumes(side), volume)
            .await
    }

    /// Deletes `name` (the object as read now: a uid precondition) and waits until it is gone,
    /// so that the next observation cannot see it again and delete it twice. Gone already is
    /// fine; an object replaced since the read is a conflict (decide again).
    pub async fn delete_until_gone<K>(
        &self,
        side: Side,
        what: &str,
        api: &Api<K>,
        name: &str,
    ) -> Result<()>
    where
        K: kube::Resource
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let cluster = self.cluster(side);
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
        self.bounded(&format!("{what} {name} to be gone"), async {
            await_condition(api.clone(), name, conditions::is_deleted(&uid))
                .await
                .map_err(|e| Error::Failed {
                    message: format!("watching {what} {name}: {e}"),
                })
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_pod_is_told_with_its_latest_warning_until_it_is_ready() {
        let mut w = Waiting {
            pod: "web-0".into(),
            uid: "u".into(),
            reason: Some("Pending, not scheduled: Unschedulable".into()),
            warning: None,
        };
        assert_eq!(
            w.text().as_deref(),
            Some("Pending, not scheduled: Unschedulable")
        );
        w.warning = Some("FailedScheduling: 0/3 nodes are available (2 times)".into());
        assert_eq!(
            w.text().as_deref(),
            Some(
                "Pending, not scheduled: Unschedulable; latest warning: FailedScheduling: 0/3 nodes are available (2 times)"
            )
        );
        w.reason = None;
        assert_eq!(w.text(), None, "a Ready pod is not waited for");
    }
}
