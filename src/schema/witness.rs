//! PURE: witnesses. For a breaking finding, a small object that the baseline accepts and the
//! other source rejects (or stores differently), checked with the local validator; for a CEL
//! rule added, a bounded, seeded search over objects generated from the baseline's schema that
//! decides whether the rule breaks some of them (breaking, with that object), none that were
//! tried (unproven, with how many) or could not be evaluated (undecided, with why).
//!
//! Every candidate is a whole object placed along the finding's path: the baseline's smallest
//! object (required fields only, each at its smallest valid value) with the value under test at
//! the path. Candidates come from both sources' constraints at the node (bounds and one past
//! them, enum members lost, a string the baseline's pattern accepts and the other's does not,
//! duplicates, unknown keys, wrong types), then from random values of the baseline's schema, so
//! the same generic search serves every rule; the validator, not the rule, decides.
use serde_json::{Map, Value, json};

use super::cel::{self, Verdict};
// A witness is part of the finding it shows (see `finding`); the report names it from here.
use super::finding::{Change, Class, Finding};
pub use super::finding::{Expect, Witness};
use super::model::{ApiDef, Schema, shorten};
use super::pattern::{self, Comparison};
use super::validate::{apply_defaults, validate_object};

/// Objects tried per CEL rule search, at most.
pub const CEL_TRIES: usize = 200;

/// Random candidates tried per finding after the constraint-driven ones.
const RANDOM_TRIES: usize = 40;

/// Deeper than this, generated values take their smallest form.
const MAX_DEPTH: usize = 12;

/// At most this many values in one random value; past it, the smallest. Without it, arrays
/// sized at their bounds nest (64 rules of 64 matches of ...) and one object takes seconds to
/// validate.
const RANDOM_NODES: usize = 400;

/// The name every witness carries.
pub const OBJECT_NAME: &str = "km-witness";

/// Where a witness goes, one step of a finding's path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Property(String),
    /// A list's items; the witness's value goes in the one at this index (the first, unless
    /// the baseline's rules refuse it there: JobSet's `dependsOn` on the first job).
    Items(usize),
    MapValues,
}

/// `.spec.rules[*].matches`, `.metadata.labels.*`, `.` as steps.
fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() && rest != "." {
        if let Some(r) = rest.strip_prefix("[*]") {
            out.push(Step::Items(0));
            rest = r;
        } else if let Some(r) = rest.strip_prefix(".*")
            && (r.is_empty() || r.starts_with('.') || r.starts_with('['))
        {
            out.push(Step::MapValues);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(Step::Property(r[..end].to_string()));
            rest = &r[end..];
        } else {
            break;
        }
    }
    out
}

/// The map key witnesses use under `additionalProperties`.
const MAP_KEY: &str = "km";

/// The path as it is in the witness: the item used, the map key used.
fn concrete(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Property(p) => {
                out.push('.');
                out.push_str(p);
            }
            Step::Items(i) => out.push_str(&format!("[{i}]")),
            Step::MapValues => {
                out.push('.');
                out.push_str(MAP_KEY);
            }
        }
    }
    if out.is_empty() { ".".into() } else { out }
}

fn child<'s>(node: Option<&'s Schema>, step: &Step) -> Option<&'s Schema> {
    let node = node?;
    match step {
        Step::Property(p) => node.properties.get(p),
        Step::Items(_) => node.items.as_ref(),
        Step::MapValues => node.map_values(),
    }
}

fn node_at<'s>(root: &'s Schema, steps: &[Step]) -> Option<&'s Schema> {
    steps.iter().try_fold(root, |n, s| child(Some(n), s))
}

/// Witnesses are the same from run to run: generated from a seed.
struct Rng(crate::rng::SplitMix64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.0.next_u64() % 100 < percent
    }
}

fn seed_of(text: &str) -> u64 {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What a CEL rule mentions, aimed at by the random values.
#[derive(Default)]
struct Aims {
    strings: Vec<String>,
    integers: Vec<i64>,
    fields: Vec<String>,
}

/// Values valid (or nearly) under one schema: smallest, n-th distinct, random.
struct Generator {
    rng: Rng,
    aims: Aims,
    /// Values the random value being built may still take ([`RANDOM_NODES`]).
    nodes_left: usize,
    /// Smallest objects also set the optional fields their own CEL rules select (a list with
    /// one item), for a baseline whose rules refuse the smallest object (JobSet's
    /// `self.replicatedJobs[0]`).
    fill_ruled: bool,
}

/// Sample strings of the formats the API server checks.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2024-01-01T00:00:00Z",
        "date" => "2024-01-01",
        "duration" => "1s",
        "email" => "a@example.com",
        "hostname" => "a",
        "ipv4" => "10.0.0.1",
        "ipv6" => "::1",
        "cidr" => "10.0.0.0/8",
        "mac" => "00:00:5e:00:53:01",
        "uri" => "http://a",
        "uuid" | "uuid3" | "uuid4" | "uuid5" => "9b2a6d3e-4f1c-4b8a-9c3d-2e1f0a7b6c5d",
        "byte" => "YQ==",
        "isbn" | "isbn10" => "0306406152",
        "isbn13" => "9780306406157",
        "creditcard" => "4111111111111111",
        "ssn" => "123-45-6789",
        "hexcolor" => "#ffffff",
        "rgbcolor" => "rgb(0,0,0)",
        _ => return None,
    })
}

impl Generator {
    fn new(seed: u64) -> Generator {
        Generator {
            rng: Rng(crate::rng::SplitMix64(seed)),
            aims: Aims::default(),
            nodes_left: RANDOM_NODES,
            fill_ruled: false,
        }
    }

    /// A string of at least `min` characters that the node's pattern, format and length allow.
    fn string(&self, s: &Schema, min: usize) -> Value {
        let min = min.max(s.min_length.unwrap_or(0) as usize);
        let max = s.max_length.map(|m| m as usize);
        if let Some(p) = &s.pattern
            && let Ok(Some(found)) = pattern::accepted(p, min, max)
        {
            return found.into();
        }
        if let Some(f) = s.format.as_deref().and_then(format_sample)
            && f.chars().count() >= min
        {
            return f.into();
        }
        // Letters: what names, keys and most patterns without anchors take.
        let mut text = "a".repeat(min.max(1));
        if max.is_some_and(|m| m < text.len()) {
            text.truncate(max.unwrap_or(0));
        }
        text.into()
    }

    fn number(&self, s: &Schema, integer: bool) -> Value {
        let step = s.multiple_of.unwrap_or(1.0);
        let mut lo = s.minimum.unwrap_or(f64::MIN);
        if s.exclusive_minimum {
            lo += if integer { 1.0 } else { step.min(1.0) / 2.0 };
        }
        let mut v = 0f64.max(lo);
        if let Some(m) = s.multiple_of
            && m > 0.0
        {
            v = (v / m).ceil() * m;
        }
        if let Some(hi) = s.maximum
            && (v > hi || (s.exclusive_maximum && v >= hi))
        {
            v = hi - if s.exclusive_maximum { 1.0 } else { 0.0 };
        }
        number_value(v, integer)
    }

    /// The smallest value the node takes: required fields only, bounds met.
    fn minimal(&mut self, s: &Schema) -> Value {
        self.nth(s, 0, 0)
    }

