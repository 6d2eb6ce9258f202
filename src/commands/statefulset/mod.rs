//! `kubectl migrate statefulset`: move a StatefulSet between clusters pod by pod (see
//! `crate::statefulset`). This module turns the flags into [`Settings`], drives the run as its
//! [`Operator`] (prompts, progress bar, event lines or NDJSON) and prints what it returns.
mod console;
mod in_cluster;
mod render;
mod selection;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use clap::{ArgGroup, ValueEnum};
use clap_complete::engine::ArgValueCandidates;

use crate::cli::{
    GlobalArgs, OutputArgs, OutputFormat, parse_duration, statefulset_candidates,
    to_context_candidates, to_namespace_candidates,
};
use crate::cluster;
use crate::duration::humanize;
use crate::error::{Error, Result};
use crate::output;
use crate::statefulset::{
    self, Batch, COPY_ORDER_ENV, CopyOrder, DryRun, Mode, Observe, OnTimeout, Outcome, Settings,
    VolumeMode,
};
use console::Console;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRunArg {
    /// No dry run: make the changes
    None,
    /// Print the plan; no writes
    Client,
    /// Print the plan and dry-run every write on the servers
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VolumesArg {
    /// Copy the source's claims and PVs: both clusters reach the same storage
    Shared,
    /// New claims from the destination's volumeClaimTemplates; the source's are kept for rollback
    Fresh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnTimeoutArg {
    /// Stop; the ordinals not Ready stay down until a rerun (keeps waiting) or --rollback
    Stop,
    /// Move every ordinal back to the source at once, then exit 1
    Rollback,
}

/// Move a StatefulSet to another cluster pod by pod.
#[derive(Debug, Clone, clap::Args)]
#[command(
    group(ArgGroup::new("mode").args(["rollback", "status", "cleanup", "rebuild_journal"])),
    group(ArgGroup::new("sets").args(["name", "selector", "all"]).required(true)),
    group(ArgGroup::new("selection").args(["selector", "all"])),
    after_help = super::help::STATEFULSET.after_help()
)]
pub struct Args {
    /// The StatefulSet to move (in --namespace of --context)
    #[arg(add = ArgValueCandidates::new(statefulset_candidates))]
    pub name: Option<String>,

    /// Move every StatefulSet of the namespace that matches this label selector, each with its own journal and lease
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,

    /// Move every StatefulSet of the namespace, each with its own journal and lease
    #[arg(long)]
    pub all: bool,

    /// With -l or --all: how many StatefulSets move at the same time
    #[arg(long, value_name = "N", default_value_t = 1, requires = "selection",
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,

    /// The destination context
    #[arg(long, value_name = "CONTEXT", add = ArgValueCandidates::new(to_context_candidates))]
    pub to_context: String,

    /// The destination namespace (default: the source namespace)
    #[arg(long, value_name = "NS", add = ArgValueCandidates::new(to_namespace_candidates))]
    pub to_namespace: Option<String>,

    /// A separate kubeconfig for the destination context (default: the source's)
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub to_kubeconfig: Option<PathBuf>,

    /// Do not prompt; required when stdin is not a terminal
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Show the plan without changing anything; `server` also dry-runs every write on the servers
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: Option<DryRunArg>,

    /// Pause before each ordinal: ask on a terminal; otherwise move one batch and exit 3
    #[arg(long)]
    pub step: bool,

