//! What each command's help says after its flags, kept once as data and shown twice: as the
//! `after_help` of `--help`, and as the DESCRIPTION notes, EXIT STATUS and EXAMPLES sections of
//! the man pages (`completion::generated_files`).

/// Stands for a space that clap's wrapping of `--help` must not break at: the words of an
/// example, or of a preformatted line, are joined with it in [`Page::after_help`], and
/// [`print_clap_output`] writes spaces again. A long example then runs past the edge of a narrow
/// terminal as one line, as kubectl's do, instead of being wrapped by clap into a second line
/// that reads like a command of its own.
const GLUE: char = '\u{a0}';

/// `line` with its leading indentation kept and every other space glued (see [`GLUE`]).
fn glued(line: &str) -> String {
    let words = line.trim_start_matches(' ');
    let indent = &line[..line.len() - words.len()];
    format!("{indent}{}", words.replace(' ', &GLUE.to_string()))
}

/// Prints what clap says instead of running (help, the version, a usage error) where clap would
/// print it, in its colours, with the spaces of [`GLUE`] back. A reader that stops early
/// (`--help | head`) is no error.
pub fn print_clap_output(err: &clap::Error) {
    use std::io::Write;
    let text = err.render().ansi().to_string().replace(GLUE, " ");
    let _ = if err.use_stderr() {
        anstream::stderr().write_all(text.as_bytes())
    } else {
        anstream::stdout().write_all(text.as_bytes())
    };
}

/// The text after the flags of one command.
pub struct Page {
    /// Paragraphs (separated by a blank line) that explain more than the flags do. A line that
    /// starts with two spaces is shown as it is (a file format, say).
    pub notes: &'static str,
    /// The command whose exit codes these follow, when they follow one users know.
    pub exit_like: Option<&'static str>,
    /// The exit codes and what each means, in order.
    pub exit_codes: &'static [(&'static str, &'static str)],
    /// A sentence after the codes.
    pub exit_note: &'static str,
    /// Whole command lines.
    pub examples: &'static [&'static str],
}