    /// The `k`-th of a run of distinct small values (list items must differ in sets and maps).
    fn nth(&mut self, s: &Schema, k: usize, depth: usize) -> Value {
        if let Some(values) = &s.enum_values
            && !values.is_empty()
        {
            return values[k % values.len()].clone();
        }
        if s.int_or_string {
            return if s.pattern.is_some() {
                self.string(s, k)
            } else {
                json!(k)
            };
        }
        match s.type_.as_deref() {
            Some("object") => {
                let mut map = Map::new();
                if s.embedded_resource {
                    map.insert("apiVersion".into(), "v1".into());
                    map.insert("kind".into(), "ConfigMap".into());
                }
                for name in &s.required {
                    let v = match s.properties.get(name).or(s.map_values()) {
                        Some(p) if depth < MAX_DEPTH => self.nth(p, k, depth + 1),
                        _ => json!({}),
                    };
                    map.insert(name.clone(), v);
                }
                if self.fill_ruled && depth < MAX_DEPTH {
                    for name in ruled_fields(s) {
                        let p = &s.properties[&name];
                        let v = match self.nth(p, k, depth + 1) {
                            Value::Array(a) if a.is_empty() => self.items(p, 1, depth + 1),
                            v => v,
                        };
                        map.entry(name).or_insert(v);
                    }
                }
                if self.fill_ruled && depth < MAX_DEPTH {
                    self.meet_comparisons(s, &mut map, k, depth);
                }
                let least = s.min_properties.unwrap_or(0) as usize;
                // Only as many as minProperties still asks for: an object may have hundreds of
                // thousands of properties, and this runs for every object a search builds.
                let optional: Vec<&String> = s
                    .properties
                    .keys()
                    .filter(|p| !map.contains_key(*p))
                    .take(least.saturating_sub(map.len()))
                    .collect();
                for name in optional {
                    let v = self.nth(&s.properties[name], k, depth + 1);
                    map.insert(name.clone(), v);
                }
                if let Some(values) = s.map_values() {
                    let mut i = 0;
                    while map.len() < least {
                        let v = self.nth(values, i, depth + 1);
                        map.insert(format!("k{i}"), v);
                        i += 1;
                    }
                }
                if k > 0 && map.is_empty() && s.map_values().is_some() {
                    let v = self.nth(s.map_values().expect("a map"), 0, depth + 1);
                    map.insert(format!("k{k}"), v);
                }
                Value::Object(map)
            }
            Some("array") => {
                let n = s.min_items.unwrap_or(0) as usize;
                self.items(s, n, depth)
            }
            // Distinct lengths give distinct strings (list items must differ in sets).
            Some("string") => self.string(s, s.min_length.unwrap_or(0).max(1) as usize + k),
            Some("integer") => {
                let base = self.number(s, true);
                offset(&base, k, s, true)
            }
            Some("number") => {
                let base = self.number(s, false);
                offset(&base, k, s, false)
            }
            Some("boolean") => Value::Bool(k % 2 == 1),
            _ => json!({}),
        }
    }

    /// Where the node's own rules compare two of its fields (our StatefulSetMigration's
    /// `self.source.name != self.destination.name`), the second is made to differ from the
    /// first (or, for `==`, to equal it where it can).
    fn meet_comparisons(
        &mut self,
        s: &Schema,
        map: &mut Map<String, Value>,
        k: usize,
        depth: usize,
    ) {
        for r in &s.validations {
            let Ok(rule) = &*cel::compiled(r) else {
                continue;
            };
            for c in &rule.literals().comparisons {
                let node = c.right.iter().try_fold(s, |n, name| n.properties.get(name));
                let left = field_at(map, &c.left).cloned();
                let (Some(node), Some(left)) = (node, left) else {
                    continue;
                };
                let Some(right) = field_at_mut(map, &c.right) else {
                    continue;
                };
                if c.equal {
                    if *right != left && validate_object(node, &left).is_valid() {
                        *right = left;
                    }
                } else {
                    for n in k + 1..k + 8 {
                        if *right != left {
                            break;
                        }
                        *right = self.nth(node, n, depth + 1);
                    }
                }
            }
        }
    }

    /// `n` distinct items for an array node.
    fn items(&mut self, s: &Schema, n: usize, depth: usize) -> Value {
        let Some(item) = &s.items else {
            return Value::Array(Vec::new());
        };
        let mut out: Vec<Value> = Vec::with_capacity(n);
        let mut k = 0;
        while out.len() < n && k < n + 32 {
            let v = if depth < MAX_DEPTH {
                self.nth(item, k, depth + 1)
            } else {
                Value::Null
            };
            k += 1;
            if !out.contains(&v) || !must_differ(s) {
                out.push(v);
            }
        }
        Value::Array(out)
    }

    /// A random value of the node, aimed at what the CEL rules mention.
    fn random(&mut self, s: &Schema, depth: usize) -> Value {
        if depth == 0 {
            self.nodes_left = RANDOM_NODES;
        }
        if depth >= MAX_DEPTH || self.nodes_left == 0 {
            return self.minimal(s);
        }
        self.nodes_left -= 1;
        if s.nullable && self.rng.chance(5) {
            return Value::Null;
        }
        if let Some(values) = &s.enum_values
            && !values.is_empty()
        {
            let i = self.rng.below(values.len());
            return values[i].clone();
        }
        if s.int_or_string {
            return if self.rng.chance(50) {
                self.random_string(s)
            } else {
                self.random_integer(s)
            };
        }
        match s.type_.as_deref() {
            Some("object") => {
                let mut map = match self.minimal(s) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                for (name, p) in &s.properties {
                    let aimed = self.aims.fields.contains(name);
                    if map.contains_key(name) || self.rng.chance(if aimed { 70 } else { 30 }) {
                        let v = self.random(p, depth + 1);
                        map.insert(name.clone(), v);
                    }
                }
                if let Some(values) = s.map_values() {
                    let most = s.max_properties.map_or(4, |m| m as usize).min(4);
                    for _ in 0..self.rng.below(most + 1) {
                        let key = self.random_key();
                        let v = self.random(values, depth + 1);
                        map.insert(key, v);
                    }
                }
                Value::Object(map)
            }
            Some("array") => {
                let least = s.min_items.unwrap_or(0) as usize;
                let most = s.max_items.map_or(least + 4, |m| m as usize);
                let mut sizes = vec![least, least + 1, least + 2, most.min(least + 3)];
                if most <= 64 {
                    // Bounds are where rules over sizes and sums are decided.
                    sizes.push(most);
                }
                for &i in &self.aims.integers {
                    if let Ok(i) = usize::try_from(i)
                        && (least..=most).contains(&i)
                        && i <= 64
                    {
                        sizes.push(i);
                        sizes.push((i + 1).min(most));
                    }
                }
                let n = sizes[self.rng.below(sizes.len())].clamp(least, most);
                let Some(item) = &s.items else {
                    return Value::Array(Vec::new());
                };
                let mut out = Vec::with_capacity(n);
                let mut attempts = 0;
                while out.len() < n && attempts < n * 4 + 8 {
                    // Past the budget, items would all be the smallest one: duplicates that
                    // sets and maps reject, and rules over the array see nothing new.
                    if out.len() >= least && self.nodes_left == 0 {
                        break;
                    }
                    attempts += 1;
                    let v = self.random(item, depth + 1);
                    if !must_differ(s) || !out.contains(&v) {
                        out.push(v);
                    }
                }
                Value::Array(out)
            }
            Some("string") => self.random_string(s),
            Some("integer") => self.random_integer(s),
            Some("number") => {
                let v = self.random_integer(s);
                if self.rng.chance(30) {
                    let half = v.as_f64().unwrap_or(0.0) + 0.5;
                    number_value(half, false)
                } else {
                    v
                }
            }
            Some("boolean") => Value::Bool(self.rng.chance(50)),
            _ => json!({}),
        }
    }

