//! The subset of Job and Pod the engine needs, as plain data with the API server's defaults
//! applied. Converting from k8s-openapi types lives here; the engine never sees them.
use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Ignore,
    Count,
    FailJob,
    FailIndex,
    /// An action this version does not know: the controller skips the rule.
    Unknown(String),
}

impl Action {
    pub fn parse(text: &str) -> Action {
        match text {
            "Ignore" => Action::Ignore,
            "Count" => Action::Count,
            "FailJob" => Action::FailJob,
            "FailIndex" => Action::FailIndex,
            other => Action::Unknown(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Action::Ignore => "Ignore",
            Action::Count => "Count",
            Action::FailJob => "FailJob",
            Action::FailIndex => "FailIndex",
            Action::Unknown(s) => s,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitCodesRule {
    pub container_name: Option<String>,
    /// `In` or `NotIn`; anything else makes the rule never match.
    pub operator: String,
    pub values: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionPattern {
    pub type_: String,
    /// Defaults to `True`.
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub action: Action,
    pub on_exit_codes: Option<ExitCodesRule>,
    pub on_pod_conditions: Vec<ConditionPattern>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuccessRule {
    /// The parsed `succeededIndexes` ("0,2-4"), if given.
    pub succeeded_indexes: Option<BTreeSet<i32>>,
    pub succeeded_count: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplacementPolicy {
    TerminatingOrFailed,
    Failed,
}

/// A Job spec with defaults applied, as the controller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobModel {
    pub name: String,
    pub namespace: String,
    pub completions: Option<i32>,
    pub parallelism: i32,
    pub indexed: bool,
    pub backoff_limit: i32,
    pub backoff_limit_per_index: Option<i32>,
    pub max_failed_indexes: Option<i32>,
    /// `None` when the Job has no podFailurePolicy.
    pub pod_failure_policy: Option<Vec<Rule>>,
    pub success_policy: Option<Vec<SuccessRule>>,
    pub pod_replacement_policy: ReplacementPolicy,
    pub active_deadline_seconds: Option<i64>,
    pub restart_policy: String,
    pub containers: Vec<String>,
    pub init_containers: Vec<String>,
}

/// The state of one container of a finished pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerState {
    pub name: String,
    /// `None`: not terminated (the rules skip it).
    pub exit_code: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PodCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A failed pod, as far as the policy is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailedPod {
    pub name: String,
    pub containers: Vec<ContainerState>,
    pub init_containers: Vec<ContainerState>,
    pub conditions: Vec<PodCondition>,
}

/// Errors in a Job manifest that stop us before validation can even run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

/// Parses an interval list such as "0,2-4" (the format of succeededIndexes and failedIndexes).
pub fn parse_intervals(text: &str) -> Result<BTreeSet<i32>, String> {
    let mut out = BTreeSet::new();
    if text.trim().is_empty() {
        return Ok(out);
    }
    for part in text.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let lo: i32 = lo
            .trim()
            .parse()
            .map_err(|_| format!("{part:?} is not an index or a range"))?;
        let hi: i32 = hi
            .trim()
            .parse()
            .map_err(|_| format!("{part:?} is not an index or a range"))?;
        if lo > hi || lo < 0 {
            return Err(format!(
                "{part:?} is not an ascending range of non-negative indexes"
            ));
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

/// Formats indexes the way the controller writes failedIndexes/completedIndexes: "0,2-4".
pub fn format_intervals(set: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = set.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while let Some(next) = iter.next_if(|&n| end.checked_add(1) == Some(n)) {
            end = next;
        }
        // The controller writes two neighbours as "1,2", longer runs as "1-3".
        parts.push(match i64::from(end) - i64::from(start) {
            0 => start.to_string(),
            1 => format!("{start},{end}"),
            _ => format!("{start}-{end}"),
        });
    }
    parts.join(",")
}

impl JobModel {
    /// The model of a Job manifest, with the API server's defaults. Validation is separate
    /// ([`super::check`]); this only needs the shape to be readable.
    pub fn from_job(job: &Job) -> Result<JobModel, ModelError> {
        let spec = job
            .spec
            .as_ref()
            .ok_or_else(|| ModelError("the Job has no spec".into()))?;
        let pod_spec = spec
            .template
            .spec
            .as_ref()
            .ok_or_else(|| ModelError("spec.template.spec: Required value".into()))?;
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let pod_failure_policy = spec.pod_failure_policy.as_ref().map(|p| {
            p.rules
                .iter()
                .map(|r| Rule {
                    action: Action::parse(&r.action),
                    on_exit_codes: r.on_exit_codes.as_ref().map(|e| ExitCodesRule {
                        container_name: e.container_name.clone(),
                        operator: e.operator.clone(),
                        values: e.values.clone(),
                    }),
                    on_pod_conditions: r
                        .on_pod_conditions
                        .iter()
                        .flatten()
                        .map(|c| ConditionPattern {
                            type_: c.type_.clone(),
                            status: c.status.clone().unwrap_or_else(|| "True".into()),
                        })
                        .collect(),
                })
                .collect()
        });
        let success_policy = match &spec.success_policy {
            None => None,
            Some(p) => Some(
                p.rules
                    .iter()
                    .map(|r| {
                        Ok(SuccessRule {
                            succeeded_indexes: r
                                .succeeded_indexes
                                .as_deref()
                                .map(parse_intervals)
                                .transpose()
                                .map_err(ModelError)?,
                            succeeded_count: r.succeeded_count,
                        })
                    })
                    .collect::<Result<Vec<_>, ModelError>>()?,
            ),
        };
        let pod_replacement_policy = match spec.pod_replacement_policy.as_deref() {
            Some("Failed") => ReplacementPolicy::Failed,
            Some(_) => ReplacementPolicy::TerminatingOrFailed,
            None if pod_failure_policy.is_some() => ReplacementPolicy::Failed,
            None => ReplacementPolicy::TerminatingOrFailed,
        };
        let parallelism = spec.parallelism.unwrap_or(1);
        // completions defaults to parallelism only when both are unset (non-indexed "work
        // queue" Jobs keep it unset).
        let completions = match (spec.completions, spec.parallelism) {
            (Some(c), _) => Some(c),
            (None, None) => Some(1),
            (None, Some(_)) => None,
        };
        let backoff_limit =
            spec.backoff_limit
                .unwrap_or(if spec.backoff_limit_per_index.is_some() {
                    i32::MAX
                } else {
                    6
                });
        Ok(JobModel {
            name: job.metadata.name.clone().unwrap_or_else(|| "job".into()),
            namespace: job
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            completions,
            parallelism,
            indexed,
            backoff_limit,
            backoff_limit_per_index: spec.backoff_limit_per_index,
            max_failed_indexes: spec.max_failed_indexes,
            pod_failure_policy,
            success_policy,
            pod_replacement_policy,
            active_deadline_seconds: spec.active_deadline_seconds,
            restart_policy: pod_spec
                .restart_policy
                .clone()
                .unwrap_or_else(|| "Always".into()),
            containers: pod_spec.containers.iter().map(|c| c.name.clone()).collect(),
            init_containers: pod_spec
                .init_containers
                .iter()
                .flatten()
                .map(|c| c.name.clone())
                .collect(),
        })
    }
}

impl FailedPod {
    /// What the policy sees of a real pod: terminated container states and conditions.
    pub fn from_pod(pod: &Pod) -> FailedPod {
        let states = |list: Option<&Vec<k8s_openapi::api::core::v1::ContainerStatus>>| -> Vec<ContainerState> {
            list.into_iter()
                .flatten()
                .map(|s| ContainerState {
                    name: s.name.clone(),
                    exit_code: s
                        .state
                        .as_ref()
                        .and_then(|st| st.terminated.as_ref())
                        .map(|t| t.exit_code),
                })
                .collect()
        };
        let status = pod.status.as_ref();
        FailedPod {
            name: pod.metadata.name.clone().unwrap_or_default(),
            containers: states(status.and_then(|s| s.container_statuses.as_ref())),
            init_containers: states(status.and_then(|s| s.init_container_statuses.as_ref())),
            conditions: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .map(|c| PodCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_round_trip_like_the_controller_writes_them() {
        let set = parse_intervals("0,2-4,7").unwrap();
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), [0, 2, 3, 4, 7]);
        assert_eq!(format_intervals(&set), "0,2-4,7");
        assert_eq!(format_intervals(&BTreeSet::new()), "");
        assert_eq!(
            format_intervals(&parse_intervals("0-1,5-6,8-10").unwrap()),
            "0,1,5,6,8-10"
        );
        assert!(parse_intervals("3-1").is_err());
        assert!(parse_intervals("a").is_err());
    }

    /// The largest index used to overflow `end + 1` (a panic in debug builds).
    #[test]
    fn intervals_at_the_ends_of_the_integers() {
        let set: BTreeSet<i32> = [i32::MAX - 1, i32::MAX].into();
        assert_eq!(
            format_intervals(&set),
            format!("{},{}", i32::MAX - 1, i32::MAX)
        );
        let set: BTreeSet<i32> = [i32::MIN, i32::MIN + 1, i32::MIN + 2, i32::MAX].into();
        assert_eq!(
            format_intervals(&set),
            format!("{}-{},{}", i32::MIN, i32::MIN + 2, i32::MAX)
        );
    }
}
