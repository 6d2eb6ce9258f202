//! PURE: the human plan (a numbered list of steps per ordinal, highest first) and one-line
//! descriptions of reconciler steps.
use serde::Serialize;

use super::decide::Step;
use super::model::{Observed, Side, claim_name};

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
    pub action: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub statefulset: String,
    pub from: String,
    pub to: String,
    pub ordinals: Vec<i32>,
    pub steps: Vec<PlannedStep>,
}

/// The plan of a forward migration from the current observation (before it starts).
pub fn forward_plan(
    observed: &Observed,
    names: &Names,
    batch: i32,
    min_ready_seconds: i32,
    health_check: Option<&str>,
) -> Plan {
    let mut steps = Vec::new();
    let mut push = |ordinal: Option<i32>, side: Side, action: String| {
        steps.push(PlannedStep {
            number: steps.len() + 1,
            ordinal,
            cluster: names.context(side).to_string(),
            action,
        });
    };
    let (start, replicas, templates, retention) = match &observed.source.set {
        Some(s) => (
            s.start,
            s.replicas,
            s.claim_templates.clone(),
            s.retention.clone(),
        ),
        None => (0, 0, vec![], super::model::Retention::retain()),
    };
    let end = start + replicas;
    for (name, volume) in &observed.source.volumes {
        if volume.reclaim_policy != "Retain" {
            push(
                None,
                Side::Source,
                format!(
                    "protect PV {name}: reclaim policy {} -> Retain (original recorded)",
                    volume.reclaim_policy
                ),
            );
        }
    }
    if !retention.is_retain() {
        push(
            None,
            Side::Source,
            format!(
                "hold PVC retention policy at Retain (was whenScaled={}, whenDeleted={})",
                retention.when_scaled, retention.when_deleted
            ),
        );
    }
    if observed.destination.set.is_none() {
        push(
            None,
            Side::Destination,
            format!(
                "create StatefulSet {} with replicas=0, ordinals.start={end}",
                names.set_at(Side::Destination)
            ),
        );
    }
    let ordinals: Vec<i32> = (start..end).rev().collect();
    let batch = batch.max(1) as usize;
    let mut remaining = replicas;
    for chunk in ordinals.chunks(batch) {
        let low = *chunk.iter().min().unwrap();
        let list = chunk
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let first = Some(chunk[0]);
        remaining -= chunk.len() as i32;
        push(
            first,
            Side::Source,
            format!(
                "scale source to {remaining} replicas and wait until pod(s) {list} are gone (Terminating included)"
            ),
        );
        for &k in chunk {
            for t in &templates {
                let claim = claim_name(t, &names.set, k);
                let volume = observed
                    .source
                    .claims
                    .get(&claim)
                    .and_then(|c| c.volume_name.clone())
                    .unwrap_or_else(|| "?".into());
                push(
                    Some(k),
                    Side::Destination,
                    format!("copy PVC {claim} and PV {volume} (pre-bound, reclaim Retain)"),
                );
            }
        }
        push(
            first,
            Side::Destination,
            format!(
                "patch destination to ordinals.start={low}, replicas={} in one request",
                end - low
            ),
        );
        let ready = if min_ready_seconds > 0 {
            format!("Ready for {min_ready_seconds}s (minReadySeconds)")
        } else {
            "Ready".to_string()
        };
        push(
            first,
            Side::Destination,
            format!("wait until pod(s) {list} are {ready}"),
        );
        if let Some(cmd) = health_check {
            push(
                first,
                Side::Destination,
                format!("run health check `{cmd}` for ordinal(s) {list}"),
            );
        }
    }
    Plan {
        statefulset: names.set.clone(),
        from: format!("{}/{}", names.source_context, names.source_namespace),
        to: format!(
            "{}/{}",
            names.destination_context, names.destination_namespace
        ),
        ordinals,
        steps,
    }
}

pub fn plan_text(plan: &Plan) -> String {
    let mut out = format!(
        "Plan: move StatefulSet {} from {} to {} (ordinals {:?}, highest first)\n",
        plan.statefulset, plan.from, plan.to, plan.ordinals
    );
    for s in &plan.steps {
        let ordinal = s.ordinal.map(|k| format!("[{k}] ")).unwrap_or_default();
        out += &format!("{:>3}. {ordinal}{} ({})\n", s.number, s.action, s.cluster);
    }
    out
}

/// One line saying what a reconciler step does.
pub fn describe(step: &Step, names: &Names) -> String {
    match step {
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

    fn names() -> Names {
        Names {
            set: "web".into(),
            source_context: "km-a".into(),
            source_namespace: "db".into(),
            destination_context: "km-b".into(),
            destination_namespace: "db".into(),
        }
    }

    fn observed(replicas: i32) -> Observed {
        let set = SetView {
            uid: "u".into(),
            resource_version: "1".into(),
            generation: 1,
            replicas,
            start: 0,
            observed_generation: 1,
            ready_replicas: replicas,
            available_replicas: replicas,
            retention: Retention {
                when_scaled: "Delete".into(),
                when_deleted: "Retain".into(),
            },
            migrated_from_uid: None,
            claim_templates: vec!["data".into()],
        };
        let mut source = ClusterView {
            set: Some(set),
            ..Default::default()
        };
        for k in 0..replicas {
            source.claims.insert(
                claim_name("data", "web", k),
                ClaimView {
                    volume_name: Some(format!("pv-{k}")),
                    bound: true,
                    copied: false,
                },
            );
            source.volumes.insert(
                format!("pv-{k}"),
                VolumeView {
                    reclaim_policy: "Delete".into(),
                    claim: None,
                    copied: false,
                },
            );
        }
        Observed {
            source,
            destination: ClusterView::default(),
        }
    }

    #[test]
    fn the_plan_protects_first_and_moves_ordinals_highest_first() {
        let plan = forward_plan(&observed(3), &names(), 1, 10, Some("./check.sh"));
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
        assert!(text.contains("run health check `./check.sh` for ordinal(s) 0"));
        assert_eq!(plan.ordinals, vec![2, 1, 0]);
    }

    #[test]
    fn batches_move_several_ordinals_per_patch() {
        let text = plan_text(&forward_plan(&observed(4), &names(), 2, 0, None));
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
