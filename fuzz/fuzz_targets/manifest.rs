//! A file given to `schema-diff -f`, without the filesystem: its bytes through every reader
//! the loader may use (the JSON List streamer, the fast block-YAML reader, and the reference
//! reader `manifest::yaml`: granit-parser's events with kubectl's scalar rules, serde_json for
//! JSON) and on into APIs, the packed form they are kept in, the diff and the LCD.
//!
//! Besides "no panic", the hand-written fast readers are held to what their modules promise:
//! whatever they give is what the reference reader gives (see `block_yaml` and `json_list`),
//! and the two trees the loader reads documents from make the same APIs.
#![no_main]

use kubectl_migrate::manifest::yaml;
use kubectl_migrate::schema::load::{self, BuiltinRef, Selection};
use kubectl_migrate::schema::model::{ApiDef, to_json};
use kubectl_migrate::schema::parse::parse_crd_schema;
use kubectl_migrate::schema::stored::StoredApi;
use kubectl_migrate::schema::{block_yaml, diff, json_list, lcd};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let selections = [
        Selection::default(),
        Selection {
            builtins: vec![BuiltinRef::parse("apps/v1/deployments").unwrap()],
            groups: vec!["km.example.com".into()],
            ..Default::default()
        },
    ];
    json_list_agrees(data, &selections[0]);
    // The loader reads files as UTF-8 text; anything else is an error before parsing.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    block_yaml_agrees(text);
    for selection in &selections {
        load_as_schema_diff(text, selection);
    }
});

/// `json_list::each_item` gives each item as it is in the whole text, or gives up.
fn json_list_agrees(data: &[u8], selection: &Selection) {
    let mut items = Vec::new();
    let outline = json_list::each_item(data, |item| {
        // Items are checked by whoever reads them: the loader gives up on one that is not JSON.
        let value: Value = serde_json::from_str(item.text).ok()?;
        let mut members = serde_json::Map::new();
        let mut spec = None;
        let whole = item.each_member(|key, text| {
            let member: Value = serde_json::from_str(text).expect("a member is JSON");
            if key == "spec" {
                spec = Some(text);
            }
            members.insert(key.to_string(), member);
            Some(())
        });
        if whole.is_some() {
            assert_eq!(
                Some(&members),
                value.as_object(),
                "members of {}",
                item.text
            );
            // The streamer reads a CRD's spec apart from its other members; it must make the
            // same API as the ordinary reader.
            if let Some(spec) = spec {
                members.remove("spec");
                let streamed = load::crd_from_spec_text(&members, spec, "f", selection);
                let ordinary = load::crd_from_value(&value, "f", selection);
                match (streamed, ordinary) {
                    (Some(Ok(a)), Ok(b)) => assert_eq!(a, b),
                    (Some(Ok(a)), Err(e)) => panic!("streamed {a:?}, ordinary failed: {e}"),
                    (Some(Err(_)) | None, _) => {}
                }
            }
        }
        items.push(value);
        Some(())
    });
    let Some(outline) = outline else {
        return;
    };
    let whole: Value = serde_json::from_slice(data).expect("the streamed text is JSON");
    let object = whole.as_object().expect("the streamed text is an object");
    assert_eq!(
        object
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        outline.keys
    );
    assert_eq!(object.get("kind"), outline.kind.as_ref());
    match object.get("items") {
        Some(Value::Array(all)) => assert_eq!(all, &items),
        None => assert!(items.is_empty()),
        Some(other) => panic!("items streamed from a non-array {other}"),
    }
}

/// Whatever the fast block-YAML reader takes, the reference reader reads the same way.
fn block_yaml_agrees(text: &str) {
    let Some(fast) = block_yaml::parse_documents(text) else {
        assert!(block_yaml::parse_borrowed(text).is_none());
        return;
    };
    let borrowed = block_yaml::parse_borrowed(text).expect("both entry points agree");
    assert_eq!(borrowed.len(), fast.len());
    match yaml::documents(text, "f") {
        Ok(docs) => assert_eq!(fast, docs, "the fast reader differs from the reference"),
        Err(e) => panic!("the fast reader accepted what the reference rejects: {e}"),
    }
}

/// What `schema-diff -f FILE` makes of the text: documents, APIs (from both trees), their
/// packed copies, and a comparison of each API with itself.
fn load_as_schema_diff(text: &str, selection: &Selection) {
    let Ok(docs) = load::parse_documents(text, "f") else {
        return;
    };
    // The APIs as the loader keeps them (packed), unpacked.
    let apis = load::stored_apis_from_documents(&docs, "f", selection).map(|stored| {
        stored
            .into_iter()
            .map(|(key, api)| (key, api.def().into_owned()))
            .collect::<std::collections::BTreeMap<_, _>>()
    });
    // The loader keeps block YAML in the borrowing tree; it must give the same APIs.
    if let Some(borrowed) = block_yaml::parse_borrowed(text) {
        let stored = load::stored_apis_from_documents(&borrowed, "f", selection);
        match (&apis, &stored) {
            (Ok(a), Ok(s)) => {
                assert_eq!(a.keys().collect::<Vec<_>>(), s.keys().collect::<Vec<_>>());
                for (key, api) in a {
                    assert_eq!(api, &*s[key].def(), "{key}");
                }
            }
            (Err(a), Err(s)) => assert_eq!(a.to_string(), s.to_string()),
            _ => panic!("the two trees disagree: {apis:?} / {stored:?}"),
        }
    }
    let Ok(apis) = apis else {
        return;
    };
    let labels = vec!["a".to_string(), "b".to_string()];
    for api in apis.values() {
        let stored = if api.builtin {
            StoredApi::parsed(api.clone())
        } else {
            StoredApi::crd(api)
        };
        assert_eq!(&*stored.def(), api, "packing gives back the API");
        if !api.builtin {
            schemas_round_trip(api);
        }
        let pair = [Some(api), Some(api)];
        let _ = diff::diff_api(&pair, 0);
        let common = lcd::lcd_api(&pair, &labels);
        if let Some(manifest) = &common.manifest {
            let mut out = Vec::new();
            manifest.push_json_pretty(&mut out, 0);
            let written: Value = serde_json::from_slice(&out).expect("the manifest is JSON");
            assert_eq!(written, manifest.to_value());
        }
    }
}

/// A CRD schema written out (as the LCD manifest writes it) reads back, and writes out the
/// same again. (Not the same schema: the informational x-kubernetes-* extensions are not
/// written.)
fn schemas_round_trip(api: &ApiDef) {
    for (name, version) in &api.versions {
        let written = to_json(&version.schema);
        let read = parse_crd_schema(&written, "s")
            .unwrap_or_else(|e| panic!("{name}: written schema does not read back: {e:?}"));
        assert_eq!(to_json(&read), written, "{name}");
    }
}
