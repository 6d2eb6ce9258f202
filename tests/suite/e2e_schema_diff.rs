//! `schema-diff` against real API servers: two releases of one CRD installed in clusters A and
//! B, the findings checked, and the tool's claims about the LCD checked on the servers
//! themselves (installed on a third cluster, objects dry-run created with
//! fieldValidation=Strict).
use crate::support;

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::{Value, json};
use support::{
    CONTEXT_A, CONTEXT_B, CONTEXT_C, TestNamespace, client, kubeconfig_path, poll_until,
};

fn data(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/schema")
            .join(name),
    )
    .unwrap()
}

/// The fixture with its API group made unique, so reruns and other tests never collide.
fn with_group(text: &str, group: &str) -> String {
    text.replace("km.example.com", group)
}

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(kubeconfig_path());
    cmd
}

/// `schema-diff --context km-a --context km-b`.
fn a_and_b() -> Command {
    let mut cmd = plugin();
    cmd.args([
        "schema-diff",
        "--context",
        CONTEXT_A,
        "--context",
        CONTEXT_B,
    ]);
    cmd
}

/// Installs a CRD and waits until it is Established; deletes it when the guard drops.
struct InstalledCrd {
    context: &'static str,
    name: String,
}

impl InstalledCrd {
    async fn install(client: &Client, context: &'static str, yaml: &str) -> InstalledCrd {
        let crd: CustomResourceDefinition = serde_saphyr::from_str(yaml).expect("CRD YAML");
        let name = crd.metadata.name.clone().unwrap();
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        api.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("install {name} on {context}: {e}"));
        poll_until(
            Duration::from_secs(30),
            &format!("{name} Established on {context}"),
            || async {
                api.get(&name)
                    .await
                    .ok()
                    .and_then(|c| c.status)
                    .and_then(|s| s.conditions)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
        )
        .await;
        InstalledCrd { context, name }
    }
}

impl Drop for InstalledCrd {
    fn drop(&mut self) {
        let _ = std::process::Command::new(support::cluster_bin_dir().join("kubectl"))
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args([
                "--context",
                self.context,
                "delete",
                "crd",
                &self.name,
                "--wait=false",
            ])
            .output();
    }
}

fn finding<'a>(
    report: &'a Value,
    version: Option<&str>,
    path: &str,
    rule: &str,
) -> Option<&'a Value> {
    report["apis"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["rule"] == rule
                && f["path"] == path
                && f.get("version").and_then(Value::as_str) == version
        })
}

/// Each source's value of a finding as the table shows it.
fn texts(f: &Value) -> Vec<Value> {
    values_of(f, "text")
}

/// Each source's value of a finding as data.
fn data_values(f: &Value) -> Vec<Value> {
    values_of(f, "value")
}

fn values_of(f: &Value, key: &str) -> Vec<Value> {
    f["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].clone())
        .collect()
}

/// A server-side dry-run create with fieldValidation=Strict, the way a client writing to every
/// cluster would be judged.
async fn strict_dry_run(
    client: &Client,
    namespace: &str,
    group: &str,
    object: &Value,
) -> Result<(), String> {
    // kube's PostParams has no fieldValidation, so the query is spelled out.
    let request = http::Request::post(format!(
        "/apis/{group}/v1/namespaces/{namespace}/widgets?dryRun=All&fieldValidation=Strict"
    ))
    .header("Content-Type", "application/json")
    .body(serde_json::to_vec(object).unwrap())
    .unwrap();
    match client.request_text(request).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(s.message),
        Err(e) => panic!("dry run failed for another reason: {e}"),
    }
}