    fn random_key(&mut self) -> String {
        let aimed: Vec<&String> = self.aims.strings.iter().filter(|s| !s.is_empty()).collect();
        if !aimed.is_empty() && self.rng.chance(50) {
            return aimed[self.rng.below(aimed.len())].clone();
        }
        format!("k{}", self.rng.below(8))
    }

    /// A random string the node accepts on its own (pattern, length, format, enum), mostly:
    /// aimed-at constants may not be, and are tried anyway now and then.
    fn random_string(&mut self, s: &Schema) -> Value {
        for _ in 0..6 {
            let v = self.any_string(s);
            if validate_object(s, &v).is_valid() {
                return v;
            }
        }
        self.string(s, s.min_length.unwrap_or(0) as usize)
    }

    fn any_string(&mut self, s: &Schema) -> Value {
        let least = s.min_length.unwrap_or(0) as usize;
        let most = s.max_length.map(|m| m as usize);
        match self.rng.below(4) {
            0 if !self.aims.strings.is_empty() => {
                let i = self.rng.below(self.aims.strings.len());
                self.aims.strings[i].clone().into()
            }
            1 => {
                let top = most.unwrap_or(least + 8).min(least + 64);
                let n = least + self.rng.below(top.saturating_sub(least) + 1);
                self.string(s, n)
            }
            2 => {
                let words = ["", "a", "A", "0", "-", "a.b", "a/b", "a b", "x:y"];
                words[self.rng.below(words.len())].into()
            }
            _ => self.string(s, least),
        }
    }

    fn random_integer(&mut self, s: &Schema) -> Value {
        for _ in 0..6 {
            let v = self.any_integer(s);
            if validate_object(s, &v).is_valid() {
                return v;
            }
        }
        self.number(s, true)
    }

    fn any_integer(&mut self, s: &Schema) -> Value {
        let mut picks: Vec<f64> = vec![0.0, 1.0, -1.0, 2.0];
        picks.extend(s.minimum);
        picks.extend(s.maximum);
        picks.extend(s.multiple_of);
        for &i in &self.aims.integers {
            picks.extend([i as f64 - 1.0, i as f64, i as f64 + 1.0]);
        }
        let v = picks[self.rng.below(picks.len())];
        number_value(v, true)
    }
}

/// The value at a path of property names in an object's fields.
fn field_at<'v>(map: &'v Map<String, Value>, names: &[String]) -> Option<&'v Value> {
    let (first, rest) = names.split_first()?;
    rest.iter().try_fold(map.get(first)?, |v, name| v.get(name))
}

fn field_at_mut<'v>(map: &'v mut Map<String, Value>, names: &[String]) -> Option<&'v mut Value> {
    let (first, rest) = names.split_first()?;
    rest.iter()
        .try_fold(map.get_mut(first)?, |v, name| v.get_mut(name))
}

/// Whether two items of the list `s` count as the same one: equal, or in a map list, equal
/// in every key.
fn same_item(s: &Schema, a: &Value, b: &Value) -> bool {
    if s.list_type.as_deref() == Some("map") && !s.list_map_keys.is_empty() {
        s.list_map_keys.iter().all(|k| a.get(k) == b.get(k))
    } else {
        a == b
    }
}

/// Whether the items of an array must differ (sets, maps by key, uniqueItems).
fn must_differ(s: &Schema) -> bool {
    s.unique_items || matches!(s.list_type.as_deref(), Some("set" | "map"))
}

fn number_value(v: f64, integer: bool) -> Value {
    if (integer || v.fract() == 0.0) && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// The `k`-th number from `base` by the node's step, within its maximum where possible.
fn offset(base: &Value, k: usize, s: &Schema, integer: bool) -> Value {
    let step = s.multiple_of.unwrap_or(1.0);
    let v = base.as_f64().unwrap_or(0.0) + step * k as f64;
    if s.maximum.is_some_and(|m| v > m) {
        return base.clone();
    }
    number_value(v, integer)
}

/// What is placed at a finding's path.
#[derive(Debug, Clone)]
enum Placement {
    /// This value at the path.
    Value(Value),
    /// The parent object (at the path) without this key.
    Without(String),
}

/// The baseline's smallest object with `placement` along `steps`; `None` where the path
/// cannot be built (a step the schema does not have and no value to put there).
fn place(
    g: &mut Generator,
    node: Option<&Schema>,
    steps: &[Step],
    placement: &Placement,
) -> Option<Value> {
    let Some((first, rest)) = steps.split_first() else {
        return Some(match placement {
            Placement::Value(v) => v.clone(),
            Placement::Without(name) => {
                let mut v = g.minimal(node?);
                v.as_object_mut()?.remove(name);
                v
            }
        });
    };
    let below = place(g, child(node, first), rest, placement)?;
    let mut here = match node {
        Some(n) => g.minimal(n),
        None => match first {
            Step::Items(_) => json!([]),
            _ => json!({}),
        },
    };
    match first {
        Step::Property(p) => {
            here.as_object_mut()?.insert(p.clone(), below);
        }
        Step::MapValues => {
            here.as_object_mut()?.insert(MAP_KEY.into(), below);
        }
        Step::Items(at) => {
            let items = here.as_array_mut()?;
            let item = node.and_then(|n| n.items.as_ref());
            let mut k = 0;
            while items.len() <= *at {
                items.push(g.nth(item?, k, 1));
                k += 1;
            }
            items[*at] = below;
            // Keeps set and map items distinct from the one placed and from each other.
            if let Some(n) = node
                && must_differ(n)
            {
                for i in (0..items.len()).filter(|i| i != at) {
                    while (0..items.len())
                        .filter(|&j| j != i && (j < i || j == *at))
                        .any(|j| same_item(n, &items[j], &items[i]))
                    {
                        items[i] = g.nth(item?, k, 1);
                        k += 1;
                        if k > 64 {
                            return None;
                        }
                    }
                }
            }
        }
    }
    Some(here)
}

/// The witness object for one API version: type meta and a name around `body`.
fn manifest(api: &ApiDef, version: &str, body: Value) -> Value {
    let mut map = match body {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let api_version = if api.group.is_empty() {
        version.to_string()
    } else {
        format!("{}/{version}", api.group)
    };
    map.insert("apiVersion".into(), api_version.into());
    map.insert("kind".into(), api.kind.clone().into());
    map.insert("metadata".into(), json!({ "name": OBJECT_NAME }));
    Value::Object(map)
}

/// The APIs of a comparison, the baseline, and the finding being shown.
struct Case<'a> {
    apis: &'a [Option<&'a ApiDef>],
    base: usize,
    version: String,
    root: &'a Schema,
    api: &'a ApiDef,
    steps: Vec<Step>,
}

impl Case<'_> {
    fn other_root(&self, i: usize) -> Option<&Schema> {
        self.apis[i]?
            .versions
            .get(&self.version)
            .filter(|v| v.served)
            .map(|v| &v.schema)
    }

    fn build(&self, g: &mut Generator, steps: &[Step], placement: &Placement) -> Option<Value> {
        let body = place(g, Some(self.root), steps, placement)?;
        Some(manifest(self.api, &self.version, body))
    }
}

/// What the search concluded for a finding.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Found(Witness),
    /// No object shows it; why.
    None(String),
}

