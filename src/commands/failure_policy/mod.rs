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
    #[command(
        after_help = super::help::SIMULATE.after_help(),
        mut_arg("k8s_version", |a| a.help(
            "Decide as this Kubernetes version does (1.26 to 1.36; default: the newest; with \
             --context, the cluster's own). Given twice (or --context twice): both, side by \
             side, where they decide differently"
        ))
    )]
    Simulate(SimulateArgs),
    /// Explain a live Job: each failed pod's rule, how close it is to each limit, and what the
    /// next failure of each common kind would do
    #[command(after_help = super::help::EXPLAIN.after_help())]
    Explain(ExplainArgs),
    /// Validate a Job's failure handling by the API server's rules, and check feature support
    #[command(
        after_help = super::help::CHECK.after_help(),
        mut_arg("k8s_version", |a| a.help(
            "Validate as this Kubernetes version does and say which features it has on (1.26 \
             to 1.36; default: the newest). With --context instead, the cluster's own version, \
             and its API server dry-runs the Job too"
        ))
    )]
    Check(CheckArgs),
}

/// Which version's semantics to use.
#[derive(Debug, Clone, clap::Args)]
pub struct VersionChoice {
    /// The Kubernetes version to decide as (each command says how it uses it)
    #[arg(long, value_name = "X.Y", conflicts_with = "contexts")]
    pub k8s_version: Vec<String>,
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
        let [one] = <[VersionSource; 1]>::try_from(Self::resolve_all(global, choice)?)
            .map_err(|_| {
                Error::Usage(
                    "one version at a time here: only simulate compares two (--k8s-version or --context twice)"
                        .into(),
                )
            })?;
        Ok(one)
    }

    /// Every version asked for: each --k8s-version, else each --context's cluster, else the
    /// newest. Two at most.
    fn resolve_all(global: &GlobalArgs, choice: &VersionChoice) -> Result<Vec<VersionSource>> {
        let sources = if !choice.k8s_version.is_empty() {
            choice
                .k8s_version
                .iter()
                .map(|v| {
                    Semantics::parse_version(v)
                        .map(VersionSource::Given)
                        .map_err(Error::Usage)
                })
                .collect::<Result<Vec<_>>>()?
        } else if global.contexts.is_empty() {
            vec![VersionSource::Given(Semantics::newest())]
        } else {
            global
                .contexts
                .iter()
                .map(|c| {
                    crate::cluster::resolve(global.kubeconfig.as_deref(), Some(c))
                        .map(|t| VersionSource::Cluster(Box::new(t)))
                })
                .collect::<Result<Vec<_>>>()?
        };
        if sources.len() > 2 {
            return Err(Error::Usage(format!(
                "{} versions given: simulate compares two at a time",
                sources.len()
            )));
        }
        Ok(sources)
    }

    /// How the version is named in a comparison: `1.29`, or `CONTEXT (1.36)`.
    fn label(&self, sem: &Semantics) -> String {
        match self {
            VersionSource::Given(_) => format!("1.{}", sem.minor),
            VersionSource::Cluster(t) => format!("{} (1.{})", t.context, sem.minor),
        }
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

/// `simulate`, resolved: the Job, the outcomes in order and the version (or two, compared).
#[derive(Debug, Clone)]
pub struct Simulate {
    pub job: JobInput,
    pub outcomes: Vec<OutcomeSpec>,
    pub versions: Vec<VersionSource>,
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
        let versions = VersionSource::resolve_all(global, &self.version)?;
        Ok(Simulate {
            job,
            outcomes,
            versions,
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
    let mut reports = Vec::new();
    let mut labels = Vec::new();
    for version in &run.versions {
        let (sem, _) = version.semantics(global).await?;
        labels.push(version.label(&sem));
        reports.push(domain::simulate(&run.job, &run.outcomes, &sem)?);
    }
    // The warnings are about the scenario, the same under every version: said once.
    for warning in reports[0]
        .simulation
        .steps
        .iter()
        .filter_map(|s| s.warning.as_ref())
    {
        output::warn(warning);
    }
    match (<[_; 2]>::try_from(labels), <[_; 2]>::try_from(reports)) {
        (Ok(labels), Ok(reports)) => {
            let comparison = crate::failure_policy::versions::compare(labels, reports);
            output::print(&comparison, format)?;
            Ok(u8::from(comparison.final_differs))
        }
        (_, Err(mut one)) => {
            output::print(&one.remove(0), format)?;
            Ok(0)
        }
        (Err(_), Ok(_)) => unreachable!("one label per report"),
    }
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
