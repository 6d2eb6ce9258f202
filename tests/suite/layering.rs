//! The layers of the crate, checked on its source: the domain modules see neither clap nor the
//! printers, no two top-level modules use each other (directly or around a cycle), and neither
//! do the modules inside a domain's folder (or any folder inside it).
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

type Edges = BTreeMap<String, BTreeSet<String>>;

/// Cycles among `modules` along `edges`, each as the modules around it (the first repeated at
/// the end), one per back edge a depth-first search meets.
fn cycles(modules: &BTreeSet<String>, edges: &Edges) -> Vec<Vec<String>> {
    fn visit(
        m: &str,
        edges: &Edges,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            found.push(cycle);
            return;
        }
        if done.contains(m) {
            return;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            visit(next, edges, path, done, found);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for m in modules {
        visit(m, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// The module path of a file of `src/` (`schema/diff.rs` and `schema/diff/mod.rs` are
/// `schema::diff`; the crate roots are the empty path).
fn module_path(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src()).unwrap().with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        path.pop();
    }
    path
}

/// `code` without its `#[cfg(test)]` test modules: what tests use is not a dependency of the
/// module. (rustfmt closes a top-level module with a `}` at the start of a line.)
fn without_test_modules(code: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = code.lines().peekable();
    while let Some(line) = lines.next() {
        let test_module = line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let next = next
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ");
                next.starts_with("mod ") && next.ends_with('{')
            });
        if test_module {
            for skipped in lines.by_ref() {
                if skipped == "}" {
                    break;
                }
            }
        } else {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// The paths `text` names through `crate::`, `super::` and `self::`, resolved against
/// `module` (the path of the module the text is in) to paths from the crate root; `use`
/// groups (`super::{a, b::{self, C}}`) give one path per member.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    fn is_ident(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }
    fn ident(text: &str) -> &str {
        &text[..text.find(|c: char| !is_ident(c)).unwrap_or(text.len())]
    }
    /// One path or group after `base::`.
    fn tree(text: &str, base: &[String], out: &mut Vec<Vec<String>>) {
        let text = text.trim_start();
        if let Some(group) = text.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        tree(&group[start..i], base, out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        tree(&group[start..i], base, out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let name = ident(text);
        if name.is_empty() {
            return;
        }
        if name == "self" {
            out.push(base.to_vec());
            return;
        }
        let mut path = base.to_vec();
        path.push(name.to_string());
        match text[name.len()..].trim_start().strip_prefix("::") {
            Some(rest) => tree(rest, &path, out),
            None => out.push(path),
        }
    }
    let mut out = Vec::new();
    for (at, _) in text.match_indices("::") {
        let before = &text[..at];
        let word = &before[before.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1)..];
        // Only the first `::` of a path starts it (`super::super::` is read from the first).
        let start = at - word.len();
        if text[..start].ends_with("::") || text[..start].ends_with('$') {
            continue;
        }
        let mut base: Vec<String> = match word {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        let mut rest = &text[at + 2..];
        while let Some(next) = rest.strip_prefix("super::") {
            base.pop();
            rest = next;
        }
        tree(rest, &base, &mut out);
    }
    out
}

/// The modules directly inside `folder` (a file `x.rs` or a folder `x/`), test modules aside.
fn child_modules(folder: &Path) -> BTreeSet<String> {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().to_string())
        .filter(|name| name != "mod" && name != "tests")
        .collect()
}

/// Which modules directly inside `folder` use which others of them, from the code outside
/// their tests.
fn uses_inside(folder: &Path) -> (BTreeSet<String>, Edges) {
    let modules = child_modules(folder);
    let prefix = module_path(&folder.join("mod.rs"));
    let mut edges = Edges::new();
    for file in rust_files(folder) {
        let path = module_path(&file);
        if path.len() <= prefix.len()
            || path.iter().any(|p| p == "tests")
            || !modules.contains(&path[prefix.len()])
        {
            continue;
        }
        let from = &path[prefix.len()];
        let used = edges.entry(from.clone()).or_default();
        for named in named_paths(&without_test_modules(&code(&file)), &path) {
            if named.len() > prefix.len()
                && named[..prefix.len()] == prefix[..]
                && modules.contains(&named[prefix.len()])
                && &named[prefix.len()] != from
            {
                used.insert(named[prefix.len()].clone());
            }
        }
    }
    (modules, edges)
}

/// Every folder under `dir`, itself included.
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(folders(&path));
        }
    }
    out
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
    if let Some(cycle) = cycles(&modules, &edges).first() {
        panic!(
            "modules use each other: {} (all uses: {edges:#?})",
            cycle.join(" -> ")
        );
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

#[test]
fn modules_inside_a_domain_form_no_cycle() {
    let mut found = Vec::new();
    for domain in DOMAINS {
        for folder in folders(&src().join(domain)) {
            let (modules, edges) = uses_inside(&folder);
            for cycle in cycles(&modules, &edges) {
                found.push(format!(
                    "{}: {}",
                    folder.strip_prefix(src()).unwrap().display(),
                    cycle.join(" -> ")
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules inside a domain use each other (move what they share to a module of its own):\n{}",
        found.join("\n")
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

    let module: Vec<String> = ["schema", "diff"].map(String::from).into();
    let named = named_paths(
        "use super::{lcd::{self, Manifest}, model};\nuse crate::cluster::Cluster;\n\
         let n = super::super::error::Error::x; let m = self::inner::f(); $crate::no::x;",
        &module,
    );
    let text: Vec<String> = named.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        text,
        [
            "schema::lcd",
            "schema::lcd::Manifest",
            "schema::model",
            "cluster::Cluster",
            "error::Error::x",
            "schema::diff::inner::f",
        ]
    );
    assert_eq!(
        without_test_modules("use a;\n#[cfg(test)]\nmod tests {\n    use b;\n}\nuse c;"),
        "use a;\nuse c;"
    );
    let modules: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let edge =
        |from: &str, to: &[&str]| (from.to_string(), to.iter().map(|t| t.to_string()).collect());
    let acyclic: Edges = [edge("a", &["b", "c"]), edge("b", &["c"])].into();
    assert!(cycles(&modules, &acyclic).is_empty());
    let cyclic: Edges = [edge("a", &["b"]), edge("b", &["c"]), edge("c", &["a"])].into();
    assert_eq!(cycles(&modules, &cyclic), [["a", "b", "c", "a"]]);
}
