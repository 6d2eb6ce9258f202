//! Performs one reconciler step, idempotently: creates tolerate "already exists", patches carry
//! resourceVersion preconditions, waits use watches and give up after --timeout.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use tokio::sync::Notify;

use super::copy::{copy_claim, copy_volume, destination_set};
use super::decide::{Step, verified_bound_after};
use super::journal::{self, Stored};
use super::model::{Direction, Journal, Observed, Side, pod_name};
use super::observe::Location;
use super::plan::Names;
use crate::cluster::{Cluster, is_status};
use crate::error::{Error, Result, humanize};

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
    async fn wait(&self) {
        let notified = self.notify.notified();
        if self.is_set() {
            return;
        }
        notified.await;
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
    pub interrupt: Interrupt,
}

fn merge() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

fn post() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

impl Executor {
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
    fn sets(&self, side: Side) -> Api<StatefulSet> {
        Api::namespaced(
            self.cluster(side).client.clone(),
            &self.location(side).namespace,
        )
    }
    fn pods(&self, side: Side) -> Api<Pod> {
        Api::namespaced(
            self.cluster(side).client.clone(),
            &self.location(side).namespace,
        )
    }
    fn claims(&self, side: Side) -> Api<PersistentVolumeClaim> {
        Api::namespaced(
            self.cluster(side).client.clone(),
            &self.location(side).namespace,
        )
    }
    fn volumes(&self, side: Side) -> Api<PersistentVolume> {
        Api::all(self.cluster(side).client.clone())
    }

    /// Performs `step`. The caller observed `observed` and `stored` just before deciding.
    pub async fn perform(
        &self,
        step: &Step,
        stored: Option<&Stored>,
        observed: &Observed,
    ) -> Result<()> {
        match step {
            Step::WriteJournal => self.write_journal(observed).await,
            Step::ProtectVolumes { side, volumes } => {
                if *side == Side::Source {
                    self.record_original_policies(stored, observed, volumes)
                        .await?;
                }
                for volume in volumes {
                    self.set_reclaim_policy(*side, volume, "Retain").await?;
                }
                Ok(())
            }
            Step::HoldRetention => {
                let patch = json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Retain"}}});
                self.patch_set(Side::Source, &patch).await
            }
            Step::CreateDestination => self.create_destination(stored).await,
            Step::Resize {
                side,
                start,
                replicas,
            } => self.resize(*side, *start, *replicas, observed).await,
            Step::WaitPodsGone { side, ordinals } => {
                self.wait_pods_gone(*side, ordinals, observed).await
            }
            Step::CopyClaim { to, claim, .. } => self.copy_claim(*to, claim).await,
            Step::WaitReady { side, ordinals } => {
                self.wait_ready(*side, ordinals).await?;
                // With no health check to run, verifying is only recording: do it now and save
                // a round of observation per ordinal.
                if self.health_check.is_none() && !self.interrupt.is_set() {
                    self.verify(*side, ordinals, stored).await?;
                }
                Ok(())
            }
            Step::Verify { side, ordinals } => self.verify(*side, ordinals, stored).await,
            Step::MarkComplete => self.update_journal(stored, |j| j.complete = true).await,
            Step::DeleteCopy { claim, volume } => {
                self.delete_copy(claim.as_deref(), volume.as_deref()).await
            }
            Step::DeleteDestination => {
                let result = self
                    .sets(Side::Destination)
                    .delete(&self.names.set, &DeleteParams::default())
                    .await;
                self.destination
                    .already_done("delete the destination StatefulSet", result, 404)
            }
            Step::RestoreRetention => {
                let j = &stored.expect("journal exists when restoring").journal;
                let patch = json!({"spec": {"persistentVolumeClaimRetentionPolicy": {
                    "whenScaled": j.original_retention.when_scaled, "whenDeleted": j.original_retention.when_deleted}}});
                self.patch_set(Side::Source, &patch).await
            }
            Step::RestoreVolume { volume, policy } => {
                self.set_reclaim_policy(Side::Source, volume, policy).await
            }
            Step::DeleteJournal => {
                journal::delete(
                    &self.destination,
                    &self.destination_at.namespace,
                    &self.names.set,
                )
                .await
            }
            Step::Done => Ok(()),
            Step::Stop { reason } => Err(Error::Failed {
                message: reason.clone(),
            }),
        }
    }

