//! Job failure handling exactly as the Job controller and the API server decide, for a chosen
//! Kubernetes version: simulate a scenario of pod outcomes, check a Job, explain a live one.
//!
//! The engine ([`engine`]) and the validation ([`check`]) are pure; [`explain`] and
//! [`server_dry_run`] are the thin layer that talks to a cluster.
pub mod check;
pub mod engine;
pub mod explain;
pub mod model;
pub mod report;
pub mod scenario;
pub mod versions;

use std::path::Path;

use k8s_openapi::api::batch::v1::Job;
use kube::Api;

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::manifest;
use engine::Semantics;
use model::JobModel;
use scenario::OutcomeSpec;

/// A Job manifest as the command line names it: its label in messages, and the Job.
#[derive(Debug, Clone)]
pub struct JobInput {
    pub label: String,
    pub job: Job,
}

/// Reads a Job manifest (a path or `-` for stdin); bad input exits 2 with the file named.
pub fn read_job(path: &Path) -> Result<JobInput> {
    let text = manifest::read_text(path)?;
    let job = parse_job(&text.text, &text.label)?;
    Ok(JobInput {
        label: text.label,
        job,
    })
}

/// The Job a manifest's text holds (one document, or a List of one), read as kubectl reads it.
pub fn parse_job(text: &str, label: &str) -> Result<Job> {
    let manifest::Object { at: name, value } = manifest::one_object(text, label, "batch/v1 Job")?;
    let name = name.as_str();
    let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let api_version = value
        .get("apiVersion")
        .and_then(|k| k.as_str())
        .unwrap_or("");
    if kind != "Job" || api_version != "batch/v1" {
        return Err(Error::input(
            name,
            format!(
                "is {}, not a batch/v1 Job",
                if kind.is_empty() {
                    "not a Kubernetes object".to_string()
                } else {
                    format!("a {kind} ({api_version})")
                }
            ),
        ));
    }
    serde_json::from_value(value).map_err(|e| Error::input_because(name, "not a valid Job", e))
}

/// The semantics of the version `cluster` runs.
pub fn semantics_of(cluster: &Cluster) -> Result<Semantics> {
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

/// PURE: plays `outcomes` through the controller's decisions for `job` at `sem`. A Job the API
/// server would reject is refused with the server's message.
pub fn simulate(
    input: &JobInput,
    outcomes: &[OutcomeSpec],
    sem: &Semantics,
) -> Result<report::SimulateReport> {
    let job = &input.job;
    let problems = check::validate_at(job, sem);
    if !problems.is_empty() {
        return Err(Error::Invalid {
            input: input.label.clone(),
            message: invalid_job_message(job, &problems),
        });
    }
    let model = JobModel::from_job(job).map_err(|e| Error::input(&input.label, e.to_string()))?;
    let resolved = scenario::resolve(outcomes, &model)?;
    let sim = engine::simulate(&model, sem, &resolved);
    Ok(report::SimulateReport::new(&model, sem, sim))
}

/// PURE: the API server's validation of `job` and the support of the features it uses at `sem`.
pub fn check(
    job: &Job,
    sem: &Semantics,
    server: Option<report::ServerVerdict>,
) -> report::CheckReport {
    let problems = check::validate_at(job, sem);
    let support = check::support(job, sem);
    let verdict = if !problems.is_empty() {
        "invalid"
    } else if support.iter().any(|s| s.used && !s.enabled) {
        "unsupported"
    } else if server.as_ref().is_some_and(|s| !s.accepted) {
        "rejected"
    } else {
        "valid"
    };
    report::CheckReport {
        schema_version: 1,
        job: job.metadata.name.clone().unwrap_or_default(),
        kubernetes_version: format!("1.{}", sem.minor),
        verdict: verdict.to_string(),
        valid: problems.is_empty(),
        message: (!problems.is_empty()).then(|| invalid_job_message(job, &problems)),
        problems,
        support,
        server,
    }
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

/// A server-side dry-run create of `job` in `namespace`. A Job of the same name there does not
/// change the verdict: the server judges the object (validation, then admission) before it
/// looks for the name, so a name that is taken is only refused once the rest was accepted.
pub async fn server_dry_run(
    cluster: &Cluster,
    job: &Job,
    namespace: &str,
) -> Result<report::ServerVerdict> {
    let api: Api<Job> = Api::namespaced(cluster.client.clone(), namespace);
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
        // The namespace is not there: the user's input, not the Job, is wrong.
        Err(kube::Error::Api(s))
            if s.code == 404 && s.details.as_ref().is_some_and(|d| d.kind == "namespaces") =>
        {
            Err(Error::Usage(format!(
                "namespace {namespace:?} does not exist in {}: the dry run creates the Job there; pass -n NAMESPACE with one that exists",
                cluster.context
            )))
        }
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            Ok(report::ServerVerdict {
                context: cluster.context.clone(),
                accepted: true,
                message: Some(format!(
                    "a Job named {:?} exists in {namespace} already; creating this one needs the name free",
                    job.metadata.name.as_deref().unwrap_or_default()
                )),
            })
        }
        Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => Ok(report::ServerVerdict {
            context: cluster.context.clone(),
            accepted: false,
            message: Some(s.message),
        }),
        Err(e) => Err(cluster.api_error("dry-run create the Job", e)),
    }
}
