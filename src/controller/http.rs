//! The controller's probes and metrics over HTTP/1 (hyper, kube's own HTTP stack):
//! `/healthz` (the process answers), `/readyz` (the controller watches its resources) and
//! `/metrics` (the Prometheus text format).
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::Full;
use hyper::body::Bytes;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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
            "phase_writes",
            "Status writes of a phase",
            self.phases.clone(),
        );
        registry
    }
}

/// Set once the controller watches its resources.
#[derive(Clone, Default)]
pub struct Ready(Arc<AtomicBool>);

impl Ready {
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
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
        "/readyz" if ready.0.load(Ordering::SeqCst) => text(200, "ok\n"),
        "/readyz" => text(503, "not watching its resources yet\n"),
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