#[tokio::test]
async fn two_releases_of_a_crd_are_told_apart_and_the_lcd_holds_on_every_server() {
    let (a, b, c) = (
        client(CONTEXT_A).await,
        client(CONTEXT_B).await,
        client(CONTEXT_C).await,
    );
    let group = format!("t{}.km.example.com", support::unique_suffix());
    let crd_name = format!("widgets.{group}");
    let _in_a =
        InstalledCrd::install(&a, CONTEXT_A, &with_group(&data("widgets-a.yaml"), &group)).await;
    let _in_b =
        InstalledCrd::install(&b, CONTEXT_B, &with_group(&data("widgets-b.yaml"), &group)).await;

    // The findings, read from the live clusters.
    let output = plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "--context",
            CONTEXT_B,
            &crd_name,
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "breaking differences exit 1: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["schemaVersion"], 2);
    assert_eq!(report["baseline"], CONTEXT_A);
    assert_eq!(report["sources"][0]["type"], "cluster");
    let expected = [
        (
            Some("v1"),
            ".spec.tier",
            "field-added",
            "compatible",
            vec![Value::Null, "string".into()],
        ),
        (
            Some("v1"),
            ".spec.legacy",
            "field-removed",
            "breaking",
            vec!["string".into(), Value::Null],
        ),
        (
            Some("v1"),
            ".spec.replicas",
            "type-changed",
            "breaking",
            vec!["integer".into(), "string".into()],
        ),
        (
            Some("v1"),
            ".spec.color",
            "enum-narrowed",
            "breaking",
            vec!["red, green, blue".into(), "red, green".into()],
        ),
        (
            Some("v1"),
            ".spec.owner",
            "required-added",
            "breaking",
            vec!["optional".into(), "required".into()],
        ),
        (
            Some("v1"),
            ".spec.size",
            "maximum-narrowed",
            "breaking",
            vec!["100".into(), "50".into()],
        ),
        (
            Some("v1"),
            ".spec",
            // replicas changes type, so the rule cannot run on the baseline's string.
            "x-kubernetes-validations-undecided",
            "unproven",
            vec![Value::Null, "!has(self.replicas) || self.size >= 2".into()],
        ),
        (
            Some("v2"),
            "",
            "version-added",
            "compatible",
            vec![Value::Null, "served, storage".into()],
        ),
        (
            Some("v1alpha1"),
            "",
            "version-removed",
            "breaking",
            vec!["served".into(), Value::Null],
        ),
        (
            None,
            "",
            "storageVersion-changed",
            "informational",
            vec!["v1".into(), "v2".into()],
        ),
    ];
    for (version, path, rule, class, want_values) in expected {
        let f = finding(&report, version, path, rule)
            .unwrap_or_else(|| panic!("missing {rule} at {version:?} {path}: {report:#}"));
        assert_eq!(f["class"], class, "{rule} at {path}");
        let got = texts(f);
        // CEL rule values list every rule; a missing value is JSON null either way.
        if rule.starts_with("x-kubernetes-validations-") {
            assert!(got[0].is_null() || got[0] == "-", "{got:?}");
            assert_eq!(got[1], want_values[1]);
        } else {
            assert_eq!(got, want_values, "{rule} at {path}");
        }
    }
    // The JSON carries the values as data, not as the table's words.
    let data_of = |version, path, rule| {
        data_values(finding(&report, version, path, rule).unwrap_or_else(|| panic!("{rule}")))
    };
    assert_eq!(
        data_of(Some("v1"), ".spec.color", "enum-narrowed"),
        [json!(["red", "green", "blue"]), json!(["red", "green"])]
    );
    assert_eq!(
        data_of(Some("v1"), ".spec.owner", "required-added"),
        [json!(false), json!(true)]
    );
    assert_eq!(
        data_of(Some("v1"), ".spec.size", "maximum-narrowed"),
        [
            json!({"value": 100, "exclusive": false}),
            json!({"value": 50, "exclusive": false})
        ]
    );
    assert_eq!(
        data_of(Some("v1"), ".spec", "x-kubernetes-validations-undecided")[1][0]["rule"],
        "!has(self.replicas) || self.size >= 2"
    );
    assert_eq!(
        data_of(Some("v2"), "", "version-added"),
        [Value::Null, json!({"served": true, "storage": true})]
    );
    assert_eq!(
        report["apis"][0]["presence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["source"].clone())
            .collect::<Vec<_>>(),
        [CONTEXT_A, CONTEXT_B]
    );

    // The LCD, installed on a third cluster: the server accepts it.
    let lcd = plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "--context",
            CONTEXT_B,
            &crd_name,
            "--lcd",
        ])
        .output()
        .unwrap();
    assert_eq!(
        lcd.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lcd.stderr)
    );
    let stderr = String::from_utf8_lossy(&lcd.stderr);
    for dropped in [".spec.legacy", ".spec.tier", ".spec.replicas"] {
        assert!(
            stderr.contains(&format!("dropped v1 {dropped}")),
            "{dropped} not listed as dropped: {stderr}"
        );
    }
    let manifest = String::from_utf8(lcd.stdout).unwrap();
    let _in_c = InstalledCrd::install(&c, CONTEXT_C, manifest.trim_start_matches("---\n")).await;

    // Objects valid under the LCD: every cluster accepts them, strictly.
    let namespaces = [
        TestNamespace::create(&a, CONTEXT_A, "schema").await,
        TestNamespace::create(&b, CONTEXT_B, "schema").await,
        TestNamespace::create(&c, CONTEXT_C, "schema").await,
    ];
    let object = |spec: Value| serde_json::json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    let within_lcd = [
        serde_json::json!({"size": 10, "owner": "team-a"}),
        serde_json::json!({"size": 50, "owner": "x", "color": "green", "labels": {"a": "b"}}),
        serde_json::json!({"size": 1, "owner": "", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
        serde_json::json!({"size": 2, "owner": "o", "color": "red", "ports": []}),
    ];
    for spec in &within_lcd {
        for (client, ns) in [
            (&a, &namespaces[0]),
            (&b, &namespaces[1]),
            (&c, &namespaces[2]),
        ] {
            strict_dry_run(client, &ns.name, &group, &object(spec.clone()))
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "{spec} is valid under the LCD but {} rejects it: {e}",
                        ns.name
                    )
                });
        }
    }
    // Objects that use a field outside the LCD: at least one cluster rejects each, and so does
    // the LCD cluster.
    let outside_lcd = [
        (
            "tier",
            serde_json::json!({"size": 10, "owner": "o", "tier": "gold"}),
        ),
        (
            "legacy",
            serde_json::json!({"size": 10, "owner": "o", "legacy": "x"}),
        ),
        (
            "replicas",
            serde_json::json!({"size": 10, "owner": "o", "replicas": 3}),
        ),
        (
            "color blue",
            serde_json::json!({"size": 10, "owner": "o", "color": "blue"}),
        ),
        ("size 80", serde_json::json!({"size": 80, "owner": "o"})),
        ("no owner", serde_json::json!({"size": 10})),
    ];
    for (what, spec) in &outside_lcd {
        let mut rejected_by = Vec::new();
        for (client, ns, ctx) in [
            (&a, &namespaces[0], CONTEXT_A),
            (&b, &namespaces[1], CONTEXT_B),
        ] {
            if strict_dry_run(client, &ns.name, &group, &object(spec.clone()))
                .await
                .is_err()
            {
                rejected_by.push(ctx);
            }
        }
        assert!(
            !rejected_by.is_empty(),
            "{what}: outside the LCD, yet both clusters accept it"
        );
        assert!(
            strict_dry_run(&c, &namespaces[2].name, &group, &object(spec.clone()))
                .await
                .is_err(),
            "{what}: the LCD CRD accepts an object that {rejected_by:?} rejects"
        );
    }

    // --object --server reports the same, per source.
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("inside.yaml");
    let outside = dir.path().join("outside.yaml");
    std::fs::write(&inside, with_group(&data("widget-in-lcd.yaml"), &group)).unwrap();
    std::fs::write(
        &outside,
        with_group(&data("widget-outside-lcd.yaml"), &group),
    )
    .unwrap();
    let checked = plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "--context",
            CONTEXT_B,
            "--object",
        ])
        .arg(&inside)
        .arg("--object")
        .arg(&outside)
        .args(["--server", "-n", &namespaces[0].name, "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        checked.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let verdicts: Value = serde_json::from_slice(&checked.stdout).unwrap();
    let objects = verdicts["objects"].as_array().unwrap();
    for r in objects[0]["results"].as_array().unwrap() {
        assert_eq!(r["local"], "accepted", "{r}");
    }
    let outside_results = objects[1]["results"].as_array().unwrap();
    assert_eq!(outside_results[0]["source"], CONTEXT_A);
    assert_eq!(outside_results[0]["local"], "rejected");
    assert!(
        outside_results[0]["localReasons"][0]
            .as_str()
            .unwrap()
            .contains(".spec.tier: unknown field")
    );
    assert_eq!(outside_results[1]["local"], "accepted");
}

#[tokio::test]
async fn the_server_dry_run_of_object_uses_each_clusters_namespace_and_strict_validation() {
    let (a, b) = (client(CONTEXT_A).await, client(CONTEXT_B).await);
    let group = format!("t{}.km.example.com", support::unique_suffix());
    let _in_a =
        InstalledCrd::install(&a, CONTEXT_A, &with_group(&data("widgets-a.yaml"), &group)).await;
    let _in_b =
        InstalledCrd::install(&b, CONTEXT_B, &with_group(&data("widgets-b.yaml"), &group)).await;
    let name = format!("srv-{}", support::unique_suffix());
    let _ns_a = TestNamespace::create_named(&a, CONTEXT_A, &name).await;
    let _ns_b = TestNamespace::create_named(&b, CONTEXT_B, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("o.yaml");
    // A string `replicas` with size 1: A rejects the type (locally and on the server); B's
    // schema's CEL rule (replicas need size >= 2) rejects it, locally and on the server.
    std::fs::write(
        &object,
        format!("apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{size: 1, owner: o, replicas: \"3\"}}\n"),
    )
    .unwrap();
    let out = a_and_b()
        .args(["--server", "-n", &name, "-o", "json", "--object"])
        .arg(&object)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["objects"][0]["results"].as_array().unwrap();
    // A: the type is wrong, locally and on the server.
    assert_eq!(
        (results[0]["local"].as_str(), results[0]["server"].as_str()),
        (Some("rejected"), Some("rejected"))
    );
    // B: the CEL rule rejects it, evaluated here as on the server.
    assert_eq!(results[1]["local"], "rejected", "{results:#?}");
    assert_eq!(results[1]["server"], "rejected");
    assert!(
        results[1]["serverMessage"]
            .as_str()
            .unwrap()
            .contains("replicas need a size of at least 2"),
        "{results:#?}"
    );
}

#[test]
fn an_unknown_context_is_an_error_that_names_it_and_exits_2() {
    plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "--context",
            "km-nowhere",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "context \"km-nowhere\" not found",
        ));
}

