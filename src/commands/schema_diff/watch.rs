//! `schema-diff --watch`: the initial report, then one event per change of an API on any
//! cluster, until interrupted. The shell around [`crate::schema::watch`]: it watches the CRDs of
//! every cluster (kube-runtime watchers: bookmarks, relist after 410, backoff), probes each
//! cluster to tell an outage from a quiet cluster, coalesces bursts, recomputes only the APIs a
//! change touched, and prints, pages (`--on-breaking`/`--on-change`), exports (`--metrics-addr`)
//! and writes the LCD manifests (`--lcd-dir`).
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use tokio::time::Instant;

use crate::cli::OutputFormat;
use crate::cluster::DEFAULT_CONNECT_TIMEOUT;
use crate::error::{Error, Result};
use crate::output;
use crate::schema::diff::Class;
use crate::schema::load;
use crate::schema::model::SourceSchemas;
use crate::schema::report::Report;
use crate::schema::watch::{self, ApiState, EventType, WatchEvent};
use crate::schema::{Request, Work, compare_for, compare_one, exit};

mod metrics;
use metrics::{EventLabels, Metrics, source_label};

/// What `--watch` does besides the comparison, resolved from the flags.
#[derive(Debug, Clone)]
pub struct Options {
    pub debounce: Duration,
    pub on_breaking: Option<String>,
    pub on_change: Option<String>,
    pub exit_on: Option<ExitOn>,
    pub metrics_addr: Option<SocketAddr>,
    pub lcd_dir: Option<PathBuf>,
    pub format: OutputFormat,
    pub show_informational: bool,
}

/// `--exit-on`: the first event that ends the watch with exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitOn {
    Breaking,
    Change,
}

/// How often each cluster is asked whether it still answers, when nothing else asks.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// A burst of writes is coalesced for at most this many debounce periods.
const MAX_COALESCE: u32 = 5;

