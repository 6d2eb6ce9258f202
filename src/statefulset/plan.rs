//! PURE: the reconciler's steps as they come when nothing interferes, and the human plan made
//! of them (a numbered list of steps per ordinal, highest first; each step's words are
//! `step`'s).
use serde::Serialize;

use super::budget::BudgetSpec;
use super::decide::{
    apply_budget, budget_step, new_volumes_to_protect, policies_to_restore, shares,
    unprotected_volumes, verify_arrived,
};
use super::model::{
    Direction, Journal, ObjectKind, Observed, Preparation, RecordedBudget, Retention, SetView,
    Side, VolumeMode, claim_name,
};
use super::step::{InPlan, Step, Telling};

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
    forward_steps_to(set, observed, preparation, batch, health_check, None)
}

/// [`forward_steps`], the destination growing up to `resume_end` (a resume: the journal's)
/// rather than the source's end.
fn forward_steps_to(
    set: &str,
    observed: &Observed,
    preparation: &Preparation,
    batch: i32,
    health_check: bool,
    resume_end: Option<i32>,
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
    let unprotected = unprotected_volumes(&observed.source, Side::Source);
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
    let ordinals: Vec<i32> = (start..start + replicas).rev().collect();
    let end = resume_end.unwrap_or(start + replicas);
    let mut remaining = replicas;
    // The budgets as the clusters will show them, step by step.
    let budgets = &preparation.budgets;
    // A resume counts every ordinal of the journal, those in flight included.
    let total = match resume_end {
        Some(end) => end - start,
        None => replicas + observed.destination.set.as_ref().map_or(0, |d| d.replicas),
    };
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
        if preparation.volumes.is_shared() {
            steps.extend(claim_copies(&templates, set, &chunk, |_| false));
        }
        steps.push(Step::Resize {
            side: Side::Destination,
            start: low,
            replicas: end - low,
        });
        let protect = new_claims(
            preparation.volumes,
            &templates,
            set,
            &chunk,
            observed,
            false,
        );
        arrive(&mut steps, Side::Destination, chunk, health_check, protect);
    }
    set_budgets(&mut steps, budgets, total, &mut budgets_now, |o| {
        (o.clone(), Some(o.clone()))
    });
    steps.push(Step::MarkComplete);
    steps
}

