//! Every check before the first write, collected into one report: nothing is written here, and
//! every problem is reported at once.
//!
//! [`gather`] reads what the checks need from both clusters into [`Facts`]; [`judge`] is pure
//! and turns facts and the observation into problems and warnings.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, PodSpec, Secret, Service,
    ServiceAccount, TopologySelectorTerm,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde::Serialize;

use super::Observe;
use super::copy::COPY_LABEL;
use super::copy::{destination_set, map_class};
use super::executor::FIELD_MANAGER;
use super::model::{
    ObjectKind, ObjectRef, Observed, Preparation, RecordedBudget, SetView, VolumeMode, claim_name,
};
use super::observe::Location;
use super::scheduling::{self, NodeFacts, PodNeeds, VolumeNeeds};
use crate::cluster::{Cluster, Namespaced};

#[derive(Debug, Default, Clone, Serialize)]
pub struct Report {
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

/// What the preflight needs to know about the run: where, and the flags that change the checks.
pub struct Request<'a> {
    pub source_at: &'a Location,
    pub destination_at: &'a Location,
    pub class_map: &'a BTreeMap<String, String>,
    pub allow_unhealthy: bool,
    pub create_namespace: bool,
    pub copy_dependencies: bool,
    /// A journal exists: the migration already started, so the source may be partly scaled down.
    pub resuming: bool,
    /// Ordinals moved at once (`--batch`).
    pub batch: i32,
    /// The budgets the journal recorded (their specs in the source are already split) and the
    /// set's replicas when it started.
    pub recorded_budgets: Option<(&'a [RecordedBudget], i32)>,
    /// The destination lets us list nodes (see [`permissions`]); without that the scheduling
    /// check cannot run.
    pub nodes_listable: bool,
    /// Shared (copied) claims or fresh ones: only copied volumes must reach the destination.
    pub volumes: VolumeMode,
    /// How the reconciler will read the clusters: watching needs list and watch permissions.
    pub observe: Observe,
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
    req: &Request<'_>,
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
    // The reconciler's watches (src/statefulset/watched.rs): each is a list, then a watch.
    if req.observe == Observe::Watch {
        needed.extend([
            ("apps", "statefulsets", "list", true),
            ("apps", "statefulsets", "watch", true),
            ("", "persistentvolumeclaims", "watch", true),
            ("", "persistentvolumes", "watch", false),
            ("policy", "poddisruptionbudgets", "list", true),
            ("policy", "poddisruptionbudgets", "watch", true),
        ]);
        if destination {
            needed.extend([
                ("", "configmaps", "list", true),
                ("", "configmaps", "watch", true),
            ]);
        }
    }
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
            ("coordination.k8s.io", "leases", "delete", true),
        ]);
        if req.copy_dependencies {
            for r in ["services", "configmaps", "secrets", "serviceaccounts"] {
                needed.push(("", r, "create", true));
            }
        }
        if req.create_namespace {
            needed.push(("", "namespaces", "create", false));
        }
    }
    // Each asked once, in the order first named.
    let mut asked = std::collections::BTreeSet::new();
    needed.retain(|p| asked.insert(*p));
    needed
}

async fn denied_permissions(
    cluster: &Cluster,
    namespace: &str,
    needed: &[(&str, &str, &str, bool)],
) -> Vec<String> {
    let api: Api<SelfSubjectAccessReview> = Api::all(cluster.client.clone());
    // A few at once (each on a connection of its own): a run's start-up waits less, without
    // a TLS handshake per question.
    use futures::StreamExt as _;
    let mut asks = Vec::with_capacity(needed.len());
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
        let api = &api;
        asks.push(async move {
            match api.create(&PostParams::default(), &review).await {
                Ok(r) => r.status.is_some_and(|s| s.allowed),
                Err(_) => false,
            }
        });
    }
    // (A loop, not a closure over `needed`: the run's future must stay `Send`.)
    let answers: Vec<bool> = futures::stream::iter(asks).buffered(4).collect().await;
    needed
        .iter()
        .zip(answers)
        .filter(|(_, allowed)| !allowed)
        .map(|((group, resource, verb, namespaced), _)| {
            let kind = if group.is_empty() {
                resource.to_string()
            } else {
                format!("{resource}.{group}")
            };
            if *namespaced {
                format!("{verb} {kind} in namespace {namespace}")
            } else {
                format!("{verb} {kind}")
            }
        })
        .collect()
}

/// A lookup that can find the object, find nothing, or fail.
#[derive(Debug, Clone)]
pub enum Lookup<T> {
    Found(T),
    Missing,
    Failed(String),
}

/// Everything the checks read from the clusters, beyond the observation.
#[derive(Debug, Clone)]
pub struct Facts {
    /// (context, major, minor) of the source, then of the destination.
    pub versions: [(String, String, String); 2],
    pub source_set: Lookup<StatefulSet>,
    /// Whether the source namespace exists (read when the set is missing, to say which is).
    pub source_namespace_exists: bool,
    /// The source's PVs of the set, as read.
    pub source_volumes: BTreeMap<String, PersistentVolume>,
    /// PVs of the same names that already exist in the destination.
    pub destination_volumes: BTreeMap<String, PersistentVolume>,
    /// The StorageClass of each source claim of the set (before --storage-class-map).
    pub claim_classes: Vec<Option<String>>,
    /// Per StorageClass name asked for, whether the destination has it.
    pub destination_classes: BTreeMap<String, bool>,
    /// The allowedTopologies of those destination StorageClasses that restrict them.
    pub class_topologies: BTreeMap<String, Vec<TopologySelectorTerm>>,
    /// The destination's nodes, for the check that the pods can be scheduled there.
    pub destination_nodes: Lookup<Vec<NodeFacts>>,
    /// The source namespace's PodDisruptionBudgets.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// The destination namespace's PodDisruptionBudgets (read when it exists).
    pub destination_pdbs: Vec<PodDisruptionBudget>,
    /// Whether the destination namespace exists.
    pub destination_namespace: Lookup<()>,
    /// Per object the pods need (`Service/x`, `ConfigMap/y`, ...), whether the destination
    /// namespace has it (read only when the namespace exists).
    pub destination_objects: BTreeMap<String, bool>,
    /// The server-side dry run of the destination StatefulSet: `Some(Err)` with the server's
    /// message when it was refused (run only for a new migration into an existing namespace).
    pub destination_dry_run: Option<Result<(), String>>,
}

/// The StorageClasses the destination needs: those of the set's templates and claims, after
/// --storage-class-map.
fn needed_classes(
    set: &StatefulSet,
    facts: &Facts,
    class_map: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut classes = BTreeSet::new();
    let spec = set.spec.clone().unwrap_or_default();
    for t in spec.volume_claim_templates.iter().flatten() {
        if let Some(c) = map_class(
            t.spec.as_ref().and_then(|s| s.storage_class_name.as_ref()),
            class_map,
        ) {
            classes.insert(c);
        }
    }
    for class in &facts.claim_classes {
        if let Some(c) = map_class(class.as_ref(), class_map) {
            classes.insert(c);
        }
    }
    classes.retain(|c| !c.is_empty());
    classes
}

