//! `kubectl migrate controller`: migrations as Kubernetes resources ([`api`]), reconciled in a
//! management cluster by the same core the CLI runs.
//!
//! The shape of kube-rs's controller-rs: one [`reconcile`] of (resource, context) -> action and
//! one [`error_policy`]; a [`Context`] shared with the HTTP server of `/healthz`, `/readyz` and
//! `/metrics`. A migration's run is long (minutes per pod), so reconcile does not take the steps
//! itself: it keeps one *driver* per resource, a task running `statefulset::run_on` (the
//! CLI's own loop: observe, decide, one idempotent step, journal and lease in the member
//! clusters) and stops it at a safe point when the spec pauses it, changes, is deleted, or the
//! controller shuts down. The driver is the only writer of the status while it runs. The runs
//! share one connection and one set of watches per member cluster ([`members`]).
//!
//! `APICompatibility` resources are reconciled alongside (`checks`): each keeps one watch of
//! its members' CRDs running, with the engine of `schema-diff --watch`.
//!
//! - pure: [`decide`] (the spec's problems, the run's settings, the conditions) and [`compat`]
//!   (a compatibility check's spec and its conditions);
//! - I/O: this module (the Secrets, the drivers, status and Events), `checks` and `http`.
pub mod api;
mod checks;
pub mod compat;
pub mod decide;
mod http;
pub mod members;
pub mod spec;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as Finalizing, finalizer};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::{Mutex, mpsc};

use crate::cluster::{self, Cluster, Target};
use crate::error::{Error, Result};
use crate::statefulset::lease::{self, Held};
use crate::statefulset::{self, Event, Interrupt, Operator, Outcome, Plan, StepGate, StepPhase};
use api::{APICompatibility, Phase, StatefulSetMigration, StatefulSetMigrationStatus};
use decide::{Truth, Wanted};

/// Kept on each resource until the controller has stopped its run at a safe point.
pub const FINALIZER: &str = "kubectl-migrate.io/stop-safely";
/// The name the controller's Events and field manager carry.
pub const MANAGER: &str = "kubectl-migrate-controller";

/// What the controller runs with (the command layer resolves it from flags).
pub struct Options {
    /// The management cluster, where the resources are.
    pub management: Cluster,
    /// Where `/healthz`, `/readyz` and `/metrics` are served.
    pub probe_addr: SocketAddr,
    /// Only the resources of this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// The namespace of the leader-election Lease; `None`: no election (a single replica).
    pub leader_election: Option<String>,
}

/// The leader-election Lease's name, outside the migrations' `kubectl-migrate-<set>` (a
/// migration of a StatefulSet named `controller` into this namespace would share it), in the
/// `<id>.<group>` form controller-runtime's managers use.
pub const LEADER_LEASE: &str = "controller-leader.kubectl-migrate.io";

/// Shared by every reconcile and the HTTP server.
pub struct Context {
    client: Client,
    /// The notes published lately, by resource and reason (see [`publish`]).
    published: Mutex<HashMap<(String, String, String), std::time::Instant>>,
    /// This process as the migrations' lease holder.
    holder: String,
    drivers: Mutex<HashMap<String, Driver>>,
    /// The APICompatibility checks running, by resource.
    checks: checks::Checks,
    metrics: http::Metrics,
    /// The member clusters' connections and the watches the runs share.
    members: members::Members,
}

/// One resource's run in progress (or ended, with its outcome).
struct Driver {
    /// The resource generation the run was started for.
    generation: Option<i64>,
    stop: Interrupt,
    task: tokio::task::JoinHandle<()>,
    /// When the run ended (its status written): a failed run is started again no sooner than
    /// [`RETRY_PAUSE`] after, or the status write that ends it would start the next at once.
    ended_at: Arc<std::sync::OnceLock<std::time::Instant>>,
}

