//! `failure-policy simulate --scenario FILE`: the file's text, resolved against fixed valid
//! Jobs and played through the engine for every supported version.
#![no_main]

mod common;

use kubectl_migrate::failure_policy::scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(specs) = scenario::parse_file(text, "scenario") else {
        return;
    };
    for model in common::models() {
        if let Ok(outcomes) = scenario::resolve(&specs, model) {
            common::simulate_all(model, &outcomes);
        }
    }
});
