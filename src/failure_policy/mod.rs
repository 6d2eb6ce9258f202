//! `kubectl migrate failure-policy`: simulate, explain and check Job failure handling exactly as
//! the Job controller and the API server decide, for a chosen Kubernetes version.
//!
//! Shape: [`Args`] -> validate (no cluster calls) -> run. The engine ([`engine`]) and the
//! validation ([`check`]) are pure; `explain` and `--context` are the thin shell around them.
pub mod check;
pub mod engine;
pub mod model;
pub mod report;
pub mod scenario;

use std::path::{Path, PathBuf};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{self, Cluster};
use crate::error::{Error, Result};
use crate::output;
use engine::{Outcome, PodResult, Semantics, Start};
use model::{FailedPod, JobModel, PodCondition};

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Sub {
    /// Play a scenario of pod outcomes through the Job controller's decisions
    #[command(after_help = SIMULATE_HELP)]
    Simulate(SimulateArgs),
    /// Explain a live Job: each failed pod's rule, how close it is to each limit, and what the
    /// next failure of each common kind would do
    Explain(ExplainArgs),
    /// Validate a Job's failure handling by the API server's rules, and check feature support
    #[command(
        after_help = "Exit codes: 0 valid (and accepted by the server with --context); 1 invalid or \
        unsupported at that version; 2 usage or bad input."
    )]
    Check(CheckArgs),
}

const SIMULATE_HELP: &str = "Scenario file (--scenario), in order, one pod each:\n  \
outcomes:\n  \
- fail: {exitCodes: {main: 137}}\n  \
- index: 2                      # Indexed Jobs\n    \
after: 30s                    # time since the previous outcome\n    \
fail:\n      \
initExitCodes: {setup: 5}\n      \
conditions: [{type: DisruptionTarget, status: \"True\", reason: EvictionByEvictionAPI}]\n  \
- succeed: {}\n\n\
--scenario outcomes come first, then every --fail in order, then every --succeed.\n\n\
Exit codes: 0 simulated; 2 usage or bad input (an invalid Job is refused with the API server's \
messages).\n\nExamples:\n  \
kubectl migrate failure-policy simulate -f job.yaml --fail exit=137 --fail evicted --fail exit=1\n  \
kubectl migrate failure-policy simulate -f job.yaml --scenario outcomes.yaml --k8s-version 1.31 -o json";

/// Which version's semantics to use.
#[derive(Debug, Clone, clap::Args)]
pub struct VersionChoice {
    /// Decide as this Kubernetes version does (1.26 to 1.36; default: the newest). With
    /// --context, the cluster's own version is used
    #[arg(long, value_name = "X.Y", conflicts_with = "contexts")]
    pub k8s_version: Option<String>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// The Job manifest (YAML or JSON; - for stdin)
    #[arg(short = 'f', long = "filename", value_name = "JOB.yaml")]
    pub file: PathBuf,
    /// A scenario file of pod outcomes
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    #[arg(long = "fail", value_name = "SPEC", help = scenario::FAIL_HELP)]
    pub fails: Vec<String>,
    /// A pod that succeeds (after every --fail); `index=I` for Indexed Jobs, `after=DURATION`
    #[arg(long = "succeed", value_name = "SPEC", num_args = 0..=1, default_missing_value = "")]
    pub succeeds: Vec<String>,
    #[command(flatten)]
    pub version: VersionChoice,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ExplainArgs {
    /// The Job's name (in --namespace of --context)
    pub job: String,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The Job manifest (YAML or JSON; - for stdin)
    #[arg(short = 'f', long = "filename", value_name = "JOB.yaml")]
    pub file: PathBuf,
    #[command(flatten)]
    pub version: VersionChoice,
}

pub async fn run(global: &GlobalArgs, args: &Args) -> Result<u8> {
    match &args.command {
        Sub::Simulate(a) => simulate(global, a).await,
        Sub::Explain(a) => explain(global, a).await,
        Sub::Check(a) => check_job(global, a).await,
    }
}

/// Reads a Job manifest; bad input exits 2 with the file named.
pub fn read_job(path: &Path) -> Result<Job> {
    let name = if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        path.display().to_string()
    };
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| Error::Input(format!("stdin: {e}")))?
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{name}: {e}")))?
    };
    parse_job(&text, &name)
}

pub fn parse_job(text: &str, name: &str) -> Result<Job> {
    let value: serde_json::Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| Error::Input(format!("{name}: invalid JSON: {e}")))?
    } else {
        serde_saphyr::from_str(text)
            .map_err(|e| Error::Input(format!("{name}: invalid YAML: {e}")))?
    };
    let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let api_version = value
        .get("apiVersion")
        .and_then(|k| k.as_str())
        .unwrap_or("");
    if kind != "Job" || api_version != "batch/v1" {
        return Err(Error::Input(format!(
            "{name}: is {}, not a batch/v1 Job",
            if kind.is_empty() {
                "not a Kubernetes object".to_string()
            } else {
                format!("a {kind} ({api_version})")
            }
        )));
    }
    serde_json::from_value(value).map_err(|e| Error::Input(format!("{name}: not a valid Job: {e}")))
}

