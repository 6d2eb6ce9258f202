//! `schema-diff --watch` against the three local clusters: each kind of CRD change gives its
//! event and nothing else does; an API server outage gives `source-lost`/`source-back` and the
//! change made around it is reported; the gate (`--exit-on`), the hook, the metrics endpoint
//! and the LCD files are checked from outside, as a runbook would use them.
use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::process;
use support::{CONTEXT_A, CONTEXT_B, CONTEXT_C, kubeconfig_path, unique_suffix};
use support::{CONTEXT_OUTAGE, OUTAGE_CLUSTER, take_outage_cluster_blocking};

/// The clusters the watch compares, unless a test says otherwise.
const SOURCES: [&str; 3] = [CONTEXT_A, CONTEXT_B, CONTEXT_C];

/// The tests share the clusters and one of them restarts an API server: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A CRD `gadgets.GROUP` with versions v1 (storage) and v1beta1, whose `spec` has `props`
/// (a YAML flow mapping body); `beta_served` says whether v1beta1 is served.
fn gadgets(group: &str, props: &str, beta_served: bool) -> String {
    let version = |name: &str, served: bool, storage: bool| {
        format!(
            "  - name: {name}
    served: {served}
    storage: {storage}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{{props}}}}}
"
        )
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gadgets.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: gadgets, singular: gadget, kind: Gadget}}
  versions:
{}{}",
        version("v1", true, true),
        version("v1beta1", beta_served, false)
    )
}

const FULL: &str =
    "size: {type: integer}, name: {type: string}, mode: {type: string, enum: [a, b, c]}";

