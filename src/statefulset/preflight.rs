//! Every check before the first write, collected into one report: nothing is written here, and
//! every problem is reported at once.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolume, PersistentVolumeClaim, PodSpec, Secret, Service,
    ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;

use super::act::FIELD_MANAGER;
use super::copy::{destination_set, map_class};
use super::model::{Observed, claim_name};
use super::observe::Location;
use crate::cluster::Cluster;

#[derive(Debug, Default, Clone, Serialize)]
pub struct Report {
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

/// What the preflight needs to know about the run.
pub struct Request<'a> {
    pub source: &'a Cluster,
    pub destination: &'a Cluster,
    pub source_at: &'a Location,
    pub destination_at: &'a Location,
    pub class_map: &'a BTreeMap<String, String>,
    pub allow_unhealthy: bool,
    pub create_namespace: bool,
    pub copy_dependencies: bool,
    /// A journal exists: the migration already started, so the source may be partly scaled down.
    pub resuming: bool,
}

/// ordinals.start is GA in 1.31 and on by default since 1.27 (beta).
pub fn ordinals_support(major: &str, minor: &str) -> Result<Option<String>, String> {
    let major: u32 = major.trim_end_matches('+').parse().unwrap_or(0);
    let minor: u32 = minor.trim_end_matches('+').parse().unwrap_or(0);
    match (major, minor) {
        (1, m) if m < 27 => Err(format!(
            "Kubernetes 1.{m} does not support StatefulSet spec.ordinals.start by default (needs 1.27, GA in 1.31)"
        )),
        (1, m) if m < 31 => Ok(Some(format!(
            "Kubernetes 1.{m}: spec.ordinals.start is beta here (GA in 1.31); make sure the StatefulSetStartOrdinal gate is on"
        ))),
        _ => Ok(None),
    }
}

/// ConfigMaps, Secrets and the ServiceAccount a pod template references.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    pub config_maps: BTreeSet<String>,
    pub secrets: BTreeSet<String>,
    pub service_account: Option<String>,
}

pub fn dependencies(spec: &PodSpec) -> Dependencies {
    let mut deps = Dependencies {
        service_account: spec.service_account_name.clone().filter(|s| s != "default"),
        ..Default::default()
    };
    for volume in spec.volumes.iter().flatten() {
        if let Some(cm) = &volume.config_map {
            deps.config_maps.insert(cm.name.clone());
        }
        if let Some(s) = volume.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            deps.secrets.insert(s);
        }
        for source in volume
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten())
        {
            if let Some(cm) = &source.config_map {
                deps.config_maps.insert(cm.name.clone());
            }
            if let Some(s) = &source.secret {
                deps.secrets.insert(s.name.clone());
            }
        }
    }
    for secret in spec.image_pull_secrets.iter().flatten() {
        deps.secrets.insert(secret.name.clone());
    }
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        for env in c.env.iter().flatten() {
            if let Some(from) = &env.value_from {
                if let Some(r) = &from.config_map_key_ref
                    && r.optional != Some(true)
                {
                    deps.config_maps.insert(r.name.clone());
                }
                if let Some(r) = &from.secret_key_ref
                    && r.optional != Some(true)
                {
                    deps.secrets.insert(r.name.clone());
                }
            }
        }
        for from in c.env_from.iter().flatten() {
            if let Some(r) = &from.config_map_ref
                && r.optional != Some(true)
            {
                deps.config_maps.insert(r.name.clone());
            }
            if let Some(r) = &from.secret_ref
                && r.optional != Some(true)
            {
                deps.secrets.insert(r.name.clone());
            }
        }
    }
    deps
}

