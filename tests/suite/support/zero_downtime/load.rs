//! The database's clients while it moves: writers that put a new key per write, each with its own
//! sequence number, and a reader that reads back the latest acknowledged one, all through etcd's
//! HTTP/JSON gateway (`/v3/kv/put`, `/v3/kv/range`) on every member's client address, as a
//! client with all members as endpoints does: round robin, and an endpoint that failed is left
//! alone for a moment. Every request is recorded with its times and outcome; `verify` then reads
//! the whole key range and finds every acknowledged write, or names the ones that are lost.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::sync::watch;

/// Writers running at once; each paces itself to `WRITES_PER_SECOND`.
const WRITERS: usize = 3;
const WRITES_PER_SECOND: u64 = 40;
const READS_PER_SECOND: u64 = 40;
/// A request that takes longer has failed, as far as the client is concerned.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an endpoint that failed is skipped, while others are left.
const ENDPOINT_PAUSE: Duration = Duration::from_secs(1);
const KEY_PREFIX: &str = "seq/";

type Http = HttpClient<HttpConnector, Full<bytes::Bytes>>;

fn key(seq: u64) -> String {
    format!("{KEY_PREFIX}{seq:012}")
}

/// One request, its times measured from the start of the load.
#[derive(Debug, Clone)]
pub struct Request {
    pub seq: u64,
    pub endpoint: usize,
    pub sent: Duration,
    pub done: Duration,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A write acknowledged, or a read that found the acknowledged value.
    Ok,
    /// No answer, or an error answer.
    Failed(String),
    /// A read that did not find a write acknowledged before it was sent: a linearizable read
    /// must see it.
    Stale(String),
}

/// Everything the clients did.
#[derive(Debug, Clone, Default)]
pub struct Records {
    pub writes: Vec<Request>,
    pub reads: Vec<Request>,
    /// How long the load ran.
    pub ran: Duration,
}

struct Shared {
    endpoints: Vec<String>,
    started: Instant,
    next_seq: AtomicU64,
    /// The highest sequence number acknowledged so far.
    latest_acked: AtomicU64,
    acked: AtomicU64,
    round_robin: AtomicUsize,
    /// Per endpoint, until when it is skipped after a failure.
    paused_until: Mutex<Vec<Option<Instant>>>,
    writes: Mutex<Vec<Request>>,
    reads: Mutex<Vec<Request>>,
}

impl Shared {
    /// The next endpoint in turn that is not paused; the one paused longest ago when all are.
    fn pick(&self) -> usize {
        let n = self.endpoints.len();
        let start = self.round_robin.fetch_add(1, Ordering::Relaxed);
        let paused = self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        (0..n)
            .map(|i| (start + i) % n)
            .find(|&i| paused[i].is_none_or(|until| until <= now))
            .unwrap_or_else(|| {
                (0..n)
                    .min_by_key(|&i| paused[i])
                    .expect("at least one endpoint")
            })
    }

    fn judge(&self, endpoint: usize, ok: bool) {
        let mut paused = self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        paused[endpoint] = if ok {
            None
        } else {
            Some(Instant::now() + ENDPOINT_PAUSE)
        };
    }

