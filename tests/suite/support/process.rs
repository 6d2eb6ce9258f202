//! Long-running processes a test starts (the controller, `schema-diff --watch`): a free port
//! for what they serve, one GET of it, signals, and waiting for the exit.
use std::io::{Read, Write};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// A port of 127.0.0.1 that nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 GET of `path` at `addr` (`host:port`) on a connection that then closes: the
/// whole response (status line, headers, body), or `None` when nothing listens yet.
pub fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// Sends `child` `signal` (a name as `kill -s` takes it).
pub fn signal(child: &Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {signal} failed");
}

/// The exit status of `child`, which must come within `limit` of `cause`; `log` says what the
/// process said when it does not.
pub fn exit_within(
    child: &mut Child,
    limit: Duration,
    cause: &str,
    log: impl Fn() -> String,
) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < limit,
            "the process did not exit within {limit:?} of {cause}\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Random points (when to kill a process) from a seed that is printed, so that a failure can
/// be replayed: `KM_KILL_SEED=<seed>` draws the same points again.
pub struct KillPoints {
    state: u64,
}

impl KillPoints {
    /// Seeded from `KM_KILL_SEED`, else from the clock; says the seed on stderr.
    pub fn seeded() -> KillPoints {
        let seed = std::env::var("KM_KILL_SEED")
            .ok()
            .map(|s| s.parse().expect("KM_KILL_SEED is a number"))
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("random kill seed: {seed} (KM_KILL_SEED={seed} replays it)");
        KillPoints { state: seed | 1 }
    }

    /// A number in `low..=high` (xorshift: enough to spread points, and the same for a seed).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        low + self.state % (high - low + 1)
    }
}
