//! The reconciler: observe both clusters, decide the next step, perform it, repeat, telling the
//! operator each step's start and end. Everything here is derived from what is observed, so a
//! rerun after a crash needs no resume code of its own.
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};

use super::decide;
use super::down::OrdinalsDown;
use super::executor::{NotReadyInTime, Note};
use super::journal::{self, Stored};
use super::lease;
use super::model::{Direction, Journal, Side};
use super::observe::Scope;
use super::run::Run;
use super::step::Step;
use super::watched::Watched;
use super::{Event, Observe, Operator, StepEvent, StepGate, StepPhase};
use crate::error::{Error, Result};

/// Errors worth retrying: the server is restarting, overloaded, or an object moved under us.
pub(crate) fn is_transient(err: &Error) -> bool {
    match err {
        Error::Timeout { .. } | Error::Conflict(_) => true,
        Error::Cluster { source, .. } => match source.as_ref() {
            kube::Error::Api(s) => s.code >= 500 || s.code == 429 || s.code == 409,
            _ => true,
        },
        _ => false,
    }
}

/// How observations and steps are retried through outages: about a minute in all.
fn retry_policy() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(300))
        .with_max_delay(Duration::from_secs(5))
        .with_max_times(20)
}

/// A step that takes ordinals away from the side that currently runs them.
fn starts_a_move(step: &Step, direction: Direction) -> bool {
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

/// PURE: the ordinals `step` waits to arrive on the side that receives them in `direction`
/// (the destination forward, the source in a rollback): gone from the other side already.
fn arriving(step: &Step, direction: Direction) -> Option<&[i32]> {
    match (step, direction) {
        (
            Step::WaitReady {
                side: Side::Destination,
                ordinals,
            },
            Direction::Forward,
        )
        | (
            Step::WaitReady {
                side: Side::Source,
                ordinals,
            },
            Direction::Rollback,
        ) => Some(ordinals),
        _ => None,
    }
}

/// How far the migration has come by its journal: ordinals verified where they are going.
fn tell_progress(journal: &Journal, operator: &mut dyn Operator) {
    let moved = match journal.direction {
        Direction::Forward => journal.end() - journal.verified_bound,
        Direction::Rollback => journal.verified_bound - journal.start,
    };
    operator.event(Event::Progress {
        moved: moved.max(0) as u64,
        total: journal.replicas.max(0) as u64,
    });
}

/// How long the reconciler waits for the watch caches to show its last step.
const CATCH_UP: Duration = Duration::from_secs(2);

/// What the last step leaves the next observation to wait for, when it comes from caches.
enum After {
    Nothing,
    /// The loop starts: only the journal the preparation wrote, if not shown yet.
    Start(tokio::time::Instant),
    /// The step was done: its effect, i.e. a decision other than the step again.
    Done(Step, tokio::time::Instant),
    /// An object changed between observing and acting: any event after the one the step
    /// was decided on (counted by `Watched::subscribe`).
    Conflict(u64, tokio::time::Instant),
}

impl After {
    fn performed(step: Step, done: bool, decided_on: u64) -> After {
        let deadline = tokio::time::Instant::now() + CATCH_UP;
        if done {
            After::Done(step, deadline)
        } else {
            After::Conflict(decided_on, deadline)
        }
    }

    fn deadline(&self) -> tokio::time::Instant {
        match self {
            After::Nothing => tokio::time::Instant::now(),
            After::Start(d) | After::Done(_, d) | After::Conflict(_, d) => *d,
        }
    }

    /// Whether the caches, as of event `seen`, which make `next` the decision, may not show
    /// the last step yet (`stale_journal`: the journal it wrote is not shown).
    fn waits_for(&self, seen: u64, stale_journal: bool, next: impl FnOnce() -> Step) -> bool {
        match self {
            After::Nothing => false,
            After::Start(_) => stale_journal,
            After::Done(step, _) => stale_journal || repeats(step, &next()),
            After::Conflict(decided_on, _) => seen <= *decided_on,
        }
    }
}

/// Whether the journal `stored` (from the caches) is older than the run's last write of it:
/// missing right after the preparation created it (next to the destination set it made, which
/// without the journal is a reason to stop), or a version behind after a step's decision moved
/// on before its journal write showed (wait-ready records the ordinal verified), where an
/// update would only conflict.
fn stale_journal(ex: &super::executor::Executor, stored: Option<&Stored>) -> bool {
    match (ex.journal.written(), stored) {
        (Some(written), Some(s)) => s.resource_version != written,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// PURE: whether `next` is `last` again, as a cache that has not caught up decides it: the
/// same step, or the PVs of a protection that are not shown protected yet.
fn repeats(last: &Step, next: &Step) -> bool {
    match (last, next) {
        (
            Step::ProtectVolumes { side, volumes },
            Step::ProtectVolumes {
                side: next_side,
                volumes: left,
            },
        ) => side == next_side && left.iter().all(|v| volumes.contains(v)),
        _ => last == next,
    }
}

impl Run<'_> {
    /// Makes what the destination lacks (`preparation`, see `plan::forward_steps`), then drives
    /// the migration in `direction` until it is done. All of it holds the migration's Lease
    /// but a namespace the run creates: the Lease lives in it, so that comes first.
    pub async fn reconcile(
        &self,
        direction: Direction,
        preparation: &[Step],
        operator: &mut dyn Operator,
    ) -> Result<()> {
        let (namespace, rest): (Vec<&Step>, Vec<&Step>) = preparation
            .iter()
            .partition(|s| matches!(s, Step::CreateNamespace));
        // The watches list while the preparation runs.
        self.start_watching();
        self.catching_ctrl_c(async {
            for step in namespace {
                self.prepare(step, operator).await?;
            }
            let held = self.take_lease(operator).await?;
            let result = self.leased_part(direction, rest, operator).await;
            self.give_back_lease(held, result, operator).await
        })
        .await
    }

    /// What [`Run::reconcile`] does holding the lease: the rest of the preparation, then the
    /// loop.
    async fn leased_part(
        &self,
        direction: Direction,
        rest: Vec<&Step>,
        operator: &mut dyn Operator,
    ) -> Result<()> {
        // This run found the migration unfinished; finished now, another run drove it while
        // this one waited for the lease: that is no success of this run's.
        if direction == Direction::Forward
            && let Some(stored) = self.load_journal().await?
            && stored.journal.complete
        {
            return Err(Error::CompletedByAnother {
                name: self.settings.name.clone(),
                holder: stored
                    .journal
                    .completed_by
                    .unwrap_or_else(|| "unknown".into()),
            });
        }
        for step in rest {
            self.prepare(step, operator).await?;
        }
        self.reconcile_loop(direction, operator).await
    }

    /// Starts the watches the loop observes through, once (unless polling is asked for, see
    /// [`Observe`]); the executor's waits use them too.
    fn start_watching(&self) {
        self.end_start_up();
        let ex = &self.executor;
        if ex.waits.watched().is_none() && self.settings.observe == Observe::Watch {
            let at = [&ex.sides.source_at, &ex.sides.destination_at];
            let watched = match &self.on_hub {
                Some(on) => Watched::start_on(
                    &on.hub,
                    [&on.source, &on.destination],
                    at,
                    &self.settings.name,
                ),
                None => Watched::start(
                    [&ex.sides.source, &ex.sides.destination],
                    at,
                    &self.settings.name,
                ),
            };
            ex.waits.watch_with(Some(Arc::new(watched)));
        }
    }

    /// Gives back this run's turn to start up on the hub (if any): the next run may read its
    /// namespaces.
    fn end_start_up(&self) {
        drop(crate::sync::lock(&self.start_up).take());
    }

    /// Runs `work` with Ctrl-C turned into a stop at the next safe point.
    pub(super) async fn catching_ctrl_c<T>(&self, work: impl Future<Output = T>) -> T {
        let interrupt = self.interrupt().clone();
        let _caught = crate::interrupt::catching(move || interrupt.trigger());
        work.await
    }

    /// Takes the migration's Lease for the writes of a run: a live holder refuses this run, a
    /// silent one is taken over; it is checked before each write and at each safe point, and
    /// given back by [`Run::give_back_lease`] at the end. (Not one function taking the work as
    /// an async closure: such closures make the run's future lose `Send`, a compiler limit, and
    /// the controller spawns that future as a task.)
    pub(super) async fn take_lease(&self, operator: &mut dyn Operator) -> Result<lease::Held> {
        // Its reads are done: waiting for a lease (up to its duration) is no start-up.
        self.end_start_up();
        let ex = &self.executor;
        let held = lease::acquire(
            &ex.sides.destination,
            &ex.sides.destination_at.namespace,
            &self.settings.name,
            &self.settings.holder,
            &mut |e: Event<'_>| operator.event(e),
        )
        .await?;
        ex.writer.hold(Some(held.clone()));
        Ok(held)
    }

    /// Gives back the lease of [`Run::take_lease`] once the work ended with `result`; a lost
    /// lease stops the run resumably.
    pub(super) async fn give_back_lease<T>(
        &self,
        held: lease::Held,
        result: Result<T>,
        operator: &mut dyn Operator,
    ) -> Result<T> {
        self.executor.writer.hold(None);
        held.release().await;
        result.map_err(|e| match e {
            Error::LeaseLost { reason } => self.stopped(reason, operator),
            other => other,
        })
    }

    /// One step of the preparation, on the journal as it is now, until it is done (a conflict
    /// means the journal changed under it: read it again).
    async fn prepare(&self, step: &Step, operator: &mut dyn Operator) -> Result<()> {
        for _ in 0..5 {
            if self.interrupt().is_set() {
                return Err(self.stopped(
                    format!("{} at a safe point", self.interrupt().reason()),
                    operator,
                ));
            }
            let stored = self.load_journal().await?;
            if matches!(step, Step::WriteJournal) && stored.is_some() {
                return Ok(());
            }
            // The journal records the source as it is when the journal is written.
            let observed = match step {
                Step::WriteJournal => self.observe(None).await?,
                _ => Default::default(),
            };
            if self
                .perform(step, stored.as_ref(), &observed, retry_policy(), operator)
                .await?
            {
                return Ok(());
            }
        }
        Err(Error::Failed {
            message: format!(
                "the migration journal kept changing while this run tried to {}; is another kubectl-migrate running?",
                step.describe(&self.executor.sides.names)
            ),
        })
    }

    fn stopped(&self, reason: impl Into<String>, operator: &dyn Operator) -> Error {
        Error::Stopped {
            reason: reason.into(),
            resume: operator.resume_command(),
        }
    }

    /// Says which steps could not be recorded as Events (with `all`, waiting for the last).
    async fn tell_unrecorded(&self, all: bool, operator: &mut dyn Operator) {
        for e in self.executor.events.unrecorded(all).await {
            operator.event(Event::Detail(
                1,
                format!("could not record the step as a Kubernetes Event: {e}"),
            ));
        }
    }

    /// [`Run::reconcile_steps`]; then its watches end, and the last steps' Events are written
    /// before the run ends.
    pub(super) async fn reconcile_loop(
        &self,
        direction: Direction,
        operator: &mut dyn Operator,
    ) -> Result<()> {
        let result = self.reconcile_steps(direction, operator).await;
        // The watches end with the loop, however it ends.
        self.executor.waits.watch_with(None);
        self.tell_unrecorded(true, operator).await;
        result
    }

    /// The loop: observe, decide, perform, until the migration is done or must stop.
    async fn reconcile_steps(
        &self,
        direction: Direction,
        operator: &mut dyn Operator,
    ) -> Result<()> {
        let ex = &self.executor;
        let mut seen_journal = false;
        // Moves done so far, and the one the operator approved (--step) until it is done: a
        // move decided again after a conflict is the same move, asked about once.
        let mut moves = 0usize;
        let mut approved: Option<Step> = None;
        // The way the ordinals go: a rollback brings them back to the source.
        let (from, to) = (&ex.sides.source.context, &ex.sides.destination.context);
        operator.event(Event::LoopStarted {
            title: match direction {
                Direction::Forward => format!("{} {from}->{to}", self.settings.name),
                Direction::Rollback => format!("{} rollback {to}->{from}", self.settings.name),
            },
        });
        let mut scope: Option<Scope> = None;
        let retry = retry_policy();
        self.start_watching();
        let watched = ex.waits.watched();
        let mut changes = watched.as_ref().map(|w| w.subscribe());
        let mut after = After::Start(tokio::time::Instant::now() + CATCH_UP);
        // The last view from the caches and the count of watch events it was built at: with no
        // event since, the caches hold the same objects, so it is used again rather than built
        // again (right after a step whose effect has not shown yet, or a catch-up that timed out).
        let mut last: Option<(u64, Option<Stored>, super::model::Observed)> = None;
        loop {
            if ex.waits.interrupt.is_set() {
                return Err(self.stopped(
                    format!("{} at a safe point", self.interrupt().reason()),
                    operator,
                ));
            }
            // A safe point: go on only while the lease is ours (after a SIGSTOP, say).
            ex.writer.ensure_lease().await?;
            let observing = Instant::now();
            // The caches' version before their snapshot is taken.
            let seen = changes.as_mut().map_or(0, |c| *c.borrow_and_update());
            let (stored, observed) = match last.take() {
                Some((at, stored, observed)) if changes.is_some() && at == seen => {
                    (stored, observed)
                }
                // Reads that hang on an unreachable server end when the lease is lost.
                _ => {
                    let observation =
                        self.observation(watched.as_deref(), scope.as_ref(), retry, operator);
                    tokio::select! {
                        biased;
                        observed = observation => observed?,
                        reason = ex.writer.lease_lost() => return Err(Error::LeaseLost { reason }),
                    }
                }
            };
            // The caches may not show the last step's writes yet: wait for them (briefly; a
            // cache that lags longer only costs a repeated, idempotent step).
            if let Some(changes) = &mut changes
                && after.waits_for(seen, stale_journal(ex, stored.as_ref()), || {
                    decide::next_step(stored.as_ref().map(|s| &s.journal), &observed, &self.decide)
                })
            {
                let catching_up = tokio::time::timeout_at(after.deadline(), changes.changed());
                tokio::select! {
                    caught_up = catching_up => if caught_up.is_err() {
                        after = After::Nothing;
                    },
                    // Ctrl-C is handled at the top of the loop.
                    () = ex.waits.interrupt.wait() => {}
                }
                last = Some((seen, stored, observed));
                continue;
            }
            operator.event(Event::Detail(
                2,
                format!(
                    "observed both clusters in {} ms",
                    observing.elapsed().as_millis()
                ),
            ));
            if scope.is_none() {
                scope = stored.as_ref().map(|s| Scope::of(&s.journal));
            }
            match (&stored, direction) {
                (None, Direction::Rollback) => {
                    self.rolled_back(&observed, operator);
                    return Ok(());
                }
                (None, Direction::Forward) if seen_journal => {
                    return Err(self.journal_disappeared(operator));
                }
                (Some(_), _) => seen_journal = true,
                _ => {}
            }
            let step =
                decide::next_step(stored.as_ref().map(|s| &s.journal), &observed, &self.decide);
            if let Some(s) = &stored {
                tell_progress(&s.journal, operator);
            }
            match &step {
                Step::Done => {
                    let offer = super::cleanup::offer(
                        &self.settings.name,
                        stored.as_ref().map(|s| &s.journal),
                        &observed,
                        &ex.sides.source.context,
                    )
                    .map(|offer| format!("\nOnce it serves well there, {offer}."))
                    .unwrap_or_default();
                    operator.event(Event::Finished(format!(
                        "Done: {} runs in {} ({}).{offer}",
                        self.settings.name,
                        ex.sides.destination.context,
                        ex.sides.destination_at.namespace
                    )));
                    return Ok(());
                }
                Step::Stop { reason } => {
                    return Err(Error::Unsafe {
                        reason: reason.clone(),
                        resume: operator.resume_command(),
                    });
                }
                _ => {}
            }
            let direction_now = stored
                .as_ref()
                .map(|s| s.journal.direction)
                .unwrap_or(Direction::Forward);
            let a_move = starts_a_move(&step, direction_now);
            if self.settings.step && a_move && approved.as_ref() != Some(&step) {
                self.ask_before_move(&step, moves, operator)?;
                approved = Some(step.clone());
            }
            let done = self
                .perform(&step, stored.as_ref(), &observed, retry, operator)
                .await?;
            if done && a_move {
                moves += 1;
                approved = None;
            }
            after = After::performed(step, done, seen);
            last = Some((seen, stored, observed));
        }
    }

    /// The journal and both clusters, from the watch caches or (polling) by requests, retried
    /// through API server restarts: nothing is decided on a partial view. The claim templates
    /// never change during a migration, so once they are known (`scope`) the journal and both
    /// clusters are read at the same time.
    fn observation(
        &self,
        watched: Option<&Watched>,
        scope: Option<&Scope>,
        retry: ExponentialBuilder,
        operator: &mut dyn Operator,
    ) -> impl Future<Output = Result<(Option<Stored>, super::model::Observed)>> {
        (move || async move {
            if let Some(w) = watched {
                w.ready().await;
                return w.snapshot();
            }
            match scope {
                Some(t) => tokio::try_join!(self.load_journal(), self.observe_with(t)),
                None => {
                    let stored = self.load_journal().await?;
                    let observed = self.observe(stored.as_ref()).await?;
                    Ok((stored, observed))
                }
            }
        })
        .retry(retry)
        .when(is_transient)
        .notify(|e, delay| {
            operator.event(Event::Retrying {
                message: e.to_string(),
                delay,
            })
        })
    }

    /// The rollback removed its journal: everything is back in the source.
    fn rolled_back(&self, observed: &super::model::Observed, operator: &mut dyn Operator) {
        let sides = &self.executor.sides;
        // The destination's controller made these claims, so the rollback keeps them;
        // preflight refuses a new migration over them, so say it here.
        let kept: Vec<&str> = observed
            .destination
            .claims
            .keys()
            .map(String::as_str)
            .collect();
        if !self.executor.settings.volumes.is_shared() && !kept.is_empty() {
            operator.event(Event::Warning(format!(
                "kept in {}/{}: {}, made for the moved pods (--volumes=fresh), their PVs back at \
                 the reclaim policies they had before this migration; a new migration will not start over them, \
                 so delete them once their data is not needed",
                sides.destination.context,
                sides.destination_at.namespace,
                super::words::named(&kept, "PVC", "PVCs")
            )));
        }
        operator.event(Event::Finished(format!(
            "Rolled back: {} runs in {} ({}).",
            self.settings.name, sides.source.context, sides.source_at.namespace
        )));
    }

    /// A forward migration lost the journal it had: nothing is decided without it.
    fn journal_disappeared(&self, operator: &dyn Operator) -> Error {
        Error::Unsafe {
            reason: format!(
                "the migration journal {} disappeared from {}",
                journal::object_name(&self.settings.name),
                self.executor.sides.destination.context
            ),
            resume: operator.resume_command(),
        }
    }

    /// With --step, asks before a move; a pause or a no stops the run resumably.
    fn ask_before_move(
        &self,
        step: &Step,
        moves: usize,
        operator: &mut dyn Operator,
    ) -> Result<()> {
        let description = step.describe(&self.executor.sides.names);
        match operator.before_move(&description, moves) {
            Ok(StepGate::Go) => Ok(()),
            Ok(StepGate::Pause) => Err(self.stopped("paused after one step (--step)", operator)),
            // A Ctrl-C at the question reached this run's catcher too.
            Err(Error::Cancelled(_)) if self.interrupt().is_set() => Err(self.stopped(
                "interrupted (Ctrl-C) before the next ordinal (--step)",
                operator,
            )),
            Err(Error::Cancelled(_)) => {
                Err(self.stopped("the next ordinal was not confirmed (--step)", operator))
            }
            Err(other) => Err(other),
        }
    }

    /// One step, retried through outages, with its events. `false` when it must be decided
    /// again (an object changed between observing and acting, or Ctrl-C cut it short).
    async fn perform(
        &self,
        step: &Step,
        stored: Option<&Stored>,
        observed: &super::model::Observed,
        retry: ExponentialBuilder,
        operator: &mut dyn Operator,
    ) -> Result<bool> {
        let ex = &self.executor;
        // Every step starts with the lease ours and fresh, whether or not it writes at once.
        ex.writer.ensure_lease().await?;
        let cluster = ex.sides.names.context(step.side()).to_string();
        let description = step.describe(&ex.sides.names);
        let event = |phase, elapsed, waited, error| {
            Event::Step(StepEvent {
                phase,
                step,
                cluster: &cluster,
                description: &description,
                elapsed,
                waited,
                error,
            })
        };
        operator.event(event(StepPhase::Started, None, None, None));
        let started = Instant::now();
        // What the step waits for, and retries, come from inside it while it runs.
        let (notes, mut told) = tokio::sync::mpsc::unbounded_channel();
        let retries = notes.clone();
        let work = (|| ex.perform(step, stored, observed, &notes))
            // Every step is idempotent, so an outage mid-step is retried as long as an
            // outage during observation is; a conflict instead means: decide again.
            .retry(retry)
            .when(|e| is_transient(e) && !matches!(e, Error::Conflict(_)))
            .notify(|e, delay| {
                let _ = retries.send(Note::Retrying {
                    message: e.to_string(),
                    delay,
                });
            });
        tokio::pin!(work);
        let told_as = |note| match note {
            Note::Waiting { pod, reason } => Some(Event::Waiting { pod, reason }),
            Note::Retrying { message, delay } => Some(Event::Retrying { message, delay }),
            Note::Kept(why) => Some(Event::Warning(why)),
            Note::Waited(_) => None,
        };
        // Of the step's time, how much it waited for the cluster (see `Note::Waited`).
        let mut waited = Duration::ZERO;
        let mut tell = |note: Note, operator: &mut dyn Operator| {
            if let Note::Waited(d) = note {
                waited += d;
            }
            if let Some(e) = told_as(note) {
                operator.event(e);
            }
        };
        let result = loop {
            tokio::select! {
                result = &mut work => break result,
                Some(note) = told.recv() => tell(note, operator),
                // A wait, or a request that hangs, must not outlast the lease: the step is
                // dropped as a crash would end it, and every step is idempotent.
                reason = ex.writer.lease_lost() => break Err(Error::LeaseLost { reason }),
            }
        };
        // A note sent just before the step ended (a Kept one is) may not have been read yet.
        while let Ok(note) = told.try_recv() {
            tell(note, operator);
        }
        let elapsed = Some(started.elapsed());
        match result {
            // A wait cut short by Ctrl-C did not finish: the next run decides it again.
            Ok(()) if ex.waits.interrupt.is_set() => {
                operator.event(event(
                    StepPhase::Retried,
                    elapsed,
                    None,
                    Some(format!(
                        "{}; stopping at a safe point",
                        ex.waits.interrupt.reason()
                    )),
                ));
                Ok(false)
            }
            Ok(()) => {
                let waited = (!waited.is_zero()).then_some(waited);
                operator.event(event(StepPhase::Finished, elapsed, waited, None));
                let rollback = stored.is_some_and(|s| s.journal.direction == Direction::Rollback);
                let uids = [Side::Source, Side::Destination]
                    .map(|side| observed.side(side).set.as_ref().map(|s| s.uid.clone()));
                ex.events
                    .record(&ex.writer, step, &description, rollback, uids);
                self.tell_unrecorded(false, operator).await;
                Ok(true)
            }
            // Someone changed an object between observing and acting: decide again.
            Err(Error::Conflict(m)) => {
                operator.event(event(
                    StepPhase::Retried,
                    elapsed,
                    None,
                    Some(format!("{m}; deciding again")),
                ));
                Ok(false)
            }
            Err(e) => {
                operator.event(event(StepPhase::Failed, elapsed, None, Some(e.to_string())));
                Err(match e {
                    // Stopped by the person at the terminal: still a clean stop.
                    Error::Cancelled(reason) => self.stopped(reason, operator),
                    stop @ (Error::Stopped { .. }
                    | Error::Unsafe { .. }
                    | Error::LeaseLost { .. }) => stop,
                    timed_out if timed_out.domain::<NotReadyInTime>().is_some() => {
                        let direction = stored.map_or(Direction::Forward, |s| s.journal.direction);
                        match arriving(step, direction) {
                            Some(ordinals) => self.down(ordinals, direction, &timed_out, operator),
                            None => self.failed(timed_out, operator),
                        }
                    }
                    other => self.failed(other, operator),
                })
            }
        }
    }

    /// Anything else (an error, an outage that outlasted the retries) leaves a state the next
    /// run resumes from; say how.
    fn failed(&self, error: Error, operator: &dyn Operator) -> Error {
        Error::Failed {
            message: format!(
                "{}\nThe migration can be resumed with:\n  {}",
                error.report(),
                operator.resume_command()
            ),
        }
    }

    /// `ordinals` did not become Ready where they were going: they are down.
    fn down(
        &self,
        ordinals: &[i32],
        direction: Direction,
        timed_out: &Error,
        operator: &dyn Operator,
    ) -> Error {
        let names = &self.executor.sides.names;
        let (from, to) = match direction {
            Direction::Forward => (&names.source_context, &names.destination_context),
            Direction::Rollback => (&names.destination_context, &names.source_context),
        };
        let resume = operator.resume_command();
        OrdinalsDown {
            set: names.set.clone(),
            ordinals: ordinals.to_vec(),
            from: from.clone(),
            to: to.clone(),
            detail: timed_out.to_string(),
            rollback: (direction == Direction::Forward).then(|| rollback_command(&resume)),
            resume,
        }
        .into()
    }
}

/// PURE: the command that rolls back what `resume` (a forward run's command) migrates: the
/// same flags, with `--rollback` instead of `--on-timeout` (a rollback has no other way on).
pub fn rollback_command(resume: &str) -> String {
    let words: Vec<&str> = resume
        .split(' ')
        .filter(|w| !w.starts_with("--on-timeout"))
        .collect();
    format!("{} --rollback", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rollback_command_is_the_run_with_rollback_and_no_timeout_policy() {
        assert_eq!(
            rollback_command("kubectl migrate statefulset web -n db --on-timeout=rollback --yes"),
            "kubectl migrate statefulset web -n db --yes --rollback"
        );
    }

    #[test]
    fn only_a_wait_on_the_receiving_side_leaves_ordinals_down() {
        let ready = |side| Step::WaitReady {
            side,
            ordinals: vec![2],
        };
        assert_eq!(
            arriving(&ready(Side::Destination), Direction::Forward),
            Some(&[2][..])
        );
        assert_eq!(
            arriving(&ready(Side::Source), Direction::Rollback),
            Some(&[2][..])
        );
        assert_eq!(arriving(&ready(Side::Source), Direction::Forward), None);
        let gone = Step::WaitPodsGone {
            side: Side::Source,
            ordinals: vec![2],
        };
        assert_eq!(arriving(&gone, Direction::Forward), None);
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

    #[test]
    fn the_caches_are_waited_for_until_they_show_the_last_step() {
        let protect = |v: &[&str]| Step::ProtectVolumes {
            side: Side::Source,
            volumes: v.iter().map(|s| s.to_string()).collect(),
        };
        let shrink = Step::Resize {
            side: Side::Source,
            start: 0,
            replicas: 2,
        };
        // The same step again, or PVs of the protection not shown protected yet: wait.
        assert!(repeats(&shrink, &shrink.clone()));
        assert!(repeats(&protect(&["a", "b"]), &protect(&["b"])));
        // Anything else is the next step.
        assert!(!repeats(&protect(&["a"]), &protect(&["a", "c"])));
        assert!(!repeats(&shrink, &Step::MarkComplete));
        let done = After::performed(shrink.clone(), true, 7);
        assert!(done.waits_for(8, false, || shrink.clone()));
        assert!(!done.waits_for(8, false, || Step::MarkComplete));
        // A journal write not shown yet holds the next decision too.
        assert!(done.waits_for(8, true, || Step::MarkComplete));
        // After a conflict, only an event newer than the decision's is worth deciding on.
        let conflict = After::performed(shrink.clone(), false, 7);
        assert!(conflict.waits_for(7, false, || Step::MarkComplete));
        assert!(!conflict.waits_for(8, false, || shrink.clone()));
        assert!(!After::Nothing.waits_for(0, true, || shrink.clone()));
        let start = After::Start(tokio::time::Instant::now());
        assert!(start.waits_for(0, true, || shrink.clone()));
        assert!(!start.waits_for(0, false, || shrink.clone()));
    }

    #[test]
    fn only_steps_that_take_ordinals_away_are_moves() {
        let shrink_source = Step::Resize {
            side: Side::Source,
            start: 0,
            replicas: 2,
        };
        let grow_destination = Step::Resize {
            side: Side::Destination,
            start: 2,
            replicas: 1,
        };
        assert!(starts_a_move(&shrink_source, Direction::Forward));
        assert!(!starts_a_move(&grow_destination, Direction::Forward));
        assert!(starts_a_move(&grow_destination, Direction::Rollback));
        assert!(!starts_a_move(&Step::MarkComplete, Direction::Forward));
    }
}
