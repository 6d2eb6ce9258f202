//! What a person sees on a terminal, without clusters: the tables of schema-diff, failure-policy
//! and version, run on a pseudo-terminal with colour on and rendered by a terminal emulator at
//! 80, 100, 120 and 200 columns. A row is one line, the cells people scan for are whole, and
//! colour never moves anything (the same screen comes out with --color never).
use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::pty::{Spawn, Term};

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kubectl-migrate"))
}

fn schema_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema")
}

const NO_KUBECONFIG: &[(&str, &str)] = &[("KUBECONFIG", "/nonexistent/kubeconfig")];

fn check_at_every_width(args: &[&str], cwd: &Path, rows: &[&[&str]]) {
    support::pty::check_at_every_width(&binary(), args, NO_KUBECONFIG, cwd, rows);
}

#[test]
fn schema_diff_tables_keep_rows_whole_at_every_width() {
    let args = [
        "schema-diff",
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
    ];
    check_at_every_width(
        &args,
        &schema_data(),
        &[
            &["VERSION", "WIDGETS-A.YAML", "WIDGETS-B.YAML"],
            &["v1", "served, storage", "served"],
            &["PATH", "CHANGE", "CLASS"],
            &[".spec.owner", "required added", "breaking"],
            &[".spec.legacy", "field removed", "breaking"],
            &[".spec.replicas", "type changed", "breaking"],
            &[".spec.size", "maximum narrowed", "breaking"],
            &[".spec.tier", "field added", "compatible"],
            &["-", "version removed", "breaking", "served"],
            &[".spec", "CEL rule undecided", "unproven"],
        ],
    );
    // At 80 columns the first source's values give way (as `kubectl get` leaves its wide
    // columns out) rather than be cut to nothing; the last source's, what each field becomes,
    // stay. From 100 both are there.
    support::pty::check_at_widths(
        &[80],
        &binary(),
        &args,
        NO_KUBECONFIG,
        &schema_data(),
        &[
            &["PATH", "CHANGE", "CLASS", "WIDGETS-B.YAML"],
            &[".spec.owner", "required added", "breaking", "required"],
            &[".spec.replicas", "type changed", "breaking", "string"],
            &[".spec.size", "maximum narrowed", "breaking", "50"],
            &[".spec.tier", "field added", "compatible", "string"],
        ],
    );
    support::pty::check_at_widths(
        &[100, 120, 200],
        &binary(),
        &args,
        NO_KUBECONFIG,
        &schema_data(),
        &[
            &[
                ".spec.owner",
                "required added",
                "breaking",
                "optional",
                "required",
            ],
            &[".spec.legacy", "field removed", "breaking", "string"],
            &[
                ".spec.replicas",
                "type changed",
                "breaking",
                "integer",
                "string",
            ],
            &[".spec.size", "maximum narrowed", "breaking", "100", "50"],
            &[".spec.tier", "field added", "compatible", "-", "string"],
        ],
    );
}

#[test]
fn object_verdicts_keep_rows_whole_at_every_width() {
    let args = [
        "schema-diff",
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "--object",
        "widget-outside-lcd.yaml",
    ];
    check_at_every_width(
        &args,
        &schema_data(),
        &[
            &["OBJECT", "SOURCE", "LOCAL", "SERVER", "REASONS"],
            &["Widget/tiered", "widgets-a.yaml", "rejected", ".spec.tier"],
            &["widgets-b.yaml", "accepted"],
        ],
    );
}

/// A Job whose rules and messages are long enough to need the room of a wide terminal.
const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: train-a-rather-long-model-name}
spec:
  completions: 3
  parallelism: 1
  backoffLimit: 2
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget, status: \"True\"}]
    - action: Count
      onExitCodes: {operator: NotIn, values: [0]}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.example/train:1}]
";