/// Finds witnesses for the breaking findings of one API (and decides the CEL rules added),
/// changing their class where the search decides it.
pub fn attach(apis: &[Option<&ApiDef>], baseline: usize, findings: &mut [Finding], objects: bool) {
    let Some(base) = pick(apis, baseline) else {
        return;
    };
    for f in findings.iter_mut() {
        let cel_added = f.attribute == "x-kubernetes-validations" && f.change == Change::Added;
        if !objects {
            if cel_added {
                unproven(
                    f,
                    Change::Added,
                    "CEL rule added; not evaluated (--no-witnesses)".into(),
                );
            }
            continue;
        }
        if !(f.class.is_noticeable() || cel_added) {
            continue;
        }
        let Some(case) = case(apis, base, f) else {
            f.no_witness = Some("the baseline has no served version to build an object of".into());
            continue;
        };
        let outcome = if cel_added {
            decide_rules(&case, f)
        } else {
            search(&case, f)
        };
        match outcome {
            Outcome::Found(w) => {
                f.witness = Some(w);
                f.no_witness = None;
            }
            Outcome::None(why) => f.no_witness = Some(why),
        }
    }
}

fn pick(apis: &[Option<&ApiDef>], baseline: usize) -> Option<usize> {
    if apis.get(baseline).is_some_and(Option::is_some) {
        Some(baseline)
    } else {
        apis.iter().position(Option::is_some)
    }
}

fn case<'a>(apis: &'a [Option<&'a ApiDef>], base: usize, f: &Finding) -> Option<Case<'a>> {
    let served = |i: usize, v: &str| {
        apis[i]
            .and_then(|a| a.versions.get(v))
            .is_some_and(|d| d.served)
    };
    let version = match &f.version {
        Some(v) => v.clone(),
        None => {
            let a = apis[base]?;
            a.versions_by_priority()
                .into_iter()
                .find(|v| a.versions[*v].served)?
                .clone()
        }
    };
    // As the diff does: where the baseline lacks the version, the first source with it.
    let vbase = if served(base, &version) {
        base
    } else {
        (0..apis.len()).find(|&i| served(i, &version))?
    };
    let api = apis[vbase]?;
    Some(Case {
        apis,
        base: vbase,
        root: &api.versions[&version].schema,
        api,
        version,
        steps: steps(&f.path),
    })
}

/// Whether a violation is about the node at `at` (or below it).
fn about(reason: &str, at: &str) -> bool {
    let at = if at == "." { "" } else { at };
    reason.starts_with(at)
        && reason[at.len()..]
            .chars()
            .next()
            .is_none_or(|c| matches!(c, '.' | '[' | ':'))
}

fn short_value(v: &Value) -> String {
    shorten(&v.to_string(), 40)
}

/// The constraint-driven search for a finding other than a CEL rule added.
fn search(case: &Case, f: &mut Finding) -> Outcome {
    let others: Vec<usize> = (0..case.apis.len())
        .filter(|&i| i != case.base && case.apis[i].is_some())
        .collect();
    let mut g = Generator::new(seed_of(&format!("{}{}{}", case.api.name, f.path, f.rule())));
    // API-level findings: the smallest object of the baseline's version shows them.
    let why = match f.attribute.as_str() {
        "api" => Some("the API is not served there"),
        "version" => Some("the version is not served there"),
        "scope" => Some("the API has another scope there"),
        "names" => Some("the kind or plural differs there"),
        _ => None,
    };
    if let Some(why) = why {
        let body = g.minimal(case.root);
        let Some(object) = case.build(&mut g, &[], &Placement::Value(body)) else {
            return Outcome::None("no object of the baseline could be built".into());
        };
        if !validate_object(case.root, &object).is_valid() {
            return Outcome::None("no smallest object of the baseline is valid there".into());
        }
        let differs = |i: usize| match f.attribute.as_str() {
            "api" => case.apis[i].is_none(),
            "version" => case.apis[i].is_some() && case.other_root(i).is_none(),
            "scope" => case.apis[i].is_some_and(|o| o.scope != case.api.scope),
            _ => {
                case.apis[i].is_some_and(|o| o.kind != case.api.kind || o.plural != case.api.plural)
            }
        };
        return match (0..case.apis.len()).find(|&i| i != case.base && differs(i)) {
            Some(i) => {
                let short = format!("{} {}", case.api.kind, OBJECT_NAME);
                found(i, Expect::Rejected, object, short, vec![why.into()])
            }
            None => Outcome::None("no source differs as the finding says".into()),
        };
    }
    match f.attribute.as_str() {
        "subresources" => return status_dropped(case, &others, &mut g),
        "selectableFields" => return selector_refused(case, &others, &mut g),
        "default" => return default_dropped(case, f, &others, &mut g),
        "x-kubernetes-map-type" => {
            return Outcome::None(
                "the map type decides how server-side apply merges; a create is not affected"
                    .into(),
            );
        }
        _ => {}
    }
    if let Some(why) = shorter_than_pattern_allows(case, f, &others) {
        return Outcome::None(why);
    }
    let plans = plans(case, f, &others, &mut g);
    // Rounds of the same candidates, each tried only while the baseline refuses every object
    // built so far: placed in the first item of each list, then around objects that set what
    // the baseline's own rules select, then in the second item of one list (the smallest list
    // whose first item those rules leave alone: JobSet's `dependsOn`).
    let lists: Vec<usize> = (0..case.steps.len())
        .filter(|&j| matches!(case.steps[j], Step::Items(_)))
        .collect();
    let rounds = [None]
        .into_iter()
        .chain(lists.into_iter().map(Some))
        .flat_map(|second| [(false, second), (true, second)]);
    let mut tried: Vec<Candidate> = Vec::new();
    for (fill_ruled, second) in rounds {
        if tried
            .iter()
            .any(|(o, _)| validate_object(case.root, o).is_valid())
        {
            break;
        }
        g.fill_ruled = fill_ruled;
        for (steps, placement) in &plans {
            let steps = in_second_item(steps, second);
            if let Some(object) = case.build(&mut g, &steps, placement) {
                tried.push((object, in_second_item(&case.steps, second)));
            }
        }
    }
    g.fill_ruled = false;
    // The witness that shows its own finding best: rejected only for reasons at its path if
    // some object is (so an unrelated rule the other source adds does not reject it too), or
    // else at its parent, or for some reason there, or for any.
    let mut best: Option<(Isolation, usize, &Candidate, Vec<String>)> = None;
    for candidate in &tried {
        let (object, path) = candidate;
        if !validate_object(case.root, object).is_valid() {
            continue;
        }
        let at = concrete(path);
        for &i in &others {
            let Some(other) = case.other_root(i) else {
                continue;
            };
            let verdict = validate_object(other, object);
            let reasons: Vec<String> = verdict.violations.iter().map(ToString::to_string).collect();
            let Some(isolation) = isolation(&reasons, &at, &f.attribute) else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, ..)| isolation < *b) {
                best = Some((isolation, i, candidate, reasons));
            }
            if isolation == Isolation::OnlyAtPath {
                break;
            }
        }
        if best
            .as_ref()
            .is_some_and(|(b, ..)| *b == Isolation::OnlyAtPath)
        {
            break;
        }
    }
    if let Some((_, i, (object, path), reasons)) = best {
        let short = short_form(object, path, f);
        return found(i, Expect::Rejected, object.clone(), short, reasons);
    }
    Outcome::None(format!(
        "none of {} objects built from the baseline's schema is accepted there and rejected by another source",
        tried.len()
    ))
}

/// An object built for a search, and the path its value is at.
type Candidate = (Value, Vec<Step>);

/// `steps` with the list step at `second` (if any, and if `steps` reaches it) placing in the
/// second item.
fn in_second_item(steps: &[Step], second: Option<usize>) -> Vec<Step> {
    let mut steps = steps.to_vec();
    if let Some(Step::Items(i)) = second.and_then(|j| steps.get_mut(j)) {
        *i = 1;
    }
    steps
}

