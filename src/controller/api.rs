//! The controller's API, `v1alpha1`: the Rust types are the one definition; the CRDs in
//! `deploy/crds/` are generated from them (`kubectl migrate controller crds`).
//!
//! The group is the project's own name, `kubectl-migrate.io`: an API group is a DNS name its
//! owner controls, `*.k8s.io` and `*.kubernetes.io` need Kubernetes API review, and `kubectl.io`
//! belongs to nobody here. `kubectl get statefulsetmigrations` (short `stsm`, category
//! `migrations`) shows the state at a glance through the printer columns.
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::statefulset::{Batch, VolumeMode};

pub const GROUP: &str = "kubectl-migrate.io";

/// Moves a StatefulSet from one cluster to another pod by pod, as `kubectl migrate statefulset`
/// does, driven by the controller.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kubectl-migrate.io",
    version = "v1alpha1",
    kind = "StatefulSetMigration",
    namespaced,
    status = "StatefulSetMigrationStatus",
    shortname = "stsm",
    category = "migrations",
    printcolumn = r#"{"name":"StatefulSet","type":"string","jsonPath":".spec.statefulSetName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Moved","type":"integer","jsonPath":".status.ordinalsMoved"}"#,
    printcolumn = r#"{"name":"Left","type":"integer","jsonPath":".status.ordinalsLeft"}"#,
    printcolumn = r#"{"name":"Step","type":"string","jsonPath":".status.currentStep","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "self.statefulSetName == oldSelf.statefulSetName",
        "message": "statefulSetName cannot change: a migration moves one StatefulSet; create another resource for another set"
    },
    {
        "rule": "self.source.name != self.destination.name || (has(self.source.__namespace__) ? self.source.__namespace__ : '') != (has(self.destination.__namespace__) ? self.destination.__namespace__ : '')",
        "message": "source and destination are the same cluster and namespace; name another destination cluster or namespace"
    }
]))]
pub struct StatefulSetMigrationSpec {
    /// The StatefulSet to move (the same name on both sides).
    #[schemars(length(min = 1, max = 253))]
    pub stateful_set_name: String,
    /// Where the StatefulSet runs now.
    pub source: ClusterRef,
    /// Where it goes.
    pub destination: ClusterRef,
    /// `shared`: copy the claims and PVs (both clusters reach the storage); `fresh`: new claims
    /// from the destination's volumeClaimTemplates (needs healthCheck).
    #[serde(default)]
    #[schemars(with = "VolumesSchema")]
    pub volumes: VolumeMode,
    /// Ordinals moved per step: a count of at least 1, or `auto` (as many as the
    /// PodDisruptionBudgets allow).
    #[serde(default = "one", with = "batch_text")]
    #[schemars(schema_with = "batch_schema")]
    pub batch: Batch,
    /// Command run (by sh -c, in the controller's container) after each ordinal is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<String>,
    /// How long to wait for one pod to go or to become Ready (a duration such as `10m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub timeout: Option<String>,
    /// StorageClass renames for the destination: source class -> destination class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub storage_class_map: BTreeMap<String, String>,
    /// Copy the headless Service and the ConfigMaps, Secrets and ServiceAccount the pods use.
    #[serde(default)]
    pub copy_dependencies: bool,
    /// Create the destination namespace if it does not exist.
    #[serde(default)]
    pub create_namespace: bool,
    /// Start even if not all source replicas are Ready.
    #[serde(default)]
    pub allow_unhealthy: bool,
    /// Stop at the next safe point and wait (a person or a Git commit sets it back to false).
    #[serde(default)]
    pub paused: bool,
    /// Start no move once this many ordinals run in the destination (a batch that starts below
    /// it is moved whole), then wait for the number to be raised. A rollback ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_ordinals: Option<i32>,
    /// Move the ordinals back to the source, from any point.
    #[serde(default)]
    pub rollback: bool,
}

/// A member cluster: its kubeconfig in a Secret of the resource's own namespace (the Cluster API
/// convention: Secret `<name>-kubeconfig`, key `value`), and the StatefulSet's namespace there.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRef {
    /// The cluster's name; its kubeconfig is in Secret `<name>-kubeconfig` unless
    /// kubeconfigSecret names another.
    #[schemars(length(min = 1, max = 242))]
    pub name: String,
    /// The StatefulSet's namespace in that cluster (default: the resource's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Secret holding the kubeconfig, when it is not `<name>-kubeconfig`. It must be in the
    /// resource's own namespace: one team cannot borrow another's cluster credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret: Option<SecretKeyRef>,
}

/// A key of a Secret.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    pub name: String,
    /// Refused unless it is the resource's own namespace (said in the Ready condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The key holding the kubeconfig (default `value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl ClusterRef {
    /// The Secret and key that hold this cluster's kubeconfig.
    pub fn secret(&self) -> (String, Option<&str>, &str) {
        secret_of(&self.name, self.kubeconfig_secret.as_ref())
    }
}

