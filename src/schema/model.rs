//! The schema model: one normalized tree per API version, whatever it was read from (a CRD's
//! `openAPIV3Schema` or a built-in type of an OpenAPI v3 document; see [`super::parse`]), so that
//! the diff, the LCD and the validator only know one shape.
//!
//! [`SchemaNode`] is the one definition of a schema node's keywords: serde derives from it the
//! JSON a schema is written as (the LCD manifests, with `serde_json`'s own printer) and the
//! packed form sources are kept in ([`super::stored`]). The parser reads the same keywords with
//! the API server's checks. A keyword added here reaches every form; `model/tests.rs` takes each
//! keyword through all of them.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One node of a (structural) schema, behind a shared pointer. This way a node moves as a pointer, a map of properties (whose
/// B-tree leaves hold eleven values each) holds pointers instead of eleven nodes, and a copy
/// (the LCD keeps what all sources have alike; its manifest shares the LCD's schemas) shares
/// the node instead of copying its whole subtree. Changing a shared node copies that node, not
/// its children, first.
#[derive(Clone, Default)]
pub struct Schema(std::sync::Arc<Shared>);

/// A node and what is worked out from it once, kept beside it until it changes.
#[derive(Clone, Default)]
struct Shared {
    node: SchemaNode,
    /// [`Schema::defaulted_properties`]: the validator defaults every object it checks, and a
    /// witness search checks thousands against the same schema, whose objects may have
    /// hundreds of thousands of properties; scanning them all for defaults each time made the
    /// search quadratic. Boxed: most nodes have no properties to work it out for.
    defaulted: std::sync::OnceLock<Box<DefaultedNames>>,
}

/// The names of a node's properties that have a `default`.
#[derive(Clone)]
struct DefaultedNames(Box<[String]>);

impl std::ops::Deref for Schema {
    type Target = SchemaNode;
    fn deref(&self) -> &SchemaNode {
        &self.0.node
    }
}

/// A change goes through here, so what was worked out from the node is dropped with it (a
/// child's `default` changes through its parent's `properties`, which passes here too).
impl std::ops::DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut SchemaNode {
        let shared = std::sync::Arc::make_mut(&mut self.0);
        shared.defaulted = std::sync::OnceLock::new();
        &mut shared.node
    }
}

/// A node written field by field may have given its rare keywords a box they no longer need.
impl From<SchemaNode> for Schema {
    fn from(mut node: SchemaNode) -> Schema {
        node.rare.compact();
        Schema(std::sync::Arc::new(Shared {
            node,
            defaulted: std::sync::OnceLock::new(),
        }))
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.0.node == other.0.node
    }
}

impl Schema {
    /// The names of the properties that have a `default`, in name order; worked out once per
    /// node.
    pub fn defaulted_properties(&self) -> &[String] {
        let names = self.0.defaulted.get_or_init(|| {
            Box::new(DefaultedNames(
                self.properties
                    .iter()
                    .filter(|(_, p)| p.default.is_some())
                    .map(|(name, _)| name.clone())
                    .collect(),
            ))
        });
        &names.0
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.node.fmt(f)
    }
}

/// Written and read as the node it points to.
impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.node.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Schema, D::Error> {
        SchemaNode::deserialize(deserializer).map(Schema::from)
    }
}

/// Text that may be large and is shared, not copied: a description. A CRD may carry a
/// description of a hundred megabytes; it was copied into the model, the packed form, the
/// unpacked form, the finding of its change and the report, seven times the file in all. Now
/// the model, the packed form (see [`SharedText::set_aside`]), the finding and the report
/// share one copy; and a text that is most of its file is the file's own text (see
/// [`SharedText::within`]), so that it is not in memory twice while the file is parsed.
#[derive(Clone)]
pub struct SharedText(Repr);

#[derive(Clone)]
enum Repr {
    Own(std::sync::Arc<str>),
    /// A part of a file's text: the text, and where the part starts and ends.
    Part(std::sync::Arc<String>, usize, usize),
}

/// Texts of at least this many bytes are kept beside the packed form rather than in it.
const ASIDE_BYTES: usize = 1 << 16;

thread_local! {
    /// While packing: the texts set aside, each written as its index here.
    static ASIDE: std::cell::RefCell<Option<Vec<SharedText>>> = const { std::cell::RefCell::new(None) };
    /// While unpacking: the texts set aside by the packing, by index.
    static BACK: std::cell::RefCell<Option<Vec<SharedText>>> = const { std::cell::RefCell::new(None) };
    /// While a file is parsed: its text (see [`SharedText::within`]).
    static FILE: std::cell::RefCell<Option<std::sync::Arc<String>>> = const { std::cell::RefCell::new(None) };
}

