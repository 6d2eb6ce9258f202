//! `schema-diff` on real-world CRDs: two releases each of gateway-api, prometheus-operator,
//! JobSet and kueue, checked against the hand-checked expectations in
//! `tests/data/schema/real-world/EXPECTED.md` (sources and licences: `SOURCES.md` there).
//!
//! The CRD files are not in this repository. They come from the Go module proxy at test time
//! (`go mod download -json MODULE@VERSION`, which prints the module's `Dir`), and each file's
//! git blob id must be the one EXPECTED.md names, so a changed input cannot pass unnoticed.
//! Without `go`, or when the download fails, the tests fail: they never skip.
//!
//! Paths below are the tool's: `[*]` is an array's items, and a `required` change is reported
//! at the property it concerns (`.spec.podMetricsEndpoints`, not `.spec`).
use crate::support;

use std::collections::BTreeMap;

use assert_cmd::Command;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use support::real_world::{
    GATEWAY_API, JOBSET, KUEUE, PROMETHEUS_OPERATOR, Pair, all_pairs, fetch,
};

/// The embedded PodSpec of a JobSet (`$POD` in EXPECTED.md).
const POD: &str = ".spec.replicatedJobs[*].template.spec.template.spec";

fn plugin() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-migrate").unwrap();
    cmd.env("NO_COLOR", "1")
        .env("KUBECONFIG", "/nonexistent/kubeconfig");
    cmd
}

#[derive(Debug, Clone)]
struct Finding {
    version: Option<String>,
    path: String,
    rule: String,
    class: String,
    message: String,
    values: Vec<Option<String>>,
}

impl Finding {
    fn show(&self) -> String {
        format!(
            "{} {} {} {} {:?}",
            self.version.as_deref().unwrap_or("(API)"),
            if self.path.is_empty() {
                "-"
            } else {
                &self.path
            },
            self.rule,
            self.class,
            self.values
        )
    }
}

/// The JSON report of one pair, and the exit code.
struct Diff {
    name: String,
    code: i32,
    report: Value,
    findings: Vec<Finding>,
}

fn diff(pair: &Pair) -> Diff {
    let out = plugin()
        .arg("schema-diff")
        .arg("-f")
        .arg(&pair.old)
        .arg("-f")
        .arg(&pair.new)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: no JSON report ({e}): {}",
            pair.plural,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(report["schemaVersion"], 2);
    let labels: Vec<&str> = report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [pair.old.to_str().unwrap(), pair.new.to_str().unwrap()]
    );
    let apis = report["apis"].as_array().unwrap();
    assert_eq!(apis.len(), 1, "{}: one API per file", pair.plural);
    assert_eq!(apis[0]["name"], pair.crd_name.as_str());
    let findings = apis[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap().to_string();
            Finding {
                version: f["version"].as_str().map(str::to_string),
                path: text("path"),
                rule: text("rule"),
                class: text("class"),
                message: text("message"),
                values: f["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v["text"].as_str().map(str::to_string))
                    .collect(),
            }
        })
        .collect();
    Diff {
        name: pair.plural.to_string(),
        code: out.status.code().unwrap(),
        report,
        findings,
    }
}

impl Diff {
    fn listing(&self) -> String {
        self.findings
            .iter()
            .filter(|f| f.rule != "description-changed")
            .map(Finding::show)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The one finding of this rule at this path; `version` None for API-level findings.
    fn one(&self, version: Option<&str>, path: &str, rule: &str) -> &Finding {
        let hits: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| f.version.as_deref() == version && f.path == path && f.rule == rule)
            .collect();
        assert!(
            hits.len() == 1,
            "{}: expected one {rule} at {version:?} {path:?}, found {}; findings (descriptions left out):\n{}",
            self.name,
            hits.len(),
            self.listing()
        );
        hits[0]
    }

    /// Asserts a finding with its class and the value each source shows (`None`: the source
    /// does not have the node).
    fn expect(
        &self,
        version: Option<&str>,
        path: &str,
        rule: &str,
        class: &str,
        values: [Option<&str>; 2],
    ) -> &Finding {
        let f = self.one(version, path, rule);
        assert_eq!(f.class, class, "{}: class of {}", self.name, f.show());
        assert_eq!(
            f.values,
            values.map(|v| v.map(str::to_string)),
            "{}: values of {}",
            self.name,
            f.show()
        );
        f
    }

    fn added(&self, version: &str, path: &str, type_name: &str) {
        self.expect(
            Some(version),
            path,
            "field-added",
            "compatible",
            [None, Some(type_name)],
        );
    }

    /// Nothing but description changes is reported at `path` or below it (in any version).
    fn no_change_under(&self, path: &str) {
        let hits: Vec<String> = self
            .findings
            .iter()
            .filter(|f| is_under(&f.path, path) && f.rule != "description-changed")
            .map(Finding::show)
            .collect();
        assert!(
            hits.is_empty(),
            "{}: expected no finding (but descriptions) at or under {path}, found:\n{}",
            self.name,
            hits.join("\n")
        );
    }