/// The destination StorageClass of a PV's copy: its class, through --storage-class-map.
fn volume_class(pv: &PersistentVolume, class_map: &BTreeMap<String, String>) -> Option<String> {
    map_class(
        pv.spec.as_ref().and_then(|s| s.storage_class_name.as_ref()),
        class_map,
    )
    .filter(|c| !c.is_empty())
}

/// What the volumes of ordinal `k` ask of a node in the destination: each PV's node affinity
/// (its copy keeps it) and its destination StorageClass's allowedTopologies.
fn volume_needs(
    k: i32,
    req: &Request<'_>,
    templates: &[String],
    facts: &Facts,
    observed: &Observed,
) -> Vec<VolumeNeeds> {
    templates
        .iter()
        .filter_map(|t| {
            let claim = claim_name(t, &req.source_at.name, k);
            let volume = observed.source.claims.get(&claim)?.volume_name.clone()?;
            let pv = facts.source_volumes.get(&volume)?;
            let class = volume_class(pv, req.class_map);
            Some(VolumeNeeds {
                node_affinity: pv
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_affinity.as_ref())
                    .and_then(|a| a.required.clone()),
                allowed_topologies: class
                    .as_ref()
                    .and_then(|c| facts.class_topologies.get(c))
                    .cloned()
                    .unwrap_or_default(),
                class,
                volume,
            })
        })
        .collect()
}

/// The destination objects the pod template needs, in the order they are copied.
fn needed_objects(set: &StatefulSet) -> Vec<ObjectRef> {
    let spec = set.spec.clone().unwrap_or_default();
    let mut needed = Vec::new();
    let mut add = |kind, name| needed.push(ObjectRef { kind, name });
    if let Some(service) = spec.service_name.filter(|s| !s.is_empty()) {
        add(ObjectKind::Service, service);
    }
    if let Some(pod_spec) = spec.template.spec.as_ref() {
        let deps = dependencies(pod_spec);
        deps.config_maps
            .into_iter()
            .for_each(|c| add(ObjectKind::ConfigMap, c));
        deps.secrets
            .into_iter()
            .for_each(|s| add(ObjectKind::Secret, s));
        deps.service_account
            .into_iter()
            .for_each(|s| add(ObjectKind::ServiceAccount, s));
    }
    needed
}

/// `Kind/name`, the key of [`Facts::destination_objects`].
fn object_key(object: &ObjectRef) -> String {
    format!("{}/{}", object.kind, object.name)
}

/// PURE: what the run creates in the destination before it moves anything: the namespace
/// (with --create-namespace) and the objects the pods use that the destination lacks (with
/// --copy-dependencies).
pub fn preparation(req: &Request<'_>, facts: &Facts) -> Preparation {
    let namespace_missing = matches!(facts.destination_namespace, Lookup::Missing);
    let copies = match &facts.source_set {
        Lookup::Found(set) if req.copy_dependencies => needed_objects(set)
            .into_iter()
            .filter(|o| {
                namespace_missing || facts.destination_objects.get(&object_key(o)) != Some(&true)
            })
            .collect(),
        _ => Vec::new(),
    };
    Preparation {
        create_namespace: req.create_namespace && namespace_missing,
        copies,
        budgets: budgets(req, facts),
        volumes: req.volumes,
    }
}

/// The PodDisruptionBudgets that select the set: as the journal recorded them, or as the
/// source has them before a migration starts.
fn budgets(req: &Request<'_>, facts: &Facts) -> Vec<RecordedBudget> {
    if let Some((recorded, _)) = req.recorded_budgets {
        return recorded.to_vec();
    }
    match &facts.source_set {
        Lookup::Found(set) => {
            let labels = set
                .spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref())
                .and_then(|m| m.labels.clone())
                .unwrap_or_default();
            super::budget::budgets_of(&facts.pdbs, &labels)
        }
        _ => Vec::new(),
    }
}

/// `--batch auto`: the ordinals per step that the budgets selecting the set allow (the
/// journal's recorded budgets on a resume), with the budget that sets it.
pub fn auto_batch(req: &Request<'_>, facts: &Facts) -> (i32, Option<String>) {
    let total = match (req.recorded_budgets, &facts.source_set) {
        (Some((_, replicas)), _) => replicas,
        (None, Lookup::Found(set)) => set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        (None, _) => 1,
    };
    let budgets = budgets(req, facts);
    let (batch, name) = super::budget::auto_batch(&budgets, total);
    (batch, name.map(str::to_string))
}

/// Reads what the checks need. Nothing is written; the one dry run is a server-side one.
pub async fn gather(
    (src, dst): (&Cluster, &Cluster),
    req: &Request<'_>,
    observed: &Observed,
) -> Facts {
    let version = |c: &Cluster| {
        (
            c.context.clone(),
            c.version.major.clone(),
            c.version.minor.clone(),
        )
    };
    let mut facts = Facts {
        versions: [version(src), version(dst)],
        source_set: Lookup::Missing,
        source_namespace_exists: true,
        source_volumes: BTreeMap::new(),
        destination_volumes: BTreeMap::new(),
        claim_classes: Vec::new(),
        destination_classes: BTreeMap::new(),
        class_topologies: BTreeMap::new(),
        destination_nodes: Lookup::Missing,
        pdbs: Vec::new(),
        destination_pdbs: Vec::new(),
        destination_namespace: Lookup::Missing,
        destination_objects: BTreeMap::new(),
        destination_dry_run: None,
    };
    let source_namespace = &req.source_at.namespace;
    let sets: Api<StatefulSet> = Api::namespaced(src.client.clone(), source_namespace);
    let source_set = match sets.get_opt(&req.source_at.name).await {
        Ok(Some(s)) => Lookup::Found(s),
        Ok(None) => {
            facts.source_namespace_exists = Api::<Namespace>::all(src.client.clone())
                .get_opt(source_namespace)
                .await
                .ok()
                .flatten()
                .is_some();
            Lookup::Missing
        }
        Err(e) => Lookup::Failed(e.to_string()),
    };
    if let Lookup::Found(set) = &source_set {
        read_volumes((src, dst), observed, &mut facts).await;
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(src.client.clone(), source_namespace);
        for claim in observed.source.claims.keys() {
            if let Ok(Some(c)) = claims.get_opt(claim).await {
                facts
                    .claim_classes
                    .push(c.spec.and_then(|s| s.storage_class_name));
            }
        }
        read_classes(dst, req, set, &mut facts).await;
        facts.destination_nodes = read_nodes(dst, req).await;
        facts.pdbs = list_budgets(src, source_namespace).await;
    }
    let dst_ns = &req.destination_at.namespace;
    facts.destination_namespace = match Api::<Namespace>::all(dst.client.clone())
        .get_opt(dst_ns)
        .await
    {
        Ok(Some(_)) => Lookup::Found(()),
        Ok(None) => Lookup::Missing,
        Err(e) => Lookup::Failed(e.to_string()),
    };
    if let (Lookup::Found(set), Lookup::Found(())) = (&source_set, &facts.destination_namespace) {
        facts.destination_pdbs = list_budgets(dst, dst_ns).await;
        for object in needed_objects(set) {
            let name = &object.name;
            let exists = match object.kind {
                ObjectKind::Service => exists::<Service>(dst, dst_ns, name).await,
                ObjectKind::ConfigMap => exists::<ConfigMap>(dst, dst_ns, name).await,
                ObjectKind::Secret => exists::<Secret>(dst, dst_ns, name).await,
                _ => exists::<ServiceAccount>(dst, dst_ns, name).await,
            };
            facts
                .destination_objects
                .insert(object_key(&object), exists);
        }
        if observed.destination.set.is_none() && !req.resuming {
            facts.destination_dry_run = Some(dry_run_destination(dst, req, observed, set).await);
        }
    }
    facts.source_set = source_set;
    facts
}

