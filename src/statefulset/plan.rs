//! PURE: the human plan (a numbered list of steps per ordinal, highest first) and one-line
//! descriptions of reconciler steps.
use serde::Serialize;

use super::budget::BudgetSpec;
use super::decide::{Step, apply_budget, budget_step, shares, unprotected_volumes};
use super::model::{
    Direction, Journal, ObjectKind, Observed, Preparation, RecordedBudget, Retention, Side,
    VolumeMode, claim_name,
};

/// Names used in messages.
#[derive(Debug, Clone)]
pub struct Names {
    pub set: String,
    pub source_context: String,
    pub source_namespace: String,
    pub destination_context: String,
    pub destination_namespace: String,
}

impl Names {
    /// Set web in namespace db, from km-a to km-b: the names the unit tests use.
    #[cfg(test)]
    pub fn fixture() -> Names {
        Names {
            set: "web".into(),
            source_context: "km-a".into(),
            source_namespace: "db".into(),
            destination_context: "km-b".into(),
            destination_namespace: "db".into(),
        }
    }

    pub fn context(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_context,
            Side::Destination => &self.destination_context,
        }
    }
    pub fn namespace(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_namespace,
            Side::Destination => &self.destination_namespace,
        }
    }
    fn set_at(&self, side: Side) -> String {
        format!(
            "{}/{}/{}",
            self.context(side),
            self.namespace(side),
            self.set
        )
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlannedStep {
    pub number: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<i32>,
    pub cluster: String,
    /// Whether the step changes something (else it waits or checks).
    pub writes: bool,
    pub action: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub direction: Direction,
    pub statefulset: String,
    /// Where the ordinals are moved from and to (`context/namespace`).
    pub from: String,
    pub to: String,
    /// The ordinals moved, in the order they move.
    pub ordinals: Vec<i32>,
    /// `fresh`: the destination's pods get new claims (absent: the claims are copied).
    #[serde(skip_serializing_if = "VolumeMode::is_shared")]
    pub volumes: VolumeMode,
    pub steps: Vec<PlannedStep>,
}

/// The reconciler's steps of a forward migration from the current observation, in order, as
/// they come when nothing else changes the clusters: what the plan shows and what
/// `--dry-run=server` dry-runs, write by write. `preparation` is what the destination lacks.
pub fn forward_steps(
    set: &str,
    observed: &Observed,
    preparation: &Preparation,
    batch: i32,
    health_check: bool,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if preparation.create_namespace {
        steps.push(Step::CreateNamespace);
    }
    steps.push(Step::WriteJournal);
    steps.extend(preparation.copies.iter().map(|o| Step::CopyObject {
        kind: o.kind,
        name: o.name.clone(),
    }));
    let (start, replicas, templates, retention) = match &observed.source.set {
        Some(s) => (
            s.start,
            s.replicas,
            s.claim_templates.clone(),
            s.retention.clone(),
        ),
        None => (0, 0, vec![], Retention::retain()),
    };
    let unprotected = unprotected_volumes(&observed.source);
    if !unprotected.is_empty() {
        steps.push(Step::ProtectVolumes {
            side: Side::Source,
            volumes: unprotected,
        });
    }
    if !retention.is_retain() {
        steps.push(Step::HoldRetention);
    }
    if observed.destination.set.is_none() {
        steps.push(Step::CreateDestination);
    }
    let end = start + replicas;
    let ordinals: Vec<i32> = (start..end).rev().collect();
    let mut remaining = replicas;
    // The budgets as the clusters will show them, step by step.
    let budgets = &preparation.budgets;
    let total = replicas + observed.destination.set.as_ref().map_or(0, |d| d.replicas);
    let mut budgets_now = observed.clone();
    for b in budgets {
        budgets_now
            .source
            .budgets
            .entry(b.name.clone())
            .or_insert_with(|| b.original.clone());
    }
    for chunk in ordinals.chunks(batch.max(1) as usize) {
        // Within a batch the reconciler goes up from the lowest ordinal.
        let mut chunk = chunk.to_vec();
        chunk.sort_unstable();
        let low = chunk[0];
        remaining -= chunk.len() as i32;
        set_budgets(
            &mut steps,
            budgets,
            total,
            &mut budgets_now,
            shares(total, remaining, total - remaining - chunk.len() as i32),
        );
        steps.push(Step::Resize {
            side: Side::Source,
            start,
            replicas: remaining,
        });
        steps.push(Step::WaitPodsGone {
            side: Side::Source,
            ordinals: chunk.clone(),
        });
        // Fresh volumes: the destination's controller makes the claims; nothing is copied.
        for &k in chunk.iter().filter(|_| preparation.volumes.is_shared()) {
            for t in &templates {
                steps.push(Step::CopyClaim {
                    to: Side::Destination,
                    claim: claim_name(t, set, k),
                    ordinal: k,
                });
            }
        }
        steps.push(Step::Resize {
            side: Side::Destination,
            start: low,
            replicas: end - low,
        });
        arrive(&mut steps, Side::Destination, chunk, health_check);
    }
    set_budgets(&mut steps, budgets, total, &mut budgets_now, |o| {
        (o.clone(), Some(o.clone()))
    });
    steps.push(Step::MarkComplete);
    steps
}

/// The budget writes the reconciler makes to reach `desired` from `now` (updated).
fn set_budgets(
    steps: &mut Vec<Step>,
    budgets: &[RecordedBudget],
    total: i32,
    now: &mut Observed,
    desired: impl Fn(&BudgetSpec) -> (BudgetSpec, Option<BudgetSpec>),
) {
    while let Some(step) = budget_step(budgets, total, now, &desired) {
        apply_budget(now, &step);
        steps.push(step);
    }
}

/// Ordinals that were started on `side`: waited for, then (with a health check) verified.
fn arrive(steps: &mut Vec<Step>, side: Side, ordinals: Vec<i32>, health_check: bool) {
    steps.push(Step::WaitReady {
        side,
        ordinals: ordinals.clone(),
    });
    if health_check {
        steps.push(Step::Verify { side, ordinals });
    }
}

/// The reconciler's steps of a rollback from the current observation (the journal as it is,
/// before or after `--rollback` turned it), as they come when nothing else changes the
/// clusters: what the rollback prompt shows.
pub fn rollback_steps(
    journal: &Journal,
    observed: &Observed,
    batch: i32,
    health_check: bool,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let Some(source) = &observed.source.set else {
        return steps;
    };
    let unprotected = unprotected_volumes(&observed.destination);
    if !unprotected.is_empty() {
        steps.push(Step::ProtectVolumes {
            side: Side::Destination,
            volumes: unprotected,
        });
    }
    let end = journal.end();
    let mut source_end = source.start + source.replicas;
    // What --rollback records when it turns the journal: the source's end is verified.
    let verified = match journal.direction {
        Direction::Rollback => journal.verified_bound,
        Direction::Forward => source_end,
    };
    let pending: Vec<i32> = (verified.max(journal.start)..source_end).collect();
    if !pending.is_empty() {
        arrive(&mut steps, Side::Source, pending, health_check);
    }
    // The claims an ordinal needs back in the source that only the destination has.
    let missing_claims = |steps: &mut Vec<Step>, ordinals: &[i32]| {
        for &k in ordinals {
            for t in &journal.claim_templates {
                let claim = claim_name(t, &journal.name, k);
                // Fresh volumes are never copied back: the source keeps the originals.
                if journal.volumes.is_shared()
                    && !observed.source.claims.contains_key(&claim)
                    && observed.destination.claims.contains_key(&claim)
                {
                    steps.push(Step::CopyClaim {
                        to: Side::Source,
                        claim,
                        ordinal: k,
                    });
                }
            }
        }
    };
    let mut budgets_now = observed.clone();
    if let Some(dest) = &observed.destination.set {
        let (mut dest_start, mut dest_replicas) = if dest.replicas > 0 {
            (dest.start, dest.replicas)
        } else {
            (end, 0)
        };
        let in_flight: Vec<i32> = (source_end..dest_start).collect();
        if !in_flight.is_empty() {
            let still_there: Vec<i32> = in_flight
                .iter()
                .copied()
                .filter(|k| observed.destination.pods.contains_key(k))
                .collect();
            if !still_there.is_empty() {
                steps.push(Step::WaitPodsGone {
                    side: Side::Destination,
                    ordinals: still_there,
                });
            }
            missing_claims(&mut steps, &in_flight);
            steps.push(Step::Resize {
                side: Side::Source,
                start: source.start,
                replicas: dest_start - source.start,
            });
            arrive(&mut steps, Side::Source, in_flight, health_check);
            source_end = dest_start;
        }
        while dest_replicas > 0 {
            let n = batch.clamp(1, dest_replicas);
            let moving: Vec<i32> = (dest_start..dest_start + n).collect();
            set_budgets(
                &mut steps,
                &journal.budgets,
                journal.replicas,
                &mut budgets_now,
                shares(
                    journal.replicas,
                    journal.replicas - dest_replicas,
                    dest_replicas - n,
                ),
            );
            steps.push(Step::Resize {
                side: Side::Destination,
                start: dest_start + n,
                replicas: dest_replicas - n,
            });
            steps.push(Step::WaitPodsGone {
                side: Side::Destination,
                ordinals: moving.clone(),
            });
            missing_claims(&mut steps, &moving);
            steps.push(Step::Resize {
                side: Side::Source,
                start: source.start,
                replicas: dest_start + n - source.start,
            });
            arrive(&mut steps, Side::Source, moving, health_check);
            dest_start += n;
            dest_replicas -= n;
            source_end = dest_start;
        }
        for (claim, _) in observed.destination.claims.iter().filter(|(_, c)| c.copied) {
            steps.push(Step::DeleteCopy {
                claim: Some(claim.clone()),
                volume: None,
            });
        }
        steps.push(Step::DeleteDestination);
    }
    if source_end != end {
        // The reconciler stops here and says why (the destination is gone, ordinals are not).
        return steps;
    }
    for (volume, _) in observed
        .destination
        .volumes
        .iter()
        .filter(|(_, v)| v.copied)
    {
        steps.push(Step::DeleteCopy {
            claim: None,
            volume: Some(volume.clone()),
        });
    }
    if source.retention != journal.original_retention {
        steps.push(Step::RestoreRetention);
    }
    for (volume, policy) in &journal.original_reclaim_policies {
        if observed
            .source
            .volumes
            .get(volume)
            .is_some_and(|v| &v.reclaim_policy != policy)
        {
            steps.push(Step::RestoreVolume {
                volume: volume.clone(),
                policy: policy.clone(),
            });
        }
    }
    set_budgets(
        &mut steps,
        &journal.budgets,
        journal.replicas,
        &mut budgets_now,
        |o| (o.clone(), None),
    );
    for object in journal
        .created
        .iter()
        .filter(|o| o.kind != ObjectKind::Namespace)
    {
        steps.push(Step::DeleteCreated {
            kind: object.kind,
            name: object.name.clone(),
        });
    }
    steps.push(
        if journal
            .created
            .iter()
            .any(|o| o.kind == ObjectKind::Namespace)
        {
            Step::DeleteNamespace
        } else {
            Step::DeleteJournal
        },
    );
    steps
}

/// How to tell the steps of a plan: what the lines need besides the steps.
pub struct Telling<'a> {
    pub observed: &'a Observed,
    pub names: &'a Names,
    /// The set's minReadySeconds.
    pub min_ready_seconds: i32,
    pub health_check: Option<&'a str>,
    /// The journal, for what a rollback restores.
    pub journal: Option<&'a Journal>,
}

