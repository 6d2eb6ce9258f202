//! Ordinals that arrived on a side: the health check run for each (`sh -c`, with the ordinal's
//! names in its environment), then the journal's record of them as verified.
use super::journaling::Journaling;
use super::waits::Interrupt;
use super::writer::Writer;
use crate::error::{Error, Result};
use crate::statefulset::decide::verified_bound_after;
use crate::statefulset::journal::Stored;
use crate::statefulset::model::{Side, pod_name};
use crate::statefulset::words;
use rustix::process::{Pid, Signal};

/// Runs `health_check` (not in a dry run) for `ordinals` on `side`, then records them as
/// verified. When the run stops meanwhile, the check is abandoned and nothing is recorded.
pub async fn verify(
    w: &Writer,
    journal: &Journaling,
    health_check: Option<&str>,
    interrupt: &Interrupt,
    side: Side,
    ordinals: &[i32],
    stored: Option<&Stored>,
) -> Result<()> {
    if let Some(command) = health_check
        && !w.is_dry_run()
    {
        for k in ordinals {
            if run_health_check(w, interrupt, command, side, *k).await? == Checked::Abandoned {
                // Not recorded as verified: the next run checks them again. The loop stops at
                // its safe point, as after a wait cut short.
                return Ok(());
            }
        }
    }
    journal
        .update(
            w,
            stored,
            &format!("record {} as verified", words::ordinals(ordinals)),
            |j| j.verified_bound = verified_bound_after(j.direction, ordinals, j.verified_bound),
        )
        .await
}

/// How a health check ended, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
enum Checked {
    Passed,
    /// The run is stopping (Ctrl-C, the controller's shutdown) and the check did not wait for
    /// it: a check can hang for as long as it likes, and a stop must not.
    Abandoned,
}

/// The check as it runs: a process group of its own, killed whole when the check is abandoned
/// or its step dropped (its outcome is no longer used, and whatever the command started goes
/// with it). A group of its own also keeps the terminal's Ctrl-C to us, which abandons it.
struct Running(tokio::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        // No id once it has been waited for: then it ended by itself.
        let group = self.0.id().and_then(|id| Pid::from_raw(id as i32));
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }
}

async fn run_health_check(
    w: &Writer,
    interrupt: &Interrupt,
    command: &str,
    side: Side,
    k: i32,
) -> Result<Checked> {
    let sides = &w.sides;
    let io_error = |source| Error::Io {
        what: format!("run the health check `{command}`"),
        source,
    };
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("ORDINAL", k.to_string())
        .env("POD", pod_name(&sides.names.set, k))
        .env("NAMESPACE", &sides.location(side).namespace)
        .env("CONTEXT", sides.context(side))
        // stdout carries our data (-o json); the check's output goes to stderr.
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(io_error)?;
    let mut running = Running(child);
    let status = tokio::select! {
        status = running.0.wait() => status.map_err(io_error)?,
        () = interrupt.wait() => return Ok(Checked::Abandoned),
    };
    if !status.success() {
        return Err(Error::Failed {
            message: format!(
                "health check `{command}` failed for ordinal {k} in {} ({status}); the migration stopped with ordinal {k} running in {}",
                sides.context(side),
                sides.context(side)
            ),
        });
    }
    Ok(Checked::Passed)
}
