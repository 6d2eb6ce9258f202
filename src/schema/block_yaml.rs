//! A fast reader for the block-style YAML that CRD manifests are written in (controller-gen,
//! `kubectl get -o yaml`, Helm output): block mappings and sequences, plain, quoted and literal
//! scalars, comments and `---` separators. The one hand-written reader of the crate, fenced here.
//!
//! The reference reader, [`crate::manifest::yaml`] (granit-parser's events with the scalar rules
//! kubectl applies), is several times slower on such files (BENCHMARKS.md). This reader gives
//! the same values for the subset it knows, resolving plain scalars with the reference's own
//! [`yaml::resolve_plain`], and returns `None` for anything else: flow collections other than
//! `{}`, `[]` and a sequence of words on one line (`enum: [a, b]`, see [`flow_words`]), anchors, aliases, tags, folded or multi-line plain or quoted scalars, keys that
//! are not certainly strings, duplicate keys, tabs, carriage returns, YAML 1.1 line breaks
//! (NEL, LS, PS), `\/` escapes, nesting past [`MAX_DEPTH`], and every error. The caller then reads the file
//! with the reference reader: its values and its error messages. `tests` and the `manifest`
//! fuzz target (run in CI) compare the two.
//!
//! It reads into [`Json`], whose plain scalars and keys borrow from the text; the loader reads
//! files from that tree directly, [`parse_documents`] gives the `Value`s it turns into.
use std::borrow::Cow;

use serde_json::{Number, Value};

use super::json_view::{Json, JsonMap, JsonView};
use crate::manifest::yaml::{self, MAX_DEPTH, Scalar};

/// The documents of `text`, as [`yaml::documents`] gives them, or `None` when the text uses
/// something this reader leaves to it.
pub fn parse_documents(text: &str) -> Option<Vec<Value>> {
    let docs = parse_borrowed(text)?;
    Some(docs.iter().map(Json::to_value).collect())
}

/// [`parse_documents`], into the tree that borrows plain scalars and keys from `text`.
pub fn parse_borrowed(text: &str) -> Option<Vec<Json<'_>>> {
    if unprintable_tab_or_return(text) {
        return None;
    }
    let mut reader = Reader {
        text,
        pos: 0,
        peeked: std::cell::Cell::new(None),
        depth: 0,
    };
    let mut docs = Vec::new();
    // An optional `---` before the first document.
    reader.separator();
    loop {
        let doc = reader.document()?;
        // Empty documents are left out, as the tool leaves out the reference reader's nulls.
        if doc != Json::Null {
            docs.push(doc);
        }
        if reader.peek().is_none() {
            return Some(docs);
        }
        if !reader.separator() {
            return None;
        }
    }
}

/// Whether `text` has a tab, a carriage return or a byte-order mark (left to the reference
/// reader), or a character YAML does not allow in a stream (the reference reader's error): a
/// control character other than the line feed, DEL, a C1 control other than NEL, U+FFFE or U+FFFF.
fn unprintable_tab_or_return(text: &str) -> bool {
    text.bytes().any(|b| (b < 0x20 && b != b'\n') || b == 0x7f)
        || !text.is_ascii()
            && text.chars().any(|c| {
                // NEL, LS and PS break lines in YAML 1.1 (kubectl's reader) but not in 1.2.
                matches!(
                    c,
                    '\u{80}'
                        ..='\u{9f}'
                            | '\u{2028}'
                            | '\u{2029}'
                            | '\u{feff}'
                            | '\u{fffe}'
                            | '\u{ffff}'
                )
            })
}

struct Reader<'a> {
    text: &'a str,
    /// Always at the start of a line, or (after a sequence dash) at the content that follows it.
    pos: usize,
    /// What [`Reader::peek`] found last, and from where.
    peeked: std::cell::Cell<Option<(usize, Option<Line>)>>,
    /// How many collections enclose the one being read: past the reference reader's limit the
    /// file is left to it, which refuses it (this reader recurses and would run out of stack).
    depth: usize,
}

/// The next line with content.
#[derive(Clone, Copy)]
struct Line {
    /// Column of the first content byte.
    indent: usize,
    /// Byte offset of that content.
    start: usize,
    /// Byte offset of the line's end (its newline, or the end of the text).
    end: usize,
}