/// The copies into the destination of the claims of `ordinals`, but those `copied` already.
fn claim_copies(
    templates: &[String],
    set: &str,
    ordinals: &[i32],
    copied: impl Fn(&str) -> bool,
) -> Vec<Step> {
    let mut copies = Vec::new();
    for &k in ordinals {
        for t in templates {
            let claim = claim_name(t, set, k);
            if !copied(&claim) {
                copies.push(Step::CopyClaim {
                    to: Side::Destination,
                    claim,
                    ordinal: k,
                });
            }
        }
    }
    copies
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

/// With fresh volumes, the claims the destination's controller makes for `ordinals`, whose
/// PVs the reconciler protects once their pods are Ready: all but those protected already
/// (and, `others`, any other claim of the destination's own left unprotected).
fn new_claims(
    volumes: VolumeMode,
    templates: &[String],
    set: &str,
    ordinals: &[i32],
    observed: &Observed,
    others: bool,
) -> Option<Step> {
    if volumes.is_shared() {
        return None;
    }
    let destination = &observed.destination;
    let protected = |claim: &String| {
        destination.claims.get(claim).is_some_and(|c| {
            c.volume_name
                .as_ref()
                .and_then(|v| destination.volumes.get(v))
                .is_some_and(|v| v.reclaim_policy == "Retain")
        })
    };
    let mut claims: Vec<String> = ordinals
        .iter()
        .flat_map(|&k| templates.iter().map(move |t| claim_name(t, set, k)))
        .filter(|claim| !protected(claim))
        .collect();
    if others
        && let Some(Step::ProtectNewVolumes { claims: left }) = new_volumes_to_protect(observed)
    {
        claims.extend(left);
    }
    claims.sort();
    claims.dedup();
    (!claims.is_empty()).then_some(Step::ProtectNewVolumes { claims })
}

/// Ordinals that were started on `side`: waited for, their new volumes protected (`protect`),
/// then (with a health check) verified.
fn arrive(
    steps: &mut Vec<Step>,
    side: Side,
    ordinals: Vec<i32>,
    health_check: bool,
    protect: Option<Step>,
) {
    steps.push(Step::WaitReady {
        side,
        ordinals: ordinals.clone(),
    });
    steps.extend(protect);
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
    let Some(source) = &observed.source.set else {
        return Vec::new();
    };
    let mut back = Rollback {
        journal,
        observed,
        health_check,
        steps: Vec::new(),
        budgets_now: observed.clone(),
    };
    let unprotected = unprotected_volumes(&observed.destination, Side::Destination);
    if !unprotected.is_empty() {
        back.steps.push(Step::ProtectVolumes {
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
        back.arrive(pending);
    }
    if let Some(dest) = &observed.destination.set {
        source_end = back.empty_destination(source.start, source_end, dest, batch);
    }
    if source_end != end {
        // The reconciler stops here and says why (the destination is gone, ordinals are not).
        return back.steps;
    }
    back.restore_source(source);
    back.remove_created();
    back.steps
}

/// [`rollback_steps`] under way: the steps so far, and the budgets as they will be after them.
struct Rollback<'a> {
    journal: &'a Journal,
    observed: &'a Observed,
    health_check: bool,
    steps: Vec<Step>,
    budgets_now: Observed,
}

impl Rollback<'_> {
    /// Ordinals started in the source: waited for, then (with a health check) verified.
    fn arrive(&mut self, ordinals: Vec<i32>) {
        arrive(
            &mut self.steps,
            Side::Source,
            ordinals,
            self.health_check,
            None,
        );
    }

    /// The claims `ordinals` need back in the source that only the destination has.
    fn missing_claims(&mut self, ordinals: &[i32]) {
        let (journal, observed) = (self.journal, self.observed);
        for &k in ordinals {
            for t in &journal.claim_templates {
                let claim = claim_name(t, &journal.name, k);
                // Fresh volumes are never copied back: the source keeps the originals.
                if journal.volumes.is_shared()
                    && !observed.source.claims.contains_key(&claim)
                    && observed.destination.claims.contains_key(&claim)
                {
                    self.steps.push(Step::CopyClaim {
                        to: Side::Source,
                        claim,
                        ordinal: k,
                    });
                }
            }
        }
    }

    /// Moves every ordinal of the destination set `dest` back, the ones in flight first, then
    /// `batch` at a time from the bottom; the destination's claim copies and set go last.
    /// Returns the end of the source's range after it.
    fn empty_destination(
        &mut self,
        source_start: i32,
        mut source_end: i32,
        dest: &SetView,
        batch: i32,
    ) -> i32 {
        let (journal, observed) = (self.journal, self.observed);
        let (mut dest_start, mut dest_replicas) = if dest.replicas > 0 {
            (dest.start, dest.replicas)
        } else {
            (journal.end(), 0)
        };
        let in_flight: Vec<i32> = (source_end..dest_start).collect();
        if !in_flight.is_empty() {
            let still_there: Vec<i32> = in_flight
                .iter()
                .copied()
                .filter(|k| observed.destination.pods.contains_key(k))
                .collect();
            if !still_there.is_empty() {
                self.steps.push(Step::WaitPodsGone {
                    side: Side::Destination,
                    ordinals: still_there,
                });
            }
            self.missing_claims(&in_flight);
            self.steps.push(Step::Resize {
                side: Side::Source,
                start: source_start,
                replicas: dest_start - source_start,
            });
            self.arrive(in_flight);
            source_end = dest_start;
        }
        while dest_replicas > 0 {
            let n = batch.clamp(1, dest_replicas);
            let moving: Vec<i32> = (dest_start..dest_start + n).collect();
            set_budgets(
                &mut self.steps,
                &journal.budgets,
                journal.replicas,
                &mut self.budgets_now,
                shares(
                    journal.replicas,
                    journal.replicas - dest_replicas,
                    dest_replicas - n,
                ),
            );
            self.steps.push(Step::Resize {
                side: Side::Destination,
                start: dest_start + n,
                replicas: dest_replicas - n,
            });
            self.steps.push(Step::WaitPodsGone {
                side: Side::Destination,
                ordinals: moving.clone(),
            });
            self.missing_claims(&moving);
            self.steps.push(Step::Resize {
                side: Side::Source,
                start: source_start,
                replicas: dest_start + n - source_start,
            });
            self.arrive(moving);
            dest_start += n;
            dest_replicas -= n;
            source_end = dest_start;
        }
        for (claim, _) in observed.destination.claims.iter().filter(|(_, c)| c.copied) {
            self.steps.push(Step::DeleteCopy {
                claim: Some(claim.clone()),
                volume: None,
            });
        }
        self.steps.push(Step::DeleteDestination);
        source_end
    }

    /// Everything back in the source: the PV copies go, and the source gets back its
    /// retention policy, its PVs' reclaim policies and its budgets.
    fn restore_source(&mut self, source: &SetView) {
        let (journal, observed) = (self.journal, self.observed);
        for (volume, _) in observed
            .destination
            .volumes
            .iter()
            .filter(|(_, v)| v.copied)
        {
            self.steps.push(Step::DeleteCopy {
                claim: None,
                volume: Some(volume.clone()),
            });
        }
        if source.retention != journal.original_retention {
            self.steps.push(Step::RestoreRetention);
        }
        self.steps.extend(policies_to_restore(journal, observed));
        set_budgets(
            &mut self.steps,
            &journal.budgets,
            journal.replicas,
            &mut self.budgets_now,
            |o| (o.clone(), None),
        );
    }

    /// What the migration created goes, then the journal (with the namespace it made).
    fn remove_created(&mut self) {
        let created = &self.journal.created;
        for object in created.iter().filter(|o| o.kind != ObjectKind::Namespace) {
            self.steps.push(Step::DeleteCreated {
                kind: object.kind,
                name: object.name.clone(),
            });
        }
        self.steps
            .push(if created.iter().any(|o| o.kind == ObjectKind::Namespace) {
                Step::DeleteNamespace
            } else {
                Step::DeleteJournal
            });
    }
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
        steps: tell(telling, &steps),
    }
}

