//! The Lease that keeps two operators from driving one migration, with the semantics of
//! client-go's leader election:
//!
//! - A candidate judges another holder's lease by what it sees change, on its own monotonic
//!   clock: the lease has expired only when its record has not changed for the lease duration
//!   since this process first saw it (or last saw it change). The `renewTime` written by another
//!   machine is never compared with this machine's clock, and nothing is guessed from process
//!   tables (there is no `/proc` on macOS, nor across machines).
//! - A candidate that finds a holder watches it: a renewal seen means a live operator, and this
//!   run refuses, naming it; a lease left unchanged for the lease duration belongs to an operator
//!   that was killed or cut off, and is taken over. So a run started right after another was
//!   killed waits up to the lease duration, then completes.
//! - Every write of the Lease carries the resourceVersion last read or written: of two candidates
//!   only one gets it, and a holder whose lease was taken over cannot renew it.
//! - The holder renews in the background and knows (monotonic) when it last did. Before each
//!   write and at each safe point of the loop it checks; when it has not renewed within the renew
//!   deadline (the process was stopped, or the server is unreachable) it tries once more at once
//!   and stops if that fails. A holder that stops renewing at the renew deadline leaves a margin
//!   before any candidate may see its lease expire.
//! - The holder gives the lease back at the end with a delete conditional on the resourceVersion
//!   of its own last write, so it never removes another holder's lease.
use crate::sync;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{DeleteParams, PostParams, Preconditions};
use tokio::sync::watch;

use super::Event;
/// The Lease of a migration of StatefulSet `set` (its journal's name too), for the controller's
/// test that its own Lease is named apart.
#[cfg(test)]
pub use super::journal::object_name as migration_lease_name;
use super::journal::{self, object_name};
use crate::cluster::{Cluster, is_status};
use crate::duration::humanize;
use crate::error::{Error, Result};

/// How long a lease stays valid after a candidate last saw it change (client-go's default).
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// A holder that has not renewed for this long stops writing (client-go's default).
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Time between renewals, and between a candidate's looks at a held lease (client-go's default).
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// One renewal or release request; bounded so that a hung server cannot keep the holder from
/// noticing the renew deadline.
const LEASE_REQUEST_TIMEOUT: Duration = Duration::from_secs(4);

/// This process on `host` as a lease holder: `host/pid/random`. The host and pid tell a person
/// who holds the lease; the random part keeps the identity unique across machines without a
/// hostname and across pid reuse. The commands layer makes it once per process (see
/// [`Settings::holder`](super::Settings::holder)); a host name that cannot be part of it is left out.
pub fn holder_identity(host: Option<&str>) -> String {
    let host = host
        .map(str::trim)
        .filter(|h| !h.is_empty() && !h.contains('/'))
        .unwrap_or("unknown-host");
    format!("{host}/{}/{}", std::process::id(), random_suffix())
}

/// 48 random bits as hex, from the standard library's randomly keyed hasher and the clock.
fn random_suffix() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

// ---- the pure core: what a candidate concludes from what it has seen ----------------------

/// The fields a holder writes when it takes or renews a lease; any change proves it alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub holder: String,
    pub duration_seconds: Option<i32>,
    pub acquired: Option<MicroTime>,
    pub renewed: Option<MicroTime>,
    pub transitions: Option<i32>,
}

impl Record {
    fn of(lease: &Lease) -> Record {
        let spec = lease.spec.clone().unwrap_or_default();
        Record {
            holder: spec.holder_identity.unwrap_or_default(),
            duration_seconds: spec.lease_duration_seconds,
            acquired: spec.acquire_time,
            renewed: spec.renew_time,
            transitions: spec.lease_transitions,
        }
    }

    /// The holder's own lease duration, as client-go reads it; ours when it names none.
    fn duration(&self) -> Duration {
        match self.duration_seconds {
            Some(s) if s > 0 => Duration::from_secs(s as u64),
            _ => LEASE_DURATION,
        }
    }
}

/// A record as this process saw it, and the local instant it first saw it (as it is now).
#[derive(Debug, Clone)]
pub struct Sighting {
    pub record: Record,
    pub since: Instant,
}

