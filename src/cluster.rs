//! Cluster connection, in one place: resolve a kubeconfig context (no network), then connect one
//! kube client per context with the user's --request-timeout applied.
use std::path::Path;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;
use k8s_openapi::apimachinery::pkg::version::Info;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

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
    kubeconfig: Kubeconfig,
}

/// A connected cluster: its client plus what we learnt while connecting.
#[derive(Clone)]
pub struct Cluster {
    pub context: String,
    pub server: String,
    pub client: Client,
    pub version: Info,
    pub default_namespace: String,
    request_timeout: Option<Duration>,
}

/// Loads the kubeconfig from `path`, or from $KUBECONFIG (merged) / ~/.kube/config.
pub fn load_kubeconfig(path: Option<&Path>) -> Result<(Kubeconfig, String)> {
    match path {
        Some(path) => Kubeconfig::read_from(path)
            .map(|k| (k, path.display().to_string()))
            .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display()))),
        None => {
            let desc = match std::env::var_os("KUBECONFIG") {
                Some(v) if !v.is_empty() => format!("KUBECONFIG={}", v.to_string_lossy()),
                _ => "~/.kube/config".to_string(),
            };
            Kubeconfig::read()
                .map(|k| (k, desc.clone()))
                .map_err(|e| Error::Kubeconfig(format!("{desc}: {e}")))
        }
    }
}

/// Picks `context` (or the current context) out of the kubeconfig. No network access.
pub fn resolve(kubeconfig_path: Option<&Path>, context: Option<&str>) -> Result<Target> {
    let (kubeconfig, source_desc) = load_kubeconfig(kubeconfig_path)?;
    resolve_in(kubeconfig, source_desc, context)
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
    let server = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| {
            Error::Kubeconfig(format!(
                "{source_desc}: context {name:?} refers to cluster {cluster_name:?}, which has no server"
            ))
        })?;
    Ok(Target {
        context: name,
        server,
        source_desc,
        kubeconfig,
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
            .map_err(|e| {
                Error::Kubeconfig(format!(
                    "{}: context {:?}: {e}",
                    self.source_desc, self.context
                ))
            })?;
        config.connect_timeout = Some(request_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
        if let Some(t) = request_timeout {
            config.read_timeout = Some(t);
            config.write_timeout = Some(t);
            config.reset_reader_on_write = true;
        }
        let default_namespace = config.default_namespace.clone();
        let client =
            Client::try_from(config).map_err(|e| self.cluster_error("cannot build a client", e))?;
        let mut cluster = Cluster {
            context: self.context.clone(),
            server: self.server.clone(),
            client,
            version: Info::default(),
            default_namespace,
            request_timeout,
        };
        let client = cluster.client.clone();
        // The version call doubles as the reachability check; it is bounded even with no
        // --request-timeout so that a black-holed server cannot hang the tool.
        let bound = request_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        cluster.version = match tokio::time::timeout(bound, client.apiserver_version()).await {
            Ok(Ok(info)) => info,
            Ok(Err(e)) if is_timeout(&e) => return Err(self.timeout_error(bound)),
            Ok(Err(e)) => return Err(self.cluster_error("cannot reach the API server", e)),
            Err(_) => return Err(self.timeout_error(bound)),
        };
        Ok(cluster)
    }

    fn cluster_error(&self, what: &str, source: kube::Error) -> Error {
        Error::Cluster {
            context: self.context.clone(),
            server: self.server.clone(),
            message: format!("{what}: {}", describe_kube_error(&source)),
            source: Some(Box::new(source)),
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
                message: format!("{what}: {}", describe_kube_error(&e)),
                source: Some(Box::new(e)),
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

/// kube's errors nest their cause; users need the innermost reason ("connection refused"), not
/// only "client error".
fn describe_kube_error(err: &kube::Error) -> String {
    if let kube::Error::Api(status) = err {
        return format!("{} ({})", status.message, status.reason);
    }
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = cause.source();
    }
    text
}

/// Whether the API answered with this HTTP status (404 not found, 409 conflict/exists, ...).
pub fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// The client's own connect/read timeouts surface as a nested `Elapsed`; report them as the
/// timeout they are.
fn is_timeout(err: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<tokio::time::error::Elapsed>() || cause.to_string() == "deadline has elapsed"
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Completion candidates for --context: the contexts of the default kubeconfig.
pub fn context_candidates() -> Vec<CompletionCandidate> {
    load_kubeconfig(None)
        .map(|(k, _)| {
            k.contexts
                .into_iter()
                .map(|c| CompletionCandidate::new(c.name))
                .collect()
        })
        .unwrap_or_default()
}

/// The namespace to use: the flag, else the context's own, else "default".
pub fn namespace_or_default(flag: Option<&str>, cluster: &Cluster) -> String {
    flag.map(str::to_string)
        .unwrap_or_else(|| cluster.default_namespace.clone())
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
    fn a_missing_context_lists_the_available_ones() {
        let err = resolve_in(two_contexts(), "test".into(), Some("prod")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "context \"prod\" not found in test; available contexts: km-a, km-b"
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
