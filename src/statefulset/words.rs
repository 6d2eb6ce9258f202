//! PURE: how the statefulset messages say counts and ordinals, so that every message agrees:
//! "1 replica", "2 replicas"; "ordinal 3", "ordinals 0-2, 5"; "PVC a", "PVCs a, b".

// Counts are said alike by every command: one definition, shared (schema-diff says them too).
pub use crate::words::{count, noun};

/// Ordinals as ranges, ascending, each once: `0-3, 7`.
pub fn ordinals_text(ordinals: &[i32]) -> String {
    let mut sorted = ordinals.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(i32, i32)> = Vec::new();
    for k in sorted {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == k => *end = k,
            _ => runs.push((k, k)),
        }
    }
    runs.iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ordinals after the noun that agrees with how many there are: `ordinal 3`, `pods 0-2`.
pub fn numbered(ordinals: &[i32], one: &str, many: &str) -> String {
    let mut distinct = ordinals.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    format!(
        "{} {}",
        noun(distinct.len() as i64, one, many),
        ordinals_text(&distinct)
    )
}

/// `ordinal 3`, `ordinals 0-2, 5`.
pub fn ordinals(ordinals: &[i32]) -> String {
    numbered(ordinals, "ordinal", "ordinals")
}

/// `pod 3`, `pods 0-2, 5` (by ordinal).
pub fn pods(ordinals: &[i32]) -> String {
    numbered(ordinals, "pod", "pods")
}

/// Names after the noun that agrees with how many there are: `PVC a`, `PVCs a, b`.
pub fn named(names: &[impl AsRef<str>], one: &str, many: &str) -> String {
    let list: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    format!("{} {}", noun(list.len() as i64, one, many), list.join(", "))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn counts_and_ordinals_agree_in_number() {
        assert_eq!(count(1, "replica", "replicas"), "1 replica");
        assert_eq!(count(0, "replica", "replicas"), "0 replicas");
        assert_eq!(count(2_usize as i64, "replica", "replicas"), "2 replicas");
        assert_eq!(ordinals(&[3]), "ordinal 3");
        assert_eq!(ordinals(&[2, 0, 1]), "ordinals 0-2");
        assert_eq!(pods(&[0, 1, 2, 5, 7, 8]), "pods 0-2, 5, 7-8");
        assert_eq!(pods(&[4, 4]), "pod 4");
        assert_eq!(named(&["data-web-0"], "PVC", "PVCs"), "PVC data-web-0");
        assert_eq!(named(&["a", "b"], "PVC", "PVCs"), "PVCs a, b");
    }

    proptest! {
        /// The text names exactly the ordinals given, each once, in runs that do not touch.
        #[test]
        fn ordinals_text_says_each_ordinal_once(ks in prop::collection::vec(0i32..40, 1..12)) {
            let text = ordinals_text(&ks);
            let mut said = Vec::new();
            let mut last_end = None;
            for run in text.split(", ") {
                let (a, b) = match run.split_once('-') {
                    Some((a, b)) => (a.parse::<i32>().unwrap(), b.parse::<i32>().unwrap()),
                    None => { let k = run.parse::<i32>().unwrap(); (k, k) }
                };
                prop_assert!(a <= b);
                if let Some(end) = last_end { prop_assert!(a > end + 1, "{text}: runs touch"); }
                last_end = Some(b);
                said.extend(a..=b);
            }
            let mut want = ks.clone();
            want.sort_unstable();
            want.dedup();
            prop_assert_eq!(said, want);
        }
    }
}
