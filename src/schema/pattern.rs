//! PURE: `pattern`s compared by the strings they accept, not by their text.
//!
//! Kubernetes checks a `pattern` with Go's regexp package (RE2 syntax) as an unanchored search:
//! a string is valid when the pattern matches somewhere in it. [`compare`] tells, for the
//! baseline's pattern A and another source's pattern B, whether B accepts the same strings,
//! more (widened), fewer (narrowed) or some of each (changed), with the shortest string that
//! shows it.
//!
//! How: each pattern is read as Go reads it ([`to_rust`] rewrites the few constructs whose
//! meaning differs in the regex crates, and refuses those it cannot carry over), compiled into
//! a DFA by regex-automata that answers "does it match somewhere in what was read so far", and
//! the product of the two DFAs (with a third automaton that keeps strings valid UTF-8, as JSON
//! strings are) is searched breadth-first for a string A accepts and B rejects. Breadth-first
//! finds a shortest one. The work is bounded ([`DFA_BYTES`], [`PRODUCT_STATES`]): past the
//! bounds, or for syntax this module does not carry over, the answer is
//! [`Comparison::Undecided`] with the reason, never "equal".
use std::collections::{HashMap, VecDeque};

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::{primitives::StateID, start, syntax};
use regex_automata::{Anchored, MatchKind};
use regex_syntax::ast::{self, Ast};

use crate::sync::Memo;

/// What the new pattern accepts compared with the old one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// The same strings.
    Equal,
    /// Every string the old pattern accepts and more: `example` is one of the more.
    Widened { example: String },
    /// Only strings the old pattern accepts, but not all: the old accepts `witness`, the new
    /// rejects it.
    Narrowed { witness: String },
    /// The old pattern accepts `witness` and the new one rejects it; the new one accepts
    /// `example` (where found within the bounds) and the old rejects it.
    Changed {
        witness: String,
        example: Option<String>,
    },
    /// Not told apart: syntax this module does not read as Go does, or past the bounds.
    Undecided { reason: String },
}

/// At most this many bytes for one pattern's DFA, and as many again to build it. Plain ASCII
/// patterns take a few KiB; Unicode classes (`\pL`, `.` under repetition) take more. The build
/// time grows with it: 16 MiB let a pattern of ninety `.` (found by fuzzing) take 1.3 s per
/// comparison in a release build, 19 s in the fuzzer's; 2 MiB takes a tenth of that and still
/// decides every pattern of the real-world CRDs.
pub const DFA_BYTES: usize = 2 << 20;

/// At most this many states of the product of two DFAs are visited per direction. Patterns of
/// real CRDs visit a few hundred.
pub const PRODUCT_STATES: usize = 200_000;

/// Answers kept per cache, at most this many (then the cache starts again): a schema-diff over
/// many CRDs meets the same few pairs of patterns again and again.
const KEPT: usize = 4096;

static PAIRS: Memo<(String, String), Comparison> = Memo::new(KEPT);

/// What `new` accepts compared with `old` (both Go patterns, as in a CRD). Equal texts are
/// equal without compiling anything; other pairs are compiled once and the answer kept.
pub fn compare(old: &str, new: &str) -> Comparison {
    if old == new {
        return Comparison::Equal;
    }
    PAIRS.get_or_compute(&(old.to_string(), new.to_string()), || {
        compare_uncached(old, new)
    })
}

fn compare_uncached(old: &str, new: &str) -> Comparison {
    let read = |p: &str| Language::new(p).map_err(|why| format!("pattern '{p}': {why}"));
    let (a, b) = match (read(old), read(new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(reason), _) | (_, Err(reason)) => return Comparison::Undecided { reason },
    };
    match (difference(&a, &b), difference(&b, &a)) {
        (Ok(None), Ok(None)) => Comparison::Equal,
        (Ok(None), Ok(Some(example))) => Comparison::Widened { example },
        (Ok(Some(witness)), Ok(None)) => Comparison::Narrowed { witness },
        (Ok(Some(witness)), Ok(Some(example))) => Comparison::Changed {
            witness,
            example: Some(example),
        },
        // A string lost is enough to know the change breaks.
        (Ok(Some(witness)), Err(_)) => Comparison::Changed {
            witness,
            example: None,
        },
        (Err(reason), _) | (_, Err(reason)) => Comparison::Undecided { reason },
    }
}

