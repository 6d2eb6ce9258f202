//! The I/O of [`APICompatibility`] resources: per resource one *check*, a task that reads the
//! members' kubeconfig Secrets and runs `schema::watch::run_shared` (the engine of
//! `schema-diff --watch`: the debounce, the same comparison) with a [`Listener`] that turns
//! what it sees into the status, through [`compat::verdict`]. The members are shared: one
//! client, one CRD watcher and one probe per member cluster ([`Member`]), followed by every
//! check that names it. A member that cannot be reached at the start is retried with backoff;
//! one that goes away later is the engine's `source-lost`, and its return `source-back`.
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use tokio::sync::{mpsc, watch};

use super::api::{APICompatibility, APICompatibilityStatus, LastChange, MemberStatus};
use super::compat::{self, Verdict};
use super::decide::{self, Truth, Wanted};
use super::{Context, ReconcileError, key, patch_status, publish, read_kubeconfig_hashed, record};
use crate::cluster::{Cluster, describe_kube_error};
use crate::schema::FailOn;
use crate::schema::report::Report;
use crate::schema::watch::{
    self as engine, ApiState, ApiUpdate, EventType as Seen, Flow, Listener, Note, WatchEvent,
};
use crate::statefulset::FIELD_MANAGER;

/// One resource's check in progress.
pub(super) struct Check {
    generation: Option<i64>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Check {
    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The checks running, by resource, and the member clusters they follow.
#[derive(Default)]
pub(super) struct Checks {
    running: tokio::sync::Mutex<HashMap<String, Check>>,
    members: Members,
}

/// A member cluster as every check naming it follows it: one client, one CRD watch and one
/// probe, whatever number of checks name it. Held by those checks only: it stops (its tasks
/// end) when the last check that names it stops or stops naming it.
pub(super) struct Member {
    cluster: Cluster,
    target: crate::cluster::Target,
    feed: engine::SharedFeed,
}

/// Which member clusters are one: the same kubeconfig in the same Secret. A Secret whose
/// kubeconfig changes is a new member; checks still on the old one keep it until they restart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MemberKey {
    namespace: String,
    secret: String,
    key: String,
    kubeconfig: u64,
}

/// The members followed now, each behind its own lock so that two checks naming the same one
/// connect once, and one member slow to answer holds up no other.
#[derive(Default)]
struct Members(std::sync::Mutex<HashMap<MemberKey, Arc<tokio::sync::Mutex<Weak<Member>>>>>);

impl Members {
    /// The member for `key`: the one followed now, else `connect()`ed and followed from now.
    async fn get_or_connect<F>(&self, key: MemberKey, connect: F) -> Result<Arc<Member>, String>
    where
        F: Future<Output = Result<Member, String>>,
    {
        let slot = {
            let mut slots = self.0.lock().unwrap_or_else(|e| e.into_inner());
            // Members no check follows any more (their slots idle) are forgotten.
            slots.retain(|_, slot| {
                Arc::strong_count(slot) > 1 || slot.try_lock().is_ok_and(|m| m.strong_count() > 0)
            });
            slots.entry(key).or_default().clone()
        };
        let mut member = slot.lock().await;
        if let Some(m) = member.upgrade() {
            return Ok(m);
        }
        let m = Arc::new(connect.await?);
        *member = Arc::downgrade(&m);
        Ok(m)
    }
}

/// Stops every check (the controller is shutting down or lost the lead).
pub(super) async fn stop_all(ctx: &Context) {
    let checks: Vec<Check> = ctx
        .checks
        .running
        .lock()
        .await
        .drain()
        .map(|(_, c)| c)
        .collect();
    for c in checks {
        c.stop().await;
    }
}

/// Starts the resource's check unless one runs for its generation; a spec with problems says
/// them in `Compatible` and starts none.
pub(super) async fn apply(
    obj: &APICompatibility,
    ctx: &Arc<Context>,
) -> std::result::Result<Action, ReconcileError> {
    let generation = obj.meta().generation;
    let old = {
        let mut checks = ctx.checks.running.lock().await;
        match checks.get(&key(obj)) {
            Some(c) if c.generation == generation && !c.task.is_finished() => {
                return Ok(Action::await_change());
            }
            _ => checks.remove(&key(obj)),
        }
    };
    if let Some(old) = old {
        old.stop().await;
    }
    let namespace = obj.namespace().unwrap_or_default();
    let problems = compat::problems(&obj.spec, &namespace);
    if !problems.is_empty() {
        let message = problems.join("; ");
        publish(ctx, obj, EventType::Warning, "InvalidSpec", &message).await;
        let wanted = Wanted {
            type_: "Compatible",
            status: Truth::False,
            reason: "InvalidSpec",
            message,
        };
        write(obj, ctx, &[wanted], serde_json::json!({})).await?;
        return Ok(Action::await_change());
    }
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(check(obj.clone(), ctx.clone(), stopped));
    ctx.checks.running.lock().await.insert(
        key(obj),
        Check {
            generation,
            stop,
            task,
        },
    );
    Ok(Action::await_change())
}

/// Deletion: the check stops; nothing is left behind in the members.
pub(super) async fn cleanup(
    obj: &APICompatibility,
    ctx: &Context,
) -> std::result::Result<Action, ReconcileError> {
    let check = ctx.checks.running.lock().await.remove(&key(obj));
    if let Some(c) = check {
        c.stop().await;
    }
    Ok(Action::await_change())
}

/// The longest wait between two attempts to reach the members.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Compares the members until `stopped`: connects (again, with backoff, while one cannot be
/// reached or its first list fails) and runs the watch engine.
async fn check(obj: APICompatibility, ctx: Arc<Context>, mut stopped: watch::Receiver<bool>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_verdicts(obj.clone(), ctx.clone(), rx));
    let spec = &obj.spec;
    let names: Vec<String> = spec.members.iter().map(|m| m.name.clone()).collect();
    let baseline = spec.baseline.clone().unwrap_or_else(|| names[0].clone());
    let fail_on = FailOn::parse(&spec.fail_on).unwrap_or_default();
    let mut backoff = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_secs(1))
        .with_max_delay(RETRY_MAX)
        .without_max_times()
        .build();
    let mut apis: Option<BTreeMap<String, ApiState>> = None;
    let mut compared_at: Option<String> = None;
    let mut last_change = None;
    loop {
        let (up, down) = connect(&obj, &ctx).await;
        let members = statuses(&names, &down);
        // The members as they answer now, once the watch has ended (or could not start).
        let members = if down.is_empty() {
            let request = compat::request(spec, up.iter().map(|(_, m)| m.target.clone()).collect());
            // Each member under the name this check gives it, on the feed every check shares.
            let clusters: Vec<Cluster> = up
                .iter()
                .map(|(name, m)| {
                    let mut cluster = m.cluster.clone();
                    cluster.context = name.clone();
                    cluster
                })
                .collect();
            let feeds: Vec<&engine::SharedFeed> = up.iter().map(|(_, m)| &m.feed).collect();
            let settings = engine::Settings {
                debounce: compat::DEBOUNCE,
                show_informational: false,
            };
            let mut listener = Checker {
                apis: apis.take().unwrap_or_default(),
                ready: false,
                members,
                fail_on: fail_on.clone(),
                baseline: baseline.clone(),
                keep_lcd: spec.lcd_config_map.is_some(),
                compared_at: compared_at.take(),
                last_change: last_change.take(),
                tx: tx.clone(),
            };
            let mut stop = stopped.clone();
            let ended = engine::run_shared(
                &clusters,
                &feeds,
                &request,
                &settings,
                &mut listener,
                async move {
                    let _ = stop.wait_for(|s| *s).await;
                },
            )
            .await;
            if listener.ready {
                apis = Some(listener.apis);
            }
            compared_at = listener.compared_at;
            last_change = listener.last_change;
            match ended {
                Ok(_) => break,
                Err(e) => {
                    // A member's first list failed: it went away (its probe says so), or
                    // refuses the list (said on every member). Tried again below.
                    let why = e.report();
                    crate::output::log(0, format!("{}: {why}", key(&obj)));
                    let mut down = probe_all(&clusters).await;
                    if down.is_empty() {
                        down = names.iter().map(|n| (n.clone(), why.clone())).collect();
                    }
                    statuses(&names, &down)
                }
            }
        } else {
            members
        };
        let mut verdict = compat::verdict(
            apis.as_ref(),
            &fail_on,
            &baseline,
            members,
            compared_at.as_deref(),
        );
        verdict.last_change = last_change.clone();
        let _ = tx.send(verdict);
        let wait = backoff.next().unwrap_or(RETRY_MAX);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stopped.wait_for(|s| *s) => break,
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// The members that do not answer now, with why.
async fn probe_all(clusters: &[Cluster]) -> HashMap<String, String> {
    let probes = clusters.iter().map(|c| async move {
        let answer =
            tokio::time::timeout(compat::PROBE_TIMEOUT, c.client.apiserver_version()).await;
        let why = match answer {
            Ok(Ok(_)) => return None,
            Ok(Err(e)) => describe_kube_error(&e),
            Err(_) => format!(
                "no answer within {}",
                crate::duration::humanize(compat::PROBE_TIMEOUT)
            ),
        };
        Some((c.context.clone(), why))
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The members, in spec order, `down` ones unreachable with their reason.
fn statuses(names: &[String], down: &HashMap<String, String>) -> Vec<MemberStatus> {
    names
        .iter()
        .map(|n| MemberStatus {
            name: n.clone(),
            reachable: !down.contains_key(n),
            message: down.get(n).cloned(),
        })
        .collect()
}

/// Every member (with the name the spec gives it), followed by this check along with every
/// other that names it, or why each that failed did.
async fn connect(
    obj: &APICompatibility,
    ctx: &Context,
) -> (Vec<(String, Arc<Member>)>, HashMap<String, String>) {
    let namespace = obj.namespace().unwrap_or_default();
    let namespace = namespace.as_str();
    let attempts = obj.spec.members.iter().map(|m| async move {
        let (secret, _, key) = m.secret();
        let what = format!("member {}", m.name);
        let (target, kubeconfig) =
            read_kubeconfig_hashed(ctx, namespace, &what, &secret, key).await?;
        let id = MemberKey {
            namespace: namespace.to_string(),
            secret,
            key: key.to_string(),
            kubeconfig,
        };
        let member = ctx.checks.members.get_or_connect(id, async move {
            // Watches are long requests: no read timeout; outages are found by the probe.
            let cluster = target
                .connect(Duration::ZERO)
                .await
                .map_err(|e| e.report())?;
            let feed = engine::SharedFeed::start(
                &cluster,
                crate::schema::load::CRD_PAGE_SIZE,
                compat::PROBE_TIMEOUT,
            );
            Ok(Member {
                cluster,
                target,
                feed,
            })
        });
        Ok::<_, String>((m.name.clone(), member.await?))
    });
    let mut up = Vec::new();
    let mut down = HashMap::new();
    for (m, result) in obj
        .spec
        .members
        .iter()
        .zip(futures::future::join_all(attempts).await)
    {
        match result {
            Ok(c) => up.push(c),
            Err(why) => {
                down.insert(m.name.clone(), why);
            }
        }
    }
    (up, down)
}

/// The watch's listener: keeps each API's state and the members' reachability, and sends a
/// verdict once the first lists are in and after each change or outage.
struct Checker {
    apis: BTreeMap<String, ApiState>,
    ready: bool,
    members: Vec<MemberStatus>,
    fail_on: FailOn,
    baseline: String,
    /// Whether the verdicts carry the LCD (spec.lcdConfigMap names a ConfigMap).
    keep_lcd: bool,
    /// When the APIs were last compared with every member answering.
    compared_at: Option<String>,
    /// The last change of a compared API seen (kept while the check reconnects).
    last_change: Option<LastChange>,
    tx: mpsc::UnboundedSender<Verdict>,
}

impl Checker {
    fn tell(&mut self) {
        let all_answer = self.members.iter().all(|m| m.reachable);
        if all_answer {
            self.compared_at = Some(engine::timestamp());
        }
        let mut verdict = compat::verdict(
            Some(&self.apis),
            &self.fail_on,
            &self.baseline,
            self.members.clone(),
            self.compared_at.as_deref(),
        );
        verdict.last_change = self.last_change.clone();
        if self.keep_lcd && all_answer {
            verdict.lcd = Some(compat::lcd_data(&self.apis));
        }
        let _ = self.tx.send(verdict);
    }
}

impl Listener for Checker {
    fn api(&mut self, update: ApiUpdate<'_>) -> crate::error::Result<()> {
        match update.state {
            Some(state) => self.apis.insert(update.name.to_string(), state.clone()),
            None => self.apis.remove(update.name),
        };
        Ok(())
    }

    fn ready(&mut self, _report: &Report) -> crate::error::Result<()> {
        self.ready = true;
        self.tell();
        Ok(())
    }

    fn event(&mut self, event: &WatchEvent) -> crate::error::Result<Flow> {
        if let Some(change) = compat::last_change(event) {
            self.last_change = Some(change);
        }
        if matches!(event.kind, Seen::SourceLost | Seen::SourceBack) {
            let lost = event.kind == Seen::SourceLost;
            for m in self
                .members
                .iter_mut()
                .filter(|m| event.sources.contains(&m.name))
            {
                m.reachable = !lost;
                m.message =
                    lost.then(|| event.message.clone().unwrap_or_else(|| "no answer".into()));
            }
        }
        self.tell();
        Ok(Flow::Continue)
    }

    fn note(&mut self, note: Note) {
        match note {
            Note::Warning(w) => crate::output::log(0, w),
            Note::Detail(level, line) => crate::output::log(level, line),
        }
    }
}

/// How long an LCD ConfigMap that could not be written waits to be tried again, unless a new
/// verdict comes first.
const LCD_RETRY: Duration = Duration::from_secs(15);

/// Writes each verdict that differs from the last one written, in order (a flip and its return
/// are both written, however close), with an Event on each condition that flips; and its LCD
/// to spec.lcdConfigMap, again after [`LCD_RETRY`] while that fails.
async fn write_verdicts(
    obj: APICompatibility,
    ctx: Arc<Context>,
    mut rx: mpsc::UnboundedReceiver<Verdict>,
) {
    let mut last: Option<Verdict> = None;
    let mut lcd_failed = false;
    loop {
        let next = if lcd_failed {
            match tokio::time::timeout(LCD_RETRY, rx.recv()).await {
                Ok(next) => next,
                // Nothing new meanwhile: the last verdict again, for its LCD.
                Err(_) => last.take(),
            }
        } else {
            rx.recv().await
        };
        let Some(verdict) = next else { break };
        if !lcd_failed && last.as_ref() == Some(&verdict) {
            continue;
        }
        let mut wanted: Vec<Wanted> = verdict
            .compatible
            .iter()
            .chain([&verdict.reachable])
            .cloned()
            .collect();
        lcd_failed = false;
        if let (Some(name), Some(data)) = (&obj.spec.lcd_config_map, &verdict.lcd) {
            let apis = verdict.apis.unwrap_or_default() as usize;
            let written = write_lcd(&obj, &ctx, name, data, apis).await;
            lcd_failed = written.status != Truth::True;
            wanted.push(written);
        }
        let mut rest = serde_json::json!({ "members": verdict.members });
        if let Some(n) = verdict.incompatible_findings {
            rest["incompatibleFindings"] = n.into();
        }
        if let Some(n) = verdict.apis {
            rest["apis"] = n.into();
        }
        if let Some(change) = &verdict.last_change {
            rest["lastChange"] = serde_json::json!(change);
        }
        if let Err(e) = write(&obj, &ctx, &wanted, rest).await {
            crate::output::log(0, e.to_string());
        }
        last = Some(verdict);
    }
}

/// Keeps ConfigMap `name` of the resource's namespace holding `data` (the LCD of `apis` APIs),
/// owned by the resource, unless it exists and is not the resource's; says which in
/// `LCDWritten`.
async fn write_lcd(
    obj: &APICompatibility,
    ctx: &Context,
    name: &str,
    data: &BTreeMap<String, String>,
    apis: usize,
) -> Wanted {
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.get_opt(name).await {
        Err(e) => return compat::lcd_not_written(name, &describe_kube_error(&e)),
        Ok(Some(found))
            if !found
                .owner_references()
                .iter()
                .any(|o| Some(&o.uid) == obj.uid().as_ref()) =>
        {
            let owners: Vec<String> = found
                .owner_references()
                .iter()
                .map(|o| format!("{}/{}", o.kind, o.name))
                .collect();
            return compat::lcd_config_map_not_ours(name, &owners);
        }
        Ok(_) => {}
    }
    let config_map = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [obj.controller_owner_ref(&())],
        },
        "data": data,
    });
    // Forced: the ConfigMap is this resource's (checked above), and its keys are the LCD's,
    // whoever edited them since.
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch(name, &params, &Patch::Apply(config_map)).await {
        Ok(_) => compat::lcd_written(name, data, apis),
        Err(e) => compat::lcd_not_written(name, &describe_kube_error(&e)),
    }
}

/// Writes the conditions (against the latest status: a condition whose status does not change
/// keeps its transition time) and `rest` of the status; an Event and a metric for each
/// condition whose status flips.
async fn write(
    obj: &APICompatibility,
    ctx: &Context,
    wanted: &[Wanted],
    rest: serde_json::Value,
) -> std::result::Result<(), ReconcileError> {
    let api: Api<APICompatibility> =
        Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    let mut previous = api
        .get_opt(&obj.name_any())
        .await
        .ok()
        .flatten()
        .and_then(|o| o.status)
        .unwrap_or_else(APICompatibilityStatus::default);
    if obj.spec.lcd_config_map.is_none() {
        // No longer asked for: not said either.
        previous
            .conditions
            .retain(|c| c.type_ != compat::LCD_WRITTEN);
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let generation = obj.meta().generation;
    let conditions = decide::conditions(&previous.conditions, wanted, generation, &now);
    let mut status = rest;
    status["observedGeneration"] = serde_json::json!(generation);
    status["conditions"] = serde_json::json!(conditions);
    patch_status(obj, ctx, status).await?;
    for w in wanted {
        let was = previous.conditions.iter().find(|c| c.type_ == w.type_);
        let status = w.status.as_str();
        if was.is_some_and(|c| c.status == status) {
            continue;
        }
        ctx.metrics.flip(w.type_, status);
        let type_ = if w.status == Truth::True {
            EventType::Normal
        } else {
            EventType::Warning
        };
        record(ctx, obj, type_, w.reason, &w.message).await;
    }
    Ok(())
}
