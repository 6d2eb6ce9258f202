//! PURE: what a run that stopped before it wrote its journal leaves in the destination. The
//! namespace (`--create-namespace`) is made first and the Lease right after, both before the
//! journal: without one, `--status`, `--rollback` and `--cleanup` find them by their labels and
//! names, so that "no migration found" never hides them.

/// Found in the destination for a set that has no journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// The destination namespace, when its labels say this migration created it.
    pub namespace: Option<String>,
    /// `Lease NS/NAME in CONTEXT`, when it exists, with its holder (empty: none named).
    pub lease: Option<(String, String)>,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.namespace.is_none() && self.lease.is_none()
    }

    /// What was found, as part of a sentence: `namespace NS (created by it) and Lease ...`.
    fn found(&self, context: &str) -> String {
        let mut parts = Vec::new();
        if let Some(ns) = &self.namespace {
            parts.push(format!("namespace {ns} in {context} (created by it)"));
        }
        if let Some((lease, holder)) = &self.lease {
            parts.push(match holder.as_str() {
                "" => lease.clone(),
                holder => format!("{lease} (last held by {holder})"),
            });
        }
        parts.join(" and ")
    }

    /// For `--status`: what remains and the commands that finish or remove it.
    pub fn status_line(&self, set: &str, context: &str) -> String {
        format!(
            "an earlier run of {set} stopped before it wrote its journal and left {}: \
             rerun the migration to start it, or --rollback (or --cleanup) to delete {}",
            self.found(context),
            self.what_goes()
        )
    }

    /// For `--rollback` and `--cleanup`: what they delete.
    pub fn removal(&self, set: &str, context: &str) -> String {
        format!(
            "no journal of {set}, but an earlier run stopped before writing it and left {}; delete {}",
            self.found(context),
            self.what_goes()
        )
    }

    fn what_goes(&self) -> &'static str {
        match (&self.namespace, &self.lease) {
            (Some(_), _) => "the namespace (with the Lease in it)",
            _ => "the Lease",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(namespace: bool, holder: Option<&str>) -> Leftovers {
        Leftovers {
            namespace: namespace.then(|| "db".to_string()),
            lease: holder.map(|h| ("Lease db/kubectl-migrate-web in km-b".into(), h.into())),
        }
    }

    #[test]
    fn the_status_names_what_remains_and_the_commands() {
        assert_eq!(
            found(true, Some("host_1")).status_line("web", "km-b"),
            "an earlier run of web stopped before it wrote its journal and left namespace db in km-b (created by it) \
             and Lease db/kubectl-migrate-web in km-b (last held by host_1): rerun the migration to start it, \
             or --rollback (or --cleanup) to delete the namespace (with the Lease in it)"
        );
    }

    #[test]
    fn a_lease_alone_is_deleted_alone() {
        let lease = found(false, Some(""));
        assert_eq!(
            lease.removal("web", "km-b"),
            "no journal of web, but an earlier run stopped before writing it and left Lease db/kubectl-migrate-web in km-b; delete the Lease"
        );
        assert!(!lease.is_empty());
        assert!(found(false, None).is_empty());
    }
}
