//! PURE: what the controller concludes about an [`APICompatibility`](super::api::APICompatibility):
//! the problems of its spec, the comparison it asks for, and the `Compatible` and `Reachable`
//! conditions from what the watch (`crate::schema::watch`, the engine `schema-diff --watch`
//! runs) last saw.
use std::collections::BTreeMap;
use std::time::Duration;

use super::api::{APICompatibilitySpec, LastChange, MemberStatus};
use super::decide::{Truth, Wanted, foreign_secret};
use crate::cluster::Target;
use crate::output::counted;
use crate::schema::load::Selection;
use crate::schema::report::FindingReport;
use crate::schema::watch::{ApiChange, ApiState, EventType, WatchEvent};
use crate::schema::{FailOn, Request};

/// How many findings the `Compatible` condition spells out; the rest are counted.
pub const SHOWN_FINDINGS: usize = 3;

/// Writes to the members' CRDs within this long of each other are compared once. Shorter than
/// the CLI's 1 s default: the condition is what alerts, and a compare is cheap next to it.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// The spec's problems that no cluster needs to be asked about, each in words with the fix.
pub fn problems(spec: &APICompatibilitySpec, namespace: &str) -> Vec<String> {
    let mut problems: Vec<String> = spec
        .members
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let (secret, secret_namespace, _) = m.secret();
            foreign_secret(
                &format!("spec.members[{i}].kubeconfigSecret"),
                &secret,
                secret_namespace,
                namespace,
                "a compatibility check",
            )
        })
        .collect();
    if spec.members.len() < 2 {
        problems.push("spec.members names fewer than two clusters; a comparison needs two".into());
    }
    if let Err(why) = FailOn::parse(&spec.fail_on) {
        problems.push(why.replacen("--fail-on", "spec.failOn", 1));
    }
    let expressions = spec
        .selector
        .iter()
        .flat_map(|s| s.match_expressions.iter().flatten());
    for (i, e) in expressions.enumerate() {
        let values = e.values.as_deref().unwrap_or_default();
        let at = format!("spec.selector.matchExpressions[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => problems.push(format!(
                "{at}: operator {} needs at least one value",
                e.operator
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => problems.push(format!(
                "{at}: operator {} takes no values; remove them",
                e.operator
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => problems.push(format!(
                "{at}: operator {other:?} is not one of In, NotIn, Exists, DoesNotExist"
            )),
        }
    }
    for name in spec.names.iter().filter(|n| !n.contains('.')) {
        problems.push(format!(
            "spec.names {name:?} is not a CRD name: use the full name, plural.group (e.g. widgets.example.com)"
        ));
    }
    problems
}

/// The comparison the spec asks for, over the members' `targets` (in spec order; the spec
/// passed [`problems`]). The labels are the members' names (see [`super::checks`]).
pub fn request(spec: &APICompatibilitySpec, targets: Vec<Target>) -> Request {
    Request {
        clusters: targets,
        namespaces: BTreeMap::new(),
        request_timeout: PROBE_TIMEOUT,
        files: Vec::new(),
        selection: Selection {
            names: spec.names.clone(),
            groups: spec.groups.clone(),
            labels: spec.selector.clone().and_then(|s| s.try_into().ok()),
            builtins: Vec::new(),
        },
        ignore: spec.ignore.iter().cloned().collect(),
        baseline: spec.baseline.clone(),
        fail_on: FailOn::parse(&spec.fail_on).unwrap_or_default(),
        chunk_size: crate::schema::load::CRD_PAGE_SIZE,
        witnesses: true,
    }
}

/// How long a member's probe waits for an answer before it counts as unreachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the status says, from the APIs as last compared and the members as last probed.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub compatible: Option<Wanted>,
    pub reachable: Wanted,
    pub incompatible_findings: Option<i64>,
    pub apis: Option<i64>,
    pub members: Vec<MemberStatus>,
    /// The last change of a compared API seen on a member.
    pub last_change: Option<LastChange>,
    /// What spec.lcdConfigMap is to hold ([`lcd_data`]): set only when it is asked for and
    /// the APIs were just compared with every member answering.
    pub lcd: Option<BTreeMap<String, String>>,
}