/// Runs the watch; returns the exit code (0 when interrupted, 1 at `--exit-on`'s event).
pub async fn run(request: Request, options: Options) -> Result<u8> {
    let probe_timeout = if request.request_timeout.is_zero() {
        DEFAULT_CONNECT_TIMEOUT
    } else {
        request.request_timeout
    };
    let metrics = match options.metrics_addr {
        Some(addr) => Some(Metrics::serve(addr).await?),
        None => None,
    };
    if let Some(dir) = &options.lcd_dir {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            what: format!("create --lcd-dir {}", dir.display()),
            source,
        })?;
    }
    // Watches are long requests: the clients get no read timeout; outages are found by probes
    // bounded by --request-timeout.
    let clusters =
        futures::future::try_join_all(request.clusters.iter().map(|t| t.connect(Duration::ZERO)))
            .await?;
    let files = {
        let (paths, selection) = (request.files.clone(), request.selection.clone());
        tokio::task::spawn_blocking(move || load::load_file_sources(&paths, &selection))
            .await
            .map_err(|e| Error::Failed {
                message: format!("loading files: {e}"),
            })??
    };
    let mut watch = Watch {
        sources: clusters
            .iter()
            .map(|c| SourceSchemas {
                label: c.context.clone(),
                origin: crate::schema::model::Origin::Cluster {
                    context: c.context.clone(),
                    server: c.server.clone(),
                    version: c.git_version().to_string(),
                },
                apis: BTreeMap::new(),
            })
            .chain(files)
            .collect(),
        states: BTreeMap::new(),
        up: vec![true; clusters.len()],
        listing: vec![None; clusters.len()],
        synced: vec![false; clusters.len()],
        dirty: BTreeMap::new(),
        first_dirty: None,
        last_dirty: None,
        hooks: tokio::task::JoinSet::new(),
        metrics,
        request,
        options,
    };
    // Per cluster: a task forwarding its watcher's events and one probing it, each with a
    // bell the loop below rings (start the watch afresh; probe now).
    let (watched, mut events) = tokio::sync::mpsc::channel(256);
    let (probe_results, mut probed) = tokio::sync::mpsc::channel(16);
    let mut rewatch = Vec::new();
    let mut probe_now = Vec::new();
    for (i, cluster) in clusters.iter().enumerate() {
        let bells = (
            Arc::new(tokio::sync::Notify::new()),
            Arc::new(tokio::sync::Notify::new()),
        );
        let client = cluster.client.clone();
        let page_size = watch.request.chunk_size;
        tokio::spawn(forward_watch(
            i,
            client.clone(),
            page_size,
            watched.clone(),
            bells.0.clone(),
        ));
        tokio::spawn(probe(
            i,
            client,
            probe_timeout,
            probe_results.clone(),
            bells.1.clone(),
        ));
        rewatch.push(bells.0);
        probe_now.push(bells.1);
    }
    // The initial state: every cluster's first complete list.
    while watch.synced.iter().any(|s| !s) {
        let Some((i, event)) = events.recv().await else {
            break;
        };
        if let Err(e) = &event {
            return Err(Error::Failed {
                message: format!(
                    "{}: watching CustomResourceDefinitions: {e}",
                    clusters[i].context
                ),
            });
        }
        watch.observe(i, event);
    }
    // The first lists are the initial state, not changes.
    watch.take_dirty();
    watch.initial()?;
    let mut interrupted = std::pin::pin!(interrupted());
    loop {
        let flush_at = watch.flush_at();
        tokio::select! {
            Some((i, event)) = events.recv() => {
                if let Err(e) = &event {
                    output::log(1, format!("{}: watch: {e}", clusters[i].context));
                    // A watch error may be the cluster going away or a mere expiry: a probe
                    // tells which.
                    probe_now[i].notify_one();
                }
                watch.observe(i, event);
            }
            Some((i, answer)) = probed.recv() => {
                let was_up = watch.up[i];
                if let Some(code) = watch.probed(i, answer).await? {
                    return Ok(code);
                }
                if !was_up && watch.up[i] {
                    // Back: a fresh list now, rather than when the watcher's backoff ends.
                    rewatch[i].notify_one();
                }
            }
            _ = sleep_until(flush_at) => {
                if let Some(code) = watch.flush().await? {
                    return Ok(code);
                }
            }
            () = &mut interrupted => {
                output::log(0, "schema-diff --watch: interrupted, stopping");
                watch.finish_hooks().await;
                return Ok(exit::SAME);
            }
        }
    }
}

/// Resolves at Ctrl-C or SIGTERM.
async fn interrupted() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

type CrdEvent = std::result::Result<watcher::Event<DynamicObject>, watcher::Error>;

/// The cluster's CRDs as a kube-runtime watcher: it lists in pages, resumes from bookmarks,
/// relists after a 410, and backs off while the cluster does not answer.
fn crd_watcher(
    client: kube::Client,
    page_size: usize,
) -> impl futures::Stream<Item = CrdEvent> + Send + use<> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "customresourcedefinitions");
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut config = watcher::Config::default();
    if page_size > 0 {
        config = config.page_size(u32::try_from(page_size).unwrap_or(u32::MAX));
    }
    watcher(api, config).default_backoff()
}

/// Sends cluster `index`'s watcher events to `events`; starts the watcher afresh (a new list)
/// when `restart` is notified.
async fn forward_watch(
    index: usize,
    client: kube::Client,
    page_size: usize,
    events: tokio::sync::mpsc::Sender<(usize, CrdEvent)>,
    restart: Arc<tokio::sync::Notify>,
) {
    loop {
        let mut stream = std::pin::pin!(crd_watcher(client.clone(), page_size));
        loop {
            tokio::select! {
                event = stream.next() => {
                    let Some(event) = event else { break };
                    if events.send((index, event)).await.is_err() {
                        return;
                    }
                }
                () = restart.notified() => break,
            }
        }
    }
}

