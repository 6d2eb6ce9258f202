//! What a person sees of `kubectl migrate statefulset` on a terminal, against the real local
//! clusters: the plan and the prompt (answered no, then yes), the progress display while it
//! runs and the summary at the end, why it waits, `--step`, Ctrl-C, and the rollback and
//! cleanup prompts. The binary runs on a pseudo-terminal; a terminal emulator renders the
//! screen that the assertions read.
use crate::support;

use std::time::Duration;

use support::pty::{Spawn, Term};
use support::sts::{Pair, SplitBrainObserver};

const WAIT: Duration = Duration::from_secs(120);

/// `kubectl migrate statefulset web -n NS --context km-a --to-context km-b ARGS` on a terminal
/// `cols` wide.
fn on_terminal(ns: &str, args: &[&str], cols: u16) -> Term {
    let kubeconfig = support::kubeconfig_path();
    let all = migrate_args(ns, args);
    Term::spawn(Spawn {
        program: std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
        args: &all,
        env: &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
        cwd: None,
        cols,
        rows: 50,
    })
}

/// The arguments of `kubectl migrate statefulset web -n NS --context km-a --to-context km-b ARGS`.
fn migrate_args<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "statefulset",
        "web",
        "-n",
        ns,
        "--context",
        "km-a",
        "--to-context",
        "km-b",
    ];
    all.extend(args);
    all
}

#[tokio::test]
async fn the_plan_and_prompt_no_then_yes_with_progress_and_a_summary() {
    let pair = Pair::new("screen-prompt").await;
    pair.create_set(3, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.snapshot().await;
    let ns = pair.ns().to_string();

    // No: the plan is shown, the answer changes nothing, exit 3.
    let no_ns = ns.clone();
    let declined = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&no_ns, &[], 100);
        let screen = term.wait_for("the prompt", WAIT, |s| s.contains("Continue? [y/N]"));
        assert!(
            screen.contains("Plan: move StatefulSet web from km-a/")
                && screen.contains("[2] scale source to 2 replicas")
                && screen.contains("Migrate StatefulSet web from km-a/"),
            "{screen}"
        );
        term.send("n\r");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(declined.code, 3, "{}", declined.screen);
    assert!(
        declined
            .screen
            .contains("Stopped: not confirmed; nothing was changed"),
        "{}",
        declined.screen
    );
    assert_eq!(pair.snapshot().await, before, "declining wrote something");

    // Yes: the progress line shows the bar, the step, the clocks and, once an ordinal has
    // moved, an estimate of the rest; the last screen has the summary and no bar.
    let observer = SplitBrainObserver::start(pair.ns());
    let yes_ns = ns.clone();
    let done = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&yes_ns, &["--health-check", "sleep 1"], 120);
        term.wait_for("the prompt", WAIT, |s| s.contains("Continue? [y/N]"));
        term.send("y\r");
        let mid = term.wait_for("the progress line with an estimate", WAIT, |s| {
            s.lines().any(|l| {
                l.starts_with("web km-a->km-b [")
                    && l.contains("s on this step")
                    && l.contains("in all")
                    && l.contains("left")
            })
        });
        (mid, term.finish(WAIT))
    })
    .await
    .unwrap();
    let (mid, done) = done;
    let bar = mid
        .lines()
        .find(|l| l.starts_with("web km-a->km-b ["))
        .unwrap();
    assert!(
        regex::Regex::new(r"\] [1-3]/3, \d+s on this step, \d+s in all, about \d+(m\d+)?s left")
            .unwrap()
            .is_match(bar),
        "{bar}"
    );
    assert_eq!(done.code, 0, "{}", done.screen);
    assert!(
        regex::Regex::new(r"Done: web runs in km-b \(.+\)\. 3 ordinals verified there in \d+s\.")
            .unwrap()
            .is_match(&done.screen),
        "{}",
        done.screen
    );
    assert!(
        !done.screen.contains("web km-a->km-b ["),
        "the bar is cleared at the end:\n{}",
        done.screen
    );
    observer.assert_never_split();
}