impl<'a> Reader<'a> {
    fn line_end(&self, from: usize) -> usize {
        memchr::memchr(b'\n', &self.text.as_bytes()[from..]).map_or(self.text.len(), |i| from + i)
    }

    fn line_start(&self, at: usize) -> usize {
        if at == 0 || self.text.as_bytes()[at - 1] == b'\n' {
            return at;
        }
        memchr::memrchr(b'\n', &self.text.as_bytes()[..at]).map_or(0, |i| i + 1)
    }

    /// The next line with content, skipping blank and comment lines, without consuming it.
    /// A document marker (`---`, `...`) or directive counts as content.
    fn peek(&self) -> Option<Line> {
        // Collections and scalars both look at the next line: find it once.
        if let Some((at, line)) = self.peeked.get()
            && at == self.pos
        {
            return line;
        }
        let line = self.find_next_line();
        self.peeked.set(Some((self.pos, line)));
        line
    }

    fn find_next_line(&self) -> Option<Line> {
        let bytes = self.text.as_bytes();
        let mut pos = self.pos;
        loop {
            if pos >= bytes.len() {
                return None;
            }
            let line_start = self.line_start(pos);
            let end = self.line_end(pos);
            let content = pos + leading_spaces(&bytes[pos..end]);
            if content < end && bytes[content] != b'#' {
                return Some(Line {
                    indent: content - line_start,
                    start: content,
                    end,
                });
            }
            pos = end + 1;
        }
    }

    /// Moves to the start of the line after `line`.
    fn consume(&mut self, line: Line) {
        self.pos = (line.end + 1).min(self.text.len());
    }

    fn is_marker(&self, line: Line) -> bool {
        let content = &self.text[line.start..line.end];
        line.indent == 0
            && (content.starts_with("---")
                || content.starts_with("...")
                || content.starts_with('%'))
    }

    /// Consumes a `---` line; false when the next line is not one.
    fn separator(&mut self) -> bool {
        match self.peek() {
            Some(line) if line.indent == 0 && &self.text[line.start..line.end] == "---" => {
                self.consume(line);
                true
            }
            _ => false,
        }
    }

