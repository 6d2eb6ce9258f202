//! Progress on stderr, drawn only on a terminal.
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar titled `what` on stderr that draws only when stderr is a terminal; its
/// layout comes from [`progress_style`].
pub fn progress_bar(what: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    bar.set_style(progress_style("{prefix} [{bar:25}] {pos}/{len} {wide_msg}"));
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A bar laid out by `template` (indicatif's syntax).
pub fn progress_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}