/// Runs the controller until SIGTERM or Ctrl-C, then stops every run at a safe point. With
/// leader election, it first waits to lead, and stops every run and ends (with an error: the
/// Deployment restarts it as a candidate) if it loses the lease, as client-go's does.
pub async fn run(options: Options) -> Result<()> {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok();
    let holder = format!(
        "{MANAGER}/{}",
        statefulset::holder_identity(host.as_deref())
    );
    let metrics = http::Metrics::default();
    let ready = http::serve(options.probe_addr, metrics.clone()).await?;
    let client = options.management.client.clone();
    let ctx = Arc::new(Context {
        published: Mutex::default(),
        client: client.clone(),
        holder,
        drivers: Mutex::default(),
        checks: checks::Checks::default(),
        metrics,
        members: members::Members::default(),
    });
    let migrations: Api<StatefulSetMigration> = match &options.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let compatibilities: Api<APICompatibility> = match &options.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    // A missing CRD is said up front, with the command that installs it.
    let listed = [
        (
            "StatefulSetMigrations",
            migrations.list(&Default::default()).await.err(),
        ),
        (
            "APICompatibilities",
            compatibilities.list(&Default::default()).await.err(),
        ),
    ];
    if let Some((what, Some(e))) = listed.into_iter().find(|(_, e)| e.is_some()) {
        return Err(Error::Failed {
            message: format!(
                "cannot list {what} in the management cluster: {}; install the CRDs with `kubectl migrate controller crds | kubectl apply -f -` and check the controller's RBAC (deploy/rbac.yaml)",
                cluster::describe_kube_error(&e)
            ),
        });
    }
    let counted = Arc::downgrade(&ctx);
    ctx.metrics.shared_watches.read_by(move || {
        counted
            .upgrade()
            .map_or(0, |ctx| ctx.members.watches() as i64)
    });
    crate::output::log(0, format!("controller {} started", ctx.holder));
    let shutdown = shutdown_signal();
    let leader = match &options.leader_election {
        None => None,
        Some(namespace) => {
            ready.standing_by();
            let mut waiting = shutdown.clone();
            tokio::select! {
                held = lead(&options.management, namespace, &ctx.holder) => Some(held?),
                () = waiting.wait() => return Ok(()),
            }
        }
    };
    ctx.metrics.leader.set(1);
    ready.leading();
    let mut stopping = shutdown.clone();
    let migrating = Controller::new(migrations, watcher::Config::default())
        .graceful_shutdown_on(async move { stopping.wait().await })
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let mut stopping = shutdown.clone();
    let checking = Controller::new(compatibilities, watcher::Config::default())
        .graceful_shutdown_on(async move { stopping.wait().await })
        .run(reconcile_check, error_policy, ctx.clone())
        .for_each(|_| async {});
    let controller = async {
        tokio::join!(migrating, checking);
    };
    let lost = async {
        match &leader {
            Some(held) => held.lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        () = controller => Ok(()),
        reason = lost => Err(Error::LeaseLost {
            reason: format!("this replica lost the leader election ({reason}); it stopped every run at a safe point and ends, so that the new leader goes on"),
        }),
    };
    crate::output::log(0, "stopping every run at a safe point");
    stop_all(&ctx).await;
    checks::stop_all(&ctx).await;
    ctx.metrics.leader.set(0);
    if let Some(held) = leader {
        // Given back at once, so that another replica leads without waiting for it to expire.
        held.release().await;
    }
    outcome
}

/// SIGTERM (as the kubelet stops a Pod) or Ctrl-C, seen by every clone.
#[derive(Clone)]
struct Shutdown(tokio::sync::watch::Receiver<bool>);

impl Shutdown {
    async fn wait(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

fn shutdown_signal() -> Shutdown {
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term = async {
            match &mut term {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
        let _ = tx.send(true);
    });
    Shutdown(rx)
}

/// Waits to lead: takes the leader-election Lease in `namespace` of the management cluster
/// with the migrations' own lease semantics (client-go's): a leader that renews it is left
/// alone, one that has not renewed it for the lease duration is taken over.
async fn lead(management: &Cluster, namespace: &str, holder: &str) -> Result<Held> {
    let mut told = false;
    let mut backoff = standby_backoff();
    loop {
        let mut note = |e: Event<'_>| {
            if let Event::Warning(w) = e {
                crate::output::log(0, w);
            }
        };
        match lease::acquire_named(management, namespace, LEADER_LEASE, holder, &mut note).await {
            Ok(held) => {
                crate::output::log(
                    0,
                    format!("leading: {holder} holds the leader-election Lease in {namespace}"),
                );
                return Ok(held);
            }
            // acquire() watched the leader renew it: look again.
            Err(Error::LeaseHeld { holder: leader, .. }) => {
                backoff = standby_backoff();
                if !told {
                    crate::output::log(
                        0,
                        format!(
                            "standing by: {leader} leads; this replica takes over if it stops renewing the leader-election Lease in {namespace}"
                        ),
                    );
                    told = true;
                }
            }
            Err(e) if decide::standby_retries(&e) => {
                let wait = backoff.next().unwrap_or(STANDBY_RETRY_MAX);
                crate::output::log(
                    0,
                    format!(
                        "cannot read the leader-election Lease in {namespace}: {}; trying again in {}",
                        e.report(),
                        crate::duration::humanize(wait)
                    ),
                );
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                return Err(Error::Failed {
                    message: format!(
                        "{}; a replica needs get, create, update and delete on Leases in namespace {namespace} of the management cluster: apply deploy/rbac.yaml (Role kubectl-migrate-leader-election) there, or name another with --leader-election-namespace",
                        e.report()
                    ),
                });
            }
        }
    }
}

/// The longest wait of a standby between two looks at a Lease it could not read.
const STANDBY_RETRY_MAX: Duration = Duration::from_secs(10);

/// The waits of a standby through an API server that restarts or does not answer.
fn standby_backoff() -> impl Iterator<Item = Duration> {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::default()
        .with_min_delay(lease::RETRY_PERIOD / 4)
        .with_max_delay(STANDBY_RETRY_MAX)
        .without_max_times()
        .build()
}

/// Stops every driver and waits for each to reach its safe point (the Lease given back).
async fn stop_all(ctx: &Context) {
    let drivers: Vec<Driver> = ctx.drivers.lock().await.drain().map(|(_, d)| d).collect();
    for d in &drivers {
        d.stop.stop_because("the controller is shutting down");
    }
    for d in drivers {
        let _ = d.task.await;
    }
}

/// What went wrong in one reconcile, in words (the resource's status says it too).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0}")]
    Kube(String),
}

fn key<K: ResourceExt>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

/// Level-based: read the resource (and its Secrets), decide, act, requeue.
pub async fn reconcile(
    obj: Arc<StatefulSetMigration>,
    ctx: Arc<Context>,
) -> std::result::Result<Action, ReconcileError> {
    ctx.metrics.reconciles.inc();
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<StatefulSetMigration> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Finalizing::Apply(obj) => apply(&obj, &ctx).await,
            Finalizing::Cleanup(obj) => cleanup(&obj, &ctx).await,
        }
    })
    .await
    .map_err(|e| ReconcileError::Kube(e.to_string()))
}

