//! What the pods need in the destination besides their volumes: the namespace
//! (`--create-namespace`), and copies of the headless Service and the ConfigMaps, Secrets and
//! ServiceAccount the pod template uses (`--copy-dependencies`). Everything made here carries
//! this migration's copy label and is recorded in the journal, so that a rollback removes
//! exactly what the migration created and nothing else. Each write goes through the executor,
//! so a dry run checks these too.
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use kube::Api;
use kube::api::{ListParams, ObjectMeta};
use serde::Serialize;

use super::journaling::Journaling;
use super::waits::Waits;
use super::writer::{Writer, Written};
use crate::cluster::Namespaced;
use crate::error::{Error, Result};
use crate::statefulset::copy::COPY_LABEL;
use crate::statefulset::journal::{self, Stored};
use crate::statefulset::model::{ObjectKind, ObjectRef, Side};

const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kubectl-migrate");

/// The labels that mark an object as made by this migration.
pub(super) fn our_labels(w: &Writer) -> std::collections::BTreeMap<String, String> {
    [
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (
            COPY_LABEL.to_string(),
            w.sides.destination_at.copy_label.clone(),
        ),
    ]
    .into()
}

pub(super) fn is_ours(w: &Writer, meta: &ObjectMeta) -> bool {
    meta.labels.as_ref().and_then(|l| l.get(COPY_LABEL)) == Some(&w.sides.destination_at.copy_label)
}

/// Creates the destination namespace, labelled as this migration's. Idempotent.
pub async fn create_namespace(w: &Writer) -> Result<()> {
    let ns = &w.sides.destination_at.namespace;
    let namespaces: Api<Namespace> = Api::all(w.sides.destination.client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.clone()),
            labels: Some(our_labels(w)),
            ..Default::default()
        },
        ..Default::default()
    };
    w.write(
        Side::Destination,
        &format!("create namespace {ns}"),
        namespaces.create(&w.post_params(), &namespace),
        Some(409),
    )
    .await?;
    Ok(())
}

/// Whether the destination namespace was created by this migration (it carries our label).
pub async fn namespace_is_ours(w: &Writer) -> Result<bool> {
    let namespaces: Api<Namespace> = Api::all(w.sides.destination.client.clone());
    let ns = w
        .sides
        .destination
        .call(
            "read the namespace",
            namespaces.get_opt(&w.sides.destination_at.namespace),
        )
        .await?;
    Ok(ns.is_some_and(|ns| is_ours(w, &ns.metadata)))
}

/// Copies one object the pods use from the source namespace, if the destination lacks it.
/// It is recorded in the journal first: a crash between the two leaves a record of an object
/// that may not exist, which a rollback skips, never an object nobody knows about.
pub async fn copy(
    w: &Writer,
    journal: &Journaling,
    stored: Option<&Stored>,
    kind: ObjectKind,
    name: &str,
) -> Result<()> {
    let object = ObjectRef {
        kind,
        name: name.to_string(),
    };
    if stored.is_none_or(|s| !s.journal.created.contains(&object)) {
        journal
            .update(
                w,
                stored,
                &format!("record {object} in the journal as created by the migration"),
                |j| j.created.push(object.clone()),
            )
            .await?;
    }
    match kind {
        ObjectKind::Service => {
            copy_object::<Service>(w, journal, kind, name, |s| {
                if let Some(spec) = s.spec.as_mut() {
                    // Cluster IPs belong to the source cluster's service network.
                    if spec.cluster_ip.as_deref() != Some("None") {
                        spec.cluster_ip = None;
                    }
                    spec.cluster_ips = None;
                    spec.health_check_node_port = None;
                    for port in spec.ports.iter_mut().flatten() {
                        port.node_port = None;
                    }
                }
                s.status = None;
            })
            .await
        }
        ObjectKind::ConfigMap => copy_object::<ConfigMap>(w, journal, kind, name, |_| {}).await,
        ObjectKind::Secret => copy_object::<Secret>(w, journal, kind, name, |_| {}).await,
        ObjectKind::ServiceAccount => {
            copy_object::<ServiceAccount>(w, journal, kind, name, |s| s.secrets = None).await
        }
        ObjectKind::Namespace => Err(Error::Failed {
            message: "a namespace is created, not copied".into(),
        }),
    }
}

