//! Benchmark: `kubectl migrate statefulset` against the same move done by hand with kubectl.
//!
//!   cargo bench --bench migration
//!
//! Needs the local clusters of `tests/cluster/start.sh a b` and, as the cluster tests do,
//! KM_TEST_KUBECONFIG (the path start.sh prints) and KM_TEST_BIN_DIR (the output of
//! tests/cluster/build.sh, which holds kubectl). In one run it:
//!
//! 1. creates two identical StatefulSets (10 replicas, one PVC each) in fresh namespaces of km-a,
//!    with the namespace and the headless Service already in km-b (untimed);
//! 2. moves the first with the tool (`-o json --yes`) and takes, from its JSON events, the tool's
//!    own overhead per ordinal: the wall time attributed to that ordinal minus the time spent in
//!    the wait steps (wait-pods-gone, wait-ready), i.e. minus the time the clusters themselves
//!    needed to stop and start the pods;
//! 3. moves the second by hand: the kubectl calls a person's script makes, one subprocess each;
//! 4. prints the figures and writes them to target/bench-migration.txt (the tool's raw events to
//!    target/bench-migration-events.jsonl);
//! 5. deletes both namespaces and the PV copies, and returns the PVs to the pool
//!    (KM_BENCH_KEEP=1 keeps everything for inspection).
//!
//! The same run also moves 70 claims' worth of sets with the tool's old copy order (each claim
//! created right after its PV, `KUBECTL_MIGRATE_COPY_ORDER=immediate`) and reports each copied
//! claim's wait for the PV controller (p50/p99/max) in both orders, and the tool's CPU time per
//! ordinal (its process's user + system time over its ordinals).
//!
//! The tool binary is the one cargo builds for this bench (target/release/kubectl-migrate);
//! KM_BENCH_BIN overrides it. KM_BENCH_BASE_BIN names another build (e.g. main's) that moves
//! one more 10-replica set, for its CPU per ordinal beside this build's. With it,
//! KM_BENCH_CPU_ROUNDS=N runs only that comparison: N rounds of one 10-replica move per build,
//! the builds taking turns, and the median CPU per ordinal of each.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only says how to run it: a
//! benchmark run takes a minute and 20 PVs of the pool.
#[allow(dead_code)] // the bench moves ordinal by ordinal, to time each
#[path = "../tests/suite/support/zero_downtime/manual_kep.rs"]
mod manual_kep;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use manual_kep::ManualKep;
use serde_json::{Value, json};

/// The replicas of the timed moves (tool, its polling baseline, manual).
const REPLICAS: i32 = 10;
const MANUAL_REPLICAS: i32 = REPLICAS;
/// The other sizes the tool's requests are counted at, to show how they grow.
const COUNTED_SIZES: [i32; 2] = [5, 20];
const SET: &str = "web";
const SRC: &str = "km-a";
const DST: &str = "km-b";
/// Steps in which the tool waits for the clusters (pods going away, pods becoming Ready).
const WAIT_STEPS: [&str; 2] = ["wait-pods-gone", "wait-ready"];
/// Issue 20's targets for the tool observing through watches.
const TARGET_MEDIAN_OVERHEAD_MS: f64 = 50.0;
const TARGET_RATIO: f64 = 0.3;
/// The tool's switch to its polling observation (read by src/commands/statefulset).
const OBSERVE_ENV: &str = "KUBECTL_MIGRATE_OBSERVE";
/// The tool's switch to its old order of a claim's copy right after its PV's (read by
/// src/statefulset/run.rs): the baseline of the bind latencies.
const COPY_ORDER_ENV: &str = "KUBECTL_MIGRATE_COPY_ORDER";
/// Sets moved with the old copy order, observing by watches: as many claims as the new order's
/// runs bind (10 + 10 + 5 + 5 + 20 + 20).
const OLD_ORDER_SIZES: [i32; 4] = [20, 20, 20, 10];
const HOW_TO_START: &str = "start the local clusters and export their paths, e.g.\n  \
    export KM_CLUSTERS_DIR=$PWD/target/bench-clusters\n  \
    kubeconfig=$(KM_PV_POOL=200 tests/cluster/start.sh a b) && export KM_TEST_KUBECONFIG=$kubeconfig\n  \
    bin=$(tests/cluster/build.sh) && export KM_TEST_BIN_DIR=$bin\n  \
    cargo bench --bench migration\n  \
    tests/cluster/stop.sh   # afterwards (with the same KM_CLUSTERS_DIR)";

/// How the tool observes the clusters in its loop.
#[derive(Clone, Copy, PartialEq)]
enum Observe {
    /// Watches started once per run (the default).
    Watch,
    /// Requests on every iteration: the baseline, as the tool observed before issue 20.
    Poll,
}

