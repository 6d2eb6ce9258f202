//! PURE: what the controller concludes from a resource: the problems of its spec in words, the
//! run's settings, and the conditions that tell where it is.
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::api::{ClusterRef, Phase, StatefulSetMigrationSpec, StatefulSetMigrationStatus};
use crate::cluster::Target;
use crate::statefulset::{
    Batch, CopyOrder, DryRun, Mode, Observe, OnTimeout, Settings, VolumeMode,
};

/// The CLI's `--timeout` default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Each API request of a run is bounded, so that a hung member cannot hold a run forever.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The spec's problems that no cluster needs to be asked about, each in words with the fix.
/// `namespace` is the resource's own.
pub fn problems(spec: &StatefulSetMigrationSpec, namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (side, cluster) in [("source", &spec.source), ("destination", &spec.destination)] {
        let (secret, secret_namespace, _) = cluster.secret();
        problems.extend(foreign_secret(
            &format!("spec.{side}.kubeconfigSecret"),
            &secret,
            secret_namespace,
            namespace,
            "a migration",
        ));
    }
    if let Some(timeout) = &spec.timeout
        && let Err(why) = crate::duration::parse(timeout)
    {
        problems.push(format!("spec.timeout {timeout:?}: {why}"));
    }
    if spec.volumes == VolumeMode::Fresh && spec.health_check.is_none() && !spec.rollback {
        problems.push("spec.volumes fresh starts each destination pod on empty claims: set spec.healthCheck to a command that succeeds once the replica has caught up with its peers".into());
    }
    if spec.source.name == spec.destination.name
        && namespace_of(&spec.source, namespace) == namespace_of(&spec.destination, namespace)
    {
        problems.push(format!(
            "source and destination are the same: cluster {} namespace {}; name another destination",
            spec.source.name,
            namespace_of(&spec.source, namespace)
        ));
    }
    problems
}

/// The problem with a kubeconfig Secret (at `field`) in another namespace than the resource's
/// own (`what` may use only its own: one team cannot borrow another's cluster credentials).
pub fn foreign_secret(
    field: &str,
    secret: &str,
    secret_namespace: Option<&str>,
    namespace: &str,
    what: &str,
) -> Option<String> {
    let other = secret_namespace.filter(|ns| *ns != namespace)?;
    Some(format!(
        "{field} names Secret {secret} in namespace {other}; {what} may use the Secrets of its own namespace ({namespace}) only: copy the kubeconfig into a Secret there"
    ))
}

/// The StatefulSet's namespace in `cluster`.
pub fn namespace_of<'a>(cluster: &'a ClusterRef, own: &'a str) -> &'a str {
    cluster.namespace.as_deref().unwrap_or(own)
}

/// The settings of the run the spec asks for, as the CLI resolves them from its flags; the
/// spec passed [`problems`].
pub fn settings(
    spec: &StatefulSetMigrationSpec,
    namespace: &str,
    (source, destination): (Target, Target),
    holder: &str,
) -> Settings {
    Settings {
        name: spec.stateful_set_name.clone(),
        source_namespace: namespace_of(&spec.source, namespace).to_string(),
        destination_namespace: namespace_of(&spec.destination, namespace).to_string(),
        source,
        destination,
        request_timeout: REQUEST_TIMEOUT,
        mode: if spec.rollback {
            Mode::Rollback(DryRun::None)
        } else {
            Mode::Migrate(DryRun::None)
        },
        batch: spec.batch,
        timeout: spec
            .timeout
            .as_deref()
            .and_then(|t| crate::duration::parse(t).ok())
            .unwrap_or(DEFAULT_TIMEOUT),
        // A timed-out run stops resumably; the controller tries again (no spec field asks for
        // the automatic rollback yet).
        on_timeout: OnTimeout::Stop,
        health_check: spec.health_check.clone(),
        no_health_check: spec.health_check.is_none(),
        class_map: spec.storage_class_map.clone(),
        copy_dependencies: spec.copy_dependencies,
        create_namespace: spec.create_namespace,
        recreate_destination: false,
        allow_unhealthy: spec.allow_unhealthy,
        // The controller's operator is asked before each move only to honour maxOrdinals.
        step: spec.max_ordinals.is_some() && !spec.rollback,
        volumes: spec.volumes,
        observe: Observe::Watch,
        copy_order: CopyOrder::default(),
        holder: holder.to_string(),
        selected: false,
    }
}