/// A Go pattern as the regex crates read it with the same meaning, or why not.
///
/// Go's `\d`, `\s`, `\w` and `\b` are ASCII (the crates' are Unicode), and `\<`, `\>` are the
/// characters `<`, `>` (in the crates, word boundaries): those are rewritten. Syntax Go does
/// not have, which the crates give a meaning (the flags `x`, `u`, `R`, nested classes and
/// class set operations, `\u` escapes, `\b{start}`, `\p{name=value}`, stacked repetitions),
/// and Go syntax the crates lack (`\Q...\E`, octal escapes) are refused.
pub fn to_rust(go: &str) -> Result<String, String> {
    let parsed = ast::parse::ParserBuilder::new()
        .build()
        .parse(go)
        .map_err(|e| format!("not read: {}", e.kind()))?;
    let edits = ast::visit(&parsed, GoReading::default())?;
    let mut out = String::with_capacity(go.len() + 16 * edits.len());
    let mut at = 0;
    for (span, text) in edits {
        out.push_str(&go[at..span.start.offset]);
        out.push_str(&text);
        at = span.end.offset;
    }
    out.push_str(&go[at..]);
    Ok(out)
}

/// A Go pattern compiled for matching values, read as [`to_rust`] reads it (the one reading the
/// diff compares patterns by): `\d` is `[0-9]`, not every Unicode digit. The search is
/// unanchored, as the API server's.
pub fn regex(go: &str) -> Result<regex::Regex, String> {
    let rust = to_rust(go)?;
    regex::Regex::new(&rust).map_err(|e| format!("not compiled: {e}"))
}

/// Go's Perl classes, in and outside brackets (perl_groups.go in Go's regexp/syntax).
fn perl_class(kind: &ast::ClassPerlKind, negated: bool, in_brackets: bool) -> &'static str {
    use ast::ClassPerlKind::{Digit, Space, Word};
    match (kind, negated, in_brackets) {
        (Digit, false, true) => "0-9",
        (Space, false, true) => r"\x09\x0A\x0C\x0D\x20",
        (Word, false, true) => "0-9A-Za-z_",
        (Digit, false, false) => "[0-9]",
        (Space, false, false) => r"[\x09\x0A\x0C\x0D\x20]",
        (Word, false, false) => "[0-9A-Za-z_]",
        (Digit, true, _) => "[^0-9]",
        (Space, true, _) => r"[^\x09\x0A\x0C\x0D\x20]",
        (Word, true, _) => "[^0-9A-Za-z_]",
    }
}

/// Walks a parsed pattern and collects the rewrites (by span, in order) that give it Go's
/// meaning, or the reason it has none here.
#[derive(Default)]
struct GoReading {
    edits: Vec<(ast::Span, String)>,
}

const NOT_GO: &str = "syntax Go does not have";

impl GoReading {
    fn literal(&self, lit: &ast::Literal) -> Result<(), String> {
        use ast::HexLiteralKind::{UnicodeLong, UnicodeShort};
        use ast::LiteralKind::{HexBrace, HexFixed, Octal};
        match lit.kind {
            HexFixed(UnicodeShort | UnicodeLong) | HexBrace(UnicodeShort | UnicodeLong) => {
                Err(format!("\\u and \\U escapes are {NOT_GO}"))
            }
            Octal => Err("octal escapes are not read".into()),
            _ => Ok(()),
        }
    }

