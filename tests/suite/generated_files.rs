//! completions/ and man/ are generated from the clap definitions. This test fails when the
//! committed copies are stale; `UPDATE_GENERATED=1 cargo test --test suite generated_files::`
//! rewrites them.
use std::path::Path;

#[test]
fn completions_and_man_pages_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (relative, contents) in kubectl_migrate::commands::completion::generated_files() {
        let path = root.join(&relative);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &contents).unwrap();
            if relative.ends_with("kubectl_complete-migrate") {
                std::fs::set_permissions(
                    &path,
                    std::os::unix::fs::PermissionsExt::from_mode(0o755),
                )
                .unwrap();
            }
        } else if std::fs::read(&path).ok().as_deref() != Some(contents.as_slice()) {
            stale.push(relative);
        }
    }
    // A generated file that the generator no longer produces is stale too.
    let expected: Vec<String> = kubectl_migrate::commands::completion::generated_files()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    for dir in ["completions", "man"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let relative = format!("{dir}/{}", entry.unwrap().file_name().to_string_lossy());
            if !expected.contains(&relative) {
                stale.push(format!("{relative} (no longer generated)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {stale:?}\nregenerate with: UPDATE_GENERATED=1 cargo test --test suite generated_files::"
    );
}

/// Every man page has the sections a reader looks for: a SYNOPSIS that names each flag's value,
/// EXIT STATUS, EXAMPLES (whole commands) and SEE ALSO; and every page it names exists.
#[test]
fn man_pages_have_synopsis_exit_status_examples_and_see_also() {
    let pages: Vec<(String, String)> = kubectl_migrate::commands::completion::generated_files()
        .into_iter()
        .filter(|(path, _)| path.starts_with("man/"))
        .map(|(path, roff)| (path, String::from_utf8(roff).unwrap()))
        .collect();
    let names: Vec<String> = pages
        .iter()
        .map(|(path, _)| path["man/".len()..path.len() - ".1".len()].to_string())
        .collect();
    assert!(
        names.contains(&"kubectl-migrate-failure-policy-simulate".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.ends_with("-help")), "{names:?}");
    for (path, page) in &pages {
        let section = |heading: &str| -> String {
            let start = page
                .find(&format!(".SH {heading}\n"))
                .unwrap_or_else(|| panic!("{path}: no {heading} section"));
            let body = &page[start..];
            let end = body[4..].find("\n.SH ").map_or(body.len(), |i| i + 5);
            body[..end].to_string()
        };
        let synopsis = section("SYNOPSIS");
        assert!(
            synopsis.contains(r"[\fB\-\-context\fR\ \fI<NAME>\fR]"),
            "{path}: the synopsis names no value of --context:\n{synopsis}"
        );
        let exit_status = section("\"EXIT STATUS\"");
        assert!(
            exit_status.contains(".TP\n\\fB0\\fR\n"),
            "{path}: no exit code 0 in\n{exit_status}"
        );
        let examples = section("EXAMPLES");
        let commands: Vec<&str> = examples.lines().filter(|l| !l.starts_with('.')).collect();
        assert!(!commands.is_empty(), "{path}: no examples");
        for c in commands {
            assert!(c.starts_with(r"kubectl migrate "), "{path}: example {c:?}");
        }
        let see_also = section("\"SEE ALSO\"");
        assert!(see_also.contains(r"\fBkubectl\fR(1)"), "{path}: {see_also}");
        let this = &path["man/".len()..path.len() - ".1".len()];
        for other in names.iter().filter(|n| *n != this) {
            let escaped = other.replace('-', r"\-");
            assert!(
                see_also.contains(&format!(r"\fB{escaped}\fR(1)")),
                "{path}: SEE ALSO misses {other}"
            );
        }
        // Every page a page refers to (SUBCOMMANDS, SEE ALSO) is generated.
        for (i, _) in page.match_indices("kubectl\\-migrate") {
            let rest = &page[i..];
            if let Some(end) = rest.find("(1)") {
                let referred = rest[..end].replace(r"\-", "-").replace(r"\fR", "");
                if !referred.contains(char::is_whitespace) {
                    assert!(names.contains(&referred), "{path} refers to {referred}(1)");
                }
            }
        }
    }
}

/// deploy/crds/ is generated from the controller's Rust types (`kubectl migrate controller
/// crds`); `UPDATE_GENERATED=1 cargo test --test suite generated_files::` rewrites it.
#[test]
fn crds_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = kubectl_migrate::controller::api::crd_files();
    let mut stale = Vec::new();
    for (relative, contents) in &files {
        let path = root.join(relative);
        if std::env::var_os("UPDATE_GENERATED").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, contents).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
            stale.push(relative.clone());
        }
    }
    for entry in std::fs::read_dir(root.join("deploy/crds")).unwrap() {
        let relative = format!(
            "deploy/crds/{}",
            entry.unwrap().file_name().to_string_lossy()
        );
        if !files.iter().any(|(p, _)| *p == relative) {
            stale.push(format!("{relative} (no longer generated)"));
        }
    }
    assert!(
        stale.is_empty(),
        "stale CRDs: {stale:?}\nregenerate with: UPDATE_GENERATED=1 cargo test --test suite generated_files::"
    );
}

/// The project's own `schema-diff` guards its API: the CRDs in deploy/crds/ accept every object
/// the last release's CRDs (api/released/) accept, and serve every API they served.
#[test]
fn the_crds_accept_every_object_the_last_release_accepted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let released = std::fs::read_dir(root.join("api/released"))
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".yaml")
        })
        .count();
    assert!(released > 0, "api/released/ holds no CRD");
    let diff = |output: &[&str]| {
        assert_cmd::Command::cargo_bin("kubectl-migrate")
            .unwrap()
            .args(["schema-diff", "-f", "api/released", "-f", "deploy/crds"])
            .args(["--fail-on", "breaking"])
            .args(output)
            .env("NO_COLOR", "1")
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .current_dir(root)
            .output()
            .unwrap()
    };
    let out = diff(&["-o", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "schema-diff printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary = &report["summary"];
    assert!(
        summary["apis"].as_u64().unwrap() >= released as u64,
        "not every released CRD was compared: {summary}"
    );
    if !out.status.success() || summary["failing"] != 0 {
        let table = diff(&[]);
        panic!(
            "deploy/crds/ rejects what the last release (api/released/) accepted:\n{}\n\
             Keep the released version compatible, or serve the change as a new API version.",
            String::from_utf8_lossy(&table.stdout)
        );
    }
}
