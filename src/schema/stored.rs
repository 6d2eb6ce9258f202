//! The APIs of a loaded source, kept compact until they are compared.
//!
//! A parsed [`ApiDef`] takes several times the memory of its manifest: every schema node is a
//! [`SchemaNode`] of some 600 bytes. Three sources of 1,000 CRDs took well over a gigabyte that way.
//! So a CRD is parsed (and checked) once while loading, so that every input error is reported
//! before any output, and is then kept in a lossless binary form of the parsed model, which is
//! unpacked again when it is compared, one API at a time. Unpacking only copies fields out: it
//! neither builds the manifest again nor checks it again. Built-in types (few, and large) are
//! kept parsed.
use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use std::collections::{BTreeMap, BTreeSet};

use super::model::{AdditionalProperties, ApiDef, CelRule, Schema, SchemaNode, VersionDef};

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
    /// A CRD, packed.
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

    /// A CRD, kept packed.
    pub fn crd(api: &ApiDef) -> StoredApi {
        let stored = StoredApi {
            group: api.group.clone(),
            kind: api.kind.clone(),
            served: served(api),
            form: Form::Crd(Packed::api(api)),
        };
        debug_assert_eq!(
            stored.def().as_ref(),
            api,
            "a stored CRD does not unpack to the same API"
        );
        stored
    }

    /// Whether `other` is the very same CRD (packing is one-to-one).
    pub fn same_crd_as(&self, other: &StoredApi) -> bool {
        matches!((&self.form, &other.form), (Form::Crd(a), Form::Crd(b)) if a == b)
    }

    /// The API, unpacked where it was kept packed.
    pub fn def(&self) -> Cow<'_, ApiDef> {
        match &self.form {
            Form::Parsed(api) => Cow::Borrowed(api),
            Form::Crd(packed) => Cow::Owned(packed.unpack_api()),
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
    #[cfg(test)]
    pub fn pack(value: &Value) -> Packed {
        let mut out = Vec::new();
        pack_into(value, &mut out);
        Packed(out.into())
    }

    #[cfg(test)]
    pub fn unpack(&self) -> Value {
        let mut reader = Reader {
            bytes: &self.0,
            at: 0,
        };
        let value = reader.value();
        debug_assert_eq!(reader.at, self.0.len(), "trailing bytes");
        value
    }

    /// A parsed API, packed.
    pub fn api(api: &ApiDef) -> Packed {
        // Packed into a buffer kept per thread, then copied once at its final size: growing a
        // fresh buffer for each API had the kernel zero pages for every step of its growth.
        thread_local! {
            static PACKING: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        PACKING.with_borrow_mut(|out| {
            out.clear();
            api.pack(out);
            Packed(out.as_slice().into())
        })
    }

    pub fn unpack_api(&self) -> ApiDef {
        let mut reader = Reader {
            bytes: &self.0,
            at: 0,
        };
        let api = ApiDef::unpack(&mut reader);
        debug_assert_eq!(reader.at, self.0.len(), "trailing bytes");
        api
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

/// A part of the model in packed form. Packing writes every field, in declaration order;
/// unpacking reads them back in the same order. Fields that are often empty (options, lists,
/// maps) and flags take one bit of a mask before the fields, and nothing more when empty.
trait Pack: Sized {
    fn pack(&self, out: &mut Vec<u8>);
    fn unpack(reader: &mut Reader<'_>) -> Self;
}

impl Pack for String {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_str(self, out);
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        reader.string()
    }
}

impl Pack for Value {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_into(self, out);
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        reader.value()
    }
}

impl Pack for u64 {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_len(*self as usize, out);
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        reader.len() as u64
    }
}

impl Pack for f64 {
    fn pack(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        f64::from_bits(u64::from_le_bytes(reader.eight()))
    }
}

impl Pack for bool {
    fn pack(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        reader.byte() != 0
    }
}

impl<T: Pack> Pack for Vec<T> {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_len(self.len(), out);
        for item in self {
            item.pack(out);
        }
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let n = reader.len();
        (0..n).map(|_| T::unpack(reader)).collect()
    }
}

impl<T: Pack> Pack for BTreeMap<String, T> {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_len(self.len(), out);
        for (key, item) in self {
            pack_str(key, out);
            item.pack(out);
        }
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let n = reader.len();
        (0..n)
            .map(|_| (reader.string(), T::unpack(reader)))
            .collect()
    }
}

impl Pack for BTreeSet<String> {
    fn pack(&self, out: &mut Vec<u8>) {
        pack_len(self.len(), out);
        for item in self {
            pack_str(item, out);
        }
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let n = reader.len();
        (0..n).map(|_| reader.string()).collect()
    }
}