/// The reconciler's steps of a forward migration resumed from `journal`: those of
/// [`forward_steps`] but the journal's write, with the ordinals in flight (gone from the
/// source, not yet verified in the destination) finished first, as the reconciler does.
pub fn resume_steps(
    journal: &Journal,
    observed: &Observed,
    preparation: &Preparation,
    batch: i32,
    health_check: bool,
) -> Vec<Step> {
    let end = journal.end();
    let mut steps = forward_steps_to(
        &journal.name,
        observed,
        preparation,
        batch,
        health_check,
        Some(end),
    );
    steps.retain(|s| !matches!(s, Step::WriteJournal));
    let source_end = observed
        .source
        .set
        .as_ref()
        .map_or(journal.start, |s| s.start + s.replicas);
    let in_flight: Vec<i32> = (source_end..journal.verified_bound).collect();
    let Some(&low) = in_flight.first() else {
        return steps;
    };
    let destination_start = observed.destination.set.as_ref().map_or(end, |d| d.start);
    // Those the destination does not run yet: their pods gone, their claims there, then the
    // destination grown over them.
    let not_there: Vec<i32> = in_flight
        .iter()
        .copied()
        .filter(|&k| k < destination_start)
        .collect();
    let mut finishing = Vec::new();
    if !not_there.is_empty() {
        let still_there: Vec<i32> = not_there
            .iter()
            .copied()
            .filter(|k| observed.source.pods.contains_key(k))
            .collect();
        if !still_there.is_empty() {
            finishing.push(Step::WaitPodsGone {
                side: Side::Source,
                ordinals: still_there,
            });
        }
        if journal.volumes.is_shared() {
            let copied = |claim: &str| observed.destination.claims.contains_key(claim);
            finishing.extend(claim_copies(
                &journal.claim_templates,
                &journal.name,
                &not_there,
                copied,
            ));
        }
        finishing.push(Step::Resize {
            side: Side::Destination,
            start: low,
            replicas: end - low,
        });
    }
    // Arrived and Ready already: only the protection of their new volumes and the
    // verification are left.
    match verify_arrived(observed, Side::Destination, in_flight.clone()) {
        Some(verify @ Step::Verify { .. }) if not_there.is_empty() => {
            finishing.extend(new_volumes_to_protect(observed));
            finishing.push(verify)
        }
        _ => {
            let protect = new_claims(
                journal.volumes,
                &journal.claim_templates,
                &journal.name,
                &in_flight,
                observed,
                true,
            );
            arrive(
                &mut finishing,
                Side::Destination,
                in_flight,
                health_check,
                protect,
            )
        }
    }
    // After what is made or protected before any ordinal moves.
    let at = steps
        .iter()
        .position(|s| {
            !s.is_preparation()
                && !matches!(
                    s,
                    Step::ProtectVolumes { .. } | Step::HoldRetention | Step::CreateDestination
                )
        })
        .unwrap_or(steps.len());
    steps.splice(at..at, finishing);
    steps
}

