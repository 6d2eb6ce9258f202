//! `schema-diff --watch`'s shell around [`crate::schema::watch`] (which follows the clusters,
//! debounces and recomputes): it prints the initial report and each event (readable lines or
//! NDJSON), pages (`--on-breaking`/`--on-change`), stops at `--exit-on`'s event, exports
//! (`--metrics-addr`) and keeps the LCD manifests in `--lcd-dir`.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::error::{Error, Result};
use crate::output;
use crate::schema::diff::Class;
use crate::schema::report::Report;
use crate::schema::source::Origin;
use crate::schema::watch::{
    self, ApiUpdate, Ended, EventType, Flow, Listener, Note, Settings, WatchEvent,
};
use crate::schema::{FailOn, Request, exit};

mod metrics;
use metrics::{EventLabels, Metrics, source_label};

/// What `--watch` does with the events, resolved from the flags.
#[derive(Debug, Clone)]
pub struct Options {
    pub on_breaking: Option<String>,
    pub on_change: Option<String>,
    pub exit_on: Option<ExitOn>,
    pub metrics_addr: Option<SocketAddr>,
    pub lcd_dir: Option<PathBuf>,
    pub format: OutputFormat,
    pub show_informational: bool,
    /// What counts as a failure: `--fail-on`, as in the one-shot diff.
    pub fail_on: FailOn,
}

/// `--exit-on`: the first event that ends the watch with exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitOn {
    Breaking,
    Change,
}

/// Runs the watch; returns the exit code (0 when interrupted, 1 at `--exit-on`'s event).
pub async fn run(request: &Request, settings: &Settings, options: Options) -> Result<u8> {
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
    let mut shell = Shell {
        options,
        metrics,
        hooks: tokio::task::JoinSet::new(),
    };
    let ended = watch::watch(request, settings, &mut shell, interrupted()).await?;
    if ended == Ended::Stopped {
        output::log(0, "schema-diff --watch: interrupted, stopping");
    }
    shell.finish_hooks().await;
    Ok(match ended {
        Ended::Stopped => exit::SAME,
        Ended::ByListener => exit::DIFFERENT,
    })
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

/// The watch's listener: prints, counts, pages and exports what the engine reports.
struct Shell {
    options: Options,
    metrics: Option<Metrics>,
    hooks: tokio::task::JoinSet<()>,
}

impl Listener for Shell {
    /// The API's LCD file and metrics, as its state now is.
    fn api(&mut self, update: ApiUpdate<'_>) -> Result<()> {
        if let Some(dir) = &self.options.lcd_dir {
            write_lcd_file(dir, update.name, update.state.and_then(|s| s.lcd.as_ref()))?;
        }
        if let Some(m) = &self.metrics {
            m.set_api(update);
        }
        Ok(())
    }

    /// The initial report; the LCD files and metrics are in place before it says the watch is
    /// ready.
    fn ready(&mut self, report: &Report) -> Result<()> {
        let clusters: Vec<&str> = report
            .sources
            .iter()
            .filter(|s| matches!(s.origin, Origin::Cluster { .. }))
            .map(|s| s.label.as_str())
            .collect();
        if let Some(m) = &self.metrics {
            for cluster in &clusters {
                m.source_up.get_or_create(&source_label(cluster)).set(1);
            }
        }
        match self.options.format {
            OutputFormat::Json => output::print_json_line(&Initial {
                schema_version: watch::EVENT_SCHEMA_VERSION,
                time: watch::timestamp(),
                kind: EventType::Initial,
                report,
            })?,
            format => output::print(report, format)?,
        }
        output::log(
            0,
            format!(
                "watching the CRDs of {}; changes follow (Ctrl-C to stop)",
                crate::words::count(clusters.len() as i64, "cluster", "clusters")
            ),
        );
        Ok(())
    }

    /// Prints one event, counts it, runs the hooks; [`Flow::Stop`] when `--exit-on` says stop.
    fn event(&mut self, event: &WatchEvent) -> Result<Flow> {
        if let Some(m) = &self.metrics
            && matches!(event.kind, EventType::SourceLost | EventType::SourceBack)
        {
            for source in &event.sources {
                m.source_up
                    .get_or_create(&source_label(source))
                    .set(i64::from(event.kind == EventType::SourceBack));
            }
        }
        let quiet = event.class == Some(Class::Informational) && !self.options.show_informational;
        if !quiet {
            match self.options.format {
                OutputFormat::Json => output::print_json_line(event)?,
                _ => print_event(event)?,
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
        let breaking = event.fails(&self.options.fail_on);
        let json = serde_json::to_string(event).map_err(|e| Error::Encode {
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
        if !stop {
            return Ok(Flow::Continue);
        }
        output::log(
            0,
            format!(
                "schema-diff --watch: stopping at the first {} (--exit-on)",
                if breaking {
                    format!("change --fail-on counts ({})", self.options.fail_on.words())
                } else {
                    "change".to_string()
                }
            ),
        );
        Ok(Flow::Stop)
    }

    fn note(&mut self, note: Note) {
        match note {
            Note::Warning(message) => output::warn(message),
            Note::Detail(level, message) => output::log(level, message),
        }
    }
}

impl Shell {
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
    let text = manifest.to_yaml();
    let temporary = dir.join(format!(".{name}.yaml.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text).map_err(io(format!("write {}", temporary.display())))?;
    std::fs::rename(&temporary, &path).map_err(io(format!("rename to {}", path.display())))
}
