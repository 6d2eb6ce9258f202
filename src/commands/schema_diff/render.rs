//! The human renderings of schema-diff's reports: a table grouped by API and version, coloured
//! by class, and Markdown for pull-request comments.
use colored::Colorize;
use comfy_table::Table;

use crate::output::{Tabular, fit, indent, markdown_table, new_table, trim_lines};
use crate::schema::diff::Class;
use crate::schema::model::version_priority;
use crate::schema::report::{ApiReport, FindingReport, ObjectReport, Report};
use crate::schema::source::Origin;
use crate::words::count;

/// Shorter names for the table; JSON keeps the schema keywords.
fn short_attribute(attribute: &str) -> &str {
    match attribute {
        "x-kubernetes-validations" => "CEL rule",
        "x-kubernetes-preserve-unknown-fields" => "preserve-unknown",
        "x-kubernetes-embedded-resource" => "embedded-resource",
        "x-kubernetes-list-type" => "list-type",
        "x-kubernetes-list-map-keys" => "list-map-keys",
        "x-kubernetes-map-type" => "map-type",
        other => other,
    }
}

pub(super) fn paint_class(class: Class) -> String {
    let text = class.as_str();
    match class {
        Class::Breaking => text.red().bold().to_string(),
        Class::Compatible => text.green().to_string(),
        Class::Unproven => text.yellow().to_string(),
        Class::ChangesStoredData | Class::ChangesSelection => text.magenta().to_string(),
        Class::Informational => text.dimmed().to_string(),
    }
}

/// Column headers for sources: context names as they are; file paths without the leading and
/// trailing path components they all share, so two releases of one file fit side by side.
pub fn short_labels(labels: &[String]) -> Vec<String> {
    let files: Vec<Vec<&str>> = labels
        .iter()
        .filter(|l| l.contains('/'))
        .map(|l| l.split('/').filter(|c| !c.is_empty()).collect())
        .collect();
    let (mut lead, mut trail) = (0, 0);
    if files.len() >= 2 {
        let shortest = files.iter().map(Vec::len).min().unwrap_or(0);
        while lead < shortest && files.iter().all(|f| f[lead] == files[0][lead]) {
            lead += 1;
        }
        while trail < shortest - lead
            && files
                .iter()
                .all(|f| f[f.len() - 1 - trail] == files[0][files[0].len() - 1 - trail])
        {
            trail += 1;
        }
    }
    labels
        .iter()
        .map(|l| {
            if !l.contains('/') {
                return l.clone();
            }
            let parts: Vec<&str> = l.split('/').filter(|c| !c.is_empty()).collect();
            if files.len() >= 2 && lead + trail < parts.len() {
                parts[lead..parts.len() - trail].join("/")
            } else {
                parts.last().copied().unwrap_or(l).to_string()
            }
        })
        .collect()
}

/// Long values (patterns, CEL rules) are cut around where they first differ, so the table shows
/// the difference rather than a shared prefix.
pub fn focus(values: &[Option<String>], width: usize) -> Vec<Option<String>> {
    let present: Vec<Vec<char>> = values
        .iter()
        .flatten()
        .map(|v| v.chars().collect())
        .collect();
    if present.iter().all(|v| v.len() <= width) {
        return values.to_vec();
    }
    let first_difference = (0..)
        .find(|&i| {
            let c = present.first().and_then(|v| v.get(i));
            present.iter().any(|v| v.get(i) != c) || present.iter().all(|v| v.len() <= i)
        })
        .unwrap_or(0);
    let start = first_difference.saturating_sub(width / 3);
    values
        .iter()
        .map(|v| {
            v.as_ref().map(|v| {
                let chars: Vec<char> = v.chars().collect();
                let end = (start + width).min(chars.len());
                let begin = start.min(end);
                let mut text: String = chars[begin..end].iter().collect();
                if begin > 0 {
                    text = format!("…{text}");
                }
                if end < chars.len() {
                    text.push('…');
                }
                text
            })
        })
        .collect()
}