/// A built-in type through a live cluster's OpenAPI v3 (v1.36) against a document captured from
/// a real v1.34 kube-apiserver by tests/cluster/capture-openapi.sh.
#[tokio::test]
async fn built_in_jobs_of_a_live_v1_36_cluster_against_a_captured_v1_34_server() {
    let _ = client(CONTEXT_A).await;
    let captured = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/schema/openapi/v1.34/apis-batch-v1.json");
    let baseline = captured.display().to_string();
    let out = plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "-f",
            &baseline,
            "--baseline",
            &baseline,
        ])
        .args(["--builtin", "batch/v1/jobs", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "only compatible changes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["apis"][0]["name"], "batch/v1/jobs");
    assert_eq!(
        report["sources"][0]["version"],
        support::pinned_kubernetes_version()
    );
    // Fields Kubernetes added between 1.34 and 1.36 (source order: the cluster, then the file).
    for (path, rule, cluster_value) in [
        (
            ".spec.template.spec.schedulingGroup",
            "field-added",
            "object",
        ),
        (
            ".spec.template.spec.volumes[*].projected.sources[*].podCertificate.userAnnotations",
            "field-added",
            "object",
        ),
        (
            ".spec.template.spec.tolerations[*].operator",
            "enum-widened",
            "Equal, Exists, Gt, Lt",
        ),
        (
            ".spec.podFailurePolicy.rules[*].onPodConditions[*].status",
            "required-removed",
            "optional",
        ),
    ] {
        let f = finding(&report, Some("v1"), path, rule)
            .unwrap_or_else(|| panic!("missing {rule} at {path}: {report:#}"));
        assert_eq!(f["class"], "compatible");
        assert_eq!(texts(f)[0], cluster_value, "{path}");
    }
}

/// A CRD whose default its own field rejects: the API server refuses it, and the tool's parser
/// refuses it at the same fields (so that an LCD is never computed from a source no server has).
#[tokio::test]
async fn a_default_its_field_rejects_is_refused_at_the_same_fields_as_the_server() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "integer", "default": {}},
        "b": {"type": "object", "properties": {"x": {"type": "string", "enum": ["p"]}},
              "default": {"x": "q"}},
        "c": {"type": "string", "enum": ["ok"], "default": "ok"}
    }});
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "defaults.km-defaults.example.com"},
        "spec": {"group": "km-defaults.example.com", "scope": "Namespaced",
            "names": {"kind": "Default", "plural": "defaults"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}
    }))
    .unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client(CONTEXT_A).await);
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let server = match api.create(&dry_run, &crd).await {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("the server accepted the CRD or failed otherwise: {other:?}"),
    };
    let ours = kubectl_migrate::schema::parse::parse_crd_schema(
        &schema,
        "spec.validation.openAPIV3Schema",
    )
    .unwrap_err();
    let paths: Vec<String> = ours
        .iter()
        .map(|e| e.to_string().split(": ").next().unwrap().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "spec.validation.openAPIV3Schema.properties[a].default",
            "spec.validation.openAPIV3Schema.properties[b].default.x"
        ]
    );
    for path in &paths {
        assert!(
            server.contains(&format!("{path}: ")),
            "the server does not name {path}: {server}"
        );
    }
    assert!(
        !server.contains("properties[c]"),
        "a valid default is refused: {server}"
    );
}