    fn since_start(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The running clients.
pub struct Load {
    shared: Arc<Shared>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Load {
    /// Starts writing and reading through `endpoints` (`http://host:port` of each member).
    pub fn start(endpoints: Vec<String>) -> Load {
        assert!(!endpoints.is_empty(), "the load needs an endpoint");
        let shared = Arc::new(Shared {
            paused_until: Mutex::new(vec![None; endpoints.len()]),
            endpoints,
            started: Instant::now(),
            next_seq: AtomicU64::new(1),
            latest_acked: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            round_robin: AtomicUsize::new(0),
            writes: Mutex::default(),
            reads: Mutex::default(),
        });
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("database-load".into())
            .spawn({
                let shared = shared.clone();
                move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the load");
                    runtime.block_on(async move {
                        let http: Http = HttpClient::builder(TokioExecutor::new()).build_http();
                        let mut tasks = tokio::task::JoinSet::new();
                        for _ in 0..WRITERS {
                            tasks.spawn(write_loop(shared.clone(), http.clone(), stopped.clone()));
                        }
                        tasks.spawn(read_loop(shared.clone(), http.clone(), stopped.clone()));
                        while tasks.join_next().await.is_some() {}
                    });
                }
            })
            .expect("a thread for the load");
        Load {
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Writes acknowledged so far.
    pub fn acked(&self) -> u64 {
        self.shared.acked.load(Ordering::Relaxed)
    }

    /// Waits until `more` writes beyond those acknowledged now are acknowledged.
    pub fn wait_for_acks(&self, more: u64, limit: Duration) -> Result<(), String> {
        let target = self.acked() + more;
        let deadline = Instant::now() + limit;
        while self.acked() < target {
            if Instant::now() > deadline {
                let last_error = self
                    .shared
                    .writes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .rev()
                    .find_map(|w| match &w.outcome {
                        Outcome::Failed(e) => Some(e.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "none".into());
                return Err(format!(
                    "the database acknowledged {} of {more} writes within {limit:?} (last error: {last_error})",
                    more - (target - self.acked()),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops the clients (requests in flight finish or time out) and returns what they did.
    pub fn stop(mut self) -> Records {
        self.shut_down();
        let take = |m: &Mutex<Vec<Request>>| {
            let mut v = std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()));
            v.sort_by_key(|r| r.sent);
            v
        };
        Records {
            writes: take(&self.shared.writes),
            reads: take(&self.shared.reads),
            ran: self.shared.since_start(),
        }
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A tick every 1/`per_second`, or later if a request took longer; false once stopped.
async fn pace(interval: &mut tokio::time::Interval, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        _ = interval.tick() => true,
        _ = stop.changed() => false,
    }
}

fn interval(per_second: u64) -> tokio::time::Interval {
    let mut interval = tokio::time::interval(Duration::from_micros(1_000_000 / per_second));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval
}

async fn write_loop(shared: Arc<Shared>, http: Http, mut stop: watch::Receiver<bool>) {
    let mut tick = interval(WRITES_PER_SECOND);
    while pace(&mut tick, &mut stop).await {
        let seq = shared.next_seq.fetch_add(1, Ordering::Relaxed);
        let endpoint = shared.pick();
        let sent = shared.since_start();
        let body = json!({"key": BASE64.encode(key(seq)), "value": BASE64.encode(seq.to_string())});
        let outcome = match call(&http, &shared.endpoints[endpoint], "/v3/kv/put", &body).await {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Failed(e),
        };
        shared.judge(endpoint, outcome == Outcome::Ok);
        let done = shared.since_start();
        if outcome == Outcome::Ok {
            shared.latest_acked.fetch_max(seq, Ordering::Relaxed);
            shared.acked.fetch_add(1, Ordering::Relaxed);
        }
        record(
            &shared.writes,
            Request {
                seq,
                endpoint,
                sent,
                done,
                outcome,
            },
        );
    }
}

async fn read_loop(shared: Arc<Shared>, http: Http, mut stop: watch::Receiver<bool>) {
    let mut tick = interval(READS_PER_SECOND);
    while pace(&mut tick, &mut stop).await {
        // Acknowledged before this read is sent: a linearizable read must return it.
        let seq = shared.latest_acked.load(Ordering::Relaxed);
        if seq == 0 {
            continue;
        }
        let endpoint = shared.pick();
        let sent = shared.since_start();
        let body = json!({"key": BASE64.encode(key(seq))});
        let outcome = match call(&http, &shared.endpoints[endpoint], "/v3/kv/range", &body).await {
            Ok(answer) => match values(&answer).as_deref() {
                Ok([(_, value)]) if *value == seq.to_string() => Outcome::Ok,
                Ok([]) => Outcome::Stale(format!("{} is missing", key(seq))),
                Ok(other) => Outcome::Stale(format!("{} reads {other:?}", key(seq))),
                Err(e) => Outcome::Failed(e.clone()),
            },
            Err(e) => Outcome::Failed(e),
        };
        shared.judge(endpoint, !matches!(outcome, Outcome::Failed(_)));
        let done = shared.since_start();
        record(
            &shared.reads,
            Request {
                seq,
                endpoint,
                sent,
                done,
                outcome,
            },
        );
    }
}

fn record(requests: &Mutex<Vec<Request>>, request: Request) {
    requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(request);
}

/// One POST to the gateway; the answer's JSON, or what went wrong in words.
async fn call(http: &Http, endpoint: &str, path: &str, body: &Value) -> Result<Value, String> {
    let request = http::Request::post(format!("{endpoint}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let response = http.request(request).await.map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            text
        })?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|_| format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)))?;
        if !status.is_success() || answer.get("error").is_some() {
            return Err(format!(
                "HTTP {status}: {}",
                answer["message"]
                    .as_str()
                    .or(answer["error"].as_str())
                    .unwrap_or("no message")
            ));
        }
        Ok(answer)
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {REQUEST_TIMEOUT:?}")),
    }
}

/// The (key, value) pairs of a range answer, decoded.
fn values(answer: &Value) -> Result<Vec<(String, String)>, String> {
    let decode = |v: &Value| -> Result<String, String> {
        let text = v.as_str().unwrap_or_default();
        let bytes = BASE64
            .decode(text)
            .map_err(|e| format!("not base64 ({e}): {text}"))?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    };
    answer["kvs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|kv| Ok((decode(&kv["key"])?, decode(&kv["value"])?)))
        .collect()
}

/// What a final read of every key found.
#[derive(Debug, Clone)]
pub struct Verification {
    pub acked: usize,
    /// Acknowledged writes that no member returns: must be none.
    pub lost: Vec<u64>,
    /// Keys whose value is not the one written.
    pub corrupt: Vec<u64>,
    /// Writes that failed as far as the client knows but were applied (allowed).
    pub applied_unacked: usize,
}

/// Reads every key the writers wrote (linearizable reads, through the first endpoint that
/// answers) and compares them with the acknowledged writes.
pub fn verify(endpoints: &[String], records: &Records) -> Result<Verification, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let found = runtime.block_on(read_all(endpoints))?;
    let acked: BTreeSet<u64> = records
        .writes
        .iter()
        .filter(|w| w.outcome == Outcome::Ok)
        .map(|w| w.seq)
        .collect();
    let present: BTreeSet<u64> = found.iter().map(|(seq, _)| *seq).collect();
    Ok(Verification {
        acked: acked.len(),
        lost: acked.difference(&present).copied().collect(),
        corrupt: found
            .iter()
            .filter(|(seq, value)| *value != seq.to_string())
            .map(|(seq, _)| *seq)
            .collect(),
        applied_unacked: present.difference(&acked).count(),
    })
}

async fn read_all(endpoints: &[String]) -> Result<Vec<(u64, String)>, String> {
    let http: Http = HttpClient::builder(TokioExecutor::new()).build_http();
    // The end of the range: the prefix with its last byte raised by one.
    let end = format!("{}0", KEY_PREFIX.trim_end_matches('/'));
    let mut from = KEY_PREFIX.to_string();
    let mut found = Vec::new();
    loop {
        let body = json!({
            "key": BASE64.encode(&from), "range_end": BASE64.encode(&end), "limit": 2000
        });
        let mut answer = Err("no endpoint".to_string());
        for endpoint in endpoints {
            answer = call(&http, endpoint, "/v3/kv/range", &body).await;
            if answer.is_ok() {
                break;
            }
        }
        let answer = answer.map_err(|e| format!("reading back the writes: {e}"))?;
        let page = values(&answer)?;
        let Some((last, _)) = page.last() else {
            return Ok(found);
        };
        from = format!("{last}\0");
        for (key, value) in &page {
            let seq = key
                .strip_prefix(KEY_PREFIX)
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("a key the writers did not write: {key}"))?;
            found.push((seq, value.clone()));
        }
        if answer["more"].as_bool() != Some(true) {
            return Ok(found);
        }
    }
}

/// The figures of one run of the load.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub writes_acked: usize,
    pub writes_failed: usize,
    pub reads_ok: usize,
    pub reads_failed: usize,
    pub stale_reads: Vec<String>,
    /// The longest time during which no write was acknowledged, and when it began.
    pub longest_gap: Duration,
    pub longest_gap_at: Duration,
    /// Periods from a failed write to the next acknowledged one.
    pub error_windows: Vec<(Duration, Duration)>,
}

impl Summary {
    pub fn of(records: &Records) -> Summary {
        let ok = |r: &&Request| r.outcome == Outcome::Ok;
        let mut acks: Vec<Duration> = records.writes.iter().filter(ok).map(|w| w.done).collect();
        acks.sort();
        let (mut longest_gap, mut longest_gap_at) = (Duration::ZERO, Duration::ZERO);
        for pair in acks.windows(2) {
            if pair[1] - pair[0] > longest_gap {
                longest_gap = pair[1] - pair[0];
                longest_gap_at = pair[0];
            }
        }
        // Writes are recorded in the order they were sent; a window opens at the first failure
        // and closes at the first acknowledgement after it.
        let mut error_windows = Vec::new();
        let mut open: Option<Duration> = None;
        for w in &records.writes {
            match (&w.outcome, open) {
                (Outcome::Failed(_), None) => open = Some(w.sent),
                (Outcome::Ok, Some(from)) if w.done > from => {
                    error_windows.push((from, w.done));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(from) = open {
            error_windows.push((from, records.ran));
        }
        Summary {
            writes_acked: records.writes.iter().filter(ok).count(),
            writes_failed: records
                .writes
                .iter()
                .filter(|w| matches!(w.outcome, Outcome::Failed(_)))
                .count(),
            reads_ok: records.reads.iter().filter(ok).count(),
            reads_failed: records
                .reads
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
                .count(),
            stale_reads: records
                .reads
                .iter()
                .filter_map(|r| match &r.outcome {
                    Outcome::Stale(what) => Some(what.clone()),
                    _ => None,
                })
                .collect(),
            longest_gap,
            longest_gap_at,
            error_windows,
        }
    }

    /// Failed requests, writes and reads.
    pub fn failed(&self) -> usize {
        self.writes_failed + self.reads_failed
    }
}