/// Asks the cluster for its version every [`PROBE_EVERY`] (or when told to), under `timeout`,
/// and sends whether it answered.
async fn probe(
    index: usize,
    client: kube::Client,
    timeout: Duration,
    results: tokio::sync::mpsc::Sender<(usize, std::result::Result<(), String>)>,
    now: Arc<tokio::sync::Notify>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PROBE_EVERY) => {}
            _ = now.notified() => {}
        }
        let answer = match tokio::time::timeout(timeout, client.apiserver_version()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(crate::cluster::describe_kube_error(&e)),
            Err(_) => Err(format!(
                "no answer within {}",
                crate::duration::humanize(timeout)
            )),
        };
        if results.send((index, answer)).await.is_err() {
            return;
        }
    }
}

/// The watch's state: the sources as last observed, each API's state as last reported, and
/// the APIs changed since.
struct Watch {
    /// The clusters first (index `i` is the `i`th cluster), then the files.
    sources: Vec<SourceSchemas>,
    states: BTreeMap<String, ApiState>,
    up: Vec<bool>,
    /// Per cluster, the CRDs of a relist in progress (between `Init` and `InitDone`).
    listing: Vec<Option<BTreeMap<String, crate::schema::StoredApi>>>,
    synced: Vec<bool>,
    /// API name -> the sources whose change touched it.
    dirty: BTreeMap<String, BTreeSet<String>>,
    first_dirty: Option<Instant>,
    last_dirty: Option<Instant>,
    hooks: tokio::task::JoinSet<()>,
    metrics: Option<Metrics>,
    request: Request,
    options: Options,
}

impl Watch {
    /// Takes in one event of cluster `i`'s watcher.
    fn observe(&mut self, i: usize, event: CrdEvent) {
        let Ok(event) = event else { return };
        let label = self.sources[i].label.clone();
        match event {
            watcher::Event::Init => self.listing[i] = Some(BTreeMap::new()),
            watcher::Event::InitApply(crd) => {
                if let Some((name, api)) = self.stored(&label, &crd) {
                    self.listing[i].get_or_insert_default().insert(name, api);
                }
            }
            watcher::Event::InitDone => {
                let listed = self.listing[i].take().unwrap_or_default();
                let apis = &mut self.sources[i].apis;
                let names: BTreeSet<String> = apis.keys().chain(listed.keys()).cloned().collect();
                let changed: Vec<String> = names
                    .into_iter()
                    .filter(|n| match (apis.get(n), listed.get(n)) {
                        (Some(a), Some(b)) => !a.same_crd_as(b),
                        _ => true,
                    })
                    .collect();
                *apis = listed;
                self.synced[i] = true;
                for name in changed {
                    self.touch(name, &label);
                }
            }
            watcher::Event::Apply(crd) => {
                if let Some((name, api)) = self.stored(&label, &crd) {
                    let apis = &mut self.sources[i].apis;
                    if apis.get(&name).is_none_or(|old| !old.same_crd_as(&api)) {
                        apis.insert(name.clone(), api);
                        self.touch(name, &label);
                    }
                }
            }
            watcher::Event::Delete(crd) => {
                let name = crd.metadata.name.clone().unwrap_or_default();
                if self.sources[i].apis.remove(&name).is_some() {
                    self.touch(name, &label);
                }
            }
        }
    }

