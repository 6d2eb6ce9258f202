//! Shell completions, kubectl plugin completion and man pages, all generated from the clap
//! definitions (and [`help`], the exit codes and examples that `--help` shows too) so that they
//! cannot drift from the real flags. The committed copies in
//! `completions/` and `man/` are checked by `tests/suite/generated_files.rs`.
//!
//! Both ways of completing ask the binary for the words typed so far and get the same
//! candidates ([`candidates`]): `kubectl migrate <TAB>` through `kubectl_complete-migrate`
//! (kubectl's plugin protocol), `kubectl-migrate <TAB>` through the scripts in completions/
//! (clap_complete's registration scripts, which call back with `COMPLETE=<shell>`). Values
//! that only a cluster knows (contexts, namespaces, StatefulSets, CRDs) come either way.
use std::ffi::OsString;

use std::io::Write;

use clap::{ArgAction, Command, CommandFactory};
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, CompleteEnv, EnvCompleter, Fish, Shells, Zsh};
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use super::{Cli, help};

/// The hidden argument that `kubectl_complete-migrate` passes to reach [`print_kubectl_completions`].
pub const COMPLETE_SUBCOMMAND: &str = "__complete";

/// kubectl's ShellCompDirectiveNoFileComp: do not fall back to file names.
const NO_FILE_COMPLETION: &str = ":4";

/// The variable the scripts in completions/ set (to the shell's name) when they ask the binary
/// for candidates: clap_complete's.
const COMPLETE_VAR: &str = "COMPLETE";

/// The shells the scripts in completions/ are for, with their file names.
const SHELLS: [(&ShellCandidates, &str); 3] = [
    (&ShellCandidates::Bash, "kubectl-migrate.bash"),
    (&ShellCandidates::Zsh, "_kubectl-migrate"),
    (&ShellCandidates::Fish, "kubectl-migrate.fish"),
];

/// The root command as completion sees it. For a word that does not start with `-`, the flags
/// that are not required are hidden, and [`candidates`] leaves them out: kubectl offers values,
/// subcommands and the required flags there, and every flag only after a `-`.
fn completion_command(flag_word: bool) -> Command {
    fn hide_optional_flags(cmd: Command) -> Command {
        cmd.mut_args(|a| {
            if a.is_positional() || a.is_required_set() {
                a
            } else {
                a.hide(true)
            }
        })
        .mut_subcommands(hide_optional_flags)
    }
    let mut cmd = Cli::command();
    if flag_word {
        return cmd;
    }
    // Built first, so that the global flags and --help are in every subcommand to be hidden.
    cmd.build();
    hide_optional_flags(cmd)
}

/// The candidates for `words` (the command line, program name first) at the word `index`, for
/// both ways of completing. Candidates that ask a cluster follow the --kubeconfig, --context
/// and -n in `words`.
fn candidates(words: Vec<OsString>, index: usize) -> Vec<CompletionCandidate> {
    crate::cli::completing(&words);
    let flag_word = words
        .get(index)
        .is_some_and(|w| w.to_string_lossy().starts_with('-'));
    let mut cmd = completion_command(flag_word);
    let cwd = std::env::current_dir().ok();
    clap_complete::engine::complete(&mut cmd, words, index, cwd.as_deref())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !c.is_hide_set())
        .collect()
}

/// Candidates for the words after `kubectl migrate`, the last one being the word under the cursor.
pub fn kubectl_completions(words: Vec<OsString>) -> Vec<String> {
    let mut args: Vec<OsString> = vec!["kubectl-migrate".into()];
    args.extend(words);
    if args.len() == 1 {
        args.push(OsString::new());
    }
    let index = args.len() - 1;
    candidates(args, index)
        .into_iter()
        .map(|c| c.get_value().to_string_lossy().into_owned())
        .collect()
}

/// Prints one candidate per line, then kubectl's directive line, as kubectl (>= 1.26) expects
/// from a `kubectl_complete-<plugin>` executable.
pub fn print_kubectl_completions(words: Vec<OsString>) -> u8 {
    let candidates = kubectl_completions(words);
    let mut text = String::new();
    for c in &candidates {
        text.push_str(c);
        text.push('\n');
    }
    // With no candidate (a path argument, say) let the shell complete file names.
    if !candidates.is_empty() {
        text.push_str(NO_FILE_COMPLETION);
        text.push('\n');
    }
    // A shell that stops reading early (a closed pipe) is no error worth a word.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Answers the scripts in completions/ when they ask (with `COMPLETE=<shell>` set) and exits;
/// returns at once otherwise. `COMPLETE=bash kubectl-migrate` prints the bash script.
pub fn complete_from_env() {
    CompleteEnv::with_factory(Cli::command)
        .var(COMPLETE_VAR)
        .bin("kubectl-migrate")
        // Found on PATH, like kubectl_complete-migrate's `exec kubectl-migrate`.
        .completer("kubectl-migrate")
        .shells(Shells(&SHELLS.map(|(shell, _)| shell as &dyn EnvCompleter)))
        .complete();
}

/// clap_complete's shells with [`candidates`] as their answers: its registration scripts, and
/// the candidates written as each script reads them (bash and zsh: separated by `$_CLAP_IFS`,
/// zsh with `:` escaped; fish: a line each, its help after a tab).
#[derive(Clone, Copy)]
enum ShellCandidates {
    Bash,
    Zsh,
    Fish,
}

impl ShellCandidates {
    fn shell(self) -> &'static dyn EnvCompleter {
        match self {
            ShellCandidates::Bash => &Bash,
            ShellCandidates::Zsh => &Zsh,
            ShellCandidates::Fish => &Fish,
        }
    }
}

