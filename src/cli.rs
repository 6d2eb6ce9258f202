//! The parts of the command line that every subcommand shares: the kubectl-style flags
//! ([`GlobalArgs`]), the output and colour choices, and value parsers. The root command and each
//! subcommand's own flags live in `crate::commands`; nothing below the commands layer sees clap.
//! This module uses no other layer but `cluster` (for the kubeconfig).
//!
//! Every subcommand flattens [`GlobalArgs`], because kubectl does not pass its own global flags
//! to plugins: `kubectl --context x migrate` is rejected by kubectl, so users write
//! `kubectl migrate ... --context x` and we parse it ourselves.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use clap::{Args, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

use crate::cluster::{self, Target};

/// The kubectl-style flags that every subcommand understands.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: the current context). schema-diff takes it
    /// several times, once per cluster to compare
    #[arg(long = "context", global = true, value_name = "NAME", action = clap::ArgAction::Append, add = ArgValueCandidates::new(context_candidates))]
    pub contexts: Vec<String>,

    /// The namespace (default: the context's namespace, else "default")
    #[arg(short = 'n', long, global = true, value_name = "NS", add = ArgValueCandidates::new(namespace_candidates))]
    pub namespace: Option<String>,

    /// When to colour output; NO_COLOR in the environment means never, unless "always" is given
    #[arg(long, global = true, value_enum, default_value_t = ColorMode::Auto, value_name = "WHEN")]
    pub color: ColorMode,

    /// More detail on stderr, as kubectl's -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6
    /// every API request (method, URL, status, time)
    #[arg(short = 'v', long = "v", visible_alias = "verbose", global = true, value_name = "LEVEL",
          num_args = 0..=1, require_equals = false, default_missing_value = "1", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=10))]
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

    /// The kubeconfig context of the one cluster a command talks to, resolved without the
    /// network: an unknown context fails here.
    pub fn target(&self) -> crate::error::Result<Target> {
        cluster::resolve(self.kubeconfig.as_deref(), self.context()?)
    }

    /// The namespace to work in on `target`: -n, else the context's own (the one place where
    /// that default is taken).
    pub fn namespace_for(&self, target: &Target) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| target.namespace.clone())
    }
}

/// kubectl writes a verbosity as `-v=6`; we also take `-v` and `-vv` (one and two): the
/// repeated form becomes `-v=N` before clap sees it, so that `-v` can carry a level.
pub fn expand_verbosity(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.into_iter()
        .map(|arg| match arg.to_str() {
            Some(a) if a.len() > 2 && a.starts_with('-') && a[1..].bytes().all(|b| b == b'v') => {
                format!("-v={}", a.len() - 1).into()
            }
            _ => arg,
        })
        .collect()
}

/// The words of the command line being completed (kubectl's plugin completion), so that
/// candidates follow the --kubeconfig, --context and -n typed before the cursor.
static COMPLETING: OnceLock<Vec<String>> = OnceLock::new();

/// Records the words being completed (see [`context_candidates`] and the others).
pub fn completing(words: &[std::ffi::OsString]) {
    let _ = COMPLETING.set(
        words
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect(),
    );
}

/// The values typed for a flag in the words being completed (`--flag v`, `--flag=v`, `-f v`).
fn typed(long: &str, short: Option<char>) -> Vec<String> {
    let words = COMPLETING.get().map(Vec::as_slice).unwrap_or_default();
    let long = format!("--{long}");
    let short = short.map(|c| format!("-{c}"));
    let mut values = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if let Some(v) = word.strip_prefix(&format!("{long}=")) {
            values.push(v.to_string());
        } else if (word == &long || short.as_ref() == Some(word))
            && let Some(v) = words.get(i + 1)
            && !v.is_empty()
        {
            values.push(v.clone());
        }
    }
    values
}

/// The last value typed for a flag, as clap takes it.
fn last_typed(long: &str, short: Option<char>) -> Option<String> {
    typed(long, short).pop()
}

/// Asks the cluster of `context` (or the current one) in `kubeconfig`; what `ask` returns,
/// nothing when it cannot be reached in a few seconds (a completion must not hang a shell).
fn ask_cluster<F, Fut>(kubeconfig: Option<String>, context: Option<String>, ask: F) -> Vec<String>
where
    F: FnOnce(cluster::Cluster, String) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let Ok(target) = cluster::resolve(kubeconfig.as_deref().map(Path::new), context.as_deref())
    else {
        return Vec::new();
    };
    let namespace = last_typed("namespace", Some('n')).unwrap_or_else(|| target.namespace.clone());
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    runtime.block_on(async {
        let limit = Duration::from_secs(3);
        match tokio::time::timeout(limit, target.connect(limit)).await {
            Ok(Ok(cluster)) => tokio::time::timeout(limit, ask(cluster, namespace))
                .await
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    })
}

