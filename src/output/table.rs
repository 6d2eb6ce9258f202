//! kubectl-looking tables, and their Markdown form for pull-request comments.
use std::io::IsTerminal;

use colored::Colorize;
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};

/// A kubectl-looking table: no borders, upper-case headers, wrapped to the terminal if any.
pub fn new_table<I, S>(headers: I) -> Table
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(headers.into_iter().map(|h| {
            let h = h.as_ref().to_uppercase();
            if colored::control::SHOULD_COLORIZE.should_colorize() {
                h.bold().to_string()
            } else {
                h
            }
        }));
    for column in table.column_iter_mut() {
        column.set_padding((0, 3));
    }
    table
}

/// What a free-text column keeps at least, when the terminal is narrow.
const FREE_TEXT_MIN: u16 = 16;

/// Lays `table` out as kubectl does: a row is one line. Columns are kept whole, except those in
/// `free` (free text: messages, values), which share what the terminal leaves and are cut with
/// "…". `indent` is the room the caller puts before each line. Off a terminal nothing is cut,
/// unless $COLUMNS gives a width.
pub fn fit(table: &mut Table, free: &[usize], indent: u16) {
    let widths = table.column_max_content_widths();
    for (i, column) in table.column_iter_mut().enumerate() {
        let content = widths.get(i).copied().unwrap_or(0);
        // Free text keeps enough to be recognised; the rest is kept whole.
        let least = if free.contains(&i) {
            content.min(FREE_TEXT_MIN)
        } else {
            content
        };
        // A constraint's width counts the padding too.
        let least = least + column.padding_width();
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
    }
    for row in table.row_iter_mut() {
        row.max_height(1);
    }
    if let Some(mut header) = table.header().cloned() {
        header.max_height(1);
        table.set_header(header);
    }
    let width = if std::io::stdout().is_terminal() {
        table.width()
    } else {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
    };
    if let Some(width) = width {
        table.set_width(width.saturating_sub(indent));
    }
}

/// comfy-table pads the last column; kubectl does not.
pub fn trim_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Every line of `text`, indented by two spaces.
pub fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// A comfy table as a GitHub-flavoured Markdown table (colour codes removed).
pub fn markdown_table(table: &Table) -> String {
    let cell_text = |c: &comfy_table::Cell| {
        strip_ansi(&c.content())
            .replace('|', "\\|")
            .replace('\n', "<br>")
    };
    let mut out = String::new();
    if let Some(header) = table.header() {
        let cells: Vec<String> = header.cell_iter().map(cell_text).collect();
        out += &format!("| {} |\n", cells.join(" | "));
        out += &format!("|{}\n", "---|".repeat(cells.len()));
    }
    for row in table.row_iter() {
        let cells: Vec<String> = row.cell_iter().map(cell_text).collect();
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// Removes ANSI colour sequences (ESC [ ... m).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