impl Observe {
    fn env_value(self) -> &'static str {
        match self {
            Observe::Watch => "watch",
            Observe::Poll => "poll",
        }
    }
    fn name(self) -> &'static str {
        self.env_value()
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "benches/migration.rs: not run outside `cargo bench` (it moves seven StatefulSets \
             between the local clusters); run `cargo bench --bench migration`"
        );
        return;
    }
    let env = Env::from_env();
    let id = unique_suffix();
    let ns = |what: &str| format!("km-bench-{what}-{id}");
    if let Some(rounds) = cpu_rounds() {
        return cpu_only(&env, rounds, &ns);
    }
    // (namespace, replicas, how the tool observes; None: the manual script)
    let mut moves: Vec<(String, i32, Option<Observe>)> = vec![
        (ns("tool"), REPLICAS, Some(Observe::Watch)),
        (ns("poll"), REPLICAS, Some(Observe::Poll)),
        (ns("manual"), MANUAL_REPLICAS, None),
    ];
    for size in COUNTED_SIZES {
        for observe in [Observe::Watch, Observe::Poll] {
            moves.push((
                ns(&format!("{}{size}", observe.name())),
                size,
                Some(observe),
            ));
        }
    }
    let old_order: Vec<(String, i32)> = OLD_ORDER_SIZES
        .iter()
        .enumerate()
        .map(|(i, size)| (ns(&format!("order{i}")), *size))
        .collect();
    // With KM_BENCH_BASE_BIN, the same move by another build (e.g. main's): its CPU per ordinal.
    let base = env.base_tool.as_ref().map(|_| (ns("base"), REPLICAS));
    env.preflight(
        moves.iter().map(|m| m.1).sum::<i32>()
            + old_order.iter().chain(&base).map(|m| m.1).sum::<i32>(),
    );
    eprintln!(
        "bench: creating {} StatefulSets in {SRC} ({})",
        moves.len(),
        moves
            .iter()
            .map(|(ns, r, _)| format!("{ns}: {r}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let extra: Vec<&(String, i32)> = old_order.iter().chain(&base).collect();
    for (ns, replicas) in moves
        .iter()
        .map(|(ns, r, _)| (ns, *r))
        .chain(extra.iter().map(|(ns, r)| (ns, *r)))
    {
        env.create_fixture(ns, replicas);
    }
    for ns in moves.iter().map(|m| &m.0).chain(extra.iter().map(|m| &m.0)) {
        env.wait_fixture(ns);
    }

    let mut tool_runs = Vec::new();
    let mut manual = None;
    for (ns, replicas, observe) in &moves {
        match observe {
            Some(observe) => {
                eprintln!(
                    "bench: moving {ns}/{SET} ({replicas} replicas) with kubectl-migrate, observing by {}",
                    observe.name()
                );
                let run = env.run_tool(&env.tool, ns, *replicas, *observe, CopyOrder::New);
                tool_runs.push((*replicas, *observe, run));
            }
            None => {
                eprintln!("bench: moving {ns}/{SET} by hand with kubectl");
                manual = Some(env.run_manual(ns));
            }
        }
        env.check_moved(ns, *replicas);
    }
    let manual = manual.expect("the manual move ran");
    let mut old_order_runs = Vec::new();
    for (ns, replicas) in &old_order {
        eprintln!(
            "bench: moving {ns}/{SET} ({replicas} replicas) with kubectl-migrate, each claim copied right after its PV ({COPY_ORDER_ENV}=immediate)"
        );
        old_order_runs.push(env.run_tool(&env.tool, ns, *replicas, Observe::Watch, CopyOrder::Old));
        env.check_moved(ns, *replicas);
    }
    let base_run = base
        .as_ref()
        .zip(env.base_tool.as_ref())
        .map(|((ns, replicas), bin)| {
            eprintln!(
                "bench: moving {ns}/{SET} ({replicas} replicas) with {}",
                bin.display()
            );
            let run = env.run_tool(bin, ns, *replicas, Observe::Watch, CopyOrder::New);
            env.check_moved(ns, *replicas);
            run
        });

    let mut report = report(&env, &tool_runs, &manual);
    report.push_str(&binds_and_cpu(
        &tool_runs,
        &old_order_runs,
        base_run.as_ref(),
    ));
    print!("{report}");
    let out = target_dir().join("bench-migration.txt");
    std::fs::write(&out, &report).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    eprintln!("bench: figures written to {}", out.display());

    let namespaces: Vec<&str> = moves
        .iter()
        .map(|m| m.0.as_str())
        .chain(extra.iter().map(|m| m.0.as_str()))
        .collect();
    if std::env::var_os("KM_BENCH_KEEP").is_some() {
        eprintln!("bench: KM_BENCH_KEEP is set: namespaces {namespaces:?} are kept");
    } else {
        env.clean_up(&namespaces);
    }
}

/// The API requests of one run, from its -v=6 lines.
#[derive(Default, Clone, Copy)]
struct Requests {
    total: usize,
    watches: usize,
    reads: usize,
    writes: usize,
    /// GETs of single PersistentVolumes: the part that grew with the square of the replicas.
    volume_gets: usize,
}

impl Requests {
    fn count(stderr: &str) -> Requests {
        let mut r = Requests::default();
        for line in stderr.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(i) = words.windows(2).position(|w| {
                ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&w[0])
                    && w[1].starts_with("http")
            }) else {
                continue;
            };
            if !line.ends_with("milliseconds") {
                continue;
            }
            let (method, url) = (words[i], words[i + 1]);
            r.total += 1;
            if url.contains("watch=true") || url.contains("watch=1") {
                r.watches += 1;
            } else if method == "GET" {
                r.reads += 1;
                if url
                    .split('?')
                    .next()
                    .unwrap_or("")
                    .contains("/persistentvolumes/")
                {
                    r.volume_gets += 1;
                }
            } else {
                r.writes += 1;
            }
        }
        r
    }
}