/// The properties of `s` that its own CEL rules select (`self.name`).
fn ruled_fields(s: &Schema) -> Vec<String> {
    let mut names = Vec::new();
    for r in &s.validations {
        if let Ok(rule) = &*cel::compiled(r) {
            for f in &rule.literals().fields {
                if s.properties.contains_key(f) && !names.contains(f) {
                    names.push(f.clone());
                }
            }
        }
    }
    names
}

/// A minLength added or raised that the baseline's own pattern already implies (prometheus-
/// operator's `tokenUrl`: `^(http|https)://.+$` against `minLength: 1`): no string the
/// baseline accepts is that short, so no object shows it.
fn shorter_than_pattern_allows(case: &Case, f: &Finding, others: &[usize]) -> Option<String> {
    if f.attribute != "minLength" {
        return None;
    }
    let base = node_at(case.root, &case.steps)?;
    let pattern = base.pattern.as_deref()?;
    let min = base.min_length.unwrap_or(0) as usize;
    let others_min = others
        .iter()
        .filter_map(|&i| case.other_root(i).and_then(|r| node_at(r, &case.steps)))
        .filter_map(|o| o.min_length)
        .max()? as usize;
    if others_min == 0 || others_min <= min {
        return None;
    }
    match pattern::accepted(pattern, min, Some(others_min - 1)) {
        Ok(None) => Some(format!(
            "no object exists: the baseline's pattern {pattern:?} accepts no {}",
            if others_min == 1 {
                "empty string".to_string()
            } else {
                format!("string of fewer than {others_min} characters")
            }
        )),
        _ => None,
    }
}

/// How well a rejection shows a finding at `at`, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Isolation {
    /// Every reason is the finding's own: at its path, said as its attribute says it.
    OnlyAtPath,
    /// Every reason is at the path, the finding's own among them.
    OwnAmongOthersAtPath,
    /// Every reason is at the path or its parent (a required field, an unknown one).
    OnlyAtPathOrParent,
    /// Some reason is there, others elsewhere.
    AlsoElsewhere,
    /// Rejected, for reasons elsewhere only.
    Elsewhere,
}

/// How the validator words a rejection by `attribute`, where it is one keyword's alone.
fn reason_of(attribute: &str) -> Option<&'static str> {
    Some(match attribute {
        "minimum" => "must be greater than",
        "maximum" => "must be less than",
        "multipleOf" => "must be a multiple of",
        "minLength" => "should be at least",
        "maxLength" => "Too long:",
        "pattern" => "should match",
        "format" => "must be of format",
        "enum" => "Unsupported value:",
        "type" => "must be of type",
        "nullable" => "must not be null",
        "minItems" => "items",
        "maxItems" => "items",
        "minProperties" | "maxProperties" => "properties",
        _ => return None,
    })
}

/// How well `reasons` (a rejection's) show a finding of `attribute` at `at`; `None` when not
/// rejected.
fn isolation(reasons: &[String], at: &str, attribute: &str) -> Option<Isolation> {
    let here = |r: &String| about(r, at);
    let own = |r: &String| here(r) && reason_of(attribute).is_none_or(|words| r.contains(words));
    let near = |r: &String| about(r, at) || about(r, parent(at));
    if reasons.is_empty() {
        None
    } else if reasons.iter().all(own) {
        Some(Isolation::OnlyAtPath)
    } else if reasons.iter().all(here) && reasons.iter().any(own) {
        Some(Isolation::OwnAmongOthersAtPath)
    } else if reasons.iter().all(near) {
        Some(Isolation::OnlyAtPathOrParent)
    } else if reasons.iter().any(near) {
        Some(Isolation::AlsoElsewhere)
    } else {
        Some(Isolation::Elsewhere)
    }
}

fn parent(at: &str) -> &str {
    match at.rfind(['.', '[']) {
        Some(0) | None => ".",
        Some(i) => &at[..i],
    }
}

fn found(
    source: usize,
    expect: Expect,
    object: Value,
    short: String,
    reasons: Vec<String>,
) -> Outcome {
    Outcome::Found(witness(source, expect, object, short, reasons))
}

fn witness(
    source: usize,
    expect: Expect,
    object: Value,
    short: String,
    reasons: Vec<String>,
) -> Witness {
    Witness {
        source,
        expect,
        object,
        short,
        reasons,
        stored: Vec::new(),
        field_selector: None,
        update: None,
    }
}

/// A default removed or changed: the object without the field, which the baseline stores with
/// its default and the other source without it or with another. Where the other source
/// rejects it (the field is required, or its default was what met a rule), that is shown
/// instead, and the finding is breaking.
fn default_dropped(case: &Case, f: &mut Finding, others: &[usize], g: &mut Generator) -> Outcome {
    let [parent @ .., Step::Property(name)] = &case.steps[..] else {
        return Outcome::None("a default at the root cannot be left out".into());
    };
    let Some(object) = case.build(g, parent, &Placement::Without(name.clone())) else {
        return Outcome::None("no object of the baseline could be built without the field".into());
    };
    if !validate_object(case.root, &object).is_valid() {
        return Outcome::None("the baseline rejects its smallest object without the field".into());
    }
    let at = concrete(&case.steps);
    let short = short_form(&object, &case.steps, f);
    let as_stored = |schema: &Schema| {
        let mut o = object.clone();
        apply_defaults(schema, &mut o);
        o
    };
    let base_stored = as_stored(case.root);
    for &i in others {
        let Some(other) = case.other_root(i) else {
            continue;
        };
        let verdict = validate_object(other, &object);
        if !verdict.is_valid() {
            f.class = Class::Breaking;
            f.message
                .push_str(": an object without the field is rejected now");
            let reasons = verdict.violations.iter().map(ToString::to_string).collect();
            return found(i, Expect::Rejected, object.clone(), short, reasons);
        }
        let other_stored = as_stored(other);
        if other_stored != base_stored {
            let shown = |o: &Value| {
                value_at(o, &case.steps).map_or_else(|| "without it".into(), short_value)
            };
            let reason = format!(
                "{at}: stored as {} by the baseline, {} here",
                shown(&base_stored),
                shown(&other_stored)
            );
            let mut w = witness(
                i,
                Expect::StoredDifferently,
                object.clone(),
                short,
                vec![reason],
            );
            w.stored = vec![(case.base, base_stored), (i, other_stored)];
            return Outcome::Found(w);
        }
    }
    Outcome::None("every source stores the object without the field alike".into())
}