fn kubectl(context: &str, args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new(support::cluster_bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .arg("--context")
        .arg(context)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or_default().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl --context {context} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn apply(context: &str, manifest: &str) {
    kubectl(context, &["apply", "-f", "-"], Some(manifest));
}

/// Deletes the CRDs of `group` on every source when dropped.
struct Cleanup(String, [&'static str; 3]);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for context in self.1 {
            for kind in ["gadgets", "sprockets"] {
                let _ = Command::new(support::cluster_bin_dir().join("kubectl"))
                    .arg("--kubeconfig")
                    .arg(kubeconfig_path())
                    .args(["--context", context, "delete", "crd"])
                    .arg(format!("{kind}.{}", self.0))
                    .args(["--ignore-not-found", "--wait=false"])
                    .output();
            }
        }
    }
}

/// A test's own API group with `gadgets.GROUP` (the full schema) installed in the three
/// clusters; the CRDs are deleted, and the next test may run, when it drops.
struct Installed {
    sources: [&'static str; 3],
    group: String,
    api: String,
    // Dropped in this order: the CRDs go before the next test starts.
    _cleanup: Cleanup,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Installed {
    /// `prefix` tells the tests' groups apart in the clusters.
    fn gadgets(prefix: &str) -> Installed {
        Installed::gadgets_on(prefix, SOURCES)
    }

    /// The same on other clusters.
    fn gadgets_on(prefix: &str, sources: [&'static str; 3]) -> Installed {
        let serial = serial();
        let group = format!("{prefix}{}.watch.km.test", unique_suffix());
        let cleanup = Cleanup(group.clone(), sources);
        for context in sources {
            apply(context, &gadgets(&group, FULL, true));
        }
        Installed {
            sources,
            api: format!("gadgets.{group}"),
            group,
            _cleanup: cleanup,
            _serial: serial,
        }
    }
}

/// The plugin running `schema-diff --watch -o json` over the three clusters, its NDJSON lines
/// read as they come.
struct Watching {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Watching {
    fn start(group: &str, extra: &[&str]) -> Watching {
        Watching::start_on(group, SOURCES, extra)
    }

    /// The same over other clusters.
    fn start_on(group: &str, sources: [&str; 3], extra: &[&str]) -> Watching {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin!("kubectl-migrate"))
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["schema-diff", "--watch", "-o", "json", "--group", group])
            .args(sources.iter().flat_map(|context| ["--context", context]))
            .args(extra)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the plugin starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
                if send.send(value).is_err() {
                    break;
                }
            }
        });
        let mut watching = Watching { child, lines };
        let initial = watching.next(Duration::from_secs(60), "the initial report");
        assert_eq!(initial["type"], "initial", "{initial}");
        assert_eq!(initial["schemaVersion"], 1);
        watching
    }

    /// The next line, within `limit`.
    fn next(&mut self, limit: Duration, what: &str) -> Value {
        match self.lines.recv_timeout(limit) {
            Ok(v) => v,
            Err(e) => panic!("no event for {what} within {limit:?} ({e})"),
        }
    }

    /// The next event, which must be a change of `api` on `source`.
    fn change(&mut self, api: &str, source: &str, what: &str) -> Value {
        let event = self.next(Duration::from_secs(30), what);
        assert_eq!(event["type"], "change", "{what}: {event}");
        assert_eq!(event["api"], api, "{what}: {event}");
        assert_eq!(
            event["sources"],
            serde_json::json!([source]),
            "{what}: {event}"
        );
        event
    }

    /// Asserts that no line comes within `quiet`.
    fn nothing_for(&mut self, quiet: Duration, after: &str) {
        if let Ok(v) = self.lines.recv_timeout(quiet) {
            panic!("an event after {after}, where none was due: {v}");
        }
    }

    fn interrupt(mut self) -> std::process::ExitStatus {
        process::signal(&self.child, "INT");
        self.exit_within(Duration::from_secs(20), "SIGINT")
    }

    /// The exit status, which must come within `limit` of `cause`.
    fn exit_within(&mut self, limit: Duration, cause: &str) -> std::process::ExitStatus {
        process::exit_within(&mut self.child, limit, cause, String::new)
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn has_finding(event: &Value, key: &str, path: &str, rule_prefix: &str) -> bool {
    event[key].as_array().is_some_and(|fs| {
        fs.iter().any(|f| {
            f["path"] == path
                && f["rule"]
                    .as_str()
                    .is_some_and(|r| r.starts_with(rule_prefix))
        })
    })
}

#[test]
fn each_kind_of_crd_change_gives_its_event_and_a_reapply_gives_none() {
    let installed = Installed::gadgets("w");
    let (group, api) = (installed.group.clone(), installed.api.clone());
    let full = gadgets(&group, FULL, true);
    let mut watch = Watching::start(&group, &["--debounce", "300ms"]);

    // Writes that change nothing a comparison sees: no event.
    apply(CONTEXT_A, &full);
    kubectl(CONTEXT_A, &["label", "crd", &api, "touched=yes"], None);
    kubectl(
        CONTEXT_B,
        &["annotate", "crd", &api, "note=same-schema"],
        None,
    );
    watch.nothing_for(
        Duration::from_secs(4),
        "an identical re-apply and metadata edits",
    );

    let without_name = FULL.replace("name: {type: string}, ", "");
    apply(CONTEXT_B, &gadgets(&group, &without_name, true));
    let e = watch.change(&api, CONTEXT_B, "a field removed on km-b");
    assert_eq!(e["class"], "breaking", "{e}");
    assert_eq!(e["lcd"], "narrowed", "{e}");
    assert!(
        has_finding(&e, "newFindings", ".spec.name", "field-"),
        "{e}"
    );

    let narrowed = FULL.replace("enum: [a, b, c]", "enum: [a, b]");
    apply(CONTEXT_C, &gadgets(&group, &narrowed, true));
    let e = watch.change(&api, CONTEXT_C, "an enum narrowed on km-c");
    assert_eq!(e["class"], "breaking", "{e}");
    assert!(
        has_finding(&e, "newFindings", ".spec.mode", "enum-narrowed"),
        "{e}"
    );

    apply(CONTEXT_B, &gadgets(&group, &without_name, false));
    let e = watch.change(&api, CONTEXT_B, "v1beta1 no longer served on km-b");
    assert_eq!(e["class"], "breaking", "{e}");
    assert_eq!(
        e["presence"],
        serde_json::json!([{"source": CONTEXT_B, "before": ["v1", "v1beta1"], "after": ["v1"]}]),
        "{e}"
    );

    // Put km-b back: the findings it caused go away, a compatible change.
    apply(CONTEXT_B, &full);
    let e = watch.change(&api, CONTEXT_B, "km-b back to the full CRD");
    assert_eq!(e["class"], "compatible", "{e}");
    assert!(
        has_finding(&e, "goneFindings", ".spec.name", "field-"),
        "{e}"
    );
    assert!(e.get("newFindings").is_none(), "{e}");

    kubectl(CONTEXT_C, &["delete", "crd", &api], None);
    let e = watch.change(&api, CONTEXT_C, "the CRD deleted on km-c");
    assert_eq!(e["class"], "breaking", "{e}");
    assert_eq!(e["lcd"], "lost", "{e}");
    assert_eq!(e["presence"][0]["source"], CONTEXT_C, "{e}");
    assert_eq!(e["presence"][0]["after"], Value::Null, "{e}");

    let sprockets = full
        .replace("gadgets", "sprockets")
        .replace("gadget", "sprocket")
        .replace("Gadget", "Sprocket");
    apply(CONTEXT_A, &sprockets);
    let e = watch.change(
        &format!("sprockets.{group}"),
        CONTEXT_A,
        "a CRD added on km-a",
    );
    assert_eq!(e["apiChange"], "added", "{e}");

    let status = watch.interrupt();
    assert_eq!(status.code(), Some(0), "SIGINT ends the watch with exit 0");
}

#[test]
fn an_api_server_outage_is_reported_and_the_change_around_it_is_not_lost() {
    // The third source is the outage cluster, whose API server this test restarts.
    let _outage = take_outage_cluster_blocking();
    let installed = Installed::gadgets_on("o", [CONTEXT_A, CONTEXT_B, CONTEXT_OUTAGE]);
    let (group, api) = (installed.group.clone(), installed.api.clone());
    // The outage is refused connections, which a probe finds at once; the probes' limit only
    // has to be long enough that a slow answer on a busy machine is not taken for one.
    let mut watch = Watching::start_on(
        &group,
        installed.sources,
        &["--debounce", "300ms", "--request-timeout", "10s"],
    );
    let restart = Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/restart-apiserver.sh"),
    )
    .args([OUTAGE_CLUSTER, "4"])
    .env("KM_CLUSTERS_DIR", kubeconfig_path().parent().unwrap())
    .output()
    .unwrap();
    assert!(
        restart.status.success(),
        "restart-apiserver.sh {OUTAGE_CLUSTER}: {}",
        String::from_utf8_lossy(&restart.stderr)
    );
    // Right after it is back, before the watch has noticed.
    apply(
        CONTEXT_OUTAGE,
        &gadgets(&group, &FULL.replace("size: {type: integer}, ", ""), true),
    );
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|e: &Value| e["type"] == "change") {
        let left = deadline.saturating_duration_since(Instant::now());
        seen.push(watch.next(left, "source-lost, source-back and the change on km-outage"));
    }
    let kinds: Vec<&str> = seen.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["source-lost", "source-back", "change"],
        "events: {seen:?}"
    );
    for e in &seen {
        assert_eq!(e["sources"], serde_json::json!([CONTEXT_OUTAGE]), "{e}");
    }
    let change = seen.last().unwrap();
    assert_eq!(change["api"], api.as_str());
    assert!(
        has_finding(change, "newFindings", ".spec.size", "field-"),
        "{change}"
    );
    assert!(
        seen[0]["message"].is_string(),
        "source-lost says why: {}",
        seen[0]
    );
    watch.nothing_for(Duration::from_secs(3), "the change was reported");
}

