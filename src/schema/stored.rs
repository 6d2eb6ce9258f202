//! The APIs of a loaded source, kept compact until they are compared.
//!
//! A parsed [`ApiDef`] takes several times the memory of its manifest: every schema node is a
//! [`SchemaNode`](super::model::SchemaNode) of some 600 bytes. Three sources of 1,000 CRDs took
//! well over a gigabyte that way. So a CRD is parsed (and checked) once while loading, so that
//! every input error is reported before any output, and is then kept packed: the parsed model
//! in MessagePack (`rmp-serde`), as the model's one serde definition lays it out. It is
//! unpacked again when it is compared, one API at a time; unpacking only reads the fields back:
//! it neither builds the manifest again nor checks it again. Built-in types (few, and large)
//! are kept parsed.
use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::model::{ApiDef, SharedText};

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
            form: Form::Crd(Packed::pack(api)),
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
            Form::Crd(packed) => Cow::Owned(packed.unpack()),
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

/// A part of the model, packed: MessagePack with each struct as a map of its members' names
/// (which serde skips where empty), so that what is written can be read back without a schema of
/// its own, and JSON values keep their kind and bits (`1.0` stays a float, `-0.0` its sign).
///
/// Large texts (a description of megabytes) are not copied into it: they are kept beside it,
/// shared with the model (see [`SharedText::set_aside`]).
#[derive(Clone, PartialEq)]
pub struct Packed(std::sync::Arc<[u8]>, Vec<SharedText>);

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.0.len())
    }
}

impl Packed {
    pub fn pack(value: &impl Serialize) -> Packed {
        // Packed into a buffer kept per thread, then copied once at its final size: growing a
        // fresh buffer for each API had the kernel zero pages for every step of its growth.
        thread_local! {
            static PACKING: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let (bytes, texts) = SharedText::set_aside(|| {
            PACKING.with_borrow_mut(|out| {
                out.clear();
                rmp_serde::encode::write_named(out, value).expect("the model packs into memory");
                std::sync::Arc::<[u8]>::from(out.as_slice())
            })
        });
        Packed(bytes, texts)
    }

    pub fn unpack<T: DeserializeOwned>(&self) -> T {
        SharedText::put_back(&self.1, || {
            rmp_serde::from_slice(&self.0).expect("unpacks what was packed")
        })
    }
}

#[cfg(test)]
mod tests;
