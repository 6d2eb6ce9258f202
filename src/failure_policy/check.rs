//! PURE: the API server's validation of a Job's failure handling (pkg/apis/batch/validation,
//! Kubernetes 1.36), with messages in its own format (`path: Type: value: detail`, as
//! apimachinery's `field.Error` renders them) and in its order, plus what a version supports.
//!
//! What is validated, in the server's order (validateJobSpec, then ValidateJob): the counts
//! (parallelism, completions, activeDeadlineSeconds, backoffLimit, ttlSecondsAfterFinished,
//! backoffLimitPerIndex, maxFailedIndexes), managedBy, completionMode and its limits,
//! podFailurePolicy, successPolicy, podReplacementPolicy, the template's restartPolicy and the
//! longest pod hostname of an Indexed Job; of the pod template's own validation, the containers
//! (at least one; each container's and init container's name and image). Not validated: object
//! metadata, the selector and the rest of the pod template (volumes, ports, probes, resources,
//! ...).
//!
//! Bad values are rendered as Go renders them: `int32` with `%v`, a plain `string` with `%q`,
//! anything else (named string types such as the action, pointers, slices, structs) as JSON,
//! e.g. `[3,2]` for exit codes and `{"Rules":[...]}` for a success policy.
use std::collections::BTreeSet;
use std::sync::LazyLock;

use k8s_openapi::api::batch::v1::{Job, JobSpec, PodFailurePolicy, SuccessPolicy};
use regex::Regex;
use serde::Serialize;

use super::engine::Semantics;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub path: String,
    /// The API server's words: `path: Invalid value: 0: must not be 0 for the In operator`.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Support {
    pub feature: String,
    pub used: bool,
    /// `GA`, `beta (on by default)`, `alpha (off by default)`, or `not available`.
    pub state: String,
    pub enabled: bool,
    /// What the API server does with the field when the feature is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consequence: Option<String>,
}

/// `sets.List(...)` of the server's sets: sorted.
const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const REPLACEMENT_POLICIES: [&str; 2] = ["Failed", "TerminatingOrFailed"];
/// Literal lists, in the server's order.
const COMPLETION_MODES: [&str; 2] = ["NonIndexed", "Indexed"];
const RESTART_POLICIES: [&str; 2] = ["OnFailure", "Never"];

const MAX_RULES: usize = 20;
const MAX_VALUES: usize = 255;
const MAX_PATTERNS: usize = 20;
const MAX_SUCCESS_RULES: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_MANAGED_BY_LENGTH: usize = 63;
const MAX_PARALLELISM_FOR_INDEXED: i32 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

fn anchored(fmt: &str) -> Regex {
    Regex::new(&format!("^(?:{fmt})$")).expect("a valid pattern")
}
static LABEL_KEY_RE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_KEY_FMT));
static DNS1123_LABEL_RE: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN_RE: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static HTTP_PATH_RE: LazyLock<Regex> = LazyLock::new(|| anchored(HTTP_PATH_FMT));

/// A `field.ErrorList` being built; each push renders `field.Error.Error()` as the
/// apimachinery of 1.`minor` does.
struct Errors(Vec<Problem>, u32);

impl Errors {
    fn push(&mut self, path: &str, body: String) {
        self.0.push(Problem {
            path: path.to_string(),
            message: format!("{path}: {body}"),
        });
    }
    /// `field.Invalid(path, value, detail)`; `value` is already rendered (see [`go_quote`],
    /// [`go_json_string`]).
    fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.push(path, format!("Invalid value: {value}: {detail}"));
    }
    /// `field.Invalid(path, field.OmitValueType{}, detail)`.
    fn invalid_omitted(&mut self, path: &str, detail: &str) {
        self.push(path, format!("Invalid value: {detail}"));
    }
    /// `field.Required(path, detail)`: no value, and no `: ` when the detail is empty.
    fn required(&mut self, path: &str, detail: &str) {
        if detail.is_empty() {
            self.push(path, "Required value".into());
        } else {
            self.push(path, format!("Required value: {detail}"));
        }
    }
    /// `field.NotSupported(path, value, supported)`: each supported value `strconv.Quote`d.
    fn not_supported(&mut self, path: &str, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        self.push(
            path,
            format!(
                "Unsupported value: {value}: supported values: {}",
                list.join(", ")
            ),
        );
    }
    fn too_many(&mut self, path: &str, actual: usize, max: usize) {
        let items = if max == 1 { "item" } else { "items" };
        self.push(
            path,
            format!("Too many: {actual}: must have at most {max} {items}"),
        );
    }
    fn too_long(&mut self, path: &str, max: usize) {
        let bytes = if max == 1 { "byte" } else { "bytes" };
        // The wording changed in 1.32.
        let body = if self.1 <= 31 {
            format!("Too long: must have at most {max} bytes")
        } else {
            format!("Too long: may not be more than {max} {bytes}")
        };
        self.push(path, body);
    }
    /// An `[]int32` value: `%#v` up to 1.33 (`[]int32{3, 2}`), `json.Marshal` from 1.34 (`[3,2]`).
    fn ints(&self, values: &[i32]) -> String {
        if self.1 <= 33 {
            go_syntax_ints(values)
        } else {
            go_json_ints(values)
        }
    }
    /// The internal `batch.SuccessPolicy`: `%#v` up to 1.33, `json.Marshal` from 1.34.
    fn success_policy(&self, policy: &SuccessPolicy) -> String {
        if self.1 <= 33 {
            go_syntax_success_policy(policy)
        } else {
            go_json_success_policy(policy)
        }
    }
    fn duplicate(&mut self, path: &str, value: &str) {
        self.push(path, format!("Duplicate value: {value}"));
    }
    /// `ValidateNonnegativeField`.
    fn non_negative(&mut self, path: &str, value: Option<i64>) {
        if let Some(v) = value
            && v < 0
        {
            self.invalid(path, &v.to_string(), "must be greater than or equal to 0");
        }
    }
}