    /// Ordinals moved per step; `auto`: as many as the PodDisruptionBudgets that select the set allow (1 without one)
    #[arg(
        long,
        value_name = "N|auto",
        default_value = "1",
        allow_negative_numbers = true
    )]
    pub batch: Batch,

    /// How long to wait for one pod to go or to become Ready before stopping (resumable)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,

    /// When a moved pod is not Ready within --timeout (its ordinal then runs nowhere): `stop` and say why, or `rollback` at once (for runbooks)
    #[arg(long, value_enum, value_name = "ACTION", default_value = "stop")]
    pub on_timeout: OnTimeoutArg,

    /// Command run (by sh -c) after each ordinal is Ready, with ORDINAL, POD, NAMESPACE and CONTEXT
    /// set; a non-zero exit stops the migration in a resumable state
    #[arg(long, value_name = "CMD", conflicts_with = "no_health_check")]
    pub health_check: Option<String>,

    /// Resume without the --health-check the migration was started with, or run --volumes=fresh without one
    #[arg(long)]
    pub no_health_check: bool,

    /// `shared`: copy the claims and PVs (both clusters reach the storage); `fresh`: new claims from the destination's volumeClaimTemplates, for apps that rebuild a replica from its peers (needs --health-check)
    #[arg(long, value_enum, value_name = "MODE", default_value = "shared")]
    pub volumes: VolumesArg,

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

    /// Recovery after the journal was deleted: write a journal rebuilt from what both clusters show, then rerun to resume or roll back
    #[arg(long)]
    pub rebuild_journal: bool,

    /// Recovery after the destination StatefulSet was deleted mid-migration: create it again over the ordinals the journal places there, so that its controller adopts the pods still running there
    #[arg(long, conflicts_with_all = ["status", "cleanup", "rebuild_journal"])]
    pub recreate_destination: bool,

    /// With --cleanup: give the destination's PVs back the reclaim policies they had in the source
    #[arg(long, requires = "cleanup")]
    pub restore_reclaim_policy: bool,

    /// Hand the run to the controller: create a StatefulSetMigration in the management cluster
    /// (its kubeconfig Secrets there name the two clusters by context) and follow its status;
    /// -o yaml --dry-run=client prints it for Git
    #[arg(long, conflicts_with_all = ["status", "cleanup", "rebuild_journal", "recreate_destination", "step", "selector", "all", "to_kubeconfig"])]
    pub in_cluster: bool,

    /// With --in-cluster: the management cluster's context (default: the current context)
    #[arg(long, value_name = "CONTEXT", requires = "in_cluster", add = ArgValueCandidates::new(to_context_candidates))]
    pub management_context: Option<String>,

    /// With --in-cluster: the namespace of the StatefulSetMigration and of the kubeconfig
    /// Secrets (default: the management context's namespace)
    #[arg(long, value_name = "NS", requires = "in_cluster")]
    pub management_namespace: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
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

/// The flags, resolved: the run's settings and what only this layer needs.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// With a selection, `settings.name` is empty: each selected set gets its own copy.
    pub settings: Settings,
    /// Several sets (-l or --all) instead of one by name.
    pub selection: Option<Selection>,
    pub yes: bool,
    pub output: OutputFormat,
    /// As given, for the resume command.
    pub kubeconfig: Option<PathBuf>,
    pub to_kubeconfig: Option<PathBuf>,
    /// --in-cluster: where the controller's resource goes.
    pub in_cluster: Option<in_cluster::Management>,
}

/// The StatefulSets of a selection, found in the source namespace when the run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// A label selector (-l); `None` is --all.
    pub selector: Option<String>,
    /// How many sets move at the same time.
    pub parallel: usize,
}

