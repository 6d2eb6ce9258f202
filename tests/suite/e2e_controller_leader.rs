//! Two controller replicas elect a leader on a Lease in km-c: one reconciles, the other stands
//! by; when the leader is killed (kill -9: no lease given back), the other takes over once the
//! lease has gone unrenewed for its duration, and completes the migration.
use crate::support;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::e2e_controller::{Controller, apply, condition, wait_condition};
use super::e2e_controller_gates::{LIMIT, Scene};
use support::poll_until;
use support::sts::assert_moved;

/// The holder of the leader-election Lease, if any.
async fn leader(leases: &Api<Lease>) -> Option<String> {
    let lease = leases
        .get_opt(kubectl_migrate::controller::LEADER_LEASE)
        .await
        .unwrap()?;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

/// The pid in a holder identity `kubectl-migrate-controller/HOST/PID/RANDOM`.
fn pid_of(holder: &str) -> Option<u32> {
    let parts: Vec<&str> = holder.rsplitn(3, '/').collect();
    parts.get(1)?.parse().ok()
}

fn leads(controller: &Controller) -> bool {
    controller
        .answer("/metrics")
        .lines()
        .any(|l| l == "kubectl_migrate_controller_leader 1")
}

#[tokio::test]
async fn of_two_replicas_one_leads_and_the_other_takes_over_when_it_is_killed() {
    let scene = Scene::new("ctl-leader").await;
    let first = Controller::start(&scene.home.name).await;
    let leases: Api<Lease> = Api::namespaced(scene.c.clone(), &scene.home.name);
    poll_until(LIMIT, "the first replica to lead", || async {
        leader(&leases).await.and_then(|h| pid_of(&h)) == Some(first.pid())
    })
    .await;
    let second = Controller::start(&scene.home.name).await;
    // The second stands by: ready (see controller/http.rs), not leading.
    assert_eq!(second.answer("/readyz"), "ok: standing by to lead\n");
    assert_eq!(first.answer("/readyz"), "ok: leading\n");
    assert!(leads(&first) && !leads(&second));

    apply(&scene.home.name, "led", scene.spec(serde_json::json!({})));
    scene.gate.wait_checking(2, &first).await;
    let standby = second.answer("/metrics");
    assert!(
        standby
            .lines()
            .any(|l| l == "kubectl_migrate_controller_reconciles_total 0"),
        "the standby reconciled:\n{standby}"
    );
    // The leader dies without giving anything back.
    let mut first = first;
    first.signal("KILL");
    let killed = Instant::now();
    let _ = first.exited_within(Duration::from_secs(30));
    scene.gate.release([0, 1, 2]);
    poll_until(LIMIT, "the second replica to lead", || async {
        leader(&leases).await.and_then(|h| pid_of(&h)) == Some(second.pid())
    })
    .await;
    let took = killed.elapsed();
    // The lease lasts 15 s after its last renewal as the standby saw it, looked at every 2 s.
    assert!(
        took < Duration::from_secs(15 + 2 + 10),
        "took over after {took:?}\n{}",
        second.log()
    );
    assert!(second.log().contains("leading:"), "{}", second.log());
    let done = wait_condition(&scene.api(), "led", "Ready", "True", LIMIT, &second).await;
    assert_eq!(condition(&done, "Ready").reason, "Completed");
    assert!(
        done.status
            .as_ref()
            .and_then(|s| s.lease_holder.as_deref())
            .and_then(pid_of)
            == Some(second.pid()),
        "{:?}",
        done.status
    );
    assert_eq!(second.answer("/readyz"), "ok: leading\n");
    assert!(leads(&second));
    assert_moved(&scene.pair, &scene.before, 3).await;
    scene.observer.assert_never_split();
}
