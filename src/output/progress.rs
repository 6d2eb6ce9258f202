//! Progress on stderr, drawn only on a terminal: what happens now on one line, and under it a
//! status line laid out to the terminal's width, so that neither ever wraps.
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::terminal;

/// A progress display on stderr, drawn while it lives (and only on a terminal). Use it as the
/// [`ProgressBar`] it holds; while it is drawn the terminal does not echo typed keys (see
/// [`terminal::echo`]), until [`ProgressBar::finish_and_clear`] and its drop.
pub struct Progress {
    bar: ProgressBar,
    _echo: terminal::Echo,
}

impl std::ops::Deref for Progress {
    type Target = ProgressBar;

    fn deref(&self) -> &ProgressBar {
        &self.bar
    }
}

/// A progress display titled `title`: the message (cut to the terminal) over the status line
/// `title [====>    ] pos/len` followed by `extras` (", 12s in all"), as [`status_line`] fits
/// them to the terminal at each redraw.
pub fn progress(
    title: &str,
    extras: impl Fn(&ProgressState) -> Vec<String> + Clone + Send + Sync + 'static,
) -> Progress {
    let on_terminal = std::io::stderr().is_terminal();
    let target = if on_terminal {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    let title = title.to_string();
    let style = ProgressStyle::with_template("{wide_msg}\n{status}")
        .expect("the template is valid")
        .with_key(
            "status",
            move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                // The width indicatif draws at is the same terminal's.
                let width = terminal::width().unwrap_or(80);
                let len = state.len().unwrap_or(0);
                let line = status_line(width, &title, state.pos(), len, &extras(state));
                let _ = w.write_str(&line);
            },
        );
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    Progress {
        bar,
        _echo: terminal::echo(false),
    }
}

/// The widths a bar is drawn at: as wide as this where there is room, no narrower than the
/// least, or not at all.
const BAR_WIDTH: usize = 25;
const BAR_LEAST: usize = 10;

/// PURE: `title [====>    ] pos/len` and `extras` in at most `width` columns. What does not fit
/// gives way in this order: the bar narrows, the first of `extras` go (the last one is kept
/// longest), the bar goes, the rest of `extras` go, and the title is cut.
pub fn status_line(width: usize, title: &str, pos: u64, len: u64, extras: &[String]) -> String {
    let count = format!("{pos}/{len}");
    let columns = |s: &str| s.chars().count();
    let base = columns(title) + 1 + columns(&count);
    let last = extras.len().saturating_sub(1);
    let with_bar = (0..=last).map(|first| (true, first));
    let without_bar = [(false, last), (false, extras.len())];
    for (with_bar, first) in with_bar.chain(without_bar) {
        let extras = extras[first..].concat();
        let without = base + columns(&extras);
        // ` [` and `]` around the bar.
        let room = width.saturating_sub(without + 3);
        if with_bar && room >= BAR_LEAST {
            let bar = bar(room.min(BAR_WIDTH), pos, len);
            return format!("{title} [{bar}] {count}{extras}");
        }
        if !with_bar && without <= width {
            return format!("{title} {count}{extras}");
        }
    }
    // Not even the title and the count fit: the title is cut.
    let keep = width.saturating_sub(columns(&count) + 2);
    let cut: String = title.chars().take(keep).collect();
    format!("{cut}… {count}")
}

/// `====>    `: `pos` of `len` done, `width` columns.
fn bar(width: usize, pos: u64, len: u64) -> String {
    let done = if len == 0 {
        0
    } else {
        (pos.min(len) as f64 / len as f64 * width as f64) as usize
    };
    if done >= width {
        "=".repeat(width)
    } else {
        format!("{}>{}", "=".repeat(done), " ".repeat(width - done - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extras() -> Vec<String> {
        [", 12s on this step", ", 1m5s in all", ", about 2m10s left"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn the_status_line_is_whole_where_there_is_room() {
        assert_eq!(
            status_line(200, "web km-a->km-b", 2, 3, &extras()),
            "web km-a->km-b [================>        ] 2/3, 12s on this step, 1m5s in all, about 2m10s left"
        );
        assert_eq!(
            status_line(200, "web", 3, 3, &[]),
            format!("web [{}] 3/3", "=".repeat(25))
        );
        assert_eq!(
            status_line(200, "web", 0, 0, &[]),
            format!("web [>{}] 0/0", " ".repeat(24))
        );
    }

    #[test]
    fn the_status_line_gives_way_in_order_and_never_passes_the_width() {
        let line = |width| status_line(width, "web km-a->km-b", 2, 3, &extras());
        // The bar narrows first.
        assert_eq!(
            line(80),
            "web km-a->km-b [======>   ] 2/3, 12s on this step, 1m5s in all, about 2m10s left"
        );
        // Then the step's clock goes, then the clock of the whole run.
        assert_eq!(
            line(70),
            "web km-a->km-b [============>     ] 2/3, 1m5s in all, about 2m10s left"
        );
        assert_eq!(
            line(50),
            "web km-a->km-b [=======>   ] 2/3, about 2m10s left"
        );
        // Then the bar, then the estimate, then the title is cut.
        assert_eq!(line(40), "web km-a->km-b 2/3, about 2m10s left");
        assert_eq!(line(20), "web km-a->km-b 2/3");
        assert_eq!(line(12), "web km-… 2/3");
        for width in 5..=200 {
            let l = line(width);
            assert!(l.chars().count() <= width, "{width}: {l:?}");
        }
    }
}
