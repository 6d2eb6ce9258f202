//! Cluster connection, in one place: resolve a kubeconfig context (no network), then connect one
//! kube client per context with the user's --request-timeout applied.
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::version::Info;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub use requests::log_requests_to;

use crate::error::{Error, Result};

/// Connecting never waits longer than this when --request-timeout is 0 (no limit): an unreachable
/// server should fail fast even for users who did not think of the flag.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A context picked out of a kubeconfig, before anything talks to the network.
#[derive(Debug, Clone)]
pub struct Target {
    pub context: String,
    pub server: String,
    /// Where the kubeconfig came from, for messages ("KUBECONFIG", a path, ...).
    pub source_desc: String,
    /// The context's namespace, else "default": where namespaced commands work without -n.
    pub namespace: String,
    kubeconfig: Kubeconfig,
    /// The file named by --kubeconfig (none for $KUBECONFIG or the default), for the commands
    /// that error messages suggest.
    kubeconfig_path: Option<PathBuf>,
}

/// A connected cluster: its client plus what we learnt while connecting.
#[derive(Clone)]
pub struct Cluster {
    pub context: String,
    pub server: String,
    pub client: Client,
    pub version: Info,
    request_timeout: Option<Duration>,
    kubeconfig_path: Option<PathBuf>,
}

/// Loads the kubeconfig from `path`, or from $KUBECONFIG (merged) / ~/.kube/config.
pub fn load_kubeconfig(path: Option<&Path>) -> Result<(Kubeconfig, String)> {
    let read = |path: &Path| {
        refuse_odd_utf16(path)?;
        Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
            source_desc: path.display().to_string(),
            source,
        })
    };
    if let Some(path) = path {
        return read(path).map(|k| (k, path.display().to_string()));
    }
    match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => {
            let desc = format!("KUBECONFIG={}", list.to_string_lossy());
            // As kubectl: the files of the list that exist, merged, the first one winning.
            let mut merged: Option<Kubeconfig> = None;
            for path in std::env::split_paths(&list).filter(|p| p.exists()) {
                let next = read(&path)?;
                merged = Some(match merged {
                    None => next,
                    Some(first) => first.merge(next).map_err(|source| Error::Kubeconfig {
                        source_desc: desc.clone(),
                        source,
                    })?,
                });
            }
            match merged {
                Some(config) => Ok((config, desc)),
                // Also as kubectl: no file at all is an empty configuration.
                None => Ok((
                    Kubeconfig::default(),
                    format!("{desc} (none of its files exist)"),
                )),
            }
        }
        _ => {
            if let Some(home) = std::env::home_dir() {
                refuse_odd_utf16(&home.join(".kube").join("config"))?;
            }
            Kubeconfig::read()
                .map(|k| (k, "~/.kube/config".to_string()))
                .map_err(|source| Error::Kubeconfig {
                    source_desc: "~/.kube/config".into(),
                    source,
                })
        }
    }
}

/// kube's reader takes a file that starts with a UTF-16 byte-order mark as UTF-16, and panics
/// (indexing past the end) when an odd number of bytes follows the mark: such a file is refused
/// here first. Only regular files are looked at (reading a pipe would consume it); anything
/// that cannot be read is left to kube to report.
fn refuse_odd_utf16(path: &Path) -> Result<()> {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let mut mark = [0; 2];
    let read = meta.is_file()
        && std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut mark).is_ok());
    if read && matches!(mark, [0xFF, 0xFE] | [0xFE, 0xFF]) && meta.len() % 2 == 1 {
        let why = "invalid UTF-16: an odd number of bytes after the byte-order mark";
        return Err(Error::Kubeconfig {
            source_desc: path.display().to_string(),
            source: kube::config::KubeconfigError::ReadConfig(
                std::io::Error::new(std::io::ErrorKind::InvalidData, why),
                path.into(),
            ),
        });
    }
    Ok(())
}