/// The Secret (name, namespace if named, key) holding cluster `name`'s kubeconfig: the one
/// named, else the Cluster API's `<name>-kubeconfig`.
fn secret_of<'a>(
    name: &str,
    named: Option<&'a SecretKeyRef>,
) -> (String, Option<&'a str>, &'a str) {
    match named {
        Some(s) => (
            s.name.clone(),
            s.namespace.as_deref(),
            s.key.as_deref().unwrap_or(KUBECONFIG_KEY),
        ),
        None => (format!("{name}-kubeconfig"), None, KUBECONFIG_KEY),
    }
}

/// The key of a Cluster API kubeconfig Secret.
pub const KUBECONFIG_KEY: &str = "value";

/// What the controller last saw and did.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetMigrationStatus {
    /// The generation of the spec the status speaks of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (the migration is where the spec wants it), `Progressing` (a run is moving
    /// ordinals), with reasons and messages in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals_moved: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals_left: Option<i64>,
    /// The step the run is taking, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step: Option<String>,
    /// Who holds the migration's Lease in the destination (this controller or a CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_holder: Option<String>,
    /// The last error, in words, with what to do next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Where a migration is.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    /// Not started: the spec is being checked or the run is starting.
    Pending,
    Migrating,
    RollingBack,
    /// Stopped at a safe point by spec.paused or spec.maxOrdinals.
    Paused,
    /// Every ordinal runs in the destination.
    Completed,
    /// Every ordinal runs in the source again.
    RolledBack,
    /// Stopped by an error; the controller tries again (see lastError).
    Failed,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// Keeps the CRDs of member clusters compared, as `kubectl migrate schema-diff --watch` does,
/// and says in its conditions whether they are compatible and whether every member answers.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kubectl-migrate.io",
    version = "v1alpha1",
    kind = "APICompatibility",
    plural = "apicompatibilities",
    namespaced,
    status = "APICompatibilityStatus",
    shortname = "apicompat",
    category = "migrations",
    printcolumn = r#"{"name":"Compatible","type":"string","jsonPath":".status.conditions[?(@.type==\"Compatible\")].status"}"#,
    printcolumn = r#"{"name":"Reachable","type":"string","jsonPath":".status.conditions[?(@.type==\"Reachable\")].status"}"#,
    printcolumn = r#"{"name":"Findings","type":"integer","jsonPath":".status.incompatibleFindings"}"#,
    printcolumn = r#"{"name":"APIs","type":"integer","jsonPath":".status.apis","priority":1}"#,
    printcolumn = r#"{"name":"Last Change","type":"date","jsonPath":".status.lastChange.time","priority":1}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.conditions[?(@.type==\"Compatible\")].message","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.baseline) || self.members.exists(m, m.name == self.baseline)",
        "message": "baseline names no member; use the name of one of spec.members"
    }
]))]
pub struct APICompatibilitySpec {
    /// The clusters compared: at least two, each by its kubeconfig Secret in this namespace.
    #[schemars(length(min = 2, max = 16))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub members: Vec<MemberRef>,
    /// The CRDs compared, by full name (`widgets.example.com`); none and no groups: every CRD.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The API groups whose CRDs are compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Only CRDs whose labels match, as a Deployment's selector matches its Pods' (with names
    /// and groups, a CRD must match all three). A CRD whose labels change is compared, or
    /// left out, from the next change seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The finding classes that make the members incompatible, as `schema-diff --fail-on`
    /// takes them: breaking (the default), unproven, changes-stored-data, changes-selection,
    /// any, none.
    #[serde(default = "breaking", skip_serializing_if = "is_breaking")]
    #[schemars(extend("items" = {"type": "string", "enum": ["breaking", "unproven", "changes-stored-data", "changes-selection", "any", "none"]}))]
    pub fail_on: Vec<String>,
    /// The member the others are judged against (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Rules left out, as `schema-diff --ignore` takes them (`attribute-change`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// A ConfigMap of this namespace to keep the lowest common denominator in: per API
    /// compared that has one, key `<crd name>.yaml` holds the CRD manifest every member
    /// accepts (what `schema-diff --lcd` prints). The controller creates it, owned by this
    /// resource (deleted with it), and rewrites it after each comparison with every member
    /// answering; a ConfigMap of that name that this resource does not own is left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub lcd_config_map: Option<String>,
}

/// A member cluster of an [`APICompatibility`]: its kubeconfig in a Secret of the resource's
/// own namespace (Secret `<name>-kubeconfig`, key `value`, unless kubeconfigSecret names
/// another).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberRef {
    /// The name the status and findings call the cluster by.
    #[schemars(length(min = 1, max = 242))]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret: Option<SecretKeyRef>,
}

