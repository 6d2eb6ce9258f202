//! Pure rewrites of API objects for the other cluster: the destination StatefulSet, and PVC/PV
//! copies that pre-bind to each other and point at the same storage.
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetOrdinals, StatefulSetPersistentVolumeClaimRetentionPolicy,
};
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Label on every object this tool creates in the other cluster: `<namespace>.<set>` of the source.
pub const COPY_LABEL: &str = "migrate.kubectl.io/copy-of";
/// Annotation on the destination StatefulSet: the uid of the source it belongs to.
pub const SOURCE_UID_ANNOTATION: &str = "migrate.kubectl.io/source-uid";
/// Annotations protection leaves on the source's objects, with the value it replaced, so that
/// a deleted journal can be rebuilt (`--rebuild-journal`); removed when the value is restored.
pub const ORIGINAL_POLICY_ANNOTATION: &str = "migrate.kubectl.io/original-reclaim-policy";
pub const ORIGINAL_RETENTION_ANNOTATION: &str = "migrate.kubectl.io/original-retention";
pub const ORIGINAL_BUDGET_ANNOTATION: &str = "migrate.kubectl.io/original-budget";
/// Annotation on copies: where the object came from (`context/namespace/name`).
pub const ORIGIN_ANNOTATION: &str = "migrate.kubectl.io/origin";

/// Annotations that belong to the original object's life in its own cluster.
const CLUSTER_LOCAL_ANNOTATIONS: &[&str] = &[
    // The source's own record of what protection replaced.
    ORIGINAL_POLICY_ANNOTATION,
    ORIGINAL_RETENTION_ANNOTATION,
    ORIGINAL_BUDGET_ANNOTATION,
    "kubectl.kubernetes.io/last-applied-configuration",
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "pv.kubernetes.io/provisioned-by",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
    "deployment.kubernetes.io/revision",
];

pub fn copy_label_value(namespace: &str, set: &str) -> String {
    // Label values allow at most 63 characters; keep the identifying tail when longer.
    let value = format!("{namespace}.{set}");
    if value.len() <= 63 {
        value
    } else {
        value[value.len() - 63..]
            .trim_start_matches(['.', '-', '_'])
            .to_string()
    }
}

/// Metadata for a copy: name, labels and annotations kept, cluster-local fields dropped.
fn copied_meta(
    original: &ObjectMeta,
    namespace: Option<&str>,
    copy_label: &str,
    origin: &str,
) -> ObjectMeta {
    let mut annotations: BTreeMap<String, String> =
        original.annotations.clone().unwrap_or_default();
    annotations.retain(|k, _| !CLUSTER_LOCAL_ANNOTATIONS.contains(&k.as_str()));
    annotations.insert(ORIGIN_ANNOTATION.into(), origin.into());
    let mut labels = original.labels.clone().unwrap_or_default();
    labels.insert(COPY_LABEL.into(), copy_label.into());
    ObjectMeta {
        name: original.name.clone(),
        namespace: namespace.map(str::to_string),
        labels: Some(labels),
        annotations: Some(annotations),
        ..Default::default()
    }
}

/// Maps a storage class name through --storage-class-map.
pub fn map_class(class: Option<&String>, map: &BTreeMap<String, String>) -> Option<String> {
    class.map(|c| map.get(c).cloned().unwrap_or_else(|| c.clone()))
}

/// The PV for the destination: same storage, reclaim policy Retain, claimRef reserved for the
/// copied claim by namespace and name (no uid, so the binder completes the binding).
pub fn copy_volume(
    pv: &PersistentVolume,
    claim_namespace: &str,
    claim_name: &str,
    class_map: &BTreeMap<String, String>,
    copy_label: &str,
    origin: &str,
) -> PersistentVolume {
    let mut spec = pv.spec.clone().unwrap_or_default();
    spec.persistent_volume_reclaim_policy = Some("Retain".into());
    spec.storage_class_name = map_class(spec.storage_class_name.as_ref(), class_map);
    spec.claim_ref = Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        namespace: Some(claim_namespace.into()),
        name: Some(claim_name.into()),
        ..Default::default()
    });
    PersistentVolume {
        metadata: copied_meta(&pv.metadata, None, copy_label, origin),
        spec: Some(spec),
        status: None,
    }
}

/// The PVC for the destination: pre-bound to the copied PV through spec.volumeName.
pub fn copy_claim(
    pvc: &PersistentVolumeClaim,
    namespace: &str,
    class_map: &BTreeMap<String, String>,
    copy_label: &str,
    origin: &str,
) -> PersistentVolumeClaim {
    let mut spec = pvc.spec.clone().unwrap_or_default();
    spec.storage_class_name = map_class(spec.storage_class_name.as_ref(), class_map);
    PersistentVolumeClaim {
        metadata: copied_meta(&pvc.metadata, Some(namespace), copy_label, origin),
        spec: Some(spec),
        status: None,
    }
}

