//! Every write of a migration, and each reconciler step performed idempotently: creates
//! tolerate "already exists", patches carry resourceVersion preconditions, waits use watches and
//! give up after --timeout. A dry run (`--dry-run=server`) is a mode of the same writes.
//!
//! [`Executor::perform`] hands each step to the part that owns it. Each part is one file, and
//! any state it keeps is its own:
//!
//! - `sides`: both clusters, where the set lives in each, the names messages use (fixed);
//! - `writer`: the one way to write, gated by the migration's Lease; the dry-run verdicts;
//! - `waits`: --timeout, Ctrl-C and the loop's watch caches; the notes a step sends as it waits;
//! - `journaling`: the journal's writes, and the version of the run's last one;
//! - `events`: a Kubernetes Event per finished step, written in the background;
//! - the steps' objects: `set` (the StatefulSets), `volumes` (claims and PVs), `verify` (the
//!   health check), `dependencies` (the namespace and the objects the pods use),
//!   `disruption` (the PodDisruptionBudgets).
//!
//! The parts below take the lower ones they use as arguments (`writer` uses `waits`; the
//! steps' objects use `writer`, `waits` and `journaling`), so nothing refers back up to the
//! executor.
pub mod dependencies;
pub mod disruption;
mod events;
mod journaling;
pub mod set;
mod sides;
mod verify;
pub mod volumes;
mod waits;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;

pub use events::StepEvents;
pub use journaling::Journaling;
pub use sides::Sides;
pub use waits::{Interrupt, NotReadyInTime, Note, Notes, Waits};
pub use writer::{DryRunResult, FIELD_MANAGER, Writer, Written};

use super::journal::Stored;
use super::model::VolumeMode;
use super::model::{Direction, Journal, ObjectKind, ObjectRef, Observed, RecordedBudget, Side};
use super::step::Step;
use crate::error::{Error, Result};

/// What the steps take from the settings.
pub struct StepSettings {
    /// StorageClass renames for the destination.
    pub class_map: BTreeMap<String, String>,
    pub health_check: Option<String>,
    /// What the journal records: shared (copied) claims or fresh ones.
    pub volumes: VolumeMode,
    /// When a claim's copy follows its PV's.
    pub copy_order: volumes::CopyOrder,
}

pub struct Executor {
    pub sides: Arc<Sides>,
    pub writer: Writer,
    pub waits: Waits,
    pub journal: Journaling,
    pub events: StepEvents,
    pub settings: StepSettings,
    /// The run's lease holder, which the journal names when this run completes the migration.
    pub holder: String,
}

