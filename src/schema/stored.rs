//! The APIs of a loaded source, kept compact until they are compared.
//!
//! A parsed [`ApiDef`] takes about ten times the memory of its manifest: every schema node is a
//! [`Schema`](super::model::Schema) of some 600 bytes. Three sources of 1,000 CRDs took well over
//! a gigabyte that way. So a CRD is kept as the part of its manifest that
//! [`crd_from_value`] reads, packed into a lossless binary form, and is parsed again when it is
//! compared, one API at a time. It was parsed once already while loading, so that every input
//! error is reported before any output, exactly as before; parsing it again gives the same
//! [`ApiDef`] (checked in debug builds). Built-in types (from OpenAPI documents, whose `$ref`s
//! point into the rest of the document) are kept parsed.
use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use super::load::{Selection, crd_from_value};
use super::model::ApiDef;

/// One API of a source.
#[derive(Debug, Clone)]
pub struct StoredApi {
    pub group: String,
    pub kind: String,
    /// The versions it serves (what `--object` looks for).
    pub served: Vec<String>,
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Parsed(Box<ApiDef>),
    /// What `crd_from_value` reads of a CRD manifest, packed.
    Crd(Packed),
}

impl StoredApi {
    /// An API kept as it is (built-in types).
    pub fn parsed(api: ApiDef) -> StoredApi {
        StoredApi {
            group: api.group.clone(),
            kind: api.kind.clone(),
            served: served(&api),
            form: Form::Parsed(Box::new(api)),
        }
    }

    /// A CRD, given what [`crd_from_value`] made of `manifest`.
    pub fn crd(api: &ApiDef, manifest: &Value) -> StoredApi {
        let stored = StoredApi {
            group: api.group.clone(),
            kind: api.kind.clone(),
            served: served(api),
            form: Form::Crd(Packed::crd_essentials(manifest)),
        };
        debug_assert_eq!(
            stored.def().as_ref(),
            api,
            "a stored CRD does not parse back to the same API"
        );
        stored
    }

    /// Whether `other` was kept from the very same CRD manifest (as far as the parser reads
    /// it): then both parse to the same API.
    pub fn same_crd_as(&self, other: &StoredApi) -> bool {
        matches!((&self.form, &other.form), (Form::Crd(a), Form::Crd(b)) if a == b)
    }

    /// The API, parsed again where it was kept packed.
    pub fn def(&self) -> Cow<'_, ApiDef> {
        match &self.form {
            Form::Parsed(api) => Cow::Borrowed(api),
            Form::Crd(packed) => Cow::Owned(
                crd_from_value(&packed.unpack(), "", &Selection::default())
                    .ok()
                    .flatten()
                    .expect("a stored CRD parsed when it was loaded"),
            ),
        }
    }
}

fn served(api: &ApiDef) -> Vec<String> {
    api.versions
        .iter()
        .filter(|(_, v)| v.served)
        .map(|(name, _)| name.clone())
        .collect()
}

/// A JSON value in a compact binary form that gives back exactly the same [`Value`] (numbers
/// keep their kind and bits; JSON text would not always give back the same `f64`).
#[derive(Clone, PartialEq)]
pub struct Packed(std::sync::Arc<[u8]>);

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.0.len())
    }
}

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const NEGATIVE: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

impl Packed {
    pub fn pack(value: &Value) -> Packed {
        let mut out = Vec::new();
        pack_into(value, &mut out);
        Packed(out.into())
    }

    /// What [`crd_from_value`] reads of a CRD manifest: `apiVersion`, `metadata.name`, the
    /// `api-approved.kubernetes.io` annotation and `spec`; not `status`, not the other
    /// annotations (`kubectl apply` keeps a copy of the whole manifest in one), not
    /// `managedFields`. Packed straight from the manifest, without copying it first.
    fn crd_essentials(manifest: &Value) -> Packed {
        const APPROVED: &str = "api-approved.kubernetes.io";
        let mut out = Vec::new();
        let top: Vec<(&str, Option<&Value>)> = vec![
            ("apiVersion", manifest.get("apiVersion")),
            (
                "metadata",
                manifest.get("metadata").filter(|m| m.is_object()),
            ),
            ("spec", manifest.get("spec")),
        ];
        // Keys in the order of a serde_json map, as unpacking inserts them anyway.
        let top: Vec<(&str, &Value)> = top.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
        out.push(OBJECT);
        pack_len(top.len(), &mut out);
        for (key, value) in top {
            pack_str(key, &mut out);
            if key != "metadata" {
                pack_into(value, &mut out);
                continue;
            }
            let name = value.get("name");
            let approved = value.get("annotations").and_then(|a| a.get(APPROVED));
            out.push(OBJECT);
            pack_len(
                usize::from(name.is_some()) + usize::from(approved.is_some()),
                &mut out,
            );
            if let Some(approved) = approved {
                pack_str("annotations", &mut out);
                out.push(OBJECT);
                pack_len(1, &mut out);
                pack_str(APPROVED, &mut out);
                pack_into(approved, &mut out);
            }
            if let Some(name) = name {
                pack_str("name", &mut out);
                pack_into(name, &mut out);
            }
        }
        Packed(out.into())
    }

