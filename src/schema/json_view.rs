//! Read access to a JSON tree, for the schema parser, over two trees: `serde_json::Value` and
//! [`Json`], a tree that borrows its strings from the text it was parsed from.
//!
//! A `Value` gives every string and every object key an allocation of its own and every object
//! a B-tree; for the specs of a large List of CRDs, building and dropping those trees took more
//! time than parsing the schemas they hold. [`Json`] reads the same text into the same answers
//! (keys in order, the last of repeated keys, the same numbers) with far fewer allocations, and
//! turns a subtree into a `Value` only where the model keeps one (defaults, enums, extensions).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A JSON value as the schema parser reads it.
pub trait JsonView: Sized {
    type Members: JsonObject<Self> + ?Sized;

    fn as_object(&self) -> Option<&Self::Members>;
    fn as_array(&self) -> Option<&[Self]>;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_u64(&self) -> Option<u64>;
    fn as_f64(&self) -> Option<f64>;
    /// The value as an owned `Value`.
    fn to_value(&self) -> Value;
    /// The value itself when it is a `Value` (only OpenAPI documents, which are, follow `$ref`s).
    fn as_serde_value(&self) -> Option<&Value> {
        None
    }

    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }

    /// The value at a JSON pointer (RFC 6901), as `Value::pointer` finds it.
    fn pointer(&self, pointer: &str) -> Option<&Self> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut target = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            target = match (target.as_object(), target.as_array()) {
                (Some(object), _) => object.get(&token)?,
                (_, Some(items)) => items.get(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }
}

/// An index token of a JSON pointer: digits, without leading zeros.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

/// The members of a JSON object, in the order of their keys.
pub trait JsonObject<V> {
    fn get(&self, key: &str) -> Option<&V>;
    fn len(&self) -> usize;
    fn members<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s V)>
    where
        V: 's;
}

impl JsonView for Value {
    type Members = Map<String, Value>;

    fn as_object(&self) -> Option<&Self::Members> {
        Value::as_object(self)
    }
    fn as_array(&self) -> Option<&[Self]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn as_bool(&self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_u64(&self) -> Option<u64> {
        Value::as_u64(self)
    }
    fn as_f64(&self) -> Option<f64> {
        Value::as_f64(self)
    }
    fn to_value(&self) -> Value {
        self.clone()
    }
    fn as_serde_value(&self) -> Option<&Value> {
        Some(self)
    }
    fn pointer(&self, pointer: &str) -> Option<&Self> {
        Value::pointer(self, pointer)
    }
}

impl JsonObject<Value> for Map<String, Value> {
    fn get(&self, key: &str) -> Option<&Value> {
        Map::get(self, key)
    }
    fn len(&self) -> usize {
        Map::len(self)
    }
    fn members<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s Value)>
    where
        Value: 's,
    {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// A JSON value whose strings (and keys) are borrowed from the text where they have no escapes.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(JsonMap<'a>),
}

/// An object's members, sorted by key, each key once (the last of repeated ones, as in `Value`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonMap<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> JsonMap<'a> {
    fn from_members(mut members: Vec<(Cow<'a, str>, Json<'a>)>) -> Self {
        // A stable sort keeps repeated keys in text order; the last one then takes the place
        // of the ones before it.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        members.dedup_by(|later, kept| {
            if later.0 == kept.0 {
                std::mem::swap(later, kept);
                true
            } else {
                false
            }
        });
        JsonMap(members)
    }

    /// The members as they are, sorted; `None` when a key is repeated.
    pub fn from_unique(mut members: Vec<(Cow<'a, str>, Json<'a>)>) -> Option<Self> {
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let repeated = members.windows(2).any(|pair| pair[0].0 == pair[1].0);
        (!repeated).then_some(JsonMap(members))
    }
}

impl<'a> JsonObject<Json<'a>> for JsonMap<'a> {
    fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| &self.0[i].1)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn members<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s Json<'a>)>
    where
        Json<'a>: 's,
    {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

impl<'a> JsonView for Json<'a> {
    type Members = JsonMap<'a>;

    fn as_object(&self) -> Option<&Self::Members> {
        match self {
            Json::Object(map) => Some(map),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&[Self]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(map) => Value::Object(
                map.0
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        // As `Value` does: a float JSON cannot hold becomes null.
        Ok(Number::from_f64(n).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_string())))
    }
    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Json::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key_seed(KeySeed)? {
            members.push((key, map.next_value()?));
        }
        Ok(Json::Object(JsonMap::from_members(members)))
    }
}

/// An object key, borrowed when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any JSON value, with strings that need escaping (for the tests of other modules too).
    pub(crate) fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "(?s).{0,40}".prop_map(Value::String),
            "[a-z\"\\\\\n\t\r\u{1}\u{8}\u{c}\u{1f}\u{7f}é ]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("(?s).{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn both(text: &str) -> (Value, Value) {
        let tree: Json = serde_json::from_str(text).unwrap();
        (tree.to_value(), serde_json::from_str(text).unwrap())
    }

    #[test]
    fn repeated_keys_keep_the_last_and_keys_come_in_order() {
        let (tree, value) =
            both(r#"{"b": 1, "a": {"x": 1, "x": 2}, "b": [3, "\u0041"], "c": null}"#);
        assert_eq!(tree, value);
        let parsed: Json = serde_json::from_str(r#"{"b": 1, "a": 2, "b": 3}"#).unwrap();
        let keys: Vec<&str> = parsed
            .as_object()
            .unwrap()
            .members()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(parsed.get("b").and_then(JsonView::as_u64), Some(3));
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let text = r#"{"plain": "text", "esc\"aped": "a\nb"}"#;
        let parsed: Json = serde_json::from_str(text).unwrap();
        let map = parsed.as_object().unwrap();
        assert!(matches!(
            map.get("plain"),
            Some(Json::String(Cow::Borrowed("text")))
        ));
        assert!(matches!(map.get("esc\"aped"), Some(Json::String(Cow::Owned(s))) if s == "a\nb"));
    }

    #[test]
    fn pointers_find_what_value_pointers_find() {
        let text = r#"{"a/b": {"c~d": [10, {"e": true}]}, "0": "zero", "list": [1, 2]}"#;
        let parsed: Json = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        for pointer in [
            "",
            "/a~1b",
            "/a~1b/c~0d",
            "/a~1b/c~0d/1/e",
            "/a~1b/c~0d/01",
            "/a~1b/c~0d/+1",
            "/0",
            "/list/1",
            "/list/2",
            "/missing",
            "no-slash",
            "/list/x",
        ] {
            assert_eq!(
                parsed.pointer(pointer).map(JsonView::to_value),
                value.pointer(pointer).cloned(),
                "{pointer}"
            );
        }
    }

    proptest! {
        /// Any JSON text reads into the same `Value` through either tree.
        #[test]
        fn every_text_reads_as_value_reads_it(value in crate::schema::json_view::tests::json_value()) {
            let text = serde_json::to_string(&value).unwrap();
            let (tree, direct) = both(&text);
            prop_assert_eq!(tree, direct);
        }
    }
}
