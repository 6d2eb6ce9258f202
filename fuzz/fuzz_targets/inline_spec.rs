//! `failure-policy simulate --fail SPEC --succeed SPEC ...`: one spec per line (a line that
//! starts with `+` is a --succeed), resolved against fixed valid Jobs and played through the
//! engine for every supported version.
#![no_main]

mod common;

use kubectl_migrate::failure_policy::scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let mut specs = Vec::new();
    for line in text.lines() {
        let spec = match line.strip_prefix('+') {
            Some(rest) => scenario::parse_inline(rest, true),
            None => scenario::parse_inline(line, false),
        };
        match spec {
            Ok(spec) => specs.push(spec),
            Err(e) => {
                // Usage errors name the flag.
                assert!(
                    e.starts_with("--fail ") || e.starts_with("--succeed "),
                    "{e}"
                );
                return;
            }
        }
    }
    for model in common::models() {
        if let Ok(outcomes) = scenario::resolve(&specs, model) {
            common::simulate_all(model, &outcomes);
        }
    }
});
