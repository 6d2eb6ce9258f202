//! PURE: PodDisruptionBudgets split between the two clusters while a set moves (KEP-3335).
//!
//! A budget that selects the set asks that `M` of its `N` pods stay available, so `N - M`
//! disruptions are allowed. While the set moves, every ordinal in flight is one of those
//! disruptions, and the rest is shared: each side gets a `minAvailable` count so that the two
//! together require `M` available pods again. The sides' budgets therefore never allow more
//! evictions than the original did, whatever the pods do. At the end the original spec is
//! restored (both sides after a migration; the source, with the copy deleted, after a rollback).
use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

/// A count or a percentage, as `minAvailable` and `maxUnavailable` take them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Count(i32),
    /// `"50%"`, as written in the object.
    Percent(String),
}

impl Amount {
    /// The count for `total` pods, percentages rounded up as the disruption controller does
    /// for both fields. `None` for a malformed percentage.
    pub fn scaled(&self, total: i32) -> Option<i32> {
        match self {
            Amount::Count(n) => Some(*n),
            Amount::Percent(text) => {
                let percent: i64 = text.strip_suffix('%')?.parse().ok()?;
                let total = i64::from(total.max(0));
                i32::try_from((total * percent + 99).div_euclid(100)).ok()
            }
        }
    }
}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Amount::Count(n) => write!(f, "{n}"),
            Amount::Percent(p) => f.write_str(p),
        }
    }
}

/// The part of a PodDisruptionBudget's spec that the split changes: one of the two is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<Amount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<Amount>,
}

impl BudgetSpec {
    pub fn min_available(count: i32) -> BudgetSpec {
        BudgetSpec {
            min_available: Some(Amount::Count(count)),
            max_unavailable: None,
        }
    }

    /// How many of `total` pods must stay available (`M`). `None` for a malformed spec.
    pub fn required(&self, total: i32) -> Option<i32> {
        match (&self.min_available, &self.max_unavailable) {
            (Some(min), _) => min.scaled(total).map(|m| m.clamp(0, total.max(0))),
            (None, Some(max)) => max
                .scaled(total)
                .map(|u| (total - u).clamp(0, total.max(0))),
            // Neither: the API defaults minAvailable to 1.
            (None, None) => Some(1.min(total.max(0))),
        }
    }

    /// Disruptions allowed when all `total` pods are healthy (`N - M`).
    pub fn allowed(&self, total: i32) -> Option<i32> {
        self.required(total).map(|m| total.max(0) - m)
    }
}

impl std::fmt::Display for BudgetSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.min_available, &self.max_unavailable) {
            (Some(min), _) => write!(f, "minAvailable {min}"),
            (None, Some(max)) => write!(f, "maxUnavailable {max}"),
            (None, None) => f.write_str("minAvailable 1 (the default)"),
        }
    }
}

/// A budget that selects the set, as the journal records it before anything changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedBudget {
    pub name: String,
    pub original: BudgetSpec,
}

impl From<&IntOrString> for Amount {
    fn from(value: &IntOrString) -> Amount {
        match value {
            IntOrString::Int(n) => Amount::Count(*n),
            IntOrString::String(text) => Amount::Percent(text.clone()),
        }
    }
}

impl From<&Amount> for IntOrString {
    fn from(value: &Amount) -> IntOrString {
        match value {
            Amount::Count(n) => IntOrString::Int(*n),
            Amount::Percent(text) => IntOrString::String(text.clone()),
        }
    }
}

/// The spec of a PodDisruptionBudget object, in the split's terms.
pub fn spec_of(pdb: &PodDisruptionBudget) -> BudgetSpec {
    let spec = pdb.spec.as_ref();
    BudgetSpec {
        min_available: spec
            .and_then(|s| s.min_available.as_ref())
            .map(Amount::from),
        max_unavailable: spec
            .and_then(|s| s.max_unavailable.as_ref())
            .map(Amount::from),
    }
}

/// Whether `selector` selects pods labelled `labels`, as policy/v1 reads a PDB's selector: a
/// missing selector selects nothing, an empty one every pod of the namespace.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    use kube::core::{Selector, SelectorExt};
    // An operator the API server would have refused selects nothing, to be safe.
    selector
        .and_then(|s| Selector::try_from(s.clone()).ok())
        .is_some_and(|s| s.matches(labels))
}

/// The budgets among `pdbs` that select pods labelled `labels`, by name.
pub fn budgets_of(
    pdbs: &[PodDisruptionBudget],
    labels: &BTreeMap<String, String>,
) -> Vec<RecordedBudget> {
    let mut budgets: Vec<RecordedBudget> = pdbs
        .iter()
        .filter(|p| selects(p.spec.as_ref().and_then(|s| s.selector.as_ref()), labels))
        .map(|p| RecordedBudget {
            name: p.metadata.name.clone().unwrap_or_default(),
            original: spec_of(p),
        })
        .collect();
    budgets.sort_by(|a, b| a.name.cmp(&b.name));
    budgets
}

