//! `schema-diff` on files, without clusters: exit codes, output formats, selection, --lcd,
//! --object, built-in types from captured OpenAPI documents, and bad input.
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/schema")
        .join(name)
}

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env("NO_COLOR", "1")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env("COLUMNS", "100")
        .current_dir(data(""));
    cmd
}

fn json_report(args: &[&str]) -> (i32, Value) {
    let out = plugin()
        .args(["schema-diff"])
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (code, report)
}

fn rules(report: &Value) -> Vec<String> {
    report["apis"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["findings"].as_array().unwrap().iter())
        .map(|f| {
            format!(
                "{} {} {}",
                f["rule"].as_str().unwrap(),
                f["path"].as_str().unwrap(),
                f["class"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn two_releases_exit_1_with_breaking_findings_and_0_with_fail_on_none() {
    let (code, report) = json_report(&["-f", "widgets-a.yaml", "-f", "widgets-b.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(report["schemaVersion"], 2);
    assert_eq!(report["baseline"], "widgets-a.yaml");
    assert_eq!(report["failOn"], "breaking");
    assert_eq!(report["summary"]["breaking"], 6);
    let found = rules(&report);
    for want in [
        "field-added .spec.tier compatible",
        "field-removed .spec.legacy breaking",
        "type-changed .spec.replicas breaking",
        "enum-narrowed .spec.color breaking",
        "required-added .spec.owner breaking",
        // replicas changes type, so the rule cannot run on the baseline's string: undecided.
        "x-kubernetes-validations-undecided .spec unproven",
        "maximum-narrowed .spec.size breaking",
        "version-added  compatible",
        "version-removed  breaking",
        "storageVersion-changed  informational",
    ] {
        assert!(
            found.contains(&want.to_string()),
            "missing {want:?} in {found:#?}"
        );
    }
    plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "--fail-on",
            "none",
        ])
        .assert()
        .code(0);
}

/// A default removed and a selectable field removed reject no object: their own classes, each
/// with a witness of the difference, failing only where --fail-on names them.
#[test]
fn a_default_or_selectable_field_removed_has_its_own_class_that_fail_on_selects() {
    let pair = ["-f", "certificates-old.yaml", "-f", "certificates-new.yaml"];
    let (code, report) = json_report(&pair);
    assert_eq!(code, 0, "nothing breaking: {report}");
    assert_eq!(report["failOn"], "breaking");
    let s = &report["summary"];
    assert_eq!(
        (
            &s["breaking"],
            &s["changesStoredData"],
            &s["changesSelection"],
            &s["failing"]
        ),
        (&0.into(), &1.into(), &1.into(), &0.into()),
        "{s}"
    );
    let found = rules(&report);
    for want in [
        "default-removed .spec.issuerRef.group changes-stored-data",
        "selectableFields-removed  changes-selection",
    ] {
        assert!(found.contains(&want.to_string()), "{want:?} in {found:#?}");
    }
    let findings = &report["apis"][0]["findings"];
    let of = |rule: &str| {
        findings
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap()["witness"]
            .clone()
    };
    let w = of("default-removed");
    assert_eq!(w["expect"], "stored-differently");
    assert_eq!(
        w["object"]["spec"]["issuerRef"],
        serde_json::json!({"name": "a"})
    );
    assert_eq!(
        w["stored"],
        serde_json::json!([
            {"source": "certificates-old.yaml", "object": {"apiVersion": "km.example.com/v1", "kind": "Certificate", "metadata": {"name": "km-witness"}, "spec": {"issuerRef": {"name": "a", "group": "cert-manager.io"}}}},
            {"source": "certificates-new.yaml", "object": {"apiVersion": "km.example.com/v1", "kind": "Certificate", "metadata": {"name": "km-witness"}, "spec": {"issuerRef": {"name": "a"}}}},
        ]),
        "the object as each side stores it"
    );
    let w = of("selectableFields-removed");
    assert_eq!(w["expect"], "selector-refused");
    assert_eq!(w["fieldSelector"], "spec.secretName=a");
    assert_eq!(w["object"]["spec"]["secretName"], "a");
    // --fail-on: a set of classes, comma-separated or repeated; the old words still work.
    for (args, code, fail_on) in [
        (
            &["--fail-on", "changes-stored-data"][..],
            1,
            "changes-stored-data",
        ),
        (&["--fail-on", "changes-selection"], 1, "changes-selection"),
        (
            &["--fail-on", "changes-selection", "--fail-on", "breaking"],
            1,
            "breaking,changes-selection",
        ),
        (
            &["--fail-on", "breaking,changes-stored-data"],
            1,
            "breaking,changes-stored-data",
        ),
        (&["--fail-on", "unproven"], 0, "unproven"),
        (&["--fail-on", "any"], 1, "any"),
        (&["--fail-on", "none"], 0, "none"),
    ] {
        let (got, report) = json_report(&[&pair[..], args].concat());
        assert_eq!(got, code, "{args:?}: {}", report["summary"]);
        assert_eq!(report["failOn"], fail_on, "{args:?}");
    }
    // The table names the classes and shows both witnesses.
    let out = plugin().arg("schema-diff").args(pair).output().unwrap();
    // Lines broken to the terminal read as one.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(!text.contains("no differences"), "{text}");
    for want in [
        "0 breaking, 1 changes-stored-data, 1 changes-selection, 0 compatible, 0 informational",
        ".spec.issuerRef without group (stored differently by certificates-new.yaml)",
        "--field-selector spec.secretName=a (not selectable by certificates-new.yaml)",
    ] {
        assert!(text.contains(want), "{want:?} in: {text}");
    }
}

#[test]
fn fail_on_refuses_an_unknown_class_and_none_with_others() {
    let pair = ["-f", "certificates-old.yaml", "-f", "certificates-new.yaml"];
    plugin()
        .arg("schema-diff")
        .args(pair)
        .args(["--fail-on", "breaking,stored"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            predicate::str::contains("stored").and(predicate::str::contains("changes-stored-data")),
        );
    plugin()
        .arg("schema-diff")
        .args(pair)
        .args(["--fail-on", "none", "--fail-on", "breaking"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "--fail-on none fails on nothing; it does not go with other classes",
        ));
}

#[test]
fn the_baseline_decides_the_direction() {
    let (code, report) = json_report(&[
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "--baseline",
        "widgets-b.yaml",
    ]);
    assert_eq!(code, 1);
    let found = rules(&report);
    // Seen from B, A has a field B lacks (an addition) and a looser maximum.
    assert!(
        found.contains(&"field-added .spec.legacy compatible".to_string()),
        "{found:#?}"
    );
    assert!(
        found.contains(&"maximum-widened .spec.size compatible".to_string()),
        "{found:#?}"
    );
    assert!(
        found.contains(&"enum-widened .spec.color compatible".to_string()),
        "{found:#?}"
    );
    assert!(
        found.contains(&"field-removed .spec.tier breaking".to_string()),
        "{found:#?}"
    );
}

#[test]
fn identical_sources_exit_0_even_with_fail_on_any() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("widgets-a.yaml"), dir.path().join("copy.yaml")).unwrap();
    let copy = dir.path().join("copy.yaml");
    plugin()
        .args(["schema-diff", "-f", "widgets-a.yaml", "-f"])
        .arg(&copy)
        .args(["--fail-on", "any"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("no differences"));
}

#[test]
fn fail_on_any_counts_informational_findings_and_ignore_removes_rules() {
    let dir = tempfile::tempdir().unwrap();
    let reworded = std::fs::read_to_string(data("widgets-a.yaml"))
        .unwrap()
        .replace(
            "phase: {type: string}",
            "phase: {type: string, description: the phase}",
        );
    std::fs::write(dir.path().join("r.yaml"), reworded).unwrap();
    let other = dir.path().join("r.yaml").display().to_string();
    let args = ["schema-diff", "-f", "widgets-a.yaml", "-f", &other];
    plugin().args(args).assert().code(0);
    plugin()
        .args(args)
        .args(["--fail-on", "any"])
        .assert()
        .code(1);
    plugin()
        .args(args)
        .args(["--fail-on", "any", "--ignore", "description-changed"])
        .assert()
        .code(0);
    let (_, report) = json_report(&[
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "--ignore",
        "enum-narrowed",
    ]);
    assert!(
        !rules(&report)
            .iter()
            .any(|r| r.starts_with("enum-narrowed"))
    );
    assert_eq!(report["ignoredRules"], serde_json::json!(["enum-narrowed"]));
}

#[test]
fn the_table_groups_by_version_and_fits_100_columns() {
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line:?}"
        );
    }
    for want in [
        "widgets.km.example.com  (Widget, Namespaced)",
        "version v1:",
        "WIDGETS-A.YAML",
        ".spec.legacy",
        "field removed",
        "breaking",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(
        text.contains("1 informational (hidden; --all shows them)"),
        "{text}"
    );
}

#[test]
fn markdown_is_a_table_for_pull_requests() {
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "-o",
            "markdown",
        ])
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("### kubectl migrate schema-diff"), "{md}");
    assert!(
        md.contains("| PATH | CHANGE | CLASS | WIDGETS-A.YAML | WIDGETS-B.YAML |"),
        "{md}"
    );
    assert!(
        md.contains("| .spec.legacy | field removed | breaking | string | - |"),
        "{md}"
    );
    assert!(!md.contains('\u{1b}'), "no colour codes in markdown");
}