    fn document(&mut self) -> Option<Json<'a>> {
        let Some(line) = self.peek() else {
            return Some(Json::Null);
        };
        if self.is_marker(line) {
            return Some(Json::Null);
        }
        if line.indent != 0 {
            return None;
        }
        let value = self.block(line)?;
        match self.peek() {
            None => Some(value),
            Some(next) if self.is_marker(next) => Some(value),
            Some(_) => None,
        }
    }

    /// A block collection starting at `line`.
    fn block(&mut self, line: Line) -> Option<Json<'a>> {
        if self.is_marker(line) {
            return None;
        }
        if is_dash(&self.text[line.start..line.end]) {
            self.sequence(line.indent)
        } else {
            self.mapping(line.indent)
        }
    }

    /// The next line of a collection at `indent`, with its content; `None` where the
    /// collection ends (a less indented line, a document marker, the end of the text).
    fn next_in(&self, indent: usize) -> Option<(Line, &'a str)> {
        let line = self.peek()?;
        if line.indent < indent || self.is_marker(line) {
            return None;
        }
        Some((line, &self.text[line.start..line.end]))
    }

    fn mapping(&mut self, indent: usize) -> Option<Json<'a>> {
        self.nested(|reader| reader.mapping_members(indent))
    }

    /// Reads one collection more deeply nested, unless that is deeper than the limit.
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Option<Json<'a>>) -> Option<Json<'a>> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        value
    }

    fn mapping_members(&mut self, indent: usize) -> Option<Json<'a>> {
        let mut members = Vec::new();
        while let Some((line, content)) = self.next_in(indent) {
            if line.indent > indent || is_dash(content) {
                return None;
            }
            let (key, rest) = split_key(content)?;
            let value =
                self.value_after(line, line.start + (content.len() - rest.len()), indent)?;
            members.push((Cow::Borrowed(key), value));
        }
        // A repeated key is left to the reference reader.
        JsonMap::from_unique(members).map(Json::Object)
    }

    fn sequence(&mut self, indent: usize) -> Option<Json<'a>> {
        self.nested(|reader| reader.sequence_items(indent))
    }

    fn sequence_items(&mut self, indent: usize) -> Option<Json<'a>> {
        let mut items = Vec::new();
        while let Some((line, content)) = self.next_in(indent) {
            if line.indent > indent {
                return None;
            }
            if !is_dash(content) {
                break;
            }
            let after = content[1..].trim_start_matches(' ');
            let after_start = line.end - after.len();
            if after.is_empty() || after.starts_with('#') {
                self.consume(line);
                items.push(self.nested_or_null(indent, false)?);
            } else if is_dash(after) || after.starts_with('?') {
                return None;
            } else if split_key(after).is_some() && !starts_quoted(after) {
                // A mapping that starts on the dash's line: continue reading there.
                self.pos = after_start;
                let column = after_start - self.line_start(after_start);
                items.push(self.mapping(column)?);
            } else {
                items.push(self.value_after(line, after_start, indent)?);
            }
        }
        Some(Json::Array(items))
    }

    /// The value that starts at byte `at` of `line` (after `key: ` or `- `), in a collection
    /// at `indent`; consumes it.
    fn value_after(&mut self, line: Line, at: usize, indent: usize) -> Option<Json<'a>> {
        let rest = &self.text[at..line.end];
        // Past the line; a quoted scalar that goes on over more lines moves further itself.
        self.consume(line);
        let value = match rest.as_bytes().first() {
            None | Some(b'#') => return self.nested_or_null(indent, true),
            Some(b'|' | b'>') => return self.block_scalar(rest, indent),
            Some(b'"') => self.quoted(at, indent, true)?,
            Some(b'\'') => self.quoted(at, indent, false)?,
            Some(b'{') if strip_comment(rest) == "{}" => Json::Object(JsonMap::default()),
            Some(b'[') if strip_comment(rest) == "[]" => Json::Array(Vec::new()),
            Some(b'[') => flow_words(strip_comment(rest))?,
            Some(_) => {
                let first = strip_comment(rest);
                if first.len() == rest.len() {
                    plain(self.plain_continued(first, indent)?)?
                } else {
                    plain(Cow::Borrowed(first))?
                }
            }
        };
        // A more indented line after a scalar continues it (or is an error).
        match self.peek() {
            Some(next) if next.indent > indent && !self.is_marker(next) => None,
            _ => Some(value),
        }
    }

    /// A plain scalar whose first line is `first`, with the lines that continue it (more
    /// indented than `indent`) folded in; the reader moves past them.
    fn plain_continued<'t>(&mut self, first: &'t str, indent: usize) -> Option<Cow<'t, str>> {
        // Mostly the very next line holds content no more indented: nothing continues. (Its
        // look-up is kept for the caller, which looks at that line next.)
        if let Some(next) = self.peek()
            && next.start - next.indent == self.pos
            && next.indent <= indent
        {
            return Some(Cow::Borrowed(first));
        }
        // Continued, a first line that ends in `:` is a key (an error where a value was read):
        // the check below for the lines that follow, which folding into one string would hide
        // when a blank line separates them.
        if first.ends_with(':') {
            return None;
        }
        let bytes = self.text.as_bytes();
        let mut text = first.to_string();
        let (mut pos, mut blank) = (self.pos, 0usize);
        while pos < bytes.len() {
            let end = self.line_end(pos);
            let line = &self.text[pos..end];
            let trimmed = line.trim_matches(' ');
            if trimmed.is_empty() {
                blank += 1;
                pos = end + 1;
                continue;
            }
            if line.len() - line.trim_start_matches(' ').len() <= indent {
                break;
            }
            if trimmed.starts_with('#')
                || has_pair(trimmed, b' ', b'#')
                || has_pair(trimmed, b':', b' ')
                || trimmed.ends_with(':')
                || is_dash(trimmed)
            {
                return None;
            }
            if blank == 0 {
                text.push(' ');
            }
            for _ in 0..blank {
                text.push('\n');
            }
            text.push_str(trimmed);
            blank = 0;
            pos = end + 1;
            self.pos = pos.min(bytes.len());
        }
        Some(Cow::Owned(text))
    }

    /// A double- or single-quoted scalar opening at byte `start`, on one line or folded over
    /// several (each more indented than `indent`); the reader moves past its last line.
    fn quoted(&mut self, start: usize, indent: usize, double: bool) -> Option<Json<'a>> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let quote = if double { b'"' } else { b'\'' };
        let mut out = String::new();
        // Spaces before a line break are dropped, but not those written as escapes.
        let mut kept = 0usize;
        let mut i = start + 1;
        loop {
            let run = bytes[i..]
                .iter()
                .position(|&b| b == quote || b == b'\n' || double && b == b'\\')?;
            out.push_str(&text[i..i + run]);
            i += run;
            match bytes[i] {
                b'\n' => {
                    let trimmed = out.trim_end_matches(' ').len().max(kept);
                    out.truncate(trimmed);
                    let mut blank = 0;
                    loop {
                        i += 1;
                        let spaces = bytes[i..].iter().take_while(|&&b| b == b' ').count();
                        match bytes.get(i + spaces) {
                            None => return None,
                            Some(b'\n') => {
                                blank += 1;
                                i += spaces;
                            }
                            Some(_) if spaces <= indent => return None,
                            Some(_) => {
                                i += spaces;
                                break;
                            }
                        }
                    }
                    if blank == 0 {
                        out.push(' ');
                    }
                    for _ in 0..blank {
                        out.push('\n');
                    }
                }
                b'\\' => {
                    let escape = *bytes.get(i + 1).filter(|b| b.is_ascii())?;
                    i += 2;
                    if escape == b'\n' {
                        // An escaped line break joins the lines without a space.
                        let spaces = bytes[i..].iter().take_while(|&&b| b == b' ').count();
                        if spaces <= indent || matches!(bytes.get(i + spaces), None | Some(b'\n')) {
                            return None;
                        }
                        i += spaces;
                        continue;
                    }
                    let (c, used) = unescape(escape, &text[i..])?;
                    out.push(c);
                    i += used;
                    kept = out.len();
                }
                _ if !double && bytes.get(i + 1) == Some(&b'\'') => {
                    out.push('\'');
                    i += 2;
                }
                _ => {
                    i += 1;
                    break;
                }
            }
        }
        let end = self.line_end(i);
        if !only_comment_after(&text[i..end]) {
            return None;
        }
        self.pos = (end + 1).min(bytes.len());
        Some(Json::String(Cow::Owned(out)))
    }

    /// After `key:` or `-` with nothing else on the line: a nested block, or null. A mapping's
    /// value may also be a sequence at the mapping's own indent.
    fn nested_or_null(&mut self, indent: usize, in_mapping: bool) -> Option<Json<'a>> {
        match self.peek() {
            Some(next) if self.is_marker(next) => Some(Json::Null),
            Some(next) if next.indent > indent => self.block(next),
            Some(next)
                if in_mapping
                    && next.indent == indent
                    && is_dash(&self.text[next.start..next.end]) =>
            {
                self.sequence(indent)
            }
            _ => Some(Json::Null),
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is `header`;
    /// the reader is at the line after it.
    fn block_scalar(&mut self, header: &str, parent_indent: usize) -> Option<Json<'a>> {
        // Chomping: `-` strips the final line breaks, `+` keeps them all, none keeps one.
        let (folded, chomp) = match strip_comment(header).as_bytes() {
            [b'|', rest @ ..] => (false, rest),
            [b'>', rest @ ..] => (true, rest),
            _ => return None,
        };
        let (strip, keep) = match chomp {
            [] => (false, false),
            [b'-'] => (true, false),
            [b'+'] => (false, true),
            _ => return None,
        };
        let bytes = self.text.as_bytes();
        // The content indent is that of the first non-blank line.
        let mut pos = self.pos;
        let mut leading_blank = 0usize;
        let content_indent = loop {
            if pos >= bytes.len() {
                break 0;
            }
            let end = self.line_end(pos);
            let spaces = bytes[pos..end].iter().take_while(|&&b| b == b' ').count();
            if pos + spaces < end {
                break spaces;
            }
            leading_blank = leading_blank.max(spaces);
            pos = end + 1;
        };
        if content_indent <= parent_indent {
            // No content: an empty string, unless blank lines could have set the indent.
            return (leading_blank <= parent_indent && !keep)
                .then_some(Json::String(Cow::Borrowed("")));
        }
        if leading_blank > content_indent {
            return None;
        }
        let mut out = String::new();
        let mut blank = 0usize;
        // Whether the previous content line was more indented (folding keeps its breaks).
        let mut previous: Option<bool> = None;
        let mut pos = self.pos;
        while pos < bytes.len() {
            let end = self.line_end(pos);
            let spaces = bytes[pos..end].iter().take_while(|&&b| b == b' ').count();
            if pos + spaces == end {
                // A blank line belongs to the scalar if more content follows. One with more
                // spaces than the indent would keep them: left to the reference reader.
                if spaces > content_indent {
                    return None;
                }
                blank += 1;
                pos = end + 1;
                continue;
            }
            if spaces < content_indent {
                break;
            }
            let line = &self.text[pos + content_indent..end];
            let more = spaces > content_indent;
            match previous {
                Some(false) if folded && !more && blank == 0 => out.push(' '),
                Some(false) if folded && !more => {}
                Some(_) if folded => out.push('\n'),
                _ => {}
            }
            for _ in 0..blank {
                out.push('\n');
            }
            out.push_str(line);
            if !folded {
                out.push('\n');
            }
            previous = Some(more);
            blank = 0;
            pos = end + 1;
        }
        if folded && previous.is_some() {
            out.push('\n');
        }
        if keep {
            for _ in 0..blank {
                out.push('\n');
            }
        }
        // `pos` is at the first line after the scalar, or past the end; blank lines that
        // trailed the scalar are not part of it.
        self.pos = pos.min(bytes.len());
        if strip {
            while out.ends_with('\n') {
                out.pop();
            }
        }
        Some(Json::String(Cow::Owned(out)))
    }
}

