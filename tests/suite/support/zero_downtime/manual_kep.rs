//! The move as a person's script does it by hand, following KEP-3335 and the Kubernetes blog: one
//! kubectl call per step, highest ordinal first: a baseline of benches/zero_downtime.rs, and the
//! pieces the split-brain test puts together in the wrong order.
//!
//! Per ordinal k: protect each claim's PV (reclaim Retain), scale the source to k, wait until
//! pod k is gone, create copies of the PVs and claims in the destination (pre-bound to each other,
//! no identity of the source), give the destination the ordinal (`ordinals.start: k` and the
//! replicas in one patch), wait for its rollout.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Runs kubectl against a context: its stdout, or what went wrong. `waits` marks the calls that
/// only wait for the clusters (`kubectl wait`, `rollout status`), which benches count apart.
pub trait Kubectl {
    fn call(
        &mut self,
        context: &str,
        args: &[&str],
        stdin: Option<&str>,
        waits: bool,
    ) -> Result<String, String>;
}

/// Runs the kubectl binary `kubectl` with `kubeconfig` against `context`: its stdout, or what
/// went wrong (kubectl's stderr). The one kubectl caller of the benches and the zero-downtime
/// harness.
pub fn run_kubectl(
    kubectl: &Path,
    kubeconfig: &Path,
    context: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, String> {
    let mut child = Command::new(kubectl)
        .env("KUBECONFIG", kubeconfig)
        .args(["--context", context])
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", kubectl.display()))?;
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes())
            .map_err(|e| format!("cannot write to kubectl: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot wait for kubectl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "kubectl --context {context} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One StatefulSet to move from `source` to `destination`, both namespaces named `namespace`.
pub struct ManualKep<'a> {
    pub namespace: &'a str,
    pub set: &'a str,
    pub claim_templates: &'a [&'a str],
    pub replicas: i32,
    pub source: &'a str,
    pub destination: &'a str,
}

impl ManualKep<'_> {
    /// The whole move.
    pub fn run(&self, kubectl: &mut dyn Kubectl) -> Result<(), String> {
        self.create_destination(kubectl, 0, self.replicas)?;
        for ordinal in (0..self.replicas).rev() {
            self.move_ordinal(kubectl, ordinal)?;
        }
        Ok(())
    }

    /// The destination set: a copy of the source's with `replicas` from ordinal `start`.
    pub fn create_destination(
        &self,
        kubectl: &mut dyn Kubectl,
        replicas: i32,
        start: i32,
    ) -> Result<(), String> {
        let mut set = self.json(kubectl, self.source, &["get", "statefulset", self.set])?;
        strip(&mut set);
        set["spec"]["replicas"] = json!(replicas);
        set["spec"]["ordinals"] = json!({"start": start});
        kubectl.call(
            self.destination,
            &["-n", self.namespace, "create", "-f", "-"],
            Some(&set.to_string()),
            false,
        )?;
        Ok(())
    }

    /// Moves ordinal `ordinal`, the highest the source still runs.
    pub fn move_ordinal(&self, kubectl: &mut dyn Kubectl, ordinal: i32) -> Result<(), String> {
        let protected = self.protect(kubectl, ordinal)?;
        let replicas = format!("--replicas={ordinal}");
        let set = format!("statefulset/{}", self.set);
        kubectl.call(
            self.source,
            &["-n", self.namespace, "scale", &set, &replicas],
            None,
            false,
        )?;
        self.wait_pod_gone(kubectl, ordinal)?;
        self.copy(kubectl, protected)?;
        let patch =
            json!({"spec": {"ordinals": {"start": ordinal}, "replicas": self.replicas - ordinal}});
        kubectl.call(
            self.destination,
            &[
                "-n",
                self.namespace,
                "patch",
                "statefulset",
                self.set,
                "--type=merge",
                "-p",
                &patch.to_string(),
            ],
            None,
            false,
        )?;
        self.wait_rollout(kubectl, self.destination)
    }

    /// Sets reclaim policy Retain on the PV of each claim of `ordinal` (before its pod goes), and
    /// returns the claims and PVs, to copy.
    pub fn protect(
        &self,
        kubectl: &mut dyn Kubectl,
        ordinal: i32,
    ) -> Result<Vec<(Value, Value)>, String> {
        let mut protected = Vec::new();
        for template in self.claim_templates {
            let name = format!("{template}-{}-{ordinal}", self.set);
            let claim = self.json(kubectl, self.source, &["get", "pvc", &name])?;
            let volume_name = claim["spec"]["volumeName"]
                .as_str()
                .ok_or_else(|| format!("claim {name} is not bound"))?
                .to_string();
            let out = kubectl.call(
                self.source,
                &[
                    "patch",
                    "pv",
                    &volume_name,
                    "-p",
                    r#"{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}"#,
                    "-o",
                    "json",
                ],
                None,
                false,
            )?;
            let volume: Value = serde_json::from_str(&out)
                .map_err(|e| format!("kubectl patch pv printed no JSON: {e}"))?;
            protected.push((claim, volume));
        }
        Ok(protected)
    }

    /// Creates the copies of protected claims and PVs in the destination: each PV pre-bound to
    /// its claim, Retain, without what identifies the originals in the source.
    pub fn copy(
        &self,
        kubectl: &mut dyn Kubectl,
        protected: Vec<(Value, Value)>,
    ) -> Result<(), String> {
        let mut items = Vec::new();
        for (mut claim, mut volume) in protected {
            strip(&mut volume);
            volume["spec"]["claimRef"] = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "name": claim["metadata"]["name"], "namespace": self.namespace
            });
            volume["spec"]["persistentVolumeReclaimPolicy"] = json!("Retain");
            strip(&mut claim);
            items.push(volume);
            items.push(claim);
        }
        let copies = json!({"apiVersion": "v1", "kind": "List", "items": items});
        kubectl.call(
            self.destination,
            &["create", "-f", "-"],
            Some(&copies.to_string()),
            false,
        )?;
        Ok(())
    }

    pub fn wait_pod_gone(&self, kubectl: &mut dyn Kubectl, ordinal: i32) -> Result<(), String> {
        let pod = format!("pod/{}-{ordinal}", self.set);
        kubectl.call(
            self.source,
            &[
                "-n",
                self.namespace,
                "wait",
                "--for=delete",
                &pod,
                "--timeout=300s",
            ],
            None,
            true,
        )?;
        Ok(())
    }

    pub fn wait_rollout(&self, kubectl: &mut dyn Kubectl, context: &str) -> Result<(), String> {
        let set = format!("statefulset/{}", self.set);
        kubectl.call(
            context,
            &[
                "-n",
                self.namespace,
                "rollout",
                "status",
                &set,
                "--timeout=300s",
            ],
            None,
            true,
        )?;
        Ok(())
    }

    fn json(
        &self,
        kubectl: &mut dyn Kubectl,
        context: &str,
        get: &[&str],
    ) -> Result<Value, String> {
        let mut args = vec!["-n", self.namespace];
        args.extend_from_slice(get);
        args.extend_from_slice(&["-o", "json"]);
        let out = kubectl.call(context, &args, None, false)?;
        serde_json::from_str(&out)
            .map_err(|e| format!("kubectl {} printed no JSON: {e}", get.join(" ")))
    }
}

/// Drops what identifies the object in its cluster (as `jq 'del(...)'` would in a script).
fn strip(object: &mut Value) {
    if let Some(meta) = object["metadata"].as_object_mut() {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "annotations",
            "ownerReferences",
        ] {
            meta.remove(key);
        }
    }
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
}