impl SharedText {
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Own(text) => text,
            Repr::Part(file, start, end) => &file[*start..*end],
        }
    }

    /// A text read from the input: where it is at least half of the file being parsed (see
    /// [`SharedText::within`]) and [`ASIDE_BYTES`] or more, that part of the file's text; else
    /// a copy.
    pub fn read(text: &str) -> SharedText {
        if text.len() >= ASIDE_BYTES
            && let Some(part) = FILE.with_borrow(|file| {
                let file = file.as_ref()?;
                let start = (text.as_ptr() as usize).checked_sub(file.as_ptr() as usize)?;
                let end = start + text.len();
                (end <= file.len() && text.len() * 2 >= file.len())
                    .then(|| Repr::Part(file.clone(), start, end))
            })
        {
            return SharedText(part);
        }
        text.into()
    }

    /// Runs `parse` (on this thread) with `file` as the text [`SharedText::read`] takes its
    /// parts of. A file's text kept this way stays in memory while such a part does: at most
    /// twice the part.
    pub fn within<R>(file: &std::sync::Arc<String>, parse: impl FnOnce() -> R) -> R {
        FILE.with_borrow_mut(|f| *f = Some(file.clone()));
        let parsed = parse();
        FILE.with_borrow_mut(|f| *f = None);
        parsed
    }

    /// Runs `write` (a packing, on this thread) with every text of [`ASIDE_BYTES`] or more
    /// set aside, written as its index in the list returned beside the result, so that the
    /// packed form shares the text instead of holding a copy.
    pub(super) fn set_aside<R>(write: impl FnOnce() -> R) -> (R, Vec<SharedText>) {
        ASIDE.with_borrow_mut(|a| *a = Some(Vec::new()));
        let written = write();
        let texts = ASIDE.with_borrow_mut(Option::take).unwrap_or_default();
        (written, texts)
    }

    /// Runs `read` (an unpacking, on this thread) with `texts`, as [`SharedText::set_aside`]
    /// gave them, for the indices in the packed form.
    pub(super) fn put_back<R>(texts: &[SharedText], read: impl FnOnce() -> R) -> R {
        if texts.is_empty() {
            return read();
        }
        BACK.with_borrow_mut(|b| *b = Some(texts.to_vec()));
        let read = read();
        BACK.with_borrow_mut(|b| *b = None);
        read
    }
}

impl Default for SharedText {
    fn default() -> SharedText {
        "".into()
    }
}

impl std::ops::Deref for SharedText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> SharedText {
        SharedText(Repr::Own(text.into()))
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> SharedText {
        SharedText(Repr::Own(text.into()))
    }
}

/// By the text, however it is kept.
impl PartialEq for SharedText {
    fn eq(&self, other: &SharedText) -> bool {
        let (a, b) = (self.as_str(), other.as_str());
        std::ptr::eq(a, b) || a == b
    }
}

impl Eq for SharedText {}

