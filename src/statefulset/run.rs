//! The thin shell: connect, preflight, plan, confirm, then observe -> decide -> act until done.
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolume, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde::Serialize;

use super::act::{Executor, FIELD_MANAGER, Interrupt};
use super::copy::{copy_claim, copy_label_value, copy_volume, destination_set};
use super::decide::{self, Settings, Step};
use super::journal::{self, Stored};
use super::model::{Direction, Observed, Side};
use super::observe::{self, Location};
use super::plan::{self, Names, Plan};
use super::preflight;
use super::status;
use super::{Args, DryRun, Mode, validate};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{self, Cluster, is_status};
use crate::error::{Error, Result};
use crate::output::{self, Tabular};

pub async fn run(global: &GlobalArgs, args: &Args) -> Result<()> {
    let valid = validate(args)?;
    let (source, destination) = connect(global, args).await?;
    let source_ns = cluster::namespace_or_default(global.namespace.as_deref(), &source);
    let destination_ns = args
        .to_namespace
        .clone()
        .unwrap_or_else(|| source_ns.clone());
    if source.server == destination.server && source_ns == destination_ns {
        return Err(Error::Usage(format!(
            "source and destination are the same: {} namespace {source_ns}; pick another --to-context or --to-namespace",
            source.server
        )));
    }
    let label = copy_label_value(&source_ns, &args.name);
    let names = Names {
        set: args.name.clone(),
        source_context: source.context.clone(),
        source_namespace: source_ns.clone(),
        destination_context: destination.context.clone(),
        destination_namespace: destination_ns.clone(),
    };
    let executor = Executor {
        source_at: Location {
            namespace: source_ns,
            name: args.name.clone(),
            copy_label: label.clone(),
        },
        destination_at: Location {
            namespace: destination_ns,
            name: args.name.clone(),
            copy_label: label,
        },
        source,
        destination,
        names,
        class_map: valid.class_map.clone(),
        health_check: args.health_check.clone(),
        timeout: args.timeout,
        interrupt: Interrupt::default(),
    };
    let run = Run {
        global,
        args,
        executor,
        settings: Settings {
            name: args.name.clone(),
            batch: args.batch,
        },
    };
    match valid.mode {
        Mode::Status => run.status().await,
        Mode::Migrate => run.migrate(valid.dry_run).await,
        Mode::Rollback => run.rollback().await,
        Mode::Cleanup => run.cleanup().await,
    }
}

/// Connects both sides at once. Nothing has been written yet, so failures are preflight failures.
async fn connect(global: &GlobalArgs, args: &Args) -> Result<(Cluster, Cluster)> {
    let to_kubeconfig = args
        .to_kubeconfig
        .as_deref()
        .or(global.kubeconfig.as_deref());
    let source = cluster::resolve(global.kubeconfig.as_deref(), global.context()?);
    let destination = cluster::resolve(to_kubeconfig, Some(&args.to_context));
    let mut problems = Vec::new();
    let (source, destination) = match (source, destination) {
        (Ok(s), Ok(d)) => (s, d),
        (s, d) => {
            problems.extend(s.err().map(|e| format!("source: {e}")));
            problems.extend(d.err().map(|e| format!("destination: {e}")));
            return Err(Error::PreflightFailed { problems });
        }
    };
    let (s, d) = tokio::join!(
        source.connect(global.request_timeout),
        destination.connect(global.request_timeout)
    );
    match (s, d) {
        (Ok(s), Ok(d)) => Ok((s, d)),
        (s, d) => {
            problems.extend(s.err().map(|e| format!("source: {e}")));
            problems.extend(d.err().map(|e| format!("destination: {e}")));
            Err(Error::PreflightFailed { problems })
        }
    }
}

/// One JSON line per step boundary with -o json.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    time: String,
    event: &'a str,
    #[serde(flatten)]
    step: &'a Step,
    description: String,
    ordinals: Vec<i32>,
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

struct Run<'a> {
    global: &'a GlobalArgs,
    args: &'a Args,
    executor: Executor,
    settings: Settings,
}

/// Errors worth retrying: the server is restarting, overloaded, or an object moved under us.
fn is_transient(err: &Error) -> bool {
    match err {
        Error::Timeout { .. } | Error::Conflict(_) => true,
        Error::Cluster {
            source: Some(e), ..
        } => match e.as_ref() {
            kube::Error::Api(s) => s.code >= 500 || s.code == 429 || s.code == 409,
            _ => true,
        },
        _ => false,
    }
}

