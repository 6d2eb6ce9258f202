//! Sources -> [`SourceSchemas`]: files (CRD manifests, lists, multi-document YAML, directories,
//! OpenAPI v3 documents, stdin) and live clusters (one CRD list call each, plus the OpenAPI v3
//! documents of the built-in groups asked for). Parsing is pure; only [`load_cluster`] and the
//! file reading touch the outside world.
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::json_list;
use super::json_view::{Json, JsonObject, JsonView};
use super::model::{ApiDef, SharedText, VersionDef};
use super::parse::{self, RefResolver, SchemaError};
use super::source::{Origin, SourceSchemas};
use super::stored::StoredApi;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::manifest::yaml;

/// A built-in type named on the command line: `apps/v1/statefulsets`, `core/v1/pods` (also
/// `v1/pods` or `/v1/pods` for the core group).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BuiltinRef {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl BuiltinRef {
    pub fn parse(text: &str) -> Result<BuiltinRef, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let (group, version, resource) = match parts.as_slice() {
            [v, r] => ("", *v, *r),
            [g, v, r] => (if *g == "core" { "" } else { *g }, *v, *r),
            _ => {
                return Err(format!(
                    "--builtin {text:?}: expected GROUP/VERSION/RESOURCE, e.g. apps/v1/statefulsets or core/v1/pods"
                ));
            }
        };
        if version.is_empty()
            || resource.is_empty()
            || resource.chars().any(|c| c.is_ascii_uppercase())
        {
            return Err(format!(
                "--builtin {text:?}: expected GROUP/VERSION/RESOURCE with the plural, lower-case resource, e.g. apps/v1/statefulsets"
            ));
        }
        Ok(BuiltinRef {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
        })
    }

    /// The key under which the API is compared: `apps/v1/statefulsets`, `core/v1/pods`.
    pub fn key(&self) -> String {
        builtin_key(&self.group, &self.version, &self.resource)
    }

    /// The OpenAPI v3 path of its group-version: `apis/apps/v1` or `api/v1`.
    pub fn openapi_path(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }
}

fn builtin_key(group: &str, version: &str, resource: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{group}/{version}/{resource}")
}

/// What the user asked to compare.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// CRD names (`widgets.example.com`); empty means all.
    pub names: Vec<String>,
    pub groups: Vec<String>,
    /// CRDs by their labels (an APICompatibility's spec.selector); `None`: any labels.
    pub labels: Option<kube::core::Selector>,
    pub builtins: Vec<BuiltinRef>,
}

impl Selection {
    /// CRDs are compared unless the user only asked for built-in types.
    pub fn wants_crds(&self) -> bool {
        !self.names.is_empty() || !self.groups.is_empty() || self.builtins.is_empty()
    }

    pub fn wants_crd(&self, name: &str, group: &str) -> bool {
        (self.names.is_empty() || self.names.iter().any(|n| n == name))
            && (self.groups.is_empty() || self.groups.iter().any(|g| g == group))
    }

    /// Whether a CRD's labels (read only when a selector asks) match the selector.
    pub fn wants_labels(&self, labels: impl FnOnce() -> BTreeMap<String, String>) -> bool {
        use kube::core::SelectorExt;
        self.labels.as_ref().is_none_or(|s| s.matches(&labels()))
    }
}

/// A problem with one input, named so the user can find it.
fn bad_input(source: &str, message: impl std::fmt::Display) -> Error {
    Error::input(source, message.to_string())
}

fn schema_errors(source: &str, what: &str, errors: &[SchemaError]) -> Error {
    let list: Vec<String> = errors.iter().take(10).map(|e| format!("  - {e}")).collect();
    let more = if errors.len() > 10 {
        format!("\n  ... and {} more", errors.len() - 10)
    } else {
        String::new()
    };
    bad_input(
        source,
        format!(
            "{what} is not a valid structural schema:\n{}{more}",
            list.join("\n")
        ),
    )
}

/// Splits a file's text into documents as kubectl reads them (see [`crate::manifest::yaml`]),
/// through the fast block-YAML reader where it takes the text.
pub fn parse_documents(text: &str, source: &str) -> Result<Vec<Value>> {
    if !yaml::looks_like_json(text)
        && let Some(docs) = super::block_yaml::parse_documents(text)
    {
        return Ok(docs);
    }
    yaml::documents(text, source)
}

/// Turns the documents of one file into APIs. CRDs, lists of CRDs and OpenAPI v3 documents are
/// accepted; anything else is an error that names the document. (The tool keeps them compact:
/// [`stored_apis_from_documents`]; the tests want them parsed.)
#[cfg(test)]
pub fn apis_from_documents(
    docs: Vec<Value>,
    source: &str,
    selection: &Selection,
) -> Result<BTreeMap<String, ApiDef>> {
    let mut apis = BTreeMap::new();
    each_api(&docs, source, selection, |api| {
        apis.insert(api.name.clone(), api);
    })?;
    Ok(apis)
}