    /// The CRD in the compact form the comparison reads; `None` when not selected or not a
    /// valid CRD (said at -v).
    fn stored(
        &self,
        label: &str,
        crd: &DynamicObject,
    ) -> Option<(String, crate::schema::StoredApi)> {
        let manifest = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd.metadata.name},
            "spec": crd.data.get("spec"),
        });
        let name = crd.metadata.name.clone().unwrap_or_default();
        match load::crd_from_value(
            &manifest,
            &format!("{label} {name}"),
            &self.request.selection,
        ) {
            Ok(Some(api)) => Some((api.name.clone(), crate::schema::StoredApi::crd(&api))),
            Ok(None) => None,
            Err(e) => {
                output::warn(format!("{label}: CRD {name} left out: {e}"));
                None
            }
        }
    }

    fn touch(&mut self, name: String, source: &str) {
        let now = Instant::now();
        self.dirty
            .entry(name)
            .or_default()
            .insert(source.to_string());
        self.first_dirty.get_or_insert(now);
        self.last_dirty = Some(now);
    }

    /// The APIs changed since the last call, with the sources that changed each.
    fn take_dirty(&mut self) -> BTreeMap<String, BTreeSet<String>> {
        (self.first_dirty, self.last_dirty) = (None, None);
        std::mem::take(&mut self.dirty)
    }

    /// When the changes seen so far are due: `--debounce` after the last one, and no later
    /// than a few debounce periods after the first, so that a steady stream still reports.
    fn flush_at(&self) -> Option<Instant> {
        let (first, last) = (self.first_dirty?, self.last_dirty?);
        let debounce = self.options.debounce;
        Some((last + debounce).min(first + debounce * MAX_COALESCE))
    }

    /// Prints the initial report and sets up the LCD files and metrics from it.
    fn initial(&mut self) -> Result<()> {
        let mut report = tokio::task::block_in_place(|| {
            compare_for(
                &self.sources,
                &self.request,
                self.options.show_informational,
                Work::Both,
            )
        });
        for api in &mut report.apis {
            let state = ApiState::of(api);
            self.states.insert(api.name.clone(), state);
        }
        // The LCD files and metrics are in place before the report says the watch is ready.
        let names: Vec<String> = self.states.keys().cloned().collect();
        for name in names {
            self.export(&name)?;
        }
        if let Some(m) = &self.metrics {
            for s in &self.sources[..self.up.len()] {
                m.source_up.get_or_create(&source_label(&s.label)).set(1);
            }
        }
        match self.options.format {
            OutputFormat::Json => output::print_json_line(&Initial {
                schema_version: watch::EVENT_SCHEMA_VERSION,
                time: now(),
                kind: EventType::Initial,
                report: &report,
            })?,
            format => output::print(&report, format)?,
        }
        output::log(
            0,
            format!(
                "watching the CRDs of {} cluster(s); changes follow (Ctrl-C to stop)",
                self.up.len()
            ),
        );
        Ok(())
    }

    /// A probe's answer: `source-lost` when a cluster that answered stops, `source-back` (and
    /// a recompute of everything it serves) when it answers again.
    async fn probed(
        &mut self,
        i: usize,
        answer: std::result::Result<(), String>,
    ) -> Result<Option<u8>> {
        let label = self.sources[i].label.clone();
        let (kind, message) = match (self.up[i], answer) {
            (true, Err(message)) => (EventType::SourceLost, Some(message)),
            (false, Ok(())) => (EventType::SourceBack, None),
            _ => return Ok(None),
        };
        self.up[i] = kind == EventType::SourceBack;
        if let Some(m) = &self.metrics {
            m.source_up
                .get_or_create(&source_label(&label))
                .set(i64::from(self.up[i]));
        }
        if self.up[i] {
            // The watcher delivers what changed meanwhile (or relists); the APIs are recomputed
            // either way.
            let names: Vec<String> = self.sources[i].apis.keys().cloned().collect();
            for name in names {
                self.touch(name, &label);
            }
        }
        self.emit(WatchEvent::source(kind, &label, now(), message))
            .await
    }

    /// Recomputes the APIs changed since the last flush, and reports each that changed.
    async fn flush(&mut self) -> Result<Option<u8>> {
        for (name, sources) in self.take_dirty() {
            let after = tokio::task::block_in_place(|| {
                compare_one(&self.sources, &self.request, &name).map(|mut r| ApiState::of(&mut r))
            });
            let before = self.states.get(&name);
            let event = watch::change(
                &name,
                before,
                after.as_ref(),
                sources.into_iter().collect(),
                now(),
            );
            match after {
                Some(state) => self.states.insert(name.clone(), state),
                None => self.states.remove(&name),
            };
            self.export(&name)?;
            if let Some(event) = event
                && let Some(code) = self.emit(event).await?
            {
                return Ok(Some(code));
            }
        }
        Ok(None)
    }

    /// Prints one event, counts it, runs the hooks; `Some(1)` when `--exit-on` says stop.
    async fn emit(&mut self, event: WatchEvent) -> Result<Option<u8>> {
        let quiet = event.class == Some(Class::Informational) && !self.options.show_informational;
        if !quiet {
            match self.options.format {
                OutputFormat::Json => output::print_json_line(&event)?,
                _ => print_event(&event)?,
            }
        }
        if let Some(m) = &self.metrics {
            m.events
                .get_or_create(&EventLabels {
                    event_type: event.kind.as_str().to_string(),
                    class: event.class.map_or("", Class::as_str).to_string(),
                })
                .inc();
        }
        let breaking = event.class == Some(Class::Breaking);
        let json = serde_json::to_string(&event).map_err(|e| Error::Encode {
            format: "JSON",
            source: Box::new(e),
        })?;
        let commands = [
            (breaking, &self.options.on_breaking),
            (!quiet, &self.options.on_change),
        ];
        for (when, command) in commands {
            if let (true, Some(command)) = (when, command) {
                self.hooks
                    .spawn(run_hook(command.clone(), json.clone(), event.clone()));
            }
        }
        let stop = match self.options.exit_on {
            Some(ExitOn::Breaking) => breaking,
            Some(ExitOn::Change) => event.kind == EventType::Change && !quiet,
            None => false,
        };
        if stop {
            output::log(
                0,
                format!(
                    "schema-diff --watch: stopping at the first {} (--exit-on)",
                    if breaking {
                        "breaking change"
                    } else {
                        "change"
                    }
                ),
            );
            self.finish_hooks().await;
            return Ok(Some(exit::DIFFERENT));
        }
        Ok(None)
    }

    /// Waits for the hooks still running (bounded), so that an exit does not cut them off.
    async fn finish_hooks(&mut self) {
        let all = async { while self.hooks.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(30), all)
            .await
            .is_err()
        {
            output::warn("hooks still running after 30s were left behind");
        }
    }

    /// The API's LCD file and metrics, as its state now is.
    fn export(&self, name: &str) -> Result<()> {
        let state = self.states.get(name);
        if let Some(dir) = &self.options.lcd_dir {
            write_lcd_file(dir, name, state.and_then(|s| s.lcd.as_ref()))?;
        }
        if let Some(m) = &self.metrics {
            m.set_api(name, state, &self.sources, self.baseline());
        }
        Ok(())
    }

    fn baseline(&self) -> &str {
        &self.sources[self.request.baseline_index(&self.sources)].label
    }
}

