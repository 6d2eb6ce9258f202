//! The real-world CRDs applied to a real API server with the real kubectl, then compared with
//! the very files they came from: read as kubectl sends them, a file and the cluster it was
//! applied to give no findings at all. The older releases go to km-b, the newer to km-c (two
//! releases of one CRD cannot share a cluster: a newer one may drop a stored version).
use crate::support;

use std::path::Path;
use std::process::Command as Process;

use assert_cmd::Command;
use serde_json::Value;
use support::real_world::all_pairs;
use support::{CONTEXT_B, CONTEXT_C, cluster_bin_dir, kubeconfig_path};

fn kubectl(context: &str, args: &[&str]) -> std::process::Output {
    let out = Process::new(cluster_bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["--context", context])
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?} on {context}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Waits until the CRD is Established (`kubectl wait` fails while it has no conditions yet).
fn established(context: &str, crd: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = kubectl(context, &["get", "crd", crd, "-o", "json"]);
        let crd_json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let conditions = crd_json["status"]["conditions"].as_array().cloned();
        if conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{crd} not Established on {context} after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `schema-diff -f FILE --context CONTEXT NAME -o json`: its exit code and report.
fn schema_diff(file: &Path, context: &str, crd: &str) -> (Option<i32>, Value) {
    let out = Command::cargo_bin("kubectl-migrate")
        .unwrap()
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .arg("schema-diff")
        .arg("-f")
        .arg(file)
        .args(["--context", context, crd, "--fail-on", "any", "-o", "json"])
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{crd} on {context}: no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

/// `schema-diff --context km-b --context km-c NAMES ARGS`: the old releases against the new.
fn both_releases(names: &[&str], args: &[&str]) -> std::process::Output {
    Command::cargo_bin("kubectl-migrate")
        .unwrap()
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args([
            "schema-diff",
            "--context",
            CONTEXT_B,
            "--context",
            CONTEXT_C,
        ])
        .args(names)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn real_world_crds_applied_with_kubectl_give_no_findings_against_their_files() {
    let pairs = all_pairs();
    for (context, release) in [(CONTEXT_B, "old"), (CONTEXT_C, "new")] {
        for pair in &pairs {
            let file = if release == "old" {
                &pair.old
            } else {
                &pair.new
            };
            let path = file.to_str().unwrap();
            // Server-side: these CRDs are too large for the last-applied annotation.
            kubectl(
                context,
                &["apply", "--server-side", "--force-conflicts", "-f", path],
            );
            established(context, &pair.crd_name);
            let (code, report) = schema_diff(file, context, &pair.crd_name);
            let apis = report["apis"].as_array().cloned().unwrap_or_default();
            assert_eq!(
                apis.iter().map(|a| a["name"].as_str()).collect::<Vec<_>>(),
                [Some(pair.crd_name.as_str())],
                "the report compares the CRD, and only it: {report}"
            );
            let present: Vec<_> = apis[0]["presence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["present"].as_bool())
                .collect();
            assert_eq!(
                present,
                [Some(true), Some(true)],
                "in the file and the cluster"
            );
            let findings = &apis[0]["findings"];
            assert!(
                findings.as_array().is_some_and(Vec::is_empty) && code == Some(0),
                "{} ({release} release) on {context}: exit {code:?}, findings: {}",
                pair.crd_name,
                serde_json::to_string_pretty(findings).unwrap()
            );
        }
    }
    // The comparison can tell: each older file against the newer release in km-c differs.
    for pair in &pairs {
        let (code, report) = schema_diff(&pair.old, CONTEXT_C, &pair.crd_name);
        let findings = report["apis"][0]["findings"].as_array().map_or(0, Vec::len);
        assert!(
            findings > 0 && code == Some(1),
            "{}: the old file against the new release gave exit {code:?} and {findings} findings",
            pair.crd_name
        );
    }
    // Read a page at a time, the clusters give the same report as read all at once.
    let names: Vec<&str> = pairs.iter().map(|p| p.crd_name.as_str()).collect();
    let report = |chunk: &str, lcd: bool| {
        // Paging is what is compared here: the witness search is left out to keep it quick.
        let mut args = vec!["--chunk-size", chunk, "--no-witnesses", "-o", "json"];
        args.extend(lcd.then_some("--lcd"));
        let out = both_releases(&names, &args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "--chunk-size {chunk}: {out:?}"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let whole = report("0", false);
    let parsed: Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(
        parsed["apis"].as_array().map(Vec::len),
        Some(names.len()),
        "{whole}"
    );
    let lcd = report("0", true);
    for chunk in ["1", "2", "5"] {
        assert!(
            report(chunk, false) == whole,
            "--chunk-size {chunk}: another report"
        );
        assert!(
            report(chunk, true) == lcd,
            "--chunk-size {chunk}: another LCD"
        );
    }
    // Every breaking (or stored-data, or selection) finding between the releases has a
    // witness, and the servers agree with it: km-b (old release) accepts it, km-c (new
    // release) rejects it or stores it otherwise.
    let out = both_releases(&names, &["--prove", "-o", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "--prove: breaking findings, no defect: {stderr}"
    );
    let proved: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut proven = 0;
    for api in proved["apis"].as_array().unwrap() {
        for f in api["findings"].as_array().unwrap() {
            // A default or a selectable field removed is shown too (what each server
            // stores; a list with the field selector one serves and the other refuses).
            if !["breaking", "changes-stored-data", "changes-selection"]
                .contains(&f["class"].as_str().unwrap_or_default())
            {
                continue;
            }
            let verdict = &f["witness"]["proof"]["verdict"];
            assert_eq!(
                verdict,
                "proven",
                "{} {} {} {}: witness not proven on the servers: {}",
                api["name"],
                f["version"],
                f["path"],
                f["rule"],
                serde_json::to_string_pretty(f).unwrap()
            );
            proven += 1;
        }
    }
    eprintln!("--prove: {proven} findings, each witness proven on the servers");
    assert!(
        proven >= 40,
        "the releases have dozens of breaking findings, got {proven}"
    );
    // Left in place would only cost a rerun a re-apply; removed so other tests see clean
    // clusters.
    for (context, _) in [(CONTEXT_B, "old"), (CONTEXT_C, "new")] {
        for pair in &pairs {
            kubectl(
                context,
                &[
                    "delete",
                    "crd",
                    &pair.crd_name,
                    "--ignore-not-found",
                    "--wait=false",
                ],
            );
        }
    }
}