/// [`apis_from_documents`], kept compact for comparing later (see [`StoredApi`]). The
/// documents may be in either tree (see [`json_view`](super::json_view)).
pub fn stored_apis_from_documents<D: JsonView>(
    docs: &[D],
    source: &str,
    selection: &Selection,
) -> Result<BTreeMap<String, StoredApi>> {
    let mut apis = BTreeMap::new();
    each_api(docs, source, selection, |api| {
        store_one(&mut apis, api);
    })?;
    Ok(apis)
}

/// APIs kept compact (see [`StoredApi`]) by name; of two with one name, the later.
fn store(found: Vec<ApiDef>) -> BTreeMap<String, StoredApi> {
    let mut apis = BTreeMap::new();
    for api in found {
        store_one(&mut apis, api);
    }
    apis
}

fn store_one(apis: &mut BTreeMap<String, StoredApi>, api: ApiDef) {
    let name = api.name.clone();
    let stored = if api.builtin {
        StoredApi::parsed(api)
    } else {
        StoredApi::crd(&api)
    };
    apis.insert(name, stored);
}

/// Calls `found` with each selected API of the documents, in order; stops at the first error.
fn each_api<D: JsonView>(
    docs: &[D],
    source: &str,
    selection: &Selection,
    mut found: impl FnMut(ApiDef),
) -> Result<()> {
    for (index, doc) in docs.iter().enumerate() {
        let at = crate::manifest::document_at(source, index, docs.len());
        if is_openapi(doc) {
            let doc = match doc.as_serde_value() {
                Some(value) => std::borrow::Cow::Borrowed(value),
                None => std::borrow::Cow::Owned(doc.to_value()),
            };
            for api in apis_from_openapi(&doc, &at, selection)?.into_values() {
                found(api);
            }
            continue;
        }
        match kind_of(doc) {
            "CustomResourceDefinition" => {
                if let Some(api) = crd_from_value(doc, &at, selection)? {
                    found(api);
                }
            }
            "List" | "CustomResourceDefinitionList" => {
                let items = doc.get("items").and_then(D::as_array).unwrap_or_default();
                for (i, item) in items.iter().enumerate() {
                    let item_at = format!("{at} items[{i}]");
                    if item.get("kind").and_then(D::as_str) != Some("CustomResourceDefinition") {
                        return Err(not_a_crd(item, &item_at));
                    }
                    if let Some(api) = crd_from_value(item, &item_at, selection)? {
                        found(api);
                    }
                }
            }
            _ => return Err(not_a_crd(doc, &at)),
        }
    }
    Ok(())
}

fn is_openapi(doc: &impl JsonView) -> bool {
    doc.get("openapi").is_some() && doc.get("components").is_some()
}

fn kind_of<V: JsonView>(doc: &V) -> &str {
    doc.get("kind").and_then(V::as_str).unwrap_or("")
}

fn not_a_crd<V: JsonView>(doc: &V, at: &str) -> Error {
    let kind = doc.get("kind").and_then(V::as_str);
    let api_version = doc.get("apiVersion").and_then(V::as_str);
    let what = match (api_version, kind) {
        (Some(a), Some(k)) => format!("a {k} ({a})"),
        (None, Some(k)) => format!("a {k} without apiVersion"),
        _ => "not a Kubernetes object (no apiVersion/kind)".to_string(),
    };
    bad_input(
        at,
        format!(
            "is {what}, not a CustomResourceDefinition, a list of them, or an OpenAPI v3 document"
        ),
    )
}

/// One CRD manifest (apiextensions.k8s.io/v1), or `None` when it is not selected.
pub fn crd_from_value<V: JsonView>(
    doc: &V,
    at: &str,
    selection: &Selection,
) -> Result<Option<ApiDef>> {
    let crd = CrdParts {
        api_version: doc.get("apiVersion").and_then(V::as_str),
        metadata: doc.get("metadata"),
        spec: doc.get("spec"),
    };
    crd_from_parts(crd, at, selection)
}

/// The parts of a CRD manifest that make its API; metadata and spec may be in either tree
/// (a List item's spec is read apart from its other members).
struct CrdParts<'a, M, S> {
    api_version: Option<&'a str>,
    metadata: Option<&'a M>,
    spec: Option<&'a S>,
}

/// [`crd_from_value`] for a manifest whose spec is still JSON text, beside its other members:
/// the spec, the bulk of a CRD, is read into the tree that borrows its strings (see
/// [`json_view`](super::json_view)). `None` when `spec` is not JSON.
pub fn crd_from_spec_text(
    members: &serde_json::Map<String, Value>,
    spec: &str,
    at: &str,
    selection: &Selection,
) -> Option<Result<Option<ApiDef>>> {
    let spec: Json = serde_json::from_str(spec).ok()?;
    let crd = CrdParts {
        api_version: members.get("apiVersion").and_then(Value::as_str),
        metadata: members.get("metadata"),
        spec: Some(&spec),
    };
    Some(crd_from_parts(crd, at, selection))
}

/// A JSON string's text.
fn text<V: JsonView>(v: Option<&V>) -> Option<String> {
    v.and_then(V::as_str).map(str::to_string)
}