/// The command a person runs to take over from the controller (to resume or roll back).
pub fn cli_command(spec: &StatefulSetMigrationSpec, namespace: &str) -> String {
    let batch = match spec.batch {
        Batch::Count(1) => String::new(),
        other => format!(" --batch {other}"),
    };
    format!(
        "kubectl migrate statefulset {} --context {} -n {} --to-context {} --to-namespace {}{batch}{}",
        spec.stateful_set_name,
        spec.source.name,
        namespace_of(&spec.source, namespace),
        spec.destination.name,
        namespace_of(&spec.destination, namespace),
        if spec.rollback { " --rollback" } else { "" }
    )
}

/// The limit that stops a run before its next move, with `moved` ordinals verified in the
/// destination: spec.maxOrdinals once reached. A rollback brings every ordinal back, whatever
/// the limit.
pub fn limit_reached(spec: &StatefulSetMigrationSpec, moved: u64) -> Option<u64> {
    let limit = u64::try_from(spec.max_ordinals?).unwrap_or(0);
    (!spec.rollback && moved >= limit).then_some(limit)
}

/// What the resource says while it waits at spec.maxOrdinals, with the command that goes on.
pub fn limit_message(name: &str, namespace: &str, set: &str, moved: u64, limit: u64) -> String {
    format!(
        "moved {moved} ordinal(s) of {set}, as many as spec.maxOrdinals ({limit}) allows; raise it to go on: kubectl patch stsm {name} -n {namespace} --type merge -p '{{\"spec\":{{\"maxOrdinals\":{}}}}}'",
        limit + 1
    )
}

/// Whether a run of the spec at `generation` ended for good, as `status` says: completed,
/// rolled back, or waiting at spec.maxOrdinals. Nothing more happens until the spec changes,
/// also in a controller that has just started and so has no run of its own to remember.
pub fn ended_for_good(
    status: Option<&StatefulSetMigrationStatus>,
    generation: Option<i64>,
) -> bool {
    status.is_some_and(|s| {
        generation.is_some()
            && s.observed_generation == generation
            && matches!(
                s.phase,
                Some(Phase::Completed | Phase::RolledBack | Phase::Paused)
            )
    })
}

/// Why a run in progress stops when its resource changes to `spec` at `generation`.
pub fn stop_reason(spec: &StatefulSetMigrationSpec, generation: Option<i64>) -> String {
    if spec.paused {
        "paused by spec.paused".into()
    } else {
        match generation {
            Some(g) => format!("the spec changed (generation {g})"),
            None => "the spec changed".into(),
        }
    }
}

/// Whether a replica standing by to lead tries again after `error` from the leader-election
/// Lease: it does when the Lease is held, and through a server that restarts, is overloaded
/// or does not answer; it ends on an answer that will not change by itself (403, 404).
pub fn standby_retries(error: &crate::error::Error) -> bool {
    matches!(error, crate::error::Error::LeaseHeld { .. })
        || crate::statefulset::is_transient(error)
}

/// A condition's status, as metav1.Condition spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    /// The controller cannot tell now (e.g. a member it must ask does not answer).
    Unknown,
}

