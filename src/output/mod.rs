//! Everything that reaches the user: data printers (stdout), colour, progress and prompts
//! (stderr). Data never goes to stderr and chatter never goes to stdout, so `-o json | jq` works.
//!
//! Only the commands layer uses this module; the domain modules return data and events.
mod progress;
mod prompt;
mod table;
mod terminal;

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use colored::Colorize;
use comfy_table::Table;
use serde::Serialize;

use crate::cli::{ColorMode, OutputFormat};
use crate::error::{Error, Result};
pub use progress::{Progress, progress};
pub use prompt::{confirm, interactive};
pub use table::{fit, indent, markdown_table, new_table, trim_lines};
pub use terminal::{fill, fill_except_indented};

static VERBOSITY: AtomicU8 = AtomicU8::new(0);

/// Data that can be shown as a table as well as serialized.
pub trait Tabular {
    fn table(&self) -> Table;

    /// The human-readable text; one table unless a type needs more (groups, headings).
    fn text(&self) -> String {
        trim_lines(&self.table().to_string())
    }

    /// A Markdown rendering, for pull-request comments.
    fn markdown(&self) -> String {
        markdown_table(&self.table())
    }
}

/// Decides colour once at start-up. Colour is written, and each stream keeps it only when that
/// stream is a terminal: a table on a terminal is coloured while warnings piped to a file are
/// not, and the other way round. `auto` also honours NO_COLOR (https://no-color.org); an
/// explicit `always` wins over it, `never` writes none.
pub fn init(color: ColorMode, verbosity: u8) {
    VERBOSITY.store(verbosity, Ordering::Relaxed);
    anstream::ColorChoice::write_global(match color {
        ColorMode::Auto => anstream::ColorChoice::Auto,
        ColorMode::Always => anstream::ColorChoice::AlwaysAnsi,
        ColorMode::Never => anstream::ColorChoice::Never,
    });
    colored::control::set_override(color != ColorMode::Never);
}

/// The error of a failed write to stdout: [`Error::StdoutClosed`] when its reader has gone.
pub fn stdout_error(source: std::io::Error) -> Error {
    if source.kind() == std::io::ErrorKind::BrokenPipe {
        return Error::StdoutClosed;
    }
    Error::Io {
        what: "write to stdout".into(),
        source,
    }
}

/// Writes `value` to `out` in the chosen format; `out` is named `stream` in errors.
pub fn render<T: Serialize + Tabular>(
    value: &T,
    format: OutputFormat,
    out: &mut dyn Write,
) -> Result<()> {
    let written = match format {
        // Tables are laid out to the width already; the prose around them (notes, witnesses,
        // conditions) is broken at spaces, so that the terminal breaks no word.
        OutputFormat::Table => match terminal::stdout_width() {
            Some(width) => write!(out, "{}", terminal::fill_to(&value.text(), width)),
            None => write!(out, "{}", value.text()),
        },
        OutputFormat::Markdown => write!(out, "{}", value.markdown()),
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, value).map_err(|e| {
                if e.is_io() {
                    stdout_error(e.into())
                } else {
                    Error::Encode {
                        format: "JSON",
                        source: Box::new(e),
                    }
                }
            })?;
            writeln!(out)
        }
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(value).map_err(|e| Error::Encode {
                format: "YAML",
                source: Box::new(e),
            })?;
            write!(out, "{text}")
        }
    };
    written.map_err(stdout_error)
}

/// Stdout as the data goes out: colour kept only where it belongs (see [`init`]).
pub fn stdout() -> anstream::AutoStream<std::io::StdoutLock<'static>> {
    anstream::AutoStream::auto(std::io::stdout().lock())
}

/// Prints `value` on stdout.
pub fn print<T: Serialize + Tabular>(value: &T, format: OutputFormat) -> Result<()> {
    // Stdout is line-buffered: big JSON reports would cost one write per line.
    let mut out = std::io::BufWriter::new(stdout());
    render(value, format, &mut out)?;
    out.flush().map_err(stdout_error)
}

/// One line of JSON on stdout (an event of a stream, NDJSON).
pub fn print_json_line<T: Serialize>(value: &T) -> Result<()> {
    let line = serde_json::to_string(value).map_err(|e| Error::Encode {
        format: "JSON",
        source: Box::new(e),
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(stdout_error)
}

/// A log line on stderr, shown when -v was given at least `level` times.
pub fn log(level: u8, message: impl AsRef<str>) {
    if VERBOSITY.load(Ordering::Relaxed) >= level {
        anstream::eprintln!("{}", fill(message.as_ref()).dimmed());
    }
}

/// A warning on stderr, always shown.
pub fn warn(message: impl AsRef<str>) {
    let warning = format!("{} {}", "warning:".yellow().bold(), message.as_ref());
    anstream::eprintln!("{}", fill(&warning));
}

/// `n` and its noun as a person says them: "1 ordinal", "3 ordinals", "0 ordinals".
pub fn counted(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: String,
        count: u32,
    }

    impl Tabular for Row {
        fn table(&self) -> Table {
            let mut t = new_table(["name", "count"]);
            t.add_row([self.name.clone(), self.count.to_string()]);
            t
        }
    }

    fn rendered(format: OutputFormat) -> String {
        colored::control::set_override(false);
        let mut out = Vec::new();
        render(
            &Row {
                name: "web".into(),
                count: 3,
            },
            format,
            &mut out,
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_count_is_said_with_its_noun() {
        assert_eq!(counted(1u64, "ordinal"), "1 ordinal");
        assert_eq!(counted(0u64, "ordinal"), "0 ordinals");
        assert_eq!(counted(3u64, "ordinal"), "3 ordinals");
    }

    #[test]
    fn table_json_and_yaml_carry_the_same_data() {
        let table = rendered(OutputFormat::Table);
        assert_eq!(
            table
                .lines()
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["NAME", "COUNT"]
        );
        assert_eq!(
            table
                .lines()
                .nth(1)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["web", "3"]
        );
        let json: serde_json::Value = serde_json::from_str(&rendered(OutputFormat::Json)).unwrap();
        assert_eq!(json, serde_json::json!({"name": "web", "count": 3}));
        let yaml: serde_json::Value =
            serde_saphyr::from_str(&rendered(OutputFormat::Yaml)).unwrap();
        assert_eq!(yaml, json);
        assert_eq!(
            rendered(OutputFormat::Markdown),
            "| NAME | COUNT |\n|---|---|\n| web | 3 |\n"
        );
    }

    /// A failed write names the stream, not "cannot write output"; a closed pipe is its own
    /// error, which ends the process quietly.
    #[test]
    fn a_failed_write_names_stdout_and_a_closed_pipe_is_told_apart() {
        struct Failing(std::io::ErrorKind);
        impl Write for Failing {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(self.0.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let row = Row {
            name: "web".into(),
            count: 3,
        };
        let full = std::io::ErrorKind::StorageFull;
        let err = render(&row, OutputFormat::Table, &mut Failing(full)).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot write to stdout"),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());
        let closed = std::io::ErrorKind::BrokenPipe;
        let err = render(&row, OutputFormat::Json, &mut Failing(closed)).unwrap_err();
        assert!(err.is_stdout_closed(), "{err}");
        assert!(err.exit_at_least(2).is_stdout_closed());
    }
}