/// A selectable field removed: the field selector the baseline serves and the other source
/// refuses (400 Bad Request), with an object it would select.
fn selector_refused(case: &Case, others: &[usize], g: &mut Generator) -> Outcome {
    let fields = |i: usize| -> Vec<String> {
        case.apis[i]
            .and_then(|a| a.versions.get(&case.version))
            .map(|v| {
                v.selectable_fields
                    .iter()
                    .filter_map(|f| f.get("jsonPath")?.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mine = fields(case.base);
    for &i in others {
        if case.other_root(i).is_none() {
            continue;
        }
        let theirs = fields(i);
        for field in mine.iter().filter(|f| !theirs.contains(f)) {
            let Some(path) = field.strip_prefix('.') else {
                continue;
            };
            let steps = steps(field);
            let Some(node) = node_at(case.root, &steps) else {
                continue;
            };
            let value = g.minimal(node);
            let text = match &value {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                _ => continue,
            };
            let Some(object) = case.build(g, &steps, &Placement::Value(value)) else {
                continue;
            };
            if !validate_object(case.root, &object).is_valid() {
                continue;
            }
            let selector = format!("{path}={text}");
            let mut w = witness(
                i,
                Expect::SelectorRefused,
                object,
                format!("--field-selector {selector}"),
                vec![format!("{field} is not a selectable field here")],
            );
            w.field_selector = Some(selector);
            return Outcome::Found(w);
        }
    }
    Outcome::None(
        "no selectable field the baseline has and another source lacks could be given a value"
            .into(),
    )
}

/// The value at the witness's concrete path (see [`concrete`]).
fn value_at<'v>(object: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    steps.iter().try_fold(object, |v, s| match s {
        Step::Property(p) => v.get(p),
        Step::Items(i) => v.get(i),
        Step::MapValues => v.get(MAP_KEY),
    })
}

/// The table's short form: the value at the path, or what was left out.
fn short_form(object: &Value, steps: &[Step], f: &Finding) -> String {
    let at = concrete(steps);
    match value_at(object, steps) {
        Some(v) if !(f.attribute == "required" || f.attribute == "default") => {
            format!("{at}: {}", short_value(v))
        }
        _ => {
            let name = steps.last().map_or(String::new(), |s| match s {
                Step::Property(p) => p.clone(),
                _ => String::new(),
            });
            format!("{} without {name}", parent(&at))
        }
    }
}

/// With a status subresource, a create drops `.status`; without one it is stored. The witness
/// is an object with a `.status`, as each side stores it; where the other side has no status
/// subresource, it also refuses the status updates the baseline serves.
fn status_dropped(case: &Case, others: &[usize], g: &mut Generator) -> Outcome {
    let Some(status) = case.root.properties.get("status") else {
        return Outcome::None("the baseline's schema has no .status to set".into());
    };
    let mut value = g.minimal(status);
    if let (Some(map), Some((name, p))) = (value.as_object_mut(), status.properties.iter().next())
        && map.is_empty()
    {
        let v = g.nth(p, 0, 1);
        map.insert(name.clone(), v);
    }
    let steps = [Step::Property("status".into())];
    let Some(object) = case.build(g, &steps, &Placement::Value(value)) else {
        return Outcome::None("no object with a status could be built".into());
    };
    if !validate_object(case.root, &object).is_valid() {
        return Outcome::None("no object with a status is valid in the baseline".into());
    }
    let has_status = |s: &Value| s.get("status").is_some_and(|v| !v.is_null());
    let as_stored = |subresource: bool| {
        let mut o = object.clone();
        if subresource && let Some(map) = o.as_object_mut() {
            map.remove("status");
        }
        o
    };
    let base_status = has_status(&case.api.versions[&case.version].subresources);
    for &i in others {
        let Some(other) = case.apis[i].and_then(|a| a.versions.get(&case.version)) else {
            continue;
        };
        let other_status = has_status(&other.subresources);
        if other_status != base_status {
            let short = format!(".status: {}", short_value(&object["status"]));
            let reason = if base_status {
                "no status subresource here: a create stores .status, and status updates (PUT .../status) are refused"
            } else {
                "a status subresource here: a create drops .status"
            };
            let mut w = witness(
                i,
                Expect::StoredDifferently,
                object.clone(),
                short,
                vec![reason.into()],
            );
            w.stored = vec![
                (case.base, as_stored(base_status)),
                (i, as_stored(other_status)),
            ];
            return Outcome::Found(w);
        }
    }
    Outcome::None("the status subresource is the same everywhere".into())
}

type Plan = (Vec<Step>, Placement);

/// The candidates for a finding, smallest and most telling first.
fn plans(case: &Case, f: &Finding, others: &[usize], g: &mut Generator) -> Vec<Plan> {
    let steps = case.steps.clone();
    let mut out: Vec<Plan> = Vec::new();
    let base_node = node_at(case.root, &steps);
    if let ("required", [parent @ .., Step::Property(name)]) = (f.attribute.as_str(), &steps[..]) {
        out.push((parent.to_vec(), Placement::Without(name.clone())));
        return out;
    }
    let values: Vec<Value> = match base_node {
        Some(b) => {
            let other_nodes: Vec<&Schema> = others
                .iter()
                .filter_map(|&i| case.other_root(i).and_then(|r| node_at(r, &steps)))
                .collect();
            let mut v = Vec::new();
            if let Some(sample) = &f.sample {
                v.push(Value::String(sample.clone()));
            }
            for o in &other_nodes {
                v.extend(edge_values(g, b, o));
            }
            v.push(g.minimal(b));
            for k in 1..4 {
                v.push(g.nth(b, k, 0));
            }
            for _ in 0..RANDOM_TRIES {
                v.push(g.random(b, 0));
            }
            v
        }
        // The baseline has no node here (a field added where it keeps unknown fields): any
        // value is kept by the baseline; one of the wrong shape is refused by the other.
        None => vec![
            json!("km"),
            json!(0),
            json!(true),
            json!({}),
            json!([]),
            json!({"km": "km"}),
            json!(0.5),
        ],
    };
    let mut seen = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v.clone());
            out.push((steps.clone(), Placement::Value(v)));
        }
    }
    out
}

/// Values at the edges where the baseline's node `b` and another's `o` part: within `b`'s
/// constraints where it can, just outside `o`'s.
fn edge_values(g: &mut Generator, b: &Schema, o: &Schema) -> Vec<Value> {
    let mut v = Vec::new();
    if b.nullable && !o.nullable {
        v.push(Value::Null);
    }
    if let Some(values) = &b.enum_values {
        let kept = o.enum_values.as_deref().unwrap_or(&[]);
        v.extend(values.iter().filter(|x| !kept.contains(x)).cloned());
    } else if let Some(kept) = &o.enum_values {
        // An enum added: values of the baseline's type outside it.
        for k in 0..6 {
            let x = g.nth(b, k, 0);
            if !kept.contains(&x) {
                v.push(x);
            }
        }
        for word in ["km", "a", "", "0"] {
            let x = Value::from(word);
            if !kept.contains(&x) {
                v.push(x);
            }
        }
    }
    if let Some(p) = &o.pattern {
        let from = b.pattern.as_deref().unwrap_or("");
        match pattern::compare(from, p) {
            Comparison::Narrowed { witness } | Comparison::Changed { witness, .. } => {
                v.push(witness.into());
            }
            _ => {}
        }
    }
    // Lengths, counts and bounds: one past the other's, and the baseline's own.
    if let Some(m) = o.max_length {
        v.push(g.string(b, m as usize + 1));
    }
    // One short of the other's minimum length: `minLength: 1` added is shown by "" (the
    // generator's strings are otherwise never empty).
    if let Some(m) = o.min_length
        && m > b.min_length.unwrap_or(0)
    {
        v.push(match m - 1 {
            0 => Value::from(""),
            below => g.string(b, below as usize),
        });
    }
    if let Some(m) = o.max_items {
        v.push(g.items(b, m as usize + 1, 0));
    }
    if o.min_items.unwrap_or(0) > b.min_items.unwrap_or(0) {
        v.push(g.items(b, b.min_items.unwrap_or(0) as usize, 0));
    }
    if let Some(m) = o.max_properties {
        let mut map = match g.minimal(b) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let names: Vec<&String> = b.properties.keys().collect();
        let mut k = 0;
        while map.len() <= m as usize && k < m as usize + 8 + names.len() {
            let (key, value) = match names.get(k) {
                Some(n) => ((*n).clone(), g.nth(&b.properties[*n], 0, 1)),
                None => match b.map_values() {
                    Some(values) => (format!("k{k}"), g.nth(values, k, 1)),
                    None => break,
                },
            };
            map.entry(key).or_insert(value);
            k += 1;
        }
        v.push(Value::Object(map));
    }
    let integer = b.type_.as_deref() == Some("integer");
    let step = if integer { 1.0 } else { 0.5 };
    if let Some(m) = o.maximum {
        v.push(number_value(
            if o.exclusive_maximum { m } else { m + step },
            integer,
        ));
    }
    if let Some(m) = o.minimum {
        v.push(number_value(
            if o.exclusive_minimum { m } else { m - step },
            integer,
        ));
    }
    v.extend(b.maximum.map(|m| number_value(m, integer)));
    v.extend(b.minimum.map(|m| number_value(m, integer)));
    if let Some(m) = b.multiple_of {
        v.extend((1..=12).map(|k| number_value(m * f64::from(k), integer)));
    }
    // Duplicates: sets, map keys and uniqueItems refuse them.
    if b.type_.as_deref() == Some("array")
        && let Some(item) = &b.items
    {
        let x = g.minimal(item);
        v.push(json!([x.clone(), x]));
        if !o.list_map_keys.is_empty() {
            // Items equal in the other's keys, different in the rest.
            let y = g.nth(item, 1, 1);
            let mut z = y.clone();
            if let (Some(z), Some(x)) = (z.as_object_mut(), x.as_object()) {
                for k in &o.list_map_keys {
                    if let Some(kv) = x.get(k) {
                        z.insert(k.clone(), kv.clone());
                    }
                }
            }
            v.push(json!([x, z]));
        }
    }
    // Unknown keys: refused where the other does not keep them.
    if b.type_.as_deref() == Some("object")
        && let Value::Object(mut map) = g.minimal(b)
    {
        map.insert("km-unknown".into(), "km".into());
        v.push(Value::Object(map));
    }
    // Other types: what the baseline takes that the other's type does not.
    if b.type_ != o.type_ || b.int_or_string != o.int_or_string {
        v.extend([
            json!("1"),
            json!(1),
            json!(0.5),
            json!(true),
            json!({}),
            json!([]),
        ]);
    }
    if let Some(f) = b.format.as_deref().and_then(format_sample) {
        v.push(f.into());
    }
    v
}

