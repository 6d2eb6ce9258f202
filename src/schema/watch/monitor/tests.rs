use std::time::Duration;

use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use tokio::time::Instant;

use super::*;
use crate::schema::report::Report;
use crate::schema::source::Origin;
use crate::schema::watch::tests::{crd, request};

const DEBOUNCE: Duration = Duration::from_millis(300);
const FULL: &str = "size: {type: integer}, name: {type: string}";
const LESS: &str = "size: {type: integer}";

fn settings() -> Settings {
    Settings {
        debounce: DEBOUNCE,
        show_informational: false,
    }
}

/// The CRD as its watcher delivers it.
fn object(props: &str) -> DynamicObject {
    let value: serde_json::Value = serde_saphyr::from_str(&crd(props, true)).unwrap();
    serde_json::from_value(value).unwrap()
}

/// What the monitor told its listener, one line per call, in order.
#[derive(Default)]
struct Heard(Vec<String>);

impl Heard {
    fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.0)
    }
}

impl Listener for Heard {
    fn api(&mut self, update: ApiUpdate<'_>) -> Result<()> {
        let findings = update.state.map(|s| s.findings.len());
        self.0.push(format!(
            "api {} findings {findings:?} baseline {}",
            update.name, update.baseline
        ));
        Ok(())
    }

    fn ready(&mut self, report: &Report) -> Result<()> {
        self.0.push(format!(
            "ready with {}",
            crate::words::count(report.apis.len() as i64, "API", "APIs")
        ));
        Ok(())
    }

    fn event(&mut self, event: &WatchEvent) -> Result<Flow> {
        let class = event.class.map_or("-", |c| c.as_str());
        let message = event.message.as_deref().unwrap_or("-");
        self.0.push(format!(
            "{} {} {class} {message}",
            event.kind.as_str(),
            event.sources.join(",")
        ));
        Ok(Flow::Continue)
    }

    fn note(&mut self, note: Note) {
        self.0.push(format!("note {note:?}"));
    }
}

/// Clusters a, b and c, each listed with the full CRD, and the initial report made.
fn started<'a>(request: &'a Request, settings: &'a Settings, heard: &mut Heard) -> Monitor<'a> {
    let clusters = ["a", "b", "c"]
        .map(|label| SourceSchemas {
            label: label.into(),
            origin: Origin::Cluster {
                context: label.into(),
                server: format!("https://{label}"),
                version: "v1.36.0".into(),
            },
            apis: Default::default(),
        })
        .into();
    let mut monitor = Monitor::new(clusters, Vec::new(), request, settings);
    let now = Instant::now();
    for i in 0..3 {
        assert!(!monitor.synced());
        for event in [Event::Init, Event::InitApply(object(FULL)), Event::InitDone] {
            monitor.watched(i, event, now, heard).unwrap();
        }
    }
    assert!(monitor.synced());
    monitor.start(heard).unwrap();
    monitor
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_first_lists_are_the_initial_state_and_a_reapply_is_no_change() {
    let (request, settings, mut heard) = (request(), settings(), Heard::default());
    let mut monitor = started(&request, &settings, &mut heard);
    assert_eq!(
        heard.take(),
        [
            "api widgets.example.com findings Some(0) baseline a",
            "ready with 1 API"
        ]
    );
    assert_eq!(monitor.due(), None, "the first lists are no change");
    let now = Instant::now();
    monitor
        .watched(0, Event::Apply(object(FULL)), now, &mut heard)
        .unwrap();
    assert_eq!(monitor.due(), None, "the same CRD again is no change");
    monitor
        .watched(1, Event::Apply(object(LESS)), now, &mut heard)
        .unwrap();
    assert_eq!(monitor.due(), Some(now + DEBOUNCE));
    assert_eq!(monitor.flush(&mut heard).unwrap(), Flow::Continue);
    let heard = heard.take();
    assert_eq!(heard[1], "change b breaking -", "{heard:?}");
    assert!(heard[0].starts_with("api widgets.example.com findings Some("));
    assert_eq!(monitor.due(), None, "the flush took the changes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_burst_of_writes_is_coalesced_for_at_most_five_debounce_periods() {
    let (request, settings, mut heard) = (request(), settings(), Heard::default());
    let mut monitor = started(&request, &settings, &mut heard);
    let first = Instant::now();
    for step in 0..8 {
        let props = if step % 2 == 0 { LESS } else { FULL };
        let now = first + Duration::from_millis(200) * step;
        monitor
            .watched(1, Event::Apply(object(props)), now, &mut heard)
            .unwrap();
        let due = (now + DEBOUNCE).min(first + DEBOUNCE * 5);
        assert_eq!(monitor.due(), Some(due), "after write {step}");
    }
    assert_eq!(monitor.due(), Some(first + DEBOUNCE * 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lost_cluster_is_back_before_the_change_it_delivers() {
    let (request, settings, mut heard) = (request(), settings(), Heard::default());
    let mut monitor = started(&request, &settings, &mut heard);
    heard.take();
    let now = Instant::now();
    monitor.probed(2, Ok(()), now, &mut heard).unwrap();
    assert!(
        heard.take().is_empty(),
        "an answer from a cluster that is up"
    );
    let lost = Err(Unanswered::Timeout(Duration::from_secs(2)));
    monitor.probed(2, lost, now, &mut heard).unwrap();
    assert!(!monitor.up(2));
    assert_eq!(heard.take(), ["source-lost c - no answer within 2s"]);
    // Its watcher delivers a change before any probe says it answers: it answers.
    monitor
        .watched(2, Event::Apply(object(LESS)), now, &mut heard)
        .unwrap();
    assert!(monitor.up(2));
    assert_eq!(heard.take(), ["source-back c - -"]);
    monitor.flush(&mut heard).unwrap();
    assert_eq!(heard.take()[1], "change c breaking -");
    monitor.probed(2, Ok(()), now, &mut heard).unwrap();
    assert!(heard.take().is_empty(), "back once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_cluster_back_after_a_probe_recomputes_what_it_serves_and_reports_no_change() {
    let (request, settings, mut heard) = (request(), settings(), Heard::default());
    let mut monitor = started(&request, &settings, &mut heard);
    heard.take();
    let now = Instant::now();
    let lost = Err(Unanswered::Timeout(Duration::from_secs(2)));
    monitor.probed(0, lost, now, &mut heard).unwrap();
    monitor.probed(0, Ok(()), now, &mut heard).unwrap();
    assert_eq!(
        heard.take(),
        ["source-lost a - no answer within 2s", "source-back a - -"]
    );
    assert_eq!(monitor.due(), Some(now + DEBOUNCE));
    monitor.flush(&mut heard).unwrap();
    assert_eq!(
        heard.take(),
        ["api widgets.example.com findings Some(0) baseline a"],
        "recomputed, unchanged"
    );
}