/// The first line of `-o json`: the initial report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Initial<'a> {
    schema_version: u32,
    time: String,
    #[serde(rename = "type")]
    kind: EventType,
    report: &'a Report,
}

fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    now.round(k8s_openapi::jiff::Unit::Second)
        .unwrap_or(now)
        .to_string()
}

/// One event as readable lines: a heading, then what appeared (+), went away (-) and how the
/// LCD and the presence changed.
fn print_event(event: &WatchEvent) -> Result<()> {
    use colored::Colorize;
    use std::io::Write;
    let mut lines = Vec::new();
    let sources = event.sources.join(", ");
    match event.kind {
        EventType::Change => {
            let class = event
                .class
                .map_or_else(String::new, super::render::paint_class);
            let what = match event.api_change {
                Some(watch::ApiChange::Added) => "added",
                Some(watch::ApiChange::Removed) => "removed everywhere",
                _ => "changed",
            };
            lines.push(format!(
                "{}  {} {what} on {sources}: {class}",
                event.time,
                event.api.as_deref().unwrap_or_default().bold()
            ));
            for p in &event.presence {
                let served = |v: &Option<Vec<String>>| match v {
                    None => "no API".to_string(),
                    Some(v) if v.is_empty() => "no version served".to_string(),
                    Some(v) => format!("serves {}", v.join(", ")),
                };
                lines.push(format!(
                    "    {}: {} -> {}",
                    p.source,
                    served(&p.before),
                    served(&p.after)
                ));
            }
            for (sign, findings) in [("+", &event.new_findings), ("-", &event.gone_findings)] {
                for f in findings {
                    let at: Vec<&str> = [f.version.as_deref(), Some(f.path.as_str())]
                        .into_iter()
                        .flatten()
                        .filter(|s| !s.is_empty())
                        .collect();
                    let at = if at.is_empty() {
                        String::new()
                    } else {
                        format!(" {}:", at.join(" "))
                    };
                    lines.push(format!(
                        "    {sign} {}{at} {}",
                        super::render::paint_class(f.class),
                        f.message
                    ));
                }
            }
            if let Some(lcd) = event.lcd {
                lines.push(format!("    LCD {}", lcd.as_str()));
            }
        }
        kind => {
            let heading = match kind {
                EventType::SourceLost => "source lost".red().bold().to_string(),
                _ => "source back".green().to_string(),
            };
            let why = event
                .message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            lines.push(format!("{}  {sources} {heading}{why}", event.time));
        }
    }
    let mut out = output::stdout();
    for line in lines {
        writeln!(out, "{line}").map_err(output::stdout_error)?;
    }
    out.flush().map_err(output::stdout_error)
}

