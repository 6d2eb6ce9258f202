//! `kubectl migrate statefulset ... --in-cluster`: the run is handed to the controller as a
//! StatefulSetMigration in the management cluster (the spec the same settings as a run from
//! here, see [`controller::spec::spec_for`]), and followed from its status with the same
//! progress display. Ctrl-C stops following only: the controller goes on.
use std::path::PathBuf;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde::Serialize;
use tokio::sync::mpsc;

use super::{Resolved, resume_command};
use crate::cluster::{self, Cluster};
use crate::controller::api::{Phase, StatefulSetMigration, StatefulSetMigrationStatus};
use crate::controller::spec::spec_for;
use crate::error::{Error, Result};
use crate::output;
use crate::statefulset::{DryRun, Mode};

/// Where the resource goes: the management cluster's context and namespace, as given.
#[derive(Debug, Clone)]
pub struct Management {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub namespace: Option<String>,
}

/// The resource, printed as kubectl prints what it creates: the object with -o json|yaml, its
/// name and what was done otherwise.
struct Shown<'a> {
    resource: &'a StatefulSetMigration,
    done: &'a str,
}

impl Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.resource.serialize(s)
    }
}

impl output::Tabular for Shown<'_> {
    fn table(&self) -> comfy_table::Table {
        unreachable!("a created resource is said in one line, see text()")
    }

    fn text(&self) -> String {
        format!(
            "statefulsetmigration.kubectl-migrate.io/{} {}\n",
            self.resource.name_any(),
            self.done
        )
    }
}

pub async fn exec(resolved: &Resolved, management: &Management) -> Result<()> {
    let settings = &resolved.settings;
    let status_command = format!(
        "kubectl migrate statefulset {} --context {} -n {} --to-context {} --to-namespace {} --status",
        settings.name,
        settings.source.context,
        settings.source_namespace,
        settings.destination.context,
        settings.destination_namespace
    );
    let spec = spec_for(settings).map_err(Error::Usage)?;
    let dry_run = match settings.mode {
        Mode::Migrate(d) | Mode::Rollback(d) => d,
        _ => DryRun::None,
    };
    let target = cluster::resolve(
        management.kubeconfig.as_deref(),
        management.context.as_deref(),
    )?;
    let namespace = management
        .namespace
        .clone()
        .unwrap_or_else(|| target.namespace.clone());
    let mut resource = StatefulSetMigration::new(&settings.name, spec.clone());
    resource.metadata.namespace = Some(namespace.clone());
    if dry_run == DryRun::Client {
        let shown = Shown {
            resource: &resource,
            done: "created (dry run)",
        };
        return output::print(&shown, resolved.output);
    }
    let management_cluster = target.connect(settings.request_timeout).await?;
    let api: Api<StatefulSetMigration> =
        Api::namespaced(management_cluster.client.clone(), &namespace);
    let place = format!("namespace {namespace} of {}", management_cluster.context);
    let missing = missing_secrets(&management_cluster, &namespace, &resource).await?;
    if !missing.is_empty() {
        return Err(Error::PreflightFailed { problems: missing });
    }
    let existing = management_cluster
        .call(
            "read the StatefulSetMigration",
            api.get_opt(&resource.name_any()),
        )
        .await
        .map_err(|e| not_installed(e, &management_cluster))?;
    let what = format!(
        "the controller in {} to {} {} from {}/{} to {}/{} (StatefulSetMigration {}/{})",
        management_cluster.context,
        if spec.rollback { "roll back" } else { "move" },
        settings.name,
        settings.source.context,
        settings.source_namespace,
        settings.destination.context,
        settings.destination_namespace,
        namespace,
        settings.name,
    );
    let server_dry_run = dry_run == DryRun::Server;
    let written = match existing {
        Some(found) if found.spec == spec => {
            output::log(0, format!("{what} exists already: following it"));
            Written::Generation(found.metadata.generation)
        }
        // The same migration, asked now to roll back (or to go forward again).
        Some(found) if same_but_direction(&found.spec, &spec) => {
            let patch = Patch::Merge(serde_json::json!({"spec": {"rollback": spec.rollback}}));
            let params = PatchParams {
                dry_run: server_dry_run,
                ..PatchParams::default()
            };
            let name = found.name_any();
            let write = management_cluster.call(
                "change the StatefulSetMigration's direction",
                api.patch(&name, &params, &patch),
            );
            ask_and_write(resolved, &what, server_dry_run, "configured", write).await?
        }
        Some(found) => {
            return Err(Error::Conflict(format!(
                "a StatefulSetMigration {} already exists in {place} with another spec; see it with `kubectl --context {} -n {namespace} get stsm {} -o yaml`, and delete it once it has completed or rolled back, or change it with kubectl",
                found.name_any(),
                management_cluster.context,
                found.name_any(),
            )));
        }
        None => {
            let params = PostParams {
                dry_run: server_dry_run,
                ..PostParams::default()
            };
            let write = async {
                management_cluster
                    .call(
                        "create the StatefulSetMigration",
                        api.create(&params, &resource),
                    )
                    .await
                    .map_err(|e| not_installed(e, &management_cluster))
            };
            ask_and_write(resolved, &what, server_dry_run, "created", write).await?
        }
    };
    let generation = match written {
        Written::Generation(generation) => generation,
        Written::ShownDryRun => return Ok(()),
    };
    let resume = resume_command(resolved);
    let done = follow(
        &api,
        &settings.name,
        (generation, spec.rollback),
        &resume,
        &status_command,
    )
    .await?;
    let outcome = done
        .status
        .as_ref()
        .and_then(ready_message)
        .unwrap_or_else(|| "done".into());
    output::print(
        &Shown {
            resource: &done,
            done: &outcome,
        },
        resolved.output,
    )
}

