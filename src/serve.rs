//! The one small HTTP/1 server (hyper, kube's own HTTP stack) of the long-running commands:
//! Prometheus `/metrics` from a registry (the text format of prometheus-client) and, for a
//! process that has them, the probes `/healthz` and `/readyz`.
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use prometheus_client::registry::Registry;

use crate::error::{Error, Result};

/// What `/readyz` answers now: the status code and a line of words.
pub type Readiness = Arc<dyn Fn() -> (u16, &'static str) + Send + Sync>;

/// What is served.
pub struct Routes {
    pub registry: Registry,
    /// With probes: `/healthz`, `/readyz` and `/metrics`, and 404 elsewhere. Without: the
    /// metrics on every path.
    pub readiness: Option<Readiness>,
}

/// Listens on `addr` (given by the flag `flag`, for the error) and serves `routes` until the
/// process ends; returns the address bound (the port an `:0` got).
pub async fn serve(addr: SocketAddr, flag: &str, routes: Routes) -> Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Io {
            what: format!("listen on {flag} {addr}"),
            source,
        })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let routes = routes.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: http::Request<_>| {
                    let response = answer(request.uri().path(), &routes);
                    async move { response }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(bound)
}

fn answer(path: &str, routes: &Routes) -> http::Result<http::Response<Full<Bytes>>> {
    let text = |status: u16, body: &'static str| {
        http::Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
    };
    match (path, &routes.readiness) {
        ("/healthz", Some(_)) => text(200, "ok\n"),
        ("/readyz", Some(readiness)) => {
            let (status, body) = readiness();
            text(status, body)
        }
        ("/metrics", _) | (_, None) => {
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, &routes.registry) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    fn routes(readiness: Option<Readiness>) -> Routes {
        let mut registry = Registry::with_prefix("test");
        let counter = Counter::<u64>::default();
        counter.inc();
        registry.register("things", "Things", counter);
        Routes {
            registry,
            readiness,
        }
    }

    fn said(path: &str, routes: &Routes) -> (u16, String) {
        let response = answer(path, routes).unwrap();
        let status = response.status().as_u16();
        let body = response.into_body();
        let bytes = futures::executor::block_on(http_body_util::BodyExt::collect(body))
            .unwrap()
            .to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[test]
    fn probes_and_metrics_where_asked_and_404_elsewhere() {
        let r = routes(Some(Arc::new(|| (503, "not yet\n"))));
        assert_eq!(said("/healthz", &r), (200, "ok\n".into()));
        assert_eq!(said("/readyz", &r), (503, "not yet\n".into()));
        let (status, metrics) = said("/metrics", &r);
        assert!(
            status == 200 && metrics.contains("test_things_total 1"),
            "{metrics}"
        );
        assert_eq!(said("/", &r).0, 404);
    }

    #[test]
    fn without_probes_every_path_is_the_metrics() {
        let r = routes(None);
        for path in ["/", "/metrics", "/healthz"] {
            let (status, metrics) = said(path, &r);
            assert!(
                status == 200 && metrics.contains("test_things_total 1"),
                "{path}"
            );
        }
    }
}
