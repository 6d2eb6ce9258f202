//! `kubectl migrate statefulset -l SELECTOR | --all`: several StatefulSets, each its own run
//! (own journal, own lease, so resume and rollback work per set), one after another or
//! `--parallel N` at a time, with one question at the start and one summary table at the end.
use std::time::{Duration, Instant};

use comfy_table::Cell;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::ListParams;
use serde::Serialize;

use super::console::{Console, result_word};
use super::{Resolved, Selection, report, resume_command};
use crate::cli::OutputFormat;
use crate::duration::humanize;
use crate::error::{Error, Result};
use crate::output::{self, Tabular, new_table};
use crate::statefulset::{self, DryRun, Mode};

/// How one set of the selection ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetResult {
    pub name: String,
    /// succeeded, stopped, refused or failed (the words of the `done` event).
    pub result: &'static str,
    pub exit_code: u8,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The table printed when the selection is done (`-o json`: the last line of the stream).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub schema_version: u32,
    pub event: &'static str,
    pub sets: Vec<SetResult>,
}

impl Tabular for Summary {
    fn table(&self) -> comfy_table::Table {
        let mut table = new_table(["STATEFULSET", "RESULT", "TIME", "MESSAGE"]);
        for set in &self.sets {
            table.add_row(vec![
                Cell::new(&set.name),
                Cell::new(set.result),
                Cell::new(humanize(Duration::from_secs(set.seconds.round() as u64))),
                Cell::new(first_line(set.message.as_deref().unwrap_or(""))),
            ]);
        }
        output::fit(&mut table, &[3], &[&[2]], 0);
        table
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

pub async fn exec(resolved: &Resolved, selection: &Selection) -> Result<()> {
    let settings = &resolved.settings;
    let names = selected_names(resolved, selection).await?;
    let resume = resume_command(resolved);
    let verb = match settings.mode {
        Mode::Migrate(DryRun::None) => Some("Migrate"),
        Mode::Rollback => Some("Roll back"),
        Mode::Cleanup { .. } => Some("Clean up after"),
        _ => None,
    };
    if let Some(verb) = verb {
        // One question for the whole selection; each set's run then goes on without asking.
        output::confirm(
            &format!(
                "{verb} {} StatefulSet(s) of {}/{} ({}), {} at a time",
                names.len(),
                settings.source.context,
                settings.source_namespace,
                names.join(", "),
                selection.parallel.min(names.len())
            ),
            resolved.yes,
        )?;
    }
    let json = resolved.output == OutputFormat::Json;
    let bars = selection.parallel == 1;
    let runs = futures::stream::iter(names.iter().cloned().map(|name| {
        let mut settings = settings.clone();
        settings.name = name.clone();
        let resume = resume.clone();
        async move {
            let started = Instant::now();
            let mut console = Console::for_set(json, resume, &name, bars);
            let outcome = statefulset::run(&settings, &mut console).await;
            let result = report(outcome, settings.mode, resolved.output, &mut console);
            (name, started.elapsed(), result)
        }
    }))
    .buffer_unordered(selection.parallel);
    let mut results: Vec<(String, Duration, Result<()>)> = runs.collect().await;
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let summary = Summary {
        schema_version: 1,
        event: "summary",
        sets: results
            .iter()
            .map(|(name, elapsed, result)| {
                let error = result.as_ref().err();
                SetResult {
                    name: name.clone(),
                    result: result_word(error),
                    exit_code: error.map_or(0, Error::exit_code),
                    seconds: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
                    message: error.map(Error::report),
                }
            })
            .collect(),
    };
    if json {
        output::print_json_line(&summary)?;
    } else {
        output::print(&summary, resolved.output)?;
    }
    let failed: Vec<&SetResult> = summary.sets.iter().filter(|s| s.exit_code != 0).collect();
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(Error::WithExitCode {
            code: first.exit_code,
            inner: Box::new(Error::Failed {
                message: format!(
                    "{} of {} StatefulSet(s) did not finish ({}); each keeps its own journal, so running the same command again goes on where each stopped:\n  {resume}",
                    failed.len(),
                    summary.sets.len(),
                    failed
                        .iter()
                        .map(|s| format!("{}: {}", s.name, s.result))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }),
    }
}

/// The names of the source's StatefulSets the selection takes, sorted.
async fn selected_names(resolved: &Resolved, selection: &Selection) -> Result<Vec<String>> {
    let settings = &resolved.settings;
    let source = settings
        .source
        .connect(settings.request_timeout)
        .await
        .map_err(|e| Error::Failed {
            message: format!("source: {}", e.report()),
        })?;
    let api: Api<StatefulSet> = Api::namespaced(source.client.clone(), &settings.source_namespace);
    let mut params = ListParams::default();
    if let Some(selector) = &selection.selector {
        params = params.labels(selector);
    }
    let listed = match source
        .call("list the StatefulSets to move", api.list_metadata(&params))
        .await
    {
        // The server's word on a selector it cannot parse: bad input, not a cluster failure.
        Err(e) if e.http_status() == Some(400) => Err(Error::Usage(format!(
            "-l {:?}: {}",
            selection.selector.as_deref().unwrap_or_default(),
            e.report()
        ))),
        other => other,
    }?;
    let mut names: Vec<String> = listed
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(Error::NotFound(format!(
            "no StatefulSet in {}/{} {}",
            source.context,
            settings.source_namespace,
            match &selection.selector {
                Some(selector) => format!("matches -l {selector}"),
                None => "to move (--all found none)".into(),
            }
        )));
    }
    Ok(names)
}
