//! Zero downtime, measured on a real replicated database (issue 33): an etcd cluster whose
//! members are real processes, moved between the local clusters while clients write and read.
//!
//! - `runner`: the pod runner, a kubelet for the pods of one label that runs each as a real
//!   process on its claims' hostPath directories, reports readiness from the process through a
//!   readiness gate, and refuses a second process on a directory in use (the split-brain detector);
//!   `process_spec` reads what to run from the pod, as a kubelet does.
//! - `database`: etcd as a StatefulSet with one claim per member; member k keeps its address in
//!   whichever cluster it runs.
//! - `load`: clients that write and read through every member during the move, and the check that
//!   every acknowledged write is still there.
//! - `migration`: the `Migration` trait, what performs the move (the plugin's CLI; the manual
//!   KEP-3335 procedure and a stop-then-recreate move as baselines; the in-cluster controller of
//!   issue 30 once it exists), and `measure`, which runs one under load and gathers the figures.
//! - `manual_kep`: the manual procedure as kubectl calls, shared with benches/migration.rs.
//!
//! Used by the acceptance test (tests/suite/e2e_zero_downtime.rs) and the benchmark
//! (benches/zero_downtime.rs). Nothing of it ships in the plugin.
#![allow(dead_code)] // the test and the bench each use a part

pub mod database;
pub mod load;
pub mod manual_kep;
pub mod migration;
pub mod process_spec;
pub mod runner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// A client for `context` of `kubeconfig`, checked to answer.
pub async fn connect(kubeconfig: &Path, context: &str) -> Result<Client, String> {
    let file = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("cannot read {}: {e}", kubeconfig.display()))?;
    let options = KubeConfigOptions {
        context: Some(context.to_string()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|e| format!("context {context}: {e}"))?;
    let client = Client::try_from(config).map_err(|e| format!("context {context}: {e}"))?;
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(client),
        Ok(Err(e)) => Err(format!(
            "cluster {context} is not reachable: {}",
            kubectl_migrate::cluster::describe_kube_error(&e)
        )),
        Err(_) => Err(format!("cluster {context} did not answer within 10s")),
    }
}

/// The two local clusters a database moves between, and the tools to drive them.
pub struct Clusters {
    pub kubeconfig: PathBuf,
    /// The cluster binaries: kubectl, and etcd for the database.
    pub bin_dir: PathBuf,
    pub source: String,
    pub destination: String,
    runtime: tokio::runtime::Runtime,
    clients: BTreeMap<String, Client>,
}

impl Clusters {
    pub fn connect(
        kubeconfig: &Path,
        bin_dir: &Path,
        source: &str,
        destination: &str,
    ) -> Result<Clusters, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let mut clients = BTreeMap::new();
        for context in [source, destination] {
            let client = runtime.block_on(connect(kubeconfig, context))?;
            clients.insert(context.to_string(), client);
        }
        Ok(Clusters {
            kubeconfig: kubeconfig.to_path_buf(),
            bin_dir: bin_dir.to_path_buf(),
            source: source.to_string(),
            destination: destination.to_string(),
            runtime,
            clients,
        })
    }

    pub fn client(&self, context: &str) -> Client {
        self.clients
            .get(context)
            .unwrap_or_else(|| panic!("no client for context {context}"))
            .clone()
    }

    /// Runs `future` to completion (the harness's API is blocking, like the plugin it drives).
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Starts a pod runner for both clusters, logging next to the clusters' own logs.
    pub fn start_runner(&self, id: &str) -> Result<runner::PodRunner, String> {
        let state = self.kubeconfig.parent().unwrap_or(Path::new("."));
        runner::PodRunner::start(runner::RunnerConfig {
            kubeconfig: self.kubeconfig.clone(),
            contexts: vec![self.source.clone(), self.destination.clone()],
            id: id.to_string(),
            program_dirs: vec![self.bin_dir.clone()],
            log_dir: state.join(format!("pod-runner-{id}")),
        })
    }

    /// kubectl against `context`; its stdout, or its stderr as the error.
    pub fn kubectl(
        &self,
        context: &str,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Result<String, String> {
        manual_kep::run_kubectl(
            &self.bin_dir.join("kubectl"),
            &self.kubeconfig,
            context,
            args,
            stdin,
        )
    }
}

/// Polls `check` until it holds (`Ok`); its error says why not yet, and the last one is in the
/// error after `limit`.
pub fn wait_until(
    limit: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let why_not = match check() {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(format!(
                "timed out after {limit:?} waiting for {what}: {why_not}"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
