//! schema-diff's domain: compare API schemas across clusters and files, classify each
//! difference, compute the lowest common denominator (LCD), and check objects against them.
//!
//! A [`Request`] and a [`Mode`] (resolved by the commands layer) -> [`run`]: [`load_sources`]
//! (every source at once, one CRD list call per cluster) -> the pure core ([`diff`], [`lcd`],
//! [`validate`]) -> an [`Outcome`] of data ([`report`], LCD manifests, proofs, witness manifests)
//! that the commands layer prints and writes. `--watch` is [`watch::watch`]: the same comparison
//! kept up to date, with events for a listener.
pub mod block_yaml;
// The fuzz targets drive the diff, the LCD and the stored form directly; cargo-fuzz builds with
// `--cfg fuzzing`. Everywhere else they stay private, so the dead-code lint sees them.
#[cfg(fuzzing)]
pub mod diff;
#[cfg(not(fuzzing))]
pub(crate) mod diff;
mod finding;
pub mod json_list;
mod json_view;
#[cfg(fuzzing)]
pub mod lcd;
#[cfg(not(fuzzing))]
mod lcd;
pub mod load;
pub mod model;
pub mod parse;
mod pattern;
mod prove;
pub mod source;
pub mod witness;
pub use lcd::Manifest as LcdManifest;
pub use prove::{Proofs, WitnessFile};
pub use stored::StoredApi;
pub mod cel;
pub(crate) mod report;
#[cfg(fuzzing)]
pub mod stored;
#[cfg(not(fuzzing))]
mod stored;
pub mod validate;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::{Cluster, Target};
use crate::error::{Error, Result};
use crate::manifest;
use diff::Class;
use load::Selection;
use model::ApiDef;
use report::{
    ApiReport, FindingReport, LcdReport, Presence, Report, SourceInfo, Summary, VersionPresence,
};
use source::SourceSchemas;

/// Exit codes, as `kubectl diff` has them.
pub mod exit {
    pub const SAME: u8 = 0;
    pub const DIFFERENT: u8 = 1;
    /// With --prove: a server contradicted the local judgement of a witness (a defect of
    /// this tool, reported loudly).
    pub const DEFECT: u8 = 5;
}

/// `--fail-on`: the classes whose findings make the exit code 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailOn(BTreeSet<Class>);

impl Default for FailOn {
    /// Breaking findings only.
    fn default() -> FailOn {
        FailOn([Class::Breaking].into())
    }
}

impl FailOn {
    /// The words `--fail-on` takes besides the class names, with what each means.
    pub const WORDS: [(&'static str, &'static str); 6] = [
        ("breaking", "an object the baseline accepts is rejected"),
        (
            "unproven",
            "a CEL rule added may reject objects but was not shown to; breaking findings too",
        ),
        (
            "changes-stored-data",
            "an object is stored with other values (a default removed or changed)",
        ),
        (
            "changes-selection",
            "a field selector is refused (a selectable field removed)",
        ),
        ("any", "any difference, informational ones included"),
        ("none", "no finding: exit 0 unless there is an error"),
    ];

    /// The classes one `--fail-on` word names; `None` when it is not one.
    fn classes(word: &str) -> Option<Vec<Class>> {
        Some(match word {
            "breaking" => vec![Class::Breaking],
            // An unproven finding may be a breaking one: failing on it alone would pass what
            // is known to break (and `unproven` has always failed on both).
            "unproven" => vec![Class::Unproven, Class::Breaking],
            "changes-stored-data" => vec![Class::ChangesStoredData],
            "changes-selection" => vec![Class::ChangesSelection],
            "any" => Class::ALL.to_vec(),
            "none" => Vec::new(),
            _ => return None,
        })
    }

