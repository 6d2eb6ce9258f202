//! `--kubeconfig FILE [--context NAME]`: the file's contents, resolved to a context without
//! any network (`cluster::resolve`). The first line names the context to ask for (none when
//! empty); the input goes to a file of this process, rewritten for each input.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use kubectl_migrate::cluster;
use libfuzzer_sys::fuzz_target;

fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("km-fuzz-kubeconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir.join("config")
    })
}

fuzz_target!(|data: &[u8]| {
    let (first, _) = data
        .iter()
        .position(|&b| b == b'\n')
        .map_or((&data[..0], data), |n| (&data[..n], &data[n + 1..]));
    let context = std::str::from_utf8(first).ok().filter(|c| !c.is_empty());
    std::fs::write(path(), data).expect("the scratch file is written");
    for asked in [None, context] {
        if let Ok(target) = cluster::resolve(Some(path()), asked) {
            assert!(asked.is_none_or(|c| c == target.context));
        }
    }
});
