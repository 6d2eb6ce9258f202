//! The heart of the migration: given the journal and what both clusters show, the next safe
//! step. Pure, so every decision is testable without a cluster, and a crash at any point needs no
//! special resume code: the next run observes and decides again.
//!
//! Ranges: the source keeps `start = s0` and owns [s0, s0 + S.replicas); the destination owns
//! [D.start, s0 + N). Ordinals in between are "in flight": down in both clusters.
use super::budget::{self, BudgetSpec};
use super::model::{
    ClaimView, ClusterView, Direction, Journal, ObjectKind, Observed, RecordedBudget, Side,
    VolumeMode, claim_name,
};
use super::step::Step;

/// What the decision needs besides the observation.
#[derive(Debug, Clone)]
pub struct Settings {
    pub name: String,
    /// Ordinals moved per step (>= 1).
    pub batch: i32,
    /// `--recreate-destination`: a destination set deleted mid-migration is created again over
    /// the ordinals the journal places there (see [`destination_gone`]).
    pub recreate_destination: bool,
}

pub fn next_step(journal: Option<&Journal>, observed: &Observed, settings: &Settings) -> Step {
    let Some(journal) = journal else {
        return match (&observed.source.set, &observed.destination.set) {
            (None, _) => stop(format!(
                "the source StatefulSet {} does not exist",
                settings.name
            )),
            // Without the journal we cannot know the original size or policies; never guess.
            (Some(_), Some(_)) => stop(format!(
                "a StatefulSet {} exists in the destination but the migration journal does not; it was deleted or this is not our migration. \
                 If it was deleted, --rebuild-journal rebuilds it from what both clusters show",
                settings.name
            )),
            // Copies of a migration whose journal and destination set are gone: starting
            // afresh would take the source's current size for the original one.
            (Some(_), None) => match orphaned_copies(&settings.name, "the destination", observed) {
                Some(reason) => stop(reason),
                None => Step::WriteJournal,
            },
        };
    };
    match journal.direction {
        Direction::Forward => forward(journal, observed, settings),
        Direction::Rollback => rollback(journal, observed, settings),
    }
}

/// Why a migration must not start afresh: `place` (the destination) holds claims copied by an
/// earlier migration of `set` whose journal is gone, and a fresh start would take the source's
/// current size for the original one and orphan them.
pub(super) fn orphaned_copies(set: &str, place: &str, observed: &Observed) -> Option<String> {
    let copies: Vec<&str> = observed
        .destination
        .claims
        .iter()
        .filter(|(_, c)| c.copied)
        .map(|(n, _)| n.as_str())
        .collect();
    (!copies.is_empty()).then(|| {
        format!(
            "{place} holds claims copied by an earlier migration of {set} ({}) but no journal; \
             rebuild it with --rebuild-journal, then rerun to resume or --rollback",
            copies.join(", ")
        )
    })
}

/// The PVs whose reclaim policy is not the one the journal recorded (the source's, and the
/// destination's own with fresh volumes): each given back.
pub(super) fn policies_to_restore<'a>(
    journal: &'a Journal,
    observed: &'a Observed,
) -> impl Iterator<Item = Step> + 'a {
    [
        (Side::Source, &journal.original_reclaim_policies),
        (
            Side::Destination,
            &journal.original_destination_reclaim_policies,
        ),
    ]
    .into_iter()
    .flat_map(move |(side, originals)| {
        originals
            .iter()
            .filter(move |(volume, policy)| {
                observed
                    .side(side)
                    .volumes
                    .get(*volume)
                    .is_some_and(|v| &v.reclaim_policy != *policy)
            })
            .map(move |(volume, policy)| Step::RestoreVolume {
                side,
                volume: volume.clone(),
                policy: policy.clone(),
            })
    })
}

fn stop(reason: String) -> Step {
    Step::Stop { reason }
}

/// Invariants that must hold in both directions; a violation means someone else changed the sets.
fn check_ranges(journal: &Journal, observed: &Observed) -> Option<Step> {
    let source = observed.source.set.as_ref()?;
    if source.uid != journal.source_uid {
        return Some(stop(format!(
            "the source StatefulSet was replaced (uid {} is not the {} recorded when the migration began)",
            source.uid, journal.source_uid
        )));
    }
    if source.start != journal.start {
        return Some(stop(format!(
            "the source's spec.ordinals.start changed from {} to {}; put it back to {} and rerun",
            journal.start, source.start, journal.start
        )));
    }
    let source_end = source.start + source.replicas;
    if journal.direction == Direction::Rollback && source_end < journal.verified_bound {
        return Some(stop(format!(
            "the source was scaled down by hand: ordinals [{source_end}, {}) were verified back in it and are no longer assigned to it. \
             Scale it back to {} replicas and rerun",
            journal.verified_bound,
            journal.verified_bound - source.start
        )));
    }
    if source_end > journal.end() {
        return Some(stop(format!(
            "the source has {} replicas, more than the {} it had when the migration began; someone scaled it by hand",
            source.replicas, journal.replicas
        )));
    }
    if let Some(dest) = observed.destination.set.as_ref() {
        if dest.migrated_from_uid.as_deref() != Some(journal.source_uid.as_str()) {
            return Some(stop(
                "the destination StatefulSet was not created by this migration".into(),
            ));
        }
        // Ordinals verified on one side must still be assigned there: fewer means that side
        // was scaled down by hand. Named, never "fixed".
        let dest_low = if dest.replicas > 0 {
            dest.start
        } else {
            journal.end()
        };
        if journal.direction == Direction::Forward && dest_low > journal.verified_bound {
            return Some(stop(format!(
                "the destination was scaled down by hand: ordinals [{}, {}) were verified running there and are no longer assigned to it \
                 (start {}, replicas {}). Scale it back to ordinals.start={}, replicas={} and rerun",
                journal.verified_bound,
                dest_low,
                dest.start,
                dest.replicas,
                journal.verified_bound,
                journal.end() - journal.verified_bound
            )));
        }
        if dest.replicas > 0 {
            if dest.start + dest.replicas != journal.end() {
                return Some(stop(format!(
                    "the destination owns ordinals [{}, {}), but it must end at {}; someone changed its replicas or start",
                    dest.start,
                    dest.start + dest.replicas,
                    journal.end()
                )));
            }
            if source_end > dest.start {
                return Some(stop(format!(
                    "ordinals [{}, {}) are assigned to both clusters (source replicas {}, destination start {}); someone scaled the source by hand. \
                     Scale the source back to {} replicas and rerun",
                    dest.start,
                    source_end,
                    source.replicas,
                    dest.start,
                    dest.start - source.start
                )));
            }
        }
    }
    None
}