#[test]
fn yaml_output_carries_the_same_report() {
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "-o",
            "yaml",
        ])
        .output()
        .unwrap();
    let yaml: Value = serde_saphyr::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let (_, json) = json_report(&["-f", "widgets-a.yaml", "-f", "widgets-b.yaml"]);
    assert_eq!(yaml, json);
}

#[test]
fn lcd_prints_a_crd_that_parses_back_and_lists_what_it_dropped() {
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "--lcd",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("dropped v1 .spec.legacy (declared in widgets-a.yaml)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dropped v1 .spec.tier (declared in widgets-b.yaml)"),
        "{stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    assert_eq!(docs.len(), 1);
    let crd = &docs[0];
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    let versions = crd["spec"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "only v1 is served by both");
    let spec = &versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], serde_json::json!(["owner", "size"]));
    assert_eq!(spec["properties"]["size"]["maximum"], 50);
    assert_eq!(
        spec["properties"]["color"]["enum"],
        serde_json::json!(["green", "red"])
    );
    assert!(spec["properties"].get("tier").is_none() && spec["properties"].get("legacy").is_none());
    // The LCD, fed back in, is a valid source that differs from neither in a breaking way for
    // clients of the LCD.
    let dir = tempfile::tempdir().unwrap();
    let lcd = dir.path().join("lcd.yaml");
    std::fs::write(&lcd, &text).unwrap();
    for other in ["widgets-a.yaml", "widgets-b.yaml"] {
        let (_, report) = json_report(&[
            "-f",
            lcd.to_str().unwrap(),
            "-f",
            other,
            "--ignore",
            "version-added",
        ]);
        let breaking: Vec<String> = rules(&report)
            .into_iter()
            .filter(|r| r.ends_with("breaking"))
            .collect();
        // .spec.replicas is declared but unsettable in the LCD; everything else only widens.
        assert!(
            breaking.iter().all(|r| r.contains(".spec.replicas")),
            "{other}: {breaking:#?}"
        );
    }
    let json = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "--lcd",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0], docs[0]);
}