async fn copy_object<K>(
    w: &Writer,
    journal: &Journaling,
    kind: ObjectKind,
    name: &str,
    adjust: impl FnOnce(&mut K),
) -> Result<()>
where
    K: Namespaced + Serialize,
{
    let (src, dst) = (&w.sides.source, &w.sides.destination);
    let from: Api<K> = w.sides.namespaced(Side::Source);
    let to: Api<K> = w.sides.namespaced(Side::Destination);
    if dst
        .call(&format!("read {kind} {name}"), to.get_opt(name))
        .await?
        .is_some()
    {
        return Ok(());
    }
    let Some(mut object) = src
        .call(&format!("read {kind} {name}"), from.get_opt(name))
        .await?
    else {
        return Err(Error::Failed {
            message: format!(
                "{kind} {name} is referenced by the pods but does not exist in {}",
                src.context
            ),
        });
    };
    let meta = object.meta_mut();
    let mut labels = meta.labels.clone().unwrap_or_default();
    labels.extend(our_labels(w));
    *meta = ObjectMeta {
        name: meta.name.clone(),
        namespace: Some(w.sides.destination_at.namespace.clone()),
        labels: Some(labels),
        annotations: meta.annotations.clone().map(|mut a| {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
            a
        }),
        ..Default::default()
    };
    adjust(&mut object);
    let written = w
        .write(
            Side::Destination,
            &format!("copy {kind} {name}"),
            to.create(&w.post_params(), &object),
            Some(409),
        )
        .await?;
    if written == Written::AlreadyDone {
        // Someone made it between our read and our create: it is theirs, not ours.
        journal
            .update_fresh(w, &format!("strike {kind} {name} from the journal"), |j| {
                j.created
                    .retain(|o| (o.kind, o.name.as_str()) != (kind, name))
            })
            .await?;
    }
    Ok(())
}

/// Rollback: deletes one object the journal records as created by this migration (only if it
/// still carries our label, and only the object read: a uid precondition), then strikes it
/// from the journal. Returns why it stays, if it does.
pub async fn delete_created(
    w: &Writer,
    waits: &Waits,
    journal: &Journaling,
    kind: ObjectKind,
    name: &str,
) -> Result<Option<String>> {
    let kept = match kind {
        ObjectKind::Service => delete_if_ours::<Service>(w, waits, kind, name).await?,
        ObjectKind::ConfigMap => delete_if_ours::<ConfigMap>(w, waits, kind, name).await?,
        ObjectKind::Secret => delete_if_ours::<Secret>(w, waits, kind, name).await?,
        ObjectKind::ServiceAccount => {
            delete_if_ours::<ServiceAccount>(w, waits, kind, name).await?
        }
        ObjectKind::Namespace => None,
    };
    journal
        .update_fresh(w, &format!("strike {kind} {name} from the journal"), |j| {
            j.created
                .retain(|o| (o.kind, o.name.as_str()) != (kind, name))
        })
        .await?;
    Ok(kept)
}

async fn delete_if_ours<K>(
    w: &Writer,
    waits: &Waits,
    kind: ObjectKind,
    name: &str,
) -> Result<Option<String>>
where
    K: Namespaced,
{
    let api: Api<K> = w.sides.namespaced(Side::Destination);
    let existing = w
        .sides
        .destination
        .call(&format!("read {kind} {name}"), api.get_opt(name))
        .await?;
    match existing {
        None => Ok(None),
        Some(object) if is_ours(w, object.meta()) => {
            w.delete_until_gone(waits, Side::Destination, &kind.to_string(), &api, name)
                .await?;
            Ok(None)
        }
        Some(_) => Ok(Some(format!(
            "{kind} {name} stays in {}: it lacks this migration's label {COPY_LABEL}={}, so it was not created by it",
            w.sides.destination.context, w.sides.destination_at.copy_label
        ))),
    }
}