/// The plan of a resumed forward migration: the steps of [`resume_steps`], the ordinals in
/// flight first.
pub fn resume_plan(
    telling: &Telling<'_>,
    journal: &Journal,
    preparation: &Preparation,
    batch: i32,
) -> Plan {
    let mut plan = forward_plan(telling, preparation, batch);
    let steps = resume_steps(
        journal,
        telling.observed,
        preparation,
        batch,
        telling.health_check.is_some(),
    );
    let source_end = plan.ordinals.first().map_or(journal.start, |k| k + 1);
    let in_flight = (source_end..journal.verified_bound).rev();
    plan.ordinals = in_flight.chain(plan.ordinals).collect();
    plan.steps = tell(telling, &steps);
    plan
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
            &steps,
        ),
    }
}

/// Each step as lines of the plan, numbered. Waits that a scale-down starts are told with it.
fn tell(telling: &Telling<'_>, steps: &[Step]) -> Vec<PlannedStep> {
    let mut planned = Vec::new();
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
        let at = InPlan {
            telling,
            gone_after,
            after_resize: i > 0 && matches!(steps[i - 1], Step::Resize { .. }),
        };
        let ordinal = match step {
            Step::CopyClaim { ordinal, .. } => Some(*ordinal),
            Step::Resize { .. }
            | Step::WaitPodsGone { .. }
            | Step::WaitReady { .. }
            | Step::Verify { .. } => first,
            _ => None,
        };
        for action in step.plan_lines(&at) {
            planned.push(PlannedStep {
                number: planned.len() + 1,
                ordinal,
                cluster: telling.names.context(step.side()).to_string(),
                writes: step.writes(),
                action,
            });
        }
    }
    planned
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::decide::next_step;
    use crate::statefulset::decide::world::{NAME, World, fresh_worlds, settings, worlds};
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
        assert!(text.contains("[0] run health check `./check.sh` for ordinal 0"));
        assert!(
            position("[2] run health check `./check.sh` for ordinal 2")
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
            text.contains("scale source to 2 replicas and wait until pods 2-3 are gone"),
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

    /// The plan and `--dry-run=server` come from [`forward_steps`]; it must be what the
    /// reconciler does when nothing interferes (waits that repeat until the controllers
    /// converge count once).
    #[test]
    fn the_planned_steps_are_the_reconcilers() {
        let cases = [(3, 1), (4, 2), (5, 3), (1, 1)];
        for ((replicas, batch), fresh) in cases.into_iter().flat_map(|c| [(c, false), (c, true)]) {
            let all = if fresh {
                fresh_worlds(0, replicas, batch)
            } else {
                worlds(0, replicas, batch)
            };
            for world in all {
                let mut world = world;
                let preparation = Preparation {
                    budgets: world.budgets.clone(),
                    volumes: world.volumes,
                    ..Default::default()
                };
                let planned = forward_steps(NAME, &world.observed, &preparation, batch, true);
                let mut taken = world.run(&settings(batch), &[false], 500);
                assert_eq!(taken.pop(), Some(Step::Done));
                taken.dedup();
                assert_eq!(
                    taken, planned,
                    "{replicas} replicas, batch {batch}, fresh {fresh}, budgets {:?}",
                    world.budgets
                );
                let copies = taken.iter().any(|s| matches!(s, Step::CopyClaim { .. }));
                assert_eq!(copies, !fresh, "fresh volumes copy no claim: {taken:?}");
            }
        }
    }

    /// Decides and applies up to `steps` steps of `world` (fewer once it is done), then lets
    /// the controllers catch up: a plan tells what happens from there.
    fn advance(world: &mut World, steps: usize, s: &crate::statefulset::decide::Settings) {
        for _ in 0..steps {
            let step = next_step(world.journal.as_ref(), &world.observed, s);
            if step == Step::Done {
                break;
            }
            world.apply(&step);
        }
        for _ in 0..3 {
            world.controller_tick(Side::Source);
            world.controller_tick(Side::Destination);
        }
    }

    /// A resume's plan comes from [`resume_steps`]: from any point of a forward migration
    /// that has its journal, it must be what the reconciler then does, the ordinals in flight
    /// first.
    #[test]
    fn the_planned_resume_steps_are_the_reconcilers() {
        for ((replicas, batch), fresh) in [(3, 1), (4, 2), (5, 3), (1, 1)]
            .into_iter()
            .flat_map(|c| [(c, false), (c, true)])
        {
            let variants = if fresh { 1 } else { 4 };
            for (forward, variant) in (1..60).flat_map(|f| (0..variants).map(move |v| (f, v))) {
                let mut world = if fresh {
                    fresh_worlds(0, replicas, batch).swap_remove(variant)
                } else {
                    worlds(0, replicas, batch).swap_remove(variant)
                };
                let s = settings(batch);
                advance(&mut world, forward, &s);
                // A complete migration is not resumed (the run says so and stops).
                let Some(journal) = world.journal.clone().filter(|j| !j.complete) else {
                    continue;
                };
                let preparation = Preparation {
                    budgets: world.budgets.clone(),
                    volumes: world.volumes,
                    ..Default::default()
                };
                let planned = resume_steps(&journal, &world.observed, &preparation, batch, true);
                let mut taken = world.run(&s, &[false], 500);
                assert_eq!(taken.pop(), Some(Step::Done));
                taken.dedup();
                assert_eq!(
                    taken, planned,
                    "{replicas} replicas, batch {batch}, fresh {fresh}, after {forward} steps"
                );
            }
        }
    }

    /// The rollback prompt's plan comes from [`rollback_steps`]: from any point of a
    /// forward migration, it must be what the reconciler then does.
    #[test]
    fn the_planned_rollback_steps_are_the_reconcilers() {
        for (replicas, batch) in [(3, 1), (4, 2), (5, 3), (1, 1)] {
            for (forward, variant) in (0..60).flat_map(|f| (0..4).map(move |v| (f, v))) {
                let mut world = worlds(0, replicas, batch).swap_remove(variant);
                let s = settings(batch);
                advance(&mut world, forward, &s);
                let Some(journal) = world.journal.as_mut() else {
                    continue;
                };
                journal.created = vec![
                    ObjectRef {
                        kind: ObjectKind::ConfigMap,
                        name: "settings".into(),
                    },
                    ObjectRef {
                        kind: ObjectKind::Namespace,
                        name: "ns".into(),
                    },
                ];
                // Planned before --rollback turns the journal, as the prompt is.
                let planned = rollback_steps(journal, &world.observed, batch, true);
                journal.direction = Direction::Rollback;
                journal.complete = false;
                let src = world.observed.source.set.as_ref().unwrap();
                journal.verified_bound = src.start + src.replicas;
                let mut taken = world.run(&s, &[false], 500);
                taken.dedup();
                assert_eq!(
                    taken, planned,
                    "{replicas} replicas, batch {batch}, after {forward} forward steps"
                );
            }
        }
    }
}