/// The source's PVs of the set, and PVs of the same names in the destination.
async fn read_volumes((src, dst): (&Cluster, &Cluster), observed: &Observed, facts: &mut Facts) {
    let pvs: Api<PersistentVolume> = Api::all(src.client.clone());
    let dst_pvs: Api<PersistentVolume> = Api::all(dst.client.clone());
    for name in observed.source.volumes.keys() {
        if let Ok(Some(pv)) = pvs.get_opt(name).await {
            facts.source_volumes.insert(name.clone(), pv);
            if let Ok(Some(existing)) = dst_pvs.get_opt(name).await {
                facts.destination_volumes.insert(name.clone(), existing);
            }
        }
    }
}

/// Whether the destination has each StorageClass the copies ask for, and the topologies those
/// allow. Needs the claims' classes and the source's PVs read first.
async fn read_classes(dst: &Cluster, req: &Request<'_>, set: &StatefulSet, facts: &mut Facts) {
    let storage_classes: Api<StorageClass> = Api::all(dst.client.clone());
    let mut asked = needed_classes(set, facts, req.class_map);
    asked.extend(req.class_map.values().cloned());
    // The PV copies take their PV's class, mapped.
    asked.extend(
        facts
            .source_volumes
            .values()
            .filter_map(|pv| volume_class(pv, req.class_map)),
    );
    for class in asked {
        let found = storage_classes.get_opt(&class).await.ok().flatten();
        if let Some(terms) = found
            .as_ref()
            .and_then(|c| c.allowed_topologies.clone())
            .filter(|t| !t.is_empty())
        {
            facts.class_topologies.insert(class.clone(), terms);
        }
        facts.destination_classes.insert(class, found.is_some());
    }
}

/// The destination's nodes, for the scheduling check, if we may list them.
async fn read_nodes(dst: &Cluster, req: &Request<'_>) -> Lookup<Vec<NodeFacts>> {
    if !req.nodes_listable {
        return Lookup::Failed(format!("{} denies list nodes", dst.context));
    }
    match Api::<Node>::all(dst.client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Lookup::Found(list.items.iter().map(NodeFacts::of).collect()),
        Err(e) => Lookup::Failed(short_error(&e)),
    }
}

/// The PodDisruptionBudgets of `namespace` (none, if they cannot be listed).
async fn list_budgets(cluster: &Cluster, namespace: &str) -> Vec<PodDisruptionBudget> {
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(cluster.client.clone(), namespace);
    pdbs.list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
}

/// A server-side dry run of the destination set with strict field validation: it catches
/// fields the destination API does not know, and admission problems, before anything is
/// written. `Err` holds the server's message.
async fn dry_run_destination(
    dst: &Cluster,
    req: &Request<'_>,
    observed: &Observed,
    set: &StatefulSet,
) -> Result<(), String> {
    let dst_ns = &req.destination_at.namespace;
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
    // Forced: the real write is a create, which no field owner can conflict with. A set
    // created meanwhile by another run (which then holds the lease) showed up here as an
    // apply conflict instead of that run's lease.
    let params = PatchParams::apply(FIELD_MANAGER)
        .validation_strict()
        .dry_run()
        .force();
    api.patch(&req.source_at.name, &params, &Patch::Apply(&dest))
        .await
        .map(|_| ())
        .map_err(|e| short_error(&e))
}

async fn exists<K>(cluster: &Cluster, namespace: &str, name: &str) -> bool
where
    K: Namespaced,
{
    let api: Api<K> = Api::namespaced(cluster.client.clone(), namespace);
    matches!(api.get_opt(name).await, Ok(Some(_)))
}

/// PURE: the problems (any one stops the run) and warnings, from the facts and the observation.
pub fn judge(req: &Request<'_>, facts: &Facts, observed: &Observed) -> Report {
    let [(src_context, ..), (dst_context, ..)] = &facts.versions;
    let mut judging = Judging {
        req,
        facts,
        observed,
        set_name: &req.source_at.name,
        src_context,
        dst_context,
        report: Report::default(),
    };
    judging.versions();
    judging.source_lookup();
    let source_set = match &facts.source_set {
        Lookup::Found(s) => Some(s),
        _ => None,
    };
    if let (Some(set), Some(view)) = (source_set, observed.source.set.as_ref()) {
        judging.source_state(view);
        judging.source_claims(view);
        judging.source_volumes();
        judging.storage_classes(set);
        judging.scheduling(set, view);
        judging.budgets(set);
    }
    let namespace_exists = judging.destination_namespace();
    judging.destination_claims();
    judging.destination_set();
    // Judged against the namespace as it will be: one --create-namespace makes holds nothing.
    if let Some(set) = source_set
        && (namespace_exists || req.create_namespace)
    {
        judging.destination_objects(set, namespace_exists);
    }
    judging.report
}

/// [`judge`] under way: what it judges, and the report so far. Each check adds its problems
/// and warnings in the order the report lists them.
struct Judging<'a> {
    req: &'a Request<'a>,
    facts: &'a Facts,
    observed: &'a Observed,
    set_name: &'a str,
    src_context: &'a str,
    dst_context: &'a str,
    report: Report,
}