/// The plan of a forward migration from the current observation (before it starts): the
/// steps of [`forward_steps`], each told as a person needs it.
pub fn forward_plan(telling: &Telling<'_>, preparation: &Preparation, batch: i32) -> Plan {
    let names = telling.names;
    let observed = telling.observed;
    let steps = forward_steps(
        &names.set,
        observed,
        preparation,
        batch,
        telling.health_check.is_some(),
    );
    let (start, replicas) = observed
        .source
        .set
        .as_ref()
        .map_or((0, 0), |s| (s.start, s.replicas));
    Plan {
        direction: Direction::Forward,
        statefulset: names.set.clone(),
        from: format!("{}/{}", names.source_context, names.source_namespace),
        to: format!(
            "{}/{}",
            names.destination_context, names.destination_namespace
        ),
        ordinals: (start..start + replicas).rev().collect(),
        volumes: preparation.volumes,
        steps: tell(telling, Direction::Forward, &steps),
    }
}

/// The plan of a rollback from the current observation: the steps of [`rollback_steps`].
pub fn rollback_plan(telling: &Telling<'_>, journal: &Journal, batch: i32) -> Plan {
    let names = telling.names;
    let steps = rollback_steps(
        journal,
        telling.observed,
        batch,
        telling.health_check.is_some(),
    );
    let mut ordinals = Vec::new();
    for step in &steps {
        if let Step::WaitReady {
            side: Side::Source,
            ordinals: arrived,
        } = step
        {
            for k in arrived {
                if !ordinals.contains(k) {
                    ordinals.push(*k);
                }
            }
        }
    }
    Plan {
        direction: Direction::Rollback,
        statefulset: names.set.clone(),
        from: format!(
            "{}/{}",
            names.destination_context, names.destination_namespace
        ),
        to: format!("{}/{}", names.source_context, names.source_namespace),
        ordinals,
        volumes: journal.volumes,
        steps: tell(
            &Telling {
                journal: Some(journal),
                ..*telling
            },
            Direction::Rollback,
            &steps,
        ),
    }
}