/// Runs a hook: `sh -c COMMAND` with the event as JSON on stdin and `API`, `SOURCE`, `CLASS` in
/// the environment. A failing hook is warned about; the watch goes on.
async fn run_hook(command: String, json: String, event: WatchEvent) {
    use tokio::io::AsyncWriteExt;
    let class = event
        .class
        .map_or(event.kind.as_str(), Class::as_str)
        .to_string();
    let spawned = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .env("API", event.api.as_deref().unwrap_or_default())
        .env("SOURCE", event.sources.join(","))
        .env("CLASS", class)
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(false)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return output::warn(format!("hook {command:?} did not start: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is fine.
        let _ = stdin.write_all(json.as_bytes()).await;
        let _ = stdin.write_all(b"\n").await;
    }
    match child.wait().await {
        Ok(status) if status.success() => {}
        Ok(status) => output::warn(format!("hook {command:?} failed: {status}")),
        Err(e) => output::warn(format!("hook {command:?}: {e}")),
    }
}

/// Keeps `DIR/NAME.yaml` the API's LCD manifest: written to a temporary file in DIR and renamed
/// over the old one, so that a reader sees the old manifest or the new one, never a part.
/// Removed when there is no LCD.
fn write_lcd_file(dir: &Path, name: &str, lcd: Option<&crate::schema::LcdManifest>) -> Result<()> {
    let path = dir.join(format!("{name}.yaml"));
    let io = |what: String| move |source| Error::Io { what, source };
    let Some(manifest) = lcd else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io(format!("remove {}", path.display()))(e))
            }
            _ => Ok(()),
        };
    };
    let text = serde_saphyr::to_string(&manifest.to_value()).map_err(|e| Error::Encode {
        format: "YAML",
        source: Box::new(e),
    })?;
    let temporary = dir.join(format!(".{name}.yaml.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text).map_err(io(format!("write {}", temporary.display())))?;
    std::fs::rename(&temporary, &path).map_err(io(format!("rename to {}", path.display())))
}
