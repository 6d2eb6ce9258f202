//! Ctrl-C for the whole process. Where a command can stop cleanly (a question on the terminal,
//! the migration's loop), it catches Ctrl-C with [`catching`] and stops its own way; anywhere
//! else Ctrl-C ends the process as SIGINT does by default (exit 130 in a shell).
//!
//! One listener serves every catcher. A signal handler, once installed, stays for the life of
//! the process, so the listener itself gives SIGINT its default meaning whenever nobody catches
//! it: a question answered on the terminal must not leave Ctrl-C dead for the rest of the run.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use signal_hook::consts::SIGINT;

use crate::sync::lock;

type Handler = Arc<dyn Fn() + Send + Sync>;

/// Who catches Ctrl-C now, by the id of their [`Catching`].
static CATCHERS: Mutex<Vec<(u64, Handler)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// Whether the listener runs (set once, when the first catcher comes).
static LISTENING: OnceLock<bool> = OnceLock::new();

/// While this lives, Ctrl-C calls its handler instead of ending the process.
#[must_use = "Ctrl-C is caught only while the guard lives"]
pub struct Catching {
    id: u64,
}

impl Drop for Catching {
    fn drop(&mut self) {
        lock(&CATCHERS).retain(|(id, _)| *id != self.id);
    }
}

/// Calls `on_ctrl_c` at each Ctrl-C (from another thread) for as long as the returned guard
/// lives. Where the handler cannot be installed, Ctrl-C keeps its default.
pub fn catching(on_ctrl_c: impl Fn() + Send + Sync + 'static) -> Catching {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lock(&CATCHERS).push((id, Arc::new(on_ctrl_c)));
    listen();
    Catching { id }
}

fn listen() {
    LISTENING.get_or_init(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT]) else {
            return false;
        };
        std::thread::Builder::new()
            .name("ctrl-c".into())
            .spawn(move || {
                for _ in signals.forever() {
                    let catchers: Vec<Handler> =
                        lock(&CATCHERS).iter().map(|(_, h)| h.clone()).collect();
                    if catchers.is_empty() {
                        // Nobody here stops cleanly: end as if no handler had been installed.
                        let _ = signal_hook::low_level::emulate_default_handler(SIGINT);
                    }
                    for catcher in catchers {
                        catcher();
                    }
                }
            })
            .is_ok()
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A SIGINT reaches the catchers alive at the time, and only them.
    #[test]
    fn ctrl_c_reaches_the_catchers_alive_at_the_time() {
        let caught = Arc::new(AtomicUsize::new(0));
        let counted = caught.clone();
        let guard = catching(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        // A catcher dropped before the signal is not called.
        drop(catching(|| panic!("a dropped catcher was called")));
        signal_hook::low_level::raise(SIGINT).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while caught.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "Ctrl-C never reached the catcher"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(guard);
        assert!(lock(&CATCHERS).is_empty(), "a dropped guard still catches");
    }
}