/// Lists, maps and sets: a field of one of these is packed only when it is not empty.
trait Many: Pack + Default {
    fn is_empty(&self) -> bool;
}

impl<T: Pack> Many for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

impl<T: Pack> Many for BTreeMap<String, T> {
    fn is_empty(&self) -> bool {
        BTreeMap::is_empty(self)
    }
}

impl Many for BTreeSet<String> {
    fn is_empty(&self) -> bool {
        BTreeSet::is_empty(self)
    }
}

/// Packs the fields of one struct: the mask of flags and non-empty fields first (patched in
/// when done), then the non-empty fields.
struct FieldsOut<'a> {
    out: &'a mut Vec<u8>,
    mask_at: usize,
    mask: u64,
    bit: u32,
}

impl<'a> FieldsOut<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        let mask_at = out.len();
        out.extend_from_slice(&[0; 8]);
        FieldsOut {
            out,
            mask_at,
            mask: 0,
            bit: 0,
        }
    }

    fn next_bit(&mut self, set: bool) {
        assert!(self.bit < 64, "more than 64 optional fields");
        if set {
            self.mask |= 1 << self.bit;
        }
        self.bit += 1;
    }

    fn flag(&mut self, value: bool) -> &mut Self {
        self.next_bit(value);
        self
    }

    fn always<T: Pack>(&mut self, value: &T) -> &mut Self {
        value.pack(self.out);
        self
    }

    fn option<T: Pack>(&mut self, value: &Option<T>) -> &mut Self {
        self.next_bit(value.is_some());
        if let Some(value) = value {
            value.pack(self.out);
        }
        self
    }

    fn many<T: Many>(&mut self, value: &T) -> &mut Self {
        self.next_bit(!value.is_empty());
        if !value.is_empty() {
            value.pack(self.out);
        }
        self
    }

    fn done(&mut self) {
        let at = self.mask_at;
        self.out[at..at + 8].copy_from_slice(&self.mask.to_le_bytes());
    }
}

/// Unpacks what [`FieldsOut`] packed, in the same order.
struct FieldsIn<'r, 'a> {
    reader: &'r mut Reader<'a>,
    mask: u64,
    bit: u32,
}

impl<'r, 'a> FieldsIn<'r, 'a> {
    fn new(reader: &'r mut Reader<'a>) -> Self {
        let mask = u64::from_le_bytes(reader.eight());
        FieldsIn {
            reader,
            mask,
            bit: 0,
        }
    }

    fn next_bit(&mut self) -> bool {
        let set = self.mask & (1 << self.bit) != 0;
        self.bit += 1;
        set
    }

    fn flag(&mut self) -> bool {
        self.next_bit()
    }

    fn always<T: Pack>(&mut self) -> T {
        T::unpack(self.reader)
    }

    fn option<T: Pack>(&mut self) -> Option<T> {
        self.next_bit().then(|| T::unpack(self.reader))
    }

    /// A list, map or set: empty where its bit is not set.
    fn many<T: Many>(&mut self) -> T {
        if self.next_bit() {
            T::unpack(self.reader)
        } else {
            T::default()
        }
    }
}

impl Pack for CelRule {
    fn pack(&self, out: &mut Vec<u8>) {
        let CelRule {
            rule,
            message,
            message_expression,
            reason,
            field_path,
            optional_old_self,
        } = self;
        FieldsOut::new(out)
            .always(rule)
            .option(message)
            .option(message_expression)
            .option(reason)
            .option(field_path)
            .option(optional_old_self)
            .done();
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let mut f = FieldsIn::new(reader);
        CelRule {
            rule: f.always(),
            message: f.option(),
            message_expression: f.option(),
            reason: f.option(),
            field_path: f.option(),
            optional_old_self: f.option(),
        }
    }
}

impl Pack for AdditionalProperties {
    fn pack(&self, out: &mut Vec<u8>) {
        match self {
            AdditionalProperties::Allowed(allowed) => out.push(u8::from(*allowed)),
            AdditionalProperties::Schema(schema) => {
                out.push(2);
                schema.pack(out);
            }
        }
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        match reader.byte() {
            0 => AdditionalProperties::Allowed(false),
            1 => AdditionalProperties::Allowed(true),
            2 => AdditionalProperties::Schema(Schema::unpack(reader)),
            other => unreachable!("not a packed additionalProperties tag: {other}"),
        }
    }
}

