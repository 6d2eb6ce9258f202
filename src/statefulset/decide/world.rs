//! A toy world for the tests of the decisions, and of the plan against them: both clusters as
//! observed, the journal, and controllers that converge a step at a time.
use super::{Settings, apply_budget, next_step, verified_bound_after};
use crate::statefulset::model::*;
use crate::statefulset::step::Step;

pub(crate) const NAME: &str = "web";

/// A settled set with two claim templates, whose PVC retention deletes claims on scale-down.
pub(crate) fn set(uid: &str, start: i32, replicas: i32) -> SetView {
    let retention = Retention {
        when_scaled: "Delete".into(),
        when_deleted: "Retain".into(),
    };
    SetView {
        claim_templates: vec!["data".into(), "logs".into()],
        ..fixtures::set(uid, start, replicas, retention)
    }
}

/// A toy world: both clusters as observed, the journal, and controllers that converge a
/// step at a time. Good enough to check that the decisions never create split brain or
/// start a pod without its data, whatever the interleaving.
#[derive(Debug, Clone)]
pub(crate) struct World {
    pub(crate) observed: Observed,
    pub(crate) journal: Option<Journal>,
    pub(crate) fresh_claims: Vec<String>,
    pub(crate) templates: Vec<String>,
    /// Budgets that select the set, with their original specs.
    pub(crate) budgets: Vec<RecordedBudget>,
    /// What the journal records when it is written.
    pub(crate) volumes: VolumeMode,
}

impl World {
    pub(crate) fn new(start: i32, replicas: i32) -> World {
        let mut source = ClusterView {
            set: Some(set("src-uid", start, replicas)),
            ..Default::default()
        };
        let templates = vec!["data".to_string(), "logs".to_string()];
        for k in start..start + replicas {
            source.pods.insert(
                k,
                PodView {
                    name: pod_name(NAME, k),
                    uid: format!("p{k}"),
                    ready: true,
                    terminating: false,
                    phase: "Running".into(),
                    not_ready: None,
                },
            );
            for t in &templates {
                let claim = claim_name(t, NAME, k);
                let volume = format!("pv-{claim}");
                fixtures::add_claim(&mut source, "ns", &claim, &volume, "Delete");
            }
        }
        World {
            observed: Observed {
                source,
                destination: ClusterView::default(),
            },
            journal: None,
            fresh_claims: vec![],
            templates,
            budgets: vec![],
            volumes: VolumeMode::Shared,
        }
    }

    /// A world whose set is selected by one budget with `original`.
    pub(crate) fn with_budget(start: i32, replicas: i32, original: BudgetSpec) -> World {
        let mut world = World::new(start, replicas);
        world
            .observed
            .source
            .budgets
            .insert("web-pdb".into(), original.clone());
        world.budgets = vec![RecordedBudget {
            name: "web-pdb".into(),
            original,
        }];
        world
    }

    /// The two sides' budgets together never allow more evictions than the original
    /// would over all the pods: the disruption controller's arithmetic on each side.
    pub(crate) fn assert_budgets_hold(&self, steps: &[Step]) {
        for b in &self.budgets {
            let replicas = self.journal.as_ref().map_or_else(
                || self.observed.source.set.as_ref().map_or(0, |s| s.replicas),
                |j| j.replicas,
            );
            let required = b.original.required(replicas).unwrap();
            let mut healthy_total = 0;
            let mut evictable = 0;
            for side in [Side::Source, Side::Destination] {
                let view = self.observed.side(side);
                let Some(set) = &view.set else { continue };
                let healthy = set
                    .range()
                    .filter(|k| view.pods.get(k).is_some_and(|p| p.ready && !p.terminating))
                    .count() as i32;
                healthy_total += healthy;
                if let Some(spec) = view.budgets.get(&b.name) {
                    evictable += (healthy - spec.required(set.replicas).unwrap()).max(0);
                }
            }
            assert!(
                evictable <= (healthy_total - required).max(0),
                "budgets allow {evictable} evictions with {healthy_total} healthy pods of which {required} must stay, after {:?}",
                &steps[steps.len().saturating_sub(6)..]
            );
        }
    }

    pub(crate) fn view(&mut self, side: Side) -> &mut ClusterView {
        match side {
            Side::Source => &mut self.observed.source,
            Side::Destination => &mut self.observed.destination,
        }
    }

