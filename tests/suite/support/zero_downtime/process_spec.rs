//! What the pod runner runs for a pod, read from the pod the way a kubelet reads it: the
//! container's command and arguments with `$(VAR)` references expanded, its environment (plain
//! values and the downward API's fields), its volumes at their host paths, its readiness probe and
//! its termination grace period. Pure functions over the Pod object, so they are tested alone.
//!
//! Where the runner cannot do what a kubelet does, it says so here:
//! - no mount namespace: a volume is not mounted at its `mountPath`; instead an argument or an
//!   environment value that names a path under a `mountPath` is rewritten to the same path under
//!   the volume's host path (`--data-dir=/var/lib/etcd/data` becomes `--data-dir=<hostPath>/data`);
//! - no image: the command's program is looked up in the runner's program directories, then PATH;
//! - the pod's IP is the loopback address the runner gives it (see `runner::pod_ip`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A process as the runner starts it for a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The container's environment, in its order, after expansion and path rewriting.
    pub env: Vec<(String, String)>,
    pub readiness: Option<HttpProbe>,
    /// How long the process may take to stop after SIGTERM before it is killed.
    pub grace: Duration,
}

/// A readiness probe by HTTP GET, with the kubelet's defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpProbe {
    pub url: String,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

/// Expands `$(NAME)` references in `input` as the kubelet does for commands, arguments and
/// environment values: a defined name is replaced by its value, an undefined one stays as written,
/// `$$` is an escaped `$`, and a `$` that begins no reference stays.
pub fn expand(input: &str, vars: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(close) => {
                    let name = &body[..close];
                    match vars(name) {
                        Some(value) => out.push_str(&value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &body[close + 1..];
                }
                // An unclosed reference stays as written.
                None => {
                    out.push_str("$(");
                    rest = body;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A path under one of the mounts, rewritten to the same path under the mount's host path; any
/// other value unchanged. Also rewrites the value part of `--flag=value`.
pub fn rewrite_mounts(value: &str, mounts: &[(String, PathBuf)]) -> String {
    let rewrite_path = |path: &str| -> Option<String> {
        mounts.iter().find_map(|(mount, host)| {
            let mount = mount.trim_end_matches('/');
            let rest = path.strip_prefix(mount)?;
            if rest.is_empty() {
                Some(host.display().to_string())
            } else if rest.starts_with('/') {
                Some(format!("{}{rest}", host.display()))
            } else {
                None
            }
        })
    };
    if let Some(rewritten) = rewrite_path(value) {
        return rewritten;
    }
    if let Some((flag, path)) = value.split_once('=')
        && flag.starts_with('-')
        && let Some(rewritten) = rewrite_path(path)
    {
        return format!("{flag}={rewritten}");
    }
    value.to_string()
}

/// What the runner knows about a pod besides the object: where its volumes are and its address.
pub struct Placement<'a> {
    /// Volume name -> the host path it is backed by.
    pub volumes: &'a BTreeMap<String, PathBuf>,
    pub pod_ip: Option<Ipv4Addr>,
    /// Where programs are looked up before PATH.
    pub program_dirs: &'a [PathBuf],
}

impl ProcessSpec {
    /// The process for `pod`, or why the runner cannot run it (in words, for the pod's condition).
    pub fn for_pod(pod: &Pod, placement: &Placement) -> Result<ProcessSpec, String> {
        let spec = pod.spec.as_ref().ok_or("the pod has no spec")?;
        let [container] = spec.containers.as_slice() else {
            return Err(format!(
                "the pod runner runs pods of exactly one container; this one has {}",
                spec.containers.len()
            ));
        };
        let env = environment(pod, container, placement)?;
        let lookup = |name: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let mounts = mounts(container, placement);
        let command = container.command.as_deref().unwrap_or_default();
        let Some((program, fixed_args)) = command.split_first() else {
            return Err(format!(
                "container {} has no command (the runner has no image to take one from)",
                container.name
            ));
        };
        let args: Vec<String> = fixed_args
            .iter()
            .chain(container.args.iter().flatten())
            .map(|a| rewrite_mounts(&expand(a, &lookup), &mounts))
            .collect();
        let program = find_program(&expand(program, &lookup), placement.program_dirs)?;
        let readiness = container
            .readiness_probe
            .as_ref()
            .map(|p| http_probe(p, container, &lookup, placement.pod_ip))
            .transpose()?;
        let grace = spec.termination_grace_period_seconds.unwrap_or(30).max(0);
        Ok(ProcessSpec {
            program,
            args,
            env: env
                .into_iter()
                .map(|(n, v)| (n, rewrite_mounts(&v, &mounts)))
                .collect(),
            readiness,
            grace: Duration::from_secs(grace as u64),
        })
    }
}

/// The container's variables in order: each value may refer to the ones before it.
fn environment(
    pod: &Pod,
    container: &Container,
    placement: &Placement,
) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (_, Some(from)) => {
                let field = from.field_ref.as_ref().ok_or_else(|| {
                    format!(
                        "variable {}: the runner resolves fieldRef only (no Secrets, ConfigMaps or resources)",
                        var.name
                    )
                })?;
                pod_field(pod, &field.field_path, placement.pod_ip).ok_or_else(|| {
                    format!(
                        "variable {}: field {} has no value",
                        var.name, field.field_path
                    )
                })?
            }
            (value, None) => {
                let lookup = |name: &str| {
                    env.iter()
                        .rev()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| v.clone())
                };
                expand(value.as_deref().unwrap_or_default(), &lookup)
            }
        };
        env.push((var.name.clone(), value));
    }
    Ok(env)
}

