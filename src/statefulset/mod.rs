//! `kubectl migrate statefulset`: move a StatefulSet between clusters pod by pod.
//!
//! Shape: [`Args`] (flags) -> [`validate`] (no cluster calls) -> [`run`]: connect, preflight,
//! plan, confirm, then the reconciler loop `observe -> decide -> act` until done. A rerun of the
//! same command resumes from whatever the clusters show.
pub mod act;
pub mod copy;
pub mod decide;
pub mod journal;
pub mod model;
pub mod observe;
pub mod plan;
pub mod preflight;
mod run;
mod status;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, ValueEnum};
use clap_complete::engine::ArgValueCandidates;

use crate::cli::parse_duration;
use crate::error::{Error, Result};

pub use run::run;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    /// No dry run: make the changes
    None,
    /// Print the plan; no writes
    Client,
    /// Print the plan and dry-run every write on the servers
    Server,
}

/// Move a StatefulSet to another cluster pod by pod.
#[derive(Debug, Clone, clap::Args)]
#[command(
    group(ArgGroup::new("mode").args(["rollback", "status", "cleanup"])),
    after_help = "Exit codes: 0 done; 1 error; 2 usage; 3 stopped by the user or at a --step pause (rerun to resume); \
                  4 preflight failed (nothing written).\n\n\
                  Examples:\n  \
                  kubectl migrate statefulset web --context a --to-context b --dry-run\n  \
                  kubectl migrate statefulset web --context a --to-context b --yes -o json\n  \
                  kubectl migrate statefulset web --context a --to-context b --status\n  \
                  kubectl migrate statefulset web --context a --to-context b --rollback --yes"
)]
pub struct Args {
    /// The StatefulSet to move (in --namespace of --context)
    pub name: String,

    /// The destination context
    #[arg(long, value_name = "CONTEXT", add = ArgValueCandidates::new(crate::cluster::context_candidates))]
    pub to_context: String,

    /// The destination namespace (default: the source namespace)
    #[arg(long, value_name = "NS")]
    pub to_namespace: Option<String>,

    /// A separate kubeconfig for the destination context (default: the source's)
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub to_kubeconfig: Option<PathBuf>,

    /// Do not prompt; required when stdin is not a terminal
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Show the plan without changing anything; `server` also dry-runs every write on the servers
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: Option<DryRun>,

    /// Pause before each ordinal: ask on a terminal; otherwise move one batch and exit 3
    #[arg(long)]
    pub step: bool,

    /// Ordinals moved per step
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub batch: i32,

    /// How long to wait for one pod to go or to become Ready before stopping (resumable)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Command run (by sh -c) after each ordinal is Ready, with ORDINAL, POD, NAMESPACE and CONTEXT
    /// set; a non-zero exit stops the migration in a resumable state
    #[arg(long, value_name = "CMD")]
    pub health_check: Option<String>,

    /// Use StorageClass NEW in the destination where the source uses OLD (repeatable)
    #[arg(long, value_name = "OLD=NEW", value_parser = parse_class_mapping)]
    pub storage_class_map: Vec<(String, String)>,

    /// Copy the headless Service and the ConfigMaps, Secrets and ServiceAccount the pods use
    #[arg(long)]
    pub copy_dependencies: bool,

    /// Create the destination namespace if it does not exist
    #[arg(long)]
    pub create_namespace: bool,

    /// Start even if not all source replicas are Ready
    #[arg(long)]
    pub allow_unhealthy: bool,

    /// Move ordinals back to the source, from any point
    #[arg(long)]
    pub rollback: bool,

    /// Show both sides, the journal, and what the next run will do; changes nothing
    #[arg(long)]
    pub status: bool,

    /// After completion, delete the source's leftover StatefulSet, PVC and PV objects (never the storage)
    #[arg(long)]
    pub cleanup: bool,

    /// With --cleanup: give the destination's PVs back the reclaim policies they had in the source
    #[arg(long, requires = "cleanup")]
    pub restore_reclaim_policy: bool,
}