/// What both sides' budgets should say while `source` pods run in the source and `destination`
/// in the destination (the ordinals in flight in neither), for an original budget over `total`
/// pods: the original's `M` shared in proportion to the pods on each side, never more on a side
/// than it has pods. A side asked for more than it has would allow nothing while the other
/// allowed more than the whole set may lose.
pub fn split(
    original: &BudgetSpec,
    total: i32,
    source: i32,
    destination: i32,
) -> (BudgetSpec, BudgetSpec) {
    let required = original.required(total).unwrap_or(total);
    let (s, d) = (source.max(0), destination.max(0));
    let on_source = if s + d == 0 {
        0
    } else {
        // Rounded up: the source, which still serves most, keeps the larger share.
        ((i64::from(required) * i64::from(s) + i64::from(s + d) - 1) / i64::from(s + d)) as i32
    }
    .min(s);
    let on_destination = (required - on_source).clamp(0, d);
    // If the destination could not take its share, the source takes what is left.
    let on_source = (required - on_destination).clamp(0, s).max(on_source);
    (
        BudgetSpec::min_available(on_source),
        BudgetSpec::min_available(on_destination),
    )
}

/// Why `batch` ordinals cannot move at once under `budget` (a set of `total` pods), if so.
/// `--batch auto`: the ordinals one step may take down, as many as every budget that selects
/// the set allows of its `total` pods (the least of them), and 1 when no budget selects it (no
/// tolerance declared, so the cautious default). Never more than `total`, never less than 1 (a
/// budget that allows none is refused by [`refuse_batch`]), with the budget that sets it.
pub fn auto_batch(budgets: &[RecordedBudget], total: i32) -> (i32, Option<&str>) {
    let tightest = budgets
        .iter()
        .filter_map(|b| b.original.allowed(total).map(|n| (n, b.name.as_str())))
        .min_by_key(|(n, _)| *n);
    match tightest {
        Some((n, name)) => (n.clamp(1, total.max(1)), Some(name)),
        None => (1, None),
    }
}

