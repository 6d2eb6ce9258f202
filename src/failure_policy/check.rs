//! PURE: the API server's validation of a Job's failure handling (pkg/apis/batch/validation),
//! with messages in its own format (`path: Type: value: detail`), plus what a version supports.
use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use serde::Serialize;

use super::engine::Semantics;
use super::model::parse_intervals;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub path: String,
    /// The API server's words: `path: Invalid value: 0: must not be 0 for the In operator`.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Support {
    pub feature: String,
    pub used: bool,
    /// `GA`, `beta (on by default)`, `alpha (off by default)`, or `not available`.
    pub state: String,
    pub enabled: bool,
    /// What the API server does with the field when the feature is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consequence: Option<String>,
}

const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const MAX_RULES: usize = 20;
const MAX_VALUES: usize = 255;
const MAX_PATTERNS: usize = 20;
const MAX_SUCCESS_RULES: usize = 20;
const MAX_FAILED_INDEXES_LIMIT: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;

struct Errors(Vec<Problem>);

impl Errors {
    fn push(&mut self, path: &str, body: String) {
        self.0.push(Problem {
            path: path.to_string(),
            message: format!("{path}: {body}"),
        });
    }
    fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.push(path, format!("Invalid value: {value}: {detail}"));
    }
    fn invalid_omitted(&mut self, path: &str, detail: &str) {
        self.push(path, format!("Invalid value: {detail}"));
    }
    fn required(&mut self, path: &str, detail: &str) {
        self.push(path, format!("Required value: {detail}"));
    }
    fn not_supported(&mut self, path: &str, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        self.push(
            path,
            format!(
                "Unsupported value: {value:?}: supported values: {}",
                list.join(", ")
            ),
        );
    }
    fn too_many(&mut self, path: &str, actual: usize, max: usize) {
        self.push(
            path,
            format!("Too many: {actual}: must have at most {max} items"),
        );
    }
    fn non_negative(&mut self, path: &str, value: i64) {
        if value < 0 {
            self.invalid(
                path,
                &value.to_string(),
                "must be greater than or equal to 0",
            );
        }
    }
}

/// Go's `%q` of a string list, as `field.Required(..., fmt.Sprintf("valid values: %q", list))`.
fn go_quoted_list(items: &[&str]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Validates what the API server validates about failure handling. The spec is taken as written
/// (defaults are applied by the server before validation; we apply the same ones).
pub fn validate(job: &Job) -> Vec<Problem> {
    let mut e = Errors(Vec::new());
    let Some(spec) = &job.spec else {
        e.required("spec", "");
        return e.0;
    };
    validate_counts(spec, &mut e);
    let indexed = spec.completion_mode.as_deref() == Some("Indexed");
    if let Some(mode) = &spec.completion_mode
        && mode != "Indexed"
        && mode != "NonIndexed"
    {
        e.not_supported("spec.completionMode", mode, &["Indexed", "NonIndexed"]);
    }
    if indexed {
        if spec.completions.is_none() {
            e.required(
                "spec.completions",
                &format!("when completion mode is {}", "Indexed"),
            );
        }
    } else {
        if let Some(b) = spec.backoff_limit_per_index {
            e.invalid(
                "spec.backoffLimitPerIndex",
                &b.to_string(),
                "requires indexed completion mode",
            );
        }
        if let Some(m) = spec.max_failed_indexes {
            e.invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                "requires indexed completion mode",
            );
        }
    }
    if let Some(b) = spec.backoff_limit_per_index {
        e.non_negative("spec.backoffLimitPerIndex", b as i64);
    }
    if let Some(m) = spec.max_failed_indexes {
        e.non_negative("spec.maxFailedIndexes", m as i64);
        if spec.backoff_limit_per_index.is_none() {
            e.required(
                "spec.backoffLimitPerIndex",
                "when maxFailedIndexes is specified",
            );
        }
        if let Some(c) = spec.completions
            && m > c
        {
            e.invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                "must be less than or equal to completions",
            );
        }
        if m > MAX_FAILED_INDEXES_LIMIT {
            e.invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                &format!("must be less than or equal to {MAX_FAILED_INDEXES_LIMIT}"),
            );
        }
    }
    if spec.backoff_limit_per_index.is_some()
        && let Some(c) = spec.completions
        && c > COMPLETIONS_SOFT_LIMIT
    {
        match spec.max_failed_indexes {
            None => e.required(
                "spec.maxFailedIndexes",
                &format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            ),
            Some(m) if m > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS => e.invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                &format!(
                    "must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} when completions more than {COMPLETIONS_SOFT_LIMIT}"
                ),
            ),
            _ => {}
        }
        if let Some(p) = spec.parallelism
            && p > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS
        {
            e.invalid(
                "spec.parallelism",
                &p.to_string(),
                &format!(
                    "must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
                ),
            );
        }
    }
    if spec.pod_failure_policy.is_some() {
        validate_pod_failure_policy(spec, &mut e);
    }
    validate_replacement_policy(spec, &mut e);
    if spec.success_policy.is_some() {
        validate_success_policy(spec, &mut e);
    }
    e.0
}