    /// One round of the StatefulSet controller and the kubelet on `side`.
    pub(crate) fn controller_tick(&mut self, side: Side) {
        let templates = self.templates.clone();
        let view = self.view(side);
        let Some(set) = view.set.clone() else { return };
        let range = set.range();
        // Terminating pods finish terminating; the controller recreates them if still in range.
        view.pods.retain(|_, p| !p.terminating);
        for (k, pod) in view.pods.iter_mut() {
            if !range.contains(k) {
                pod.terminating = true;
                pod.ready = false;
            } else {
                pod.ready = true;
            }
        }
        let mut fresh = Vec::new();
        for k in range.clone() {
            if !view.pods.contains_key(&k) {
                // The real controller creates a missing claim from the template: an empty volume.
                for t in &templates {
                    let claim = claim_name(t, NAME, k);
                    if let std::collections::btree_map::Entry::Vacant(e) =
                        view.claims.entry(claim.clone())
                    {
                        fresh.push(claim.clone());
                        let volume = format!("fresh-{claim}");
                        e.insert(ClaimView {
                            volume_name: Some(volume.clone()),
                            bound: true,
                            copied: false,
                        });
                        // Provisioned as dynamic PVs are: reclaim policy Delete.
                        view.volumes.insert(
                            volume,
                            VolumeView {
                                reclaim_policy: "Delete".into(),
                                claim: Some(("ns".into(), claim)),
                                copied: false,
                            },
                        );
                    }
                }
                view.pods.insert(
                    k,
                    PodView {
                        name: pod_name(NAME, k),
                        uid: format!("{side:?}{k}"),
                        ready: false,
                        terminating: false,
                        phase: "Running".into(),
                        not_ready: None,
                    },
                );
            }
        }
        let ready = range
            .clone()
            .filter(|k| view.pods.get(k).is_some_and(|p| p.ready))
            .count() as i32;
        let s = view.set.as_mut().unwrap();
        s.observed_generation = s.generation;
        s.ready_replicas = ready;
        s.available_replicas = ready;
        self.fresh_claims.extend(fresh);
    }

    fn create_destination(&mut self, start: i32, replicas: i32) {
        let j = self.journal.clone().unwrap();
        let mut d = set("dst-uid", start, replicas);
        d.migrated_from_uid = Some(j.source_uid.clone());
        d.retention = Retention::retain();
        self.observed.destination.set = Some(d);
    }

    pub(crate) fn split_brain(&self) -> Option<i32> {
        self.observed
            .source
            .pods
            .keys()
            .find(|k| self.observed.destination.pods.contains_key(k))
            .copied()
    }

    pub(crate) fn apply(&mut self, step: &Step) {
        match step.clone() {
            Step::WriteJournal => {
                let s = self.observed.source.set.clone().unwrap();
                self.journal = Some(Journal {
                    name: NAME.into(),
                    source_context: "a".into(),
                    source_server: "https://a".into(),
                    source_namespace: "ns".into(),
                    source_uid: s.uid.clone(),
                    destination_namespace: "ns".into(),
                    replicas: s.replicas,
                    start: s.start,
                    claim_templates: s.claim_templates.clone(),
                    original_reclaim_policies: self
                        .observed
                        .source
                        .volumes
                        .iter()
                        .map(|(n, v)| (n.clone(), v.reclaim_policy.clone()))
                        .collect(),
                    original_destination_reclaim_policies: Default::default(),
                    original_retention: s.retention.clone(),
                    direction: Direction::Forward,
                    verified_bound: s.start + s.replicas,
                    complete: false,
                    completed_by: None,
                    cleaned_up: false,
                    health_check: None,
                    created: vec![],
                    budgets: self.budgets.clone(),
                    volumes: self.volumes,
                });
            }
            Step::SetBudget { .. } => apply_budget(&mut self.observed, step),
            Step::ProtectVolumes { side, volumes } => {
                for volume in volumes {
                    self.view(side)
                        .volumes
                        .get_mut(&volume)
                        .unwrap()
                        .reclaim_policy = "Retain".into();
                }
            }
            Step::HoldRetention => {
                self.observed.source.set.as_mut().unwrap().retention = Retention::retain()
            }
            Step::CreateDestination => {
                let end = self.journal.as_ref().unwrap().end();
                self.create_destination(end, 0);
            }
            Step::RecreateDestination { start, replicas } => {
                self.create_destination(start, replicas)
            }
            Step::Resize {
                side,
                start,
                replicas,
            } => {
                let s = self.view(side).set.as_mut().unwrap();
                s.start = start;
                s.replicas = replicas;
                s.generation += 1;
            }
            Step::WaitPodsGone { side, .. } | Step::WaitReady { side, .. } => {
                self.controller_tick(side)
            }
            Step::CopyClaim { to, claim, .. } => {
                let from = self.observed.side(to.other()).clone();
                let original = from.claims[&claim].clone();
                let volume = original.volume_name.clone().unwrap();
                let target = self.view(to);
                target.claims.insert(
                    claim.clone(),
                    ClaimView {
                        volume_name: Some(volume.clone()),
                        bound: true,
                        copied: to == Side::Destination,
                    },
                );
                target.volumes.entry(volume).or_insert(VolumeView {
                    reclaim_policy: "Retain".into(),
                    claim: Some(("ns".into(), claim)),
                    copied: to == Side::Destination,
                });
            }
            Step::Verify { ordinals, .. } => {
                let j = self.journal.as_mut().unwrap();
                j.verified_bound = verified_bound_after(j.direction, &ordinals, j.verified_bound);
            }
            Step::MarkComplete => self.journal.as_mut().unwrap().complete = true,
            Step::DeleteCopy { claim, volume } => {
                if let Some(c) = claim {
                    self.observed.destination.claims.remove(&c);
                }
                if let Some(v) = volume {
                    self.observed.destination.volumes.remove(&v);
                }
            }
            Step::DeleteDestination => {
                self.observed.destination.set = None;
                self.observed.destination.pods.clear();
            }
            Step::RestoreRetention => {
                let original = self.journal.as_ref().unwrap().original_retention.clone();
                self.observed.source.set.as_mut().unwrap().retention = original;
            }
            Step::ProtectNewVolumes { claims } => {
                for claim in claims {
                    let view = self.view(Side::Destination);
                    let volume = view.claims[&claim].volume_name.clone().unwrap();
                    let pv = view.volumes.get_mut(&volume).unwrap();
                    let original = std::mem::replace(&mut pv.reclaim_policy, "Retain".into());
                    self.journal
                        .as_mut()
                        .unwrap()
                        .original_destination_reclaim_policies
                        .entry(volume)
                        .or_insert(original);
                }
            }
            Step::RestoreVolume {
                side,
                volume,
                policy,
            } => {
                self.view(side)
                    .volumes
                    .get_mut(&volume)
                    .unwrap()
                    .reclaim_policy = policy
            }
            Step::DeleteCreated { kind, name } => self
                .journal
                .as_mut()
                .unwrap()
                .created
                .retain(|o| (o.kind, o.name.as_str()) != (kind, name.as_str())),
            Step::DeleteJournal | Step::DeleteNamespace => self.journal = None,
            Step::CreateNamespace | Step::CopyObject { .. } => {
                unreachable!("preparation steps are not the reconciler's")
            }
            Step::Done | Step::Stop { .. } => {}
        }
    }

