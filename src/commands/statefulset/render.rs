//! The human renderings of the statefulset command's outputs: the plan (with the dry-run
//! verdicts), `--status` and `--cleanup`.
use comfy_table::Table;

use crate::output::{self, Tabular};
use crate::statefulset::PlanOutput;
use crate::statefulset::cleanup::CleanupReport;
use crate::statefulset::recover::Rebuilt;
use crate::statefulset::status::{JournalSummary, PodState, SideSummary, StatusReport};

impl Tabular for PlanOutput {
    fn table(&self) -> Table {
        let mut t = output::new_table(["#", "ordinal", "cluster", "action"]);
        for s in &self.plan.steps {
            t.add_row([
                s.number.to_string(),
                s.ordinal.map(|k| k.to_string()).unwrap_or_default(),
                s.cluster.clone(),
                s.action.clone(),
            ]);
        }
        for r in &self.server_dry_run {
            t.add_row([
                "dry-run".to_string(),
                String::new(),
                r.cluster.clone(),
                format!(
                    "{}: {}",
                    r.action,
                    match r.state {
                        "rejected" => format!("REJECTED: {}", r.message),
                        "not-checked" => format!("not checked: {}", r.message),
                        _ => "accepted".into(),
                    }
                ),
            ]);
        }
        output::fit(&mut t, &[3], &[], 0);
        t
    }
}

impl Tabular for StatusReport {
    /// One row per ordinal: where its pod runs and where its claims are.
    fn table(&self) -> Table {
        let mut t = output::new_table([
            "ordinal",
            &format!("pod in {}", self.source.context),
            &format!("pod in {}", self.destination.context),
            "claims (volume: where)",
        ]);
        for row in &self.ordinals {
            let claims = row
                .claims
                .iter()
                .map(|c| {
                    let volume = c.volume.as_deref().unwrap_or("-");
                    // With fresh volumes the claim has another volume in each cluster.
                    if let Some(fresh) = &c.destination_volume {
                        return format!("{} ({volume}: source, {fresh}: destination)", c.claim);
                    }
                    let place = match (c.in_source, c.in_destination) {
                        (true, true) => "both",
                        (true, false) => "source",
                        (false, true) => "destination",
                        (false, false) => "missing",
                    };
                    format!("{} ({volume}: {place})", c.claim)
                })
                .collect::<Vec<_>>()
                .join(", ");
            let pod = |p: &Option<PodState>| p.as_ref().map_or("-", PodState::word).to_string();
            t.add_row([
                row.ordinal.to_string(),
                pod(&row.source_pod),
                pod(&row.destination_pod),
                claims,
            ]);
        }
        output::fit(&mut t, &[3], &[], 0);
        t
    }

    /// The table, then each side, the journal and the next step, a line each.
    fn text(&self) -> String {
        let side = |s: &SideSummary| match (s.start, s.replicas) {
            (Some(start), Some(r)) => format!(
                "{}/{}: start={start} replicas={r} ready={}",
                s.context,
                s.namespace,
                s.ready_replicas.unwrap_or(0)
            ),
            _ => format!("{}/{}: no StatefulSet", s.context, s.namespace),
        };
        let journal = match &self.journal {
            Some(j) => journal_words(j, &self.source.context, &self.destination.context),
            None => "journal: none".into(),
        };
        let journal = match &self.lease_holder {
            Some(holder) => format!("{journal}; lease held by {holder} (driving now)"),
            None => journal,
        };
        let volumes = if self.volumes.is_shared() {
            ""
        } else {
            "volumes: fresh (the destination's pods run on new claims; the source's are kept for a rollback)\n"
        };
        format!(
            "{}\n{}\n{}\n{journal}\n{volumes}next: {}\n",
            output::trim_lines(&self.table().to_string()),
            side(&self.source),
            side(&self.destination),
            self.next_step
        )
    }
}