fn validate_counts(spec: &JobSpec, e: &mut Errors) {
    if let Some(p) = spec.parallelism {
        e.non_negative("spec.parallelism", p as i64);
    }
    if let Some(c) = spec.completions {
        e.non_negative("spec.completions", c as i64);
    }
    if let Some(b) = spec.backoff_limit {
        e.non_negative("spec.backoffLimit", b as i64);
    }
    if let Some(d) = spec.active_deadline_seconds
        && d <= 0
    {
        e.invalid(
            "spec.activeDeadlineSeconds",
            &d.to_string(),
            "must be greater than 0",
        );
    }
}

fn validate_pod_failure_policy(spec: &JobSpec, e: &mut Errors) {
    let policy = spec.pod_failure_policy.as_ref().expect("caller checked");
    let pod = spec.template.spec.as_ref();
    let restart = pod.and_then(|p| p.restart_policy.as_deref()).unwrap_or("");
    if restart != "Never" {
        e.invalid(
            "spec.template.spec.restartPolicy",
            &format!("{restart:?}"),
            "only \"Never\" is supported when podFailurePolicy is specified",
        );
    }
    if policy.rules.len() > MAX_RULES {
        e.too_many("spec.podFailurePolicy.rules", policy.rules.len(), MAX_RULES);
    }
    let names: BTreeSet<&str> = pod
        .map(|p| {
            p.containers
                .iter()
                .map(|c| c.name.as_str())
                .chain(p.init_containers.iter().flatten().map(|c| c.name.as_str()))
                .collect()
        })
        .unwrap_or_default();
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = format!("spec.podFailurePolicy.rules[{i}]");
        let action_path = format!("{path}.action");
        if rule.action.is_empty() {
            e.required(
                &action_path,
                &format!("valid values: {}", go_quoted_list(&ACTIONS)),
            );
        } else if rule.action == "FailIndex" {
            if spec.backoff_limit_per_index.is_none() {
                e.invalid(
                    &action_path,
                    "\"FailIndex\"",
                    "requires the backoffLimitPerIndex to be set",
                );
            }
        } else if !ACTIONS.contains(&rule.action.as_str()) {
            e.not_supported(&action_path, &rule.action, &ACTIONS);
        }
        if let Some(codes) = &rule.on_exit_codes {
            let cpath = format!("{path}.onExitCodes");
            if codes.operator.is_empty() {
                e.required(
                    &format!("{cpath}.operator"),
                    &format!("valid values: {}", go_quoted_list(&OPERATORS)),
                );
            } else if !OPERATORS.contains(&codes.operator.as_str()) {
                e.not_supported(&format!("{cpath}.operator"), &codes.operator, &OPERATORS);
            }
            if let Some(name) = &codes.container_name
                && !names.contains(name.as_str())
            {
                e.invalid(
                    &format!("{cpath}.containerName"),
                    &format!("{name:?}"),
                    "must be one of the container or initContainer names in the pod template",
                );
            }
            let vpath = format!("{cpath}.values");
            let go_values = format!(
                "[]int32{{{}}}",
                codes
                    .values
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if codes.values.is_empty() {
                e.invalid(&vpath, &go_values, "at least one value is required");
            } else if codes.values.len() > MAX_VALUES {
                e.too_many(&vpath, codes.values.len(), MAX_VALUES);
            } else {
                let mut seen = BTreeSet::new();
                let mut ordered = true;
                for (j, v) in codes.values.iter().enumerate() {
                    if codes.operator == "In" && *v == 0 {
                        e.invalid(
                            &format!("{vpath}[{j}]"),
                            "0",
                            "must not be 0 for the In operator",
                        );
                    }
                    if !seen.insert(*v) {
                        e.push(&format!("{vpath}[{j}]"), format!("Duplicate value: {v}"));
                    }
                    if j > 0 && codes.values[j - 1] > *v {
                        ordered = false;
                    }
                }
                if !ordered {
                    e.invalid(&vpath, &go_values, "must be ordered");
                }
            }
        }
        let patterns = rule.on_pod_conditions.as_deref().unwrap_or_default();
        if !patterns.is_empty() {
            let ppath = format!("{path}.onPodConditions");
            if patterns.len() > MAX_PATTERNS {
                e.too_many(&ppath, patterns.len(), MAX_PATTERNS);
            }
            for (j, p) in patterns.iter().enumerate() {
                let tpath = format!("{ppath}[{j}].type");
                for problem in qualified_name_problems(&p.type_) {
                    e.invalid(&tpath, &format!("{:?}", p.type_), &problem);
                }
                let spath = format!("{ppath}[{j}].status");
                match p.status.as_deref() {
                    // The server defaults an absent status to True before validating.
                    None => {}
                    Some("") => e.required(
                        &spath,
                        &format!("valid values: {}", go_quoted_list(&STATUSES)),
                    ),
                    Some(s) if !STATUSES.contains(&s) => e.not_supported(&spath, s, &STATUSES),
                    Some(_) => {}
                }
            }
        }
        match (rule.on_exit_codes.is_some(), !patterns.is_empty()) {
            (true, true) => e.invalid_omitted(
                &path,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ),
            (false, false) => e.invalid_omitted(
                &path,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ),
            _ => {}
        }
    }
}

