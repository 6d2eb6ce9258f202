//! The completion scripts in completions/, each in its real shell on a pseudo-terminal: the
//! shell loads the script, a person types part of a command and presses Tab, and the screen
//! shows the candidates. Flags of a subcommand complete inside it, flag values come from their
//! possible values (never from file names), and subcommands complete at the top.
use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::pty::{Spawn, Term};

const WAIT: Duration = Duration::from_secs(20);

fn completions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("completions")
}

/// A directory whose file names would show if the shell fell back to completing files.
fn decoy_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["zz-decoy-one.txt", "zz-decoy-two.txt"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    dir
}

/// A shell on a terminal in `cwd`, its prompt `PS> `, the script loaded by `setup`.
fn shell(program: &str, args: &[&str], cwd: &Path, setup: &str) -> Term {
    let path = std::env::var("PATH").unwrap_or_default();
    let mut term = Term::spawn(Spawn {
        program: Path::new(program),
        args,
        env: &[("PATH", &path), ("HOME", cwd.to_str().unwrap())],
        cwd: Some(cwd),
        cols: 160,
        rows: 40,
    });
    term.send(setup);
    term.wait_for("the shell with the script loaded", WAIT, |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.len() >= 2
            && lines[lines.len() - 2] == "loaded"
            && lines[lines.len() - 1].starts_with("PS>")
    });
    term
}

/// Types `line` and presses Tab until the shell lists candidates; what the screen then shows.
fn tab(term: &mut Term, line: &str, expect: &[&str]) -> String {
    tabs(term, line, 2, expect)
}

/// The same with `presses` Tabs: bash first completes what the candidates share, and lists
/// them only at the second Tab on an unchanged word.
fn tabs(term: &mut Term, line: &str, presses: usize, expect: &[&str]) -> String {
    // Ctrl-U clears what an earlier attempt left on the line.
    term.send("\u{15}");
    term.send(line);
    for _ in 0..presses {
        std::thread::sleep(Duration::from_millis(300));
        term.send("\t");
    }
    term.wait_for(
        &format!("candidates {expect:?} after {line:?}"),
        WAIT,
        |s| expect.iter().all(|e| s.contains(e)),
    )
}

fn assert_no_files(screen: &str) {
    assert!(
        !screen.contains("zz-decoy"),
        "file names were offered:\n{screen}"
    );
}

#[test]
fn bash_completes_inside_subcommands_and_flag_values() {
    let dir = decoy_dir();
    let script = completions_dir().join("kubectl-migrate.bash");
    let mut term = shell(
        "bash",
        &["--norc", "--noprofile", "-i"],
        dir.path(),
        &format!("PS1='PS> '; source '{}'; echo loaded\n", script.display()),
    );
    let to = tabs(
        &mut term,
        "kubectl-migrate statefulset web --to",
        3,
        &["--to-context", "--to-namespace", "--to-kubeconfig"],
    );
    assert_no_files(&to);
    let colour = tab(
        &mut term,
        "kubectl-migrate statefulset web --color ",
        &["auto", "always", "never"],
    );
    assert_no_files(&colour);
    let sub = tab(
        &mut term,
        "kubectl-migrate failure-policy ",
        &["simulate", "explain", "check"],
    );
    assert_no_files(&sub);
    let out = tab(&mut term, "kubectl-migrate schema-diff -o ", &["markdown"]);
    assert_no_files(&out);
}

#[test]
fn zsh_completes_inside_subcommands_and_flag_values() {
    let dir = decoy_dir();
    let mut term = shell(
        "zsh",
        &["-f", "-i"],
        dir.path(),
        &format!(
            "PS1='PS> '; fpath=('{}' $fpath); autoload -U compinit; compinit -u; echo loaded\n",
            completions_dir().display()
        ),
    );
    let to = tab(
        &mut term,
        "kubectl-migrate statefulset web --to",
        &["--to-context", "--to-namespace", "--to-kubeconfig"],
    );
    assert_no_files(&to);
    let colour = tab(
        &mut term,
        "kubectl-migrate statefulset web --color ",
        &["auto", "always", "never"],
    );
    assert_no_files(&colour);
    let sub = tab(
        &mut term,
        "kubectl-migrate failure-policy ",
        &["simulate", "explain", "check"],
    );
    assert_no_files(&sub);
}

#[test]
fn fish_completes_inside_subcommands_and_flag_values() {
    let dir = decoy_dir();
    let script = completions_dir().join("kubectl-migrate.fish");
    let mut term = shell(
        "fish",
        &["--no-config", "-i"],
        dir.path(),
        &format!(
            "function fish_prompt; echo -n 'PS> '; end; source '{}'; echo loaded\n",
            script.display()
        ),
    );
    let to = tab(
        &mut term,
        "kubectl-migrate statefulset web --to",
        &["--to-context", "--to-namespace", "--to-kubeconfig"],
    );
    assert_no_files(&to);
    let colour = tab(
        &mut term,
        "kubectl-migrate statefulset web --color ",
        &["auto", "always", "never"],
    );
    assert_no_files(&colour);
    let sub = tab(
        &mut term,
        "kubectl-migrate failure-policy ",
        &["simulate", "explain", "check"],
    );
    assert_no_files(&sub);
}
