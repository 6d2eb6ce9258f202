//! The files users name on the command line (`-f`, `--scenario`, `--object`): a path, or `-` for
//! stdin. Every error names the input it concerns, and bad input exits 2.
use std::path::Path;

use crate::error::{Error, Result};

/// A file's text and the name it goes by in messages.
#[derive(Debug, Clone)]
pub struct Text {
    /// The path as given, or `stdin`.
    pub label: String,
    pub text: String,
}

/// Whether `path` means stdin.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The name of `path` in messages and reports.
pub fn label(path: &Path) -> String {
    if is_stdin(path) {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// Reads the whole of `path` (or stdin) as UTF-8 text.
pub fn read_text(path: &Path) -> Result<Text> {
    let label = label(path);
    let read = if is_stdin(path) {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    match read {
        Ok(text) => Ok(Text { label, text }),
        Err(e) => Err(Error::input_because(label, "", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named() {
        let err = read_text(Path::new("/nonexistent/job.yaml")).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string().starts_with("/nonexistent/job.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.yaml");
        std::fs::write(&path, b"name: caf\xe9\n").unwrap();
        let err = read_text(&path).unwrap_err();
        assert!(err.to_string().contains("latin1.yaml: "), "{err}");
        assert!(err.to_string().contains("UTF-8"), "{err}");
    }
}