/// The flags and kubeconfig, checked without any cluster call (kubectl's Complete + Validate).
pub fn resolve(global: &GlobalArgs, args: &Args) -> Result<Resolved> {
    let dry_run = match args.dry_run.unwrap_or(DryRunArg::None) {
        DryRunArg::None => DryRun::None,
        DryRunArg::Client => DryRun::Client,
        DryRunArg::Server => DryRun::Server,
    };
    let mode = match (args.rollback, args.status, args.cleanup) {
        (true, _, _) => Mode::Rollback(dry_run),
        (_, true, _) => Mode::Status,
        (_, _, true) => Mode::Cleanup {
            restore_reclaim_policy: args.restore_reclaim_policy,
        },
        _ if args.rebuild_journal => Mode::RebuildJournal,
        _ => Mode::Migrate(dry_run),
    };
    if dry_run != DryRun::None && !matches!(mode, Mode::Migrate(_) | Mode::Rollback(_)) {
        return Err(Error::Usage(
            "--dry-run applies to a migration or a rollback; --status already changes nothing"
                .into(),
        ));
    }
    if args.step
        && matches!(
            mode,
            Mode::Status | Mode::Cleanup { .. } | Mode::RebuildJournal
        )
    {
        return Err(Error::Usage(
            "--step applies to a migration or a rollback".into(),
        ));
    }
    let on_timeout = match args.on_timeout {
        OnTimeoutArg::Stop => OnTimeout::Stop,
        OnTimeoutArg::Rollback => OnTimeout::Rollback,
    };
    if on_timeout == OnTimeout::Rollback && !matches!(mode, Mode::Migrate(_)) {
        return Err(Error::Usage(
            "--on-timeout=rollback applies to a migration only; a rollback that times out stops, and a rerun keeps waiting".into(),
        ));
    }
    let volumes = match args.volumes {
        VolumesArg::Shared => VolumeMode::Shared,
        VolumesArg::Fresh => VolumeMode::Fresh,
    };
    // With fresh volumes nothing but the gate tells an ordinal that rebuilt from its peers
    // from one that came up empty: the user says which gate, or that there is none.
    if volumes == VolumeMode::Fresh
        && matches!(mode, Mode::Migrate(_))
        && args.health_check.is_none()
        && !args.no_health_check
    {
        return Err(Error::Usage(
            "--volumes=fresh starts each destination pod on empty claims: give --health-check CMD that succeeds once the replica has caught up with its peers, or --no-health-check to go on without one".into(),
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
    for (flag, namespace) in [
        ("--namespace", global.namespace.as_ref()),
        ("--to-namespace", args.to_namespace.as_ref()),
    ] {
        if let Some(ns) = namespace
            && !is_dns_label(ns)
        {
            return Err(Error::Usage(format!(
                "{flag} {ns:?} is not a valid namespace name (lower-case letters, digits and '-', at most 63)"
            )));
        }
    }
    let selection = match (&args.name, &args.selector, args.all) {
        (Some(name), _, _) => {
            if !is_dns_subdomain(name) {
                return Err(Error::Usage(format!(
                    "{name:?} is not a valid StatefulSet name"
                )));
            }
            None
        }
        (None, selector, _) => Some(Selection {
            selector: selector.clone(),
            parallel: usize::from(args.parallel),
        }),
    };
    if let Some(selection) = &selection {
        if selection
            .selector
            .as_deref()
            .is_some_and(|s| s.trim().is_empty())
        {
            return Err(Error::Usage(
                "-l needs a label selector (for example app=db); --all takes every StatefulSet"
                    .into(),
            ));
        }
        let refused = if args.step {
            Some("--step")
        } else if mode == Mode::RebuildJournal {
            Some("--rebuild-journal")
        } else {
            None
        };
        if let Some(flag) = refused {
            return Err(Error::Usage(format!(
                "{flag} works on one StatefulSet; name it instead of -l/--all"
            )));
        }
    }
    // Both contexts are looked up now: an unknown one fails before any network traffic.
    let to_kubeconfig = args.to_kubeconfig.clone().or(global.kubeconfig.clone());
    let source = global.target();
    let destination = cluster::resolve(to_kubeconfig.as_deref(), Some(&args.to_context));
    let (source, destination) = match (source, destination) {
        (Ok(s), Ok(d)) => (s, d),
        (s, d) => {
            let mut problems = Vec::new();
            problems.extend(s.err().map(|e| format!("source: {}", e.report())));
            problems.extend(d.err().map(|e| format!("destination: {}", e.report())));
            // A configuration error, exit 1 as for every command (README: exit codes), not a
            // preflight refusal: nothing was read from a cluster yet.
            return Err(Error::Failed {
                message: problems.join("\n"),
            });
        }
    };
    let source_namespace = global.namespace_for(&source);
    let destination_namespace = args
        .to_namespace
        .clone()
        .unwrap_or_else(|| source_namespace.clone());
    if source.server == destination.server && source_namespace == destination_namespace {
        return Err(Error::Usage(format!(
            "source and destination are the same: {} namespace {source_namespace}; pick another --to-context or --to-namespace",
            source.server
        )));
    }
    Ok(Resolved {
        settings: Settings {
            name: args.name.clone().unwrap_or_default(),
            source,
            source_namespace,
            destination,
            destination_namespace,
            request_timeout: global.request_timeout,
            mode,
            batch: args.batch,
            timeout: args.timeout,
            on_timeout,
            health_check: args.health_check.clone(),
            no_health_check: args.no_health_check,
            class_map,
            copy_dependencies: args.copy_dependencies,
            create_namespace: args.create_namespace,
            recreate_destination: args.recreate_destination,
            allow_unhealthy: args.allow_unhealthy,
            step: args.step,
            selected: selection.is_some(),
            volumes,
            observe: observe_mode(std::env::var(OBSERVE_ENV).ok().as_deref()),
            copy_order: CopyOrder::from_env_value(std::env::var(COPY_ORDER_ENV).ok().as_deref()),
            holder: holder().to_string(),
        },
        selection,
        yes: args.yes,
        output: args.output.format(),
        kubeconfig: global.kubeconfig.clone(),
        to_kubeconfig: args.to_kubeconfig.clone(),
        in_cluster: args.in_cluster.then(|| in_cluster::Management {
            kubeconfig: global.kubeconfig.clone(),
            context: args.management_context.clone(),
            namespace: args.management_namespace.clone(),
        }),
    })
}

/// Set to `poll`, the reconciler reads both clusters with requests on every iteration instead
/// of watching them (see [`Observe::Poll`]); anything else, or nothing, watches.
pub const OBSERVE_ENV: &str = "KUBECTL_MIGRATE_OBSERVE";

/// [`OBSERVE_ENV`]'s value as the run's [`Observe`] setting.
fn observe_mode(value: Option<&str>) -> Observe {
    match value {
        Some("poll") => Observe::Poll,
        _ => Observe::Watch,
    }
}

/// This process as a migration's lease holder: one identity for every run of the process.
fn holder() -> &'static str {
    static HOLDER: OnceLock<String> = OnceLock::new();
    HOLDER.get_or_init(|| statefulset::holder_identity(host_name().as_deref()))
}

/// This machine's name, best effort: $HOSTNAME, else the kernel's.
fn host_name() -> Option<String> {
    std::env::var("HOSTNAME").ok().or_else(|| {
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|f| std::fs::read_to_string(f).ok())
    })
}

/// A namespace's name: an RFC 1123 label.
fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
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

/// The command line that does this run again, from the resolved settings (not from argv): the
/// contexts and namespaces spelled out, so that a changed current-context cannot redirect it.
pub fn resume_command(resolved: &Resolved) -> String {
    let s = &resolved.settings;
    let mut words: Vec<String> = vec!["kubectl".into(), "migrate".into(), "statefulset".into()];
    match &resolved.selection {
        None => words.push(shell_quote(s.name.as_ref())),
        Some(selection) => {
            match &selection.selector {
                Some(selector) => words.extend(["-l".into(), shell_quote(selector.as_ref())]),
                None => words.push("--all".into()),
            }
            if selection.parallel != 1 {
                words.extend(["--parallel".into(), selection.parallel.to_string()]);
            }
        }
    }
    let mut flag = |name: &str, value: &OsStr| {
        words.push(name.to_string());
        words.push(shell_quote(value));
    };
    if let Some(path) = &resolved.kubeconfig {
        flag("--kubeconfig", path.as_os_str());
    }
    flag("--context", s.source.context.as_ref());
    flag("-n", s.source_namespace.as_ref());
    flag("--to-context", s.destination.context.as_ref());
    if let Some(path) = &resolved.to_kubeconfig {
        flag("--to-kubeconfig", path.as_os_str());
    }
    if s.destination_namespace != s.source_namespace {
        flag("--to-namespace", s.destination_namespace.as_ref());
    }
    if s.volumes == VolumeMode::Fresh {
        flag("--volumes", "fresh".as_ref());
    }
    if s.batch != Batch::Count(1) {
        flag("--batch", s.batch.to_string().as_ref());
    }
    if s.timeout != DEFAULT_TIMEOUT {
        flag("--timeout", humanize(s.timeout).as_ref());
    }
    if let Some(check) = &s.health_check {
        flag("--health-check", check.as_ref());
    }
    for (old, new) in &s.class_map {
        flag("--storage-class-map", format!("{old}={new}").as_ref());
    }
    if !s.request_timeout.is_zero() {
        flag("--request-timeout", humanize(s.request_timeout).as_ref());
    }
    if resolved.output == OutputFormat::Json {
        flag("-o", "json".as_ref());
    }
    if let Some(management) = &resolved.in_cluster {
        words.push("--in-cluster".into());
        let mut flag = |name: &str, value: &Option<String>| {
            if let Some(value) = value {
                words.push(name.to_string());
                words.push(shell_quote(value.as_ref()));
            }
        };
        flag("--management-context", &management.context);
        flag("--management-namespace", &management.namespace);
    }
    let switches = [
        (s.copy_dependencies, "--copy-dependencies"),
        (s.create_namespace, "--create-namespace"),
        (s.allow_unhealthy, "--allow-unhealthy"),
        (matches!(s.mode, Mode::Rollback(_)), "--rollback"),
        (s.on_timeout == OnTimeout::Rollback, "--on-timeout=rollback"),
        (s.step, "--step"),
        (s.no_health_check, "--no-health-check"),
        (resolved.yes, "--yes"),
    ];
    words.extend(
        switches
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| name.to_string()),
    );
    words.join(" ")
}