struct Env {
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    tool: PathBuf,
    /// KM_BENCH_BASE_BIN: another build whose CPU per ordinal is measured in the same run.
    base_tool: Option<PathBuf>,
}

/// When the tool copies a claim, relative to its PV.
#[derive(Clone, Copy, PartialEq)]
enum CopyOrder {
    /// Once the PV controller has seen the PV (the default).
    New,
    /// Right after the PV (the baseline).
    Old,
}

/// One kubectl call's result.
struct Output {
    stdout: String,
}

impl Env {
    fn from_env() -> Env {
        let kubeconfig = std::env::var_os("KM_TEST_KUBECONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("KM_TEST_KUBECONFIG is not set; {HOW_TO_START}"));
        assert!(
            kubeconfig.is_file(),
            "KM_TEST_KUBECONFIG={} does not exist; {HOW_TO_START}",
            kubeconfig.display()
        );
        let bin_dir = std::env::var_os("KM_TEST_BIN_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("KM_TEST_BIN_DIR is not set; {HOW_TO_START}"));
        let kubectl = bin_dir.join("kubectl");
        assert!(
            kubectl.is_file(),
            "no kubectl in KM_TEST_BIN_DIR={}; {HOW_TO_START}",
            bin_dir.display()
        );
        // Cargo builds the binary targets of the package, with the bench profile, before a bench.
        let tool = std::env::var_os("KM_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate")));
        assert!(
            tool.is_file(),
            "the plugin binary {} is missing: run `cargo build --release` (or set KM_BENCH_BIN)",
            tool.display()
        );
        let base_tool = std::env::var_os("KM_BENCH_BASE_BIN")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(base) = &base_tool {
            assert!(
                base.is_file(),
                "KM_BENCH_BASE_BIN={} does not exist",
                base.display()
            );
        }
        Env {
            kubeconfig,
            kubectl,
            tool,
            base_tool,
        }
    }

    /// Runs kubectl against `context`; panics with its stderr when it fails.
    fn kubectl(&self, context: &str, args: &[&str], stdin: Option<&str>) -> Output {
        self.try_kubectl(context, args, stdin)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_kubectl(
        &self,
        context: &str,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Result<Output, String> {
        let stdout =
            manual_kep::run_kubectl(&self.kubectl, &self.kubeconfig, context, args, stdin)?;
        Ok(Output { stdout })
    }

    fn json(&self, context: &str, args: &[&str]) -> Value {
        let out = self.kubectl(context, args, None);
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("kubectl {} printed no JSON: {e}", args.join(" ")))
    }

    /// The clusters answer, and km-a's pool has a PV for each of the `claims`.
    fn preflight(&self, claims: i32) {
        for context in [SRC, DST] {
            if let Err(e) = self.try_kubectl(context, &["get", "--raw", "/readyz"], None) {
                panic!("cluster {context} is not reachable ({e}); {HOW_TO_START}");
            }
        }
        let pvs = self.json(SRC, &["get", "pv", "-o", "json"]);
        let free = pvs["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|pv| {
                pv["status"]["phase"] == "Available" && pv["spec"]["storageClassName"] == "standard"
            })
            .count();
        assert!(
            free >= claims as usize,
            "{SRC} has {free} Available PVs; the benchmark binds {claims}. Restart the clusters \
             with a bigger pool (KM_PV_POOL=200); {HOW_TO_START}"
        );
    }