/// The verbs the plan needs, per (group, resource), in each cluster.
fn needed_permissions(
    destination: bool,
    copy_dependencies: bool,
    create_namespace: bool,
) -> Vec<(&'static str, &'static str, &'static str, bool)> {
    // (group, resource, verb, namespaced)
    let mut needed = vec![
        ("apps", "statefulsets", "get", true),
        ("apps", "statefulsets", "patch", true),
        ("", "pods", "list", true),
        ("", "pods", "watch", true),
        ("", "persistentvolumeclaims", "list", true),
        ("", "persistentvolumeclaims", "get", true),
        ("", "persistentvolumes", "list", false),
        ("", "persistentvolumes", "get", false),
        ("", "persistentvolumes", "patch", false),
    ];
    if destination {
        needed.extend([
            ("apps", "statefulsets", "create", true),
            ("apps", "statefulsets", "delete", true),
            ("apps", "statefulsets", "watch", true),
            ("", "persistentvolumeclaims", "create", true),
            ("", "persistentvolumeclaims", "delete", true),
            ("", "persistentvolumes", "create", false),
            ("", "persistentvolumes", "delete", false),
            ("", "configmaps", "create", true),
            ("", "configmaps", "get", true),
            ("", "configmaps", "update", true),
            ("coordination.k8s.io", "leases", "create", true),
            ("coordination.k8s.io", "leases", "get", true),
            ("coordination.k8s.io", "leases", "update", true),
        ]);
        if copy_dependencies {
            for r in ["services", "configmaps", "secrets", "serviceaccounts"] {
                needed.push(("", r, "create", true));
            }
        }
        if create_namespace {
            needed.push(("", "namespaces", "create", false));
        }
    }
    needed
}

async fn denied_permissions(
    cluster: &Cluster,
    namespace: &str,
    needed: &[(&str, &str, &str, bool)],
) -> Vec<String> {
    let api: Api<SelfSubjectAccessReview> = Api::all(cluster.client.clone());
    let mut denied = Vec::new();
    for (group, resource, verb, namespaced) in needed {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    verb: Some(verb.to_string()),
                    namespace: namespaced.then(|| namespace.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let allowed = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.is_some_and(|s| s.allowed),
            Err(_) => false,
        };
        if !allowed {
            let kind = if group.is_empty() {
                resource.to_string()
            } else {
                format!("{resource}.{group}")
            };
            denied.push(if *namespaced {
                format!("{verb} {kind} in namespace {namespace}")
            } else {
                format!("{verb} {kind}")
            });
        }
    }
    denied
}

