//! PURE: the same Job and outcomes simulated under two Kubernetes versions, and where the two
//! decisions differ: what a team needs to know before moving Jobs to a cluster of another
//! version.
use serde::Serialize;

use super::engine::{Condition, Step};
use super::report::SimulateReport;

/// Two simulations side by side.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionComparison {
    pub schema_version: u32,
    pub job: String,
    /// How each side is named: `1.29`, or `CONTEXT (1.36)`.
    pub labels: [String; 2],
    pub differences: Vec<Difference>,
    /// Whether the final status (conditions, counts, indexes) differs: the exit code is 1 then.
    pub final_differs: bool,
    pub simulations: [SimulateReport; 2],
}

/// One thing decided differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The outcome (1-based), or `None` for the final status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<usize>,
    pub what: String,
    pub values: [String; 2],
}

fn conditions_text(conditions: &[Condition]) -> String {
    if conditions.is_empty() {
        return "-".into();
    }
    conditions
        .iter()
        .map(|c| format!("{} ({})", c.type_, c.reason))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each aspect of a step that can be decided differently, as text.
fn step_aspects(step: &Step) -> Vec<(&'static str, String)> {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    vec![
        ("result", step.result.clone()),
        (
            "matched rule",
            or_dash(
                step.policy
                    .as_ref()
                    .and_then(|p| p.rule)
                    .map(|r| r.to_string()),
            ),
        ),
        (
            "action",
            or_dash(step.policy.as_ref().map(|p| p.action.clone())),
        ),
        ("counted", if step.counted { "yes" } else { "no" }.into()),
        ("failed", step.failed.to_string()),
        ("succeeded", step.succeeded.to_string()),
        (
            "index failures",
            or_dash(step.index_failures.map(|c| c.to_string())),
        ),
        (
            "index failed",
            or_dash(
                step.index_failed
                    .map(|f| if f { "yes" } else { "no" }.to_string()),
            ),
        ),
        (
            "next pod in",
            or_dash(step.backoff_seconds.map(|s| format!("{s}s"))),
        ),
        ("conditions added", conditions_text(&step.conditions_added)),
    ]
}

/// The steps of two timelines paired by what they are, not by position: an outcome with the
/// same outcome, an event (the deadline) with the same event; a step of one side only is
/// paired with nothing. In the first timeline's order, then the second's own.
fn paired<'s>(a: &'s [Step], b: &'s [Step]) -> Vec<(Option<&'s Step>, Option<&'s Step>)> {
    let key = |s: &Step| match s.outcome {
        Some(n) => (Some(n), String::new()),
        None => (None, s.result.clone()),
    };
    let mut by_key: std::collections::BTreeMap<_, &Step> = b.iter().map(|y| (key(y), y)).collect();
    let mut out: Vec<_> = a
        .iter()
        .map(|x| (Some(x), by_key.remove(&key(x))))
        .collect();
    out.extend(
        b.iter()
            .filter(|y| by_key.contains_key(&key(y)))
            .map(|y| (None, Some(y))),
    );
    out
}