impl EnvCompleter for ShellCandidates {
    fn name(&self) -> &'static str {
        self.shell().name()
    }

    fn is(&self, name: &str) -> bool {
        self.shell().is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.shell()
            .write_registration(var, name, bin, completer, buf)?;
        if let ShellCandidates::Zsh = self {
            // Autoloaded from $fpath (install.sh), the file is the completion function's body:
            // its first run defines the completer, so that run must also complete, or the first
            // Tab of every shell would offer nothing. Sourced, it only registers.
            let function = format!("_clap_dynamic_completer_{}", name.replace('-', "_"));
            writeln!(
                buf,
                "if [[ \"${{funcstack[1]}}\" == _{name} ]]; then\n    {function} \"$@\"\nfi"
            )?;
        }
        Ok(())
    }

    fn write_complete(
        &self,
        _cmd: &mut Command,
        mut args: Vec<OsString>,
        _current_dir: Option<&std::path::Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        // bash and zsh say which word the cursor is on (zsh leaves an empty one out); fish
        // passes the words up to the cursor.
        let index = std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|i| i.parse().ok())
            .unwrap_or(args.len().saturating_sub(1));
        if args.len() == index {
            args.push(OsString::new());
        }
        let separator = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".into());
        for (i, candidate) in candidates(args, index).iter().enumerate() {
            let value = candidate.get_value().to_string_lossy();
            let help = candidate
                .get_help()
                .map(|h| h.to_string().lines().next().unwrap_or_default().to_string());
            match self {
                ShellCandidates::Bash => {
                    if i > 0 {
                        write!(buf, "{separator}")?;
                    }
                    write!(buf, "{value}")?;
                }
                ShellCandidates::Zsh => {
                    if i > 0 {
                        write!(buf, "{separator}")?;
                    }
                    write!(buf, "{}", value.replace('\\', "\\\\").replace(':', "\\:"))?;
                    if let Some(help) = help {
                        write!(buf, ":{}", help.replace('\\', "\\\\"))?;
                    }
                }
                ShellCandidates::Fish => {
                    write!(buf, "{value}")?;
                    if let Some(help) = help {
                        write!(buf, "\t{help}")?;
                    }
                    writeln!(buf)?;
                }
            }
        }
        Ok(())
    }
}

/// The script installed as `kubectl_complete-migrate` next to the binary.
pub const KUBECTL_COMPLETE_SCRIPT: &str = "#!/bin/sh\n\
# Generated by kubectl-migrate; do not edit.\n\
# kubectl (>= 1.26) runs this for `kubectl migrate <TAB>` with the words typed so far.\n\
exec kubectl-migrate __complete \"$@\"\n";

/// Every generated file as (path relative to the repository, contents).
pub fn generated_files() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for (shell, name) in SHELLS {
        let mut buf = Vec::new();
        shell
            .write_registration(
                COMPLETE_VAR,
                "kubectl-migrate",
                "kubectl-migrate",
                "kubectl-migrate",
                &mut buf,
            )
            .expect("writing to memory cannot fail");
        files.push((format!("completions/{name}"), buf));
    }
    files.push((
        "completions/kubectl_complete-migrate".into(),
        KUBECTL_COMPLETE_SCRIPT.as_bytes().to_vec(),
    ));

    files.extend(man_pages());
    files
}

/// One man page for kubectl-migrate and one for each subcommand, nested ones included, named as
/// git names its pages: kubectl-migrate-failure-policy-simulate(1) is `kubectl migrate
/// failure-policy simulate`.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    // No page for `help`: it is `--help` under another name.
    fn without_help_subcommand(cmd: Command) -> Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help_subcommand)
    }
    let mut root = without_help_subcommand(Cli::command());
    // Building propagates the global flags into each subcommand, so their pages list them.
    root.build();
    let mut commands = Vec::new();
    collect_commands(&root, Vec::new(), &mut commands);
    let names: Vec<String> = commands.iter().map(|(path, _)| page_name(path)).collect();
    commands
        .iter()
        .map(|(path, cmd)| {
            let name = page_name(path);
            let page = man_page(path, cmd.clone(), &names);
            (format!("man/{name}.1"), page)
        })
        .collect()
}