impl Truth {
    pub fn as_str(self) -> &'static str {
        match self {
            Truth::True => "True",
            Truth::False => "False",
            Truth::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Truth {
    fn from(b: bool) -> Truth {
        if b { Truth::True } else { Truth::False }
    }
}

/// One condition as the controller wants it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub type_: &'static str,
    pub status: Truth,
    pub reason: &'static str,
    pub message: String,
}

/// The conditions after `wanted`: a condition whose status does not change keeps its
/// lastTransitionTime (API conventions); every one carries `generation`.
pub fn conditions(
    previous: &[Condition],
    wanted: &[Wanted],
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    let mut next: Vec<Condition> = previous
        .iter()
        .filter(|c| !wanted.iter().any(|w| w.type_ == c.type_))
        .cloned()
        .collect();
    for w in wanted {
        let status = w.status.as_str();
        let since = previous
            .iter()
            .find(|c| c.type_ == w.type_ && c.status == status)
            .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
        next.push(Condition {
            type_: w.type_.to_string(),
            status: status.to_string(),
            reason: w.reason.to_string(),
            message: w.message.clone(),
            last_transition_time: since,
            observed_generation: generation,
        });
    }
    next.sort_by(|a, b| a.type_.cmp(&b.type_));
    next
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn spec() -> StatefulSetMigrationSpec {
        serde_json::from_value(serde_json::json!({
            "statefulSetName": "web",
            "source": {"name": "a"},
            "destination": {"name": "b"},
        }))
        .unwrap()
    }

    #[test]
    fn another_namespaces_secret_is_refused_in_words() {
        let mut s = spec();
        s.destination.kubeconfig_secret = Some(super::super::api::SecretKeyRef {
            name: "b-kubeconfig".into(),
            namespace: Some("team-b".into()),
            key: None,
        });
        let p = problems(&s, "team-a");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("Secret b-kubeconfig in namespace team-b")
                && p[0].contains("its own namespace (team-a)"),
            "{p:?}"
        );
        // Its own namespace, named, is fine.
        s.destination.kubeconfig_secret.as_mut().unwrap().namespace = Some("team-a".into());
        assert!(problems(&s, "team-a").is_empty());
    }