/// The destination set is missing. Before any ordinal left the source that only means it is
/// not created yet (`None`). After, someone deleted it: with `--cascade=orphan` its pods still
/// run there, and a set created afresh (ordinals.start at the end, replicas 0) would make its
/// controller adopt and delete them. So this is drift: stop before any write and name the
/// recovery, or with `--recreate-destination` create it over the ordinals the journal and the
/// running pods place there. A rollback without pods running there goes on without it.
fn destination_gone(journal: &Journal, observed: &Observed, settings: &Settings) -> Option<Step> {
    let source = observed.source.set.as_ref()?;
    let source_end = source.start + source.replicas;
    let end = journal.end();
    let running: Vec<i32> = observed
        .destination
        .pods
        .iter()
        .filter(|(k, p)| (source_end..end).contains(*k) && !p.terminating)
        .map(|(k, _)| *k)
        .collect();
    let forward = journal.direction == Direction::Forward;
    let verified_there = if forward {
        journal.verified_bound.clamp(source_end, end)
    } else {
        end
    };
    // No pod there and none verified there: the in-flight ordinals never ran in it, and the
    // set is created as usual (a rebuilt journal resumes that way).
    if running.is_empty() && (verified_there == end || !forward) {
        return None;
    }
    let start = running
        .first()
        .map_or(verified_there, |&k| k.min(verified_there));
    let replicas = end - start;
    if settings.recreate_destination {
        return Some(Step::RecreateDestination { start, replicas });
    }
    let set = &settings.name;
    let recreate = format!(
        "Rerun with --recreate-destination to create it again with ordinals.start={start}, replicas={replicas}"
    );
    let reason = if running.is_empty() {
        format!(
            "the destination StatefulSet {set} was deleted mid-migration with its pods: ordinals [{source_end}, {end}) left the source \
             and run nowhere now (their claims are kept). Nothing was written. {recreate} (its controller starts them on their claims) \
             and go on, or with --rollback to bring them back to the source"
        )
    } else {
        let pods: Vec<String> = running
            .iter()
            .map(|k| super::model::pod_name(set, *k))
            .collect();
        format!(
            "the destination StatefulSet {set} was deleted mid-migration: {} still {} there without it. Nothing was written: \
             a StatefulSet created afresh would start at ordinal {end}, and its controller would adopt those pods and delete them. \
             {recreate} (its controller adopts them) and go on, or with --rollback --recreate-destination to move every ordinal back",
            super::words::named(&pods, "pod", "pods"),
            super::words::noun(pods.len() as i64, "runs", "run")
        )
    };
    Some(stop(reason))
}

/// The claims in `view` that `which` selects, each with its PV, whose PV's reclaim policy is
/// not Retain yet.
fn unprotected<'a>(
    view: &'a ClusterView,
    which: impl Fn(&ClaimView) -> bool + 'a,
) -> impl Iterator<Item = (&'a String, &'a String)> + 'a {
    view.claims
        .iter()
        .filter(move |(_, c)| which(c))
        .filter_map(|(name, c)| c.volume_name.as_ref().map(|v| (name, v)))
        .filter(|(_, v)| {
            view.volumes
                .get(*v)
                .is_some_and(|pv| pv.reclaim_policy != "Retain")
        })
}

/// The PVs of the set's claims on `side` whose reclaim policy is not Retain yet: every one in
/// the source, the copies in the destination (the claims its controller made, with fresh
/// volumes, are [`new_volumes_to_protect`]'s).
pub(super) fn unprotected_volumes(view: &ClusterView, side: Side) -> Vec<String> {
    unprotected(view, |c| side == Side::Source || c.copied)
        .map(|(_, volume)| volume.clone())
        .collect()
}

/// Protect every PV of the set in `side` before anything is scaled.
fn unprotected_volume(observed: &Observed, side: Side) -> Option<Step> {
    let volumes = unprotected_volumes(observed.side(side), side);
    (!volumes.is_empty()).then_some(Step::ProtectVolumes { side, volumes })
}

/// With fresh volumes, the PVs of the claims the destination's controller made: protected
/// (their policies recorded) once their pods are Ready, before they are verified.
pub(super) fn new_volumes_to_protect(observed: &Observed) -> Option<Step> {
    let claims: Vec<String> = unprotected(&observed.destination, |c| !c.copied)
        .map(|(claim, _)| claim.clone())
        .collect();
    (!claims.is_empty()).then_some(Step::ProtectNewVolumes { claims })
}

