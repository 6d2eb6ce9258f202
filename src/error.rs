//! One error type for the whole tool. Each variant knows the exit code it maps to, so that
//! `main` only has to print it and exit.
//!
//! How errors are written, in every layer:
//! - A message is words a user can act on: what happened, to what, and where it helps the next
//!   command. Never Rust debug output (`{:?}`, `Some(..)`, `Status { .. }`): a library's error
//!   reaches the user through [`Error::report`] (or [`with_causes`]), which says kube's errors in
//!   kubectl's words ([`request`]) and every other cause once.
//! - A failure that a caller branches on, or that has a cause to keep, is a type: a `thiserror`
//!   enum in the domain's module, a variant per case callers tell apart, the error underneath
//!   as `#[source]` (never only its `to_string()` in a message).
//!   The enum implements [`DomainError`], whose `exit_code` says how the process ends (1 unless
//!   it says otherwise); `?` turns it into [`Error::Domain`] where it meets this type, and a
//!   caller further up still gets it back with [`Error::domain`]. Its `Display` says what went
//!   wrong in its own words; the causes are added by the report.
//! - The variants below are the failures every layer shares (usage, input, cluster, stops).
//!   [`Error::Failed`] is for the rest: a message with no cause, which no caller branches on.
//! - Exit codes are the README's ("Exit codes"): a new code is a constant in [`exit`] and a row
//!   there.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::duration::humanize;

pub mod request;

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

