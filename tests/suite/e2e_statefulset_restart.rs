//! The destination's kube-apiserver restarts in the middle of a migration. The tool either
//! retries through the outage or stops resumably with a clear message; either way the next run
//! completes and no ordinal ever runs in both clusters. (The destination is the outage cluster,
//! so that the outage does not disturb other tests.)
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use support::sts::{Pair, SplitBrainObserver, migrate_to, run, state_dir, stderr};
use support::{CONTEXT_OUTAGE, OUTAGE_CLUSTER, take_outage_cluster};

#[tokio::test]
async fn a_destination_apiserver_restart_mid_run_is_survived_or_resumable() {
    let _outage = take_outage_cluster().await;
    let pair = Pair::to("restart", CONTEXT_OUTAGE).await;
    pair.create_set(5, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.claims(false).await;
    let observer = SplitBrainObserver::start_to(pair.ns(), CONTEXT_OUTAGE);
    let ns = pair.ns().to_string();
    let (status, err, restarted) = tokio::task::spawn_blocking(move || {
        let mut child = migrate_to(
            &ns,
            CONTEXT_OUTAGE,
            &["--yes", "-o", "json", "--health-check", "sleep 0.3"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stderr_pipe, &mut s).unwrap();
            s
        });
        let mut restarted = false;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let event: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            if !restarted && event["event"] == "step-finished" && event["step"] == "verify" {
                restarted = true;
                let out = Command::new(
                    env!("CARGO_MANIFEST_DIR").to_string() + "/tests/cluster/restart-apiserver.sh",
                )
                .args([OUTAGE_CLUSTER, "3"])
                .env("KM_CLUSTERS_DIR", state_dir())
                .output()
                .unwrap();
                assert!(
                    out.status.success(),
                    "restart failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        (child.wait().unwrap(), err_reader.join().unwrap(), restarted)
    })
    .await
    .unwrap();
    assert!(restarted, "the run ended before the restart point");
    eprintln!("first run: {status}\n{err}");
    if !status.success() {
        assert!(
            err.contains(CONTEXT_OUTAGE) && (err.contains("resume") || err.contains("Resume")),
            "an unclear stop: {err}"
        );
        let out = run(migrate_to(
            pair.ns(),
            CONTEXT_OUTAGE,
            &["--yes", "--health-check", "sleep 0.3"],
        ));
        assert!(
            out.status.success(),
            "the resumed run failed: {}",
            stderr(&out)
        );
    } else {
        assert!(err.contains("retrying"), "the outage went unnoticed: {err}");
    }
    pair.wait_ready(true, 5).await;
    assert_eq!(pair.claims(true).await, before);
    observer.assert_never_split();
}