/// A GET of `path` on the server: Ok with the body, or the refusal's code and message.
async fn get(client: &Client, path: &str) -> Result<Value, (u16, String)> {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    match client.request_text(request).await {
        Ok(body) => Ok(serde_json::from_str(&body).unwrap()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(e) => panic!("GET {path} failed for another reason: {e}"),
    }
}

/// A default removed (cert-manager's issuerRef.group) and a selectable field removed: each its
/// own class, with a witness the servers show. Server-side, the baseline stores the witness
/// with the default and the other without it (a dry-run create each), and a list with the
/// witness's field selector is served by one and refused by the other; `--prove` asks the
/// same and says proven.
#[tokio::test]
async fn a_default_and_a_selectable_field_removed_are_shown_by_what_each_server_stores_and_selects()
{
    let (a, b) = (client(CONTEXT_A).await, client(CONTEXT_B).await);
    let group = format!("t{}.km.example.com", support::unique_suffix());
    let crd_name = format!("certificates.{group}");
    let _in_a = InstalledCrd::install(
        &a,
        CONTEXT_A,
        &with_group(&data("certificates-old.yaml"), &group),
    )
    .await;
    let _in_b = InstalledCrd::install(
        &b,
        CONTEXT_B,
        &with_group(&data("certificates-new.yaml"), &group),
    )
    .await;
    let out = a_and_b()
        .arg(&crd_name)
        .args([
            "--prove",
            "--fail-on",
            "changes-stored-data,changes-selection",
        ])
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "exit 1, no defect: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let witness = |rule: &str, class: &str| {
        let f = finding(&report, Some("v1"), "", rule)
            .or_else(|| finding(&report, Some("v1"), ".spec.issuerRef.group", rule))
            .unwrap_or_else(|| panic!("no {rule}: {report:#}"));
        assert_eq!(f["class"], class, "{f:#}");
        assert_eq!(f["witness"]["proof"]["verdict"], "proven", "{f:#}");
        f["witness"].clone()
    };
    let stored = witness("default-removed", "changes-stored-data");
    let selected = witness("selectableFields-removed", "changes-selection");

    // What each server stores, asked here without the tool.
    let path = format!(
        "/apis/{group}/v1/namespaces/default/certificates?dryRun=All&fieldValidation=Strict"
    );
    let mut as_stored = Vec::new();
    for c in [&a, &b] {
        let request = http::Request::post(&path)
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&stored["object"]).unwrap())
            .unwrap();
        let body = c
            .request_text(request)
            .await
            .expect("both servers accept it");
        let object: Value = serde_json::from_str(&body).unwrap();
        as_stored.push(object["spec"]["issuerRef"].clone());
    }
    assert_eq!(
        as_stored,
        [
            json!({"name": "a", "group": "cert-manager.io"}),
            json!({"name": "a"})
        ]
    );
    for (i, side) in stored["stored"].as_array().unwrap().iter().enumerate() {
        assert_eq!(side["object"]["spec"]["issuerRef"], as_stored[i], "{side}");
    }

    // The field selector: served by the baseline, refused by the other.
    let selector = selected["fieldSelector"].as_str().unwrap();
    assert_eq!(selector, "spec.secretName=a");
    let list = format!("/apis/{group}/v1/namespaces/default/certificates?fieldSelector={selector}");
    assert!(
        get(&a, &list).await.is_ok(),
        "{CONTEXT_A} serves {selector}"
    );
    let (code, message) = get(&b, &list).await.expect_err("km-b refuses it");
    assert_eq!(code, 400, "{message}");
    assert!(message.contains("spec.secretName"), "{message}");
}

