//! Benchmark: one controller driving many StatefulSetMigrations at once (issue 30's scale
//! target), against the CLI's `-l --parallel` on the same sets, in one run.
//!
//!   cargo bench --bench controller_scale
//!
//! Needs the local clusters of `tests/cluster/start.sh a b c` (km-c the management cluster,
//! km-a and km-b the members) with a PV pool for every claim the run binds (KM_PV_POOL, see
//! [`how`]) and enough KWOK nodes for its pods, and KM_TEST_KUBECONFIG and KM_TEST_BIN_DIR as
//! the cluster tests take them. For each size N of KM_BENCH_SIZES (default `10,50`) it:
//!
//! 1. creates N StatefulSets of 5 replicas (one claim each) in a fresh namespace of km-a, and
//!    the namespace with the headless Service in km-b (untimed);
//! 2. starts the controller (`controller run --context km-c -v=6`) and applies N
//!    StatefulSetMigrations at once; waits until every one is `Completed`, while a split-brain
//!    observer watches both members' pods and a sampler reads the members' open watches
//!    (`apiserver_longrunning_requests{verb="WATCH"}`, less what was open before) every second;
//! 3. takes the controller's peak memory (VmHWM) and its requests to the members (its -v=6
//!    lines whose URL is a member's server), stops it, and checks every set moved;
//! 4. moves a fresh copy of the same N sets with `statefulset -l ... --parallel N` (the CLI),
//!    measured the same way.
//!
//! It prints the figures and the verdicts on the targets (controller memory <= 200 MB, the
//! members' open watches the same at every N, requests per ordinal no more than the CLI's),
//! writes them to target/bench-controller-scale.txt, and exits 1 when a target is missed.
//! KM_BENCH_KEEP=1 keeps the namespaces. The binary is the one cargo builds for this bench
//! (`--profile dev` runs the unoptimised build); KM_BENCH_BIN overrides it.
#[allow(dead_code, unused_imports)]
#[path = "../tests/suite/support/mod.rs"]
mod support;

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{ClusterBench, Kubectl};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Service};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kubectl_migrate::controller::api::{Phase, StatefulSetMigration};
use serde_json::json;
use support::sts::{SplitBrainObserver, json};
use support::{CONTEXT_A, CONTEXT_B, CONTEXT_C, TestNamespace};

const BENCH: ClusterBench = ClusterBench {
    name: "controller_scale",
    start: "KM_PV_POOL=600 KM_NODES=8 tests/cluster/start.sh a b c",
};
const REPLICAS: usize = 5;
/// The label every set of the bench carries: the CLI's selection.
const LABEL: &str = "km-bench=controller-scale";
/// Issue 30's targets.
const TARGET_MEMORY_MB: f64 = 200.0;
/// Watches of other clients that may be seen open twice in one sample (a restarting watch).
const WATCH_NOISE: u64 = 2;
/// How long one size's moves may take before the bench gives up.
const LIMIT: Duration = Duration::from_secs(1800);

/// What one way of moving N sets took.
struct Measured {
    who: String,
    sets: usize,
    wall: Duration,
    /// Peak resident memory of the process (VmHWM), MiB.
    peak_mib: f64,
    /// The most watches open at once on each member, less those open before it started.
    watches: [u64; 2],
    /// Requests to the members (all, and the watches among them) from its -v=6 lines.
    requests: usize,
    watch_requests: usize,
}

impl Measured {
    /// Its line of the report.
    fn line(&self) -> String {
        format!(
            "{:<40} {:>6.1} s {:>6.0} MiB {:>6} / {:<5} {:>7} ({} w) {:>10.1}",
            self.who,
            self.wall.as_secs_f64(),
            self.peak_mib,
            self.watches[0],
            self.watches[1],
            self.requests,
            self.watch_requests,
            self.per_ordinal()
        )
    }

    fn per_ordinal(&self) -> f64 {
        self.requests as f64 / (self.sets * REPLICAS) as f64
    }
}

