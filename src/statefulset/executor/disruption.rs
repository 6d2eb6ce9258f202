//! The PodDisruptionBudget writes of the split (see `budget` for the arithmetic): the source's
//! budget is patched in place, the destination's is a copy made by this migration (labelled as
//! such) and removed by a rollback.
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, Patch};
use serde_json::json;

use super::dependencies::{is_ours, our_labels};
use super::waits::Waits;
use super::writer::Writer;
use crate::error::{Error, Result};
use crate::statefulset::budget::{self, BudgetSpec, RecordedBudget};
use crate::statefulset::copy::ORIGINAL_BUDGET_ANNOTATION;
use crate::statefulset::model::Side;
use crate::statefulset::recover::BudgetTrace;

/// The budgets in the source namespace that select the set's pods, with their specs now: what
/// the journal records as the originals.
pub async fn selecting(w: &Writer) -> Result<Vec<RecordedBudget>> {
    let sets: Api<StatefulSet> = w.sides.namespaced(Side::Source);
    let Some(set) = w
        .sides
        .source
        .call(
            "read the source StatefulSet",
            sets.get_opt(&w.sides.names.set),
        )
        .await?
    else {
        return Ok(Vec::new());
    };
    let labels = set
        .spec
        .and_then(|s| s.template.metadata)
        .and_then(|m| m.labels)
        .unwrap_or_default();
    let api: Api<PodDisruptionBudget> = w.sides.namespaced(Side::Source);
    let list = w
        .sides
        .source
        .call(
            "list PodDisruptionBudgets",
            api.list(&ListParams::default()),
        )
        .await?;
    Ok(budget::budgets_of(&list.items, &labels))
}

/// The budgets that select the set, each with the original spec its annotation keeps.
pub async fn traces(w: &Writer) -> Result<Vec<BudgetTrace>> {
    let selecting = selecting(w).await?;
    let api: Api<PodDisruptionBudget> = w.sides.namespaced(Side::Source);
    let mut traces = Vec::new();
    for b in selecting {
        let pdb = w
            .sides
            .source
            .call(
                &format!("read PodDisruptionBudget {}", b.name),
                api.get_opt(&b.name),
            )
            .await?;
        let original = pdb
            .as_ref()
            .and_then(|p| p.metadata.annotations.as_ref())
            .and_then(|a| a.get(ORIGINAL_BUDGET_ANNOTATION))
            .and_then(|text| serde_json::from_str(text).ok());
        traces.push(BudgetTrace {
            name: b.name,
            spec: b.original,
            original,
        });
    }
    Ok(traces)
}

fn amount(value: &Option<budget::Amount>) -> serde_json::Value {
    value
        .as_ref()
        .map_or(serde_json::Value::Null, |a| json!(IntOrString::from(a)))
}

/// Gives budget `name` on `side` the `spec` (creating the destination's copy from the source's
/// budget if needed), or deletes the destination's copy when `spec` is `None`.
/// The source's budget keeps `original` in an annotation while its spec is a share.
pub async fn set(
    w: &Writer,
    waits: &Waits,
    side: Side,
    name: &str,
    spec: Option<&BudgetSpec>,
    original: Option<&BudgetSpec>,
) -> Result<()> {
    let api: Api<PodDisruptionBudget> = w.sides.namespaced(side);
    let cluster = w.sides.cluster(side);
    let Some(spec) = spec else {
        let existing = cluster
            .call(
                &format!("read PodDisruptionBudget {name}"),
                api.get_opt(name),
            )
            .await?;
        // Only our copy goes; a budget someone made in the destination stays.
        if existing.is_some_and(|b| is_ours(w, &b.metadata)) {
            w.delete_until_gone(waits, side, "PodDisruptionBudget", &api, name)
                .await?;
        }
        return Ok(());
    };
    let exists = cluster
        .call(
            &format!("read PodDisruptionBudget {name}"),
            api.get_opt(name),
        )
        .await?
        .is_some();
    let action = format!("set PodDisruptionBudget {name} to {spec}");
    if exists {
        // Both fields, so that the one not wanted is removed (the API allows only one).
        let mark = original
            .filter(|o| side == Side::Source && *o != spec)
            .map(|o| serde_json::to_string(o).unwrap_or_default());
        let patch = json!({
        "metadata": {"annotations": {ORIGINAL_BUDGET_ANNOTATION: mark}},
        "spec": {
            "minAvailable": amount(&spec.min_available),
            "maxUnavailable": amount(&spec.max_unavailable),
        }});
        w.write(
            side,
            &action,
            api.patch(name, &w.merge_params(), &Patch::Merge(&patch)),
            None,
        )
        .await?;
        return Ok(());
    }
    if side == Side::Source {
        return Err(Error::Failed {
            message: format!(
                "PodDisruptionBudget {name} disappeared from {} mid-step; rerun to decide again",
                w.sides.source.context
            ),
        });
    }
    let from: Api<PodDisruptionBudget> = w.sides.namespaced(Side::Source);
    let Some(original) = w
        .sides
        .source
        .call(
            &format!("read PodDisruptionBudget {name}"),
            from.get_opt(name),
        )
        .await?
    else {
        return Err(Error::Failed {
            message: format!(
                "PodDisruptionBudget {name} is gone from {}; rerun to decide again",
                w.sides.source.context
            ),
        });
    };
    let mut labels = original.metadata.labels.clone().unwrap_or_default();
    labels.extend(our_labels(w));
    let source_spec = original.spec.unwrap_or_default();
    let copy = PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(w.sides.destination_at.namespace.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: spec.min_available.as_ref().map(IntOrString::from),
            max_unavailable: spec.max_unavailable.as_ref().map(IntOrString::from),
            selector: source_spec.selector,
            unhealthy_pod_eviction_policy: source_spec.unhealthy_pod_eviction_policy,
        }),
        status: None,
    };
    w.write(
        side,
        &format!("create PodDisruptionBudget {name} with {spec}"),
        api.create(&w.post_params(), &copy),
        Some(409),
    )
    .await?;
    Ok(())
}