impl MemberRef {
    /// The Secret and key that hold this member's kubeconfig.
    pub fn secret(&self) -> (String, Option<&str>, &str) {
        secret_of(&self.name, self.kubeconfig_secret.as_ref())
    }
}

/// What the controller last saw of the members.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APICompatibilityStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Compatible` (no finding of a spec.failOn class between the members, else the first
    /// findings in words), `Reachable` (every member's API server answers, else which do
    /// not and why) and, with spec.lcdConfigMap, `LCDWritten` (the ConfigMap holds the LCD of
    /// the last comparison, else why not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The findings of a spec.failOn class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incompatible_findings: Option<i64>,
    /// The APIs compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apis: Option<i64>,
    /// Per member, whether its API server answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub members: Vec<MemberStatus>,
    /// The last change of a compared API seen on a member, whatever its class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<LastChange>,
}

/// A change of a compared API, as `schema-diff --watch` reports it.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastChange {
    /// When the controller saw it (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub time: String,
    /// The CRD's name.
    pub api: String,
    /// The members it changed on.
    pub members: Vec<String>,
    /// added, removed or changed.
    pub change: String,
    /// How bad it is for the others: breaking, unproven, changes-stored-data,
    /// changes-selection, compatible or informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

/// One member as last seen.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    pub name: String,
    pub reachable: bool,
    /// Why it does not answer, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn breaking() -> Vec<String> {
    vec!["breaking".into()]
}

fn is_breaking(words: &[String]) -> bool {
    words == ["breaking"]
}

fn one() -> Batch {
    Batch::Count(1)
}

/// `volumes` as the schema shows it: the CLI's `--volumes` values.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum VolumesSchema {
    Shared,
    Fresh,
}

/// `batch`: an integer or `auto`, as `--batch` takes it.
fn batch_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "default": 1,
        "x-kubernetes-validations": [{
            "rule": "type(self) == int ? self >= 1 : self == 'auto'",
            "message": "batch is a count of at least 1, or auto"
        }]
    })
}

/// `batch` in JSON: the number as a number, `auto` as a string; read through `Batch`'s own
/// parser, so the CLI and the resource accept the same values.
mod batch_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::statefulset::Batch;

    pub fn serialize<S: Serializer>(batch: &Batch, s: S) -> Result<S::Ok, S::Error> {
        match batch {
            Batch::Count(n) => s.serialize_i32(*n),
            Batch::Auto => s.serialize_str("auto"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Batch, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Text {
            Number(i64),
            Word(String),
        }
        let text = match Text::deserialize(d)? {
            Text::Number(n) => n.to_string(),
            Text::Word(w) => w,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The CRDs of this API as YAML documents, as `deploy/crds/` holds them.
pub fn crd_files() -> Vec<(String, String)> {
    use kube::CustomResourceExt;
    [StatefulSetMigration::crd(), APICompatibility::crd()]
        .into_iter()
        .map(|crd| {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let yaml = serde_saphyr::to_string(&crd).expect("a CRD serializes");
            (
                format!("deploy/crds/{name}.yaml"),
                format!(
                    "# Generated from src/controller/api.rs by `kubectl migrate controller crds`; do not edit.\n{yaml}"
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_reads_numbers_and_auto_and_refuses_the_rest() {
        let read = |v: serde_json::Value| {
            let mut spec = serde_json::json!({
                "statefulSetName": "web",
                "source": {"name": "a"},
                "destination": {"name": "b"},
            });
            spec["batch"] = v;
            serde_json::from_value::<StatefulSetMigrationSpec>(spec).map(|s| s.batch)
        };
        assert_eq!(read(serde_json::json!(3)).unwrap(), Batch::Count(3));
        assert_eq!(read(serde_json::json!("auto")).unwrap(), Batch::Auto);
        assert_eq!(read(serde_json::json!("2")).unwrap(), Batch::Count(2));
        let err = read(serde_json::json!(0)).unwrap_err().to_string();
        assert!(err.contains("at least 1"), "{err}");
    }

    #[test]
    fn a_spec_without_options_takes_the_clis_defaults() {
        let spec: StatefulSetMigrationSpec = serde_json::from_value(serde_json::json!({
            "statefulSetName": "web",
            "source": {"name": "a"},
            "destination": {"name": "b", "namespace": "moved"},
        }))
        .unwrap();
        assert_eq!(spec.batch, Batch::Count(1));
        assert_eq!(spec.volumes, VolumeMode::Shared);
        assert!(!spec.paused && !spec.rollback);
        assert_eq!(
            spec.source.secret(),
            ("a-kubeconfig".to_string(), None, "value")
        );
    }
}