/// [`crd_from_value`], from the parts of the manifest.
fn crd_from_parts<M: JsonView, S: JsonView>(
    crd: CrdParts<'_, M, S>,
    at: &str,
    selection: &Selection,
) -> Result<Option<ApiDef>> {
    let api_version = crd.api_version.unwrap_or("");
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(bad_input(
            at,
            format!(
                "CustomResourceDefinition has apiVersion {api_version:?}; only apiextensions.k8s.io/v1 is served since Kubernetes 1.22"
            ),
        ));
    }
    let name = text(crd.metadata.and_then(|m| m.get("name")))
        .ok_or_else(|| bad_input(at, "CustomResourceDefinition has no metadata.name"))?;
    let at = format!("{at} ({name})");
    let spec = crd
        .spec
        .ok_or_else(|| bad_input(&at, "spec: Required value"))?;
    let group =
        text(spec.get("group")).ok_or_else(|| bad_input(&at, "spec.group: Required value"))?;
    let labels = || {
        crd.metadata
            .and_then(|m| m.get("labels"))
            .and_then(|l| l.as_object())
            .map(|l| {
                l.members()
                    .filter_map(|(k, v)| Some((k.to_string(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    if !selection.wants_crds()
        || !selection.wants_crd(&name, &group)
        || !selection.wants_labels(labels)
    {
        return Ok(None);
    }
    let names = spec.get("names");
    let name_of = |key: &str| text(names.and_then(|n| n.get(key)));
    let plural =
        name_of("plural").ok_or_else(|| bad_input(&at, "spec.names.plural: Required value"))?;
    let kind = name_of("kind").ok_or_else(|| bad_input(&at, "spec.names.kind: Required value"))?;
    if name != format!("{plural}.{group}") {
        return Err(bad_input(
            &at,
            format!(
                "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"
            ),
        ));
    }
    let string_set = |key: &str| {
        names
            .and_then(|n| n.get(key))
            .and_then(S::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let scope =
        text(spec.get("scope")).ok_or_else(|| bad_input(&at, "spec.scope: Required value"))?;
    if scope != "Namespaced" && scope != "Cluster" {
        return Err(bad_input(
            &at,
            format!(
                "spec.scope: Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""
            ),
        ));
    }
    let version_list = spec
        .get("versions")
        .and_then(S::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad_input(&at, "spec.versions: Invalid value: must have exactly one version marked as storage version"))?;
    let mut versions = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, v) in version_list.iter().enumerate() {
        let vname = text(v.get("name"))
            .ok_or_else(|| bad_input(&at, format!("spec.versions[{i}].name: Required value")))?;
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let Some(raw) = v.pointer("/schema/openAPIV3Schema") else {
            return Err(bad_input(
                &at,
                format!("{path}: Required value: schemas are required"),
            ));
        };
        let schema = match parse::parse_crd_schema(raw, &path) {
            Ok(s) => s,
            Err(e) => {
                errors.extend(e);
                continue;
            }
        };
        let flag = |k: &str| v.get(k).and_then(S::as_bool).unwrap_or(false);
        let list = |k: &str| {
            v.get(k)
                .and_then(S::as_array)
                .map(|items| items.iter().map(S::to_value).collect())
                .unwrap_or_default()
        };
        versions.insert(
            vname,
            VersionDef {
                served: flag("served"),
                storage: flag("storage"),
                deprecated: flag("deprecated"),
                schema,
                subresources: v.get("subresources").map_or(Value::Null, S::to_value),
                printer_columns: list("additionalPrinterColumns"),
                selectable_fields: list("selectableFields"),
            },
        );
    }
    if !errors.is_empty() {
        return Err(schema_errors(&at, "the CRD", &errors));
    }
    if versions.values().filter(|v| v.storage).count() != 1 {
        return Err(bad_input(
            &at,
            "spec.versions: Invalid value: must have exactly one version marked as storage version",
        ));
    }
    Ok(Some(ApiDef {
        name,
        group,
        kind,
        plural,
        singular: name_of("singular"),
        list_kind: name_of("listKind"),
        short_names: string_set("shortNames"),
        categories: string_set("categories"),
        scope,
        builtin: false,
        versions,
        conversion: text(spec.pointer("/conversion/strategy")),
        api_approved: text(
            crd.metadata
                .and_then(|m| m.pointer("/annotations/api-approved.kubernetes.io")),
        ),
    }))
}

struct Components<'a>(&'a Value);

impl RefResolver for Components<'_> {
    fn resolve(&self, reference: &str) -> Option<&Value> {
        let name = reference.strip_prefix("#/components/schemas/")?;
        self.0.pointer("/components/schemas")?.get(name)
    }
}

/// The resources an OpenAPI v3 document (as served at /openapi/v3/apis/G/V) describes, found
/// through its `.../{resource}/{name}` GET paths. Only the selected ones are parsed (all of
/// them when nothing was selected).
pub fn apis_from_openapi(
    doc: &Value,
    at: &str,
    selection: &Selection,
) -> Result<BTreeMap<String, ApiDef>> {
    let mut apis = BTreeMap::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Err(bad_input(at, "OpenAPI document has no paths"));
    };
    for (path, item) in paths {
        let Some((group, version, namespaced, resource)) = resource_path(path) else {
            continue;
        };
        let key = builtin_key(&group, &version, &resource);
        let wanted = if selection.builtins.is_empty() {
            selection.names.is_empty() && selection.groups.is_empty()
                || selection.groups.iter().any(|g| g == &group)
        } else {
            selection.builtins.iter().any(|b| b.key() == key)
        };
        if !wanted || apis.contains_key(&key) && !namespaced {
            continue;
        }
        let Some(reference) = item
            .pointer("/get/responses/200/content/application~1json/schema/$ref")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let resolver = Components(doc);
        let Some(component) = resolver.resolve(reference) else {
            return Err(bad_input(
                at,
                format!("{path}: unresolvable $ref {reference:?}"),
            ));
        };
        let kind = component
            .pointer("/x-kubernetes-group-version-kind/0/kind")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| reference.rsplit('.').next().unwrap_or("").to_string());
        let schema = parse::parse_openapi_schema(
            &serde_json::json!({"$ref": reference}),
            reference,
            &resolver,
        )
        .map_err(|e| schema_errors(at, reference, &e))?;
        let mut versions = BTreeMap::new();
        versions.insert(
            version.clone(),
            VersionDef {
                served: true,
                storage: true,
                deprecated: false,
                schema,
                subresources: Value::Null,
                printer_columns: Vec::new(),
                selectable_fields: Vec::new(),
            },
        );
        apis.insert(
            key.clone(),
            ApiDef {
                name: key,
                group,
                kind,
                plural: resource,
                singular: None,
                list_kind: None,
                short_names: Default::default(),
                categories: Default::default(),
                scope: if namespaced { "Namespaced" } else { "Cluster" }.to_string(),
                builtin: true,
                versions,
                conversion: None,
                api_approved: None,
            },
        );
    }
    Ok(apis)
}

/// `/apis/G/V/namespaces/{namespace}/R/{name}` or `/api/V/R/{name}` -> (G, V, namespaced, R).
fn resource_path(path: &str) -> Option<(String, String, bool, String)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", rest @ ..] => ("", rest),
        ["apis", g, rest @ ..] => (*g, rest),
        _ => return None,
    };
    let (version, namespaced, resource) = match rest {
        [v, "namespaces", "{namespace}", r, "{name}"] => (*v, true, *r),
        [v, r, "{name}"] => (*v, false, *r),
        _ => return None,
    };
    if resource.starts_with('{') {
        return None;
    }
    Some((
        group.to_string(),
        version.to_string(),
        namespaced,
        resource.to_string(),
    ))
}

/// Reads the `-f` sources (each a file, all files of a directory, or stdin) into labelled
/// sources, in the order given.
///
/// The files of all sources are read by one worker per core. Files with the very same bytes
/// (one release of an operator installed in several clusters, for example) are parsed once:
/// the work is split into groups of files of the same length, and a file that is
/// byte-for-byte equal to one already parsed in its group takes that file's APIs. What the
/// parser makes of a file does not depend on its name, only its errors do, so a file is only
/// ever matched with one that parsed without error. Errors are reported as if each source were
/// read file by file: the first source with a bad file, and its first bad file.
pub fn load_file_sources(paths: &[PathBuf], selection: &Selection) -> Result<Vec<SourceSchemas>> {
    // Per source, the range of `files` that holds its files, or why they could not be listed.
    let mut files: Vec<PathBuf> = Vec::new();
    let listed: Vec<Result<std::ops::Range<usize>>> = paths
        .iter()
        .map(|path| {
            let start = files.len();
            files.extend(crate::manifest::expand_paths(std::slice::from_ref(path))?);
            Ok(start..files.len())
        })
        .collect();

    // Groups of file indices. Only regular files are matched: stdin (read once per `-`, in
    // order), pipes and devices (which reading again would consume) and files whose length is
    // unknown (their error comes from reading them) each go on their own.
    let mut by_length: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut stdin = Vec::new();
    for (index, file) in files.iter().enumerate() {
        if file.as_os_str() == "-" {
            stdin.push(index);
        } else if let Ok(meta) = std::fs::metadata(file)
            && meta.is_file()
        {
            by_length.entry(meta.len()).or_default().push(index);
        } else {
            groups.push(vec![index]);
        }
    }
    if !stdin.is_empty() {
        groups.push(stdin);
    }
    // The largest files first, so that no worker is left with a large one at the end.
    groups.extend(by_length.into_values().rev());

    let next_group = AtomicUsize::new(0);
    let seen = SeenCrds::default();
    let big = std::sync::Mutex::new(());
    // At least one worker per source: a source may be one large file (a List of every CRD),
    // and three of them on two workers would leave a core idle for a third of the load.
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .max(paths.len())
        .min(groups.len())
        .max(1);
    let mut results: Vec<Option<Result<BTreeMap<String, StoredApi>>>> =
        files.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    // One buffer per worker: a fresh one per file made the allocator fault in
                    // (and zero) new pages for each, a tenth of the time of a large load.
                    let mut text = String::new();
                    while let Some(group) = groups.get(next_group.fetch_add(1, Ordering::Relaxed)) {
                        load_group(group, &files, selection, &seen, &big, &mut text, &mut done);
                    }
                    done
                })
            })
            .collect();
        for handle in handles {
            for (index, result) in handle.join().expect("a file-loading worker panicked") {
                results[index] = Some(result);
            }
        }
    });

    let mut sources = Vec::new();
    for (path, listed) in paths.iter().zip(listed) {
        let label = if path.as_os_str() == "-" {
            "stdin".to_string()
        } else {
            path.display().to_string()
        };
        let mut apis = BTreeMap::new();
        for index in listed? {
            let found = results[index].take().expect("every file was loaded")?;
            for (key, api) in found {
                if apis.insert(key.clone(), api).is_some() {
                    return Err(bad_input(
                        &label,
                        format!("{key} is defined more than once"),
                    ));
                }
            }
        }
        sources.push(SourceSchemas {
            label,
            origin: Origin::File {
                path: path.display().to_string(),
            },
            apis,
        });
    }
    Ok(sources)
}