/// The destination StatefulSet: the source's spec with replicas 0 and start = s0 + N, so that it
/// owns no ordinal yet, and claims retained whatever happens.
pub fn destination_set(
    source: &StatefulSet,
    namespace: &str,
    end: i32,
    class_map: &BTreeMap<String, String>,
    copy_label: &str,
    origin: &str,
) -> StatefulSet {
    let mut meta = copied_meta(&source.metadata, Some(namespace), copy_label, origin);
    let source_uid = source.metadata.uid.clone().unwrap_or_default();
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(SOURCE_UID_ANNOTATION.into(), source_uid);
    let mut spec = source.spec.clone().unwrap_or_default();
    spec.replicas = Some(0);
    spec.ordinals = Some(StatefulSetOrdinals { start: Some(end) });
    spec.persistent_volume_claim_retention_policy =
        Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
            when_scaled: Some("Retain".into()),
            when_deleted: Some("Retain".into()),
        });
    for template in spec.volume_claim_templates.iter_mut().flatten() {
        template.status = None;
        if let Some(s) = template.spec.as_mut() {
            s.storage_class_name = map_class(s.storage_class_name.as_ref(), class_map);
        }
    }
    StatefulSet {
        metadata: meta,
        spec: Some(spec),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn source_pv() -> PersistentVolume {
        json(serde_json::json!({
            "metadata": {"name": "pv-1", "uid": "u1", "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z",
                          "annotations": {"pv.kubernetes.io/bound-by-controller": "yes", "team": "db"},
                          "finalizers": ["kubernetes.io/pv-protection"]},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                     "persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": "/data/pv-1"},
                     "claimRef": {"namespace": "db", "name": "data-web-0", "uid": "claim-uid", "resourceVersion": "7"}},
            "status": {"phase": "Bound"}
        }))
    }

    #[test]
    fn the_volume_copy_points_at_the_same_storage_and_is_reserved_for_the_new_claim() {
        let map = BTreeMap::from([("fast".to_string(), "ssd".to_string())]);
        let copy = copy_volume(
            &source_pv(),
            "db2",
            "data-web-0",
            &map,
            "db.web",
            "a/db/pv-1",
        );
        let value = serde_json::to_value(&copy).unwrap();
        assert_eq!(value["spec"]["hostPath"]["path"], "/data/pv-1");
        assert_eq!(value["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(value["spec"]["storageClassName"], "ssd");
        assert_eq!(
            value["spec"]["claimRef"],
            serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "db2", "name": "data-web-0"})
        );
        assert!(
            value["metadata"].get("uid").is_none()
                && value["metadata"].get("resourceVersion").is_none()
        );
        assert!(value["metadata"].get("finalizers").is_none() && value.get("status").is_none());
        assert_eq!(value["metadata"]["annotations"]["team"], "db");
        assert!(
            value["metadata"]["annotations"]
                .get("pv.kubernetes.io/bound-by-controller")
                .is_none()
        );
        assert_eq!(value["metadata"]["labels"][COPY_LABEL], "db.web");
    }

    #[test]
    fn the_claim_copy_keeps_its_volume_name_and_drops_cluster_state() {
        let pvc: PersistentVolumeClaim = json(serde_json::json!({
            "metadata": {"name": "data-web-0", "namespace": "db", "uid": "u", "resourceVersion": "9",
                          "annotations": {"pv.kubernetes.io/bind-completed": "yes"}, "labels": {"app": "web"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "volumeName": "pv-1", "storageClassName": "fast"},
            "status": {"phase": "Bound"}
        }));
        let copy = copy_claim(&pvc, "db2", &BTreeMap::new(), "db.web", "a/db/data-web-0");
        let value = serde_json::to_value(&copy).unwrap();
        assert_eq!(value["metadata"]["namespace"], "db2");
        assert_eq!(value["spec"]["volumeName"], "pv-1");
        assert_eq!(value["spec"]["storageClassName"], "fast");
        assert_eq!(value["metadata"]["labels"]["app"], "web");
        assert!(
            value["metadata"]["annotations"]
                .get("pv.kubernetes.io/bind-completed")
                .is_none()
        );
        assert!(value.get("status").is_none() && value["metadata"].get("uid").is_none());
    }

    #[test]
    fn the_destination_set_starts_empty_above_the_source_range() {
        let source: StatefulSet = json(serde_json::json!({
            "metadata": {"name": "web", "namespace": "db", "uid": "src", "resourceVersion": "3", "generation": 4},
            "spec": {"replicas": 5, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                     "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Delete"},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"]}}]},
            "status": {"replicas": 5}
        }));
        let map = BTreeMap::from([("fast".to_string(), "ssd".to_string())]);
        let dest = destination_set(&source, "db2", 5, &map, "db.web", "a/db/web");
        let value = serde_json::to_value(&dest).unwrap();
        assert_eq!(value["spec"]["replicas"], 0);
        assert_eq!(value["spec"]["ordinals"]["start"], 5);
        assert_eq!(
            value["spec"]["persistentVolumeClaimRetentionPolicy"],
            serde_json::json!({"whenScaled": "Retain", "whenDeleted": "Retain"})
        );
        assert_eq!(
            value["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"],
            "ssd"
        );
        assert_eq!(
            value["metadata"]["annotations"][SOURCE_UID_ANNOTATION],
            "src"
        );
        assert_eq!(value["metadata"]["namespace"], "db2");
        assert!(
            value.get("status").is_none() && value["metadata"].get("resourceVersion").is_none()
        );
    }

    #[test]
    fn long_copy_labels_stay_valid() {
        let long = copy_label_value(&"n".repeat(40), &"s".repeat(40));
        assert!(long.len() <= 63);
        assert!(long.ends_with("sss"));
    }
}
