//! PURE: `--rebuild-journal`, the way back after the journal was deleted mid-migration. What the
//! journal held is rebuilt from what the clusters still show: the destination set's source-uid
//! annotation and range, the copies' labels, and the annotations protection leaves on the
//! source's PVs, StatefulSet and budgets with their original values. Where a trace is missing
//! the current value is taken and a warning says so; nothing is guessed silently.
use std::collections::BTreeMap;

use serde::Serialize;

use super::budget::{BudgetSpec, RecordedBudget};
use super::model::{Direction, Journal, ObjectRef, Retention, VolumeMode};

/// The source StatefulSet as it is now.
#[derive(Debug, Clone)]
pub struct SourceTrace {
    pub uid: String,
    pub start: i32,
    pub replicas: i32,
    pub claim_templates: Vec<String>,
    pub retention: Retention,
    /// From the annotation `HoldRetention` left.
    pub original_retention: Option<Retention>,
}

/// The destination StatefulSet as it is now.
#[derive(Debug, Clone)]
pub struct DestinationTrace {
    pub start: i32,
    pub replicas: i32,
    /// Its source-uid annotation.
    pub source_uid: Option<String>,
}

/// A PV of the source set's claims: its policy now and the original its annotation keeps.
#[derive(Debug, Clone)]
pub struct VolumeTrace {
    pub policy: String,
    pub original: Option<String>,
}

/// A budget that selects the set: its spec now and the original its annotation keeps.
#[derive(Debug, Clone)]
pub struct BudgetTrace {
    pub name: String,
    pub spec: BudgetSpec,
    pub original: Option<BudgetSpec>,
}

/// Everything the clusters show of a migration whose journal is gone.
#[derive(Debug, Clone)]
pub struct Traces {
    pub name: String,
    pub source_context: String,
    pub source_server: String,
    pub source_namespace: String,
    pub destination_namespace: String,
    pub health_check: Option<String>,
    pub source: Option<SourceTrace>,
    pub destination: Option<DestinationTrace>,
    /// Ordinals of the claims in the destination that carry this migration's copy label.
    pub copied_ordinals: Vec<i32>,
    pub volumes: BTreeMap<String, VolumeTrace>,
    /// The destination's own PVs of the set's claims (fresh volumes; copies are not here).
    pub destination_volumes: BTreeMap<String, VolumeTrace>,
    /// Objects in the destination that carry this migration's label (the namespace included).
    pub created: Vec<ObjectRef>,
    pub budgets: Vec<BudgetTrace>,
    /// `--volumes` of the rebuilding run: nothing in the clusters tells a fresh claim from a
    /// claim the destination had before.
    pub volume_mode: VolumeMode,
}

/// The rebuilt journal and what could not be known for sure.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rebuilt {
    pub schema_version: u32,
    pub journal: Journal,
    pub warnings: Vec<String>,
}

