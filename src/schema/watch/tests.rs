use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::*;
use crate::schema::source::{Origin, SourceSchemas};
use crate::schema::stored::StoredApi;
use crate::schema::{FailOn, Request, compare_one};

pub(super) fn request() -> Request {
    Request {
        clusters: Vec::new(),
        namespaces: BTreeMap::new(),
        request_timeout: Duration::ZERO,
        files: Vec::new(),
        selection: Selection::default(),
        ignore: BTreeSet::new(),
        baseline: None,
        fail_on: FailOn::default(),
        chunk_size: 0,
        witnesses: false,
    }
}

/// A widget CRD whose v1 has `spec` properties `props` (a YAML flow mapping body); `served`
/// says whether v1 is served.
pub(super) fn crd(props: &str, served: bool) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: {served}
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{{props}}}}}
"
    )
}

/// Sources "a", "b", "c" holding the given manifests (`None`: without the CRD).
fn sources(manifests: [Option<&str>; 3]) -> Vec<SourceSchemas> {
    ["a", "b", "c"]
        .iter()
        .zip(manifests)
        .map(|(label, text)| {
            let mut apis = BTreeMap::new();
            if let Some(text) = text {
                let docs = load::parse_documents(text, label).unwrap();
                for (name, api) in
                    load::apis_from_documents(docs, label, &Selection::default()).unwrap()
                {
                    apis.insert(name, StoredApi::crd(&api));
                }
            }
            SourceSchemas {
                label: label.to_string(),
                origin: Origin::File {
                    path: label.to_string(),
                },
                apis,
            }
        })
        .collect()
}

fn state(manifests: [Option<&str>; 3]) -> Option<ApiState> {
    compare_one(&sources(manifests), &request(), "widgets.example.com")
        .map(|mut report| ApiState::of(&mut report))
}

fn event(before: &Option<ApiState>, after: &Option<ApiState>) -> Option<WatchEvent> {
    change(
        "widgets.example.com",
        before.as_ref(),
        after.as_ref(),
        vec!["b".into()],
        "2026-12-05T00:00:00Z".into(),
    )
}

const SIZE_AND_NAME: &str = "size: {type: integer}, name: {type: string}";
const SIZE: &str = "size: {type: integer}";

#[test]
fn the_same_state_is_no_event() {
    let x = crd(SIZE_AND_NAME, true);
    let s = state([Some(&x), Some(&x), Some(&x)]);
    assert_eq!(event(&s, &s), None);
    let y = crd(SIZE, true);
    let d = state([Some(&x), Some(&y), Some(&x)]);
    assert_eq!(event(&d, &d.clone()), None);
}

#[test]
fn a_field_removed_on_one_source_is_breaking_and_narrows_the_lcd() {
    let full = crd(SIZE_AND_NAME, true);
    let less = crd(SIZE, true);
    let before = state([Some(&full), Some(&full), Some(&full)]);
    let after = state([Some(&full), Some(&less), Some(&full)]);
    let e = event(&before, &after).expect("an event");
    assert_eq!(e.class, Some(Class::Breaking));
    assert_eq!(e.api_change, Some(ApiChange::Changed));
    assert_eq!(e.lcd, Some(LcdChange::Narrowed));
    assert!(
        e.new_findings
            .iter()
            .any(|f| f.path == ".spec.name" && f.class == Class::Breaking),
        "{:?}",
        e.new_findings
    );
    assert!(e.gone_findings.is_empty());
    let back = event(&after, &before).expect("an event");
    assert_eq!(back.class, Some(Class::Compatible));
    assert_eq!(back.lcd, Some(LcdChange::Widened));
    assert_eq!(back.gone_findings.len(), e.new_findings.len());
    assert!(back.new_findings.is_empty());
}

