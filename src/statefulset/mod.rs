//! Moving a StatefulSet between clusters pod by pod, with `spec.ordinals.start`.
//!
//! [`run`] takes resolved [`Settings`] (the commands layer builds them from the flags) and an
//! [`Operator`] (the person or runbook driving the run: asked before writes, told what happens
//! through [`Event`]s). It connects, runs the preflight, plans, confirms, then loops
//! `observe -> decide -> act` until done. A rerun with the same settings resumes from whatever
//! the clusters show.
//!
//! - pure: [`decide`] (the next safe step), [`copy`] (object rewrites), [`plan`],
//!   `scheduling` (whether a destination node takes each pod),
//!   [`preflight::judge`], [`cleanup::judge`], [`status`];
//! - words: [`step`] (what each step does, for the plan, the events and the prompts);
//! - I/O: `observe` (reads), `executor` (every write, also in a dry-run mode, by the part of a
//!   migration it touches), `journal` (the record), `lease` (one operator at a time, as
//!   client-go's leader election; its judgement is pure), `reconcile` (the loop), `run` (one
//!   function per mode).
pub mod budget;
pub mod cleanup;
pub mod copy;
pub mod decide;
mod down;
mod executor;
mod journal;
pub mod lease;
mod leftovers;
pub mod model;
mod observe;
pub mod plan;
pub mod preflight;
mod reconcile;
pub mod recover;
mod run;
mod scheduling;
pub mod status;
pub mod step;
mod watched;
pub mod words;

/// Whether an API error is worth retrying (the controller's standby decides on it too).
pub(crate) use reconcile::is_transient;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::Target;
use crate::error::Result;
pub use executor::volumes::{COPY_ORDER_ENV, CopyOrder};
pub use executor::{DryRunResult, FIELD_MANAGER, Interrupt};
pub use lease::holder_identity;
pub use model::VolumeMode;
pub use plan::Plan;
pub use run::{OnHub, run, run_on};
pub use step::Step;
pub use watched::{Hub, Member};

/// How many ordinals move per step (`--batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// This many (>= 1).
    Count(i32),
    /// As many as the set's PodDisruptionBudgets allow at once (see [`budget::auto_batch`]).
    Auto,
}

impl std::str::FromStr for Batch {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Batch, String> {
        if text == "auto" {
            return Ok(Batch::Auto);
        }
        match text.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(Batch::Count(n)),
            _ => Err(format!(
                "expected a count of at least 1 or `auto`, got {text:?}"
            )),
        }
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Batch::Count(n) => write!(f, "{n}"),
            Batch::Auto => f.write_str("auto"),
        }
    }
}

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Move the ordinals to the destination (or, with a dry run, only show how).
    Migrate(DryRun),
    /// Move them back to the source, from any point (or, with a dry run, only show how).
    Rollback(DryRun),
    /// Show both sides, the journal and the next step; change nothing.
    Status,
    /// Write a journal rebuilt from both clusters, after the journal was deleted.
    RebuildJournal,
    /// After completion, delete the source's leftovers.
    Cleanup {
        /// Give the destination's PVs back their original reclaim policies.
        restore_reclaim_policy: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryRun {
    /// Make the changes.
    None,
    /// Print the plan; no writes.
    Client,
    /// Print the plan and dry-run every write on the servers.
    Server,
}

/// Everything a run needs, resolved and checked (no flags, no defaults left to take).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The StatefulSet's name (the same on both sides).
    pub name: String,
    pub source: Target,
    pub source_namespace: String,
    pub destination: Target,
    pub destination_namespace: String,
    /// Limit for one API request (zero: none).
    pub request_timeout: Duration,
    pub mode: Mode,
    /// Ordinals moved per step.
    pub batch: Batch,
    /// How long to wait for one pod to go or to become Ready.
    pub timeout: Duration,
    /// What a migration does when moved pods are not Ready within `timeout`.
    pub on_timeout: OnTimeout,
    /// Run by `sh -c` after each ordinal is Ready.
    pub health_check: Option<String>,
    /// Go on without the health check the migration was started with.
    pub no_health_check: bool,
    /// StorageClass renames for the destination.
    pub class_map: BTreeMap<String, String>,
    pub copy_dependencies: bool,
    pub create_namespace: bool,
    /// Create the destination set again over the ordinals the journal places there, after it
    /// was deleted mid-migration.
    pub recreate_destination: bool,
    pub allow_unhealthy: bool,
    /// Pause before each move.
    pub step: bool,
    /// Shared (copied) claims or fresh ones from the destination's templates.
    pub volumes: VolumeMode,
    /// How the reconciler reads both clusters on each loop iteration.
    pub observe: Observe,
    /// When a claim's copy follows its PV's.
    pub copy_order: CopyOrder,
    /// This process as the migration's lease holder (see [`holder_identity`]): named in the
    /// Lease and in the Events of each step.
    pub holder: String,
    /// One of several sets picked by a label selector or `--all`: a rollback of a set that was
    /// never migrated has nothing to do rather than failing the selection.
    pub selected: bool,
}