/// GET `path` on `port`; the response, which must be a 200.
fn http_get(port: u16, path: &str) -> String {
    let response = process::http_get(&format!("127.0.0.1:{port}"), path).expect("metrics listen");
    assert!(
        response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
        "{response}"
    );
    response
}

/// Scrapes the metrics on `port` until `done` accepts them, within a generous 60 s.
fn scrape_until(port: u16, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let scraped = http_get(port, "/metrics");
        if done(&scraped) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the metrics did not show {what} within 60s:\n{scraped}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn metric(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn the_gate_the_hook_the_metrics_and_the_lcd_files() {
    let installed = Installed::gadgets("g");
    let (group, api) = (installed.group.clone(), installed.api.clone());
    let dir = tempfile::tempdir().unwrap();
    let lcd_dir = dir.path().join("lcd");
    let port = process::free_port();
    let hook = format!(
        "cat > '{0}/event.json'; echo \"$API $SOURCE $CLASS\" > '{0}/env.txt'",
        dir.path().display()
    );
    let metrics_addr = format!("127.0.0.1:{port}");
    let mut watch = Watching::start(
        &group,
        &[
            "--debounce",
            "200ms",
            "--exit-on",
            "breaking",
            "--on-breaking",
            &hook,
            "--metrics-addr",
            &metrics_addr,
            "--lcd-dir",
            lcd_dir.to_str().unwrap(),
        ],
    );
    let lcd_file = lcd_dir.join(format!("{api}.yaml"));
    let first: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&lcd_file).unwrap()).unwrap();
    assert_eq!(first["metadata"]["name"], api.as_str());

    let scraped = http_get(port, "/metrics");
    for (line, want) in [
        (
            format!("kubectl_migrate_schema_source_up{{source=\"{CONTEXT_C}\"}}"),
            1.0,
        ),
        (
            format!("kubectl_migrate_schema_lcd_present{{api=\"{api}\"}}"),
            1.0,
        ),
    ] {
        assert_eq!(metric(&scraped, &line), Some(want), "{line} in:\n{scraped}");
    }

    // The LCD file is read over and over while compatible changes rewrite it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (stop, file) = (stop.clone(), lcd_file.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&file).expect("the LCD file is always there");
                let doc: Value = serde_saphyr::from_str(&text)
                    .unwrap_or_else(|e| panic!("the LCD file does not parse ({e}):\n{text}"));
                assert_eq!(doc["kind"], "CustomResourceDefinition");
                reads += 1;
            }
            reads
        })
    };
    let findings = |source: &str| {
        format!(
            "kubectl_migrate_schema_findings{{api=\"{api}\",source=\"{source}\",class=\"compatible\"}}"
        )
    };
    let mut props = FULL.to_string();
    for i in 0..6 {
        props.push_str(&format!(", extra{i}: {{type: string}}"));
        let manifest = gadgets(&group, &props, true);
        // km-a is the baseline: while it has a field that another cluster lacks, the watch
        // rightly reports a breaking change, and --exit-on ends it. So km-b and km-c get the
        // field first, and km-a only once the watch has taken in both (their compatible
        // findings, one per version, counted); however the watch debounces the writes, every
        // event until km-a's is then compatible.
        for context in [CONTEXT_B, CONTEXT_C] {
            apply(context, &manifest);
        }
        scrape_until(port, "km-b and km-c with the new field", |scraped| {
            [CONTEXT_B, CONTEXT_C]
                .iter()
                .all(|c| metric(scraped, &findings(c)) == Some(2.0))
        });
        apply(CONTEXT_A, &manifest);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = watch.next(left, "the field added on km-a, after km-b and km-c");
            assert_eq!(e["type"], "change", "{e}");
            assert_eq!(e["class"], "compatible", "{e}");
            if e["sources"]
                .as_array()
                .is_some_and(|s| s.contains(&CONTEXT_A.into()))
            {
                assert_eq!(e["lcd"], "widened", "{e}");
                break;
            }
            assert!(e.get("lcd").is_none(), "{e}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("every read of the LCD file parsed");
    assert!(reads > 10, "the reader read the file only {reads} times");
    let now: Value = serde_saphyr::from_str(&std::fs::read_to_string(&lcd_file).unwrap()).unwrap();
    assert!(
        now.to_string().contains("extra5"),
        "the LCD file has the last field added: {now}"
    );

    // A field only km-b has: a compatible finding, counted for km-b alone.
    let only_b = format!("{props}, onlyb: {{type: string}}");
    apply(CONTEXT_B, &gadgets(&group, &only_b, true));
    let e = watch.change(&api, CONTEXT_B, "a field added on km-b only");
    assert_eq!(e["class"], "compatible", "{e}");
    let scraped = http_get(port, "/metrics");
    // One finding per version: v1 and v1beta1 both got the field.
    assert_eq!(
        metric(&scraped, &findings(CONTEXT_B)),
        Some(2.0),
        "{scraped}"
    );
    assert_eq!(
        metric(&scraped, &findings(CONTEXT_C)),
        Some(0.0),
        "{scraped}"
    );

    // A breaking change: the hook gets the event, the gate exits 1.
    apply(
        CONTEXT_B,
        &gadgets(&group, &only_b.replace("name: {type: string}, ", ""), true),
    );
    let e = watch.change(&api, CONTEXT_B, "a field removed on km-b");
    assert_eq!(e["class"], "breaking");
    let status = watch.exit_within(
        Duration::from_secs(30),
        "a breaking change with --exit-on breaking",
    );
    assert_eq!(status.code(), Some(1), "--exit-on breaking exits 1");
    let hooked: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("event.json")).unwrap())
            .unwrap();
    assert_eq!(hooked["api"], api.as_str());
    assert_eq!(hooked["class"], "breaking");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("env.txt"))
            .unwrap()
            .trim(),
        format!("{api} {CONTEXT_B} breaking")
    );
}