    /// Findings per rule in one version (`None`: API-level ones).
    fn counts(&self, version: Option<&str>) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for f in self
            .findings
            .iter()
            .filter(|f| f.version.as_deref() == version)
        {
            *counts.entry(f.rule.as_str()).or_default() += 1;
        }
        counts
    }

    fn expect_counts(&self, version: Option<&str>, want: &[(&str, usize)]) {
        let want: BTreeMap<&str, usize> = want.iter().copied().collect();
        assert_eq!(
            self.counts(version),
            want,
            "{}: findings per rule in {version:?}; findings (descriptions left out):\n{}",
            self.name,
            self.listing()
        );
    }

    /// Checks that hold for every pair: the summary matches the findings, the exit code
    /// follows from the breaking ones, and an added or removed property is reported once, at
    /// the top of its subtree.
    fn check_invariants(&self) {
        let count = |class: &str| self.findings.iter().filter(|f| f.class == class).count();
        let summary = &self.report["summary"];
        assert_eq!(summary["breaking"], count("breaking"), "{}", self.name);
        assert_eq!(summary["compatible"], count("compatible"), "{}", self.name);
        assert_eq!(
            summary["informational"],
            count("informational"),
            "{}",
            self.name
        );
        assert_eq!(summary["failing"], count("breaking"), "{}", self.name);
        let expected_code = if count("breaking") > 0 { 1 } else { 0 };
        assert_eq!(self.code, expected_code, "{}: exit code", self.name);
        for top in self
            .findings
            .iter()
            .filter(|f| f.rule == "field-added" || f.rule == "field-removed")
        {
            let nested: Vec<String> = self
                .findings
                .iter()
                .filter(|f| f.version == top.version && f.path != top.path)
                .filter(|f| is_under(&f.path, &top.path))
                .map(Finding::show)
                .collect();
            assert!(
                nested.is_empty(),
                "{}: {} is reported, so nothing below it should be:\n{}",
                self.name,
                top.show(),
                nested.join("\n")
            );
        }
    }

    /// Served and storage flags of one version in each source.
    fn presence(&self, version: &str) -> Vec<Option<(bool, bool)>> {
        self.report["apis"][0]["presence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                p["versions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|v| v["name"] == version)
                    .map(|v| {
                        (
                            v["served"].as_bool().unwrap(),
                            v["storage"].as_bool().unwrap(),
                        )
                    })
            })
            .collect()
    }

    fn scopes(&self) -> Vec<&str> {
        self.report["apis"][0]["presence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["scope"].as_str().unwrap())
            .collect()
    }
}