    pub fn unpack(&self) -> Value {
        let mut reader = Reader {
            bytes: &self.0,
            at: 0,
        };
        let value = reader.value();
        debug_assert_eq!(reader.at, self.0.len(), "trailing bytes");
        value
    }
}

fn pack_into(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(UNSIGNED);
                out.extend_from_slice(&u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                out.push(NEGATIVE);
                out.extend_from_slice(&i.to_le_bytes());
            } else {
                out.push(FLOAT);
                let f = n.as_f64().expect("a JSON number is u64, i64 or f64");
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(STRING);
            pack_str(s, out);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            pack_len(items.len(), out);
            for item in items {
                pack_into(item, out);
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            pack_len(map.len(), out);
            for (key, item) in map {
                pack_str(key, out);
                pack_into(item, out);
            }
        }
    }
}

fn pack_str(s: &str, out: &mut Vec<u8>) {
    pack_len(s.len(), out);
    out.extend_from_slice(s.as_bytes());
}

/// LEB128.
fn pack_len(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes[self.at];
        self.at += 1;
        b
    }

    fn eight(&mut self) -> [u8; 8] {
        let b: [u8; 8] = self.bytes[self.at..self.at + 8]
            .try_into()
            .expect("eight bytes");
        self.at += 8;
        b
    }

    fn len(&mut self) -> usize {
        let (mut n, mut shift) = (0usize, 0);
        loop {
            let b = self.byte();
            n |= ((b & 0x7f) as usize) << shift;
            if b < 0x80 {
                return n;
            }
            shift += 7;
        }
    }

    fn string(&mut self) -> String {
        let n = self.len();
        let s = std::str::from_utf8(&self.bytes[self.at..self.at + n])
            .expect("packed from a str")
            .to_string();
        self.at += n;
        s
    }

    fn value(&mut self) -> Value {
        match self.byte() {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UNSIGNED => Value::Number(Number::from(u64::from_le_bytes(self.eight()))),
            NEGATIVE => Value::Number(Number::from(i64::from_le_bytes(self.eight()))),
            FLOAT => Value::Number(
                Number::from_f64(f64::from_bits(u64::from_le_bytes(self.eight())))
                    .expect("packed from a finite number"),
            ),
            STRING => Value::String(self.string()),
            ARRAY => {
                let n = self.len();
                Value::Array((0..n).map(|_| self.value()).collect())
            }
            OBJECT => {
                let n = self.len();
                let mut map = Map::new();
                for _ in 0..n {
                    let key = self.string();
                    let value = self.value();
                    map.insert(key, value);
                }
                Value::Object(map)
            }
            other => unreachable!("not a packed value tag: {other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,200}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,12}", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn packing_gives_back_the_same_value(v in value()) {
            prop_assert_eq!(Packed::pack(&v).unpack(), v);
        }
    }

    #[test]
    fn numbers_keep_their_kind_and_bits() {
        for v in [
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(0.1),
            json!(1.7976931348623157e308),
            json!(5e-324),
            json!(-0.0),
            json!(1.0),
        ] {
            let back = Packed::pack(&v).unpack();
            assert_eq!(back, v);
            assert_eq!(
                (back.is_u64(), back.is_i64(), back.is_f64()),
                (v.is_u64(), v.is_i64(), v.is_f64())
            );
            if let (Some(a), Some(b)) = (back.as_f64(), v.as_f64()) {
                assert_eq!(a.to_bits(), b.to_bits());
            }
        }
    }

    #[test]
    fn a_stored_crd_keeps_only_what_is_read_and_parses_back() {
        let manifest = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": "widgets.example.com",
                "annotations": {
                    "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111",
                    "kubectl.kubernetes.io/last-applied-configuration": "{...}"
                },
                "managedFields": [{"manager": "kubectl"}],
                "uid": "x"
            },
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"n": {"type": "number", "maximum": 0.1}}}}}]
            },
            "status": {"storedVersions": ["v1"]}
        });
        let api = crd_from_value(&manifest, "w", &Selection::default())
            .unwrap()
            .unwrap();
        let stored = StoredApi::crd(&api, &manifest);
        assert_eq!(stored.def().as_ref(), &api);
        assert_eq!(stored.served, ["v1"]);
        let Form::Crd(packed) = &stored.form else {
            panic!("a CRD is kept packed")
        };
        let kept = packed.unpack();
        assert_eq!(
            kept["metadata"],
            json!({"name": "widgets.example.com", "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"}})
        );
        assert!(kept.get("status").is_none() && kept.get("kind").is_none());
    }
}