    #[test]
    fn a_bad_timeout_and_the_same_cluster_twice_are_problems() {
        let mut s = spec();
        s.timeout = Some("soon".into());
        s.destination.name = "a".into();
        let p = problems(&s, "ns");
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("spec.timeout \"soon\""), "{p:?}");
        assert!(p[1].contains("the same: cluster a namespace ns"), "{p:?}");
    }

    #[test]
    fn the_cli_command_resumes_the_same_migration() {
        let mut s = spec();
        s.batch = Batch::Auto;
        assert_eq!(
            cli_command(&s, "shop"),
            "kubectl migrate statefulset web --context a -n shop --to-context b --to-namespace shop --batch auto"
        );
    }

    #[test]
    fn max_ordinals_stops_a_migration_once_reached_and_never_a_rollback() {
        let mut s = spec();
        assert_eq!(limit_reached(&s, 100), None, "no limit");
        s.max_ordinals = Some(2);
        assert_eq!(limit_reached(&s, 1), None);
        assert_eq!(limit_reached(&s, 2), Some(2));
        assert_eq!(limit_reached(&s, 3), Some(2));
        s.max_ordinals = Some(0);
        assert_eq!(limit_reached(&s, 0), Some(0), "0 moves nothing");
        s.rollback = true;
        assert_eq!(limit_reached(&s, 5), None);
        let message = limit_message("move-web", "shop", "web", 2, 2);
        assert_eq!(
            message,
            "moved 2 ordinal(s) of web, as many as spec.maxOrdinals (2) allows; raise it to go on: kubectl patch stsm move-web -n shop --type merge -p '{\"spec\":{\"maxOrdinals\":3}}'"
        );
    }

    #[test]
    fn a_run_stopped_by_a_spec_change_says_which() {
        let mut s = spec();
        assert_eq!(stop_reason(&s, Some(3)), "the spec changed (generation 3)");
        s.paused = true;
        assert_eq!(stop_reason(&s, Some(4)), "paused by spec.paused");
    }

    #[test]
    fn a_standby_retries_transient_errors_and_ends_on_permanent_ones() {
        use crate::error::Error;
        let answered = |code: u16| Error::Cluster {
            context: "km-c".into(),
            server: "https://127.0.0.1:1".into(),
            what: "read the migration lease".into(),
            kubeconfig: None,
            source: Box::new(kube::Error::Api(Box::new(
                kube::core::Status::failure("said", "Said").with_code(code),
            ))),
        };
        for code in [500, 502, 503, 504, 429] {
            assert!(standby_retries(&answered(code)), "{code}");
        }
        for code in [401, 403, 404, 422] {
            assert!(!standby_retries(&answered(code)), "{code}");
        }
        let timeout = Error::Timeout {
            context: "km-c".into(),
            server: "https://127.0.0.1:1".into(),
            timeout: Duration::from_secs(4),
        };
        assert!(standby_retries(&timeout));
        let refused = Error::Cluster {
            context: "km-c".into(),
            server: "https://127.0.0.1:1".into(),
            what: "read the migration lease".into(),
            kubeconfig: None,
            source: Box::new(kube::Error::Service(
                std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into(),
            )),
        };
        assert!(standby_retries(&refused), "connection refused");
        assert!(standby_retries(&Error::LeaseHeld {
            holder: "other".into(),
            lease: "Lease x".into(),
            seen: "it renewed".into(),
            duration: Duration::from_secs(15),
        }));
        assert!(!standby_retries(&Error::Usage("bad".into())));
    }

    fn time(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    proptest! {
        /// Whatever came before: one condition per type, each wanted one as wanted, with the
        /// generation; the transition time moves only when the status changes.
        #[test]
        fn conditions_keep_their_transition_time_unless_the_status_changes(
            before in proptest::collection::vec((0..3usize, any::<bool>()), 0..3),
            after in proptest::collection::vec((0..3usize, any::<bool>()), 0..3),
            generation in 1..100i64,
        ) {
            const TYPES: [&str; 3] = ["Ready", "Progressing", "Paused"];
            let mut previous = Vec::new();
            for (t, s) in before {
                let wanted = [Wanted { type_: TYPES[t], status: s.into(), reason: "Before", message: "before".into() }];
                previous = conditions(&previous, &wanted, Some(1), &time(1_000));
            }
            let mut wanted: Vec<Wanted> = Vec::new();
            for (t, s) in after {
                if !wanted.iter().any(|w| w.type_ == TYPES[t]) {
                    wanted.push(Wanted { type_: TYPES[t], status: s.into(), reason: "After", message: "after".into() });
                }
            }
            let next = conditions(&previous, &wanted, Some(generation), &time(2_000));
            let mut types: Vec<&str> = next.iter().map(|c| c.type_.as_str()).collect();
            types.dedup();
            prop_assert_eq!(types.len(), next.len());
            for w in &wanted {
                let c = next.iter().find(|c| c.type_ == w.type_).unwrap();
                let status = w.status.as_str();
                prop_assert_eq!(&c.status, status);
                prop_assert_eq!(c.observed_generation, Some(generation));
                let same = previous.iter().any(|p| p.type_ == w.type_ && p.status == status);
                let expected = if same { time(1_000) } else { time(2_000) };
                prop_assert_eq!(&c.last_transition_time, &expected);
            }
        }
    }

    #[test]
    fn only_an_end_of_the_same_spec_is_for_good() {
        let status = |phase, observed| StatefulSetMigrationStatus {
            phase: Some(phase),
            observed_generation: observed,
            ..Default::default()
        };
        for phase in [Phase::Completed, Phase::RolledBack, Phase::Paused] {
            assert!(ended_for_good(Some(&status(phase, Some(3))), Some(3)));
            assert!(
                !ended_for_good(Some(&status(phase, Some(2))), Some(3)),
                "an end of an older spec"
            );
        }
        for phase in [Phase::Failed, Phase::Migrating, Phase::RollingBack] {
            assert!(!ended_for_good(Some(&status(phase, Some(3))), Some(3)));
        }
        assert!(!ended_for_good(None, Some(3)), "never run");
        assert!(!ended_for_good(Some(&status(Phase::Completed, None)), None));
    }
}