impl Sighting {
    /// What is known after reading `record` at `now`: an unchanged record keeps the instant it
    /// was first seen; a changed one (or the first look) starts the clock now.
    pub fn after(previous: Option<Sighting>, record: Record, now: Instant) -> Sighting {
        match previous {
            Some(p) if p.record == record => p,
            _ => Sighting { record, since: now },
        }
    }
}

/// What a candidate does after a look at the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nobody holds it, or its holder has not renewed it for a lease duration: take it.
    Take {
        from: Option<String>,
        silent: Duration,
    },
    /// Its holder renewed it while this process watched: it is alive; leave it alone.
    Refuse { holder: String },
    /// Not decided yet: look again (within `expires_in` it counts as expired unless it changes).
    Watch {
        holder: String,
        expires_in: Duration,
    },
}

/// PURE: the candidate's decision from its previous look (if any) and this one, at `now`.
pub fn next(previous: Option<&Sighting>, current: &Sighting, now: Instant) -> Next {
    let holder = &current.record.holder;
    if holder.is_empty() {
        return Next::Take {
            from: None,
            silent: Duration::ZERO,
        };
    }
    if previous.is_some_and(|p| p.record != current.record) {
        return Next::Refuse {
            holder: holder.clone(),
        };
    }
    let silent = now.saturating_duration_since(current.since);
    let duration = current.record.duration();
    if silent >= duration {
        Next::Take {
            from: Some(holder.clone()),
            silent,
        }
    } else {
        Next::Watch {
            holder: holder.clone(),
            expires_in: duration - silent,
        }
    }
}

/// PURE: whether a holder that last renewed at `renewed_at` may still write at `now` without
/// renewing first.
pub fn renewed_recently(renewed_at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(renewed_at) < RENEW_DEADLINE
}

/// Whole seconds, as messages show a lease's times.
fn seconds(d: Duration) -> String {
    humanize(Duration::from_secs(d.as_secs()))
}

// ---- the I/O: acquiring, renewing, releasing -------------------------------------------------

/// Where the lease lives, for requests and messages.
#[derive(Clone)]
struct Place {
    api: Api<Lease>,
    name: String,
    /// `Lease NS/NAME in CONTEXT`.
    shown: String,
    context: String,
}

impl Place {
    fn new(cluster: &Cluster, namespace: &str, name: &str) -> Place {
        let name = name.to_string();
        Place {
            api: Api::namespaced(cluster.client.clone(), namespace),
            shown: format!("Lease {namespace}/{name} in {}", cluster.context),
            name,
            context: cluster.context.clone(),
        }
    }

    fn lease(&self, resource_version: Option<String>, spec: LeaseSpec) -> Lease {
        Lease {
            metadata: journal::metadata(self.name.clone(), resource_version),
            spec: Some(spec),
        }
    }

    /// The holder's name as the lease shows it now, for a message; best effort.
    async fn current_holder(&self) -> String {
        match tokio::time::timeout(LEASE_REQUEST_TIMEOUT, self.api.get_opt(&self.name)).await {
            Ok(Ok(Some(lease))) => Record::of(&lease).holder,
            _ => String::new(),
        }
    }