/// Each step as a line of the plan. Waits that a scale-down starts are told with it.
fn tell(telling: &Telling<'_>, direction: Direction, steps: &[Step]) -> Vec<PlannedStep> {
    let Telling {
        observed,
        names,
        min_ready_seconds,
        health_check,
        journal,
    } = *telling;
    let mut planned = Vec::new();
    let mut push = |ordinal: Option<i32>, side: Side, writes: bool, action: String| {
        planned.push(PlannedStep {
            number: planned.len() + 1,
            ordinal,
            cluster: names.context(side).to_string(),
            writes,
            action,
        });
    };
    // Ordinals are told in the order they move: highest first forward, lowest first back.
    let list = |ordinals: &[i32]| {
        let mut ordinals = ordinals.to_vec();
        if direction == Direction::Forward {
            ordinals.reverse();
        }
        ordinals
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let set_of = |side: Side| observed.side(side).set.as_ref();
    let retention_text = |r: &Retention| {
        format!(
            "whenScaled={}, whenDeleted={}",
            r.when_scaled, r.when_deleted
        )
    };
    // The ordinals of the batch being moved: its scale-down names them, and the lines after it
    // are told as that batch's, by the ordinal that moves first.
    let mut first = None;
    for (i, step) in steps.iter().enumerate() {
        let gone_after = match (step, steps.get(i + 1)) {
            (Step::Resize { side, .. }, Some(Step::WaitPodsGone { side: s, ordinals }))
                if s == side =>
            {
                Some(ordinals.as_slice())
            }
            _ => None,
        };
        if let Some(ordinals) = gone_after {
            first = match step {
                Step::Resize {
                    side: Side::Source, ..
                } => ordinals.iter().max().copied(),
                _ => ordinals.iter().min().copied(),
            };
        }
        match step {
            Step::SetBudget { side, .. } => push(None, *side, true, describe(step, names)),
            Step::CreateNamespace => push(
                None,
                Side::Destination,
                true,
                format!(
                    "create namespace {} (labelled as this migration's; a rollback deletes it)",
                    names.destination_namespace
                ),
            ),
            Step::WriteJournal => push(
                None,
                Side::Destination,
                true,
                format!(
                    "write the migration journal (ConfigMap {}/{name}, updated after each step) and hold the Lease {name} while running",
                    names.destination_namespace,
                    name = super::journal::object_name(&names.set)
                ),
            ),
            Step::CopyObject { kind, name } => push(
                None,
                Side::Destination,
                true,
                format!(
                    "copy {kind} {name} from {} (recorded in the journal; a rollback deletes it)",
                    names.source_context
                ),
            ),
            Step::ProtectVolumes { side, volumes } => {
                for name in volumes {
                    let policy = observed
                        .side(*side)
                        .volumes
                        .get(name)
                        .map(|v| v.reclaim_policy.as_str())
                        .unwrap_or("?");
                    push(
                        None,
                        *side,
                        true,
                        format!(
                            "protect PV {name}: reclaim policy {policy} -> Retain (original recorded)"
                        ),
                    );
                }
            }
            Step::HoldRetention => {
                let retention = set_of(Side::Source)
                    .map(|s| s.retention.clone())
                    .unwrap_or_else(Retention::retain);
                push(
                    None,
                    Side::Source,
                    true,
                    format!(
                        "hold PVC retention policy at Retain (was {})",
                        retention_text(&retention)
                    ),
                );
            }
            Step::CreateDestination => {
                let end = set_of(Side::Source).map_or(0, |s| s.start + s.replicas);
                push(
                    None,
                    Side::Destination,
                    true,
                    format!(
                        "create StatefulSet {} with replicas=0, ordinals.start={end}",
                        names.set_at(Side::Destination)
                    ),
                )
            }
            Step::Resize {
                side,
                start,
                replicas,
            } => {
                let action = match gone_after {
                    Some(ordinals) if *side == Side::Source => format!(
                        "scale source to {replicas} replicas and wait until pod(s) {} are gone (Terminating included)",
                        list(ordinals)
                    ),
                    Some(ordinals) => format!(
                        "scale {} to ordinals.start={start}, replicas={replicas} and wait until pod(s) {} are gone (Terminating included)",
                        side_word(*side),
                        list(ordinals)
                    ),
                    None if *side == Side::Source
                        && set_of(Side::Source).is_some_and(|s| s.start == *start) =>
                    {
                        format!("scale source to {replicas} replicas")
                    }
                    None => format!(
                        "patch {} to ordinals.start={start}, replicas={replicas} in one request",
                        side_word(*side)
                    ),
                };
                push(first, *side, true, action);
            }
            Step::WaitPodsGone { side, ordinals }
                if i == 0 || !matches!(steps[i - 1], Step::Resize { .. }) =>
            {
                push(
                    first,
                    *side,
                    false,
                    format!(
                        "wait until pod(s) {} are gone (Terminating included)",
                        list(ordinals)
                    ),
                )
            }
            Step::CopyClaim { to, claim, ordinal } => {
                let volume = observed
                    .side(to.other())
                    .claims
                    .get(claim)
                    .and_then(|c| c.volume_name.clone())
                    .unwrap_or_else(|| "?".into());
                push(
                    Some(*ordinal),
                    *to,
                    true,
                    format!("copy PVC {claim} and PV {volume} (pre-bound, reclaim Retain)"),
                );
            }
            Step::WaitReady { side, ordinals } => {
                let ready = if min_ready_seconds > 0 {
                    format!("Ready for {min_ready_seconds}s (minReadySeconds)")
                } else {
                    "Ready".to_string()
                };
                push(
                    first,
                    *side,
                    false,
                    format!("wait until pod(s) {} are {ready}", list(ordinals)),
                );
            }
            Step::Verify { side, ordinals } => push(
                first,
                *side,
                false,
                format!(
                    "run health check `{}` for ordinal(s) {}",
                    health_check.unwrap_or_default(),
                    list(ordinals)
                ),
            ),
            Step::MarkComplete => push(
                None,
                Side::Destination,
                true,
                "record the migration as complete in the journal".into(),
            ),
            Step::DeleteCopy {
                claim: Some(claim), ..
            } => push(
                None,
                Side::Destination,
                true,
                format!("delete the PVC copy {claim} and wait until it is gone"),
            ),
            Step::DeleteCopy {
                volume: Some(volume),
                ..
            } => push(
                None,
                Side::Destination,
                true,
                format!("delete the PV copy {volume} (storage kept: reclaim Retain)"),
            ),
            Step::DeleteDestination => push(
                None,
                Side::Destination,
                true,
                format!("delete the StatefulSet {}", names.set_at(Side::Destination)),
            ),
            Step::RestoreRetention => {
                let original = journal.map(|j| retention_text(&j.original_retention));
                push(
                    None,
                    Side::Source,
                    true,
                    format!(
                        "restore the PVC retention policy ({})",
                        original.unwrap_or_else(|| "as recorded".into())
                    ),
                );
            }
            Step::RestoreVolume { volume, policy } => push(
                None,
                Side::Source,
                true,
                format!("restore reclaim policy {policy} on PV {volume}"),
            ),
            Step::DeleteCreated { kind, name } => push(
                None,
                Side::Destination,
                true,
                format!("delete {kind} {name} (created by this migration)"),
            ),
            Step::DeleteNamespace => push(
                None,
                Side::Destination,
                true,
                format!(
                    "delete namespace {} (created by this migration), with the journal in it, if it holds nothing else",
                    names.destination_namespace
                ),
            ),
            Step::DeleteJournal => push(
                None,
                Side::Destination,
                true,
                "remove the migration journal".into(),
            ),
            // Told with the scale-down before them, or not steps at all.
            Step::WaitPodsGone { .. }
            | Step::DeleteCopy { .. }
            | Step::Done
            | Step::Stop { .. } => {}
        }
    }
    planned
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Source => "source",
        Side::Destination => "destination",
    }
}