impl Run<'_> {
    fn json(&self) -> bool {
        self.global.output == OutputFormat::Json
    }

    /// The exact command line, to print as the way to resume.
    fn resume_command(&self) -> String {
        let mut words = vec!["kubectl".to_string(), "migrate".to_string()];
        words.extend(
            std::env::args()
                .skip(1)
                .filter(|a| a != "--step" || self.args.step),
        );
        words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn side_location(&self, side: Side) -> (&Cluster, &Location) {
        (self.executor.cluster(side), self.executor.location(side))
    }

    async fn load_journal(&self) -> Result<Option<Stored>> {
        journal::load(
            &self.executor.destination,
            &self.executor.destination_at.namespace,
            &self.args.name,
        )
        .await
    }

    async fn observe(&self, stored: Option<&Stored>) -> Result<Observed> {
        let templates = match stored {
            Some(s) => s.journal.claim_templates.clone(),
            None => {
                let sets: Api<StatefulSet> = Api::namespaced(
                    self.executor.source.client.clone(),
                    &self.executor.source_at.namespace,
                );
                let set = self
                    .executor
                    .source
                    .call("read the source StatefulSet", sets.get_opt(&self.args.name))
                    .await?;
                set.map(|s| observe::set_view(&s).claim_templates)
                    .unwrap_or_default()
            }
        };
        observe::observe(
            self.side_location(Side::Source),
            self.side_location(Side::Destination),
            &templates,
        )
        .await
    }

    async fn status(&self) -> Result<()> {
        let stored = self.load_journal().await?;
        let observed = self.observe(stored.as_ref()).await?;
        let report = status::report(
            stored.as_ref().map(|s| &s.journal),
            &observed,
            &self.settings,
            &self.executor.names,
        );
        output::print(&report, self.global.output)
    }

    async fn migrate(&self, dry_run: DryRun) -> Result<()> {
        let request = self.preflight_request(false);
        let denied = preflight::permissions(&request).await;
        if !denied.is_empty() {
            return Err(Error::PreflightFailed { problems: denied });
        }
        let stored = self.load_journal().await?;
        if let Some(s) = &stored {
            if s.journal.direction == Direction::Rollback {
                return Err(Error::Failed {
                    message: format!(
                        "a rollback of {} is in progress; finish it with --rollback first",
                        self.args.name
                    ),
                });
            }
            if s.journal.complete {
                output::warn(format!(
                    "the migration of {} is already complete; see --status, or --cleanup",
                    self.args.name
                ));
                return Ok(());
            }
        }
        let observed = self.observe(stored.as_ref()).await?;
        let request = self.preflight_request(stored.is_some());
        let report = preflight::run(&request, &observed).await;
        for w in &report.warnings {
            output::warn(w);
        }
        if !report.problems.is_empty() {
            return Err(Error::PreflightFailed {
                problems: report.problems,
            });
        }
        let min_ready = self.min_ready_seconds().await?;
        let plan = plan::forward_plan(
            &observed,
            &self.executor.names,
            self.args.batch,
            min_ready,
            self.args.health_check.as_deref(),
        );
        match dry_run {
            DryRun::Client => {
                return output::print(
                    &PlanOutput {
                        plan,
                        warnings: report.warnings,
                        server_dry_run: vec![],
                    },
                    self.global.output,
                );
            }
            DryRun::Server => {
                let results = self.server_dry_run(&observed).await?;
                let failed: Vec<String> = results
                    .iter()
                    .filter(|r| !r.ok)
                    .map(|r| format!("{}: {}", r.action, r.message))
                    .collect();
                output::print(
                    &PlanOutput {
                        plan,
                        warnings: report.warnings,
                        server_dry_run: results,
                    },
                    self.global.output,
                )?;
                return if failed.is_empty() {
                    Ok(())
                } else {
                    Err(Error::PreflightFailed { problems: failed })
                };
            }
            DryRun::None => {}
        }
        if stored.is_none() {
            if !self.json() {
                eprint!("{}", plan::plan_text(&plan));
            }
            output::confirm(
                &format!(
                    "Migrate StatefulSet {} from {} to {}",
                    self.args.name, plan.from, plan.to
                ),
                self.args.yes,
            )?;
        } else {
            output::log(
                0,
                format!(
                    "resuming the migration of {} (journal found in {})",
                    self.args.name, self.executor.destination.context
                ),
            );
        }
        self.prepare_destination().await?;
        self.reconcile(Direction::Forward).await
    }

    fn preflight_request(&self, resuming: bool) -> preflight::Request<'_> {
        preflight::Request {
            source: &self.executor.source,
            destination: &self.executor.destination,
            source_at: &self.executor.source_at,
            destination_at: &self.executor.destination_at,
            class_map: &self.executor.class_map,
            allow_unhealthy: self.args.allow_unhealthy,
            create_namespace: self.args.create_namespace,
            copy_dependencies: self.args.copy_dependencies,
            resuming,
        }
    }

    async fn min_ready_seconds(&self) -> Result<i32> {
        let sets: Api<StatefulSet> = Api::namespaced(
            self.executor.source.client.clone(),
            &self.executor.source_at.namespace,
        );
        let set = self
            .executor
            .source
            .call("read the source StatefulSet", sets.get_opt(&self.args.name))
            .await?;
        Ok(set
            .and_then(|s| s.spec)
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0))
    }

    async fn rollback(&self) -> Result<()> {
        let Some(stored) = self.load_journal().await? else {
            return Err(Error::Failed {
                message: format!(
                    "no migration of {} found (no journal {} in {}/{}); nothing to roll back",
                    self.args.name,
                    journal::object_name(&self.args.name),
                    self.executor.destination.context,
                    self.executor.destination_at.namespace
                ),
            });
        };
        if stored.journal.cleaned_up {
            return Err(Error::Failed { message: "the source's objects were removed by --cleanup; a rollback is no longer possible".into() });
        }
        if stored.journal.direction == Direction::Forward {
            let observed = self.observe(Some(&stored)).await?;
            output::confirm(
                &format!(
                    "Roll back StatefulSet {}: move its ordinals from {} back to {}",
                    self.args.name, self.executor.destination.context, self.executor.source.context
                ),
                self.args.yes,
            )?;
            let source_end = observed
                .source
                .set
                .as_ref()
                .map(|s| s.start + s.replicas)
                .unwrap_or(stored.journal.start);
            let mut journal = stored.journal.clone();
            journal.direction = Direction::Rollback;
            journal.complete = false;
            journal.verified_bound = source_end;
            journal::update(
                &self.executor.destination,
                &self.executor.destination_at.namespace,
                &stored,
                &journal,
            )
            .await?;
        } else {
            output::log(0, "resuming the rollback");
        }
        self.reconcile(Direction::Rollback).await
    }

    /// Namespace and dependencies, before the journal is written. Idempotent.
    async fn prepare_destination(&self) -> Result<()> {
        let dst = &self.executor.destination;
        let ns = &self.executor.destination_at.namespace;
        if self.args.create_namespace {
            let namespaces: Api<Namespace> = Api::all(dst.client.clone());
            if dst
                .call("read the namespace", namespaces.get_opt(ns))
                .await?
                .is_none()
            {
                let namespace = Namespace {
                    metadata: ObjectMeta {
                        name: Some(ns.clone()),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                match namespaces.create(&PostParams::default(), &namespace).await {
                    Ok(_) => output::log(0, format!("created namespace {ns} in {}", dst.context)),
                    Err(e) if is_status(&e, 409) => {}
                    Err(e) => {
                        return dst.fail("create the namespace", e);
                    }
                }
            }
        }
        if self.args.copy_dependencies {
            self.copy_dependencies().await?;
        }
        Ok(())
    }

    async fn copy_dependencies(&self) -> Result<()> {
        let src = &self.executor.source;
        let (src_ns, dst_ns) = (
            &self.executor.source_at.namespace,
            &self.executor.destination_at.namespace,
        );
        let sets: Api<StatefulSet> = Api::namespaced(src.client.clone(), src_ns);
        let set = src
            .call("read the source StatefulSet", sets.get(&self.args.name))
            .await?;
        let spec = set.spec.unwrap_or_default();
        let deps = spec
            .template
            .spec
            .as_ref()
            .map(preflight::dependencies)
            .unwrap_or_default();
        if let Some(service) = spec.service_name.filter(|s| !s.is_empty()) {
            self.copy_object::<Service>(&service, |s| {
                if let Some(spec) = s.spec.as_mut() {
                    // Cluster IPs belong to the source cluster's service network.
                    if spec.cluster_ip.as_deref() != Some("None") {
                        spec.cluster_ip = None;
                    }
                    spec.cluster_ips = None;
                    spec.health_check_node_port = None;
                    for port in spec.ports.iter_mut().flatten() {
                        port.node_port = None;
                    }
                }
                s.status = None;
            })
            .await?;
        }
        for cm in &deps.config_maps {
            self.copy_object::<ConfigMap>(cm, |_| {}).await?;
        }
        for secret in &deps.secrets {
            self.copy_object::<Secret>(secret, |_| {}).await?;
        }
        if let Some(sa) = &deps.service_account {
            self.copy_object::<ServiceAccount>(sa, |s| s.secrets = None)
                .await?;
        }
        output::log(1, format!("dependencies copied from {src_ns} to {dst_ns}"));
        Ok(())
    }

    async fn copy_object<K>(&self, name: &str, adjust: impl FnOnce(&mut K)) -> Result<()>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Serialize,
        K::DynamicType: Default,
    {
        let (src, dst) = (&self.executor.source, &self.executor.destination);
        let from: Api<K> = Api::namespaced(src.client.clone(), &self.executor.source_at.namespace);
        let to: Api<K> =
            Api::namespaced(dst.client.clone(), &self.executor.destination_at.namespace);
        if dst
            .call(&format!("read {name}"), to.get_opt(name))
            .await?
            .is_some()
        {
            return Ok(());
        }
        let Some(mut object) = src
            .call(&format!("read {name}"), from.get_opt(name))
            .await?
        else {
            return Err(Error::Failed {
                message: format!(
                    "{name} is referenced by the pods but does not exist in {}",
                    src.context
                ),
            });
        };
        let meta = object.meta_mut();
        *meta = ObjectMeta {
            name: meta.name.clone(),
            namespace: Some(self.executor.destination_at.namespace.clone()),
            labels: meta.labels.clone(),
            annotations: meta.annotations.clone().map(|mut a| {
                a.remove("kubectl.kubernetes.io/last-applied-configuration");
                a
            }),
            ..Default::default()
        };
        adjust(&mut object);
        match to.create(&PostParams::default(), &object).await {
            Ok(_) => {
                output::log(0, format!("copied {name} to {}", dst.context));
                Ok(())
            }
            Err(e) if is_status(&e, 409) => Ok(()),
            Err(e) => dst.fail(&format!("copy {name}"), e),
        }
    }

    /// Every write of the plan, dry-run on the servers.
    async fn server_dry_run(&self, observed: &Observed) -> Result<Vec<DryRunResult>> {
        let ex = &self.executor;
        let (src, dst) = (&ex.source, &ex.destination);
        let mut results = Vec::new();
        let mut record =
            |action: String, cluster: &str, result: std::result::Result<(), kube::Error>| {
                let (ok, message) = match result {
                    Ok(()) => (true, "accepted".to_string()),
                    Err(kube::Error::Api(s)) => (false, s.message.clone()),
                    Err(e) => (false, e.to_string()),
                };
                results.push(DryRunResult {
                    action,
                    cluster: cluster.to_string(),
                    ok,
                    message,
                });
            };
        let patch = PatchParams {
            dry_run: true,
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let post = PostParams {
            dry_run: true,
            field_manager: Some(FIELD_MANAGER.into()),
        };
        let pvs_src: Api<PersistentVolume> = Api::all(src.client.clone());
        let pvs_dst: Api<PersistentVolume> = Api::all(dst.client.clone());
        for (name, v) in &observed.source.volumes {
            if v.reclaim_policy != "Retain" {
                let body = serde_json::json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}});
                record(
                    format!("protect PV {name}"),
                    &src.context,
                    pvs_src
                        .patch(name, &patch, &Patch::Merge(&body))
                        .await
                        .map(|_| ()),
                );
            }
        }
        let sets_src: Api<StatefulSet> =
            Api::namespaced(src.client.clone(), &ex.source_at.namespace);
        let source = src
            .call("read the source StatefulSet", sets_src.get(&self.args.name))
            .await?;
        let view = observe::set_view(&source);
        let body = serde_json::json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Retain"}, "replicas": (view.replicas - 1).max(0)}});
        record(
            "hold retention and scale the source down".into(),
            &src.context,
            sets_src
                .patch(&self.args.name, &patch, &Patch::Merge(&body))
                .await
                .map(|_| ()),
        );
        // The destination as it will end: all ordinals, from s0.
        let sets_dst: Api<StatefulSet> =
            Api::namespaced(dst.client.clone(), &ex.destination_at.namespace);
        let mut dest = destination_set(
            &source,
            &ex.destination_at.namespace,
            view.start + view.replicas,
            &ex.class_map,
            &ex.destination_at.copy_label,
            "dry-run",
        );
        if let Some(spec) = dest.spec.as_mut() {
            spec.replicas = Some(view.replicas);
            spec.ordinals = Some(k8s_openapi::api::apps::v1::StatefulSetOrdinals {
                start: Some(view.start),
            });
        }
        let strict = PatchParams::apply(FIELD_MANAGER)
            .validation_strict()
            .dry_run();
        record(
            "create the destination StatefulSet (fieldValidation=Strict)".into(),
            &dst.context,
            sets_dst
                .patch(&self.args.name, &strict, &Patch::Apply(&dest))
                .await
                .map(|_| ()),
        );
        let claims_src: Api<PersistentVolumeClaim> =
            Api::namespaced(src.client.clone(), &ex.source_at.namespace);
        let claims_dst: Api<PersistentVolumeClaim> =
            Api::namespaced(dst.client.clone(), &ex.destination_at.namespace);
        for (claim, c) in &observed.source.claims {
            let Some(volume) = &c.volume_name else {
                continue;
            };
            let pvc = src
                .call(&format!("read PVC {claim}"), claims_src.get(claim))
                .await?;
            let pv = src
                .call(&format!("read PV {volume}"), pvs_src.get(volume))
                .await?;
            let pv_copy = copy_volume(
                &pv,
                &ex.destination_at.namespace,
                claim,
                &ex.class_map,
                &ex.destination_at.copy_label,
                "dry-run",
            );
            record(
                format!("copy PV {volume}"),
                &dst.context,
                pvs_dst.create(&post, &pv_copy).await.map(|_| ()),
            );
            let pvc_copy = copy_claim(
                &pvc,
                &ex.destination_at.namespace,
                &ex.class_map,
                &ex.destination_at.copy_label,
                "dry-run",
            );
            record(
                format!("copy PVC {claim}"),
                &dst.context,
                claims_dst.create(&post, &pvc_copy).await.map(|_| ()),
            );
        }
        Ok(results)
    }

    /// The reconciler: observe both clusters, decide the next step, perform it, repeat.
    async fn reconcile(&self, direction: Direction) -> Result<()> {
        let ex = &self.executor;
        let interrupt = ex.interrupt.clone();
        let signal = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.trigger();
            }
        });
        let lease = journal::acquire_lease(
            &ex.destination,
            &ex.destination_at.namespace,
            &self.args.name,
        )
        .await?;
        let result = self.reconcile_loop(direction).await;
        lease.release().await;
        signal.abort();
        result
    }

    async fn reconcile_loop(&self, direction: Direction) -> Result<()> {
        let ex = &self.executor;
        let mut seen_journal = false;
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        let mut moves = 0usize;
        let bar = output::progress_bar(
            0,
            &format!(
                "{} {}->{}",
                self.args.name, ex.source.context, ex.destination.context
            ),
        );
        let mut templates: Option<Vec<String>> = None;
        let retry = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(300))
            .with_max_delay(Duration::from_secs(5))
            .with_max_times(20);
        loop {
            if ex.interrupt.is_set() {
                bar.finish_and_clear();
                return Err(Error::Stopped {
                    reason: "interrupted (Ctrl-C) at a safe point".into(),
                    resume: self.resume_command(),
                });
            }
            // Observation is retried through API server restarts; nothing is decided on a partial view.
            // The claim templates never change during a migration, so once known the journal and
            // both clusters are read at the same time.
            let observing = Instant::now();
            let (stored, observed) = (|| async {
                match &templates {
                    Some(t) => tokio::try_join!(
                        self.load_journal(),
                        observe::observe(
                            self.side_location(Side::Source),
                            self.side_location(Side::Destination),
                            t
                        )
                    ),
                    None => {
                        let stored = self.load_journal().await?;
                        let observed = self.observe(stored.as_ref()).await?;
                        Ok((stored, observed))
                    }
                }
            })
            .retry(retry)
            .when(is_transient)
            .notify(|e, d| output::warn(format!("{e}; retrying in {:.1}s", d.as_secs_f64())))
            .await?;
            output::log(
                2,
                format!(
                    "observed both clusters in {} ms",
                    observing.elapsed().as_millis()
                ),
            );
            if templates.is_none() {
                templates = stored.as_ref().map(|s| s.journal.claim_templates.clone());
            }
            match (&stored, direction) {
                // The rollback removed its journal: everything is back in the source.
                (None, Direction::Rollback) => {
                    bar.finish_and_clear();
                    if !self.json() {
                        eprintln!(
                            "Rolled back: {} runs in {} ({}).",
                            self.args.name, ex.source.context, ex.source_at.namespace
                        );
                    }
                    return Ok(());
                }
                (None, Direction::Forward) if seen_journal => {
                    bar.finish_and_clear();
                    return Err(Error::Unsafe {
                        reason: format!(
                            "the migration journal {} disappeared from {}",
                            journal::object_name(&self.args.name),
                            ex.destination.context
                        ),
                        resume: self.resume_command(),
                    });
                }
                (Some(_), _) => seen_journal = true,
                _ => {}
            }
            let step = decide::next_step(
                stored.as_ref().map(|s| &s.journal),
                &observed,
                &self.settings,
            );
            if let Some(s) = &stored {
                bar.set_length(s.journal.replicas as u64);
                let moved = match s.journal.direction {
                    Direction::Forward => s.journal.end() - s.journal.verified_bound,
                    Direction::Rollback => s.journal.verified_bound - s.journal.start,
                };
                bar.set_position(moved.max(0) as u64);
            }
            match &step {
                Step::Done => {
                    bar.finish_and_clear();
                    if !self.json() {
                        eprintln!(
                            "Done: {} runs in {} ({}).",
                            self.args.name, ex.destination.context, ex.destination_at.namespace
                        );
                    }
                    return Ok(());
                }
                Step::Stop { reason } => {
                    bar.finish_and_clear();
                    return Err(Error::Unsafe {
                        reason: reason.clone(),
                        resume: self.resume_command(),
                    });
                }
                _ => {}
            }
            if self.args.step && self.starts_a_move(&step, stored.as_ref()) {
                if interactive && !self.args.yes {
                    bar.suspend(|| output::confirm(&plan::describe(&step, &ex.names), false))
                        .map_err(|e| match e {
                            Error::Cancelled(_) => Error::Stopped {
                                reason: "stopped before the next ordinal (--step)".into(),
                                resume: self.resume_command(),
                            },
                            other => other,
                        })?;
                } else if moves > 0 {
                    bar.finish_and_clear();
                    return Err(Error::Stopped {
                        reason: "paused after one step (--step)".into(),
                        resume: self.resume_command(),
                    });
                }
                moves += 1;
            }
            let cluster = match &step {
                Step::ProtectVolumes { side, .. }
                | Step::Resize { side, .. }
                | Step::WaitPodsGone { side, .. }
                | Step::WaitReady { side, .. }
                | Step::Verify { side, .. } => ex.names.context(*side).to_string(),
                Step::CopyClaim { to, .. } => ex.names.context(*to).to_string(),
                Step::HoldRetention | Step::RestoreRetention | Step::RestoreVolume { .. } => {
                    ex.source.context.clone()
                }
                _ => ex.destination.context.clone(),
            };
            let description = plan::describe(&step, &ex.names);
            self.emit(
                &bar,
                "step-started",
                &step,
                &cluster,
                &description,
                None,
                None,
            );
            bar.set_message(description.clone());
            // The bar's clock shows how long the current step has taken.
            bar.reset_elapsed();
            let started = Instant::now();
            let result = (|| ex.perform(&step, stored.as_ref(), &observed))
                // Every step is idempotent, so an outage mid-step is retried as long as an
                // outage during observation is; a conflict instead means: decide again.
                .retry(retry)
                .when(|e| is_transient(e) && !matches!(e, Error::Conflict(_)))
                .notify(|e, d| output::warn(format!("{e}; retrying in {:.1}s", d.as_secs_f64())))
                .await;
            match result {
                Ok(()) => self.emit(
                    &bar,
                    "step-finished",
                    &step,
                    &cluster,
                    &description,
                    Some(started.elapsed().as_millis()),
                    None,
                ),
                // Someone changed an object between observing and acting: decide again.
                Err(Error::Conflict(m)) => self.emit(
                    &bar,
                    "step-retried",
                    &step,
                    &cluster,
                    &description,
                    Some(started.elapsed().as_millis()),
                    Some(format!("{m}; deciding again")),
                ),
                Err(e) => {
                    self.emit(
                        &bar,
                        "step-failed",
                        &step,
                        &cluster,
                        &description,
                        Some(started.elapsed().as_millis()),
                        Some(e.to_string()),
                    );
                    bar.finish_and_clear();
                    return Err(match e {
                        // Ctrl-C reached a running health check too: still a clean stop.
                        Error::Cancelled(reason) => Error::Stopped {
                            reason,
                            resume: self.resume_command(),
                        },
                        stop @ (Error::Stopped { .. } | Error::Unsafe { .. }) => stop,
                        // Anything else (an error, an outage that outlasted the retries) leaves
                        // a state the next run resumes from; say how.
                        other => Error::Failed {
                            message: format!(
                                "{other}\nThe migration can be resumed with:\n  {}",
                                self.resume_command()
                            ),
                        },
                    });
                }
            }
        }
    }

    /// A step that takes ordinals away from the side that currently runs them.
    fn starts_a_move(&self, step: &Step, stored: Option<&Stored>) -> bool {
        let direction = stored
            .map(|s| s.journal.direction)
            .unwrap_or(Direction::Forward);
        matches!(
            (step, direction),
            (
                Step::Resize {
                    side: Side::Source,
                    ..
                },
                Direction::Forward
            ) | (
                Step::Resize {
                    side: Side::Destination,
                    ..
                },
                Direction::Rollback
            )
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        bar: &indicatif::ProgressBar,
        event: &str,
        step: &Step,
        cluster: &str,
        description: &str,
        elapsed_ms: Option<u128>,
        error: Option<String>,
    ) {
        if self.json() {
            let e = Event {
                time: k8s_openapi::jiff::Timestamp::now().to_string(),
                event,
                step,
                description: description.to_string(),
                ordinals: step.ordinals(),
                cluster,
                elapsed_ms,
                error,
            };
            println!("{}", serde_json::to_string(&e).expect("events serialize"));
            return;
        }
        let line = match (event, elapsed_ms) {
            ("step-started", _) => format!("-> {description}"),
            ("step-failed", Some(ms)) => {
                format!("   failed after {ms} ms: {}", error.unwrap_or_default())
            }
            ("step-retried", _) => format!("   {}", error.unwrap_or_default()),
            (_, Some(ms)) => format!("   done in {ms} ms"),
            _ => return,
        };
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
    }

    async fn cleanup(&self) -> Result<()> {
        let ex = &self.executor;
        let Some(stored) = self.load_journal().await? else {
            return Err(Error::Failed {
                message: format!(
                    "no migration of {} found; nothing to clean up",
                    self.args.name
                ),
            });
        };
        if !stored.journal.complete || stored.journal.direction != Direction::Forward {
            return Err(Error::Failed {
                message:
                    "the migration is not complete; --cleanup runs only after it (see --status)"
                        .into(),
            });
        }
        let observed = self.observe(Some(&stored)).await?;
        if let Some(set) = &observed.source.set
            && (set.replicas > 0 || !observed.source.pods.is_empty())
        {
            return Err(Error::Failed {
                message: format!(
                    "the source StatefulSet still runs pods in {}; not cleaning up",
                    ex.source.context
                ),
            });
        }
        output::confirm(
            &format!(
                "Delete the leftover StatefulSet, {} PVC and {} PV object(s) of {} in {} (the storage is kept)",
                observed.source.claims.len(),
                observed.source.volumes.len(),
                self.args.name,
                ex.source.context
            ),
            self.args.yes,
        )?;
        let lease = journal::acquire_lease(
            &ex.destination,
            &ex.destination_at.namespace,
            &self.args.name,
        )
        .await?;
        let result = self.cleanup_steps(&stored, &observed).await;
        lease.release().await;
        let removed = result?;
        output::print(&removed, self.global.output)
    }

    async fn cleanup_steps(&self, stored: &Stored, observed: &Observed) -> Result<CleanupReport> {
        let ex = &self.executor;
        let src = &ex.source;
        let pvs: Api<PersistentVolume> = Api::all(src.client.clone());
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(src.client.clone(), &ex.source_at.namespace);
        let sets: Api<StatefulSet> = Api::namespaced(src.client.clone(), &ex.source_at.namespace);
        let mut report = CleanupReport::default();
        // Retain first, always: deleting a claim must never delete the storage the destination uses.
        for (name, v) in &observed.source.volumes {
            if v.reclaim_policy != "Retain" {
                let body = serde_json::json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}});
                src.call(
                    "protect a PV",
                    pvs.patch(name, &PatchParams::default(), &Patch::Merge(&body)),
                )
                .await?;
            }
        }
        if observed.source.set.is_some() {
            src.already_done(
                "delete the source StatefulSet",
                sets.delete(&self.args.name, &DeleteParams::default()).await,
                404,
            )?;
            report.statefulset = Some(self.args.name.clone());
        }
        for claim in observed.source.claims.keys() {
            src.already_done(
                "delete a PVC",
                claims.delete(claim, &DeleteParams::default()).await,
                404,
            )?;
            report.claims.push(claim.clone());
        }
        for volume in observed.source.volumes.keys() {
            src.already_done(
                "delete a PV",
                pvs.delete(volume, &DeleteParams::default()).await,
                404,
            )?;
            report.volumes.push(volume.clone());
        }
        if self.args.restore_reclaim_policy {
            let dst_pvs: Api<PersistentVolume> = Api::all(ex.destination.client.clone());
            for (volume, policy) in &stored.journal.original_reclaim_policies {
                if observed.destination.volumes.contains_key(volume) && policy != "Retain" {
                    let body =
                        serde_json::json!({"spec": {"persistentVolumeReclaimPolicy": policy}});
                    ex.destination
                        .call(
                            "restore a reclaim policy",
                            dst_pvs.patch(volume, &PatchParams::default(), &Patch::Merge(&body)),
                        )
                        .await?;
                    report
                        .restored_reclaim_policies
                        .insert(volume.clone(), policy.clone());
                }
            }
        }
        let mut journal = stored.journal.clone();
        journal.cleaned_up = true;
        let fresh = self.load_journal().await?.unwrap_or_else(|| stored.clone());
        journal::update(
            &ex.destination,
            &ex.destination_at.namespace,
            &fresh,
            &journal,
        )
        .await?;
        Ok(report)
    }
}

fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./:,@".contains(&b))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DryRunResult {
    action: String,
    cluster: String,
    ok: bool,
    message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanOutput {
    plan: Plan,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    server_dry_run: Vec<DryRunResult>,
}

impl Tabular for PlanOutput {
    fn table(&self) -> comfy_table::Table {
        let mut t = output::new_table(["#", "ordinal", "cluster", "action"]);
        for s in &self.plan.steps {
            t.add_row([
                s.number.to_string(),
                s.ordinal.map(|k| k.to_string()).unwrap_or_default(),
                s.cluster.clone(),
                s.action.clone(),
            ]);
        }
        for r in &self.server_dry_run {
            t.add_row([
                "dry-run".to_string(),
                String::new(),
                r.cluster.clone(),
                format!(
                    "{}: {}",
                    r.action,
                    if r.ok {
                        "accepted".into()
                    } else {
                        format!("REJECTED: {}", r.message)
                    }
                ),
            ]);
        }
        t
    }
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct CleanupReport {
    statefulset: Option<String>,
    claims: Vec<String>,
    volumes: Vec<String>,
    restored_reclaim_policies: BTreeMap<String, String>,
}

impl Tabular for CleanupReport {
    fn table(&self) -> comfy_table::Table {
        let mut t = output::new_table(["removed from the source", "name"]);
        if let Some(s) = &self.statefulset {
            t.add_row(["StatefulSet", s.as_str()]);
        }
        for c in &self.claims {
            t.add_row(["PersistentVolumeClaim", c.as_str()]);
        }
        for v in &self.volumes {
            t.add_row(["PersistentVolume (storage kept)", v.as_str()]);
        }
        for (v, p) in &self.restored_reclaim_policies {
            t.add_row([format!("reclaim policy restored to {p}"), v.clone()]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_commands_are_shell_safe() {
        assert_eq!(shell_quote("--context=km-a"), "--context=km-a");
        assert_eq!(
            shell_quote("./check.sh && echo ok"),
            "'./check.sh && echo ok'"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn restarts_and_conflicts_are_retried_but_refusals_are_not() {
        assert!(is_transient(&Error::Conflict("x".into())));
        assert!(is_transient(&Error::Timeout {
            context: "a".into(),
            server: "s".into(),
            timeout: Duration::from_secs(1)
        }));
        assert!(!is_transient(&Error::Failed {
            message: "x".into()
        }));
        assert!(!is_transient(&Error::Usage("x".into())));
    }
}
