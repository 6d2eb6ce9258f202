//! Everything that reaches the user: data printers (stdout), colour, progress and prompts
//! (stderr). Data never goes to stderr and chatter never goes to stdout, so `-o json | jq` works.
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use colored::Colorize;
use comfy_table::{ContentArrangement, Table, presets};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::cli::{ColorMode, OutputFormat};
use crate::error::{Error, Result};

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

/// comfy-table pads the last column; kubectl does not.
pub fn trim_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
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

/// Decides colour once at start-up. `auto` colours only a terminal and honours NO_COLOR
/// (https://no-color.org); an explicit `always` wins over NO_COLOR.
pub fn init(color: ColorMode, verbosity: u8) {
    VERBOSITY.store(verbosity, Ordering::Relaxed);
    let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let enabled = use_color(color, no_color_env, std::io::stdout().is_terminal());
    colored::control::set_override(enabled);
}

pub fn use_color(mode: ColorMode, no_color_env: bool, stdout_is_terminal: bool) -> bool {
    match mode {
        ColorMode::Always => true,
        ColorMode::Never => false,
        ColorMode::Auto => !no_color_env && stdout_is_terminal,
    }
}

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

/// Writes `value` to `out` in the chosen format.
pub fn render<T: Serialize + Tabular>(
    value: &T,
    format: OutputFormat,
    out: &mut dyn Write,
) -> Result<()> {
    match format {
        OutputFormat::Table => write!(out, "{}", value.text())?,
        OutputFormat::Markdown => write!(out, "{}", value.markdown())?,
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, value)
                .map_err(|e| Error::Output(e.to_string()))?;
            writeln!(out)?;
        }
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(value).map_err(|e| Error::Output(e.to_string()))?;
            write!(out, "{text}")?;
        }
    }
    Ok(())
}

/// Prints `value` on stdout.
pub fn print<T: Serialize + Tabular>(value: &T, format: OutputFormat) -> Result<()> {
    // Stdout is line-buffered: big JSON reports would cost one write per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    render(value, format, &mut out)?;
    out.flush()?;
    Ok(())
}

/// A log line on stderr, shown when -v was given at least `level` times.
pub fn log(level: u8, message: impl AsRef<str>) {
    if VERBOSITY.load(Ordering::Relaxed) >= level {
        eprintln!("{}", message.as_ref().dimmed());
    }
}

/// A warning on stderr, always shown.
pub fn warn(message: impl AsRef<str>) {
    eprintln!("{} {}", "warning:".yellow().bold(), message.as_ref());
}

/// A progress bar on stderr that draws only when stderr is a terminal.
pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed} in this step)",
        )
        .expect("static template is valid")
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Asks before doing `action`. `--yes` skips the question; without a terminal there is nobody to
/// ask, so it fails with a message that names --yes instead of hanging or guessing.
pub fn confirm(action: &str, assume_yes: bool) -> Result<()> {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    confirm_with(action, assume_yes, interactive, |question| {
        dialoguer::Confirm::new()
            .with_prompt(question)
            .default(false)
            .interact()
            .map_err(|e| Error::Output(e.to_string()))
    })
}

/// The testable core of [`confirm`]: `ask` is only called on a terminal.
pub fn confirm_with(
    action: &str,
    assume_yes: bool,
    interactive: bool,
    ask: impl FnOnce(&str) -> Result<bool>,
) -> Result<()> {
    if assume_yes {
        return Ok(());
    }
    if !interactive {
        return Err(Error::ConfirmationNeeded {
            action: action.to_string(),
        });
    }
    if ask(&format!("{action}. Continue?"))? {
        Ok(())
    } else {
        Err(Error::Cancelled(format!("{action} was not confirmed")))
    }
}

/// Appends `value` to `out` exactly as `serde_json::to_writer_pretty` writes it, as if nested
/// `level` deep (two spaces a level). Going through serde's serializer took as long as computing
/// the LCD manifests that `schema-diff --lcd` prints, tens of megabytes of them.
pub fn push_json_pretty(out: &mut Vec<u8>, value: &serde_json::Value, level: usize) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => push_json_bool(out, *b),
        Value::Number(n) => {
            use std::io::Write;
            write!(out, "{n}").expect("writing to memory");
        }
        Value::String(s) => push_json_string(out, s),
        Value::Array(items) => {
            let mut array = PrettyJson::array(out, level);
            for item in items {
                push_json_pretty(array.item(), item, level + 1);
            }
            array.end();
        }
        Value::Object(map) => {
            let mut object = PrettyJson::object(out, level);
            for (key, item) in map {
                push_json_pretty(object.key(key), item, level + 1);
            }
            object.end();
        }
    }
}

pub fn push_json_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// An object or array being written as [`push_json_pretty`] writes them, member by member, for
/// writers of other data than `serde_json::Value`s. Each member's value is to be written at
/// `level + 1`.
pub struct PrettyJson<'o> {
    out: &'o mut Vec<u8>,
    level: usize,
    close: u8,
    members: usize,
}

impl<'o> PrettyJson<'o> {
    pub fn object(out: &'o mut Vec<u8>, level: usize) -> Self {
        out.push(b'{');
        PrettyJson {
            out,
            level,
            close: b'}',
            members: 0,
        }
    }

    pub fn array(out: &'o mut Vec<u8>, level: usize) -> Self {
        out.push(b'[');
        PrettyJson {
            out,
            level,
            close: b']',
            members: 0,
        }
    }