/// Level-based: keeps one check of the members running per resource and generation.
pub async fn reconcile_check(
    obj: Arc<APICompatibility>,
    ctx: Arc<Context>,
) -> std::result::Result<Action, ReconcileError> {
    ctx.metrics.reconciles.inc();
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<APICompatibility> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Finalizing::Apply(obj) => checks::apply(&obj, &ctx).await,
            Finalizing::Cleanup(obj) => checks::cleanup(&obj, &ctx).await,
        }
    })
    .await
    .map_err(|e| ReconcileError::Kube(e.to_string()))
}

/// Requeues a failed reconcile with a pause (the status already says why).
pub fn error_policy<K>(_obj: Arc<K>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_errors.inc();
    crate::output::log(0, format!("reconcile failed: {error}"));
    Action::requeue(Duration::from_secs(15))
}

async fn apply(
    obj: &StatefulSetMigration,
    ctx: &Arc<Context>,
) -> std::result::Result<Action, ReconcileError> {
    let namespace = obj.namespace().unwrap_or_default();
    let generation = obj.meta().generation;
    let spec = &obj.spec;
    // A run for an older spec stops first: the new spec may pause, roll back or end it.
    let running = {
        let mut drivers = ctx.drivers.lock().await;
        match drivers.get(&key(obj)) {
            Some(d) if d.generation != generation || spec.paused => drivers.remove(&key(obj)),
            Some(d) if !d.task.is_finished() => return Ok(Action::requeue(REQUEUE)),
            Some(_) => {
                // Ended: its status is written. A failure is retried after a pause; an end
                // stays until the spec changes.
                if decide::ended_for_good(obj.status.as_ref(), generation) {
                    return Ok(Action::await_change());
                }
                let ended_at = drivers[&key(obj)].ended_at.get().copied();
                if let Some(wait) = retry_wait(ended_at, std::time::Instant::now()) {
                    return Ok(Action::requeue(wait));
                }
                drivers.remove(&key(obj))
            }
            // A run that ended for good before this controller started (or led).
            None if decide::ended_for_good(obj.status.as_ref(), generation) => {
                crate::output::log(
                    1,
                    format!(
                        "{}: ended for good at generation {}; nothing to do until the spec changes",
                        key(obj),
                        generation.unwrap_or_default()
                    ),
                );
                return Ok(Action::await_change());
            }
            None => None,
        }
    };
    if let Some(old) = running {
        old.stop.stop_because(decide::stop_reason(spec, generation));
        let _ = old.task.await;
    }
    let problems = decide::problems(spec, &namespace);
    if !problems.is_empty() {
        let message = problems.join("; ");
        refuse(obj, ctx, "InvalidSpec", &message).await?;
        return Ok(Action::await_change());
    }
    if spec.paused {
        let message = format!(
            "paused by spec.paused; set it to false to go on, or take over with `{}`",
            decide::cli_command(spec, &namespace)
        );
        settle(obj, ctx, Phase::Paused, false, "Paused", &message, None).await?;
        return Ok(Action::await_change());
    }
    let (targets, identities) = match read_kubeconfigs(obj, ctx).await {
        Ok(t) => t,
        Err(message) => {
            refuse(obj, ctx, "KubeconfigUnavailable", &message).await?;
            // The Secret may be created after the resource.
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
    };
    let settings = decide::settings(spec, &namespace, targets, &ctx.holder);
    start(obj, ctx, settings, identities).await;
    Ok(Action::requeue(REQUEUE))
}

/// How often a running migration's resource is looked at again.
const REQUEUE: Duration = Duration::from_secs(30);

/// How long after a failed run the next one starts.
const RETRY_PAUSE: Duration = Duration::from_secs(15);

/// How much longer a failed run's retry waits, if at all (a run that never recorded its end
/// is retried at once).
fn retry_wait(ended_at: Option<std::time::Instant>, now: std::time::Instant) -> Option<Duration> {
    let since = now.saturating_duration_since(ended_at?);
    (since < RETRY_PAUSE).then(|| RETRY_PAUSE - since)
}

/// Says why the resource does not run (a spec or Secret problem, or a failed run): a Warning
/// Event and Ready/Progressing False with the same reason, phase Failed, the error kept.
async fn refuse(
    obj: &StatefulSetMigration,
    ctx: &Context,
    reason: &'static str,
    message: &str,
) -> std::result::Result<(), ReconcileError> {
    publish(ctx, obj, EventType::Warning, reason, message).await;
    settle(
        obj,
        ctx,
        Phase::Failed,
        false,
        reason,
        message,
        Some(message.to_string()),
    )
    .await
}

/// Where a run ended, or why none runs: the phase, Ready as `ready` and Progressing False, both
/// with `reason` and `message`, and the last error.
async fn settle(
    obj: &StatefulSetMigration,
    ctx: &Context,
    phase: Phase,
    ready: bool,
    reason: &'static str,
    message: &str,
    last_error: Option<String>,
) -> std::result::Result<(), ReconcileError> {
    let condition = |type_, status: bool| Wanted {
        type_,
        status: status.into(),
        reason,
        message: message.to_string(),
    };
    write_status(
        obj,
        ctx,
        Some(phase),
        &[condition("Ready", ready), condition("Progressing", false)],
        last_error,
    )
    .await
}

/// Both members' kubeconfigs, read from the Secrets the spec names in its own namespace (and
/// no others), with the members' identities (see [`members::identity`]): a problem in words,
/// which never repeats a Secret's contents.
async fn read_kubeconfigs(
    obj: &StatefulSetMigration,
    ctx: &Context,
) -> std::result::Result<((Target, Target), [String; 2]), String> {
    let namespace = obj.namespace().unwrap_or_default();
    let mut targets = Vec::new();
    let mut identities = Vec::new();
    for (side, cluster) in [
        ("source", &obj.spec.source),
        ("destination", &obj.spec.destination),
    ] {
        let (name, _, key) = cluster.secret();
        let what = format!("{side} cluster");
        let (text, shown) = read_kubeconfig_text(ctx, &namespace, &what, &name, key).await?;
        targets.push(resolve_kubeconfig(&text, &what, &shown, key)?);
        identities.push(members::identity(
            &format!("{namespace}/{name}/{key}"),
            &text,
        ));
    }
    let destination = targets.pop().expect("two targets");
    let source = targets.pop().expect("two targets");
    let identities = [identities.remove(0), identities.remove(0)];
    Ok(((source, destination), identities))
}

/// The kubeconfig `text` of `what`, read from `shown` (the Secret) under `key`.
fn resolve_kubeconfig(
    text: &str,
    what: &str,
    shown: &str,
    key: &str,
) -> std::result::Result<Target, String> {
    cluster::resolve_text(text, format!("{shown} key {key}"))
        .map_err(|e| format!("the {what}'s kubeconfig in {shown}: {}", e.report()))
}

/// The kubeconfig's text in Secret `name` of `namespace` under `key`, and the Secret as
/// messages name it: a problem in words, which never repeats the Secret's contents.
async fn read_kubeconfig_text(
    ctx: &Context,
    namespace: &str,
    what: &str,
    name: &str,
    key: &str,
) -> std::result::Result<(String, String), String> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    let shown = format!("Secret {namespace}/{name}");
    let secret = match secrets.get_opt(name).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Err(format!(
                "the {what}'s kubeconfig Secret {name} does not exist in namespace {namespace}; create it with `kubectl create secret generic {name} -n {namespace} --from-file={key}=<kubeconfig>`"
            ));
        }
        Err(e) => {
            return Err(format!(
                "cannot read the {what}'s {shown}: {}",
                cluster::describe_kube_error(&e)
            ));
        }
    };
    let text = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned());
    let Some(text) = text else {
        return Err(format!(
            "{shown} has no key {key}; the {what}'s kubeconfig goes under {key}"
        ));
    };
    Ok((text, shown))
}