/// For ordinals moving to `to`: wait for their pods to leave the other side, then make sure
/// every claim exists on `to` (copying it from the other side if needed).
fn prepare_in_flight(
    journal: &Journal,
    observed: &Observed,
    settings: &Settings,
    to: Side,
    ordinals: &[i32],
) -> Option<Step> {
    let from = observed.side(to.other());
    let still_there: Vec<i32> = ordinals
        .iter()
        .copied()
        .filter(|k| from.pods.contains_key(k))
        .collect();
    if !still_there.is_empty() {
        return Some(Step::WaitPodsGone {
            side: to.other(),
            ordinals: still_there,
        });
    }
    let target = observed.side(to);
    if journal.volumes == VolumeMode::Fresh {
        return fresh_claims_in_place(journal, target, settings, to, ordinals);
    }
    for &k in ordinals {
        for template in &journal.claim_templates {
            let claim = claim_name(template, &settings.name, k);
            match (target.claims.get(&claim), from.claims.get(&claim)) {
                (Some(existing), Some(original))
                    if existing.volume_name.is_some()
                        && existing.volume_name != original.volume_name =>
                {
                    return Some(stop(format!(
                        "claim {claim} points at volume {:?} in one cluster and {:?} in the other; refusing to guess which holds the data",
                        original.volume_name, existing.volume_name
                    )));
                }
                (Some(_), _) => {}
                (None, Some(_)) => {
                    return Some(Step::CopyClaim {
                        to,
                        claim,
                        ordinal: k,
                    });
                }
                (None, None) => {
                    return Some(stop(format!(
                        "claim {claim} of ordinal {k} exists in neither cluster; refusing to start the pod with an empty volume"
                    )));
                }
            }
        }
    }
    None
}

/// With fresh volumes nothing is copied: the destination's controller makes new claims from
/// its templates, and a rollback needs each ordinal's original claims, still in the source.
fn fresh_claims_in_place(
    journal: &Journal,
    target: &ClusterView,
    settings: &Settings,
    to: Side,
    ordinals: &[i32],
) -> Option<Step> {
    if to == Side::Destination {
        return None;
    }
    for &k in ordinals {
        for template in &journal.claim_templates {
            let claim = claim_name(template, &settings.name, k);
            if !target.claims.contains_key(&claim) {
                return Some(stop(format!(
                    "claim {claim} of ordinal {k} is gone from the source; with --volumes=fresh it holds the ordinal's original data, so the rollback will not start the pod on an empty one"
                )));
            }
        }
    }
    None
}

/// Waits for readiness, then verification, of ordinals that arrived on `side`.
pub(super) fn verify_arrived(observed: &Observed, side: Side, pending: Vec<i32>) -> Option<Step> {
    if pending.is_empty() {
        return None;
    }
    let view = observed.side(side);
    let set = view.set.as_ref()?;
    let pods_ready = pending
        .iter()
        .all(|k| view.pods.get(k).is_some_and(|p| p.ready && !p.terminating));
    let set_settled =
        set.observed_generation >= set.generation && set.available_replicas >= set.replicas;
    if !pods_ready || !set_settled {
        return Some(Step::WaitReady {
            side,
            ordinals: pending,
        });
    }
    Some(Step::Verify {
        side,
        ordinals: pending,
    })
}

/// The first budget write that brings both sides to what `desired` says for each recorded
/// budget (source spec, destination spec or `None` for no copy), for a set of `total` pods.
/// Per budget the side whose share grows goes first, so that between the two writes the sides
/// together never allow more than the original. A budget the user deleted from the source is no
/// longer managed: its copy goes.
pub(super) fn budget_step(
    budgets: &[RecordedBudget],
    total: i32,
    observed: &Observed,
    desired: impl Fn(&BudgetSpec) -> (BudgetSpec, Option<BudgetSpec>),
) -> Option<Step> {
    // What a spec requires, measured against the whole set so that two specs compare.
    let required = |spec: Option<&BudgetSpec>| spec.and_then(|s| s.required(total)).unwrap_or(0);
    for recorded in budgets {
        let current_source = observed.source.budgets.get(&recorded.name);
        let current_destination = observed.destination.budgets.get(&recorded.name);
        let (want_source, want_destination) = match current_source {
            Some(_) => {
                let (s, d) = desired(&recorded.original);
                (Some(s), d)
            }
            None => (None, None),
        };
        let set = |side, spec: &Option<BudgetSpec>| Step::SetBudget {
            side,
            name: recorded.name.clone(),
            spec: spec.clone(),
        };
        let source_differs = want_source.is_some() && current_source != want_source.as_ref();
        let destination_differs = current_destination != want_destination.as_ref();
        let source_tightens = required(want_source.as_ref()) > required(current_source);
        match (source_differs, destination_differs) {
            (true, true) if source_tightens => return Some(set(Side::Source, &want_source)),
            (_, true) => return Some(set(Side::Destination, &want_destination)),
            (true, false) => return Some(set(Side::Source, &want_source)),
            (false, false) => {}
        }
    }
    None
}

/// Each side's share while `source` pods run in the source and `destination` in the
/// destination, of a set of `total`.
pub(super) fn shares(
    total: i32,
    source: i32,
    destination: i32,
) -> impl Fn(&BudgetSpec) -> (BudgetSpec, Option<BudgetSpec>) {
    move |original| {
        let (s, d) = budget::split(original, total, source, destination);
        (s, Some(d))
    }
}