/// `--object` reads a `pattern` as the API server does (Go's ASCII `\d`, not every Unicode
/// digit) and compares enum members by value inside lists and objects too (`[1.0]` is sent as
/// kubectl sends it, `[1]`): the local verdict of each object is the server's dry-run verdict.
#[tokio::test]
async fn the_local_validator_reads_patterns_and_enum_numbers_as_the_server_does() {
    let a = client(CONTEXT_A).await;
    let group = format!("v{}.km.example.com", support::unique_suffix());
    let crd = format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: probes.{group}}}
spec:
  group: {group}
  names: {{kind: Probe, plural: probes}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          digits: {{type: string, pattern: '^\d+$'}}
          pair: {{type: array, items: {{type: number}}, enum: [[1, 2.5], [3]]}}
"#
    );
    let _crd = InstalledCrd::install(&a, CONTEXT_A, &crd).await;
    let name = format!("val-{}", support::unique_suffix());
    let _ns = TestNamespace::create_named(&a, CONTEXT_A, &name).await;
    // (the member and its value, whether the server accepts it)
    let cases = [
        ("digits: \"12\"", true),
        ("digits: \"١٢\"", false),
        ("digits: \"１２\"", false),
        ("pair: [1.0, 2.5]", true),
        ("pair: [3.0]", true),
        ("pair: [2.5, 1]", false),
    ];
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("objects.yaml");
    let documents: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, (member, _))| {
            format!("apiVersion: {group}/v1\nkind: Probe\nmetadata: {{name: p{i}}}\n{member}\n")
        })
        .collect();
    std::fs::write(&object, documents.join("---\n")).unwrap();
    let out = plugin()
        .args([
            "schema-diff",
            "--context",
            CONTEXT_A,
            "--server",
            "-n",
            &name,
        ])
        .args(["-o", "json", "--object"])
        .arg(&object)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let objects = v["objects"].as_array().unwrap();
    assert_eq!(objects.len(), cases.len(), "{v:#}");
    for ((member, accepted), object) in cases.iter().zip(objects) {
        let result = &object["results"][0];
        let want = if *accepted { "accepted" } else { "rejected" };
        assert_eq!(result["server"], want, "the server on {member}: {result:#}");
        assert_eq!(result["local"], want, "locally, {member}: {result:#}");
    }
}