/// The version to decide as: --k8s-version, else the cluster's (with --context), else newest.
async fn semantics(
    global: &GlobalArgs,
    choice: &VersionChoice,
) -> Result<(Semantics, Option<Cluster>)> {
    if let Some(v) = &choice.k8s_version {
        return Ok((Semantics::parse_version(v).map_err(Error::Usage)?, None));
    }
    match global.context()? {
        None => Ok((Semantics::newest(), None)),
        Some(context) => {
            let cluster = connect(global, Some(context)).await?;
            let sem = semantics_of(&cluster)?;
            Ok((sem, Some(cluster)))
        }
    }
}

async fn connect(global: &GlobalArgs, context: Option<&str>) -> Result<Cluster> {
    let target = cluster::resolve(global.kubeconfig.as_deref(), context)?;
    target.connect(global.request_timeout).await
}

fn semantics_of(cluster: &Cluster) -> Result<Semantics> {
    let minor: u32 = cluster
        .version
        .minor
        .trim_end_matches('+')
        .parse()
        .map_err(|_| Error::Failed {
            message: format!(
                "cluster {:?} reports an unreadable version {:?}",
                cluster.context, cluster.version.git_version
            ),
        })?;
    Semantics::for_minor(minor).map_err(|e| Error::Failed {
        message: format!("cluster {:?}: {e}", cluster.context),
    })
}

async fn simulate(global: &GlobalArgs, args: &SimulateArgs) -> Result<u8> {
    if global.output == OutputFormat::Markdown {
        return Err(Error::Usage(
            "-o markdown is not available for failure-policy".into(),
        ));
    }
    let mut specs = Vec::new();
    if let Some(path) = &args.scenario {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        specs.extend(
            scenario::parse_file(&text, &path.display().to_string()).map_err(Error::Input)?,
        );
    }
    for f in &args.fails {
        specs.push(scenario::parse_inline(f, false).map_err(Error::Usage)?);
    }
    for s in &args.succeeds {
        specs.push(scenario::parse_inline(s, true).map_err(Error::Usage)?);
    }
    if specs.is_empty() {
        return Err(Error::Usage(
            "no outcomes: give --scenario FILE, --fail SPEC or --succeed".into(),
        ));
    }
    let job = read_job(&args.file)?;
    let (sem, _) = semantics(global, &args.version).await?;
    let problems = check::validate(&job);
    if !problems.is_empty() {
        return Err(Error::Input(invalid_job_message(&job, &problems)));
    }
    let model = JobModel::from_job(&job).map_err(|e| Error::Input(e.to_string()))?;
    let outcomes = scenario::resolve(&specs, &model).map_err(Error::Input)?;
    let sim = engine::simulate(&model, &sem, &outcomes);
    let report = report::SimulateReport::new(&model, &sem, sim);
    output::print(&report, global.output)?;
    Ok(0)
}

/// The API server's wording for a rejected Job.
pub fn invalid_job_message(job: &Job, problems: &[check::Problem]) -> String {
    let name = job.metadata.name.as_deref().unwrap_or("");
    let list: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    if list.len() == 1 {
        format!("Job.batch {name:?} is invalid: {}", list[0])
    } else {
        format!("Job.batch {name:?} is invalid: [{}]", list.join(", "))
    }
}

async fn check_job(global: &GlobalArgs, args: &CheckArgs) -> Result<u8> {
    if global.output == OutputFormat::Markdown {
        return Err(Error::Usage(
            "-o markdown is not available for failure-policy".into(),
        ));
    }
    let job = read_job(&args.file)?;
    let (sem, cluster) = semantics(global, &args.version).await?;
    let problems = check::validate(&job);
    let support = check::support(&job, &sem);
    let server = match &cluster {
        Some(c) => Some(server_dry_run(c, &job, global).await?),
        None => None,
    };
    let report = report::CheckReport {
        schema_version: 1,
        job: job.metadata.name.clone().unwrap_or_default(),
        kubernetes_version: format!("1.{}", sem.minor),
        valid: problems.is_empty(),
        message: (!problems.is_empty()).then(|| invalid_job_message(&job, &problems)),
        problems,
        support,
        server,
    };
    output::print(&report, global.output)?;
    let unsupported = report.support.iter().any(|s| s.used && !s.enabled);
    let server_rejected = report.server.as_ref().is_some_and(|s| !s.accepted);
    Ok(if report.valid && !unsupported && !server_rejected {
        0
    } else {
        1
    })
}

