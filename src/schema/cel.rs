//! PURE: CRD `x-kubernetes-validations` rules evaluated as the API server evaluates them, with
//! the maintained `cel` crate (CEL's standard library, cel-go's string and list extensions, and
//! optional types).
//!
//! What follows the server and why:
//! - `self` is the value at the node that carries the rule, typed by the schema, not by the
//!   JSON: an `integer` is an int, a `number` a double even when written `1`, an object's
//!   properties are its fields (names that are CEL keywords or hold `.`, `-`, `/`, `__` are
//!   escaped as the server escapes them: `__namespace__`, `__dash__`, ...), a map's keys are
//!   its keys. A field the object does not have fails a select with "no such key", and the
//!   server rejects the object on such an error, as on division by zero, overflow or an index
//!   out of bounds: those are [`Verdict::Fail`].
//! - Anything this module does not model gives [`Verdict::Undecided`], never a guess: Kubernetes
//!   library functions the crate lacks (`quantity()`, `isURL()`, `ip()`, `cidr()`, `semver()`,
//!   `format.named()`, the authorizer, the k8s list functions `isSorted()`, `sum()`, ...),
//!   `matches()` with classes whose meaning differs between Go's RE2 and the Rust regex crate
//!   (`\d`, `\w`, `\s`, `\b`: Unicode in Rust, ASCII in Go), strings with a `format` the server
//!   turns into timestamps, durations or bytes, type errors, and rules that read `oldSelf`.
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use cel::objects::Key;
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::Value;

use super::model::{CelRule, Schema};
use crate::sync::Memo;

/// What one rule says about one value.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The rule holds.
    Pass,
    /// The API server would reject the value: the rule is false, or its evaluation fails the way
    /// the server's does. The text is the message the server gives.
    Fail(String),
    /// Not decided here; why.
    Undecided(String),
}

/// Constants and names a rule mentions: a generator aims at them.
#[derive(Debug, Default, Clone)]
pub struct Literals {
    pub strings: Vec<String>,
    pub integers: Vec<i64>,
    /// Names selected with `.name` (fields, and method names too: harmless for aiming).
    pub fields: Vec<String>,
    /// Two fields of `self` the rule compares, written `self.a.b == self.c` or with `!=`: the
    /// property names of each side, and whether they must be equal.
    pub comparisons: Vec<Comparison>,
}

/// `self.left == self.right` (`equal`) or `!=`, as property names from `self`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub left: Vec<String>,
    pub equal: bool,
    pub right: Vec<String>,
}

/// One compiled rule.
pub struct Rule {
    program: Program,
    text: String,
    message: String,
    uses_old_self: bool,
    literals: Literals,
}

/// The functions the environment below has (after macros are expanded), besides operators.
const KNOWN_FUNCTIONS: &[&str] = &[
    // The standard library.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "max",
    "min",
    // Optional types.
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "orValue",
    "value",
    "hasValue",
    "or",
    // cel-go's string extension (Kubernetes enables it).
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "quote",
    // cel-go's list extension.
    "slice",
    "flatten",
    "distinct",
    "reverse",
    "sort",
    "sortBy",
];

/// Go's RE2 and the Rust regex crate give these another meaning (ASCII there, Unicode here).
const REGEX_DIFFERENCES: &[&str] = &[
    r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", r"\b", r"\B", r"\<", r"\>", r"\p{^",
];

/// CEL reserved words: a property of this name is `__name__` in a rule.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Both extensions come with the crate; failing to add them is a bug of this module.
    env.add_extension(cel::extensions::strings)
        .expect("the strings extension");
    env.add_extension(cel::extensions::lists)
        .expect("the lists extension");
    Arc::new(env)
});

/// Rules compiled so far, at most this many (then the cache starts again).
const RULES_KEPT: usize = 4096;

pub type Compiled = Arc<Result<Rule, String>>;

static RULES: Memo<String, Compiled> = Memo::new(RULES_KEPT);

/// `rule` compiled once and kept: a comparison meets the same rules in many versions and
/// sources, and the witness search evaluates each many times.
pub fn compiled(rule: &CelRule) -> Compiled {
    let key = format!(
        "{}\u{0}{}",
        rule.rule,
        rule.message.as_deref().unwrap_or_default()
    );
    RULES.get_or_compute(key.as_str(), || Arc::new(Rule::compile(rule)))
}