/// A cluster-scoped CRD shaped like kueue's ResourceFlavor, with the transition rule of v0.10.0
/// (`freeze`) or without it (v0.9.0).
fn flavors_crd(group: &str, freeze: bool) -> String {
    let frozen = if freeze {
        ", {rule: '!has(oldSelf.topologyName) || self == oldSelf', message: spec is immutable when topologyName is set}"
    } else {
        ""
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: flavors.{group}}}
spec:
  group: {group}
  scope: Cluster
  names: {{plural: flavors, singular: flavor, kind: Flavor}}
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
            x-kubernetes-validations: [{{rule: '!has(self.topologyName) || self.nodeLabels.size() >= 1'}}{frozen}]
            properties:
              nodeLabels: {{type: object, additionalProperties: {{type: string}}}}
              topologyName: {{type: string}}
              tolerations: {{type: array, items: {{type: string}}}}
"
    )
}

/// What a server says to `witness`'s object created for real and then `update` (as sent, with
/// the created name and resourceVersion): Ok, or the update's refusal. The object is deleted.
async fn create_then_update(
    client: &Client,
    group: &str,
    object: &Value,
    update: &Value,
) -> Result<(), String> {
    let api: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource {
            group: group.into(),
            version: "v1".into(),
            api_version: format!("{group}/v1"),
            kind: "Flavor".into(),
            plural: "flavors".into(),
        },
    );
    let mut body = object.clone();
    body["metadata"] = json!({"generateName": "km-test-"});
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(body).unwrap(),
        )
        .await
        .expect("the create is accepted");
    let name = created.metadata.name.clone().unwrap();
    let mut next = update.clone();
    next["metadata"] = json!({"name": name, "resourceVersion": created.metadata.resource_version});
    let result = api
        .replace(
            &name,
            &PostParams::default(),
            &serde_json::from_value(next).unwrap(),
        )
        .await;
    api.delete(&name, &Default::default()).await.unwrap();
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(s.message),
        Err(e) => panic!("the update failed for another reason: {e}"),
    }
}

