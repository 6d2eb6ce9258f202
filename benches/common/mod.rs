//! What the benchmarks that run against the local clusters share: the guard that keeps them out
//! of `cargo test --all-targets`, and how to start the clusters and run them.
#![allow(dead_code)] // each bench uses a part

use std::path::PathBuf;

/// A benchmark that needs the local clusters of `tests/cluster/start.sh`.
pub struct ClusterBench {
    /// Its name, as `cargo bench --bench NAME` takes it.
    pub name: &'static str,
    /// How to start its clusters: start.sh with its arguments (and any environment before it).
    pub start: &'static str,
}

impl ClusterBench {
    /// Whether it was started by `cargo bench`. Under `cargo test --all-targets` (no `--bench`
    /// argument) it says so, with `what` it would do, and how to run it.
    pub fn invoked(&self, what: &str) -> bool {
        if std::env::args().any(|a| a == "--bench") {
            return true;
        }
        eprintln!(
            "benches/{}.rs: not run outside `cargo bench` ({what}); run `cargo bench --bench {}`",
            self.name, self.name
        );
        false
    }

    /// How to start the local clusters, export their paths, run the benchmark and stop them.
    pub fn how_to_run(&self) -> String {
        format!(
            "start the local clusters and export their paths, e.g.\n  \
             export KM_CLUSTERS_DIR=$PWD/target/bench-clusters\n  \
             kubeconfig=$({}) && export KM_TEST_KUBECONFIG=$kubeconfig\n  \
             bin=$(tests/cluster/build.sh) && export KM_TEST_BIN_DIR=$bin\n  \
             cargo bench --bench {}\n  \
             tests/cluster/stop.sh   # afterwards (with the same KM_CLUSTERS_DIR)",
            self.start, self.name
        )
    }

    /// The path in environment variable `name` (KM_TEST_KUBECONFIG, KM_TEST_BIN_DIR); without
    /// it, the benchmark ends saying how to run it.
    pub fn path(&self, name: &str) -> PathBuf {
        match std::env::var_os(name) {
            Some(value) if !value.is_empty() => PathBuf::from(value),
            _ => self.fail(&format!("{name} is not set: {}", self.how_to_run())),
        }
    }

    /// Ends the benchmark with `message`, exit code 1.
    pub fn fail(&self, message: &str) -> ! {
        eprintln!("bench {}: {message}", self.name);
        std::process::exit(1);
    }
}

/// kubectl on the bench's kubeconfig.
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs kubectl `args` in `context` with `stdin`; panics with its stderr when it fails.
    pub fn run(&self, context: &str, args: &[&str], stdin: Option<&str>) {
        let mut child = std::process::Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--context", context])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input
            .write_all(stdin.unwrap_or_default().as_bytes())
            .unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl --context {context} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
