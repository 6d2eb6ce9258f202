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

/// Runs `health_check` (not in a dry run) for `ordinals` on `side`, then records them as
/// verified.
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
            run_health_check(w, interrupt, command, side, *k).await?;
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

async fn run_health_check(
    w: &Writer,
    interrupt: &Interrupt,
    command: &str,
    side: Side,
    k: i32,
) -> Result<()> {
    let sides = &w.sides;
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("ORDINAL", k.to_string())
        .env("POD", pod_name(&sides.names.set, k))
        .env("NAMESPACE", &sides.location(side).namespace)
        .env("CONTEXT", sides.context(side))
        // stdout carries our data (-o json); the check's output goes to stderr.
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .stdin(std::process::Stdio::null())
        .status()
        .await
        .map_err(|source| Error::Io {
            what: format!("run the health check `{command}`"),
            source,
        })?;
    // The terminal's Ctrl-C reaches the check too; our own flag may not be set yet.
    let interrupted = std::os::unix::process::ExitStatusExt::signal(&status) == Some(2);
    if !status.success() && (interrupted || interrupt.is_set()) {
        let why = if interrupted {
            "interrupted (Ctrl-C)"
        } else {
            interrupt.reason()
        };
        return Err(Error::Cancelled(format!(
            "{why} during the health check of ordinal {k}"
        )));
    }
    if !status.success() {
        return Err(Error::Failed {
            message: format!(
                "health check `{command}` failed for ordinal {k} in {} ({status}); the migration stopped with ordinal {k} running in {}",
                sides.context(side),
                sides.context(side)
            ),
        });
    }
    Ok(())
}
