//! completions/ and man/ are generated from the clap definitions. This test fails when the
//! committed copies are stale; `UPDATE_GENERATED=1 cargo test --test generated_files` rewrites them.
use std::path::Path;

#[test]
fn completions_and_man_pages_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (relative, contents) in kubectl_migrate::completion::generated_files() {
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
    let expected: Vec<String> = kubectl_migrate::completion::generated_files()
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
        "stale generated files: {stale:?}\nregenerate with: UPDATE_GENERATED=1 cargo test --test generated_files"
    );
}
