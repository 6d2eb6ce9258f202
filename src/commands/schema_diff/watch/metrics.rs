//! `--metrics-addr`: the watch's state as Prometheus metrics (prometheus-client), served by
//! `crate::serve`.
use std::net::SocketAddr;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::Result;
use crate::output;
use crate::schema::diff::Class;
use crate::schema::watch::ApiUpdate;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FindingLabels {
    api: String,
    source: String,
    class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SourceLabels {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct EventLabels {
    pub event_type: String,
    pub class: String,
}

pub(super) fn source_label(source: &str) -> SourceLabels {
    SourceLabels {
        source: source.to_string(),
    }
}

/// `--metrics-addr`: the metrics, and the HTTP server that serves them.
pub(super) struct Metrics {
    findings: Family<FindingLabels, Gauge>,
    lcd_present: Family<ApiLabels, Gauge>,
    pub source_up: Family<SourceLabels, Gauge>,
    pub events: Family<EventLabels, Counter>,
}

/// The classes the findings gauge is kept for.
const COUNTED: [Class; 3] = [Class::Breaking, Class::Unproven, Class::Compatible];

impl Metrics {
    /// Registers the metrics and serves them at `addr` (any path; `/metrics` by convention).
    pub async fn serve(addr: SocketAddr) -> Result<Metrics> {
        let metrics = Metrics {
            findings: Family::default(),
            lcd_present: Family::default(),
            source_up: Family::default(),
            events: Family::default(),
        };
        let mut registry = Registry::with_prefix("kubectl_migrate_schema");
        registry.register(
            "findings",
            "Findings of a class for an API, against the baseline, per source",
            metrics.findings.clone(),
        );
        registry.register(
            "lcd_present",
            "1 when the sources have a lowest common denominator for the API",
            metrics.lcd_present.clone(),
        );
        registry.register(
            "source_up",
            "1 while the cluster answers",
            metrics.source_up.clone(),
        );
        registry.register(
            "events",
            "Watch events, by type and class",
            metrics.events.clone(),
        );
        let routes = crate::serve::Routes {
            registry,
            readiness: None,
        };
        let bound = crate::serve::serve(addr, "--metrics-addr", routes).await?;
        output::log(0, format!("metrics at http://{bound}/metrics"));
        Ok(metrics)
    }

    /// The API's gauges as its state now is; its label sets removed when no source has it.
    pub fn set_api(&self, update: ApiUpdate<'_>) {
        let api_label = ApiLabels {
            api: update.name.to_string(),
        };
        for source in update.sources {
            for class in COUNTED {
                let labels = FindingLabels {
                    api: update.name.to_string(),
                    source: source.clone(),
                    class: class.as_str().to_string(),
                };
                match update.state {
                    Some(s) => {
                        let n = s.count(source, update.baseline, class);
                        self.findings
                            .get_or_create(&labels)
                            .set(i64::try_from(n).unwrap_or(i64::MAX));
                    }
                    None => {
                        self.findings.remove(&labels);
                    }
                }
            }
        }
        match update.state {
            Some(s) => {
                self.lcd_present
                    .get_or_create(&api_label)
                    .set(i64::from(s.lcd.is_some()));
            }
            None => {
                self.lcd_present.remove(&api_label);
            }
        }
    }
}