/// Numbers count by their value: a CRD with its numbers spelt otherwise (`1.0`, `1e1`) and a
/// `minLength: 0` added is no difference, and the LCD of the two keeps every enum member.
#[test]
fn witness_dir_gets_one_manifest_per_witness_and_an_unwritable_one_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let witnesses = dir.path().join("witnesses");
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "-o",
            "json",
            "--witness-dir",
        ])
        .arg(&witnesses)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut expected = Vec::new();
    for api in report["apis"].as_array().unwrap() {
        let name = api["name"].as_str().unwrap();
        for (n, f) in api["findings"].as_array().unwrap().iter().enumerate() {
            let Some(w) = f.get("witness") else { continue };
            let version = f["version"].as_str().unwrap_or("api");
            let rule = f["rule"].as_str().unwrap();
            let file = format!("{name}.{version}.{n}.{rule}.yaml");
            let text = std::fs::read_to_string(witnesses.join(&file))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let expect = match w["expect"].as_str().unwrap() {
                "rejected" => "rejected",
                _ => "stored differently",
            };
            let heading = format!(
                "# {name} {version} {} {rule}: accepted by widgets-a.yaml, {expect} by {}\n",
                f["path"].as_str().unwrap(),
                w["source"].as_str().unwrap()
            );
            assert!(text.starts_with(&heading), "{file}:\n{text}");
            let object: Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(object, w["object"], "{file}");
            expected.push(file);
        }
    }
    assert!(
        expected.len() >= 5,
        "the breaking findings have witnesses: {expected:?}"
    );
    let mut written: Vec<String> = std::fs::read_dir(&witnesses)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    expected.sort();
    assert_eq!(written, expected);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "wrote {} witness manifests to {}",
            expected.len(),
            witnesses.display()
        )),
        "{stderr}"
    );

    // Under a regular file no directory can be made: an error naming it, and no report.
    let blocked = dir.path().join("a-file");
    std::fs::write(&blocked, "").unwrap();
    let under = blocked.join("witnesses");
    plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
        ])
        .arg("--witness-dir")
        .arg(&under)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(format!(
            "--witness-dir {}: Not a directory",
            under.display()
        )));
}