/// Picks `context` (or the current context) out of the kubeconfig. No network access.
pub fn resolve(kubeconfig_path: Option<&Path>, context: Option<&str>) -> Result<Target> {
    let (kubeconfig, source_desc) = load_kubeconfig(kubeconfig_path)?;
    let mut target = resolve_in(kubeconfig, source_desc, context)?;
    target.kubeconfig_path = kubeconfig_path.map(Path::to_path_buf);
    Ok(target)
}

/// The current context of a kubeconfig given as text (a Secret's value), described as
/// `source_desc` in messages; the text itself is never repeated in them.
pub fn resolve_text(text: &str, source_desc: String) -> Result<Target> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|source| Error::Kubeconfig {
        source_desc: source_desc.clone(),
        source,
    })?;
    resolve_in(kubeconfig, source_desc, None)
}

fn resolve_in(
    kubeconfig: Kubeconfig,
    source_desc: String,
    context: Option<&str>,
) -> Result<Target> {
    let available: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
    let name = match context.or(kubeconfig.current_context.as_deref()) {
        Some(name) => name.to_string(),
        None => {
            return Err(Error::NoCurrentContext {
                source_desc,
                available,
            });
        }
    };
    let Some(named) = kubeconfig.contexts.iter().find(|c| c.name == name) else {
        return Err(Error::ContextNotFound {
            context: name,
            source_desc,
            available,
        });
    };
    let cluster_name = named
        .context
        .as_ref()
        .map(|c| c.cluster.clone())
        .unwrap_or_default();
    let namespace = named
        .context
        .as_ref()
        .and_then(|c| c.namespace.clone())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let server = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| Error::KubeconfigContext {
            source_desc: source_desc.clone(),
            context: name.clone(),
            message: format!("refers to cluster {cluster_name:?}, which has no server"),
            source: None,
        })?;
    Ok(Target {
        context: name,
        server,
        source_desc,
        namespace,
        kubeconfig,
        kubeconfig_path: None,
    })
}

impl Target {
    /// Builds the client and asks the server for its version, which proves it is reachable and
    /// tells later code which API semantics to expect.
    pub async fn connect(&self, request_timeout: Duration) -> Result<Cluster> {
        let request_timeout = (!request_timeout.is_zero()).then_some(request_timeout);
        let options = KubeConfigOptions {
            context: Some(self.context.clone()),
            ..Default::default()
        };
        let mut config = Config::from_custom_kubeconfig(self.kubeconfig.clone(), &options)
            .await
            .map_err(|source| Error::KubeconfigContext {
                source_desc: self.source_desc.clone(),
                context: self.context.clone(),
                message: crate::error::kubeconfig_in_words(&source),
                source: Some(source),
            })?;
        config.connect_timeout = Some(request_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
        if let Ok(agent) = http::HeaderValue::from_str(&user_agent()) {
            config.headers.push((http::header::USER_AGENT, agent));
        }
        if let Some(t) = request_timeout {
            config.read_timeout = Some(t);
            config.write_timeout = Some(t);
            config.reset_reader_on_write = true;
        }
        let client = kube::client::ClientBuilder::try_from(config)
            // Nothing to say before the reason ("Unable to connect to the server: cannot get
            // credentials: ..."): building the client runs an exec credential plugin.
            .map_err(|e| self.cluster_error("", e))?
            .with_layer(&requests::LogLayer {
                server: self.server.trim_end_matches('/').to_string(),
            })
            .build();
        let mut cluster = Cluster {
            context: self.context.clone(),
            server: self.server.clone(),
            client,
            version: Info::default(),
            request_timeout,
            kubeconfig_path: self.kubeconfig_path.clone(),
        };
        let client = cluster.client.clone();
        // The version call doubles as the reachability check; it is bounded even with no
        // --request-timeout so that a black-holed server cannot hang the tool.
        let bound = request_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        cluster.version = match tokio::time::timeout(bound, client.apiserver_version()).await {
            Ok(Ok(info)) => info,
            Ok(Err(e)) if is_timeout(&e) => return Err(self.timeout_error(bound)),
            // An answer means the server was reached; it refused the request.
            Ok(Err(e @ kube::Error::Api(_))) => {
                return Err(self.cluster_error("read the server's version", e));
            }
            Ok(Err(e)) => return Err(self.cluster_error("cannot reach the API server", e)),
            Err(_) => return Err(self.timeout_error(bound)),
        };
        Ok(cluster)
    }

    fn cluster_error(&self, what: &str, source: kube::Error) -> Error {
        Error::Cluster {
            context: self.context.clone(),
            server: self.server.clone(),
            what: what.to_string(),
            kubeconfig: self.kubeconfig_path.clone(),
            source: Box::new(source),
        }
    }

    fn timeout_error(&self, timeout: Duration) -> Error {
        Error::Timeout {
            context: self.context.clone(),
            server: self.server.clone(),
            timeout,
        }
    }
}

impl Cluster {
    /// A cluster reached through a client built elsewhere (the controller's in-cluster
    /// ServiceAccount), named `context` in messages; its version is not asked.
    pub fn of_client(client: Client, context: &str, server: &str) -> Cluster {
        Cluster {
            context: context.to_string(),
            server: server.to_string(),
            client,
            version: Info::default(),
            request_timeout: None,
            kubeconfig_path: None,
        }
    }

