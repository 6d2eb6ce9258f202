//! `--request-timeout` / `--timeout` values (and `after=` in `--fail`): kubectl's durations.
#![no_main]

use kubectl_migrate::cli::parse_duration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_duration(text) {
        Ok(d) => {
            // A bare number is whole seconds.
            if let Ok(secs) = text.trim().parse::<u64>() {
                assert_eq!(d.as_secs(), secs);
            }
        }
        Err(e) => assert!(e.starts_with("invalid duration"), "{e}"),
    }
});