impl Page {
    /// The `after_help` text of `--help`: the notes, the exit codes in one sentence, and the
    /// examples indented.
    pub fn after_help(&self) -> String {
        let mut parts = Vec::new();
        if !self.notes.is_empty() {
            // Lines that start with two spaces are shown as they are written.
            let notes: Vec<String> = self
                .notes
                .lines()
                .map(|l| {
                    if l.starts_with("  ") {
                        glued(l)
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            parts.push(notes.join("\n"));
        }
        if !self.exit_codes.is_empty() {
            let like = self
                .exit_like
                .map(|l| format!(" (like {l})"))
                .unwrap_or_default();
            let codes: Vec<String> = self
                .exit_codes
                .iter()
                .map(|(code, meaning)| {
                    // `2 or more: an error`, but `2 usage`.
                    let colon = if code.bytes().all(|b| b.is_ascii_digit()) {
                        ""
                    } else {
                        ":"
                    };
                    format!("{code}{colon} {meaning}")
                })
                .collect();
            let mut sentence = format!("Exit codes{like}: {}.", codes.join("; "));
            if !self.exit_note.is_empty() {
                sentence = format!("{sentence} {}", self.exit_note);
            }
            parts.push(sentence);
        }
        if !self.examples.is_empty() {
            let lines: Vec<String> = self
                .examples
                .iter()
                .map(|e| glued(&format!("  {e}")))
                .collect();
            parts.push(format!("Examples:\n{}", lines.join("\n")));
        }
        parts.join("\n\n")
    }
}

/// The page of the command at `path` (subcommand names from the root, `[]` being the root).
/// `None` for a command whose page is made of its subcommands' (failure-policy).
pub fn page(path: &[&str]) -> Option<&'static Page> {
    Some(match path {
        [] => &ROOT,
        ["statefulset"] => &STATEFULSET,
        ["schema-diff"] => &SCHEMA_DIFF,
        ["failure-policy", "simulate"] => &SIMULATE,
        ["failure-policy", "explain"] => &EXPLAIN,
        ["failure-policy", "check"] => &CHECK,
        ["version"] => &VERSION,
        ["controller"] | ["controller", _] => &CONTROLLER,
        _ => return None,
    })
}

pub static CONTROLLER: Page = Page {
    notes: "Each member cluster's kubeconfig is read from a Secret in the resource's own namespace \
        (Cluster API's convention: <cluster>-kubeconfig, key value); a Secret of another namespace \
        is refused. A migration the controller drives holds the same Lease as the CLI, so the two \
        never drive one migration at once.",
    exit_like: None,
    exit_codes: &[
        (
            "0",
            "stopped by SIGTERM or Ctrl-C, every run at a safe point",
        ),
        ("1", "error"),
        ("2", "usage error"),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate controller crds | kubectl apply -f -",
        "kubectl migrate controller run --context mgmt -n migrations --probe-addr 127.0.0.1:8080",
    ],
};

pub static ROOT: Page = Page {
    notes: "",
    exit_like: None,
    exit_codes: &[("0", "success"), ("1", "error"), ("2", "usage error")],
    exit_note: "Subcommands document their own additions.",
    examples: &[
        "kubectl migrate statefulset web --context a --to-context b --dry-run",
        "kubectl migrate schema-diff --context a --context b",
        "kubectl migrate failure-policy simulate -f job.yaml --fail oom --fail evicted",
        "kubectl migrate version --context a",
    ],
};

pub static STATEFULSET: Page = Page {
    notes: "",
    exit_like: None,
    exit_codes: &[
        ("0", "done"),
        (
            "1",
            "error, ordinals down after --timeout, or another kubectl-migrate drives or completed the migration (this run moved nothing)",
        ),
        ("2", "usage"),
        (
            "3",
            "stopped by the user, at a --step pause or on losing the lease (rerun to resume)",
        ),
        ("4", "preflight failed (nothing written)"),
    ],
    exit_note: "With -l or --all the exit code is that of the first set (by name) that did not finish.",
    examples: &[
        "kubectl migrate statefulset web --context a --to-context b --dry-run",
        "kubectl migrate statefulset -l tier=db -n shop --context a --to-context b --parallel 2 --yes",
        "kubectl migrate statefulset web --context a --to-context b --yes -o json",
        "kubectl migrate statefulset web --context a --to-context b --status",
        "kubectl migrate statefulset web --context a --to-context b --rollback --yes",
    ],
};

pub static SCHEMA_DIFF: Page = Page {
    notes: "Sources are the --context clusters, then the -f files, in the order given. Classes \
        are judged from the baseline: breaking = an object valid on the baseline can be rejected \
        or lose data on another source; unproven = a CEL rule added may reject one; \
        changes-stored-data = it is accepted but stored with other values (a default removed or \
        changed); changes-selection = a field selector is refused (a selectable field removed); \
        compatible = every other source accepts at least as much; informational = validation is \
        unaffected.",
    exit_like: Some("kubectl diff"),
    exit_codes: &[
        (
            "0",
            "no finding of a class --fail-on names (breaking by default)",
        ),
        (
            "1",
            "findings of such a class (with --lcd: an API has no LCD; with --object: a source \
             rejects an object; with --watch: the event --exit-on waits for)",
        ),
        (
            "2 or more",
            "an error (bad input, unknown context, unreachable cluster)",
        ),
        (
            "5",
            "with --prove: a server contradicts a witness (a defect of this tool)",
        ),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate schema-diff --context prod-eu --context prod-us",
        "kubectl migrate schema-diff -f crds-v1.2/ -f crds-v1.3/ --fail-on any -o markdown",
        "kubectl migrate schema-diff -f crds-v1.2/ -f crds-v1.3/ --fail-on breaking,changes-stored-data",
        "kubectl migrate schema-diff --context a --context b widgets.example.com --lcd > lcd.yaml",
        "kubectl migrate schema-diff --context a --context b --builtin apps/v1/statefulsets",
        "kubectl migrate schema-diff --context a --context b --object widget.yaml --server",
        "kubectl migrate schema-diff --watch --context a --context b --exit-on breaking -o json",
    ],
};

pub static SIMULATE: Page = Page {
    notes: "Scenario file (--scenario), in order, one pod each:\n\
        \x20 outcomes:\n\
        \x20 - fail: {exitCodes: {main: 137}}\n\
        \x20 - index: 2                      # Indexed Jobs\n\
        \x20   after: 30s                    # time since the previous outcome\n\
        \x20   fail:\n\
        \x20     initExitCodes: {setup: 5}\n\
        \x20     conditions: [{type: DisruptionTarget, status: \"True\", reason: EvictionByEvictionAPI}]\n\
        \x20 - succeed: {}\n\
        \n\
        --scenario outcomes come first, then every --fail in order, then every --succeed.",
    exit_like: None,
    exit_codes: &[
        ("0", "simulated"),
        (
            "1",
            "with two versions (--k8s-version or --context twice): the final status differs",
        ),
        (
            "2",
            "usage or bad input (an invalid Job is refused with the API server's messages)",
        ),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate failure-policy simulate -f job.yaml --fail exit=137 --fail evicted --fail exit=1",
        "kubectl migrate failure-policy simulate -f job.yaml --scenario outcomes.yaml --k8s-version 1.31 -o json",
        "kubectl migrate failure-policy simulate -f job.yaml --fail exit=1,index=2 --k8s-version 1.29 --k8s-version 1.36",
    ],
};

pub static EXPLAIN: Page = Page {
    notes: "",
    exit_like: None,
    exit_codes: &[
        ("0", "explained"),
        ("1", "error (unknown context, unreachable cluster)"),
        ("2", "usage, or no such Job"),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate failure-policy explain train -n ml --context prod",
        "kubectl migrate failure-policy explain train -n ml --context prod -o yaml",
    ],
};

pub static CHECK: Page = Page {
    notes: "",
    exit_like: None,
    exit_codes: &[
        ("0", "valid (and accepted by the server with --context)"),
        (
            "1",
            "invalid, unsupported at that version, or rejected by the server (the first line says which)",
        ),
        (
            "2",
            "usage or bad input (a namespace the cluster does not have, or not -n's)",
        ),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate failure-policy check -f job.yaml --k8s-version 1.30",
        "kubectl migrate failure-policy check -f job.yaml --context prod",
    ],
};

pub static VERSION: Page = Page {
    notes: "",
    exit_like: None,
    exit_codes: &[
        ("0", "success"),
        ("1", "error (unknown context, unreachable cluster)"),
        ("2", "usage error"),
    ],
    exit_note: "",
    examples: &[
        "kubectl migrate version --client",
        "kubectl migrate version --context prod -o json",
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const ALL: [&Page; 7] = [
        &ROOT,
        &STATEFULSET,
        &SCHEMA_DIFF,
        &SIMULATE,
        &EXPLAIN,
        &CHECK,
        &VERSION,
    ];

    #[test]
    fn every_example_parses() {
        for example in ALL.iter().flat_map(|p| p.examples) {
            let words: Vec<&str> = example
                .split_whitespace()
                .take_while(|w| *w != ">")
                .collect();
            assert_eq!(words[..2], ["kubectl", "migrate"], "{example}");
            let parsed = crate::commands::Cli::try_parse_from(
                std::iter::once("kubectl-migrate").chain(words[2..].iter().copied()),
            );
            assert!(parsed.is_ok(), "{example}: {}", parsed.unwrap_err());
        }
    }

    #[test]
    fn every_page_has_exit_codes_and_examples() {
        for page in ALL {
            assert!(
                page.exit_codes
                    .first()
                    .is_some_and(|(code, _)| *code == "0")
            );
            assert!(!page.examples.is_empty());
        }
    }

    #[test]
    fn after_help_says_codes_in_one_sentence_then_the_examples() {
        let text = STATEFULSET.after_help();
        // An example's words are glued, so that clap does not wrap it.
        assert!(text.contains(&format!("  kubectl{GLUE}migrate{GLUE}statefulset{GLUE}web")));
        assert_eq!(
            text.replace(GLUE, " "),
            "Exit codes: 0 done; 1 error, ordinals down after --timeout, or another \
             kubectl-migrate drives or completed the migration (this run moved nothing); 2 usage; 3 stopped by the user, at a --step pause or \
             on losing the lease (rerun to resume); 4 preflight failed (nothing written). With \
             -l or --all the exit code is that of the first set (by name) that did not \
             finish.\n\n\
             Examples:\n  \
             kubectl migrate statefulset web --context a --to-context b --dry-run\n  \
             kubectl migrate statefulset -l tier=db -n shop --context a --to-context b --parallel 2 --yes\n  \
             kubectl migrate statefulset web --context a --to-context b --yes -o json\n  \
             kubectl migrate statefulset web --context a --to-context b --status\n  \
             kubectl migrate statefulset web --context a --to-context b --rollback --yes"
        );
        let schema_diff = SCHEMA_DIFF.after_help();
        assert!(
            schema_diff.contains("\n\nExit codes (like kubectl diff): 0 no finding")
                && schema_diff.contains("; 2 or more: an error (bad input"),
            "{schema_diff}"
        );
        assert!(ROOT.after_help().replace(GLUE, " ").starts_with(
            "Exit codes: 0 success; 1 error; 2 usage error. Subcommands document their own \
             additions.\n\nExamples:\n  kubectl migrate statefulset"
        ));
    }
}
