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

use super::copy::COPY_LABEL;
use super::executor::{Executor, Written};
use super::journal::{self, Stored};
use super::model::{ObjectKind, ObjectRef, Side};
use crate::cluster::Namespaced;
use crate::error::{Error, Result};

const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kubectl-migrate");

/// The labels that mark an object as made by this migration.
pub(super) fn our_labels(ex: &Executor) -> std::collections::BTreeMap<String, String> {
    [
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (COPY_LABEL.to_string(), ex.destination_at.copy_label.clone()),
    ]
    .into()
}

pub(super) fn is_ours(ex: &Executor, meta: &ObjectMeta) -> bool {
    meta.labels.as_ref().and_then(|l| l.get(COPY_LABEL)) == Some(&ex.destination_at.copy_label)
}

/// Creates the destination namespace, labelled as this migration's. Idempotent.
pub async fn create_namespace(ex: &Executor) -> Result<()> {
    let ns = &ex.destination_at.namespace;
    let namespaces: Api<Namespace> = Api::all(ex.destination.client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.clone()),
            labels: Some(our_labels(ex)),
            ..Default::default()
        },
        ..Default::default()
    };
    ex.write(
        Side::Destination,
        &format!("create namespace {ns}"),
        namespaces.create(&ex.post_params(), &namespace),
        Some(409),
    )
    .await?;
    Ok(())
}

/// Whether the destination namespace was created by this migration (it carries our label).
pub async fn namespace_is_ours(ex: &Executor) -> Result<bool> {
    let namespaces: Api<Namespace> = Api::all(ex.destination.client.clone());
    let ns = ex
        .destination
        .call(
            "read the namespace",
            namespaces.get_opt(&ex.destination_at.namespace),
        )
        .await?;
    Ok(ns.is_some_and(|ns| is_ours(ex, &ns.metadata)))
}

