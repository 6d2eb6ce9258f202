//! The completion scripts in completions/, each in its real shell on a pseudo-terminal: the
//! shell loads the script, a person types part of a command and presses Tab, and the screen
//! shows the candidates. The scripts ask the binary (found on PATH, as installed), which answers
//! as it answers kubectl's plugin completion: flags of a subcommand complete inside it, and only
//! after a `-`; flag values come from their possible values (never from file names),
//! subcommands complete at the top, and what only a cluster knows (contexts, namespaces,
//! StatefulSets) comes from the clusters.
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

/// A shell on a terminal in `cwd`, its prompt `PS> `, the script loaded by `setup`, the
/// freshly built binary first on PATH (the scripts call it back), `env` added.
fn shell_with(program: &str, args: &[&str], cwd: &Path, setup: &str, env: &[(&str, &str)]) -> Term {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-migrate"))
        .parent()
        .unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut all = vec![
        ("PATH", path.to_str().unwrap()),
        ("HOME", cwd.to_str().unwrap()),
    ];
    // Without a kubeconfig of their own, candidates from a cluster ask nobody.
    all.push(("KUBECONFIG", "/nonexistent/kubeconfig"));
    all.extend_from_slice(env);
    let mut term = Term::spawn(Spawn {
        program: Path::new(program),
        args,
        env: &all,
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

/// Clears the screen, types `line` and presses Tab `presses` times; the screen once it shows
/// every one of `expect` (bash completes what the candidates share at the first Tab and lists
/// them at the second on an unchanged word).
fn tabs(term: &mut Term, line: &str, presses: usize, expect: &[&str]) -> String {
    // Ctrl-U clears what an earlier attempt left on the line, Ctrl-L the screen, so that what
    // an earlier attempt listed cannot pass for this one's candidates.
    term.send("\u{15}\u{0c}");
    term.wait_for("a cleared screen", WAIT, |s| {
        s.lines().count() == 1 && s.trim_end() == "PS>"
    });
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

/// Each shell with its script loaded as install.sh installs it: bash and fish source theirs,
/// zsh autoloads `_kubectl-migrate` from $fpath.
#[derive(Clone, Copy, Debug)]
enum Sh {
    Bash,
    Zsh,
    Fish,
}

impl Sh {
    fn start(self, cwd: &Path, env: &[(&str, &str)]) -> Term {
        let dir = completions_dir();
        match self {
            Sh::Bash => shell_with(
                "bash",
                &["--norc", "--noprofile", "-i"],
                cwd,
                &format!(
                    "PS1='PS> '; source '{}'; echo loaded\n",
                    dir.join("kubectl-migrate.bash").display()
                ),
                env,
            ),
            Sh::Zsh => shell_with(
                "zsh",
                &["-f", "-i"],
                cwd,
                &format!(
                    "PS1='PS> '; fpath=('{}' $fpath); autoload -U compinit; compinit -u; echo loaded\n",
                    dir.display()
                ),
                env,
            ),
            Sh::Fish => shell_with(
                "fish",
                &["--no-config", "-i"],
                cwd,
                &format!(
                    "function fish_prompt; echo -n 'PS> '; end; source '{}'; echo loaded\n",
                    dir.join("kubectl-migrate.fish").display()
                ),
                env,
            ),
        }
    }

    /// Tabs until the candidates show: bash completes what they share at the first Tab and
    /// lists them at the next ones.
    fn presses(self) -> usize {
        match self {
            Sh::Bash => 3,
            Sh::Zsh | Sh::Fish => 2,
        }
    }
}

fn completes_inside_subcommands_and_flag_values(sh: Sh) {
    let dir = decoy_dir();
    let mut term = sh.start(dir.path(), &[]);
    let n = sh.presses();
    let to = tabs(
        &mut term,
        "kubectl-migrate statefulset web --to",
        n,
        &["--to-context", "--to-namespace", "--to-kubeconfig"],
    );
    assert_no_files(&to);
    let colour = tabs(
        &mut term,
        "kubectl-migrate statefulset web --color ",
        n,
        &["auto", "always", "never"],
    );
    assert_no_files(&colour);
    let sub = tabs(
        &mut term,
        "kubectl-migrate failure-policy ",
        n,
        &["simulate", "explain", "check"],
    );
    assert_no_files(&sub);
    let out = tabs(
        &mut term,
        "kubectl-migrate schema-diff -o ",
        n,
        &["markdown"],
    );
    assert_no_files(&out);
    // Flags only after a `-`, as kubectl offers them: at a word without one, the subcommands
    // (and a required flag) but none of the optional flags.
    let top = tabs(
        &mut term,
        "kubectl-migrate ",
        n,
        &["statefulset", "schema-diff", "failure-policy"],
    );
    assert!(!top.contains("--context"), "flags before a '-':\n{top}");
    let flags = tabs(
        &mut term,
        "kubectl-migrate statefulset web --dry",
        n,
        &["--dry-run"],
    );
    assert_no_files(&flags);
}

#[test]
fn bash_completes_inside_subcommands_and_flag_values() {
    completes_inside_subcommands_and_flag_values(Sh::Bash);
}

#[test]
fn zsh_completes_inside_subcommands_and_flag_values() {
    completes_inside_subcommands_and_flag_values(Sh::Zsh);
}

#[test]
fn fish_completes_inside_subcommands_and_flag_values() {
    completes_inside_subcommands_and_flag_values(Sh::Fish);
}

/// A namespace in km-a holding a StatefulSet `ledger` (no replicas), for candidates only a
/// cluster knows.
async fn namespace_with_a_set(prefix: &str) -> support::TestNamespace {
    use k8s_openapi::api::apps::v1::StatefulSet;
    let client = support::client(support::CONTEXT_A).await;
    let ns = support::TestNamespace::create(&client, support::CONTEXT_A, prefix).await;
    let set: StatefulSet = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "ledger"},
        "spec": {"replicas": 0, "serviceName": "ledger", "selector": {"matchLabels": {"app": "ledger"}},
                 "template": {"metadata": {"labels": {"app": "ledger"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}
    }))
    .unwrap();
    kube::Api::<StatefulSet>::namespaced(client, &ns.name)
        .create(&Default::default(), &set)
        .await
        .unwrap();
    ns
}

/// Calling kubectl-migrate directly completes as dynamically as `kubectl migrate` does: the
/// StatefulSets of the namespace and context typed, namespaces and contexts, in every shell.
#[tokio::test]
async fn the_scripts_offer_what_the_clusters_hold() {
    let ns = namespace_with_a_set("tab-direct").await;
    let kubeconfig = support::kubeconfig_path();
    let name = ns.name.clone();
    tokio::task::spawn_blocking(move || {
        let dir = decoy_dir();
        let env = [("KUBECONFIG", kubeconfig.to_str().unwrap())];
        for sh in [Sh::Bash, Sh::Zsh, Sh::Fish] {
            let mut term = sh.start(dir.path(), &env);
            let n = sh.presses();
            let sets = tabs(
                &mut term,
                &format!("kubectl-migrate statefulset --context km-a -n {name} "),
                n,
                &["ledger"],
            );
            assert_no_files(&sets);
            let contexts = tabs(
                &mut term,
                "kubectl-migrate statefulset ledger --to-context km-",
                n,
                &["km-a", "km-b"],
            );
            assert_no_files(&contexts);
            // The namespace's name less its last characters: the shell completes the rest.
            let typed = &name[..name.len() - 3];
            let namespaces = tabs(
                &mut term,
                &format!("kubectl-migrate statefulset --context km-a -n {typed}"),
                n,
                &[&name],
            );
            assert_no_files(&namespaces);
        }
    })
    .await
    .unwrap();
}

/// Where kubectl's bash completion finds `_get_comp_words_by_ref` (Debian's bash-completion,
/// which scripts/test.sh installs).
const BASH_COMPLETION: &str = "/usr/share/bash-completion/bash_completion";

/// `kubectl migrate <TAB>` in kubectl's own completion, through kubectl_complete-migrate as
/// install.sh installs it: the StatefulSets and the one required flag at a word, and the
/// optional flags only after a `-`, as kubectl offers its own.
async fn kubectl_migrate_offers_flags_only_after_a_dash(sh: Sh) {
    let ns = namespace_with_a_set("tab-kubectl").await;
    let kubeconfig = support::kubeconfig_path();
    let name = ns.name.clone();
    tokio::task::spawn_blocking(move || {
        let dir = decoy_dir();
        let helper = tempfile::tempdir().unwrap();
        let script = helper.path().join("kubectl_complete-migrate");
        std::fs::copy(completions_dir().join("kubectl_complete-migrate"), &script).unwrap();
        std::fs::set_permissions(
            &script,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let path = support::path_with(&[helper.path()]);
        let env = [
            ("KUBECONFIG", kubeconfig.to_str().unwrap()),
            ("PATH", path.to_str().unwrap()),
        ];
        let mut term = match sh {
            Sh::Bash => {
                assert!(
                    Path::new(BASH_COMPLETION).exists(),
                    "{BASH_COMPLETION} is missing: kubectl's bash completion needs the \
                     bash-completion package (scripts/test.sh installs it; or run \
                     apt-get install bash-completion)"
                );
                shell_with(
                    "bash",
                    &["--norc", "--noprofile", "-i"],
                    dir.path(),
                    &format!(
                        "PS1='PS> '; source {BASH_COMPLETION}; source <(kubectl completion bash); echo loaded\n"
                    ),
                    &env,
                )
            }
            Sh::Zsh => shell_with(
                "zsh",
                &["-f", "-i"],
                dir.path(),
                "PS1='PS> '; autoload -U compinit; compinit -u; source <(kubectl completion zsh); echo loaded\n",
                &env,
            ),
            Sh::Fish => unreachable!("kubectl's fish completion is not installed by install.sh"),
        };
        let n = sh.presses();
        let word = tabs(
            &mut term,
            &format!("kubectl migrate statefulset --context km-a -n {name} "),
            n,
            &["ledger", "--to-context"],
        );
        assert_no_files(&word);
        assert!(!word.contains("--dry-run"), "flags before a '-':\n{word}");
        let dash = tabs(
            &mut term,
            &format!("kubectl migrate statefulset ledger --context km-a -n {name} --d"),
            n,
            &["--dry-run"],
        );
        assert_no_files(&dash);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn kubectl_migrate_in_zsh_offers_flags_only_after_a_dash() {
    kubectl_migrate_offers_flags_only_after_a_dash(Sh::Zsh).await;
}

#[tokio::test]
async fn kubectl_migrate_in_bash_offers_flags_only_after_a_dash() {
    kubectl_migrate_offers_flags_only_after_a_dash(Sh::Bash).await;
}
