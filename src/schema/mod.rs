//! `kubectl migrate schema-diff`: compare API schemas across clusters and files, classify each
//! difference, compute the lowest common denominator (LCD), and check objects against them.
//!
//! Shape: [`Args`] -> [`validate`] (no cluster calls) -> [`run`]: load every source concurrently
//! (one CRD list call per cluster), then the pure core ([`diff`], [`lcd`], [`validate`]) and the
//! printers ([`report`]).
pub mod block_yaml;
pub mod diff;
pub mod json_list;
pub mod json_view;
pub mod lcd;
pub mod load;
pub mod model;
pub mod report;
pub mod stored;
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::ValueEnum;
use serde_json::Value;

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{self, Cluster};
use crate::error::{Error, Result};
use crate::output;
use diff::Class;
use load::{BuiltinRef, Selection};
use model::{ApiDef, SourceSchemas};
use report::{
    ApiReport, FindingReport, LcdReport, Presence, Report, SourceInfo, Summary, VersionPresence,
};

/// Exit codes, as `kubectl diff` has them.
pub mod exit {
    pub const SAME: u8 = 0;
    pub const DIFFERENT: u8 = 1;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Exit 1 when a breaking difference is found
    Breaking,
    /// Exit 1 on any difference, informational ones included
    Any,
    /// Always exit 0 unless there is an error
    None,
}

impl FailOn {
    fn threshold(self) -> Option<Class> {
        match self {
            FailOn::Breaking => Some(Class::Breaking),
            FailOn::Any => Some(Class::Informational),
            FailOn::None => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            FailOn::Breaking => "breaking",
            FailOn::Any => "any",
            FailOn::None => "none",
        }
    }
}

/// Compare API schemas across clusters and files.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// CRD names to compare, e.g. widgets.example.com (default: every CRD any source has)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,

    /// A source: a CRD manifest, a multi-document YAML or JSON file, a directory of them, an
    /// OpenAPI v3 document (as served at /openapi/v3/...), or - for stdin. Repeatable; every
    /// --context is a source too
    #[arg(short = 'f', long = "filename", value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub files: Vec<PathBuf>,

    /// Only CRDs of this API group (repeatable)
    #[arg(long, value_name = "GROUP")]
    pub group: Vec<String>,

    /// Compare a built-in type through each source's OpenAPI v3, e.g. apps/v1/statefulsets or
    /// core/v1/pods (repeatable)
    #[arg(long, value_name = "GROUP/VERSION/RESOURCE")]
    pub builtin: Vec<String>,

    /// Print, per CRD, a CRD manifest whose schema every source accepts (YAML; a JSON list with
    /// -o json). Dropped fields and the reasons where there is no LCD go to stderr
    #[arg(long)]
    pub lcd: bool,

    /// Check which sources accept the objects in FILE (repeatable), locally against each schema
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub object: Vec<PathBuf>,

    /// With --object: also ask each cluster, by a server-side dry-run create with
    /// fieldValidation=Strict
    #[arg(long, requires = "object")]
    pub server: bool,

    /// The lowest class that makes the exit code 1
    #[arg(long, value_enum, default_value_t = FailOn::Breaking, value_name = "CLASS")]
    pub fail_on: FailOn,

    /// Leave out findings of this rule, e.g. enum-widened or description-changed (repeatable;
    /// see the README for the list)
    #[arg(long, value_name = "RULE")]
    pub ignore: Vec<String>,

    /// The source the others are judged against (a context name or path; default: the first
    /// --context, else the first -f)
    #[arg(long, value_name = "SOURCE")]
    pub baseline: Option<String>,

    /// Show informational findings (description changes, ...) in the table too
    #[arg(long)]
    pub all: bool,
}

