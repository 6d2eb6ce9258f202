//! The writes to claims and PVs: reclaim policies set to Retain (the originals recorded first)
//! and restored, claims copied to the other side pre-bound to their PV, and copies deleted
//! only where the policy keeps the storage.
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::Api;
use kube::api::Patch;
use serde_json::json;

use super::journaling::Journaling;
use super::waits::{Note, Notes, Waits};
use super::writer::{Writer, Written};
use crate::error::{Error, Result};
use crate::statefulset::copy::{ORIGINAL_POLICY_ANNOTATION, copy_claim, copy_volume};
use crate::statefulset::journal::Stored;
use crate::statefulset::model::{Observed, Side};

fn claims(w: &Writer, side: Side) -> Api<PersistentVolumeClaim> {
    w.sides.namespaced(side)
}

/// Sets the PVs `volumes` on `side` to Retain. The source's keep their original policy in the
/// journal (written first, or it is lost) and in an annotation.
pub async fn protect(
    w: &Writer,
    journal: &Journaling,
    side: Side,
    volumes: &[String],
    stored: Option<&Stored>,
    observed: &Observed,
) -> Result<()> {
    let policies: Vec<(String, String)> = volumes
        .iter()
        .map(|volume| (volume.clone(), policy_of(observed, side, volume)))
        .collect();
    if side == Side::Source {
        record_original_policies(w, journal, stored, side, &policies).await?;
    }
    for (volume, original) in &policies {
        let original = (side == Side::Source).then_some(original.as_str());
        set_reclaim_policy_marked(w, side, volume, "Retain", original).await?;
    }
    Ok(())
}

/// `--volumes=fresh`: sets the PVs bound to `claims`, which the destination's controller made,
/// to Retain, their original policies recorded in the journal first (a rollback restores them).
pub async fn protect_new(
    w: &Writer,
    journal: &Journaling,
    claims: &[String],
    stored: Option<&Stored>,
    observed: &Observed,
) -> Result<()> {
    let side = Side::Destination;
    let policies: Vec<(String, String)> = claims
        .iter()
        .filter_map(|claim| observed.destination.claims.get(claim)?.volume_name.clone())
        .map(|volume| {
            let policy = policy_of(observed, side, &volume);
            (volume, policy)
        })
        .collect();
    record_original_policies(w, journal, stored, side, &policies).await?;
    for (volume, original) in &policies {
        set_reclaim_policy_marked(w, side, volume, "Retain", Some(original)).await?;
    }
    Ok(())
}

/// The reclaim policy PV `volume` on `side` shows (Delete, the default, if it is not observed).
fn policy_of(observed: &Observed, side: Side, volume: &str) -> String {
    observed
        .side(side)
        .volumes
        .get(volume)
        .map_or_else(|| "Delete".into(), |v| v.reclaim_policy.clone())
}

/// The original policies (`(volume, policy)`) of PVs on `side` must be in the journal before
/// the PVs are changed, or they are lost; a policy recorded already is kept.
async fn record_original_policies(
    w: &Writer,
    journal: &Journaling,
    stored: Option<&Stored>,
    side: Side,
    policies: &[(String, String)],
) -> Result<()> {
    let Some(stored) = stored else { return Ok(()) };
    let recorded = stored.journal.original_policies(side);
    let missing: Vec<&(String, String)> = policies
        .iter()
        .filter(|(v, _)| !recorded.contains_key(v))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    journal
        .update(
            w,
            Some(stored),
            "record the original reclaim policies",
            |j| {
                for (volume, policy) in missing {
                    j.original_policies_mut(side)
                        .insert(volume.clone(), policy.clone());
                }
            },
        )
        .await
}

pub async fn set_reclaim_policy(w: &Writer, side: Side, volume: &str, policy: &str) -> Result<()> {
    let patch = json!({"spec": {"persistentVolumeReclaimPolicy": policy}});
    patch_volume(w, side, volume, policy, &patch).await
}