impl Rule {
    /// Compiles one rule; Err is why it cannot be evaluated here.
    pub fn compile(rule: &CelRule) -> Result<Rule, String> {
        let program = ENV
            .compile(&rule.rule)
            .map_err(|e| format!("not parsed: {e}"))?;
        let references = program.references();
        let mut lacking: Vec<String> = references
            .functions()
            .into_iter()
            // Operators (`_+_`, `!_`, `-_`, `@in`) are always there.
            .filter(|f| !f.starts_with(['_', '@', '!', '-']))
            .filter(|f| !KNOWN_FUNCTIONS.contains(f))
            .map(|f| format!("{f}()"))
            .collect();
        lacking.sort();
        lacking.dedup();
        if !lacking.is_empty() {
            return Err(format!(
                "calls {} which the CEL interpreter here lacks",
                lacking.join(", ")
            ));
        }
        let mut literals = literals_of(&rule.rule);
        literals.comparisons = comparisons_of(&rule.rule);
        if references.has_function("matches")
            && literals
                .strings
                .iter()
                .any(|s| REGEX_DIFFERENCES.iter().any(|d| s.contains(d)))
        {
            return Err(
                "calls matches() with \\d, \\w, \\s or \\b, which Go's RE2 reads as ASCII and the Rust regex crate as Unicode"
                    .into(),
            );
        }
        let uses_old_self = references.variables().contains(&"oldSelf");
        Ok(Rule {
            program,
            text: rule.rule.clone(),
            message: rule
                .message
                .clone()
                .unwrap_or_else(|| format!("failed rule: {}", rule.rule)),
            uses_old_self,
            literals,
        })
    }

    /// Whether the rule reads `oldSelf` (a transition rule: checked on update only).
    pub fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }

    pub fn literals(&self) -> &Literals {
        &self.literals
    }

    /// Evaluates the rule with `self` bound to `value`, the JSON at the node `schema`.
    pub fn evaluate(&self, schema: &Schema, value: &Value) -> Verdict {
        if self.uses_old_self {
            return Verdict::Undecided(
                "a transition rule (oldSelf) is checked on update only".into(),
            );
        }
        self.run(schema, value, None)
    }

    /// Evaluates the rule on an update: `self` bound to `value`, `oldSelf` to `old`, both at
    /// the node `schema` (the server evaluates a transition rule only where the node is in both
    /// the stored object and the update).
    pub fn evaluate_update(&self, schema: &Schema, value: &Value, old: &Value) -> Verdict {
        self.run(schema, value, Some(old))
    }

    fn run(&self, schema: &Schema, value: &Value, old: Option<&Value>) -> Verdict {
        let mut context = Context::with_env(ENV.clone());
        for (name, v) in std::iter::once(("self", value)).chain(old.map(|o| ("oldSelf", o))) {
            match to_cel(schema, v) {
                Ok(c) => context.add_variable_from_value(name, c),
                Err(why) => return Verdict::Undecided(why),
            }
        }
        match self.program.execute(&context) {
            Ok(Cel::Bool(true)) => Verdict::Pass,
            Ok(Cel::Bool(false)) => Verdict::Fail(self.message.clone()),
            Ok(other) => Verdict::Undecided(format!("the rule gave {other:?}, not a boolean")),
            // The server's evaluation fails here too, and a failed evaluation rejects.
            Err(
                e @ (ExecutionError::NoSuchKey(_)
                | ExecutionError::DivisionByZero(_)
                | ExecutionError::RemainderByZero(_)
                | ExecutionError::Overflow(..)
                | ExecutionError::IndexOutOfBounds(_)),
            ) => Verdict::Fail(format!("{}: {e}", self.message)),
            Err(e) => Verdict::Undecided(format!("{:?}: {e}", self.text)),
        }
    }
}

/// String and integer constants, and selected names, read off the rule's text.
fn literals_of(text: &str) -> Literals {
    let mut out = Literals::default();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut seen = HashSet::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    s.push(chars[i]);
                    i += 1;
                }
                s.push(chars[i]);
                i += 1;
            }
            if seen.insert(s.clone()) {
                out.strings.push(s);
            }
        } else if c.is_ascii_digit() && (i == 0 || !is_word(chars[i - 1])) {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            if let Ok(n) = digits.parse::<i64>()
                && !out.integers.contains(&n)
            {
                out.integers.push(n);
            }
            continue;
        } else if c == '.'
            && i + 1 < chars.len()
            && (chars[i + 1].is_alphabetic() || chars[i + 1] == '_')
        {
            let start = i + 1;
            i += 1;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let name = unescape(&name);
            if !out.fields.contains(&name) {
                out.fields.push(name);
            }
            continue;
        }
        i += 1;
    }
    out
}