    /// PURE: `--fail-on` as given: repeated, each a comma-separated list of words.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> std::result::Result<FailOn, String> {
        let words: Vec<&str> = values
            .iter()
            .flat_map(|v| v.as_ref().split(','))
            .map(str::trim)
            .collect();
        let mut set = BTreeSet::new();
        for word in &words {
            let classes = FailOn::classes(word).ok_or_else(|| {
                format!(
                    "--fail-on {word:?} is not a class; use {} (comma-separated or repeated)",
                    FailOn::WORDS.map(|(w, _)| w).join(", ")
                )
            })?;
            set.extend(classes);
        }
        if words.contains(&"none") && words.len() > 1 {
            return Err(
                "--fail-on none fails on nothing; it does not go with other classes".into(),
            );
        }
        Ok(FailOn(set))
    }

    /// Whether a finding of `class` makes the exit code 1.
    pub fn fails(&self, class: Class) -> bool {
        self.0.contains(&class)
    }

    /// As the report says it: `none`, `any`, or the classes, worst first, comma-separated
    /// (`unproven` standing for itself with `breaking`, as given).
    pub fn words(&self) -> String {
        if self.0.is_empty() {
            return "none".into();
        }
        if self.0.len() == Class::ALL.len() {
            return "any".into();
        }
        let mut rest = self.0.clone();
        let mut out = Vec::new();
        for (word, _) in FailOn::WORDS {
            let Some(classes) = FailOn::classes(word) else {
                continue;
            };
            if !classes.is_empty() && classes.iter().all(|c| rest.contains(c)) {
                if word == "breaking" && rest.contains(&Class::Unproven) {
                    continue;
                }
                for c in &classes {
                    rest.remove(c);
                }
                out.push(word.to_string());
            }
        }
        out.extend(rest.iter().rev().map(|c| c.as_str().to_string()));
        out.join(",")
    }
}

/// What to compare and how, resolved from the flags without touching a cluster or a file.
#[derive(Debug, Clone)]
pub struct Request {
    /// The --context clusters, in order (their kubeconfig contexts, resolved).
    pub clusters: Vec<Target>,
    /// Per cluster label, the namespace --object --server dry-runs in (-n, else the context's).
    pub namespaces: BTreeMap<String, String>,
    pub request_timeout: Duration,
    pub files: Vec<PathBuf>,
    pub selection: Selection,
    pub ignore: BTreeSet<String>,
    /// The label of the source the others are judged against (default: the first).
    pub baseline: Option<String>,
    pub fail_on: FailOn,
    /// CRDs per LIST page (0: one unpaged LIST).
    pub chunk_size: usize,
    /// Build a witness object for every breaking finding (CEL rules added are evaluated
    /// either way).
    pub witnesses: bool,
}

impl Request {
    /// The index of the baseline among `sources`.
    pub fn baseline_index(&self, sources: &[SourceSchemas]) -> usize {
        self.baseline
            .as_ref()
            .and_then(|b| sources.iter().position(|s| &s.label == b))
            .unwrap_or(0)
    }

    pub(crate) fn namespace_of(&self, label: &str) -> &str {
        self.namespaces
            .get(label)
            .map(String::as_str)
            .unwrap_or("default")
    }
}