/// --timeout's default, as in the flag's definition.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// `word` as a POSIX shell reads it back. Bytes that are not UTF-8 (a path can hold them) are
/// written in bash's `$'\xNN'` quoting, the only way to type them.
fn shell_quote(word: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    match word.to_str() {
        Some(w)
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_=./:,@".contains(&b)) =>
        {
            w.to_string()
        }
        Some(w) => format!("'{}'", w.replace('\'', r"'\''")),
        None => {
            let mut out = String::from("$'");
            for &b in word.as_bytes() {
                match b {
                    b'\'' | b'\\' => {
                        out.push('\\');
                        out.push(b as char);
                    }
                    0x20..=0x7e => out.push(b as char),
                    _ => out.push_str(&format!("\\x{b:02x}")),
                }
            }
            out.push('\'');
            out
        }
    }
}

pub async fn exec(global: &GlobalArgs, args: &Args) -> Result<()> {
    let resolved = resolve(global, args)?;
    if let Some(management) = &resolved.in_cluster {
        return in_cluster::exec(&resolved, management).await;
    }
    if let Some(selection) = &resolved.selection {
        return selection::exec(&resolved, selection).await;
    }
    let mut console = Console::new(
        resolved.output == OutputFormat::Json,
        resolved.yes,
        resume_command(&resolved),
    );
    let outcome = statefulset::run(&resolved.settings, &mut console).await;
    report(
        outcome,
        resolved.settings.mode,
        resolved.output,
        &mut console,
        None,
    )
}

