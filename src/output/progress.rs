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
    // The width indicatif draws at is the same terminal's.
    bar.set_style(style(title, extras, || terminal::width().unwrap_or(80)));
    bar.enable_steady_tick(Duration::from_millis(200));
    Progress {
        bar,
        _echo: terminal::echo(false),
    }
}

/// The message over the status line, both within `width() - 1` columns: the last column stays
/// blank, so no text runs to the terminal's edge, where the terminal would join it to the next
/// row (a copy of the screen would read the two lines as one) and a terminal without deferred
/// wrapping would move on a row early.
fn style(
    title: &str,
    extras: impl Fn(&ProgressState) -> Vec<String> + Clone + Send + Sync + 'static,
    width: impl Fn() -> usize + Clone + Send + Sync + 'static,
) -> ProgressStyle {
    let title = title.to_string();
    // The blank after `wide_msg` takes the last column from it.
    ProgressStyle::with_template("{wide_msg} \n{status}")
        .expect("the template is valid")
        .with_key(
            "status",
            move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let len = state.len().unwrap_or(0);
                let room = width().saturating_sub(1);
                let line = status_line(room, &title, state.pos(), len, &extras(state));
                let _ = w.write_str(&line);
            },
        )
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
    use std::num::NonZeroU16;
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    /// A terminal of `cols` columns: indicatif draws into the emulator as into a real one.
    #[derive(Clone)]
    struct Screen(Arc<Mutex<vt100::Parser>>, NonZeroU16);

    impl Screen {
        fn new(cols: u16) -> Self {
            let size = |n| NonZeroU16::new(n).expect("a terminal has rows and columns");
            let parser = vt100::Parser::new(size(10), size(cols), 0);
            Screen(Arc::new(Mutex::new(parser)), size(cols))
        }

        fn feed(&self, bytes: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().process(bytes.as_bytes());
            Ok(())
        }

        /// The rows as drawn, without the blanks at their ends.
        fn rows(&self) -> Vec<String> {
            let parser = self.0.lock().unwrap();
            let rows = parser.screen().rows(0, self.1.get());
            rows.map(|row| row.trim_end().to_string()).collect()
        }
    }

    impl std::fmt::Debug for Screen {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a terminal of {} columns", self.1)
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            self.1.get()
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.feed(&format!("\x1b[{n}A"))
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.feed(&format!("\x1b[{n}B"))
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            self.feed(&format!("\x1b[{n}C"))
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            self.feed(&format!("\x1b[{n}D"))
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.feed(&format!("{s}\r\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.feed(s)
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.feed("\r\x1b[2K")
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A message as wide as the terminal, or wider, never reaches its last column; neither does
    /// the status line, at 80 columns as at 200.
    #[test]
    fn no_line_of_the_display_reaches_the_last_column() {
        for cols in [80u16, 200] {
            let width = usize::from(cols);
            for message_width in [width - 2, width - 1, width, width + 1, 3 * width] {
                let screen = Screen::new(cols);
                let bar = ProgressBar::with_draw_target(
                    Some(3),
                    ProgressDrawTarget::term_like(Box::new(screen.clone())),
                );
                bar.set_style(style("web km-a->km-b", |_| extras(), move || width));
                let message = "m".repeat(message_width);
                bar.set_message(message.clone());
                bar.set_position(2);
                bar.tick();
                let rows = screen.rows();
                let shown = message_width.min(width - 1);
                assert_eq!(rows[0], message[..shown], "{cols}: {rows:?}");
                assert!(rows[1].starts_with("web km-a->km-b ["), "{cols}: {rows:?}");
                for text in &rows {
                    assert!(
                        text.chars().count() < width,
                        "{cols}: {text:?} reaches the edge"
                    );
                }
            }
        }
    }

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