const AFTER_HELP: &str = "Sources are the --context clusters, then the -f files, in the order given. \
Classes are judged from the baseline: breaking = an object valid on the baseline can be rejected \
or lose data on another source; compatible = every other source accepts at least as much; \
informational = validation is unaffected.\n\n\
Exit codes (like kubectl diff): 0 no finding at or above --fail-on; 1 findings at or above it (with \
--lcd: an API has no LCD; with --object: a source rejects an object); 2 or more: an error (bad \
input, unknown context, unreachable cluster).\n\n\
Examples:\n  \
kubectl migrate schema-diff --context prod-eu --context prod-us\n  \
kubectl migrate schema-diff -f crds-v1.2/ -f crds-v1.3/ --fail-on any -o markdown\n  \
kubectl migrate schema-diff --context a --context b widgets.example.com --lcd > lcd.yaml\n  \
kubectl migrate schema-diff --context a --context b --builtin apps/v1/statefulsets\n  \
kubectl migrate schema-diff --context a --context b --object widget.yaml --server";

/// The flags, checked and resolved without touching a cluster or a file.
#[derive(Debug, Clone)]
pub struct Valid {
    pub contexts: Vec<String>,
    pub files: Vec<PathBuf>,
    pub selection: Selection,
    pub ignore: BTreeSet<String>,
    pub baseline: Option<String>,
}

