//! Waiting for the clusters: every wait ends at --timeout or, early, on Ctrl-C, and watches the
//! reconciler's caches while the loop runs (a watch of its own otherwise).
use crate::statefulset::words;
use crate::sync;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::runtime::wait::{Condition, await_condition, conditions};
use tokio::sync::Notify;

use super::sides::Sides;
use crate::duration::humanize;
use crate::error::{Error, Result};
use crate::statefulset::model::{Observed, Side, pod_name};
use crate::statefulset::observe;
use crate::statefulset::watched::Watched;

/// Set by Ctrl-C, or by whoever drives the run (the controller); waits end early and the loop
/// stops at the next safe point, saying why.
#[derive(Clone, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
    /// Why the run stops, named by whoever stopped it; unset: Ctrl-C.
    reason: Arc<std::sync::OnceLock<String>>,
}

impl Interrupt {
    /// Ctrl-C.
    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
    /// Stops the run at the next safe point; `reason` (in words) is what the stop says. The
    /// first reason given is kept.
    pub fn stop_because(&self, reason: impl Into<String>) {
        let _ = self.reason.set(reason.into());
        self.trigger();
    }
    /// Why the run stops, for its messages.
    pub fn reason(&self) -> &str {
        self.reason
            .get()
            .map_or("interrupted (Ctrl-C)", String::as_str)
    }
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
    pub async fn wait(&self) {
        let notified = self.notify.notified();
        if self.is_set() {
            return;
        }
        notified.await;
    }
}

/// What a step tells as it goes, besides its result: sent to the loop, which tells the
/// operator (see `reconcile`).
#[derive(Debug, Clone)]
pub enum Note {
    /// A pod the step waits for is not there yet, and why.
    Waiting { pod: String, reason: String },
    /// A request failed in a way worth retrying; the step is tried again after `delay`.
    Retrying { message: String, delay: Duration },
    /// Something the step leaves in place on purpose, and why.
    Kept(String),
    /// Time a step that is not a wait spent waiting for the cluster (a claim to be bound).
    Waited(Duration),
}

/// Where a step's notes go; a closed channel (a dry run's) drops them.
pub type Notes = tokio::sync::mpsc::UnboundedSender<Note>;

/// A wait that --timeout ended.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {} (--timeout) waiting for {what}; rerun to keep waiting", humanize(*.after))]
pub struct TimedOut {
    what: String,
    after: Duration,
}

/// The watch a wait was on failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {what}")]
pub struct WatchFailed {
    what: String,
    #[source]
    source: kube::runtime::wait::Error,
}

impl crate::error::DomainError for TimedOut {}

/// A wait for pods to become Ready that --timeout ended: what was waited for, and why the
/// last pod is not Ready (its state and the latest warnings about it) when it is known.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NotReadyInTime {
    pub message: String,
}

impl crate::error::DomainError for NotReadyInTime {}

impl crate::error::DomainError for WatchFailed {}

/// An API object of any scope that a wait can watch.
pub trait Watchable:
    kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watchable for K where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// How often a wait for a pod reads the pod's warning events.
const WARNING_POLL: Duration = Duration::from_secs(5);

/// The pod a wait is on, as the operator is told of it.
#[derive(Debug, Default)]
struct Waiting {
    pod: String,
    uid: String,
    /// Why it is not Ready; `None` once it is.
    reason: Option<String>,
    /// Its latest warning event.
    warning: Option<String>,
}

impl Waiting {
    /// What to tell: the reason, and the latest warning with it.
    fn text(&self) -> Option<String> {
        let reason = self.reason.as_ref()?;
        Some(match &self.warning {
            Some(w) => format!("{reason}; latest warning: {w}"),
            None => reason.clone(),
        })
    }
}

/// The waits of a run: its --timeout, its Ctrl-C, and the loop's watch caches.
pub struct Waits {
    sides: Arc<Sides>,
    timeout: Duration,
    pub interrupt: Interrupt,
    /// The reconciler's watch caches while it runs; the waits then wake on their events.
    caches: Mutex<Option<Arc<Watched>>>,
}

impl Waits {
    pub fn new(sides: Arc<Sides>, timeout: Duration) -> Waits {
        Waits {
            sides,
            timeout,
            interrupt: Interrupt::default(),
            caches: Mutex::default(),
        }
    }

    /// Lets the waits use the reconciler's watch caches (`None`: watch of their own).
    pub fn watch_with(&self, watched: Option<Arc<Watched>>) {
        *sync::lock(&self.caches) = watched;
    }

    pub fn watched(&self) -> Option<Arc<Watched>> {
        sync::lock(&self.caches).clone()
    }