/// Whether `path` is `top` or a node below it.
fn is_under(path: &str, top: &str) -> bool {
    path == top
        || path
            .strip_prefix(top)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

// ---------------------------------------------------------------------------------------------
// gateway-api v1.0.0 -> v1.2.0

#[test]
fn gateway_api_findings_match_the_hand_checked_expectations() {
    let pairs = fetch(&GATEWAY_API, &["httproutes", "gateways", "referencegrants"]);
    httproutes(&diff(&pairs[0]));
    gateways(&diff(&pairs[1]), &pairs[1]);
    referencegrants(&diff(&pairs[2]));
}

/// The storage version moves from v1beta1 to v1; both stay served.
fn storage_moves_to_v1(d: &Diff) {
    assert_eq!(d.presence("v1"), [Some((true, false)), Some((true, true))]);
    assert_eq!(
        d.presence("v1beta1"),
        [Some((true, true)), Some((true, false))]
    );
    d.expect(
        None,
        "",
        "storageVersion-changed",
        "informational",
        [Some("v1beta1"), Some("v1")],
    );
    assert_eq!(d.scopes(), ["Namespaced", "Namespaced"]);
}

fn httproutes(d: &Diff) {
    d.check_invariants();
    // The one rule added cannot fail on an object valid in v1.0.0 (at most 16 rules of at
    // most 8 matches), so nothing breaks: the search finds no counter-example.
    assert_eq!(d.code, 0);
    storage_moves_to_v1(d);
    d.expect_counts(None, &[("storageVersion-changed", 1)]);
    let total_matches = (0..16)
        .map(|n| format!("(self.size() > {n} ? self[{n}].matches.size() : 0)"))
        .collect::<Vec<_>>()
        .join(" + ")
        + " <= 128";
    // v1 and v1beta1 have identical schemas in both releases: the same findings in each.
    for v in ["v1", "v1beta1"] {
        let version = Some(v);
        d.added(v, ".spec.rules[*].timeouts", "object");
        d.expect(
            version,
            ".spec.rules[*].matches",
            "maxItems-widened",
            "compatible",
            [Some("8"), Some("64")],
        );
        let rule = d.expect(
            version,
            ".spec.rules",
            "x-kubernetes-validations-added",
            "unproven",
            [Some("-"), Some(&total_matches)],
        );
        assert!(
            rule.message.starts_with("CEL rule added; none of ")
                && rule.message.ends_with(" breaks it"),
            "{}",
            rule.message
        );
        d.added(v, ".spec.parentRefs[*].port", "integer");
        d.added(v, ".status.parents[*].parentRef.port", "integer");
        d.expect_counts(
            version,
            &[
                ("description-changed", 126),
                ("field-added", 3),
                ("maxItems-widened", 1),
                ("x-kubernetes-validations-added", 1),
            ],
        );
    }
    // Unchanged bounds are not reported.
    for path in [".spec.rules", ".status.parents[*].conditions"] {
        assert!(
            !d.findings
                .iter()
                .any(|f| f.path == path && f.rule.starts_with("maxItems")),
            "maxItems of {path} did not change:\n{}",
            d.listing()
        );
    }
}

/// The pattern of `.spec.listeners[*].protocol` in each release: an upstream typo fix (`zSA`
/// becomes `zA`) that changes the text, not the strings accepted (`S` is in `A-Z`).
const OLD_PROTOCOL: &str = r"^[a-zA-Z0-9]([-a-zSA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$";
const NEW_PROTOCOL: &str = r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$";

fn gateways(d: &Diff, pair: &Pair) {
    d.check_invariants();
    assert_eq!(d.code, 1);
    storage_moves_to_v1(d);
    d.expect_counts(None, &[("storageVersion-changed", 1)]);
    let old_listeners = "self.all(l, l.protocol in ['HTTPS', 'TLS'] ? has(l.tls) : true)";
    let new_listeners = "self.all(l, (l.protocol == 'HTTPS' && has(l.tls)) ? (l.tls.mode == '' || l.tls.mode == 'Terminate') : true)";
    let old_tls = "self.mode == 'Terminate' ? size(self.certificateRefs) > 0 : true";
    let new_tls = "self.mode == 'Terminate' ? size(self.certificateRefs) > 0 || size(self.options) > 0 : true";
    for v in ["v1", "v1beta1"] {
        let version = Some(v);
        d.added(v, ".spec.infrastructure", "object");
        // Rules are matched by expression: the old rule sits at index 0 and the new one at
        // index 1, and the other four are the same, so exactly one removal and one addition.
        let removed = d.one(
            version,
            ".spec.listeners",
            "x-kubernetes-validations-removed",
        );
        assert_eq!(removed.class, "compatible");
        assert_eq!(removed.message, format!("rule removed: {old_listeners}"));
        // HTTPS with tls.mode Passthrough was allowed and is not any more: the search finds it.
        let added = d.one(version, ".spec.listeners", "x-kubernetes-validations-added");
        assert_eq!(added.class, "breaking");
        assert_eq!(
            added.message,
            format!("CEL rule {new_listeners:?} added; it rejects an object the baseline accepts")
        );
        let [old, new] = [0, 1].map(|i| added.values[i].clone().unwrap());
        assert_eq!(
            (old.split("; ").count(), new.split("; ").count()),
            (5, 5),
            "5 rules in each release: {old} | {new}"
        );
        assert!(old.starts_with(old_listeners) && !new.contains(old_listeners));
        assert!(new.contains(new_listeners) && !old.contains(new_listeners));
        let removed = d.expect(
            version,
            ".spec.listeners[*].tls",
            "x-kubernetes-validations-removed",
            "compatible",
            [Some(old_tls), Some(new_tls)],
        );
        assert_eq!(removed.message, format!("rule removed: {old_tls}"));
        let added = d.expect(
            version,
            ".spec.listeners[*].tls",
            "x-kubernetes-validations-added",
            // It only accepts more than the rule it replaces: nothing breaks it.
            "unproven",
            [Some(old_tls), Some(new_tls)],
        );
        assert!(
            added.message.starts_with("CEL rule added; none of "),
            "{}",
            added.message
        );
        // Rules are not paired by index, so no "same rule, other message" either.
        for path in [".spec.listeners", ".spec.listeners[*].tls"] {
            assert!(
                !d.findings
                    .iter()
                    .any(|f| f.path == path && f.rule == "x-kubernetes-validations-changed"),
                "{path}: {}",
                d.listing()
            );
        }
        d.expect_counts(
            version,
            &[
                ("description-changed", 46),
                ("field-added", 1),
                ("x-kubernetes-validations-added", 2),
                ("x-kubernetes-validations-removed", 2),
            ],
        );
    }
    // The protocol pattern is rewritten in the files, but accepts the same strings: patterns
    // are compared by the strings they accept, so no finding (EXPECTED.md, "Corrections").
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    assert!(read(&pair.old).contains(&format!("pattern: {OLD_PROTOCOL}\n")));
    assert!(read(&pair.new).contains(&format!("pattern: {NEW_PROTOCOL}\n")));
    d.no_change_under(".spec.listeners[*].protocol");
    // x-kubernetes-list-type: atomic is added here, but an array without a list type is
    // atomic already: by design no finding (EXPECTED.md, "Tool mapping").
    d.no_change_under(".spec.listeners[*].allowedRoutes.namespaces.selector");
    // The oneOf/anyOf/not compositions of the addresses are unchanged.
    d.no_change_under(".spec.addresses[*]");
    d.no_change_under(".status.addresses[*]");
}

fn referencegrants(d: &Diff) {
    d.check_invariants();
    assert_eq!(d.code, 1);
    assert_eq!(d.presence("v1alpha2"), [Some((true, false)), None]);
    assert_eq!(
        d.presence("v1beta1"),
        [Some((true, true)), Some((true, true))]
    );
    d.expect(
        Some("v1alpha2"),
        "",
        "version-removed",
        "breaking",
        [Some("served"), None],
    );
    d.expect_counts(None, &[]);
    d.expect_counts(Some("v1alpha2"), &[("version-removed", 1)]);
    // MUST-NOT-FIND: 12 description changes in v1beta1 and nothing else.
    d.expect_counts(Some("v1beta1"), &[("description-changed", 12)]);
    assert_eq!(d.findings.len(), 13);
}

// ---------------------------------------------------------------------------------------------
// prometheus-operator v0.68.0 -> v0.93.0

#[test]
fn prometheus_operator_findings_match_the_hand_checked_expectations() {
    let pairs = fetch(
        &PROMETHEUS_OPERATOR,
        &["servicemonitors", "podmonitors", "prometheusrules"],
    );
    servicemonitors(&diff(&pairs[0]));
    podmonitors(&diff(&pairs[1]));
    prometheusrules(&diff(&pairs[2]));
}

/// The same in all three: one version, a status subresource and a `.status` property added.
fn prometheus_common(d: &Diff) {
    // The exit code follows the breaking findings (check_invariants): PrometheusRule has none.
    d.check_invariants();
    assert_eq!(d.presence("v1"), [Some((true, true)), Some((true, true))]);
    assert_eq!(d.scopes(), ["Namespaced", "Namespaced"]);
    d.expect_counts(None, &[]);
    d.expect(
        Some("v1"),
        "",
        "subresources-changed",
        // The old release's schema has no .status: a status subresource drops nothing its
        // clients can write (correction 4 in EXPECTED.md).
        "compatible",
        [Some("null"), Some(r#"{"status":{}}"#)],
    );
    d.added("v1", ".status", "object");
}

/// Shared by ServiceMonitor endpoints and PodMonitor podMetricsEndpoints.
fn scrape_endpoint_changes(d: &Diff, endpoints: &str) {
    d.expect(
        Some("v1"),
        &format!("{endpoints}[*].scheme"),
        "enum-widened",
        "compatible",
        [Some("http, https"), Some("http, https, HTTP, HTTPS")],
    );
    let mut limits: Vec<String> = [
        "sampleLimit",
        "targetLimit",
        "labelLimit",
        "labelNameLengthLimit",
        "labelValueLengthLimit",
        "keepDroppedTargets",
    ]
    .iter()
    .map(|l| format!(".spec.{l}"))
    .collect();
    for relabel in ["relabelings", "metricRelabelings"] {
        limits.push(format!("{endpoints}[*].{relabel}[*].modulus"));
        d.expect(
            Some("v1"),
            &format!("{endpoints}[*].{relabel}[*].sourceLabels[*]"),
            "pattern-widened",
            "compatible",
            [Some("^[a-zA-Z_][a-zA-Z0-9_]*$"), Some("-")],
        );
    }
    for path in &limits {
        d.expect(
            Some("v1"),
            path,
            "minimum-narrowed",
            "breaking",
            [Some("-"), Some("0")],
        );
    }
    let token_url = format!("{endpoints}[*].oauth2.tokenUrl");
    d.expect(
        Some("v1"),
        &token_url,
        "minLength-widened",
        "compatible",
        [Some("1"), Some("-")],
    );
    d.expect(
        Some("v1"),
        &token_url,
        "pattern-narrowed",
        "breaking",
        [Some("-"), Some("^(http|https)://.+$")],
    );
    // proxyUrl existed already: only its pattern is new.
    let proxy_url = format!("{endpoints}[*].proxyUrl");
    d.expect(
        Some("v1"),
        &proxy_url,
        "pattern-narrowed",
        "breaking",
        [Some("-"), Some("^(http|https|socks5)://.+$")],
    );
    assert!(
        !d.findings
            .iter()
            .any(|f| f.path == proxy_url && f.rule == "field-added")
    );
    // The `default: ""` added to secret and configmap references (12 of them).
    d.expect(
        Some("v1"),
        &format!("{endpoints}[*].basicAuth.username.name"),
        "default-added",
        "changes-stored-data",
        [Some("-"), Some(r#""""#)],
    );
    // x-kubernetes-list-type: atomic added on the selector's arrays: by design no finding.
    d.no_change_under(".spec.selector");
}

fn servicemonitors(d: &Diff) {
    prometheus_common(d);
    assert_eq!(d.code, 1);
    scrape_endpoint_changes(d, ".spec.endpoints");
    let role = d.one(Some("v1"), ".spec.serviceDiscoveryRole", "field-added");
    assert_eq!(role.values, [None, Some("string".to_string())]);
    d.expect_counts(
        Some("v1"),
        &[
            ("subresources-changed", 1),
            ("default-added", 12),
            ("description-changed", 99),
            ("enum-widened", 1),
            ("field-added", 23),
            ("minLength-widened", 1),
            ("minimum-narrowed", 8),
            ("pattern-narrowed", 2),
            ("pattern-widened", 2),
        ],
    );
}

fn podmonitors(d: &Diff) {
    prometheus_common(d);
    assert_eq!(d.code, 1);
    scrape_endpoint_changes(d, ".spec.podMetricsEndpoints");
    // `required: [podMetricsEndpoints, selector]` -> `[selector]`, reported at the property.
    d.expect(
        Some("v1"),
        ".spec.podMetricsEndpoints",
        "required-removed",
        "compatible",
        [Some("required"), Some("optional")],
    );
    assert!(
        !d.findings
            .iter()
            .any(|f| f.path == ".spec.selector" && f.rule.starts_with("required")),
        "selector stays required:\n{}",
        d.listing()
    );
    d.added("v1", ".spec.podMetricsEndpoints[*].portNumber", "integer");
    d.expect_counts(
        Some("v1"),
        &[
            ("subresources-changed", 1),
            ("default-added", 12),
            ("description-changed", 94),
            ("enum-widened", 1),
            ("field-added", 23),
            ("minLength-widened", 1),
            ("minimum-narrowed", 8),
            ("pattern-narrowed", 2),
            ("pattern-widened", 2),
            ("required-removed", 1),
        ],
    );
}

fn prometheusrules(d: &Diff) {
    prometheus_common(d);
    assert_eq!(d.code, 0);
    d.added("v1", ".spec.groups[*].labels", "object");
    d.added("v1", ".spec.groups[*].query_offset", "string");
    // MUST-NOT-FIND: expr is int-or-string in both releases.
    d.no_change_under(".spec.groups[*].rules[*].expr");
    d.expect_counts(
        Some("v1"),
        &[
            ("subresources-changed", 1),
            ("description-changed", 18),
            ("field-added", 3),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// kueue v0.9.0 -> v0.10.0

/// ResourceFlavor gains a transition rule: nothing is refused on create, an update is. The
/// verdict is breaking, shown by a pair (the flavor, and an update of it), and the reverse
/// direction, which drops the rule, is compatible.
#[test]
fn kueue_resource_flavor_frozen_by_a_transition_rule_is_breaking_with_an_update_witness() {
    let pairs = fetch(&KUEUE, &["resourceflavors"]);
    let d = diff(&pairs[0]);
    d.check_invariants();
    assert_eq!(d.code, 1, "{}", d.listing());
    let v = Some("v1beta1");
    assert_eq!(d.scopes(), ["Cluster", "Cluster"]);
    d.expect_counts(None, &[]);
    d.expect_counts(v, &[("x-kubernetes-validations-added", 1)]);
    let f = d.one(v, ".spec", "x-kubernetes-validations-added");
    assert_eq!(f.class, "breaking", "{}", f.show());
    assert!(
        f.message
            .contains("!has(oldSelf.topologyName) || self == oldSelf")
            && f.message.contains("rejects an update"),
        "{}",
        f.message
    );
    let w = &d.report["apis"][0]["findings"][0]["witness"];
    assert_eq!(w["expect"], "update-rejected", "{w}");
    let (object, update) = (&w["object"]["spec"], &w["update"]["spec"]);
    assert!(object["topologyName"].is_string(), "{w}");
    assert_eq!(update["topologyName"], object["topologyName"], "{w}");
    assert_ne!(update, object, "{w}");
    assert_eq!(
        w["reasons"],
        serde_json::json!([".spec: resourceFlavorSpec are immutable when topologyName is set"])
    );
    let back = diff(&Pair {
        plural: "resourceflavors",
        crd_name: pairs[0].crd_name.clone(),
        old: pairs[0].new.clone(),
        new: pairs[0].old.clone(),
    });
    assert_eq!(back.code, 0, "{}", back.listing());
    back.expect(
        v,
        ".spec",
        "x-kubernetes-validations-removed",
        "compatible",
        [
            Some("!has(self.topologyName) || self.nodeLabels.size() >= 1; !has(oldSelf.topologyName) || self == oldSelf"),
            Some("!has(self.topologyName) || self.nodeLabels.size() >= 1"),
        ],
    );
}

// JobSet v0.5.0 -> v0.8.0

#[test]
fn jobset_findings_match_the_hand_checked_expectations() {
    let pairs = fetch(&JOBSET, &["jobsets"]);
    let d = diff(&pairs[0]);
    d.check_invariants();
    assert_eq!(d.code, 1);
    let v = Some("v1alpha2");
    let pod = |p: &str| format!("{POD}{p}");
    assert_eq!(
        d.presence("v1alpha2"),
        [Some((true, true)), Some((true, true))]
    );
    assert_eq!(d.scopes(), ["Namespaced", "Namespaced"]);
    // The only version-level change: a new first printer column.
    let columns = d.one(v, "", "printerColumns-changed");
    assert_eq!(columns.class, "informational");
    assert!(
        columns.values[1]
            .as_deref()
            .is_some_and(|c| c.contains("Final state of JobSe")),
        "{}",
        columns.show()
    );

    // 1. Two CEL rules added at .spec, one finding; `''InOrder''` parsed to `'InOrder'`.
    let in_order = "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))";
    let first_job = "!(has(self.replicatedJobs[0].dependsOn))";
    let both = format!("{in_order}; {first_job}");
    let rules = d.expect(
        v,
        ".spec",
        "x-kubernetes-validations-added",
        "breaking",
        [Some("-"), Some(&both)],
    );
    let mut added: Vec<&str> = rules.values[1].as_deref().unwrap().split("; ").collect();
    added.sort();
    assert_eq!(added, [first_job, in_order]);
    // `.spec: {}` has no replicatedJobs: reading `[0]` of it fails, and a failed rule rejects.
    assert_eq!(
        rules.message,
        format!("CEL rule {first_job:?} added; it rejects an object the baseline accepts")
    );

    // 2. resourceClaims[*].source moved up one level: the only removal in the data set.
    d.expect(
        v,
        &pod(".resourceClaims[*].source"),
        "field-removed",
        "breaking",
        [Some("object"), None],
    );
    d.added(
        "v1alpha2",
        &pod(".resourceClaims[*].resourceClaimName"),
        "string",
    );
    d.added(
        "v1alpha2",
        &pod(".resourceClaims[*].resourceClaimTemplateName"),
        "string",
    );
    assert!(
        !d.findings
            .iter()
            .any(|f| f.path == pod(".resourceClaims[*].name") && f.rule.starts_with("required")),
        "required: [name] is unchanged"
    );

    // 3. hostAliases became a map list keyed by a now required ip.
    d.expect(
        v,
        &pod(".hostAliases[*].ip"),
        "required-added",
        "breaking",
        [Some("optional"), Some("required")],
    );
    // 4. 15 lists became map lists (none had a list type before).
    let containers = ["containers", "initContainers", "ephemeralContainers"];
    let mut maps: Vec<String> = vec![
        pod(".hostAliases"),
        pod(".imagePullSecrets"),
        pod(".volumes"),
    ];
    for c in containers {
        maps.push(pod(&format!(".{c}")));
        maps.push(pod(&format!(".{c}[*].env")));
        maps.push(pod(&format!(".{c}[*].volumeMounts")));
        maps.push(pod(&format!(".{c}[*].volumeDevices")));
    }
    assert_eq!(maps.len(), 15);
    // A map list refuses two items with the same key, which the atomic list took: one
    // narrowing per list, the keys going with it.
    for path in &maps {
        d.expect(
            v,
            path,
            "x-kubernetes-list-type-narrowed",
            "breaking",
            [Some("atomic"), Some("map")],
        );
    }
    // An atomic list type added where there was none is no change (by design).
    d.no_change_under(&pod(".hostAliases[*].hostnames"));
    // The items' `required: [name]` of the container lists is unchanged.
    for c in containers {
        assert!(
            !d.findings
                .iter()
                .any(|f| f.path == pod(&format!(".{c}[*].name")) && f.rule.starts_with("required")),
            "{c}[*].name stays required"
        );
    }

    // 5. Defaults added; `false` and `""` are values, not "no default".
    for (field, default) in [
        (".volumes[*].azureDisk.readOnly", "false"),
        (".volumes[*].azureDisk.fsType", r#""ext4""#),
        (".volumes[*].rbd.pool", r#""rbd""#),
        (".volumes[*].rbd.user", r#""admin""#),
        (".volumes[*].rbd.keyring", r#""/etc/ceph/keyring""#),
        (".volumes[*].scaleIO.fsType", r#""xfs""#),
        (".volumes[*].scaleIO.storageMode", r#""ThinProvisioned""#),
        (".volumes[*].iscsi.iscsiInterface", r#""default""#),
    ] {
        d.expect(
            v,
            &pod(field),
            "default-added",
            "changes-stored-data",
            [Some("-"), Some(default)],
        );
    }
    let empty_defaults = d
        .findings
        .iter()
        .filter(|f| f.rule == "default-added" && f.values[1].as_deref() == Some(r#""""#))
        .inspect(|f| assert!(f.path.ends_with(".name") || f.path.ends_with(".service")))
        .count();
    assert_eq!(empty_defaults, 33);

    // 6. Added properties (25 in all), each once at the top of its subtree.
    d.added("v1alpha2", ".spec.replicatedJobs[*].dependsOn", "array");
    d.added("v1alpha2", ".spec.failurePolicy.restartStrategy", "string");
    for (path, type_name) in [
        (".spec.coordinator", "object"),
        (".spec.failurePolicy.rules", "array"),
        (".spec.network.publishNotReadyAddresses", "boolean"),
        (".spec.replicatedJobs[*].template.spec.managedBy", "string"),
        (
            ".spec.replicatedJobs[*].template.spec.successPolicy",
            "object",
        ),
        (".status.restartsCountTowardsMax", "integer"),
        (".status.terminalState", "string"),
    ] {
        d.added("v1alpha2", path, type_name);
    }
    for (path, type_name) in [
        (".resources", "object"),
        (".securityContext.appArmorProfile", "object"),
        (".securityContext.seLinuxChangePolicy", "string"),
        (".securityContext.supplementalGroupsPolicy", "string"),
        (".volumes[*].image", "object"),
    ] {
        d.added("v1alpha2", &pod(path), type_name);
    }
    for c in containers {
        for (path, type_name) in [
            ("[*].resources.claims[*].request", "string"),
            ("[*].securityContext.appArmorProfile", "object"),
            ("[*].volumeMounts[*].recursiveReadOnly", "string"),
        ] {
            d.added("v1alpha2", &pod(&format!(".{c}{path}")), type_name);
        }
    }

    // MUST-NOT-FIND: podFailurePolicy has 3 description changes and nothing else; no CEL rule
    // is removed; the `self == oldSelf` rules are in both releases; no type, enum, pattern or
    // bound changes anywhere (the 45 int-or-string nodes included).
    let pfp = ".spec.replicatedJobs[*].template.spec.podFailurePolicy";
    let under_pfp: Vec<&str> = d
        .findings
        .iter()
        .filter(|f| is_under(&f.path, pfp))
        .map(|f| f.rule.as_str())
        .collect();
    assert_eq!(under_pfp, ["description-changed"; 3]);
    for path in [
        ".spec.failurePolicy",
        ".spec.network",
        ".spec.startupPolicy",
        ".spec.successPolicy",
    ] {
        assert!(
            !d.findings
                .iter()
                .any(|f| f.path == path && f.rule.starts_with("x-kubernetes-validations")),
            "{path}: its rule is in both releases"
        );
    }
    d.expect_counts(
        v,
        &[
            ("printerColumns-changed", 1),
            ("x-kubernetes-validations-added", 1),
            ("default-added", 41),
            ("description-changed", 172),
            ("field-added", 25),
            ("field-removed", 1),
            ("required-added", 1),
            ("x-kubernetes-list-type-narrowed", 15),
        ],
    );
    d.expect_counts(None, &[]);
}

// ---------------------------------------------------------------------------------------------
// Every file against itself, and the LCD of every pair.

#[test]
fn every_file_compared_with_itself_has_no_finding_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    for pair in all_pairs() {
        for (release, file) in [("old", &pair.old), ("new", &pair.new)] {
            // The same path twice is a usage error, so the second source is a copy.
            let copy = dir.path().join(format!("{release}-{}.yaml", pair.plural));
            std::fs::copy(file, &copy).unwrap();
            let out = plugin()
                .arg("schema-diff")
                .arg("-f")
                .arg(file)
                .arg("-f")
                .arg(&copy)
                .args(["--fail-on", "any", "-o", "json"])
                .output()
                .unwrap();
            let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}: {}",
                    file.display(),
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            assert_eq!(
                out.status.code(),
                Some(0),
                "{} against itself",
                file.display()
            );
            assert_eq!(report["apis"].as_array().unwrap().len(), 1);
            assert_eq!(report["apis"][0]["name"], pair.crd_name.as_str());
            assert_eq!(
                report["apis"][0]["findings"],
                serde_json::json!([]),
                "{} against itself",
                file.display()
            );
            for class in ["breaking", "compatible", "informational", "failing"] {
                assert_eq!(report["summary"][class], 0, "{}", file.display());
            }
        }
    }
}

/// The LCD of one pair: the CRDs printed (as YAML values and as typed CRDs) and stderr.
struct Lcd {
    manifests: Vec<Value>,
    stderr: String,
}

fn lcd(pair: &Pair) -> Lcd {
    let out = plugin()
        .arg("schema-diff")
        .arg("-f")
        .arg(&pair.old)
        .arg("-f")
        .arg(&pair.new)
        .arg("--lcd")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: an LCD exists: {stderr}",
        pair.plural
    );
    let typed: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&stdout)
        .unwrap_or_else(|e| panic!("{}: the LCD is not YAML CRDs: {e}", pair.plural));
    let manifests: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    assert_eq!(typed.len(), 1, "{}: one CRD", pair.plural);
    let crd = &typed[0];
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some(pair.crd_name.as_str()),
        "{}",
        pair.plural
    );
    assert_eq!(
        format!("{}.{}", crd.spec.names.plural, crd.spec.group),
        pair.crd_name
    );
    assert_eq!(
        crd.spec
            .versions
            .iter()
            .filter(|v| v.storage && v.served)
            .count(),
        1,
        "{}: one storage version",
        pair.plural
    );
    // What the API server checks that the tool has got wrong before (each found on these
    // files, and each made a real kube-apiserver reject the LCD).
    let annotations = crd.metadata.annotations.clone().unwrap_or_default();
    let group = &crd.spec.group;
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == d || group.ends_with(&format!(".{d}")));
    assert_eq!(
        annotations.contains_key("api-approved.kubernetes.io"),
        protected,
        "{}: groups under k8s.io and kubernetes.io need the api-approved.kubernetes.io annotation: {annotations:?}",
        pair.plural
    );
    for v in manifests[0]["spec"]["versions"].as_array().unwrap() {
        map_list_keys_are_required_or_defaulted(
            &v["schema"]["openAPIV3Schema"],
            &format!("{} {}", pair.plural, v["name"]),
        );
    }
    Lcd { manifests, stderr }
}

/// The API server rejects a map list whose key is neither required nor defaulted.
fn map_list_keys_are_required_or_defaulted(node: &Value, at: &str) {
    if node["x-kubernetes-list-type"] == "map" {
        let items = &node["items"];
        for key in node["x-kubernetes-list-map-keys"].as_array().unwrap() {
            let required = items["required"]
                .as_array()
                .is_some_and(|r| r.contains(key));
            let defaulted = items["properties"][key.as_str().unwrap()]
                .get("default")
                .is_some();
            assert!(
                required || defaulted,
                "{at}: map list key {key} is neither required nor defaulted"
            );
        }
    }
    if let Some(props) = node["properties"].as_object() {
        for (name, child) in props {
            map_list_keys_are_required_or_defaulted(child, &format!("{at}.{name}"));
        }
    }
    if node.get("items").is_some() {
        map_list_keys_are_required_or_defaulted(&node["items"], &format!("{at}[*]"));
    }
    if node["additionalProperties"].is_object() {
        map_list_keys_are_required_or_defaulted(&node["additionalProperties"], &format!("{at}.*"));
    }
}

impl Lcd {
    fn versions(&self) -> Vec<&str> {
        self.manifests[0]["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect()
    }

    fn kind(&self) -> &str {
        self.manifests[0]["spec"]["names"]["kind"].as_str().unwrap()
    }

    /// The schema node at a tool path (`.spec.rules[*].matches`) in one version.
    fn node(&self, version: &str, path: &str) -> Option<&Value> {
        let v = self.manifests[0]["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == version)?;
        let mut node = &v["schema"]["openAPIV3Schema"];
        for part in path.trim_start_matches('.').split('.') {
            let (name, items) = match part.strip_suffix("[*]") {
                Some(name) => (name, true),
                None => (part, false),
            };
            node = node.get("properties")?.get(name)?;
            if items {
                node = node.get("items")?;
            }
        }
        Some(node)
    }

    fn dropped(&self, version: &str, path: &str) -> bool {
        self.stderr
            .contains(&format!(": dropped {version} {path} (declared in "))
    }
}

#[test]
fn every_pair_has_an_lcd_that_parses_as_a_crd() {
    let pairs = all_pairs();
    let lcds: BTreeMap<&str, Lcd> = pairs.iter().map(|p| (p.plural, lcd(p))).collect();
    let kinds: Vec<(&str, &str)> = lcds.iter().map(|(p, l)| (*p, l.kind())).collect();
    assert_eq!(
        kinds,
        [
            ("gateways", "Gateway"),
            ("httproutes", "HTTPRoute"),
            ("jobsets", "JobSet"),
            ("podmonitors", "PodMonitor"),
            ("prometheusrules", "PrometheusRule"),
            ("referencegrants", "ReferenceGrant"),
            ("resourceflavors", "ResourceFlavor"),
            ("servicemonitors", "ServiceMonitor"),
        ]
    );

    // Only versions both releases serve; fields only one release has are dropped and listed.
    let routes = &lcds["httproutes"];
    assert_eq!(routes.versions(), ["v1", "v1beta1"]);
    for v in ["v1", "v1beta1"] {
        assert!(routes.node(v, ".spec.rules[*].timeouts").is_none());
        assert!(
            routes.dropped(v, ".spec.rules[*].timeouts"),
            "{}",
            routes.stderr
        );
        assert!(routes.dropped(v, ".spec.parentRefs[*].port"));
        // The tighter bound of the two releases.
        assert_eq!(
            routes.node(v, ".spec.rules[*].matches").unwrap()["maxItems"],
            8
        );
    }
    let gateways = &lcds["gateways"];
    assert_eq!(gateways.versions(), ["v1", "v1beta1"]);
    assert!(gateways.dropped("v1", ".spec.infrastructure"));
    // Both releases' rules hold in the LCD.
    let tls_rules =
        gateways.node("v1", ".spec.listeners[*].tls").unwrap()["x-kubernetes-validations"]
            .as_array()
            .unwrap()
            .len();
    assert_eq!(tls_rules, 2);
    // The releases' protocol patterns accept the same strings: the LCD keeps one of them.
    let protocol = gateways.node("v1", ".spec.listeners[*].protocol").unwrap();
    assert_eq!(protocol["pattern"], NEW_PROTOCOL);
    assert!(protocol["allOf"].is_null(), "{protocol}");
    assert_eq!(lcds["referencegrants"].versions(), ["v1beta1"]);
    for plural in ["servicemonitors", "podmonitors", "prometheusrules"] {
        let l = &lcds[plural];
        assert_eq!(l.versions(), ["v1"]);
        assert!(l.dropped("v1", ".status"), "{plural}: {}", l.stderr);
        // The releases disagree on the status subresource, so the LCD has none.
        assert!(l.manifests[0]["spec"]["versions"][0]["subresources"].is_null());
    }
    let jobsets = &lcds["jobsets"];
    assert_eq!(jobsets.versions(), ["v1alpha2"]);
    let pod = |p: &str| format!("{POD}{p}");
    assert!(jobsets.dropped("v1alpha2", &pod(".resourceClaims[*].source")));
    assert!(jobsets.dropped("v1alpha2", &pod(".resourceClaims[*].resourceClaimName")));
    assert_eq!(
        jobsets.node("v1alpha2", &pod(".containers")).unwrap()["x-kubernetes-list-type"],
        "map"
    );
    // v0.8.0 defaults the key of imagePullSecrets, v0.5.0 has no default: the LCD requires it.
    assert_eq!(
        jobsets
            .node("v1alpha2", &pod(".imagePullSecrets[*]"))
            .unwrap()["required"],
        serde_json::json!(["name"])
    );
    assert!(jobsets.stderr.contains(&format!(
        "{}[*].name: a key of a map list needs a default",
        pod(".imagePullSecrets")
    )));
    // The two new rules at .spec name replicatedJobs[*].dependsOn, which v0.5.0 lacks: the
    // field stays declared (or the rules would not compile) but cannot be set.
    let spec_rules: Vec<&str> =
        jobsets.node("v1alpha2", ".spec").unwrap()["x-kubernetes-validations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rule"].as_str().unwrap())
            .filter(|r| r.contains("dependsOn"))
            .collect();
    assert_eq!(spec_rules.len(), 2);
    let depends_on = jobsets
        .node("v1alpha2", ".spec.replicatedJobs[*].dependsOn")
        .expect("dependsOn stays declared");
    assert_eq!(depends_on["x-kubernetes-validations"][0]["rule"], "false");
    assert!(jobsets.dropped("v1alpha2", ".spec.replicatedJobs[*].dependsOn"));
    // The gateway-api groups need the approval annotation; it comes from the releases.
    for plural in ["httproutes", "gateways", "referencegrants"] {
        let approved =
            &lcds[plural].manifests[0]["metadata"]["annotations"]["api-approved.kubernetes.io"];
        assert!(
            [
                "https://github.com/kubernetes-sigs/gateway-api/pull/2466",
                "https://github.com/kubernetes-sigs/gateway-api/pull/3328"
            ]
            .contains(&approved.as_str().unwrap_or_default()),
            "{plural}: {approved}"
        );
    }
}

/// The fast YAML reader (`schema::block_yaml`) gives serde-saphyr's values for every file it
/// takes, and takes the controller-gen files, where its speed matters.
#[test]
fn the_fast_yaml_reader_agrees_with_serde_saphyr_on_every_file() {
    let mut taken = Vec::new();
    for pair in all_pairs() {
        for file in [&pair.old, &pair.new] {
            let text = std::fs::read_to_string(file).unwrap();
            let Some(fast) = kubectl_migrate::schema::block_yaml::parse_documents(&text) else {
                continue;
            };
            let reference: Vec<Value> = serde_saphyr::from_multiple::<Value>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
                .into_iter()
                .filter(|d| !d.is_null())
                .collect();
            assert!(
                fast == reference,
                "{}: the fast reader's values differ from serde-saphyr's",
                file.display()
            );
            taken.push(file.display().to_string());
        }
    }
    // Gateway API, JobSet and kueue are written by controller-gen; prometheus-operator too.
    assert!(
        taken.len() == 16,
        "the fast reader took {} of 16 files: {taken:#?}",
        taken.len()
    );
}

/// Issue 17's example: gateway-api v1.1.0 -> v1.3.0. `gateways` only had a pattern rewritten to
/// an equivalent one: no pattern finding, nothing breaking. `httproutes` and `grpcroutes` gain
/// CEL rules that no object valid under v1.1.0 violates: they are unproven (with how many
/// objects were tried), not breaking, so `--fail-on breaking` passes and `--fail-on unproven`
/// does not.
#[test]
fn gateway_api_1_1_to_1_3_is_not_breaking_and_its_new_cel_rules_are_unproven() {
    let old = support::real_world::module_dir(GATEWAY_API.module, "v1.1.0");
    let new = support::real_world::module_dir(GATEWAY_API.module, "v1.3.0");
    for plural in ["gateways", "httproutes", "grpcroutes"] {
        let file = GATEWAY_API.file.replace("{}", plural);
        let pair = Pair {
            plural,
            crd_name: format!("{plural}.{}", GATEWAY_API.group),
            old: old.join(&file),
            new: new.join(&file),
        };
        let d = diff(&pair);
        d.check_invariants();
        let listing = d.listing();
        assert!(
            !d.findings.iter().any(|f| f.rule.starts_with("pattern-")),
            "{plural}: a pattern finding:\n{listing}"
        );
        assert!(
            !d.findings.iter().any(|f| f.class == "breaking"),
            "{plural}: breaking findings:\n{listing}"
        );
        assert_eq!(d.code, 0, "{plural}: --fail-on breaking passes");
        let cel: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.rule.starts_with("x-kubernetes-validations-added"))
            .collect();
        if plural == "gateways" {
            assert!(cel.is_empty(), "{listing}");
            continue;
        }
        assert!(!cel.is_empty(), "{plural}: CEL rules are added:\n{listing}");
        for f in cel {
            assert_eq!(f.class, "unproven", "{plural}: {}", f.show());
            assert!(
                f.message.contains("none of") && f.message.contains("objects generated"),
                "{plural}: {}",
                f.message
            );
        }
        let gate = plugin()
            .arg("schema-diff")
            .arg("-f")
            .arg(&pair.old)
            .arg("-f")
            .arg(&pair.new)
            .args(["--fail-on", "unproven", "-o", "json"])
            .output()
            .unwrap();
        assert_eq!(
            gate.status.code(),
            Some(1),
            "{plural}: --fail-on unproven fails"
        );
    }
}

/// Why a finding can have no witness: no object shows it (a create is not affected). A search
/// that found none is not among them.
const NO_OBJECT_EXISTS: &[&str] = &[
    "the map type decides how server-side apply merges; a create is not affected",
    "no object exists: the baseline's pattern",
];

/// Findings the witness search misses today, although an object exists, as `CRD VERSION PATH
/// RULE`. Each is a defect of the search; none may be added, and one it learns to show must
/// leave this list.
///
/// Empty: the last, JobSet v0.8.0 -> v0.5.0's `dependsOn` removed (v0.8.0's own rule
/// `!(has(self.replicatedJobs[0].dependsOn))` refuses it on the first replicated job), is
/// shown by a JobSet of two replicated jobs whose second sets it.
const SEARCH_MISSES: &[&str] = &[];

/// Every breaking (or stored-data, or selection) finding of every pair, both ways, carries a
/// witness, or says why no object exists; the count without one is printed, and the search's
/// known misses are held to [`SEARCH_MISSES`].
#[test]
fn every_noticeable_finding_of_the_corpus_has_a_witness_or_no_object_exists() {
    let mut without = Vec::new();
    let mut misses = Vec::new();
    let mut noticeable = 0;
    for pair in all_pairs() {
        for (a, b) in [(&pair.old, &pair.new), (&pair.new, &pair.old)] {
            let out = plugin()
                .arg("schema-diff")
                .arg("-f")
                .arg(a)
                .arg("-f")
                .arg(b)
                .args(["-o", "json"])
                .output()
                .unwrap();
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            for f in report["apis"][0]["findings"].as_array().unwrap() {
                let class = f["class"].as_str().unwrap_or_default();
                if !["breaking", "changes-stored-data", "changes-selection"].contains(&class) {
                    continue;
                }
                noticeable += 1;
                if f["witness"].is_null() {
                    let id = format!(
                        "{} {} {} {}",
                        pair.crd_name,
                        f["version"].as_str().unwrap_or("-"),
                        f["path"].as_str().unwrap_or_default(),
                        f["rule"].as_str().unwrap_or_default()
                    );
                    misses.push(id);
                    without.push(format!(
                        "{} {} -> {}: {} {} {}: {}",
                        pair.crd_name,
                        a.display(),
                        b.display(),
                        f["version"],
                        f["path"],
                        f["rule"],
                        f["noWitness"]
                    ));
                }
            }
        }
    }
    eprintln!(
        "{} of {noticeable} breaking, stored-data and selection findings have no witness:\n{}",
        without.len(),
        without.join("\n")
    );
    let unexplained: Vec<&String> = without
        .iter()
        .zip(&misses)
        .filter(|(w, id)| {
            !NO_OBJECT_EXISTS.iter().any(|why| w.contains(why))
                && !SEARCH_MISSES.contains(&id.as_str())
        })
        .map(|(w, _)| w)
        .collect();
    let shown: Vec<&&str> = SEARCH_MISSES
        .iter()
        .filter(|id| !misses.iter().any(|m| m == **id))
        .collect();
    assert!(
        shown.is_empty(),
        "the search shows these now: take them off SEARCH_MISSES: {shown:?}"
    );
    assert!(
        unexplained.is_empty(),
        "{} without a witness and without a reason no object exists:\n{}",
        unexplained.len(),
        unexplained
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