#[test]
fn numbers_spelt_otherwise_and_zero_lower_bounds_are_no_difference() {
    let crd = |ratio: [&str; 4], max_items: &str, name: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: gauges
    kind: Gauge
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ratio:
                type: number
                enum: [{}, {}, {}]
                default: {}
              tags:
                type: array
                maxItems: {max_items}
                items:
                  type: string
              name:
                type: string
{name}",
            ratio[0], ratio[1], ratio[2], ratio[3]
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    std::fs::write(&a, crd(["0.5", "1", "2", "1"], "10", "")).unwrap();
    std::fs::write(
        &b,
        crd(
            ["0.5", "1.0", "2.0", "1.0"],
            "1e1",
            "                minLength: 0\n",
        ),
    )
    .unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, report) = json_report(&["-f", a, "-f", b, "--fail-on", "any"]);
    assert_eq!((code, rules(&report)), (0, Vec::new()));
    let out = plugin()
        .args(["schema-diff", "-f", a, "-f", b, "--lcd"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let spec = &docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"],
        serde_json::json!({
            "ratio": {"type": "number", "enum": [0.5, 1, 2], "default": 1},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string"}},
            "name": {"type": "string"}
        })
    );
}

#[test]
fn lcd_without_a_common_version_exits_1_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let only_v9 = std::fs::read_to_string(data("widgets-a.yaml"))
        .unwrap()
        .replace("- name: v1\n", "- name: v9\n")
        .replace("name: v1alpha1", "name: v8");
    std::fs::write(dir.path().join("v9.yaml"), only_v9).unwrap();
    plugin()
        .args(["schema-diff", "-f", "widgets-b.yaml", "--lcd", "-f"])
        .arg(dir.path().join("v9.yaml"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "no LCD: no version is served by every source",
        ));
}

#[test]
fn objects_are_checked_against_every_source_locally() {
    let (code, report) = json_report(&[
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "--object",
        "widget-in-lcd.yaml",
        "--object",
        "widget-outside-lcd.yaml",
    ]);
    assert_eq!(code, 1, "an object is rejected somewhere");
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects[0]["object"], "Widget/common");
    assert!(
        objects[0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["local"] == "accepted")
    );
    assert_eq!(objects[1]["results"][0]["local"], "rejected");
    assert_eq!(
        objects[1]["results"][0]["localReasons"][0],
        ".spec.tier: unknown field (rejected with fieldValidation=Strict)"
    );
    assert_eq!(objects[1]["results"][1]["local"], "accepted");
    plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "--object",
            "widget-in-lcd.yaml",
        ])
        .assert()
        .code(0);
}

#[test]
fn sources_can_be_directories_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("widgets-a.yaml"), dir.path().join("a.yaml")).unwrap();
    std::fs::write(dir.path().join("README.txt"), "not a manifest").unwrap();
    let out = plugin()
        .args(["schema-diff", "-f"])
        .arg(dir.path())
        .args(["-f", "-", "-o", "json"])
        .write_stdin(std::fs::read_to_string(data("widgets-b.yaml")).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sources"][1]["label"], "stdin");
    assert_eq!(report["summary"]["breaking"], 6);
}

