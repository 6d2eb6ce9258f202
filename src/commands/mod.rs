//! The commands layer: one module per subcommand, each in the kubectl shape (kubectl
//! `pkg/cmd/rollout/rollout_restart.go`, cargo `src/bin/cargo/commands/`):
//!
//! - `Args`: the clap definition of the subcommand's own flags;
//! - `resolve()`: flags and kubeconfig become typed settings, checked without any cluster call
//!   (kubectl's Complete and Validate); a usage error stops here;
//! - `exec()`: runs the domain code with the resolved settings and shows what it returns
//!   (tables, JSON/YAML, progress, prompts).
//!
//! This layer and `crate::cli` are the only ones that know clap; this layer and `crate::output`
//! are the only ones that print. The domain modules (`statefulset`, `schema`, `failure_policy`)
//! see only resolved settings and return data or events.
pub mod completion;
mod controller;
mod failure_policy;
mod help;
mod schema_diff;
mod statefulset;
mod version;

pub use help::print_clap_output;

use clap::{Parser, Subcommand};
use colored::Colorize;

use crate::cli::GlobalArgs;
use crate::error::{Error, Result, exit};

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-migrate",
    bin_name = "kubectl migrate",
    version,
    about = "Move stateful workloads between Kubernetes clusters, safely",
    long_about = "Move stateful workloads between Kubernetes clusters, safely.\n\n\
        Run as a kubectl plugin: `kubectl migrate <command>`. Global kubectl flags such as \
        --context and --namespace go after the plugin name.",
    after_help = help::ROOT.after_help(),
    propagate_version = true,
    // kubectl's flags take the last value when repeated (`-n a -n b` is b).
    args_override_self = true
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
            resumable after a crash (rerun the same command) and reversible (--rollback).",
        visible_alias = "sts",
        alias = "statefulsets"
    )]
    Statefulset(statefulset::Args),

    /// Compare API schemas (CRDs and built-in types) across clusters or files
    #[command(
        name = "schema-diff",
        long_about = "Compare API schemas (CRDs first, built-in types too) across several clusters \
            or files, classify every difference as compatible or breaking, and compute the lowest \
            common denominator schema that every cluster accepts. Exits like `kubectl diff`."
    )]
    SchemaDiff(schema_diff::Args),

    /// Simulate and explain Job podFailurePolicy, backoff and per-index behaviour
    #[command(
        name = "failure-policy",
        long_about = "Simulate and explain Job podFailurePolicy, backoffLimit and per-index \
            behaviour exactly as the Job controller decides, for a chosen Kubernetes version, \
            validate a Job like the API server, and explain the failed pods of a live Job."
    )]
    FailurePolicy(failure_policy::Args),

    /// Print the plugin's version and the version of the cluster it would talk to
    #[command(after_help = help::VERSION.after_help())]
    Version(version::Args),

    /// Run migrations in a cluster: the controller of StatefulSetMigration resources, and its CRDs
    #[command(
        long_about = "Run migrations in a cluster: a controller in a management cluster \
            reconciles StatefulSetMigration resources with the same core as `kubectl migrate \
            statefulset`, reading each member cluster's kubeconfig from a Secret of the \
            resource's namespace. `controller crds` prints the CRDs to apply first."
    )]
    Controller(controller::Args),
}

/// kubectl's -v=6: each API request on stderr.
fn log_request(line: &str) {
    crate::output::log(6, line);
}

/// Runs the command; `Ok` carries the exit code of a command that reports an outcome through
/// it (schema-diff exits 1 when it finds differences, like kubectl diff).
pub async fn run(cli: Cli) -> Result<u8> {
    crate::output::init(cli.global.color, cli.global.verbose);
    crate::cluster::log_requests_to(log_request);
    let done = |r: Result<()>| r.map(|()| crate::error::exit::OK);
    match cli.command {
        Command::Version(args) => done(version::exec(&cli.global, &args).await),
        Command::Statefulset(args) => done(statefulset::exec(&cli.global, &args).await),
        Command::SchemaDiff(args) => schema_diff::exec(&cli.global, &args)
            .await
            .map_err(|e| e.exit_at_least(2)),
        Command::FailurePolicy(args) => failure_policy::exec(&cli.global, &args).await,
        Command::Controller(args) => done(controller::exec(&cli.global, &args).await),
    }
}

