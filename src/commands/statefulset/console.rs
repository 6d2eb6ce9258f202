//! The statefulset run's operator at the other end of the terminal or pipe: prompts and a
//! progress bar on stderr (on a terminal), event lines on stderr, or one JSON event per line on
//! stdout with -o json.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::ProgressState;
use serde::Serialize;
use serde_json::Value;

use crate::duration::humanize;
use crate::error::{Error, Result};
use crate::output;
use crate::statefulset::{Event, Operator, Plan, StepGate, StepPhase, plan::plan_text};

/// The version of the JSON event lines.
const EVENTS_SCHEMA_VERSION: u32 = 1;

pub struct Console {
    json: bool,
    yes: bool,
    interactive: bool,
    resume: String,
    /// In a selection (-l/--all): the set this console speaks for, named on each line.
    set: Option<String>,
    /// Whether a progress bar may show (not when several sets run at once).
    bars: bool,
    bar: Option<output::Progress>,
    clock: Arc<Mutex<Clock>>,
}

/// What the progress line's clocks need.
#[derive(Debug)]
struct Clock {
    /// When the current step began.
    step: Instant,
    /// When this run's first move was counted, and the ordinals moved before it.
    first: Option<(Instant, u64)>,
    moved: u64,
    total: u64,
}

impl Clock {
    /// What is left, judged by the pace of this run's moves so far.
    fn estimate(&self) -> Option<Duration> {
        let (since, before) = self.first?;
        let moved = self.moved.checked_sub(before).filter(|m| *m > 0)?;
        let left = self.total.saturating_sub(self.moved);
        Some(since.elapsed().mul_f64(left as f64 / moved as f64))
    }
}

/// One line of `-o json`: the kind of event and what it says.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    schema_version: u32,
    /// RFC 3339 in UTC, to the millisecond: the one time format of the stream.
    time: String,
    event: &'a str,
    #[serde(flatten)]
    fields: Value,
}

impl Console {
    pub fn new(json: bool, yes: bool, resume: String) -> Console {
        Console {
            json,
            yes,
            interactive: output::interactive(),
            resume,
            set: None,
            bars: true,
            bar: None,
            clock: Arc::new(Mutex::new(Clock {
                step: Instant::now(),
                first: None,
                moved: 0,
                total: 0,
            })),
        }
    }

    /// The console of one set of a selection: the selection asked its one question already,
    /// each line names the set, and a progress bar shows only when `bars` (one set at a time).
    /// The set this console speaks for, when it is one of a selection.
    pub fn set(&self) -> Option<&str> {
        self.set.as_deref()
    }

    pub fn for_set(json: bool, resume: String, set: &str, bars: bool) -> Console {
        Console {
            set: Some(set.to_string()),
            bars,
            ..Console::new(json, true, resume)
        }
    }

    /// The plan on stderr, each line tagged with the set's name in a selection.
    pub fn show_plan(&self, plan: &Plan) {
        let text = plan_text(plan);
        match &self.set {
            None => anstream::eprint!("{}", output::fill(&text)),
            Some(_) => anstream::eprintln!("{}", output::fill(&self.tagged(&text))),
        }
    }

    /// A line on stderr tagged with the set's name (a selection's preview of a refusal).
    pub fn say(&self, text: &str) {
        anstream::eprintln!("{}", output::fill(&self.tagged(text)));
    }