pub fn rebuild(traces: &Traces) -> Result<Rebuilt, String> {
    let name = &traces.name;
    let Some(source) = &traces.source else {
        return Err(format!(
            "the source StatefulSet {name} does not exist; there is nothing to rebuild the journal from"
        ));
    };
    if let Some(dest) = &traces.destination
        && dest.source_uid.as_deref() != Some(source.uid.as_str())
    {
        return Err(format!(
            "the StatefulSet {name} in the destination was not created by a migration of this source (its {} annotation is {:?}, the source's uid is {}); not rebuilding",
            super::copy::SOURCE_UID_ANNOTATION,
            dest.source_uid,
            source.uid
        ));
    }
    if traces.destination.is_none() && traces.copied_ordinals.is_empty() {
        return Err(format!(
            "no trace of a migration of {name} in the destination (no StatefulSet, no copied claims); there is no journal to rebuild: run the migration"
        ));
    }
    let mut warnings = Vec::new();
    // The end of the original range: the destination always ends where the source began to
    // give ordinals away, and every copied claim is below it.
    let source_end = source.start + source.replicas;
    let destination_end = traces.destination.as_ref().map_or(source_end, |d| {
        if d.replicas > 0 {
            d.start + d.replicas
        } else {
            d.start
        }
    });
    let copied_end = traces
        .copied_ordinals
        .iter()
        .max()
        .map_or(source_end, |k| k + 1);
    let end = source_end.max(destination_end).max(copied_end);
    // Without the annotation the live policy is the original, and no warning is due: protecting
    // a PV writes Retain and the annotation in one patch (and restoring removes both), so a PV at
    // Retain without it was at Retain before the migration, which is what a rollback restores.
    // The same holds for the source's retention policy below.
    let original_reclaim_policies = traces
        .volumes
        .iter()
        .map(|(volume, trace)| {
            let policy = trace
                .original
                .clone()
                .unwrap_or_else(|| trace.policy.clone());
            (volume.clone(), policy)
        })
        .collect();
    let original_retention = source
        .original_retention
        .clone()
        .unwrap_or_else(|| source.retention.clone());
    let budgets = traces
        .budgets
        .iter()
        .map(|b| RecordedBudget {
            name: b.name.clone(),
            original: b.original.clone().unwrap_or_else(|| {
                warnings.push(format!(
                    "PodDisruptionBudget {}: no record of its original spec; its current {} is taken as the original",
                    b.name, b.spec
                ));
                b.spec.clone()
            }),
        })
        .collect();
    Ok(Rebuilt {
        schema_version: 1,
        journal: Journal {
            name: name.clone(),
            source_context: traces.source_context.clone(),
            source_server: traces.source_server.clone(),
            source_namespace: traces.source_namespace.clone(),
            source_uid: source.uid.clone(),
            destination_namespace: traces.destination_namespace.clone(),
            replicas: end - source.start,
            start: source.start,
            claim_templates: source.claim_templates.clone(),
            original_reclaim_policies,
            // Only those the migration changed: a PV without the annotation still has its own
            // policy, and protecting it later records it then.
            original_destination_reclaim_policies: traces
                .destination_volumes
                .iter()
                .filter_map(|(volume, trace)| Some((volume.clone(), trace.original.clone()?)))
                .collect(),
            original_retention,
            direction: Direction::Forward,
            // Nothing counts as verified: ordinals already in the destination are waited for
            // and checked again.
            verified_bound: end,
            complete: false,
            completed_by: None,
            cleaned_up: false,
            health_check: traces.health_check.clone(),
            created: traces.created.clone(),
            budgets,
            volumes: traces.volume_mode,
        },
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::model::ObjectKind;

    /// Five replicas, ordinal 4 moved (its claim copied), then the journal and the destination
    /// set were deleted: what the reporter saw end with 4 replicas.
    fn traces() -> Traces {
        Traces {
            name: "web".into(),
            source_context: "a".into(),
            source_server: "https://a".into(),
            source_namespace: "ns".into(),
            destination_namespace: "ns".into(),
            health_check: None,
            source: Some(SourceTrace {
                uid: "u".into(),
                start: 0,
                replicas: 4,
                claim_templates: vec!["data".into()],
                retention: Retention::retain(),
                original_retention: Some(Retention {
                    when_scaled: "Delete".into(),
                    when_deleted: "Retain".into(),
                }),
            }),
            destination: None,
            copied_ordinals: vec![4],
            volumes: [
                (
                    "pv-0".to_string(),
                    VolumeTrace {
                        policy: "Retain".into(),
                        original: Some("Delete".into()),
                    },
                ),
                (
                    "pv-1".to_string(),
                    VolumeTrace {
                        policy: "Retain".into(),
                        original: None,
                    },
                ),
            ]
            .into(),
            destination_volumes: [
                (
                    "fresh-0".to_string(),
                    VolumeTrace {
                        policy: "Retain".into(),
                        original: Some("Delete".into()),
                    },
                ),
                (
                    "fresh-1".to_string(),
                    VolumeTrace {
                        policy: "Delete".into(),
                        original: None,
                    },
                ),
            ]
            .into(),
            created: vec![ObjectRef {
                kind: ObjectKind::Service,
                name: "web".into(),
            }],
            budgets: vec![],
            volume_mode: VolumeMode::Shared,
        }
    }

    #[test]
    fn the_original_size_and_policies_come_back_from_the_traces() {
        let rebuilt = rebuild(&traces()).unwrap();
        let j = &rebuilt.journal;
        assert_eq!(
            (j.start, j.replicas),
            (0, 5),
            "ordinal 4's copy marks the end"
        );
        assert_eq!(j.original_reclaim_policies["pv-0"], "Delete");
        assert_eq!(j.original_reclaim_policies["pv-1"], "Retain");
        assert_eq!(j.original_retention.when_scaled, "Delete");
        assert_eq!(
            j.original_destination_reclaim_policies,
            [("fresh-0".to_string(), "Delete".to_string())].into(),
            "a fresh PV's original comes back from its annotation; one never protected is not recorded"
        );
        assert_eq!(j.verified_bound, 5, "nothing counts as verified");
        assert_eq!(j.created.len(), 1);
        assert_eq!(
            rebuilt.warnings,
            Vec::<String>::new(),
            "pv-1 at Retain without the annotation was at Retain before"
        );
    }

    #[test]
    fn a_retention_at_retain_from_the_start_is_kept_without_a_warning() {
        let mut t = traces();
        t.volumes.clear();
        let source = t.source.as_mut().unwrap();
        source.original_retention = None;
        let rebuilt = rebuild(&t).unwrap();
        assert_eq!(rebuilt.journal.original_retention, Retention::retain());
        assert_eq!(rebuilt.warnings, Vec::<String>::new());
        // Not held yet (the journal went before the hold): the live policy, still its own.
        let delete = Retention {
            when_scaled: "Delete".into(),
            when_deleted: "Delete".into(),
        };
        t.source.as_mut().unwrap().retention = delete.clone();
        let rebuilt = rebuild(&t).unwrap();
        assert_eq!(rebuilt.journal.original_retention, delete);
        assert_eq!(rebuilt.warnings, Vec::<String>::new());
    }

    #[test]
    fn the_destination_range_marks_the_end_too() {
        let mut t = traces();
        t.copied_ordinals = vec![];
        t.destination = Some(DestinationTrace {
            start: 3,
            replicas: 3,
            source_uid: Some("u".into()),
        });
        t.source.as_mut().unwrap().replicas = 3;
        assert_eq!(rebuild(&t).unwrap().journal.replicas, 6);
        // Created, nothing moved yet: it starts where the source ends.
        t.destination = Some(DestinationTrace {
            start: 6,
            replicas: 0,
            source_uid: Some("u".into()),
        });
        t.source.as_mut().unwrap().replicas = 6;
        assert_eq!(rebuild(&t).unwrap().journal.replicas, 6);
    }

    #[test]
    fn refuses_without_a_trace_or_with_a_foreign_destination() {
        let mut t = traces();
        t.copied_ordinals = vec![];
        let err = rebuild(&t).unwrap_err();
        assert!(err.contains("no trace of a migration"), "{err}");
        t.destination = Some(DestinationTrace {
            start: 0,
            replicas: 4,
            source_uid: Some("other".into()),
        });
        let err = rebuild(&t).unwrap_err();
        assert!(
            err.contains("not created by a migration of this source"),
            "{err}"
        );
        t.source = None;
        assert!(rebuild(&t).unwrap_err().contains("does not exist"));
    }
}
