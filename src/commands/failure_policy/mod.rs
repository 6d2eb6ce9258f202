//! `kubectl migrate failure-policy`: simulate, explain and check Job failure handling as the Job
//! controller and the API server decide (see `crate::failure_policy`).
mod render;

use std::path::PathBuf;

use crate::cli::{GlobalArgs, OutputArgs, OutputFormat};
use crate::cluster::Target;
use crate::error::{Error, Result};
use crate::failure_policy::engine::Semantics;
use crate::failure_policy::scenario::{self, OutcomeSpec};
use crate::failure_policy::{self as domain, JobInput};
use crate::{manifest, output};

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Sub {
    /// Play a scenario of pod outcomes through the Job controller's decisions
    #[command(after_help = super::help::SIMULATE.after_help())]
    Simulate(SimulateArgs),
    /// Explain a live Job: each failed pod's rule, how close it is to each limit, and what the
    /// next failure of each common kind would do
    #[command(after_help = super::help::EXPLAIN.after_help())]
    Explain(ExplainArgs),
    /// Validate a Job's failure handling by the API server's rules, and check feature support
    #[command(after_help = super::help::CHECK.after_help())]
    Check(CheckArgs),
}

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

/// Where the version to decide as comes from.
#[derive(Debug, Clone)]
pub enum VersionSource {
    /// --k8s-version, or the newest without --context.
    Given(Semantics),
    /// --context: the cluster's own version (and, for check, its server-side dry run).
    Cluster(Box<Target>),
}

impl VersionSource {
    fn resolve(global: &GlobalArgs, choice: &VersionChoice) -> Result<VersionSource> {
        if let Some(v) = &choice.k8s_version {
            return Ok(VersionSource::Given(
                Semantics::parse_version(v).map_err(Error::Usage)?,
            ));
        }
        Ok(match global.context()? {
            None => VersionSource::Given(Semantics::newest()),
            Some(_) => VersionSource::Cluster(Box::new(global.target()?)),
        })
    }

    /// The semantics, and the cluster when one was named.
    async fn semantics(
        &self,
        global: &GlobalArgs,
    ) -> Result<(Semantics, Option<crate::cluster::Cluster>)> {
        match self {
            VersionSource::Given(sem) => Ok((sem.clone(), None)),
            VersionSource::Cluster(target) => {
                let cluster = target.connect(global.request_timeout).await?;
                Ok((domain::semantics_of(&cluster)?, Some(cluster)))
            }
        }
    }
}

/// `simulate`, resolved: the Job, the outcomes in order and the version.
#[derive(Debug, Clone)]
pub struct Simulate {
    pub job: JobInput,
    pub outcomes: Vec<OutcomeSpec>,
    pub version: VersionSource,
}

/// `check`, resolved.
#[derive(Debug, Clone)]
pub struct Check {
    pub job: JobInput,
    pub version: VersionSource,
    /// Where the server-side dry run creates the Job: its own namespace, else -n, else the
    /// context's.
    pub namespace: Option<String>,
}

/// `explain`, resolved.
#[derive(Debug, Clone)]
pub struct Explain {
    pub target: Target,
    pub namespace: String,
    pub job: String,
}

impl SimulateArgs {
    pub fn resolve(&self, global: &GlobalArgs) -> Result<Simulate> {
        let mut outcomes = Vec::new();
        if let Some(path) = &self.scenario {
            let text = manifest::read_text(path)?;
            outcomes.extend(scenario::parse_file(&text.text, &text.label)?);
        }
        for f in &self.fails {
            outcomes.push(scenario::parse_inline(f, false).map_err(Error::Usage)?);
        }
        for s in &self.succeeds {
            outcomes.push(scenario::parse_inline(s, true).map_err(Error::Usage)?);
        }
        if outcomes.is_empty() {
            return Err(Error::Usage(
                "no outcomes: give --scenario FILE, --fail SPEC or --succeed".into(),
            ));
        }
        let job = namespaced(domain::read_job(&self.file)?, global)?;
        let version = VersionSource::resolve(global, &self.version)?;
        Ok(Simulate {
            job,
            outcomes,
            version,
        })
    }
}

/// The Job in -n's namespace when its manifest names none; a manifest in another namespace
/// than -n is refused, as kubectl refuses it.
fn namespaced(mut input: domain::JobInput, global: &GlobalArgs) -> Result<domain::JobInput> {
    if let Some(ns) = &global.namespace {
        match &input.job.metadata.namespace {
            Some(own) if own != ns => {
                return Err(Error::Usage(format!(
                    "{}: the namespace of the Job ({own:?}) does not match -n {ns:?}; drop -n or pass -n {own}",
                    input.label
                )));
            }
            Some(_) => {}
            None => input.job.metadata.namespace = Some(ns.clone()),
        }
    }
    Ok(input)
}

impl CheckArgs {
    pub fn resolve(&self, global: &GlobalArgs) -> Result<Check> {
        let job = namespaced(domain::read_job(&self.file)?, global)?;
        let version = VersionSource::resolve(global, &self.version)?;
        let namespace = job
            .job
            .metadata
            .namespace
            .clone()
            .or_else(|| match &version {
                VersionSource::Cluster(target) => Some(global.namespace_for(target)),
                VersionSource::Given(_) => None,
            });
        Ok(Check {
            job,
            version,
            namespace,
        })
    }
}

impl ExplainArgs {
    pub fn resolve(&self, global: &GlobalArgs) -> Result<Explain> {
        let target = global.target()?;
        Ok(Explain {
            namespace: global.namespace_for(&target),
            target,
            job: self.job.clone(),
        })
    }
}

pub async fn exec(global: &GlobalArgs, args: &Args) -> Result<u8> {
    let format = args.output.format();
    match &args.command {
        Sub::Simulate(a) => simulate(global, &a.resolve(global)?, format).await,
        Sub::Explain(a) => explain(global, &a.resolve(global)?, format).await,
        Sub::Check(a) => check(global, &a.resolve(global)?, format).await,
    }
}

async fn simulate(global: &GlobalArgs, run: &Simulate, format: OutputFormat) -> Result<u8> {
    let (sem, _) = run.version.semantics(global).await?;
    let report = domain::simulate(&run.job, &run.outcomes, &sem)?;
    for warning in report
        .simulation
        .steps
        .iter()
        .filter_map(|s| s.warning.as_ref())
    {
        output::warn(warning);
    }
    output::print(&report, format)?;
    Ok(0)
}

async fn check(global: &GlobalArgs, run: &Check, format: OutputFormat) -> Result<u8> {
    let (sem, cluster) = run.version.semantics(global).await?;
    let server = match (&cluster, &run.namespace) {
        (Some(c), Some(ns)) => Some(domain::server_dry_run(c, &run.job.job, ns).await?),
        _ => None,
    };
    let report = domain::check(&run.job.job, &sem, server);
    output::print(&report, format)?;
    Ok(if report.verdict == "valid" { 0 } else { 1 })
}

async fn explain(global: &GlobalArgs, run: &Explain, format: OutputFormat) -> Result<u8> {
    let cluster = run.target.connect(global.request_timeout).await?;
    let sem = domain::semantics_of(&cluster)?;
    let report =
        crate::failure_policy::explain::explain(&cluster, &run.namespace, &run.job, &sem).await?;
    output::print(&report, format)?;
    Ok(0)
}
