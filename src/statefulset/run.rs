//! One function per mode: connect both clusters, then status, migrate (preflight, plan, dry run
//! or confirmation, then the loop), rollback or cleanup.
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::copy::copy_label_value;
use super::decide;
use super::down::OrdinalsDown;
use super::executor::{self, Executor, Interrupt, Sides, StepSettings};
use super::journal::{self, Stored};
use super::leftovers::Leftovers;
use super::model::{Direction, Journal, Names, Observed, Preparation, Side};
use super::observe::{self, Location};
use super::plan;
use super::preflight;
use super::status;
use super::step::{Step, Telling};
use super::watched::{Hub, Member};
use super::words;
use super::{
    Batch, DryRun, Event, Mode, OnTimeout, Operator, Outcome, PlanOutput, Settings, cleanup,
};
use crate::cluster::Cluster;
use crate::error::{Error, Result};

/// Runs `settings.mode`, asking and telling `operator` as it goes.
pub async fn run(settings: &Settings, operator: &mut dyn Operator) -> Result<Outcome> {
    run_on(settings, operator, Interrupt::default(), None).await
}

/// Both members already connected, and the watches shared with the other runs of the process.
#[derive(Clone)]
pub struct OnHub {
    pub hub: std::sync::Arc<Hub>,
    pub source: Member,
    pub destination: Member,
}

/// [`run`], stopping at the next safe point (resumable) once `stop` is triggered, as at
/// Ctrl-C: the controller's way to pause a run, or to end it on shutdown or deletion. On
/// `on_hub`'s connections and shared watches (the controller's many runs), or connecting both
/// sides and watching for itself without one (the CLI).
pub async fn run_on(
    settings: &Settings,
    operator: &mut dyn Operator,
    stop: Interrupt,
    on_hub: Option<OnHub>,
) -> Result<Outcome> {
    let (source, destination) = match &on_hub {
        Some(h) => (h.source.cluster.clone(), h.destination.cluster.clone()),
        None => connect(settings).await?,
    };
    let label = copy_label_value(&settings.source_namespace, &settings.name);
    let names = Names {
        set: settings.name.clone(),
        source_context: source.context.clone(),
        source_namespace: settings.source_namespace.clone(),
        destination_context: destination.context.clone(),
        destination_namespace: settings.destination_namespace.clone(),
    };
    let location = |namespace: &str| Location {
        namespace: namespace.to_string(),
        name: settings.name.clone(),
        copy_label: label.clone(),
    };
    let sides = Sides {
        source,
        destination,
        source_at: location(&settings.source_namespace),
        destination_at: location(&settings.destination_namespace),
        names,
    };
    let steps = StepSettings {
        class_map: settings.class_map.clone(),
        health_check: settings.health_check.clone(),
        volumes: settings.volumes,
        copy_order: settings.copy_order,
    };
    let mut executor = Executor::new(sides, steps, settings.timeout, settings.holder.clone());
    executor.waits.interrupt = stop;
    let start_up = match &on_hub {
        Some(on) => on.hub.start_up().await,
        None => None,
    };
    let mut run = Run {
        settings,
        executor,
        on_hub,
        start_up: std::sync::Mutex::new(start_up),
        decide: decide::Settings {
            name: settings.name.clone(),
            // `auto` is resolved once the budgets are known (see `use_auto_batch`).
            batch: match settings.batch {
                Batch::Count(n) => n,
                Batch::Auto => 1,
            },
            recreate_destination: settings.recreate_destination,
        },
    };
    match settings.mode {
        Mode::Status => run.status().await,
        Mode::Migrate(dry_run) => run.migrate(dry_run, operator).await,
        Mode::Rollback(dry_run) => run.rollback(dry_run, operator, true).await,
        Mode::RebuildJournal => run.rebuild_journal(operator).await,
        Mode::Cleanup {
            restore_reclaim_policy,
        } => run.cleanup(restore_reclaim_policy, operator).await,
    }
}

