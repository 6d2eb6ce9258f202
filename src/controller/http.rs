//! The controller's probes and metrics (served by `crate::serve`):
//! `/healthz` (the process answers), `/readyz` (the controller watches its resources, or stands
//! by to lead) and `/metrics` (the Prometheus text format).
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::api::Phase;
use crate::error::Result;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub phase: String,
}

/// The controller's metrics; names carry no credentials and no member cluster's address.
#[derive(Clone, Default)]
pub struct Metrics {
    pub reconciles: Counter,
    pub reconcile_errors: Counter,
    pub run_failures: Counter,
    /// Status writes that set a phase, by phase.
    pub phases: Family<PhaseLabels, Counter>,
    /// 1 while this replica leads.
    pub leader: Gauge,
    /// APICompatibility conditions that changed status, by condition and new status.
    pub flips: Family<FlipLabels, Counter>,
    /// The watches that the migrations share on their member clusters, counted at each scrape.
    pub shared_watches: Sampled,
}

/// A gauge read at each scrape from what the controller holds, once [`Sampled::read_by`]
/// says how (0 before).
#[derive(Clone, Default)]
pub struct Sampled(Arc<std::sync::OnceLock<Box<dyn Fn() -> i64 + Send + Sync>>>);

impl Sampled {
    pub fn read_by(&self, read: impl Fn() -> i64 + Send + Sync + 'static) {
        let _ = self.0.set(Box::new(read));
    }

    fn now(&self) -> i64 {
        self.0.get().map_or(0, |read| read())
    }
}

impl std::fmt::Debug for Sampled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sampled({})", self.now())
    }
}

/// [`Metrics::shared_watches`] as the registry encodes it.
#[derive(Debug)]
struct SharedWatches(Sampled);

impl prometheus_client::collector::Collector for SharedWatches {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> std::result::Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        let gauge = prometheus_client::metrics::gauge::ConstGauge::new(self.0.now());
        let metric = encoder.encode_descriptor(
            "shared_watches",
            "Watches the migrations share on their member clusters (one per kind, member and namespace)",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(metric)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FlipLabels {
    pub condition: String,
    pub status: String,
}

impl Metrics {
    pub fn transition(&self, phase: Phase) {
        self.phases
            .get_or_create(&PhaseLabels {
                phase: phase.to_string(),
            })
            .inc();
    }

    pub fn flip(&self, condition: &str, status: &str) {
        self.flips
            .get_or_create(&FlipLabels {
                condition: condition.to_string(),
                status: status.to_string(),
            })
            .inc();
    }

    fn registry(&self) -> Registry {
        let mut registry = Registry::with_prefix("kubectl_migrate_controller");
        registry.register("reconciles", "Reconciles run", self.reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconciles that failed and were requeued",
            self.reconcile_errors.clone(),
        );
        registry.register(
            "run_failures",
            "Migration runs that stopped on an error",
            self.run_failures.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica leads (reconciles), 0 while it stands by",
            self.leader.clone(),
        );
        registry.register(
            "condition_flips",
            "APICompatibility conditions (Compatible, Reachable) that changed status",
            self.flips.clone(),
        );
        registry.register(
            "phase_writes",
            "Status writes of a phase",
            self.phases.clone(),
        );
        registry.register_collector(Box::new(SharedWatches(self.shared_watches.clone())));
        registry
    }
}

/// Where the controller is, for `/readyz`. A replica standing by to lead is ready, as
/// controller-runtime has it: it is healthy and takes over when the leader goes, and a
/// Deployment's rolling update counts unready Pods as unavailable, so a 503 from the standby
/// would stall every update of a two-replica Deployment. `/metrics` tells which one leads.
#[derive(Clone, Default)]
pub struct Ready(Arc<AtomicU8>);

// 0: starting.
const STANDING_BY: u8 = 1;
const LEADING: u8 = 2;

impl Ready {
    /// Waiting for the leader-election Lease.
    pub fn standing_by(&self) {
        self.0.store(STANDING_BY, Ordering::SeqCst);
    }
    /// Watching and reconciling its resources.
    pub fn leading(&self) {
        self.0.store(LEADING, Ordering::SeqCst);
    }
}

/// Serves the probes and `metrics` at `addr` until the process ends.
pub async fn serve(addr: SocketAddr, metrics: Metrics) -> Result<Ready> {
    let ready = Ready::default();
    let answering = ready.clone();
    let readiness: crate::serve::Readiness =
        Arc::new(move || match answering.0.load(Ordering::SeqCst) {
            LEADING => (200, "ok: leading\n"),
            STANDING_BY => (200, "ok: standing by to lead\n"),
            _ => (503, "not watching its resources yet\n"),
        });
    let routes = crate::serve::Routes {
        registry: metrics.registry(),
        readiness: Some(readiness),
    };
    let bound = crate::serve::serve(addr, "--probe-addr", routes).await?;
    crate::output::log(0, format!("probes and metrics at http://{bound}/"));
    Ok(ready)
}