/// How many spaces `bytes` starts with, counted eight at a time: indentation is most of a
/// manifest's bytes.
fn leading_spaces(bytes: &[u8]) -> usize {
    let mut count = 0;
    while let Some(word) = bytes.get(count..count + 8) {
        let other = u64::from_le_bytes(word.try_into().expect("eight bytes"))
            ^ u64::from_le_bytes([b' '; 8]);
        if other != 0 {
            return count + other.trailing_zeros() as usize / 8;
        }
        count += 8;
    }
    count + bytes[count..].iter().take_while(|&&b| b == b' ').count()
}

fn is_dash(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

fn starts_quoted(content: &str) -> bool {
    content.starts_with('"') || content.starts_with('\'')
}

/// `key: rest` or `key:` → (key, rest with leading spaces removed); `None` unless the key is a
/// plain scalar that can only be read as that string.
fn split_key(content: &str) -> Option<(&str, &str)> {
    let bytes = content.as_bytes();
    let colon = (0..bytes.len())
        .find(|&i| bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' '))?;
    let key = &content[..colon];
    if !plain_string(key) || has_pair(key, b' ', b'#') || key.ends_with(' ') {
        return None;
    }
    Some((key, content[colon + 1..].trim_start_matches(' ')))
}

/// A flow sequence on one line whose items are words certainly read as strings (`[a, b]`,
/// as short enums are often written), or `None` for any other: such a sequence sent a whole
/// file to the reference reader, whose tree of a CRD of 300,000 properties took 100 MB more
/// and twice the time. A word here is what [`plain_string`] takes, made only of letters,
/// digits, `.`, `_`, `-` and `/`: nothing a flow collection treats apart (`,[]{}:?#`, quotes,
/// spaces inside).
fn flow_words(text: &str) -> Option<Json<'_>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(|item| {
            let item = item.trim_matches(' ');
            (item
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
                && plain_string(item))
            .then_some(Json::String(Cow::Borrowed(item)))
        })
        .collect::<Option<Vec<_>>>()
        .map(Json::Array)
}