/// The names of the objects `api` lists.
async fn names<K>(api: kube::Api<K>) -> Vec<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    api.list_metadata(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .collect()
        })
        .unwrap_or_default()
}

fn candidates(names: Vec<String>) -> Vec<CompletionCandidate> {
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// Completion candidates for --context: the contexts of the kubeconfig in use.
pub fn context_candidates() -> Vec<CompletionCandidate> {
    let kubeconfig = last_typed("kubeconfig", None);
    cluster::load_kubeconfig(kubeconfig.as_deref().map(Path::new))
        .map(|(k, _)| candidates(k.contexts.into_iter().map(|c| c.name).collect()))
        .unwrap_or_default()
}

/// Completion candidates for --to-context: the contexts of the destination's kubeconfig.
pub fn to_context_candidates() -> Vec<CompletionCandidate> {
    let kubeconfig = last_typed("to-kubeconfig", None).or_else(|| last_typed("kubeconfig", None));
    cluster::load_kubeconfig(kubeconfig.as_deref().map(Path::new))
        .map(|(k, _)| candidates(k.contexts.into_iter().map(|c| c.name).collect()))
        .unwrap_or_default()
}

/// Completion candidates for -n: the namespaces of the (first) --context's cluster.
pub fn namespace_candidates() -> Vec<CompletionCandidate> {
    let context = typed("context", None).into_iter().next();
    candidates(ask_cluster(
        last_typed("kubeconfig", None),
        context,
        |c, _| {
            names(kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(
                c.client,
            ))
        },
    ))
}

/// Completion candidates for --to-namespace: the namespaces of the destination.
pub fn to_namespace_candidates() -> Vec<CompletionCandidate> {
    let kubeconfig = last_typed("to-kubeconfig", None).or_else(|| last_typed("kubeconfig", None));
    candidates(ask_cluster(
        kubeconfig,
        last_typed("to-context", None),
        |c, _| {
            names(kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(
                c.client,
            ))
        },
    ))
}

/// Completion candidates for a StatefulSet's name: those in -n of --context.
pub fn statefulset_candidates() -> Vec<CompletionCandidate> {
    candidates(ask_cluster(
        last_typed("kubeconfig", None),
        last_typed("context", None),
        |c, namespace| {
            names(
                kube::Api::<k8s_openapi::api::apps::v1::StatefulSet>::namespaced(
                    c.client, &namespace,
                ),
            )
        },
    ))
}

/// Completion candidates for schema-diff's CRD names: those of every --context typed.
pub fn crd_candidates() -> Vec<CompletionCandidate> {
    let mut contexts: Vec<Option<String>> = typed("context", None).into_iter().map(Some).collect();
    if contexts.is_empty() {
        contexts.push(None);
    }
    let mut all = std::collections::BTreeSet::new();
    for context in contexts {
        all.extend(ask_cluster(last_typed("kubeconfig", None), context, |c, _| {
            names(kube::Api::<
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            >::all(c.client))
        }));
    }
    candidates(all.into_iter().collect())
}

/// The format of the data a command prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Json,
    Yaml,
    /// A Markdown table, for pull-request comments (reports only).
    Markdown,
}

/// `-o` of the commands that print data: table, json or yaml.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format for data on stdout
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DataFormat::Table, global = true)]
    pub format: DataFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DataFormat {
    Table,
    Json,
    Yaml,
}

/// `-o` of the commands that print a report: also markdown, for pull-request comments.
#[derive(Debug, Clone, Args)]
pub struct ReportOutputArgs {
    /// Output format for data on stdout
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Yaml,
    /// A Markdown table, for pull-request comments
    Markdown,
}

impl OutputArgs {
    pub fn format(&self) -> OutputFormat {
        match self.format {
            DataFormat::Table => OutputFormat::Table,
            DataFormat::Json => OutputFormat::Json,
            DataFormat::Yaml => OutputFormat::Yaml,
        }
    }
}

impl ReportOutputArgs {
    pub fn format(&self) -> OutputFormat {
        match self.format {
            ReportFormat::Table => OutputFormat::Table,
            ReportFormat::Json => OutputFormat::Json,
            ReportFormat::Yaml => OutputFormat::Yaml,
            ReportFormat::Markdown => OutputFormat::Markdown,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorMode {
    Auto,
    Always,
    Never,
}

/// Parses durations the way kubectl's --request-timeout does (see [`crate::duration::parse`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    crate::duration::parse(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_vs_become_a_level() {
        let words = |w: &[&str]| -> Vec<std::ffi::OsString> { w.iter().map(Into::into).collect() };
        assert_eq!(
            super::expand_verbosity(words(&[
                "x", "-vv", "-vvv", "-v", "-v=6", "--v=6", "-vx", "--vv"
            ])),
            words(&["x", "-v=2", "-v=3", "-v", "-v=6", "--v=6", "-vx", "--vv"])
        );
    }
}
