//! What the engine hears from each cluster: its CRDs as a kube-runtime watcher (paged lists,
//! bookmarks, a relist after a 410, backoff while the cluster does not answer), and a probe that
//! tells an outage from a quiet cluster. One feed per cluster, whatever follows it: the feed keeps
//! no comparison state, so that several watches could share one cluster's feed.
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Notify, mpsc};

use crate::cluster::{Cluster, describe_kube_error};
use crate::duration::humanize;

/// How often each cluster is asked whether it still answers, when nothing else asks.
const PROBE_EVERY: Duration = Duration::from_secs(5);

/// One event of a cluster's CRD watcher.
pub(super) type CrdEvent = Result<watcher::Event<DynamicObject>, watcher::Error>;

/// What a cluster's feed says.
// The watcher's events are the traffic and a probe's answer comes every few seconds: boxing the
// large variant would allocate for every event to save space on the rare one.
#[allow(clippy::large_enum_variant)]
pub(super) enum Signal {
    Watched(CrdEvent),
    /// The probe's answer: `Ok` when the cluster answered in time.
    Probed(Result<(), Unanswered>),
}

/// Why a probe got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error("{}", describe_kube_error(.0))]
    Failed(#[source] kube::Error),
    #[error("no answer within {}", humanize(*.0))]
    Timeout(Duration),
    /// Another watch's probe of the same cluster got no answer, for this reason.
    #[error("{0}")]
    Heard(String),
}

/// The feeds of the watched clusters: per cluster a task forwarding its watcher's events and one
/// probing it, each with a bell the engine rings (start the watch afresh; probe now). The tasks
/// end when this is dropped.
#[derive(Default)]
pub(super) struct Feeds {
    rewatch: Vec<Arc<Notify>>,
    probe_now: Vec<Arc<Notify>>,
    tasks: tokio::task::JoinSet<()>,
}

impl Feeds {
    /// Starts the feeds of `clusters`; their signals arrive on the receiver, tagged with the
    /// cluster's index. Lists are read in pages of `page_size` CRDs (0: unpaged); a probe waits
    /// `probe_timeout` at most.
    pub fn start(
        clusters: &[Cluster],
        page_size: usize,
        probe_timeout: Duration,
    ) -> (Feeds, mpsc::Receiver<(usize, Signal)>) {
        let (signals, received) = mpsc::channel(256);
        let mut feeds = Feeds::default();
        for (i, cluster) in clusters.iter().enumerate() {
            let (rewatch, probe_now) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
            feeds.tasks.spawn(forward_watch(
                i,
                cluster.client.clone(),
                page_size,
                signals.clone(),
                rewatch.clone(),
            ));
            feeds.tasks.spawn(probe(
                i,
                cluster.client.clone(),
                probe_timeout,
                signals.clone(),
                probe_now.clone(),
            ));
            feeds.rewatch.push(rewatch);
            feeds.probe_now.push(probe_now);
        }
        (feeds, received)
    }

    /// Adds a feed whose signals `forward` sends on (a shared feed's: see `shared.rs`), with
    /// the bells that start its watch afresh and probe it now.
    pub(super) fn adopt(
        &mut self,
        forward: impl std::future::Future<Output = ()> + Send + 'static,
        rewatch: Arc<Notify>,
        probe_now: Arc<Notify>,
    ) {
        self.tasks.spawn(forward);
        self.rewatch.push(rewatch);
        self.probe_now.push(probe_now);
    }

    /// Starts cluster `i`'s watch afresh: a new list now, rather than when its backoff ends.
    pub fn rewatch(&self, i: usize) {
        self.rewatch[i].notify_one();
    }

    /// Asks cluster `i` now whether it answers.
    pub fn probe_now(&self, i: usize) {
        self.probe_now[i].notify_one();
    }
}

/// The cluster's CRDs as a kube-runtime watcher.
fn crd_watcher(
    client: kube::Client,
    page_size: usize,
) -> impl futures::Stream<Item = CrdEvent> + Send + use<> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "customresourcedefinitions");
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut config = watcher::Config::default();
    if page_size > 0 {
        config = config.page_size(u32::try_from(page_size).unwrap_or(u32::MAX));
    }
    watcher(api, config).default_backoff()
}

/// Sends cluster `index`'s watcher events to `signals`; starts the watcher afresh (a new list)
/// when `restart` is notified.
pub(super) async fn forward_watch(
    index: usize,
    client: kube::Client,
    page_size: usize,
    signals: mpsc::Sender<(usize, Signal)>,
    restart: Arc<Notify>,
) {
    loop {
        let mut stream = std::pin::pin!(crd_watcher(client.clone(), page_size));
        loop {
            tokio::select! {
                event = stream.next() => {
                    let Some(event) = event else { break };
                    if signals.send((index, Signal::Watched(event))).await.is_err() {
                        return;
                    }
                }
                () = restart.notified() => break,
            }
        }
    }
}

/// Asks the cluster for its version every [`PROBE_EVERY`] (or when told to), under `timeout`,
/// and sends whether it answered.
pub(super) async fn probe(
    index: usize,
    client: kube::Client,
    timeout: Duration,
    signals: mpsc::Sender<(usize, Signal)>,
    now: Arc<Notify>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PROBE_EVERY) => {}
            _ = now.notified() => {}
        }
        let answer = match tokio::time::timeout(timeout, client.apiserver_version()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Unanswered::Failed(e)),
            Err(_) => Err(Unanswered::Timeout(timeout)),
        };
        if signals.send((index, Signal::Probed(answer))).await.is_err() {
            return;
        }
    }
}
