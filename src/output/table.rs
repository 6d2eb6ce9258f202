//! kubectl-looking tables, and their Markdown form for pull-request comments.

use colored::Colorize;
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};

/// The spaces after each column but the last, as kubectl separates them.
const PADDING: u16 = 3;

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
        column.set_padding((0, PADDING));
    }
    table
}

/// What a free-text column keeps at least, when the terminal is narrow; and when even the
/// columns that may go have gone.
const FREE_TEXT_MIN: u16 = 16;
const FREE_TEXT_LEAST: u16 = 6;

/// Lays `table` out as kubectl does: a row is one line, and the table fits the terminal. Columns
/// are kept whole, except those in `free` (free text: messages, values), which share what the
/// terminal leaves and are cut with "…". Where even that does not fit, the groups of columns in
/// `drop` go, the first group first, as `kubectl get` leaves its wide columns out; and when
/// they have all gone, free text is cut further. `indent` is the room the caller puts before
/// each line. Off a terminal nothing is cut or left out,
/// unless $COLUMNS gives a width.
pub fn fit(table: &mut Table, free: &[usize], drop: &[&[usize]], indent: u16) {
    for row in table.row_iter_mut() {
        row.max_height(1);
    }
    if let Some(mut header) = table.header().cloned() {
        header.max_height(1);
        table.set_header(header);
    }
    let width = super::terminal::stdout_width().and_then(|w| u16::try_from(w).ok());
    let Some(width) = width.map(|w| w.saturating_sub(indent)) else {
        return;
    };
    // What each column needs at least, its padding included.
    let least: Vec<u16> = table
        .column_max_content_widths()
        .iter()
        .enumerate()
        .map(|(i, &content)| {
            let content = if free.contains(&i) {
                content.min(FREE_TEXT_MIN)
            } else {
                content
            };
            content + PADDING
        })
        .collect();
    let hidden = dropped(&least, drop, width);
    // Still too wide: free text gives way further, the last column first.
    let mut least = least;
    let mut excess = needed(&least, &hidden).saturating_sub(u32::from(width));
    for i in free.iter().rev().filter(|i| !hidden.contains(i)) {
        let Some(column) = least.get_mut(*i) else {
            continue;
        };
        let room = column.saturating_sub(FREE_TEXT_LEAST + PADDING);
        let take = room.min(u16::try_from(excess).unwrap_or(u16::MAX));
        *column -= take;
        excess -= u32::from(take);
    }
    // The last column shown needs no padding after it.
    let last = (0..least.len()).rev().find(|i| !hidden.contains(i));
    for (i, column) in table.column_iter_mut().enumerate() {
        if hidden.contains(&i) {
            column.set_constraint(ColumnConstraint::Hidden);
            continue;
        }
        let mut least = least[i];
        if Some(i) == last {
            column.set_padding((0, 0));
            least -= PADDING;
        }
        // A constraint's width counts the padding too.
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
    }
    table.set_width(width);
}

/// PURE: the columns to leave out so that the rest fit in `width`: whole groups of `drop`, in
/// order, until the columns left need no more than `width` (see [`needed`]).
fn dropped(least: &[u16], drop: &[&[usize]], width: u16) -> Vec<usize> {
    let mut hidden: Vec<usize> = Vec::new();
    for group in drop {
        if needed(least, &hidden) <= u32::from(width) {
            break;
        }
        hidden.extend(group.iter().filter(|i| **i < least.len()));
    }
    hidden
}

/// PURE: the width of a table whose columns need `least` each, a padding of [`PADDING`]
/// included, with the `hidden` ones left out: the last column shown needs no padding.
fn needed(least: &[u16], hidden: &[usize]) -> u32 {
    let shown: u32 = (0..least.len())
        .filter(|i| !hidden.contains(i))
        .map(|i| u32::from(least[i]))
        .sum();
    shown.saturating_sub(u32::from(PADDING))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_go_in_order_until_the_rest_fits() {
        // Three columns of 10, 20 and 30 (padding included): 57 wide, the last one unpadded.
        let least = [10, 20, 30];
        assert_eq!(needed(&least, &[]), 57);
        assert_eq!(dropped(&least, &[&[1], &[0]], 57), Vec::<usize>::new());
        assert_eq!(dropped(&least, &[&[1], &[0]], 56), [1]);
        assert_eq!(dropped(&least, &[&[1], &[0]], 20), [1, 0]);
        // A group goes whole; what does not exist is left alone.
        assert_eq!(dropped(&least, &[&[0, 1, 7]], 40), [0, 1]);
        assert_eq!(needed(&least, &[0, 1]), 27);
    }
}
