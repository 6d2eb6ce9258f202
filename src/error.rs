//! One error type for the whole tool. Each variant knows the exit code it maps to, so that
//! `main` only has to print it and exit.
use std::time::Duration;

/// Exit codes shared by every subcommand (documented in the README).
pub mod exit {
    pub const OK: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    /// Stopped by the user (Ctrl-C, a declined prompt) or at a --step pause; rerun to resume.
    pub const STOPPED: u8 = 3;
    /// Preflight checks failed; nothing was written.
    pub const PREFLIGHT: u8 = 4;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags that parse but make no sense together, or values that fail validation.
    #[error("{0}")]
    Usage(String),

    #[error("cannot read kubeconfig: {0}")]
    Kubeconfig(String),

    #[error("context {context:?} not found in {source_desc}; available contexts: {}", list_or_none(.available))]
    ContextNotFound {
        context: String,
        source_desc: String,
        available: Vec<String>,
    },

    #[error("no context given and {source_desc} has no current-context; pass --context (available contexts: {})", list_or_none(.available))]
    NoCurrentContext {
        source_desc: String,
        available: Vec<String>,
    },

    #[error("cluster {context:?} ({server}) did not answer within {} (--request-timeout)", humanize(*.timeout))]
    Timeout {
        context: String,
        server: String,
        timeout: Duration,
    },

    #[error("cluster {context:?} ({server}): {message}")]
    Cluster {
        context: String,
        server: String,
        message: String,
        #[source]
        source: Option<Box<kube::Error>>,
    },

    /// A confirmation was needed but nobody can answer it.
    #[error(
        "{action} needs confirmation, but stdin is not a terminal; pass --yes to proceed without prompting"
    )]
    ConfirmationNeeded { action: String },

    #[error("cancelled: {0}")]
    Cancelled(String),

    #[error("cannot write output: {0}")]
    Output(String),

    /// A resumable stop: Ctrl-C, a declined prompt, or a --step pause.
    #[error("{reason}; nothing is half-done. Resume with:\n  {resume}")]
    Stopped { reason: String, resume: String },

    /// Preflight found problems; nothing was written.
    #[error("preflight failed, nothing was changed:\n{}", bullet_list(.problems))]
    PreflightFailed { problems: Vec<String> },

    /// The migration cannot go on safely; the clusters are left as they are.
    #[error("{reason}\nNothing more was changed. After fixing it, resume with:\n  {resume}")]
    Unsafe { reason: String, resume: String },

    /// An object changed between observing and acting; deciding again on fresh state fixes it.
    #[error("{0}")]
    Conflict(String),

    /// Anything else that went wrong while running.
    #[error("{message}")]
    Failed { message: String },

    /// Bad input (a file that does not parse, is not what was expected, ...): names the input.
    #[error("{0}")]
    Input(String),

    /// Another error, with the exit code a command's contract demands (schema-diff: >= 2).
    #[error("{inner}")]
    WithExitCode { code: u8, inner: Box<Error> },
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Input(_) => exit::USAGE,
            Error::WithExitCode { code, .. } => *code,
            Error::Stopped { .. } | Error::Cancelled(_) => exit::STOPPED,
            Error::PreflightFailed { .. } => exit::PREFLIGHT,
            _ => exit::ERROR,
        }
    }
}

impl Error {
    /// Raises the exit code to at least `code` (kubectl diff's contract: errors exit >= 2).
    pub fn exit_at_least(self, code: u8) -> Error {
        if self.exit_code() >= code {
            self
        } else {
            Error::WithExitCode {
                code,
                inner: Box::new(self),
            }
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::Output(err.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn bullet_list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("  - {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Renders a duration the way it was most likely typed (`5s`, `1m30s`, `250ms`).
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 {
        out += &format!("{s}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_others_exit_1() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Cancelled("x".into()).exit_code(), 3);
        assert_eq!(Error::PreflightFailed { problems: vec![] }.exit_code(), 4);
        assert_eq!(
            Error::Failed {
                message: "x".into()
            }
            .exit_code(),
            1
        );
        let raised = Error::Failed {
            message: "x".into(),
        }
        .exit_at_least(2);
        assert_eq!((raised.exit_code(), raised.to_string().as_str()), (2, "x"));
        assert_eq!(Error::Input("f".into()).exit_at_least(2).exit_code(), 2);
    }

    #[test]
    fn context_not_found_lists_the_available_ones() {
        let err = Error::ContextNotFound {
            context: "prod".into(),
            source_desc: "KUBECONFIG".into(),
            available: vec!["km-a".into(), "km-b".into()],
        };
        assert_eq!(
            err.to_string(),
            "context \"prod\" not found in KUBECONFIG; available contexts: km-a, km-b"
        );
    }

    #[test]
    fn durations_render_as_typed() {
        assert_eq!(humanize(Duration::from_secs(5)), "5s");
        assert_eq!(humanize(Duration::from_secs(90)), "1m30s");
        assert_eq!(humanize(Duration::from_secs(3600)), "1h");
        assert_eq!(humanize(Duration::from_millis(250)), "250ms");
    }
}