fn sizes() -> Vec<usize> {
    let text = std::env::var("KM_BENCH_SIZES").unwrap_or_else(|_| "10,50".into());
    text.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .unwrap_or_else(|| {
                    BENCH.fail(&format!(
                        "KM_BENCH_SIZES={text}: give sizes from 1 to 64 (the CLI's --parallel), separated by commas"
                    ))
                })
        })
        .collect()
}

fn main() {
    if !BENCH.invoked("it moves hundreds of pods between the local clusters") {
        return;
    }
    let kubeconfig = BENCH.path("KM_TEST_KUBECONFIG");
    let bin_dir = BENCH.path("KM_TEST_BIN_DIR");
    let tool = std::env::var_os("KM_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate")),
        PathBuf::from,
    );
    let sizes = sizes();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let bench = runtime.block_on(Bench::new(kubeconfig, bin_dir, tool));
    // Each move's volumes go back to the pool before the next (unless kept).
    let claims = if std::env::var_os("KM_BENCH_KEEP").is_some() {
        sizes.iter().map(|n| 2 * n * REPLICAS).sum()
    } else {
        sizes.iter().max().unwrap_or(&0) * REPLICAS
    };
    runtime.block_on(bench.preflight(claims));
    bench.install_crds();
    let home = runtime.block_on(TestNamespace::create(&bench.c, CONTEXT_C, "km-scale"));
    for member in ["a", "b"] {
        bench.kubectl(
            CONTEXT_C,
            &[
                "-n",
                &home.name,
                "create",
                "secret",
                "generic",
                &format!("km-{member}-kubeconfig"),
                &format!(
                    "--from-file=value={}",
                    support::single_cluster_kubeconfig(member).display()
                ),
            ],
            None,
        );
    }
    let keep = std::env::var_os("KM_BENCH_KEEP").is_some();
    let mut runs = Vec::new();
    let mut namespaces = Vec::new();
    for &n in &sizes {
        for controller in [true, false] {
            let prefix = if controller {
                "km-scale-ctl"
            } else {
                "km-scale-cli"
            };
            let ns = runtime.block_on(bench.fixture(prefix, n));
            let measured = if controller {
                runtime.block_on(bench.by_controller(&home.name, &ns, n))
            } else {
                runtime.block_on(bench.by_cli(&ns, n))
            };
            runtime.block_on(bench.check_moved(&ns, n));
            eprintln!(
                "bench: {} moved {n} sets in {:.1} s",
                measured.who,
                measured.wall.as_secs_f64()
            );
            eprintln!("bench: {}", measured.line());
            runs.push(measured);
            if keep {
                namespaces.push(ns);
            } else {
                runtime.block_on(bench.clean_up(&home.name, &ns));
            }
        }
    }
    let (report, missed) = report(&runs);
    print!("{report}");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-controller-scale.txt");
    std::fs::write(&out, &report).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    eprintln!("bench: figures written to {}", out.display());
    if keep {
        eprintln!("bench: KM_BENCH_KEEP is set: namespaces {namespaces:?} are kept");
        std::mem::forget(home);
    }
    if missed {
        BENCH.fail("a target was missed (see above)");
    }
}

struct Bench {
    kubeconfig: PathBuf,
    kubectl: Kubectl,
    tool: PathBuf,
    a: Client,
    b: Client,
    c: Client,
    /// The members' servers as their -v=6 lines show them (km-a, km-b).
    servers: [String; 2],
}

impl Bench {
    async fn new(kubeconfig: PathBuf, bin_dir: PathBuf, tool: PathBuf) -> Bench {
        let server = |member: &str| {
            let file = support::single_cluster_kubeconfig(member);
            let config = kube::config::Kubeconfig::read_from(&file).unwrap();
            let url = config.clusters[0]
                .cluster
                .as_ref()
                .and_then(|c| c.server.clone())
                .unwrap_or_else(|| panic!("no server in {}", file.display()));
            url.trim_end_matches('/').to_string()
        };
        Bench {
            kubectl: Kubectl {
                bin: bin_dir.join("kubectl"),
                kubeconfig: kubeconfig.clone(),
            },
            tool,
            a: support::client(CONTEXT_A).await,
            b: support::client(CONTEXT_B).await,
            c: support::client(CONTEXT_C).await,
            servers: [server("a"), server("b")],
            kubeconfig,
        }
    }