/// What a write of the resource left to do: follow the generation written, or nothing (a server
/// dry run has printed the server's answer).
enum Written {
    Generation(Option<i64>),
    ShownDryRun,
}

/// Asks the person (unless it is a server dry run, which changes nothing), then writes. A server
/// dry run prints the object the server would store, said `done` "(server dry run)".
async fn ask_and_write(
    resolved: &Resolved,
    what: &str,
    server_dry_run: bool,
    done: &str,
    write: impl std::future::Future<Output = Result<StatefulSetMigration>>,
) -> Result<Written> {
    if !server_dry_run {
        output::confirm(&format!("ask {what}"), resolved.yes)?;
    }
    let written = write.await?;
    if server_dry_run {
        output::print(
            &Shown {
                resource: &written,
                done: &format!("{done} (server dry run)"),
            },
            resolved.output,
        )?;
        return Ok(Written::ShownDryRun);
    }
    output::log(0, format!("asked {what}"));
    Ok(Written::Generation(written.metadata.generation))
}

/// The Secrets holding the members' kubeconfigs that the management namespace lacks, each said
/// with the command that creates it.
async fn missing_secrets(
    management: &Cluster,
    namespace: &str,
    resource: &StatefulSetMigration,
) -> Result<Vec<String>> {
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), namespace);
    let mut missing = Vec::new();
    for (role, member) in [
        ("source", &resource.spec.source),
        ("destination", &resource.spec.destination),
    ] {
        let (name, _, key) = member.secret();
        let found = management
            .call(
                "read a member cluster's kubeconfig Secret",
                secrets.get_metadata_opt(&name),
            )
            .await?;
        if found.is_none() {
            missing.push(format!(
                "no Secret {name} in namespace {namespace} of {}: the controller reads the {role}'s kubeconfig ({}) from it. Create it with: kubectl --context {} -n {namespace} create secret generic {name} --from-file={key}=<a kubeconfig for {}>",
                management.context, member.name, management.context, member.name
            ));
        }
    }
    Ok(missing)
}

/// A 404 on the resource's own API means the CRD is not installed.
fn not_installed(e: Error, management: &Cluster) -> Error {
    match &e {
        Error::Cluster { source, .. } if cluster::is_status(source, 404) => Error::Failed {
            message: format!(
                "the StatefulSetMigration API is not installed in {}: install the CRDs and the controller with `kubectl --context {} apply -k deploy/` (README: Run it in a cluster)",
                management.context, management.context
            ),
        },
        _ => e,
    }
}

/// Two specs that differ only in their direction.
fn same_but_direction(
    a: &crate::controller::api::StatefulSetMigrationSpec,
    b: &crate::controller::api::StatefulSetMigrationSpec,
) -> bool {
    let mut a = a.clone();
    a.rollback = b.rollback;
    a == *b
}

/// The Ready condition's message: what the controller says of the migration.
fn ready_message(status: &StatefulSetMigrationStatus) -> Option<String> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.message.clone())
}

/// What following the resource comes to, given its latest state.
#[derive(Debug, PartialEq)]
enum Followed {
    Going,
    Done,
    Paused(String),
    Failed(String),
}

/// PURE: where the migration stands for someone who asked for `generation` going `rollback`
/// way. A status of an older generation says nothing yet.
fn followed(
    status: Option<&StatefulSetMigrationStatus>,
    generation: Option<i64>,
    rollback: bool,
) -> Followed {
    let Some(status) = status else {
        return Followed::Going;
    };
    if status.observed_generation < generation {
        return Followed::Going;
    }
    let said = || {
        status
            .last_error
            .clone()
            .or_else(|| ready_message(status))
            .unwrap_or_default()
    };
    match status.phase {
        Some(Phase::Completed) if !rollback => Followed::Done,
        Some(Phase::RolledBack) if rollback => Followed::Done,
        Some(Phase::Paused) => Followed::Paused(said()),
        Some(Phase::Failed) => Followed::Failed(said()),
        _ => Followed::Going,
    }
}