pub fn plan_text(plan: &Plan) -> String {
    let verb = match plan.direction {
        Direction::Forward => "move",
        Direction::Rollback => "move back",
    };
    let order = match plan.direction {
        Direction::Forward => "highest first",
        Direction::Rollback => "lowest first",
    };
    let mut out = format!(
        "Plan: {verb} StatefulSet {} from {} to {} (ordinals {:?}, {order})\n",
        plan.statefulset, plan.from, plan.to, plan.ordinals
    );
    if plan.volumes == VolumeMode::Fresh {
        out += match plan.direction {
            Direction::Forward => {
                "Volumes: fresh. Each pod starts on new, empty claims from the destination's volumeClaimTemplates and must rebuild from its peers; the source's claims and PVs stay (Retain) for a rollback until --cleanup.\n"
            }
            Direction::Rollback => {
                "Volumes: fresh. Each ordinal goes back to its original claims in the source; the destination's new claims are left in place.\n"
            }
        };
    }
    for s in &plan.steps {
        let ordinal = s.ordinal.map(|k| format!("[{k}] ")).unwrap_or_default();
        out += &format!("{:>3}. {ordinal}{} ({})\n", s.number, s.action, s.cluster);
    }
    out
}

/// One line saying what a reconciler step does.
pub fn describe(step: &Step, names: &Names) -> String {
    match step {
        Step::SetBudget {
            side,
            name,
            spec: Some(spec),
        } => format!(
            "set PodDisruptionBudget {name} to {spec} in {} (each side's share keeps the original's limit)",
            names.context(*side)
        ),
        Step::SetBudget {
            side,
            name,
            spec: None,
        } => format!(
            "delete PodDisruptionBudget {name} (the migration's copy) in {}",
            names.context(*side)
        ),
        Step::CreateNamespace => format!(
            "create namespace {} in {}",
            names.destination_namespace, names.destination_context
        ),
        Step::CopyObject { kind, name } => format!(
            "copy {kind} {name} from {} to {}",
            names.source_context, names.destination_context
        ),
        Step::DeleteCreated { kind, name } => format!(
            "delete {kind} {name} (created by the migration) in {}",
            names.destination_context
        ),
        Step::DeleteNamespace => format!(
            "delete namespace {} (created by the migration) in {}",
            names.destination_namespace, names.destination_context
        ),
        Step::WriteJournal => format!(
            "write the migration journal in {}",
            names.destination_context
        ),
        Step::ProtectVolumes { side, volumes } => format!(
            "set reclaim policy of PV(s) {} to Retain in {}",
            volumes.join(", "),
            names.context(*side)
        ),
        Step::HoldRetention => format!(
            "hold PVC retention policy of {} at Retain",
            names.set_at(Side::Source)
        ),
        Step::CreateDestination => format!(
            "create StatefulSet {} with replicas 0",
            names.set_at(Side::Destination)
        ),
        Step::Resize {
            side,
            start,
            replicas,
        } => {
            format!(
                "set {} to ordinals.start={start}, replicas={replicas}",
                names.set_at(*side)
            )
        }
        Step::WaitPodsGone { side, ordinals } => format!(
            "wait for pod(s) {ordinals:?} to be gone from {}",
            names.context(*side)
        ),
        Step::CopyClaim { to, claim, .. } => {
            format!("copy PVC {claim} and its PV to {}", names.context(*to))
        }
        Step::WaitReady { side, ordinals } => format!(
            "wait for pod(s) {ordinals:?} to be Ready in {}",
            names.context(*side)
        ),
        Step::Verify { side, ordinals } => {
            format!("verify ordinal(s) {ordinals:?} in {}", names.context(*side))
        }
        Step::MarkComplete => "mark the migration complete".into(),
        Step::DeleteCopy { claim, volume } => match (claim, volume) {
            (Some(c), _) => format!("delete the PVC copy {c} in {}", names.destination_context),
            (_, Some(v)) => format!(
                "delete the PV copy {v} in {} (storage kept: reclaim Retain)",
                names.destination_context
            ),
            _ => "nothing".into(),
        },
        Step::DeleteDestination => format!(
            "delete the empty StatefulSet {}",
            names.set_at(Side::Destination)
        ),
        Step::RestoreRetention => format!(
            "restore the PVC retention policy of {}",
            names.set_at(Side::Source)
        ),
        Step::RestoreVolume { volume, policy } => format!(
            "restore reclaim policy {policy} on PV {volume} in {}",
            names.source_context
        ),
        Step::DeleteJournal => "remove the migration journal".into(),
        Step::Done => "nothing left to do".into(),
        Step::Stop { reason } => format!("stop: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::model::*;

    fn telling<'a>(
        observed: &'a Observed,
        min_ready_seconds: i32,
        health_check: Option<&'a str>,
    ) -> Telling<'a> {
        let names = Box::leak(Box::new(Names::fixture()));
        Telling {
            observed,
            names,
            min_ready_seconds,
            health_check,
            journal: None,
        }
    }

    fn observed(replicas: i32) -> Observed {
        let retention = Retention {
            when_scaled: "Delete".into(),
            when_deleted: "Retain".into(),
        };
        let mut source = ClusterView {
            set: Some(fixtures::set("u", 0, replicas, retention)),
            ..Default::default()
        };
        for k in 0..replicas {
            let claim = claim_name("data", "web", k);
            fixtures::add_claim(&mut source, "db", &claim, &format!("pv-{k}"), "Delete");
        }
        Observed {
            source,
            destination: ClusterView::default(),
        }
    }

    #[test]
    fn the_plan_protects_first_and_moves_ordinals_highest_first() {
        let observed = observed(3);
        let plan = forward_plan(
            &telling(&observed, 10, Some("./check.sh")),
            &Preparation::default(),
            1,
        );
        let text = plan_text(&plan);
        let position = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing from\n{text}"))
        };
        assert!(position("protect PV pv-0") < position("scale source to 2"));
        assert!(
            position("hold PVC retention policy at Retain (was whenScaled=Delete")
                < position("scale source to 2")
        );
        assert!(
            position("create StatefulSet km-b/db/web with replicas=0, ordinals.start=3")
                < position("scale source to 2")
        );
        assert!(
            position("[2] scale source to 2") < position("[2] copy PVC data-web-2 and PV pv-2")
        );
        assert!(
            position("[2] patch destination to ordinals.start=2, replicas=1 in one request")
                < position("[1] scale source to 1")
        );
        assert!(text.contains("Ready for 10s (minReadySeconds)"));
        assert!(text.contains("[0] run health check `./check.sh` for ordinal(s) 0"));
        assert!(
            position("[2] run health check `./check.sh` for ordinal(s) 2")
                < position("[1] scale source to 1"),
            "each batch's health check belongs to that batch"
        );
        assert_eq!(plan.ordinals, vec![2, 1, 0]);
    }

    #[test]
    fn batches_move_several_ordinals_per_patch() {
        let observed = observed(4);
        let text = plan_text(&forward_plan(
            &telling(&observed, 0, None),
            &Preparation::default(),
            2,
        ));
        assert!(
            text.contains("scale source to 2 replicas and wait until pod(s) 3, 2 are gone"),
            "{text}"
        );
        assert!(
            text.contains("patch destination to ordinals.start=2, replicas=2"),
            "{text}"
        );
        assert!(
            text.contains("patch destination to ordinals.start=0, replicas=4"),
            "{text}"
        );
    }
}