/// The documents (plans, statuses) of a selection's sets by name, gathered to be printed as
/// one List.
type Gathered = std::sync::Mutex<Vec<(String, serde_json::Value)>>;

/// Prints what a run returned (a plan, a status, a cleanup report), or adds a plan or a status
/// to `gathered` (a selection's List), and, for a migration or a rollback, ends its event
/// stream with how it went. Returns the run's result.
fn report(
    outcome: Result<Outcome>,
    mode: Mode,
    format: OutputFormat,
    console: &mut Console,
    gathered: Option<&Gathered>,
) -> Result<()> {
    console.close();
    let result = match outcome {
        Err(e) => Err(e),
        Ok(Outcome::Planned(plan)) => {
            let printed = show(&plan.plan.statefulset, &plan, format, gathered);
            let rejected: Vec<String> = plan
                .server_dry_run
                .iter()
                .filter(|r| !r.ok)
                .map(|r| format!("{}: {}", r.action, r.message))
                .collect();
            printed.and(if rejected.is_empty() {
                Ok(())
            } else {
                Err(Error::PreflightFailed { problems: rejected })
            })
        }
        Ok(Outcome::Status(report)) => {
            // One of a selection: each table says whose it is (the documents carry the name),
            // written whole while sets run in parallel (stdout's lock is reentrant).
            let _whole = std::io::stdout().lock();
            if format == OutputFormat::Table
                && let Some(set) = console.set()
            {
                anstream::println!("StatefulSet {set}:");
            }
            show(&report.statefulset, &report, format, gathered)
        }
        Ok(Outcome::Cleaned(report)) => output::print(&report, format),
        Ok(Outcome::Rebuilt(rebuilt)) => output::print(&rebuilt, format),
        Ok(Outcome::Finished) => {
            // Only a migration or rollback streams events; they end with how it went.
            console.done(None);
            Ok(())
        }
    };
    if let Err(e) = &result
        && matches!(
            mode,
            Mode::Migrate(DryRun::None) | Mode::Rollback(DryRun::None)
        )
    {
        console.done(Some(e));
    }
    result
}