/// Follows the resource until the controller says it is done, paused or failed, drawing its
/// progress; Ctrl-C stops following.
async fn follow(
    api: &Api<StatefulSetMigration>,
    name: &str,
    (generation, rollback): (Option<i64>, bool),
    resume: &str,
    status_command: &str,
) -> Result<StatefulSetMigration> {
    let title = format!("{name} (in the cluster)");
    let bar = output::progress(&title, |_| Vec::new());
    let (stop, mut stopped) = mpsc::unbounded_channel();
    let _caught = crate::interrupt::catching(move || {
        let _ = stop.send(());
    });
    let mut changes = watcher::watch_object(api.clone(), name).boxed();
    let mut last_step = None;
    loop {
        let change = tokio::select! {
            change = changes.next() => change,
            _ = stopped.recv() => {
                bar.finish_and_clear();
                return Err(Error::Stopped {
                    reason: format!("stopped following {name}; the controller goes on with it"),
                    resume: resume.to_string(),
                });
            }
        };
        let resource = match change {
            Some(Ok(Some(resource))) => resource,
            Some(Ok(None)) => {
                bar.finish_and_clear();
                return Err(Error::Failed {
                    message: format!(
                        "StatefulSetMigration {name} was deleted while it was followed; the controller stopped it at a safe point. See where it stands with:\n  {status_command}"
                    ),
                });
            }
            // The watcher retries on its own; say why it waits.
            Some(Err(e)) => {
                bar.set_message(format!(
                    "waiting for the management cluster: {}",
                    cluster::describe_watch_error(&e)
                ));
                continue;
            }
            // kube's object watch retries for ever; should it still end, say so rather than spin.
            None => {
                bar.finish_and_clear();
                return Err(Error::Failed {
                    message: format!(
                        "the watch of StatefulSetMigration {name} on the management cluster ended; the controller goes on with it. Follow it again with:\n  {resume}"
                    ),
                });
            }
        };
        let status = resource.status.clone().unwrap_or_default();
        let moved = status.ordinals_moved.unwrap_or(0).max(0) as u64;
        let left = status.ordinals_left.unwrap_or(0).max(0) as u64;
        bar.set_length(moved + left);
        bar.set_position(if rollback { left } else { moved });
        if status.current_step != last_step {
            if let Some(step) = &status.current_step {
                bar.set_message(step.clone());
            }
            last_step = status.current_step.clone();
        }
        match followed(resource.status.as_ref(), generation, rollback) {
            Followed::Going => continue,
            Followed::Done => {
                bar.finish_and_clear();
                return Ok(resource);
            }
            Followed::Paused(why) => {
                bar.finish_and_clear();
                return Err(Error::Stopped {
                    reason: format!("the controller paused {name}: {why}"),
                    resume: resume.to_string(),
                });
            }
            Followed::Failed(why) => {
                bar.finish_and_clear();
                return Err(Error::Failed {
                    message: format!(
                        "the controller stopped {name} on an error and tries again: {why}\nFollow it again with:\n  {resume}"
                    ),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(generation: i64, phase: Phase) -> StatefulSetMigrationStatus {
        StatefulSetMigrationStatus {
            observed_generation: Some(generation),
            phase: Some(phase),
            last_error: Some("member km-b unreachable".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_status_of_an_older_spec_says_nothing_yet() {
        let done = status(1, Phase::Completed);
        assert_eq!(followed(Some(&done), Some(2), true), Followed::Going);
        assert_eq!(followed(None, Some(1), false), Followed::Going);
    }

    #[test]
    fn done_is_the_phase_of_the_direction_asked() {
        assert_eq!(
            followed(Some(&status(2, Phase::Completed)), Some(2), false),
            Followed::Done
        );
        assert_eq!(
            followed(Some(&status(2, Phase::Completed)), Some(2), true),
            Followed::Going
        );
        assert_eq!(
            followed(Some(&status(2, Phase::RolledBack)), Some(2), true),
            Followed::Done
        );
        assert_eq!(
            followed(Some(&status(2, Phase::Failed)), Some(2), false),
            Followed::Failed("member km-b unreachable".into())
        );
        assert!(matches!(
            followed(Some(&status(3, Phase::Paused)), Some(2), false),
            Followed::Paused(_)
        ));
    }
}
