//! PURE: counts said in words, as every message says them: "1 replica", "2 replicas", never
//! "replica(s)".

/// `n` and the noun that agrees with it: `1 replica`, `2 replicas`.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", noun(n, one, many))
}

/// The noun that agrees with `n`: `one` for exactly 1, else `many`.
pub fn noun<'a>(n: impl Into<i64>, one: &'a str, many: &'a str) -> &'a str {
    if n.into() == 1 { one } else { many }
}