impl PartialOrd for SharedText {
    fn partial_cmp(&self, other: &SharedText) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedText {
    fn cmp(&self, other: &SharedText) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for SharedText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Debug for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A string, or while packing (a large text) the index of the text set aside.
impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.len() >= ASIDE_BYTES
            && let Some(index) = ASIDE.with_borrow_mut(|aside| {
                aside.as_mut().map(|aside| {
                    aside.push(self.clone());
                    aside.len() - 1
                })
            })
        {
            return serializer.serialize_u64(index as u64);
        }
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SharedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SharedText, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = SharedText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SharedText, E> {
                Ok(text.into())
            }
            fn visit_u64<E: serde::de::Error>(self, index: u64) -> Result<SharedText, E> {
                BACK.with_borrow(|back| {
                    back.as_ref()
                        .and_then(|back| back.get(usize::try_from(index).ok()?))
                        .cloned()
                })
                .ok_or_else(|| E::invalid_type(serde::de::Unexpected::Unsigned(index), &self))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

/// The keywords of one schema node, named as the API server's `JSONSchemaProps` names them.
/// Keywords the API server ignores for validation are not kept (`externalDocs`, `id`,
/// `$schema`), except `example`, whose change is reported. Empty and false keywords are not
/// written.
///
/// Most nodes of a real schema have a type, a description and perhaps properties and little
/// else, so those are kept here and every other keyword in [`RareKeywords`], boxed and only
/// where a node has one: a node takes 112 bytes instead of some 600 (a CRD of 300,000
/// properties took 200 MB per source). The rare keywords read as the node's own fields
/// (`node.maximum`), through `Deref`; writing one gives the node its box.
///
/// The JSON and packed forms are written and read by [`keywords!`], one line per keyword.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaNode {
    pub additional_properties: Option<AdditionalProperties>,
    pub description: Option<SharedText>,
    pub items: Option<Schema>,
    pub nullable: bool,
    pub properties: BTreeMap<String, Schema>,
    /// `object`, `array`, `string`, `integer`, `number` or `boolean`; `None` for int-or-string,
    /// for a node that only preserves unknown fields, and inside value validations.
    pub type_: Option<String>,
    pub int_or_string: bool,
    pub preserve_unknown_fields: bool,
    /// The other keywords.
    pub rare: Rare,
}

/// The keywords most nodes lack (see [`SchemaNode`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RareKeywords {
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    /// `default: null` is a default too.
    pub default: Option<Value>,
    pub enum_values: Option<Vec<Value>>,
    /// Informational: a change is reported, never judged.
    pub example: Option<Box<Value>>,
    pub exclusive_maximum: bool,
    pub exclusive_minimum: bool,
    pub format: Option<String>,
    pub max_items: Option<u64>,
    pub max_length: Option<u64>,
    pub max_properties: Option<u64>,
    pub maximum: Option<f64>,
    pub min_items: Option<u64>,
    pub min_length: Option<u64>,
    pub min_properties: Option<u64>,
    pub minimum: Option<f64>,
    pub multiple_of: Option<f64>,
    pub not: Option<Schema>,
    pub one_of: Vec<Schema>,
    pub pattern: Option<String>,
    /// Sorted and without duplicates.
    pub required: Vec<String>,
    pub title: Option<String>,
    pub unique_items: bool,
    pub embedded_resource: bool,
    pub list_map_keys: Vec<String>,
    pub list_type: Option<String>,
    pub map_type: Option<String>,
    pub validations: Vec<CelRule>,
    /// Other `x-kubernetes-*` extensions (patch strategy, merge key, ...; in OpenAPI documents
    /// any `x-*`): informational only, written back as they were read.
    pub extensions: BTreeMap<String, Value>,
}

/// A node's [`RareKeywords`]: none (all empty) until one is written.
#[derive(Clone, Default)]
pub struct Rare(Option<Box<RareKeywords>>);

impl Rare {
    /// Gives the box back where every keyword in it is empty again.
    fn compact(&mut self) {
        if self
            .0
            .as_deref()
            .is_some_and(|k| *k == RareKeywords::default())
        {
            self.0 = None;
        }
    }
}

impl std::ops::Deref for Rare {
    type Target = RareKeywords;
    fn deref(&self) -> &RareKeywords {
        static NONE: std::sync::LazyLock<RareKeywords> =
            std::sync::LazyLock::new(RareKeywords::default);
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl std::ops::DerefMut for Rare {
    fn deref_mut(&mut self) -> &mut RareKeywords {
        self.0.get_or_insert_with(Box::default)
    }
}

/// Equal by the keywords: an empty box is no box.
impl PartialEq for Rare {
    fn eq(&self, other: &Rare) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Rare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl From<RareKeywords> for Rare {
    fn from(keywords: RareKeywords) -> Rare {
        let mut rare = Rare(Some(Box::new(keywords)));
        rare.compact();
        rare
    }
}

/// A node with only rare keywords (value validations inside junctions, mostly).
impl From<RareKeywords> for SchemaNode {
    fn from(keywords: RareKeywords) -> SchemaNode {
        SchemaNode {
            rare: keywords.into(),
            ..SchemaNode::default()
        }
    }
}

impl std::ops::Deref for SchemaNode {
    type Target = RareKeywords;
    fn deref(&self) -> &RareKeywords {
        &self.rare
    }
}

impl std::ops::DerefMut for SchemaNode {
    fn deref_mut(&mut self) -> &mut RareKeywords {
        &mut self.rare
    }
}

/// Whether a keyword is empty, and so not written.
trait Empty {
    fn is_empty(&self) -> bool;
}

impl<T> Empty for Option<T> {
    fn is_empty(&self) -> bool {
        self.is_none()
    }
}

impl<T> Empty for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

impl<K, V> Empty for BTreeMap<K, V> {
    fn is_empty(&self) -> bool {
        BTreeMap::is_empty(self)
    }
}

impl Empty for bool {
    fn is_empty(&self) -> bool {
        !self
    }
}

/// How a keyword's value is written (`bound`: integral bounds as integers, `maximum: 10`, not
/// `10.0`, as [`number_value`] shows them) and read (`present`: `default: null` is a default,
/// where a plain `Option` reads `null` as absent).
macro_rules! keyword_out {
    (plain, $value:expr) => {
        $value
    };
    (present, $value:expr) => {
        $value
    };
    (bound, $value:expr) => {
        &$value.map(number_value)
    };
}

macro_rules! keyword_in {
    (plain, $members:expr) => {
        $members.next_value()?
    };
    (bound, $members:expr) => {
        $members.next_value()?
    };
    (present, $members:expr) => {
        Some($members.next_value::<Value>()?)
    };
}

/// The keywords as they are written and read, one line each, in the order of their names:
/// written in this order, a node's members come sorted, as a `serde_json` map has them
/// (kubectl's output, and this tool's before, are compared against that). Other members are
/// the extensions, written after them. The same code writes and reads the packed form
/// ([`super::stored`]).
macro_rules! keywords {
    ($($name:literal => $field:ident $how:ident,)*) => {
        impl Serialize for SchemaNode {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut members = serializer.serialize_map(None)?;
                $(
                    if !Empty::is_empty(&self.$field) {
                        members.serialize_entry($name, keyword_out!($how, &self.$field))?;
                    }
                )*
                for (name, value) in &self.extensions {
                    members.serialize_entry(name, value)?;
                }
                members.end()
            }
        }

        impl<'de> Deserialize<'de> for SchemaNode {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SchemaNode, D::Error> {
                struct Members;
                impl<'de> serde::de::Visitor<'de> for Members {
                    type Value = SchemaNode;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a schema")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut members: A,
                    ) -> Result<SchemaNode, A::Error> {
                        let mut node = SchemaNode::default();
                        while let Some(Name(name)) = members.next_key::<Name<'de>>()? {
                            match &*name {
                                $($name => node.$field = keyword_in!($how, members),)*
                                _ => {
                                    node.extensions.insert(name.into_owned(), members.next_value()?);
                                }
                            }
                        }
                        node.rare.compact();
                        Ok(node)
                    }
                }
                deserializer.deserialize_map(Members)
            }
        }
    };
}

keywords! {
    "additionalProperties" => additional_properties plain,
    "allOf" => all_of plain,
    "anyOf" => any_of plain,
    "default" => default present,
    "description" => description plain,
    "enum" => enum_values plain,
    "example" => example plain,
    "exclusiveMaximum" => exclusive_maximum plain,
    "exclusiveMinimum" => exclusive_minimum plain,
    "format" => format plain,
    "items" => items plain,
    "maxItems" => max_items plain,
    "maxLength" => max_length plain,
    "maxProperties" => max_properties plain,
    "maximum" => maximum bound,
    "minItems" => min_items plain,
    "minLength" => min_length plain,
    "minProperties" => min_properties plain,
    "minimum" => minimum bound,
    "multipleOf" => multiple_of bound,
    "not" => not plain,
    "nullable" => nullable plain,
    "oneOf" => one_of plain,
    "pattern" => pattern plain,
    "properties" => properties plain,
    "required" => required plain,
    "title" => title plain,
    "type" => type_ plain,
    "uniqueItems" => unique_items plain,
    "x-kubernetes-embedded-resource" => embedded_resource plain,
    "x-kubernetes-int-or-string" => int_or_string plain,
    "x-kubernetes-list-map-keys" => list_map_keys plain,
    "x-kubernetes-list-type" => list_type plain,
    "x-kubernetes-map-type" => map_type plain,
    "x-kubernetes-preserve-unknown-fields" => preserve_unknown_fields plain,
    "x-kubernetes-validations" => validations plain,
}

/// A member's name, borrowed from the input where it can be.
struct Name<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name<'de>, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member's name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(std::borrow::Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Name<'de>, E> {
                Ok(Name(std::borrow::Cow::Owned(name.to_string())))
            }
            fn visit_string<E>(self, name: String) -> Result<Name<'de>, E> {
                Ok(Name(std::borrow::Cow::Owned(name)))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// Whether two nodes are equal. Sources that hold the very same CRD share one parsed copy, so
/// their nodes are often the same node, which is equal without looking.
pub fn same_schema(a: &Schema, b: &Schema) -> bool {
    std::sync::Arc::ptr_eq(&a.0, &b.0) || a == b
}

/// `additionalProperties`: a flag, or the schema of a map's values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AdditionalProperties {
    /// `additionalProperties: true/false`.
    Allowed(bool),
    /// A map whose values follow this schema.
    Schema(Schema),
}

