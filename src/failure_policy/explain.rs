//! `failure-policy explain`: a live Job read from its cluster, and the pure explanation of it:
//! each failed pod's matched rule, how close the Job is to each limit, and what the next failure
//! of each common kind would do.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

use super::engine::{self, Outcome, PodResult, Semantics, Start};
use super::model::{self, FailedPod, JobModel, PodCondition};
use super::report;
use crate::cluster::Cluster;
use crate::error::{Error, Result};

/// Reads Job `name` in `namespace` and its pods, and explains them as `sem` decides.
pub async fn explain(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    sem: &Semantics,
) -> Result<report::ExplainReport> {
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), namespace);
    let pods_api: Api<Pod> = Api::namespaced(cluster.client.clone(), namespace);
    let get_job = || async {
        cluster
            .call(&format!("get Job {namespace}/{name}"), jobs.get_opt(name))
            .await?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "Job {name:?} not found in namespace {namespace:?} of {}",
                    cluster.context
                ))
            })
    };
    // The Job and its pods are read apart; while the controller is counting failures they
    // disagree (failed pods not yet in status.failed). Read again until the Job is the same
    // before and after its pods and nothing is left uncounted, a few times at most.
    const READS: usize = 8;
    let mut read = 0;
    let (job, pods, settled) = loop {
        read += 1;
        let job = get_job().await?;
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let pods = cluster
            .call(
                "list the Job's pods",
                pods_api.list(
                    &ListParams::default()
                        .labels(&format!("batch.kubernetes.io/controller-uid={uid}")),
                ),
            )
            .await?
            .items;
        let again = get_job().await?;
        let settled = again.metadata.resource_version == job.metadata.resource_version
            && !counting(&again, &pods);
        if settled || read == READS {
            break (again, pods, settled);
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    let model = JobModel::from_job(&job).map_err(|e| Error::Failed {
        message: format!("Job {namespace}/{name} in {}: {e}", cluster.context),
    })?;
    let mut report = explain_job(&job, &model, sem, &pods, chrono_now());
    report.changing = !settled;
    Ok(report)
}

/// Whether the controller is still counting finished pods: the Job lists pods as uncounted, or
/// a finished pod still carries the Job's tracking finalizer.
fn counting(job: &Job, pods: &[Pod]) -> bool {
    let uncounted = job
        .status
        .as_ref()
        .and_then(|s| s.uncounted_terminated_pods.as_ref())
        .is_some_and(|u| {
            u.failed.as_ref().is_some_and(|f| !f.is_empty())
                || u.succeeded.as_ref().is_some_and(|s| !s.is_empty())
        });
    let finished_unfinalized = pods.iter().any(|p| {
        let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
        matches!(phase, Some("Failed" | "Succeeded"))
            && p.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == "batch.kubernetes.io/job-tracking")
    });
    uncounted || finished_unfinalized
}

fn chrono_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// PURE: the explanation of a live Job from its spec, status and pods.
pub fn explain_job(
    job: &Job,
    model: &JobModel,
    sem: &Semantics,
    pods: &[Pod],
    now: u64,
) -> report::ExplainReport {
    let status = job.status.clone().unwrap_or_default();
    let pods = oldest_first(pods);
    let conditions = JobConditions::of(&status);
    let failed_pods = failed_pod_lines(&pods, model, sem);
    let terminating_pods = terminating_pod_lines(&pods, model, sem, &conditions);
    let failed = status.failed.unwrap_or(0);
    let succeeded = status.succeeded.unwrap_or(0);
    // The controller writes these; what cannot be read counts as none.
    let intervals = |text: Option<&str>| {
        text.and_then(|t| model::parse_intervals(t).ok())
            .unwrap_or_default()
    };
    let failed_indexes = intervals(status.failed_indexes.as_deref());
    let succeeded_indexes = intervals(status.completed_indexes.as_deref());
    let (index_failures, index_ignored) = index_counts(&pods, &failed_pods);
    let start_time = status.start_time.as_ref().map(|t| t.0.as_second() as u64);
    let elapsed = start_time.map(|s| now.saturating_sub(s)).unwrap_or(0);
    let failures_without_pod = failures_without_pod(
        failed,
        &failed_pods,
        &terminating_pods,
        model,
        sem,
        &conditions,
    );
    // The index still running that is closest to its per-index limit (the lowest of equals):
    // the limits line and the predictions are both about it.
    let next_index = model.indexed.then(|| {
        let active = |i: &i32| !failed_indexes.contains(i) && !succeeded_indexes.contains(i);
        (0..model.completions.unwrap_or(0))
            .filter(active)
            .max_by_key(|i| (index_failures.get(i).copied().unwrap_or(0), -i))
            .unwrap_or(0)
    });
    let limits = limits(
        model,
        failed,
        elapsed,
        next_index,
        &index_failures,
        &failed_indexes,
    );
    // A finished Job has no next failure.
    let next = if conditions.finished.is_some() {
        Vec::new()
    } else {
        let start = Start {
            failed,
            succeeded,
            index_failures,
            index_ignored,
            failed_indexes,
            succeeded_indexes,
            recent_failures: 0,
            elapsed_seconds: 0,
        };
        next_failures(model, sem, &start, next_index)
    };
    report::ExplainReport {
        schema_version: 4,
        job: format!("{}/{}", model.namespace, model.name),
        kubernetes_version: format!("1.{}", sem.minor),
        finished: conditions.finished,
        ending: conditions.ending,
        conditions: conditions.lines,
        changing: false,
        failed,
        succeeded,
        failed_indexes: status.failed_indexes.clone(),
        failed_pods,
        terminating_pods,
        failures_without_pod,
        limits,
        next,
    }
}