#[test]
fn failure_policy_tables_keep_rows_whole_at_every_width() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.yaml"), JOB).unwrap();
    let simulate = [
        "failure-policy",
        "simulate",
        "-f",
        "job.yaml",
        "--fail",
        "evicted",
        "--fail",
        "exit=1",
        "--fail",
        "exit=1",
        "--fail",
        "exit=1",
    ];
    check_at_every_width(
        &simulate,
        dir.path(),
        &[
            &[
                "#",
                "POD",
                "RULE",
                "ACTION",
                "COUNTED",
                "FAILED",
                "SUCCEEDED",
                "JOB CONDITIONS",
            ],
            &["1", "failed", "1", "Ignore", "no", "0", "0"],
            &["2", "failed", "2", "Count", "yes", "1", "0"],
            &["4", "failed", "2", "Count", "yes", "3", "0"],
        ],
    );
    // When the pods failed and when the next one starts go first on a narrow terminal.
    support::pty::check_at_widths(
        &[100, 120, 200],
        &binary(),
        &simulate,
        NO_KUBECONFIG,
        dir.path(),
        &[
            &["#", "AT", "POD", "RULE", "ACTION", "NEXT POD IN"],
            &["1", "0s", "failed", "1", "Ignore", "no", "0", "0", "10s"],
        ],
    );
    let check = [
        "failure-policy",
        "check",
        "-f",
        "job.yaml",
        "--k8s-version",
        "1.29",
    ];
    check_at_every_width(
        &check,
        dir.path(),
        &[
            &["FEATURE", "USED", "AT THIS VERSION", "CONSEQUENCE"],
            &["podFailurePolicy", "yes"],
        ],
    );
}

/// An Indexed Job whose success policy decides at 1.31+ and is ignored before.
const LEADER_JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: leader}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimitPerIndex: 1
  successPolicy:
    rules: [{succeededIndexes: \"0\"}]
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
";

#[test]
fn two_versions_side_by_side_keep_their_rows_whole() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.yaml"), LEADER_JOB).unwrap();
    let args = [
        "failure-policy",
        "simulate",
        "-f",
        "job.yaml",
        "--fail",
        "exit=1,index=1",
        "--succeed",
        "index=0",
        "--k8s-version",
        "1.28",
        "--k8s-version",
        "1.36",
    ];
    check_at_every_width(
        &args,
        dir.path(),
        &[
            &["#", "WHAT", "1.28", "1.36"],
            &["1", "index failures", "-", "1"],
            &[
                "2",
                "conditions added",
                "-",
                "SuccessCriteriaMet (SuccessPolicy)",
            ],
            &["end", "active", "2", "0"],
        ],
    );
    // The text under the table ends its line: what comes next (the shell's prompt) starts
    // its own, at 80 columns as at 200.
    for cols in [80, 200] {
        let run = support::pty::run_then_mark(&binary(), &args, NO_KUBECONFIG, dir.path(), cols);
        support::pty::assert_ends_with_mark(&run.screen, 1);
    }
    // The exit code says that the final status differs; JSON carries both simulations.
    let out = std::process::Command::new(binary())
        .current_dir(dir.path())
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["finalDiffers"], true);
    assert_eq!(json["labels"], serde_json::json!(["1.28", "1.36"]));
    assert_eq!(json["simulations"][1]["kubernetesVersion"], "1.36");
    // The same version twice: no difference, exit 0.
    let same = std::process::Command::new(binary())
        .current_dir(dir.path())
        .args(&args[..8])
        .args(["--k8s-version", "1.36", "--k8s-version", "1.36"])
        .output()
        .unwrap();
    assert_eq!(same.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&same.stdout).contains("the same, outcome by outcome"),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );
}

#[test]
fn the_version_table_keeps_its_rows_whole() {
    check_at_every_width(
        &["version", "--client"],
        &schema_data(),
        &[
            &["COMPONENT", "VERSION", "COMMIT"],
            &["client", env!("CARGO_PKG_VERSION")],
        ],
    );
}

