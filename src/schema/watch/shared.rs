//! One cluster's feed shared by several watches (a controller's checks that name the same
//! cluster): one CRD watcher and one probe, whatever number of watches follow them. Each
//! follower hears every signal; one that starts following late first hears the CRDs known so
//! far as a fresh list (and the cluster's outage, if the last probe found one), so that its
//! monitor starts as it would on a feed of its own. The tasks end when the [`SharedFeed`] is
//! dropped.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Notify, mpsc};

use super::feed::{Feeds, Signal, Unanswered, forward_watch, probe};
use crate::cluster::{Cluster, describe_kube_error};

/// A cluster's CRD watcher and probe, followed by any number of watches.
pub struct SharedFeed {
    hub: Arc<Hub>,
    rewatch: Arc<Notify>,
    probe_now: Arc<Notify>,
    _tasks: tokio::task::JoinSet<()>,
}

/// What the feed knows, and who follows it. Updated and fanned out under one lock, so that a
/// follower that joins gets the state up to a signal and every signal after it.
#[derive(Default)]
struct Hub {
    state: Mutex<HubState>,
}

#[derive(Default)]
struct HubState {
    /// The CRDs as of the last complete list and the changes since; `None` before the first.
    known: Option<BTreeMap<String, DynamicObject>>,
    /// The CRDs of a list in progress (between `Init` and `InitDone`).
    listing: Option<BTreeMap<String, DynamicObject>>,
    /// The last probe found no answer: said to a follower that joins.
    down: Option<String>,
    followers: Vec<mpsc::UnboundedSender<Signal>>,
}

impl SharedFeed {
    /// Starts following `cluster`'s CRDs (lists in pages of `page_size`, 0: unpaged) and
    /// probing it (each probe waits `probe_timeout` at most).
    pub fn start(cluster: &Cluster, page_size: usize, probe_timeout: Duration) -> SharedFeed {
        let (signals, mut received) = mpsc::channel(256);
        let (rewatch, probe_now) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let hub = Arc::new(Hub::default());
        let mut tasks = tokio::task::JoinSet::new();
        let client = cluster.client.clone();
        tasks.spawn(forward_watch(
            0,
            client.clone(),
            page_size,
            signals.clone(),
            rewatch.clone(),
        ));
        tasks.spawn(probe(0, client, probe_timeout, signals, probe_now.clone()));
        let fan = hub.clone();
        tasks.spawn(async move {
            while let Some((_, signal)) = received.recv().await {
                fan.tell(signal);
            }
        });
        SharedFeed {
            hub,
            rewatch,
            probe_now,
            _tasks: tasks,
        }
    }

    /// A new follower: what is known so far, then every signal.
    pub(super) fn follow(&self) -> mpsc::UnboundedReceiver<Signal> {
        self.hub.follow()
    }

    /// Starts the watch afresh for every follower.
    pub(super) fn rewatch(&self) -> Arc<Notify> {
        self.rewatch.clone()
    }

    /// Probes the cluster now, for every follower.
    pub(super) fn probe_now(&self) -> Arc<Notify> {
        self.probe_now.clone()
    }
}

impl Hub {
    /// A new follower: what is known so far, then every signal.
    fn follow(&self) -> mpsc::UnboundedReceiver<Signal> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let replay = match (&state.listing, &state.known) {
            (Some(partial), _) => Some((partial, false)),
            (None, Some(known)) => Some((known, true)),
            (None, None) => None,
        };
        if let Some((crds, done)) = replay {
            let _ = tx.send(Signal::Watched(Ok(Event::Init)));
            for crd in crds.values() {
                let _ = tx.send(Signal::Watched(Ok(Event::InitApply(crd.clone()))));
            }
            if done {
                let _ = tx.send(Signal::Watched(Ok(Event::InitDone)));
            }
        }
        if let Some(why) = &state.down {
            let _ = tx.send(Signal::Probed(Err(Unanswered::Heard(why.clone()))));
        }
        state.followers.push(tx);
        rx
    }

    /// Takes in `signal` and sends each follower its copy; forgets followers that are gone.
    fn tell(&self, signal: Signal) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &signal {
            Signal::Watched(Ok(event)) => state.take_in(event),
            Signal::Watched(Err(_)) => {}
            Signal::Probed(answer) => {
                state.down = answer.as_ref().err().map(ToString::to_string);
            }
        }
        state
            .followers
            .retain(|f| f.send(copy_signal(&signal)).is_ok());
    }
}

impl HubState {
    fn take_in(&mut self, event: &Event<DynamicObject>) {
        match event {
            Event::Init => self.listing = Some(BTreeMap::new()),
            Event::InitApply(crd) => {
                self.listing
                    .get_or_insert_default()
                    .insert(crd.name_any(), crd.clone());
            }
            Event::InitDone => self.known = Some(self.listing.take().unwrap_or_default()),
            Event::Apply(crd) => {
                self.known
                    .get_or_insert_default()
                    .insert(crd.name_any(), crd.clone());
            }
            Event::Delete(crd) => {
                if let Some(known) = &mut self.known {
                    known.remove(&crd.name_any());
                }
            }
        }
    }
}

