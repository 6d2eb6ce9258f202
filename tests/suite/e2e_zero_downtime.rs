//! Zero downtime, measured on a real replicated database (issue 33): etcd members as real
//! processes (the pod runner), moved from km-a to km-b by the plugin while clients write and read.
//! The full figures, with the baselines, are in benches/zero_downtime.rs.
use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use proptest::prelude::*;
use serde_json::json;

use support::zero_downtime::database::{Database, Options, SET, is_ready};
use support::zero_downtime::load::{Outcome, Records, Request, Summary};
use support::zero_downtime::manual_kep::{Kubectl as _, ManualKep};
use support::zero_downtime::migration::{Kubectl, Measurement, Plugin, measure};
use support::zero_downtime::process_spec::{
    HttpProbe, Placement, ProcessSpec, Readiness, expand, rewrite_mounts,
};
use support::zero_downtime::runner::{self, PROCESS_READY, RUNNER_LABEL, SPLIT_BRAIN};
use support::zero_downtime::{self, Clusters, wait_until};
use support::{CONTEXT_A, CONTEXT_B};

fn clusters() -> Clusters {
    Clusters::connect(
        &support::kubeconfig_path(),
        &support::cluster_bin_dir(),
        CONTEXT_A,
        CONTEXT_B,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn runner_id(what: &str) -> String {
    format!("{what}-{}", support::unique_suffix())
}

/// The acceptance: the plugin moves a 3-member etcd from km-a to km-b while clients write and
/// read through every member, then moves it back with `--rollback`; each move completes, every
/// acknowledged write is still there, no read missed an acknowledged write, and no data directory
/// was ever opened twice. (The SIGKILLed and `--batch auto` moves, and the baselines, are in
/// benches/zero_downtime.rs: they take minutes.)
#[test]
fn etcd_moved_by_the_plugin_and_back_keeps_every_acknowledged_write() {
    let clusters = clusters();
    let runner = clusters
        .start_runner(&runner_id("accept"))
        .unwrap_or_else(|e| panic!("{e}"));
    let db =
        Database::create(&clusters, &runner, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let logs = runner.log_dir().join("plugin");
    for mut plugin in [
        Plugin::new("plugin", &[], logs.clone()),
        Plugin::new("plugin --rollback", &["--rollback"], logs.clone()),
    ] {
        let m = measure(&db, &runner, &mut plugin).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("zero-downtime: {}", m.summary());
        assert_no_harm(&m);
    }
    // Every member ran in both clusters: the runner, not KWOK, made the pods Ready.
    let ran: BTreeMap<(String, String), usize> =
        runner
            .processes()
            .iter()
            .fold(BTreeMap::new(), |mut ran, life| {
                *ran.entry((life.pod.context.clone(), life.pod.name.clone()))
                    .or_default() += 1;
                ran
            });
    for k in 0..db.members {
        for context in [CONTEXT_A, CONTEXT_B] {
            assert!(
                ran.contains_key(&(context.to_string(), format!("{SET}-{k}"))),
                "no process ran for {SET}-{k} in {context}: {ran:?}"
            );
        }
    }
    db.tear_down(false).unwrap_or_else(|e| panic!("{e}"));
    runner.stop();
}

/// What every move by the plugin must show: writes acknowledged, none lost or changed, no read
/// that missed one, no data directory opened twice.
fn assert_no_harm(m: &Measurement) {
    assert!(
        m.verification.acked > 0,
        "{}: no write was acknowledged",
        m.name
    );
    assert_eq!(
        m.verification.lost,
        Vec::<u64>::new(),
        "{}: acknowledged writes lost",
        m.name
    );
    assert_eq!(
        m.verification.corrupt,
        Vec::<u64>::new(),
        "{}: writes read back with another value",
        m.name
    );
    assert_eq!(
        m.load.stale_reads,
        Vec::<String>::new(),
        "{}: reads that missed an acknowledged write",
        m.name
    );
    assert!(
        m.refusals.is_empty() && m.overlaps.is_empty(),
        "{}: a data directory was opened twice: refusals {:?}, overlaps {:?}",
        m.name,
        m.refusals,
        m.overlaps
    );
}

/// The split-brain detector: the manual procedure with its first step left out (member 2 started
/// in km-b on a copy of its claim while it still runs in km-a) gets no second process. The runner
/// refuses, says so, and keeps the pod out of Ready; once the member leaves km-a, it starts in km-b.
#[test]
fn the_runner_refuses_a_second_process_on_a_data_directory_in_use() {
    let clusters = clusters();
    let runner = clusters
        .start_runner(&runner_id("detector"))
        .unwrap_or_else(|e| panic!("{e}"));
    let db =
        Database::create(&clusters, &runner, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let kep = ManualKep {
        namespace: &db.namespace,
        set: SET,
        claim_templates: &[zero_downtime::database::CLAIM_TEMPLATE],
        replicas: db.members,
        source: CONTEXT_A,
        destination: CONTEXT_B,
    };
    let mut kubectl = Kubectl {
        clusters: &clusters,
        calls: 0,
    };
    let moving = db.members - 1;
    let protected = kep
        .protect(&mut kubectl, moving)
        .unwrap_or_else(|e| panic!("{e}"));
    kep.copy(&mut kubectl, protected)
        .unwrap_or_else(|e| panic!("{e}"));
    kep.create_destination(&mut kubectl, 1, moving)
        .unwrap_or_else(|e| panic!("{e}"));

    let pod = format!("{SET}-{moving}");
    wait_until(
        Duration::from_secs(60),
        "the detector to refuse the second start",
        || {
            if runner
                .refusals()
                .iter()
                .any(|r| r.pod.context == CONTEXT_B && r.pod.name == pod)
            {
                Ok(())
            } else {
                Err(format!("refusals so far: {:?}", runner.refusals()))
            }
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let refusal = runner
        .refusals()
        .into_iter()
        .find(|r| r.pod.context == CONTEXT_B)
        .expect("the refusal");
    assert!(
        refusal
            .holder
            .contains(&format!("{CONTEXT_A}/{}/{pod}", db.namespace)),
        "the refusal names the holder: {refusal:?}"
    );
    let log = std::fs::read_to_string(runner.log_dir().join("pod-runner.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains(SPLIT_BRAIN)
            && l.contains(&format!("{CONTEXT_B}/{}/{pod}", db.namespace))),
        "the runner's log says it loudly:\n{log}"
    );
    let pods_b: Api<Pod> = Api::namespaced(clusters.client(CONTEXT_B), &db.namespace);
    let in_b = clusters.block_on(pods_b.get(&pod)).unwrap();
    let gate = in_b
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == PROCESS_READY))
        .cloned();
    assert_eq!(
        gate.as_ref()
            .map(|g| (g.status.as_str(), g.reason.as_deref())),
        Some(("False", Some("DataDirInUse"))),
        "the refused pod's gate: {gate:?}"
    );
    assert!(!is_ready(&in_b), "the refused pod is not Ready");
    let on_dir: Vec<_> = runner
        .processes()
        .into_iter()
        .filter(|l| l.dirs.contains(&refusal.dir))
        .collect();
    assert_eq!(
        on_dir.len(),
        1,
        "one process on {}: {on_dir:?}",
        refusal.dir.display()
    );

    // The member leaves km-a: now it may start in km-b, and the database is whole again.
    kubectl
        .call(
            CONTEXT_A,
            &[
                "-n",
                &db.namespace,
                "scale",
                &format!("statefulset/{SET}"),
                &format!("--replicas={moving}"),
            ],
            None,
            false,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    wait_until(
        Duration::from_secs(120),
        &format!("{pod} Ready in {CONTEXT_B}"),
        || match clusters.block_on(pods_b.get_opt(&pod)) {
            Ok(Some(p)) if is_ready(&p) => Ok(()),
            other => Err(format!("{:?}", other.map(|p| p.and_then(|p| p.status)))),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runner.overlaps(), Vec::<String>::new());
    db.tear_down(false).unwrap_or_else(|e| panic!("{e}"));
    runner.stop();
}

/// KWOK (with tests/cluster/pod-runner-stages.yaml) makes a runner pod Ready only while its gate
/// condition is True, as the kubelet does with readiness gates, and leaves its deletion to the
/// runner. No runner here: the test sets the gate itself.
#[test]
fn kwok_makes_a_runner_pod_ready_only_while_its_gate_is_true() {
    let clusters = clusters();
    let client = clusters.client(CONTEXT_A);
    let name = format!("zd-gate-{}", support::unique_suffix());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    clusters
        .block_on(Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace))
        .unwrap();
    let _cleanup = support::TestNamespace::create_named_existing(CONTEXT_A, &name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &name);
    wait_until(
        Duration::from_secs(90),
        "the default ServiceAccount",
        || {
            clusters
                .block_on(
                    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
                        client.clone(),
                        &name,
                    )
                    .get_opt("default"),
                )
                .map_err(|e| e.to_string())?
                .map(|_| ())
                .ok_or_else(|| "not yet".to_string())
        },
    )
    .unwrap();
    let pod = |name: &str, labels: serde_json::Value| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"readinessGates": [{"conditionType": PROCESS_READY}],
                     "containers": [{"name": "app", "image": "registry.example/app:1"}]}
        }))
        .unwrap()
    };
    // Nobody runs this label value: the gate stays as the test sets it.
    let runner_pod = pod("gated", json!({RUNNER_LABEL: "no-runner"}));
    let kwok_pod = pod("plain", json!({}));
    for p in [&runner_pod, &kwok_pod] {
        clusters
            .block_on(pods.create(&PostParams::default(), p))
            .unwrap();
    }
    let condition = |pod: &Pod, type_: &str| -> Option<(String, Option<String>)> {
        pod.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status.clone(), c.reason.clone()))
    };
    let phase = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default()
    };
    let wait_for = |what: &str, check: &dyn Fn(&Pod) -> bool| {
        wait_until(Duration::from_secs(60), what, || {
            let p = clusters
                .block_on(pods.get("gated"))
                .map_err(|e| e.to_string())?;
            if check(&p) {
                Ok(())
            } else {
                Err(format!("{:?}", p.status))
            }
        })
        .unwrap_or_else(|e| panic!("{e}"))
    };
    // KWOK's own stage makes a pod Running and Ready (and every gate True) in one patch; the
    // runner's stage makes it Running and not Ready.
    wait_for("the gated pod Running", &|p| phase(p) == "Running");
    let p = clusters.block_on(pods.get("gated")).unwrap();
    assert_eq!(
        condition(&p, "Ready"),
        Some(("False".into(), Some("ReadinessGatesNotReady".into()))),
        "Running without its gate, yet Ready: is KWOK started with tests/cluster/pod-runner-stages.yaml \
         (tests/cluster/start.sh)? {:?}",
        p.status
    );
    assert_eq!(
        condition(&p, PROCESS_READY),
        None,
        "KWOK set the runner's gate itself"
    );
    let set_gate = |status: &str| {
        let patch = json!({"status": {"conditions": [{"type": PROCESS_READY, "status": status}]}});
        clusters
            .block_on(pods.patch_status(
                "gated",
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            ))
            .unwrap();
    };
    set_gate("True");
    wait_for("Ready once the gate is True", &|p| is_ready(p));
    set_gate("False");
    wait_for("not Ready once the gate is False", &|p| {
        !is_ready(p) && phase(p) == "Running"
    });

    // Deleted together: KWOK finishes the plain pod at once, the gated one waits for its runner.
    for p in ["gated", "plain"] {
        clusters
            .block_on(pods.delete(p, &DeleteParams::default()))
            .unwrap();
    }
    wait_until(
        Duration::from_secs(60),
        "KWOK to delete the plain pod",
        || match clusters
            .block_on(pods.get_opt("plain"))
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(_) => Err("still there".into()),
        },
    )
    .unwrap();
    let gated = clusters.block_on(pods.get_opt("gated")).unwrap();
    assert!(
        gated.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "KWOK deleted the runner's pod, which only its runner may finish"
    );
    clusters
        .block_on(pods.delete(
            "gated",
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        ))
        .unwrap();
}

