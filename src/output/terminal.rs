//! The terminal on stderr, where questions and progress are drawn: its width, and whether it
//! echoes what is typed.
use std::io::IsTerminal;

use rustix::termios::{self, LocalModes, OptionalActions, Termios};

/// The width of the terminal on stderr; `None` off a terminal.
pub fn width() -> Option<usize> {
    columns(std::io::stderr())
}

/// The columns of the terminal `stream` is; `None` off a terminal or when it reports none.
fn columns(stream: impl IsTerminal + std::os::fd::AsFd) -> Option<usize> {
    if !stream.is_terminal() {
        return None;
    }
    termios::tcgetwinsize(stream)
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
}

/// The width data on stdout is laid out to: the terminal's, or off a terminal what $COLUMNS
/// says (none when it says nothing), as kubectl lays out its tables.
pub fn stdout_width() -> Option<usize> {
    if std::io::stdout().is_terminal() {
        return columns(std::io::stdout());
    }
    std::env::var("COLUMNS").ok()?.parse().ok()
}

/// The terminal's echo as it was before an [`echo`] call, given back when this is dropped.
#[must_use = "the echo is restored when the guard is dropped"]
pub struct Echo {
    saved: Option<Termios>,
}

impl Drop for Echo {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stderr(), OptionalActions::Now, saved);
        }
    }
}

/// Turns the terminal's echo of typed keys on or off until the guard is dropped. Off while the
/// progress display is drawn: an echoed `^C` or Enter would move the cursor under it, and the
/// display, cleared and redrawn from where it thinks it is, would leave its old lines behind.
/// On while a question waits for its answer. Nothing changes off a terminal, or when this
/// process is not in the terminal's foreground (changing it from the background would stop
/// the process with SIGTTOU).
pub fn echo(on: bool) -> Echo {
    let unchanged = Echo { saved: None };
    let stderr = std::io::stderr();
    if !stderr.is_terminal() || termios::tcgetpgrp(&stderr).ok() != Some(rustix::process::getpgrp())
    {
        return unchanged;
    }
    let Ok(saved) = termios::tcgetattr(&stderr) else {
        return unchanged;
    };
    if saved.local_modes.contains(LocalModes::ECHO) == on {
        return unchanged;
    }
    let mut changed = saved.clone();
    changed.local_modes.set(LocalModes::ECHO, on);
    match termios::tcsetattr(&stderr, OptionalActions::Now, &changed) {
        Ok(()) => Echo { saved: Some(saved) },
        Err(_) => unchanged,
    }
}

/// `text` as it reads on the terminal on stderr: a line wider than the terminal is broken at
/// spaces, so that the terminal never breaks a word. Unchanged off a terminal. Only for prose:
/// a command to copy (a resume command) is left for the terminal to wrap, which copies back
/// as one line.
pub fn fill(text: &str) -> String {
    match width() {
        Some(width) => fill_to(text, width),
        None => text.to_string(),
    }
}

/// `text` as [`fill`] gives it, except lines indented by two spaces or more (a command to copy,
/// such as the resume command under "Resume with:"), which are left whole.
pub fn fill_except_indented(text: &str) -> String {
    match width() {
        Some(width) => text
            .split('\n')
            .map(|line| {
                if line.starts_with("  ") {
                    line.to_string()
                } else {
                    fill_to(line, width)
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => text.to_string(),
    }
}

/// PURE: `text` with each line broken at spaces to at most `width` columns (a word wider than
/// that stays whole); a continuation is indented under the text after the line's marker
/// (`10.`, `->`, `-`), or two columns in from the line.
pub fn fill_to(text: &str, width: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let hang = " ".repeat(hanging_indent(line));
        let options = textwrap::Options::new(width)
            .subsequent_indent(&hang)
            .break_words(false)
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            // Names are hyphenated (km-b, a-pv-075): never broken there.
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        out.push(textwrap::fill(line, options));
    }
    let mut filled = out.join("\n");
    if text.ends_with('\n') {
        filled.push('\n');
    }
    filled
}

/// Where the continuation of `line` starts: under the text after a list marker, else two
/// columns in from the line's own indentation.
fn hanging_indent(line: &str) -> usize {
    let rest = line.trim_start_matches(' ');
    let leading = line.len() - rest.len();
    let first = rest.split(' ').next().unwrap_or_default();
    let numbered = first.len() > 1
        && first.ends_with('.')
        && first[..first.len() - 1].bytes().all(|b| b.is_ascii_digit());
    if numbered || first == "->" || first == "-" {
        leading + first.len() + 1
    } else {
        leading + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_breaks_at_spaces_under_its_marker() {
        let plan = " 10. [4] scale source to 4 replicas and wait until pod 4 is gone (Terminating included) (km-a)\n";
        assert_eq!(
            fill_to(plan, 80),
            " 10. [4] scale source to 4 replicas and wait until pod 4 is gone (Terminating\n     included) (km-a)\n"
        );
        assert_eq!(
            fill_to(
                "-> set reclaim policy of PVs a-pv-043, a-pv-089 to Retain in km-a",
                40
            ),
            "-> set reclaim policy of PVs a-pv-043,\n   a-pv-089 to Retain in km-a"
        );
        assert_eq!(
            fill_to("   waiting for web-0: Pending, not scheduled", 30),
            "   waiting for web-0: Pending,\n     not scheduled"
        );
        // Colour takes no room; a word wider than the line is not cut.
        let warning = "\u{1b}[33mwarning:\u{1b}[0m PV a-pv-006 is a hostPath volume";
        assert_eq!(
            fill_to(warning, 30),
            "\u{1b}[33mwarning:\u{1b}[0m PV a-pv-006 is a\n  hostPath volume"
        );
        assert_eq!(
            fill_to("see https://example.com/a/very/long/path", 10),
            "see\n  https://example.com/a/very/long/path"
        );
        assert_eq!(fill_to("short\n\nlines", 80), "short\n\nlines");
        assert_eq!(
            fill_to("-> copy PVC data-web-4 to km-b", 25),
            "-> copy PVC data-web-4 to\n   km-b"
        );
    }
}