/// Go's `%q` of a string list (`fmt.Sprintf("valid values: %q", list)`): `["In" "NotIn"]`.
fn go_quoted_list(items: &[&str]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| go_quote(s))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Whether Go's `strconv.IsPrint` holds, closely enough: letters, marks, numbers, punctuation,
/// symbols and the ASCII space. (Unassigned code points, which Go also escapes, are not known
/// here.)
fn go_is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format = matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e000}'..='\u{f8ff}'
            | '\u{f0000}'..='\u{10ffff}'
    );
    !(c.is_control() || c.is_whitespace() || format)
}

/// Go's `strconv.Quote` (and so `%q` of a string).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `encoding/json` rendering of a string (HTML-escaping `<`, `>` and `&`), as
/// `field.Error` shows a bad value of a named string type such as `PodFailurePolicyAction`.
pub(crate) fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `%#v` of a `[]int32`: `[]int32{3, 2}`, `[]int32{}` when empty.
fn go_syntax_ints(values: &[i32]) -> String {
    let items: Vec<String> = values.iter().map(ToString::to_string).collect();
    format!("[]int32{{{}}}", items.join(", "))
}

/// `json.Marshal` of a `[]int32`: `[3,2]`, `[]` when empty.
fn go_json_ints(values: &[i32]) -> String {
    format!(
        "[{}]",
        values
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// `json.Marshal` of the internal `batch.SuccessPolicy` (no JSON tags: Go field names).
fn go_json_success_policy(policy: &SuccessPolicy) -> String {
    let rules: Vec<String> = policy
        .rules
        .iter()
        .map(|r| {
            format!(
                "{{\"SucceededIndexes\":{},\"SucceededCount\":{}}}",
                r.succeeded_indexes
                    .as_deref()
                    .map(go_json_string)
                    .unwrap_or_else(|| "null".into()),
                r.succeeded_count
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "null".into()),
            )
        })
        .collect();
    format!("{{\"Rules\":[{}]}}", rules.join(","))
}

/// `%#v` of the internal `batch.SuccessPolicy`. A field set is a pointer, which Go prints as
/// its address (`(*string)(0xc000a1b2c0)`): an address of the server's memory, said here as
/// `0x…`.
fn go_syntax_success_policy(policy: &SuccessPolicy) -> String {
    let pointer = |ty: &str, set: bool| {
        let target = if set { "0x…" } else { "nil" };
        format!("(*{ty})({target})")
    };
    let rules: Vec<String> = policy
        .rules
        .iter()
        .map(|r| {
            format!(
                "batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
                pointer("string", r.succeeded_indexes.is_some()),
                pointer("int32", r.succeeded_count.is_some()),
            )
        })
        .collect();
    format!(
        "batch.SuccessPolicy{{Rules:[]batch.SuccessPolicyRule{{{}}}}}",
        rules.join(", ")
    )
}

/// apimachinery's `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `content.IsDNS1123Subdomain` (max length in bytes) or, with `characters`, the older
/// `util/validation.IsDNS1123Subdomain` (max length in characters).
fn dns1123_subdomain_problems(value: &str, characters: bool) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > 253 {
        out.push(format!(
            "must be no more than 253 {}",
            if characters { "characters" } else { "bytes" }
        ));
    }
    if !DNS1123_SUBDOMAIN_RE.is_match(value) {
        out.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    out
}

/// `IsDNS1123Label`, with its messages.
fn dns1123_label_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !DNS1123_LABEL_RE.is_match(value) {
        out.push(regex_error(
            DNS1123_LABEL_ERR,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    out
}

/// `content.IsLabelKey` (what `ValidateQualifiedName` uses), with its messages.
fn qualified_name_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_string());
            } else {
                out.extend(
                    dns1123_subdomain_problems(prefix, false)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            out.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return out;
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".to_string());
    }
    if !LABEL_KEY_RE.is_match(name) {
        out.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    out
}

/// `util/validation.IsDomainPrefixedPath`, as for `spec.managedBy`.
fn validate_domain_prefixed_path(path: &str, value: &str, e: &mut Errors) {
    if value.is_empty() {
        e.required(path, "");
        return;
    }
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        e.invalid(
            path,
            &go_quote(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        );
        return;
    };
    for m in dns1123_subdomain_problems(host, true) {
        e.invalid(path, &go_quote(host), &m);
    }
    if !HTTP_PATH_RE.is_match(rest) {
        e.invalid(
            path,
            &go_quote(rest),
            &regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        );
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The server's `validateIndexesFormat`: the number of indexes, or why the text is invalid.
fn validate_indexes_format(text: &str, completions: i32) -> Result<i32, String> {
    if text.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total: i32 = 0;
    for interval in text.split(',') {
        let limits: Vec<&str> = interval.split('-').collect();
        if limits.len() > 2 {
            return Err(format!(
                "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
                go_quote(interval)
            ));
        }
        let parse = |s: &str| -> Result<i64, String> {
            let v = go_atoi(s).ok_or_else(|| {
                format!(
                    "cannot convert string to integer for index: {}",
                    go_quote(s)
                )
            })?;
            if v >= i64::from(completions) {
                return Err(format!("too large index: {}", go_quote(s)));
            }
            Ok(v)
        };
        let x = parse(limits[0])?;
        let y = match limits.get(1) {
            Some(hi) => {
                let y = parse(hi)?;
                if x >= y {
                    return Err(format!("non-increasing order, previous: {x}, current: {y}"));
                }
                y
            }
            None => x,
        };
        if let Some(l) = last
            && l >= x
        {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total = total.wrapping_add((y - x + 1) as i32);
        last = Some(y);
    }
    Ok(total)
}

/// Validates what the API server validates about failure handling, after applying the same
/// defaults the server applies first (completions and parallelism, completionMode NonIndexed,
/// a pattern's status True, restartPolicy Always). A Job without a spec is validated as the
/// server would see it: an empty spec.
pub fn validate(job: &Job) -> Vec<Problem> {
    validate_at(job, &Semantics::newest())
}

/// As [`validate`], as the API server of `sem`'s version does: the fields whose feature is
/// off there are dropped before validation (successPolicy before 1.31, managedBy before
/// 1.32), and values print as its apimachinery prints them.
pub fn validate_at(job: &Job, sem: &Semantics) -> Vec<Problem> {
    let mut e = Errors(Vec::new(), sem.minor);
    let mut dropped = job.spec.clone().unwrap_or_default();
    if !sem.job_success_policy {
        dropped.success_policy = None;
    }
    if !sem.job_managed_by {
        dropped.managed_by = None;
    }
    let spec = &dropped;
    let d = Defaulted::of(spec);
    validate_counts(spec, &d, &mut e);
    validate_completion_mode(spec, &d, &mut e);
    if let Some(policy) = &spec.pod_failure_policy {
        validate_pod_failure_policy(spec, policy, &mut e);
    }
    if let Some(policy) = &spec.success_policy {
        if d.indexed {
            validate_success_policy(policy, d.completions, &mut e);
        } else {
            e.invalid(
                "spec.successPolicy",
                &e.success_policy(policy),
                "requires indexed completion mode",
            );
        }
    }
    validate_replacement_policy(spec, &mut e);
    // The pod template's own validation: of it, the containers' names and images.
    validate_containers(spec, &mut e);
    validate_restart_policy(spec, &mut e);
    validate_pod_hostnames(job, &d, &mut e);
    e.0
}

/// What the validation reads of a spec after SetDefaults_Job.
struct Defaulted<'a> {
    completions: Option<i32>,
    parallelism: Option<i32>,
    /// completionMode, NonIndexed when unset.
    mode: &'a str,
    indexed: bool,
}

impl Defaulted<'_> {
    fn of(spec: &JobSpec) -> Defaulted<'_> {
        let (completions, parallelism) = match (spec.completions, spec.parallelism) {
            (None, None) => (Some(1), Some(1)),
            (c, p) => (c, Some(p.unwrap_or(1))),
        };
        let mode = spec.completion_mode.as_deref().unwrap_or("NonIndexed");
        Defaulted {
            completions,
            parallelism,
            mode,
            indexed: mode == "Indexed",
        }
    }
}

/// The counts and limits that must not be negative (maxFailedIndexes only with
/// backoffLimitPerIndex), and managedBy.
fn validate_counts(spec: &JobSpec, d: &Defaulted<'_>, e: &mut Errors) {
    let per_index = spec.backoff_limit_per_index;
    e.non_negative("spec.parallelism", d.parallelism.map(i64::from));
    e.non_negative("spec.completions", d.completions.map(i64::from));
    e.non_negative("spec.activeDeadlineSeconds", spec.active_deadline_seconds);
    e.non_negative("spec.backoffLimit", spec.backoff_limit.map(i64::from));
    e.non_negative(
        "spec.ttlSecondsAfterFinished",
        spec.ttl_seconds_after_finished.map(i64::from),
    );
    e.non_negative("spec.backoffLimitPerIndex", per_index.map(i64::from));
    if let Some(m) = spec.max_failed_indexes {
        e.non_negative("spec.maxFailedIndexes", Some(i64::from(m)));
        if per_index.is_none() {
            e.required(
                "spec.backoffLimitPerIndex",
                "when maxFailedIndexes is specified",
            );
        }
    }
    if let Some(by) = &spec.managed_by {
        validate_domain_prefixed_path("spec.managedBy", by, e);
        if by.len() > MAX_MANAGED_BY_LENGTH {
            e.too_long("spec.managedBy", MAX_MANAGED_BY_LENGTH);
        }
    }
}

/// completionMode, and the fields only one mode allows.
fn validate_completion_mode(spec: &JobSpec, d: &Defaulted<'_>, e: &mut Errors) {
    if d.mode != "NonIndexed" && !d.indexed {
        e.not_supported(
            "spec.completionMode",
            &go_json_string(d.mode),
            &COMPLETION_MODES,
        );
    }
    if d.indexed {
        validate_indexed(spec, d, e);
    }
    if d.mode == "NonIndexed" {
        if let Some(b) = spec.backoff_limit_per_index {
            e.invalid(
                "spec.backoffLimitPerIndex",
                &b.to_string(),
                "requires indexed completion mode",
            );
        }
        if let Some(m) = spec.max_failed_indexes {
            e.invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                "requires indexed completion mode",
            );
        }
    }
}

/// An Indexed Job's limits on completions, parallelism and failed indexes (tighter above
/// the soft limit of completions with a backoff limit per index).
fn validate_indexed(spec: &JobSpec, d: &Defaulted<'_>, e: &mut Errors) {
    let (completions, parallelism) = (d.completions, d.parallelism);
    let max_failed = spec.max_failed_indexes;
    if completions.is_none() {
        e.required("spec.completions", "when completion mode is Indexed");
    }
    if let Some(p) = parallelism
        && p > MAX_PARALLELISM_FOR_INDEXED
    {
        e.invalid(
            "spec.parallelism",
            &p.to_string(),
            &format!(
                "must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED} when completion mode is Indexed"
            ),
        );
    }
    if let (Some(c), Some(m)) = (completions, max_failed)
        && m > c
    {
        e.invalid(
            "spec.maxFailedIndexes",
            &m.to_string(),
            "must be less than or equal to completions",
        );
    }
    if let Some(m) = max_failed
        && m > MAX_FAILED_INDEXES_FOR_INDEXED
    {
        e.invalid(
            "spec.maxFailedIndexes",
            &m.to_string(),
            &format!("must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED}"),
        );
    }
    if !(completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT)
        && spec.backoff_limit_per_index.is_some())
    {
        return;
    }
    if max_failed.is_none() {
        e.required(
            "spec.maxFailedIndexes",
            &format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
        );
    }
    if let Some(p) = parallelism
        && p > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS
    {
        e.invalid(
            "spec.parallelism",
            &p.to_string(),
            &format!(
                "must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            ),
        );
    }
    if let Some(m) = max_failed
        && m > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS
    {
        e.invalid(
            "spec.maxFailedIndexes",
            &m.to_string(),
            &format!(
                "must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            ),
        );
    }
}

/// ValidateJob, after the spec: the longest pod hostname of an Indexed Job.
fn validate_pod_hostnames(job: &Job, d: &Defaulted<'_>, e: &mut Errors) {
    if let (true, Some(c), Some(name)) = (d.indexed, d.completions, job.metadata.name.as_deref())
        && c > 0
    {
        let hostname = format!("{name}-{}", c - 1);
        if hostname.len() > 63 || !DNS1123_LABEL_RE.is_match(&hostname) {
            e.invalid(
                "metadata.name",
                &go_quote(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            );
        }
    }
}

/// Of ValidatePodSpec, what every Job needs: at least one container, and each container and
/// init container (in that order) with a name that is a DNS label, an image, and the name used
/// once.
fn validate_containers(spec: &JobSpec, e: &mut Errors) {
    let pod = spec.template.spec.as_ref();
    let containers = pod.map(|p| p.containers.as_slice()).unwrap_or_default();
    let init = pod
        .and_then(|p| p.init_containers.as_deref())
        .unwrap_or_default();
    let path = "spec.template.spec";
    if containers.is_empty() {
        e.required(&format!("{path}.containers"), "");
    }
    let mut names = BTreeSet::new();
    let all = containers
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{path}.containers[{i}]"), c))
        .chain(
            init.iter()
                .enumerate()
                .map(|(i, c)| (format!("{path}.initContainers[{i}]"), c)),
        );
    for (at, c) in all {
        let name_path = format!("{at}.name");
        if c.name.is_empty() {
            e.required(&name_path, "");
        } else {
            for problem in dns1123_label_problems(&c.name) {
                e.invalid(&name_path, &go_quote(&c.name), &problem);
            }
        }
        if c.image.as_deref().unwrap_or_default().is_empty() {
            e.required(&format!("{at}.image"), "");
        }
        if !names.insert(c.name.as_str()) {
            e.push(
                &name_path,
                format!("Duplicate value: {}", go_quote(&c.name)),
            );
        }
    }
}

fn validate_restart_policy(spec: &JobSpec, e: &mut Errors) {
    let path = "spec.template.spec.restartPolicy";
    // SetDefaults_PodSpec: an empty restartPolicy becomes Always.
    let restart = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.restart_policy.as_deref())
        .unwrap_or("");
    if restart.is_empty() || restart == "Always" {
        e.required(
            path,
            &format!(
                "valid values: {}, {}",
                go_quote("OnFailure"),
                go_quote("Never")
            ),
        );
    } else if !RESTART_POLICIES.contains(&restart) {
        // The pod template's own validation (validateRestartPolicy), which the server runs just
        // before, rejects an unknown value too.
        e.not_supported(
            path,
            &go_json_string(restart),
            &["Always", "OnFailure", "Never"],
        );
        e.not_supported(path, &go_json_string(restart), &RESTART_POLICIES);
    } else if spec.pod_failure_policy.is_some() && restart != "Never" {
        e.invalid(
            path,
            &go_json_string(restart),
            &format!(
                "only {} is supported when podFailurePolicy is specified",
                go_quote("Never")
            ),
        );
    }
}

fn validate_pod_failure_policy(spec: &JobSpec, policy: &PodFailurePolicy, e: &mut Errors) {
    let rules_path = "spec.podFailurePolicy.rules";
    if policy.rules.len() > MAX_RULES {
        e.too_many(rules_path, policy.rules.len(), MAX_RULES);
    }
    let pod = spec.template.spec.as_ref();
    let names: BTreeSet<&str> = pod
        .map(|p| {
            p.containers
                .iter()
                .map(|c| c.name.as_str())
                .chain(p.init_containers.iter().flatten().map(|c| c.name.as_str()))
                .collect()
        })
        .unwrap_or_default();
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = format!("{rules_path}[{i}]");
        let action_path = format!("{path}.action");
        if rule.action.is_empty() {
            e.required(
                &action_path,
                &format!("valid values: {}", go_quoted_list(&ACTIONS)),
            );
        } else if rule.action == "FailIndex" {
            if spec.backoff_limit_per_index.is_none() {
                e.invalid(
                    &action_path,
                    &go_json_string(&rule.action),
                    "requires the backoffLimitPerIndex to be set",
                );
            }
        } else if !ACTIONS.contains(&rule.action.as_str()) {
            e.not_supported(&action_path, &go_json_string(&rule.action), &ACTIONS);
        }
        if let Some(codes) = &rule.on_exit_codes {
            let cpath = format!("{path}.onExitCodes");
            let operator_path = format!("{cpath}.operator");
            if codes.operator.is_empty() {
                e.required(
                    &operator_path,
                    &format!("valid values: {}", go_quoted_list(&OPERATORS)),
                );
            } else if !OPERATORS.contains(&codes.operator.as_str()) {
                e.not_supported(&operator_path, &go_json_string(&codes.operator), &OPERATORS);
            }
            if let Some(name) = &codes.container_name
                && !names.contains(name.as_str())
            {
                e.invalid(
                    &format!("{cpath}.containerName"),
                    &go_quote(name),
                    "must be one of the container or initContainer names in the pod template",
                );
            }
            let vpath = format!("{cpath}.values");
            if codes.values.is_empty() {
                e.invalid(
                    &vpath,
                    &e.ints(&codes.values),
                    "at least one value is required",
                );
            } else if codes.values.len() > MAX_VALUES {
                e.too_many(&vpath, codes.values.len(), MAX_VALUES);
            }
            let mut seen = BTreeSet::new();
            let mut ordered = true;
            for (j, v) in codes.values.iter().enumerate() {
                let value_path = format!("{vpath}[{j}]");
                if codes.operator == "In" && *v == 0 {
                    e.invalid(&value_path, "0", "must not be 0 for the In operator");
                }
                if !seen.insert(*v) {
                    e.duplicate(&value_path, &v.to_string());
                }
                if j > 0 && codes.values[j - 1] > *v {
                    ordered = false;
                }
            }
            if !ordered {
                let values = e.ints(&codes.values);
                e.invalid(&vpath, &values, "must be ordered");
            }
        }
        let patterns = rule.on_pod_conditions.as_deref().unwrap_or_default();
        if !patterns.is_empty() {
            let ppath = format!("{path}.onPodConditions");
            if patterns.len() > MAX_PATTERNS {
                e.too_many(&ppath, patterns.len(), MAX_PATTERNS);
            }
            for (j, p) in patterns.iter().enumerate() {
                let tpath = format!("{ppath}[{j}].type");
                for problem in qualified_name_problems(&p.type_) {
                    e.invalid(&tpath, &go_quote(&p.type_), &problem);
                }
                // SetDefaults_PodFailurePolicyOnPodConditionsPattern: an absent or empty status
                // is True, so the server's Required branch is never reached from a request.
                let status = p
                    .status
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("True");
                if !STATUSES.contains(&status) {
                    e.not_supported(
                        &format!("{ppath}[{j}].status"),
                        &go_json_string(status),
                        &STATUSES,
                    );
                }
            }
        }
        match (rule.on_exit_codes.is_some(), !patterns.is_empty()) {
            (true, true) => e.invalid_omitted(
                &path,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ),
            (false, false) => e.invalid_omitted(
                &path,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ),
            _ => {}
        }
    }
}

fn validate_replacement_policy(spec: &JobSpec, e: &mut Errors) {
    let Some(policy) = &spec.pod_replacement_policy else {
        return;
    };
    let path = "spec.podReplacementPolicy";
    if spec.pod_failure_policy.is_some() {
        if policy != "Failed" {
            e.not_supported(path, &go_json_string(policy), &["Failed"]);
        }
    } else if !REPLACEMENT_POLICIES.contains(&policy.as_str()) {
        e.not_supported(path, &go_json_string(policy), &REPLACEMENT_POLICIES);
    }
}

/// For an Indexed Job only (the caller reports a success policy on any other).
fn validate_success_policy(policy: &SuccessPolicy, completions: Option<i32>, e: &mut Errors) {
    let rules_path = "spec.successPolicy.rules";
    if policy.rules.is_empty() {
        e.required(
            rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        );
    }
    if policy.rules.len() > MAX_SUCCESS_RULES {
        e.too_many(rules_path, policy.rules.len(), MAX_SUCCESS_RULES);
    }
    // Without completions (already reported as Required) the server cannot go on either.
    let Some(completions) = completions else {
        return;
    };
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = format!("{rules_path}[{i}]");
        if rule.succeeded_indexes.is_none() && rule.succeeded_count.is_none() {
            e.required(
                &path,
                "at least one of succeededCount or succeededIndexes must be specified",
            );
        }
        // Zero when the indexes do not parse, as on the server.
        let mut total = 0;
        if let Some(text) = &rule.succeeded_indexes {
            let ipath = format!("{path}.succeededIndexes");
            if text.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                e.too_long(&ipath, MAX_SUCCEEDED_INDEXES_LENGTH);
            }
            match validate_indexes_format(text, completions) {
                Ok(t) => total = t,
                Err(why) => e.invalid(
                    &ipath,
                    &go_quote(text),
                    &format!("error parsing succeededIndexes: {why}"),
                ),
            }
        }
        if let Some(count) = rule.succeeded_count {
            let cpath = format!("{path}.succeededCount");
            e.non_negative(&cpath, Some(i64::from(count)));
            if count > completions {
                e.invalid(
                    &cpath,
                    &count.to_string(),
                    &format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                );
            }
            if rule.succeeded_indexes.is_some() && count > total {
                e.invalid(
                    &cpath,
                    &count.to_string(),
                    &format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                );
            }
        }
    }
}

