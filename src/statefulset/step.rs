//! A reconciler step (what `decide` chooses and the executor performs) and its words: the one
//! place that says what each step does, alone (its events, the `--step` prompt, a resume
//! question, `--status`, a dry run's unchecked writes) or as lines of a plan, which know more
//! (the observation, the journal) and name the cluster in a column of their own.
use serde::Serialize;

use super::budget::BudgetSpec;
use super::journal;
use super::model::{Journal, Names, ObjectKind, Observed, Retention, SetView, Side};
use super::words;

/// One step of the reconciler; `-o json` events name it by its tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    /// Create the destination namespace (`--create-namespace`), labelled as this migration's.
    CreateNamespace,
    /// Record the starting point (and the original policies) before anything changes.
    WriteJournal,
    /// Copy an object the pods use from the source namespace (`--copy-dependencies`),
    /// recorded in the journal before it is created.
    CopyObject {
        kind: ObjectKind,
        name: String,
    },
    /// Set PVs' reclaim policy to Retain so that deleting a claim can never delete the data.
    ProtectVolumes {
        side: Side,
        volumes: Vec<String>,
    },
    /// `--volumes=fresh`: set the PVs bound to these claims, which the destination's controller
    /// made, to Retain, their original policies recorded in the journal first.
    ProtectNewVolumes {
        claims: Vec<String>,
    },
    /// Hold the source's PVC retention policy at Retain, so scaling down keeps the claims.
    HoldRetention,
    /// Create the destination set with replicas 0 and start = s0 + N.
    CreateDestination,
    /// Recovery (`--recreate-destination`) after the destination set was deleted mid-migration:
    /// create it over the ordinals the journal places there, so that its controller adopts the
    /// pods still running there instead of deleting them.
    RecreateDestination {
        start: i32,
        replicas: i32,
    },
    /// Change a set's start and replicas in one request (with a resourceVersion precondition).
    Resize {
        side: Side,
        start: i32,
        replicas: i32,
    },
    /// Wait (watching) until these pods are gone from `side`, Terminating ones included.
    WaitPodsGone {
        side: Side,
        ordinals: Vec<i32>,
    },
    /// Copy a claim and its PV to `to`, pre-bound, with reclaim policy Retain.
    CopyClaim {
        to: Side,
        claim: String,
        ordinal: i32,
    },
    /// Wait until these ordinals are Ready (and available) on `side`.
    WaitReady {
        side: Side,
        ordinals: Vec<i32>,
    },
    /// Run the health check for these ordinals and record them as verified.
    Verify {
        side: Side,
        ordinals: Vec<i32>,
    },
    /// Give a PodDisruptionBudget its share on `side` (see `budget`): create or update it with
    /// `spec`, or with `None` delete this migration's copy.
    SetBudget {
        side: Side,
        name: String,
        spec: Option<BudgetSpec>,
    },
    MarkComplete,
    /// Rollback clean-up: delete a claim or PV copy this tool created in the destination.
    DeleteCopy {
        claim: Option<String>,
        volume: Option<String>,
    },
    DeleteDestination,
    RestoreRetention,
    RestoreVolume {
        side: Side,
        volume: String,
        policy: String,
    },
    /// Rollback clean-up: delete an object the journal records as created by this migration,
    /// if it still carries this migration's label, and strike it from the journal.
    DeleteCreated {
        kind: ObjectKind,
        name: String,
    },
    /// Rollback finished, in a namespace this migration created: delete the namespace (the
    /// journal with it) if it holds nothing else, else keep it and remove the journal.
    DeleteNamespace,
    /// Rollback finished: remove the journal.
    DeleteJournal,
    /// Nothing left to do.
    Done,
    /// Unsafe to continue: someone changed something we rely on. Never "fixed" automatically.
    Stop {
        reason: String,
    },
}

impl Step {
    /// The cluster the step acts on.
    pub fn side(&self) -> Side {
        match self {
            Step::ProtectVolumes { side, .. }
            | Step::RestoreVolume { side, .. }
            | Step::SetBudget { side, .. }
            | Step::Resize { side, .. }
            | Step::WaitPodsGone { side, .. }
            | Step::WaitReady { side, .. }
            | Step::Verify { side, .. } => *side,
            Step::CopyClaim { to, .. } => *to,
            Step::HoldRetention | Step::RestoreRetention => Side::Source,
            _ => Side::Destination,
        }
    }