/// A CEL rule added at the finding's path: breaking with a witness, unproven after the search,
/// or undecided.
fn decide_rules(case: &Case, f: &mut Finding) -> Outcome {
    let base_node = node_at(case.root, &case.steps);
    let mut added: Vec<(usize, &Schema, super::model::CelRule)> = Vec::new();
    for i in 0..case.apis.len() {
        if i == case.base {
            continue;
        }
        let Some(o) = case.other_root(i).and_then(|r| node_at(r, &case.steps)) else {
            continue;
        };
        for r in &o.validations {
            let known = base_node.is_some_and(|b| b.validations.iter().any(|x| x.key() == r.key()));
            if !known {
                added.push((i, o, r.clone()));
            }
        }
    }
    let Some(b) = base_node else {
        return unproven(
            f,
            Change::Added,
            "the baseline has no node here to generate values of".into(),
        );
    };
    let mut rules = Vec::new();
    let mut transitions = Vec::new();
    for (i, o, r) in &added {
        let compiled = cel::compiled(r);
        match &*compiled {
            Err(why) => {
                return unproven(
                    f,
                    Change::Undecided,
                    format!("CEL rule {:?} undecided: {why}", r.key()),
                );
            }
            Ok(rule) if rule.uses_old_self() && r.optional_old_self != Some(true) => {
                transitions.push((*i, *o, r.clone(), compiled.clone()));
            }
            Ok(_) => rules.push((*i, *o, r.clone(), compiled.clone())),
        }
    }
    if rules.is_empty() && !transitions.is_empty() {
        return decide_transitions(case, f, b, &transitions);
    }
    let mut g = Generator::new(seed_of(&format!("{}{}", case.api.name, f.path)));
    for (_, _, _, c) in &rules {
        if let Ok(rule) = &**c {
            let l = rule.literals();
            g.aims.strings.extend(l.strings.iter().cloned());
            g.aims.integers.extend(l.integers.iter().copied());
            g.aims.fields.extend(l.fields.iter().cloned());
        }
    }
    let mut tried = 0;
    let mut undecided: Option<String> = None;
    // Every third object is random from the parent down: where the parent's own rules tie the
    // node to its siblings (a filter's `type` names the field that is set), the smallest parent
    // around a random node is rarely valid.
    let parent_steps = &case.steps[..case.steps.len().saturating_sub(1)];
    let parent = node_at(case.root, parent_steps).filter(|_| !case.steps.is_empty());
    let mut generated = 0;
    // The best witness so far: how many reasons besides its rule the other source rejects it
    // for, that source, the rule, the object, its short form, the rule's reason.
    let mut best: Option<(usize, usize, String, Value, String, String)> = None;
    for t in 0..CEL_TRIES {
        if best.as_ref().is_some_and(|b| b.0 == 0) {
            break;
        }
        let (steps, value) = match parent {
            Some(p) if t % 3 == 2 => (parent_steps, g.random(p, 0)),
            _ if t == 0 => (&case.steps[..], g.minimal(b)),
            _ => (&case.steps[..], g.random(b, 0)),
        };
        let Some(object) = case.build(&mut g, steps, &Placement::Value(value)) else {
            continue;
        };
        generated += 1;
        if instances(&object, &case.steps).is_empty()
            || !validate_object(case.root, &object).is_valid()
        {
            continue;
        }
        tried += 1;
        for (i, o, r, c) in &rules {
            let Ok(rule) = &**c else { continue };
            // The other server defaults the object by its own schema before it validates.
            let mut defaulted = object.clone();
            if let Some(other) = case.other_root(*i) {
                apply_defaults(other, &mut defaulted);
            }
            for (k, at) in instances(&defaulted, &case.steps).into_iter().enumerate() {
                match rule.evaluate(o, at) {
                    Verdict::Pass => {}
                    Verdict::Fail(message) => {
                        // The table shows the object as sent (as JSON does), not as defaulted.
                        let sent = instances(&object, &case.steps)
                            .get(k)
                            .copied()
                            .unwrap_or(at);
                        // Ranked as the other findings' witnesses are: one the other source
                        // rejects for this rule alone wins, else the fewest other reasons.
                        let besides = case.other_root(*i).map_or(0, |other| {
                            validate_object(other, &object)
                                .violations
                                .iter()
                                .filter(|v| !v.to_string().contains(&message))
                                .count()
                        });
                        if best.as_ref().is_none_or(|b| besides < b.0) {
                            let short = format!("{}: {}", concrete(&case.steps), short_value(sent));
                            let reason = format!("{}: {message}", concrete(&case.steps));
                            best = Some((
                                besides,
                                *i,
                                r.key().to_string(),
                                object.clone(),
                                short,
                                reason,
                            ));
                        }
                        break;
                    }
                    Verdict::Undecided(why) => {
                        undecided.get_or_insert(format!("CEL rule {:?} undecided: {why}", r.key()));
                    }
                }
            }
        }
    }
    if let Some((_, i, key, object, short, reason)) = best {
        f.class = Class::Breaking;
        f.message = format!("CEL rule {key:?} added; it rejects an object the baseline accepts");
        return found(i, Expect::Rejected, object, short, vec![reason]);
    }
    if !transitions.is_empty() {
        return decide_transitions(case, f, b, &transitions);
    }
    // Undecided only where no object showed a failure: one failure decides.
    if let Some(why) = undecided {
        return unproven(f, Change::Undecided, why);
    }
    let message = if tried == 0 {
        format!(
            "CEL rule added; none of {generated} objects generated with a value here is valid in the baseline, so the rule was not tried"
        )
    } else {
        format!(
            "CEL rule added; none of {tried} objects generated from the baseline's schema (and valid there) breaks it"
        )
    };
    unproven(f, Change::Added, message)
}

