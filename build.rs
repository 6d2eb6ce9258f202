//! Records the commit the binary is built from, for `kubectl migrate version`.
//!
//! Cargo reruns this script, and so rebuilds the crate, only when the commit changes or when the
//! sources the binary is built from change (which rebuild the crate anyway). It used to watch
//! `.git/index` as well, which `git status` (run here) rewrites: every build then made the next
//! one rebuild the whole crate.
use std::process::Command;

/// What the binary is built from: a change to anything else (tests, docs) leaves it alone.
const SOURCES: &[&str] = &["src", "build.rs", "Cargo.toml", "Cargo.lock"];

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
    // Uncommitted changes to the sources make the binary differ from the commit.
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    let commit = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=KM_GIT_COMMIT={commit}");
    // Every change to the sources is seen, so that `-dirty` comes and goes with them.
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    // A new commit or a change of branch changes HEAD or the ref it names. `--git-path` finds
    // them in a worktree too, where the ref lives in the main repository. A path that does not
    // exist would make cargo rerun this every time, so a branch whose ref is packed (no file of
    // its own yet) is watched through packed-refs and the directory its file will appear in.
    let watch = |path: &str| {
        let Some(file) = git(&["rev-parse", "--git-path", path]) else {
            return false;
        };
        let exists = std::path::Path::new(&file).exists();
        if exists {
            println!("cargo:rerun-if-changed={file}");
        }
        exists
    };
    watch("HEAD");
    watch("packed-refs");
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && !watch(&branch)
        && let Some((directory, _)) = branch.rsplit_once('/')
    {
        watch(directory);
    }
}