impl Tabular for CleanupReport {
    fn table(&self) -> Table {
        let mut t = output::new_table(["removed from the source", "name"]);
        if let Some(s) = &self.statefulset {
            t.add_row(["StatefulSet", s.as_str()]);
        }
        for c in &self.claims {
            t.add_row(["PersistentVolumeClaim", c.as_str()]);
        }
        for v in &self.volumes {
            t.add_row(["PersistentVolume (storage kept)", v.as_str()]);
        }
        for (v, p) in &self.restored_reclaim_policies {
            t.add_row([format!("reclaim policy restored to {p}"), v.clone()]);
        }
        if let Some(r) = &self.restored_retention {
            t.add_row([
                format!(
                    "PVC retention restored to whenScaled={}, whenDeleted={}",
                    r.when_scaled, r.when_deleted
                ),
                "StatefulSet (destination)".to_string(),
            ]);
        }
        output::fit(&mut t, &[], &[], 0);
        t
    }

    fn text(&self) -> String {
        match &self.note {
            Some(note) => format!("{note}\n"),
            None => output::trim_lines(&self.table().to_string()),
        }
    }
}

impl Tabular for Rebuilt {
    fn table(&self) -> Table {
        let j = &self.journal;
        let mut t = output::new_table(["rebuilt journal", "value"]);
        t.add_row([
            "ordinals".to_string(),
            format!("[{}, {})", j.start, j.start + j.replicas),
        ]);
        for (volume, policy) in &j.original_reclaim_policies {
            t.add_row([
                format!("original reclaim policy of PV {volume}"),
                policy.clone(),
            ]);
        }
        t.add_row([
            "original PVC retention".to_string(),
            format!(
                "whenScaled={}, whenDeleted={}",
                j.original_retention.when_scaled, j.original_retention.when_deleted
            ),
        ]);
        for object in &j.created {
            t.add_row(["created by the migration".to_string(), object.to_string()]);
        }
        for b in &j.budgets {
            t.add_row([
                format!("PodDisruptionBudget {}", b.name),
                b.original.to_string(),
            ]);
        }
        output::fit(&mut t, &[], &[], 0);
        t
    }

    fn text(&self) -> String {
        format!(
            "{}\nNext: rerun the same command to resume the migration, or add --rollback to undo it.",
            output::trim_lines(&self.table().to_string())
        )
    }
}

/// The journal as a sentence: which way the run goes, how many ordinals are verified where
/// they are going (forward, those from the bound up; rollback, those below it), and whether it
/// is complete or cleaned up.
fn journal_words(j: &JournalSummary, source: &str, destination: &str) -> String {
    let end = j.original_start + j.original_replicas;
    let (way, verified, place) = if j.direction == "rollback" {
        (
            format!("rollback {destination} to {source}"),
            j.verified_bound - j.original_start,
            source,
        )
    } else {
        (
            format!("migration {source} to {destination}"),
            end - j.verified_bound,
            destination,
        )
    };
    let state = match (j.complete, j.cleaned_up) {
        (_, true) => ", complete, source cleaned up",
        (true, false) => ", complete",
        (false, false) => "",
    };
    format!(
        "journal: {way}{state}; {} of {} verified in {place}",
        verified.clamp(0, j.original_replicas.max(0)),
        output::counted(j.original_replicas.max(0) as u64, "ordinal")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(direction: &str, verified_bound: i32, complete: bool) -> JournalSummary {
        JournalSummary {
            direction: direction.into(),
            original_replicas: 3,
            original_start: 0,
            verified_bound,
            complete,
            cleaned_up: false,
        }
    }

    #[test]
    fn the_journal_is_said_in_words() {
        assert_eq!(
            journal_words(&journal("forward", 1, false), "km-a", "km-b"),
            "journal: migration km-a to km-b; 2 of 3 ordinals verified in km-b"
        );
        assert_eq!(
            journal_words(&journal("forward", 0, true), "km-a", "km-b"),
            "journal: migration km-a to km-b, complete; 3 of 3 ordinals verified in km-b"
        );
        assert_eq!(
            journal_words(&journal("rollback", 1, false), "km-a", "km-b"),
            "journal: rollback km-b to km-a; 1 of 3 ordinals verified in km-a"
        );
    }
}