fn validate_replacement_policy(spec: &JobSpec, e: &mut Errors) {
    let Some(policy) = &spec.pod_replacement_policy else {
        return;
    };
    if spec.pod_failure_policy.is_some() {
        if policy != "Failed" {
            e.not_supported("spec.podReplacementPolicy", policy, &["Failed"]);
        }
    } else if policy != "Failed" && policy != "TerminatingOrFailed" {
        e.not_supported(
            "spec.podReplacementPolicy",
            policy,
            &["Failed", "TerminatingOrFailed"],
        );
    }
}

fn validate_success_policy(spec: &JobSpec, e: &mut Errors) {
    let policy = spec.success_policy.as_ref().expect("caller checked");
    if spec.completion_mode.as_deref() != Some("Indexed") {
        e.invalid_omitted("spec.successPolicy", "requires indexed completion mode");
    }
    let rpath = "spec.successPolicy.rules";
    if policy.rules.is_empty() {
        e.required(
            rpath,
            "at least one rules must be specified when the successPolicy is specified",
        );
    }
    if policy.rules.len() > MAX_SUCCESS_RULES {
        e.too_many(rpath, policy.rules.len(), MAX_SUCCESS_RULES);
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = format!("{rpath}[{i}]");
        let mut total: Option<i32> = None;
        if let Some(text) = &rule.succeeded_indexes {
            let ipath = format!("{path}.succeededIndexes");
            match parse_intervals(text) {
                Ok(set) => {
                    total = Some(set.len() as i32);
                    if let (Some(max), Some(c)) = (set.iter().next_back(), spec.completions)
                        && *max >= c
                    {
                        e.invalid(
                            &ipath,
                            &format!("{text:?}"),
                            &format!("error parsing succeededIndexes: too large index: {max}"),
                        );
                    }
                }
                Err(why) => e.invalid(
                    &ipath,
                    &format!("{text:?}"),
                    &format!("error parsing succeededIndexes: {why}"),
                ),
            }
        }
        if let Some(count) = rule.succeeded_count {
            let cpath = format!("{path}.succeededCount");
            e.non_negative(&cpath, count as i64);
            if let Some(c) = spec.completions
                && count > c
            {
                e.invalid(
                    &cpath,
                    &count.to_string(),
                    &format!(
                        "must be less than or equal to {c} (the number of specified completions)"
                    ),
                );
            }
            if let Some(t) = total
                && count > t
            {
                e.invalid(
                    &cpath,
                    &count.to_string(),
                    &format!("must be less than or equal to {t} (the number of indexes in the specified succeededIndexes field)"),
                );
            }
        }
        if rule.succeeded_indexes.is_none() && rule.succeeded_count.is_none() {
            e.required(
                &path,
                "at least one of succeededCount or succeededIndexes must be specified",
            );
        }
    }
}

