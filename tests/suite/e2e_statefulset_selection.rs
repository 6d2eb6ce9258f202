//! `kubectl migrate statefulset -l SELECTOR --parallel 2`: three StatefulSets move, two at a
//! time, each with its own journal and lease; the tool is killed mid-way and the same command
//! run again completes all three; a set the selector does not match is left alone. Then the
//! whole selection is rolled back. On a terminal: one question for the selection, lines tagged
//! with their set, and the summary table as a person sees it.
use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::Api;
use kube::api::{ListParams, PostParams};
use support::pty::{Spawn, Term};
use support::sts::{Pair, SplitBrainObserver, json, plugin, run, stderr};
use support::{CONTEXT_A, CONTEXT_B, poll_until};

const SELECTED: [&str; 3] = ["db-1", "db-2", "db-3"];
const REPLICAS: i32 = 2;

async fn create_set(pair: &Pair, name: &str, tier: &str, replicas: i32) {
    let set: StatefulSet = json(serde_json::json!({
        "metadata": {"name": name, "labels": {"tier": tier}},
        "spec": {
            "serviceName": "web", "replicas": replicas, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }));
    pair.sets(false)
        .create(&PostParams::default(), &set)
        .await
        .unwrap();
}

/// Waits until `name` in one cluster has `replicas` Ready pods.
async fn wait_ready(pair: &Pair, in_b: bool, name: &str, replicas: i32) {
    let sets = pair.sets(in_b);
    poll_until(
        Duration::from_secs(90),
        &format!("{name} ready"),
        || async {
            let st = sets
                .get_opt(name)
                .await
                .unwrap()
                .and_then(|s| s.status)
                .unwrap_or_default();
            st.ready_replicas.unwrap_or(0) == replicas && st.replicas == replicas
        },
    )
    .await;
}

/// A pair whose source runs `names`, one Ready replica each, labelled `tier`.
async fn ready_sets(prefix: &str, tier: &str, names: &[&str]) -> Pair {
    let pair = Pair::new(prefix).await;
    for name in names {
        create_set(&pair, name, tier, 1).await;
    }
    for name in names {
        wait_ready(&pair, false, name, 1).await;
    }
    pair
}

/// The row of `name` in a summary table.
fn row(table: &str, name: &str) -> String {
    table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no row of {name}:\n{table}"))
        .to_string()
}

/// claim -> volume of the bound claims in one cluster.
async fn claim_volumes(pair: &Pair, in_b: bool) -> BTreeMap<String, String> {
    let client = if in_b { &pair.b } else { &pair.a };
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), pair.ns());
    claims
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| Some((c.metadata.name?, c.spec?.volume_name?)))
        .collect()
}

/// `statefulset -l SELECTOR -n NS --context km-a --to-context km-b`, then `extra`.
fn selection_argv<'a>(ns: &'a str, selector: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut argv = vec![
        "statefulset",
        "-l",
        selector,
        "-n",
        ns,
        "--context",
        CONTEXT_A,
        "--to-context",
        CONTEXT_B,
    ];
    argv.extend(extra);
    argv
}

/// The selection of the `db` tier, two at a time, without prompts, then `args`.
fn selection(ns: &str, args: &[&str]) -> Command {
    let mut cmd = plugin();
    cmd.args(selection_argv(ns, "tier=db", &["--parallel", "2", "--yes"]))
        .args(args);
    cmd
}