/// The kubeconfig of `what` (the source cluster, member b) in Secret `name` of `namespace`,
/// under `key`, and a hash of its text: equal hashes, the same cluster
/// and credentials (a Secret whose kubeconfig is replaced gets a new hash).
async fn read_kubeconfig_hashed(
    ctx: &Context,
    namespace: &str,
    what: &str,
    name: &str,
    key: &str,
) -> std::result::Result<(Target, u64), String> {
    let (text, shown) = read_kubeconfig_text(ctx, namespace, what, name, key).await?;
    let target = resolve_kubeconfig(&text, what, &shown, key)?;
    Ok((target, members::kubeconfig_hash(&text)))
}

/// Starts the resource's driver: the run, and the status and Events it tells.
async fn start(
    obj: &StatefulSetMigration,
    ctx: &Arc<Context>,
    settings: statefulset::Settings,
    identities: [String; 2],
) {
    let stop = Interrupt::default();
    let (tx, rx) = mpsc::unbounded_channel();
    let key = key(obj);
    let obj = obj.clone();
    let ctx2 = ctx.clone();
    let stop2 = stop.clone();
    let generation = obj.meta().generation;
    // A task like any other (boxed: its future is large). A thread per run gave each run an
    // allocator heap of its own, and 50 runs held several times their live memory.
    let ended_at = Arc::new(std::sync::OnceLock::new());
    let ended_at2 = ended_at.clone();
    let task = tokio::spawn(Box::pin(async move {
        let direction = if obj.spec.rollback {
            Phase::RollingBack
        } else {
            Phase::Migrating
        };
        let message = format!(
            "{} StatefulSet {} from {} to {}",
            if obj.spec.rollback {
                "rolling back"
            } else {
                "moving"
            },
            obj.spec.stateful_set_name,
            obj.spec.source.name,
            obj.spec.destination.name
        );
        let _ = write_status(
            &obj,
            &ctx2,
            Some(direction),
            &[
                Wanted {
                    type_: "Progressing",
                    status: Truth::True,
                    reason: "Running",
                    message: message.clone(),
                },
                Wanted {
                    type_: "Ready",
                    status: Truth::False,
                    reason: "Running",
                    message: message.clone(),
                },
            ],
            None,
        )
        .await;
        publish(&ctx2, &obj, EventType::Normal, "Started", &message).await;
        let tell = tokio::spawn(tell(obj.clone(), ctx2.clone(), rx));
        let mut operator = Driving {
            tx,
            resume: decide::cli_command(&obj.spec, &obj.namespace().unwrap_or_default()),
            spec: obj.spec.clone(),
            moved: 0,
            limit_reached: None,
        };
        let result = match ctx2.members.on_hub(&settings, &identities).await {
            Ok(on_hub) => {
                let run = statefulset::run_on(&settings, &mut operator, stop2, Some(on_hub));
                Box::pin(run).await
            }
            Err(e) => Err(e),
        };
        let limit_reached = operator.limit_reached;
        drop(operator);
        let _ = tell.await;
        ended(&obj, &ctx2, result, limit_reached).await;
        let _ = ended_at2.set(std::time::Instant::now());
    }));
    ctx.drivers.lock().await.insert(
        key,
        Driver {
            generation,
            stop,
            task,
            ended_at,
        },
    );
}

