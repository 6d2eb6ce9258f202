//! Questions to the person at the terminal: asked on stderr, answered on stdin with a line and
//! Enter, as kubectl's `delete -i` and apt ask. `y` or `yes` goes on; anything else, an empty
//! line included, does not. Ctrl-C while the question waits stops the command cleanly.
use std::io::{IsTerminal, Write};
use std::sync::mpsc;

use super::terminal;
use crate::error::{Error, Result};

/// The words after every question, where the answer is typed.
const ASK: &str = "Continue? [y/N] ";

/// Whether a person can answer a question: stdin and stderr are both a terminal.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks before doing `action`. `--yes` skips the question; without a terminal there is nobody to
/// ask, so it fails with a message that names --yes instead of hanging or guessing. A "no" or a
/// Ctrl-C is [`Error::Cancelled`].
pub fn confirm(action: &str, assume_yes: bool) -> Result<()> {
    confirm_with(action, assume_yes, interactive(), ask)
}

/// The testable core of [`confirm`]: `ask` is only called on a terminal.
pub fn confirm_with(
    action: &str,
    assume_yes: bool,
    interactive: bool,
    ask: impl FnOnce(&str) -> Result<bool>,
) -> Result<()> {
    if assume_yes {
        return Ok(());
    }
    if !interactive {
        return Err(Error::ConfirmationNeeded {
            action: action.to_string(),
        });
    }
    if ask(action)? {
        Ok(())
    } else {
        Err(Error::Cancelled(
            "not confirmed; nothing was changed".into(),
        ))
    }
}

/// What the terminal gave while a question waited.
enum Reply {
    Line(std::io::Result<String>),
    CtrlC,
}

/// Asks about `action` on the terminal and reads the answer.
fn ask(action: &str) -> Result<bool> {
    let (replies, reply) = mpsc::channel();
    let ctrl_c = replies.clone();
    let _caught = crate::interrupt::catching(move || {
        let _ = ctrl_c.send(Reply::CtrlC);
    });
    // The answer shows as it is typed, also while the progress display keeps the echo off.
    let _echo = terminal::echo(true);
    let mut stderr = std::io::stderr().lock();
    let shown =
        write!(stderr, "{}", question(action, terminal::width())).and_then(|()| stderr.flush());
    drop(stderr);
    shown.map_err(|e| Error::Terminal {
        what: "ask a question",
        source: e.into(),
    })?;
    // Read on a thread of its own, so that a Ctrl-C need not wait for a line; that thread is
    // left waiting on stdin when the process ends.
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line).map(|_| line);
        let _ = replies.send(Reply::Line(read));
    });
    match reply.recv() {
        Ok(Reply::Line(Ok(line))) => {
            if line.is_empty() {
                // End of input (Ctrl-D): the answer's line was never ended.
                eprintln!();
            }
            Ok(is_yes(&line))
        }
        Ok(Reply::Line(Err(e))) => Err(Error::Terminal {
            what: "read the answer to a question",
            source: e.into(),
        }),
        Ok(Reply::CtrlC) | Err(_) => {
            // The terminal echoed `^C` on the question's line; what follows starts a new one.
            eprintln!();
            Err(Error::Cancelled(
                "interrupted (Ctrl-C) at the question; nothing was changed".into(),
            ))
        }
    }
}

/// PURE: the question as shown on a terminal `width` columns wide: on one line with the action
/// when both fit, else the action broken to the width and the question under it, so that the
/// line the answer is typed on is never wrapped.
fn question(action: &str, width: Option<usize>) -> String {
    let one_line = format!("{action}. {ASK}");
    // Room for the answer after the question.
    let answer = "yes".len();
    match width {
        Some(w) if one_line.chars().count() + answer >= w => {
            format!("{}\n{ASK}", terminal::fill_to(&format!("{action}."), w))
        }
        _ => one_line,
    }
}

/// PURE: whether a line typed as the answer says yes.
fn is_yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_off_a_terminal_names_yes_and_never_asks() {
        let err =
            confirm_with("migrate web", false, false, |_| panic!("must not prompt")).unwrap_err();
        assert!(err.to_string().contains("--yes"), "{err}");
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn yes_skips_the_question_and_a_no_cancels() {
        confirm_with("x", true, false, |_| panic!("must not prompt")).unwrap();
        confirm_with("x", false, true, |_| Ok(true)).unwrap();
        let err = confirm_with("x", false, true, |_| Ok(false)).unwrap_err();
        assert!(matches!(err, Error::Cancelled(_)));
        assert_eq!(err.exit_code(), 3);
    }

    #[test]
    fn only_y_or_yes_says_yes() {
        for yes in ["y\n", "Y\n", "yes\n", " YES \n", "y"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["\n", "", "n\n", "no\n", "yy\n", "ye s\n", "sure\n"] {
            assert!(!is_yes(no), "{no:?}");
        }
    }

    #[test]
    fn the_answer_line_is_never_wrapped() {
        let action = "Roll back StatefulSet web: move its ordinals from km-b back to km-a";
        assert_eq!(
            question(action, Some(200)),
            format!("{action}. Continue? [y/N] ")
        );
        assert_eq!(
            question(action, None),
            format!("{action}. Continue? [y/N] ")
        );
        assert_eq!(
            question(action, Some(80)),
            format!("{action}.\nContinue? [y/N] ")
        );
        assert_eq!(
            question(action, Some(40)),
            "Roll back StatefulSet web: move its\n  ordinals from km-b back to km-a.\nContinue? [y/N] "
        );
    }
}