pub fn refuse_batch(budget: &RecordedBudget, total: i32, batch: i32) -> Option<String> {
    let Some(allowed) = budget.original.allowed(total) else {
        return Some(format!(
            "PodDisruptionBudget {} has a spec this tool cannot read ({}); fix it first",
            budget.name, budget.original
        ));
    };
    if allowed == 0 {
        return Some(format!(
            "PodDisruptionBudget {} ({}) allows no disruption of the {total} pods, but each ordinal is down while it moves; \
             relax it (for example maxUnavailable 1) for the migration, or delete it",
            budget.name, budget.original
        ));
    }
    (batch > allowed).then(|| {
        format!(
            "PodDisruptionBudget {} ({}) allows {} of the {total} pods, but --batch {batch} takes {} down at once; \
             use --batch {allowed} or less",
            budget.name,
            budget.original,
            super::words::count(allowed, "disruption", "disruptions"),
            super::words::count(batch, "pod", "pods"),
        )
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn min(a: Amount) -> BudgetSpec {
        BudgetSpec {
            min_available: Some(a),
            max_unavailable: None,
        }
    }

    fn max(a: Amount) -> BudgetSpec {
        BudgetSpec {
            min_available: None,
            max_unavailable: Some(a),
        }
    }

    #[test]
    fn percentages_round_up_like_the_disruption_controller() {
        // minAvailable 50% of 5: 3 must stay (2.5 rounded up).
        assert_eq!(min(Amount::Percent("50%".into())).required(5), Some(3));
        // maxUnavailable 30% of 5: 2 may go (1.5 rounded up), so 3 must stay.
        assert_eq!(max(Amount::Percent("30%".into())).required(5), Some(3));
        assert_eq!(max(Amount::Count(1)).allowed(4), Some(1));
        assert_eq!(min(Amount::Count(4)).allowed(4), Some(0));
        assert_eq!(min(Amount::Count(9)).required(4), Some(4), "capped");
        assert_eq!(min(Amount::Percent("x%".into())).required(4), None);
        assert_eq!(min(Amount::Percent("50".into())).required(4), None);
    }

    #[test]
    fn the_split_shares_the_original_requirement_by_pods() {
        let original = min(Amount::Count(3));
        assert_eq!(
            split(&original, 4, 3, 1),
            (BudgetSpec::min_available(3), BudgetSpec::min_available(0))
        );
        assert_eq!(
            split(&original, 4, 2, 2),
            (BudgetSpec::min_available(2), BudgetSpec::min_available(1))
        );
        assert_eq!(
            split(&original, 4, 0, 4),
            (BudgetSpec::min_available(0), BudgetSpec::min_available(3))
        );
        let original = max(Amount::Percent("25%".into()));
        assert_eq!(
            split(&original, 8, 4, 4),
            (BudgetSpec::min_available(3), BudgetSpec::min_available(3))
        );
    }

    #[test]
    fn a_batch_beyond_the_budget_is_refused_with_the_reason() {
        let budget = |spec| RecordedBudget {
            name: "web".into(),
            original: spec,
        };
        let b = budget(max(Amount::Count(1)));
        assert_eq!(refuse_batch(&b, 4, 1), None);
        let why = refuse_batch(&b, 4, 2).unwrap();
        assert!(
            why.contains("allows 1 disruption of") && why.contains("--batch 1 or less"),
            "{why}"
        );
        let why = refuse_batch(&budget(min(Amount::Percent("100%".into()))), 4, 1).unwrap();
        assert!(why.contains("allows no disruption"), "{why}");
        assert_eq!(
            refuse_batch(&budget(min(Amount::Percent("50%".into()))), 4, 2),
            None
        );
    }

    #[test]
    fn auto_batch_takes_what_the_tightest_budget_allows() {
        let budget = |name: &str, spec| RecordedBudget {
            name: name.into(),
            original: spec,
        };
        assert_eq!(auto_batch(&[], 5), (1, None), "no budget: one at a time");
        let loose = budget("loose", max(Amount::Percent("60%".into())));
        let tight = budget("tight", min(Amount::Count(3)));
        assert_eq!(
            auto_batch(std::slice::from_ref(&loose), 5),
            (3, Some("loose"))
        );
        assert_eq!(auto_batch(&[loose, tight], 5), (2, Some("tight")));
        let all = budget("all", max(Amount::Count(10)));
        assert_eq!(auto_batch(&[all], 4), (4, Some("all")), "at most the set");
        let none = budget("none", min(Amount::Percent("100%".into())));
        assert_eq!(auto_batch(&[none], 4).0, 1, "refused elsewhere");
    }

    proptest! {
        /// What auto picks is never refused by a budget that allows any disruption.
        #[test]
        fn auto_batch_is_never_refused(
            total in 1i32..40,
            specs in proptest::collection::vec((0i32..50, any::<bool>()), 0..4),
        ) {
            let budgets: Vec<RecordedBudget> = specs
                .iter()
                .enumerate()
                .map(|(i, (n, is_min))| RecordedBudget {
                    name: format!("b{i}"),
                    original: if *is_min { min(Amount::Count(*n)) } else { max(Amount::Count(*n)) },
                })
                .collect();
            let (batch, _) = auto_batch(&budgets, total);
            prop_assert!(batch >= 1 && batch <= total);
            for b in &budgets {
                if b.original.allowed(total).is_some_and(|n| n > 0) {
                    prop_assert_eq!(refuse_batch(b, total, batch), None);
                }
            }
        }
    }

    #[test]
    fn selectors_read_like_policy_v1() {
        let labels: BTreeMap<String, String> = [
            ("app".to_string(), "web".to_string()),
            ("tier".into(), "db".into()),
        ]
        .into();
        let selector = |v: serde_json::Value| serde_json::from_value::<LabelSelector>(v).unwrap();
        assert!(!selects(None, &labels), "no selector: nothing");
        assert!(
            selects(Some(&selector(serde_json::json!({}))), &labels),
            "empty: all"
        );
        assert!(selects(
            Some(&selector(
                serde_json::json!({"matchLabels": {"app": "web"}})
            )),
            &labels
        ));
        assert!(!selects(
            Some(&selector(serde_json::json!({"matchLabels": {"app": "db"}}))),
            &labels
        ));
        let expr = |op: &str, values: &[&str]| {
            selector(
                serde_json::json!({"matchExpressions": [{"key": "tier", "operator": op, "values": values}]}),
            )
        };
        assert!(selects(Some(&expr("In", &["db", "cache"])), &labels));
        assert!(!selects(Some(&expr("NotIn", &["db"])), &labels));
        assert!(selects(Some(&expr("Exists", &[])), &labels));
        assert!(!selects(Some(&expr("DoesNotExist", &[])), &labels));
        assert!(
            !selects(Some(&expr("Equals", &["db"])), &labels),
            "an operator the server refuses: nothing"
        );
    }

    proptest! {
        /// Whatever the pods on each side, the two budgets together require exactly what the
        /// original did (when the pods suffice), and so allow no more evictions: every pod in
        /// flight is one of the original's disruptions.
        #[test]
        fn the_sides_never_allow_more_than_the_original(
            total in 1i32..40,
            moved in 0i32..40,
            in_flight in 0i32..4,
            by_percent in any::<bool>(),
            minimum in any::<bool>(),
            value in 0i32..101,
        ) {
            let moved = moved.min(total);
            let amount = if by_percent {
                Amount::Percent(format!("{value}%"))
            } else {
                Amount::Count(value % (total + 2))
            };
            let original = if minimum { min(amount) } else { max(amount) };
            let allowed = original.allowed(total).unwrap();
            let in_flight = in_flight.min(allowed).min(total - moved);
            let (s, d) = (total - moved - in_flight, moved);
            let (on_s, on_d) = split(&original, total, s, d);
            let (ms, md) = (on_s.required(s).unwrap(), on_d.required(d).unwrap());
            prop_assert!(ms <= s && md <= d);
            prop_assert_eq!(ms + md, original.required(total).unwrap());
            // Evictions the two budgets allow when every running pod is healthy.
            let evictable = (s - ms) + (d - md);
            prop_assert!(evictable + in_flight <= allowed);
        }
    }
}
