//! The controller's probes and metrics over HTTP/1 (hyper, kube's own HTTP stack):
//! `/healthz` (the process answers), `/readyz` (the controller watches its resources, or stands
//! by to lead) and `/metrics` (the Prometheus text format).
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use http_body_util::Full;
use hyper::body::Bytes;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::api::Phase;
use crate::error::{Error, Result};

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
}

impl Metrics {
    pub fn transition(&self, phase: Phase) {
        self.phases
            .get_or_create(&PhaseLabels {
                phase: phase.to_string(),
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
            "phase_writes",
            "Status writes of a phase",
            self.phases.clone(),
        );
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

/// Listens on `addr` and serves the probes and `metrics` until the process ends.
pub async fn serve(addr: SocketAddr, metrics: Metrics) -> Result<Ready> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Io {
            what: format!("listen on --probe-addr {addr}"),
            source,
        })?;
    crate::output::log(
        0,
        format!(
            "probes and metrics at http://{}/",
            listener.local_addr().map_or(addr, |a| a)
        ),
    );
    let ready = Ready::default();
    let registry = Arc::new(metrics.registry());
    let answering = ready.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (registry, ready) = (registry.clone(), answering.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: http::Request<_>| {
                    let response = answer(request.uri().path(), &registry, &ready);
                    async move { response }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(ready)
}

fn answer(
    path: &str,
    registry: &Registry,
    ready: &Ready,
) -> http::Result<http::Response<Full<Bytes>>> {
    let text = |status: u16, body: &'static str| {
        http::Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
    };
    match path {
        "/healthz" => text(200, "ok\n"),
        "/readyz" => match ready.0.load(Ordering::SeqCst) {
            LEADING => text(200, "ok: leading\n"),
            STANDING_BY => text(200, "ok: standing by to lead\n"),
            _ => text(503, "not watching its resources yet\n"),
        },
        "/metrics" => {
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, registry) {
                Ok(()) => http::Response::builder()
                    .header(
                        "Content-Type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )
                    .body(Full::new(Bytes::from(body))),
                Err(_) => text(500, "cannot encode the metrics\n"),
            }
        }
        _ => text(404, "not found: try /healthz, /readyz or /metrics\n"),
    }
}