/// A field of the downward API, as `fieldRef.fieldPath` names it.
fn pod_field(pod: &Pod, path: &str, pod_ip: Option<Ipv4Addr>) -> Option<String> {
    let meta = &pod.metadata;
    let keyed = |prefix: &str, map: &Option<BTreeMap<String, String>>| {
        let key = path
            .strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")?;
        map.as_ref()?.get(key).cloned()
    };
    match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => pod.spec.as_ref()?.node_name.clone(),
        "spec.serviceAccountName" => pod.spec.as_ref()?.service_account_name.clone(),
        "status.podIP" => pod_ip.map(|ip| ip.to_string()),
        _ if path.starts_with("metadata.labels") => keyed("metadata.labels", &meta.labels),
        _ if path.starts_with("metadata.annotations") => {
            keyed("metadata.annotations", &meta.annotations)
        }
        _ => None,
    }
}

/// Each volume mount of the container whose volume has a host path (claims and hostPath volumes)
/// with that path. Other volumes (the service account's token, ConfigMaps) are not placed: paths
/// under their mounts stay as written.
fn mounts(container: &Container, placement: &Placement) -> Vec<(String, PathBuf)> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .filter_map(|m| {
            let host = placement.volumes.get(&m.name)?;
            let host = match m.sub_path.as_deref() {
                Some(sub) if !sub.is_empty() => host.join(sub),
                _ => host.clone(),
            };
            Some((m.mount_path.clone(), host))
        })
        .collect()
}

fn find_program(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, String> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    dirs.iter()
        .cloned()
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| format!("program {name} is not in the runner's directories nor on PATH"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The probe with the kubelet's defaults. Only `httpGet` is run; its `host` may use `$(VAR)`
/// (a kubelet takes it literally and defaults it to the pod IP, as the runner does without one).
fn http_probe(
    probe: &Probe,
    container: &Container,
    vars: &dyn Fn(&str) -> Option<String>,
    pod_ip: Option<Ipv4Addr>,
) -> Result<HttpProbe, String> {
    let get = probe.http_get.as_ref().ok_or_else(|| {
        format!(
            "container {}: the runner runs httpGet readiness probes only",
            container.name
        )
    })?;
    if get.scheme.as_deref().is_some_and(|s| s != "HTTP") {
        return Err(format!(
            "container {}: the runner probes over plain HTTP only",
            container.name
        ));
    }
    let host = match get.host.as_deref() {
        Some(host) if !host.is_empty() => expand(host, vars),
        _ => pod_ip
            .ok_or_else(|| format!("container {}: the probe needs the pod's IP", container.name))?
            .to_string(),
    };
    let port = match &get.port {
        IntOrString::Int(port) => *port,
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name))
            .map(|p| p.container_port)
            .ok_or_else(|| format!("container {}: no port named {name}", container.name))?,
    };
    let path = get.path.as_deref().unwrap_or("/");
    let seconds = |value: Option<i32>, default: i32| {
        Duration::from_secs(value.unwrap_or(default).max(0) as u64)
    };
    Ok(HttpProbe {
        url: format!(
            "http://{host}:{port}{}{path}",
            if path.starts_with('/') { "" } else { "/" }
        ),
        initial_delay: seconds(probe.initial_delay_seconds, 0),
        period: seconds(probe.period_seconds, 10),
        timeout: seconds(probe.timeout_seconds, 1),
        success_threshold: probe.success_threshold.unwrap_or(1).max(1) as u32,
        failure_threshold: probe.failure_threshold.unwrap_or(3).max(1) as u32,
    })
}

/// A readiness probe's verdict over time, as the kubelet keeps it: not ready until
/// `success_threshold` probes in a row succeed, then ready until `failure_threshold` in a row fail.
#[derive(Debug, Clone)]
pub struct Readiness {
    pub ready: bool,
    streak: u32,
}

impl Readiness {
    pub fn new() -> Readiness {
        Readiness {
            ready: false,
            streak: 0,
        }
    }

    /// Takes one probe result; returns the new verdict when it changed.
    pub fn observe(&mut self, ok: bool, probe: &HttpProbe) -> Option<bool> {
        if ok == self.ready {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        let threshold = if ok {
            probe.success_threshold
        } else {
            probe.failure_threshold
        };
        if self.streak < threshold {
            return None;
        }
        self.ready = ok;
        self.streak = 0;
        Some(ok)
    }

    /// The process stopped: not ready at once, whatever the thresholds.
    pub fn reset(&mut self) -> bool {
        let changed = self.ready;
        *self = Readiness::new();
        changed
    }
}