/// The verdict: `apis` is `None` until every member has listed its CRDs once (no `Compatible`
/// yet); `members` says which answer. While one does not, `Compatible` is Unknown: the APIs
/// are as of `compared_at`, the last comparison with every member answering.
pub fn verdict(
    apis: Option<&BTreeMap<String, ApiState>>,
    fail_on: &FailOn,
    baseline: &str,
    members: Vec<MemberStatus>,
    compared_at: Option<&str>,
) -> Verdict {
    let down: Vec<&str> = members
        .iter()
        .filter(|m| !m.reachable)
        .map(|m| m.name.as_str())
        .collect();
    let not_answering = format!(
        "{} {} {} not answer",
        if down.len() == 1 { "member" } else { "members" },
        down.join(", "),
        if down.len() == 1 { "does" } else { "do" },
    );
    let unknown = |message: String| Wanted {
        type_: "Compatible",
        status: Truth::Unknown,
        reason: "MemberUnreachable",
        message,
    };
    let compatible = match apis {
        Some(apis) => {
            let fresh = compatible(apis, fail_on, baseline, &members);
            Some(if down.is_empty() {
                fresh
            } else {
                unknown(format!(
                    "not compared while {not_answering}; the last comparison{}: {}",
                    compared_at.map(|t| format!(", at {t}")).unwrap_or_default(),
                    fresh.message
                ))
            })
        }
        // Never compared: unknown, and said so, rather than absent.
        None if !down.is_empty() => Some(unknown(format!(
            "not compared yet: {not_answering}; compared once every member answers"
        ))),
        None => None,
    };
    Verdict {
        incompatible_findings: apis.map(|a| incompatible(a, fail_on).count() as i64),
        apis: apis.map(|a| a.len() as i64),
        compatible,
        reachable: reachable(&members),
        members,
        last_change: None,
        lcd: None,
    }
}

/// The status's `lastChange` for an event of the watch: only an API's change is one (not an
/// outage, nor the first report).
pub fn last_change(event: &WatchEvent) -> Option<LastChange> {
    if event.kind != EventType::Change {
        return None;
    }
    let change = match event.api_change {
        Some(ApiChange::Added) => "added",
        Some(ApiChange::Removed) => "removed",
        _ => "changed",
    };
    Some(LastChange {
        time: event.time.clone(),
        api: event.api.clone()?,
        members: event.sources.clone(),
        change: change.into(),
        class: event.class.map(|c| c.as_str().to_string()),
    })
}

/// The type of the condition that says whether spec.lcdConfigMap holds the LCD.
pub const LCD_WRITTEN: &str = "LCDWritten";

/// The LCD ConfigMap's data: per API that has an LCD, key `<name>.yaml`, its manifest as
/// `schema-diff --lcd-dir` writes it. (CRD names are valid ConfigMap keys.)
pub fn lcd_data(apis: &BTreeMap<String, ApiState>) -> BTreeMap<String, String> {
    apis.iter()
        .filter_map(|(name, state)| Some((format!("{name}.yaml"), state.lcd.as_ref()?.to_yaml())))
        .collect()
}

/// `LCDWritten` once ConfigMap `config_map` holds `data`, the LCD of `apis` APIs compared.
pub fn lcd_written(config_map: &str, data: &BTreeMap<String, String>, apis: usize) -> Wanted {
    let mut message = format!(
        "ConfigMap {config_map} holds the LCD of {} of {}",
        data.len(),
        counted(apis as u64, "API")
    );
    if data.len() < apis {
        message.push_str(&format!(
            "; {} no LCD: `kubectl migrate schema-diff --lcd` says why",
            if apis - data.len() == 1 {
                "1 has"
            } else {
                "the others have"
            }
        ));
    }
    Wanted {
        type_: LCD_WRITTEN,
        status: Truth::True,
        reason: "Written",
        message,
    }
}

/// `LCDWritten` when ConfigMap `config_map` exists and this resource does not own it: it is
/// someone else's, and left alone. `owners` are its owners as `Kind/name`.
pub fn lcd_config_map_not_ours(config_map: &str, owners: &[String]) -> Wanted {
    let whose = if owners.is_empty() {
        "has no owner".to_string()
    } else {
        format!("is owned by {}", owners.join(", "))
    };
    Wanted {
        type_: LCD_WRITTEN,
        status: Truth::False,
        reason: "ConfigMapNotOwned",
        message: format!(
            "ConfigMap {config_map} exists and {whose}, not this resource; it is left alone: delete it, or name another in spec.lcdConfigMap"
        ),
    }
}

/// `LCDWritten` when ConfigMap `config_map` could not be read or written (`why`, in words).
pub fn lcd_not_written(config_map: &str, why: &str) -> Wanted {
    Wanted {
        type_: LCD_WRITTEN,
        status: Truth::False,
        reason: "WriteFailed",
        message: format!(
            "ConfigMap {config_map} could not be written: {why}; tried again in a while"
        ),
    }
}