/// The pods in the order the controller made them (by name within a second).
fn oldest_first(pods: &[Pod]) -> Vec<&Pod> {
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by_key(|p| {
        (
            p.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second())
                .unwrap_or(0),
            p.metadata.name.clone(),
        )
    });
    pods
}

/// The completion index of a pod of an Indexed Job.
fn index_of(p: &Pod) -> Option<i32> {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
        .and_then(|v| v.parse().ok())
}

/// Each failed pod, with the rule of the pod failure policy it matches.
fn failed_pod_lines(
    pods: &[&Pod],
    model: &JobModel,
    sem: &Semantics,
) -> Vec<report::FailedPodLine> {
    let exit_codes = |containers: &[model::ContainerState]| {
        containers
            .iter()
            .filter_map(|c| c.exit_code.map(|code| (c.name.clone(), code)))
            .collect()
    };
    pods.iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
        .map(|p| {
            let pod = FailedPod::from_pod(p);
            let policy = engine::match_policy(
                model.pod_failure_policy.as_deref(),
                &pod,
                &model.namespace,
                sem,
            );
            report::FailedPodLine {
                pod: pod.name.clone(),
                index: index_of(p),
                exit_codes: exit_codes(&pod.containers),
                init_exit_codes: exit_codes(&pod.init_containers),
                conditions: pod
                    .conditions
                    .iter()
                    // False ones too: a rule can match a condition's False status.
                    .filter(|c| {
                        ![
                            "Ready",
                            "ContainersReady",
                            "Initialized",
                            "PodScheduled",
                            "PodReadyToStartContainers",
                        ]
                        .contains(&c.type_.as_str())
                    })
                    .cloned()
                    .collect(),
                no_rule_matched: policy
                    .rule
                    .is_none()
                    .then(|| {
                        model
                            .pod_failure_policy
                            .as_deref()
                            .and_then(|rules| engine::why_no_rule_matched(rules, &pod))
                    })
                    .flatten(),
                policy,
            }
        })
        .collect()
}