/// The status and Events after a run ended: done, waiting at spec.maxOrdinals (`limit_reached`:
/// the ordinals moved and the limit), stopped at a safe point, or failed.
async fn ended(
    obj: &StatefulSetMigration,
    ctx: &Context,
    result: Result<Outcome>,
    limit_reached: Option<(u64, u64)>,
) {
    let namespace = obj.namespace().unwrap_or_default();
    let take_over = decide::cli_command(&obj.spec, &namespace);
    if let (Err(Error::Stopped { .. }), Some((moved, limit))) = (&result, limit_reached) {
        let reason = "MaxOrdinalsReached";
        let message = decide::limit_message(
            &obj.name_any(),
            &namespace,
            &obj.spec.stateful_set_name,
            moved,
            limit,
        );
        publish(ctx, obj, EventType::Normal, reason, &message).await;
        let _ = settle(obj, ctx, Phase::Paused, false, reason, &message, None).await;
        return;
    }
    match result {
        Ok(_) => {
            let (phase, message) = if obj.spec.rollback {
                (
                    Phase::RolledBack,
                    format!(
                        "every ordinal of {} runs in {} again",
                        obj.spec.stateful_set_name, obj.spec.source.name
                    ),
                )
            } else {
                (
                    Phase::Completed,
                    format!(
                        "every ordinal of {} runs in {}; clean up the source with `{take_over} --cleanup`",
                        obj.spec.stateful_set_name, obj.spec.destination.name
                    ),
                )
            };
            let reason = if obj.spec.rollback {
                "RolledBack"
            } else {
                "Completed"
            };
            publish(ctx, obj, EventType::Normal, reason, &message).await;
            let _ = settle(obj, ctx, phase, true, reason, &message, None).await;
        }
        Err(Error::Stopped { reason, .. }) => {
            // Paused, changed, deleted or shut down: the next reconcile (if any) says which.
            let message = format!("stopped: {reason}; the controller or `{take_over}` resumes it");
            publish(ctx, obj, EventType::Normal, "Stopped", &message).await;
        }
        Err(e) => {
            let reason = match &e {
                Error::PreflightFailed { .. } => "PreflightFailed",
                Error::LeaseHeld { .. } => "LeaseHeld",
                _ => "RunFailed",
            };
            let message = format!("{}; the controller tries again", e.report());
            ctx.metrics.run_failures.inc();
            // The run ended; a status that cannot be written now is written by the next one.
            let _ = refuse(obj, ctx, reason, &message).await;
        }
    }
}

