//! The layers of the crate, checked on its source: the domain modules see neither clap nor the
//! printers, and no two top-level modules use each other (directly or around a cycle).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DOMAINS: [&str; 3] = ["statefulset", "schema", "failure_policy"];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file of `src/` belongs to (`main` and `lib` for the roots).
fn module_of(file: &Path) -> String {
    let relative = file.strip_prefix(src()).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The code of a file without comments (whole-line `//` comments and doc comments), so that
/// prose about clap or printing does not count.
fn code(file: &Path) -> String {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `text` refers to through `crate::`.
fn crate_uses(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        // `kubectl_migrate::`-style paths do not occur inside the crate; `$crate::` in macros
        // is not ours either.
        if text[..at].ends_with('$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if modules.contains(&name) {
            used.insert(name);
        }
    }
    // `use crate::{a, b::c}` groups.
    for (at, _) in text.match_indices("crate::{") {
        let rest = &text[at + "crate::{".len()..];
        let group = &rest[..rest.find('}').unwrap_or(rest.len())];
        for part in group.split(',') {
            let name = part.trim().split("::").next().unwrap_or("").trim();
            if modules.contains(name) {
                used.insert(name.to_string());
            }
        }
    }
    used
}

#[test]
fn domain_modules_use_neither_clap_nor_the_printers() {
    let forbidden = [
        "clap",
        "crate::cli",
        "crate::commands",
        "crate::output",
        "colored",
        "comfy_table",
        "indicatif",
        "dialoguer",
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
        "std::io::stdout",
        "std::io::stderr()",
    ];
    let mut found = Vec::new();
    for domain in DOMAINS {
        for file in rust_files(&src().join(domain)) {
            let text = code(&file);
            for word in forbidden {
                for line in text.lines() {
                    if line.contains(word)
                        // The health check's stdout goes to our stderr: a stream handed on
                        // to a child, not printing.
                        && !(word == "std::io::stderr()" && line.contains("Stdio::from"))
                    {
                        found.push(format!("{}: {word}: {}", file.display(), line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "domain code that prints or knows clap:\n{}",
        found.join("\n")
    );
}

#[test]
fn top_level_modules_form_no_cycle() {
    let files = rust_files(&src());
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f))
        .filter(|m| m != "main" && m != "lib")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = module_of(file);
        if from == "main" || from == "lib" {
            continue;
        }
        let uses = crate_uses(&code(file), &modules);
        edges
            .entry(from.clone())
            .or_default()
            .extend(uses.into_iter().filter(|to| to != &from));
    }
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in &modules {
        if let Some(cycle) = visit(m, &edges, &mut Vec::new(), &mut done) {
            panic!(
                "modules use each other: {} (all uses: {edges:#?})",
                cycle.join(" -> ")
            );
        }
    }
    // The direction of the layers: the domains and the shared pieces never reach up.
    for low in DOMAINS
        .iter()
        .copied()
        .chain(["cluster", "manifest", "error"])
    {
        for high in ["commands", "cli", "output"] {
            assert!(
                !edges.get(low).is_some_and(|e| e.contains(high)),
                "{low} uses {high}"
            );
        }
    }
    assert!(
        !edges.get("output").is_some_and(|e| e.contains("commands")),
        "output uses commands"
    );
}

/// The check itself must be able to fail: a cycle and a forbidden use are found.
#[test]
fn the_checks_see_what_they_look_for() {
    let modules: BTreeSet<String> = ["cli", "output", "commands"].map(String::from).into();
    assert_eq!(
        crate_uses(
            "use crate::{cli::GlobalArgs, output};\nlet x = crate::commands::run;",
            &modules
        ),
        modules
    );
    assert!(crate_uses("$crate::output::x", &modules).is_empty());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.rs");
    std::fs::write(&file, "//! about clap\n    /// prints\nuse clap::Parser;\n").unwrap();
    assert_eq!(code(&file), "use clap::Parser;");
}