impl Judging<'_> {
    fn problem(&mut self, problem: String) {
        self.report.problems.push(problem);
    }

    fn warning(&mut self, warning: String) {
        self.report.warnings.push(warning);
    }

    /// Both servers support spec.ordinals.start.
    fn versions(&mut self) {
        for (context, major, minor) in &self.facts.versions {
            match ordinals_support(major, minor) {
                Err(e) => self.problem(format!("{context}: {e}")),
                Ok(Some(w)) => self.warning(format!("{context}: {w}")),
                Ok(None) => {}
            }
        }
    }

    /// The source set exists and can be read.
    fn source_lookup(&mut self) {
        let (set_name, src_context) = (self.set_name, self.src_context);
        let namespace = &self.req.source_at.namespace;
        match &self.facts.source_set {
            Lookup::Found(_) => {}
            Lookup::Missing if self.facts.source_namespace_exists => self.problem(format!(
                "StatefulSet {set_name} not found in namespace {namespace} of {src_context}"
            )),
            Lookup::Missing => {
                self.problem(format!("namespace {namespace} not found in {src_context}"))
            }
            Lookup::Failed(e) => self.problem(format!(
                "{src_context}: cannot read StatefulSet {set_name}: {e}"
            )),
        }
    }

    /// A new migration needs replicas to move, all of them Ready (unless allowed); a retention
    /// policy that deletes claims is held at Retain meanwhile.
    fn source_state(&mut self, view: &SetView) {
        let (req, set_name, src_context) = (self.req, self.set_name, self.src_context);
        if !req.resuming && view.replicas == 0 {
            self.problem(format!(
                "{set_name} has 0 replicas in {src_context}: there is nothing to move (a source that was already migrated looks like this; see --status)"
            ));
        }
        if !req.resuming && !req.allow_unhealthy && view.ready_replicas < view.replicas {
            self.problem(format!(
                "only {} of {} replicas of {set_name} are Ready in {src_context}; fix them first or pass --allow-unhealthy",
                view.ready_replicas, view.replicas
            ));
        }
        if view.retention.when_scaled == "Delete" || view.retention.when_deleted == "Delete" {
            self.warning(format!(
                "{set_name} has persistentVolumeClaimRetentionPolicy whenScaled={}, whenDeleted={}: it will be held at Retain during the migration (original recorded)",
                view.retention.when_scaled, view.retention.when_deleted
            ));
        }
    }

    /// Before a new migration, every ordinal's claims exist and are Bound.
    fn source_claims(&mut self, view: &SetView) {
        if self.req.resuming {
            return;
        }
        let (set_name, src_context) = (self.set_name, self.src_context);
        for k in view.range() {
            for t in &view.claim_templates {
                let claim = claim_name(t, set_name, k);
                match self.observed.source.claims.get(&claim) {
                    None => self.problem(format!(
                        "PVC {claim} of ordinal {k} does not exist in {src_context}"
                    )),
                    Some(c) if !c.bound => self.problem(format!(
                        "PVC {claim} of ordinal {k} is not Bound in {src_context}"
                    )),
                    _ => {}
                }
            }
        }
    }

    /// What happens to the source's PVs, and those that cannot follow a pod to another
    /// cluster (only copied ones must) or whose name the destination already uses.
    fn source_volumes(&mut self) {
        let (req, facts) = (self.req, self.facts);
        let (set_name, src_context, dst_context) =
            (self.set_name, self.src_context, self.dst_context);
        let delete_volumes: Vec<&str> = self
            .observed
            .source
            .volumes
            .iter()
            .filter(|(_, v)| v.reclaim_policy != "Retain")
            .map(|(n, _)| n.as_str())
            .collect();
        if !delete_volumes.is_empty() {
            self.warning(format!(
                "{} {} a reclaim policy other than Retain ({}); set to Retain before anything is scaled (originals recorded)",
                super::words::count(delete_volumes.len() as i64, "PV", "PVs"),
                super::words::noun(delete_volumes.len() as i64, "has", "have"),
                delete_volumes.join(", ")
            ));
        }
        if !req.volumes.is_shared() {
            self.warning(format!(
                "--volumes=fresh: each pod of {set_name} starts in {dst_context} on new, empty claims from its volumeClaimTemplates; \
                 the application must rebuild the replica from its peers. The claims and PVs in {src_context} are kept (Retain) \
                 for a rollback until --cleanup"
            ));
            return;
        }
        for (name, pv) in &facts.source_volumes {
            let spec = pv.spec.clone().unwrap_or_default();
            if spec.local.is_some() {
                self.warning(format!(
                    "PV {name} is a local volume: its data stays on a node of {src_context}"
                ));
            } else if spec.host_path.is_some() {
                self.warning(format!(
                    "PV {name} is a hostPath volume: the destination must see the same path"
                ));
            } else if spec.node_affinity.is_some()
                && !matches!(facts.destination_nodes, Lookup::Found(_))
            {
                self.warning(format!(
                    "PV {name} has node affinity: the destination needs matching nodes"
                ));
            }
            if let Some(existing) = facts.destination_volumes.get(name)
                && !self.copied_by_us(&existing.metadata)
            {
                self.problem(format!("a PV named {name} already exists in {dst_context} and was not copied by this migration"));
            }
        }
    }

    /// Whether an object carries this migration's copy label.
    fn copied_by_us(&self, meta: &ObjectMeta) -> bool {
        meta.labels.as_ref().and_then(|l| l.get(COPY_LABEL))
            == Some(&self.req.destination_at.copy_label)
    }

    /// The StorageClasses the destination needs exist there (after --storage-class-map).
    fn storage_classes(&mut self, set: &StatefulSet) {
        let (facts, dst_context) = (self.facts, self.dst_context);
        let has_class = |class: &str| facts.destination_classes.get(class) == Some(&true);
        for class in needed_classes(set, facts, self.req.class_map) {
            if !has_class(&class) {
                self.problem(format!("StorageClass {class} does not exist in {dst_context}; create it or map it with --storage-class-map {class}=<name>"));
            }
        }
        for (from, to) in self.req.class_map {
            if !has_class(to) {
                self.problem(format!(
                    "--storage-class-map {from}={to}: StorageClass {to} does not exist in {dst_context}"
                ));
            }
        }
    }

    /// Every pod still to move needs a destination node that takes it and its volumes.
    fn scheduling(&mut self, set: &StatefulSet, view: &SetView) {
        let (req, facts, observed) = (self.req, self.facts, self.observed);
        let (set_name, dst_context) = (self.set_name, self.dst_context);
        match &facts.destination_nodes {
            Lookup::Found(nodes) => {
                let template = set
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.spec.clone())
                    .unwrap_or_default();
                let needs = PodNeeds::of(&template);
                let ordinals: Vec<(i32, Vec<VolumeNeeds>)> = view
                    .range()
                    .map(|k| {
                        let needs = if req.volumes.is_shared() {
                            volume_needs(k, req, &view.claim_templates, facts, observed)
                        } else {
                            // Fresh claims are bound where the destination's scheduler puts the pod.
                            Vec::new()
                        };
                        (k, needs)
                    })
                    .collect();
                let unschedulable =
                    scheduling::unschedulable(set_name, dst_context, &needs, &ordinals, nodes);
                self.report.problems.extend(unschedulable);
            }
            Lookup::Failed(e) => self.warning(format!(
                "could not check that the pods of {set_name} can be scheduled in {dst_context} ({e}); check their nodeSelector, node affinity, tolerations and volume node affinity against its nodes by hand"
            )),
            Lookup::Missing => {}
        }
    }

    /// Each ordinal is down while it moves: a budget that allows fewer disruptions than the
    /// batch would be broken by the migration itself. The split gives the destination a copy
    /// of the same name; someone else's budget of that name would be changed instead.
    fn budgets(&mut self, set: &StatefulSet) {
        let req = self.req;
        let total = req.recorded_budgets.map_or(
            set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            |(_, replicas)| replicas,
        );
        for budget in budgets(req, self.facts) {
            if let Some(why) = super::budget::refuse_batch(&budget, total, req.batch) {
                self.problem(why);
            }
            let foreign = self.facts.destination_pdbs.iter().any(|p| {
                p.metadata.name.as_deref() == Some(budget.name.as_str())
                    && !self.copied_by_us(&p.metadata)
            });
            if foreign {
                self.problem(format!(
                    "a PodDisruptionBudget named {} already exists in {}/{} and was not created by this migration; \
                     the split would change it: rename or delete one of them",
                    budget.name, self.dst_context, req.destination_at.namespace
                ));
            }
        }
    }

    /// Whether the destination namespace exists; without it, the run must create it.
    fn destination_namespace(&mut self) -> bool {
        let (dst_ns, dst_context) = (&self.req.destination_at.namespace, self.dst_context);
        let exists = match &self.facts.destination_namespace {
            Lookup::Found(()) => true,
            Lookup::Missing => false,
            Lookup::Failed(e) => {
                self.problem(format!(
                    "{dst_context}: cannot read namespace {dst_ns}: {e}"
                ));
                false
            }
        };
        if !exists && !self.req.create_namespace {
            self.problem(format!(
                "namespace {dst_ns} does not exist in {dst_context}; create it or pass --create-namespace"
            ));
        }
        exists
    }

    /// A claim of the same name that we did not copy would shadow the moved data. With fresh
    /// volumes, the destination's controller makes the claims: once the migration runs they
    /// are its own, but before it starts one would hand a pod old data instead of a fresh
    /// start.
    fn destination_claims(&mut self) {
        let req = self.req;
        let (dst_ns, dst_context) = (&req.destination_at.namespace, self.dst_context);
        let fresh_resume = !req.volumes.is_shared() && req.resuming;
        for (claim, view) in &self.observed.destination.claims {
            if !view.copied && !fresh_resume {
                self.problem(format!(
                    "PVC {claim} already exists in {dst_context}/{dst_ns} and was not copied by this migration; the pod would use it instead of {}",
                    if req.volumes.is_shared() { "the moved volume" } else { "a fresh claim" }
                ));
            }
        }
    }

    /// A destination set is only this migration's, and only with its journal; copies without
    /// either belong to an earlier migration whose journal is gone.
    fn destination_set(&mut self) {
        let (req, observed, set_name) = (self.req, self.observed, self.set_name);
        let (dst_ns, dst_context) = (&req.destination_at.namespace, self.dst_context);
        let source_view = observed.source.set.as_ref();
        if let Some(dest) = observed.destination.set.as_ref() {
            let ours = source_view
                .is_some_and(|s| dest.migrated_from_uid.as_deref() == Some(s.uid.as_str()));
            if !ours {
                self.problem(format!(
                    "a StatefulSet named {set_name} already exists in {dst_context}/{dst_ns} and was not created by this migration; refusing to touch it"
                ));
            } else if !req.resuming {
                self.problem(format!(
                    "the StatefulSet {set_name} in {dst_context}/{dst_ns} was created by a migration whose journal is gone; \
                     rebuild the journal with --rebuild-journal, then rerun to resume or --rollback"
                ));
            }
        }
        if !req.resuming && observed.destination.set.is_none() {
            let place = format!("{dst_context}/{dst_ns}");
            self.report
                .problems
                .extend(super::decide::orphaned_copies(set_name, &place, observed));
        }
    }

    /// In the destination namespace, existing or to be created (then empty): the objects the
    /// pods need are there (or copied with --copy-dependencies), and the server takes the
    /// destination set.
    fn destination_objects(&mut self, set: &StatefulSet, namespace_exists: bool) {
        let (dst_ns, dst_context) = (&self.req.destination_at.namespace, self.dst_context);
        let place = if namespace_exists {
            format!("{dst_context}/{dst_ns}")
        } else {
            format!("{dst_context}/{dst_ns} (which --create-namespace creates empty)")
        };
        let dst_ns = &place;
        if !self.req.copy_dependencies {
            for object in needed_objects(set) {
                if namespace_exists
                    && self.facts.destination_objects.get(&object_key(&object)) == Some(&true)
                {
                    continue;
                }
                let (kind, name) = (object.kind, &object.name);
                self.problem(match kind {
                    ObjectKind::Service => format!(
                        "Service {name} (the StatefulSet's serviceName) does not exist in {dst_ns}; create it or pass --copy-dependencies"
                    ),
                    ObjectKind::ServiceAccount => format!(
                        "ServiceAccount {name} does not exist in {dst_ns}; create it or pass --copy-dependencies"
                    ),
                    _ => format!(
                        "{kind} {name} used by the pod template does not exist in {dst_ns}; create it or pass --copy-dependencies"
                    ),
                });
            }
        }
        if let Some(Err(message)) = &self.facts.destination_dry_run {
            self.problem(format!("the destination rejects the StatefulSet (server-side dry run, fieldValidation=Strict): {message}"));
        }
    }
}

