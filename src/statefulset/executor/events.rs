//! Each finished step as a Kubernetes Event (events.k8s.io/v1) on the StatefulSet in both
//! clusters, so that `kubectl events` or `kubectl describe sts` on either side shows that a
//! migration runs, how far it is, and who holds its lease. Best effort and in the background,
//! off the path of the move: an Event that cannot be written (a namespace not created yet) never
//! stops it; [`StepEvents::unrecorded`] tells the failures.
use crate::sync;
use std::sync::Mutex;
use std::time::Duration;

use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::writer::Writer;
use crate::statefulset::model::Side;
use crate::statefulset::step::Step;

pub struct StepEvents {
    /// This process as the lease holder, named in each Event.
    holder: String,
    /// The Event writes of finished steps, in the background; each says why it failed.
    recording: Mutex<Vec<tokio::task::JoinHandle<Option<String>>>>,
}

impl StepEvents {
    pub fn new(holder: String) -> StepEvents {
        StepEvents {
            holder,
            recording: Mutex::default(),
        }
    }

    /// Records `step`, finished, in both clusters. Not in a dry run, where no step is taken.
    /// `uids` are the sets' on each side, as observed: `kubectl describe sts` lists only the
    /// Events whose `regarding` carries the set's uid.
    pub fn record(
        &self,
        w: &Writer,
        step: &Step,
        description: &str,
        rollback: bool,
        uids: [Option<String>; 2],
    ) {
        if w.is_dry_run() {
            return;
        }
        let sides = &w.sides;
        let names = &sides.names;
        let action = step.kind();
        let holder = &self.holder;
        let reason = if rollback {
            "MigrationRollbackStep"
        } else {
            "MigrationStep"
        };
        let note = format!(
            "{description} ({} -> {}; lease held by {holder})",
            names.source_context, names.destination_context
        );
        // The API server refuses notes over 1 kB.
        let note: String = note.chars().take(1000).collect();
        let [source_uid, destination_uid] = uids;
        let writes = [
            (Side::Source, source_uid),
            (Side::Destination, destination_uid),
        ]
        .map(|(side, uid)| {
            let namespace = sides.location(side).namespace.clone();
            let event = json!({
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"generateName": format!("{}.migrate-", names.set)},
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
                    "name": names.set,
                    "uid": uid,
                },
            });
            let api: Api<k8s_openapi::api::events::v1::Event> = sides.namespaced(side);
            let cluster = sides.cluster(side).clone();
            let held = w.held();
            async move {
                let event: k8s_openapi::api::events::v1::Event = serde_json::from_value(event)
                    .map_err(|e| format!("building the Event: {e}"))?;
                // An Event is a write like any other: a run that lost its lease (stopped past
                // it, cut off) no longer speaks for the migration.
                if let Some(held) = held {
                    held.ensure().await.map_err(|e| {
                        format!("not recorded, as this run no longer holds the lease: {e}")
                    })?;
                }
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
        sync::lock(&self.recording).push(task);
    }

    /// The Events that could not be recorded, of the writes finished so far; with `all`, of
    /// every write, waiting a little for the last ones.
    pub async fn unrecorded(&self, all: bool) -> Vec<String> {
        let tasks: Vec<_> = {
            let mut recording = sync::lock(&self.recording);
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
}