/// What a budget write leaves: `observed` as the cluster then shows it.
pub(super) fn apply_budget(observed: &mut Observed, step: &Step) {
    if let Step::SetBudget { side, name, spec } = step {
        let budgets = &mut observed.side_mut(*side).budgets;
        match spec {
            Some(spec) => budgets.insert(name.clone(), spec.clone()),
            None => budgets.remove(name),
        };
    }
}

fn forward(journal: &Journal, observed: &Observed, settings: &Settings) -> Step {
    if journal.complete {
        return Step::Done;
    }
    let Some(source) = observed.source.set.as_ref() else {
        return stop(format!(
            "the source StatefulSet {} disappeared mid-migration",
            settings.name
        ));
    };
    if let Some(step) = check_ranges(journal, observed) {
        return step;
    }
    if observed.destination.set.is_none()
        && let Some(step) = destination_gone(journal, observed, settings)
    {
        return step;
    }
    // Protection comes before any scaling, and is re-checked on every run.
    if let Some(step) = unprotected_volume(observed, Side::Source) {
        return step;
    }
    if !source.retention.is_retain() {
        return Step::HoldRetention;
    }
    let Some(dest) = observed.destination.set.as_ref() else {
        return Step::CreateDestination;
    };
    if let Some(step) = unprotected_volume(observed, Side::Destination) {
        return step;
    }
    let dest_start = if dest.replicas > 0 {
        dest.start
    } else {
        journal.end()
    };

    // Ordinals that arrived but are not verified yet: once Ready, their new volumes are
    // protected first.
    let pending: Vec<i32> = (dest_start..journal.verified_bound.min(journal.end())).collect();
    let arrived = verify_arrived(observed, Side::Destination, pending);
    if !matches!(arrived, Some(Step::WaitReady { .. }))
        && let Some(step) = new_volumes_to_protect(observed)
    {
        return step;
    }
    if let Some(step) = arrived {
        return step;
    }

    let source_end = source.start + source.replicas;
    let in_flight: Vec<i32> = (source_end..dest_start).collect();
    if in_flight.len() > settings.batch as usize {
        return stop(format!(
            "the source has {} replicas, but this migration only took it down to {}; someone scaled it down by hand. \
             Scale it back to {} replicas, or rerun with --batch {} to move ordinals [{}, {}) together",
            source.replicas,
            dest_start - source.start - settings.batch,
            dest_start - source.start - settings.batch,
            in_flight.len(),
            source_end,
            dest_start
        ));
    }
    if !in_flight.is_empty() {
        if let Some(step) =
            prepare_in_flight(journal, observed, settings, Side::Destination, &in_flight)
        {
            return step;
        }
        return Step::Resize {
            side: Side::Destination,
            start: source_end,
            replicas: journal.end() - source_end,
        };
    }
    if source.replicas > 0 {
        let n = settings.batch.clamp(1, source.replicas);
        // Before the batch goes down, the budgets take the shares of the pods that stay up
        // while it is in flight: no side then requires more pods than it has, and the
        // ordinals in flight are the original's allowed disruptions.
        let shares = shares(
            journal.replicas,
            source.replicas - n,
            journal.replicas - source.replicas,
        );
        if let Some(step) = budget_step(&journal.budgets, journal.replicas, observed, shares) {
            return step;
        }
        return Step::Resize {
            side: Side::Source,
            start: source.start,
            replicas: source.replicas - n,
        };
    }
    // Everything runs in the destination: both sides get the original spec back.
    if let Some(step) = budget_step(&journal.budgets, journal.replicas, observed, |o| {
        (o.clone(), Some(o.clone()))
    }) {
        return step;
    }
    Step::MarkComplete
}