fn collect_commands(cmd: &Command, path: Vec<String>, out: &mut Vec<(Vec<String>, Command)>) {
    out.push((path.clone(), cmd.clone()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut sub_path = path.clone();
        sub_path.push(sub.get_name().to_string());
        collect_commands(sub, sub_path, out);
    }
}

fn page_name(path: &[String]) -> String {
    std::iter::once("kubectl-migrate")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-")
}

/// What roff::Roff writes before every rendering; a page keeps only the first.
const ROFF_PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// The page of the command at `path`: clap_mangen's sections for what clap knows (title, name,
/// description, options, subcommands, version), and our own SYNOPSIS (with the value names),
/// notes, EXIT STATUS, EXAMPLES and SEE ALSO from [`help`].
fn man_page(path: &[String], cmd: Command, all_pages: &[String]) -> Vec<u8> {
    let name = page_name(path);
    let words: Vec<&str> = path.iter().map(String::as_str).collect();
    let usage_name: Vec<&str> = ["kubectl", "migrate"]
        .into_iter()
        .chain(words.iter().copied())
        .collect();
    let cmd = cmd.name(name.clone()).bin_name(usage_name.join(" "));
    let parts = help_parts(&words, &cmd);
    let man = clap_mangen::Man::new(cmd.clone());

    let mut page = Vec::new();
    let mut section = |render: &dyn Fn(&mut dyn Write) -> std::io::Result<()>| {
        let mut buf = Vec::new();
        render(&mut buf).expect("rendering to memory cannot fail");
        let body = if page.is_empty() {
            &buf[..]
        } else {
            buf.strip_prefix(ROFF_PREAMBLE.as_bytes())
                .expect("roff output starts with its preamble")
        };
        page.extend_from_slice(body);
    };
    section(&|w| man.render_title(w));
    section(&|w| man.render_name_section(w));
    section(&|w| w.write_all(synopsis(&cmd).as_bytes()));
    section(&|w| man.render_description_section(w));
    section(&|w| notes(&parts).to_writer(w));
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        section(&|w| man.render_options_section(w));
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        section(&|w| man.render_subcommands_section(w));
    }
    section(&|w| exit_status(&parts).to_writer(w));
    section(&|w| examples(&parts).to_writer(w));
    if cmd.get_version().is_some() {
        section(&|w| man.render_version_section(w));
    }
    section(&|w| see_also(&name, all_pages).to_writer(w));
    page
}

/// The help pages a man page shows: the command's own, or, for a command that only groups
/// others (failure-policy), each subcommand's under its name.
fn help_parts(words: &[&str], cmd: &Command) -> Vec<(Option<String>, &'static help::Page)> {
    if let Some(page) = help::page(words) {
        return vec![(None, page)];
    }
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|sub| {
            let mut sub_words = words.to_vec();
            sub_words.push(sub.get_name());
            let page =
                help::page(&sub_words).unwrap_or_else(|| panic!("no help::page for {sub_words:?}"));
            (
                Some(format!("kubectl migrate {}", sub_words.join(" "))),
                page,
            )
        })
        .collect()
}

/// Stands for roff's unbreakable space (`\ `) in text given to [`Roff`], which escapes
/// backslashes: a flag and its value stay on one line.
const NBSP: char = '\u{a0}';

/// `kubectl migrate statefulset [--context <NAME>] ... --to-context <CONTEXT> <NAME>`: every
/// flag with its value name, optional ones in brackets, repeatable ones followed by `...`.
fn synopsis(cmd: &Command) -> String {
    let mut line = vec![bold(cmd.get_bin_name().unwrap_or(cmd.get_name()))];
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
    {
        let mut flag = match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => vec![bold(format!("-{s}")), roman("|"), bold(format!("--{l}"))],
            (Some(s), None) => vec![bold(format!("-{s}"))],
            (None, Some(l)) => vec![bold(format!("--{l}"))],
            (None, None) => continue,
        };
        if arg.get_action().takes_values() {
            let value = italic(format!("<{}>", value_name(arg)));
            let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
            match (optional, arg.is_require_equals_set()) {
                (true, true) => flag.extend([roman("[="), value, roman("]")]),
                (true, false) => flag.extend([roman(format!("{NBSP}[")), value, roman("]")]),
                (false, true) => flag.extend([roman("="), value]),
                (false, false) => flag.extend([roman(NBSP.to_string()), value]),
            }
        }
        line.push(roman(" "));
        if arg.is_required_set() {
            line.extend(flag);
        } else {
            line.push(roman("["));
            line.extend(flag);
            line.push(roman("]"));
        }
        if repeatable(arg) {
            line.push(roman("..."));
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        line.push(roman(" "));
        let value = italic(value_name(arg));
        if arg.is_required_set() {
            line.extend([roman("<"), value, roman(">")]);
        } else {
            line.extend([roman("["), value, roman("]")]);
        }
        if repeatable(arg) {
            line.push(roman("..."));
        }
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.extend([roman(" <"), italic("COMMAND"), roman(">")]);
    }
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    unbroken(&mut roff, line);
    roff.render().replace(NBSP, "\\ ")
}