/// Connects both sides at once. Nothing has been written yet, so failures are preflight failures.
async fn connect(settings: &Settings) -> Result<(Cluster, Cluster)> {
    let (s, d) = tokio::join!(
        settings.source.connect(settings.request_timeout),
        settings.destination.connect(settings.request_timeout)
    );
    match (s, d) {
        (Ok(s), Ok(d)) => Ok((s, d)),
        (s, d) => {
            let mut problems = Vec::new();
            problems.extend(s.err().map(|e| format!("source: {}", e.report())));
            problems.extend(d.err().map(|e| format!("destination: {}", e.report())));
            Err(Error::PreflightFailed { problems })
        }
    }
}

/// A run in progress: the settings, the executor and what the decisions need.
pub(super) struct Run<'s> {
    pub settings: &'s Settings,
    pub executor: Executor,
    /// The shared watches to observe through (the controller's), else watches of its own.
    pub on_hub: Option<OnHub>,
    /// On a hub, this run's turn to start up, held until its watches start or it waits for its
    /// lease.
    pub start_up: std::sync::Mutex<Option<super::watched::StartUp>>,
    pub decide: decide::Settings,
}

impl Run<'_> {
    pub fn interrupt(&self) -> &Interrupt {
        &self.executor.waits.interrupt
    }

    fn side_location(&self, side: Side) -> (&Cluster, &Location) {
        let sides = &self.executor.sides;
        (sides.cluster(side), sides.location(side))
    }

    pub async fn load_journal(&self) -> Result<Option<Stored>> {
        journal::load(
            &self.executor.sides.destination,
            &self.executor.sides.destination_at.namespace,
            &self.settings.name,
        )
        .await
    }

    /// Reads both clusters; the claim templates and budgets come from the journal, else the
    /// templates from the source set (a run without a journal changes no budget).
    pub async fn observe(&self, stored: Option<&Stored>) -> Result<Observed> {
        let scope = match stored {
            Some(s) => observe::Scope::of(&s.journal),
            None => observe::Scope {
                templates: self
                    .source_set()
                    .await?
                    .map(|s| observe::set_view(&s).claim_templates)
                    .unwrap_or_default(),
                budgets: Vec::new(),
            },
        };
        self.observe_with(&scope).await
    }

    pub async fn observe_with(&self, scope: &observe::Scope) -> Result<Observed> {
        observe::observe(
            self.side_location(Side::Source),
            self.side_location(Side::Destination),
            scope,
        )
        .await
    }

    async fn source_set(&self) -> Result<Option<StatefulSet>> {
        let sets: Api<StatefulSet> = self.executor.sides.namespaced(Side::Source);
        self.executor
            .sides
            .source
            .call(
                "read the source StatefulSet",
                sets.get_opt(&self.settings.name),
            )
            .await
    }

    async fn status(&self) -> Result<Outcome> {
        let stored = self.load_journal().await?;
        let observed = self.observe(stored.as_ref()).await?;
        // The next step shown is the one a run with these flags would take: `--batch auto`
        // resolves from the budgets the journal recorded, as a resume does.
        let mut decide = self.decide.clone();
        if self.settings.batch == Batch::Auto
            && let Some(stored) = &stored
        {
            decide.batch =
                super::budget::auto_batch(&stored.journal.budgets, stored.journal.replicas).0;
        }
        let mut report = status::report(
            stored.as_ref().map(|s| &s.journal),
            &observed,
            &decide,
            &self.executor.sides.names,
        );
        // Who drives it now, if anyone: a run in progress holds the lease.
        report.lease_holder = self
            .lease()
            .await?
            .map(|(_, holder)| holder)
            .filter(|holder| !holder.is_empty());
        if stored.is_none() {
            report.volumes = self.settings.volumes;
            let leftovers = self.leftovers().await?;
            if !leftovers.is_empty() {
                report.next_step = leftovers.status_line(
                    &self.settings.name,
                    &self.executor.sides.destination.context,
                );
            } else if report.next_step == status::START {
                // "Start" only if a start would pass preflight (after a rollback with fresh
                // volumes, say, the claims left in the destination stop it).
                let problems = self.preflight_problems(&observed).await;
                if !problems.is_empty() {
                    report.next_step = format!(
                        "none yet: preflight refuses a migration now: {}",
                        problems.join("; ")
                    );
                }
            }
        }
        Ok(Outcome::Status(report))
    }

    /// What preflight would refuse a migration without a journal for, with these flags.
    async fn preflight_problems(&self, observed: &Observed) -> Vec<String> {
        let access = preflight::permissions(self.clusters(), &self.preflight_request(None)).await;
        if !access.problems.is_empty() {
            return access.problems;
        }
        let request = preflight::Request {
            nodes_listable: access.nodes_listable,
            ..self.preflight_request(None)
        };
        let facts = preflight::gather(self.clusters(), &request, observed).await;
        preflight::judge(&request, &facts, observed).problems
    }

    /// What a run that stopped before it wrote its journal left in the destination: the
    /// namespace, when its labels say this migration created it, and the Lease.
    async fn leftovers(&self) -> Result<Leftovers> {
        let ex = &self.executor;
        let namespace = executor::dependencies::namespace_is_ours(&ex.writer)
            .await?
            .then(|| ex.sides.destination_at.namespace.clone());
        let lease = self.lease().await?;
        Ok(Leftovers { namespace, lease })
    }

    /// The migration's Lease, if there is one: `Lease NS/NAME in CONTEXT` and its holder.
    async fn lease(&self) -> Result<Option<(String, String)>> {
        let ex = &self.executor;
        let leases: Api<Lease> = ex.sides.namespaced(Side::Destination);
        let name = journal::object_name(&self.settings.name);
        Ok(ex
            .sides
            .destination
            .call("read the migration lease", leases.get_opt(&name))
            .await?
            .map(|lease| {
                let shown = format!(
                    "Lease {}/{name} in {}",
                    ex.sides.destination_at.namespace, ex.sides.destination.context
                );
                let holder = lease.spec.and_then(|s| s.holder_identity);
                (shown, holder.unwrap_or_default())
            }))
    }

    /// `--rollback` or `--cleanup` without a journal: deletes what [`Self::leftovers`] found,
    /// under the lease (a run still preparing keeps it, and is waited for or named).
    async fn remove_leftovers(
        &self,
        leftovers: &Leftovers,
        operator: &mut dyn Operator,
    ) -> Result<Outcome> {
        let ex = &self.executor;
        operator.confirm(
            &leftovers.removal(&self.settings.name, &ex.sides.destination.context),
            None,
        )?;
        let held = self.take_lease(operator).await?;
        let result = match &leftovers.namespace {
            Some(_) => executor::dependencies::delete_namespace(&ex.writer, &ex.waits, None).await,
            None => Ok(None),
        };
        let kept = self.give_back_lease(held, result, operator).await?;
        if let Some(why) = kept {
            operator.event(Event::Warning(why));
        }
        Ok(Outcome::Finished)
    }

    fn preflight_request<'a>(&'a self, journal: Option<&'a Journal>) -> preflight::Request<'a> {
        let resuming = journal.is_some();
        preflight::Request {
            source_at: &self.executor.sides.source_at,
            destination_at: &self.executor.sides.destination_at,
            class_map: &self.executor.settings.class_map,
            allow_unhealthy: self.settings.allow_unhealthy,
            create_namespace: self.settings.create_namespace,
            copy_dependencies: self.settings.copy_dependencies,
            resuming,
            batch: self.decide.batch,
            recorded_budgets: journal.map(|j| (j.budgets.as_slice(), j.replicas)),
            nodes_listable: true,
            volumes: self.settings.volumes,
            observe: self.settings.observe,
        }
    }

    fn clusters(&self) -> (&Cluster, &Cluster) {
        (
            &self.executor.sides.source,
            &self.executor.sides.destination,
        )
    }

    async fn migrate(&mut self, dry_run: DryRun, operator: &mut dyn Operator) -> Result<Outcome> {
        let access = preflight::permissions(self.clusters(), &self.preflight_request(None)).await;
        if !access.problems.is_empty() {
            return Err(Error::PreflightFailed {
                problems: access.problems,
            });
        }
        let stored = self.load_journal().await?;
        if let Some(s) = &stored {
            self.check_resumed_flags(&s.journal)?;
            if s.journal.direction == Direction::Rollback {
                return Err(Error::Failed {
                    message: format!(
                        "a rollback of {} is in progress; finish it with --rollback first",
                        self.settings.name
                    ),
                });
            }
            if s.journal.complete {
                let by = s
                    .journal
                    .completed_by
                    .as_deref()
                    .map(|holder| format!(" (completed by {holder})"))
                    .unwrap_or_default();
                operator.event(Event::Warning(format!(
                    "the migration of {} is already complete{by}; nothing to do. See --status, or --cleanup",
                    self.settings.name
                )));
                return Ok(Outcome::Finished);
            }
        }
        let observed = self.observe(stored.as_ref()).await?;
        let request = preflight::Request {
            nodes_listable: access.nodes_listable,
            ..self.preflight_request(stored.as_ref().map(|s| &s.journal))
        };
        let facts = preflight::gather(self.clusters(), &request, &observed).await;
        let auto =
            (self.settings.batch == Batch::Auto).then(|| preflight::auto_batch(&request, &facts));
        let request = preflight::Request {
            batch: auto.as_ref().map_or(request.batch, |(batch, _)| *batch),
            ..request
        };
        let report = preflight::judge(&request, &facts, &observed);
        for w in &report.warnings {
            operator.event(Event::Warning(w.clone()));
        }
        if !report.problems.is_empty() {
            return Err(Error::PreflightFailed {
                problems: report.problems,
            });
        }
        let preparation = preflight::preparation(&request, &facts);
        if let Some((batch, budget)) = auto {
            self.use_auto_batch(batch, budget.as_deref(), operator);
        }
        let min_ready_seconds = self.min_ready_seconds().await?;
        let telling = self.telling(&observed, min_ready_seconds, None);
        let plan = match &stored {
            Some(s) => plan::resume_plan(&telling, &s.journal, &preparation, self.decide.batch),
            None => plan::forward_plan(&telling, &preparation, self.decide.batch),
        };
        match dry_run {
            DryRun::Client => {
                return Ok(Outcome::Planned(PlanOutput {
                    schema_version: 1,
                    plan,
                    warnings: report.warnings,
                    server_dry_run: vec![],
                }));
            }
            DryRun::Server => {
                let steps = self.forward_steps(&observed, &preparation);
                let results = self
                    .server_dry_run(
                        &steps,
                        stored.as_ref(),
                        &observed,
                        preparation.create_namespace,
                    )
                    .await?;
                return Ok(Outcome::Planned(PlanOutput {
                    schema_version: 1,
                    plan,
                    warnings: report.warnings,
                    server_dry_run: results,
                }));
            }
            DryRun::None => {}
        }
        // What the destination lacks is made first (the same steps the plan showed), then the
        // reconciler takes over.
        let preparation: Vec<Step> = self
            .forward_steps(&observed, &preparation)
            .into_iter()
            .take_while(Step::is_preparation)
            .filter(|s| !(matches!(s, Step::WriteJournal) && stored.is_some()))
            .collect();
        match &stored {
            None => operator.confirm(
                &format!(
                    "Migrate StatefulSet {} from {} to {}",
                    self.settings.name, plan.from, plan.to
                ),
                Some(&plan),
            )?,
            // A resume is a decision like a start: what remains, shown and asked for like it.
            Some(stored) => operator.confirm(
                &self.resume_question(stored, &observed, preparation.first()),
                Some(&plan),
            )?,
        }
        let moved = self
            .reconcile(Direction::Forward, &preparation, operator)
            .await;
        match moved {
            Err(e) if self.settings.on_timeout == OnTimeout::Rollback => {
                let Some(down) = e.domain::<OrdinalsDown>() else {
                    return Err(e);
                };
                operator.event(Event::Warning(format!(
                    "{} of {} {} not Ready in {} within --timeout; rolling back (--on-timeout=rollback):\n{}",
                    words::ordinals(&down.ordinals),
                    down.set,
                    words::noun(down.ordinals.len() as i64, "was", "were"),
                    down.to,
                    down.detail
                )));
                let message = format!(
                    "the migration of {} was rolled back (--on-timeout=rollback): {} {} not Ready in {} within --timeout; it runs in {} again. After fixing the cause, migrate again with:\n  {}",
                    down.set,
                    words::ordinals(&down.ordinals),
                    words::noun(down.ordinals.len() as i64, "was", "were"),
                    down.to,
                    down.from,
                    operator.resume_command()
                );
                self.rollback(DryRun::None, operator, false).await?;
                Err(Error::Failed { message })
            }
            moved => moved.map(|()| Outcome::Finished),
        }
    }

    fn forward_steps(&self, observed: &Observed, preparation: &Preparation) -> Vec<Step> {
        plan::forward_steps(
            &self.settings.name,
            observed,
            preparation,
            self.decide.batch,
            self.settings.health_check.is_some(),
        )
    }

    /// What the plans need to tell their steps.
    fn telling<'a>(
        &'a self,
        observed: &'a Observed,
        min_ready_seconds: i32,
        journal: Option<&'a super::model::Journal>,
    ) -> Telling<'a> {
        Telling {
            observed,
            names: &self.executor.sides.names,
            min_ready_seconds,
            health_check: self.executor.settings.health_check.as_deref(),
            journal,
        }
    }

    async fn min_ready_seconds(&self) -> Result<i32> {
        Ok(self
            .source_set()
            .await?
            .and_then(|s| s.spec)
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0))
    }

    /// A resume keeps the flags the migration was started with: the volume mode always (the
    /// journal decides where each ordinal's data is), the health check unless told otherwise.
    fn check_resumed_flags(&self, journal: &super::model::Journal) -> Result<()> {
        if journal.volumes != self.settings.volumes {
            return Err(Error::PreflightFailed {
                problems: vec![format!(
                    "the migration of {} was started with {}; pass it again (this run has {})",
                    self.settings.name,
                    journal.volumes.flag(),
                    self.settings.volumes.flag()
                )],
            });
        }
        match (&journal.health_check, &self.settings.health_check) {
            (Some(started), None) if !self.settings.no_health_check => {
                Err(Error::PreflightFailed {
                    problems: vec![format!(
                        "the migration of {} was started with --health-check '{started}'; pass it again, or --no-health-check to go on without it",
                        self.settings.name
                    )],
                })
            }
            _ => Ok(()),
        }
    }

    /// A rollback goes back the way the journal says the migration came: with its volume mode
    /// and, unless this run names another (or --no-health-check), its health check.
    fn take_journal_flags(&mut self, journal: &super::model::Journal) {
        let settings = &mut self.executor.settings;
        settings.volumes = journal.volumes;
        if self.settings.health_check.is_none() && !self.settings.no_health_check {
            settings.health_check = journal.health_check.clone();
        }
    }

    /// What a resume asks: which way, how far it got, and the next step: `first` when the run
    /// makes something the destination lacks before the reconciler decides.
    fn resume_question(
        &self,
        stored: &Stored,
        observed: &Observed,
        first: Option<&Step>,
    ) -> String {
        let j = &stored.journal;
        // Counted by what the journal knows, ordinals verified where they are going: one moved
        // but not yet verified is neither "moved" nor "still to move".
        let (source, destination) = (
            &self.executor.sides.source.context,
            &self.executor.sides.destination.context,
        );
        let (verb, verified, place) = match j.direction {
            Direction::Forward => ("migration", j.end() - j.verified_bound, destination),
            Direction::Rollback => ("rollback", j.verified_bound - j.start, source),
        };
        let next = match first {
            Some(step) => step.clone(),
            None => decide::next_step(Some(j), observed, &self.decide),
        }
        .describe(&self.executor.sides.names);
        format!(
            "Resume the {verb} of StatefulSet {} ({source} to {destination}): {verified} of {} verified in {place}; next: {next}",
            self.settings.name,
            words::count(j.replicas, "ordinal", "ordinals")
        )
    }

    /// `--dry-run=server`: every write of the plan's `steps` (a migration's, from the namespace
    /// to the last resize, or a rollback's), sent with `dryRun=All` through the executor, each
    /// with the server's verdict. Writes into a namespace the plan creates (`create_namespace`)
    /// cannot be judged before it exists: they are listed as not checked, with that reason.
    async fn server_dry_run(
        &mut self,
        steps: &[Step],
        stored: Option<&Stored>,
        observed: &Observed,
        create_namespace: bool,
    ) -> Result<Vec<super::DryRunResult>> {
        self.executor.writer.dry_run();
        // Nothing waits in a dry run; nobody listens to notes.
        let (notes, _) = tokio::sync::mpsc::unbounded_channel();
        let names = &self.executor.sides.names;
        for step in steps {
            if matches!(step, Step::WriteJournal) && stored.is_some() {
                continue;
            }
            if create_namespace
                && step.side() == Side::Destination
                && !matches!(step, Step::CreateNamespace)
            {
                self.executor.writer.not_checked(
                    Side::Destination,
                    &step.describe(names),
                    &format!(
                        "namespace {} does not exist yet (the plan's first write creates it), so the server cannot judge writes into it",
                        names.destination_namespace
                    ),
                );
                continue;
            }
            self.executor
                .perform(step, stored, observed, &notes)
                .await?;
        }
        Ok(self.executor.writer.verdicts())
    }

    /// `--rebuild-journal`: a journal rebuilt from what both clusters show, written only
    /// where none exists, after confirmation. The next run resumes from it (or rolls back).
    async fn rebuild_journal(&self, operator: &mut dyn Operator) -> Result<Outcome> {
        let ex = &self.executor;
        if self.load_journal().await?.is_some() {
            return Err(Error::Failed {
                message: format!(
                    "the journal of {} exists; there is nothing to rebuild (see --status)",
                    self.settings.name
                ),
            });
        }
        let traces = self.traces().await?;
        let rebuilt =
            super::recover::rebuild(&traces).map_err(|message| Error::Failed { message })?;
        for warning in &rebuilt.warnings {
            operator.event(Event::Warning(warning.clone()));
        }
        let j = &rebuilt.journal;
        operator.confirm(
            &format!(
                "Write a rebuilt journal for {} in {}/{}: {} from ordinal {}, {}, {} created by the migration",
                j.name,
                ex.sides.destination.context,
                ex.sides.destination_at.namespace,
                words::count(j.replicas, "replica", "replicas"),
                j.start,
                words::count(j.original_reclaim_policies.len() as i64, "PV policy", "PV policies"),
                words::count(j.created.len() as i64, "object", "objects")
            ),
            None,
        )?;
        let written = ex
            .journal
            .create(&ex.writer, j, "write the rebuilt migration journal")
            .await?;
        if written == executor::Written::AlreadyDone {
            return Err(Error::Conflict(
                "a journal appeared while this run rebuilt it; see --status".into(),
            ));
        }
        Ok(Outcome::Rebuilt(rebuilt))
    }

    /// What the clusters show of a migration, for [`Self::rebuild_journal`].
    async fn traces(&self) -> Result<super::recover::Traces> {
        use super::copy::{COPY_LABEL, ORIGINAL_RETENTION_ANNOTATION, SOURCE_UID_ANNOTATION};
        use super::recover::{DestinationTrace, SourceTrace, Traces};
        use k8s_openapi::api::core::v1::PersistentVolumeClaim;
        let ex = &self.executor;
        let annotation = |meta: &kube::api::ObjectMeta, key: &str| {
            meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
        };
        let source_set = self.source_set().await?;
        let templates = source_set
            .as_ref()
            .map(|s| observe::set_view(s).claim_templates)
            .unwrap_or_default();
        let source = source_set.as_ref().map(|set| {
            let view = observe::set_view(set);
            SourceTrace {
                uid: view.uid,
                start: view.start,
                replicas: view.replicas,
                claim_templates: view.claim_templates,
                retention: view.retention,
                original_retention: annotation(&set.metadata, ORIGINAL_RETENTION_ANNOTATION)
                    .and_then(|text| serde_json::from_str(&text).ok()),
            }
        });
        let sets: Api<StatefulSet> = ex.sides.namespaced(Side::Destination);
        let destination = ex
            .sides
            .destination
            .call(
                "read the destination StatefulSet",
                sets.get_opt(&self.settings.name),
            )
            .await?
            .map(|set| {
                let view = observe::set_view(&set);
                DestinationTrace {
                    start: view.start,
                    replicas: view.replicas,
                    source_uid: annotation(&set.metadata, SOURCE_UID_ANNOTATION),
                }
            });
        let claims: Api<PersistentVolumeClaim> = ex.sides.namespaced(Side::Destination);
        let selector = format!("{COPY_LABEL}={}", ex.sides.destination_at.copy_label);
        let copied_ordinals = ex
            .sides
            .destination
            .call(
                "list the copied PersistentVolumeClaims",
                claims.list(&kube::api::ListParams::default().labels(&selector)),
            )
            .await?
            .items
            .iter()
            .filter_map(|c| c.metadata.name.as_deref())
            .filter_map(|name| observe::claim_ordinal(&templates, &self.settings.name, name))
            .collect();
        let observed = self
            .observe_with(&observe::Scope {
                templates: templates.clone(),
                budgets: Vec::new(),
            })
            .await?;
        let source_volumes = observed.source.volumes.keys();
        // With fresh volumes, the destination's own PVs (not copies): those this migration set to
        // Retain keep their original policy in the same annotation.
        let destination_volumes = observed
            .destination
            .volumes
            .iter()
            .filter(|(_, v)| !v.copied)
            .map(|(name, _)| name);
        let volumes = self.volume_traces(Side::Source, source_volumes).await?;
        let destination_volumes = self
            .volume_traces(Side::Destination, destination_volumes)
            .await?;
        Ok(Traces {
            name: self.settings.name.clone(),
            source_context: ex.sides.source.context.clone(),
            source_server: ex.sides.source.server.clone(),
            source_namespace: ex.sides.source_at.namespace.clone(),
            destination_namespace: ex.sides.destination_at.namespace.clone(),
            health_check: self.settings.health_check.clone(),
            source,
            destination,
            copied_ordinals,
            volumes,
            destination_volumes,
            created: executor::dependencies::created_objects(&ex.writer).await?,
            budgets: executor::disruption::traces(&ex.writer).await?,
            volume_mode: self.settings.volumes,
        })
    }

    /// The PVs `names` on `side` as they are now: each one's policy and the original policy the
    /// annotation protection left on it keeps.
    async fn volume_traces(
        &self,
        side: Side,
        names: impl Iterator<Item = &String>,
    ) -> Result<std::collections::BTreeMap<String, super::recover::VolumeTrace>> {
        use k8s_openapi::api::core::v1::PersistentVolume;
        let cluster = self.executor.sides.cluster(side);
        let api: Api<PersistentVolume> = Api::all(cluster.client.clone());
        let mut traces = std::collections::BTreeMap::new();
        for name in names {
            let Some(pv) = cluster
                .call(&format!("read PV {name}"), api.get_opt(name))
                .await?
            else {
                continue;
            };
            let policy = pv
                .spec
                .as_ref()
                .and_then(|s| s.persistent_volume_reclaim_policy.clone())
                .unwrap_or_else(|| "Retain".into());
            let original = pv
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(super::copy::ORIGINAL_POLICY_ANNOTATION))
                .cloned();
            traces.insert(
                name.clone(),
                super::recover::VolumeTrace { policy, original },
            );
        }
        Ok(traces)
    }

    /// Takes `batch` ordinals per step for `--batch auto`, and says why.
    fn use_auto_batch(&mut self, batch: i32, budget: Option<&str>, operator: &mut dyn Operator) {
        self.decide.batch = batch;
        operator.event(Event::Warning(match budget {
            Some(name) => format!(
                "--batch auto: {} per step, as many as PodDisruptionBudget {name} allows",
                words::count(batch, "ordinal", "ordinals")
            ),
            None => "--batch auto: no PodDisruptionBudget selects the set, so one ordinal per step"
                .into(),
        }));
    }

    /// Rolls back, asking first unless the run decided it already (`ask` false:
    /// `--on-timeout=rollback`); with a dry run, only plans it (and has the servers judge its
    /// writes).
    async fn rollback(
        &mut self,
        dry_run: DryRun,
        operator: &mut dyn Operator,
        ask: bool,
    ) -> Result<Outcome> {
        let Some(stored) = self.load_journal().await? else {
            let leftovers = self.leftovers().await?;
            if !leftovers.is_empty() {
                return self.remove_leftovers(&leftovers, operator).await;
            }
            let message = format!(
                "no migration of {} found (no journal {} in {}/{}); nothing to roll back",
                self.settings.name,
                journal::object_name(&self.settings.name),
                self.executor.sides.destination.context,
                self.executor.sides.destination_at.namespace
            );
            if self.settings.selected {
                operator.event(Event::Warning(message));
                return Ok(Outcome::Finished);
            }
            return Err(Error::Failed { message });
        };
        self.take_journal_flags(&stored.journal);
        if stored.journal.cleaned_up {
            return Err(Error::Failed {
                message: "the source's objects were removed by --cleanup; a rollback is no longer possible".into(),
            });
        }
        if self.settings.batch == Batch::Auto {
            let (batch, budget) =
                super::budget::auto_batch(&stored.journal.budgets, stored.journal.replicas);
            self.use_auto_batch(batch, budget, operator);
        }
        let observed = self.observe(Some(&stored)).await?;
        let min_ready_seconds = self.min_ready_seconds().await?;
        let plan = plan::rollback_plan(
            &self.telling(&observed, min_ready_seconds, Some(&stored.journal)),
            &stored.journal,
            self.decide.batch,
        );
        if dry_run != DryRun::None {
            let server_dry_run = match dry_run {
                DryRun::Server => {
                    let steps = plan::rollback_steps(
                        &stored.journal,
                        &observed,
                        self.decide.batch,
                        self.executor.settings.health_check.is_some(),
                    );
                    self.server_dry_run(&steps, Some(&stored), &observed, false)
                        .await?
                }
                _ => vec![],
            };
            return Ok(Outcome::Planned(PlanOutput {
                schema_version: 1,
                plan,
                warnings: vec![],
                server_dry_run,
            }));
        }
        let turn = stored.journal.direction == Direction::Forward;
        let question = if turn {
            format!(
                "Roll back StatefulSet {}: move its ordinals from {} back to {}",
                self.settings.name,
                self.executor.sides.destination.context,
                self.executor.sides.source.context
            )
        } else {
            self.resume_question(&stored, &observed, None)
        };
        if ask {
            operator.confirm(&question, Some(&plan))?;
        }
        // Turning the journal is a write: it too waits for the lease.
        self.catching_ctrl_c(async {
            let held = self.take_lease(operator).await?;
            let result = self
                .turn_and_roll_back(turn, &stored, &observed, operator)
                .await;
            self.give_back_lease(held, result, operator).await
        })
        .await?;
        Ok(Outcome::Finished)
    }

    /// What a rollback does holding the lease: turn the journal (unless it is turned already),
    /// then the loop.
    async fn turn_and_roll_back(
        &self,
        turn: bool,
        stored: &Stored,
        observed: &Observed,
        operator: &mut dyn Operator,
    ) -> Result<()> {
        if turn {
            let source_end = observed
                .source
                .set
                .as_ref()
                .map(|s| s.start + s.replicas)
                .unwrap_or(stored.journal.start);
            let ex = &self.executor;
            ex.journal
                .update(
                    &ex.writer,
                    Some(stored),
                    "turn the journal to a rollback",
                    |j| {
                        j.direction = Direction::Rollback;
                        j.complete = false;
                        j.verified_bound = source_end;
                    },
                )
                .await?;
        }
        self.reconcile_loop(Direction::Rollback, operator).await
    }

    async fn cleanup(
        &self,
        restore_reclaim_policy: bool,
        operator: &mut dyn Operator,
    ) -> Result<Outcome> {
        let ex = &self.executor;
        let stored = self.load_journal().await?;
        if stored.is_none() {
            let leftovers = self.leftovers().await?;
            if !leftovers.is_empty() {
                return self.remove_leftovers(&leftovers, operator).await;
            }
        }
        let observed = match &stored {
            Some(s) => self.observe(Some(s)).await?,
            None => Observed::default(),
        };
        let plan = cleanup::judge(
            &self.settings.name,
            stored.as_ref().map(|s| &s.journal),
            &observed,
            restore_reclaim_policy,
            &ex.sides.source.context,
        )
        .map_err(|message| Error::Failed { message })?;
        let Some(stored) = stored else {
            return Err(Error::Failed {
                message: cleanup::no_migration(&self.settings.name),
            });
        };
        if plan.is_empty() {
            return Ok(Outcome::Cleaned(cleanup::CleanupReport {
                schema_version: 1,
                note: Some(format!(
                    "{} is already cleaned up in {}; nothing to do",
                    self.settings.name, ex.sides.source.context
                )),
                ..Default::default()
            }));
        }
        operator.confirm(&cleanup::question(&plan, &self.settings.name, ex), None)?;
        let held = self.take_lease(operator).await?;
        let result = cleanup::perform(ex, &plan, &stored).await;
        let report = self.give_back_lease(held, result, operator).await?;
        Ok(Outcome::Cleaned(report))
    }
}
