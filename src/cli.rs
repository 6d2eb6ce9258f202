//! The clap definitions. Every subcommand flattens [`GlobalArgs`], because kubectl does not pass
//! its own global flags to plugins: `kubectl --context x migrate` is rejected by kubectl, so users
//! write `kubectl migrate ... --context x` and we parse it ourselves.
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::engine::ArgValueCandidates;

use crate::cluster;

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-migrate",
    bin_name = "kubectl migrate",
    version,
    about = "Move stateful workloads between Kubernetes clusters, safely",
    long_about = "Move stateful workloads between Kubernetes clusters, safely.\n\n\
        Run as a kubectl plugin: `kubectl migrate <command>`. Global kubectl flags such as \
        --context and --namespace go after the plugin name.",
    after_help = "Exit codes: 0 success, 1 error, 2 usage error. Subcommands document their own additions.",
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Move a StatefulSet to another cluster pod by pod, without downtime (resumable, reversible)
    #[command(
        long_about = "Move a StatefulSet to another cluster pod by pod, without downtime, using \
            spec.ordinals.start. Scales the source down from the top, moves each ordinal's PVCs and \
            PVs, and scales the destination up from below. Never runs one ordinal in both clusters; \
            resumable after a crash (rerun the same command) and reversible (--rollback)."
    )]
    Statefulset(crate::statefulset::Args),

    /// Compare API schemas (CRDs and built-in types) across clusters or files
    #[command(
        name = "schema-diff",
        long_about = "Compare API schemas (CRDs first, built-in types too) across several clusters \
            or files, classify every difference as compatible or breaking, and compute the lowest \
            common denominator schema that every cluster accepts. Exits like `kubectl diff`."
    )]
    SchemaDiff(crate::schema::Args),

    /// Simulate and explain Job podFailurePolicy, backoff and per-index behaviour
    #[command(
        name = "failure-policy",
        long_about = "Simulate and explain Job podFailurePolicy, backoffLimit and per-index \
            behaviour exactly as the Job controller decides, for a chosen Kubernetes version, \
            validate a Job like the API server, and explain the failed pods of a live Job."
    )]
    FailurePolicy(crate::failure_policy::Args),

    /// Print the plugin's version and the version of the cluster it would talk to
    Version(VersionArgs),
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Statefulset(_) => "statefulset",
            Command::SchemaDiff(_) => "schema-diff",
            Command::FailurePolicy(_) => "failure-policy",
            Command::Version(_) => "version",
        }
    }
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print the client version only; do not contact a cluster
    #[arg(long)]
    pub client: bool,
}

/// The kubectl-style flags that every subcommand understands.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: the current context). schema-diff takes it
    /// several times, once per cluster to compare
    #[arg(long = "context", global = true, value_name = "NAME", action = clap::ArgAction::Append, add = ArgValueCandidates::new(cluster::context_candidates))]
    pub contexts: Vec<String>,

    /// The namespace (default: the context's namespace, else "default")
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,

    /// Output format for data on stdout
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,

    /// When to colour output; NO_COLOR in the environment means never, unless "always" is given
    #[arg(long, global = true, value_enum, default_value_t = ColorMode::Auto, value_name = "WHEN")]
    pub color: ColorMode,

    /// More detail on stderr; repeat for more (-vv)
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without
    /// limit. Connecting to a server never waits longer than this (10s when 0)
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration, default_value = "0")]
    pub request_timeout: Duration,
}

impl GlobalArgs {
    /// The one --context of a command that talks to one cluster (or the current context).
    pub fn context(&self) -> crate::error::Result<Option<&str>> {
        match self.contexts.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.as_str())),
            many => Err(crate::error::Error::Usage(format!(
                "--context was given {} times; this command uses one cluster (schema-diff is the one that compares several)",
                many.len()
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Yaml,
    /// A Markdown table, for pull-request comments
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorMode {
    Auto,
    Always,
    Never,
}

/// Parses durations the way kubectl's --request-timeout does: a bare number is seconds,
/// otherwise a sequence of number+unit with units h, m, s, ms.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let bad = || format!("invalid duration {text:?}: use e.g. 30s, 1m30s, 500ms or 0");
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        total += Duration::from_secs_f64(value * scale);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_parse_like_kubectl() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "s", "5x", "-1s", "1m s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn global_flags_are_accepted_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "kubectl-migrate",
            "version",
            "--context",
            "km-a",
            "-n",
            "apps",
            "-o",
            "json",
            "--request-timeout",
            "5s",
            "-vv",
        ])
        .unwrap();
        assert_eq!(cli.global.context().unwrap(), Some("km-a"));
        assert_eq!(cli.global.namespace.as_deref(), Some("apps"));
        assert_eq!(cli.global.output, OutputFormat::Json);
        assert_eq!(cli.global.request_timeout, Duration::from_secs(5));
        assert_eq!(cli.global.verbose, 2);
    }
}
