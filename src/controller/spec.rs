//! The StatefulSetMigration a CLI run asks for: the inverse of [`super::decide::settings`], so
//! that `kubectl migrate statefulset --in-cluster` hands the controller the run it would have
//! driven itself, and a flag added to both is checked here by the round trip.
use super::api::{ClusterRef, StatefulSetMigrationSpec};
use super::decide::DEFAULT_TIMEOUT;
use crate::duration::humanize;
use crate::statefulset::{Mode, OnTimeout, Settings};

/// PURE: the spec of the run `settings` describe, or the words for what a resource cannot ask.
pub fn spec_for(settings: &Settings) -> Result<StatefulSetMigrationSpec, String> {
    let rollback = match settings.mode {
        Mode::Migrate(_) => false,
        Mode::Rollback(_) => true,
        _ => {
            return Err(
                "--status, --cleanup and --rebuild-journal run from here, not in the cluster; leave out --in-cluster"
                    .into(),
            );
        }
    };
    let unsaid = [
        (
            settings.selected,
            "-l and --all: create one resource per StatefulSet, by name",
        ),
        (
            settings.step,
            "--step: set spec.maxOrdinals instead and raise it to move on",
        ),
        (
            settings.on_timeout == OnTimeout::Rollback,
            "--on-timeout=rollback: the controller stops a run that times out and tries again; roll back with --rollback --in-cluster",
        ),
        (
            settings.recreate_destination,
            "--recreate-destination: run it from here",
        ),
    ];
    if let Some((_, why)) = unsaid.iter().find(|(asked, _)| *asked) {
        return Err(format!("a StatefulSetMigration cannot ask for {why}"));
    }
    let cluster = |name: &str, namespace: &str| ClusterRef {
        name: name.to_string(),
        namespace: Some(namespace.to_string()),
        kubeconfig_secret: None,
    };
    Ok(StatefulSetMigrationSpec {
        stateful_set_name: settings.name.clone(),
        source: cluster(&settings.source.context, &settings.source_namespace),
        destination: cluster(
            &settings.destination.context,
            &settings.destination_namespace,
        ),
        volumes: settings.volumes,
        batch: settings.batch,
        health_check: settings.health_check.clone(),
        timeout: (settings.timeout != DEFAULT_TIMEOUT).then(|| humanize(settings.timeout)),
        storage_class_map: settings.class_map.clone(),
        copy_dependencies: settings.copy_dependencies,
        create_namespace: settings.create_namespace,
        allow_unhealthy: settings.allow_unhealthy,
        paused: false,
        max_ordinals: None,
        rollback,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    use super::*;
    use crate::cluster::{self, Target};
    use crate::controller::decide::settings;
    use crate::statefulset::{Batch, CopyOrder, DryRun, Observe, VolumeMode};

    fn target(context: &str) -> Target {
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: {context}\n  cluster:\n    server: https://{context}.example:6443\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n"
        );
        cluster::resolve_text(&text, "a test".into()).unwrap()
    }

    /// What a run does, as the CLI and the controller both read it.
    fn run_of(s: &Settings) -> String {
        format!(
            "{} {}/{} -> {}/{} {:?} batch={} timeout={:?} check={:?} no-check={} classes={:?} deps={} ns={} unhealthy={} volumes={:?}",
            s.name,
            s.source.context,
            s.source_namespace,
            s.destination.context,
            s.destination_namespace,
            s.mode,
            s.batch,
            s.timeout,
            s.health_check,
            s.no_health_check,
            s.class_map,
            s.copy_dependencies,
            s.create_namespace,
            s.allow_unhealthy,
            s.volumes,
        )
    }

    prop_compose! {
        fn cli_settings()(
            rollback in any::<bool>(),
            batch in prop_oneof![(1i32..6).prop_map(Batch::Count), Just(Batch::Auto)],
            timeout_s in prop_oneof![Just(600u64), 1u64..100_000],
            check in proptest::option::of("[a-z ]{1,12}"),
            classes in proptest::collection::btree_map("[a-z]{1,5}", "[a-z]{1,5}", 0..3),
            switches in any::<(bool, bool, bool, bool)>(),
        ) -> Settings {
            let (copy_dependencies, create_namespace, allow_unhealthy, fresh) = switches;
            Settings {
                name: "web".into(),
                source: target("km-a"),
                source_namespace: "db".into(),
                destination: target("km-b"),
                destination_namespace: "db2".into(),
                request_timeout: Duration::ZERO,
                mode: if rollback { Mode::Rollback(DryRun::None) } else { Mode::Migrate(DryRun::None) },
                batch,
                timeout: Duration::from_secs(timeout_s),
                on_timeout: OnTimeout::Stop,
                no_health_check: check.is_none(),
                health_check: check,
                class_map: classes.into_iter().collect::<BTreeMap<_, _>>(),
                copy_dependencies,
                create_namespace,
                recreate_destination: false,
                allow_unhealthy,
                step: false,
                volumes: if fresh { VolumeMode::Fresh } else { VolumeMode::Shared },
                observe: Observe::Watch,
                copy_order: CopyOrder::default(),
                holder: "me".into(),
                selected: false,
            }
        }
    }

    proptest! {
        /// The controller runs what the CLI asked for: every setting survives the resource.
        #[test]
        fn the_controller_runs_the_run_the_cli_asked_for(s in cli_settings()) {
            let spec = spec_for(&s).unwrap();
            // Through the API server's JSON, as the controller reads it back.
            let spec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
            let back = settings(&spec, "elsewhere", (s.source.clone(), s.destination.clone()), "c");
            prop_assert_eq!(run_of(&back), run_of(&s));
        }
    }

    #[test]
    fn what_a_resource_cannot_ask_is_said() {
        let mut s = target_settings();
        s.step = true;
        let refused = spec_for(&s).unwrap_err();
        assert!(
            refused.contains("--step") && refused.contains("maxOrdinals"),
            "{refused}"
        );
        let mut s = target_settings();
        s.mode = Mode::Status;
        assert!(spec_for(&s).unwrap_err().contains("leave out --in-cluster"));
    }

    fn target_settings() -> Settings {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        cli_settings().new_tree(&mut runner).unwrap().current()
    }
}