/// A line set ragged-right and without hyphens: a flag or a page name is not split at its
/// dashes.
fn unbroken(roff: &mut Roff, line: Vec<Inline>) {
    roff.control("nh", []).control("ad", ["l"]);
    roff.text(line);
    roff.control("ad", []).control("hy", []);
}

fn value_name(arg: &clap::Arg) -> String {
    match arg.get_value_names() {
        Some(names) => names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        None => arg.get_id().as_str().to_uppercase(),
    }
}

fn repeatable(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append | ArgAction::Count)
}

/// The help notes, as more paragraphs of DESCRIPTION (rendered right after it).
fn notes(parts: &[(Option<String>, &help::Page)]) -> Roff {
    let mut roff = Roff::new();
    // A page made of its subcommands' shows their notes on their own pages only.
    for (_, page) in parts.iter().filter(|(heading, _)| heading.is_none()) {
        for paragraph in page.notes.split("\n\n").filter(|p| !p.is_empty()) {
            roff.control("PP", []);
            let mut preformatted = false;
            for line in paragraph.lines() {
                let indented = line.strip_prefix("  ");
                if indented.is_some() != preformatted {
                    preformatted = indented.is_some();
                    if preformatted {
                        roff.control("RS", ["4"]).control("nf", []);
                    } else {
                        roff.control("fi", []).control("RE", []);
                    }
                }
                roff.text([roman(indented.unwrap_or(line))]);
            }
            if preformatted {
                roff.control("fi", []).control("RE", []);
            }
        }
    }
    roff
}

fn exit_status(parts: &[(Option<String>, &help::Page)]) -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (heading, page) in parts {
        if let Some(heading) = heading {
            roff.control("SS", [heading.as_str()]);
        }
        if let Some(like) = page.exit_like {
            roff.text([roman(format!("The exit codes follow those of {like}."))]);
        }
        for (code, meaning) in page.exit_codes {
            roff.control("TP", []);
            roff.text([bold(*code)]);
            roff.text([roman(*meaning)]);
        }
        if !page.exit_note.is_empty() {
            roff.control("PP", []);
            roff.text([roman(page.exit_note)]);
        }
    }
    roff
}

fn examples(parts: &[(Option<String>, &help::Page)]) -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    roff.control("RS", ["4"]).control("nf", []);
    for (_, page) in parts {
        for example in page.examples {
            roff.text([roman(*example)]);
        }
    }
    roff.control("fi", []).control("RE", []);
    roff
}

/// kubectl(1) and every other page of kubectl-migrate.
fn see_also(this_page: &str, all_pages: &[String]) -> Roff {
    let mut line = vec![bold("kubectl"), roman("(1)")];
    for page in all_pages.iter().filter(|p| *p != this_page) {
        line.extend([roman(", "), bold(page.as_str()), roman("(1)")]);
    }
    let mut roff = Roff::new();
    roff.control("SH", ["SEE ALSO"]);
    unbroken(&mut roff, line);
    roff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(words: &[&str]) -> Vec<String> {
        kubectl_completions(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn completes_subcommands() {
        let c = complete(&[""]);
        for sub in ["statefulset", "schema-diff", "failure-policy", "version"] {
            assert!(c.contains(&sub.to_string()), "{sub} missing from {c:?}");
        }
    }

    #[test]
    fn completes_flag_values_from_the_clap_definition() {
        let c = complete(&["version", "--output", ""]);
        assert_eq!(c, ["table", "json", "yaml"]);
        let c = complete(&["schema-diff", "-o", ""]);
        assert_eq!(c, ["table", "json", "yaml", "markdown"]);
    }

    #[test]
    fn generates_a_page_per_subcommand() {
        let names: Vec<String> = generated_files().into_iter().map(|(n, _)| n).collect();
        assert!(
            names.contains(&"man/kubectl-migrate-statefulset.1".to_string()),
            "{names:?}"
        );
        assert!(
            names.contains(&"completions/_kubectl-migrate".to_string()),
            "{names:?}"
        );
    }
}