    /// Namespace and headless Service in both clusters, the StatefulSet in the source.
    fn create_fixture(&self, ns: &str, replicas: i32) {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SET, "labels": {"app": SET}},
            "spec": {"clusterIP": "None", "selector": {"app": SET}, "ports": [{"name": "http", "port": 80}]}
        })
        .to_string();
        for context in [SRC, DST] {
            self.kubectl(context, &["create", "namespace", ns], None);
            // Pods are admitted only once the namespace's default ServiceAccount exists.
            poll(
                Duration::from_secs(60),
                "the default ServiceAccount",
                || {
                    self.try_kubectl(
                        context,
                        &["-n", ns, "get", "serviceaccount", "default"],
                        None,
                    )
                    .is_ok()
                },
            );
            self.kubectl(context, &["-n", ns, "create", "-f", "-"], Some(&service));
        }
        let set = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": SET},
            "spec": {
                "serviceName": SET, "replicas": replicas,
                "selector": {"matchLabels": {"app": SET}},
                "template": {
                    "metadata": {"labels": {"app": SET}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}
                },
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
            }
        })
        .to_string();
        self.kubectl(SRC, &["-n", ns, "create", "-f", "-"], Some(&set));
    }

    fn wait_fixture(&self, ns: &str) {
        self.kubectl(
            SRC,
            &[
                "-n",
                ns,
                "rollout",
                "status",
                &format!("statefulset/{SET}"),
                "--timeout=300s",
            ],
            None,
        );
        self.kubectl(
            SRC,
            &[
                "-n",
                ns,
                "wait",
                "pvc",
                "--all",
                "--for=jsonpath={.status.phase}=Bound",
                "--timeout=120s",
            ],
            None,
        );
    }

    /// All replicas Ready in the destination, none left in the source, and every claim in the
    /// destination bound to the source claim's volume.
    fn check_moved(&self, ns: &str, replicas: i32) {
        let dest = self.json(DST, &["-n", ns, "get", "statefulset", SET, "-o", "json"]);
        assert_eq!(
            dest["status"]["readyReplicas"].as_i64(),
            Some(replicas as i64),
            "{ns}: the destination set is not fully Ready after the move: {}",
            dest["status"]
        );
        let source = self.json(SRC, &["-n", ns, "get", "statefulset", SET, "-o", "json"]);
        assert_eq!(
            source["spec"]["replicas"].as_i64(),
            Some(0),
            "{ns}: the source still has replicas"
        );
        let volumes = |context: &str| -> Vec<(String, String, String)> {
            let claims = self.json(context, &["-n", ns, "get", "pvc", "-o", "json"]);
            let mut v: Vec<_> = claims["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        c["spec"]["volumeName"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        c["status"]["phase"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let (in_source, in_dest) = (volumes(SRC), volumes(DST));
        assert_eq!(
            in_dest.len(),
            replicas as usize,
            "{ns}: claims in {DST}: {in_dest:?}"
        );
        assert_eq!(
            in_source, in_dest,
            "{ns}: the destination's claims are not bound to the source's volumes"
        );
    }

    fn run_tool(
        &self,
        tool: &Path,
        ns: &str,
        replicas: i32,
        observe: Observe,
        order: CopyOrder,
    ) -> ToolRun {
        let spawned_at = Timestamp::now();
        let started = Instant::now();
        let cpu_before = children_cpu();
        let out = Command::new(tool)
            .env("KUBECONFIG", &self.kubeconfig)
            .env(OBSERVE_ENV, observe.env_value())
            .env(
                COPY_ORDER_ENV,
                match order {
                    CopyOrder::New => "after-volume-seen",
                    CopyOrder::Old => "immediate",
                },
            )
            .args([
                // Every API request as a line on stderr, counted below.
                "-v=6",
                "statefulset",
                SET,
                "-n",
                ns,
                "--context",
                SRC,
                "--to-context",
                DST,
                "--yes",
                "-o",
                "json",
                "--color",
                "never",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", tool.display()));
        let total = started.elapsed();
        let cpu = children_cpu().saturating_sub(cpu_before);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let events_file = target_dir().join(format!("bench-migration-events-{ns}.jsonl"));
        if let Err(e) = std::fs::write(&events_file, stdout.as_bytes()) {
            eprintln!(
                "bench: warning: cannot write {}: {e}",
                events_file.display()
            );
        }
        assert!(
            out.status.success(),
            "kubectl-migrate failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let events: Vec<Event> = stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(Event::parse)
            .collect();
        let ordinals = attribute(&events, replicas);
        let first = ordinals
            .first()
            .map(|o| o.started)
            .expect("at least one ordinal");
        ToolRun {
            total,
            before_first_ordinal: span(spawned_at, first),
            steps: events.iter().filter(|e| e.event == "step-finished").count(),
            ordinals,
            requests: Requests::count(&String::from_utf8_lossy(&out.stderr)),
            binds: events
                .iter()
                .filter(|e| e.event == "step-finished" && e.step == "copy-claim")
                .map(|e| e.waited_ms.expect("waitedMs on a finished copy-claim") as f64)
                .collect(),
            cpu,
        }
    }

    /// The move as a person's script does it, one kubectl subprocess per call: the manual
    /// KEP-3335 procedure the zero-downtime bench measures too, timed per ordinal.
    fn run_manual(&self, ns: &str) -> ManualRun {
        let mut run = Manual {
            env: self,
            calls: 0,
            waiting: Duration::ZERO,
        };
        let kep = ManualKep {
            namespace: ns,
            set: SET,
            claim_templates: &["data"],
            replicas: MANUAL_REPLICAS,
            source: SRC,
            destination: DST,
        };
        let failed = |e: String| -> ! { panic!("the manual move of {ns}/{SET} failed: {e}") };
        let started = Instant::now();
        // The destination set: a copy with replicas 0 that owns no ordinal yet.
        kep.create_destination(&mut run, 0, MANUAL_REPLICAS)
            .unwrap_or_else(|e| failed(e));
        let mut ordinals = Vec::new();
        for k in (0..MANUAL_REPLICAS).rev() {
            let ordinal_started = Instant::now();
            let waiting_before = run.waiting;
            kep.move_ordinal(&mut run, k).unwrap_or_else(|e| failed(e));
            ordinals.push(ManualOrdinal {
                ordinal: k,
                wall: ordinal_started.elapsed(),
                waiting: run.waiting - waiting_before,
            });
        }
        ManualRun {
            total: started.elapsed(),
            calls: run.calls,
            ordinals,
        }
    }

    /// Deletes the benchmark's namespaces and PV copies and gives the source PVs back to the
    /// pool (Available, reclaim Delete), so that the clusters can run it again. Best effort.
    fn clean_up(&self, namespaces: &[&str]) {
        eprintln!("bench: cleaning up (KM_BENCH_KEEP=1 keeps the objects)");
        let mut volumes = Vec::new();
        for ns in namespaces {
            if let Ok(out) = self.try_kubectl(
                SRC,
                &[
                    "-n",
                    ns,
                    "get",
                    "pvc",
                    "-o",
                    "jsonpath={.items[*].spec.volumeName}",
                ],
                None,
            ) {
                volumes.extend(out.stdout.split_whitespace().map(str::to_string));
            }
        }
        let warn = |what: &str, r: Result<Output, String>| {
            if let Err(e) = r {
                eprintln!("bench: warning: {what}: {e}");
            }
        };
        for context in [DST, SRC] {
            let mut args = vec!["delete", "namespace", "--timeout=180s"];
            args.extend(namespaces);
            warn(
                &format!("deleting the namespaces in {context}"),
                self.try_kubectl(context, &args, None),
            );
        }
        if volumes.is_empty() {
            return;
        }
        let mut args = vec!["delete", "pv", "--ignore-not-found", "--timeout=120s"];
        args.extend(volumes.iter().map(String::as_str));
        warn(
            &format!("deleting the PV copies in {DST}"),
            self.try_kubectl(DST, &args, None),
        );
        let release = r#"[{"op":"remove","path":"/spec/claimRef"},{"op":"replace","path":"/spec/persistentVolumeReclaimPolicy","value":"Delete"}]"#;
        for volume in &volumes {
            warn(
                &format!("returning {volume} to the pool of {SRC}"),
                self.try_kubectl(
                    SRC,
                    &["patch", "pv", volume, "--type=json", "-p", release],
                    None,
                ),
            );
        }
    }
}

/// Counts the calls of the manual procedure and the time spent in its waiting calls.
struct Manual<'a> {
    env: &'a Env,
    calls: usize,
    waiting: Duration,
}

impl manual_kep::Kubectl for Manual<'_> {
    fn call(
        &mut self,
        context: &str,
        args: &[&str],
        stdin: Option<&str>,
        waits: bool,
    ) -> Result<String, String> {
        let started = Instant::now();
        let out = self.env.try_kubectl(context, args, stdin)?;
        self.calls += 1;
        if waits {
            self.waiting += started.elapsed();
        }
        Ok(out.stdout)
    }
}

/// One line of the tool's `-o json` output.
struct Event {
    time: Timestamp,
    event: String,
    step: String,
    side: Option<String>,
    ordinals: Vec<i32>,
    elapsed_ms: Option<u64>,
    /// Of a step that is not a wait, the time it waited for the cluster (a claim's binding).
    waited_ms: Option<u64>,
}

impl Event {
    fn parse(line: &str) -> Event {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("kubectl-migrate printed a line that is not JSON ({e}): {line}")
        });
        let text = |key: &str| {
            v[key]
                .as_str()
                .unwrap_or_else(|| panic!("event without {key}: {line}"))
                .to_string()
        };
        Event {
            time: text("time")
                .parse()
                .unwrap_or_else(|e| panic!("event time is not RFC 3339 ({e}): {line}")),
            event: text("event"),
            // `waiting`, `retrying` and `done` events belong to no step.
            step: v["step"].as_str().unwrap_or_default().to_string(),
            // A step's own fields are under `detail`.
            side: v["detail"]["side"].as_str().map(str::to_string),
            ordinals: v["ordinals"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_i64().map(|o| o as i32))
                .collect(),
            elapsed_ms: v["elapsedMs"].as_u64(),
            waited_ms: v["waitedMs"].as_u64(),
        }
    }
}