/// A transition rule added (kueue's ResourceFlavor frozen once it names a topology): no create
/// is refused, an update is. The witness is a pair; `--prove` creates the object on both
/// servers, dry-runs the update (accepted by the baseline, refused by the other) and deletes it
/// again; the same pair, created and updated here without the tool, is refused by km-b alone.
#[tokio::test]
async fn a_transition_rule_added_is_proven_by_an_update_the_other_server_refuses() {
    let (a, b) = (client(CONTEXT_A).await, client(CONTEXT_B).await);
    let group = format!("t{}.km.example.com", support::unique_suffix());
    let _in_a = InstalledCrd::install(&a, CONTEXT_A, &flavors_crd(&group, false)).await;
    let _in_b = InstalledCrd::install(&b, CONTEXT_B, &flavors_crd(&group, true)).await;
    let out = a_and_b()
        .arg(format!("flavors.{group}"))
        .args(["--prove", "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "breaking, no defect: {stderr}");
    assert!(
        stderr.contains("1 of 1 witness"),
        "the pair is asked and proven: {stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = finding(
        &report,
        Some("v1"),
        ".spec",
        "x-kubernetes-validations-added",
    )
    .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(f["class"], "breaking", "{f:#}");
    let w = &f["witness"];
    assert_eq!(w["expect"], "update-rejected", "{f:#}");
    assert_eq!(w["proof"]["verdict"], "proven", "{f:#}");
    assert_eq!(w["proof"]["baseline"], "accepted", "{f:#}");
    assert_eq!(w["proof"]["other"], "update rejected", "{f:#}");
    assert!(
        w["proof"]["otherMessage"]
            .as_str()
            .is_some_and(|m| m.contains("spec is immutable when topologyName is set")),
        "{f:#}"
    );
    // The tool's objects are gone from both servers.
    for (c, context) in [(&a, CONTEXT_A), (&b, CONTEXT_B)] {
        let list = get(c, &format!("/apis/{group}/v1/flavors")).await.unwrap();
        assert_eq!(list["items"], json!([]), "{context} keeps a witness");
    }
    // The pair, asked here without the tool.
    let (object, update) = (&w["object"], &w["update"]);
    assert_eq!(create_then_update(&a, &group, object, update).await, Ok(()));
    let refused = create_then_update(&b, &group, object, update)
        .await
        .expect_err("km-b refuses the update");
    assert!(
        refused.contains("spec is immutable when topologyName is set"),
        "{refused}"
    );
}

/// A namespaced CRD with a `.spec.size` and a `.status`; `newer` adds a default to the size and
/// a status subresource.
fn gadgets_crd(group: &str, newer: bool) -> String {
    let (default, subresources) = if newer {
        (", default: 3", "    subresources: {status: {}}\n")
    } else {
        ("", "")
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
  - name: v1
    served: true
    storage: true
{subresources}    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer{default}}}
          status:
            type: object
            properties:
              ready: {{type: integer}}
"
    )
}