#[test]
fn on_a_terminal_events_are_readable_coloured_lines_and_ctrl_c_ends_with_0() {
    use support::pty::{Spawn, Term};
    let installed = Installed::gadgets("t");
    let (group, api) = (installed.group.clone(), installed.api.clone());
    let kubeconfig = kubeconfig_path();
    let mut term = Term::spawn(Spawn {
        program: Path::new(env!("CARGO_BIN_EXE_kubectl-migrate")),
        args: &[
            "schema-diff",
            "--watch",
            "--group",
            &group,
            "--debounce",
            "300ms",
            "--context",
            CONTEXT_A,
            "--context",
            CONTEXT_B,
            "--context",
            CONTEXT_C,
        ],
        env: &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
        cwd: None,
        cols: 160,
        rows: 50,
    });
    let limit = Duration::from_secs(60);
    let screen = term.wait_for("the report and the watch line", limit, |s| {
        s.contains("changes follow (Ctrl-C to stop)")
    });
    assert!(
        screen.contains(&format!("{api}  (Gadget, Namespaced)"))
            && screen.contains("no differences"),
        "{screen}"
    );
    apply(
        CONTEXT_B,
        &gadgets(&group, &FULL.replace("name: {type: string}, ", ""), true),
    );
    let heading = format!("{api} changed on {CONTEXT_B}: breaking");
    let screen = term.wait_for("the change event", limit, |s| {
        s.contains(&heading) && s.contains("LCD narrowed")
    });
    for line in [
        "    + breaking v1 .spec.name: field missing",
        "    + breaking v1beta1 .spec.name: field missing",
    ] {
        assert!(
            screen.lines().any(|l| l.starts_with(line)),
            "{line:?} on the screen:\n{screen}"
        );
    }
    // Coloured on a terminal, and the colour codes never reach the text.
    assert!(term.raw().contains("\u{1b}[1;31mbreaking") || term.raw().contains("\u{1b}[31"));
    assert!(
        !screen.contains('\u{1b}') && !screen.contains("[0m"),
        "{screen}"
    );
    term.send("\u{3}");
    let finished = term.finish(Duration::from_secs(20));
    assert_eq!(
        finished.code, 0,
        "Ctrl-C ends the watch with 0:\n{}",
        finished.screen
    );
}