impl Pack for Schema {
    fn pack(&self, out: &mut Vec<u8>) {
        // Destructured, so that a new field cannot be forgotten here.
        let SchemaNode {
            type_,
            int_or_string,
            format,
            title,
            description,
            default,
            nullable,
            enum_values,
            pattern,
            max_length,
            min_length,
            maximum,
            exclusive_maximum,
            minimum,
            exclusive_minimum,
            multiple_of,
            max_items,
            min_items,
            unique_items,
            max_properties,
            min_properties,
            required,
            properties,
            additional_properties,
            items,
            preserve_unknown_fields,
            embedded_resource,
            list_type,
            list_map_keys,
            map_type,
            validations,
            all_of,
            any_of,
            one_of,
            not,
            extensions,
        } = &**self;
        FieldsOut::new(out)
            .option(type_)
            .flag(*int_or_string)
            .option(format)
            .option(title)
            .option(description)
            .option(default)
            .flag(*nullable)
            .option(enum_values)
            .option(pattern)
            .option(max_length)
            .option(min_length)
            .option(maximum)
            .flag(*exclusive_maximum)
            .option(minimum)
            .flag(*exclusive_minimum)
            .option(multiple_of)
            .option(max_items)
            .option(min_items)
            .flag(*unique_items)
            .option(max_properties)
            .option(min_properties)
            .many(required)
            .many(properties)
            .option(additional_properties)
            .option(items)
            .flag(*preserve_unknown_fields)
            .flag(*embedded_resource)
            .option(list_type)
            .many(list_map_keys)
            .option(map_type)
            .many(validations)
            .many(all_of)
            .many(any_of)
            .many(one_of)
            .option(not)
            .many(extensions)
            .done();
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let mut f = FieldsIn::new(reader);
        SchemaNode {
            type_: f.option(),
            int_or_string: f.flag(),
            format: f.option(),
            title: f.option(),
            description: f.option(),
            default: f.option(),
            nullable: f.flag(),
            enum_values: f.option(),
            pattern: f.option(),
            max_length: f.option(),
            min_length: f.option(),
            maximum: f.option(),
            exclusive_maximum: f.flag(),
            minimum: f.option(),
            exclusive_minimum: f.flag(),
            multiple_of: f.option(),
            max_items: f.option(),
            min_items: f.option(),
            unique_items: f.flag(),
            max_properties: f.option(),
            min_properties: f.option(),
            required: f.many(),
            properties: f.many(),
            additional_properties: f.option(),
            items: f.option(),
            preserve_unknown_fields: f.flag(),
            embedded_resource: f.flag(),
            list_type: f.option(),
            list_map_keys: f.many(),
            map_type: f.option(),
            validations: f.many(),
            all_of: f.many(),
            any_of: f.many(),
            one_of: f.many(),
            not: f.option(),
            extensions: f.many(),
        }
        .into()
    }
}

impl Pack for VersionDef {
    fn pack(&self, out: &mut Vec<u8>) {
        let VersionDef {
            served,
            storage,
            deprecated,
            schema,
            subresources,
            printer_columns,
            selectable_fields,
        } = self;
        FieldsOut::new(out)
            .flag(*served)
            .flag(*storage)
            .flag(*deprecated)
            .always(schema)
            .always(subresources)
            .many(printer_columns)
            .many(selectable_fields)
            .done();
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let mut f = FieldsIn::new(reader);
        VersionDef {
            served: f.flag(),
            storage: f.flag(),
            deprecated: f.flag(),
            schema: f.always(),
            subresources: f.always(),
            printer_columns: f.many(),
            selectable_fields: f.many(),
        }
    }
}

impl Pack for ApiDef {
    fn pack(&self, out: &mut Vec<u8>) {
        let ApiDef {
            name,
            group,
            kind,
            plural,
            singular,
            list_kind,
            short_names,
            categories,
            scope,
            builtin,
            versions,
            conversion,
            api_approved,
        } = self;
        FieldsOut::new(out)
            .always(name)
            .always(group)
            .always(kind)
            .always(plural)
            .option(singular)
            .option(list_kind)
            .many(short_names)
            .many(categories)
            .always(scope)
            .flag(*builtin)
            .many(versions)
            .option(conversion)
            .option(api_approved)
            .done();
    }
    fn unpack(reader: &mut Reader<'_>) -> Self {
        let mut f = FieldsIn::new(reader);
        ApiDef {
            name: f.always(),
            group: f.always(),
            kind: f.always(),
            plural: f.always(),
            singular: f.option(),
            list_kind: f.option(),
            short_names: f.many(),
            categories: f.many(),
            scope: f.always(),
            builtin: f.flag(),
            versions: f.many(),
            conversion: f.option(),
            api_approved: f.option(),
        }
    }
}

#[cfg(test)]
mod tests;