fn phase(p: &Pod) -> Option<&str> {
    p.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// Each pod being deleted that has not stopped: whether its failure is counted yet and whether
/// it is replaced before it stops, as the controller decides.
fn terminating_pod_lines(
    pods: &[&Pod],
    model: &JobModel,
    sem: &Semantics,
    conditions: &JobConditions,
) -> Vec<report::TerminatingPodLine> {
    pods.iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_some()
                && !matches!(phase(p), Some("Failed" | "Succeeded"))
        })
        .map(|p| {
            let waits = engine::only_replaces_failed_pods(model, sem);
            let (counted, replaced, why) = if conditions.failing() {
                // The controller counts the pods it deletes as the Job fails through the policy.
                let policy = engine::match_policy(
                    model.pod_failure_policy.as_deref(),
                    &FailedPod::from_pod(p),
                    &model.namespace,
                    sem,
                );
                let counted = match policy.rule {
                    Some(rule) if !policy.counted => {
                        format!("not counted (rule {rule} ignores it)")
                    }
                    _ => "counted as failed".to_string(),
                };
                (
                    policy.counted,
                    false,
                    format!(
                        "the Job failed: the controller deleted it and {counted}; the Job's final condition waits until it has stopped"
                    ),
                )
            } else if conditions.finished.is_some() || conditions.ending.is_some() {
                (
                    false,
                    false,
                    "the Job succeeded: the controller deleted it and counts it neither as failed nor as succeeded".to_string(),
                )
            } else if waits && sem.job_pod_replacement_policy {
                (
                    false,
                    false,
                    "neither counted nor replaced until it reaches phase Failed: podReplacementPolicy Failed waits for it (a pod on a node that is gone stays Terminating until it is force-deleted)".to_string(),
                )
            } else if waits {
                (
                    false,
                    true,
                    "replaced at once; counted only when it reaches phase Failed, where the podFailurePolicy looks at it".to_string(),
                )
            } else {
                (
                    true,
                    true,
                    "counted as failed and replaced at once: podReplacementPolicy TerminatingOrFailed".to_string(),
                )
            };
            report::TerminatingPodLine {
                pod: p.metadata.name.clone().unwrap_or_default(),
                index: index_of(p),
                counted,
                replaced,
                why,
            }
        })
        .collect()
}

/// `status.failed` against the pods listed: the counted failures whose pods are gone, and
/// where such pods go.
fn failures_without_pod(
    failed: i32,
    failed_pods: &[report::FailedPodLine],
    terminating: &[report::TerminatingPodLine],
    model: &JobModel,
    sem: &Semantics,
    conditions: &JobConditions,
) -> Option<report::FailuresWithoutPod> {
    let listed = failed_pods.iter().filter(|p| p.policy.counted).count()
        + terminating.iter().filter(|t| t.counted).count();
    let count = failed - i32::try_from(listed).unwrap_or(i32::MAX);
    if count <= 0 {
        return None;
    }
    let mut whereto = Vec::new();
    if conditions.failing() {
        whereto.push(
            "when the Job failed, the controller deleted the pods still running and counted them (through the pod failure policy); a deleted pod is removed once counted",
        );
    }
    if !engine::only_replaces_failed_pods(model, sem) {
        whereto.push(
            "a pod deleted while running is counted at once (podReplacementPolicy TerminatingOrFailed) and removed once counted",
        );
    }
    whereto.push(
        "a failed pod removed after it was counted (by the pod garbage collector or a user) stays counted",
    );
    Some(report::FailuresWithoutPod {
        count,
        why: whereto.join("; "),
    })
}

/// Per index, the failures counted against backoffLimitPerIndex and those ignored, as the pods'
/// annotations say. The newest pod of an index carries that index's counts so far; a failed pod
/// adds its own failure to the count it belongs to.
fn index_counts(
    pods: &[&Pod],
    failed_pods: &[report::FailedPodLine],
) -> (BTreeMap<i32, i32>, BTreeMap<i32, i32>) {
    let mut index_failures = BTreeMap::new();
    let mut index_ignored = BTreeMap::new();
    for p in pods {
        let (Some(i), Some(a)) = (index_of(p), p.metadata.annotations.as_ref()) else {
            continue;
        };
        let phase_failed = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
        let counted = failed_pods
            .iter()
            .find(|f| Some(f.pod.as_str()) == p.metadata.name.as_deref())
            .map(|f| f.policy.counted);
        for (annotation, counts, own) in [
            (
                "batch.kubernetes.io/job-index-failure-count",
                &mut index_failures,
                counted == Some(true),
            ),
            (
                "batch.kubernetes.io/job-index-ignored-failure-count",
                &mut index_ignored,
                counted == Some(false),
            ),
        ] {
            if let Some(c) = a.get(annotation).and_then(|v| v.parse::<i32>().ok()) {
                let entry = counts.entry(i).or_insert(0);
                *entry = (*entry).max(c + i32::from(phase_failed && own));
            }
        }
    }
    (index_failures, index_ignored)
}

/// The Job's conditions with status True, and what they say of its state.
struct JobConditions {
    /// Failed or Complete: the Job has ended.
    finished: Option<String>,
    /// FailureTarget or SuccessCriteriaMet: the Job is ending (pods still terminating). The
    /// final condition names the Job's state when both are there.
    ending: Option<String>,
    lines: Vec<report::JobConditionLine>,
}

impl JobConditions {
    /// The Job has failed or is failing (FailureTarget or Failed).
    fn failing(&self) -> bool {
        [&self.finished, &self.ending]
            .into_iter()
            .flatten()
            .any(|c| c.starts_with("Failed ") || c.starts_with("FailureTarget "))
    }