/// Usage errors exit 2, as kubectl diff's errors do.
pub fn validate(global: &GlobalArgs, args: &Args) -> Result<Valid> {
    let usage = |m: String| Err(Error::Usage(m));
    let contexts = global.contexts.clone();
    let sources = contexts.len() + args.files.len();
    if args.object.is_empty() && sources < 2 {
        return usage(format!(
            "schema-diff needs at least two sources (--context and/or -f), got {sources}; with --object one is enough"
        ));
    }
    if sources == 0 {
        return usage("--object needs at least one source (--context or -f)".into());
    }
    if args.server && contexts.is_empty() {
        return usage("--server dry-runs on clusters: give at least one --context".into());
    }
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return usage("-f - (stdin) can be given only once".into());
    }
    if args.lcd && !args.object.is_empty() {
        return usage("--lcd and --object are separate modes; run them one at a time".into());
    }
    if args.lcd && global.output == OutputFormat::Markdown {
        return usage("--lcd prints CRD manifests: use -o yaml (the default) or -o json".into());
    }
    let mut labels: Vec<String> = contexts.clone();
    labels.extend(args.files.iter().map(|f| label_of(f)));
    let mut seen = BTreeSet::new();
    for l in &labels {
        if !seen.insert(l) {
            return usage(format!("source {l:?} is given twice"));
        }
    }
    if let Some(b) = &args.baseline
        && !labels.contains(b)
    {
        return usage(format!(
            "--baseline {b:?} is not one of the sources: {}",
            labels.join(", ")
        ));
    }
    let known: BTreeSet<&str> = diff::RULES.iter().map(|(id, _)| *id).collect();
    for rule in &args.ignore {
        if !known.contains(rule.as_str()) {
            return usage(format!(
                "--ignore {rule:?} is not a rule; rules: {}",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let builtins = args
        .builtin
        .iter()
        .map(|b| BuiltinRef::parse(b))
        .collect::<Result<Vec<_>, String>>()
        .map_err(Error::Usage)?;
    for name in &args.names {
        if !name.contains('.') {
            return usage(format!(
                "{name:?} is not a CRD name: use the full name, plural.group (e.g. widgets.example.com)"
            ));
        }
    }
    Ok(Valid {
        contexts,
        files: args.files.clone(),
        selection: Selection {
            names: args.names.clone(),
            groups: args.group.clone(),
            builtins,
        },
        ignore: args.ignore.iter().cloned().collect(),
        baseline: args.baseline.clone(),
    })
}

fn label_of(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// Runs the command and returns its exit code (0 same, 1 different); errors exit 2 or more.
pub async fn run(global: &GlobalArgs, args: &Args) -> Result<u8> {
    let valid = validate(global, args)?;
    let (sources, clusters) = load_sources(global, &valid).await?;
    if !args.object.is_empty() {
        let report = check_objects(&args.object, &sources, &clusters, args.server, global).await?;
        output::print(&report, global.output)?;
        return Ok(if report.rejected_anywhere() {
            exit::DIFFERENT
        } else {
            exit::SAME
        });
    }
    let baseline = match &valid.baseline {
        Some(b) => sources.iter().position(|s| &s.label == b).unwrap_or(0),
        None => 0,
    };
    if args.lcd {
        let comparison = Comparison::new(&sources, baseline, &valid, args.fail_on, Outcome::Lcd);
        return print_lcd(comparison, global.output);
    }
    let report = compare(&sources, baseline, &valid, args.fail_on, args.all);
    output::print(&report, global.output)?;
    Ok(if report.summary.failing > 0 {
        exit::DIFFERENT
    } else {
        exit::SAME
    })
}

/// Loads all sources at once: files on blocking threads, clusters over the network.
async fn load_sources(
    global: &GlobalArgs,
    valid: &Valid,
) -> Result<(Vec<SourceSchemas>, BTreeMap<String, Cluster>)> {
    // Resolve every context first: an unknown one fails before any network traffic.
    let targets = valid
        .contexts
        .iter()
        .map(|c| cluster::resolve(global.kubeconfig.as_deref(), Some(c)))
        .collect::<Result<Vec<_>>>()?;
    let cluster_loads = targets.iter().map(|t| {
        let selection = valid.selection.clone();
        async move {
            output::log(1, format!("reading context {} at {}", t.context, t.server));
            let cluster = t.connect(global.request_timeout).await?;
            let schemas = load::load_cluster(&cluster, &selection).await?;
            Ok::<_, Error>((schemas, cluster))
        }
    });
    let files = valid.files.clone();
    let selection = valid.selection.clone();
    let file_loads =
        tokio::task::spawn_blocking(move || load::load_file_sources(&files, &selection));
    let (clusters, files) = tokio::join!(futures::future::join_all(cluster_loads), file_loads);
    let files = files.map_err(|e| Error::Failed {
        message: format!("loading files: {e}"),
    })?;
    let mut sources = Vec::new();
    let mut connected = BTreeMap::new();
    for result in clusters {
        let (schemas, cluster) = result?;
        connected.insert(schemas.label.clone(), cluster);
        sources.push(schemas);
    }
    sources.extend(files?);
    for name in &valid.selection.names {
        if !sources.iter().any(|s| s.apis.contains_key(name)) {
            return Err(Error::Input(format!(
                "no source has a CRD named {name:?} (sources: {})",
                sources
                    .iter()
                    .map(|s| s.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    for b in &valid.selection.builtins {
        if !sources.iter().any(|s| s.apis.contains_key(&b.key())) {
            return Err(Error::Input(format!(
                "no source serves {} (is it spelled GROUP/VERSION/RESOURCE with the plural resource?)",
                b.key()
            )));
        }
    }
    Ok((sources, connected))
}

/// PURE: the whole comparison, from loaded sources to the report.
pub fn compare(
    sources: &[SourceSchemas],
    baseline: usize,
    valid: &Valid,
    fail_on: FailOn,
    show_informational: bool,
) -> Report {
    let mut comparison = Comparison::new(sources, baseline, valid, fail_on, Outcome::Findings);
    let apis: Vec<ApiReport> = comparison.run(|reports| reports.collect());
    let labels = comparison.labels;
    Report {
        schema_version: report::SCHEMA_VERSION,
        sources: sources
            .iter()
            .map(|s| SourceInfo {
                label: s.label.clone(),
                origin: s.origin.clone(),
            })
            .collect(),
        baseline: labels.get(baseline).cloned().unwrap_or_default(),
        fail_on: fail_on.as_str().to_string(),
        ignored_rules: valid.ignore.iter().cloned().collect(),
        summary: comparison.summary,
        apis,
        show_informational,
    }
}

/// PURE: the APIs of all sources compared one by one, in name order. Each API's definitions
/// are parsed for it and dropped after it (see [`stored`]); the APIs are compared on all cores
/// while the reports already done are consumed (printed) in order.
pub struct Comparison<'a> {
    sources: &'a [SourceSchemas],
    baseline: usize,
    valid: &'a Valid,
    threshold: Option<Class>,
    outcome: Outcome,
    labels: Vec<String>,
    names: Vec<&'a String>,
    /// Counts the reports consumed so far.
    pub summary: Summary,
}

/// What a [`Comparison`] works out for each API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The findings, for the report.
    Findings,
    /// The LCD alone: `--lcd` prints only that, and its exit code says only whether every API
    /// has one, so the findings would be worked out for nothing.
    Lcd,
}

/// Reports done ahead of the one being consumed, at most: enough to keep the cores busy, few
/// enough that they (LCD manifests included) take little memory.
const AHEAD: usize = 64;

impl<'a> Comparison<'a> {
    pub fn new(
        sources: &'a [SourceSchemas],
        baseline: usize,
        valid: &'a Valid,
        fail_on: FailOn,
        outcome: Outcome,
    ) -> Comparison<'a> {
        let names: BTreeSet<&String> = sources.iter().flat_map(|s| s.apis.keys()).collect();
        Comparison {
            sources,
            baseline,
            valid,
            threshold: fail_on.threshold(),
            outcome,
            labels: sources.iter().map(|s| s.label.clone()).collect(),
            names: names.into_iter().collect(),
            summary: Summary::default(),
        }
    }

    /// Hands `consume` the reports in name order, while worker threads (one per core) compare
    /// the APIs that follow. If `consume` stops early, the workers stop too.
    pub fn run<R>(&mut self, consume: impl FnOnce(&mut dyn Iterator<Item = ApiReport>) -> R) -> R {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(self.names.len());
        let mut summary = Summary::default();
        let threshold = self.threshold;
        let this = &*self;
        let claimed = std::sync::atomic::AtomicUsize::new(0);
        let claimed = &claimed;
        let result = if threads <= 1 {
            let mut reports = this
                .names
                .iter()
                .map(|name| this.compare_api(name))
                .inspect(|api| summary.count(api, threshold));
            consume(&mut reports)
        } else {
            std::thread::scope(|scope| {
                let (done, received) = std::sync::mpsc::sync_channel::<(usize, ApiReport)>(AHEAD);
                for _ in 0..threads {
                    let done = done.clone();
                    scope.spawn(move || {
                        loop {
                            let i = claimed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(name) = this.names.get(i) else {
                                break;
                            };
                            if done.send((i, this.compare_api(name))).is_err() {
                                break;
                            }
                        }
                    });
                }
                drop(done);
                // Reports arrive in about name order; the few early ones wait here.
                let mut early = BTreeMap::new();
                let mut next = 0;
                let mut reports = std::iter::from_fn(|| {
                    loop {
                        if let Some(api) = early.remove(&next) {
                            next += 1;
                            return Some(api);
                        }
                        let (i, api) = received.recv().ok()?;
                        early.insert(i, api);
                    }
                })
                .inspect(|api| summary.count(api, threshold));
                let result = consume(&mut reports);
                // Closes the channel, so that workers stop if `consume` stopped early.
                drop(reports);
                result
            })
        };
        self.summary = summary;
        result
    }

    fn compare_api(&self, name: &str) -> ApiReport {
        let stored: Vec<Option<&stored::StoredApi>> =
            self.sources.iter().map(|s| s.apis.get(name)).collect();
        // Sources often hold the very same CRD: parse it once.
        let mut parsed: Vec<std::borrow::Cow<'_, ApiDef>> = Vec::new();
        let mut which: Vec<Option<usize>> = Vec::with_capacity(stored.len());
        for (i, api) in stored.iter().enumerate() {
            let Some(api) = api else {
                which.push(None);
                continue;
            };
            let earlier = (0..i).find(|&j| stored[j].is_some_and(|e| e.same_crd_as(api)));
            which.push(Some(match earlier {
                Some(j) => which[j].expect("an earlier source has it"),
                None => {
                    parsed.push(api.def());
                    parsed.len() - 1
                }
            }));
        }
        let defs: Vec<Option<&ApiDef>> = which.iter().map(|w| w.map(|k| &*parsed[k])).collect();
        let labels = &self.labels;
        let first = defs.iter().flatten().next().expect("some source has it");
        let (findings, lcd) = match self.outcome {
            Outcome::Findings => {
                let findings = diff::diff_api(&defs, self.baseline)
                    .iter()
                    .filter(|f| !self.valid.ignore.contains(&f.rule()))
                    .map(|f| FindingReport::new(f, labels))
                    .collect();
                (findings, None)
            }
            Outcome::Lcd => {
                let l = lcd::lcd_api(&defs, labels);
                let lcd = LcdReport {
                    exists: l.conflicts.is_empty(),
                    dropped: l.dropped,
                    conflicts: l.conflicts,
                    notes: l.notes,
                    manifest: l.manifest,
                };
                (Vec::new(), Some(lcd))
            }
        };
        let presence = defs
            .iter()
            .zip(labels)
            .map(|(d, label)| Presence {
                source: label.clone(),
                present: d.is_some(),
                scope: d.map(|d| d.scope.clone()),
                versions: d
                    .map(|d| {
                        d.versions_by_priority()
                            .into_iter()
                            .map(|v| VersionPresence {
                                name: v.clone(),
                                served: d.versions[v].served,
                                storage: d.versions[v].storage,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        ApiReport {
            name: name.to_string(),
            group: first.group.clone(),
            kind: first.kind.clone(),
            builtin: first.builtin,
            presence,
            findings,
            lcd,
        }
    }
}

/// `--lcd`: the manifests on stdout, what was given up on stderr, one API at a time (the
/// manifests of 1,000 CRDs take hundreds of megabytes). Exit 1 when an API has none.
fn print_lcd(mut comparison: Comparison, format: OutputFormat) -> Result<u8> {
    let missing = std::cell::Cell::new(0);
    comparison.run(|reports| write_lcd(reports, format, &missing))?;
    Ok(if missing.get() > 0 {
        exit::DIFFERENT
    } else {
        exit::SAME
    })
}

/// The LCD manifests of `reports` on stdout, what was given up on stderr; counts in `missing`
/// the APIs that have none.
fn write_lcd(
    reports: &mut dyn Iterator<Item = ApiReport>,
    format: OutputFormat,
    missing: &std::cell::Cell<usize>,
) -> Result<()> {
    let manifests = reports.filter_map(|api| {
        let lcd = api.lcd?;
        for d in &lcd.dropped {
            output::warn(format!(
                "{}: dropped {} {} (declared in {}): {}",
                api.name,
                d.version,
                d.path,
                d.sources.join(", "),
                d.reason
            ));
        }
        for n in &lcd.notes {
            output::log(0, format!("{}: {n}", api.name));
        }
        if !lcd.exists {
            missing.set(missing.get() + 1);
            for c in &lcd.conflicts {
                let at = if c.version.is_empty() {
                    String::new()
                } else {
                    format!(" {} {}", c.version, c.path)
                };
                output::warn(format!("{}: no LCD{at}: {}", api.name, c.reason));
            }
            return None;
        }
        if lcd.manifest.is_none() {
            output::log(
                0,
                format!(
                    "{}: built-in type; its LCD is reported, not printed as a CRD",
                    api.name
                ),
            );
        }
        lcd.manifest
    });
    use std::io::Write;
    // Stdout is line-buffered: a line of JSON or YAML would cost a write each.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if format == OutputFormat::Json {
        // As serde_json pretty-prints `{"apiVersion": "v1", "items": [...], "kind": "List"}`,
        // item by item.
        out.write_all(b"{\n  \"apiVersion\": \"v1\",\n  \"items\": [")?;
        let mut item = Vec::new();
        let mut first = true;
        for m in manifests {
            item.clear();
            item.extend_from_slice(if first { b"\n    " } else { b",\n    " });
            m.push_json_pretty(&mut item, 2);
            out.write_all(&item)?;
            first = false;
        }
        if !first {
            out.write_all(b"\n  ")?;
        }
        out.write_all(b"],\n  \"kind\": \"List\"\n}\n")?;
    } else {
        for m in manifests {
            let text =
                serde_saphyr::to_string(&m.to_value()).map_err(|e| Error::Output(e.to_string()))?;
            write!(out, "---\n{text}")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `--object`: validate each object locally against each source, and with --server by a
/// dry-run create on each cluster.
async fn check_objects(
    files: &[PathBuf],
    sources: &[SourceSchemas],
    clusters: &BTreeMap<String, Cluster>,
    server: bool,
    global: &GlobalArgs,
) -> Result<report::ObjectReport> {
    let mut objects = Vec::new();
    for file in files {
        let name = file.display().to_string();
        let text =
            std::fs::read_to_string(file).map_err(|e| Error::Input(format!("{name}: {e}")))?;
        let docs = load::parse_documents(&text, &name)?;
        if docs.is_empty() {
            return Err(Error::Input(format!("{name}: contains no objects")));
        }
        for (i, doc) in docs.iter().enumerate() {
            let at = if docs.len() > 1 {
                format!("{name} (document {})", i + 1)
            } else {
                name.clone()
            };
            let (group, version, kind) = type_of(doc).ok_or_else(|| {
                Error::Input(format!(
                    "{at}: not a Kubernetes object (apiVersion and kind are required)"
                ))
            })?;
            let object_name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("(no name)");
            let mut results = Vec::new();
            for source in sources {
                let api = source
                    .apis
                    .values()
                    .find(|a| a.group == group && a.kind == kind && a.served.contains(&version))
                    .map(stored::StoredApi::def);
                let mut verdict = report::SourceVerdict {
                    source: source.label.clone(),
                    local: "unknown-api".into(),
                    local_reasons: vec![format!(
                        "{kind} {} is not served here",
                        api_version(&group, &version)
                    )],
                    unchecked: Vec::new(),
                    server: None,
                    server_message: None,
                };
                if let Some(api) = &api {
                    let outcome = validate::validate_object(&api.versions[&version].schema, doc);
                    verdict.local = if outcome.is_valid() {
                        "accepted"
                    } else {
                        "rejected"
                    }
                    .into();
                    verdict.local_reasons =
                        outcome.violations.iter().map(ToString::to_string).collect();
                    verdict.unchecked = outcome.unchecked;
                }
                if server {
                    match clusters.get(&source.label) {
                        Some(cluster) => {
                            let (state, message) =
                                dry_run_create(cluster, doc, api.as_deref(), global).await?;
                            verdict.server = Some(state);
                            verdict.server_message = message;
                        }
                        None => verdict.server = Some("not-a-cluster".into()),
                    }
                }
                results.push(verdict);
            }
            objects.push(report::ObjectResult {
                object: format!("{kind}/{object_name}"),
                file: at,
                results,
            });
        }
    }
    Ok(report::ObjectReport {
        schema_version: report::SCHEMA_VERSION,
        objects,
    })
}

fn type_of(doc: &Value) -> Option<(String, String, String)> {
    let api_version = doc.get("apiVersion")?.as_str()?;
    let kind = doc.get("kind")?.as_str()?.to_string();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    Some((group, version, kind))
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// A server-side dry-run create with fieldValidation=Strict: ("accepted"|"rejected", message).
async fn dry_run_create(
    cluster: &Cluster,
    doc: &Value,
    api: Option<&ApiDef>,
    global: &GlobalArgs,
) -> Result<(String, Option<String>)> {
    let Some((group, version, kind)) = type_of(doc) else {
        return Ok(("rejected".into(), Some("no apiVersion/kind".into())));
    };
    let Some(api) = api else {
        return Ok(("rejected".into(), Some(format!("{kind} is not served"))));
    };
    let mut path = String::from(if group.is_empty() { "/api/" } else { "/apis/" });
    path += &api_version(&group, &version);
    if api.scope == "Namespaced" {
        let ns = doc
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| cluster::namespace_or_default(global.namespace.as_deref(), cluster));
        path += &format!("/namespaces/{ns}");
    }
    path += &format!(
        "/{}?dryRun=All&fieldValidation=Strict&fieldManager=kubectl-migrate",
        api.plural
    );
    let body = serde_json::to_vec(doc).map_err(|e| Error::Failed {
        message: e.to_string(),
    })?;
    let request = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(body)
        .map_err(|e| Error::Failed {
            message: e.to_string(),
        })?;
    match cluster.client.request_text(request).await {
        Ok(_) => Ok(("accepted".into(), None)),
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            Ok(("rejected".into(), Some(status.message.clone())))
        }
        Err(e) => Err(cluster.api_error("dry-run create", e)),
    }
}