    /// Runs one API call under --request-timeout (if any), mapping errors to ones that name the
    /// cluster.
    pub async fn call<T, F>(&self, what: &str, fut: F) -> Result<T>
    where
        F: std::future::Future<Output = kube::Result<T>>,
    {
        let result = match self.request_timeout {
            Some(t) => tokio::time::timeout(t, fut)
                .await
                .map_err(|_| Error::Timeout {
                    context: self.context.clone(),
                    server: self.server.clone(),
                    timeout: t,
                })?,
            None => fut.await,
        };
        result.map_err(|e| self.api_error(what, e))
    }

    /// An API error as one of ours, naming the cluster and what was being done.
    pub fn api_error(&self, what: &str, e: kube::Error) -> Error {
        match (is_timeout(&e), self.request_timeout) {
            (true, Some(timeout)) => Error::Timeout {
                context: self.context.clone(),
                server: self.server.clone(),
                timeout,
            },
            _ => Error::Cluster {
                context: self.context.clone(),
                server: self.server.clone(),
                what: what.to_string(),
                kubeconfig: self.kubeconfig_path.clone(),
                source: Box::new(e),
            },
        }
    }

    /// `Err` of [`Cluster::api_error`], for match arms that end in an error.
    pub fn fail<T>(&self, what: &str, e: kube::Error) -> Result<T> {
        Err(self.api_error(what, e))
    }

    /// The result of a write where the HTTP status `done` means there is nothing to do: 404 for
    /// a delete (already gone), 409 for a create (already there). Makes such steps idempotent.
    pub fn already_done<T>(&self, what: &str, result: kube::Result<T>, done: u16) -> Result<()> {
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, done) => Ok(()),
            Err(e) => Err(self.api_error(what, e)),
        }
    }

    /// "v1.36.3" style, as the server reports it.
    pub fn git_version(&self) -> &str {
        &self.version.git_version
    }
}

/// What the server said, or why the request did not reach it, in kubectl's words. For a
/// failure that ends the command, [`Cluster::api_error`] says more (the context, the next
/// command); this is for the failures that are only noted (a probe, a best-effort write).
pub fn describe_kube_error(err: &kube::Error) -> String {
    crate::error::request::in_words(err, None)
}