/// What the permission check found.
#[derive(Debug, Default)]
pub struct Access {
    /// Verbs the plan needs that a cluster denies; any one stops the run.
    pub problems: Vec<String>,
    /// The destination lets us list nodes. Not needed for the plan, only for the check that
    /// the pods can be scheduled there, which says so when it cannot run.
    pub nodes_listable: bool,
}

/// RBAC for every verb and resource the plan needs, in both clusters (SelfSubjectAccessReview),
/// and for listing the destination's nodes. Runs before anything else reads, so that a
/// restricted user gets the whole list at once.
pub async fn permissions((src, dst): (&Cluster, &Cluster), req: &Request<'_>) -> Access {
    let dst_ns = &req.destination_at.namespace;
    let mut problems = Vec::new();
    let source_denied = denied_permissions(
        src,
        &req.source_at.namespace,
        &needed_permissions(false, req),
    )
    .await;
    if !source_denied.is_empty() {
        problems.push(format!(
            "{} denies: {}",
            src.context,
            source_denied.join(", ")
        ));
    }
    let destination_denied = denied_permissions(dst, dst_ns, &needed_permissions(true, req)).await;
    if !destination_denied.is_empty() {
        problems.push(format!(
            "{} denies: {}",
            dst.context,
            destination_denied.join(", ")
        ));
    }
    let nodes_listable = denied_permissions(dst, dst_ns, &[("", "nodes", "list", false)])
        .await
        .is_empty();
    Access {
        problems,
        nodes_listable,
    }
}

