//! One error type for the whole tool. Each variant knows the exit code it maps to, so that
//! `main` only has to print it and exit.
use std::time::Duration;

use crate::duration::humanize;

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

/// Any error that can go with a [`std::error::Error`]: the cause of an input or encoding error.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags that parse but make no sense together, or values that fail validation.
    #[error("{0}")]
    Usage(String),

    /// The kubeconfig file (or the files of $KUBECONFIG) cannot be read or parsed.
    #[error("cannot read kubeconfig: {source_desc}")]
    Kubeconfig {
        source_desc: String,
        #[source]
        source: kube::config::KubeconfigError,
    },

    /// The kubeconfig was read, but the context chosen cannot be used as it is.
    #[error("cannot read kubeconfig: {source_desc}: context {context:?}: {message}")]
    KubeconfigContext {
        source_desc: String,
        context: String,
        message: String,
        #[source]
        source: Option<kube::config::KubeconfigError>,
    },

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

    /// An API call failed; `message` says what was being done and the server's reason.
    #[error("cluster {context:?} ({server}): {message}")]
    Cluster {
        context: String,
        server: String,
        message: String,
        #[source]
        source: Box<kube::Error>,
    },

    /// A confirmation was needed but nobody can answer it.
    #[error(
        "{action} needs confirmation, but stdin is not a terminal; pass --yes to proceed without prompting"
    )]
    ConfirmationNeeded { action: String },

    #[error("cancelled: {0}")]
    Cancelled(String),

    /// The terminal could not be used (a prompt could not be shown or answered).
    #[error("cannot {what} on the terminal")]
    Terminal {
        what: &'static str,
        #[source]
        source: Cause,
    },

    /// Reading or writing a file or stream failed; `what` names it ("write to stdout").
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },

    /// Data could not be written in the chosen format.
    #[error("cannot write the output as {format}")]
    Encode {
        format: &'static str,
        #[source]
        source: Cause,
    },

    /// A resumable stop: Ctrl-C, a declined prompt, or a --step pause.
    #[error("{reason}; nothing is half-done. Resume with:\n  {resume}")]
    Stopped { reason: String, resume: String },

    /// Preflight found problems; nothing was written.
    #[error("preflight failed, nothing was changed:\n{}", bullet_list(.problems))]
    PreflightFailed { problems: Vec<String> },

    /// The migration cannot go on safely; the clusters are left as they are.
    #[error("{reason}\nNothing more was changed. After fixing it, resume with:\n  {resume}")]
    Unsafe { reason: String, resume: String },

    /// Another kubectl-migrate holds the migration's Lease and is alive (`seen` says how this
    /// run knows); this run wrote nothing of the migration.
    #[error(
        "another kubectl-migrate ({holder}) is driving this migration: {seen} ({lease}). Nothing was moved by this run; run it again when that one has finished. If that one was stopped or killed, the next run takes the lease over once it has gone unrenewed for {}", humanize(*.duration)
    )]
    LeaseHeld {
        holder: String,
        lease: String,
        seen: String,
        duration: Duration,
    },

    /// This run no longer holds the migration's Lease (taken over, deleted, or not renewed in
    /// time); it stops before its next write. The run turns it into [`Error::Stopped`].
    #[error("{reason}")]
    LeaseLost { reason: String },

    /// An object changed between observing and acting; deciding again on fresh state fixes it.
    #[error("{0}")]
    Conflict(String),

    /// Anything else that went wrong while running.
    #[error("{message}")]
    Failed { message: String },

    /// Bad input: `input` names the file, stream or flag value, `message` what is wrong with it.
    #[error("{input}: {message}")]
    Input {
        input: String,
        message: String,
        #[source]
        source: Option<Cause>,
    },

    /// An object the API server would refuse, in the server's own words (`input` names the file).
    #[error("{message}")]
    Invalid { input: String, message: String },

    /// Input that names something no source has (a CRD, a Job).
    #[error("{0}")]
    NotFound(String),

    /// Another error, with the exit code a command's contract demands (schema-diff: >= 2).
    #[error("{inner}")]
    WithExitCode {
        code: u8,
        #[source]
        inner: Box<Error>,
    },
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Input { .. } | Error::Invalid { .. } | Error::NotFound(_) => {
                exit::USAGE
            }
            Error::WithExitCode { code, .. } => *code,
            Error::Stopped { .. } | Error::Cancelled(_) | Error::LeaseLost { .. } => exit::STOPPED,
            Error::PreflightFailed { .. } => exit::PREFLIGHT,
            _ => exit::ERROR,
        }
    }

    /// The HTTP status an API server answered with, for errors that are such an answer.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Error::Cluster { source, .. } => match source.as_ref() {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            _ => None,
        }
    }

    /// Bad input named by `input`, with nothing underneath.
    pub fn input(input: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Input {
            input: input.into(),
            message: message.into(),
            source: None,
        }
    }

    /// Bad input named by `input` because of `cause`; the message is `what: cause` (or the
    /// cause alone when `what` is empty).
    pub fn input_because(
        input: impl Into<String>,
        what: &str,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        let message = if what.is_empty() {
            cause.to_string()
        } else {
            format!("{what}: {cause}")
        };
        Error::Input {
            input: input.into(),
            message,
            source: Some(Box::new(cause)),
        }
    }

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

    /// The message and every cause under it that adds something, as printed for the user.
    pub fn report(&self) -> String {
        match self {
            // kube's own message repeats the path, in quotes within quotes; ours names it.
            Error::Kubeconfig {
                source: kube::config::KubeconfigError::ReadConfig(io, _),
                ..
            } => with_causes(format!("{self}: {io}"), std::error::Error::source(io)),
            _ => with_causes(self.to_string(), std::error::Error::source(self)),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` followed by each cause in the chain from `cause` that it does not already spell out,
/// joined by ": ". Libraries nest their causes; users need the innermost reason ("connection
/// refused"), not only "client error".
pub fn with_causes(mut text: String, cause: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut source = cause;
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = cause.source();
    }
    text
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_others_exit_1() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Cancelled("x".into()).exit_code(), 3);
        assert_eq!(Error::PreflightFailed { problems: vec![] }.exit_code(), 4);
        let lost = Error::LeaseLost { reason: "x".into() };
        assert_eq!(lost.exit_code(), 3, "a lost lease is a resumable stop");
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
        assert_eq!(Error::input("f", "bad").exit_at_least(2).exit_code(), 2);
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
    fn the_report_adds_causes_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = Error::Io {
            what: "read a.yaml".into(),
            source: io,
        };
        assert_eq!(err.report(), "cannot read a.yaml: no such file");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = Error::input_because("a.yaml", "", io);
        assert_eq!(err.report(), "a.yaml: no such file");
        let wrapped = err.exit_at_least(3);
        assert_eq!(wrapped.report(), "a.yaml: no such file");
    }
}
