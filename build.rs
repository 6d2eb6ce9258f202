//! Records the commit the binary is built from, for `kubectl migrate version`.
use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Uncommitted changes to tracked files make the build differ from the commit.
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let commit = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=KM_GIT_COMMIT={commit}");
    // A new commit or a change of branch changes HEAD or the ref it names. `--git-path` finds
    // them in a worktree too, where the ref lives in the main repository (a path that does not
    // exist would make cargo rebuild every time).
    let watch = |path: &str| {
        if let Some(file) = git(&["rev-parse", "--git-path", path])
            && std::path::Path::new(&file).exists()
        {
            println!("cargo:rerun-if-changed={file}");
        }
    };
    watch("HEAD");
    watch("index");
    watch("packed-refs");
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&head);
    }
    println!("cargo:rerun-if-changed=build.rs");
}