/// Says on stderr how a command that did not succeed ended: a stop (a question answered no,
/// Ctrl-C, a --step pause) as a normal end, anything else as an error; prose broken to the
/// terminal, the command to run next left whole for copying.
pub fn print_end(err: &Error) {
    let text = if err.exit_code() == exit::STOPPED {
        format!("Stopped: {}", err.report())
    } else {
        format!("{} {}", "error:".red().bold(), err.report())
    };
    anstream::eprintln!("{}", crate::output::fill_except_indented(&text));
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
    fn global_flags_are_accepted_after_the_subcommand() {
        let cli = Cli::try_parse_from(crate::cli::expand_verbosity(
            [
                "kubectl-migrate",
                "failure-policy",
                "explain",
                "job",
                "--context",
                "km-a",
                "-n",
                "apps",
                "-o",
                "json",
                "--request-timeout",
                "5s",
                "-vv",
            ]
            .map(Into::into)
            .to_vec(),
        ))
        .unwrap();
        assert_eq!(cli.global.context().unwrap(), Some("km-a"));
        assert_eq!(cli.global.namespace.as_deref(), Some("apps"));
        let Command::FailurePolicy(fp) = &cli.command else {
            panic!("parsed {:?}", cli.command)
        };
        assert_eq!(fp.output.format(), crate::cli::OutputFormat::Json);
        assert_eq!(
            cli.global.request_timeout,
            std::time::Duration::from_secs(5)
        );
        assert_eq!(cli.global.verbose, 2);
    }

    fn parse(words: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kubectl-migrate").chain(words.iter().copied()))
    }

    /// kubectl conventions: short names for the resource, a repeated flag takes its last value.
    #[test]
    fn statefulset_answers_to_kubectls_names_and_repeated_flags_take_the_last_value() {
        for name in ["statefulset", "sts", "statefulsets"] {
            let cli = parse(&[name, "web", "--to-context", "b", "-n", "one", "-n", "two"]).unwrap();
            assert!(matches!(cli.command, Command::Statefulset(_)), "{name}");
            assert_eq!(cli.global.namespace.as_deref(), Some("two"), "{name}");
        }
        let cli = parse(&[
            "version",
            "-o",
            "json",
            "-o",
            "yaml",
            "--request-timeout",
            "1s",
            "--request-timeout",
            "2s",
        ])
        .unwrap();
        assert_eq!(
            cli.global.request_timeout,
            std::time::Duration::from_secs(2)
        );
        let Command::Version(v) = &cli.command else {
            panic!("parsed {:?}", cli.command)
        };
        assert_eq!(v.output.format(), crate::cli::OutputFormat::Yaml);
        // --context stays a list for schema-diff.
        let cli = parse(&["schema-diff", "--context", "a", "--context", "b"]).unwrap();
        assert_eq!(cli.global.contexts, ["a", "b"]);
    }

    #[test]
    fn markdown_is_offered_only_for_reports() {
        assert!(parse(&["schema-diff", "-f", "a", "-f", "b", "-o", "markdown"]).is_ok());
        for words in [
            &["version", "-o", "markdown"][..],
            &["sts", "web", "--to-context", "b", "-o", "markdown"],
            &["failure-policy", "check", "-f", "j", "-o", "markdown"],
        ] {
            let err = parse(words).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::InvalidValue,
                "{words:?}"
            );
        }
    }

    #[test]
    fn verbosity_is_written_as_kubectl_writes_it() {
        for (words, level) in [
            (&["version", "-v=6"][..], 6),
            (&["version", "--v=6"], 6),
            (&["version", "-v", "6"], 6),
            (&["version", "-v"], 1),
            (&["version", "--verbose"], 1),
            (&["version"], 0),
        ] {
            assert_eq!(parse(words).unwrap().global.verbose, level, "{words:?}");
        }
        assert!(parse(&["version", "-v=11"]).is_err());
    }

    #[test]
    fn help_is_a_subcommand_too() {
        let err = parse(&["help", "statefulset"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(
            err.to_string()
                .contains("Usage: kubectl migrate statefulset"),
            "{err}"
        );
    }
}