    /// What the destination lacks, made before the reconciler starts (see
    /// `plan::forward_steps`).
    pub fn is_preparation(&self) -> bool {
        matches!(
            self,
            Step::CreateNamespace | Step::WriteJournal | Step::CopyObject { .. }
        )
    }

    /// Whether the step changes something (else it waits or checks).
    pub fn writes(&self) -> bool {
        !matches!(
            self,
            Step::WaitPodsGone { .. } | Step::WaitReady { .. } | Step::Verify { .. }
        )
    }

    /// The step's kind as the `-o json` events name it (`wait-ready`), from its serde tag.
    pub fn kind(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("step").and_then(|s| s.as_str()).map(str::to_string))
            .unwrap_or_else(|| "step".into())
    }

    /// The ordinals a step concerns, for progress and events.
    pub fn ordinals(&self) -> Vec<i32> {
        match self {
            Step::WaitPodsGone { ordinals, .. }
            | Step::WaitReady { ordinals, .. }
            | Step::Verify { ordinals, .. } => ordinals.clone(),
            Step::CopyClaim { ordinal, .. } => vec![*ordinal],
            _ => Vec::new(),
        }
    }
}

/// What the lines of a plan need besides the steps.
pub struct Telling<'a> {
    pub observed: &'a Observed,
    pub names: &'a Names,
    /// The set's minReadySeconds.
    pub min_ready_seconds: i32,
    pub health_check: Option<&'a str>,
    /// The journal, for what a rollback restores.
    pub journal: Option<&'a Journal>,
}

/// A step's place in a plan.
pub struct InPlan<'a> {
    pub telling: &'a Telling<'a>,
    /// For a scale-down, the pods the wait after it is for: the plan tells both in one line.
    pub gone_after: Option<&'a [i32]>,
    /// The step follows a scale-down, which told its wait for pods already.
    pub after_resize: bool,
}

impl InPlan<'_> {
    /// `pod 3 is`, `pods 2-3 are`.
    fn pods_are(&self, ordinals: &[i32]) -> String {
        let verb = words::noun(ordinals.len() as i64, "is", "are");
        format!("{} {verb}", words::pods(ordinals))
    }

    fn set(&self, side: Side) -> Option<&SetView> {
        self.telling.observed.side(side).set.as_ref()
    }

    /// One line per PV, with the policy it has now.
    fn protect(&self, side: Side, volumes: &[String]) -> Vec<String> {
        let view = self.telling.observed.side(side);
        volumes
            .iter()
            .map(|name| {
                let policy = view
                    .volumes
                    .get(name)
                    .map_or("?", |v| v.reclaim_policy.as_str());
                format!("protect PV {name}: reclaim policy {policy} -> Retain (original recorded)")
            })
            .collect()
    }

    fn hold_retention(&self) -> String {
        let retention = self
            .set(Side::Source)
            .map(|s| s.retention.clone())
            .unwrap_or_else(Retention::retain);
        format!(
            "hold PVC retention policy at Retain (was {})",
            retention_text(&retention)
        )
    }

    /// A scale-down tells the wait for its pods too.
    fn resize(&self, side: Side, start: i32, replicas: i32) -> String {
        match self.gone_after {
            Some(ordinals) if side == Side::Source => format!(
                "scale source to {} and wait until {} gone (Terminating included)",
                replicas_word(replicas),
                self.pods_are(ordinals)
            ),
            Some(ordinals) => format!(
                "scale {} to ordinals.start={start}, replicas={replicas} and wait until {} gone (Terminating included)",
                side_word(side),
                self.pods_are(ordinals)
            ),
            None if side == Side::Source
                && self.set(Side::Source).is_some_and(|s| s.start == start) =>
            {
                format!("scale source to {}", replicas_word(replicas))
            }
            None => format!(
                "patch {} to ordinals.start={start}, replicas={replicas} in one request",
                side_word(side)
            ),
        }
    }

    fn copy_claim(&self, to: Side, claim: &str) -> String {
        let volume = self
            .telling
            .observed
            .side(to.other())
            .claims
            .get(claim)
            .and_then(|c| c.volume_name.clone())
            .unwrap_or_else(|| "?".into());
        format!("copy PVC {claim} and PV {volume} (pre-bound, reclaim Retain)")
    }

    fn wait_ready(&self, ordinals: &[i32]) -> String {
        let seconds = self.telling.min_ready_seconds;
        let ready = if seconds > 0 {
            format!("Ready for {seconds}s (minReadySeconds)")
        } else {
            "Ready".to_string()
        };
        format!("wait until {} {ready}", self.pods_are(ordinals))
    }

    fn restore_retention(&self) -> String {
        let original = self
            .telling
            .journal
            .map(|j| retention_text(&j.original_retention));
        format!(
            "restore the PVC retention policy ({})",
            original.unwrap_or_else(|| "as recorded".into())
        )
    }
}