    /// Decides and applies until Done (or a Stop), with controller ticks interleaved as
    /// `ticks` says; returns the steps taken.
    pub(crate) fn run(&mut self, settings: &Settings, ticks: &[bool], limit: usize) -> Vec<Step> {
        let mut steps = Vec::new();
        for i in 0..limit {
            if ticks.get(i % ticks.len().max(1)).copied().unwrap_or(false) {
                self.controller_tick(Side::Source);
                self.controller_tick(Side::Destination);
            }
            assert_eq!(self.split_brain(), None, "split brain after {steps:?}");
            let step = next_step(self.journal.as_ref(), &self.observed, settings);
            if matches!(
                step,
                Step::Done | Step::Stop { .. } | Step::DeleteJournal | Step::DeleteNamespace
            ) {
                self.apply(&step);
                steps.push(step);
                return steps;
            }
            self.apply(&step);
            steps.push(step);
            self.assert_budgets_hold(&steps);
        }
        panic!(
            "no progress within {limit} steps; last ones: {:?}",
            &steps[steps.len().saturating_sub(8)..]
        );
    }
}

pub(crate) fn settings(batch: i32) -> Settings {
    Settings {
        name: NAME.into(),
        batch,
        recreate_destination: false,
    }
}

/// A set of `replicas` without a budget, and with budgets of each kind that allow `batch`.
pub(crate) fn worlds(start: i32, replicas: i32, batch: i32) -> Vec<World> {
    use crate::statefulset::budget::Amount;
    let percent = format!("{}%", 100 * (replicas - batch) / replicas);
    vec![
        World::new(start, replicas),
        World::with_budget(
            start,
            replicas,
            BudgetSpec {
                min_available: None,
                max_unavailable: Some(Amount::Count(batch)),
            },
        ),
        World::with_budget(start, replicas, BudgetSpec::min_available(replicas - batch)),
        World::with_budget(
            start,
            replicas,
            BudgetSpec {
                min_available: Some(Amount::Percent(percent)),
                max_unavailable: None,
            },
        ),
    ]
}

/// `worlds`, with fresh volumes.
pub(crate) fn fresh_worlds(start: i32, replicas: i32, batch: i32) -> Vec<World> {
    let mut all = worlds(start, replicas, batch);
    for w in &mut all {
        w.volumes = VolumeMode::Fresh;
    }
    all
}