/// A plain scalar's text without a trailing comment and spaces.
fn strip_comment(rest: &str) -> &str {
    let cut = find_pair(rest, b' ', b'#').unwrap_or(rest.len());
    rest[..cut].trim_end_matches(' ')
}

/// Where `text` first holds byte `a` followed by byte `b` (a plain loop: the texts are short,
/// and a substring search costs more to set up than to run here).
fn find_pair(text: &str, a: u8, b: u8) -> Option<usize> {
    text.as_bytes()
        .windows(2)
        .position(|w| w[0] == a && w[1] == b)
}

/// Whether `text` holds byte `a` followed by byte `b`.
fn has_pair(text: &str, a: u8, b: u8) -> bool {
    find_pair(text, a, b).is_some()
}

/// Words a YAML 1.1 reader may take for a boolean, a null or a float.
fn special_word(text: &str) -> bool {
    const WORDS: [&str; 12] = [
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "nan", "inf", "infinity",
    ];
    text.len() <= 8
        && text.as_bytes().first().is_some_and(|b| {
            matches!(
                b.to_ascii_lowercase(),
                b'y' | b'n' | b't' | b'f' | b'o' | b'i'
            )
        })
        && WORDS.iter().any(|w| text.eq_ignore_ascii_case(w))
}

/// Whether a plain scalar is certainly read as a string: it is not a special word, holds no
/// `: ` (which would make it a key), and starts with a letter or a character that starts
/// neither a number nor a YAML indicator, or with a dot or a digit followed by something no
/// number has.
fn plain_string(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    let starts_well = match first {
        b'a'..=b'z' | b'A'..=b'Z' | b'^' | b'/' | b'$' | b'(' | b'_' => true,
        b'.' => {
            bytes.get(1).is_some_and(|b| !b.is_ascii_digit())
                && !text.eq_ignore_ascii_case(".inf")
                && !text.eq_ignore_ascii_case(".nan")
        }
        // `1.2.3` (a version) or `0,2-3` (a list of indexes).
        b'0'..=b'9' => {
            bytes.iter().filter(|&&b| b == b'.').count() > 1
                && bytes.iter().all(|&b| b.is_ascii_digit() || b == b'.')
                || bytes.iter().any(|&b| {
                    !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_' | b':'))
                })
        }
        _ => false,
    };
    starts_well && !special_word(text) && !has_pair(text, b':', b' ') && !text.ends_with(':')
}

