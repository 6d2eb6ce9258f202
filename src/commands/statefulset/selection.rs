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
use crate::statefulset::{self, DryRun, Mode, Outcome, words};

/// How one set of the selection ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetResult {
    pub name: String,
    /// succeeded, stopped, refused or failed (the words of the `done` event); planned (a dry
    /// run), shown (`--status`) or cleaned up when that is what the set's run did.
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
                Cell::new(one_line(set.message.as_deref().unwrap_or(""))),
            ]);
        }
        output::fit(&mut table, &[3], &[&[2]], 0);
        table
    }
}

/// A message in one line for a table cell: its first line, then the rest joined by "; "
/// (a refusal's reasons follow its "preflight failed" line).
fn one_line(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(|l| l.trim().trim_start_matches("- "))
        .filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        first
    } else {
        format!("{first} {}", rest.join("; "))
    }
}

/// What a set's run did when it did not fail, and what to say of it: a dry run planned, a
/// status shown (and what is next), a cleanup done.
fn did(outcome: &Result<Outcome>) -> Option<(&'static str, String)> {
    match outcome.as_ref().ok()? {
        Outcome::Planned(p) => Some((
            "planned",
            format!(
                "{} to move ({} steps)",
                statefulset::words::ordinals(&p.plan.ordinals),
                p.plan.steps.len()
            ),
        )),
        Outcome::Status(r) => Some(("shown", format!("next: {}", r.next_step))),
        Outcome::Cleaned(_) => Some(("cleaned up", String::new())),
        _ => None,
    }
}

/// The documents of a selection's sets as one kubectl List (`-o json` or `-o yaml` of a
/// `--status` or a dry run): each set's document, or how it ended when it has none.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct List {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<serde_json::Value>,
}

impl Tabular for List {
    /// Never printed as a table (the summary is); one row per item's set.
    fn table(&self) -> comfy_table::Table {
        let mut table = new_table(["STATEFULSET"]);
        for item in &self.items {
            let name = item
                .get("statefulset")
                .or_else(|| item.get("name"))
                .and_then(|n| n.as_str());
            table.add_row([name.unwrap_or_default()]);
        }
        table
    }
}

pub async fn exec(resolved: &Resolved, selection: &Selection) -> Result<()> {
    let settings = &resolved.settings;
    let names = selected_names(resolved, selection).await?;
    let resume = resume_command(resolved);
    let verb = match settings.mode {
        Mode::Migrate(DryRun::None) => Some("Migrate"),
        Mode::Rollback(DryRun::None) => Some("Roll back"),
        Mode::Cleanup { .. } => Some("Clean up after"),
        _ => None,
    };
    if let Some(verb) = verb {
        // One question for the whole selection, after each set's plan and warnings; each set's
        // run then goes on without asking.
        if !resolved.yes && output::interactive() {
            preview(resolved, &names).await;
        }
        output::confirm(
            &format!(
                "{verb} {} of {}/{} ({}), {} at a time",
                words::count(names.len() as i64, "StatefulSet", "StatefulSets"),
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
    // A status or a dry run as JSON or YAML is one document: a List of the sets' documents.
    let documents = matches!(resolved.output, OutputFormat::Json | OutputFormat::Yaml)
        && matches!(
            settings.mode,
            Mode::Status
                | Mode::Migrate(DryRun::Client | DryRun::Server)
                | Mode::Rollback(DryRun::Client | DryRun::Server)
        );
    let gathered = super::Gathered::default();
    let gathering = documents.then_some(&gathered);
    let runs = futures::stream::iter(names.iter().cloned().map(|name| {
        let mut settings = settings.clone();
        settings.name = name.clone();
        let resume = resume.clone();
        async move {
            let started = Instant::now();
            let mut console = Console::for_set(json, resume, &name, bars);
            let outcome = statefulset::run(&settings, &mut console).await;
            let did = did(&outcome);
            let result = report(
                outcome,
                settings.mode,
                resolved.output,
                &mut console,
                gathering,
            );
            (name, started.elapsed(), result, did)
        }
    }))
    .buffer_unordered(selection.parallel);
    type Ran = (String, Duration, Result<()>, Option<(&'static str, String)>);
    let mut results: Vec<Ran> = runs.collect().await;
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let summary = Summary {
        schema_version: 1,
        event: "summary",
        sets: results
            .iter()
            .map(|(name, elapsed, result, did)| {
                let error = result.as_ref().err();
                let (word, message) = match (error, did) {
                    (None, Some((word, said))) => (*word, Some(said.clone())),
                    _ => (result_word(error), error.map(Error::report)),
                };
                SetResult {
                    name: name.clone(),
                    result: word,
                    exit_code: error.map_or(0, Error::exit_code),
                    seconds: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
                    message: message.filter(|m| !m.is_empty()),
                }
            })
            .collect(),
    };
    if documents {
        let mut by_name: std::collections::BTreeMap<String, serde_json::Value> = gathered
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .collect();
        let items = summary
            .sets
            .iter()
            .map(|set| match by_name.remove(&set.name) {
                Some(document) => Ok(document),
                None => serde_json::to_value(set).map_err(|e| Error::Encode {
                    format: "JSON",
                    source: Box::new(e),
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        let list = List {
            api_version: "v1",
            kind: "List",
            items,
        };
        output::print(&list, resolved.output)?;
    } else if json {
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
                    "{} of {} did not finish; each keeps its own journal, so running the same command again goes on where each stopped:\n{}\n  {resume}",
                    failed.len(),
                    words::count(summary.sets.len() as i64, "StatefulSet", "StatefulSets"),
                    failed
                        .iter()
                        .map(|s| format!(
                            "  {}: {}: {}",
                            s.name,
                            s.result,
                            one_line(s.message.as_deref().unwrap_or_default())
                        ))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            }),
        }),
    }
}

/// Before the selection's question: each set's plan, as a dry run makes it, with its
/// warnings, or why its run would be refused, on stderr and tagged with its name.
async fn preview(resolved: &Resolved, names: &[String]) {
    let planned = match resolved.settings.mode {
        Mode::Migrate(_) => Mode::Migrate(DryRun::Client),
        Mode::Rollback(_) => Mode::Rollback(DryRun::Client),
        _ => return,
    };
    for name in names {
        let mut settings = resolved.settings.clone();
        settings.name = name.clone();
        settings.mode = planned;
        let mut console = Console::for_set(false, String::new(), name, false);
        match statefulset::run(&settings, &mut console).await {
            Ok(Outcome::Planned(plan)) => console.show_plan(&plan.plan),
            Ok(_) => {}
            Err(e) => console.say(&format!(
                "{}: {}",
                result_word(Some(&e)),
                one_line(&e.report())
            )),
        }
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