/// Read by what the member is (serde's `untagged` would first copy a whole map's schema into a
/// buffer of its own to try each variant).
impl<'de> Deserialize<'de> for AdditionalProperties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = AdditionalProperties;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a boolean or a schema")
            }
            fn visit_bool<E>(self, allowed: bool) -> Result<AdditionalProperties, E> {
                Ok(AdditionalProperties::Allowed(allowed))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<AdditionalProperties, A::Error> {
                let node =
                    SchemaNode::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(AdditionalProperties::Schema(node.into()))
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// One `x-kubernetes-validations` entry (fields in the order of their names, as in
/// [`SchemaNode`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CelRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub rule: String,
}

/// Rules order by their expression first (the LCD keeps the least of the rules that share one).
impl Ord for CelRule {
    fn cmp(&self, other: &CelRule) -> std::cmp::Ordering {
        type Key<'r> = (
            &'r String,
            &'r Option<String>,
            &'r Option<String>,
            &'r Option<String>,
            &'r Option<String>,
            Option<bool>,
        );
        fn key(r: &CelRule) -> Key<'_> {
            (
                &r.rule,
                &r.message,
                &r.message_expression,
                &r.reason,
                &r.field_path,
                r.optional_old_self,
            )
        }
        key(self).cmp(&key(other))
    }
}