/// What a migration does when moved pods are not Ready within --timeout: their ordinals then
/// run nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// Stop, say why, and offer both ways on (keep waiting, or roll back).
    Stop,
    /// Roll back at once, without asking: the runbook decided beforehand.
    Rollback,
}

/// How the reconciler reads both clusters on each loop iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observe {
    /// Through watches started once per run (see `watched`): the loop reads memory and its
    /// waits wake on the watch events.
    Watch,
    /// With requests on every iteration, as before watches: the migration benchmark's
    /// baseline, and a way out where watching cluster-wide PVs is not allowed.
    Poll,
}

/// Whether to go on at a `--step` pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepGate {
    Go,
    /// Stop here (resumable).
    Pause,
}

/// The person or runbook driving a run.
pub trait Operator: Send {
    /// Asks before `action` (with the plan, when there is one). `Ok` goes on; an error stops
    /// the run with nothing written by it.
    fn confirm(&mut self, action: &str, plan: Option<&Plan>) -> Result<()>;

    /// With `--step`, before each move (`moves` made so far in this run).
    fn before_move(&mut self, description: &str, moves: usize) -> Result<StepGate>;

    /// Something happened.
    fn event(&mut self, event: Event<'_>);

    /// The command line that resumes this run, for messages.
    fn resume_command(&self) -> String;
}

/// What a run tells its operator as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// Detail for -v (1) or -vv (2).
    Detail(u8, String),
    Warning(String),
    /// The loop starts moving `title` (the set and its two clusters).
    LoopStarted {
        title: String,
    },
    /// Ordinals moved so far, of all of them.
    Progress {
        moved: u64,
        total: u64,
    },
    /// A step began, ended, will be decided again, or failed.
    Step(StepEvent<'a>),
    /// A request failed in a way worth retrying.
    Retrying {
        message: String,
        delay: Duration,
    },
    /// The step waits for `pod`, which is not there yet for `reason`.
    Waiting {
        pod: String,
        reason: String,
    },
    /// The loop ended with everything in place (the line says where).
    Finished(String),
}

/// Where a step is; the names are those of the `-o json` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepPhase {
    #[serde(rename = "step-started")]
    Started,
    #[serde(rename = "step-finished")]
    Finished,
    /// Decided again: an object changed between observing and acting.
    #[serde(rename = "step-retried")]
    Retried,
    #[serde(rename = "step-failed")]
    Failed,
}

#[derive(Debug)]
pub struct StepEvent<'a> {
    pub phase: StepPhase,
    pub step: &'a Step,
    /// The context the step acts on.
    pub cluster: &'a str,
    pub description: &'a str,
    pub elapsed: Option<Duration>,
    /// Of `elapsed`, the time a step that is not a wait spent waiting for the cluster.
    pub waited: Option<Duration>,
    pub error: Option<String>,
}

/// What a run leaves to show.
#[derive(Debug)]
pub enum Outcome {
    /// A dry run: the plan, the preflight warnings and (server) each write's verdict.
    Planned(PlanOutput),
    /// `--status`.
    Status(status::StatusReport),
    /// `--cleanup`.
    Cleaned(cleanup::CleanupReport),
    /// `--rebuild-journal`.
    Rebuilt(recover::Rebuilt),
    /// A migration or rollback that ended (or was already complete).
    Finished,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    pub schema_version: u32,
    pub plan: Plan,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_dry_run: Vec<DryRunResult>,
}