/// The tool's time for one ordinal.
struct ToolOrdinal {
    ordinal: i32,
    started: Timestamp,
    wall: Duration,
    waiting: Duration,
    /// Steps performed for it (each after observing both clusters).
    steps: usize,
}

impl ToolOrdinal {
    fn overhead(&self) -> Duration {
        self.wall.saturating_sub(self.waiting)
    }
}

struct ToolRun {
    total: Duration,
    /// Process start, connecting, preflight, journal, protecting the PVs, creating the destination.
    before_first_ordinal: Duration,
    steps: usize,
    ordinals: Vec<ToolOrdinal>,
    requests: Requests,
    /// Each copied claim's wait for the PV controller, ms (copy-claim's waitedMs).
    binds: Vec<f64>,
    /// The tool's CPU time, user and system.
    cpu: Duration,
}

struct ManualOrdinal {
    ordinal: i32,
    wall: Duration,
    waiting: Duration,
}

struct ManualRun {
    total: Duration,
    calls: usize,
    ordinals: Vec<ManualOrdinal>,
}

/// Splits the event stream into one segment per ordinal. An ordinal's segment begins where the
/// previous one ended (for the first: when the last set-up step before the first scale-down of the
/// source finished) and ends when its wait-ready step in the destination finished, so the time between steps (observing
/// and deciding) counts too. Its waiting time is the elapsedMs of the wait steps inside it. A pod
/// that is Ready by the time the tool looks needs no wait: its verify step in the destination
/// ends the segment instead (seen when observing by polling on a slow machine).
fn attribute(events: &[Event], replicas: i32) -> Vec<ToolOrdinal> {
    let failed: Vec<&Event> = events.iter().filter(|e| e.event == "step-failed").collect();
    assert!(failed.is_empty(), "{} step(s) failed", failed.len());
    let first_move = events
        .iter()
        .position(|e| {
            e.event == "step-started" && e.step == "resize" && e.side.as_deref() == Some("source")
        })
        .expect("the tool never scaled the source down");
    let mut segment_start = events[..first_move]
        .iter()
        .rev()
        .find(|e| e.event == "step-finished")
        .unwrap_or(&events[first_move])
        .time;
    let mut waiting = Duration::ZERO;
    let mut steps = 0;
    let mut ordinals = Vec::new();
    for e in &events[first_move..] {
        if e.event != "step-finished" {
            continue;
        }
        steps += 1;
        if WAIT_STEPS.contains(&e.step.as_str()) {
            waiting += Duration::from_millis(e.elapsed_ms.expect("elapsedMs on a finished step"));
        } else {
            waiting += Duration::from_millis(e.waited_ms.unwrap_or(0));
        }
        // Without --health-check the tool records the ordinal as verified inside its wait-ready
        // step (a journal write of a few ms, counted here as waiting), or in a verify step of its
        // own when it found the pod Ready without waiting.
        let arrived = match e.step.as_str() {
            "wait-ready" => true,
            "verify" => !ordinals
                .iter()
                .any(|o: &ToolOrdinal| e.ordinals == [o.ordinal]),
            _ => false,
        };
        if arrived && e.side.as_deref() == Some("destination") {
            assert_eq!(
                e.ordinals.len(),
                1,
                "a {} step for more than one ordinal (--batch?)",
                e.step
            );
            ordinals.push(ToolOrdinal {
                ordinal: e.ordinals[0],
                started: segment_start,
                wall: span(segment_start, e.time),
                waiting,
                steps,
            });
            segment_start = e.time;
            waiting = Duration::ZERO;
            steps = 0;
        }
    }
    let mut seen: Vec<i32> = ordinals.iter().map(|o| o.ordinal).collect();
    seen.sort();
    assert_eq!(
        seen,
        (0..replicas).collect::<Vec<_>>(),
        "the events do not verify every ordinal exactly once"
    );
    ordinals
}

