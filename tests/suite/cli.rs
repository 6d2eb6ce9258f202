//! The command line without any cluster: help, versions, usage errors, exit codes, output
//! formats and colour.
use assert_cmd::Command;
use predicates::prelude::*;

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env_remove("NO_COLOR")
        .env("KUBECONFIG", "/nonexistent/kubeconfig");
    cmd
}

#[test]
fn help_reads_kubectl_migrate_and_lists_the_subcommands() {
    let output = plugin().arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    insta::assert_snapshot!("top_level_help", help);
}

#[test]
fn every_subcommand_says_what_it_does() {
    for (sub, phrase) in [
        ("statefulset", "spec.ordinals.start"),
        ("schema-diff", "lowest common denominator"),
        ("failure-policy", "podFailurePolicy"),
        ("version", "version of the cluster"),
    ] {
        plugin()
            .args([sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "Usage: kubectl migrate {sub}"
            )))
            .stdout(predicate::str::contains(phrase))
            .stdout(predicate::str::contains("--request-timeout"));
    }
}

#[test]
fn version_flag_prints_the_package_version() {
    plugin()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("kubectl-migrate {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_errors_exit_2() {
    plugin()
        .arg("nonsense")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unrecognized subcommand"));
    plugin().args(["version", "--bogus"]).assert().code(2);
    plugin()
        .args(["version", "--request-timeout", "soon"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid duration"));
    plugin()
        .args(["version", "-o", "xml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "possible values: table, json, yaml",
        ));
    plugin()
        .args(["version", "--color", "sometimes"])
        .assert()
        .code(2);
    plugin()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Usage: kubectl migrate"));
}

#[test]
fn client_version_in_every_output_format() {
    let json = plugin()
        .args(["version", "--client", "-o", "json"])
        .output()
        .unwrap();
    assert!(json.status.success());
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let commit = value["gitCommit"].as_str().unwrap().to_string();
    assert!(
        commit.len() >= 12 && commit[..12].bytes().all(|b| b.is_ascii_hexdigit()),
        "the commit the binary was built from: {commit}"
    );
    assert_eq!(
        value,
        serde_json::json!({"schemaVersion": 1, "clientVersion": env!("CARGO_PKG_VERSION"), "gitCommit": commit})
    );

    let yaml = plugin()
        .args(["version", "--client", "-o", "yaml"])
        .output()
        .unwrap();
    let parsed: serde_json::Value = serde_saphyr::from_slice(&yaml.stdout).unwrap();
    assert_eq!(parsed, value);

    plugin()
        .args(["version", "--client"])
        .assert()
        .success()
        .stdout(
            predicate::str::is_match(format!(
                r"^COMPONENT\s+VERSION\s+COMMIT\s+CONTEXT\s+SERVER\nclient\s+{}\s+{}\n$",
                regex_escape(env!("CARGO_PKG_VERSION")),
                regex_escape(&commit)
            ))
            .unwrap(),
        );
}

fn regex_escape(s: &str) -> String {
    s.replace('.', r"\.")
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let esc = predicate::str::contains("\u{1b}[");
    plugin()
        .args(["version", "--client", "--color", "always"])
        .assert()
        .success()
        .stdout(esc.clone());
    plugin()
        .args(["version", "--client", "--color", "always"])
        .env("NO_COLOR", "1")
        .assert()
        .success()
        .stdout(esc.clone());
    plugin()
        .args(["version", "--client", "--color", "never"])
        .assert()
        .success()
        .stdout(esc.clone().not());
    // auto: stdout is a pipe here, so no colour; NO_COLOR keeps it off too.
    plugin()
        .args(["version", "--client"])
        .assert()
        .success()
        .stdout(esc.clone().not());
    plugin()
        .args(["version", "--client"])
        .env("NO_COLOR", "1")
        .assert()
        .success()
        .stdout(esc.not());
}

#[test]
fn an_unreadable_kubeconfig_is_a_clear_error_after_the_client_version() {
    // As kubectl version: the client's version is printed whatever happens to the server's.
    plugin()
        .args(["version", "--kubeconfig", "/nonexistent/config"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(format!(
            "client      {}",
            env!("CARGO_PKG_VERSION")
        )))
        .stderr(predicate::str::contains(
            "cannot read kubeconfig: /nonexistent/config: No such file",
        ))
        .stderr(predicate::str::contains("'\"").not());
}

#[test]
fn the_kubectl_completion_entry_point_prints_candidates_and_a_directive() {
    plugin()
        .args(["__complete", "sta"])
        .assert()
        .success()
        .stdout("statefulset\n:4\n");
}