#[test]
fn a_version_no_longer_served_is_breaking() {
    let x = crd(SIZE, true);
    let off = crd(SIZE, false);
    let e = event(
        &state([Some(&x), Some(&x), Some(&x)]),
        &state([Some(&x), Some(&off), Some(&x)]),
    )
    .unwrap();
    assert_eq!(e.class, Some(Class::Breaking));
    assert_eq!(
        e.presence,
        vec![PresenceChange {
            source: "b".into(),
            before: Some(vec!["v1".into()]),
            after: Some(vec![]),
        }]
    );
}

#[test]
fn a_crd_deleted_on_one_source_then_everywhere_then_added() {
    let x = crd(SIZE, true);
    let all = state([Some(&x), Some(&x), Some(&x)]);
    let two = state([Some(&x), Some(&x), None]);
    let deleted = event(&all, &two).unwrap();
    assert_eq!(deleted.class, Some(Class::Breaking));
    assert_eq!(deleted.lcd, Some(LcdChange::Lost));
    assert_eq!(deleted.presence[0].source, "c");
    assert_eq!(deleted.presence[0].after, None);
    let gone = event(&two, &None).unwrap();
    assert_eq!(gone.api_change, Some(ApiChange::Removed));
    assert_eq!(gone.class, Some(Class::Breaking));
    let added = event(&None, &state([None, None, Some(&x)])).unwrap();
    assert_eq!(added.api_change, Some(ApiChange::Added));
    assert_eq!(added.class, Some(Class::Compatible));
    assert_eq!(event(&None, &None), None);
}

#[test]
fn an_enum_narrowed_is_breaking_and_events_serialise_with_their_version() {
    let wide = crd("mode: {type: string, enum: [a, b, c]}", true);
    let narrow = crd("mode: {type: string, enum: [a, b]}", true);
    let e = event(
        &state([Some(&wide), Some(&wide), Some(&wide)]),
        &state([Some(&wide), Some(&wide), Some(&narrow)]),
    )
    .unwrap();
    assert_eq!(e.class, Some(Class::Breaking));
    assert_eq!(e.lcd, Some(LcdChange::Narrowed));
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["schemaVersion"], 1);
    assert_eq!(json["type"], "change");
    assert_eq!(json["class"], "breaking");
    assert_eq!(json["lcd"], "narrowed");
    assert_eq!(json["apiChange"], "changed");
    assert!(
        json["newFindings"][0]["rule"]
            .as_str()
            .unwrap()
            .starts_with("enum")
    );
}

#[test]
fn findings_are_counted_for_the_sources_they_concern() {
    let full = crd(SIZE_AND_NAME, true);
    let less = crd(SIZE, true);
    let s = state([Some(&full), Some(&less), Some(&full)]).unwrap();
    assert!(s.count("b", "a", Class::Breaking) >= 1);
    assert_eq!(s.count("c", "a", Class::Breaking), 0);
    assert_eq!(s.count("a", "a", Class::Breaking), 0);
}

#[test]
fn a_default_removed_is_a_stored_data_event_that_fail_on_decides() {
    let with = crd("size: {type: integer, default: 3}", true);
    let without = crd("size: {type: integer}", true);
    let before = state([Some(&with), Some(&with), Some(&with)]);
    let after = state([Some(&with), Some(&without), Some(&with)]);
    let e = event(&before, &after).expect("an event");
    assert_eq!(e.class, Some(Class::ChangesStoredData), "{e:?}");
    // The LCD loses the default too: what it stores changes, though it refuses nothing more.
    let lcd = |s: &Option<ApiState>| s.as_ref().and_then(|s| s.lcd.clone()).expect("an LCD");
    let (old, new) = (lcd(&before), lcd(&after));
    assert_eq!(lcd_diff(&old, &new).1, Some(Class::ChangesStoredData));
    assert!(
        !e.fails(&FailOn::default()),
        "breaking alone does not count it"
    );
    for words in [
        &["changes-stored-data"][..],
        &["breaking,changes-stored-data"],
        &["any"],
    ] {
        assert!(e.fails(&FailOn::parse(words).unwrap()), "{words:?}");
    }
    assert!(!e.fails(&FailOn::parse(&["changes-selection"]).unwrap()));
}