/// A domain's own error type (see the module's docs): it says how the process ends.
///
/// ```text
/// #[derive(Debug, thiserror::Error)]
/// pub enum JournalError {
///     #[error("the journal {name} was written by a newer kubectl-migrate ({version})")]
///     TooNew { name: String, version: String },
///     #[error("cannot read the journal {name}")]
///     Read { name: String, #[source] source: crate::error::Error },
/// }
/// impl crate::error::DomainError for JournalError {}  // exit 1; or override exit_code
/// ```
pub trait DomainError: std::error::Error + Send + Sync + 'static {
    /// The process's exit code when this error ends a command: [`exit::ERROR`] unless the
    /// failure is the user's input ([`exit::USAGE`]) or a resumable stop ([`exit::STOPPED`]).
    fn exit_code(&self) -> u8 {
        exit::ERROR
    }
}

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

    #[error(
        "cluster {context:?} ({server}) did not answer within {} (--request-timeout); check that it is up, or give it longer with --request-timeout", humanize(*.timeout)
    )]
    Timeout {
        context: String,
        server: String,
        timeout: Duration,
    },

    /// An API call failed: `what` was being done (`list pods`), `source` says why, in kubectl's
    /// words (see [`request`]) and with the next command for the failures a user can fix.
    #[error("cluster {context:?} ({server}): {}", cluster_failure(.what, .source, .server, .context, .kubeconfig.as_deref()))]
    Cluster {
        context: String,
        server: String,
        what: String,
        /// The --kubeconfig the context came from, if one was named: the next command names it.
        kubeconfig: Option<PathBuf>,
        #[source]
        source: Box<kube::Error>,
    },

    /// A confirmation was needed but nobody can answer it.
    #[error(
        "{action} needs confirmation, but stdin is not a terminal; pass --yes to proceed without prompting"
    )]
    ConfirmationNeeded { action: String },

    /// The person at the terminal did not let the command go on: a question answered no, or
    /// Ctrl-C at a question. The text says what stopped and what was left.
    #[error("{0}")]
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

    /// Stdout was closed before the data was all written: its reader has what it wanted
    /// (`| head -1`). `main` ends the process quietly, as SIGPIPE ends kubectl.
    #[error("stdout was closed before the output was all written")]
    StdoutClosed,

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

    /// Another kubectl-migrate completed the migration while this run waited for the Lease or
    /// prepared; this run wrote nothing of the migration.
    #[error(
        "another kubectl-migrate ({holder}) completed the migration of {name} while this run waited for its turn. Nothing was moved by this run; see the result with --status"
    )]
    CompletedByAnother { name: String, holder: String },

    /// This run no longer holds the migration's Lease (taken over, deleted, or not renewed in
    /// time); it stops before its next write. The run turns it into [`Error::Stopped`].
    #[error("{reason}")]
    LeaseLost { reason: String },

    /// An object changed between observing and acting; deciding again on fresh state fixes it.
    #[error("{0}")]
    Conflict(String),

    /// Anything else that went wrong while running: a message with no cause, which no caller
    /// branches on (otherwise a domain error, see [`DomainError`]).
    #[error("{message}")]
    Failed { message: String },

    /// A domain's own error, with the exit code it asked for ([`DomainError::exit_code`]).
    #[error("{source}")]
    Domain {
        code: u8,
        #[source]
        source: Cause,
    },

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
            Error::WithExitCode { code, .. } | Error::Domain { code, .. } => *code,
            Error::Stopped { .. } | Error::Cancelled(_) | Error::LeaseLost { .. } => exit::STOPPED,
            Error::PreflightFailed { .. } => exit::PREFLIGHT,
            _ => exit::ERROR,
        }
    }

    /// Whether this is (or wraps) [`Error::StdoutClosed`].
    pub fn is_stdout_closed(&self) -> bool {
        match self {
            Error::StdoutClosed => true,
            Error::WithExitCode { inner, .. } => inner.is_stdout_closed(),
            _ => false,
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

    /// The domain error `E` this is (or wraps), for a caller that decides on it.
    pub fn domain<E: DomainError>(&self) -> Option<&E> {
        match self {
            Error::Domain { source, .. } => source.downcast_ref(),
            Error::WithExitCode { inner, .. } => inner.domain(),
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
            // Said in full by its message, the server's words included.
            Error::Cluster { .. } => self.to_string(),
            Error::WithExitCode { inner, .. } => inner.report(),
            _ => with_causes(self.to_string(), std::error::Error::source(self)),
        }
    }
}

/// `?` on a domain error: it becomes [`Error::Domain`] with the exit code it asks for.
impl<E: DomainError> From<E> for Error {
    fn from(err: E) -> Error {
        Error::Domain {
            code: err.exit_code(),
            source: Box::new(err),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` followed by each cause in the chain from `cause` that it does not already spell out,
/// joined by ": ". Libraries nest their causes; users need the innermost reason ("connection
/// refused"), not only "client error". An [`Error`] among the causes adds its own report, and
/// a kube error its kubectl words ([`request`]), which end the chain: what is under them is in
/// those words already. hyper's client error only names its kind (`client error (Connect)`)
/// and is left out.
pub fn with_causes(mut text: String, cause: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut source = cause;
    while let Some(cause) = source {
        source = cause.source();
        if cause.is::<hyper_util::client::legacy::Error>() {
            continue;
        }
        let (part, last) = if let Some(ours) = cause.downcast_ref::<Error>() {
            (ours.report(), true)
        } else if let Some(kube) = cause.downcast_ref::<kube::Error>() {
            (request::in_words(kube, None), true)
        } else if let Some(config) = cause.downcast_ref::<kube::config::KubeconfigError>() {
            (kubeconfig_in_words(config), true)
        } else {
            (cause.to_string(), false)
        };
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        if last {
            break;
        }
    }
    text
}

/// A kubeconfig that cannot be used, in words: kube quotes the paths it names as Rust strings
/// inside quotes (`'"/etc/ca.crt"'`).
pub fn kubeconfig_in_words(err: &kube::config::KubeconfigError) -> String {
    use kube::config::{KubeconfigError as Config, LoadDataError as Data};
    let load = |what: &str, data: &Data| match data {
        Data::ReadFile(io, path) => format!("cannot read the {what} file {}: {io}", path.display()),
        other => with_causes(
            format!("cannot load the {what}"),
            Some(other as &(dyn std::error::Error + 'static)),
        ),
    };
    match err {
        Config::ReadConfig(io, path) => format!("cannot read {}: {io}", path.display()),
        Config::LoadCertificateAuthority(data) => load("certificate authority", data),
        Config::LoadClientCertificate(data) => load("client certificate", data),
        Config::LoadClientKey(data) => load("client key", data),
        other => with_causes(other.to_string(), std::error::Error::source(other)),
    }
}

/// What the message of [`Error::Cluster`] says after the cluster: what was being done, why it
/// failed in kubectl's words, and for the failures a user can fix, the command to look further.
fn cluster_failure(
    what: &str,
    source: &kube::Error,
    server: &str,
    context: &str,
    kubeconfig: Option<&Path>,
) -> String {
    use request::Failure;
    let why = request::in_words(source, Some(server));
    let said = if what.is_empty() {
        why
    } else {
        format!("{what}: {why}")
    };
    let kubectl = |args: &str| {
        let file = kubeconfig
            .map(|k| format!(" --kubeconfig {}", shell_word(&k.display().to_string())))
            .unwrap_or_default();
        format!("kubectl {args}{file} --context {}", shell_word(context))
    };
    let view = || kubectl("config view --minify");
    let next = match request::classify(source) {
        Failure::Answered => return said,
        Failure::Unauthorized => format!(
            "renew the credentials of context {context:?}, then check them with {}",
            kubectl("auth whoami")
        ),
        Failure::Forbidden => format!(
            "to see what context {context:?} may do: {}",
            kubectl("auth can-i --list")
        ),
        Failure::Refused => format!("check the server of context {context:?} with {}", view()),
        Failure::Tls => format!(
            "check the server and the certificate authority of context {context:?} with {}",
            view()
        ),
        Failure::Credentials => format!("check the user of context {context:?} with {}", view()),
        Failure::Unreachable => format!("check the server of context {context:?} with {}", view()),
    };
    // kubectl's sentence for a refused connection ends in a question.
    if said.ends_with('?') {
        let mut next = next;
        next[..1].make_ascii_uppercase();
        format!("{said} {next}")
    } else {
        format!("{said}; {next}")
    }
}

/// `word` as a shell reads it back: as it is when it has nothing a shell would take apart.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
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

    #[derive(Debug, thiserror::Error)]
    enum Journal {
        #[error("the journal is newer than this kubectl-migrate")]
        TooNew,
        #[error("cannot read the journal")]
        Read(#[source] Error),
    }
    impl DomainError for Journal {
        fn exit_code(&self) -> u8 {
            match self {
                Journal::TooNew => exit::USAGE,
                Journal::Read(_) => exit::ERROR,
            }
        }
    }

    fn forbidden(kubeconfig: Option<&str>) -> Error {
        let status = kube::core::Status::failure(
            "configmaps \"j\" is forbidden: User \"u\" cannot get resource \"configmaps\"",
            "Forbidden",
        )
        .with_code(403);
        Error::Cluster {
            context: "km-a".into(),
            server: "https://127.0.0.1:1".into(),
            what: "read the migration journal".into(),
            kubeconfig: kubeconfig.map(PathBuf::from),
            source: Box::new(kube::Error::Api(Box::new(status))),
        }
    }

    #[test]
    fn a_domain_error_keeps_its_exit_code_its_type_and_its_causes() {
        let err: Error = Journal::TooNew.into();
        assert_eq!(err.exit_code(), exit::USAGE);
        assert!(matches!(err.domain::<Journal>(), Some(Journal::TooNew)));
        let raised = err.exit_at_least(3);
        assert!(matches!(raised.domain::<Journal>(), Some(Journal::TooNew)));
        let err: Error = Journal::Read(forbidden(None)).into();
        assert_eq!(err.exit_code(), exit::ERROR);
        assert_eq!(
            err.report(),
            "cannot read the journal: cluster \"km-a\" (https://127.0.0.1:1): read the migration journal: \
             Error from server (Forbidden): configmaps \"j\" is forbidden: User \"u\" cannot get resource \"configmaps\"; \
             to see what context \"km-a\" may do: kubectl auth can-i --list --context km-a"
        );
    }

    #[test]
    fn a_cluster_error_is_said_once_in_kubectls_words_with_the_next_command() {
        let err = forbidden(Some("/tmp/my kubeconfig"));
        let text = err.report();
        assert_eq!(text, err.to_string(), "the kube error is not added again");
        assert!(
            text.ends_with(
                "to see what context \"km-a\" may do: kubectl auth can-i --list --kubeconfig '/tmp/my kubeconfig' --context km-a"
            ),
            "{text}"
        );
        assert!(
            !text.contains("ApiError") && !text.contains("Status {"),
            "{text}"
        );
        assert_eq!(err.http_status(), Some(403));
        // Behind another error's exit code, and as the cause of something else, the same words.
        assert_eq!(
            forbidden(None).exit_at_least(2).report(),
            forbidden(None).report()
        );
        let io = Error::Io {
            what: "x".into(),
            source: std::io::Error::other(forbidden(None)),
        };
        assert!(
            io.report().contains("Error from server (Forbidden)"),
            "{}",
            io.report()
        );
    }

    #[test]
    fn a_kubeconfig_file_that_cannot_be_read_is_named_without_rust_quotes() {
        let err = kube::config::KubeconfigError::LoadCertificateAuthority(
            kube::config::LoadDataError::ReadFile(
                std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"),
                PathBuf::from("/etc/ca.crt"),
            ),
        );
        assert_eq!(
            kubeconfig_in_words(&err),
            "cannot read the certificate authority file /etc/ca.crt: No such file or directory"
        );
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