/// Gives a PV on `side` back its original policy, and drops the annotation that kept it.
pub async fn restore_policy(w: &Writer, side: Side, volume: &str, policy: &str) -> Result<()> {
    set_reclaim_policy_marked(w, side, volume, policy, None).await
}

/// Sets a PV's policy and its original-policy annotation (`None` removes it) at once.
async fn set_reclaim_policy_marked(
    w: &Writer,
    side: Side,
    volume: &str,
    policy: &str,
    original: Option<&str>,
) -> Result<()> {
    let patch = json!({
        "metadata": {"annotations": {ORIGINAL_POLICY_ANNOTATION: original}},
        "spec": {"persistentVolumeReclaimPolicy": policy}});
    patch_volume(w, side, volume, policy, &patch).await
}

async fn patch_volume(
    w: &Writer,
    side: Side,
    volume: &str,
    policy: &str,
    patch: &serde_json::Value,
) -> Result<()> {
    w.write(
        side,
        &format!("set the reclaim policy of PV {volume} to {policy}"),
        w.sides
            .volumes(side)
            .patch(volume, &w.merge_params(), &Patch::Merge(patch)),
        None,
    )
    .await?;
    Ok(())
}

/// Copies claim `claim` and its PV from the other side to `to`, pre-bound, and waits until the
/// PV controller has bound the pair (the time goes to `notes`).
pub async fn copy(
    w: &Writer,
    waits: &Waits,
    class_map: &BTreeMap<String, String>,
    to: Side,
    claim: &str,
    order: CopyOrder,
    notes: &Notes,
) -> Result<()> {
    let sides = &w.sides;
    let from = to.other();
    // The source's claim and PV do not change during a move (their protection is shown
    // in the caches before a move starts): read from the caches when the loop has them.
    let cached = waits.watched();
    let original = match cached.as_ref().and_then(|w| w.claim(from, claim)) {
        Some(c) => (*c).clone(),
        None => {
            sides
                .cluster(from)
                .call(&format!("read PVC {claim}"), claims(w, from).get(claim))
                .await?
        }
    };
    let volume_name = original
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .ok_or_else(|| Error::Failed {
            message: format!(
                "PVC {claim} in {} is not bound to a PV; nothing to move",
                sides.context(from)
            ),
        })?;
    let volume = match cached.as_ref().and_then(|w| w.volume(from, &volume_name)) {
        Some(v) => (*v).clone(),
        None => {
            sides
                .cluster(from)
                .call(
                    &format!("read PV {volume_name}"),
                    sides.volumes(from).get(&volume_name),
                )
                .await?
        }
    };
    let at = sides.location(to);
    let origin = format!("{}/{}", sides.context(from), volume_name);
    let volume_copy = copy_volume(
        &volume,
        &at.namespace,
        claim,
        class_map,
        &at.copy_label,
        &origin,
    );
    let created = w
        .write(
            to,
            &format!("copy PV {volume_name}"),
            sides.volumes(to).create(&w.post_params(), &volume_copy),
            Some(409),
        )
        .await?;
    if created == Written::AlreadyDone {
        // Fine if it is the copy a crashed run already made; anything else is not ours.
        let existing = sides
            .cluster(to)
            .call("read PV", sides.volumes(to).get(&volume_name))
            .await?;
        let reserved = existing
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .map(|r| (r.namespace.clone(), r.name.clone()));
        if reserved != Some((Some(at.namespace.clone()), Some(claim.to_string()))) {
            return Err(Error::Failed {
                message: format!(
                    "PV {volume_name} already exists in {} and belongs to something else; not overwriting it",
                    sides.context(to)
                ),
            });
        }
    }
    let waiting = std::time::Instant::now();
    // The claim's first sync in the PV controller binds it only if the PV is in the
    // controller's cache by then; if not, the claim waits for the controller's periodic resync
    // (15 s), as a PV event of a PV that names its claim without a uid wakes no claim
    // (kubernetes/kubernetes#135127). So the claim follows once the controller has seen the PV.
    let mut waited = std::time::Duration::ZERO;
    if order == CopyOrder::AfterVolumeSeen && !w.is_dry_run() {
        waits.volume_seen(to, &volume_name).await?;
        waited = waiting.elapsed();
    }
    let claim_copy = copy_claim(
        &original,
        &at.namespace,
        class_map,
        &at.copy_label,
        &format!("{}/{}", sides.context(from), claim),
    );
    w.write(
        to,
        &format!("copy PVC {claim}"),
        claims(w, to).create(&w.post_params(), &claim_copy),
        Some(409),
    )
    .await?;
    if w.is_dry_run() {
        return Ok(());
    }
    // A pod whose claim is not bound yet is unschedulable, and the scheduler tries it again
    // only after a backoff: the copy is done when the PV controller has bound the pair.
    let waiting = std::time::Instant::now();
    waits.bound(to, claim).await?;
    let _ = notes.send(Note::Waited(waited + waiting.elapsed()));
    Ok(())
}