/// `--fail-on` names the classes the gate and the hook count: with `changes-stored-data`, a
/// default added on one cluster (an object without the field is stored with it there, and
/// without it elsewhere) runs `--on-breaking` and ends the watch (`--exit-on breaking`); a
/// compatible change before it does neither.
#[test]
fn fail_on_a_stored_data_class_gates_on_that_change_and_not_on_a_compatible_one() {
    let installed = Installed::gadgets("f");
    let (group, api) = (installed.group.clone(), installed.api.clone());
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes.txt");
    let hook = format!("echo \"$CLASS\" >> '{}'", classes.display());
    let mut watch = Watching::start(
        &group,
        &[
            "--debounce",
            "200ms",
            "--fail-on",
            "changes-stored-data",
            "--exit-on",
            "breaking",
            "--on-breaking",
            &hook,
        ],
    );

    let extra = format!("{FULL}, extra: {{type: string}}");
    apply(CONTEXT_B, &gadgets(&group, &extra, true));
    let e = watch.change(&api, CONTEXT_B, "a field added on km-b");
    assert_eq!(e["class"], "compatible", "{e}");
    assert!(
        watch.child.try_wait().unwrap().is_none(),
        "a compatible change does not end the watch"
    );

    let defaulted = FULL.replace("size: {type: integer}", "size: {type: integer, default: 3}");
    apply(CONTEXT_C, &gadgets(&group, &defaulted, true));
    let e = watch.change(&api, CONTEXT_C, "a default added on km-c");
    assert_eq!(e["class"], "changes-stored-data", "{e}");
    assert!(
        has_finding(&e, "newFindings", ".spec.size", "default-added"),
        "{e}"
    );
    let status = watch.exit_within(
        Duration::from_secs(30),
        "a changes-stored-data event with --fail-on changes-stored-data --exit-on breaking",
    );
    assert_eq!(status.code(), Some(1), "the gate exits 1");
    // The hook ran for that event alone.
    assert_eq!(
        std::fs::read_to_string(&classes).unwrap(),
        "changes-stored-data\n"
    );
}