/// At 80 columns the progress display fits: the step's words over the status line, which
/// gives way (bar, clocks) as room requires; the terminal wraps neither, at any redraw seen.
#[tokio::test]
async fn the_progress_display_fits_80_columns() {
    let pair = Pair::new("screen-narrow").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let ns = pair.ns().to_string();
    let done = tokio::task::spawn_blocking(move || {
        let term = on_terminal(&ns, &["--health-check", "sleep 1", "--yes"], 80);
        term.wait_for("the status line with its clocks, a move done", WAIT, |s| {
            let wrapped = term.wrapped();
            assert!(wrapped.is_empty(), "the terminal wrapped {wrapped:?}:\n{s}");
            s.lines()
                .any(|l| l.starts_with("web km-a->km-b [") && l.contains("] 1/2, "))
        });
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(done.code, 0, "{}", done.screen);
    assert!(done.wrapped.is_empty(), "{:?}", done.wrapped);
}

#[tokio::test]
async fn a_pod_that_cannot_start_is_explained_and_ctrl_c_clears_the_bar() {
    let pair = Pair::new("screen-pending").await;
    // The pods need a node running an anchor pod, which only km-a has, so ordinal 0 stays
    // Pending in km-b. (Pod affinity depends on what else runs there: preflight does not judge
    // it, whereas a node selector no destination node meets is refused before any write.)
    let suffix = support::unique_suffix();
    let anchor: k8s_openapi::api::core::v1::Pod = support::sts::json(serde_json::json!({
        "metadata": {"name": "anchor", "labels": {"km-anchor": suffix}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
    }));
    kube::Api::namespaced(pair.a.clone(), pair.ns())
        .create(&Default::default(), &anchor)
        .await
        .unwrap();
    pair.create_set(
        1,
        &["data"],
        "OrderedReady",
        serde_json::json!({"template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"km-anchor": suffix}},
                     "topologyKey": "kubernetes.io/hostname"}]}},
                "containers": [{"name": "app", "image": "registry.example/app:1"}]
            }
        }}),
    )
    .await;
    let ns = pair.ns().to_string();
    let stopped = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &["--yes"], 160);
        let waiting = term.wait_for("the reason it waits, on the bar too", WAIT, |s| {
            s.contains("waiting for web-0: Pending, not scheduled: Unschedulable")
                && s.lines().any(|l| l.starts_with("web km-a->km-b ["))
        });
        assert!(
            waiting.contains("didn't match pod affinity rules"),
            "{waiting}"
        );
        term.send("\u{3}");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(stopped.code, 3, "{}", stopped.screen);
    assert!(
        stopped
            .screen
            .contains("interrupted (Ctrl-C) at a safe point")
            && stopped.screen.contains("Resume with:"),
        "{}",
        stopped.screen
    );
    assert!(
        !stopped
            .screen
            .lines()
            .any(|l| l.starts_with("web km-a->km-b [")),
        "the last frame of the bar is cleared:\n{}",
        stopped.screen
    );
    assert!(
        stopped
            .screen
            .contains("interrupted (Ctrl-C); stopping at a safe point"),
        "the wait is not reported done:\n{}",
        stopped.screen
    );
    // The way back: roll back, asked on the terminal, answered yes.
    let ns = pair.ns().to_string();
    let rolled = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &["--rollback"], 120);
        let prompt = term.wait_for("the rollback prompt", WAIT, |s| {
            s.contains("Continue? [y/N]")
        });
        assert!(
            prompt.contains("Roll back StatefulSet web: move its ordinals from km-b back to km-a"),
            "{prompt}"
        );
        // The prompt shows what the rollback deletes in the destination.
        for deleted in [
            "delete the PVC copy data-web-0",
            "delete the PV copy",
            "delete the StatefulSet km-b/",
        ] {
            assert!(prompt.contains(deleted), "no {deleted:?} in:\n{prompt}");
        }
        term.send("y\r");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(rolled.code, 0, "{}", rolled.screen);
    assert!(
        rolled.screen.contains("Rolled back: web runs in km-a"),
        "{}",
        rolled.screen
    );
}

