//! The member clusters of the controller's migrations: one connection (kube `Client`) per
//! member, and one [`Hub`] of watches that every run naming a member shares, so that neither
//! the connections nor the watches on a member grow with the migrations.
//!
//! A member is known by its kubeconfig Secret (namespace, name, key) and a hash of the
//! kubeconfig in it: a rotated kubeconfig is a new member (new credentials, new connection),
//! and one Secret's credentials are never used for a run that names another Secret.
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::cluster::Target;
use crate::error::{Error, Result};
use crate::statefulset::{Hub, Member, OnHub, Settings};

/// The members connected so far, and their shared watches.
#[derive(Default)]
pub struct Members {
    hub: Arc<Hub>,
    connected: Mutex<HashMap<String, Member>>,
}

/// PURE: a member's identity from where its kubeconfig is kept (`secret`:
/// `namespace/name/key`) and what it holds; the kubeconfig itself is only hashed, so the
/// identity can be logged.
pub fn identity(secret: &str, kubeconfig: &str) -> String {
    format!("{secret}#{:016x}", kubeconfig_hash(kubeconfig))
}

/// A hash of a kubeconfig's text: equal hashes, the same cluster and credentials, without
/// keeping the credentials.
pub fn kubeconfig_hash(kubeconfig: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    kubeconfig.hash(&mut hasher);
    hasher.finish()
}

impl Members {
    /// Both members of a run (`identities`: the source's and the destination's), connected
    /// once for every run that names them; a failure as the CLI's connect says it.
    pub async fn on_hub(&self, settings: &Settings, identities: &[String; 2]) -> Result<OnHub> {
        let (source, destination) = tokio::join!(
            self.member(&identities[0], &settings.source, settings),
            self.member(&identities[1], &settings.destination, settings)
        );
        match (source, destination) {
            (Ok(source), Ok(destination)) => Ok(OnHub {
                hub: self.hub.clone(),
                source,
                destination,
            }),
            (s, d) => {
                let mut problems = Vec::new();
                problems.extend(s.err().map(|e| format!("source: {}", e.report())));
                problems.extend(d.err().map(|e| format!("destination: {}", e.report())));
                Err(Error::PreflightFailed { problems })
            }
        }
    }

    async fn member(&self, identity: &str, target: &Target, settings: &Settings) -> Result<Member> {
        if let Some(m) = self.connected.lock().await.get(identity) {
            return Ok(m.clone());
        }
        // Connected outside the lock: an unreachable member does not hold up the others. Two
        // runs that connect the same member at once keep the first connection.
        let cluster = target.connect(settings.request_timeout).await?;
        let member = Member {
            identity: identity.to_string(),
            cluster,
            read_timeout: (!settings.request_timeout.is_zero()).then_some(settings.request_timeout),
        };
        let mut connected = self.connected.lock().await;
        Ok(connected
            .entry(identity.to_string())
            .or_insert(member)
            .clone())
    }

    /// How many watches the runs share now (the controller's metrics).
    pub fn watches(&self) -> usize {
        self.hub.watches()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_its_secret_and_its_kubeconfig() {
        let a = identity("team/km-a-kubeconfig/value", "server: https://a");
        assert_eq!(
            a,
            identity("team/km-a-kubeconfig/value", "server: https://a")
        );
        assert_ne!(
            a,
            identity("team/km-a-kubeconfig/value", "server: https://b")
        );
        assert_ne!(
            a,
            identity("other/km-a-kubeconfig/value", "server: https://a")
        );
        assert!(!a.contains("https://a"), "{a}");
    }
}
