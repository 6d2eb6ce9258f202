//! Questions to the person at the terminal, on stderr.
use std::io::IsTerminal;

use crate::error::{Error, Result};

/// Whether a person can answer a question: stdin and stderr are both a terminal.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks before doing `action`. `--yes` skips the question; without a terminal there is nobody to
/// ask, so it fails with a message that names --yes instead of hanging or guessing.
pub fn confirm(action: &str, assume_yes: bool) -> Result<()> {
    confirm_with(action, assume_yes, interactive(), |question| {
        dialoguer::Confirm::new()
            .with_prompt(question)
            .default(false)
            .interact()
            .map_err(|e| Error::Terminal {
                what: "read the answer to a confirmation prompt",
                source: e.into(),
            })
    })
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
    if ask(&format!("{action}. Continue?"))? {
        Ok(())
    } else {
        Err(Error::Cancelled(format!("{action} was not confirmed")))
    }
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
    }
}