fn rollback(journal: &Journal, observed: &Observed, settings: &Settings) -> Step {
    let Some(source) = observed.source.set.as_ref() else {
        return stop(format!(
            "the source StatefulSet {} no longer exists (was --cleanup run?); rollback needs it",
            settings.name
        ));
    };
    if let Some(step) = check_ranges(journal, observed) {
        return step;
    }
    // Before anything is deleted in the destination, every PV there must be Retain.
    if let Some(step) = unprotected_volume(observed, Side::Destination) {
        return step;
    }
    let source_end = source.start + source.replicas;
    if let Some(dest) = observed.destination.set.as_ref() {
        let dest_start = if dest.replicas > 0 {
            dest.start
        } else {
            journal.end()
        };
        let pending: Vec<i32> = (journal.verified_bound.max(journal.start)..source_end).collect();
        if let Some(step) = verify_arrived(observed, Side::Source, pending) {
            return step;
        }
        let in_flight: Vec<i32> = (source_end..dest_start).collect();
        if !in_flight.is_empty() {
            if let Some(step) =
                prepare_in_flight(journal, observed, settings, Side::Source, &in_flight)
            {
                return step;
            }
            return Step::Resize {
                side: Side::Source,
                start: source.start,
                replicas: dest_start - source.start,
            };
        }
        if dest.replicas > 0 {
            let n = settings.batch.clamp(1, dest.replicas);
            let shares = shares(
                journal.replicas,
                journal.replicas - dest.replicas,
                dest.replicas - n,
            );
            if let Some(step) = budget_step(&journal.budgets, journal.replicas, observed, shares) {
                return step;
            }
            return Step::Resize {
                side: Side::Destination,
                start: dest.start + n,
                replicas: dest.replicas - n,
            };
        }
        // Everything is back in the source: remove the destination's copies, claims first.
        if let Some((claim, _)) = observed.destination.claims.iter().find(|(_, c)| c.copied) {
            return Step::DeleteCopy {
                claim: Some(claim.clone()),
                volume: None,
            };
        }
        return Step::DeleteDestination;
    }
    // The destination set was deleted mid-rollback: ordinals that left the source come back
    // to it once their pods are gone from the destination, unless pods still run there.
    if source_end != journal.end() {
        if let Some(step) = destination_gone(journal, observed, settings) {
            return step;
        }
        let in_flight: Vec<i32> = (source_end..journal.end()).collect();
        if let Some(step) = prepare_in_flight(journal, observed, settings, Side::Source, &in_flight)
        {
            return step;
        }
        return Step::Resize {
            side: Side::Source,
            start: source.start,
            replicas: journal.replicas,
        };
    }
    let pending: Vec<i32> = (journal.verified_bound.max(journal.start)..source_end).collect();
    if let Some(step) = verify_arrived(observed, Side::Source, pending) {
        return step;
    }
    // Claims first, then their PVs: copies left by a destination set deleted mid-migration.
    if let Some((claim, _)) = observed.destination.claims.iter().find(|(_, c)| c.copied) {
        return Step::DeleteCopy {
            claim: Some(claim.clone()),
            volume: None,
        };
    }
    if let Some((volume, _)) = observed.destination.volumes.iter().find(|(_, v)| v.copied) {
        return Step::DeleteCopy {
            claim: None,
            volume: Some(volume.clone()),
        };
    }
    if source.retention != journal.original_retention {
        return Step::RestoreRetention;
    }
    if let Some(step) = policies_to_restore(journal, observed).next() {
        return step;
    }
    // The source's budgets as they were; the destination's copies go.
    if let Some(step) = budget_step(&journal.budgets, journal.replicas, observed, |o| {
        (o.clone(), None)
    }) {
        return step;
    }
    // Last, what the migration created besides copies: the objects, then the namespace.
    if let Some(object) = journal
        .created
        .iter()
        .find(|o| o.kind != ObjectKind::Namespace)
    {
        return Step::DeleteCreated {
            kind: object.kind,
            name: object.name.clone(),
        };
    }
    if journal
        .created
        .iter()
        .any(|o| o.kind == ObjectKind::Namespace)
    {
        return Step::DeleteNamespace;
    }
    Step::DeleteJournal
}

/// Records what a Verify step confirmed: the new bound of verified ordinals.
pub fn verified_bound_after(direction: Direction, ordinals: &[i32], current: i32) -> i32 {
    match direction {
        Direction::Forward => ordinals
            .iter()
            .copied()
            .min()
            .map_or(current, |m| m.min(current)),
        Direction::Rollback => ordinals
            .iter()
            .copied()
            .max()
            .map_or(current, |m| (m + 1).max(current)),
    }
}