impl ApiReport {
    fn presence_table(&self) -> Table {
        let labels: Vec<String> = self.presence.iter().map(|p| p.source.clone()).collect();
        let mut headers = vec!["version".to_string()];
        headers.extend(short_labels(&labels));
        let mut table = new_table(headers);
        let mut versions: Vec<&String> = self
            .presence
            .iter()
            .flat_map(|p| p.versions.iter().map(|v| &v.name))
            .collect();
        versions.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
        versions.dedup();
        for v in versions {
            let mut row = vec![v.clone()];
            for p in &self.presence {
                row.push(match p.versions.iter().find(|x| &x.name == v) {
                    Some(x) => {
                        let mut flags = vec![if x.served { "served" } else { "not served" }];
                        if x.storage {
                            flags.push("storage");
                        }
                        flags.join(", ")
                    }
                    None if p.present => "-".into(),
                    None => "(no such API)".into(),
                });
            }
            table.add_row(row);
        }
        if self.presence.iter().any(|p| !p.present)
            || self
                .presence
                .iter()
                .any(|p| p.scope != self.presence[0].scope)
        {
            let mut row = vec!["(scope)".to_string()];
            row.extend(
                self.presence
                    .iter()
                    .map(|p| p.scope.clone().unwrap_or_else(|| "-".into())),
            );
            table.add_row(row);
        }
        // Indented by two under the API's heading.
        fit(&mut table, &[], &[], 2);
        table
    }

    /// One table per version (API-level findings first), so the path column gets the room.
    fn findings_tables(&self, show_informational: bool) -> Vec<(String, Table)> {
        let shown: Vec<&FindingReport> = self
            .findings
            .iter()
            .filter(|f| show_informational || f.class != Class::Informational)
            .collect();
        let labels: Vec<String> = self.presence.iter().map(|p| p.source.clone()).collect();
        let mut groups: Vec<(Option<String>, Vec<&FindingReport>)> = Vec::new();
        for f in shown {
            match groups.iter_mut().find(|(v, _)| v == &f.version) {
                Some((_, list)) => list.push(f),
                None => groups.push((f.version.clone(), vec![f])),
            }
        }
        groups
            .into_iter()
            .map(|(version, findings)| {
                let mut headers: Vec<String> =
                    ["path", "change", "class"].map(String::from).to_vec();
                headers.extend(short_labels(&labels));
                let mut table = new_table(headers);
                for f in findings {
                    let mut row = vec![
                        if f.path.is_empty() {
                            "-".into()
                        } else {
                            f.path.clone()
                        },
                        format!("{} {}", short_attribute(&f.attribute), f.change),
                        paint_class(f.class),
                    ];
                    let values: Vec<Option<String>> = f
                        .values
                        .iter()
                        .map(|v| v.text.as_deref().map(str::to_string))
                        .collect();
                    row.extend(
                        focus(&values, 30)
                            .into_iter()
                            .map(|v| v.unwrap_or_else(|| "-".into())),
                    );
                    table.add_row(row);
                }
                // Paths, changes and classes are what people scan for: kept whole; the
                // sources' values give way, and on a narrow terminal go one by one, the first
                // source's first: the last source's value, what the field becomes, stays
                // longest (as `kubectl get` keeps its most useful columns).
                let values: Vec<usize> = (3..3 + labels.len()).collect();
                let drop: Vec<&[usize]> = values.chunks(1).collect();
                fit(&mut table, &values, &drop, 2);
                let title = match version {
                    Some(v) => format!("version {v}"),
                    None => "the API".to_string(),
                };
                (title, table)
            })
            .collect()
    }

    fn counts(&self) -> (usize, usize, usize) {
        let count = |c: Class| self.findings.iter().filter(|f| f.class == c).count();
        (
            count(Class::Breaking),
            count(Class::Compatible),
            count(Class::Informational),
        )
    }