/// A server-side dry-run create of the Job in its namespace (or --namespace).
async fn server_dry_run(
    cluster: &Cluster,
    job: &Job,
    global: &GlobalArgs,
) -> Result<report::ServerVerdict> {
    let namespace = job
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| cluster::namespace_or_default(global.namespace.as_deref(), cluster));
    let api: Api<Job> = Api::namespaced(cluster.client.clone(), &namespace);
    let params = kube::api::PostParams {
        dry_run: true,
        field_manager: Some("kubectl-migrate".into()),
    };
    match api.create(&params, job).await {
        Ok(_) => Ok(report::ServerVerdict {
            context: cluster.context.clone(),
            accepted: true,
            message: None,
        }),
        Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => Ok(report::ServerVerdict {
            context: cluster.context.clone(),
            accepted: false,
            message: Some(s.message),
        }),
        Err(e) => Err(cluster.api_error("dry-run create the Job", e)),
    }
}

async fn explain(global: &GlobalArgs, args: &ExplainArgs) -> Result<u8> {
    if global.output == OutputFormat::Markdown {
        return Err(Error::Usage(
            "-o markdown is not available for failure-policy".into(),
        ));
    }
    let cluster = connect(global, global.context()?).await?;
    let sem = semantics_of(&cluster)?;
    let namespace = cluster::namespace_or_default(global.namespace.as_deref(), &cluster);
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), &namespace);
    let job = cluster
        .call(
            &format!("get Job {namespace}/{}", args.job),
            jobs.get_opt(&args.job),
        )
        .await?
        .ok_or_else(|| {
            Error::Input(format!(
                "Job {:?} not found in namespace {namespace:?} of {}",
                args.job, cluster.context
            ))
        })?;
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let pods_api: Api<Pod> = Api::namespaced(cluster.client.clone(), &namespace);
    let pods = cluster
        .call(
            "list the Job's pods",
            pods_api.list(
                &ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}")),
            ),
        )
        .await?;
    let model = JobModel::from_job(&job).map_err(|e| Error::Failed {
        message: e.to_string(),
    })?;
    let report = explain_job(&job, &model, &sem, &pods.items, chrono_now());
    output::print(&report, global.output)?;
    Ok(0)
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
    let index_of = |p: &Pod| -> Option<i32> {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
            .and_then(|v| v.parse().ok())
    };
    let mut failed_pods = Vec::new();
    for p in &pods {
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default();
        if phase != "Failed" {
            continue;
        }
        let pod = FailedPod::from_pod(p);
        let m = engine::match_policy(
            model.pod_failure_policy.as_deref(),
            &pod,
            &model.namespace,
            sem,
        );
        failed_pods.push(report::FailedPodLine {
            pod: pod.name.clone(),
            index: index_of(p),
            exit_codes: pod
                .containers
                .iter()
                .chain(&pod.init_containers)
                .filter_map(|c| c.exit_code.map(|code| format!("{}={code}", c.name)))
                .collect::<Vec<_>>()
                .join(" "),
            conditions: pod
                .conditions
                .iter()
                .filter(|c| {
                    c.status == "True"
                        && ![
                            "Ready",
                            "ContainersReady",
                            "Initialized",
                            "PodScheduled",
                            "PodReadyToStartContainers",
                        ]
                        .contains(&c.type_.as_str())
                })
                .map(|c| match &c.reason {
                    Some(r) => format!("{}/{r}", c.type_),
                    None => c.type_.clone(),
                })
                .collect::<Vec<_>>()
                .join(" "),
            policy: m,
        });
    }
    let failed = status.failed.unwrap_or(0);
    let succeeded = status.succeeded.unwrap_or(0);
    let failed_indexes = status
        .failed_indexes
        .as_deref()
        .map(model::parse_intervals)
        .transpose()
        .ok()
        .flatten()
        .unwrap_or_default();
    let succeeded_indexes = status
        .completed_indexes
        .as_deref()
        .map(model::parse_intervals)
        .transpose()
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut index_failures = std::collections::BTreeMap::new();
    let mut index_ignored = std::collections::BTreeMap::new();
    for p in &pods {
        let (Some(i), Some(a)) = (index_of(p), p.metadata.annotations.as_ref()) else {
            continue;
        };
        // The newest pod of an index carries that index's counts so far; a failed pod adds its
        // own failure to the count it belongs to.
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
    let start_time = status.start_time.as_ref().map(|t| t.0.as_second() as u64);
    let elapsed = start_time.map(|s| now.saturating_sub(s)).unwrap_or(0);
    let finished = status
        .conditions
        .iter()
        .flatten()
        .find(|c| {
            c.status == "True"
                && ["Failed", "Complete", "FailureTarget", "SuccessCriteriaMet"]
                    .contains(&c.type_.as_str())
        })
        .map(|c| format!("{} ({})", c.type_, c.reason.clone().unwrap_or_default()));
    let mut limits = vec![report::Limit {
        limit: "backoffLimit".into(),
        value: model.backoff_limit.to_string(),
        used: failed.to_string(),
        remaining: if model.backoff_limit == i32::MAX {
            "unlimited".into()
        } else {
            format!(
                "{} more counted failure(s) tolerated",
                (model.backoff_limit - failed).max(0)
            )
        },
    }];
    if let Some(per_index) = model.backoff_limit_per_index {
        let worst = index_failures.iter().max_by_key(|(_, c)| **c);
        limits.push(report::Limit {
            limit: "backoffLimitPerIndex".into(),
            value: per_index.to_string(),
            used: worst
                .map(|(i, c)| format!("{c} (index {i})"))
                .unwrap_or_else(|| "0".into()),
            remaining: worst
                .map(|(_, c)| format!("the worst index tolerates {} more", (per_index - c).max(0)))
                .unwrap_or_else(|| format!("every index tolerates {per_index}")),
        });
        if let Some(max) = model.max_failed_indexes {
            limits.push(report::Limit {
                limit: "maxFailedIndexes".into(),
                value: max.to_string(),
                used: format!(
                    "{} ({})",
                    failed_indexes.len(),
                    model::format_intervals(&failed_indexes)
                ),
                remaining: format!(
                    "{} more failed index(es) tolerated",
                    (max - failed_indexes.len() as i32).max(0)
                ),
            });
        }
    }
    if let Some(deadline) = model.active_deadline_seconds {
        limits.push(report::Limit {
            limit: "activeDeadlineSeconds".into(),
            value: format!("{deadline}s"),
            used: format!("{elapsed}s"),
            remaining: format!("{}s", (deadline as u64).saturating_sub(elapsed)),
        });
    }
    let start = Start {
        failed,
        succeeded,
        index_failures,
        index_ignored,
        failed_indexes: failed_indexes.clone(),
        succeeded_indexes,
        recent_failures: 0,
        elapsed_seconds: 0,
    };
    // The next failure lands on the lowest index still running.
    let next_index = model.indexed.then(|| {
        (0..model.completions.unwrap_or(0))
            .find(|i| !start.failed_indexes.contains(i) && !start.succeeded_indexes.contains(i))
            .unwrap_or(0)
    });
    let first = model.containers.first().cloned().unwrap_or_default();
    let kinds: [(&str, FailedPod); 5] = [
        ("exit code 1", failed_with_exit(&first, 1)),
        ("OOM-killed (exit code 137)", failed_with_exit(&first, 137)),
        (
            "evicted (DisruptionTarget/EvictionByEvictionAPI)",
            disrupted("EvictionByEvictionAPI"),
        ),
        (
            "preempted (DisruptionTarget/PreemptionByScheduler)",
            disrupted("PreemptionByScheduler"),
        ),
        (
            "node lost (DisruptionTarget/DeletionByTaintManager)",
            disrupted("DeletionByTaintManager"),
        ),
    ];
    let next = kinds
        .into_iter()
        .map(|(what, pod)| {
            let sim = engine::simulate_from(
                model,
                sem,
                &start,
                &[Outcome {
                    index: next_index,
                    result: PodResult::Failed(pod),
                    after_seconds: 0,
                }],
            );
            let step = &sim.steps[0];
            let policy = step.policy.clone();
            let verdict = if step.result == "skipped" {
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
            };
            report::NextFailure {
                failure: what.to_string(),
                index: next_index,
                rule: policy.as_ref().and_then(|p| p.rule),
                action: policy.map(|p| p.action).unwrap_or_default(),
                outcome: verdict,
            }
        })
        .collect();
    report::ExplainReport {
        schema_version: 1,
        job: format!("{}/{}", model.namespace, model.name),
        kubernetes_version: format!("1.{}", sem.minor),
        finished,
        failed,
        succeeded,
        failed_indexes: status.failed_indexes.clone(),
        failed_pods,
        limits,
        next,
    }
}

fn failed_with_exit(container: &str, code: i32) -> FailedPod {
    FailedPod {
        name: "<next>".into(),
        containers: vec![model::ContainerState {
            name: container.into(),
            exit_code: Some(code),
        }],
        init_containers: Vec::new(),
        conditions: Vec::new(),
    }
}

fn disrupted(reason: &str) -> FailedPod {
    FailedPod {
        name: "<next>".into(),
        containers: Vec::new(),
        init_containers: Vec::new(),
        conditions: vec![PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some(reason.into()),
        }],
    }
}
