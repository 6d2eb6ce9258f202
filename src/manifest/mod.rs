//! The files users name on the command line (`-f`, `--scenario`, `--object`): a path, or `-` for
//! stdin, read as kubectl reads them ([`yaml`]). Every error names the input it concerns, and
//! bad input exits 2.
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};

pub mod yaml;

/// A file's text and the name it goes by in messages.
#[derive(Debug, Clone)]
pub struct Text {
    /// The path as given, or `stdin`.
    pub label: String,
    pub text: String,
}

/// Whether `path` means stdin.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The name of `path` in messages and reports.
pub fn label(path: &Path) -> String {
    if is_stdin(path) {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// Reads the whole of `path` (or stdin) as UTF-8 text.
pub fn read_text(path: &Path) -> Result<Text> {
    let label = label(path);
    let read = if is_stdin(path) {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    match read {
        Ok(text) => Ok(Text { label, text }),
        Err(e) => Err(Error::input_because(label, "", e)),
    }
}

/// Expands `-f`/`--object` arguments: files as given, directories to their *.yaml/*.yml/*.json files
/// (sorted, not recursive, like `kubectl apply -f DIR`), `-` to stdin.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(p.clone());
            continue;
        }
        let meta = std::fs::metadata(p)
            .map_err(|e| Error::input_because(p.display().to_string(), "", e))?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::input_because(p.display().to_string(), "", e))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && f.extension()
                            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
                })
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(Error::input(
                    p.display().to_string(),
                    "directory has no .yaml, .yml or .json files",
                ));
            }
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// How messages name the document at `index` of a file.
pub fn document_at(label: &str, index: usize, count: usize) -> String {
    if count > 1 {
        format!("{label} (document {})", index + 1)
    } else {
        label.to_string()
    }
}

/// One object of a file, and how messages name it.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub at: String,
    pub value: Value,
}

/// The objects of a file's text: each document, and for a List (`kind: List`, or any kind
/// ending in `List` with `items`) each of its items, as kubectl applies them.
pub fn objects(text: &str, label: &str) -> Result<Vec<Object>> {
    let docs = yaml::documents(text, label)?;
    let count = docs.len();
    let mut objects = Vec::new();
    for (index, doc) in docs.into_iter().enumerate() {
        let at = document_at(label, index, count);
        let is_list = doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && doc.get("items").is_some_and(Value::is_array);
        match doc {
            Value::Object(mut members) if is_list => {
                let Some(Value::Array(items)) = members.remove("items") else {
                    unreachable!("checked above");
                };
                for (i, value) in items.into_iter().enumerate() {
                    objects.push(Object {
                        at: format!("{at} items[{i}]"),
                        value,
                    });
                }
            }
            value => objects.push(Object { at, value }),
        }
    }
    Ok(objects)
}

/// The one object a file must hold (a Job manifest, say), named `what` in the error otherwise.
pub fn one_object(text: &str, label: &str, what: &str) -> Result<Object> {
    let mut objects = objects(text, label)?;
    match objects.len() {
        1 => Ok(objects.remove(0)),
        0 => Err(Error::input(label, format!("holds no {what}"))),
        n => Err(Error::input(
            label,
            format!("holds {n} objects; give one {what}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_read_item_by_item_and_documents_are_named() {
        let read = objects(
            "kind: List\napiVersion: v1\nitems: [{kind: A}, {kind: B}]\n---\nkind: C\n",
            "f.yaml",
        )
        .unwrap();
        let at: Vec<&str> = read.iter().map(|o| o.at.as_str()).collect();
        assert_eq!(
            at,
            [
                "f.yaml (document 1) items[0]",
                "f.yaml (document 1) items[1]",
                "f.yaml (document 2)"
            ]
        );
        assert_eq!(read[2].value, serde_json::json!({"kind": "C"}));
    }

    #[test]
    fn one_object_is_one() {
        assert_eq!(
            one_object("kind: Job\n", "f.yaml", "Job").unwrap().at,
            "f.yaml"
        );
        let none = one_object("---\n", "f.yaml", "Job").unwrap_err();
        assert_eq!(none.to_string(), "f.yaml: holds no Job");
        let two = one_object("a: 1\n---\nb: 2\n", "f.yaml", "Job").unwrap_err();
        assert_eq!(two.to_string(), "f.yaml: holds 2 objects; give one Job");
        assert_eq!(two.exit_code(), 2);
    }

    #[test]
    fn directories_expand_to_their_manifests_sorted() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.yaml", "a.json", "c.yml", "notes.txt"] {
            std::fs::write(dir.path().join(name), "kind: X\n").unwrap();
        }
        let files = expand_paths(&[dir.path().to_path_buf(), "-".into()]).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.json", "b.yaml", "c.yml", "-"]);
        let empty = tempfile::tempdir().unwrap();
        let err = expand_paths(&[empty.path().to_path_buf()]).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("directory has no .yaml, .yml or .json files")
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = read_text(Path::new("/nonexistent/job.yaml")).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string().starts_with("/nonexistent/job.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.yaml");
        std::fs::write(&path, b"name: caf\xe9\n").unwrap();
        let err = read_text(&path).unwrap_err();
        assert!(err.to_string().contains("latin1.yaml: "), "{err}");
        assert!(err.to_string().contains("UTF-8"), "{err}");
    }
}