/// `object` created for real in the default namespace (under a generated name), read back with
/// a GET and deleted: what the server stores and serves, without the server-set metadata.
async fn created_and_read_back(client: &Client, group: &str, object: &Value) -> Value {
    let path = format!("/apis/{group}/v1/namespaces/default/gadgets");
    let mut body = object.clone();
    body["metadata"] = json!({"generateName": "km-test-"});
    let request = http::Request::post(&path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let created: Value =
        serde_json::from_str(&client.request_text(request).await.expect("created")).unwrap();
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    let mut read = get(client, &format!("{path}/{name}"))
        .await
        .expect("read back");
    let request = http::Request::delete(format!("{path}/{name}"))
        .body(Vec::new())
        .unwrap();
    client.request_text(request).await.expect("deleted");
    read.as_object_mut().unwrap().remove("metadata");
    read
}

/// A default added and a status subresource added refuse no object, but change what is
/// stored: both `changes-stored-data`, proven by `--prove`, and each witness stored by the
/// servers themselves (a real create, read back) as the witness says. The other way round, a
/// status subresource removed also refuses the status updates the baseline serves: breaking.
#[tokio::test]
async fn a_default_and_a_status_subresource_added_are_shown_by_what_each_server_stores() {
    let (a, b) = (client(CONTEXT_A).await, client(CONTEXT_B).await);
    let group = format!("t{}.km.example.com", support::unique_suffix());
    let _in_a = InstalledCrd::install(&a, CONTEXT_A, &gadgets_crd(&group, false)).await;
    let _in_b = InstalledCrd::install(&b, CONTEXT_B, &gadgets_crd(&group, true)).await;
    let diff = |contexts: [&str; 2], fail_on: &str| {
        let out = plugin()
            .args([
                "schema-diff",
                "--context",
                contexts[0],
                "--context",
                contexts[1],
            ])
            .arg(format!("gadgets.{group}"))
            .args(["--prove", "--fail-on", fail_on, "-o", "json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            report,
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };

    // Nothing breaks: exit 0 by default, 1 where changes-stored-data fails the run.
    let (code, _, stderr) = diff([CONTEXT_A, CONTEXT_B], "breaking");
    assert_eq!(code, Some(0), "{stderr}");
    let (code, report, stderr) = diff([CONTEXT_A, CONTEXT_B], "changes-stored-data");
    assert_eq!(code, Some(1), "exit 1, no defect: {stderr}");
    let witness = |path: &str, rule: &str| {
        let f = finding(&report, Some("v1"), path, rule)
            .unwrap_or_else(|| panic!("no {rule}: {report:#}"));
        assert_eq!(f["class"], "changes-stored-data", "{f:#}");
        assert_eq!(f["witness"]["proof"]["verdict"], "proven", "{f:#}");
        f["witness"].clone()
    };
    for w in [
        witness(".spec.size", "default-added"),
        witness("", "subresources-changed"),
    ] {
        let stored = w["stored"].as_array().unwrap();
        for (i, c) in [&a, &b].into_iter().enumerate() {
            let mut predicted = stored[i]["object"].clone();
            predicted.as_object_mut().unwrap().remove("metadata");
            assert_eq!(
                created_and_read_back(c, &group, &w["object"]).await,
                predicted,
                "{w:#}"
            );
        }
        assert_ne!(stored[0]["object"], stored[1]["object"], "{w:#}");
    }

    // The other way round: the status subresource removed.
    let (code, report, stderr) = diff([CONTEXT_B, CONTEXT_A], "breaking");
    assert_eq!(code, Some(1), "exit 1, no defect: {stderr}");
    let f = finding(&report, Some("v1"), "", "subresources-changed")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(f["class"], "breaking", "{f:#}");
    assert_eq!(f["witness"]["proof"]["verdict"], "proven", "{f:#}");
    // What the servers serve: km-b the status endpoint the baseline's controllers write, km-a not.
    for (c, served) in [(&b, true), (&a, false)] {
        let resources = get(c, &format!("/apis/{group}/v1")).await.unwrap()["resources"].clone();
        let names: Vec<&str> = resources
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(names.contains(&"gadgets/status"), served, "{names:?}");
    }
}