    /// Waits until `holds` is true of object `name` of `api`: on the reconciler's watch
    /// caches (`cached` finds it there) while it runs, else on a watch of its own. `what`
    /// names the object in an error.
    async fn until<K>(
        &self,
        what: &str,
        api: &Api<K>,
        name: &str,
        cached: impl Fn(&Watched) -> Option<Arc<K>>,
        holds: impl Condition<K>,
    ) -> std::result::Result<(), WatchFailed>
    where
        K: Watchable,
    {
        let watched = match self.watched() {
            Some(w) => {
                w.until(|w| holds.matches_object(cached(w).as_deref()))
                    .await;
                Ok(())
            }
            None => await_condition(api.clone(), name, holds).await.map(|_| ()),
        };
        watched.map_err(|source| WatchFailed {
            what: what.to_string(),
            source,
        })
    }

    /// Runs `fut` under --timeout; `Ok(None)` when Ctrl-C ends it first.
    async fn within<T>(
        &self,
        what: &str,
        fut: impl Future<Output = T>,
    ) -> std::result::Result<Option<T>, TimedOut> {
        tokio::select! {
            r = tokio::time::timeout(self.timeout, fut) => r.map(Some).map_err(|_| TimedOut {
                what: what.to_string(),
                after: self.timeout,
            }),
            _ = self.interrupt.wait() => Ok(None),
        }
    }

    /// [`Waits::within`], for a wait that can fail on its own.
    async fn bounded<T>(&self, what: &str, fut: impl Future<Output = Result<T>>) -> Result<()> {
        self.within(what, fut).await?.transpose()?;
        Ok(())
    }

    /// Until the pods of `ordinals` that `observed` shows on `side` are gone (deleted, not
    /// only Terminating).
    pub async fn pods_gone(&self, side: Side, ordinals: &[i32], observed: &Observed) -> Result<()> {
        let view = observed.side(side);
        let what = format!(
            "{} to be gone from {}",
            words::pods(ordinals),
            self.sides.context(side)
        );
        let api: Api<Pod> = self.sides.namespaced(side);
        self.bounded(&what, async {
            for k in ordinals {
                let Some(pod) = view.pods.get(k) else {
                    continue;
                };
                self.until(
                    &format!("pod {}", pod.name),
                    &api,
                    &pod.name,
                    |w| w.pod(side, &pod.name),
                    conditions::is_deleted(&pod.uid),
                )
                .await?;
            }
            Ok(())
        })
        .await
    }

    /// Until the pods of `ordinals` are Ready on `side` and the set counts them available
    /// (minReadySeconds). What keeps a pod from Ready goes to `notes` as it changes, with the
    /// pod's latest warning event; a timeout says it too.
    pub async fn ready(&self, side: Side, ordinals: &[i32], notes: &Notes) -> Result<()> {
        let what = format!(
            "{} to be Ready in {}",
            words::pods(ordinals),
            self.sides.context(side)
        );
        let sets: Api<StatefulSet> = self.sides.namespaced(side);
        let pods: Api<Pod> = self.sides.namespaced(side);
        let events: Api<Event> = self.sides.namespaced(side);
        let name = self.sides.names.set.clone();
        // The pod waited for and why it is not Ready; a poll adds its latest warning event.
        let waiting = Mutex::new(Waiting::default());
        let told = Mutex::new(None::<String>);
        // Each new thing the pod says is told once.
        let tell = |w: &Waiting| {
            let Some(text) = w.text() else { return };
            let mut told = sync::lock(&told);
            if told.as_ref() != Some(&text) {
                *told = Some(text.clone());
                let _ = notes.send(Note::Waiting {
                    pod: w.pod.clone(),
                    reason: text,
                });
            }
        };
        let pods_ready = async {
            for k in ordinals {
                let pod = pod_name(&name, *k);
                self.until(
                    &format!("pod {pod}"),
                    &pods,
                    &pod,
                    |w| w.pod(side, &pod),
                    |p: Option<&Pod>| {
                        let reason = match p {
                            None => Some("not created yet".to_string()),
                            Some(p) if p.metadata.deletion_timestamp.is_some() => {
                                Some("Terminating".to_string())
                            }
                            Some(p) => observe::pod_view(p).not_ready,
                        };
                        let uid = p.and_then(|p| p.metadata.uid.clone()).unwrap_or_default();
                        let mut w = sync::lock(&waiting);
                        if w.pod != pod || w.uid != uid {
                            // Another pod: its own events, not the last one's.
                            *w = Waiting {
                                pod: pod.clone(),
                                uid,
                                ..Waiting::default()
                            };
                        }
                        w.reason = reason;
                        tell(&w);
                        w.reason.is_none()
                    },
                )
                .await?;
            }
            // minReadySeconds: the controller counts a pod available only after that long.
            self.until(
                &format!("StatefulSet {name}"),
                &sets,
                &name,
                |w| w.set(side),
                |s: Option<&StatefulSet>| {
                    s.is_some_and(|s| {
                        let v = observe::set_view(s);
                        v.observed_generation >= v.generation && v.available_replicas >= v.replicas
                    })
                },
            )
            .await
        };
        // Events are polled, not watched: only a pod that keeps us waiting is worth the reads.
        let warnings = async {
            loop {
                tokio::time::sleep(WARNING_POLL).await;
                let (pod, uid, said) = {
                    let w = sync::lock(&waiting);
                    (
                        w.pod.clone(),
                        w.uid.clone(),
                        w.reason.clone().unwrap_or_default(),
                    )
                };
                if uid.is_empty() {
                    continue;
                }
                let latest = observe::pod_warnings(&events, &pod, &uid, &said)
                    .await
                    .into_iter()
                    .next();
                let mut w = sync::lock(&waiting);
                if w.uid == uid && w.warning != latest {
                    w.warning = latest;
                    tell(&w);
                }
            }
        };
        let waited = self
            .within(&what, async {
                tokio::select! {
                    r = pods_ready => r,
                    never = warnings => never,
                }
            })
            .await;
        let last = waiting.into_inner().expect("no panics while holding it");
        match waited {
            // Say why the pod is not Ready, not only that time ran out: its state and the
            // latest warnings about it (a failed mount or image pull, the scheduler's verdicts).
            Err(timed_out) => {
                let mut message = format!(
                    "timed out after {} (--timeout) waiting for {}",
                    humanize(timed_out.after),
                    timed_out.what
                );
                if let Some(reason) = &last.reason {
                    message.push_str(&format!("\n{}: {reason}", last.pod));
                    if !last.uid.is_empty() {
                        let warnings =
                            observe::pod_warnings(&events, &last.pod, &last.uid, reason).await;
                        for w in warnings {
                            message.push_str(&format!("\n{} warning: {w}", last.pod));
                        }
                    }
                }
                Err(NotReadyInTime { message }.into())
            }
            Ok(Some(Err(failed))) => Err(failed.into()),
            // Ready, or Ctrl-C.
            Ok(_) => Ok(()),
        }
    }