    /// `text` with the set's name in front of each line, in a selection.
    fn tagged(&self, text: &str) -> String {
        match &self.set {
            None => text.to_string(),
            Some(set) => text
                .lines()
                .map(|l| format!("[{set}] {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// A line on stderr that does not tear the progress bar, broken to the terminal's width.
    fn line(&self, text: String) {
        let text = output::fill(&self.tagged(&text));
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.println(text),
            _ => anstream::eprintln!("{text}"),
        }
    }

    fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// With -o json: one event on stdout.
    fn emit(&self, event: &str, fields: Value) {
        if !self.json {
            return;
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let time = now
            .round(k8s_openapi::jiff::Unit::Millisecond)
            .unwrap_or(now);
        let mut fields = fields;
        if let (Some(set), Some(object)) = (&self.set, fields.as_object_mut()) {
            object.insert("statefulset".into(), set.clone().into());
        }
        let line = Line {
            schema_version: EVENTS_SCHEMA_VERSION,
            time: format!("{time:.3}"),
            event,
            fields,
        };
        if let Err(err) = output::print_json_line(&line) {
            output::warn(err.report());
        }
    }

    /// Clears the progress bar; the run is over (done, stopped or failed, Ctrl-C included).
    pub fn close(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// The last event of `-o json`: how the run ended, with the exit code the process gives.
    pub fn done(&self, error: Option<&Error>) {
        let (result, code, message) = (
            result_word(error),
            error.map_or(0, Error::exit_code),
            error.map(Error::report),
        );
        self.emit(
            "done",
            serde_json::json!({"result": result, "exitCode": code, "message": message}),
        );
    }

    /// The progress display: the step (or why it waits) over the count of ordinals moved and
    /// the clocks: on this step, in all, and once an ordinal has moved, an estimate of the rest
    /// (kept longest when the terminal is narrow).
    fn progress(&self, title: &str) -> output::Progress {
        let clock = self.clock.clone();
        output::progress(title, move |state: &ProgressState| {
            let Ok(clock) = clock.lock() else {
                return Vec::new();
            };
            let mut extras = vec![
                format!(", {} on this step", whole_seconds(clock.step.elapsed())),
                format!(", {} in all", whole_seconds(state.elapsed())),
            ];
            extras.extend(
                clock
                    .estimate()
                    .map(|rest| format!(", about {} left", whole_seconds(rest))),
            );
            extras
        })
    }
}

/// The word the `done` event (and a selection's summary) uses for how a run ended.
pub fn result_word(error: Option<&Error>) -> &'static str {
    match error {
        None => "succeeded",
        Some(Error::Stopped { .. } | Error::Cancelled(_)) => "stopped",
        Some(
            Error::PreflightFailed { .. }
            | Error::Usage(_)
            | Error::LeaseHeld { .. }
            | Error::CompletedByAnother { .. },
        ) => "refused",
        Some(_) => "failed",
    }
}

/// A duration as a person reads a clock: whole seconds, `0s` at the start.
fn whole_seconds(d: Duration) -> String {
    humanize(Duration::from_secs(d.as_secs()))
}

impl Operator for Console {
    fn confirm(&mut self, action: &str, plan: Option<&Plan>) -> Result<()> {
        if let Some(plan) = plan
            && !self.json
        {
            self.show_plan(plan);
        }
        let yes = self.yes;
        self.suspend(|| output::confirm(action, yes))
    }

    fn before_move(&mut self, description: &str, moves: usize) -> Result<StepGate> {
        if self.interactive && !self.yes {
            self.suspend(|| output::confirm(description, false))?;
            Ok(StepGate::Go)
        } else if moves > 0 {
            self.close();
            Ok(StepGate::Pause)
        } else {
            Ok(StepGate::Go)
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Detail(level, text) => output::log(level, self.tagged(&text)),
            Event::Warning(text) => self.suspend(|| output::warn(self.tagged(&text))),
            Event::LoopStarted { title } if self.bars => self.bar = Some(self.progress(&title)),
            Event::LoopStarted { .. } => {}
            Event::Progress { moved, total } => {
                if let Ok(mut clock) = self.clock.lock() {
                    if clock.first.is_none() {
                        clock.first = Some((Instant::now(), moved));
                    }
                    clock.moved = moved;
                    clock.total = total;
                }
                if let Some(bar) = &self.bar {
                    bar.set_length(total);
                    bar.set_position(moved);
                }
            }
            Event::Retrying { message, delay } => {
                self.emit(
                    "retrying",
                    serde_json::json!({"message": message, "delayMs": u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)}),
                );
                self.suspend(|| {
                    output::warn(self.tagged(&format!(
                        "{message}; retrying in {:.1}s",
                        delay.as_secs_f64()
                    )))
                });
            }
            Event::Waiting { pod, reason } => {
                self.emit("waiting", serde_json::json!({"pod": pod, "reason": reason}));
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("waiting for {pod}: {reason}"));
                }
                if !self.json {
                    self.line(format!("   waiting for {pod}: {reason}"));
                }
            }
            Event::Finished(text) => {
                let summary = self.clock.lock().ok().and_then(|c| {
                    let (since, before) = c.first?;
                    let moved = c.moved.checked_sub(before)?;
                    // Counted as the journal counts them, verified where they went: a
                    // resume that only had verification left moved nothing.
                    Some(format!(
                        " {} verified there in {}.",
                        output::counted(moved, "ordinal"),
                        whole_seconds(since.elapsed())
                    ))
                });
                self.close();
                if !self.json {
                    // The summary ends the first line; what follows it (the next step) stays
                    // below.
                    let summary = summary.unwrap_or_default();
                    let text = match text.split_once('\n') {
                        Some((first, rest)) => format!("{first}{summary}\n{rest}"),
                        None => format!("{text}{summary}"),
                    };
                    anstream::eprintln!("{}", output::fill(&self.tagged(&text)));
                }
            }
            Event::Step(e) => {
                if e.phase == StepPhase::Started {
                    if let Ok(mut clock) = self.clock.lock() {
                        clock.step = Instant::now();
                    }
                    if let Some(bar) = &self.bar {
                        bar.set_message(e.description.to_string());
                    }
                }
                if self.json {
                    self.emit(step_event_name(e.phase), step_fields(&e));
                    return;
                }
                let ms = e.elapsed.map(|d| d.as_millis());
                let error = e.error.unwrap_or_default();
                let text = match (e.phase, ms) {
                    (StepPhase::Started, _) => format!("-> {}", e.description),
                    (StepPhase::Failed, Some(ms)) => {
                        format!("   failed after {ms} ms: {error}")
                    }
                    (StepPhase::Retried, _) => format!("   {error}"),
                    (_, Some(ms)) => format!("   done in {ms} ms"),
                    _ => return,
                };
                self.line(text);
            }
        }
    }

    fn resume_command(&self) -> String {
        self.resume.clone()
    }
}

fn step_event_name(phase: StepPhase) -> &'static str {
    match phase {
        StepPhase::Started => "step-started",
        StepPhase::Finished => "step-finished",
        StepPhase::Retried => "step-retried",
        StepPhase::Failed => "step-failed",
    }
}