fn plain(text: Cow<'_, str>) -> Option<Json<'_>> {
    if plain_string(&text) {
        return Some(Json::String(text));
    }
    Some(match yaml::resolve_plain(&text) {
        Scalar::Null => Json::Null,
        Scalar::Bool(b) => Json::Bool(b),
        Scalar::Int(n) => Json::Number(n.into()),
        Scalar::Uint(n) => Json::Number(n.into()),
        // Infinities and NaN are the reference reader's error.
        Scalar::Float(f) => Json::Number(Number::from_f64(f)?),
        // Not certainly a string (it may hold `: `, or be a key in disguise): not guessed.
        Scalar::Str(_) => return None,
    })
}

/// The character of the escape `\\escape` and how many bytes of `rest` (what follows it) it
/// used; `None` for escapes left to the reference reader.
fn unescape(escape: u8, rest: &str) -> Option<(char, usize)> {
    let hex = |len: usize| {
        let digits = rest.get(..len)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        char::from_u32(u32::from_str_radix(digits, 16).ok()?).map(|c| (c, len))
    };
    let c = match escape {
        b'0' => '\0',
        b'a' => '\u{7}',
        b'b' => '\u{8}',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\u{b}',
        b'f' => '\u{c}',
        b'r' => '\r',
        b'e' => '\u{1b}',
        b' ' => ' ',
        b'"' => '"',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' => return hex(2),
        b'u' => return hex(4),
        b'U' => return hex(8),
        _ => return None,
    };
    Some((c, 0))
}

fn only_comment_after(after: &str) -> bool {
    let trimmed = after.trim_start_matches(' ');
    trimmed.is_empty() || trimmed.starts_with('#') && trimmed.len() < after.len()
}

#[cfg(test)]
mod tests;