    /// Until claim `claim` on `side` is Bound.
    pub async fn bound(&self, side: Side, claim: &str) -> Result<()> {
        let bound = |c: Option<&PersistentVolumeClaim>| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.phase.as_deref())
                == Some("Bound")
        };
        self.until_in_time(
            &format!("PVC {claim} to be bound in {}", self.sides.context(side)),
            &format!("PVC {claim}"),
            &self.sides.namespaced(side),
            claim,
            |w| w.claim(side, claim),
            bound,
        )
        .await
    }

    /// Until the PV controller on `side` has processed PV `volume` (its phase is no longer
    /// Pending, the phase the API server gives a new PV): it has the PV in its cache then, so a
    /// claim created afterwards binds on the claim's first sync.
    pub async fn volume_seen(&self, side: Side, volume: &str) -> Result<()> {
        let seen = |pv: Option<&PersistentVolume>| {
            pv.and_then(|pv| pv.status.as_ref())
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|phase| phase != "Pending")
        };
        self.until_in_time(
            &format!(
                "the PV controller of {} to see PV {volume}",
                self.sides.context(side)
            ),
            &format!("PV {volume}"),
            &self.sides.volumes(side),
            volume,
            |w| w.volume(side, volume),
            seen,
        )
        .await
    }

    /// [`Waits::until`] under --timeout; `what` says what is waited for when time runs out.
    async fn until_in_time<K>(
        &self,
        what: &str,
        object: &str,
        api: &Api<K>,
        name: &str,
        cached: impl Fn(&Watched) -> Option<Arc<K>>,
        holds: impl Condition<K>,
    ) -> Result<()>
    where
        K: Watchable,
    {
        self.bounded(what, async {
            self.until(object, api, name, cached, holds)
                .await
                .map_err(Error::from)
        })
        .await
    }

    /// Until object `name` of `api` (with `uid`) is deleted, on a watch of its own. `what`
    /// names its kind.
    pub async fn gone<K>(&self, what: &str, api: &Api<K>, name: &str, uid: &str) -> Result<()>
    where
        K: Watchable,
    {
        self.bounded(&format!("{what} {name} to be gone"), async {
            await_condition(api.clone(), name, conditions::is_deleted(uid))
                .await
                .map_err(|source| {
                    Error::from(WatchFailed {
                        what: format!("{what} {name}"),
                        source,
                    })
                })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_pod_is_told_with_its_latest_warning_until_it_is_ready() {
        let mut w = Waiting {
            pod: "web-0".into(),
            uid: "u".into(),
            reason: Some("Pending, not scheduled: Unschedulable".into()),
            warning: None,
        };
        assert_eq!(
            w.text().as_deref(),
            Some("Pending, not scheduled: Unschedulable")
        );
        w.warning = Some("FailedScheduling: 0/3 nodes are available (2 times)".into());
        assert_eq!(
            w.text().as_deref(),
            Some(
                "Pending, not scheduled: Unschedulable; latest warning: FailedScheduling: 0/3 nodes are available (2 times)"
            )
        );
        w.reason = None;
        assert_eq!(w.text(), None, "a Ready pod is not waited for");
    }
}