/// A follower's copy of `signal`. Errors are not `Clone`: an answer of the server is copied
/// as it is, anything else as its words.
fn copy_signal(signal: &Signal) -> Signal {
    match signal {
        Signal::Watched(Ok(event)) => Signal::Watched(Ok(event.clone())),
        Signal::Watched(Err(e)) => Signal::Watched(Err(copy_watch_error(e))),
        Signal::Probed(Ok(())) => Signal::Probed(Ok(())),
        Signal::Probed(Err(Unanswered::Timeout(d))) => Signal::Probed(Err(Unanswered::Timeout(*d))),
        Signal::Probed(Err(e)) => Signal::Probed(Err(Unanswered::Heard(e.to_string()))),
    }
}

fn copy_watch_error(e: &watcher::Error) -> watcher::Error {
    use watcher::Error as W;
    match e {
        W::InitialListFailed(e) => W::InitialListFailed(copy_kube_error(e)),
        W::WatchStartFailed(e) => W::WatchStartFailed(copy_kube_error(e)),
        W::WatchFailed(e) => W::WatchFailed(copy_kube_error(e)),
        W::WatchError(status) => W::WatchError(status.clone()),
        W::NoResourceVersion => W::NoResourceVersion,
    }
}

fn copy_kube_error(e: &kube::Error) -> kube::Error {
    match e {
        kube::Error::Api(status) => kube::Error::Api(status.clone()),
        other => kube::Error::Service(Box::new(Heard(describe_kube_error(other)))),
    }
}

/// What another follower's copy of an error said.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Heard(String);

// Here rather than in feed.rs: a feed knows nothing of sharing (modules of a domain form no cycle).
impl Feeds {
    /// Follows `shared`, one feed per cluster that other watches may follow too; the signals
    /// arrive tagged with the feed's index, as with [`Feeds::start`].
    pub fn shared(shared: &[&SharedFeed]) -> (Feeds, mpsc::Receiver<(usize, Signal)>) {
        let (signals, received) = mpsc::channel(256);
        let mut feeds = Feeds::default();
        for (i, feed) in shared.iter().enumerate() {
            let mut heard = feed.follow();
            let signals = signals.clone();
            let forward = async move {
                while let Some(signal) = heard.recv().await {
                    if signals.send((i, signal)).await.is_err() {
                        return;
                    }
                }
            };
            feeds.adopt(forward, feed.rewatch(), feed.probe_now());
        }
        (feeds, received)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
        }))
        .unwrap()
    }

    /// What a follower has heard so far, in words.
    fn heard(rx: &mut mpsc::UnboundedReceiver<Signal>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|s| match s {
                Signal::Watched(Ok(e)) => e.to_string(),
                Signal::Watched(Err(e)) => format!("error {e}"),
                Signal::Probed(a) => format!("probed {a:?}"),
            })
            .collect()
    }

    #[test]
    fn a_late_follower_hears_what_is_known_then_what_follows() {
        let hub = Hub::default();
        let mut first = hub.follow();
        hub.tell(Signal::Watched(Ok(Event::Init)));
        hub.tell(Signal::Watched(Ok(Event::InitApply(crd("a.x")))));
        // Mid-list: the list so far, and the rest as it comes.
        let mut mid = hub.follow();
        hub.tell(Signal::Watched(Ok(Event::InitApply(crd("b.x")))));
        hub.tell(Signal::Watched(Ok(Event::InitDone)));
        hub.tell(Signal::Watched(Ok(Event::Apply(crd("c.x")))));
        hub.tell(Signal::Watched(Ok(Event::Delete(crd("a.x")))));
        hub.tell(Signal::Probed(Err(Unanswered::Heard("refused".into()))));
        let mut late = hub.follow();
        let all = [
            "Init",
            "InitApply(a.x)",
            "InitApply(b.x)",
            "InitDone",
            "Apply(c.x)",
            "Delete(a.x)",
            "probed Err(Heard(\"refused\"))",
        ];
        assert_eq!(heard(&mut first), all);
        assert_eq!(heard(&mut mid), all);
        assert_eq!(
            heard(&mut late),
            [
                "Init",
                "InitApply(b.x)",
                "InitApply(c.x)",
                "InitDone",
                "probed Err(Heard(\"refused\"))"
            ],
            "the state as a fresh list, and the outage"
        );
        drop(first);
        hub.tell(Signal::Probed(Ok(())));
        assert_eq!(
            hub.state.lock().unwrap().followers.len(),
            2,
            "a gone follower is forgotten"
        );
        assert_eq!(heard(&mut late), ["probed Ok(())"]);
    }
}