impl Executor {
    /// `holder` is the run's lease holder, named in its Events.
    pub fn new(
        sides: Sides,
        settings: StepSettings,
        timeout: Duration,
        holder: String,
    ) -> Executor {
        let sides = Arc::new(sides);
        Executor {
            writer: Writer::new(sides.clone()),
            waits: Waits::new(sides.clone(), timeout),
            journal: Journaling::default(),
            events: StepEvents::new(holder.clone()),
            settings,
            holder,
            sides,
        }
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
        let (w, waits, journal) = (&self.writer, &self.waits, &self.journal);
        let dry_run = w.is_dry_run();
        match step {
            Step::CreateNamespace => dependencies::create_namespace(w).await,
            Step::WriteJournal => self.write_journal(observed).await,
            Step::CopyObject { kind, name } => {
                dependencies::copy(w, journal, stored, *kind, name).await
            }
            Step::DeleteCreated { kind, name } => {
                let kept = dependencies::delete_created(w, waits, journal, *kind, name).await?;
                if let Some(why) = kept {
                    let _ = notes.send(Note::Kept(why));
                }
                Ok(())
            }
            Step::DeleteNamespace => {
                let kept = dependencies::delete_namespace(w, waits, Some(journal)).await?;
                if let Some(why) = kept {
                    let _ = notes.send(Note::Kept(why));
                }
                Ok(())
            }
            Step::ProtectVolumes { side, volumes } => {
                volumes::protect(w, journal, *side, volumes, stored, observed).await
            }
            Step::ProtectNewVolumes { claims } => {
                volumes::protect_new(w, journal, claims, stored, observed).await
            }
            Step::HoldRetention => set::hold_retention(w, observed).await,
            Step::CreateDestination => {
                set::create_destination(w, &self.settings.class_map, stored, observed, None).await
            }
            Step::RecreateDestination { start, replicas } => {
                let range = Some((*start, *replicas));
                set::create_destination(w, &self.settings.class_map, stored, observed, range).await
            }
            Step::Resize {
                side,
                start,
                replicas,
            } => set::resize(w, *side, *start, *replicas, observed).await,
            Step::WaitPodsGone { .. } | Step::WaitReady { .. } if dry_run => Ok(()),
            Step::WaitPodsGone { side, ordinals } => {
                waits.pods_gone(*side, ordinals, observed).await
            }
            Step::CopyClaim { to, claim, .. } => {
                volumes::copy(
                    w,
                    waits,
                    &self.settings.class_map,
                    *to,
                    claim,
                    self.settings.copy_order,
                    notes,
                )
                .await
            }
            Step::WaitReady { side, ordinals } => {
                waits.ready(*side, ordinals, notes).await?;
                // With no health check to run, verifying is only recording: do it now and save
                // a round of observation per ordinal.
                if self.settings.health_check.is_none() && !waits.interrupt.is_set() {
                    self.verify(*side, ordinals, stored).await?;
                }
                Ok(())
            }
            Step::Verify { side, ordinals } => self.verify(*side, ordinals, stored).await,
            Step::SetBudget { side, name, spec } => {
                let original = stored
                    .and_then(|s| s.journal.budgets.iter().find(|b| &b.name == name))
                    .map(|b| &b.original);
                disruption::set(w, waits, *side, name, spec.as_ref(), original).await
            }
            Step::MarkComplete => {
                journal
                    .update(w, stored, "mark the migration complete", |j| {
                        j.complete = true;
                        j.completed_by = Some(self.holder.clone());
                    })
                    .await
            }
            Step::DeleteCopy { claim, volume } => {
                volumes::delete_copy(w, waits, claim.as_deref(), volume.as_deref()).await
            }
            Step::DeleteDestination => {
                let sets = self.sides.namespaced::<StatefulSet>(Side::Destination);
                w.delete_until_gone(
                    waits,
                    Side::Destination,
                    "StatefulSet",
                    &sets,
                    &self.sides.names.set,
                )
                .await
            }
            Step::RestoreRetention => {
                let Some(stored) = stored else {
                    return Err(Error::Failed {
                        message: "the journal is needed to restore the retention policy".into(),
                    });
                };
                set::restore_retention(w, Side::Source, &stored.journal.original_retention).await
            }
            Step::RestoreVolume {
                side,
                volume,
                policy,
            } => volumes::restore_policy(w, *side, volume, policy).await,
            Step::DeleteJournal => journal.delete(w).await,
            Step::Done => Ok(()),
            Step::Stop { reason } => Err(Error::Failed {
                message: reason.clone(),
            }),
        }
    }

    async fn verify(&self, side: Side, ordinals: &[i32], stored: Option<&Stored>) -> Result<()> {
        verify::verify(
            &self.writer,
            &self.journal,
            self.settings.health_check.as_deref(),
            &self.waits.interrupt,
            side,
            ordinals,
            stored,
        )
        .await
    }

    async fn write_journal(&self, observed: &Observed) -> Result<()> {
        let w = &self.writer;
        // A namespace this run created carries our label; a dry run has not created it.
        let created = if !w.is_dry_run() && dependencies::namespace_is_ours(w).await? {
            vec![ObjectRef {
                kind: ObjectKind::Namespace,
                name: self.sides.destination_at.namespace.clone(),
            }]
        } else {
            vec![]
        };
        let budgets = disruption::selecting(w).await?;
        let journal = self.new_journal(observed, created, budgets)?;
        self.journal
            .create(w, &journal, "write the migration journal")
            .await?;
        Ok(())
    }

    /// The journal a run starts with, from what the source shows now.
    fn new_journal(
        &self,
        observed: &Observed,
        created: Vec<ObjectRef>,
        budgets: Vec<RecordedBudget>,
    ) -> Result<Journal> {
        let sides = &self.sides;
        let set = observed.source.set.as_ref().ok_or_else(|| Error::Failed {
            message: format!(
                "the source StatefulSet {} does not exist; there is nothing to record",
                sides.names.set
            ),
        })?;
        Ok(Journal {
            name: sides.names.set.clone(),
            source_context: sides.source.context.clone(),
            source_server: sides.source.server.clone(),
            source_namespace: sides.source_at.namespace.clone(),
            source_uid: set.uid.clone(),
            destination_namespace: sides.destination_at.namespace.clone(),
            replicas: set.replicas,
            start: set.start,
            claim_templates: set.claim_templates.clone(),
            original_reclaim_policies: observed
                .source
                .volumes
                .iter()
                .map(|(n, v)| (n.clone(), v.reclaim_policy.clone()))
                .collect(),
            original_destination_reclaim_policies: Default::default(),
            original_retention: set.retention.clone(),
            direction: Direction::Forward,
            verified_bound: set.start + set.replicas,
            complete: false,
            completed_by: None,
            cleaned_up: false,
            health_check: self.settings.health_check.clone(),
            created,
            budgets,
            volumes: self.settings.volumes,
        })
    }
}