fn short_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => crate::cluster::describe_kube_error(other),
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

    mod judge {
        use serde_json::json;

        use super::super::*;
        use crate::statefulset::model::*;
        use crate::statefulset::observe::set_view;

        fn source_set(ready: i32) -> StatefulSet {
            serde_json::from_value(json!({
                "metadata": {"name": "web", "namespace": "db", "uid": "u1"},
                "spec": {
                    "replicas": 2,
                    "serviceName": "web",
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "app", "image": "x",
                            "envFrom": [{"configMapRef": {"name": "conf"}}]}]}
                    },
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"storageClassName": "fast"}}]
                },
                "status": {"replicas": 2, "readyReplicas": ready, "availableReplicas": ready}
            }))
            .unwrap()
        }

        fn location(namespace: &str) -> Location {
            Location {
                namespace: namespace.into(),
                name: "web".into(),
                copy_label: "db.web".into(),
            }
        }

        /// A healthy two-replica source with bound claims on Delete PVs, an existing
        /// destination namespace with everything the pods need, and a clean dry run.
        fn healthy() -> (Facts, Observed) {
            let set = source_set(2);
            let mut source = ClusterView {
                set: Some(set_view(&set)),
                ..Default::default()
            };
            let mut volumes = BTreeMap::new();
            for k in 0..2 {
                let claim = claim_name("data", "web", k);
                let volume = format!("pv-{k}");
                fixtures::add_claim(&mut source, "db", &claim, &volume, "Delete");
                volumes.insert(
                    volume.clone(),
                    serde_json::from_value(json!({"metadata": {"name": volume}, "spec": {"csi": {"driver": "d", "volumeHandle": "h"}}}))
                        .unwrap(),
                );
            }
            let facts = Facts {
                versions: [
                    ("km-a".into(), "1".into(), "36".into()),
                    ("km-b".into(), "1".into(), "36".into()),
                ],
                source_set: Lookup::Found(set),
                source_namespace_exists: true,
                source_volumes: volumes,
                destination_volumes: BTreeMap::new(),
                claim_classes: vec![Some("fast".into()), Some("fast".into())],
                destination_classes: [("fast".to_string(), true)].into(),
                class_topologies: BTreeMap::new(),
                destination_nodes: Lookup::Found(
                    ["b-node-0", "b-node-1"]
                        .map(|name| NodeFacts {
                            name: name.into(),
                            ..Default::default()
                        })
                        .into(),
                ),
                pdbs: Vec::new(),
                destination_pdbs: Vec::new(),
                destination_namespace: Lookup::Found(()),
                destination_objects: [
                    ("Service/web".to_string(), true),
                    ("ConfigMap/conf".to_string(), true),
                ]
                .into(),
                destination_dry_run: Some(Ok(())),
            };
            let observed = Observed {
                source,
                destination: ClusterView::default(),
            };
            (facts, observed)
        }

        #[derive(Default)]
        struct Flags {
            allow_unhealthy: bool,
            create_namespace: bool,
            copy_dependencies: bool,
            resuming: bool,
            batch: i32,
            class_map: BTreeMap<String, String>,
            volumes: VolumeMode,
        }

        fn judged(facts: &Facts, observed: &Observed, flags: &Flags) -> Report {
            let (source_at, destination_at) = (location("db"), location("db"));
            let request = Request {
                source_at: &source_at,
                destination_at: &destination_at,
                class_map: &flags.class_map,
                allow_unhealthy: flags.allow_unhealthy,
                create_namespace: flags.create_namespace,
                copy_dependencies: flags.copy_dependencies,
                resuming: flags.resuming,
                batch: flags.batch.max(1),
                recorded_budgets: None,
                nodes_listable: true,
                volumes: flags.volumes,
                observe: Observe::Watch,
            };
            judge(&request, facts, observed)
        }

        fn problems(facts: &Facts, observed: &Observed, flags: &Flags) -> Vec<String> {
            judged(facts, observed, flags).problems
        }

        #[test]
        fn a_healthy_source_passes_with_warnings_about_protection() {
            let (facts, observed) = healthy();
            let report = judged(&facts, &observed, &Flags::default());
            assert!(report.problems.is_empty(), "{:?}", report.problems);
            assert!(
                report
                    .warnings
                    .iter()
                    .any(|w| w.contains("2 PVs have a reclaim policy other than Retain")),
                "{:?}",
                report.warnings
            );
        }

        #[test]
        fn a_missing_source_names_the_set_or_the_namespace() {
            let (mut facts, mut observed) = healthy();
            facts.source_set = Lookup::Missing;
            observed.source.set = None;
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter()
                    .any(|p| p == "StatefulSet web not found in namespace db of km-a"),
                "{p:?}"
            );
            facts.source_namespace_exists = false;
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter().any(|p| p == "namespace db not found in km-a"),
                "{p:?}"
            );
        }

        #[test]
        fn an_unhealthy_source_stops_a_new_migration_only() {
            let (mut facts, mut observed) = healthy();
            facts.source_set = Lookup::Found(source_set(1));
            observed.source.set = Some(set_view(&source_set(1)));
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter().any(|p| p.contains("only 1 of 2 replicas")),
                "{p:?}"
            );
            for flags in [
                Flags {
                    allow_unhealthy: true,
                    ..Default::default()
                },
                Flags {
                    resuming: true,
                    ..Default::default()
                },
            ] {
                assert!(problems(&facts, &observed, &flags).is_empty());
            }
        }

        #[test]
        fn every_claim_must_exist_and_be_bound() {
            let (facts, mut observed) = healthy();
            observed.source.claims.remove("data-web-1");
            observed.source.claims.get_mut("data-web-0").unwrap().bound = false;
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.contains(&"PVC data-web-1 of ordinal 1 does not exist in km-a".to_string()),
                "{p:?}"
            );
            assert!(
                p.contains(&"PVC data-web-0 of ordinal 0 is not Bound in km-a".to_string()),
                "{p:?}"
            );
        }

        #[test]
        fn a_foreign_pv_of_the_same_name_in_the_destination_stops_it() {
            let (mut facts, observed) = healthy();
            let foreign: PersistentVolume =
                serde_json::from_value(json!({"metadata": {"name": "pv-0"}})).unwrap();
            facts.destination_volumes.insert("pv-0".into(), foreign);
            let ours: PersistentVolume = serde_json::from_value(
                json!({"metadata": {"name": "pv-1", "labels": {super::super::super::copy::COPY_LABEL: "db.web"}}}),
            )
            .unwrap();
            facts.destination_volumes.insert("pv-1".into(), ours);
            let p = problems(&facts, &observed, &Flags::default());
            assert_eq!(
                p,
                ["a PV named pv-0 already exists in km-b and was not copied by this migration"]
            );
        }

        #[test]
        fn storage_classes_must_exist_in_the_destination_after_mapping() {
            let (mut facts, observed) = healthy();
            facts.destination_classes = [("fast".to_string(), false)].into();
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter()
                    .any(|p| p.starts_with("StorageClass fast does not exist in km-b")),
                "{p:?}"
            );
            facts.destination_classes =
                [("fast".to_string(), false), ("ssd".to_string(), true)].into();
            let mapped = Flags {
                class_map: [("fast".to_string(), "ssd".to_string())].into(),
                ..Default::default()
            };
            assert!(problems(&facts, &observed, &mapped).is_empty());
            facts.destination_classes = [("ssd".to_string(), false)].into();
            let p = problems(&facts, &observed, &mapped);
            assert!(
                p.iter().any(|p| p
                    == "--storage-class-map fast=ssd: StorageClass ssd does not exist in km-b"),
                "{p:?}"
            );
        }

        #[test]
        fn the_destination_namespace_must_exist_or_be_created() {
            let (mut facts, observed) = healthy();
            facts.destination_namespace = Lookup::Missing;
            facts.destination_dry_run = None;
            let p = problems(&facts, &observed, &Flags::default());
            assert_eq!(
                p,
                ["namespace db does not exist in km-b; create it or pass --create-namespace"]
            );
            let create = Flags {
                create_namespace: true,
                copy_dependencies: true,
                ..Default::default()
            };
            assert!(problems(&facts, &observed, &create).is_empty());
        }

        #[test]
        fn a_namespace_to_be_created_is_judged_empty() {
            let (mut facts, observed) = healthy();
            facts.destination_namespace = Lookup::Missing;
            facts.destination_dry_run = None;
            let create = Flags {
                create_namespace: true,
                ..Default::default()
            };
            let p = problems(&facts, &observed, &create);
            assert_eq!(
                p,
                [
                    "Service web (the StatefulSet's serviceName) does not exist in km-b/db (which --create-namespace creates empty); create it or pass --copy-dependencies",
                    "ConfigMap conf used by the pod template does not exist in km-b/db (which --create-namespace creates empty); create it or pass --copy-dependencies"
                ]
            );
        }

        #[test]
        fn what_the_pods_need_must_exist_unless_it_is_copied() {
            let (mut facts, observed) = healthy();
            facts.destination_objects = BTreeMap::new();
            let p = problems(&facts, &observed, &Flags::default());
            assert_eq!(p.len(), 2, "{p:?}");
            assert!(p[0].starts_with("Service web (the StatefulSet's serviceName)"));
            assert!(p[1].starts_with("ConfigMap conf used by the pod template"));
            let copy = Flags {
                copy_dependencies: true,
                ..Default::default()
            };
            assert!(problems(&facts, &observed, &copy).is_empty());
        }

        #[test]
        fn claims_and_sets_in_the_destination_must_be_ours() {
            let (facts, mut observed) = healthy();
            observed.destination.claims.insert(
                "data-web-1".into(),
                ClaimView {
                    volume_name: None,
                    bound: false,
                    copied: false,
                },
            );
            let mut foreign = set_view(&source_set(2));
            foreign.migrated_from_uid = Some("someone-else".into());
            observed.destination.set = Some(foreign);
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter()
                    .any(|p| p.starts_with("PVC data-web-1 already exists in km-b/db"))
            );
            assert!(
                p.iter()
                    .any(|p| p.starts_with("a StatefulSet named web already exists"))
            );
            observed.destination.claims.clear();
            observed.destination.set.as_mut().unwrap().migrated_from_uid = Some("u1".into());
            let resuming = Flags {
                resuming: true,
                ..Default::default()
            };
            assert!(problems(&facts, &observed, &resuming).is_empty());
            // Ours, but no journal: it was deleted; the way back is named.
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.len() == 1
                    && p[0].contains("journal is gone")
                    && p[0].contains("--rebuild-journal"),
                "{p:?}"
            );
            observed.destination.set = None;
            observed.destination.claims.insert(
                "data-web-1".into(),
                ClaimView {
                    volume_name: Some("pv-1".into()),
                    bound: true,
                    copied: true,
                },
            );
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.len() == 1
                    && p[0].contains("claims copied by an earlier migration of web (data-web-1)")
                    && p[0].contains("--rebuild-journal"),
                "{p:?}"
            );
        }

        #[test]
        fn with_fresh_volumes_a_destination_claim_is_ours_only_once_the_migration_runs() {
            let (facts, mut observed) = healthy();
            observed.destination.claims.insert(
                "data-web-1".into(),
                ClaimView {
                    volume_name: Some("b-pv-7".into()),
                    bound: true,
                    copied: false,
                },
            );
            let fresh = |resuming| Flags {
                resuming,
                volumes: VolumeMode::Fresh,
                ..Default::default()
            };
            let p = problems(&facts, &observed, &fresh(false));
            assert!(
                p.iter()
                    .any(|p| p.starts_with("PVC data-web-1 already exists")
                        && p.ends_with("instead of a fresh claim")),
                "{p:?}"
            );
            let report = judged(&facts, &observed, &fresh(true));
            assert!(
                !report.problems.iter().any(|p| p.contains("data-web-1")),
                "{:?}",
                report.problems
            );
            assert!(
                report
                    .warnings
                    .iter()
                    .any(|w| w.starts_with("--volumes=fresh")),
                "the mode is said: {:?}",
                report.warnings
            );
        }

        #[test]
        fn the_servers_dry_run_verdict_and_old_versions_are_reported() {
            let (mut facts, observed) = healthy();
            facts.destination_dry_run = Some(Err("unknown field \"spec.x\"".into()));
            facts.versions[1].2 = "26".into();
            let report = judged(&facts, &observed, &Flags::default());
            assert!(report.problems.iter().any(|p| {
                p.contains("server-side dry run, fieldValidation=Strict): unknown field")
            }));
            assert!(
                report
                    .problems
                    .iter()
                    .any(|p| p.starts_with("km-b: Kubernetes 1.26 does not support"))
            );
            facts.versions[1].2 = "28".into();
            let report = judged(&facts, &observed, &Flags::default());
            assert!(
                report
                    .warnings
                    .iter()
                    .any(|w| w.starts_with("km-b: Kubernetes 1.28"))
            );
        }

        #[test]
        fn a_batch_larger_than_a_selecting_budget_allows_is_refused() {
            let (mut facts, observed) = healthy();
            let pdb = |name: &str, app: &str, spec: serde_json::Value| {
                let mut spec = spec;
                spec["selector"] = json!({"matchLabels": {"app": app}});
                serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
            };
            facts
                .pdbs
                .push(pdb("web-pdb", "web", json!({"maxUnavailable": 1})));
            facts
                .pdbs
                .push(pdb("other", "db", json!({"minAvailable": "100%"})));
            assert!(problems(&facts, &observed, &Flags::default()).is_empty());
            let flags = Flags {
                batch: 2,
                ..Default::default()
            };
            let p = problems(&facts, &observed, &flags);
            assert_eq!(p.len(), 1, "only the budget that selects the set: {p:?}");
            assert!(
                p[0].starts_with("PodDisruptionBudget web-pdb (maxUnavailable 1) allows 1 disruption of the 2 pods, but --batch 2"),
                "{p:?}"
            );
            facts
                .pdbs
                .push(pdb("strict", "web", json!({"minAvailable": "100%"})));
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.iter().any(|p| p.starts_with(
                    "PodDisruptionBudget strict (minAvailable 100%) allows no disruption"
                )),
                "{p:?}"
            );
            let request = Request {
                source_at: &location("db"),
                destination_at: &location("db"),
                class_map: &BTreeMap::new(),
                allow_unhealthy: false,
                create_namespace: false,
                copy_dependencies: false,
                resuming: false,
                batch: 1,
                recorded_budgets: None,
                nodes_listable: true,
                volumes: VolumeMode::Shared,
                observe: Observe::Watch,
            };
            let names: Vec<String> = preparation(&request, &facts)
                .budgets
                .into_iter()
                .map(|b| b.name)
                .collect();
            assert_eq!(names, ["strict", "web-pdb"], "what the journal will record");
            // A budget of the same name in the destination must be this migration's copy.
            facts
                .pdbs
                .retain(|p| p.metadata.name.as_deref() == Some("web-pdb"));
            facts
                .destination_pdbs
                .push(pdb("web-pdb", "web", json!({"minAvailable": 1})));
            let p = problems(&facts, &observed, &Flags::default());
            assert!(
                p.len() == 1
                    && p[0].starts_with(
                        "a PodDisruptionBudget named web-pdb already exists in km-b/db"
                    ),
                "{p:?}"
            );
            facts.destination_pdbs[0].metadata.labels = Some(
                [(
                    super::super::super::copy::COPY_LABEL.to_string(),
                    "db.web".to_string(),
                )]
                .into(),
            );
            assert!(problems(&facts, &observed, &Flags::default()).is_empty());
        }

        /// The source's template with `spec` merged into its pod spec.
        fn with_pod_spec(facts: &mut Facts, pod_spec: serde_json::Value) {
            let Lookup::Found(set) = &mut facts.source_set else {
                unreachable!()
            };
            let mut spec =
                serde_json::to_value(set.spec.as_ref().unwrap().template.spec.clone()).unwrap();
            for (k, v) in pod_spec.as_object().unwrap() {
                spec[k] = v.clone();
            }
            set.spec.as_mut().unwrap().template.spec = Some(serde_json::from_value(spec).unwrap());
        }

        #[test]
        fn pods_no_destination_node_takes_are_refused_with_the_reason() {
            let (mut facts, observed) = healthy();
            with_pod_spec(
                &mut facts,
                json!({"nodeSelector": {"pool": "a-only"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
            );
            let p = problems(&facts, &observed, &Flags::default());
            assert_eq!(
                p,
                [
                    "pods of web (ordinals 0-1) cannot be scheduled in km-b: none of its 2 nodes fits:\n    \
                  b-node-0, b-node-1: nodeSelector pool=a-only, node has no label pool"
                ]
            );
            facts.destination_nodes = Lookup::Found(vec![NodeFacts {
                name: "b-node-7".into(),
                labels: [("pool".to_string(), "a-only".to_string())].into(),
                taints: vec![
                    serde_json::from_value(
                        json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"}),
                    )
                    .unwrap(),
                ],
                unschedulable: false,
            }]);
            assert!(problems(&facts, &observed, &Flags::default()).is_empty());
        }

        #[test]
        fn each_ordinal_needs_a_node_in_its_volumes_topology_after_the_class_map() {
            let (mut facts, observed) = healthy();
            let zoned = |zone: &str| -> PersistentVolume {
                serde_json::from_value(json!({"spec": {"storageClassName": "fast",
                    "csi": {"driver": "d", "volumeHandle": "h"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "zone", "operator": "In", "values": [zone]}]}]}}}}))
                .unwrap()
            };
            facts.source_volumes.insert("pv-0".into(), zoned("a"));
            facts.source_volumes.insert("pv-1".into(), zoned("b"));
            let in_zone = |name: &str, zone: &str| NodeFacts {
                name: name.into(),
                labels: [("zone".to_string(), zone.to_string())].into(),
                ..Default::default()
            };
            facts.destination_nodes =
                Lookup::Found(vec![in_zone("b-node-0", "a"), in_zone("b-node-1", "c")]);
            let report = judged(&facts, &observed, &Flags::default());
            assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
            assert!(
                report.problems[0]
                    .starts_with("pods of web (ordinal 1) cannot be scheduled in km-b")
                    && report.problems[0].contains(
                        "b-node-0: node affinity of PV pv-1 zone in (b), node has zone=a"
                    ),
                "{:?}",
                report.problems
            );
            assert!(
                !report
                    .warnings
                    .iter()
                    .any(|w| w.contains("has node affinity")),
                "checked, so no vague warning: {:?}",
                report.warnings
            );
            // The class the copies get (after --storage-class-map) may allow fewer zones.
            facts.destination_nodes =
                Lookup::Found(vec![in_zone("b-node-0", "a"), in_zone("b-node-1", "b")]);
            facts.destination_classes.insert("ssd".into(), true);
            facts.class_topologies.insert(
                "ssd".into(),
                serde_json::from_value(
                    json!([{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]),
                )
                .unwrap(),
            );
            assert!(problems(&facts, &observed, &Flags::default()).is_empty());
            let mapped = Flags {
                class_map: [("fast".to_string(), "ssd".to_string())].into(),
                ..Default::default()
            };
            let p = problems(&facts, &observed, &mapped);
            assert_eq!(p.len(), 1, "{p:?}");
            assert!(
                p[0].contains("b-node-1: allowedTopologies of StorageClass ssd (PV pv-1) zone in (a), node has zone=b"),
                "{p:?}"
            );
        }

        #[test]
        fn unreadable_nodes_are_a_warning_that_says_the_check_did_not_run() {
            let (mut facts, observed) = healthy();
            with_pod_spec(&mut facts, json!({"nodeSelector": {"pool": "a-only"}}));
            facts.destination_nodes = Lookup::Failed("km-b denies list nodes".into());
            let report = judged(&facts, &observed, &Flags::default());
            assert!(report.problems.is_empty(), "{:?}", report.problems);
            assert!(
                report.warnings.contains(&"could not check that the pods of web can be scheduled in km-b (km-b denies list nodes); check their nodeSelector, node affinity, tolerations and volume node affinity against its nodes by hand".to_string()),
                "{:?}",
                report.warnings
            );
        }
    }
}
