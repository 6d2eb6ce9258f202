//! Two controller replicas elect a leader on a Lease in km-c: one reconciles, the other stands
//! by; when the leader is killed (kill -9: no lease given back), the other takes over once the
//! lease has gone unrenewed for its duration, and completes the migration.
use crate::support;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;

use super::e2e_controller::{Controller, apply, condition, wait_condition};
use super::e2e_controller_gates::{LIMIT, Scene};
use support::poll_until;
use support::sts::assert_moved;

/// The leader-election Lease as it is now; `None` also when km-c did not answer (looked at
/// again by the polls).
async fn lease(leases: &Api<Lease>) -> Option<LeaseSpec> {
    let lease = leases
        .get_opt(kubectl_migrate::controller::LEADER_LEASE)
        .await
        .ok()??;
    lease.spec
}

/// The leader-election Lease, read again until km-c answers (within [`LIMIT`]).
async fn lease_answered(leases: &Api<Lease>) -> LeaseSpec {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(spec) = lease(leases).await {
            return spec;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "km-c did not show the leader-election Lease within {LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The holder of the leader-election Lease, if any.
async fn leader(leases: &Api<Lease>) -> Option<String> {
    lease(leases)
        .await?
        .holder_identity
        .filter(|h| !h.is_empty())
}

/// The instant a Lease field records.
fn at(time: Option<&MicroTime>) -> k8s_openapi::jiff::Timestamp {
    time.expect("the Lease records the time").0
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
    // Leading once the Lease names it and it says so (it sets /readyz when the write returns).
    poll_until(LIMIT, "the first replica to lead", || async {
        leader(&leases).await.and_then(|h| pid_of(&h)) == Some(first.pid())
            && first.answer("/readyz") == "ok: leading\n"
    })
    .await;
    let second = Controller::start(&scene.home.name).await;
    // The second stands by: ready (see controller/http.rs), not leading.
    assert_eq!(second.answer("/readyz"), "ok: standing by to lead\n");
    assert!(leads(&first) && !leads(&second));

    apply(&scene.home.name, "led", scene.spec(serde_json::json!({})));
    scene.gate.wait_checking(2, &first).await;
    let standby = second.answer("/metrics");
    assert!(
        standby
            .lines()
            .any(|l| l == "kubectl_migrate_controller_reconciles_total 0"),
        "the standby reconciled:\n{standby}\nits log:\n{}",
        second.log()
    );
    assert!(
        leads(&first),
        "the first replica stopped leading before it was killed; its log:\n{}",
        first.log()
    );
    // The leader dies without giving anything back.
    let mut first = first;
    first.signal("KILL");
    let _ = first.exited_within(Duration::from_secs(30));
    let last = lease_answered(&leases).await;
    scene.gate.release([0, 1, 2]);
    poll_until(LIMIT, "the second replica to lead", || async {
        leader(&leases).await.and_then(|h| pid_of(&h)) == Some(second.pid())
    })
    .await;
    // Judged by the Lease's own record, not by how fast this test looks: the standby took it
    // once it had seen no renewal for the lease duration (15 s), looking every 2 s, plus what
    // its reads take on a busy server.
    let taken = lease_answered(&leases).await;
    let silent = at(taken.acquire_time.as_ref()).duration_since(at(last.renew_time.as_ref()));
    let silent = Duration::try_from(silent).unwrap_or_default();
    eprintln!("leader: taken over {silent:?} after the last renewal");
    let explain = || {
        format!(
            "last renewal {last:?}, taken {taken:?}\nstandby log:\n{}",
            second.log()
        )
    };
    assert!(
        silent >= Duration::from_secs(15),
        "taken over early, {silent:?} after the last renewal: {}",
        explain()
    );
    assert!(
        silent < Duration::from_secs(15 + 2 + 8),
        "taken over {silent:?} after the last renewal: {}",
        explain()
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