/// Loads a group of files (indices into `files`) onto the end of `done`, parsing only those
/// that are not byte-for-byte equal to one of the group parsed without error before them.
fn load_group(
    group: &[usize],
    files: &[PathBuf],
    selection: &Selection,
    seen: &SeenCrds,
    big: &std::sync::Mutex<()>,
    text: &mut String,
    done: &mut Vec<(usize, Result<BTreeMap<String, StoredApi>>)>,
) {
    let first = done.len();
    for &index in group {
        let path = files[index].as_path();
        let same = done[first..]
            .iter()
            .find_map(|(seen, result)| match result {
                Ok(apis) if path.as_os_str() != "-" && same_bytes(&files[*seen], path) => {
                    Some(apis)
                }
                _ => None,
            });
        let result = match same {
            Some(apis) => Ok(apis.clone()),
            None => load_one_file(path, selection, seen, big, text),
        };
        done.push((index, result));
    }
}

/// Files read whole of at least this many bytes are read one at a time (see [`load_one_file`]).
const BIG_FILE_BYTES: u64 = 4 << 20;

/// Reads and parses one file (or stdin), into the APIs it defines.
///
/// A file read whole takes several times its size while it is parsed: its text, the tree that
/// borrows from it, and the model (a CRD of 300,000 properties, 15 MB of YAML: about 70 MB of
/// model). So files of [`BIG_FILE_BYTES`] or more, and stdin (whose size is not known), are
/// read one at a time (`big` is held meanwhile; smaller files, every real CRD, go on beside
/// them), and the text and the tree are
/// dropped before the model is packed: two such sources loaded at once had doubled the peak
/// memory of a run.
fn load_one_file(
    file: &Path,
    selection: &Selection,
    seen: &SeenCrds,
    big: &std::sync::Mutex<()>,
    text: &mut String,
) -> Result<BTreeMap<String, StoredApi>> {
    use std::io::Read;
    let name = if file.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        file.display().to_string()
    };
    if file.as_os_str() != "-"
        && let Some(found) = stream_json_list(file, &name, selection, seen)
    {
        return Ok(found);
    }
    let _one_at_a_time = (file.as_os_str() == "-"
        || std::fs::metadata(file).is_ok_and(|m| m.len() >= BIG_FILE_BYTES))
    .then(|| crate::sync::lock(big));
    text.clear();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(text)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_string(text))
    }
    .map_err(|e| Error::input_because(name.as_str(), "", e))?;
    let apis = if text.len() as u64 >= BIG_FILE_BYTES {
        // A description may be most of such a file: it is then kept as a part of this text
        // rather than copied. The text goes with the tree, before packing, unless it is.
        let file = Arc::new(std::mem::take(text));
        SharedText::within(&file, || apis_of_text(&file, &name, selection))
    } else {
        apis_of_text(text, &name, selection)
    }?;
    Ok(store(apis))
}