impl PartialOrd for CelRule {
    fn partial_cmp(&self, other: &CelRule) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl CelRule {
    /// Rules are matched across sources by their expression, whitespace-insensitively.
    pub fn key(&self) -> String {
        self.rule.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl SchemaNode {
    /// The name users see for the node's type.
    pub fn type_name(&self) -> String {
        if self.int_or_string {
            "int-or-string".into()
        } else if let Some(t) = &self.type_ {
            t.clone()
        } else if self.preserve_unknown_fields {
            "any".into()
        } else {
            "untyped".into()
        }
    }

    pub fn map_values(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .binary_search_by(|r| r.as_str().cmp(name))
            .is_ok()
    }

    /// Whether unknown properties are kept at this object node (so a field one source lacks is
    /// still stored there, just not validated).
    pub fn keeps_unknown_fields(&self) -> bool {
        self.preserve_unknown_fields
            || matches!(
                self.additional_properties,
                Some(AdditionalProperties::Allowed(true))
            )
    }
}

/// A value, shortened for messages.
pub fn short(v: &Value) -> String {
    shorten(&v.to_string(), 60)
}

/// `text` cut to `max` characters, the last one the UI's one truncation marker, `…`.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let kept: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// A schema as JSON, in the `JSONSchemaProps` shape of a CRD.
pub fn to_json(s: &Schema) -> Value {
    serde_json::to_value(s).expect("a schema is JSON")
}

/// Integers stay integers in the output (`maximum: 10`, not `10.0`).
pub fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// One API (a CRD, or a built-in resource) as one source serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiDef {
    /// `plural.group` for CRDs; `group/version/resource` for built-in types.
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub singular: Option<String>,
    pub list_kind: Option<String>,
    pub short_names: BTreeSet<String>,
    pub categories: BTreeSet<String>,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    pub builtin: bool,
    pub versions: BTreeMap<String, VersionDef>,
    /// CRD conversion strategy (None, Webhook).
    pub conversion: Option<String>,
    /// The CRD's `api-approved.kubernetes.io` annotation, which the API server requires for
    /// groups under k8s.io and kubernetes.io.
    pub api_approved: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionDef {
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub schema: Schema,
    /// Raw `subresources` (status, scale), `Value::Null` when none.
    pub subresources: Value,
    pub printer_columns: Vec<Value>,
    pub selectable_fields: Vec<Value>,
}

impl ApiDef {
    /// Versions in Kubernetes' priority order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others).
    pub fn versions_by_priority(&self) -> Vec<&String> {
        let mut names: Vec<&String> = self.versions.keys().collect();
        names.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
        names
    }

    pub fn storage_version(&self) -> Option<&str> {
        self.versions
            .iter()
            .find(|(_, v)| v.storage)
            .map(|(n, _)| n.as_str())
    }
}

/// Kubernetes orders versions GA > beta > alpha, then by number; unparseable names sort last.
pub fn version_priority(name: &str) -> (u8, u64, u64) {
    let Some(rest) = name.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    for (prefix, level) in [("beta", 2), ("alpha", 1)] {
        if let Some(n) = tail.strip_prefix(prefix)
            && let Ok(minor) = n.parse::<u64>()
        {
            return (level, major, minor);
        }
    }
    (0, 0, 0)
}

#[cfg(test)]
pub(crate) mod tests;