/// The findings of a failing class, with their API's name, in API order.
fn incompatible<'a>(
    apis: &'a BTreeMap<String, ApiState>,
    fail_on: &'a FailOn,
) -> impl Iterator<Item = (&'a str, &'a FindingReport)> {
    apis.iter().flat_map(move |(name, state)| {
        state
            .findings
            .iter()
            .filter(|f| fail_on.fails(f.class))
            .map(move |f| (name.as_str(), f))
    })
}

fn compatible(
    apis: &BTreeMap<String, ApiState>,
    fail_on: &FailOn,
    baseline: &str,
    members: &[MemberStatus],
) -> Wanted {
    let found: Vec<(&str, &FindingReport)> = incompatible(apis, fail_on).collect();
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let classes = fail_on.words();
    if found.is_empty() {
        return Wanted {
            type_: "Compatible",
            status: Truth::True,
            reason: "NoIncompatibleFinding",
            message: format!(
                "no finding of class {classes} in {} of {} (baseline {baseline})",
                counted(apis.len() as u64, "API"),
                names.join(", ")
            ),
        };
    }
    let mut message = format!(
        "{} of class {classes} between {} (baseline {baseline}): {}",
        counted(found.len() as u64, "finding"),
        names.join(", "),
        found
            .iter()
            .take(SHOWN_FINDINGS)
            .map(|(api, f)| finding_words(api, f))
            .collect::<Vec<_>>()
            .join("; ")
    );
    if found.len() > SHOWN_FINDINGS {
        message.push_str(&format!(
            "; and {} more: `kubectl migrate schema-diff --context {}` shows them all",
            found.len() - SHOWN_FINDINGS,
            names.join(" --context ")
        ));
    }
    Wanted {
        type_: "Compatible",
        status: Truth::False,
        reason: "IncompatibleFindings",
        message,
    }
}

/// One finding as the condition says it: where, what, its class, and its witness (the object
/// one member accepts and another rejects) or why there is none.
fn finding_words(api: &str, f: &FindingReport) -> String {
    let at: Vec<&str> = [Some(api), f.version.as_deref(), Some(f.path.as_str())]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    let proof = match (&f.witness, &f.no_witness) {
        (Some(w), _) => format!(
            "; witness {}, {} by {}",
            w.short,
            w.expect.words(),
            w.source
        ),
        (None, Some(why)) => format!("; no witness: {why}"),
        (None, None) => String::new(),
    };
    format!(
        "{}: {} ({}{proof})",
        at.join(" "),
        f.message,
        f.class.as_str()
    )
}