/// The selected APIs of a file's text, in order. As `parse_documents` reads, but block YAML
/// (the usual form of CRD files) stays in the tree that borrows its scalars.
fn apis_of_text(text: &str, name: &str, selection: &Selection) -> Result<Vec<ApiDef>> {
    if !yaml::looks_like_json(text)
        && let Some(docs) = super::block_yaml::parse_borrowed(text)
    {
        return apis_of_file(&docs, name, selection);
    }
    apis_of_file(&yaml::documents(text, name)?, name, selection)
}

/// The selected APIs of a whole file, which must hold a document, in order.
fn apis_of_file<D: JsonView>(docs: &[D], name: &str, selection: &Selection) -> Result<Vec<ApiDef>> {
    if docs.is_empty() {
        return Err(bad_input(name, "contains no documents"));
    }
    let mut apis = Vec::new();
    each_api(docs, name, selection, |api| apis.push(api))?;
    Ok(apis)
}

/// Whether two files hold the very same bytes (read in pieces, so neither is held whole).
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    fn fill(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < buffer.len() {
            match file.read(&mut buffer[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut in_a, mut in_b) = (vec![0; 1 << 16], vec![0; 1 << 16]);
    loop {
        match (fill(&mut a, &mut in_a), fill(&mut b, &mut in_b)) {
            (Ok(n), Ok(m)) if n == m && in_a[..n] == in_b[..m] => {
                if n < in_a.len() {
                    return true;
                }
            }
            _ => return false,
        }
    }
}

/// CRDs read from the items of JSON Lists, by their spec, shared by the workers. One CRD
/// installed in several clusters has the same spec in each cluster's List (only its metadata
/// and status differ), and its spec is then parsed once: the file-level match of
/// [`load_file_sources`] never finds Lists of different clusters equal.
///
/// Specs are told apart by their length and a 64-bit SipHash with a key drawn at random for
/// each run, and not kept: the distinct specs of 1,000 CRDs come to tens of megabytes. Two
/// different specs of the same length share a hash with a chance of about 2^-64, so among
/// 100,000 distinct specs a mix-up has a chance below one in a billion; without the key, inputs
/// cannot be made to collide on purpose. (A second hash of every spec cost 3% of a List load.)
#[derive(Default)]
struct SeenCrds {
    key: std::hash::RandomState,
    #[allow(clippy::type_complexity)]
    by_spec: std::sync::Mutex<HashMap<(u64, u64), Arc<OnceLock<Option<SeenCrd>>>>>,
}

/// What the first item with a spec made of it, and the metadata it was read with: the API is
/// only taken for an item with the same metadata name and API approval.
struct SeenCrd {
    name: Option<Value>,
    api_approved: Option<Value>,
    /// `None` when the CRD is not selected.
    api: Option<StoredApi>,
}

impl SeenCrds {
    /// The cell for a spec, which the first worker to ask fills while the others wait: they
    /// would only have parsed the same spec.
    fn cell(&self, spec: &[u8]) -> Arc<OnceLock<Option<SeenCrd>>> {
        use std::hash::BuildHasher;
        let key = (spec.len() as u64, self.key.hash_one(spec));
        let mut by_spec = crate::sync::lock(&self.by_spec);
        by_spec.entry(key).or_default().clone()
    }
}

/// A JSON file that is a List of CRDs (as `kubectl get crds -o json` prints it), read item by
/// item (see [`json_list`]): each item is parsed on its own and dropped once kept (see
/// [`StoredApi`]), so that a list of 1,000 CRDs is never in memory whole (as text and as a tree
/// it took gigabytes). An item whose spec was seen before (see [`SeenCrds`]) takes what was made
/// of it, if its metadata allows.
///
/// `None` for anything else (YAML, another kind of document, an OpenAPI document, a repeated
/// key) and for any problem, down to the first error in an item: the caller then reads the
/// file the ordinary way, which gives the same result and reports the same error as always.
/// Every value is parsed (none skipped), so invalid UTF-8 anywhere is also such a problem.
fn stream_json_list(
    file: &Path,
    name: &str,
    selection: &Selection,
    seen: &SeenCrds,
) -> Option<BTreeMap<String, StoredApi>> {
    let mut apis = BTreeMap::new();
    let mut index = 0;
    let outline = json_list::each_item(std::fs::File::open(file).ok()?, |item| {
        let item_at = format!("{name} items[{index}]");
        index += 1;
        // Every member but the spec is parsed: they are small, and parsing checks them.
        let mut members = serde_json::Map::new();
        let mut spec = None;
        item.each_member(|key, value| {
            if key == "spec" {
                spec = Some(value);
            } else {
                members.insert(key.to_string(), serde_json::from_str(value).ok()?);
            }
            Some(())
        })?;
        fn text(v: Option<&Value>) -> Option<&str> {
            v.and_then(Value::as_str)
        }
        if text(members.get("kind")) != Some("CustomResourceDefinition")
            || text(members.get("apiVersion")) != Some("apiextensions.k8s.io/v1")
        {
            return None;
        }
        let spec = spec?;
        let metadata = members.get("metadata");
        let name = metadata.and_then(|m| m.get("name")).cloned();
        let api_approved = metadata
            .and_then(|m| m.pointer("/annotations/api-approved.kubernetes.io"))
            .cloned();
        let read = |members: serde_json::Map<String, Value>| {
            let api = crd_from_spec_text(&members, spec, &item_at, selection)?.ok()?;
            Some(api.map(|api| StoredApi::crd(&api)))
        };
        let cell = seen.cell(spec.as_bytes());
        let mut members = Some(members);
        let first = cell.get_or_init(|| {
            Some(SeenCrd {
                name: name.clone(),
                api_approved: api_approved.clone(),
                api: read(members.take()?)?,
            })
        });
        let api = match (first, members) {
            (Some(first), Some(_)) if first.name == name && first.api_approved == api_approved => {
                first.api.clone()
            }
            (_, Some(members)) => read(members)?,
            // This item filled the cell.
            (first, None) => first.as_ref()?.api.clone(),
        };
        if let Some(api) = api {
            apis.insert(name?.as_str()?.to_string(), api);
        }
        Some(())
    })?;
    let is_list = matches!(
        outline.kind.as_ref().and_then(Value::as_str),
        Some("List" | "CustomResourceDefinitionList")
    );
    let openapi = outline.keys.contains("openapi") && outline.keys.contains("components");
    (is_list && !openapi).then_some(apis)
}

/// Reads a live cluster: one list call for all CRDs, and one OpenAPI v3 document per built-in
/// group-version asked for.
pub async fn load_cluster(
    cluster: &Cluster,
    selection: &Selection,
    page_size: usize,
) -> Result<SourceSchemas> {
    let label = cluster.context.clone();
    let mut apis = BTreeMap::new();
    if selection.wants_crds() {
        apis = list_crds(cluster, selection, page_size).await?;
    }
    if !selection.builtins.is_empty() {
        let index: Value = cluster
            .call(
                "read the OpenAPI v3 index",
                cluster.client.request(get_request("/openapi/v3")?),
            )
            .await?;
        let mut group_versions: Vec<String> = selection
            .builtins
            .iter()
            .map(BuiltinRef::openapi_path)
            .collect();
        group_versions.sort();
        group_versions.dedup();
        for gv in group_versions {
            let Some(url) = index
                .pointer(&format!(
                    "/paths/{}/serverRelativeURL",
                    gv.replace('~', "~0").replace('/', "~1")
                ))
                .and_then(Value::as_str)
            else {
                continue; // Not served there: shows up as missing in the presence matrix.
            };
            let doc: Value = cluster
                .call(
                    &format!("read /openapi/v3/{gv}"),
                    cluster.client.request(get_request(url)?),
                )
                .await?;
            apis.extend(
                apis_from_openapi(&doc, &format!("{label} /openapi/v3/{gv}"), selection)?
                    .into_iter()
                    .map(|(key, api)| (key, StoredApi::parsed(api))),
            );
        }
    }
    Ok(SourceSchemas {
        label,
        origin: Origin::Cluster {
            context: cluster.context.clone(),
            server: cluster.server.clone(),
            version: cluster.git_version().to_string(),
        },
        apis,
    })
}

/// How many CRDs one LIST page asks for by default: real CRDs run to hundreds of kilobytes each
/// (prometheus-operator's largest is over 1 MB), so a page of 50 keeps a page's text and tree
/// to some tens of MB on any cluster, while a few hundred CRDs still take only a few requests.
pub const CRD_PAGE_SIZE: usize = 50;

/// The cluster's CRDs, read a page at a time (`limit`/`continue`, as `kubectl get --chunk-size`
/// does; 0 reads all at once): each page is turned into the compact form and dropped before
/// the next is asked for, so memory stays bounded however many CRDs a cluster holds. A list
/// whose continue token expired (410 Gone, after etcd compaction) starts again, a few times.
async fn list_crds(
    cluster: &Cluster,
    selection: &Selection,
    page_size: usize,
) -> Result<BTreeMap<String, StoredApi>> {
    const RESTARTS: usize = 3;
    let label = &cluster.context;
    let mut restarts = 0;
    'list: loop {
        let mut apis = BTreeMap::new();
        let mut next: Option<String> = None;
        let mut index = 0usize;
        loop {
            let mut url = String::from("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
            if page_size > 0 {
                url.push_str(&format!("?limit={page_size}"));
                if let Some(token) = &next {
                    url.push_str("&continue=");
                    url.push_str(&query_escape(token));
                }
            }
            let request = cluster.client.request_text(get_request(&url)?);
            let text = match cluster
                .call("list CustomResourceDefinitions", async {
                    match request.await {
                        Err(e) if crate::cluster::is_status(&e, 410) => Ok(None),
                        other => other.map(Some),
                    }
                })
                .await?
            {
                Some(text) => text,
                None if restarts < RESTARTS => {
                    restarts += 1;
                    continue 'list;
                }
                None => {
                    return Err(Error::Failed {
                        message: format!(
                            "{label}: the CRD list kept expiring between pages ({RESTARTS} restarts); retry, or pass a larger --chunk-size"
                        ),
                    });
                }
            };
            // The page in the tree that borrows its strings from the text, as files are read.
            let page: Json<'_> = serde_json::from_str(&text).map_err(|e| Error::Failed {
                message: format!("{label}: list CustomResourceDefinitions: unreadable answer: {e}"),
            })?;
            for item in page
                .get("items")
                .and_then(Json::as_array)
                .unwrap_or_default()
            {
                // List items carry no apiVersion/kind of their own.
                let crd = CrdParts {
                    api_version: Some("apiextensions.k8s.io/v1"),
                    metadata: item.get("metadata"),
                    spec: item.get("spec"),
                };
                if let Some(api) =
                    crd_from_parts(crd, &format!("{label} items[{index}]"), selection)?
                {
                    apis.insert(api.name.clone(), StoredApi::crd(&api));
                }
                index += 1;
            }
            next = page
                .pointer("/metadata/continue")
                .and_then(Json::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if next.is_none() {
                return Ok(apis);
            }
        }
    }
}

/// `text` for a URL query value: everything but unreserved characters percent-encoded (continue
/// tokens are base64, with `+`, `/` and `=`).
pub(super) fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn get_request(url: &str) -> Result<http::Request<Vec<u8>>> {
    http::Request::get(url)
        .body(Vec::new())
        .map_err(|e| Error::Failed {
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDGET: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"#;

    #[test]
    fn continue_tokens_are_escaped_for_the_query() {
        assert_eq!(query_escape("eyJ2Ijoi+/=="), "eyJ2Ijoi%2B%2F%3D%3D");
        assert_eq!(query_escape("a-b_c.d~e"), "a-b_c.d~e");
    }

    #[test]
    fn a_crd_file_becomes_one_api() {
        let docs = parse_documents(WIDGET, "w.yaml").unwrap();
        let apis = apis_from_documents(docs, "w.yaml", &Selection::default()).unwrap();
        let api = &apis["widgets.example.com"];
        assert_eq!(
            (api.kind.as_str(), api.scope.as_str()),
            ("Widget", "Namespaced")
        );
        assert_eq!(api.storage_version(), Some("v1"));
        assert_eq!(
            api.versions["v1"].schema.properties["spec"].properties["size"].type_name(),
            "integer"
        );
    }

    #[test]
    fn selection_by_name_and_group_filters() {
        let docs = parse_documents(WIDGET, "w.yaml").unwrap();
        let by_other_group = Selection {
            groups: vec!["other.io".into()],
            ..Default::default()
        };
        assert!(
            apis_from_documents(docs.clone(), "w", &by_other_group)
                .unwrap()
                .is_empty()
        );
        let by_labels = |labelled: &str, selector: kube::core::Selector| {
            let docs = parse_documents(
                &WIDGET.replacen(
                    "metadata: {name: widgets.example.com}",
                    &format!("metadata: {{name: widgets.example.com, labels: {{{labelled}}}}}"),
                    1,
                ),
                "w.yaml",
            )
            .unwrap();
            let selection = Selection {
                labels: Some(selector),
                ..Default::default()
            };
            apis_from_documents(docs, "w", &selection).unwrap().len()
        };
        let tier = |value: &str| {
            kube::core::Selector::from(kube::core::Expression::Equal("tier".into(), value.into()))
        };
        assert_eq!(by_labels("tier: gold", tier("gold")), 1);
        assert_eq!(by_labels("tier: gold", tier("silver")), 0);
        assert_eq!(by_labels("other: x", tier("gold")), 0);
        let absent =
            kube::core::Selector::from(kube::core::Expression::DoesNotExist("tier".into()));
        assert_eq!(by_labels("other: x", absent), 1);
        let builtin_only = Selection {
            builtins: vec![BuiltinRef::parse("apps/v1/deployments").unwrap()],
            ..Default::default()
        };
        assert!(
            apis_from_documents(docs, "w", &builtin_only)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn bad_input_names_the_file_and_what_is_wrong() {
        let err = parse_documents("a: [1, 2", "broken.yaml").unwrap_err();
        assert!(
            err.to_string().starts_with("broken.yaml: invalid YAML"),
            "{err}"
        );
        let pod = parse_documents(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
            "pod.yaml",
        )
        .unwrap();
        let err = apis_from_documents(pod, "pod.yaml", &Selection::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("pod.yaml: is a Pod (v1), not a CustomResourceDefinition"),
            "{err}"
        );
        let untyped = WIDGET.replace("size: {type: integer}", "size: {minimum: 1}");
        let docs = parse_documents(&untyped, "u.yaml").unwrap();
        let err = apis_from_documents(docs, "u.yaml", &Selection::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("u.yaml (widgets.example.com): the CRD is not a valid structural schema")
                && err
                    .to_string()
                    .contains("properties[size].type: Required value"),
            "{err}"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn builtin_refs_parse_with_and_without_core() {
        assert_eq!(
            BuiltinRef::parse("apps/v1/statefulsets").unwrap().key(),
            "apps/v1/statefulsets"
        );
        assert_eq!(BuiltinRef::parse("v1/pods").unwrap().key(), "core/v1/pods");
        assert_eq!(
            BuiltinRef::parse("core/v1/pods").unwrap().openapi_path(),
            "api/v1"
        );
        assert!(BuiltinRef::parse("StatefulSet").is_err());
        assert!(BuiltinRef::parse("apps/v1/StatefulSets").is_err());
    }

    #[test]
    fn resource_paths_of_openapi_documents() {
        assert_eq!(
            resource_path("/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}"),
            Some(("apps".into(), "v1".into(), true, "statefulsets".into()))
        );
        assert_eq!(
            resource_path("/api/v1/nodes/{name}"),
            Some(("".into(), "v1".into(), false, "nodes".into()))
        );
        assert_eq!(
            resource_path("/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}/scale"),
            None
        );
        assert_eq!(resource_path("/apis/apps/v1/statefulsets"), None);
    }
}