    fn of(status: &JobStatus) -> JobConditions {
        let true_conditions: Vec<&JobCondition> = status
            .conditions
            .iter()
            .flatten()
            .filter(|c| c.status == "True")
            .collect();
        let first_of = |types: [&str; 2]| {
            true_conditions
                .iter()
                .find(|c| types.contains(&c.type_.as_str()))
                .map(|c| format!("{} ({})", c.type_, c.reason.clone().unwrap_or_default()))
        };
        JobConditions {
            finished: first_of(["Failed", "Complete"]),
            ending: first_of(["FailureTarget", "SuccessCriteriaMet"]),
            lines: true_conditions
                .iter()
                .map(|c| report::JobConditionLine {
                    type_: c.type_.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect(),
        }
    }
}

/// How close the Job is to each of its limits: backoffLimit, then (for `next_index`, the index
/// closest to it) backoffLimitPerIndex with maxFailedIndexes, then activeDeadlineSeconds.
fn limits(
    model: &JobModel,
    failed: i32,
    elapsed: u64,
    next_index: Option<i32>,
    index_failures: &BTreeMap<i32, i32>,
    failed_indexes: &BTreeSet<i32>,
) -> Vec<report::Limit> {
    let mut limits = vec![report::Limit {
        limit: "backoffLimit".into(),
        value: (model.backoff_limit != i32::MAX).then_some(i64::from(model.backoff_limit)),
        used: i64::from(failed),
        remaining: (model.backoff_limit != i32::MAX)
            .then(|| i64::from((model.backoff_limit - failed).max(0))),
        index: None,
        indexes: None,
    }];
    if let Some(per_index) = model.backoff_limit_per_index {
        let worst = next_index.map(|i| (i, index_failures.get(&i).copied().unwrap_or(0)));
        let used = worst.map_or(0, |(_, c)| c);
        limits.push(report::Limit {
            limit: "backoffLimitPerIndex".into(),
            value: Some(i64::from(per_index)),
            used: i64::from(used),
            remaining: Some(i64::from((per_index - used).max(0))),
            index: worst.map(|(i, _)| i),
            indexes: None,
        });
        if let Some(max) = model.max_failed_indexes {
            let count = i32::try_from(failed_indexes.len()).unwrap_or(i32::MAX);
            limits.push(report::Limit {
                limit: "maxFailedIndexes".into(),
                value: Some(i64::from(max)),
                used: i64::from(count),
                remaining: Some(i64::from((max - count).max(0))),
                index: None,
                indexes: Some(model::format_intervals(failed_indexes)),
            });
        }
    }
    if let Some(deadline) = model.active_deadline_seconds {
        let elapsed = i64::try_from(elapsed).unwrap_or(i64::MAX);
        limits.push(report::Limit {
            limit: "activeDeadlineSeconds".into(),
            value: Some(deadline),
            used: elapsed,
            remaining: Some((deadline - elapsed).max(0)),
            index: None,
            indexes: None,
        });
    }
    limits
}

/// A kind of failure the next-failure table shows.
struct Kind {
    what: What,
    pod: FailedPod,
}

enum What {
    Text(String),
    /// Exit codes of one `In` rule (its position), in a container (`place`): one line for the
    /// codes that lead to the same.
    Codes {
        rule: usize,
        codes: Vec<i32>,
        place: String,
    },
}

impl What {
    fn text(&self) -> String {
        match self {
            What::Text(t) => t.clone(),
            What::Codes { codes, place, .. } => {
                let codes: Vec<String> = codes.iter().map(i32::to_string).collect();
                format!("exit code {}{place}", codes.join(", "))
            }
        }
    }
}

/// What the next failure would do, from `start` (of `next_index`, for an Indexed Job), as the
/// controller decides it: for each common kind, then for the values of the Job's own rules.
fn next_failures(
    model: &JobModel,
    sem: &Semantics,
    start: &Start,
    next_index: Option<i32>,
) -> Vec<report::NextFailure> {
    let first = model.containers.first().cloned().unwrap_or_default();
    let text = |t: &str, pod| Kind {
        what: What::Text(t.into()),
        pod,
    };
    let mut kinds = vec![
        text("exit code 1", failed_with_exit(&first, false, 1)),
        text(
            "OOM-killed (exit code 137)",
            failed_with_exit(&first, false, 137),
        ),
        text(
            "evicted (DisruptionTarget/EvictionByEvictionAPI)",
            disrupted("EvictionByEvictionAPI"),
        ),
        text(
            "preempted (DisruptionTarget/PreemptionByScheduler)",
            disrupted("PreemptionByScheduler"),
        ),
        text(
            "node lost (DisruptionTarget/DeletionByTaintManager)",
            disrupted("DeletionByTaintManager"),
        ),
    ];
    for kind in own_kinds(model, &first) {
        if !kinds.iter().any(|k| same_failure(&k.pod, &kind.pod)) {
            kinds.push(kind);
        }
    }
    // The next failure as the controller decides it: the rule, the action and the outcome.
    let predicted = |pod: FailedPod| {
        let sim = engine::simulate_from(
            model,
            sem,
            start,
            &[Outcome {
                index: next_index,
                result: PodResult::Failed(pod),
                after_seconds: 0,
            }],
        );
        // The failure's own step (a deadline already past comes before it).
        let step = sim
            .steps
            .iter()
            .find(|s| s.outcome == Some(1))
            .expect("one step per outcome");
        let policy = step.policy.clone();
        (
            policy.as_ref().and_then(|p| p.rule),
            policy.map(|p| p.action).unwrap_or_default(),
            verdict(step, next_index),
        )
    };
    // The codes of one rule that lead to the same share a line, at most eight of them; a
    // FailJob message there names the code as `<code>`, as it names the pod `<next>`.
    const CODES_PER_LINE: usize = 8;
    let mut next: Vec<(What, Option<usize>, String, String)> = Vec::new();
    for kind in kinds {
        let (rule, action, outcome) = predicted(kind.pod);
        if let What::Codes {
            rule: r, codes: c, ..
        } = &kind.what
        {
            let code = |codes: &[i32]| format!("exit code {} ", codes[0]);
            let general = outcome.replace(&code(c), "exit code <code> ");
            if let Some((
                What::Codes {
                    rule: lr, codes, ..
                },
                last_rule,
                last_action,
                last,
            )) = next.last_mut()
                && *lr == *r
                && *last_rule == rule
                && *last_action == action
                && last.replace(&code(codes), "exit code <code> ") == general
                && codes.len() < CODES_PER_LINE
            {
                codes.extend(c);
                *last = general;
                continue;
            }
        }
        next.push((kind.what, rule, action, outcome));
    }
    next.into_iter()
        .map(|(what, rule, action, outcome)| report::NextFailure {
            failure: what.text(),
            index: next_index,
            rule,
            action,
            outcome,
        })
        .collect()
}

/// The failures the Job's own rules name: each exit code of an `In` rule, one code outside a
/// `NotIn` rule's, each condition pattern.
fn own_kinds(model: &JobModel, first: &str) -> Vec<Kind> {
    let mut kinds = Vec::new();
    for (rule, r) in model.pod_failure_policy.iter().flatten().enumerate() {
        if let Some(codes) = &r.on_exit_codes {
            let container = codes.container_name.as_deref().unwrap_or(first);
            let init = !model.containers.iter().any(|c| c == container);
            let place = match (&codes.container_name, init) {
                (None, _) => String::new(),
                (Some(c), false) => format!(" in container {c}"),
                (Some(c), true) => format!(" in init container {c}"),
            };
            match codes.operator.as_str() {
                "In" => kinds.extend(codes.values.iter().filter(|v| **v != 0).map(|v| Kind {
                    what: What::Codes {
                        rule,
                        codes: vec![*v],
                        place: place.clone(),
                    },
                    pod: failed_with_exit(container, init, *v),
                })),
                "NotIn" => {
                    if let Some(v) = (1..=255).find(|v| !codes.values.contains(v)) {
                        let not_in: Vec<String> = codes.values.iter().map(i32::to_string).collect();
                        kinds.push(Kind {
                            what: What::Text(format!(
                                "exit code {v}{place} (not in {})",
                                not_in.join(", ")
                            )),
                            pod: failed_with_exit(container, init, v),
                        });
                    }
                }
                _ => {}
            }
        }
        for pattern in &r.on_pod_conditions {
            let status = if pattern.status == "True" {
                String::new()
            } else {
                format!("={}", pattern.status)
            };
            kinds.push(Kind {
                what: What::Text(format!("condition {}{status}", pattern.type_)),
                pod: with_condition(&pattern.type_, &pattern.status, None),
            });
        }
    }
    kinds
}

/// Whether two failures look the same to the rules: the same exit codes, and conditions of the
/// same types and statuses (the reason is for people).
fn same_failure(a: &FailedPod, b: &FailedPod) -> bool {
    let conditions = |p: &FailedPod| -> Vec<(String, String)> {
        p.conditions
            .iter()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    };
    a.containers == b.containers
        && a.init_containers == b.init_containers
        && conditions(a) == conditions(b)
}

/// What a simulated failure led to, in words.
fn verdict(step: &engine::Step, next_index: Option<i32>) -> String {
    if step.result == "skipped" {
        "nothing: the Job has finished".to_string()
    } else if let Some(c) = step.conditions_added.iter().find(|c| c.type_ == "Failed") {
        format!("the Job fails: {} ({})", c.reason, c.message)
    } else if step.index_failed == Some(true) {
        format!(
            "index {} fails for good; the Job goes on",
            next_index.unwrap_or(0)
        )
    } else if step.counted {
        format!(
            "counted ({} failed); a replacement pod follows",
            step.failed
        )
    } else {
        "ignored (not counted); a replacement pod follows".to_string()
    }
}

fn failed_with_exit(container: &str, init: bool, code: i32) -> FailedPod {
    let state = vec![model::ContainerState {
        name: container.into(),
        exit_code: Some(code),
    }];
    let (containers, init_containers) = if init {
        (Vec::new(), state)
    } else {
        (state, Vec::new())
    };
    FailedPod {
        name: "<next>".into(),
        containers,
        init_containers,
        conditions: Vec::new(),
    }
}

fn with_condition(type_: &str, status: &str, reason: Option<&str>) -> FailedPod {
    FailedPod {
        name: "<next>".into(),
        containers: Vec::new(),
        init_containers: Vec::new(),
        conditions: vec![PodCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(str::to_string),
        }],
    }
}

fn disrupted(reason: &str) -> FailedPod {
    with_condition("DisruptionTarget", "True", Some(reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(uncounted_failed: &[&str]) -> Job {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j"},
            "status": {"uncountedTerminatedPods": {"failed": uncounted_failed}},
        }))
        .unwrap()
    }