/// Rollback's last step in a namespace this migration created: deletes the namespace (the
/// journal and the lease with it) if it holds nothing else, and waits until it is gone.
/// Otherwise strikes it from the journal, so that the next step removes only the journal, and
/// says why it stays.
/// Without a journal (`journal` is `None`: a run stopped before it wrote one), a namespace that
/// holds what this migration did not create is only named.
pub async fn delete_namespace(
    w: &Writer,
    waits: &Waits,
    journal: Option<&Journaling>,
) -> Result<Option<String>> {
    let ns = &w.sides.destination_at.namespace;
    let namespaces: Api<Namespace> = Api::all(w.sides.destination.client.clone());
    let Some(namespace) = w
        .sides
        .destination
        .call("read the namespace", namespaces.get_opt(ns))
        .await?
    else {
        return Ok(None);
    };
    let others = if is_ours(w, &namespace.metadata) {
        foreign_objects(w).await?
    } else {
        vec![format!("its label {COPY_LABEL} is not this migration's")]
    };
    if others.is_empty() {
        w.lease_goes_with_namespace();
        w.delete_until_gone(waits, Side::Destination, "namespace", &namespaces, ns)
            .await?;
        return Ok(None);
    }
    if let Some(journal) = journal {
        journal
            .update_fresh(w, &format!("strike namespace {ns} from the journal"), |j| {
                j.created.retain(|o| o.kind != ObjectKind::Namespace)
            })
            .await?;
    }
    Ok(Some(format!(
        "namespace {ns} stays in {}: it holds {}, which this migration did not create",
        w.sides.destination.context,
        others.join(", ")
    )))
}

/// What the destination namespace holds besides this migration's journal and lease and what
/// Kubernetes puts in every namespace (the root CA ConfigMap, the default ServiceAccount).
async fn foreign_objects(w: &Writer) -> Result<Vec<String>> {
    async fn names<K: Namespaced>(w: &Writer, kind: &str) -> Result<Vec<String>> {
        let listed = destination_names::<K>(w, kind, &ListParams::default().limit(20)).await?;
        Ok(listed.into_iter().map(|n| format!("{kind} {n}")).collect())
    }
    let journal = journal::object_name(&w.sides.names.set);
    let builtin = [
        "ConfigMap kube-root-ca.crt".to_string(),
        format!("ConfigMap {journal}"),
        "ServiceAccount default".to_string(),
    ];
    let (pods, claims, sets, services, config_maps, secrets, accounts) = tokio::try_join!(
        names::<Pod>(w, "Pod"),
        names::<PersistentVolumeClaim>(w, "PersistentVolumeClaim"),
        names::<StatefulSet>(w, "StatefulSet"),
        names::<Service>(w, "Service"),
        names::<ConfigMap>(w, "ConfigMap"),
        names::<Secret>(w, "Secret"),
        names::<ServiceAccount>(w, "ServiceAccount"),
    )?;
    Ok(
        [pods, claims, sets, services, config_maps, secrets, accounts]
            .concat()
            .into_iter()
            .filter(|o| !builtin.contains(o))
            .collect(),
    )
}

/// What in the destination namespace carries this migration's label, as a journal lists it:
/// the namespace, then the copied objects (claims are copies of the set's, not listed).
pub async fn created_objects(w: &Writer) -> Result<Vec<ObjectRef>> {
    async fn labelled<K: Namespaced>(w: &Writer, kind: ObjectKind) -> Result<Vec<ObjectRef>> {
        let selector = format!("{COPY_LABEL}={}", w.sides.destination_at.copy_label);
        let params = ListParams::default().labels(&selector);
        let listed = destination_names::<K>(w, &kind.to_string(), &params).await?;
        Ok(listed
            .into_iter()
            .map(|name| ObjectRef { kind, name })
            .collect())
    }
    let mut created = Vec::new();
    if namespace_is_ours(w).await? {
        created.push(ObjectRef {
            kind: ObjectKind::Namespace,
            name: w.sides.destination_at.namespace.clone(),
        });
    }
    created.extend(labelled::<Service>(w, ObjectKind::Service).await?);
    created.extend(labelled::<ConfigMap>(w, ObjectKind::ConfigMap).await?);
    created.extend(labelled::<Secret>(w, ObjectKind::Secret).await?);
    created.extend(labelled::<ServiceAccount>(w, ObjectKind::ServiceAccount).await?);
    Ok(created)
}

/// The names of the objects of kind `K` that `params` lists in the destination namespace.
async fn destination_names<K: Namespaced>(
    w: &Writer,
    kind: &str,
    params: &ListParams,
) -> Result<Vec<String>> {
    let api: Api<K> = w.sides.namespaced(Side::Destination);
    let list = w
        .sides
        .destination
        .call(&format!("list {kind}s"), api.list(params))
        .await?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect())
}