    fn heading(&self) -> String {
        let scope = self
            .presence
            .iter()
            .find_map(|p| p.scope.clone())
            .unwrap_or_default();
        format!("{}  ({}, {scope})", self.name, self.kind)
    }

    /// One line per witness (short form, who rejects it, the proof) and per breaking finding
    /// without one (why).
    fn witness_lines(&self, show_informational: bool) -> Vec<String> {
        let mut lines = Vec::new();
        for f in &self.findings {
            if f.class == Class::Informational && !show_informational {
                continue;
            }
            let at = match &f.version {
                Some(v) => format!("{v} {} {}", f.path, f.rule),
                None => f.rule.clone(),
            };
            if let Some(w) = &f.witness {
                let what = format!("{} by", w.expect.words());
                let proof = w
                    .proof
                    .as_ref()
                    .map(|p| format!("; {}", p.verdict))
                    .unwrap_or_default();
                lines.push(format!("  {at}: {} ({what} {}{proof})", w.short, w.source));
            } else if let Some(why) = &f.no_witness
                && f.class != Class::Unproven
                && f.class.is_noticeable()
            {
                lines.push(format!("  {at}: no witness: {why}"));
            }
        }
        if !lines.is_empty() {
            lines.insert(0, "witnesses (accepted by the baseline):".into());
        }
        lines
    }

    fn lcd_lines(&self) -> Vec<String> {
        let Some(lcd) = &self.lcd else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        if lcd.exists {
            lines.push(format!(
                "LCD: exists; {} dropped",
                count(lcd.dropped.len() as i64, "field", "fields")
            ));
        } else {
            lines.push("LCD: none".to_string());
        }
        for d in &lcd.dropped {
            lines.push(format!(
                "  dropped {} {} (in {}): {}",
                d.version,
                d.path,
                d.sources.join(", "),
                d.reason
            ));
        }
        for c in &lcd.conflicts {
            let at = if c.version.is_empty() {
                String::new()
            } else {
                format!("{} {}: ", c.version, c.path)
            };
            lines.push(format!("  no LCD: {at}{}", c.reason));
        }
        lines
    }
}

impl Report {
    fn summary_line(&self) -> String {
        let s = &self.summary;
        // Short lines: prose is not cut to the terminal as table cells are.
        format!(
            "{} of {} {} across {}.\n{}.\n\
             Judged from {}; failing (--fail-on {}): {}.",
            s.apis_with_differences,
            count(s.apis as i64, "API", "APIs"),
            if s.apis_with_differences == 1 {
                "differs"
            } else {
                "differ"
            },
            count(self.sources.len() as i64, "source", "sources"),
            tally(|c| match c {
                Class::Breaking => s.breaking,
                Class::Unproven => s.unproven,
                Class::ChangesStoredData => s.changes_stored_data,
                Class::ChangesSelection => s.changes_selection,
                Class::Compatible => s.compatible,
                Class::Informational => s.informational,
            }),
            self.baseline,
            self.fail_on,
            s.failing
        )
    }
}