/// Prints `document` (the run of StatefulSet `name`), or adds it to a selection's List.
fn show<T: serde::Serialize + output::Tabular>(
    name: &str,
    document: &T,
    format: OutputFormat,
    gathered: Option<&Gathered>,
) -> Result<()> {
    let Some(list) = gathered else {
        return output::print(document, format);
    };
    let value = serde_json::to_value(document).map_err(|e| Error::Encode {
        format: "JSON",
        source: Box::new(e),
    })?;
    crate::sync::lock(list).push((name.to_string(), value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    /// A kubeconfig with two contexts (no server is ever contacted): km-a with namespace db,
    /// km-b without one.
    fn kubeconfig() -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            r#"
apiVersion: v1
kind: Config
current-context: km-a
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1"}}
- {name: b, cluster: {server: "https://127.0.0.1:2"}}
contexts:
- {name: km-a, context: {cluster: a, user: u, namespace: db}}
- {name: km-b, context: {cluster: b, user: u}}
users:
- {name: u, user: {token: t}}
"#,
        )
        .unwrap();
        file
    }

    fn parse_os<I: IntoIterator<Item = std::ffi::OsString>>(
        args: I,
    ) -> std::result::Result<(GlobalArgs, Args), clap::Error> {
        let mut argv: Vec<std::ffi::OsString> = vec!["kubectl-migrate".into()];
        argv.extend(args);
        Cli::try_parse_from(argv).map(|cli| match cli.command {
            Command::Statefulset(a) => (cli.global, a),
            other => panic!("parsed {other:?}"),
        })
    }

    fn parse(args: &[&str]) -> std::result::Result<(GlobalArgs, Args), clap::Error> {
        let mut argv = vec!["statefulset"];
        argv.extend(args);
        parse_os(argv.into_iter().map(Into::into))
    }

    /// Parses and resolves `args` against the test kubeconfig.
    fn resolved(config: &tempfile::NamedTempFile, args: &[&str]) -> Result<Resolved> {
        let mut argv = vec!["--kubeconfig", config.path().to_str().unwrap()];
        argv.extend(args);
        let (global, args) = parse(&argv).unwrap();
        resolve(&global, &args)
    }

    #[test]
    fn bare_dry_run_means_client() {
        let (_, args) = parse(&["web", "--to-context", "b", "--dry-run"]).unwrap();
        assert_eq!(args.dry_run, Some(DryRunArg::Client));
        let (_, args) = parse(&["web", "--to-context", "b", "--dry-run=server"]).unwrap();
        assert_eq!(args.dry_run, Some(DryRunArg::Server));
    }

    #[test]
    fn modes_exclude_each_other() {
        assert!(parse(&["web", "--to-context", "b", "--rollback", "--status"]).is_err());
        assert!(parse(&["web", "--to-context", "b", "--restore-reclaim-policy"]).is_err());
        assert!(parse(&["web"]).is_err(), "--to-context is required");
        assert!(parse(&["web", "--to-context", "b", "--batch", "0"]).is_err());
        assert!(parse(&["web", "--to-context", "b", "--batch", "-1"]).is_err());
        assert!(parse(&["web", "--to-context", "b", "--batch", "most"]).is_err());
        let (_, args) = parse(&["web", "--to-context", "b", "--batch", "auto"]).unwrap();
        assert_eq!(args.batch, Batch::Auto);
    }

    #[test]
    fn a_selection_replaces_the_name_and_takes_parallel() {
        assert!(
            parse(&["--to-context", "b"]).is_err(),
            "a name, -l or --all"
        );
        assert!(parse(&["web", "-l", "a=b", "--to-context", "b"]).is_err());
        assert!(parse(&["-l", "a=b", "--all", "--to-context", "b"]).is_err());
        assert!(
            parse(&["web", "--to-context", "b", "--parallel", "2"]).is_err(),
            "--parallel needs a selection"
        );
        assert!(parse(&["--all", "--to-context", "b", "--parallel", "0"]).is_err());
        let config = kubeconfig();
        let r = resolved(
            &config,
            &["-l", "tier=db", "--to-context", "km-b", "--parallel", "3"],
        )
        .unwrap();
        assert_eq!(
            r.selection,
            Some(Selection {
                selector: Some("tier=db".into()),
                parallel: 3
            })
        );
        assert!(r.settings.selected && r.settings.name.is_empty());
        for (args, needle) in [
            (
                &["--all", "--to-context", "km-b", "--step"][..],
                "--step works on one",
            ),
            (
                &["--all", "--to-context", "km-b", "--rebuild-journal"][..],
                "--rebuild-journal works on one",
            ),
            (
                &["-l", " ", "--to-context", "km-b"][..],
                "-l needs a label selector",
            ),
        ] {
            let err = resolved(&config, args).unwrap_err();
            assert!(
                matches!(&err, Error::Usage(m) if m.contains(needle)),
                "{args:?}: {err}"
            );
        }
    }

    #[test]
    fn resolving_catches_what_clap_cannot() {
        let config = kubeconfig();
        let usage = |args: &[&str], needle: &str| {
            let err = resolved(&config, args).unwrap_err();
            assert!(
                matches!(&err, Error::Usage(m) if m.contains(needle)),
                "{args:?}: {err}"
            );
        };
        usage(
            &["web", "--to-context", "km-b", "--status", "--dry-run"],
            "--dry-run",
        );
        usage(
            &[
                "web",
                "--to-context",
                "km-b",
                "--storage-class-map",
                "a=b",
                "--storage-class-map",
                "a=c",
            ],
            "maps a twice",
        );
        usage(&["Web_1", "--to-context", "km-b"], "not a valid");
        usage(&["web", "--to-context", "km-a"], "are the same");
        let cleanup = resolved(
            &config,
            &[
                "web",
                "--to-context",
                "km-b",
                "--cleanup",
                "--restore-reclaim-policy",
            ],
        )
        .unwrap();
        assert_eq!(
            cleanup.settings.mode,
            Mode::Cleanup {
                restore_reclaim_policy: true
            }
        );
    }

    #[test]
    fn namespaces_default_once_from_the_flag_or_the_context() {
        let config = kubeconfig();
        let r = resolved(&config, &["web", "--to-context", "km-b"]).unwrap();
        assert_eq!(
            (
                r.settings.source_namespace.as_str(),
                r.settings.destination_namespace.as_str()
            ),
            ("db", "db"),
            "the source context's namespace, for both sides"
        );
        let r = resolved(
            &config,
            &[
                "web",
                "--to-context",
                "km-b",
                "-n",
                "x",
                "--to-namespace",
                "y",
            ],
        )
        .unwrap();
        assert_eq!(r.settings.source_namespace, "x");
        assert_eq!(r.settings.destination_namespace, "y");
    }

    #[test]
    fn unknown_contexts_fail_before_any_network_traffic() {
        let config = kubeconfig();
        let err = resolved(&config, &["web", "--to-context", "nope"]).unwrap_err();
        // A configuration error, as for every command; not a preflight refusal.
        assert_eq!(err.exit_code(), 1, "{err}");
        assert!(
            err.to_string()
                .contains("destination: context \"nope\" not found"),
            "{err}"
        );
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

    #[test]
    fn one_process_is_one_lease_holder() {
        let id = holder();
        assert_eq!(
            id.split('/').nth(1),
            Some(std::process::id().to_string().as_str())
        );
        assert_eq!(holder(), id, "one identity per process");
    }

    #[test]
    fn only_poll_turns_the_watches_off() {
        assert_eq!(observe_mode(Some("poll")), Observe::Poll);
        for watching in [None, Some("watch"), Some(""), Some("POLL")] {
            assert_eq!(observe_mode(watching), Observe::Watch, "{watching:?}");
        }
    }

    #[test]
    fn resume_commands_are_shell_safe() {
        assert_eq!(shell_quote("--context=km-a".as_ref()), "--context=km-a");
        assert_eq!(
            shell_quote("./check.sh && echo ok".as_ref()),
            "'./check.sh && echo ok'"
        );
        assert_eq!(shell_quote("it's".as_ref()), r"'it'\''s'");
        assert_eq!(shell_quote("".as_ref()), "''");
        assert_eq!(
            shell_quote(OsStr::from_bytes(b"/tmp/caf\xe9's")),
            r"$'/tmp/caf\xe9\'s'"
        );
    }

    /// The words bash reads from `command`, as bytes.
    fn shell_words(command: &str) -> Vec<std::ffi::OsString> {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {command}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}");
        out.stdout
            .split(|&b| b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| OsStr::from_bytes(w).to_os_string())
            .collect()
    }

    /// What `resume` does, parsed by bash and then by clap, resolved again.
    fn reparse(resume: &str) -> Resolved {
        let words = shell_words(resume);
        assert_eq!(&words[..2], ["kubectl", "migrate"], "{resume}");
        let (global, args) = parse_os(words.into_iter().skip(2)).unwrap();
        resolve(&global, &args).unwrap()
    }

    #[test]
    fn the_resume_command_resolves_to_the_same_settings() {
        let config = kubeconfig();
        for args in [
            &["web", "--to-context", "km-b"][..],
            &[
                "web",
                "--to-context",
                "km-b",
                "-n",
                "apps",
                "--to-namespace",
                "apps-new",
                "--batch",
                "2",
                "--timeout",
                "90s",
                "--request-timeout",
                "5s",
                "--health-check",
                "test \"$ORDINAL\" -ge 0 && echo 'ok'",
                "--storage-class-map",
                "fast=ssd",
                "--copy-dependencies",
                "--create-namespace",
                "--allow-unhealthy",
                "--step",
                "--yes",
                "-o",
                "json",
            ],
            &["web", "--to-context", "km-b", "--rollback", "--yes"],
            &[
                "-l",
                "tier in (db, cache),!legacy",
                "--to-context",
                "km-b",
                "--parallel",
                "2",
                "--yes",
            ],
            &["--all", "--to-context", "km-b", "--rollback", "--yes"],
            &["web", "--to-context", "km-b", "--batch", "auto", "--yes"],
        ] {
            let first = resolved(&config, args).unwrap();
            let resume = resume_command(&first);
            let again = reparse(&resume);
            assert_eq!(
                format!("{:?}", again.settings),
                format!("{:?}", first.settings),
                "{resume}"
            );
            assert_eq!(
                (again.yes, again.output, &again.selection),
                (first.yes, first.output, &first.selection),
                "{resume}"
            );
        }
    }

    /// argv that is not UTF-8 (a kubeconfig path) used to panic in the resume hint; it is quoted
    /// so that bash gives back the same bytes.
    #[test]
    fn a_kubeconfig_path_that_is_not_utf8_survives_the_resume_command() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OsStr::from_bytes(b"kube\xe9config"));
        std::fs::copy(kubeconfig().path(), &path).unwrap();
        let mut argv: Vec<std::ffi::OsString> =
            vec!["--kubeconfig".into(), path.clone().into_os_string()];
        argv.extend(["statefulset", "web", "--to-context", "km-b"].map(Into::into));
        let (global, args) = parse_os(argv).unwrap();
        let first = resolve(&global, &args).unwrap();
        let resume = resume_command(&first);
        assert!(resume.contains(r"kube\xe9config"), "{resume}");
        let again = reparse(&resume);
        assert_eq!(again.kubeconfig.as_deref(), Some(path.as_path()));
    }
}
