//! The error of ordinals left running nowhere: the reconciler raises it, the run answers it
//! (`--on-timeout`), so it lives apart from both.
use super::words;

/// Ordinals that left one side and did not become Ready on the other within --timeout: they
/// serve nowhere. The run stops with the pods' reasons and both ways on.
#[derive(Debug)]
pub struct OrdinalsDown {
    pub set: String,
    pub ordinals: Vec<i32>,
    pub from: String,
    pub to: String,
    /// What was waited for, and why the pods are not Ready.
    pub detail: String,
    pub resume: String,
    /// The command that moves them back; none in a rollback.
    pub rollback: Option<String>,
}

impl std::fmt::Display for OrdinalsDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let OrdinalsDown {
            set,
            ordinals,
            from,
            to,
            ..
        } = self;
        write!(
            f,
            "{} of {set} {} down: gone from {from}, not Ready in {to}.\n{}\nNothing more was changed. After fixing the cause, keep waiting with:\n  {}",
            words::ordinals(ordinals),
            words::noun(ordinals.len() as i64, "is", "are"),
            self.detail,
            self.resume
        )?;
        if let Some(rollback) = &self.rollback {
            let them = words::noun(self.ordinals.len() as i64, "it", "them");
            write!(f, "\nor move {them} back to {from} with:\n  {rollback}")?;
        }
        Ok(())
    }
}

impl std::error::Error for OrdinalsDown {}

impl crate::error::DomainError for OrdinalsDown {}