    async fn write_journal(&self, observed: &Observed) -> Result<()> {
        let set = observed
            .source
            .set
            .as_ref()
            .expect("decide writes the journal only when the source exists");
        let journal = Journal {
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
        };
        match journal::create(&self.destination, &self.destination_at.namespace, &journal).await {
            Err(Error::Cluster {
                source: Some(e), ..
            }) if is_status(&e, 409) => Ok(()),
            other => other,
        }
    }

    async fn update_journal(
        &self,
        stored: Option<&Stored>,
        change: impl FnOnce(&mut Journal),
    ) -> Result<()> {
        let stored = stored.expect("a journal exists for this step");
        let mut journal = stored.journal.clone();
        change(&mut journal);
        journal::update(
            &self.destination,
            &self.destination_at.namespace,
            stored,
            &journal,
        )
        .await
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
        self.update_journal(Some(stored), |j| {
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

    async fn set_reclaim_policy(&self, side: Side, volume: &str, policy: &str) -> Result<()> {
        let patch = json!({"spec": {"persistentVolumeReclaimPolicy": policy}});
        self.cluster(side)
            .call(
                &format!("set the reclaim policy of PV {volume}"),
                self.volumes(side)
                    .patch(volume, &merge(), &Patch::Merge(&patch)),
            )
            .await?;
        Ok(())
    }

    async fn patch_set(&self, side: Side, patch: &serde_json::Value) -> Result<()> {
        let what = format!("patch StatefulSet {}", self.names.set);
        self.cluster(side)
            .call(
                &what,
                self.sets(side)
                    .patch(&self.names.set, &merge(), &Patch::Merge(patch)),
            )
            .await?;
        Ok(())
    }

    async fn create_destination(&self, stored: Option<&Stored>) -> Result<()> {
        let journal = &stored.expect("journal exists").journal;
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
            journal.end(),
            &self.class_map,
            &self.destination_at.copy_label,
            &origin,
        );
        let result = self.sets(Side::Destination).create(&post(), &set).await;
        // Already there: the next observation checks that it is ours.
        self.destination
            .already_done("create the destination StatefulSet", result, 409)
    }

    async fn resize(
        &self,
        side: Side,
        start: i32,
        replicas: i32,
        observed: &Observed,
    ) -> Result<()> {
        let set = observed
            .side(side)
            .set
            .as_ref()
            .expect("decide resizes existing sets only");
        // Moving ordinals into one cluster: re-check right before the write that none of them runs
        // in the other cluster, so a change since the observation cannot cause split brain.
        let current_end = set.start + if set.replicas > 0 { set.replicas } else { 0 };
        let arriving: Vec<i32> = match side {
            Side::Destination => (start..set.start.min(start + replicas)).collect(),
            Side::Source => (current_end..start + replicas).collect(),
        };
        if !arriving.is_empty() {
            let other = side.other();
            let pods = self
                .cluster(other)
                .call("list pods", self.pods(other).list(&Default::default()))
                .await?;
            for k in &arriving {
                let name = pod_name(&self.names.set, *k);
                if pods
                    .items
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
                {
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
        // One request for start and replicas, conditional on the version we decided on.
        let patch = json!({
            "metadata": {"resourceVersion": set.resource_version},
            "spec": {"replicas": replicas, "ordinals": {"start": start}}
        });
        let result = self
            .sets(side)
            .patch(&self.names.set, &merge(), &Patch::Merge(&patch))
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 409) => Err(Error::Conflict(format!(
                "StatefulSet {} changed while this step was decided",
                self.names.set
            ))),
            Err(e) => self.cluster(side).fail("resize the StatefulSet", e),
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
                await_condition(api.clone(), &pod.name, conditions::is_deleted(&pod.uid))
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

    async fn wait_ready(&self, side: Side, ordinals: &[i32]) -> Result<()> {
        let what = format!(
            "pod(s) {ordinals:?} to be Ready in {}",
            self.names.context(side)
        );
        let sets = self.sets(side);
        let pods = self.pods(side);
        let name = self.names.set.clone();
        self.bounded(&what, async {
            for k in ordinals {
                let pod = pod_name(&name, *k);
                await_condition(pods.clone(), &pod, |p: Option<&Pod>| {
                    p.is_some_and(|p| {
                        p.metadata.deletion_timestamp.is_none() && super::observe::pod_view(p).ready
                    })
                })
                .await
                .map_err(|e| Error::Failed {
                    message: format!("watching pod {pod}: {e}"),
                })?;
            }
            // minReadySeconds: the controller counts a pod available only after that long.
            await_condition(sets.clone(), &name, |s: Option<&StatefulSet>| {
                s.is_some_and(|s| {
                    let v = super::observe::set_view(s);
                    v.observed_generation >= v.generation && v.available_replicas >= v.replicas
                })
            })
            .await
            .map_err(|e| Error::Failed {
                message: format!("watching StatefulSet {name}: {e}"),
            })?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn verify(&self, side: Side, ordinals: &[i32], stored: Option<&Stored>) -> Result<()> {
        if let Some(command) = &self.health_check {
            for k in ordinals {
                let status = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .env("ORDINAL", k.to_string())
                    .env("POD", pod_name(&self.names.set, *k))
                    .env("NAMESPACE", &self.location(side).namespace)
                    .env("CONTEXT", self.names.context(side))
                    // stdout carries our data (-o json); the check's output goes to stderr.
                    .stdout(std::process::Stdio::from(
                        std::io::stderr().as_fd().try_clone_to_owned()?,
                    ))
                    .stdin(std::process::Stdio::null())
                    .status()
                    .await
                    .map_err(|e| Error::Failed {
                        message: format!("cannot run the health check `{command}`: {e}"),
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
            }
        }
        self.update_journal(stored, |j| {
            j.verified_bound = verified_bound_after(j.direction, ordinals, j.verified_bound)
        })
        .await
    }

    async fn copy_claim(&self, to: Side, claim: &str) -> Result<()> {
        let from = to.other();
        let original = self
            .cluster(from)
            .call(&format!("read PVC {claim}"), self.claims(from).get(claim))
            .await?;
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
        let volume = self
            .cluster(from)
            .call(
                &format!("read PV {volume_name}"),
                self.volumes(from).get(&volume_name),
            )
            .await?;
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
        match self.volumes(to).create(&post(), &volume_copy).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 409) => {
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
            Err(e) => {
                return self
                    .cluster(to)
                    .fail(&format!("create PV {volume_name}"), e);
            }
        }
        let claim_copy = copy_claim(
            &original,
            &at.namespace,
            &self.class_map,
            &at.copy_label,
            &format!("{}/{}", self.names.context(from), claim),
        );
        let result = self.claims(to).create(&post(), &claim_copy).await;
        self.cluster(to)
            .already_done(&format!("create PVC {claim}"), result, 409)
    }

    async fn delete_copy(&self, claim: Option<&str>, volume: Option<&str>) -> Result<()> {
        let dest = Side::Destination;
        if let Some(claim) = claim {
            let result = self
                .claims(dest)
                .delete(claim, &DeleteParams::default())
                .await;
            self.destination
                .already_done(&format!("delete PVC {claim}"), result, 404)?;
        }
        if let Some(volume) = volume {
            // Never delete a PV object whose reclaim policy could delete the storage.
            let pv = self
                .destination
                .call(
                    &format!("read PV {volume}"),
                    self.volumes(dest).get_opt(volume),
                )
                .await?;
            if let Some(pv) = pv {
                let policy = pv
                    .spec
                    .and_then(|s| s.persistent_volume_reclaim_policy)
                    .unwrap_or_default();
                if policy != "Retain" {
                    return Err(Error::Failed {
                        message: format!(
                            "PV {volume} in {} has reclaim policy {policy}; refusing to delete it",
                            self.destination.context
                        ),
                    });
                }
                let result = self
                    .volumes(dest)
                    .delete(volume, &DeleteParams::default())
                    .await;
                self.destination
                    .already_done(&format!("delete PV {volume}"), result, 404)?;
            }
        }
        Ok(())
    }
}

use std::os::fd::AsFd;