/// The qualified-name rules of apimachinery (ValidateQualifiedName), with its messages.
fn qualified_name_problems(value: &str) -> Vec<String> {
    const FMT: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let mut out = Vec::new();
    let (prefix, name) = match value.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, value),
    };
    if value.matches('/').count() > 1 {
        out.push(format!("a qualified name {FMT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
        return out;
    }
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            }))
    {
        out.push("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    if name.is_empty() {
        out.push("name part must be non-empty".into());
    } else {
        if name.len() > 63 {
            out.push("name part must be no more than 63 bytes".into());
        }
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        let ok_ends = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && name
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if !ok_chars || !ok_ends {
            out.push(format!("name part {FMT}"));
        }
    }
    out
}

/// Which failure-handling features the Job uses, and whether the version supports them.
pub fn support(job: &Job, sem: &Semantics) -> Vec<Support> {
    let spec = job.spec.as_ref();
    let uses_fail_index = spec
        .and_then(|s| s.pod_failure_policy.as_ref())
        .is_some_and(|p| p.rules.iter().any(|r| r.action == "FailIndex"));
    let uses_disruption = spec
        .and_then(|s| s.pod_failure_policy.as_ref())
        .is_some_and(|p| {
            p.rules
                .iter()
                .flat_map(|r| r.on_pod_conditions.iter().flatten())
                .any(|c| c.type_ == "DisruptionTarget")
        });
    let m = sem.minor;
    let state = |alpha: u32, beta: Option<u32>, ga: Option<u32>| -> (String, bool) {
        if ga.is_some_and(|g| m >= g) {
            ("GA".into(), true)
        } else if beta.is_some_and(|b| m >= b) {
            ("beta (on by default)".into(), true)
        } else if m >= alpha {
            ("alpha (off by default)".into(), false)
        } else {
            ("not available".into(), false)
        }
    };
    let mut out = Vec::new();
    let mut add =
        |feature: &str, used: bool, (state, enabled): (String, bool), consequence: &str| {
            out.push(Support {
                feature: feature.into(),
                used,
                state,
                enabled,
                consequence: (used && !enabled).then(|| consequence.to_string()),
            })
        };
    add(
        "podFailurePolicy (JobPodFailurePolicy)",
        spec.is_some_and(|s| s.pod_failure_policy.is_some()),
        state(25, Some(26), Some(31)),
        "the API server drops spec.podFailurePolicy: every failure counts",
    );
    add(
        "DisruptionTarget pod conditions (PodDisruptionConditions)",
        uses_disruption,
        state(25, Some(26), Some(31)),
        "pods never get DisruptionTarget: rules on it never match",
    );
    add(
        "backoffLimitPerIndex, maxFailedIndexes, FailIndex (JobBackoffLimitPerIndex)",
        spec.is_some_and(|s| s.backoff_limit_per_index.is_some() || s.max_failed_indexes.is_some())
            || uses_fail_index,
        state(28, Some(29), Some(33)),
        "the API server drops the per-index fields; FailIndex rules are skipped",
    );
    add(
        "podReplacementPolicy (JobPodReplacementPolicy)",
        spec.is_some_and(|s| s.pod_replacement_policy.is_some()),
        state(28, Some(29), Some(34)),
        "the API server drops spec.podReplacementPolicy: terminating pods are replaced at once",
    );
    add(
        "successPolicy (JobSuccessPolicy)",
        spec.is_some_and(|s| s.success_policy.is_some()),
        state(30, Some(31), Some(33)),
        "the API server drops spec.successPolicy: only completions decide success",
    );
    add(
        "managedBy (JobManagedBy)",
        spec.is_some_and(|s| s.managed_by.is_some()),
        state(30, Some(32), Some(35)),
        "the API server drops spec.managedBy: the built-in controller manages the Job",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_apimachinery() {
        assert!(qualified_name_problems("DisruptionTarget").is_empty());
        assert!(qualified_name_problems("example.com/Ready").is_empty());
        assert_eq!(qualified_name_problems("-bad").len(), 1);
        assert_eq!(qualified_name_problems("").len(), 1);
        assert_eq!(qualified_name_problems("a/b/c").len(), 1);
    }

    #[test]
    fn go_lists_look_like_go() {
        assert_eq!(go_quoted_list(&OPERATORS), "[\"In\" \"NotIn\"]");
    }
}