/// Why a watch failed, in the words of [`describe_kube_error`] (kube's own text of a watch
/// error carries the request error's debug text).
pub fn describe_watch_error(err: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as Watch;
    match err {
        Watch::InitialListFailed(e) => format!("cannot list: {}", describe_kube_error(e)),
        Watch::WatchStartFailed(e) => format!("cannot start watching: {}", describe_kube_error(e)),
        Watch::WatchFailed(e) => format!("the watch failed: {}", describe_kube_error(e)),
        Watch::WatchError(status) => format!(
            "the watch failed: {}",
            describe_kube_error(&kube::Error::Api(status.clone()))
        ),
        Watch::NoResourceVersion => err.to_string(),
    }
}

/// A namespaced API object kube can read, create and delete.
pub trait Namespaced:
    kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Namespaced for K where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// Every request to an API server, as a line for the log (kubectl's -v=6): method, URL, status
/// and how long it took.
mod requests {
    use std::sync::OnceLock;
    use std::task::{Context, Poll};
    use std::time::Instant;

    use futures::future::BoxFuture;
    use http::{Request, Response};
    use kube::client::Body;

    static SINK: OnceLock<fn(&str)> = OnceLock::new();

    /// Sends a line per request to `sink` from now on (the first sink set stays).
    pub fn log_requests_to(sink: fn(&str)) {
        let _ = SINK.set(sink);
    }

    /// The line kubectl -v=6 prints for a request.
    pub fn line(method: &str, url: &str, status: Option<u16>, millis: u128) -> String {
        match status {
            Some(code) => {
                let reason = http::StatusCode::from_u16(code)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                format!("{method} {url} {code} {reason} in {millis} milliseconds")
            }
            None => format!("{method} {url} (no response) in {millis} milliseconds"),
        }
    }

    /// Logs the requests of one client; URLs are shown against its `server`.
    #[derive(Debug, Clone)]
    pub struct LogLayer {
        pub server: String,
    }

    impl<S> tower::Layer<S> for LogLayer {
        type Service = Logged<S>;
        fn layer(&self, inner: S) -> Logged<S> {
            Logged {
                inner,
                server: self.server.clone(),
            }
        }
    }

    #[derive(Debug, Clone)]
    pub struct Logged<S> {
        inner: S,
        server: String,
    }

    impl<S, B> tower::Service<Request<Body>> for Logged<S>
    where
        S: tower::Service<Request<Body>, Response = Response<B>>,
        S::Future: Send + 'static,
    {
        type Response = S::Response;
        type Error = S::Error;
        type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            let sink = SINK.get().copied();
            let method = request.method().to_string();
            // The client sets the server's address further in; here the path is relative.
            let url = match request.uri().host() {
                Some(_) => request.uri().to_string(),
                None => format!("{}{}", self.server, request.uri()),
            };
            let started = Instant::now();
            let response = self.inner.call(request);
            Box::pin(async move {
                let result = response.await;
                if let Some(sink) = sink {
                    let status = result.as_ref().ok().map(|r| r.status().as_u16());
                    sink(&line(&method, &url, status, started.elapsed().as_millis()));
                }
                result
            })
        }
    }
}