/// Turns the run's events into status updates and Events.
async fn tell(obj: StatefulSetMigration, ctx: Arc<Context>, mut rx: mpsc::UnboundedReceiver<Told>) {
    while let Some(told) = rx.recv().await {
        let status = match told {
            Told::Progress { moved, total } => serde_json::json!({
                "ordinalsMoved": moved,
                "ordinalsLeft": total.saturating_sub(moved),
                "leaseHolder": ctx.holder,
            }),
            Told::Step {
                started: true,
                description,
            } => {
                publish(&ctx, &obj, EventType::Normal, "Step", &description).await;
                serde_json::json!({ "currentStep": description })
            }
            Told::Step {
                started: false,
                description,
            } => {
                publish(&ctx, &obj, EventType::Warning, "StepFailed", &description).await;
                serde_json::json!({ "lastError": description })
            }
            Told::Warning(w) => {
                publish(&ctx, &obj, EventType::Warning, "Warning", &w).await;
                continue;
            }
        };
        let _ = patch_status(&obj, &ctx, status).await;
    }
}

/// What the run told, for [`tell`].
enum Told {
    Progress { moved: u64, total: u64 },
    Step { started: bool, description: String },
    Warning(String),
}

/// The controller as the run's operator: the resource is the confirmation; what happens goes
/// to the status and Events.
struct Driving {
    tx: mpsc::UnboundedSender<Told>,
    resume: String,
    spec: api::StatefulSetMigrationSpec,
    /// Ordinals verified in the destination, as last told.
    moved: u64,
    /// Set when the run stopped at spec.maxOrdinals: (moved, limit).
    limit_reached: Option<(u64, u64)>,
}