#[tokio::test]
async fn step_asks_before_each_move_and_cleanup_asks_before_it_deletes() {
    let pair = Pair::new("screen-step").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let ns = pair.ns().to_string();
    // At 80 columns, where the questions are longer than a line: each waits for its line and
    // Enter (one key answers nothing), and the line the answer is typed on is never wrapped.
    let paused = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &["--step"], 80);
        term.wait_for("the start question", WAIT, |s| {
            s.contains("Migrate StatefulSet web from km-a/") && s.ends_with("Continue? [y/N]")
        });
        term.send("y\r");
        let first = term.wait_for("the first --step question", WAIT, |s| {
            s.contains("ordinals.start=0, replicas=1.") && s.ends_with("Continue? [y/N]")
        });
        assert_eq!(
            first.matches("Continue? [y/N]").count(),
            2,
            "each question is drawn once:\n{first}"
        );
        // While the question waits for a person, the run's lease is still renewed (the
        // question waits off the run's one worker thread).
        let renewed = || {
            let out = support::sts::kubectl(&[
                "--context",
                "km-b",
                "-n",
                &ns,
                "get",
                "lease",
                "kubectl-migrate-web",
                "-o",
                "jsonpath={.spec.renewTime}",
            ]);
            assert!(out.status.success(), "{out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let asked = renewed();
        let deadline = std::time::Instant::now() + WAIT;
        while renewed() == asked {
            assert!(
                std::time::Instant::now() < deadline,
                "the lease was not renewed while the question waited (renewTime {asked})"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        // A `y` alone is no answer yet: nothing moves until Enter.
        term.send("y");
        term.wait_for("the y typed on the question's line", WAIT, |s| {
            s.ends_with("Continue? [y/N] y")
        });
        term.send("\r");
        let second = term.wait_for("the second --step question", WAIT, |s| {
            s.contains("replicas=0.") && s.ends_with("Continue? [y/N]")
        });
        assert!(
            !second.contains("not confirmed"),
            "the Enter after y answered the next question:\n{second}"
        );
        for line in second.lines() {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
        term.send("n\r");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(paused.code, 3, "{}", paused.screen);
    assert!(
        paused
            .screen
            .contains("the next ordinal was not confirmed (--step)")
            && paused.screen.contains("Resume with:"),
        "{}",
        paused.screen
    );
    assert!(
        !paused.screen.contains("error:"),
        "a declined question is a normal stop:\n{}",
        paused.screen
    );
    assert_eq!(
        pair.sets(true)
            .get("web")
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1),
        "one ordinal moved"
    );
    // Finish without pauses, then clean up, asked on the terminal.
    let out = support::sts::run(support::sts::migrate(pair.ns(), &["--yes"]));
    assert!(out.status.success(), "{}", support::sts::stderr(&out));
    let ns = pair.ns().to_string();
    let cleaned = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &["--cleanup"], 120);
        let prompt = term.wait_for("the cleanup prompt", WAIT, |s| s.contains("Continue? [y/N]"));
        assert!(
            prompt.contains("Delete the leftover StatefulSet, 2 PVCs and 2 PV objects of web in km-a (the storage is kept)"),
            "{prompt}"
        );
        term.send("y\r");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(cleaned.code, 0, "{}", cleaned.screen);
    assert!(
        cleaned.screen.contains("REMOVED FROM THE SOURCE") && cleaned.screen.contains("data-web-1"),
        "{}",
        cleaned.screen
    );
    // Again: nothing to do, said on a line that ends, at 80 columns as at 200.
    let ns = pair.ns().to_string();
    tokio::task::spawn_blocking(move || {
        let kubeconfig = support::kubeconfig_path();
        let args = migrate_args(&ns, &["--cleanup"]);
        for cols in [80, 200] {
            let again = support::pty::run_then_mark(
                std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
                &args,
                &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
                &std::env::temp_dir(),
                cols,
            );
            assert!(
                again
                    .screen
                    .contains("already cleaned up in km-a; nothing to do"),
                "{}",
                again.screen
            );
            support::pty::assert_ends_with_mark(&again.screen, 0);
        }
    })
    .await
    .unwrap();
}

/// Ctrl-C at a question is a stop like any other: exit 3, the command that resumes, and the
/// terminal as it was (the cursor shown, the answer's line ended). At the first question
/// nothing was written, so nothing is to resume.
#[tokio::test]
async fn ctrl_c_at_a_question_stops_with_the_resume_command_and_the_cursor_shown() {
    let pair = Pair::new("screen-ctrl-c").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let before = pair.snapshot().await;
    let ns = pair.ns().to_string();
    let at_start = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &[], 80);
        term.wait_for("the start question", WAIT, |s| {
            s.ends_with("Continue? [y/N]")
        });
        term.send("\u{3}");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(at_start.code, 3, "{}", at_start.screen);
    assert!(!at_start.cursor_hidden, "the cursor is left hidden");
    assert!(
        at_start.screen.ends_with(
            "Continue? [y/N] ^C\nStopped: interrupted (Ctrl-C) at the question; nothing was changed"
        ),
        "{}",
        at_start.screen
    );
    assert_eq!(
        pair.snapshot().await,
        before,
        "Ctrl-C at the question wrote something"
    );

    let ns = pair.ns().to_string();
    let at_step = tokio::task::spawn_blocking(move || {
        let mut term = on_terminal(&ns, &["--step"], 80);
        term.wait_for("the start question", WAIT, |s| {
            s.ends_with("Continue? [y/N]")
        });
        term.send("y\r");
        term.wait_for("the first --step question", WAIT, |s| {
            s.contains("replicas=1.") && s.ends_with("Continue? [y/N]")
        });
        term.send("\u{3}");
        term.finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(at_step.code, 3, "{}", at_step.screen);
    assert!(!at_step.cursor_hidden, "the cursor is left hidden");
    assert!(
        at_step
            .screen
            .contains("interrupted (Ctrl-C) before the next ordinal (--step)")
            && at_step
                .screen
                .contains("Resume with:\n  kubectl migrate statefulset web"),
        "{}",
        at_step.screen
    );
    assert!(!at_step.screen.contains("error:"), "{}", at_step.screen);
}

/// The plan (--dry-run) and --status tables at 80, 100, 120 and 200 columns, coloured: every
/// row on one line with its ordinal, cluster and claims whole.
#[tokio::test]
async fn plan_and_status_tables_keep_rows_whole_at_every_width() {
    let pair = Pair::new("screen-tables").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let kubeconfig = support::kubeconfig_path();
    let env = [("KUBECONFIG", kubeconfig.to_str().unwrap())];
    let program = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-migrate"));
    let base = [
        "statefulset",
        "web",
        "-n",
        pair.ns(),
        "--context",
        "km-a",
        "--to-context",
        "km-b",
    ];
    let with = |extra: &'static str| {
        let mut args = base.to_vec();
        args.push(extra);
        args
    };
    // Blocking on purpose: nothing else runs in this test meanwhile.
    support::pty::check_at_every_width(
        program,
        &with("--dry-run"),
        &env,
        &std::env::temp_dir(),
        &[
            &["#", "ORDINAL", "CLUSTER", "ACTION"],
            &["1", "km-b", "write the migration journal"],
            &["2", "km-a", "protect PV"],
            &["1", "km-a", "scale source to 1 replica"],
            &["0", "km-b", "copy PVC data-web-0"],
        ],
    );
    let out = support::sts::run(support::sts::migrate(pair.ns(), &["--yes"]));
    assert!(out.status.success(), "{}", support::sts::stderr(&out));
    support::pty::check_at_every_width(
        program,
        &with("--status"),
        &env,
        &std::env::temp_dir(),
        &[
            &["ORDINAL", "POD IN KM-A", "POD IN KM-B", "CLAIMS"],
            &["1", "-", "Ready", "data-web-1"],
            &["0", "-", "Ready", "data-web-0"],
            &["journal: migration km-a to km-b, complete;"],
            &["verified in km-b"],
        ],
    );
}

/// With fresh volumes, --status names each claim's volume in both clusters (at 200 columns,
/// where the claims column is not cut), and a rollback on the terminal names the claims it
/// keeps in the destination.
#[tokio::test]
async fn fresh_status_shows_both_volumes_and_the_rollback_names_the_claims_it_keeps() {
    let pair = Pair::new("screen-fresh").await;
    pair.create_set(2, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let out = support::sts::run(support::sts::migrate(
        pair.ns(),
        &["--volumes=fresh", "--no-health-check", "--yes"],
    ));
    assert!(out.status.success(), "{}", support::sts::stderr(&out));
    pair.wait_ready(true, 2).await;
    let (kept, fresh) = (pair.claims(false).await, pair.claims(true).await);
    let ns = pair.ns().to_string();
    let status =
        tokio::task::spawn_blocking(move || on_terminal(&ns, &["--status"], 200).finish(WAIT))
            .await
            .unwrap();
    assert_eq!(status.code, 0, "{}", status.screen);
    for (claim, (volume, _)) in &kept {
        let cell = format!(
            "{claim} ({volume}: source, {}: destination)",
            fresh[claim].0
        );
        assert!(
            status.screen.lines().any(|l| l.contains(&cell)),
            "no line shows {cell:?}:\n{}",
            status.screen
        );
    }
    let ns = pair.ns().to_string();
    let rolled_back = tokio::task::spawn_blocking(move || {
        let args = [
            "--volumes=fresh",
            "--no-health-check",
            "--rollback",
            "--yes",
        ];
        on_terminal(&ns, &args, 200).finish(WAIT)
    })
    .await
    .unwrap();
    assert_eq!(rolled_back.code, 0, "{}", rolled_back.screen);
    assert!(
        rolled_back
            .screen
            .contains("PVCs data-web-0, data-web-1, made for the moved pods (--volumes=fresh)"),
        "{}",
        rolled_back.screen
    );
    // The progress line said the way the ordinals went: back from km-b to km-a.
    assert!(
        rolled_back.raw.contains("web rollback km-b->km-a [")
            && !rolled_back.raw.contains("web km-a->km-b"),
        "the rollback's progress line: {:?}",
        rolled_back.raw
    );
    assert_eq!(pair.claims(true).await, fresh, "the fresh claims are kept");
}

/// The README's demo (scripts/demo.sh) at 80 columns, its commands as it runs them: StatefulSet
/// web (5 replicas, a claim each) in km-a with only its headless Service, moved to km-b with
/// --create-namespace --copy-dependencies --yes through `kubectl migrate`, then --status. What
/// a person reads: nothing wrapped by the terminal, every line in words, the summary, and the
/// status table whole with its journal said in words.
#[tokio::test]
async fn the_readme_demo_reads_cleanly_at_80_columns() {
    let a = support::client(support::CONTEXT_A).await;
    let b = support::client(support::CONTEXT_B).await;
    let ns_a = support::TestNamespace::create(&a, support::CONTEXT_A, "screen-demo").await;
    let name = ns_a.name.clone();
    let services: kube::Api<k8s_openapi::api::core::v1::Service> =
        kube::Api::namespaced(a.clone(), &name);
    services
        .create(
            &Default::default(),
            &support::sts::json(serde_json::json!({
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"clusterIP": "None", "selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80}]}
            })),
        )
        .await
        .unwrap();
    // The destination namespace is the migration's to create; the test deletes it after.
    let ns_b = support::TestNamespace::create_named_existing(support::CONTEXT_B, &name);
    let pair = Pair { a, b, ns_a, ns_b };
    pair.create_set(5, &["data"], "OrderedReady", serde_json::json!({}))
        .await;
    let ns = name.clone();
    let run = tokio::task::spawn_blocking(move || {
        let kubeconfig = support::kubeconfig_path();
        let path = support::path_with(&[]);
        let common =
            format!("kubectl migrate statefulset web -n {ns} --context km-a --to-context km-b");
        let script = format!(
            "{common} --create-namespace --copy-dependencies --yes </dev/null; echo \"[exit $?]\"; \
             {common} --status </dev/null; echo \"[exit $?]\""
        );
        Term::spawn(Spawn {
            program: std::path::Path::new("bash"),
            args: &["-c", &script],
            env: &[
                ("KUBECONFIG", kubeconfig.to_str().unwrap()),
                ("PATH", path.to_str().unwrap()),
            ],
            cwd: None,
            cols: 80,
            rows: 200,
        })
        .finish(WAIT * 3)
    })
    .await
    .unwrap();
    let screen = &run.screen;
    assert!(
        run.wrapped.is_empty(),
        "wrapped {:?}:\n{screen}",
        run.wrapped
    );
    assert_eq!(
        screen.lines().filter(|l| *l == "[exit 0]").count(),
        2,
        "{screen}"
    );
    support::assert_in_words("the demo", screen);
    assert!(!screen.contains("error:"), "{screen}");
    assert!(
        regex::Regex::new(r"Done: web runs in km-b \(.+\)\. 5 ordinals verified there in \d+s\.")
            .unwrap()
            .is_match(&screen.replace('\n', " ")),
        "{screen}"
    );
    let status = screen
        .split_once("[exit 0]\n")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("{screen}"));
    let header = regex::Regex::new(r"^ORDINAL +POD IN KM-A +POD IN KM-B +CLAIMS\b").unwrap();
    assert!(status.lines().any(|l| header.is_match(l)), "{status}");
    for ordinal in 0..5 {
        let row =
            regex::Regex::new(&format!(r"^{ordinal} +- +Ready +data-web-{ordinal}\b")).unwrap();
        assert!(
            status.lines().any(|l| row.is_match(l)),
            "ordinal {ordinal}:\n{status}"
        );
    }
    assert!(
        status
            .lines()
            .any(|l| l
                == "journal: migration km-a to km-b, complete; 5 of 5 ordinals verified in km-b"),
        "{status}"
    );
}