/// When a claim's copy is created, relative to its PV's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyOrder {
    /// Once the PV controller has seen the PV: the claim binds on its first sync.
    #[default]
    AfterVolumeSeen,
    /// Right after the PV, as before issue 28: a claim synced before its PV reached the
    /// controller's cache waits for the 15 s resync. The benchmark's baseline.
    Immediate,
}

/// Set to `immediate`, claims are copied right after their PVs ([`CopyOrder::Immediate`]),
/// for the benchmark's baseline; anything else, or nothing, waits for the PV controller.
pub const COPY_ORDER_ENV: &str = "KUBECTL_MIGRATE_COPY_ORDER";

impl CopyOrder {
    /// [`COPY_ORDER_ENV`]'s value as a copy order.
    pub fn from_env_value(value: Option<&str>) -> CopyOrder {
        match value {
            Some("immediate") => CopyOrder::Immediate,
            _ => CopyOrder::AfterVolumeSeen,
        }
    }
}

/// Rollback clean-up: deletes a claim or PV copy made in the destination.
pub async fn delete_copy(
    w: &Writer,
    waits: &Waits,
    claim: Option<&str>,
    volume: Option<&str>,
) -> Result<()> {
    let dest = Side::Destination;
    if let Some(claim) = claim {
        w.delete_until_gone(waits, dest, "PVC", &claims(w, dest), claim)
            .await?;
    }
    if let Some(volume) = volume {
        delete_retained_volume(w, waits, dest, volume).await?;
    }
    Ok(())
}

/// Deletes the PV object `volume` on `side`, only if its reclaim policy keeps the storage.
pub async fn delete_retained_volume(
    w: &Writer,
    waits: &Waits,
    side: Side,
    volume: &str,
) -> Result<()> {
    let cluster = w.sides.cluster(side);
    let pv = cluster
        .call(
            &format!("read PV {volume}"),
            w.sides.volumes(side).get_opt(volume),
        )
        .await?;
    let Some(pv) = pv else { return Ok(()) };
    let policy = pv
        .spec
        .and_then(|s| s.persistent_volume_reclaim_policy)
        .unwrap_or_default();
    if policy != "Retain" {
        return Err(Error::Failed {
            message: format!(
                "PV {volume} in {} has reclaim policy {policy}; refusing to delete it",
                cluster.context
            ),
        });
    }
    w.delete_until_gone(waits, side, "PV", &w.sides.volumes(side), volume)
        .await
}

#[cfg(test)]
mod tests {
    use super::CopyOrder;

    #[test]
    fn only_immediate_copies_the_claim_right_after_its_volume() {
        assert_eq!(
            CopyOrder::from_env_value(Some("immediate")),
            CopyOrder::Immediate
        );
        for other in [None, Some(""), Some("after-volume-seen"), Some("Immediate")] {
            assert_eq!(CopyOrder::from_env_value(other), CopyOrder::AfterVolumeSeen);
        }
    }
}
