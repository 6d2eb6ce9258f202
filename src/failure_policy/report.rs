//! What failure-policy prints: the timeline, the check and the explanation, each as a table or
//! as JSON/YAML with a `schemaVersion`.
use colored::Colorize;
use comfy_table::Table;
use serde::Serialize;

use super::check::{Problem, Support};
use super::engine::{Condition, PolicyMatch, Semantics, Simulation};
use super::model::JobModel;
use crate::output::{Tabular, new_table, trim_lines};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulateReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    pub semantics: Semantics,
    #[serde(flatten)]
    pub simulation: Simulation,
}

impl SimulateReport {
    pub fn new(job: &JobModel, sem: &Semantics, simulation: Simulation) -> SimulateReport {
        SimulateReport {
            schema_version: 1,
            job: format!("{}/{}", job.namespace, job.name),
            kubernetes_version: format!("1.{}", sem.minor),
            semantics: sem.clone(),
            simulation,
        }
    }
}

fn conditions_text(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c.type_,
                if c.reason.is_empty() {
                    "(no reason)".to_string()
                } else {
                    c.reason.clone()
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Tabular for SimulateReport {
    fn table(&self) -> Table {
        let per_index = self
            .simulation
            .steps
            .iter()
            .any(|s| s.index_failures.is_some());
        let indexed = self.simulation.steps.iter().any(|s| s.index.is_some());
        let mut headers = vec!["#", "at"];
        if indexed {
            headers.push("index");
        }
        headers.extend(["pod", "rule", "action", "counted", "failed", "succeeded"]);
        if per_index {
            headers.push("index failures");
        }
        headers.extend(["next pod in", "job conditions"]);
        let mut table = new_table(headers);
        for s in &self.simulation.steps {
            let mut row = vec![s.outcome.to_string(), format!("{}s", s.at_seconds)];
            if indexed {
                row.push(s.index.map(|i| i.to_string()).unwrap_or_else(|| "-".into()));
            }
            let result = match s.result.as_str() {
                "failed" => s.result.red().to_string(),
                "succeeded" => s.result.green().to_string(),
                _ => s.result.dimmed().to_string(),
            };
            row.push(result);
            row.push(
                s.policy
                    .as_ref()
                    .and_then(|p| p.rule)
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
            );
            row.push(
                s.policy
                    .as_ref()
                    .map(|p| p.action.clone())
                    .unwrap_or_else(|| "-".into()),
            );
            row.push(
                if s.result == "failed" {
                    if s.counted { "yes" } else { "no" }
                } else {
                    "-"
                }
                .to_string(),
            );
            row.push(s.failed.to_string());
            row.push(s.succeeded.to_string());
            if per_index {
                row.push(match (s.index_failures, s.index_failed) {
                    (Some(c), Some(true)) => format!("{c} (index failed)"),
                    (Some(c), _) => c.to_string(),
                    _ => "-".into(),
                });
            }
            row.push(
                s.backoff_seconds
                    .map(|b| format!("{b}s"))
                    .unwrap_or_else(|| "-".into()),
            );
            let mut notes = conditions_text(&s.conditions_added);
            if let Some(n) = &s.note {
                if !notes.is_empty() {
                    notes.push('\n');
                }
                notes.push_str(&n.dimmed().to_string());
            }
            row.push(if notes.is_empty() { "-".into() } else { notes });
            table.add_row(row);
        }
        table
    }

    fn text(&self) -> String {
        let f = &self.simulation.final_status;
        let mut out = format!(
            "Job {} as Kubernetes {} decides:\n\n",
            self.job, self.kubernetes_version
        );
        out += &trim_lines(&self.table().to_string());
        out += "\nFinal status:\n";
        if f.conditions.is_empty() {
            out += &format!(
                "  no terminal condition: the Job is still running ({} active pod(s))\n",
                f.active
            );
        }
        for c in &f.conditions {
            out += &format!(
                "  {} {} reason={:?} message={:?}\n",
                c.type_.bold(),
                c.status,
                c.reason,
                c.message
            );
        }
        out += &format!("  failed={} succeeded={}", f.failed, f.succeeded);
        if let Some(fi) = &f.failed_indexes {
            out += &format!(" failedIndexes={fi:?}");
        }
        if let Some(ci) = &f.completed_indexes {
            out += &format!(" completedIndexes={ci:?}");
        }
        out += "\n";
        out
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVerdict {
    pub context: String,
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    pub valid: bool,
    /// The whole message, as the API server would answer a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub problems: Vec<Problem>,
    pub support: Vec<Support>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVerdict>,
}

impl Tabular for CheckReport {
    fn table(&self) -> Table {
        let mut table = new_table(["feature", "used", "at this version", "consequence"]);
        for s in self.support.iter().filter(|s| s.used) {
            let state = if s.enabled {
                s.state.green().to_string()
            } else {
                s.state.red().to_string()
            };
            table.add_row(vec![
                s.feature.clone(),
                "yes".into(),
                state,
                s.consequence.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        table
    }

    fn text(&self) -> String {
        let mut out = String::new();
        if self.valid {
            out += &format!(
                "{} Job {:?} passes the API server's validation\n",
                "valid:".green().bold(),
                self.job
            );
        } else {
            out += &format!(
                "{} {} problem(s):\n",
                "invalid:".red().bold(),
                self.problems.len()
            );
            for p in &self.problems {
                out += &format!("  {}\n", p.message);
            }
        }
        let used: Vec<&Support> = self.support.iter().filter(|s| s.used).collect();
        if used.is_empty() {
            out += &format!(
                "Kubernetes {}: the Job uses no version-dependent failure features\n",
                self.kubernetes_version
            );
        } else {
            out += &format!("\nFeatures at Kubernetes {}:\n", self.kubernetes_version);
            out += &trim_lines(&self.table().to_string());
        }
        if let Some(s) = &self.server {
            out += &format!(
                "\nServer dry-run on {}: {}\n",
                s.context,
                if s.accepted {
                    "accepted".green().to_string()
                } else {
                    format!(
                        "{} {}",
                        "rejected:".red(),
                        s.message.clone().unwrap_or_default()
                    )
                }
            );
        }
        out
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedPodLine {
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    pub exit_codes: String,
    pub conditions: String,
    pub policy: PolicyMatch,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    pub limit: String,
    pub value: String,
    pub used: String,
    pub remaining: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextFailure {
    pub failure: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    pub rule: Option<usize>,
    pub action: String,
    pub outcome: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainReport {
    pub schema_version: u32,
    pub job: String,
    pub kubernetes_version: String,
    /// The terminal condition, if the Job has finished.
    pub finished: Option<String>,
    pub failed: i32,
    pub succeeded: i32,
    pub failed_indexes: Option<String>,
    pub failed_pods: Vec<FailedPodLine>,
    pub limits: Vec<Limit>,
    pub next: Vec<NextFailure>,
}

impl Tabular for ExplainReport {
    fn table(&self) -> Table {
        let mut table = new_table([
            "pod",
            "index",
            "exit codes",
            "conditions",
            "rule",
            "action",
            "counted",
        ]);
        for p in &self.failed_pods {
            table.add_row(vec![
                p.pod.clone(),
                p.index.map(|i| i.to_string()).unwrap_or_else(|| "-".into()),
                if p.exit_codes.is_empty() {
                    "-".into()
                } else {
                    p.exit_codes.clone()
                },
                if p.conditions.is_empty() {
                    "-".into()
                } else {
                    p.conditions.clone()
                },
                p.policy
                    .rule
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
                p.policy.action.clone(),
                if p.policy.counted {
                    "yes".into()
                } else {
                    "no".into()
                },
            ]);
        }
        table
    }

    fn text(&self) -> String {
        let mut out = format!(
            "Job {} (Kubernetes {}): {} failed, {} succeeded{}\n",
            self.job,
            self.kubernetes_version,
            self.failed,
            self.succeeded,
            self.finished
                .as_ref()
                .map(|f| format!("; finished: {f}"))
                .unwrap_or_default()
        );
        out += "\nFailed pods:\n";
        if self.failed_pods.is_empty() {
            out += "  none\n";
        } else {
            out += &indent(&trim_lines(&self.table().to_string()));
        }
        out += "\nLimits:\n";
        let mut limits = new_table(["limit", "value", "used", "remaining"]);
        for l in &self.limits {
            limits.add_row(vec![
                l.limit.clone(),
                l.value.clone(),
                l.used.clone(),
                l.remaining.clone(),
            ]);
        }
        out += &indent(&trim_lines(&limits.to_string()));
        out += "\nThe next failure:\n";
        let mut next = new_table(["if a pod is", "rule", "action", "then"]);
        for n in &self.next {
            next.add_row(vec![
                n.failure.clone(),
                n.rule.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                n.action.clone(),
                n.outcome.clone(),
            ]);
        }
        out += &indent(&trim_lines(&next.to_string()));
        out
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