// --- the harness's pure parts ----------------------------------------------------------------

#[test]
fn expansion_follows_the_kubelet() {
    let vars = |name: &str| match name {
        "A" => Some("x".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    for (input, want) in [
        ("$(A)", "x"),
        ("a-$(A)-b", "a-x-b"),
        ("$(A)$(A)", "xx"),
        ("$(EMPTY)", ""),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$x"),
        ("$(A", "$(A"),
        ("$A", "$A"),
        ("$", "$"),
        ("a$", "a$"),
        ("$()", "$()"),
        ("no refs", "no refs"),
        ("ü$(A)ü", "üxü"),
    ] {
        assert_eq!(expand(input, &vars), want, "expanding {input:?}");
    }
}

#[test]
fn paths_under_a_mount_move_to_its_host_path() {
    let mounts = vec![("/var/lib/etcd".to_string(), PathBuf::from("/h/pv-01"))];
    for (input, want) in [
        ("/var/lib/etcd", "/h/pv-01"),
        ("/var/lib/etcd/data", "/h/pv-01/data"),
        ("--data-dir=/var/lib/etcd/data", "--data-dir=/h/pv-01/data"),
        ("/var/lib/etcdx", "/var/lib/etcdx"),
        ("--data-dir=/elsewhere", "--data-dir=/elsewhere"),
        ("name=/var/lib/etcd", "name=/var/lib/etcd"),
        ("http://127.0.0.1:2379", "http://127.0.0.1:2379"),
    ] {
        assert_eq!(rewrite_mounts(input, &mounts), want, "rewriting {input:?}");
    }
}

#[test]
fn the_etcd_member_runs_as_its_pod_says() {
    let set = zero_downtime::database::statefulset("ns1", "r1", 57, 3);
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "db-1", "namespace": "ns1",
                     "labels": set["spec"]["template"]["metadata"]["labels"],
                     "annotations": set["spec"]["template"]["metadata"]["annotations"]},
        "spec": set["spec"]["template"]["spec"]
    }))
    .unwrap();
    pod.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("apps.kubernetes.io/pod-index".into(), "1".into());
    pod.spec.as_mut().unwrap().volumes = Some(vec![
        serde_json::from_value(
            json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}}),
        )
        .unwrap(),
    ]);
    let volumes = BTreeMap::from([("data".to_string(), PathBuf::from("/h/pv-07"))]);
    let bin = std::env::temp_dir().join(format!("zd-bin-{}", support::unique_suffix()));
    std::fs::create_dir_all(&bin).unwrap();
    let etcd = bin.join("etcd");
    std::fs::write(&etcd, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&etcd, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ip = runner::pod_ip(57, 1);
    let spec = ProcessSpec::for_pod(
        &pod,
        &Placement {
            volumes: &volumes,
            pod_ip: Some(ip),
            program_dirs: std::slice::from_ref(&bin),
        },
    )
    .unwrap();
    std::fs::remove_dir_all(&bin).unwrap();
    assert_eq!(spec.program, etcd);
    for arg in [
        "--name=db-1",
        "--data-dir=/h/pv-07/data",
        "--listen-peer-urls=http://127.57.1.1:2380",
        "--advertise-client-urls=http://127.57.1.1:2379",
        "--initial-cluster=db-0=http://127.57.0.1:2380,db-1=http://127.57.1.1:2380,db-2=http://127.57.2.1:2380",
        "--initial-cluster-token=ns1",
    ] {
        assert!(
            spec.args.iter().any(|a| a == arg),
            "{arg} in {:?}",
            spec.args
        );
    }
    assert_eq!(
        spec.env,
        vec![
            ("POD_NAME".to_string(), "db-1".to_string()),
            ("POD_IP".to_string(), "127.57.1.1".to_string())
        ]
    );
    let probe = spec.readiness.unwrap();
    assert_eq!(probe.url, "http://127.57.1.1:2379/health");
    assert_eq!(
        (probe.period, probe.failure_threshold),
        (Duration::from_secs(1), 3)
    );
    assert_eq!(spec.grace, Duration::from_secs(30));

    // What the runner cannot place, it says in words.
    pod.spec.as_mut().unwrap().containers[0]
        .env
        .as_mut()
        .unwrap()[0] = serde_json::from_value(
        json!({"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}),
    )
    .unwrap();
    let refused = ProcessSpec::for_pod(
        &pod,
        &Placement {
            volumes: &volumes,
            pod_ip: Some(ip),
            program_dirs: &[],
        },
    );
    assert!(refused.unwrap_err().contains("fieldRef only"));
}

#[test]
fn readiness_needs_its_thresholds_in_a_row() {
    let probe = HttpProbe {
        url: String::new(),
        initial_delay: Duration::ZERO,
        period: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        success_threshold: 2,
        failure_threshold: 3,
    };
    let mut r = Readiness::new();
    let verdicts: Vec<Option<bool>> = [
        true, false, true, true, false, false, true, false, false, false,
    ]
    .into_iter()
    .map(|ok| r.observe(ok, &probe))
    .collect();
    assert_eq!(
        verdicts,
        vec![
            None,
            None,
            None,
            Some(true),
            None,
            None,
            None,
            None,
            None,
            Some(false)
        ]
    );
}

proptest! {
    /// Whatever the writes' times and outcomes: the longest gap is the largest distance between
    /// two acknowledgements in a row, every write is counted once, and every failed write lies
    /// in an error window.
    #[test]
    fn the_summary_holds_for_any_run_of_writes(
        writes in proptest::collection::vec((0u64..5_000, 0u64..500, any::<bool>()), 0..40)
    ) {
        let ms = Duration::from_millis;
        let mut requests: Vec<Request> = writes
            .iter()
            .enumerate()
            .map(|(seq, &(sent, took, ok))| Request {
                seq: seq as u64,
                endpoint: 0,
                sent: ms(sent),
                done: ms(sent + took),
                outcome: if ok { Outcome::Ok } else { Outcome::Failed("refused".into()) },
            })
            .collect();
        // As the load records them: in the order they were sent.
        requests.sort_by_key(|r| r.sent);
        let records = Records { writes: requests.clone(), reads: vec![], ran: ms(6_000) };
        let summary = Summary::of(&records);
        let mut acks: Vec<u64> = writes.iter().filter(|w| w.2).map(|w| w.0 + w.1).collect();
        acks.sort();
        let longest = acks.windows(2).map(|pair| pair[1] - pair[0]).max().unwrap_or(0);
        prop_assert_eq!(summary.longest_gap, ms(longest));
        prop_assert_eq!(summary.writes_acked + summary.writes_failed, writes.len());
        for failed in requests.iter().filter(|r| r.outcome != Outcome::Ok) {
            prop_assert!(
                summary
                    .error_windows
                    .iter()
                    .any(|(from, to)| *from <= failed.sent && failed.sent <= *to),
                "write {} sent at {} ms is in no error window",
                failed.seq,
                failed.sent.as_millis()
            );
        }
    }
}

#[test]
fn the_summary_measures_the_longest_time_without_an_acknowledged_write() {
    let ms = Duration::from_millis;
    let write = |seq, sent, done, ok: bool| Request {
        seq,
        endpoint: 0,
        sent: ms(sent),
        done: ms(done),
        outcome: if ok {
            Outcome::Ok
        } else {
            Outcome::Failed("refused".into())
        },
    };
    let records = Records {
        writes: vec![
            write(1, 0, 10, true),
            write(2, 20, 30, true),
            write(3, 40, 45, false),
            write(4, 50, 2050, false),
            write(5, 2060, 2070, true),
            write(6, 2080, 2090, true),
        ],
        reads: vec![],
        ran: ms(2100),
    };
    let s = Summary::of(&records);
    assert_eq!((s.writes_acked, s.writes_failed), (4, 2));
    assert_eq!((s.longest_gap, s.longest_gap_at), (ms(2040), ms(30)));
    assert_eq!(s.error_windows, vec![(ms(40), ms(2070))]);
}

#[test]
fn overlapping_processes_on_one_directory_are_found() {
    // In the past, so that the lives still running (no exit) began before now.
    let start = std::time::Instant::now() - Duration::from_secs(60);
    let life = |name: &str, dir: &str, from: u64, to: Option<u64>| runner::ProcessLife {
        pod: runner::PodRef {
            context: "km-a".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: "u".into(),
        },
        dirs: vec![PathBuf::from(dir)],
        pid: 1,
        started: start + Duration::from_secs(from),
        exited: to.map(|t| start + Duration::from_secs(t)),
        exit: None,
    };
    assert!(runner::overlaps(&[life("a", "/d", 0, Some(5)), life("b", "/d", 5, None)]).is_empty());
    assert!(runner::overlaps(&[life("a", "/d", 0, Some(5)), life("b", "/e", 1, None)]).is_empty());
    assert_eq!(
        runner::overlaps(&[life("a", "/d", 0, Some(5)), life("b", "/d", 4, Some(9))]).len(),
        1
    );
    assert_eq!(
        runner::overlaps(&[life("a", "/d", 0, None), life("b", "/d", 4, None)]).len(),
        1
    );
}