impl Operator for Driving {
    fn confirm(&mut self, _action: &str, _plan: Option<&Plan>) -> Result<()> {
        Ok(())
    }

    /// Asked before each move when spec.maxOrdinals is set (see `decide::settings`).
    fn before_move(&mut self, _description: &str, _moves: usize) -> Result<StepGate> {
        match decide::limit_reached(&self.spec, self.moved) {
            None => Ok(StepGate::Go),
            Some(limit) => {
                self.limit_reached = Some((self.moved, limit));
                Err(Error::Stopped {
                    reason: format!("spec.maxOrdinals ({limit}) reached"),
                    resume: self.resume.clone(),
                })
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        let told = match event {
            Event::Progress { moved, total } => {
                self.moved = moved;
                Told::Progress { moved, total }
            }
            Event::Step(s) if s.phase == StepPhase::Started => Told::Step {
                started: true,
                description: s.description.to_string(),
            },
            Event::Step(s) if s.phase == StepPhase::Failed => Told::Step {
                started: false,
                description: match &s.error {
                    Some(e) => format!("{}: {e}", s.description),
                    None => s.description.to_string(),
                },
            },
            Event::Warning(w) => Told::Warning(w),
            Event::Detail(level, line) => {
                crate::output::log(level, line);
                return;
            }
            _ => return,
        };
        let _ = self.tx.send(told);
    }

    fn resume_command(&self) -> String {
        self.resume.clone()
    }
}

/// Deletion: stop the run at a safe point, leaving the journal and the Lease's expiry to
/// whoever resumes or rolls back.
async fn cleanup(
    obj: &StatefulSetMigration,
    ctx: &Context,
) -> std::result::Result<Action, ReconcileError> {
    let driver = ctx.drivers.lock().await.remove(&key(obj));
    if let Some(d) = driver {
        d.stop.stop_because("the StatefulSetMigration was deleted");
        let _ = d.task.await;
    }
    let phase = obj.status.as_ref().and_then(|s| s.phase);
    if !matches!(phase, Some(Phase::Completed | Phase::RolledBack) | None) {
        let message = format!(
            "deleted mid-way: stopped at a safe point; resume or roll back with `{}` (add --rollback)",
            decide::cli_command(&obj.spec, &obj.namespace().unwrap_or_default())
        );
        publish(ctx, obj, EventType::Normal, "Stopped", &message).await;
    }
    Ok(Action::await_change())
}

/// Merges `status` into the resource's status subresource.
async fn patch_status<K>(
    obj: &K,
    ctx: &Context,
    status: serde_json::Value,
) -> std::result::Result<(), ReconcileError>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    api.patch_status(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": status })),
    )
    .await
    .map(|_| ())
    .map_err(|e| {
        ReconcileError::Kube(format!(
            "update the status of {}: {}",
            key(obj),
            cluster::describe_kube_error(&e)
        ))
    })
}

/// Writes the phase, the conditions (against the latest status) and the last error.
async fn write_status(
    obj: &StatefulSetMigration,
    ctx: &Context,
    phase: Option<Phase>,
    wanted: &[Wanted],
    last_error: Option<String>,
) -> std::result::Result<(), ReconcileError> {
    let api: Api<StatefulSetMigration> =
        Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    // The driver may have written since `obj` was read: the conditions build on the latest.
    let latest = api.get_opt(&obj.name_any()).await.ok().flatten();
    let previous = latest
        .and_then(|o| o.status)
        .unwrap_or_else(StatefulSetMigrationStatus::default);
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let conditions = decide::conditions(&previous.conditions, wanted, obj.meta().generation, &now);
    if let Some(p) = phase {
        ctx.metrics.transition(p);
    }
    patch_status(
        obj,
        ctx,
        serde_json::json!({
            "observedGeneration": obj.meta().generation,
            "phase": phase,
            "conditions": conditions,
            "lastError": last_error,
        }),
    )
    .await
}

/// A note repeated on one resource within this time is not written again.
const EVENT_REPEAT: Duration = Duration::from_secs(600);
/// The longest note the API server takes (events.k8s.io/v1).
const NOTE_LIMIT: usize = 1024;

/// Publishes an Event on the resource; one that cannot be written is logged, not fatal.
///
/// Not through kube's `Recorder`: it folds every later Event of the same reason into the first
/// one's series, keeping the first note, so the steps' Events would all tell the first step.
/// Here each distinct note is an Event; the same note again within [`EVENT_REPEAT`] (a run
/// that keeps failing alike) is left out.
async fn publish<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    obj: &K,
    type_: EventType,
    reason: &str,
    note: &str,
) {
    let now = std::time::Instant::now();
    {
        let mut published = ctx.published.lock().await;
        published.retain(|_, at| now.duration_since(*at) < EVENT_REPEAT);
        let seen = (key(obj), reason.to_string(), note.to_string());
        if published.insert(seen, now).is_some() {
            return;
        }
    }
    record(ctx, obj, type_, reason, note).await;
}