/// Each stream is coloured by its own terminal: with stdout sent to a file the error on the
/// terminal is still red, and with stderr sent to a file the table on the terminal is still
/// bold; the file gets no colour codes.
#[test]
fn each_stream_takes_colour_from_its_own_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let bin = binary();
    let run_sh = |script: &str| {
        Term::spawn(Spawn {
            program: Path::new("/bin/sh"),
            args: &["-c", script],
            env: &[
                ("KUBECONFIG", "/nonexistent/kubeconfig"),
                ("BIN", bin.to_str().unwrap()),
            ],
            cwd: Some(dir.path()),
            cols: 100,
            rows: 40,
        })
        .finish(Duration::from_secs(30))
    };
    // An unknown context: the table on stdout, the error on stderr.
    let out_to_file = run_sh("\"$BIN\" version --context nowhere > out.txt");
    let table = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    assert!(table.starts_with("COMPONENT"), "{table}");
    assert!(!table.contains('\u{1b}'), "colour in a file: {table:?}");
    assert!(
        out_to_file.raw.contains("\u{1b}[1;31merror:")
            || out_to_file.raw.contains("\u{1b}[31;1merror:"),
        "the terminal's error is red: {:?}",
        out_to_file.raw
    );
    let err_to_file = run_sh("\"$BIN\" version --context nowhere 2> err.txt");
    let error = std::fs::read_to_string(dir.path().join("err.txt")).unwrap();
    assert!(error.starts_with("error: context \"nowhere\""), "{error}");
    assert!(!error.contains('\u{1b}'), "colour in a file: {error:?}");
    assert!(
        err_to_file.raw.contains("\u{1b}[1mCOMPONENT"),
        "the terminal's table is bold: {:?}",
        err_to_file.raw
    );
}

/// A Job that may fail a thousand times.
const MANY_RETRIES_JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: retries}
spec:
  backoffLimit: 100000
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
";

/// A reader that stops early (`| head -1`) ends the command as it ends kubectl: killed by
/// SIGPIPE (141 in the shell), without a word, whatever the format. The simulation's output is
/// far larger than a pipe holds, so the write after `head` has gone always fails. (Its
/// warnings, about outcomes at 0s, are left out of the screen.)
#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.yaml"), MANY_RETRIES_JOB).unwrap();
    let fails = " --fail exit=1".repeat(1000);
    for (format, first) in [
        ("json", "{"),
        ("table", "Job default/retries as Kubernetes"),
    ] {
        let script = format!(
            "{} failure-policy simulate -f job.yaml{fails} -o {format} 2>stderr | head -1; \
             code=${{PIPESTATUS[0]}}; grep -v '^warning:' stderr; echo \"exit $code\"",
            binary().display()
        );
        let run = Term::spawn(Spawn {
            program: Path::new("bash"),
            args: &["-c", &script],
            env: NO_KUBECONFIG,
            cwd: Some(dir.path()),
            cols: 80,
            rows: 24,
        })
        .finish(Duration::from_secs(60));
        let lines: Vec<&str> = run.screen.lines().collect();
        assert_eq!(lines.len(), 2, "-o {format}:\n{}", run.screen);
        assert!(lines[0].starts_with(first), "-o {format}:\n{}", run.screen);
        assert_eq!(lines[1], "exit 141", "-o {format}:\n{}", run.screen);
    }
}

/// `--help` at 80 columns: clap wraps the descriptions, but an example is one command and is
/// never re-wrapped into a second line that reads like a command of its own (kubectl never
/// re-wraps its examples): a long one runs past the edge, where the terminal continues it.
#[test]
fn help_keeps_each_example_one_line() {
    let run = Term::spawn(Spawn {
        program: &binary(),
        args: &["statefulset", "--help"],
        env: NO_KUBECONFIG,
        cwd: None,
        cols: 80,
        rows: 200,
    })
    .finish(Duration::from_secs(60));
    assert_eq!(run.code, 0, "{}", run.screen);
    let examples = run
        .screen
        .split_once("\nExamples:\n")
        .unwrap_or_else(|| panic!("no examples:\n{}", run.screen))
        .1;
    let long = "  kubectl migrate statefulset -l tier=db -n shop --context a --to-context b --parallel 2 --yes";
    for line in examples.lines() {
        assert!(
            line.starts_with("  kubectl migrate ") || long.ends_with(line),
            "a line of the examples is no command:\n{examples}"
        );
    }
    // The long example is continued by the terminal, so it copies back as one line.
    assert!(
        run.wrapped.iter().any(|row| row == &long[..80]),
        "{}",
        run.screen
    );
}
