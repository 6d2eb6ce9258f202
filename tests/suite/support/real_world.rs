//! The real-world CRDs the tests use: two releases each of gateway-api, prometheus-operator,
//! JobSet and kueue, checked against `tests/data/schema/real-world/EXPECTED.md` (sources and licences:
//! `SOURCES.md` there).
//!
//! The CRD files are not in this repository. They come from the Go module proxy at test time
//! (`go mod download -json MODULE@VERSION`, which prints the module's `Dir`), and each file's
//! git blob id must be the one EXPECTED.md names, so a changed input cannot pass unnoticed.
//! Without `go`, or when the download fails, the tests fail: they never skip.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use serde_json::Value;

const EXPECTED_MD: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/schema/real-world/EXPECTED.md"
));

/// One project: a Go module at two releases, and where its CRDs are inside it.
pub struct Project {
    pub module: &'static str,
    pub old: &'static str,
    pub new: &'static str,
    /// `{}` is replaced by the CRD's plural.
    pub file: &'static str,
    pub group: &'static str,
}

pub const GATEWAY_API: Project = Project {
    module: "sigs.k8s.io/gateway-api",
    old: "v1.0.0",
    new: "v1.2.0",
    file: "config/crd/standard/gateway.networking.k8s.io_{}.yaml",
    group: "gateway.networking.k8s.io",
};

pub const PROMETHEUS_OPERATOR: Project = Project {
    module: "github.com/prometheus-operator/prometheus-operator",
    old: "v0.68.0",
    new: "v0.93.0",
    file: "example/prometheus-operator-crd/monitoring.coreos.com_{}.yaml",
    group: "monitoring.coreos.com",
};

pub const JOBSET: Project = Project {
    module: "sigs.k8s.io/jobset",
    old: "v0.5.0",
    new: "v0.8.0",
    file: "config/components/crd/bases/jobset.x-k8s.io_{}.yaml",
    group: "jobset.x-k8s.io",
};

/// Its ResourceFlavor gains a transition rule (`oldSelf`): an update-only break.
pub const KUEUE: Project = Project {
    module: "sigs.k8s.io/kueue",
    old: "v0.9.0",
    new: "v0.10.0",
    file: "config/components/crd/bases/kueue.x-k8s.io_{}.yaml",
    group: "kueue.x-k8s.io",
};

/// Downloads (or finds in the module cache) one module release and returns its folder.
pub fn module_dir(module: &str, version: &str) -> PathBuf {
    let at = format!("{module}@{version}");
    // Outside any Go module, so no go.mod around the test run can interfere.
    let output = Process::new("go")
        .args(["mod", "download", "-json", &at])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `go mod download -json {at}`: {e}. These tests need the Go toolchain \
                 (https://go.dev/dl/) to fetch the real-world CRDs from the Go module proxy; they \
                 are not stored in this repository"
            )
        });
    let info: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "`go mod download -json {at}` printed no JSON ({e}; exit {:?}): {}{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    if let Some(error) = info.get("Error") {
        panic!("`go mod download -json {at}` failed: {error}");
    }
    assert!(
        output.status.success(),
        "`go mod download -json {at}` exited {:?}: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = PathBuf::from(
        info["Dir"]
            .as_str()
            .unwrap_or_else(|| panic!("`go mod download -json {at}` printed no Dir: {info}")),
    );
    assert!(dir.is_dir(), "{at}: Dir {} is not a folder", dir.display());
    dir
}

/// `git hash-object FILE`: the blob id EXPECTED.md pins each file to.
pub fn git_blob_id(file: &Path) -> String {
    let output = Process::new("git")
        .arg("hash-object")
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `git hash-object` (is git installed?): {e}"));
    assert!(
        output.status.success(),
        "`git hash-object {}` failed: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// EXPECTED.md's blob table: plural -> [(blob, bytes) of the old release, of the new one].
pub fn expected_blobs() -> BTreeMap<String, [(String, u64); 2]> {
    let mut table = BTreeMap::new();
    for line in EXPECTED_MD.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", file, "`blob` (bytes)", "`blob` (bytes)", ""
        if cells.len() != 5 {
            continue;
        }
        let parse = |cell: &str| -> Option<(String, u64)> {
            let (blob, bytes) = cell.split_once(' ')?;
            let blob = blob.strip_prefix('`')?.strip_suffix('`')?;
            let bytes = bytes.strip_prefix('(')?.strip_suffix(')')?.parse().ok()?;
            (blob.len() == 40 && blob.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| (blob.to_string(), bytes))
        };
        if let (Some(old), Some(new)) = (parse(cells[2]), parse(cells[3])) {
            table.insert(cells[1].to_string(), [old, new]);
        }
    }
    assert_eq!(
        table.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "gateways",
            "httproutes",
            "jobsets",
            "podmonitors",
            "prometheusrules",
            "referencegrants",
            "resourceflavors",
            "servicemonitors"
        ],
        "EXPECTED.md's blob table"
    );
    table
}

/// One CRD at two releases, verified against EXPECTED.md's blob ids.
pub struct Pair {
    pub plural: &'static str,
    pub crd_name: String,
    pub old: PathBuf,
    pub new: PathBuf,
}

pub fn fetch(project: &Project, plurals: &[&'static str]) -> Vec<Pair> {
    let blobs = expected_blobs();
    let old_dir = module_dir(project.module, project.old);
    let new_dir = module_dir(project.module, project.new);
    plurals
        .iter()
        .map(|plural| {
            let file = project.file.replace("{}", plural);
            let (old, new) = (old_dir.join(&file), new_dir.join(&file));
            for (path, (blob, bytes)) in [(&old, &blobs[*plural][0]), (&new, &blobs[*plural][1])] {
                let len = std::fs::metadata(path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                    .len();
                assert_eq!(
                    (git_blob_id(path), len),
                    (blob.clone(), *bytes),
                    "{} is not the file EXPECTED.md was checked against",
                    path.display()
                );
            }
            Pair {
                plural,
                crd_name: format!("{plural}.{}", project.group),
                old,
                new,
            }
        })
        .collect()
}

/// Every CRD the tests use, at both releases.
pub fn all_pairs() -> Vec<Pair> {
    let mut pairs = fetch(&GATEWAY_API, &["httproutes", "gateways", "referencegrants"]);
    pairs.extend(fetch(
        &PROMETHEUS_OPERATOR,
        &["servicemonitors", "podmonitors", "prometheusrules"],
    ));
    pairs.extend(fetch(&JOBSET, &["jobsets"]));
    pairs.extend(fetch(&KUEUE, &["resourceflavors"]));
    pairs
}