/// The comparisons of two fields of `self` in a rule's text (see [`Comparison`]); a side is
/// `self` and `.name` selections only, so `self.a[0] == self.b` or `size(self.a) != 0` is none.
fn comparisons_of(text: &str) -> Vec<Comparison> {
    // `self.a.b` at `i`: its names and where it ends.
    let path_at = |i: usize| -> Option<(Vec<String>, usize)> {
        let rest = &text[i..];
        let after_self = rest.strip_prefix("self")?;
        let mut names = Vec::new();
        let mut end = i + 4;
        let mut tail = after_self;
        while let Some(r) = tail.strip_prefix('.') {
            let len = r.find(|c: char| !is_word(c)).unwrap_or(r.len());
            if len == 0 {
                return None;
            }
            names.push(unescape(&r[..len]));
            end += 1 + len;
            tail = &r[len..];
        }
        // A method call or an index ends no plain field.
        let next = tail.chars().next();
        (!names.is_empty() && !matches!(next, Some('(' | '['))).then_some((names, end))
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices("self") {
        if text[..i].chars().next_back().is_some_and(is_word) {
            continue;
        }
        let Some((left, end)) = path_at(i) else {
            continue;
        };
        let rest = text[end..].trim_start();
        let (equal, rest) = if let Some(r) = rest.strip_prefix("==") {
            (true, r)
        } else if let Some(r) = rest.strip_prefix("!=") {
            (false, r)
        } else {
            continue;
        };
        let at = text.len() - rest.trim_start().len();
        if let Some((right, _)) = path_at(at) {
            out.push(Comparison { left, equal, right });
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A property name as a rule writes it.
fn escape(name: &str) -> String {
    if RESERVED.contains(&name) {
        return format!("__{name}__");
    }
    if !name.contains(['.', '-', '/']) && !name.contains("__") {
        return name.to_string();
    }
    name.replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__")
}

/// A name as a rule writes it, back to the property name (for aiming the generator).
fn unescape(name: &str) -> String {
    if let Some(inner) = name.strip_prefix("__").and_then(|n| n.strip_suffix("__"))
        && RESERVED.contains(&inner)
    {
        return inner.to_string();
    }
    name.replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace("__underscores__", "__")
}

/// The value as the server gives it to a rule at `schema`.
fn to_cel(schema: &Schema, value: &Value) -> Result<Cel, String> {
    if value.is_null() {
        return Ok(Cel::Null);
    }
    if schema.int_or_string {
        return match value {
            Value::String(s) => Ok(Cel::String(Arc::new(s.clone()))),
            Value::Number(n) => n
                .as_i64()
                .map(Cel::Int)
                .ok_or_else(|| format!("int-or-string {n} is not an integer")),
            other => Err(format!("int-or-string holds {other}")),
        };
    }
    match (schema.type_.as_deref(), value) {
        (Some("object"), Value::Object(map)) => {
            let mut out: HashMap<Key, Cel> = HashMap::with_capacity(map.len());
            let values = schema.map_values();
            for (k, v) in map {
                let (name, child) = match (schema.properties.get(k), values) {
                    (Some(p), _) => (escape(k), Some(p)),
                    (None, Some(m)) => (k.clone(), Some(m)),
                    // Kept unknown fields (and an embedded object's type meta) are untyped.
                    (None, None) => (escape(k), None),
                };
                let converted = match child {
                    Some(c) => to_cel(c, v)?,
                    None => untyped(v),
                };
                out.insert(Key::String(Arc::new(name)), converted);
            }
            Ok(Cel::Map(out.into()))
        }
        (Some("array"), Value::Array(items)) => {
            let converted = items
                .iter()
                .map(|i| match &schema.items {
                    Some(s) => to_cel(s, i),
                    None => Ok(untyped(i)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cel::List(Arc::new(converted)))
        }
        (Some("string"), Value::String(s)) => match schema.format.as_deref() {
            Some(f @ ("date-time" | "date" | "duration" | "byte")) => Err(format!(
                "a string of format {f}, which the server gives rules as another type"
            )),
            _ => Ok(Cel::String(Arc::new(s.clone()))),
        },
        (Some("integer"), Value::Number(n)) => n
            .as_i64()
            .map(Cel::Int)
            .ok_or_else(|| format!("integer {n} out of range")),
        (Some("number"), Value::Number(n)) => n
            .as_f64()
            .map(Cel::Float)
            .ok_or_else(|| format!("number {n} out of range")),
        (Some("boolean"), Value::Bool(b)) => Ok(Cel::Bool(*b)),
        (None, v) => Ok(untyped(v)),
        (Some(t), v) => Err(format!("a {t} holding {v}")),
    }
}

/// A value without a schema (kept unknown fields): JSON's own types.
fn untyped(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| Cel::Float(n.as_f64().unwrap_or(f64::NAN)), Cel::Int),
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(untyped).collect())),
        Value::Object(map) => {
            let out: HashMap<Key, Cel> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), untyped(v)))
                .collect();
            Cel::Map(out.into())
        }
    }
}

#[cfg(test)]
mod tests;