pub fn parse_class_mapping(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() && !new.contains('=') => {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!(
            "expected OLD=NEW (two StorageClass names), got {text:?}"
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Migrate,
    Rollback,
    Status,
    Cleanup,
}

/// Flags checked without any cluster call.
#[derive(Debug, Clone)]
pub struct Validated {
    pub mode: Mode,
    pub class_map: BTreeMap<String, String>,
    pub dry_run: DryRun,
}

pub fn validate(args: &Args) -> Result<Validated> {
    let mode = match (args.rollback, args.status, args.cleanup) {
        (true, _, _) => Mode::Rollback,
        (_, true, _) => Mode::Status,
        (_, _, true) => Mode::Cleanup,
        _ => Mode::Migrate,
    };
    let dry_run = args.dry_run.unwrap_or(DryRun::None);
    if dry_run != DryRun::None && mode != Mode::Migrate {
        return Err(Error::Usage(
            "--dry-run applies to a migration only; --status already changes nothing".into(),
        ));
    }
    if args.step && matches!(mode, Mode::Status | Mode::Cleanup) {
        return Err(Error::Usage(
            "--step applies to a migration or a rollback".into(),
        ));
    }
    let mut class_map = BTreeMap::new();
    for (old, new) in &args.storage_class_map {
        if let Some(previous) = class_map.insert(old.clone(), new.clone())
            && &previous != new
        {
            return Err(Error::Usage(format!(
                "--storage-class-map maps {old} twice ({previous} and {new})"
            )));
        }
    }
    if !is_dns_subdomain(&args.name) {
        return Err(Error::Usage(format!(
            "{:?} is not a valid StatefulSet name",
            args.name
        )));
    }
    Ok(Validated {
        mode,
        class_map,
        dry_run,
    })
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> std::result::Result<Args, clap::Error> {
        let mut argv = vec!["kubectl-migrate", "statefulset"];
        argv.extend(args);
        Cli::try_parse_from(argv).map(|cli| match cli.command {
            Command::Statefulset(a) => a,
            other => panic!("parsed {other:?}"),
        })
    }

    #[test]
    fn bare_dry_run_means_client() {
        let args = parse(&["web", "--to-context", "b", "--dry-run"]).unwrap();
        assert_eq!(args.dry_run, Some(DryRun::Client));
        let args = parse(&["web", "--to-context", "b", "--dry-run=server"]).unwrap();
        assert_eq!(args.dry_run, Some(DryRun::Server));
    }

    #[test]
    fn modes_exclude_each_other() {
        assert!(parse(&["web", "--to-context", "b", "--rollback", "--status"]).is_err());
        assert!(parse(&["web", "--to-context", "b", "--restore-reclaim-policy"]).is_err());
        assert!(parse(&["web"]).is_err(), "--to-context is required");
        assert!(parse(&["web", "--to-context", "b", "--batch", "0"]).is_err());
    }

    #[test]
    fn validation_catches_what_clap_cannot() {
        let args = parse(&["web", "--to-context", "b", "--status", "--dry-run"]).unwrap();
        assert!(matches!(validate(&args), Err(Error::Usage(m)) if m.contains("--dry-run")));
        let args = parse(&[
            "web",
            "--to-context",
            "b",
            "--storage-class-map",
            "a=b",
            "--storage-class-map",
            "a=c",
        ])
        .unwrap();
        assert!(matches!(validate(&args), Err(Error::Usage(m)) if m.contains("maps a twice")));
        let args = parse(&["Web_1", "--to-context", "b"]).unwrap();
        assert!(matches!(validate(&args), Err(Error::Usage(_))));
        let args = parse(&[
            "web",
            "--to-context",
            "b",
            "--cleanup",
            "--restore-reclaim-policy",
        ])
        .unwrap();
        assert_eq!(validate(&args).unwrap().mode, Mode::Cleanup);
    }

    #[test]
    fn class_mappings_need_both_names() {
        assert_eq!(
            parse_class_mapping("fast=ssd"),
            Ok(("fast".into(), "ssd".into()))
        );
        for bad in ["fast", "=ssd", "fast=", "a=b=c"] {
            assert!(parse_class_mapping(bad).is_err(), "{bad}");
        }
    }
}