/// Which failure-handling features the Job uses, and whether the version supports them.
pub fn support(job: &Job, sem: &Semantics) -> Vec<Support> {
    let spec = job.spec.as_ref();
    let uses_fail_index = spec
        .and_then(|s| s.pod_failure_policy.as_ref())
        .is_some_and(|p| p.rules.iter().any(|r| r.action == "FailIndex"));
    let uses_disruption = spec
        .and_then(|s| s.pod_failure_policy.as_ref())
        .is_some_and(|p| {
            p.rules
                .iter()
                .flat_map(|r| r.on_pod_conditions.iter().flatten())
                .any(|c| c.type_ == "DisruptionTarget")
        });
    let m = sem.minor;
    let state = |alpha: u32, beta: Option<u32>, ga: Option<u32>| -> (String, bool) {
        if ga.is_some_and(|g| m >= g) {
            ("GA".into(), true)
        } else if beta.is_some_and(|b| m >= b) {
            ("beta (on by default)".into(), true)
        } else if m >= alpha {
            ("alpha (off by default)".into(), false)
        } else {
            ("not available".into(), false)
        }
    };
    let mut out = Vec::new();
    let mut add =
        |feature: &str, used: bool, (state, enabled): (String, bool), consequence: &str| {
            out.push(Support {
                feature: feature.into(),
                used,
                state,
                enabled,
                consequence: (used && !enabled).then(|| consequence.to_string()),
            })
        };
    add(
        "podFailurePolicy (JobPodFailurePolicy)",
        spec.is_some_and(|s| s.pod_failure_policy.is_some()),
        state(25, Some(26), Some(31)),
        "the API server drops spec.podFailurePolicy: every failure counts",
    );
    add(
        "DisruptionTarget pod conditions (PodDisruptionConditions)",
        uses_disruption,
        state(25, Some(26), Some(31)),
        "pods never get DisruptionTarget: rules on it never match",
    );
    add(
        "backoffLimitPerIndex, maxFailedIndexes, FailIndex (JobBackoffLimitPerIndex)",
        spec.is_some_and(|s| s.backoff_limit_per_index.is_some() || s.max_failed_indexes.is_some())
            || uses_fail_index,
        state(28, Some(29), Some(33)),
        "the API server drops the per-index fields; FailIndex rules are skipped",
    );
    add(
        "podReplacementPolicy (JobPodReplacementPolicy)",
        spec.is_some_and(|s| s.pod_replacement_policy.is_some()),
        state(28, Some(29), Some(34)),
        "the API server drops spec.podReplacementPolicy: terminating pods are replaced at once",
    );
    add(
        "successPolicy (JobSuccessPolicy)",
        spec.is_some_and(|s| s.success_policy.is_some()),
        state(30, Some(31), Some(33)),
        "the API server drops spec.successPolicy: only completions decide success",
    );
    add(
        "managedBy (JobManagedBy)",
        spec.is_some_and(|s| s.managed_by.is_some()),
        state(30, Some(32), Some(35)),
        "the API server drops spec.managedBy: the built-in controller manages the Job",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_apimachinery() {
        assert!(qualified_name_problems("DisruptionTarget").is_empty());
        assert!(qualified_name_problems("example.com/Ready").is_empty());
        assert_eq!(qualified_name_problems("-bad").len(), 1);
        // Empty: both "must be non-empty" and the regex, as the server says.
        assert_eq!(
            qualified_name_problems(""),
            vec![
                "name part must be non-empty".to_string(),
                format!(
                    "name part {}",
                    regex_error(
                        LABEL_KEY_ERR,
                        LABEL_KEY_FMT,
                        &["MyName", "my.name", "123-abc"]
                    )
                )
            ]
        );
        assert_eq!(
            qualified_name_problems("/b"),
            vec!["prefix part must be non-empty".to_string()]
        );
        let many = qualified_name_problems("a/b/c");
        assert_eq!(many.len(), 1);
        assert!(many[0].starts_with("a valid label key must consist of"));
    }

    #[test]
    fn go_lists_and_values_look_like_go() {
        assert_eq!(go_quoted_list(&OPERATORS), "[\"In\" \"NotIn\"]");
        assert_eq!(go_json_ints(&[3, 2]), "[3,2]");
        assert_eq!(go_json_ints(&[]), "[]");
        assert_eq!(
            go_json_string("a<&>\"\n\u{1}"),
            r#""a\u003c\u0026\u003e\"\n\u0001""#
        );
        assert_eq!(go_quote("a<\"\n\u{1}é\u{200b}"), r#""a<\"\n\x01é\u200b""#);
    }

    #[test]
    fn indexes_parse_like_the_server() {
        assert_eq!(validate_indexes_format("", 3), Ok(0));
        assert_eq!(validate_indexes_format("0,2-4", 5), Ok(4));
        assert_eq!(
            validate_indexes_format("1-1", 5),
            Err("non-increasing order, previous: 1, current: 1".into())
        );
        assert_eq!(
            validate_indexes_format("3,1", 5),
            Err("non-increasing order, previous: 3, current: 1".into())
        );
        assert_eq!(
            validate_indexes_format("0-5", 5),
            Err("too large index: \"5\"".into())
        );
        assert_eq!(
            validate_indexes_format("a", 5),
            Err("cannot convert string to integer for index: \"a\"".into())
        );
        assert_eq!(
            validate_indexes_format("-1", 5),
            Err("cannot convert string to integer for index: \"\"".into())
        );
        assert_eq!(
            validate_indexes_format("1-2-3", 5),
            Err("the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'".into())
        );
    }

    /// Seen from a 1.36 API server (dry-run create): its causes, in its order.
    #[test]
    fn many_problems_come_in_the_servers_order() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe-a"},
            "spec": {
                "completions": 2,
                "activeDeadlineSeconds": 0,
                "successPolicy": {"rules": [{"succeededIndexes": "0"}, {"succeededCount": 1}]},
                "podReplacementPolicy": "Bogus<&>",
                "backoffLimitPerIndex": 1,
                "podFailurePolicy": {"rules": [
                    {"action": "Count", "onExitCodes": {"operator": "In", "values": []}},
                    {"action": "Count", "onExitCodes": {"operator": "In", "values": [3, 2]}},
                    {"action": "Count", "onPodConditions": [
                        {"type": "", "status": ""}, {"type": "a/", "status": "True"},
                        {"type": "/b"}, {"type": "A_b.c/x"}]}
                ]},
                "template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "main", "image": "busybox"}]}}
            }
        }))
        .unwrap();
        let name_part = format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        );
        let prefix_part = format!(
            "prefix part {}",
            regex_error(
                DNS1123_SUBDOMAIN_ERR,
                DNS1123_SUBDOMAIN_FMT,
                &["example.com"]
            )
        );
        let c = "spec.podFailurePolicy.rules[2].onPodConditions";
        let expected = vec![
            "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode".to_string(),
            "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required".into(),
            "spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: [3,2]: must be ordered".into(),
            format!("{c}[0].type: Invalid value: \"\": name part must be non-empty"),
            format!("{c}[0].type: Invalid value: \"\": {name_part}"),
            format!("{c}[1].type: Invalid value: \"a/\": name part must be non-empty"),
            format!("{c}[1].type: Invalid value: \"a/\": {name_part}"),
            format!("{c}[2].type: Invalid value: \"/b\": prefix part must be non-empty"),
            format!("{c}[3].type: Invalid value: \"A_b.c/x\": {prefix_part}"),
            "spec.successPolicy: Invalid value: {\"Rules\":[{\"SucceededIndexes\":\"0\",\"SucceededCount\":null},{\"SucceededIndexes\":null,\"SucceededCount\":1}]}: requires indexed completion mode".into(),
            "spec.podReplacementPolicy: Unsupported value: \"Bogus\\u003c\\u0026\\u003e\": supported values: \"Failed\"".into(),
            "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified".into(),
        ];
        let messages: Vec<String> = validate(&job).into_iter().map(|p| p.message).collect();
        assert_eq!(messages, expected);
    }

    /// Issue 32, item 5: at 1.30 the server drops successPolicy and managedBy (their gates
    /// are off) and prints an `[]int32` as Go syntax, as it does up to 1.33.
    #[test]
    fn an_older_server_drops_fields_and_prints_values_its_own_way() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j"},
            "spec": {
                "managedBy": "not a path",
                "successPolicy": {"rules": [{"succeededCount": 1}]},
                "podFailurePolicy": {"rules": [{"action": "FailJob",
                    "onExitCodes": {"operator": "In", "values": [3, 1]}}]},
                "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "x"}]}},
            },
        }))
        .unwrap();
        let at = |minor| -> Vec<String> {
            validate_at(&job, &Semantics::for_minor(minor).unwrap())
                .into_iter()
                .map(|p| p.message)
                .collect()
        };
        let ordered = "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value";
        assert_eq!(
            at(30),
            vec![format!("{ordered}: []int32{{3, 1}}: must be ordered")]
        );
        assert!(at(33).contains(&format!("{ordered}: []int32{{3, 1}}: must be ordered")));
        let newest = at(36);
        assert!(newest.contains(&format!("{ordered}: [3,1]: must be ordered")));
        assert!(newest.iter().any(|m| m.starts_with("spec.managedBy")));
        assert!(newest.iter().any(|m| m.starts_with("spec.successPolicy")));
        assert!(at(31).iter().all(|m| !m.starts_with("spec.managedBy")));
        // A struct too: Go syntax up to 1.33, its pointers' addresses unknown to us.
        assert!(at(33).contains(
            &"spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), SucceededCount:(*int32)(0x…)}}}: requires indexed completion mode"
                .to_string()
        ));
    }

    #[test]
    fn a_plain_job_with_restart_never_is_valid() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ok"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}}
        }))
        .unwrap();
        assert_eq!(validate(&job), vec![]);
    }

    /// Issue 32: a Job without a container image was "valid"; the server rejects it. The
    /// messages are the 1.30 and 1.36 servers' (the generated differential holds them).
    #[test]
    fn a_container_without_an_image_or_a_good_name_is_invalid() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main"}],
                "initContainers": [{"name": "Main", "image": "busybox"}, {"name": "main", "image": ""}]}}}
        }))
        .unwrap();
        let messages: Vec<String> = validate(&job).into_iter().map(|p| p.message).collect();
        let path = "spec.template.spec";
        assert_eq!(
            messages,
            [
                format!("{path}.containers[0].image: Required value"),
                format!(
                    "{path}.initContainers[0].name: Invalid value: \"Main\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                ),
                format!("{path}.initContainers[1].image: Required value"),
                format!("{path}.initContainers[1].name: Duplicate value: \"main\""),
            ]
        );
        let none: Job = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}
        }))
        .unwrap();
        assert_eq!(
            validate(&none)[0].message,
            format!("{path}.containers: Required value")
        );
    }

    #[test]
    fn the_default_restart_policy_is_required_to_change() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
        }))
        .unwrap();
        let messages: Vec<String> = validate(&job).into_iter().map(|p| p.message).collect();
        assert_eq!(
            messages,
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
                    .to_string()
            ]
        );
    }
}