fn report(env: &Env, runs: &[(i32, Observe, ToolRun)], manual: &ManualRun) -> String {
    let run = |replicas: i32, observe: Observe| {
        runs.iter()
            .find(|r| r.0 == replicas && r.1 == observe)
            .map(|r| &r.2)
            .expect("the bench ran this move")
    };
    let (tool, baseline) = (run(REPLICAS, Observe::Watch), run(REPLICAS, Observe::Poll));
    let overheads =
        |t: &ToolRun| -> Vec<f64> { t.ordinals.iter().map(|o| ms(o.overhead())).collect() };
    let (median_overhead, max_overhead) = (median(&overheads(tool)), max(&overheads(tool)));
    let tool_walls: Vec<f64> = tool.ordinals.iter().map(|o| ms(o.wall)).collect();
    let tool_waits: Vec<f64> = tool.ordinals.iter().map(|o| ms(o.waiting)).collect();
    let manual_walls: Vec<f64> = manual.ordinals.iter().map(|o| ms(o.wall)).collect();
    let manual_waits: Vec<f64> = manual.ordinals.iter().map(|o| ms(o.waiting)).collect();
    let ratio_of = |t: &ToolRun| t.total.as_secs_f64() / manual.total.as_secs_f64();
    let ratio = ratio_of(tool);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let server = env
        .try_kubectl(SRC, &["version", "-o", "json"], None)
        .ok()
        .and_then(|o| serde_json::from_str::<Value>(&o.stdout).ok())
        .and_then(|v| {
            v["serverVersion"]["gitVersion"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "?".into());

    let mut r = String::new();
    let w = &mut r;
    let _ = writeln!(
        w,
        "kubectl-migrate statefulset benchmark ({})",
        Timestamp::now()
    );
    let _ = writeln!(
        w,
        "{REPLICAS} replicas, 1 PVC each, {SRC} -> {DST}; local clusters (Kubernetes {server}, KWOK), {cores} cores"
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "                             observing by watches (new)          by polling (baseline, same run)"
    );
    let _ = writeln!(
        w,
        "tool overhead per ordinal    median {:>5.0} ms, max {:>5.0} ms         median {:>5.0} ms, max {:>5.0} ms   (target: median <= {TARGET_MEDIAN_OVERHEAD_MS:.0} ms: {})",
        median_overhead,
        max_overhead,
        median(&overheads(baseline)),
        max(&overheads(baseline)),
        verdict(median_overhead <= TARGET_MEDIAN_OVERHEAD_MS)
    );
    let _ = writeln!(
        w,
        "tool total                   {:>6.2} s ({} steps, {:.2} s set-up)      {:>6.2} s ({} steps, {:.2} s set-up)",
        tool.total.as_secs_f64(),
        tool.steps,
        tool.before_first_ordinal.as_secs_f64(),
        baseline.total.as_secs_f64(),
        baseline.steps,
        baseline.before_first_ordinal.as_secs_f64(),
    );
    let _ = writeln!(
        w,
        "ratio tool/manual            {:>6.2}                              {:>6.2}       (target <= {TARGET_RATIO}: {})",
        ratio,
        ratio_of(baseline),
        verdict(ratio <= TARGET_RATIO)
    );
    let _ = writeln!(
        w,
        "manual total                 {:>6.2} s    ({} kubectl calls)",
        manual.total.as_secs_f64(),
        manual.calls
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "API requests of the tool (its -v=6 lines)   replicas   total   reads   watches   writes   PV GETs"
    );
    let mut sizes: Vec<i32> = runs.iter().map(|r| r.0).collect();
    sizes.sort();
    sizes.dedup();
    for observe in [Observe::Watch, Observe::Poll] {
        for size in &sizes {
            let q = run(*size, observe).requests;
            let _ = writeln!(
                w,
                "  {:<42}{:>8}   {:>5}   {:>5}   {:>7}   {:>6}   {:>7}",
                if observe == Observe::Watch {
                    "by watches"
                } else {
                    "by polling"
                },
                size,
                q.total,
                q.reads,
                q.watches,
                q.writes,
                q.volume_gets
            );
        }
        let (small, large) = (sizes[0], sizes[sizes.len() - 1]);
        let (a, b) = (run(small, observe).requests, run(large, observe).requests);
        let _ = writeln!(
            w,
            "  {:<42}per ordinal from {small} to {large}: {:.1} requests ({:.1} writes)",
            "",
            (b.total as f64 - a.total as f64) / f64::from(large - small),
            (b.writes as f64 - a.writes as f64) / f64::from(large - small),
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "per ordinal, ms (median / max)   wall            waiting          overhead"
    );
    let _ = writeln!(
        w,
        "  tool                           {:>6.0} / {:<6.0}  {:>6.0} / {:<6.0}   {:>6.0} / {:<6.0}",
        median(&tool_walls),
        max(&tool_walls),
        median(&tool_waits),
        max(&tool_waits),
        median_overhead,
        max_overhead
    );
    let _ = writeln!(
        w,
        "  manual                         {:>6.0} / {:<6.0}  {:>6.0} / {:<6.0}",
        median(&manual_walls),
        max(&manual_walls),
        median(&manual_waits),
        max(&manual_waits),
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "ordinal   tool steps   tool wall   tool waiting   tool overhead   baseline overhead   manual wall   manual waiting"
    );
    for t in &tool.ordinals {
        let m = manual.ordinals.iter().find(|m| m.ordinal == t.ordinal);
        let b = baseline.ordinals.iter().find(|b| b.ordinal == t.ordinal);
        let _ = writeln!(
            w,
            "{:>7}   {:>10}   {:>9.0}   {:>12.0}   {:>13.0}   {:>17}   {:>11}   {:>14}",
            t.ordinal,
            t.steps,
            ms(t.wall),
            ms(t.waiting),
            ms(t.overhead()),
            b.map_or("-".into(), |b| format!("{:.0}", ms(b.overhead()))),
            m.map_or("-".into(), |m| format!("{:.0}", ms(m.wall))),
            m.map_or("-".into(), |m| format!("{:.0}", ms(m.waiting))),
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "tool waiting = elapsedMs of its wait-pods-gone and wait-ready steps, and waitedMs of the others (a copied claim's binding); overhead = wall - waiting."
    );
    let _ = writeln!(
        w,
        "tool wall per ordinal: from the end of the previous ordinal's wait-ready step in the destination to the end of its own."
    );
    let _ = writeln!(
        w,
        "manual waiting = time in `kubectl wait --for=delete` and `kubectl rollout status` (kubectl start-up included)."
    );
    let _ = writeln!(
        w,
        "baseline: the same binary with {OBSERVE_ENV}=poll, which reads both clusters with requests on every loop iteration."
    );
    r
}

/// The bind latencies of both copy orders, and the tool's CPU per ordinal.
fn binds_and_cpu(
    runs: &[(i32, Observe, ToolRun)],
    old: &[ToolRun],
    base: Option<&ToolRun>,
) -> String {
    let all = |runs: &mut dyn Iterator<Item = &ToolRun>| -> Vec<f64> {
        runs.flat_map(|r| r.binds.iter().copied()).collect()
    };
    let new = all(&mut runs.iter().map(|r| &r.2));
    let old = all(&mut old.iter());
    let mut r = String::new();
    let w = &mut r;
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "copied claim's wait for the PV controller, ms   claims   p50     p99     max     over 1 s"
    );
    for (name, binds) in [
        ("claim once the PV controller saw the PV (new)", &new),
        ("claim right after the PV (old, same run)", &old),
    ] {
        let _ = writeln!(
            w,
            "  {name:<46}{:>6}   {:>5.0}   {:>5.0}   {:>5.0}   {:>5}",
            binds.len(),
            percentile(binds, 0.5),
            percentile(binds, 0.99),
            max(binds),
            binds.iter().filter(|b| **b > 1000.0).count()
        );
    }
    let _ = writeln!(w);
    let per_ordinal = |t: &ToolRun| t.cpu.as_secs_f64() * 1000.0 / t.ordinals.len() as f64;
    let _ = writeln!(
        w,
        "tool CPU per ordinal (user + system, whole run / ordinals)"
    );
    for (replicas, observe, t) in runs {
        let _ = writeln!(
            w,
            "  {:<12}{replicas:>3} replicas   {:>6.1} ms",
            observe.name(),
            per_ordinal(t)
        );
    }
    if let Some(b) = base {
        let this = runs
            .iter()
            .find(|r| r.0 == REPLICAS && r.1 == Observe::Watch)
            .map(|r| per_ordinal(&r.2))
            .unwrap_or(f64::NAN);
        let _ = writeln!(
            w,
            "  KM_BENCH_BASE_BIN, watch, {REPLICAS} replicas: {:.1} ms; this build / base: {:.2}",
            per_ordinal(b),
            this / per_ordinal(b)
        );
    }
    r
}

/// KM_BENCH_CPU_ROUNDS=N (with KM_BENCH_BASE_BIN): only the CPU comparison, N rounds.
fn cpu_rounds() -> Option<usize> {
    let value = std::env::var("KM_BENCH_CPU_ROUNDS").ok()?;
    let rounds = value.parse().ok().filter(|n| *n > 0);
    Some(rounds.unwrap_or_else(|| {
        panic!("KM_BENCH_CPU_ROUNDS={value:?} is not a number of rounds (1 or more)")
    }))
}

/// The CPU per ordinal of this build against KM_BENCH_BASE_BIN's, in `rounds` rounds of one
/// 10-replica move each, the two builds taking turns so that both see the same load on a busy
/// machine; the figure is the median over the rounds (each round: user + system time over its
/// ordinals).
fn cpu_only(env: &Env, rounds: usize, ns: &dyn Fn(&str) -> String) {
    let base = env
        .base_tool
        .clone()
        .expect("KM_BENCH_CPU_ROUNDS compares with a base build: set KM_BENCH_BASE_BIN too");
    let builds = [("this build", env.tool.clone()), ("base", base)];
    let namespaces: Vec<Vec<String>> = (0..rounds)
        .map(|round| {
            (0..builds.len())
                .map(|b| ns(&format!("cpu{round}x{b}")))
                .collect()
        })
        .collect();
    env.preflight(REPLICAS * (rounds * builds.len()) as i32);
    eprintln!(
        "bench: CPU only: {rounds} rounds of {REPLICAS} replicas with {} and {}",
        builds[0].1.display(),
        builds[1].1.display()
    );
    for ns in namespaces.iter().flatten() {
        env.create_fixture(ns, REPLICAS);
    }
    for ns in namespaces.iter().flatten() {
        env.wait_fixture(ns);
    }
    let mut per_ordinal: [Vec<f64>; 2] = Default::default();
    for (round, names) in namespaces.iter().enumerate() {
        // Alternate which build goes first, so that neither always follows the other.
        let mut order: Vec<usize> = (0..builds.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for b in order {
            let run = env.run_tool(
                &builds[b].1,
                &names[b],
                REPLICAS,
                Observe::Watch,
                CopyOrder::New,
            );
            env.check_moved(&names[b], REPLICAS);
            let ms = run.cpu.as_secs_f64() * 1000.0 / run.ordinals.len() as f64;
            eprintln!(
                "bench: round {round}, {}: {ms:.1} ms per ordinal",
                builds[b].0
            );
            per_ordinal[b].push(ms);
        }
    }
    let mut r = String::new();
    let w = &mut r;
    let _ = writeln!(
        w,
        "tool CPU per ordinal (user + system over the ordinals), {rounds} rounds of {REPLICAS} replicas, builds taking turns"
    );
    for (b, (name, bin)) in builds.iter().enumerate() {
        let runs: Vec<String> = per_ordinal[b].iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(
            w,
            "  {name:<11} median {:>6.1} ms   runs: {}   ({})",
            median(&per_ordinal[b]),
            runs.join(" "),
            bin.display()
        );
    }
    let _ = writeln!(
        w,
        "  this build / base: {:.2}",
        median(&per_ordinal[0]) / median(&per_ordinal[1])
    );
    print!("{r}");
    let out = target_dir().join("bench-migration-cpu.txt");
    std::fs::write(&out, &r).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    eprintln!("bench: figures written to {}", out.display());
    let all: Vec<&str> = namespaces.iter().flatten().map(String::as_str).collect();
    if std::env::var_os("KM_BENCH_KEEP").is_some() {
        eprintln!("bench: KM_BENCH_KEEP is set: namespaces {all:?} are kept");
    } else {
        env.clean_up(&all);
    }
}

/// The CPU time of this process's waited-for children (/proc/self/stat cutime + cstime, in
/// clock ticks of 10 ms).
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    // cutime and cstime are fields 16 and 17 of the line (1-based), 14 and 15 after the name.
    let ticks: u64 = [13, 14]
        .iter()
        .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The `q` quantile (nearest rank) of `values`; 0 for none.
fn percentile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n => sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1],
    }
}

fn span(from: Timestamp, to: Timestamp) -> Duration {
    let nanos = to.as_nanosecond() - from.as_nanosecond();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

fn poll(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    format!("{:x}", nanos % 0xffffff)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}