/// Copies one object the pods use from the source namespace, if the destination lacks it.
/// It is recorded in the journal first: a crash between the two leaves a record of an object
/// that may not exist, which a rollback skips, never an object nobody knows about.
pub async fn copy(
    ex: &Executor,
    stored: Option<&Stored>,
    kind: ObjectKind,
    name: &str,
) -> Result<()> {
    let object = ObjectRef {
        kind,
        name: name.to_string(),
    };
    if stored.is_none_or(|s| !s.journal.created.contains(&object)) {
        ex.update_journal(
            stored,
            &format!("record {object} in the journal as created by the migration"),
            |j| j.created.push(object.clone()),
        )
        .await?;
    }
    match kind {
        ObjectKind::Service => {
            copy_object::<Service>(ex, kind, name, |s| {
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
        ObjectKind::ConfigMap => copy_object::<ConfigMap>(ex, kind, name, |_| {}).await,
        ObjectKind::Secret => copy_object::<Secret>(ex, kind, name, |_| {}).await,
        ObjectKind::ServiceAccount => {
            copy_object::<ServiceAccount>(ex, kind, name, |s| s.secrets = None).await
        }
        ObjectKind::Namespace => Err(Error::Failed {
            message: "a namespace is created, not copied".into(),
        }),
    }
}

async fn copy_object<K>(
    ex: &Executor,
    kind: ObjectKind,
    name: &str,
    adjust: impl FnOnce(&mut K),
) -> Result<()>
where
    K: Namespaced + Serialize,
{
    let (src, dst) = (&ex.source, &ex.destination);
    let from: Api<K> = ex.namespaced(Side::Source);
    let to: Api<K> = ex.namespaced(Side::Destination);
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
    labels.extend(our_labels(ex));
    *meta = ObjectMeta {
        name: meta.name.clone(),
        namespace: Some(ex.destination_at.namespace.clone()),
        labels: Some(labels),
        annotations: meta.annotations.clone().map(|mut a| {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
            a
        }),
        ..Default::default()
    };
    adjust(&mut object);
    let written = ex
        .write(
            Side::Destination,
            &format!("copy {kind} {name}"),
            to.create(&ex.post_params(), &object),
            Some(409),
        )
        .await?;
    if written == Written::AlreadyDone {
        // Someone made it between our read and our create: it is theirs, not ours.
        ex.update_journal_fresh(&format!("strike {kind} {name} from the journal"), |j| {
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
pub async fn delete_created(ex: &Executor, kind: ObjectKind, name: &str) -> Result<Option<String>> {
    let kept = match kind {
        ObjectKind::Service => delete_if_ours::<Service>(ex, kind, name).await?,
        ObjectKind::ConfigMap => delete_if_ours::<ConfigMap>(ex, kind, name).await?,
        ObjectKind::Secret => delete_if_ours::<Secret>(ex, kind, name).await?,
        ObjectKind::ServiceAccount => delete_if_ours::<ServiceAccount>(ex, kind, name).await?,
        ObjectKind::Namespace => None,
    };
    ex.update_journal_fresh(&format!("strike {kind} {name} from the journal"), |j| {
        j.created
            .retain(|o| (o.kind, o.name.as_str()) != (kind, name))
    })
    .await?;
    Ok(kept)
}

async fn delete_if_ours<K>(ex: &Executor, kind: ObjectKind, name: &str) -> Result<Option<String>>
where
    K: Namespaced,
{
    let api: Api<K> = ex.namespaced(Side::Destination);
    let existing = ex
        .destination
        .call(&format!("read {kind} {name}"), api.get_opt(name))
        .await?;
    match existing {
        None => Ok(None),
        Some(object) if is_ours(ex, object.meta()) => {
            ex.delete_until_gone(Side::Destination, &kind.to_string(), &api, name)
                .await?;
            Ok(None)
        }
        Some(_) => Ok(Some(format!(
            "{kind} {name} stays in {}: it lacks this migration's label {COPY_LABEL}={}, so it was not created by it",
            ex.destination.context, ex.destination_at.copy_label
        ))),
    }
}

/// Rollback's last step in a namespace this migration created: deletes the namespace (the
/// journal and the lease with it) if it holds nothing else, and waits until it is gone.
/// Otherwise strikes it from the journal, so that the next step removes only the journal, and
/// says why it stays.
pub async fn delete_namespace(ex: &Executor) -> Result<Option<String>> {
    let ns = &ex.destination_at.namespace;
    let namespaces: Api<Namespace> = Api::all(ex.destination.client.clone());
    let Some(namespace) = ex
        .destination
        .call("read the namespace", namespaces.get_opt(ns))
        .await?
    else {
        return Ok(None);
    };
    let others = if is_ours(ex, &namespace.metadata) {
        foreign_objects(ex).await?
    } else {
        vec![format!("its label {COPY_LABEL} is not this migration's")]
    };
    if others.is_empty() {
        ex.lease_goes_with_namespace();
        ex.delete_until_gone(Side::Destination, "namespace", &namespaces, ns)
            .await?;
        return Ok(None);
    }
    ex.update_journal_fresh(&format!("strike namespace {ns} from the journal"), |j| {
        j.created.retain(|o| o.kind != ObjectKind::Namespace)
    })
    .await?;
    Ok(Some(format!(
        "namespace {ns} stays in {}: it holds {}, which this migration did not create",
        ex.destination.context,
        others.join(", ")
    )))
}

/// What the destination namespace holds besides this migration's journal and lease and what
/// Kubernetes puts in every namespace (the root CA ConfigMap, the default ServiceAccount).
async fn foreign_objects(ex: &Executor) -> Result<Vec<String>> {
    async fn names<K: Namespaced>(ex: &Executor, kind: &str) -> Result<Vec<String>> {
        let listed = destination_names::<K>(ex, kind, &ListParams::default().limit(20)).await?;
        Ok(listed.into_iter().map(|n| format!("{kind} {n}")).collect())
    }
    let journal = journal::object_name(&ex.names.set);
    let builtin = [
        "ConfigMap kube-root-ca.crt".to_string(),
        format!("ConfigMap {journal}"),
        "ServiceAccount default".to_string(),
    ];
    let (pods, claims, sets, services, config_maps, secrets, accounts) = tokio::try_join!(
        names::<Pod>(ex, "Pod"),
        names::<PersistentVolumeClaim>(ex, "PersistentVolumeClaim"),
        names::<StatefulSet>(ex, "StatefulSet"),
        names::<Service>(ex, "Service"),
        names::<ConfigMap>(ex, "ConfigMap"),
        names::<Secret>(ex, "Secret"),
        names::<ServiceAccount>(ex, "ServiceAccount"),
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
pub async fn created_objects(ex: &Executor) -> Result<Vec<ObjectRef>> {
    async fn labelled<K: Namespaced>(ex: &Executor, kind: ObjectKind) -> Result<Vec<ObjectRef>> {
        let selector = format!("{COPY_LABEL}={}", ex.destination_at.copy_label);
        let params = ListParams::default().labels(&selector);
        let listed = destination_names::<K>(ex, &kind.to_string(), &params).await?;
        Ok(listed
            .into_iter()
            .map(|name| ObjectRef { kind, name })
            .collect())
    }
    let mut created = Vec::new();
    if namespace_is_ours(ex).await? {
        created.push(ObjectRef {
            kind: ObjectKind::Namespace,
            name: ex.destination_at.namespace.clone(),
        });
    }
    created.extend(labelled::<Service>(ex, ObjectKind::Service).await?);
    created.extend(labelled::<ConfigMap>(ex, ObjectKind::ConfigMap).await?);
    created.extend(labelled::<Secret>(ex, ObjectKind::Secret).await?);
    created.extend(labelled::<ServiceAccount>(ex, ObjectKind::ServiceAccount).await?);
    Ok(created)
}

/// The names of the objects of kind `K` that `params` lists in the destination namespace.
async fn destination_names<K: Namespaced>(
    ex: &Executor,
    kind: &str,
    params: &ListParams,
) -> Result<Vec<String>> {
    let api: Api<K> = ex.namespaced(Side::Destination);
    let list = ex
        .destination
        .call(&format!("list {kind}s"), api.list(params))
        .await?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect())
}