/// `kubectl get crds -o json` prints a List, which is read item by item; it must give what the
/// same CRDs give as YAML files, and a bad item must be named as the ordinary reader names it.
#[test]
fn json_lists_of_crds_read_as_their_yaml_files() {
    let dir = tempfile::tempdir().unwrap();
    let list_of = |items: Vec<Value>| {
        serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }))
        .unwrap()
    };
    let crd = |name: &str| -> Value {
        serde_saphyr::from_str(&std::fs::read_to_string(data(name)).unwrap()).unwrap()
    };
    for (name, file) in [("a.json", "widgets-a.yaml"), ("b.json", "widgets-b.yaml")] {
        std::fs::write(dir.path().join(name), list_of(vec![crd(file)])).unwrap();
    }
    let from_yaml = json_report(&["-f", "widgets-a.yaml", "-f", "widgets-b.yaml"]);
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let from_json = json_report(&["-f", a.to_str().unwrap(), "-f", b.to_str().unwrap()]);
    assert_eq!(from_json.0, from_yaml.0);
    assert_eq!(rules(&from_json.1), rules(&from_yaml.1));
    assert!(!rules(&from_json.1).is_empty());
    assert_eq!(from_json.1["summary"], from_yaml.1["summary"]);

    let config_map = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"});
    std::fs::write(&b, list_of(vec![crd("widgets-b.yaml"), config_map])).unwrap();
    let out = plugin()
        .args(["schema-diff", "-f", "widgets-a.yaml", "-f"])
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{} items[1]: is a ConfigMap (v1)", b.display())),
        "{stderr}"
    );
}