/// Loads all sources at once: files on blocking threads, clusters over the network.
pub async fn load_sources(
    request: &Request,
) -> Result<(Vec<SourceSchemas>, BTreeMap<String, Cluster>)> {
    let cluster_loads = request.clusters.iter().map(|t| {
        let selection = request.selection.clone();
        async move {
            let cluster = t.connect(request.request_timeout).await?;
            let schemas = load::load_cluster(&cluster, &selection, request.chunk_size).await?;
            Ok::<_, Error>((schemas, cluster))
        }
    });
    let files = request.files.clone();
    let selection = request.selection.clone();
    let file_loads = blocking(move || load::load_file_sources(&files, &selection));
    let (clusters, files) = tokio::join!(futures::future::join_all(cluster_loads), file_loads);
    let mut sources = Vec::new();
    let mut connected = BTreeMap::new();
    for result in clusters {
        let (schemas, cluster) = result?;
        connected.insert(schemas.label.clone(), cluster);
        sources.push(schemas);
    }
    sources.extend(files?);
    for name in &request.selection.names {
        if !sources.iter().any(|s| s.apis.contains_key(name)) {
            return Err(Error::NotFound(format!(
                "no source has a CRD named {name:?} (sources: {})",
                sources
                    .iter()
                    .map(|s| s.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    for b in &request.selection.builtins {
        if !sources.iter().any(|s| s.apis.contains_key(&b.key())) {
            return Err(Error::NotFound(format!(
                "no source serves {} (is it spelled GROUP/VERSION/RESOURCE with the plural resource?)",
                b.key()
            )));
        }
    }
    Ok((sources, connected))
}

/// Runs `work` on a thread where blocking is fine. A panic there is a bug and stays a panic,
/// with its own message, rather than becoming an error that says less.
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels a blocking task, and then nothing waits here.
            Err(e) => unreachable!("a blocking task was cancelled: {e}"),
        },
    }
}

/// What schema-diff works out from the sources (`--watch` is [`watch::watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The report of the differences.
    Compare {
        /// The report's table shows informational findings too.
        show_informational: bool,
        /// Dry-run each witness on the clusters of the baseline and of the other source.
        prove: bool,
        /// Hand back each witness as a manifest to write.
        witness_files: bool,
    },
    /// Per API, a CRD manifest that every source accepts.
    Lcd,
    /// Which sources accept the objects in `files`; with `server`, each cluster is asked too,
    /// by a dry-run create.
    Objects { files: Vec<PathBuf>, server: bool },
}

/// What [`run`] found, for the commands layer to show.
pub enum Outcome {
    Compared(Compared),
    /// The LCDs, worked out while they are consumed.
    Lcd(Lcds),
    Objects(report::ObjectReport),
}

/// [`Mode::Compare`]'s outcome.
#[derive(Debug)]
pub struct Compared {
    pub report: Report,
    /// When asked to prove: what the servers said of the witnesses.
    pub proofs: Option<Proofs>,
    /// When asked for them: one manifest per witness.
    pub witness_files: Vec<WitnessFile>,
}

impl Compared {
    /// 5 when a server contradicted the local judgement of a witness (a defect of this tool),
    /// else 1 with findings of a class --fail-on names, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.proofs.as_ref().is_some_and(|p| !p.defects.is_empty()) {
            exit::DEFECT
        } else if self.report.summary.failing > 0 {
            exit::DIFFERENT
        } else {
            exit::SAME
        }
    }
}

/// [`Mode::Lcd`]'s outcome: the sources, whose LCDs are worked out one API at a time while they
/// are consumed (the manifests of 1,000 CRDs take hundreds of megabytes).
pub struct Lcds {
    sources: Vec<SourceSchemas>,
    request: Request,
}

/// How many APIs an LCD run went through, and how many of them have no LCD.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LcdSummary {
    pub apis: usize,
    pub missing: usize,
}

impl LcdSummary {
    /// 1 when some API has no LCD.
    pub fn exit_code(self) -> u8 {
        if self.missing > 0 {
            exit::DIFFERENT
        } else {
            exit::SAME
        }
    }
}

impl Lcds {
    /// Hands `consume` each API's report, with its LCD, in name order, while the APIs after it
    /// are compared on all cores; counts the APIs it consumed that have none.
    pub fn consume<R>(
        &self,
        consume: impl FnOnce(&mut dyn Iterator<Item = ApiReport>) -> R,
    ) -> (R, LcdSummary) {
        let mut summary = LcdSummary::default();
        let mut comparison = Comparison::new(&self.sources, &self.request, Work::Lcd);
        let result = comparison.run(|reports| {
            let mut counted = reports.inspect(|api| {
                summary.apis += 1;
                if api.lcd.as_ref().is_some_and(|l| !l.exists) {
                    summary.missing += 1;
                }
            });
            consume(&mut counted)
        });
        (result, summary)
    }
}