/// "2 breaking, 1 compatible, 0 informational": those three always, the other classes only
/// where there are some (most comparisons have no CEL rule added and no default removed).
fn tally(count: impl Fn(Class) -> usize) -> String {
    let always = [Class::Breaking, Class::Compatible, Class::Informational];
    Class::ALL
        .into_iter()
        .rev()
        .filter(|c| always.contains(c) || count(*c) > 0)
        .map(|c| format!("{} {}", count(c), c.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Tabular for Report {
    /// The summary as one table (used by generic renderers); `text` is the full report.
    fn table(&self) -> Table {
        let mut table = new_table(["api", "breaking", "compatible", "informational", "lcd"]);
        for api in &self.apis {
            let (b, c, i) = api.counts();
            let lcd = match &api.lcd {
                Some(l) if l.exists => format!("yes ({} dropped)", l.dropped.len()),
                Some(_) => "none".into(),
                None => "-".into(),
            };
            table.add_row(vec![
                api.name.clone(),
                b.to_string(),
                c.to_string(),
                i.to_string(),
                lcd,
            ]);
        }
        fit(&mut table, &[], &[&[3], &[2]], 0);
        table
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let full: Vec<String> = self.sources.iter().map(|s| s.label.clone()).collect();
        let short = short_labels(&full);
        let labels: Vec<String> = self
            .sources
            .iter()
            .zip(&short)
            .map(|(s, short)| {
                let what = match &s.origin {
                    Origin::Cluster { version, .. } => format!("cluster {version}"),
                    Origin::File { .. } => "file".to_string(),
                };
                let base = if s.label == self.baseline {
                    ", baseline"
                } else {
                    ""
                };
                if short == &s.label {
                    format!("  {} ({what}{base})", s.label)
                } else {
                    format!("  {short} = {} ({what}{base})", s.label)
                }
            })
            .collect();
        out += &format!("Sources:\n{}\n", labels.join("\n"));
        for api in &self.apis {
            let count = |c: Class| api.findings.iter().filter(|f| f.class == c).count();
            let i = count(Class::Informational);
            let hidden = !self.show_informational && i > 0;
            let no_findings = api.findings.len() == i && (hidden || i == 0);
            out += &format!("\n{}\n", api.heading().bold());
            out += &indent(&trim_lines(&api.presence_table().to_string()));
            for (title, t) in api.findings_tables(self.show_informational) {
                out += &format!("\n  {title}:\n");
                out += &indent(&trim_lines(&t.to_string()));
            }
            let mut tally = tally(count);
            if hidden {
                tally += " (hidden; --all shows them)";
            }
            if no_findings && !hidden {
                tally = "no differences".into();
            }
            out += &format!("  {tally}\n");
            for line in api.witness_lines(self.show_informational) {
                out += &format!("  {line}\n");
            }
            for line in api.lcd_lines() {
                out += &format!("  {line}\n");
            }
        }
        out += &format!("\n{}\n", self.summary_line());
        out
    }

    fn markdown(&self) -> String {
        let mut out = String::from("### kubectl migrate schema-diff\n\n");
        out += &format!("{}\n", self.summary_line());
        for api in &self.apis {
            out += &format!("\n#### `{}` ({})\n\n", api.name, api.kind);
            out += &markdown_table(&api.presence_table());
            for (title, t) in api.findings_tables(self.show_informational) {
                out += &format!("\n{title}:\n\n");
                out += &markdown_table(&t);
            }
            let lines = api.lcd_lines();
            if !lines.is_empty() {
                out += "\n";
                for l in lines {
                    out += &format!("- {}\n", l.trim());
                }
            }
        }
        out
    }
}

impl Tabular for ObjectReport {
    fn table(&self) -> Table {
        let mut table = new_table(["object", "source", "local", "server", "reasons"]);
        for o in &self.objects {
            for (i, r) in o.results.iter().enumerate() {
                let paint = |s: &str| match s {
                    "accepted" => s.green().to_string(),
                    "not-a-cluster" | "-" => s.dimmed().to_string(),
                    _ => s.red().bold().to_string(),
                };
                let mut reasons: Vec<String> = r.local_reasons.clone();
                reasons.extend(r.server_message.clone());
                if !r.unchecked.is_empty() {
                    reasons.push(format!(
                        "{} not checked locally",
                        count(
                            r.unchecked.len() as i64,
                            "CEL rule or format",
                            "CEL rules or formats"
                        )
                    ));
                }
                table.add_row(vec![
                    if i == 0 {
                        format!("{} ({})", o.object, o.file)
                    } else {
                        String::new()
                    },
                    r.source.clone(),
                    paint(&r.local),
                    paint(r.server.as_deref().unwrap_or("-")),
                    reasons.join("; "),
                ]);
            }
        }
        fit(&mut table, &[0, 4], &[], 0);
        table
    }
}
