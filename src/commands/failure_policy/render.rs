//! The human renderings of failure-policy's reports: the timeline, the check and the
//! explanation as tables.
use colored::Colorize;
use comfy_table::Table;

use crate::failure_policy::check::Support;
use crate::failure_policy::engine::Condition;
use crate::failure_policy::report::{
    CheckReport, ExplainReport, FailedPodLine, Limit, SimulateReport,
};
use crate::output::{Tabular, fit, indent, new_table, trim_lines};

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
        .join("; ")
}

/// The index of the column headed `name`, as a group of [`fit`]'s columns to leave out.
fn table_column(headers: &[&str], name: &str) -> Vec<usize> {
    headers
        .iter()
        .position(|h| *h == name)
        .into_iter()
        .collect()
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
        let mut table = new_table(&headers);
        for s in &self.simulation.steps {
            let mut row = vec![
                s.outcome.map_or_else(|| "-".into(), |n| n.to_string()),
                format!("{}s", s.at_seconds),
            ];
            if indexed {
                row.push(s.index.map(|i| i.to_string()).unwrap_or_else(|| "-".into()));
            }
            let result = match s.result.as_str() {
                "failed" | "deleted" => s.result.red().to_string(),
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
                if s.result == "failed" || s.result == "deleted" {
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
                    notes.push_str("; ");
                }
                notes.push_str(&n.dimmed().to_string());
            }
            row.push(if notes.is_empty() { "-".into() } else { notes });
            table.add_row(row);
        }
        // The last column (conditions and notes) is free text. On a narrow terminal the
        // columns the outcome's consequences do not hang on go.
        let last = table.column_count().saturating_sub(1);
        let column = |name: &str| table_column(&headers, name);
        fit(
            &mut table,
            &[last],
            &[
                &column("next pod in"),
                &column("at"),
                &column("succeeded"),
                &column("counted"),
            ],
            0,
        );
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
        // Every row is a feature the Job uses: that column goes first.
        fit(&mut table, &[0, 3], &[&[1]], 0);
        table
    }

    fn text(&self) -> String {
        let mut out = String::new();
        if self.valid {
            // The first word is the verdict the exit code gives.
            out += &match self.verdict.as_str() {
                "unsupported" => format!(
                    "{} Job {:?} passes the API server's validation of the Job spec and of its containers' names and images, but uses a feature that is off at Kubernetes {} (below)\n",
                    "unsupported:".red().bold(),
                    self.job,
                    self.kubernetes_version
                ),
                "rejected" => format!(
                    "{} Job {:?} passes the local validation, but the server's dry run rejected it (below)\n",
                    "rejected:".red().bold(),
                    self.job
                ),
                // Only what was checked is claimed: without a dry run, the Job spec's
                // validation and of the pod template only its containers' names and images.
                _ if self.server.as_ref().is_some_and(|s| s.accepted) => format!(
                    "{} Job {:?} passes the API server's validation, and its dry run accepts it\n",
                    "valid:".green().bold(),
                    self.job
                ),
                _ => format!(
                    "{} Job {:?} passes the API server's validation of the Job spec and of its containers' names and images; the rest of the pod template is not checked (check --context runs the server's dry run)\n",
                    "valid:".green().bold(),
                    self.job
                ),
            };
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
                    let note = s
                        .message
                        .as_ref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default();
                    format!("{}{note}", "accepted".green())
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

/// `main=1 sidecar=0`, init containers as `init:setup=5`.
fn exit_codes_text(p: &FailedPodLine) -> String {
    let codes: Vec<String> = p
        .exit_codes
        .iter()
        .map(|(c, code)| format!("{c}={code}"))
        .chain(
            p.init_exit_codes
                .iter()
                .map(|(c, code)| format!("init:{c}={code}")),
        )
        .collect();
    if codes.is_empty() {
        "-".into()
    } else {
        codes.join(" ")
    }
}

/// A limit as a person reads it: units, the index it concerns, and what is left in words.
fn limit_row(l: &Limit) -> Vec<String> {
    let unlimited = || "unlimited".to_string();
    match l.limit.as_str() {
        "activeDeadlineSeconds" => vec![
            l.limit.clone(),
            l.value.map_or_else(unlimited, |v| format!("{v}s")),
            format!("{}s", l.used),
            l.remaining.map_or_else(unlimited, |r| format!("{r}s")),
        ],
        "backoffLimitPerIndex" => vec![
            l.limit.clone(),
            l.value.map_or_else(unlimited, |v| v.to_string()),
            match l.index {
                Some(i) => format!("{} (index {i})", l.used),
                None => l.used.to_string(),
            },
            match (l.index, l.remaining) {
                (Some(_), Some(r)) => format!("the worst index tolerates {r} more"),
                (None, Some(r)) => format!("every index tolerates {r}"),
                (_, None) => unlimited(),
            },
        ],
        "maxFailedIndexes" => vec![
            l.limit.clone(),
            l.value.map_or_else(unlimited, |v| v.to_string()),
            match l.indexes.as_deref().filter(|i| !i.is_empty()) {
                Some(indexes) => format!("{} ({indexes})", l.used),
                None => l.used.to_string(),
            },
            l.remaining.map_or_else(unlimited, |r| {
                format!("{r} more failed index(es) tolerated")
            }),
        ],
        _ => vec![
            l.limit.clone(),
            l.value.map_or_else(unlimited, |v| v.to_string()),
            l.used.to_string(),
            l.remaining.map_or_else(unlimited, |r| {
                format!("{r} more counted failure(s) tolerated")
            }),
        ],
    }
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
                exit_codes_text(p),
                if p.conditions.is_empty() {
                    "-".into()
                } else {
                    p.conditions
                        .iter()
                        .map(|c| {
                            // True is the usual case; any other status is spelt out.
                            let status = if c.status == "True" {
                                String::new()
                            } else {
                                format!("={}", c.status)
                            };
                            match &c.reason {
                                Some(r) => format!("{}{status}/{r}", c.type_),
                                None => format!("{}{status}", c.type_),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
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
        // Shown indented under "Failed pods:"; exit codes and conditions give way, then
        // whether it counted, the conditions and the index go.
        fit(&mut table, &[2, 3], &[&[6], &[3], &[1]], 2);
        table
    }

    fn text(&self) -> String {
        let mut out = format!(
            "Job {} (Kubernetes {}): {} failed, {} succeeded{}\n",
            self.job,
            self.kubernetes_version,
            self.failed,
            self.succeeded,
            match (&self.finished, &self.ending) {
                (Some(f), _) => format!("; finished: {f}"),
                (None, Some(e)) => format!("; ending: {e} (pods terminating)"),
                (None, None) => String::new(),
            }
        );
        if self.changing {
            out += "  (the Job kept changing while it was read: the controller is updating it; counts may not agree)\n";
        }
        if !self.conditions.is_empty() {
            out += "\nConditions:\n";
            for c in &self.conditions {
                out += &format!(
                    "  {}{}{}\n",
                    c.type_,
                    c.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default(),
                    c.message
                        .as_ref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                );
            }
        }
        out += "\nFailed pods:\n";
        if self.failed_pods.is_empty() {
            out += "  none\n";
        } else {
            out += &indent(&trim_lines(&self.table().to_string()));
            for p in &self.failed_pods {
                if let Some(why) = &p.no_rule_matched {
                    out += &format!("  {}: no rule matched: {why}\n", p.pod);
                }
            }
        }
        if !self.terminating_pods.is_empty() {
            out += "\nTerminating pods (deleted, not stopped yet):\n";
            for t in &self.terminating_pods {
                let index = t.index.map(|i| format!(" (index {i})")).unwrap_or_default();
                out += &format!("  {}{index}: {}\n", t.pod, t.why);
            }
        }
        if let Some(gone) = &self.failures_without_pod {
            out += &format!(
                "\n{} of the {} counted failures have no pod any more: {}\n",
                gone.count, self.failed, gone.why
            );
        }
        out += "\nLimits:\n";
        let mut limits = new_table(["limit", "value", "used", "remaining"]);
        for l in &self.limits {
            limits.add_row(limit_row(l));
        }
        fit(&mut limits, &[3], &[], 2);
        out += &indent(&trim_lines(&limits.to_string()));
        if self.next.is_empty() {
            out += "\nThe next failure: none, the Job has finished\n";
            return out;
        }
        let index = self.next.first().and_then(|n| n.index);
        out += &match index {
            Some(i) => format!(
                "\nThe next failure, of index {i} (the running index closest to its limit):\n"
            ),
            None => "\nThe next failure:\n".to_string(),
        };
        let mut headers = vec!["if a pod is"];
        if index.is_some() {
            headers.push("index");
        }
        headers.extend(["rule", "action", "then"]);
        let then = headers.len() - 1;
        let mut next = new_table(headers);
        for n in &self.next {
            let mut row = vec![n.failure.clone()];
            if let Some(i) = n.index {
                row.push(i.to_string());
            }
            row.extend([
                n.rule.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                n.action.clone(),
                n.outcome.clone(),
            ]);
            next.add_row(row);
        }
        fit(&mut next, &[then], &[], 2);
        out += &indent(&trim_lines(&next.to_string()));
        out
    }
}

impl Tabular for crate::failure_policy::versions::VersionComparison {
    fn table(&self) -> Table {
        let mut table = new_table([
            "#".to_string(),
            "what".to_string(),
            self.labels[0].clone(),
            self.labels[1].clone(),
        ]);
        for d in &self.differences {
            table.add_row(vec![
                d.outcome.map_or_else(|| "end".into(), |n| n.to_string()),
                d.what.clone(),
                d.values[0].clone(),
                d.values[1].clone(),
            ]);
        }
        fit(&mut table, &[2, 3], &[], 0);
        table
    }

    fn text(&self) -> String {
        let [a, b] = &self.labels;
        let mut out = format!("Job {}, {a} vs {b}: ", self.job);
        if self.differences.is_empty() {
            out += "the same, outcome by outcome\n";
        } else {
            out += &format!(
                "{} difference(s); the final status {}\n\n",
                self.differences.len(),
                if self.final_differs {
                    "differs".red().bold().to_string()
                } else {
                    "is the same".green().to_string()
                }
            );
            out += &trim_lines(&self.table().to_string());
        }
        out += "\nThe final status:";
        for (label, s) in self.labels.iter().zip(&self.simulations) {
            let f = &s.simulation.final_status;
            let conditions = if f.conditions.is_empty() {
                "no conditions".to_string()
            } else {
                conditions_text(&f.conditions)
            };
            out += &format!(
                "\n{label}: {} failed, {} succeeded; {conditions}",
                f.failed, f.succeeded
            );
        }
        out.push('\n');
        out
    }
}