/// schema-diff's one call: reads every source at once and works out what `mode` asks for.
pub async fn run(request: &Request, mode: &Mode) -> Result<Outcome> {
    let (sources, clusters) = load_sources(request).await?;
    Ok(match mode {
        Mode::Objects { files, server } => {
            Outcome::Objects(check_objects(files, *server, &sources, &clusters, request).await?)
        }
        Mode::Lcd => Outcome::Lcd(Lcds {
            sources,
            request: request.clone(),
        }),
        Mode::Compare {
            show_informational,
            prove,
            witness_files,
        } => {
            let mut report = compare(&sources, request, *show_informational);
            let proofs = if *prove {
                Some(prove::prove(&mut report, &sources, &clusters, request).await?)
            } else {
                None
            };
            let witness_files = if *witness_files {
                prove::witness_files(&report)?
            } else {
                Vec::new()
            };
            Outcome::Compared(Compared {
                report,
                proofs,
                witness_files,
            })
        }
    })
}

/// PURE: the whole comparison, from loaded sources to the report.
pub fn compare(sources: &[SourceSchemas], request: &Request, show_informational: bool) -> Report {
    compare_for(sources, request, show_informational, Work::Findings)
}

/// PURE: [`compare`], working out `work` for each API (`Both` puts each API's LCD in
/// its report too).
pub fn compare_for(
    sources: &[SourceSchemas],
    request: &Request,
    show_informational: bool,
    work: Work,
) -> Report {
    let baseline = request.baseline_index(sources);
    let mut comparison = Comparison::new(sources, request, work);
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
        fail_on: request.fail_on.words(),
        ignored_rules: request.ignore.iter().cloned().collect(),
        summary: comparison.summary,
        apis,
        show_informational,
    }
}

/// PURE: one API compared across `sources` (findings and LCD), as `--watch` recomputes the API a
/// change touched; `None` when no source has it.
pub fn compare_one(sources: &[SourceSchemas], request: &Request, name: &str) -> Option<ApiReport> {
    let comparison = Comparison::new(sources, request, Work::Both);
    sources
        .iter()
        .any(|s| s.apis.contains_key(name))
        .then(|| comparison.compare_api(name))
}

/// PURE: the APIs of all sources compared one by one, in name order. Each API's definitions
/// are parsed for it and dropped after it (see [`stored`]); the APIs are compared on all cores
/// while the reports already done are consumed (printed) in order.
pub struct Comparison<'a> {
    sources: &'a [SourceSchemas],
    baseline: usize,
    request: &'a Request,
    work: Work,
    labels: Vec<String>,
    names: Vec<&'a String>,
    /// Counts the reports consumed so far.
    pub summary: Summary,
}

/// What a [`Comparison`] works out for each API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The findings, for the report.
    Findings,
    /// The LCD alone: `--lcd` prints only that, and its exit code says only whether every API
    /// has one, so the findings would be worked out for nothing.
    Lcd,
    /// Both: `--watch` follows the findings and the LCD of every API.
    Both,
}

/// Reports done ahead of the one being consumed, at most: enough to keep the cores busy, few
/// enough that they (LCD manifests included) take little memory.
const AHEAD: usize = 64;

