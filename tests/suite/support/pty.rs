//! The binary on a pseudo-terminal, and what a person at that terminal sees: its output rendered
//! by a terminal emulator (vt100) at a chosen size. Keys go in as a person types them (`\x03`
//! is Ctrl-C, which the terminal turns into SIGINT).
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub struct Term {
    screen: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    reader: Option<JoinHandle<()>>,
    // Kept open for the life of the terminal: closing it hangs the child up.
    _master: Box<dyn MasterPty + Send>,
}

/// How a program is started on the terminal.
#[derive(Clone, Copy)]
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub args: &'a [&'a str],
    pub env: &'a [(&'a str, &'a str)],
    pub cwd: Option<&'a Path>,
    pub cols: u16,
    pub rows: u16,
}

impl Term {
    pub fn spawn(how: Spawn<'_>) -> Term {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: how.rows,
                cols: how.cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pseudo-terminal");
        let mut cmd = CommandBuilder::new(how.program);
        cmd.args(how.args);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        cmd.env_remove("COLUMNS");
        cmd.env_remove("LINES");
        for (k, v) in how.env {
            cmd.env(k, v);
        }
        if let Some(dir) = how.cwd {
            cmd.cwd(dir);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .expect("spawn on the terminal");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("terminal reader");
        let writer = pair.master.take_writer().expect("terminal writer");
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal has rows and columns");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            size(how.rows),
            size(how.cols),
            0,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (screen_in, raw_in) = (screen.clone(), raw.clone());
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends at EOF, or EIO once the child has gone and the terminal is hung up.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen_in.lock().unwrap().process(&buf[..n]);
                raw_in.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Term {
            screen,
            raw,
            child,
            writer,
            reader: Some(reader),
            _master: pair.master,
        }
    }

    /// The screen as text: one line per row, trailing blanks removed, empty rows at the end
    /// dropped.
    pub fn screen(&self) -> String {
        let parser = self.screen.lock().unwrap();
        let (_, cols) = parser.screen().size();
        // Row by row: a line that filled its row is not joined with the next, as
        // `contents()` would.
        parser
            .screen()
            .rows(0, cols.into())
            .map(|row| row.trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_string()
    }

    /// Everything the program wrote, escape sequences included, as text (for failure messages
    /// and for what the screen no longer shows).
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// Waits until the screen satisfies `ready`; panics with the screen after `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {limit:?} waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The rows on screen now that the terminal had to wrap because a line was wider than it:
    /// text that runs to the last column and on into the next row. (indicatif pads the lines
    /// it draws with blanks to the last column, which the terminal also counts as wrapped; no
    /// text is split there, so those rows are not counted.)
    pub fn wrapped(&self) -> Vec<String> {
        let parser = self.screen.lock().unwrap();
        let screen = parser.screen();
        let (_, cols) = screen.size();
        screen
            .rows(0, cols.into())
            .enumerate()
            .filter(|(row, text)| {
                screen.row_wrapped(*row as u16)
                    && text.trim_end().chars().count() >= usize::from(cols.get())
            })
            .map(|(_, text)| text)
            .collect()
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the program to end.
    pub fn finish(mut self, limit: Duration) -> Finished {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let screen = self.screen();
                let _ = self.child.kill();
                panic!("the program did not end within {limit:?}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader ends once the terminal has given it everything.
        let reader = self.reader.take().unwrap();
        let drained = Instant::now() + Duration::from_secs(5);
        while !reader.is_finished() && Instant::now() < drained {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Its own statement: the screen's lock is let go before wrapped() takes it.
        let cursor_hidden = self.screen.lock().unwrap().screen().hide_cursor();
        Finished {
            code: status.exit_code(),
            cursor_hidden,
            wrapped: self.wrapped(),
            screen: self.screen(),
            raw: self.raw(),
        }
    }
}

/// A program that ran to its end on the terminal.
pub struct Finished {
    pub code: u32,
    /// Whether the program left the terminal's cursor hidden.
    pub cursor_hidden: bool,
    /// The rows the terminal had to wrap because a line was wider than it (none, in a
    /// program that lays its output out to the terminal).
    pub wrapped: Vec<String>,
    /// The final screen (see [`Term::screen`]).
    pub screen: String,
    /// Everything it wrote (see [`Term::raw`]).
    pub raw: String,
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// The terminal widths every table is read at.
pub const WIDTHS: [u16; 4] = [80, 100, 120, 200];

/// `program args --color WHEN` run to its end on a terminal `cols` wide.
fn run(how: &Spawn<'_>, cols: u16, when: &str) -> Finished {
    let mut args = how.args.to_vec();
    args.extend(["--color", when]);
    Term::spawn(Spawn {
        args: &args,
        cols,
        ..*how
    })
    .finish(Duration::from_secs(60))
}

/// Runs `program args` at 80, 100, 120 and 200 columns with colour on and off, and checks what
/// people see: each of `rows` on one line, its cells whole and in order; nothing wrapped by the
/// terminal; colour present, and the same screen without it.
pub fn check_at_every_width(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    cwd: &Path,
    rows: &[&[&str]],
) {
    check_at_widths(&WIDTHS, program, args, env, cwd, rows);
}

/// [`check_at_every_width`] at the given widths only: for the cells of columns that a narrower
/// terminal leaves out.
pub fn check_at_widths(
    widths: &[u16],
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    cwd: &Path,
    rows: &[&[&str]],
) {
    let how = Spawn {
        program,
        args,
        env,
        cwd: Some(cwd),
        cols: 80,
        rows: 120,
    };
    for &cols in widths {
        let coloured = run(&how, cols, "always");
        assert!(
            coloured.raw.contains("\u{1b}[1m"),
            "no colour on the terminal at {cols} columns: {:?}",
            coloured.raw
        );
        let plain = run(&how, cols, "never");
        assert!(
            !plain.raw.contains("\u{1b}[1m"),
            "colour with --color never"
        );
        assert!(
            coloured.wrapped.is_empty(),
            "at {cols} columns the terminal wrapped {:?}:\n{}",
            coloured.wrapped,
            coloured.screen
        );
        let seen = coloured.screen;
        // Digits aside: a live report's clocks (a Job's elapsed time) may tick between the two
        // runs without changing where anything stands.
        let layout = |screen: &str| screen.replace(|c: char| c.is_ascii_digit(), "0");
        assert_eq!(
            layout(&seen),
            layout(&plain.screen),
            "at {cols} columns colour changes the layout;\nwith colour:\n{seen}\nwithout:\n{}",
            plain.screen
        );
        for cells in rows {
            let line = seen.lines().find(|l| {
                let mut rest = *l;
                cells.iter().all(|c| match rest.find(c) {
                    Some(at) => {
                        rest = &rest[at + c.len()..];
                        true
                    }
                    None => false,
                })
            });
            assert!(
                line.is_some(),
                "at {cols} columns no line holds {cells:?} whole and in order:\n{seen}"
            );
        }
    }
}

/// `program args` on a terminal `cols` wide, through a shell that writes `[exit N]` after it:
/// on the screen, that mark starts a line of its own only if the program ended its last line.
pub fn run_then_mark(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    cwd: &Path,
    cols: u16,
) -> Finished {
    let mut all = vec!["-c", "\"$0\" \"$@\"; echo \"[exit $?]\""];
    let program = program.to_str().expect("a UTF-8 path");
    all.push(program);
    all.extend(args);
    Term::spawn(Spawn {
        program: Path::new("/bin/sh"),
        args: &all,
        env,
        cwd: Some(cwd),
        cols,
        rows: 120,
    })
    .finish(Duration::from_secs(60))
}

/// The last line of `screen` is the mark of [`run_then_mark`] alone, for exit `code`.
pub fn assert_ends_with_mark(screen: &str, code: i32) {
    let last = screen.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!("[exit {code}]"),
        "the output's last line was not ended:\n{screen}"
    );
}