/// Where a step is told.
#[derive(Clone, Copy)]
enum Voice<'a> {
    /// On its own: one line that names the cluster.
    Alone(&'a Names),
    /// In a plan: the lines it adds (none when the step before told it).
    Plan(&'a InPlan<'a>),
}

impl Step {
    /// One line saying what the step does and where.
    pub fn describe(&self, names: &Names) -> String {
        // Alone, every step is one line.
        self.words(Voice::Alone(names)).concat()
    }

    /// The step's lines in a plan (without the cluster, which the plan shows apart).
    pub fn plan_lines(&self, at: &InPlan<'_>) -> Vec<String> {
        self.words(Voice::Plan(at))
    }

    /// The words of each step, alone and in a plan, side by side.
    fn words(&self, voice: Voice<'_>) -> Vec<String> {
        use Voice::{Alone, Plan};
        let names = match voice {
            Alone(names) => names,
            Plan(at) => at.telling.names,
        };
        let (src, dst) = (&names.source_context, &names.destination_context);
        let line = match self {
            Step::SetBudget { side, name, spec } => match spec {
                Some(spec) => format!(
                    "set PodDisruptionBudget {name} to {spec} in {} (each side's share keeps the original's limit)",
                    names.context(*side)
                ),
                None => format!(
                    "delete PodDisruptionBudget {name} (the migration's copy) in {}",
                    names.context(*side)
                ),
            },
            Step::CreateNamespace => match voice {
                Alone(_) => format!("create namespace {} in {dst}", names.destination_namespace),
                Plan(_) => format!(
                    "create namespace {} (labelled as this migration's; a rollback deletes it)",
                    names.destination_namespace
                ),
            },
            Step::WriteJournal => match voice {
                Alone(_) => format!("write the migration journal in {dst}"),
                Plan(_) => format!(
                    "write the migration journal (ConfigMap {}/{name}, updated after each step) and hold the Lease {name} while running",
                    names.destination_namespace,
                    name = journal::object_name(&names.set)
                ),
            },
            Step::CopyObject { kind, name } => match voice {
                Alone(_) => format!("copy {kind} {name} from {src} to {dst}"),
                Plan(_) => format!(
                    "copy {kind} {name} from {src} (recorded in the journal; a rollback deletes it)"
                ),
            },
            Step::ProtectVolumes { side, volumes } => match voice {
                Alone(_) => format!(
                    "set the reclaim policy of {} to Retain in {}",
                    words::named(volumes, "PV", "PVs"),
                    names.context(*side)
                ),
                Plan(at) => return at.protect(*side, volumes),
            },
            Step::ProtectNewVolumes { claims } => {
                let volumes = words::named(claims, "PV of new PVC", "PVs of new PVCs");
                match voice {
                    Alone(_) => {
                        format!("set the reclaim policy of the {volumes} to Retain in {dst}")
                    }
                    Plan(_) => format!(
                        "set the reclaim policy of the {volumes} to Retain (recorded first in the journal; a rollback gives the original back)"
                    ),
                }
            }
            Step::HoldRetention => match voice {
                Alone(_) => format!(
                    "hold PVC retention policy of {} at Retain",
                    names.set_at(Side::Source)
                ),
                Plan(at) => at.hold_retention(),
            },
            Step::CreateDestination => match voice {
                Alone(_) => format!(
                    "create StatefulSet {} with replicas 0",
                    names.set_at(Side::Destination)
                ),
                Plan(at) => {
                    let end = at.set(Side::Source).map_or(0, |s| s.start + s.replicas);
                    format!(
                        "create StatefulSet {} with replicas=0, ordinals.start={end}",
                        names.set_at(Side::Destination)
                    )
                }
            },
            Step::RecreateDestination { start, replicas } => format!(
                "re-create StatefulSet {} with ordinals.start={start}, replicas={replicas}, adopting the pods that run there",
                names.set_at(Side::Destination)
            ),
            Step::Resize {
                side,
                start,
                replicas,
            } => match voice {
                Alone(_) => format!(
                    "set {} to ordinals.start={start}, replicas={replicas}",
                    names.set_at(*side)
                ),
                Plan(at) => at.resize(*side, *start, *replicas),
            },
            Step::WaitPodsGone { side, ordinals } => match voice {
                Alone(_) => format!(
                    "wait for {} to be gone from {}",
                    words::pods(ordinals),
                    names.context(*side)
                ),
                Plan(at) if at.after_resize => return vec![],
                Plan(at) => format!(
                    "wait until {} gone (Terminating included)",
                    at.pods_are(ordinals)
                ),
            },
            Step::CopyClaim { to, claim, .. } => match voice {
                Alone(_) => format!("copy PVC {claim} and its PV to {}", names.context(*to)),
                Plan(at) => at.copy_claim(*to, claim),
            },
            Step::WaitReady { side, ordinals } => match voice {
                Alone(_) => format!(
                    "wait for {} to be Ready in {}",
                    words::pods(ordinals),
                    names.context(*side)
                ),
                Plan(at) => at.wait_ready(ordinals),
            },
            Step::Verify { side, ordinals } => match voice {
                Alone(_) => format!(
                    "verify {} in {}",
                    words::ordinals(ordinals),
                    names.context(*side)
                ),
                Plan(at) => format!(
                    "run health check `{}` for {}",
                    at.telling.health_check.unwrap_or_default(),
                    words::ordinals(ordinals)
                ),
            },
            Step::MarkComplete => match voice {
                Alone(_) => "mark the migration complete".into(),
                Plan(_) => "record the migration as complete in the journal".into(),
            },
            Step::DeleteCopy { claim, volume } => match (claim, volume, voice) {
                (Some(c), _, Alone(_)) => format!("delete the PVC copy {c} in {dst}"),
                (Some(c), _, Plan(_)) => {
                    format!("delete the PVC copy {c} and wait until it is gone")
                }
                (_, Some(v), Alone(_)) => {
                    format!("delete the PV copy {v} in {dst} (storage kept: reclaim Retain)")
                }
                (_, Some(v), Plan(_)) => {
                    format!("delete the PV copy {v} (storage kept: reclaim Retain)")
                }
                (None, None, Alone(_)) => "nothing".into(),
                (None, None, Plan(_)) => return vec![],
            },
            Step::DeleteDestination => match voice {
                Alone(_) => format!(
                    "delete the empty StatefulSet {}",
                    names.set_at(Side::Destination)
                ),
                Plan(_) => format!("delete the StatefulSet {}", names.set_at(Side::Destination)),
            },
            Step::RestoreRetention => match voice {
                Alone(_) => format!(
                    "restore the PVC retention policy of {}",
                    names.set_at(Side::Source)
                ),
                Plan(at) => at.restore_retention(),
            },
            Step::RestoreVolume {
                side,
                volume,
                policy,
            } => match voice {
                Alone(_) => format!(
                    "restore reclaim policy {policy} on PV {volume} in {}",
                    names.context(*side)
                ),
                Plan(_) => format!("restore reclaim policy {policy} on PV {volume}"),
            },
            Step::DeleteCreated { kind, name } => match voice {
                Alone(_) => format!("delete {kind} {name} (created by the migration) in {dst}"),
                Plan(_) => format!("delete {kind} {name} (created by this migration)"),
            },
            Step::DeleteNamespace => match voice {
                Alone(_) => format!(
                    "delete namespace {} (created by the migration) in {dst}",
                    names.destination_namespace
                ),
                Plan(_) => format!(
                    "delete namespace {} (created by this migration), with the journal in it, if it holds nothing else",
                    names.destination_namespace
                ),
            },
            Step::DeleteJournal => "remove the migration journal".into(),
            // Not steps a plan shows.
            Step::Done | Step::Stop { .. } if matches!(voice, Plan(_)) => return vec![],
            Step::Done => "nothing left to do".into(),
            Step::Stop { reason } => format!("stop: {reason}"),
        };
        vec![line]
    }
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Source => "source",
        Side::Destination => "destination",
    }
}

/// "1 replica", "2 replicas": as a person says it.
fn replicas_word(n: i32) -> String {
    words::count(n, "replica", "replicas")
}

fn retention_text(r: &Retention) -> String {
    format!(
        "whenScaled={}, whenDeleted={}",
        r.when_scaled, r.when_deleted
    )
}