/// Whether the API answered with this HTTP status (404 not found, 409 conflict/exists, ...).
pub fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// The client's own connect/read timeouts surface as a nested `Elapsed` (or the system's own
/// connect timeout); report them as the timeout they are.
fn is_timeout(err: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<tokio::time::error::Elapsed>()
            || cause.to_string() == "deadline has elapsed"
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The User-Agent of every request, in kubectl's form (`kubectl/v1.31.0 (linux/amd64)
/// kubernetes/0123abc`), so that audit logs attribute the requests to this tool and its build.
pub fn user_agent() -> String {
    // Go's names for the architectures, as kubectl says them.
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!(
        "kubectl-migrate/v{} ({}/{arch}) {}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        env!("KM_GIT_COMMIT")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_contexts() -> Kubeconfig {
        Kubeconfig::from_yaml(
            r#"
apiVersion: v1
kind: Config
current-context: km-a
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1"}
- name: b
  cluster: {server: "https://127.0.0.1:2"}
contexts:
- name: km-a
  context: {cluster: a, user: u}
- name: km-b
  context: {cluster: b, user: u}
users:
- name: u
  user: {token: t}
"#,
        )
        .unwrap()
    }

    #[test]
    fn resolves_the_named_context_and_its_server() {
        let t = resolve_in(two_contexts(), "test".into(), Some("km-b")).unwrap();
        assert_eq!(
            (t.context.as_str(), t.server.as_str()),
            ("km-b", "https://127.0.0.1:2")
        );
    }

    #[test]
    fn falls_back_to_the_current_context() {
        let t = resolve_in(two_contexts(), "test".into(), None).unwrap();
        assert_eq!(t.context, "km-a");
    }

    #[test]
    fn a_missing_kubeconfig_is_named_once_without_doubled_quotes() {
        let err = load_kubeconfig(Some(std::path::Path::new("/nonexistent/kc"))).unwrap_err();
        let text = err.report();
        assert!(
            text.starts_with("cannot read kubeconfig: /nonexistent/kc: No such file"),
            "{text}"
        );
        assert!(!text.contains("'\""), "{text}");
    }

    #[test]
    fn request_lines_read_like_kubectls() {
        assert_eq!(
            requests::line("GET", "https://h/api/v1/pods", Some(200), 5),
            "GET https://h/api/v1/pods 200 OK in 5 milliseconds"
        );
        assert_eq!(
            requests::line("PATCH", "/x", None, 10),
            "PATCH /x (no response) in 10 milliseconds"
        );
    }

    #[test]
    fn a_watch_failure_is_said_in_words() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let err = kube::runtime::watcher::Error::InitialListFailed(kube::Error::Service(Box::new(
            refused,
        )));
        assert_eq!(
            describe_watch_error(&err),
            "cannot list: The connection to the server was refused - did you specify the right host or port?"
        );
        let gone =
            kube::core::Status::failure("too old resource version", "Expired").with_code(410);
        let err = kube::runtime::watcher::Error::WatchError(Box::new(gone));
        assert_eq!(
            describe_watch_error(&err),
            "the watch failed: Error from server (Expired): too old resource version"
        );
    }

    #[test]
    fn the_namespace_is_the_contexts_else_default() {
        let mut k = two_contexts();
        k.contexts[1].context.as_mut().unwrap().namespace = Some("apps".into());
        let b = resolve_in(k.clone(), "test".into(), Some("km-b")).unwrap();
        assert_eq!(b.namespace, "apps");
        let a = resolve_in(k, "test".into(), Some("km-a")).unwrap();
        assert_eq!(a.namespace, "default");
    }

    #[test]
    fn a_missing_context_lists_the_available_ones() {
        let err = resolve_in(two_contexts(), "test".into(), Some("prod")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "context \"prod\" not found in test; available contexts: km-a, km-b"
        );
    }

    #[test]
    fn a_utf16_kubeconfig_of_an_odd_length_is_refused() {
        // Found by fuzzing: kube's reader panicked on these.
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("le", &[0xFF, 0xFE, b'a'][..]),
            ("be", &[0xFE, 0xFF, 0, b'a', 0][..]),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = resolve(Some(&path), None).unwrap_err();
            assert_eq!(
                err.report(),
                format!(
                    "cannot read kubeconfig: {}: invalid UTF-16: an odd number of bytes after the byte-order mark",
                    path.display()
                )
            );
        }
        // An even length is still read as UTF-16.
        let path = dir.path().join("even");
        let text = "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, cluster: {server: \"https://127.0.0.1:1\"}}]\n";
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            resolve(Some(&path), None).unwrap().server,
            "https://127.0.0.1:1"
        );
    }

    #[test]
    fn no_current_context_asks_for_one() {
        let mut k = two_contexts();
        k.current_context = None;
        let err = resolve_in(k, "test".into(), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("pass --context (available contexts: km-a, km-b)"),
            "{err}"
        );
    }
}