fn reachable(members: &[MemberStatus]) -> Wanted {
    let down: Vec<String> = members
        .iter()
        .filter(|m| !m.reachable)
        .map(|m| match &m.message {
            Some(why) => format!("{}: {why}", m.name),
            None => m.name.clone(),
        })
        .collect();
    if down.is_empty() {
        return Wanted {
            type_: "Reachable",
            status: Truth::True,
            reason: "MembersAnswer",
            message: format!(
                "every member's API server answers ({})",
                members
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
    }
    Wanted {
        type_: "Reachable",
        status: Truth::False,
        reason: "MemberUnreachable",
        message: format!(
            "{} {} not answer: {}; the comparison resumes when {} back",
            counted(down.len() as u64, "member"),
            if down.len() == 1 { "does" } else { "do" },
            down.join("; "),
            if down.len() == 1 { "it is" } else { "they are" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::schema::diff::Class;

    fn spec(value: serde_json::Value) -> APICompatibilitySpec {
        serde_json::from_value(value).unwrap()
    }

    fn member(name: &str, reachable: bool, message: Option<&str>) -> MemberStatus {
        MemberStatus {
            name: name.into(),
            reachable,
            message: message.map(Into::into),
        }
    }

    fn finding(class: Class, path: &str) -> FindingReport {
        FindingReport {
            version: Some("v1".into()),
            path: path.into(),
            attribute: "maximum".into(),
            change: "lowered".into(),
            rule: "maximum-lowered".into(),
            class,
            message: format!("{path} maximum lowered from 10 to 5 in b"),
            under_status: false,
            witness: None,
            no_witness: None,
            values: Vec::new(),
        }
    }

    fn apis(findings: Vec<FindingReport>) -> BTreeMap<String, ApiState> {
        BTreeMap::from([(
            "widgets.example.com".to_string(),
            ApiState {
                findings,
                served: Vec::new(),
                lcd: None,
            },
        )])
    }

    #[test]
    fn a_spec_is_checked_before_any_cluster_is_asked() {
        let s = spec(serde_json::json!({
            "members": [
                {"name": "a"},
                {"name": "b", "kubeconfigSecret": {"name": "b", "namespace": "other"}},
            ],
            "failOn": ["breaking", "worse"],
            "names": ["widgets"],
        }));
        let p = problems(&s, "team");
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(
            p[0].starts_with("spec.members[1].kubeconfigSecret names Secret b in namespace other"),
            "{p:?}"
        );
        assert!(
            p[1].starts_with("spec.failOn \"worse\" is not a class"),
            "{p:?}"
        );
        assert!(p[2].contains("\"widgets\" is not a CRD name"), "{p:?}");
        let selector = spec(serde_json::json!({
            "members": [{"name": "a"}, {"name": "b"}],
            "selector": {"matchExpressions": [
                {"key": "tier", "operator": "In"},
                {"key": "tier", "operator": "Exists", "values": ["x"]},
                {"key": "tier", "operator": "Equals", "values": ["x"]},
                {"key": "tier", "operator": "NotIn", "values": ["x"]},
            ]},
        }));
        assert_eq!(
            problems(&selector, "team"),
            [
                "spec.selector.matchExpressions[0]: operator In needs at least one value",
                "spec.selector.matchExpressions[1]: operator Exists takes no values; remove them",
                "spec.selector.matchExpressions[2]: operator \"Equals\" is not one of In, NotIn, Exists, DoesNotExist",
            ]
        );
        let fine = spec(serde_json::json!({"members": [{"name": "a"}, {"name": "b"}]}));
        assert!(problems(&fine, "team").is_empty());
        assert_eq!(fine.fail_on, ["breaking"], "breaking by default");
    }

    #[test]
    fn incompatible_findings_are_said_with_their_class_and_counted() {
        let members = vec![member("a", true, None), member("b", true, None)];
        let fail_on = FailOn::default();
        let found = apis(vec![
            finding(Class::Breaking, ".spec.size"),
            finding(Class::Compatible, ".spec.name"),
        ]);
        let v = verdict(Some(&found), &fail_on, "a", members.clone(), None);
        let c = v.compatible.unwrap();
        assert_eq!(c.status, Truth::False);
        assert_eq!(
            c.message,
            "1 finding of class breaking between a, b (baseline a): widgets.example.com v1 .spec.size: .spec.size maximum lowered from 10 to 5 in b (breaking)"
        );
        assert_eq!(v.incompatible_findings, Some(1));
        let fine = verdict(
            Some(&apis(Vec::new())),
            &fail_on,
            "a",
            members.clone(),
            None,
        );
        assert_eq!(
            fine.compatible.unwrap().message,
            "no finding of class breaking in 1 API of a, b (baseline a)"
        );
        let many = apis(
            (0..5)
                .map(|i| finding(Class::Breaking, &format!(".spec.f{i}")))
                .collect(),
        );
        let m = verdict(Some(&many), &fail_on, "a", members, None)
            .compatible
            .unwrap();
        assert!(
            m.message.ends_with(
                "; and 2 more: `kubectl migrate schema-diff --context a --context b` shows them all"
            ),
            "{}",
            m.message
        );
    }

    #[test]
    fn an_unreachable_member_is_named_with_the_reason() {
        let members = vec![
            member("a", true, None),
            member("b", false, Some("connection refused")),
        ];
        let v = verdict(None, &FailOn::default(), "a", members.clone(), None);
        let never = v.compatible.unwrap();
        assert_eq!(
            (never.status, never.reason),
            (Truth::Unknown, "MemberUnreachable"),
            "unknown, not absent, before the first comparison"
        );
        assert_eq!(
            never.message,
            "not compared yet: member b does not answer; compared once every member answers"
        );
        let all_up = vec![member("a", true, None), member("b", true, None)];
        assert_eq!(
            verdict(None, &FailOn::default(), "a", all_up, None).compatible,
            None,
            "nothing to say before the first lists"
        );
        assert_eq!(v.reachable.status, Truth::False);
        assert_eq!(
            v.reachable.message,
            "1 member does not answer: b: connection refused; the comparison resumes when it is back"
        );
        let stale = verdict(
            Some(&apis(Vec::new())),
            &FailOn::default(),
            "a",
            members,
            Some("2026-12-07T14:50:00Z"),
        )
        .compatible
        .unwrap();
        assert_eq!(
            stale.status,
            Truth::Unknown,
            "a verdict it cannot renew is not kept"
        );
        assert_eq!(stale.reason, "MemberUnreachable");
        assert_eq!(
            stale.message,
            "not compared while member b does not answer; the last comparison, at 2026-12-07T14:50:00Z: no finding of class breaking in 1 API of a, b (baseline a)"
        );
    }

    #[test]
    fn only_an_apis_change_is_the_last_change() {
        let at = "2026-12-08T00:00:00Z".to_string();
        let mut change = WatchEvent::source(EventType::Change, "b", at.clone(), None);
        change.api = Some("widgets.example.com".into());
        change.class = Some(Class::Breaking);
        change.api_change = Some(ApiChange::Changed);
        assert_eq!(
            last_change(&change),
            Some(LastChange {
                time: at.clone(),
                api: "widgets.example.com".into(),
                members: vec!["b".into()],
                change: "changed".into(),
                class: Some("breaking".into()),
            })
        );
        change.api_change = Some(ApiChange::Added);
        assert_eq!(last_change(&change).unwrap().change, "added");
        for kind in [
            EventType::SourceLost,
            EventType::SourceBack,
            EventType::Initial,
        ] {
            let other = WatchEvent::source(kind, "b", at.clone(), Some("refused".into()));
            assert_eq!(last_change(&other), None, "{kind:?}");
        }
    }

    #[test]
    fn the_lcd_condition_says_where_it_is_and_what_is_missing() {
        let data = BTreeMap::from([("widgets.example.com.yaml".to_string(), String::new())]);
        let all = lcd_written("lcd", &data, 1);
        assert_eq!((all.type_, all.status), (LCD_WRITTEN, Truth::True));
        assert_eq!(all.message, "ConfigMap lcd holds the LCD of 1 of 1 API");
        assert_eq!(
            lcd_written("lcd", &data, 3).message,
            "ConfigMap lcd holds the LCD of 1 of 3 APIs; the others have no LCD: `kubectl migrate schema-diff --lcd` says why"
        );
        assert_eq!(
            lcd_written("lcd", &BTreeMap::new(), 1).message,
            "ConfigMap lcd holds the LCD of 0 of 1 API; 1 has no LCD: `kubectl migrate schema-diff --lcd` says why"
        );
        let theirs = lcd_config_map_not_ours("lcd", &[]);
        assert_eq!(
            (theirs.status, theirs.reason),
            (Truth::False, "ConfigMapNotOwned")
        );
        assert_eq!(
            theirs.message,
            "ConfigMap lcd exists and has no owner, not this resource; it is left alone: delete it, or name another in spec.lcdConfigMap"
        );
        assert!(
            lcd_config_map_not_ours("lcd", &["APICompatibility/other".into()])
                .message
                .contains("is owned by APICompatibility/other, not this resource"),
        );
    }

    fn class() -> impl Strategy<Value = Class> {
        proptest::sample::select(Class::ALL.to_vec())
    }

    proptest! {
        /// Compatible exactly when no finding has a class --fail-on fails on; the count is
        /// theirs; Reachable exactly when every member answers.
        #[test]
        fn compatible_iff_no_finding_fails(
            classes in proptest::collection::vec(class(), 0..8),
            words in proptest::sample::subsequence(vec!["breaking", "unproven", "changes-stored-data", "changes-selection", "any"], 0..3),
            up in proptest::collection::vec(any::<bool>(), 2..4),
        ) {
            let fail_on = FailOn::parse(&words).unwrap();
            let findings: Vec<FindingReport> = classes.iter().enumerate().map(|(i, c)| finding(*c, &format!(".spec.f{i}"))).collect();
            let members: Vec<MemberStatus> = up.iter().enumerate().map(|(i, u)| member(&format!("m{i}"), *u, (!u).then_some("refused"))).collect();
            let v = verdict(Some(&apis(findings)), &fail_on, "m0", members, None);
            let failing = classes.iter().filter(|c| fail_on.fails(**c)).count();
            let unknown = !up.iter().all(|u| *u);
            let expected = if unknown { Truth::Unknown } else { Truth::from(failing == 0) };
            prop_assert_eq!(v.compatible.unwrap().status, expected);
            prop_assert_eq!(v.incompatible_findings, Some(failing as i64));
            prop_assert_eq!(v.reachable.status, Truth::from(!unknown));
        }
    }
}