/// Records an Event on the resource, even one like the last (a condition that flips back and
/// forth says so each time); one that cannot be written is logged, not fatal.
async fn record<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    obj: &K,
    type_: EventType,
    reason: &str,
    note: &str,
) {
    let namespace = obj.namespace().unwrap_or_default();
    let stamp = k8s_openapi::jiff::Timestamp::now();
    let event = k8s_openapi::api::events::v1::Event {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{}.{:x}", obj.name_any(), stamp.as_nanosecond())),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        event_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            stamp,
        )),
        action: Some("Reconcile".into()),
        reason: Some(reason.into()),
        note: Some(truncate(note, NOTE_LIMIT).into()),
        regarding: Some(obj.object_ref(&())),
        reporting_controller: Some(MANAGER.into()),
        reporting_instance: Some(truncate(&ctx.holder, 128).into()),
        type_: Some(
            match type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        ..Default::default()
    };
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(ctx.client.clone(), &namespace);
    if let Err(e) = events.create(&PostParams::default(), &event).await {
        crate::output::log(
            0,
            format!(
                "could not record an Event on {}: {}",
                key(obj),
                cluster::describe_kube_error(&e)
            ),
        );
    }
}

/// `text` cut to at most `limit` bytes, on a character boundary.
fn truncate(text: &str, limit: usize) -> &str {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn no_migration_shares_the_leader_election_lease() {
        let migrations = lease::migration_lease_name("");
        assert!(!LEADER_LEASE.starts_with(&migrations), "{LEADER_LEASE}");
        assert_ne!(lease::migration_lease_name("controller"), LEADER_LEASE);
    }

    #[test]
    fn notes_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abc", 2), "ab");
        assert_eq!(truncate("aé", 2), "a");
    }

    #[test]
    fn a_failed_run_is_retried_only_after_the_pause() {
        let ended = Instant::now();
        assert_eq!(retry_wait(Some(ended), ended), Some(RETRY_PAUSE));
        let later = ended + Duration::from_secs(5);
        assert_eq!(
            retry_wait(Some(ended), later),
            Some(RETRY_PAUSE - Duration::from_secs(5))
        );
        assert_eq!(retry_wait(Some(ended), ended + RETRY_PAUSE), None);
        assert_eq!(retry_wait(None, ended), None);
    }
}