/// Lists from different clusters differ in each item's metadata and status even where the CRD
/// is the same; a spec read once serves every such item, but never one whose metadata makes it
/// a different (or an invalid) CRD.
#[test]
fn a_crd_spec_seen_in_several_json_lists_keeps_each_items_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let widgets: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(data("widgets-a.yaml")).unwrap()).unwrap();
    let name = widgets["metadata"]["name"].as_str().unwrap().to_string();
    let item = |uid: &str, metadata_name: &str, approved: Option<&str>| {
        let mut crd = widgets.clone();
        crd["metadata"]["uid"] = uid.into();
        crd["metadata"]["name"] = metadata_name.into();
        if let Some(approved) = approved {
            crd["metadata"]["annotations"] =
                serde_json::json!({"api-approved.kubernetes.io": approved});
        }
        crd["status"] = serde_json::json!({"storedVersions": [uid]});
        crd
    };
    let write = |file: &str, items: Vec<Value>| {
        let list = serde_json::json!({"apiVersion": "v1", "items": items, "kind": "List"});
        let path = dir.path().join(file);
        std::fs::write(&path, serde_json::to_string_pretty(&list).unwrap()).unwrap();
        path.display().to_string()
    };
    let a = write("a.json", vec![item("1", &name, None)]);
    let b = write("b.json", vec![item("2", &name, None)]);
    let c = write("c.json", vec![item("3", &name, None)]);
    let (code, report) = json_report(&["-f", &a, "-f", &b, "-f", &c, "--fail-on", "any"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["apis"][0]["name"], name.as_str());
    assert_eq!(report["apis"][0]["presence"].as_array().unwrap().len(), 3);

    // The same spec under another name is not that CRD, and not a valid one. (Items of one
    // List are read in order, so the valid one is seen first.)
    let wrong = write(
        "wrong.json",
        vec![item("4", &name, None), item("5", "wrong.example.com", None)],
    );
    let out = plugin()
        .args(["schema-diff", "-f", &a, "-f", &wrong])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{wrong} items[1] (wrong.example.com): metadata.name"
        )),
        "{stderr}"
    );

    // The API approval is metadata too, and the LCD carries it when a source has it. The
    // same CRD without it comes first in the List (a later item of a name replaces an earlier
    // one).
    let approved = write(
        "approved.json",
        vec![
            item("6", &name, None),
            item("7", &name, Some("https://example.com/pull/1")),
        ],
    );
    let out = plugin()
        .args([
            "schema-diff",
            "-f",
            &a,
            "-f",
            &approved,
            "-f",
            &b,
            "--lcd",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lcd: Value = serde_json::from_slice(&out.stdout).unwrap();
    let approval = &lcd["items"][0]["metadata"]["annotations"]["api-approved.kubernetes.io"];
    assert_eq!(approval, "https://example.com/pull/1", "{lcd:#}");
}

/// Files with the same bytes are parsed once and share what was found in them; files of the
/// same length that differ must not, and a bad file is reported under its own name even when
/// an identical one is in an earlier source.
#[test]
fn identical_files_in_several_sources_are_read_once_but_reported_as_their_own() {
    let widgets = std::fs::read_to_string(data("widgets-a.yaml")).unwrap();
    // One byte changes, so the length stays: maximum 100 becomes 900.
    let wider = widgets.replacen("maximum: 100}", "maximum: 900}", 1);
    assert_ne!(wider, widgets);
    assert_eq!(wider.len(), widgets.len());
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    for (dir, text) in dirs.iter().zip([&widgets, &widgets, &wider]) {
        std::fs::write(dir.path().join("widgets.yaml"), text).unwrap();
    }
    let args: Vec<String> = dirs
        .iter()
        .flat_map(|d| ["-f".to_string(), d.path().display().to_string()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, report) = json_report(&args);
    assert_eq!(code, 0, "a wider maximum is compatible: {report:#}");
    assert_eq!(
        rules(&report),
        ["maximum-widened .spec.size compatible"],
        "only the third source differs"
    );
    assert_eq!(report["apis"][0]["presence"].as_array().unwrap().len(), 3);

    let broken = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: [\n";
    for dir in &dirs[1..] {
        std::fs::write(dir.path().join("broken.yaml"), broken).unwrap();
    }
    let out = plugin().arg("schema-diff").args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = dirs[1].path().join("broken.yaml");
    assert!(
        stderr.contains(&format!("{}: invalid YAML", first.display())),
        "{stderr}"
    );
}

#[test]
fn selection_by_name_and_group() {
    let (_, by_name) = json_report(&[
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "widgets.km.example.com",
    ]);
    assert_eq!(by_name["apis"].as_array().unwrap().len(), 1);
    let (code, by_group) = json_report(&[
        "-f",
        "widgets-a.yaml",
        "-f",
        "widgets-b.yaml",
        "--group",
        "other.example.com",
    ]);
    assert_eq!((code, by_group["apis"].as_array().unwrap().len()), (0, 0));
    plugin()
        .args([
            "schema-diff",
            "-f",
            "widgets-a.yaml",
            "-f",
            "widgets-b.yaml",
            "gadgets.km.example.com",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no source has a CRD named \"gadgets.km.example.com\"",
        ));
}

#[test]
fn built_in_types_from_openapi_documents_of_two_real_api_servers() {
    let (code, report) = json_report(&[
        "-f",
        "openapi/v1.34/apis-apps-v1.json",
        "-f",
        "openapi/v1.36/apis-apps-v1.json",
        "--builtin",
        "apps/v1/statefulsets",
    ]);
    assert_eq!(code, 0, "1.34 -> 1.36 only adds to StatefulSet");
    assert_eq!(report["apis"][0]["name"], "apps/v1/statefulsets");
    assert_eq!(report["apis"][0]["kind"], "StatefulSet");
    let found = rules(&report);
    for want in [
        "field-added .spec.template.spec.schedulingGroup compatible",
        "field-added .spec.template.spec.volumes[*].projected.sources[*].podCertificate.userAnnotations compatible",
        "enum-widened .spec.template.spec.tolerations[*].operator compatible",
    ] {
        assert!(
            found.contains(&want.to_string()),
            "missing {want:?} in {found:#?}"
        );
    }
    let (code, pods) = json_report(&[
        "-f",
        "openapi/v1.34/api-v1.json",
        "-f",
        "openapi/v1.36/api-v1.json",
        "--builtin",
        "core/v1/pods",
    ]);
    assert_eq!(code, 0);
    let found = rules(&pods);
    for want in [
        "field-added .status.resources compatible",
        "field-added .status.allocatedResources compatible",
        "field-added .spec.schedulingGroup compatible",
    ] {
        assert!(
            found.contains(&want.to_string()),
            "missing {want:?} in {found:#?}"
        );
    }
    // And the other way round, 1.36 as the baseline: fields a 1.34 server does not know.
    let (code, back) = json_report(&[
        "-f",
        "openapi/v1.36/apis-batch-v1.json",
        "-f",
        "openapi/v1.34/apis-batch-v1.json",
        "--builtin",
        "batch/v1/cronjobs",
    ]);
    assert_eq!(code, 1);
    let found = rules(&back);
    assert!(
        found.contains(
            &"field-removed .spec.jobTemplate.spec.template.spec.schedulingGroup breaking"
                .to_string()
        ),
        "{found:#?}"
    );
    assert!(
        found.contains(
            &"enum-narrowed .spec.jobTemplate.spec.template.spec.tolerations[*].operator breaking"
                .to_string()
        ),
        "{found:#?}"
    );
}

#[test]
fn bad_input_names_the_file_and_exits_2() {
    let cases: [(&[&str], &str); 9] = [
        (
            &["-f", "widgets-a.yaml", "-f", "malformed.yaml"],
            "malformed.yaml: invalid YAML",
        ),
        (
            &["-f", "widgets-a.yaml", "-f", "not-structural.yaml"],
            "not-structural.yaml (gadgets.km.example.com): the CRD is not a valid structural schema",
        ),
        (
            &["-f", "widgets-a.yaml", "-f", "deployment.yaml"],
            "deployment.yaml: is a Deployment (apps/v1), not a CustomResourceDefinition",
        ),
        (
            &["-f", "widgets-a.yaml", "-f", "missing.yaml"],
            "missing.yaml: No such file",
        ),
        (&["-f", "widgets-a.yaml"], "needs at least two sources"),
        (
            &[
                "-f",
                "widgets-a.yaml",
                "-f",
                "widgets-b.yaml",
                "--ignore",
                "nonsense",
            ],
            "--ignore \"nonsense\" is not a rule",
        ),
        (
            &[
                "-f",
                "widgets-a.yaml",
                "-f",
                "widgets-b.yaml",
                "--builtin",
                "StatefulSet",
            ],
            "expected GROUP/VERSION/RESOURCE",
        ),
        (
            &[
                "-f",
                "widgets-a.yaml",
                "-f",
                "widgets-b.yaml",
                "--baseline",
                "x.yaml",
            ],
            "--baseline \"x.yaml\" is not one of the sources",
        ),
        (
            &["--context", "km-a", "--context", "km-b"],
            "context \"km-a\" not found in KUBECONFIG=/nonexistent/kubeconfig (none of its files exist)",
        ),
    ];
    for (args, message) in cases {
        plugin()
            .arg("schema-diff")
            .args(args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(message));
    }
}

#[test]
fn markdown_is_only_for_schema_diff() {
    plugin()
        .args(["version", "--client", "-o", "markdown"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid value 'markdown' for '--output <FORMAT>'",
        ))
        .stderr(predicate::str::contains(
            "possible values: table, json, yaml",
        ));
}

#[test]
fn watch_flags_are_checked_before_any_cluster_is_asked() {
    let two = ["--context", "x", "--context", "y"];
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["--watch", "-f", "widgets-a.yaml", "-f", "widgets-b.yaml"],
            "--watch follows clusters: give at least one --context",
        ),
        (
            [&two[..], &["--watch", "--builtin", "apps/v1/statefulsets"]].concat(),
            "built-in types (--builtin) are compared without it",
        ),
        (
            [&two[..], &["--watch", "--lcd"]].concat(),
            "it does not go with --lcd (use --lcd-dir)",
        ),
        (
            [&two[..], &["--watch", "-o", "yaml"]].concat(),
            "--watch prints readable lines (-o table) or NDJSON (-o json)",
        ),
        (
            [&two[..], &["--debounce", "2s"]].concat(),
            "the following required arguments were not provided",
        ),
        (
            [&two[..], &["--watch", "--exit-on", "sometimes"]].concat(),
            "invalid value 'sometimes' for '--exit-on <WHAT>'",
        ),
    ];
    for (args, message) in cases {
        plugin()
            .arg("schema-diff")
            .args(&args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(message));
    }
}