/// A toy world the decisions are tested in (the plan's tests use it too).
#[cfg(test)]
pub(super) mod world;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::world::{NAME, World, fresh_worlds, set, settings, worlds};
    use super::*;
    use crate::statefulset::model::*;

    #[test]
    fn a_rollback_removes_what_the_migration_created_then_its_namespace() {
        let mut world = World::new(0, 2);
        let s = settings(1);
        run_until(&mut world, &s, |j| j.complete);
        let j = world.journal.as_mut().unwrap();
        j.created = vec![
            ObjectRef {
                kind: ObjectKind::Namespace,
                name: "ns".into(),
            },
            ObjectRef {
                kind: ObjectKind::Service,
                name: "web".into(),
            },
            ObjectRef {
                kind: ObjectKind::Secret,
                name: "creds".into(),
            },
        ];
        j.direction = Direction::Rollback;
        j.complete = false;
        j.verified_bound = 0;
        let steps = world.run(&s, &[false], 500);
        let tail: Vec<&Step> = steps.iter().rev().take(3).rev().collect();
        assert_eq!(
            tail,
            [
                &Step::DeleteCreated {
                    kind: ObjectKind::Service,
                    name: "web".into()
                },
                &Step::DeleteCreated {
                    kind: ObjectKind::Secret,
                    name: "creds".into()
                },
                &Step::DeleteNamespace,
            ]
        );
        assert!(world.journal.is_none());
    }

    #[test]
    fn no_journal_means_write_it_first() {
        let world = World::new(0, 3);
        assert_eq!(
            next_step(None, &world.observed, &settings(1)),
            Step::WriteJournal
        );
    }

    #[test]
    fn a_destination_without_a_journal_is_never_adopted() {
        let mut world = World::new(0, 2);
        world.observed.destination.set = Some(set("dst", 2, 0));
        let step = next_step(None, &world.observed, &settings(1));
        assert!(
            matches!(&step, Step::Stop { reason } if reason.contains("journal does not")),
            "{step:?}"
        );
    }

    #[test]
    fn a_missing_source_stops_before_anything_is_written() {
        let observed = Observed::default();
        assert!(
            matches!(next_step(None, &observed, &settings(1)), Step::Stop { reason } if reason.contains("does not exist"))
        );
    }

    #[test]
    fn volumes_are_protected_before_anything_is_scaled() {
        let mut world = World::new(0, 2);
        let steps = world.run(&settings(1), &[true], 200);
        let first_resize = steps
            .iter()
            .position(|s| matches!(s, Step::Resize { .. }))
            .unwrap();
        let protections: usize = steps
            .iter()
            .take(first_resize)
            .map(|s| match s {
                Step::ProtectVolumes { volumes, .. } => volumes.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(protections, 4, "2 ordinals x 2 templates: {steps:?}");
        assert!(steps[..first_resize].contains(&Step::HoldRetention));
        assert!(steps[..first_resize].contains(&Step::CreateDestination));
    }

    #[test]
    fn the_destination_is_patched_only_after_the_source_pod_is_gone_and_the_claims_are_copied() {
        let mut world = World::new(0, 3);
        let steps = world.run(&settings(1), &[false, true], 400);
        for (i, step) in steps.iter().enumerate() {
            if let Step::Resize {
                side: Side::Destination,
                start,
                ..
            } = step
            {
                let copied = steps[..i]
                    .iter()
                    .any(|s| matches!(s, Step::CopyClaim { ordinal, .. } if ordinal == start));
                assert!(
                    copied,
                    "ordinal {start} started in the destination before its claims were copied"
                );
            }
        }
        assert_eq!(world.fresh_claims, Vec::<String>::new());
    }

    #[test]
    fn a_source_scaled_up_by_hand_stops_with_an_explanation() {
        let mut world = World::new(0, 3);
        let s = settings(1);
        // Run until the destination owns ordinal 2.
        while world
            .observed
            .destination
            .set
            .as_ref()
            .is_none_or(|d| d.replicas == 0)
        {
            let step = next_step(world.journal.as_ref(), &world.observed, &s);
            world.apply(&step);
            world.controller_tick(Side::Source);
            world.controller_tick(Side::Destination);
        }
        world.observed.source.set.as_mut().unwrap().replicas = 3;
        let step = next_step(world.journal.as_ref(), &world.observed, &s);
        assert!(
            matches!(&step, Step::Stop { reason } if reason.contains("scaled the source by hand")),
            "{step:?}"
        );
    }

    /// A world migrated forward until the destination owns `moved` ordinals, then its set
    /// deleted: with `--cascade=orphan` (its pods stay) or a cascading delete (they go).
    fn destination_deleted(replicas: i32, moved: i32, orphan: bool) -> World {
        let mut world = World::new(0, replicas);
        let s = settings(1);
        while world
            .observed
            .destination
            .set
            .as_ref()
            .is_none_or(|d| d.replicas < moved)
            || world.journal.as_ref().unwrap().verified_bound > replicas - moved
        {
            let step = next_step(world.journal.as_ref(), &world.observed, &s);
            world.apply(&step);
            world.controller_tick(Side::Source);
            world.controller_tick(Side::Destination);
        }
        world.observed.destination.set = None;
        if !orphan {
            world.observed.destination.pods.clear();
        }
        world
    }

    #[test]
    fn a_destination_deleted_with_its_pods_orphaned_stops_and_names_the_recovery() {
        let world = destination_deleted(4, 2, true);
        let step = next_step(world.journal.as_ref(), &world.observed, &settings(1));
        let Step::Stop { reason } = &step else {
            panic!("{step:?}")
        };
        assert!(reason.contains("deleted mid-migration"), "{reason}");
        assert!(reason.contains("web-2, web-3 still run there"), "{reason}");
        assert!(
            reason.contains(
                "--recreate-destination to create it again with ordinals.start=2, replicas=2"
            ),
            "{reason}"
        );
    }

    #[test]
    fn a_destination_deleted_with_its_pods_says_they_run_nowhere_and_offers_a_rollback() {
        let world = destination_deleted(4, 2, false);
        let step = next_step(world.journal.as_ref(), &world.observed, &settings(1));
        let Step::Stop { reason } = &step else {
            panic!("{step:?}")
        };
        assert!(
            reason.contains("ordinals [2, 4) left the source and run nowhere"),
            "{reason}"
        );
        assert!(reason.contains("ordinals.start=2, replicas=2"), "{reason}");
        assert!(reason.contains("or with --rollback"), "{reason}");
    }

    #[test]
    fn a_destination_not_created_yet_is_created_whatever_its_namespace_holds() {
        let mut world = World::new(0, 3);
        let s = settings(1);
        let mut step = next_step(None, &world.observed, &s);
        while step != Step::CreateDestination {
            assert!(
                !matches!(step, Step::Stop { .. } | Step::Resize { .. }),
                "{step:?}"
            );
            world.apply(&step);
            step = next_step(world.journal.as_ref(), &world.observed, &s);
        }
    }

    #[test]
    fn a_source_scaled_down_by_hand_stops_with_an_explanation() {
        let mut world = World::new(0, 4);
        let s = settings(1);
        while world.observed.destination.set.is_none() {
            let step = next_step(world.journal.as_ref(), &world.observed, &s);
            world.apply(&step);
        }
        world.observed.source.set.as_mut().unwrap().replicas = 1;
        let step = next_step(world.journal.as_ref(), &world.observed, &s);
        assert!(
            matches!(&step, Step::Stop { reason } if reason.contains("scaled it down by hand") && reason.contains("--batch 3")),
            "{step:?}"
        );
    }

    /// Drives `world` until `done` holds for the journal.
    fn run_until(world: &mut World, s: &Settings, done: impl Fn(&Journal) -> bool) {
        for _ in 0..500 {
            if world.journal.as_ref().is_some_and(&done) {
                return;
            }
            world.controller_tick(Side::Source);
            world.controller_tick(Side::Destination);
            let step = next_step(world.journal.as_ref(), &world.observed, s);
            world.apply(&step);
        }
        panic!("never got there");
    }

    #[test]
    fn a_destination_scaled_down_by_hand_is_named_and_never_rescaled() {
        for replicas_left in [0, 1] {
            let mut world = World::new(0, 4);
            let s = settings(1);
            // Two ordinals moved and verified in the destination.
            run_until(&mut world, &s, |j| j.verified_bound == 2);
            let dest = world.observed.destination.set.as_mut().unwrap();
            assert_eq!((dest.start, dest.replicas), (2, 2));
            dest.replicas = replicas_left;
            if replicas_left > 0 {
                dest.start = 4 - replicas_left;
            }
            let step = next_step(world.journal.as_ref(), &world.observed, &s);
            assert!(
                matches!(&step, Step::Stop { reason } if reason.starts_with("the destination was scaled down by hand")
                    && reason.contains("ordinals.start=2, replicas=2")),
                "{replicas_left} left: {step:?}"
            );
        }
    }

    #[test]
    fn a_source_scaled_down_by_hand_during_a_rollback_is_named() {
        let mut world = World::new(0, 4);
        let s = settings(1);
        run_until(&mut world, &s, |j| j.complete);
        let journal = world.journal.as_mut().unwrap();
        journal.direction = Direction::Rollback;
        journal.complete = false;
        journal.verified_bound = 0;
        run_until(&mut world, &s, |j| j.verified_bound == 2);
        world.observed.source.set.as_mut().unwrap().replicas = 1;
        let step = next_step(world.journal.as_ref(), &world.observed, &s);
        assert!(
            matches!(&step, Step::Stop { reason } if reason.starts_with("the source was scaled down by hand")),
            "{step:?}"
        );
    }

    #[test]
    fn a_foreign_destination_is_never_touched() {
        let mut world = World::new(0, 2);
        let s = settings(1);
        world.apply(&Step::WriteJournal);
        world.observed.destination.set = Some(set("other", 0, 2));
        let step = next_step(world.journal.as_ref(), &world.observed, &s);
        assert!(
            matches!(&step, Step::Stop { reason } if reason.contains("not created by this migration")),
            "{step:?}"
        );
    }

    #[test]
    fn claims_that_disagree_about_their_volume_stop_the_migration() {
        let mut world = World::new(0, 1);
        let s = settings(1);
        loop {
            let step = next_step(world.journal.as_ref(), &world.observed, &s);
            if let Step::CopyClaim { claim, .. } = &step {
                world.observed.destination.claims.insert(
                    claim.clone(),
                    ClaimView {
                        volume_name: Some("elsewhere".into()),
                        bound: true,
                        copied: true,
                    },
                );
                break;
            }
            world.apply(&step);
            world.controller_tick(Side::Source);
        }
        let step = next_step(world.journal.as_ref(), &world.observed, &s);
        assert!(
            matches!(&step, Step::Stop { reason } if reason.contains("refusing to guess")),
            "{step:?}"
        );
    }

    fn assert_all_in_destination(world: &World, start: i32, replicas: i32) {
        let d = world.observed.destination.set.as_ref().unwrap();
        assert_eq!((d.start, d.replicas), (start, replicas));
        assert_eq!(world.observed.source.set.as_ref().unwrap().replicas, 0);
        let src_volumes: BTreeMap<_, _> = world
            .observed
            .source
            .claims
            .iter()
            .map(|(n, c)| (n.clone(), c.volume_name.clone()))
            .collect();
        let dst_volumes: BTreeMap<_, _> = world
            .observed
            .destination
            .claims
            .iter()
            .map(|(n, c)| (n.clone(), c.volume_name.clone()))
            .collect();
        assert_eq!(
            src_volumes, dst_volumes,
            "every claim points at the same volume on both sides"
        );
        assert!(
            world
                .observed
                .destination
                .volumes
                .values()
                .all(|v| v.reclaim_policy == "Retain")
        );
        assert!(
            world
                .observed
                .source
                .volumes
                .values()
                .all(|v| v.reclaim_policy == "Retain")
        );
    }

    #[test]
    fn with_fresh_volumes_a_rollback_without_the_original_claim_stops() {
        let mut world = fresh_worlds(0, 2, 1).swap_remove(0);
        let s = settings(1);
        world.run(&s, &[true], 500);
        let j = world.journal.as_mut().unwrap();
        j.direction = Direction::Rollback;
        j.complete = false;
        j.verified_bound = 0;
        world
            .observed
            .source
            .claims
            .remove(&claim_name("data", NAME, 0));
        let steps = world.run(&s, &[true], 500);
        assert!(
            matches!(steps.last(), Some(Step::Stop { reason }) if reason.contains("data-web-0") && reason.contains("original data")),
            "{steps:?}"
        );
    }

    proptest! {
        #[test]
        fn fresh_volumes_move_every_pod_onto_new_claims_and_keep_the_sources(
            start in 0i32..3, replicas in 1i32..6, batch in 1i32..3,
            ticks in proptest::collection::vec(any::<bool>(), 1..10),
            budget in 0usize..4,
        ) {
            let batch = batch.min(replicas);
            let mut world = fresh_worlds(start, replicas, batch).swap_remove(budget);
            let original = world.observed.source.claims.clone();
            let steps = world.run(&settings(batch), &ticks, 2000);
            prop_assert_eq!(steps.last(), Some(&Step::Done));
            let copied = steps.iter().any(|s| matches!(s, Step::CopyClaim { .. }));
            prop_assert!(!copied, "a claim was copied: {:?}", steps);
            prop_assert_eq!(&world.observed.source.claims, &original, "the source keeps its claims");
            for k in start..start + replicas {
                prop_assert!(world.observed.destination.pods.contains_key(&k));
                for t in &world.templates {
                    prop_assert!(world.fresh_claims.contains(&claim_name(t, NAME, k)));
                }
            }
        }
    }

    proptest! {
        #[test]
        fn forward_completes_without_split_brain_or_empty_volumes(
            start in 0i32..4, replicas in 1i32..7, batch in 1i32..4,
            ticks in proptest::collection::vec(any::<bool>(), 1..12),
            budget in 0usize..4,
        ) {
            let batch = batch.min(replicas);
            let mut world = worlds(start, replicas, batch).swap_remove(budget);
            let steps = world.run(&settings(batch), &ticks, 2000);
            prop_assert_eq!(steps.last(), Some(&Step::Done));
            prop_assert!(world.journal.as_ref().unwrap().complete);
            prop_assert_eq!(&world.fresh_claims, &Vec::<String>::new());
            assert_all_in_destination(&world, start, replicas);
            for b in &world.budgets {
                let original = Some(&b.original);
                prop_assert_eq!(world.observed.source.budgets.get(&b.name), original);
                prop_assert_eq!(world.observed.destination.budgets.get(&b.name), original);
            }
        }

        #[test]
        /// With shared or fresh volumes: every ordinal back on its original claims.
        fn rollback_from_any_point_returns_everything_to_the_source(
            start in 0i32..3, replicas in 1i32..6, batch in 1i32..3,
            forward_steps in 0usize..60,
            ticks in proptest::collection::vec(any::<bool>(), 1..8),
            budget in 0usize..4,
            fresh in any::<bool>(),
        ) {
            let batch = batch.min(replicas);
            let mut world = if fresh {
                fresh_worlds(start, replicas, batch)
            } else {
                worlds(start, replicas, batch)
            }
            .swap_remove(budget);
            let original = world.observed.source.clone();
            let s = settings(batch);
            for i in 0..forward_steps {
                if ticks[i % ticks.len()] {
                    world.controller_tick(Side::Source);
                    world.controller_tick(Side::Destination);
                }
                let step = next_step(world.journal.as_ref(), &world.observed, &s);
                if step == Step::Done { break; }
                world.apply(&step);
            }
            if let Some(j) = world.journal.as_mut() {
                // What --rollback records before it starts.
                j.direction = Direction::Rollback;
                j.complete = false;
                let src = world.observed.source.set.as_ref().unwrap();
                j.verified_bound = src.start + src.replicas;
                let steps = world.run(&s, &ticks, 3000);
                prop_assert_eq!(steps.last(), Some(&Step::DeleteJournal), "{:?}", steps);
                for _ in 0..3 { world.controller_tick(Side::Source); }
            }
            prop_assert!(world.journal.is_none());
            prop_assert!(world.observed.destination.set.is_none());
            if !fresh {
                // Copies are removed; fresh claims are the destination's own and stay.
                prop_assert!(world.observed.destination.claims.is_empty());
                prop_assert!(world.observed.destination.volumes.is_empty());
                prop_assert_eq!(&world.fresh_claims, &Vec::<String>::new());
            }
            let src = world.observed.source.set.as_ref().unwrap();
            prop_assert_eq!((src.start, src.replicas), (start, replicas));
            prop_assert_eq!(&world.observed.source.claims, &original.claims);
            prop_assert_eq!(&world.observed.source.volumes, &original.volumes);
            prop_assert_eq!(&src.retention, &original.set.as_ref().unwrap().retention);
            prop_assert_eq!(&world.observed.source.budgets, &original.budgets, "budgets restored");
            prop_assert!(world.observed.destination.budgets.is_empty(), "no budget copy left");
        }
        #[test]
        fn a_destination_deleted_at_any_point_is_never_created_over_its_pods(
            replicas in 2i32..5,
            moved_seed in 0i32..5,
            orphan in any::<bool>(),
            roll_back in any::<bool>(),
        ) {
            let moved = 1 + moved_seed % replicas;
            let mut world = destination_deleted(replicas, moved, orphan);
            let orphans: BTreeMap<i32, String> = world
                .observed
                .destination
                .pods
                .iter()
                .map(|(k, p)| (*k, p.uid.clone()))
                .collect();
            let refused = next_step(world.journal.as_ref(), &world.observed, &settings(1));
            prop_assert!(matches!(&refused, Step::Stop { reason } if reason.contains("--recreate-destination")), "{:?}", refused);
            let mut s = settings(1);
            s.recreate_destination = true;
            if roll_back {
                let j = world.journal.as_mut().unwrap();
                j.direction = Direction::Rollback;
                let src = world.observed.source.set.as_ref().unwrap();
                j.verified_bound = src.start + src.replicas;
                // Without pods there nothing needs re-creating: the rollback goes on alone.
                if !orphan {
                    s.recreate_destination = false;
                }
            }
            let steps = world.run(&s, &[true, false], 3000);
            let last = steps.last().unwrap();
            if roll_back {
                prop_assert_eq!(last, &Step::DeleteJournal, "{:?}", steps);
                let src = world.observed.source.set.as_ref().unwrap();
                prop_assert_eq!((src.start, src.replicas), (0, replicas));
                prop_assert!(!world.observed.destination.claims.values().any(|c| c.copied), "a claim copy is left");
                prop_assert!(!world.observed.destination.volumes.values().any(|v| v.copied), "a PV copy is left");
            } else {
                prop_assert_eq!(last, &Step::Done, "{:?}", steps);
                assert_all_in_destination(&world, 0, replicas);
                for (k, uid) in &orphans {
                    prop_assert_eq!(&world.observed.destination.pods[k].uid, uid, "pod {} was replaced", k);
                }
            }
            if orphan {
                let recreated = steps.iter().filter(|s| matches!(s, Step::RecreateDestination { .. })).count();
                prop_assert_eq!(recreated, 1, "{:?}", steps);
            }
        }
    }
}