    /// Starts the next element of an array; its value is to be written to what this returns.
    pub fn item(&mut self) -> &mut Vec<u8> {
        self.out
            .extend_from_slice(if self.members == 0 { b"\n" } else { b",\n" });
        push_indent(self.out, self.level + 1);
        self.members += 1;
        self.out
    }

    /// Starts the next member of an object with its key; its value is to be written to what
    /// this returns.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.item();
        push_json_string(self.out, key);
        self.out.extend_from_slice(b": ");
        self.out
    }

    /// Closes it: `{}` or `[]` when it has no members.
    pub fn end(self) {
        if self.members > 0 {
            self.out.push(b'\n');
            push_indent(self.out, self.level);
        }
        self.out.push(self.close);
    }
}

/// Two spaces per level.
fn push_indent(out: &mut Vec<u8>, level: usize) {
    const SPACES: &[u8] = &[b' '; 64];
    match SPACES.get(..2 * level) {
        Some(spaces) => out.extend_from_slice(spaces),
        None => out.extend(std::iter::repeat_n(b' ', 2 * level)),
    }
}

/// A JSON string, escaped as serde_json escapes it: quote, backslash and the control
/// characters (`\b \t \n \f \r` by name, the others as `\u00xx`), nothing else.
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // Per byte: 0 for none, the letter of a short escape, or `u` for `\u00xx`.
    const ESCAPE: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut b = 0;
        while b < 0x20 {
            table[b] = b'u';
            b += 1;
        }
        table[0x08] = b'b';
        table[0x09] = b't';
        table[0x0a] = b'n';
        table[0x0c] = b'f';
        table[0x0d] = b'r';
        table[b'"' as usize] = b'"';
        table[b'\\' as usize] = b'\\';
        table
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut from = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none of them needs escaping (most text).
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape = ESCAPE[usize::from(b)];
        i += 1;
        if escape == 0 {
            continue;
        }
        let i = i - 1;
        out.extend_from_slice(&bytes[from..i]);
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// Whether any of the eight bytes in `word` is a control character, a quote or a backslash
/// (the classic "has a zero byte" bit trick, exact for "any").
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    below_space
        | zero_in(word ^ (ONES * u64::from(b'"')))
        | zero_in(word ^ (ONES * u64::from(b'\\')))
        != 0
}

#[cfg(test)]
pub(crate) mod tests {
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

    #[test]
    fn colour_follows_the_flag_the_terminal_and_no_color() {
        assert!(use_color(ColorMode::Auto, false, true));
        assert!(
            !use_color(ColorMode::Auto, true, true),
            "NO_COLOR disables auto"
        );
        assert!(
            !use_color(ColorMode::Auto, false, false),
            "no colour off a terminal"
        );
        assert!(
            use_color(ColorMode::Always, true, false),
            "an explicit flag wins"
        );
        assert!(!use_color(ColorMode::Never, false, true));
    }

    #[test]
    fn confirmation_off_a_terminal_names_yes_and_never_asks() {
        let err =
            confirm_with("migrate web", false, false, |_| panic!("must not prompt")).unwrap_err();
        assert!(err.to_string().contains("--yes"), "{err}");
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn yes_skips_the_question_and_a_no_cancels() {
        confirm_with("x", true, false, |_| panic!("must not prompt")).unwrap();
        confirm_with("x", false, true, |_| Ok(true)).unwrap();
        let err = confirm_with("x", false, true, |_| Ok(false)).unwrap_err();
        assert!(matches!(err, Error::Cancelled(_)));
    }

    /// Any JSON value, with strings that need escaping (for the tests of other modules too).
    pub(crate) fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "(?s).{0,40}".prop_map(Value::String),
            "[a-z\"\\\\\n\t\r\u{1}\u{8}\u{c}\u{1f}\u{7f}é ]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("(?s).{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn pretty_json_is_serde_jsons(value in json_value()) {
            let mut ours = Vec::new();
            push_json_pretty(&mut ours, &value, 0);
            proptest::prop_assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string_pretty(&value).unwrap()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn words_need_escaping_where_a_byte_does(word in proptest::prelude::any::<u64>()) {
            let any_byte = word
                .to_le_bytes()
                .iter()
                .any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            proptest::prop_assert_eq!(needs_escape(word), any_byte);
        }
    }

    #[test]
    fn each_byte_that_needs_escaping_is_found_at_each_place() {
        for byte in 0..=u8::MAX {
            for place in 0..8 {
                let mut bytes = *b"abcdefgh";
                bytes[place] = byte;
                let escaped = byte < 0x20 || byte == b'"' || byte == b'\\';
                assert_eq!(
                    needs_escape(u64::from_le_bytes(bytes)),
                    escaped,
                    "byte {byte:#x} at {place}"
                );
            }
        }
    }

    #[test]
    fn pretty_json_nests_at_the_level_given() {
        let value = serde_json::json!({"a": [1, {"b": "c\u{1}\"", "d": {}}, []], "e": -0.5});
        let mut ours = b"[\n  ".to_vec();
        push_json_pretty(&mut ours, &value, 1);
        ours.extend_from_slice(b"\n]");
        let whole = serde_json::to_string_pretty(&serde_json::json!([value])).unwrap();
        assert_eq!(String::from_utf8(ours).unwrap(), whole);
    }
}