impl<'a> Comparison<'a> {
    pub fn new(sources: &'a [SourceSchemas], request: &'a Request, work: Work) -> Comparison<'a> {
        let names: BTreeSet<&String> = sources.iter().flat_map(|s| s.apis.keys()).collect();
        Comparison {
            sources,
            baseline: request.baseline_index(sources),
            request,
            work,
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
        let this = &*self;
        let fail_on = &self.request.fail_on;
        let claimed = std::sync::atomic::AtomicUsize::new(0);
        let claimed = &claimed;
        let result = if threads <= 1 {
            let mut reports = this
                .names
                .iter()
                .map(|name| this.compare_api(name))
                .inspect(|api| summary.count(api, fail_on));
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
                .inspect(|api| summary.count(api, fail_on));
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
        let findings = if self.work == Work::Lcd {
            Vec::new()
        } else {
            let ignored = |f: &diff::Finding| self.request.ignore.contains(&f.rule());
            let mut findings = diff::diff_api(&defs, self.baseline);
            findings.retain(|f| !ignored(f));
            witness::attach(&defs, self.baseline, &mut findings, self.request.witnesses);
            // A CEL rule found undecided has another rule id now.
            findings.retain(|f| !ignored(f));
            findings
                .iter()
                .map(|f| FindingReport::new(f, labels))
                .collect()
        };
        let lcd = (self.work != Work::Findings).then(|| {
            let l = lcd::lcd_api(&defs, labels);
            LcdReport {
                exists: l.conflicts.is_empty(),
                dropped: l.dropped,
                conflicts: l.conflicts,
                notes: l.notes,
                manifest: l.manifest,
            }
        });
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

/// `--object`: validate each object locally against each source, and with --server by a
/// dry-run create on each cluster.
async fn check_objects(
    files: &[PathBuf],
    server: bool,
    sources: &[SourceSchemas],
    clusters: &BTreeMap<String, Cluster>,
    request: &Request,
) -> Result<report::ObjectReport> {
    let mut objects = Vec::new();
    for file in manifest::expand_paths(files)? {
        let input = manifest::read_text(&file)?;
        let name = input.label;
        let found = manifest::objects(&input.text, &name)?;
        if found.is_empty() {
            return Err(Error::input(&name, "contains no objects"));
        }
        for manifest::Object { at, value } in found {
            // As kubectl sends it (Go writes the number 1.0 as 1): the API server compares enum
            // members inside lists and objects by their type too, so `[1.0]` sent as read
            // would be refused where kubectl's `[1]` is accepted.
            let value = parse::canonical_numbers(value);
            let doc = &value;
            let (group, version, kind) = type_of(doc).ok_or_else(|| {
                Error::input(
                    &at,
                    "not a Kubernetes object (apiVersion and kind are required)",
                )
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
                            let namespace = request.namespace_of(&source.label);
                            let (state, message, _) =
                                dry_run_create(cluster, &at, doc, api.as_deref(), namespace)
                                    .await?;
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
        schema_version: report::OBJECTS_SCHEMA_VERSION,
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

/// The URL path of `api`'s objects at `version` (in `namespace` where it is namespaced).
fn collection_path(api: &ApiDef, group: &str, version: &str, namespace: &str) -> String {
    let mut path = String::from(if group.is_empty() { "/api/" } else { "/apis/" });
    path += &api_version(group, version);
    if api.scope == "Namespaced" {
        path += &format!("/namespaces/{namespace}");
    }
    path + "/" + &api.plural
}

/// Whether a list request of `doc`'s type with `selector` as its fieldSelector is served:
/// ("accepted"|"rejected", the server's message). A field that is not selectable is refused
/// with 400 Bad Request.
async fn list_selecting(
    cluster: &Cluster,
    input: &str,
    doc: &Value,
    api: &ApiDef,
    namespace: &str,
    selector: &str,
) -> Result<(String, Option<String>)> {
    let Some((group, version, _)) = type_of(doc) else {
        return Ok(("rejected".into(), Some("no apiVersion/kind".into())));
    };
    let path = format!(
        "{}?fieldSelector={}&limit=1",
        collection_path(api, &group, &version, namespace),
        load::query_escape(selector)
    );
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| Error::input_because(input, "cannot be sent as a list request", e))?;
    match cluster.client.request_text(request).await {
        Ok(_) => Ok(("accepted".into(), None)),
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            Ok(("rejected".into(), Some(status.message.clone())))
        }
        Err(e) => Err(cluster.api_error("list with a field selector", e)),
    }
}

/// What an update witness gave on one server: `accepted` (the create and the update),
/// `rejected` (the create, with the server's message) or `update rejected` (with its message).
/// A transition rule is checked against a stored object, so the object is created for real
/// (named from `km-witness-`), the update is a dry run, and the object is deleted again.
async fn create_then_dry_run_update(
    cluster: &Cluster,
    input: &str,
    doc: &Value,
    update: &Value,
    api: Option<&ApiDef>,
    namespace: &str,
) -> Result<(String, Option<String>)> {
    let (Some((group, version, _)), Some(api)) = (type_of(doc), api) else {
        return Ok(("rejected".into(), Some("its kind is not served".into())));
    };
    let namespace = doc
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(namespace);
    let collection = collection_path(api, &group, &version, namespace);
    let query = "fieldValidation=Strict&fieldManager=kubectl-migrate";
    let mut body = doc.clone();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("name");
        meta.insert(
            "generateName".into(),
            format!("{}-", witness::OBJECT_NAME).into(),
        );
    }
    let send = |method: http::Method, path: String, body: Option<&Value>| {
        http::Request::builder()
            .method(method)
            .uri(path)
            .header("Content-Type", "application/json")
            .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
            .map_err(|e| Error::input_because(input, "cannot be sent to prove an update", e))
    };
    let created = match cluster
        .client
        .request_text(send(
            http::Method::POST,
            format!("{collection}?{query}"),
            Some(&body),
        )?)
        .await
    {
        Ok(text) => serde_json::from_str::<Value>(&text).unwrap_or_default(),
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            return Ok(("rejected".into(), Some(status.message.clone())));
        }
        Err(e) => return Err(cluster.api_error("create", e)),
    };
    let (Some(name), Some(resource_version)) = (
        created.pointer("/metadata/name").and_then(Value::as_str),
        created
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str),
    ) else {
        return Ok((
            "rejected".into(),
            Some("the server's answer to the create names no object".into()),
        ));
    };
    let mut next = update.clone();
    if let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("name".into(), name.into());
        meta.insert("resourceVersion".into(), resource_version.into());
    }
    let object_path = format!("{collection}/{name}");
    let updated = cluster
        .client
        .request_text(send(
            http::Method::PUT,
            format!("{object_path}?dryRun=All&{query}"),
            Some(&next),
        )?)
        .await;
    let deleted = cluster
        .client
        .request_text(send(http::Method::DELETE, object_path, None)?)
        .await;
    match deleted {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(e) => {
            return Err(cluster.api_error(
                &format!(
                    "delete the witness {name} (delete it with: kubectl delete {} {name}{})",
                    api.plural,
                    if api.scope == "Namespaced" {
                        format!(" -n {namespace}")
                    } else {
                        String::new()
                    }
                ),
                e,
            ));
        }
    }
    match updated {
        Ok(_) => Ok(("accepted".into(), None)),
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            Ok(("update rejected".into(), Some(status.message.clone())))
        }
        Err(e) => Err(cluster.api_error("dry-run update", e)),
    }
}

/// What a dry-run create gave: ("accepted"|"rejected", the server's message, the object as
/// it would be stored).
type DryRun = (String, Option<String>, Option<Value>);

/// A server-side dry-run create with fieldValidation=Strict; `input` names the object in
/// errors.
async fn dry_run_create(
    cluster: &Cluster,
    input: &str,
    doc: &Value,
    api: Option<&ApiDef>,
    namespace: &str,
) -> Result<DryRun> {
    let Some((group, version, kind)) = type_of(doc) else {
        return Ok(("rejected".into(), Some("no apiVersion/kind".into()), None));
    };
    let Some(api) = api else {
        return Ok((
            "rejected".into(),
            Some(format!("{kind} is not served")),
            None,
        ));
    };
    let namespace = doc
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(namespace);
    let path = format!(
        "{}?dryRun=All&fieldValidation=Strict&fieldManager=kubectl-migrate",
        collection_path(api, &group, &version, namespace)
    );
    // A JSON value's text is its compact serialization, which cannot fail.
    let body = doc.to_string().into_bytes();
    // Only a namespace or plural that is not a URL path segment gets here.
    let request = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(body)
        .map_err(|e| Error::input_because(input, "cannot be sent for a dry-run create", e))?;
    match cluster.client.request_text(request).await {
        Ok(body) => Ok(("accepted".into(), None, serde_json::from_str(&body).ok())),
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            Ok(("rejected".into(), Some(status.message.clone()), None))
        }
        Err(e) => Err(cluster.api_error("dry-run create", e)),
    }
}
