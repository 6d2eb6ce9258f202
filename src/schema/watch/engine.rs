//! The watch engine: clusters in, typed events out. It follows the CRDs of every cluster (one
//! [`Feeds`] entry each), keeps the comparison up to date in a [`Monitor`], and tells a
//! [`Listener`] each API's state, the initial report and every event. It neither prints nor
//! exits: the CLI's listener prints, pages and exports; a controller's would set conditions.
use std::future::Future;
use std::time::Duration;

use kube::runtime::watcher;
use tokio::time::Instant;

use super::feed::{Feeds, Signal};
use super::listener::{Ended, Flow, Listener, Note, Settings};
use super::monitor::Monitor;
use super::shared::SharedFeed;
use crate::cluster::{Cluster, DEFAULT_CONNECT_TIMEOUT};
use crate::error::{Error, Result};
use crate::schema::source::{Origin, SourceSchemas};
use crate::schema::{Request, blocking, load};

/// Connects to the request's clusters, reads its files, and watches until `stop` resolves or
/// the listener answers [`Flow::Stop`].
pub async fn watch(
    request: &Request,
    settings: &Settings,
    listener: &mut impl Listener,
    stop: impl Future<Output = ()>,
) -> Result<Ended> {
    // Watches are long requests: the clients get no read timeout; outages are found by probes
    // bounded by --request-timeout.
    let clusters =
        futures::future::try_join_all(request.clusters.iter().map(|t| t.connect(Duration::ZERO)))
            .await?;
    let files = {
        let (paths, selection) = (request.files.clone(), request.selection.clone());
        blocking(move || load::load_file_sources(&paths, &selection)).await?
    };
    run(&clusters, files, request, settings, listener, stop).await
}

/// The watch over `clusters` (connected, with no read timeout) and the `files` already read:
/// the initial report once every cluster has listed its CRDs, then one event per change.
pub async fn run(
    clusters: &[Cluster],
    files: Vec<SourceSchemas>,
    request: &Request,
    settings: &Settings,
    listener: &mut impl Listener,
    stop: impl Future<Output = ()>,
) -> Result<Ended> {
    let fed = Feeds::start(clusters, request.chunk_size, probe_timeout(request));
    follow(clusters, fed, files, request, settings, listener, stop).await
}

/// [`run`] on feeds other watches may follow too (`shared[i]` follows `clusters[i]`).
pub async fn run_shared(
    clusters: &[Cluster],
    shared: &[&SharedFeed],
    request: &Request,
    settings: &Settings,
    listener: &mut impl Listener,
    stop: impl Future<Output = ()>,
) -> Result<Ended> {
    let fed = Feeds::shared(shared);
    follow(clusters, fed, Vec::new(), request, settings, listener, stop).await
}

/// How long a probe waits for an answer: the request's timeout, else the connect timeout.
fn probe_timeout(request: &Request) -> Duration {
    if request.request_timeout.is_zero() {
        DEFAULT_CONNECT_TIMEOUT
    } else {
        request.request_timeout
    }
}

/// The watch of [`run`], on the feeds `fed` of `clusters`.
async fn follow(
    clusters: &[Cluster],
    (feeds, mut signals): (Feeds, tokio::sync::mpsc::Receiver<(usize, Signal)>),
    files: Vec<SourceSchemas>,
    request: &Request,
    settings: &Settings,
    listener: &mut impl Listener,
    stop: impl Future<Output = ()>,
) -> Result<Ended> {
    let watched = clusters
        .iter()
        .map(|c| SourceSchemas {
            label: c.context.clone(),
            origin: Origin::Cluster {
                context: c.context.clone(),
                server: c.server.clone(),
                version: c.git_version().to_string(),
            },
            apis: Default::default(),
        })
        .collect();
    let mut monitor = Monitor::new(watched, files, request, settings);
    // The initial state: every cluster's first complete list. Probes answered meanwhile are
    // taken in after it, so that no event comes before the initial report.
    let mut answered = Vec::new();
    while !monitor.synced() {
        let Some((i, signal)) = signals.recv().await else {
            break;
        };
        match signal {
            Signal::Watched(Err(e)) => return Err(first_list_failed(&clusters[i], e)),
            Signal::Watched(Ok(event)) => {
                monitor.watched(i, event, Instant::now(), listener)?;
            }
            Signal::Probed(answer) => answered.push((i, answer)),
        }
    }
    monitor.start(listener)?;
    for (i, answer) in answered {
        if monitor.probed(i, answer, Instant::now(), listener)? == Flow::Stop {
            return Ok(Ended::ByListener);
        }
    }
    let mut stop = std::pin::pin!(stop);
    loop {
        let due = monitor.due();
        let flow = tokio::select! {
            Some((i, signal)) = signals.recv() => match signal {
                Signal::Watched(Err(e)) => {
                    listener.note(Note::Detail(1, format!("{}: watch: {e}", clusters[i].context)));
                    // A watch error may be the cluster going away or a mere expiry: a probe
                    // tells which.
                    feeds.probe_now(i);
                    Flow::Continue
                }
                Signal::Watched(Ok(event)) => monitor.watched(i, event, Instant::now(), listener)?,
                Signal::Probed(answer) => {
                    let was_up = monitor.up(i);
                    let flow = monitor.probed(i, answer, Instant::now(), listener)?;
                    if !was_up && monitor.up(i) {
                        // Back: a fresh list now, rather than when the watcher's backoff ends.
                        feeds.rewatch(i);
                    }
                    flow
                }
            },
            () = sleep_until(due) => monitor.flush(listener)?,
            () = &mut stop => return Ok(Ended::Stopped),
        };
        if flow == Flow::Stop {
            return Ok(Ended::ByListener);
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A cluster's watch failed before its first list was complete: the watch cannot start.
fn first_list_failed(cluster: &Cluster, error: watcher::Error) -> Error {
    let what = "watching CustomResourceDefinitions";
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => cluster.api_error(what, e),
        watcher::Error::WatchError(status) => cluster.api_error(what, kube::Error::Api(status)),
        watcher::Error::NoResourceVersion => Error::Failed {
            message: format!("{}: {what}: {error}", cluster.context),
        },
    }
}