    async fn refused_at_the_same_moment(&self) -> Error {
        let holder = self.current_holder().await;
        Error::LeaseHeld {
            holder: if holder.is_empty() {
                "unknown".into()
            } else {
                holder
            },
            lease: self.shown.clone(),
            seen: "it took the lease at the same moment as this run".into(),
            duration: LEASE_DURATION,
        }
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// Takes the migration's Lease in the destination for `holder` (see [`holder_identity`]),
/// watching a held one until its holder is seen alive (refused) or silent for the lease duration
/// (taken over). `note` hears about the wait.
pub async fn acquire(
    cluster: &Cluster,
    namespace: &str,
    set: &str,
    holder: &str,
    note: &mut (dyn FnMut(Event<'_>) + Send),
) -> Result<Held> {
    acquire_named(cluster, namespace, &object_name(set), holder, note).await
}

/// Takes the Lease `name` (not a migration's: the controller's leader election) as
/// [`acquire`] takes a migration's.
pub async fn acquire_named(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    holder: &str,
    note: &mut (dyn FnMut(Event<'_>) + Send),
) -> Result<Held> {
    let place = Place::new(cluster, namespace, name);
    let mut previous: Option<Sighting> = None;
    let mut told = false;
    loop {
        let read = cluster
            .call("read the migration lease", place.api.get_opt(&place.name))
            .await?;
        let Some(lease) = read else {
            return take(cluster, &place, holder, None, 0).await;
        };
        let current = Sighting::after(previous.clone(), Record::of(&lease), Instant::now());
        match next(previous.as_ref(), &current, Instant::now()) {
            Next::Take { from, silent } => {
                let transitions = current.record.transitions.unwrap_or(0);
                let held = take(
                    cluster,
                    &place,
                    holder,
                    lease.metadata.resource_version.clone(),
                    transitions + 1,
                )
                .await?;
                if let Some(from) = from {
                    note(Event::Warning(format!(
                        "took over {} from {from}, which had not renewed it for {} (as seen from here)",
                        place.shown,
                        seconds(silent)
                    )));
                }
                return Ok(held);
            }
            Next::Refuse { holder } => {
                return Err(Error::LeaseHeld {
                    holder,
                    lease: place.shown.clone(),
                    seen: "it renewed the lease while this run watched".into(),
                    duration: current.record.duration(),
                });
            }
            Next::Watch { holder, expires_in } => {
                if !told {
                    note(Event::Warning(format!(
                        "{} is held by {holder}; watching it for up to {}: a holder that renews it is left alone, one that has stopped is taken over",
                        place.shown,
                        seconds(expires_in + Duration::from_millis(999))
                    )));
                    told = true;
                }
                tokio::time::sleep(RETRY_PERIOD.min(expires_in)).await;
            }
        }
        previous = Some(current);
    }
}

/// Creates the lease (no `resource_version`) or replaces the one read, as `holder`'s.
async fn take(
    cluster: &Cluster,
    place: &Place,
    holder: &str,
    resource_version: Option<String>,
    transitions: i32,
) -> Result<Held> {
    let stamp = now();
    let spec = LeaseSpec {
        holder_identity: Some(holder.to_string()),
        lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
        acquire_time: Some(stamp.clone()),
        renew_time: Some(stamp),
        lease_transitions: Some(transitions),
        ..Default::default()
    };
    let lease = place.lease(resource_version.clone(), spec.clone());
    let sent_at = Instant::now();
    let written = match &resource_version {
        None => {
            cluster
                .call(
                    "take the migration lease",
                    place.api.create(&PostParams::default(), &lease),
                )
                .await
        }
        Some(_) => {
            cluster
                .call(
                    "take the migration lease",
                    place
                        .api
                        .replace(&place.name, &PostParams::default(), &lease),
                )
                .await
        }
    };
    let written = match written {
        Ok(written) => written,
        // Created or replaced by another candidate since it was read.
        Err(e) if e.http_status() == Some(409) => {
            return Err(place.refused_at_the_same_moment().await);
        }
        Err(e) => return Err(e),
    };
    Ok(Held::start(place.clone(), spec, &written, sent_at))
}

/// The lease while this process holds it. Clones share it.
#[derive(Clone)]
pub struct Held {
    shared: Arc<Shared>,
}

struct Shared {
    place: Place,
    /// What every renewal writes, but the renew time.
    spec: LeaseSpec,
    state: Mutex<Holding>,
    /// Set once, with the reason, when the lease is lost for good.
    lost: watch::Sender<Option<String>>,
    /// One renewal at a time: the background one or one at a check.
    renewing: tokio::sync::Mutex<()>,
    renewal: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Set when this run deletes the namespace the lease lives in (the end of a rollback): from
    /// then on the lease going away is the run's own doing, not a loss.
    goes_with_namespace: AtomicBool,
    /// The lease went away with its namespace: nothing is left to renew or to guard.
    gone: AtomicBool,
}

struct Holding {
    resource_version: String,
    renewed_at: Instant,
}

impl Held {
    fn start(place: Place, spec: LeaseSpec, written: &Lease, sent_at: Instant) -> Held {
        let shared = Arc::new(Shared {
            place,
            spec,
            state: Mutex::new(Holding {
                resource_version: written
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default(),
                // The server saw the write after it was sent; counting from then errs early.
                renewed_at: sent_at,
            }),
            lost: watch::Sender::new(None),
            renewing: tokio::sync::Mutex::new(()),
            renewal: Mutex::new(None),
            goes_with_namespace: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        });
        let task = tokio::spawn(renew_in_background(Arc::downgrade(&shared)));
        *sync::lock(&shared.renewal) = Some(task);
        Held { shared }
    }

    fn lost_reason(&self) -> Option<String> {
        self.shared.lost.borrow().clone()
    }

    /// Whether this process may write now: the lease was renewed within the renew deadline, or
    /// is renewed right now. Otherwise the lease is lost, and stays lost.
    pub async fn ensure(&self) -> Result<()> {
        if let Some(reason) = self.lost_reason() {
            return Err(Error::LeaseLost { reason });
        }
        if self.shared.gone.load(Ordering::SeqCst) {
            return Ok(());
        }
        let renewed_at = self.shared.holding().renewed_at;
        if renewed_recently(renewed_at, Instant::now()) {
            return Ok(());
        }
        // The background renewal has not run (this process was stopped) or has failed (the
        // server is unreachable): one renewal decides.
        self.shared.renew().await;
        match self.lost_reason() {
            Some(reason) => Err(Error::LeaseLost { reason }),
            None => Ok(()),
        }
    }

    /// This run is about to delete the namespace the lease lives in: the lease's deletion that
    /// follows is expected, and ends the holding without a loss.
    pub fn goes_with_namespace(&self) {
        self.shared
            .goes_with_namespace
            .store(true, Ordering::SeqCst);
    }

    /// Resolves, with the reason, once the lease is lost.
    pub async fn lost(&self) -> String {
        let mut lost = self.shared.lost.subscribe();
        let reason = lost
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|reason| reason.clone());
        match reason {
            Some(reason) => reason,
            // The sender lives in `shared`, which `self` keeps alive: not reached.
            None => std::future::pending().await,
        }
    }

    /// Stops renewing and gives the lease back, only if it is still the version this process
    /// wrote last: a lease another holder has taken since is left alone.
    pub async fn release(self) {
        if let Some(task) = sync::lock(&self.shared.renewal).take() {
            task.abort();
        }
        let _one = self.shared.renewing.lock().await;
        let place = &self.shared.place;
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(self.shared.holding().resource_version.clone()),
                uid: None,
            }),
            ..Default::default()
        };
        // A 409 (someone else's now) or 404 (gone) is fine; an unreachable server lets the
        // lease expire instead.
        let _ = tokio::time::timeout(
            LEASE_REQUEST_TIMEOUT,
            place.api.delete(&place.name, &params),
        )
        .await;
    }
}

impl Shared {
    fn holding(&self) -> std::sync::MutexGuard<'_, Holding> {
        sync::lock(&self.state)
    }

    /// The lease is gone: lost, unless this run deleted its namespace.
    fn deleted(&self) {
        if self.goes_with_namespace.load(Ordering::SeqCst) {
            self.gone.store(true, Ordering::SeqCst);
        } else {
            self.lose(format!(
                "the migration's {} was deleted by someone else",
                self.place.shown
            ));
        }
    }

    fn lose(&self, reason: String) {
        self.lost.send_if_modified(|lost| {
            if lost.is_none() {
                *lost = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn budget(&self) -> Duration {
        request_budget(self.holding().renewed_at, Instant::now())
    }

    /// One renewal, with the resourceVersion of this process's last write as precondition. On
    /// failure, the lease is lost when another holder took it, when it was deleted, or when
    /// the last renewal is older than the renew deadline.
    async fn renew(&self) {
        let _one = self.renewing.lock().await;
        if self.lost.borrow().is_some() || self.gone.load(Ordering::SeqCst) {
            return;
        }
        let place = &self.place;
        let mut failure = String::new();
        // A conflict with our own write (its answer was lost on the way) is retried once with
        // the version it made.
        for _ in 0..2 {
            let resource_version = self.holding().resource_version.clone();
            let mut spec = self.spec.clone();
            spec.renew_time = Some(now());
            let lease = place.lease(Some(resource_version), spec);
            let sent_at = Instant::now();
            let params = PostParams::default();
            let request = place.api.replace(&place.name, &params, &lease);
            let budget = self.budget();
            match tokio::time::timeout(budget, request).await {
                Ok(Ok(written)) => {
                    let mut holding = self.holding();
                    holding.resource_version =
                        written.metadata.resource_version.unwrap_or_default();
                    holding.renewed_at = sent_at;
                    return;
                }
                Ok(Err(e)) if is_status(&e, 409) => {
                    let budget = self.budget();
                    let read = tokio::time::timeout(budget, place.api.get_opt(&place.name)).await;
                    match read {
                        Ok(Ok(Some(current))) => {
                            let holder = Record::of(&current).holder;
                            if Some(&holder) == self.spec.holder_identity.as_ref() {
                                self.holding().resource_version =
                                    current.metadata.resource_version.unwrap_or_default();
                                failure = "the lease changed under this run's own renewals".into();
                                continue;
                            }
                            let age = self.holding().renewed_at.elapsed();
                            return self.lose(format!(
                                "another kubectl-migrate ({holder}) took over the migration's {} after this run had not renewed it for {}; that one drives the migration now",
                                place.shown,
                                seconds(age)
                            ));
                        }
                        Ok(Ok(None)) => return self.deleted(),
                        Ok(Err(e)) => failure = crate::cluster::describe_kube_error(&e),
                        Err(_) => failure = no_answer(&place.context, budget),
                    }
                }
                Ok(Err(e)) if is_status(&e, 404) => return self.deleted(),
                Ok(Err(e)) => failure = crate::cluster::describe_kube_error(&e),
                Err(_) => failure = no_answer(&place.context, budget),
            }
            break;
        }
        let age = self.holding().renewed_at.elapsed();
        if age >= RENEW_DEADLINE {
            self.lose(format!(
                "could not renew the migration's {} for {} ({failure}); stopped before another kubectl-migrate may take it over",
                place.shown,
                seconds(age)
            ));
        }
    }
}

fn no_answer(context: &str, budget: Duration) -> String {
    format!(
        "{context} did not answer within {}",
        humanize(Duration::from_millis(budget.as_millis() as u64))
    )
}

/// PURE: how long one renewal request may take: no later than the renew deadline of the last
/// renewal (so that a hung server cannot keep a holder writing past it), but at least a second
/// (a holder past its deadline after a SIGSTOP still gets one real try).
pub fn request_budget(renewed_at: Instant, now: Instant) -> Duration {
    (renewed_at + RENEW_DEADLINE)
        .saturating_duration_since(now)
        .clamp(Duration::from_secs(1), LEASE_REQUEST_TIMEOUT)
}

/// Renews every retry period until the lease is lost or given back.
async fn renew_in_background(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(RETRY_PERIOD).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.renew().await;
        if shared.lost.borrow().is_some() || shared.gone.load(Ordering::SeqCst) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: &str, renewed_second: i64) -> Record {
        let at = |s: i64| MicroTime(k8s_openapi::jiff::Timestamp::from_second(s).unwrap());
        Record {
            holder: holder.into(),
            duration_seconds: Some(15),
            acquired: Some(at(0)),
            renewed: Some(at(renewed_second)),
            transitions: Some(0),
        }
    }

    fn s(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    #[test]
    fn a_new_candidate_waits_a_whole_lease_duration_however_old_the_renew_time_looks() {
        // The renew time says 1970, as another machine's clock wrote it; it is not compared
        // with this machine's clock.
        let t0 = Instant::now();
        let first = Sighting::after(None, record("other/1/a", 0), t0);
        assert!(matches!(
            next(None, &first, t0),
            Next::Watch { expires_in, .. } if expires_in == s(15)
        ));
        let later = t0 + s(14);
        let again = Sighting::after(Some(first.clone()), record("other/1/a", 0), later);
        assert!(matches!(
            next(Some(&first), &again, later),
            Next::Watch { expires_in, .. } if expires_in == s(1)
        ));
        let expired = t0 + s(15);
        let last = Sighting::after(Some(again.clone()), record("other/1/a", 0), expired);
        assert_eq!(
            next(Some(&again), &last, expired),
            Next::Take {
                from: Some("other/1/a".into()),
                silent: s(15)
            }
        );
    }

    #[test]
    fn a_renewal_seen_means_a_live_holder_and_restarts_the_clock() {
        let t0 = Instant::now();
        let first = Sighting::after(None, record("other/1/a", 100), t0);
        let t1 = t0 + s(2);
        let renewed = Sighting::after(Some(first.clone()), record("other/1/a", 102), t1);
        assert_eq!(renewed.since, t1, "the clock starts again at the change");
        assert_eq!(
            next(Some(&first), &renewed, t1),
            Next::Refuse {
                holder: "other/1/a".into()
            }
        );
        // A different holder is a change too: someone took it over and is alive.
        let taken = Sighting::after(Some(first.clone()), record("third/2/b", 100), t1);
        assert_eq!(
            next(Some(&first), &taken, t1),
            Next::Refuse {
                holder: "third/2/b".into()
            }
        );
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let t0 = Instant::now();
        let released = Sighting::after(None, record("", 5), t0);
        assert_eq!(
            next(None, &released, t0),
            Next::Take {
                from: None,
                silent: Duration::ZERO
            }
        );
    }

    #[test]
    fn the_holders_own_lease_duration_counts() {
        let t0 = Instant::now();
        let mut long = record("other/1/a", 0);
        long.duration_seconds = Some(60);
        let first = Sighting::after(None, long.clone(), t0);
        let t1 = t0 + s(20);
        let again = Sighting::after(Some(first.clone()), long, t1);
        assert!(matches!(
            next(Some(&first), &again, t1),
            Next::Watch { expires_in, .. } if expires_in == s(40)
        ));
        let mut none = record("other/1/a", 0);
        none.duration_seconds = None;
        assert_eq!(none.duration(), LEASE_DURATION);
    }

    #[test]
    fn a_holder_writes_only_within_the_renew_deadline_of_its_last_renewal() {
        let t0 = Instant::now();
        assert!(renewed_recently(t0, t0 + s(9)));
        assert!(!renewed_recently(t0, t0 + RENEW_DEADLINE));
        // Stopped (SIGSTOP) for longer than the lease: stale however the wall clock moved.
        assert!(!renewed_recently(t0, t0 + s(60)));
        // The margin that keeps a holder from writing after a candidate may take over.
        assert!(RENEW_DEADLINE < LEASE_DURATION && RETRY_PERIOD * 2 < RENEW_DEADLINE);
    }

    #[test]
    fn a_renewal_request_ends_by_the_renew_deadline_but_gets_at_least_a_second() {
        let t0 = Instant::now();
        assert_eq!(request_budget(t0, t0 + s(2)), LEASE_REQUEST_TIMEOUT);
        assert_eq!(request_budget(t0, t0 + s(8)), s(2));
        assert_eq!(request_budget(t0, t0 + s(10)), s(1));
        assert_eq!(request_budget(t0, t0 + s(60)), s(1));
    }

    #[test]
    fn the_identity_names_host_and_pid_and_is_unique() {
        let id = holder_identity(Some("node-1\n"));
        let parts: Vec<&str> = id.split('/').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0], "node-1");
        assert_eq!(parts[1], std::process::id().to_string());
        assert_eq!(parts[2].len(), 12);
        assert_ne!(random_suffix(), random_suffix());
        for unusable in [None, Some(" "), Some("a/b")] {
            let id = holder_identity(unusable);
            assert!(id.starts_with("unknown-host/"), "{unusable:?}: {id}");
        }
    }
}