/// Runs the selection with -o json and SIGKILLs it once two sets have each finished a step and
/// four steps have finished in all. Returns the sets seen in the events before the kill.
fn run_until_both_started_then_kill(ns: &str) -> BTreeSet<String> {
    let mut child = selection(ns, &["-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut sets = BTreeSet::new();
    let mut finished = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let event: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(event["schemaVersion"], 1, "{line}");
        if event["event"] == "step-finished" {
            let set = event["statefulset"]
                .as_str()
                .unwrap_or_else(|| panic!("a step event without its set: {line}"));
            sets.insert(set.to_string());
            finished += 1;
            if sets.len() >= 2 && finished >= 4 {
                child.kill().unwrap();
                child.wait().unwrap();
                return sets;
            }
        }
        assert_ne!(
            event["event"], "summary",
            "the selection finished before it could be killed: {line}"
        );
    }
    panic!(
        "the run ended before two sets had moved: {:?}",
        child.wait()
    );
}

#[tokio::test]
async fn three_sets_move_two_at_a_time_survive_a_kill_and_roll_back_together() {
    let pair = Pair::new("select").await;
    for name in SELECTED {
        create_set(&pair, name, "db", REPLICAS).await;
    }
    create_set(&pair, "cache", "web", 1).await;
    for name in SELECTED {
        wait_ready(&pair, false, name, REPLICAS).await;
    }
    wait_ready(&pair, false, "cache", 1).await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(pair.a.clone(), pair.ns());
    poll_until(Duration::from_secs(60), "claims bound in A", || async {
        let list = claims.list(&ListParams::default()).await.unwrap().items;
        list.len() == SELECTED.len() * REPLICAS as usize + 1
            && list
                .iter()
                .all(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await;
    let before = claim_volumes(&pair, false).await;
    let observer = SplitBrainObserver::start(pair.ns());

    let ns = pair.ns().to_string();
    let seen = tokio::task::spawn_blocking(move || run_until_both_started_then_kill(&ns))
        .await
        .unwrap();
    assert!(
        seen.len() >= 2,
        "two sets run at the same time with --parallel 2: {seen:?}"
    );

    let out = run(selection(pair.ns(), &[]));
    assert!(out.status.success(), "the rerun failed: {}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("STATEFULSET") && header.contains("RESULT"),
        "{table}"
    );
    for name in SELECTED {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(name) && l.contains("succeeded")),
            "{name} missing from the summary:\n{table}"
        );
        wait_ready(&pair, true, name, REPLICAS).await;
        let source = pair.sets(false).get(name).await.unwrap();
        assert_eq!(source.spec.unwrap().replicas, Some(0), "{name} left in A");
    }
    assert!(!table.contains("cache"), "{table}");
    let cache = pair.sets(false).get("cache").await.unwrap();
    assert_eq!(
        cache.spec.unwrap().replicas,
        Some(1),
        "cache was not selected"
    );
    assert!(pair.sets(true).get_opt("cache").await.unwrap().is_none());
    let moved = claim_volumes(&pair, true).await;
    for (claim, volume) in &before {
        if claim.contains("cache") {
            continue;
        }
        assert_eq!(moved.get(claim), Some(volume), "{claim} in B");
    }

    // --status of the selection: each set's table under its name.
    let out = run(selection(pair.ns(), &["--status"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    for name in SELECTED {
        assert!(
            shown.contains(&format!("StatefulSet {name}:\n")),
            "{name} missing from: {shown}"
        );
    }

    // Back again, all three, each from its own journal.
    let out = run(selection(pair.ns(), &["--rollback"]));
    assert!(
        out.status.success(),
        "the rollback failed: {}",
        stderr(&out)
    );
    for name in SELECTED {
        wait_ready(&pair, false, name, REPLICAS).await;
        let destination = pair.sets(true).get_opt(name).await.unwrap();
        assert!(
            destination.is_none_or(|s| s.spec.unwrap().replicas == Some(0)),
            "{name} still runs in B"
        );
    }
    assert_eq!(claim_volumes(&pair, false).await, before);
    observer.assert_never_split();
}

#[test]
fn a_selector_that_matches_nothing_is_an_error_that_names_it() {
    let mut cmd = plugin();
    cmd.args(selection_argv(
        "default",
        "km-test=nothing-has-this",
        &["--yes"],
    ));
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no StatefulSet in km-a/default matches -l km-test=nothing-has-this"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn on_a_terminal_one_question_covers_the_selection_and_a_table_ends_it() {
    let pair = ready_sets("select-screen", "app", &["app-a", "app-b"]).await;
    let ns = pair.ns().to_string();
    let done = tokio::task::spawn_blocking(move || {
        let kubeconfig = support::kubeconfig_path();
        let mut term = Term::spawn(Spawn {
            program: std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
            args: &selection_argv(&ns, "tier=app", &["--parallel", "2"]),
            env: &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
            cwd: None,
            cols: 120,
            rows: 60,
        });
        let asked = term.wait_for("the one prompt", Duration::from_secs(60), |s| {
            s.contains("Continue? [y/N]")
        });
        assert!(
            asked.contains(&format!(
                "Migrate 2 StatefulSets of km-a/{ns} (app-a, app-b), 2 at a time"
            )),
            "{asked}"
        );
        // Before the question, each set's plan and its warnings, tagged with its name.
        // (Colour codes out, lines broken to the terminal joined again.)
        let before = regex::Regex::new(r"\x1b\[[0-9;]*m|\s+")
            .unwrap()
            .replace_all(&term.raw(), |c: &regex::Captures| {
                if c[0].starts_with('\x1b') { "" } else { " " }.to_string()
            })
            .into_owned();
        for name in ["app-a", "app-b"] {
            assert!(
                before.contains(&format!(
                    "[{name}] Plan: move StatefulSet {name} from km-a/"
                )),
                "no plan of {name} before the question:\n{before}"
            );
            let warning = before
                .find(&format!("warning: [{name}] "))
                .map(|at| &before[at..(at + 300).min(before.len())]);
            assert!(
                warning.is_some_and(|w| w.contains("reclaim policy other than Retain")),
                "no warning of {name} before the question:\n{before}"
            );
        }
        // A line, as a person answers: the prompt waits for Enter.
        term.send("y\r");
        term.finish(Duration::from_secs(180))
    })
    .await
    .unwrap();
    assert_eq!(done.code, 0, "{}", done.screen);
    let screen = &done.screen;
    // The sets' own questions are not asked (the plans scroll by above).
    assert!(
        !done.raw.contains("Migrate StatefulSet app-"),
        "a set asked again:\n{}",
        done.raw
    );
    assert!(
        screen.contains("[app-a] Done: app-a runs in km-b")
            && screen.contains("[app-b] Done: app-b runs in km-b"),
        "{screen}"
    );
    let rows: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.starts_with("STATEFULSET"))
        .collect();
    assert!(
        rows.first()
            .is_some_and(|h| h.contains("RESULT") && h.contains("TIME")),
        "no summary table:\n{screen}"
    );
    for name in ["app-a", "app-b"] {
        assert!(
            rows.iter()
                .any(|r| r.starts_with(name) && r.contains("succeeded")),
            "{name} not in the table:\n{screen}"
        );
    }
    // Two bars at once would tear each other: with --parallel 2 there are none.
    assert!(
        !done.raw.contains("km-a->km-b ["),
        "a progress bar was drawn:\n{}",
        done.raw
    );
}

/// `--status` and `--dry-run` of a selection: as JSON or YAML, one document (a kubectl List of
/// the sets' documents) that a JSON or YAML reader takes whole; as a table, a summary that says
/// what each set's run did; a refused set's reason in the List, in the table and on stderr.
/// Nothing is written.
#[tokio::test]
async fn a_selections_status_and_plans_are_one_document_and_a_refusal_says_why() {
    let pair = ready_sets("select-docs", "doc", &["doc-1", "doc-2"]).await;
    // doc-2's name is taken in B by a set this tool did not make: its migration is refused.
    let taken: StatefulSet = json(serde_json::json!({
        "metadata": {"name": "doc-2"},
        "spec": {
            "serviceName": "web", "replicas": 0,
            "selector": {"matchLabels": {"app": "other"}},
            "template": {"metadata": {"labels": {"app": "other"}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}
        }
    }));
    pair.sets(true)
        .create(&PostParams::default(), &taken)
        .await
        .unwrap();
    let snapshot = pair.snapshot().await;
    let ns = pair.ns().to_string();
    let selected = move |args: &[&str]| {
        let mut cmd = plugin();
        cmd.args(selection_argv(&ns, "tier=doc", args))
            .env_remove("COLUMNS");
        run(cmd)
    };
    let names = |list: &serde_json::Value| -> Vec<String> {
        assert_eq!(
            (&list["apiVersion"], &list["kind"]),
            (&"v1".into(), &"List".into()),
            "{list}"
        );
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let name = item["statefulset"]
                    .as_str()
                    .or(item["plan"]["statefulset"].as_str())
                    .or(item["name"].as_str());
                name.unwrap_or_else(|| panic!("an item without its set: {item}"))
                    .to_string()
            })
            .collect()
    };

    let out = selected(&["--status", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(names(&list), ["doc-1", "doc-2"]);
    let out = selected(&["--status", "-o", "yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let list: serde_json::Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("not one YAML document ({e}):\n{text}"));
    assert_eq!(names(&list), ["doc-1", "doc-2"]);
    let out = selected(&["--status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(row(&table, "doc-1").contains("shown"), "{table}");
    assert!(!table.contains("succeeded"), "{table}");

    let reason = "a StatefulSet named doc-2 already exists in km-b";
    let out = selected(&["--dry-run", "-o", "json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(names(&list), ["doc-1", "doc-2"]);
    let refused = &list["items"][1];
    assert_eq!(refused["result"], "refused", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains(reason),
        "{refused}"
    );
    assert!(
        stderr(&out).contains(&format!(
            "doc-2: refused: preflight failed, nothing was changed: {reason}"
        )),
        "{}",
        stderr(&out)
    );
    let out = selected(&["--dry-run"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        row(&table, "doc-1").contains("planned")
            && row(&table, "doc-1").contains("ordinal 0 to move"),
        "{table}"
    );
    assert!(
        row(&table, "doc-2").contains("refused") && row(&table, "doc-2").contains(reason),
        "{table}"
    );
    assert!(!table.contains("succeeded"), "{table}");
    assert_eq!(pair.snapshot().await, snapshot, "a status or a plan wrote");
}