/// A CEL rule added, the source that has it, and the rule compiled.
type AddedRule<'s> = (usize, &'s Schema, super::model::CelRule, cel::Compiled);

/// Transition rules added (they read `oldSelf`): the server checks them on update only, so the
/// witness is a pair: an object that every side creates, and an update of it that the baseline
/// accepts and the rule refuses. The update changes the value at the path (all of it, or one of
/// its properties), since a transition rule compares the stored value with the new one.
fn decide_transitions(case: &Case, f: &mut Finding, b: &Schema, rules: &[AddedRule]) -> Outcome {
    // Under a list's items or a map's values the server pairs old and new by key (map lists)
    // or not at all (atomic lists); only plain property paths are searched here.
    if !case.steps.iter().all(|s| matches!(s, Step::Property(_))) {
        return unproven(
            f,
            Change::Undecided,
            "a transition rule (oldSelf) under a list's items or a map's values: its update witness is not searched".into(),
        );
    }
    let mut g = Generator::new(seed_of(&format!("{}{}update", case.api.name, f.path)));
    for (_, _, _, c) in rules {
        if let Ok(rule) = &**c {
            let l = rule.literals();
            g.aims.strings.extend(l.strings.iter().cloned());
            g.aims.integers.extend(l.integers.iter().copied());
            g.aims.fields.extend(l.fields.iter().cloned());
        }
    }
    let at = concrete(&case.steps);
    let mut tried = 0;
    let mut undecided: Option<String> = None;
    // The best pair so far: how many reasons besides its rule the other source refuses the
    // create or the update for, that source, the rule, the object, its update, the rule's
    // reason.
    let mut best: Option<(usize, usize, String, Value, Value, String)> = None;
    for t in 0..CEL_TRIES {
        if best.as_ref().is_some_and(|b| b.0 == 0) {
            break;
        }
        let old = if t == 0 { g.minimal(b) } else { g.random(b, 0) };
        let new = changed(&mut g, b, &old, t);
        let Some(object) = case.build(&mut g, &case.steps, &Placement::Value(old.clone())) else {
            continue;
        };
        let mut update = object.clone();
        let Some(slot) = instance_mut(&mut update, &case.steps) else {
            continue;
        };
        *slot = new;
        if update == object
            || !validate_object(case.root, &object).is_valid()
            || !validate_object(case.root, &update).is_valid()
        {
            continue;
        }
        tried += 1;
        for (i, o, r, c) in rules {
            let Ok(rule) = &**c else { continue };
            let Some(other) = case.other_root(*i) else {
                continue;
            };
            // The other server defaults both by its own schema before it validates.
            let (mut stored, mut sent) = (object.clone(), update.clone());
            apply_defaults(other, &mut stored);
            apply_defaults(other, &mut sent);
            let (Some(old_at), Some(new_at)) = (
                instances(&stored, &case.steps).first().copied(),
                instances(&sent, &case.steps).first().copied(),
            ) else {
                continue;
            };
            match rule.evaluate_update(o, new_at, old_at) {
                Verdict::Pass => {}
                Verdict::Fail(message) => {
                    let besides = [&object, &update]
                        .into_iter()
                        .map(|v| {
                            validate_object(other, v)
                                .violations
                                .iter()
                                .filter(|v| !v.to_string().contains(&message))
                                .count()
                        })
                        .sum();
                    if best.as_ref().is_none_or(|b| besides < b.0) {
                        best = Some((
                            besides,
                            *i,
                            r.key().to_string(),
                            object.clone(),
                            update.clone(),
                            format!("{at}: {message}"),
                        ));
                    }
                }
                Verdict::Undecided(why) => {
                    undecided.get_or_insert(format!("CEL rule {:?} undecided: {why}", r.key()));
                }
            }
        }
    }
    if let Some((_, i, key, object, update, reason)) = best {
        f.class = Class::Breaking;
        f.message =
            format!("CEL transition rule {key:?} added; it rejects an update the baseline accepts");
        let (Some(before), Some(after)) = (
            instances(&object, &case.steps).first().copied(),
            instances(&update, &case.steps).first().copied(),
        ) else {
            return Outcome::None("the update witness lost its value".into());
        };
        let short = update_short(&at, before, after);
        let mut w = witness(i, Expect::UpdateRejected, object, short, vec![reason]);
        w.update = Some(update);
        return Outcome::Found(w);
    }
    if let Some(why) = undecided {
        return unproven(f, Change::Undecided, why);
    }
    unproven(
        f,
        Change::Added,
        format!(
            "CEL transition rule added; none of {tried} updates generated from the baseline's schema (and valid there) breaks it"
        ),
    )
}

/// An update as the table shows it: a property's old and new value where only one property
/// changed, the whole value otherwise.
fn update_short(at: &str, before: &Value, after: &Value) -> String {
    if let (Some(b), Some(a)) = (before.as_object(), after.as_object()) {
        let changed: Vec<&String> = b
            .keys()
            .chain(a.keys().filter(|k| !b.contains_key(*k)))
            .filter(|k| b.get(*k) != a.get(*k))
            .collect();
        if let [name] = changed[..] {
            let side = |v: Option<&Value>| v.map_or_else(|| "(unset)".into(), short_value);
            let at = if at == "." { "" } else { at };
            return format!(
                "{at}.{name}: {} updated to {}",
                side(b.get(name)),
                side(a.get(name))
            );
        }
    }
    format!(
        "{at}: {} updated to {}",
        short_value(before),
        short_value(after)
    )
}

/// An update of `old`, a value of `node`: on even tries one property given a new random value
/// (what most updates do), on odd ones a new random value altogether.
fn changed(g: &mut Generator, node: &Schema, old: &Value, t: usize) -> Value {
    if t.is_multiple_of(2)
        && let Some(map) = old.as_object()
        && !node.properties.is_empty()
    {
        let names: Vec<&String> = node.properties.keys().collect();
        let name = names[g.rng.below(names.len())];
        let mut map = map.clone();
        map.insert(name.clone(), g.random(&node.properties[name], 1));
        return Value::Object(map);
    }
    g.random(node, 0)
}

/// The value in `object` at a path of properties only.
fn instance_mut<'v>(object: &'v mut Value, steps: &[Step]) -> Option<&'v mut Value> {
    steps.iter().try_fold(object, |v, s| match s {
        Step::Property(p) => v.get_mut(p),
        _ => None,
    })
}

fn unproven(f: &mut Finding, change: Change, message: String) -> Outcome {
    f.class = Class::Unproven;
    f.change = change;
    f.message = message.clone();
    Outcome::None(message)
}

/// Every value in `object` at the schema path `steps` (all items, all map values).
fn instances<'v>(object: &'v Value, steps: &[Step]) -> Vec<&'v Value> {
    let mut at = vec![object];
    for s in steps {
        at = at
            .into_iter()
            .flat_map(|v| -> Vec<&Value> {
                match s {
                    Step::Property(p) => v.get(p).into_iter().collect(),
                    Step::Items(_) => v.as_array().map(|a| a.iter().collect()).unwrap_or_default(),
                    Step::MapValues => v
                        .as_object()
                        .map(|m| m.values().collect())
                        .unwrap_or_default(),
                }
            })
            .collect();
    }
    at
}

#[cfg(test)]
mod tests;