/// PURE: the two simulations (of the same Job and outcomes) compared aspect by aspect.
pub fn compare(labels: [String; 2], simulations: [SimulateReport; 2]) -> VersionComparison {
    let [a, b] = &simulations;
    let mut differences = Vec::new();
    let (sa, sb) = (&a.simulation.steps, &b.simulation.steps);
    for pair in paired(sa, sb) {
        let (x, y) = match pair {
            (Some(x), Some(y)) => (x, y),
            // An event (the deadline) that happens at one version only.
            (x, y) => {
                let at = |s: Option<&Step>| {
                    s.map_or("-".to_string(), |s| format!("at {}s", s.at_seconds))
                };
                let what = x.or(y).map(|s| s.result.clone()).unwrap_or_default();
                differences.push(Difference {
                    outcome: None,
                    what,
                    values: [at(x), at(y)],
                });
                continue;
            }
        };
        for ((what, left), (_, right)) in step_aspects(x).into_iter().zip(step_aspects(y)) {
            if left != right {
                differences.push(Difference {
                    outcome: x.outcome.or(y.outcome),
                    what: what.into(),
                    values: [left, right],
                });
            }
        }
    }
    let final_aspects = |s: &SimulateReport| {
        let f = &s.simulation.final_status;
        // Unset and empty differ: the per-index feature writes "" where nothing has failed.
        let or_dash = |v: &Option<String>| match v.as_deref() {
            None => "-".to_string(),
            Some("") => "\"\"".to_string(),
            Some(v) => v.to_string(),
        };
        vec![
            ("conditions", conditions_text(&f.conditions)),
            ("failed", f.failed.to_string()),
            ("succeeded", f.succeeded.to_string()),
            ("failedIndexes", or_dash(&f.failed_indexes)),
            ("completedIndexes", or_dash(&f.completed_indexes)),
            ("active", f.active.to_string()),
        ]
    };
    let mut final_differs = false;
    for ((what, left), (_, right)) in final_aspects(a).into_iter().zip(final_aspects(b)) {
        if left != right {
            final_differs = true;
            differences.push(Difference {
                outcome: None,
                what: what.to_string(),
                values: [left, right],
            });
        }
    }
    VersionComparison {
        schema_version: 1,
        job: a.job.clone(),
        labels,
        differences,
        final_differs,
        simulations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure_policy::engine::Semantics;
    use crate::failure_policy::{parse_job, scenario, simulate};

    fn simulated(job: &str, fails: &[&str], succeeds: &[&str], minor: u32) -> SimulateReport {
        let input = crate::failure_policy::JobInput {
            label: "job.yaml".into(),
            job: parse_job(job, "job.yaml").unwrap(),
        };
        let mut outcomes: Vec<_> = fails
            .iter()
            .map(|f| scenario::parse_inline(f, false).unwrap())
            .collect();
        outcomes.extend(
            succeeds
                .iter()
                .map(|s| scenario::parse_inline(s, true).unwrap()),
        );
        simulate(&input, &outcomes, &Semantics::for_minor(minor).unwrap()).unwrap()
    }

    const SUCCESS_POLICY: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: leader}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  successPolicy:
    rules: [{succeededIndexes: \"0\"}]
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
";

    /// The deadline passes at 1.30 only (1.31 completes the Job by its success policy first):
    /// the outcomes are still compared with the same outcomes, and the deadline is a
    /// difference of its own.
    #[test]
    fn an_event_at_one_version_only_does_not_shift_the_pairs() {
        let job = SUCCESS_POLICY.replace(
            "  completions: 3",
            "  activeDeadlineSeconds: 30\n  completions: 3",
        );
        // The success of index 0 first, then the failure of index 1 at 40 s.
        let sims = [31, 30].map(|minor| {
            let input = crate::failure_policy::JobInput {
                label: "job.yaml".into(),
                job: parse_job(&job, "job.yaml").unwrap(),
            };
            let outcomes = [
                scenario::parse_inline("index=0", true).unwrap(),
                scenario::parse_inline("index=1,exit=1,after=40s", false).unwrap(),
            ];
            simulate(&input, &outcomes, &Semantics::for_minor(minor).unwrap()).unwrap()
        });
        let compared = compare(["1.31".into(), "1.30".into()], sims);
        let deadline: Vec<_> = compared
            .differences
            .iter()
            .filter(|d| d.what == "deadline")
            .collect();
        assert_eq!(deadline.len(), 1, "{:?}", compared.differences);
        assert_eq!(deadline[0].values, ["-".to_string(), "at 30s".to_string()]);
        assert!(
            compared
                .differences
                .iter()
                .all(|d| d.outcome != Some(2) || d.what != "result"),
            "outcome 2 is skipped at both: {:?}",
            compared.differences
        );
    }

    #[test]
    fn a_success_policy_decides_at_1_31_and_is_ignored_at_1_30() {
        let run = |minor| simulated(SUCCESS_POLICY, &[], &["index=0"], minor);
        let c = compare(["1.30".into(), "1.36".into()], [run(30), run(36)]);
        assert!(c.final_differs, "{:?}", c.differences);
        let conditions = c
            .differences
            .iter()
            .find(|d| d.outcome.is_none() && d.what == "conditions")
            .expect("the final conditions differ");
        assert_eq!(conditions.values[0], "-");
        assert!(
            conditions.values[1].contains("SuccessCriteriaMet (SuccessPolicy)"),
            "{conditions:?}"
        );
        assert!(c.differences.iter().any(|d| d.outcome == Some(1)));
    }

    #[test]
    fn the_same_version_twice_differs_in_nothing() {
        let run = || simulated(SUCCESS_POLICY, &["exit=1,index=1"], &["index=0"], 36);
        let c = compare(["a".into(), "b".into()], [run(), run()]);
        assert_eq!(c.differences, Vec::new());
        assert!(!c.final_differs);
    }
}