    fn kubectl(&self, context: &str, args: &[&str], stdin: Option<&str>) {
        self.kubectl.run(context, args, stdin);
    }

    /// Enough Available PVs in km-a for `claims`.
    async fn preflight(&self, claims: usize) {
        let pvs: Api<PersistentVolume> = Api::all(self.a.clone());
        let free = pvs
            .list(&ListParams::default().labels("km-pool=true"))
            .await
            .unwrap()
            .items
            .iter()
            .filter(|pv| pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available"))
            .count();
        if free < claims {
            BENCH.fail(&format!(
                "{CONTEXT_A} has {free} Available PVs; the benchmark binds {claims}: {}",
                BENCH.how_to_run()
            ));
        }
    }

    fn install_crds(&self) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
        self.kubectl(
            CONTEXT_C,
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                dir.to_str().unwrap(),
            ],
            None,
        );
        self.kubectl(
            CONTEXT_C,
            &[
                "wait",
                "--for=condition=Established",
                "crd/statefulsetmigrations.kubectl-migrate.io",
            ],
            None,
        );
    }

    /// A namespace in both members with the headless Service, and `n` StatefulSets of
    /// [`REPLICAS`] in km-a, all Ready with their claims bound. The namespaces are left to the
    /// caller (their guards are forgotten).
    async fn fixture(&self, prefix: &str, n: usize) -> String {
        let ns_a = TestNamespace::create(&self.a, CONTEXT_A, prefix).await;
        let ns_b = TestNamespace::create_named(&self.b, CONTEXT_B, &ns_a.name).await;
        let ns = ns_a.name.clone();
        std::mem::forget((ns_a, ns_b));
        for c in [&self.a, &self.b] {
            let services: Api<Service> = Api::namespaced(c.clone(), &ns);
            let service = json(json!({
                "metadata": {"name": "web"},
                "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}
            }));
            services
                .create(&PostParams::default(), &service)
                .await
                .unwrap();
        }
        let (key, value) = LABEL.split_once('=').unwrap();
        let sets: Api<StatefulSet> = Api::namespaced(self.a.clone(), &ns);
        for i in 0..n {
            let name = format!("s{i}");
            let set = json(json!({
                "metadata": {"name": name, "labels": {key: value}},
                "spec": {
                    "serviceName": "web", "replicas": REPLICAS,
                    "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": {"app": "web", "set": name}},
                    "template": {
                        "metadata": {"labels": {"app": "web", "set": name}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}
                    },
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}}]
                }
            }));
            sets.create(&PostParams::default(), &set).await.unwrap();
        }
        let what = format!("{n} StatefulSets of {REPLICAS} Ready in {CONTEXT_A}/{ns}");
        support::poll_until(Duration::from_secs(600), &what, || async {
            let listed = sets.list(&ListParams::default()).await.unwrap().items;
            listed.len() == n
                && listed.iter().all(|s| {
                    s.status.as_ref().and_then(|s| s.ready_replicas) == Some(REPLICAS as i32)
                })
        })
        .await;
        eprintln!("bench: {what}");
        ns
    }

    /// Every set Ready in km-b with all its replicas, and no pod left in km-a.
    async fn check_moved(&self, ns: &str, n: usize) {
        let sets: Api<StatefulSet> = Api::namespaced(self.b.clone(), ns);
        let moved = sets.list(&ListParams::default()).await.unwrap().items;
        let ready = moved
            .iter()
            .filter(|s| s.status.as_ref().and_then(|s| s.ready_replicas) == Some(REPLICAS as i32))
            .count();
        assert_eq!(
            ready, n,
            "{ns}: {ready} of {n} sets are Ready in {CONTEXT_B}"
        );
        let pods: Api<Pod> = Api::namespaced(self.a.clone(), ns);
        let left = pods.list(&ListParams::default()).await.unwrap().items.len();
        assert_eq!(left, 0, "{ns}: {left} pods are left in {CONTEXT_A}");
    }

    /// Deletes the phase's StatefulSetMigrations in `home`, the namespace in both members, the PV copies in km-b, and gives the source's
    /// PVs back to km-a's pool (Available again, reclaim policy Delete as start.sh makes them).
    async fn clean_up(&self, home: &str, ns: &str) {
        // A controller started later would run them again.
        let migrations: Api<StatefulSetMigration> = Api::namespaced(self.c.clone(), home);
        for m in migrations.list(&ListParams::default()).await.unwrap().items {
            let name = m.metadata.name.unwrap_or_default();
            if name.ends_with(ns) {
                let _ = migrations.delete(&name, &Default::default()).await;
            }
        }
        let mut volumes = std::collections::BTreeSet::new();
        for c in [&self.a, &self.b] {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(c.clone(), ns);
            let listed = claims.list(&ListParams::default()).await.unwrap().items;
            volumes.extend(
                listed
                    .into_iter()
                    .filter_map(|c| c.spec.and_then(|s| s.volume_name)),
            );
        }
        for context in [CONTEXT_B, CONTEXT_A] {
            self.kubectl(
                context,
                &["delete", "namespace", ns, "--timeout=600s"],
                None,
            );
        }
        let copies: Api<PersistentVolume> = Api::all(self.b.clone());
        let pool: Api<PersistentVolume> = Api::all(self.a.clone());
        let release =
            json!({"spec": {"claimRef": null, "persistentVolumeReclaimPolicy": "Delete"}});
        for volume in &volumes {
            let _ = copies.delete(volume, &Default::default()).await;
            if let Err(e) = pool
                .patch(volume, &PatchParams::default(), &Patch::Merge(&release))
                .await
            {
                eprintln!("bench: warning: cannot return {volume} to the pool of {CONTEXT_A}: {e}");
            }
        }
        eprintln!(
            "bench: {ns} deleted, {} volumes back in the pool",
            volumes.len()
        );
    }

    /// The controller moves the `n` sets of `ns`, from N resources applied at once.
    async fn by_controller(&self, home: &str, ns: &str, n: usize) -> Measured {
        let observer = SplitBrainObserver::start(ns);
        let sampler = WatchSampler::start(self).await;
        let log = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("target/bench-controller-scale-{n}.log"));
        let addr = format!("127.0.0.1:{}", support::process::free_port());
        let mut controller = Running(
            Command::new(&self.tool)
                .env("KUBECONFIG", &self.kubeconfig)
                .args(["controller", "run", "--context", CONTEXT_C, "-n", home])
                // One replica: no leader election, whose 1 s renewals a loaded machine misses.
                .args(["--probe-addr", &addr, "-v=6", "--leader-elect=false"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.tool.display())),
        );
        support::poll_until(Duration::from_secs(60), "the controller's /readyz", || {
            let ready = support::process::http_get(&addr, "/readyz")
                .is_some_and(|r| r.starts_with("HTTP/1.1 200"));
            async move { ready }
        })
        .await;
        let items: Vec<_> = (0..n)
            .map(|i| {
                json!({
                    "apiVersion": "kubectl-migrate.io/v1alpha1",
                    "kind": "StatefulSetMigration",
                    "metadata": {"name": format!("move-s{i}-{ns}"), "namespace": home},
                    "spec": {
                        "statefulSetName": format!("s{i}"),
                        "source": {"name": CONTEXT_A, "namespace": ns},
                        "destination": {"name": CONTEXT_B, "namespace": ns},
                    }
                })
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
        let started = Instant::now();
        self.kubectl(CONTEXT_C, &["apply", "-f", "-"], Some(&list));
        let api: Api<StatefulSetMigration> = Api::namespaced(self.c.clone(), home);
        let mine = |m: &StatefulSetMigration| {
            m.metadata
                .name
                .as_deref()
                .is_some_and(|name| name.ends_with(ns))
        };
        loop {
            let listed = api.list(&ListParams::default()).await.unwrap().items;
            let phases: Vec<Option<Phase>> = listed
                .iter()
                .filter(|m| mine(m))
                .map(|m| m.status.as_ref().and_then(|s| s.phase))
                .collect();
            if phases.iter().all(|p| *p == Some(Phase::Completed)) {
                break;
            }
            if started.elapsed() > LIMIT || controller.0.try_wait().unwrap().is_some() {
                BENCH.fail(&format!(
                    "the controller did not complete {n} migrations within {LIMIT:?} (phases: {}); its log: {}",
                    tally(&phases),
                    log.display()
                ));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let wall = started.elapsed();
        let peak_mib = peak_memory_mib(controller.0.id());
        process_signal(&controller.0, "TERM");
        let _ = controller.0.wait();
        let who = format!("controller, {n} StatefulSetMigrations");
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        self.measured(who, n, (wall, peak_mib), sampler, observer, &log)
    }

    /// The CLI moves the `n` sets of `ns`: `statefulset -l LABEL --parallel n`.
    async fn by_cli(&self, ns: &str, n: usize) -> Measured {
        let observer = SplitBrainObserver::start(ns);
        let sampler = WatchSampler::start(self).await;
        let log = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("target/bench-controller-scale-cli-{n}.log"));
        let started = Instant::now();
        let mut cli = Running(
            Command::new(&self.tool)
                .env("KUBECONFIG", &self.kubeconfig)
                .args(["-v=6", "statefulset", "-l", LABEL, "-n", ns])
                .args(["--context", CONTEXT_A, "--to-context", CONTEXT_B])
                .args(["--parallel", &n.to_string(), "--yes", "-o", "json"])
                .args(["--color", "never"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.tool.display())),
        );
        // VmHWM is gone with the process: read it while it runs.
        let mut peak_mib = 0.0f64;
        let status = loop {
            if let Some(status) = cli.0.try_wait().unwrap() {
                break status;
            }
            peak_mib = peak_mib.max(peak_memory_mib(cli.0.id()));
            if started.elapsed() > LIMIT {
                BENCH.fail(&format!(
                    "the CLI did not move {n} sets within {LIMIT:?}; its log: {}",
                    log.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let wall = started.elapsed();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            status.success(),
            "the CLI failed ({status}); its log: {}",
            log.display()
        );
        let who = format!("CLI -l --parallel {n}");
        self.measured(who, n, (wall, peak_mib), sampler, observer, &text)
    }

    /// What a run of `n` sets took: its wall time and peak memory, the watches sampled, its
    /// requests from its -v=6 `log`; panics if the observer saw an ordinal in both clusters.
    fn measured(
        &self,
        who: String,
        n: usize,
        (wall, peak_mib): (Duration, f64),
        sampler: WatchSampler,
        observer: SplitBrainObserver,
        log: &str,
    ) -> Measured {
        let watches = sampler.stop();
        observer.assert_never_split();
        let (requests, watch_requests) = self.count_requests(log);
        Measured {
            who,
            sets: n,
            wall,
            peak_mib,
            watches,
            requests,
            watch_requests,
        }
    }

    /// The requests to the members among -v=6 `lines`: all of them, and the watches.
    fn count_requests(&self, lines: &str) -> (usize, usize) {
        let mut all = 0;
        let mut watches = 0;
        for line in lines.lines().filter(|l| l.ends_with("milliseconds")) {
            let Some(url) = line
                .split_whitespace()
                .find(|w| self.servers.iter().any(|s| w.starts_with(&format!("{s}/"))))
            else {
                continue;
            };
            all += 1;
            if url.contains("watch=true") || url.contains("watch=1") {
                watches += 1;
            }
        }
        (all, watches)
    }
}

/// Kills the process if the bench ends early.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn process_signal(child: &Child, signal: &str) {
    support::process::signal(child, signal);
}

/// The process's peak resident memory (VmHWM), MiB; 0 once it has ended.
fn peak_memory_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// How many resources are in each phase, in words.
fn tally(phases: &[Option<Phase>]) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for p in phases {
        let name = p.map_or("none yet".to_string(), |p| {
            serde_json::to_value(p)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        });
        *counts.entry(name).or_default() += 1;
    }
    counts
        .iter()
        .map(|(phase, n)| format!("{n} {phase}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The watches open on a member: the sum of its `apiserver_longrunning_requests` with verb
/// WATCH (every client's).
async fn open_watches(client: &Client) -> u64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap_or_default();
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_longrunning_requests{") && l.contains("verb=\"WATCH\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Samples both members' open watches every second; `stop` gives the most seen at once less
/// those open when it started.
struct WatchSampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<[AtomicU64; 2]>,
    baseline: [u64; 2],
    task: tokio::task::JoinHandle<()>,
}

impl WatchSampler {
    async fn start(bench: &Bench) -> WatchSampler {
        let clients = [bench.a.clone(), bench.b.clone()];
        let baseline = [
            open_watches(&clients[0]).await,
            open_watches(&clients[1]).await,
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let peaks: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let task = tokio::spawn({
            let (stop, peaks) = (stop.clone(), peaks.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    for (i, client) in clients.iter().enumerate() {
                        peaks[i].fetch_max(open_watches(client).await, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        WatchSampler {
            stop,
            peaks,
            baseline,
            task,
        }
    }

    fn stop(self) -> [u64; 2] {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
        [0, 1].map(|i| {
            self.peaks[i]
                .load(Ordering::Relaxed)
                .saturating_sub(self.baseline[i])
        })
    }
}

/// The figures, and whether a target was missed.
fn report(runs: &[Measured]) -> (String, bool) {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "controller scale: StatefulSets of {REPLICAS} replicas, km-a -> km-b (one claim each)"
    );
    let _ = writeln!(
        out,
        "{:<40} {:>8} {:>10} {:>14} {:>12} {:>10}",
        "run", "wall", "peak RSS", "watches a / b", "requests", "per ordinal"
    );
    for r in runs {
        let _ = writeln!(out, "{}", r.line());
    }
    let controller: Vec<&Measured> = runs
        .iter()
        .filter(|r| r.who.starts_with("controller"))
        .collect();
    let cli: Vec<&Measured> = runs.iter().filter(|r| r.who.starts_with("CLI")).collect();
    let mut missed = false;
    let mut verdict = |what: String, met: bool| {
        missed |= !met;
        let _ = writeln!(out, "{what}: {}", if met { "met" } else { "MISSED" });
    };
    let peak = controller.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
    verdict(
        format!("controller peak memory {peak:.0} MiB (target <= {TARGET_MEMORY_MB:.0} MB)"),
        peak * 1.048_576 <= TARGET_MEMORY_MB,
    );
    let watches: Vec<String> = controller
        .iter()
        .map(|r| format!("{} at {}", r.watches[0].max(r.watches[1]), r.sets))
        .collect();
    // Other clients (the controller-manager, KWOK) may restart a watch while a sample is taken.
    let constant = controller
        .windows(2)
        .all(|w| (0..2).all(|i| w[1].watches[i] <= w[0].watches[i] + WATCH_NOISE));
    verdict(
        format!(
            "controller watches per member constant as migrations are added ({})",
            watches.join(", ")
        ),
        constant,
    );
    for (c, l) in controller.iter().zip(&cli) {
        verdict(
            format!(
                "requests per ordinal at {}: controller {:.1}, CLI {:.1} (target: no more than the CLI's)",
                c.sets,
                c.per_ordinal(),
                l.per_ordinal()
            ),
            c.per_ordinal() <= l.per_ordinal(),
        );
    }
    (out, missed)
}