    fn pod(phase: &str, finalizers: &[&str]) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "finalizers": finalizers},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    /// The codes of one rule that lead to the same share a line, eight at most; a code an
    /// earlier line covers (3 here, by rule 0) is left out.
    #[test]
    fn the_jobs_own_codes_share_a_line_while_they_lead_to_the_same() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {
                "backoffLimit": 0,
                "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
                    {"action": "FailJob", "onExitCodes": {"operator": "In",
                        "values": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 137]}},
                    {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}
                ]},
                "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}]}}
            }
        }))
        .unwrap();
        let model = JobModel::from_job(&job).unwrap();
        let next = next_failures(&model, &Semantics::newest(), &Start::default(), None);
        let lines: Vec<(&str, Option<usize>)> =
            next.iter().map(|n| (n.failure.as_str(), n.rule)).collect();
        assert_eq!(
            lines,
            [
                ("exit code 1", Some(1)),
                ("OOM-killed (exit code 137)", Some(1)),
                ("evicted (DisruptionTarget/EvictionByEvictionAPI)", Some(2)),
                (
                    "preempted (DisruptionTarget/PreemptionByScheduler)",
                    Some(2)
                ),
                (
                    "node lost (DisruptionTarget/DeletionByTaintManager)",
                    Some(2)
                ),
                ("exit code 3", Some(0)),
                ("exit code 2, 4, 5, 6, 7, 8, 9, 10", Some(1)),
                ("exit code 11", Some(1)),
            ]
        );
        assert!(
            next[6]
                .outcome
                .contains("failed with exit code <code> matching FailJob rule at index 1"),
            "{}",
            next[6].outcome
        );
    }

    #[test]
    fn the_controller_is_counting_while_a_finished_pod_is_uncounted_or_still_tracked() {
        let tracking = "batch.kubernetes.io/job-tracking";
        assert!(!counting(
            &job(&[]),
            &[pod("Failed", &[]), pod("Running", &[tracking])]
        ));
        assert!(counting(&job(&["uid-1"]), &[pod("Failed", &[])]));
        assert!(counting(&job(&[]), &[pod("Failed", &[tracking])]));
        assert!(counting(&job(&[]), &[pod("Succeeded", &[tracking])]));
    }
}