pub async fn run(req: &Request<'_>, observed: &Observed) -> Report {
    let mut report = Report::default();
    let (src, dst) = (req.source, req.destination);
    let set_name = &req.source_at.name;
    for cluster in [src, dst] {
        match ordinals_support(&cluster.version.major, &cluster.version.minor) {
            Err(e) => report.problems.push(format!("{}: {e}", cluster.context)),
            Ok(Some(w)) => report.warnings.push(format!("{}: {w}", cluster.context)),
            Ok(None) => {}
        }
    }

    // The source.
    let sets: Api<StatefulSet> = Api::namespaced(src.client.clone(), &req.source_at.namespace);
    let source_set = match sets.get_opt(set_name).await {
        Ok(Some(s)) => Some(s),
        Ok(None) => {
            let ns_exists = Api::<Namespace>::all(src.client.clone())
                .get_opt(&req.source_at.namespace)
                .await
                .ok()
                .flatten()
                .is_some();
            report.problems.push(if ns_exists {
                format!(
                    "StatefulSet {set_name} not found in namespace {} of {}",
                    req.source_at.namespace, src.context
                )
            } else {
                format!(
                    "namespace {} not found in {}",
                    req.source_at.namespace, src.context
                )
            });
            None
        }
        Err(e) => {
            report.problems.push(format!(
                "{}: cannot read StatefulSet {set_name}: {e}",
                src.context
            ));
            None
        }
    };
    let source_view = observed.source.set.as_ref();
    if let (Some(set), Some(view)) = (&source_set, source_view) {
        let spec = set.spec.clone().unwrap_or_default();
        if !req.resuming && !req.allow_unhealthy && view.ready_replicas < view.replicas {
            report.problems.push(format!(
                "only {} of {} replicas of {set_name} are Ready in {}; fix them first or pass --allow-unhealthy",
                view.ready_replicas, view.replicas, src.context
            ));
        }
        if view.retention.when_scaled == "Delete" || view.retention.when_deleted == "Delete" {
            report.warnings.push(format!(
                "{set_name} has persistentVolumeClaimRetentionPolicy whenScaled={}, whenDeleted={}: it will be held at Retain during the migration (original recorded)",
                view.retention.when_scaled, view.retention.when_deleted
            ));
        }
        // Claims and volumes of every ordinal.
        if !req.resuming {
            for k in view.range() {
                for t in &view.claim_templates {
                    let claim = claim_name(t, set_name, k);
                    match observed.source.claims.get(&claim) {
                        None => report.problems.push(format!(
                            "PVC {claim} of ordinal {k} does not exist in {}",
                            src.context
                        )),
                        Some(c) if !c.bound => report.problems.push(format!(
                            "PVC {claim} of ordinal {k} is not Bound in {}",
                            src.context
                        )),
                        _ => {}
                    }
                }
            }
        }
        let delete_volumes: Vec<&String> = observed
            .source
            .volumes
            .iter()
            .filter(|(_, v)| v.reclaim_policy != "Retain")
            .map(|(n, _)| n)
            .collect();
        if !delete_volumes.is_empty() {
            report.warnings.push(format!(
                "{} PV(s) have a reclaim policy other than Retain ({}); they will be set to Retain before anything is scaled (originals recorded)",
                delete_volumes.len(),
                delete_volumes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        // Volumes that cannot follow the pod to another cluster.
        let pvs: Api<PersistentVolume> = Api::all(src.client.clone());
        for name in observed.source.volumes.keys() {
            if let Ok(Some(pv)) = pvs.get_opt(name).await {
                let spec = pv.spec.unwrap_or_default();
                if spec.local.is_some() {
                    report.warnings.push(format!(
                        "PV {name} is a local volume: its data stays on a node of {}",
                        src.context
                    ));
                } else if spec.host_path.is_some() {
                    report.warnings.push(format!(
                        "PV {name} is a hostPath volume: the destination must see the same path"
                    ));
                } else if spec.node_affinity.is_some() {
                    report.warnings.push(format!(
                        "PV {name} has node affinity: the destination needs matching nodes"
                    ));
                }
                if let Ok(Some(existing)) = Api::<PersistentVolume>::all(dst.client.clone())
                    .get_opt(name)
                    .await
                {
                    let labelled = existing
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(super::copy::COPY_LABEL))
                        == Some(&req.destination_at.copy_label);
                    if !labelled {
                        report.problems.push(format!("a PV named {name} already exists in {} and was not copied by this migration", dst.context));
                    }
                }
            }
        }
        // Storage classes must exist in the destination (after --storage-class-map).
        let mut classes = BTreeSet::new();
        for t in spec.volume_claim_templates.iter().flatten() {
            if let Some(c) = map_class(
                t.spec.as_ref().and_then(|s| s.storage_class_name.as_ref()),
                req.class_map,
            ) {
                classes.insert(c);
            }
        }
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(src.client.clone(), &req.source_at.namespace);
        for claim in observed.source.claims.keys() {
            if let Ok(Some(c)) = claims.get_opt(claim).await
                && let Some(class) = map_class(
                    c.spec.and_then(|s| s.storage_class_name).as_ref(),
                    req.class_map,
                )
            {
                classes.insert(class);
            }
        }
        let storage_classes: Api<StorageClass> = Api::all(dst.client.clone());
        for class in classes.iter().filter(|c| !c.is_empty()) {
            if !matches!(storage_classes.get_opt(class).await, Ok(Some(_))) {
                report.problems.push(format!("StorageClass {class} does not exist in {}; create it or map it with --storage-class-map {class}=<name>", dst.context));
            }
        }
        for (from, to) in req.class_map {
            if !matches!(storage_classes.get_opt(to).await, Ok(Some(_))) {
                report.problems.push(format!(
                    "--storage-class-map {from}={to}: StorageClass {to} does not exist in {}",
                    dst.context
                ));
            }
        }
        // PodDisruptionBudgets see only their own cluster's pods.
        let pdbs: Api<PodDisruptionBudget> =
            Api::namespaced(src.client.clone(), &req.source_at.namespace);
        let labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        if let Ok(list) = pdbs.list(&ListParams::default()).await {
            for pdb in list.items {
                let selector = pdb
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .and_then(|s| s.match_labels.clone())
                    .unwrap_or_default();
                if !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                    report.warnings.push(format!(
                        "PodDisruptionBudget {} covers {set_name} in {} only; during the migration each cluster sees part of the pods, so split or adjust it",
                        pdb.metadata.name.unwrap_or_default(),
                        src.context
                    ));
                }
            }
        }
    }

    // The destination.
    let dst_ns = &req.destination_at.namespace;
    let namespace_exists = match Api::<Namespace>::all(dst.client.clone())
        .get_opt(dst_ns)
        .await
    {
        Ok(found) => found.is_some(),
        Err(e) => {
            report.problems.push(format!(
                "{}: cannot read namespace {dst_ns}: {e}",
                dst.context
            ));
            false
        }
    };
    if !namespace_exists && !req.create_namespace {
        report.problems.push(format!(
            "namespace {dst_ns} does not exist in {}; create it or pass --create-namespace",
            dst.context
        ));
    }
    // A claim of the same name that we did not copy would shadow the moved data.
    for (claim, view) in &observed.destination.claims {
        if !view.copied {
            report.problems.push(format!(
                "PVC {claim} already exists in {}/{dst_ns} and was not copied by this migration; the pod would use it instead of the moved volume",
                dst.context
            ));
        }
    }
    if let Some(dest) = observed.destination.set.as_ref() {
        let ours =
            source_view.is_some_and(|s| dest.migrated_from_uid.as_deref() == Some(s.uid.as_str()));
        if !ours {
            report.problems.push(format!(
                "a StatefulSet named {set_name} already exists in {}/{dst_ns} and was not created by this migration; refusing to touch it",
                dst.context
            ));
        }
    }
    if let Some(set) = &source_set {
        let spec = set.spec.clone().unwrap_or_default();
        if namespace_exists {
            let services: Api<Service> = Api::namespaced(dst.client.clone(), dst_ns);
            if !spec.service_name.as_deref().unwrap_or("").is_empty()
                && !req.copy_dependencies
                && !matches!(
                    services
                        .get_opt(spec.service_name.as_deref().unwrap_or_default())
                        .await,
                    Ok(Some(_))
                )
            {
                report.problems.push(format!(
                    "Service {} (the StatefulSet's serviceName) does not exist in {}/{dst_ns}; create it or pass --copy-dependencies",
                    spec.service_name.clone().unwrap_or_default(),
                    dst.context
                ));
            }
            if let Some(pod_spec) = spec.template.spec.as_ref() {
                let deps = dependencies(pod_spec);
                if !req.copy_dependencies {
                    let cms: Api<ConfigMap> = Api::namespaced(dst.client.clone(), dst_ns);
                    for cm in &deps.config_maps {
                        if !matches!(cms.get_opt(cm).await, Ok(Some(_))) {
                            report.problems.push(format!("ConfigMap {cm} used by the pod template does not exist in {}/{dst_ns}; create it or pass --copy-dependencies", dst.context));
                        }
                    }
                    let secrets: Api<Secret> = Api::namespaced(dst.client.clone(), dst_ns);
                    for s in &deps.secrets {
                        if !matches!(secrets.get_opt(s).await, Ok(Some(_))) {
                            report.problems.push(format!("Secret {s} used by the pod template does not exist in {}/{dst_ns}; create it or pass --copy-dependencies", dst.context));
                        }
                    }
                    if let Some(sa) = &deps.service_account {
                        let sas: Api<ServiceAccount> = Api::namespaced(dst.client.clone(), dst_ns);
                        if !matches!(sas.get_opt(sa).await, Ok(Some(_))) {
                            report.problems.push(format!("ServiceAccount {sa} does not exist in {}/{dst_ns}; create it or pass --copy-dependencies", dst.context));
                        }
                    }
                }
            }
            // A server-side dry run with strict field validation catches fields the destination
            // API does not know, and admission problems, before anything is written.
            if observed.destination.set.is_none() && !req.resuming {
                let view = observed.source.set.as_ref();
                let end = view.map(|v| v.start + v.replicas).unwrap_or(0);
                let dest = destination_set(
                    set,
                    dst_ns,
                    end,
                    req.class_map,
                    &req.destination_at.copy_label,
                    "preflight",
                );
                let api: Api<StatefulSet> = Api::namespaced(dst.client.clone(), dst_ns);
                let params = PatchParams::apply(FIELD_MANAGER)
                    .validation_strict()
                    .dry_run();
                if let Err(e) = api.patch(set_name, &params, &Patch::Apply(&dest)).await {
                    report.problems.push(format!("the destination rejects the StatefulSet (server-side dry run, fieldValidation=Strict): {}", short_error(&e)));
                }
            }
        }
    }

    report
}

/// RBAC for every verb and resource the plan needs, in both clusters (SelfSubjectAccessReview).
/// Runs before anything else reads, so that a restricted user gets the whole list at once.
pub async fn permissions(req: &Request<'_>) -> Vec<String> {
    let (src, dst) = (req.source, req.destination);
    let dst_ns = &req.destination_at.namespace;
    let mut report = Report::default();
    // Permissions, in both clusters.
    let source_denied = denied_permissions(
        src,
        &req.source_at.namespace,
        &needed_permissions(false, false, false),
    )
    .await;
    if !source_denied.is_empty() {
        report.problems.push(format!(
            "{} denies: {}",
            src.context,
            source_denied.join(", ")
        ));
    }
    let destination_denied = denied_permissions(
        dst,
        dst_ns,
        &needed_permissions(true, req.copy_dependencies, req.create_namespace),
    )
    .await;
    if !destination_denied.is_empty() {
        report.problems.push(format!(
            "{} denies: {}",
            dst.context,
            destination_denied.join(", ")
        ));
    }
    report.problems
}

fn short_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_need_1_27_and_are_ga_in_1_31() {
        assert!(ordinals_support("1", "26").is_err());
        assert!(matches!(ordinals_support("1", "28"), Ok(Some(_))));
        assert_eq!(ordinals_support("1", "31"), Ok(None));
        assert_eq!(ordinals_support("1", "36+"), Ok(None));
    }

    #[test]
    fn dependencies_come_from_volumes_env_and_pull_secrets() {
        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "serviceAccountName": "db",
            "imagePullSecrets": [{"name": "registry"}],
            "volumes": [{"name": "a", "configMap": {"name": "conf"}}, {"name": "b", "secret": {"secretName": "tls"}},
                        {"name": "c", "projected": {"sources": [{"configMap": {"name": "extra"}}]}}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
            "containers": [{"name": "c", "env": [
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "env-conf", "key": "k"}}},
                {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "maybe", "key": "k", "optional": true}}}]}]
        }))
        .unwrap();
        let deps = dependencies(&spec);
        assert_eq!(
            deps.config_maps,
            ["conf", "env-conf", "extra"].map(String::from).into()
        );
        assert_eq!(
            deps.secrets,
            ["init-secret", "registry", "tls"].map(String::from).into()
        );
        assert_eq!(deps.service_account.as_deref(), Some("db"));
    }
}