    /// `\pL`, `\p{Greek}`; Go's `\p{^Greek}` is the crates' `\P{Greek}`.
    fn unicode_class(&mut self, class: &ast::ClassUnicode) -> Result<(), String> {
        match &class.kind {
            ast::ClassUnicodeKind::NamedValue { .. } => {
                Err(format!("\\p{{name=value}} is {NOT_GO}"))
            }
            ast::ClassUnicodeKind::Named(name) if name.starts_with('^') => {
                let p = if class.negated { 'p' } else { 'P' };
                self.edits
                    .push((class.span, format!("\\{p}{{{}}}", &name[1..])));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn flags(&self, flags: &ast::Flags) -> Result<(), String> {
        use ast::Flag::{CaseInsensitive, DotMatchesNewLine, MultiLine, SwapGreed};
        for item in &flags.items {
            match item.kind {
                ast::FlagsItemKind::Negation
                | ast::FlagsItemKind::Flag(
                    CaseInsensitive | MultiLine | DotMatchesNewLine | SwapGreed,
                ) => {}
                ast::FlagsItemKind::Flag(other) => {
                    return Err(format!("the flag {other:?} is {NOT_GO}"));
                }
            }
        }
        Ok(())
    }
}

impl ast::Visitor for GoReading {
    type Output = Vec<(ast::Span, String)>;
    type Err = String;

    fn finish(mut self) -> Result<Self::Output, String> {
        self.edits.sort_by_key(|(span, _)| span.start.offset);
        Ok(self.edits)
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), String> {
        use ast::AssertionKind as K;
        match node {
            Ast::Literal(lit) => self.literal(lit),
            Ast::ClassUnicode(class) => self.unicode_class(class),
            Ast::ClassPerl(class) => {
                let text = perl_class(&class.kind, class.negated, false);
                self.edits.push((class.span, text.into()));
                Ok(())
            }
            Ast::Flags(set) => self.flags(&set.flags),
            Ast::Group(group) => match &group.kind {
                ast::GroupKind::NonCapturing(flags) => self.flags(flags),
                _ => Ok(()),
            },
            Ast::Assertion(a) => {
                let text = match a.kind {
                    K::StartLine | K::EndLine | K::StartText | K::EndText => return Ok(()),
                    K::WordBoundary => r"(?-u:\b)",
                    K::NotWordBoundary => r"(?-u:\B)",
                    K::WordBoundaryStartAngle => "<",
                    K::WordBoundaryEndAngle => ">",
                    _ => return Err(format!("\\b{{...}} is {NOT_GO}")),
                };
                self.edits.push((a.span, text.into()));
                Ok(())
            }
            Ast::Repetition(r) => {
                if matches!(*r.ast, Ast::Repetition(_)) {
                    return Err("Go rejects a repetition of a repetition (like a**)".into());
                }
                let most = match r.op.kind {
                    ast::RepetitionKind::Range(
                        ast::RepetitionRange::Exactly(n)
                        | ast::RepetitionRange::AtLeast(n)
                        | ast::RepetitionRange::Bounded(_, n),
                    ) => n,
                    _ => 0,
                };
                if most > 1000 {
                    return Err("Go allows at most 1000 repetitions".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn visit_class_set_item_pre(&mut self, item: &ast::ClassSetItem) -> Result<(), String> {
        match item {
            ast::ClassSetItem::Literal(lit) => self.literal(lit),
            ast::ClassSetItem::Unicode(class) => self.unicode_class(class),
            ast::ClassSetItem::Perl(class) => {
                let text = perl_class(&class.kind, class.negated, true);
                self.edits.push((class.span, text.into()));
                Ok(())
            }
            ast::ClassSetItem::Bracketed(_) => Err(format!("nested classes are {NOT_GO}")),
            _ => Ok(()),
        }
    }

    fn visit_class_set_binary_op_pre(&mut self, _: &ast::ClassSetBinaryOp) -> Result<(), String> {
        Err(format!("class set operations (&&, --, ~~) are {NOT_GO}"))
    }
}

/// One pattern as a DFA that reports whether it matched anywhere in what it has read.
struct Language {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
}

impl Language {
    fn new(go: &str) -> Result<Language, String> {
        let rust = to_rust(go)?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    // Every match, not the leftmost-first one: only whether one exists counts.
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Unanchored)
                    .dfa_size_limit(Some(DFA_BYTES))
                    .determinize_size_limit(Some(DFA_BYTES)),
            )
            // Go's \B is ASCII, which the crates allow only where matches may split UTF-8;
            // strings are kept valid UTF-8 by the search instead.
            .syntax(syntax::Config::new().utf8(false))
            .build(&rust)
            .map_err(|e| {
                if e.is_size_limit_exceeded() {
                    format!(
                        "too large to compare (its DFA needs more than {} MiB)",
                        DFA_BYTES >> 20
                    )
                } else {
                    format!("not compiled: {e}")
                }
            })?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::No))
            .map_err(|e| format!("no start state: {e}"))?;
        Ok(Language { dfa, start })
    }
}

impl Language {
    /// The state after `byte` from `state` (or [`MATCHED`]); `None` where no longer string can
    /// match.
    fn advance(&self, state: u32, byte: u8) -> Option<u32> {
        if state == MATCHED {
            return Some(MATCHED);
        }
        let id = StateID::new(state as usize).expect("a state of the DFA");
        let next = self.dfa.next_state(id, byte);
        if self.dfa.is_match_state(next) {
            Some(MATCHED)
        } else if self.dfa.is_dead_state(next) {
            None
        } else {
            Some(next.as_u32())
        }
    }
}

/// The string read along `trail` from the root to node `at`.
fn spell(trail: &[(usize, u8)], at: usize) -> Result<String, String> {
    let mut out = Vec::new();
    let mut i = at;
    while i != 0 {
        out.push(trail[i].1);
        i = trail[i].0;
    }
    out.reverse();
    String::from_utf8(out).map_err(|_| "the search left UTF-8 (a bug)".into())
}

/// The states of a UTF-8 decoder: 0 between characters, else how many continuation bytes are
/// due and within which range (the first one after E0, ED, F0 and F4 is narrower).
fn utf8_next(state: u8, byte: u8) -> Option<u8> {
    match (state, byte) {
        (0, 0x00..=0x7F) => Some(0),
        (0, 0xC2..=0xDF) => Some(1),
        (0, 0xE1..=0xEC | 0xEE..=0xEF) => Some(2),
        (0, 0xF1..=0xF3) => Some(3),
        (0, 0xE0) => Some(4),
        (0, 0xED) => Some(5),
        (0, 0xF0) => Some(6),
        (0, 0xF4) => Some(7),
        (1..=3, 0x80..=0xBF) => Some(state - 1),
        (4, 0xA0..=0xBF) | (5, 0x80..=0x9F) => Some(1),
        (6, 0x90..=0xBF) | (7, 0x80..=0x8F) => Some(2),
        _ => None,
    }
}

/// One byte of each class that both DFAs and the UTF-8 decoder treat alike, readable ones
/// first (letters, digits, punctuation; `é` where any Latin-1 letter does), so that a shortest
/// string is also a readable one.
fn alphabet(a: &Language, b: &Language) -> Vec<u8> {
    let preferred = (b'a'..=b'z')
        .chain(b'0'..=b'9')
        .chain(b'A'..=b'Z')
        .chain(*b"-._")
        .chain(0x21..=0x7E)
        .chain(0x00..=0x20)
        .chain([0x7F, 0xC3, 0xA9])
        .chain(0x80..=0xFF);
    let mut seen = std::collections::HashSet::new();
    preferred
        .filter(|&byte| {
            let utf8: [Option<u8>; 8] = std::array::from_fn(|s| utf8_next(s as u8, byte));
            seen.insert((
                a.dfa.byte_classes().get(byte),
                b.dfa.byte_classes().get(byte),
                utf8,
            ))
        })
        .collect()
}

/// A DFA state that stands for "matched already": a match found before the last byte read
/// holds in every longer string.
const MATCHED: u32 = u32::MAX;

/// A shortest valid UTF-8 string `a` matches and `b` does not; `Ok(None)` when there is none.
fn difference(a: &Language, b: &Language) -> Result<Option<String>, String> {
    let bytes = alphabet(a, b);
    // (A's state or MATCHED, B's state, UTF-8 decoder state)
    type Node = (u32, u32, u8);
    let root: Node = (a.start.as_u32(), b.start.as_u32(), 0);
    let mut index: HashMap<Node, usize> = HashMap::from([(root, 0)]);
    // Per node: its parent and the byte read from there (the root's are unused).
    let mut trail: Vec<(usize, u8)> = vec![(0, 0)];
    let mut queue: VecDeque<(usize, Node)> = VecDeque::from([(0, root)]);
    let id = |s: u32| StateID::new(s as usize).expect("a state of the DFA");
    let matches_at_end =
        |l: &Language, s: u32| s == MATCHED || l.dfa.is_match_state(l.dfa.next_eoi_state(id(s)));
    while let Some((at, (sa, sb, utf8))) = queue.pop_front() {
        if utf8 == 0 && matches_at_end(a, sa) && !matches_at_end(b, sb) {
            return spell(&trail, at).map(Some);
        }
        for &byte in &bytes {
            let Some(utf8) = utf8_next(utf8, byte) else {
                continue;
            };
            let nb = b.dfa.next_state(id(sb), byte);
            // B has matched: it accepts every longer string too.
            if b.dfa.is_match_state(nb) {
                continue;
            }
            // None: A can match no longer string.
            let Some(na) = a.advance(sa, byte) else {
                continue;
            };
            let node = (na, nb.as_u32(), utf8);
            if index.contains_key(&node) {
                continue;
            }
            if index.len() >= PRODUCT_STATES {
                return Err(format!(
                    "too many states to compare (more than {PRODUCT_STATES})"
                ));
            }
            index.insert(node, trail.len());
            queue.push_back((trail.len(), node));
            trail.push((at, byte));
        }
    }
    Ok(None)
}

/// A shortest string `go` accepts that has at least `min_chars` characters and at most
/// `max_chars`: what a witness puts where the baseline has a pattern. `Ok(None)` when there is
/// none within the bounds. Characters are counted as the API server counts them (runes).
pub fn accepted(
    go: &str,
    min_chars: usize,
    max_chars: Option<usize>,
) -> Result<Option<String>, String> {
    // The witness search asks for the same few (pattern, bounds) thousands of times; building
    // the DFA each time was most of its run time.
    type Bounded = (String, usize, Option<usize>);
    static ACCEPTED: Memo<Bounded, Result<Option<String>, String>> = Memo::new(KEPT);
    ACCEPTED.get_or_compute(&(go.to_string(), min_chars, max_chars), || {
        accepted_uncached(go, min_chars, max_chars)
    })
}

fn accepted_uncached(
    go: &str,
    min_chars: usize,
    max_chars: Option<usize>,
) -> Result<Option<String>, String> {
    let language = Language::new(go).map_err(|why| format!("pattern '{go}': {why}"))?;
    let bytes = alphabet(&language, &language);
    let id = |s: u32| StateID::new(s as usize).expect("a state of the DFA");
    let l = &language;
    let matches_at_end = |s: u32| s == MATCHED || l.dfa.is_match_state(l.dfa.next_eoi_state(id(s)));
    // (state or MATCHED, UTF-8 decoder state, characters read, counted up to min_chars)
    type Node = (u32, u8, usize);
    let root: Node = (l.start.as_u32(), 0, 0);
    let mut index: HashMap<Node, usize> = HashMap::from([(root, 0)]);
    let mut trail: Vec<(usize, u8)> = vec![(0, 0)];
    let mut queue: VecDeque<(usize, Node, usize)> = VecDeque::from([(0, root, 0)]);
    while let Some((at, (state, utf8, counted), chars)) = queue.pop_front() {
        if utf8 == 0 && counted >= min_chars && matches_at_end(state) {
            return spell(&trail, at).map(Some);
        }
        if max_chars.is_some_and(|m| chars >= m) {
            continue;
        }
        for &byte in &bytes {
            let Some(next_utf8) = utf8_next(utf8, byte) else {
                continue;
            };
            let Some(next) = l.advance(state, byte) else {
                continue;
            };
            let chars = chars + usize::from(next_utf8 == 0);
            let node = (next, next_utf8, chars.min(min_chars));
            if index.contains_key(&node) {
                continue;
            }
            if index.len() >= PRODUCT_STATES {
                return Err(format!(
                    "too many states to search (more than {PRODUCT_STATES})"
                ));
            }
            index.insert(node, trail.len());
            queue.push_back((trail.len(), node, chars));
            trail.push((at, byte));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