/// A step's event fields: its kind as `step`, the ordinals it concerns, where it acts, and
/// its own fields under `detail` (each key once).
fn step_fields(e: &crate::statefulset::StepEvent<'_>) -> Value {
    let mut detail = serde_json::to_value(e.step).unwrap_or(Value::Null);
    let kind = detail
        .as_object_mut()
        .and_then(|d| d.remove("step"))
        .unwrap_or(Value::Null);
    if let Some(d) = detail.as_object_mut() {
        d.remove("ordinals");
        d.remove("ordinal");
    }
    let mut fields = serde_json::json!({
        "step": kind,
        "ordinals": e.step.ordinals(),
        "cluster": e.cluster,
        "description": e.description,
        "detail": detail,
    });
    if let Some(elapsed) = e.elapsed {
        fields["elapsedMs"] = u64::try_from(elapsed.as_millis())
            .unwrap_or(u64::MAX)
            .into();
    }
    if let Some(waited) = e.waited {
        fields["waitedMs"] = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX).into();
    }
    if let Some(error) = &e.error {
        fields["error"] = error.clone().into();
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::model::Side;
    use crate::statefulset::{Step, StepEvent};

    #[test]
    fn a_step_event_names_each_field_once() {
        let step = Step::WaitReady {
            side: Side::Destination,
            ordinals: vec![3, 4],
        };
        let finished = StepEvent {
            phase: StepPhase::Finished,
            step: &step,
            cluster: "km-b",
            description: "wait",
            elapsed: Some(Duration::from_millis(1500)),
            waited: None,
            error: None,
        };
        let fields = step_fields(&finished);
        assert_eq!(
            fields,
            serde_json::json!({"step": "wait-ready", "ordinals": [3, 4], "cluster": "km-b",
                "description": "wait", "detail": {"side": "destination"}, "elapsedMs": 1500})
        );
        let text = serde_json::to_string(&Line {
            schema_version: 1,
            time: "t".into(),
            event: "step-finished",
            fields,
        })
        .unwrap();
        assert_eq!(text.matches("\"ordinals\"").count(), 1, "{text}");
        // A step that waited for the cluster says how long, apart from its own time.
        let copy = step_fields(&StepEvent {
            description: "copy",
            elapsed: Some(Duration::from_millis(30)),
            waited: Some(Duration::from_millis(12)),
            ..finished
        });
        assert_eq!(
            (copy["elapsedMs"].as_u64(), copy["waitedMs"].as_u64()),
            (Some(30), Some(12))
        );
    }

    #[test]
    fn the_estimate_follows_this_runs_pace() {
        let clock = Clock {
            step: Instant::now(),
            first: Some((Instant::now() - Duration::from_secs(20), 1)),
            moved: 3,
            total: 5,
        };
        let left = clock.estimate().unwrap().as_secs_f64();
        assert!((19.0..21.5).contains(&left), "{left}");
        let fresh = Clock {
            first: Some((Instant::now(), 2)),
            moved: 2,
            ..clock
        };
        assert_eq!(
            fresh.estimate(),
            None,
            "no estimate before this run moved one"
        );
    }
}
