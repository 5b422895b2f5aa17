//! The monitor's HTTP endpoint: `/metrics` (Prometheus text format, or
//! OpenMetrics when the Accept header asks for it), `/spikes` (JSON), and
//! nothing else; GET and HEAD only, every answer bounded.
//!
//! One thread accepts connections and reads their request heads, all at
//! once with poll(2) on non-blocking sockets; each connection has one
//! deadline for its whole head ([`HEAD_DEADLINE`]), after which it is
//! closed, so idle or slow clients hold no thread. Complete requests go to
//! a fixed pool of [`WORKERS`] threads, which encode the answer and write
//! it, again within one deadline. httparse parses the request head. Why
//! not an HTTP server crate: tiny_http, the small one, starts a thread for
//! every concurrent connection, and with measure's mlockall(MCL_FUTURE)
//! each new thread's stack is locked into memory — a hundred concurrent
//! scrapes would lock hundreds of MiB next to the real-time threads. Here
//! the threads are made at start, and memory stays what it was.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::event::{poll, PollFd, PollFlags, Timespec};

use super::metrics::Exporter;

/// Threads answering requests.
pub const WORKERS: usize = 2;
/// The largest request head read; a longer one is answered 431.
const MAX_HEAD: usize = 8 << 10;
/// How long a client may take to send its whole request head, from its
/// connection (a scraper sends it in one packet).
const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// How long a client may take to read the whole answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// Connections whose heads are being read at once; more wait in the listen
/// backlog until one is answered or reaches its deadline.
const MAX_PENDING: usize = 64;
/// Complete requests waiting for a worker; beyond this the reading thread
/// waits for one (a burst of scrapes queues, as in the listen backlog).
const QUEUE: usize = 4 * WORKERS;
/// Stack of a worker: the encoding is on the heap.
const WORKER_STACK: usize = 256 << 10;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds the endpoint's address: before any setting changes, so that a second
/// instance fails at once naming the port.
pub fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| match e.kind() {
        ErrorKind::AddrInUse => anyhow::anyhow!(
            "--listen {addr}: port {} is in use (another rtick monitor?); stop it or give another --listen",
            addr.port()
        ),
        ErrorKind::AddrNotAvailable => {
            anyhow::anyhow!(
                "--listen {addr}: no interface of this machine has that address; give one it has, e.g. 127.0.0.1:{}",
                addr.port()
            )
        }
        ErrorKind::PermissionDenied => {
            anyhow::anyhow!("--listen {addr}: port {} needs privilege (below 1024); give a higher port", addr.port())
        }
        _ => anyhow::Error::new(e).context(format!("--listen {addr}: cannot listen")),
    })
}

/// Starts the reading thread and the workers; they run until the process ends.
pub fn serve(listener: TcpListener, exporter: Arc<Exporter>) -> Result<()> {
    listener.set_nonblocking(true).context("making the listening socket non-blocking")?;
    let (jobs, queue) = sync_channel::<Job>(QUEUE);
    let queue = Arc::new(Mutex::new(queue));
    for i in 0..WORKERS {
        let (queue, exporter) = (Arc::clone(&queue), Arc::clone(&exporter));
        std::thread::Builder::new()
            .name(format!("rtick-http{i}"))
            .stack_size(WORKER_STACK)
            .spawn(move || work(&queue, &exporter))
            .context("starting the HTTP threads")?;
    }
    std::thread::Builder::new()
        .name("rtick-http".into())
        .stack_size(WORKER_STACK)
        .spawn(move || read_heads(&listener, &jobs))
        .context("starting the HTTP threads")?;
    Ok(())
}

/// A complete request, or the error answer its head earned.
struct Job {
    stream: TcpStream,
    request: std::result::Result<Request, Reply>,
}

struct Request {
    method: String,
    path: String,
    accept: Option<String>,
}

/// A connection whose head is being read.
struct Pending {
    stream: TcpStream,
    buf: Vec<u8>,
    deadline: Instant,
}

/// The reading thread: accepts, reads every head as its bytes come, hands
/// complete ones to the workers, closes those past their deadline.
fn read_heads(listener: &TcpListener, jobs: &SyncSender<Job>) {
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        let now = Instant::now();
        let wait = pending.iter().map(|p| p.deadline.saturating_duration_since(now)).min();
        let wait = wait.unwrap_or(Duration::from_secs(60));
        let ready: Vec<bool> = {
            let room = if pending.len() < MAX_PENDING { PollFlags::IN } else { PollFlags::empty() };
            let mut fds = vec![PollFd::new(listener, room)];
            fds.extend(pending.iter().map(|p| PollFd::new(&p.stream, PollFlags::IN)));
            let timeout = Timespec::try_from(wait).unwrap_or(Timespec { tv_sec: 1, tv_nsec: 0 });
            if poll(&mut fds, Some(&timeout)).is_err() {
                continue; // EINTR: poll again.
            }
            fds.iter().map(|f| !f.revents().is_empty()).collect()
        };
        // Newest last: reading in reverse keeps the indices of the rest.
        for i in (0..pending.len()).rev().filter(|&i| ready[i + 1]) {
            if let Some(request) = read_some(&mut pending[i]) {
                let stream = pending.swap_remove(i).stream;
                // Err: the workers are gone, and so is the process.
                let _ = jobs.send(Job { stream, request });
            }
        }
        if ready[0] && pending.len() < MAX_PENDING {
            accept_all(listener, &mut pending);
        }
        // After the reads: a head that came in time is answered even when
        // this thread waited for a worker meanwhile.
        let now = Instant::now();
        pending.retain(|p| p.deadline > now);
    }
}

/// Accepts every waiting connection. When accept fails otherwise than for
/// want of one (EMFILE: too many open files), waits a little: the listener
/// stays readable, and retrying at once would spin.
fn accept_all(listener: &TcpListener, pending: &mut Vec<Pending>) {
    while pending.len() < MAX_PENDING {
        match listener.accept() {
            Ok((stream, _)) if stream.set_nonblocking(true).is_ok() => {
                pending.push(Pending { stream, buf: Vec::new(), deadline: Instant::now() + HEAD_DEADLINE });
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::ConnectionAborted => {}
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        }
    }
}

/// Reads what the connection has sent; `Some` once its head is complete
/// (or bad). A connection closed before its head was complete, or failed,
/// gets no answer: its deadline is set to now, so it is dropped.
fn read_some(p: &mut Pending) -> Option<std::result::Result<Request, Reply>> {
    let mut chunk = [0u8; 2048];
    loop {
        match p.stream.read(&mut chunk) {
            Ok(0) => {
                // Closed for writing: the head may be complete (a half-close).
                let request = parse_head(&p.buf);
                if request.is_none() {
                    p.deadline = Instant::now();
                }
                return request;
            }
            Ok(n) => p.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                p.deadline = Instant::now();
                return None;
            }
        }
    }
    parse_head(&p.buf)
}

/// The request in a head, `None` while the head is incomplete.
fn parse_head(buf: &[u8]) -> Option<std::result::Result<Request, Reply>> {
    if buf.len() >= MAX_HEAD {
        return Some(Err(Reply::text(431, "request head too large\n")));
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {
            let accept = req.headers.iter().find(|h| h.name.eq_ignore_ascii_case("accept"));
            Some(Ok(Request {
                method: req.method.unwrap_or("").to_string(),
                path: req.path.unwrap_or("").to_string(),
                accept: accept.and_then(|h| std::str::from_utf8(h.value).ok()).map(str::to_string),
            }))
        }
        Ok(httparse::Status::Partial) => None,
        Err(httparse::Error::TooManyHeaders) => Some(Err(Reply::text(431, "too many headers\n"))),
        Err(_) => Some(Err(Reply::text(400, "not an HTTP/1 request\n"))),
    }
}

/// A worker: answers the queued requests, one after the other.
fn work(queue: &Mutex<Receiver<Job>>, exporter: &Exporter) {
    loop {
        let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        // A client that goes away mid-answer is its own business.
        let _ = answer(job, exporter);
    }
}

/// Writes the answer, head and body in one write, within one deadline, and
/// closes the connection.
fn answer(Job { mut stream, request }: Job, exporter: &Exporter) -> std::io::Result<()> {
    let (reply, head_only) = match request {
        Ok(r) => (route(&r.method, &r.path, r.accept.as_deref(), exporter), r.method == "HEAD"),
        Err(reply) => (reply, false),
    };
    stream.set_nonblocking(false)?;
    let deadline = Instant::now() + WRITE_DEADLINE;
    let bytes = reply.bytes(head_only);
    let mut written = 0;
    while written < bytes.len() {
        stream.set_write_timeout(Some(left(deadline)?))?;
        match stream.write(&bytes[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // Close gracefully: a body the client still sends (a POST's) would
    // otherwise turn the close into a reset that can swallow the answer.
    stream.shutdown(std::net::Shutdown::Write)?;
    let deadline = Instant::now() + Duration::from_millis(200);
    let mut sink = [0u8; 4096];
    loop {
        stream.set_read_timeout(Some(left(deadline)?))?;
        if stream.read(&mut sink).map_or(true, |n| n == 0) {
            return Ok(());
        }
    }
}

/// The time left before `deadline`, an error once it has passed.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// An answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub extra: Option<(&'static str, &'static str)>,
    pub body: String,
}

impl Reply {
    fn text(status: u16, body: &str) -> Reply {
        Reply { status, content_type: "text/plain; charset=utf-8", extra: None, body: body.into() }
    }

    /// The head, and the body unless `head_only`, in one buffer.
    fn bytes(&self, head_only: bool) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            431 => "Request Header Fields Too Large",
            _ => "Internal Server Error",
        };
        let mut h = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        if let Some((k, v)) = self.extra {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        if !head_only {
            h.push_str(&self.body);
        }
        h.into_bytes()
    }
}

/// What a request gets: read-only, whatever it asks.
pub fn route(method: &str, path: &str, accept: Option<&str>, exporter: &Exporter) -> Reply {
    if method != "GET" && method != "HEAD" {
        let mut r = Reply::text(405, "rtick monitor is read-only: GET or HEAD\n");
        r.extra = Some(("Allow", "GET, HEAD"));
        return r;
    }
    match path.split('?').next().unwrap_or("") {
        "/metrics" => metrics(accept, exporter),
        "/spikes" => match &exporter.spikes {
            Some(log) => {
                let json = log.lock().unwrap_or_else(|e| e.into_inner()).json();
                Reply { status: 200, content_type: "application/json", extra: None, body: json + "\n" }
            }
            None => Reply::text(404, "no spike log: start rtick monitor with --spike US\n"),
        },
        "/" => Reply::text(200, "rtick monitor: /metrics (Prometheus, OpenMetrics), /spikes (JSON, with --spike)\n"),
        _ => Reply::text(404, "not found: /metrics or /spikes\n"),
    }
}

/// The exposition, in the format the scraper accepts.
fn metrics(accept: Option<&str>, exporter: &Exporter) -> Reply {
    use prometheus_client::encoding::{prometheus_text, text};
    let mut body = String::new();
    let openmetrics = accept.is_some_and(|a| a.contains("application/openmetrics-text"));
    let (encoded, content_type) = if openmetrics {
        (text::encode(&mut body, &exporter.registry), OPENMETRICS)
    } else {
        (prometheus_text::encode(&mut body, &exporter.registry), prometheus_text::CONTENT_TYPE)
    };
    match encoded {
        Ok(()) => Reply { status: 200, content_type, extra: None, body },
        Err(_) => Reply::text(500, "encoding the metrics failed\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> SocketAddr {
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let exporter = Exporter { registry: prometheus_client::registry::Registry::default(), spikes: None };
        serve(listener, Arc::new(exporter)).unwrap();
        addr
    }

    /// Sends `request`, reads the whole answer; also how long that took.
    fn ask(addr: SocketAddr, request: &str) -> (Duration, String) {
        let t = Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        (t.elapsed(), answer)
    }

    /// More idle and slow clients than workers: each scrape still answers
    /// at once (before, the workers waited on them, 5 s a read).
    #[test]
    fn idle_and_slow_clients_do_not_hold_up_a_scrape() {
        let addr = start();
        let idle: Vec<_> = (0..2 * WORKERS).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slow: Vec<_> = (0..2 * WORKERS)
            .map(|_| {
                let stop = Arc::clone(&stop);
                let mut s = TcpStream::connect(addr).unwrap();
                std::thread::spawn(move || {
                    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = s.write_all(b"X-Slow: 1\r\n");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..3 {
            let (took, answer) = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
            assert!(took < Duration::from_millis(1500), "a scrape took {took:?}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        slow.into_iter().for_each(|h| h.join().unwrap());
        drop(idle);
    }

    /// A burst of scrapes, more than the connections read at once and the
    /// queue: every one is answered, in full (they wait, none is refused).
    #[test]
    fn a_burst_of_scrapes_is_answered_in_full() {
        let addr = start();
        let threads: Vec<_> =
            (0..2 * MAX_PENDING).map(|_| std::thread::spawn(move || ask(addr, "GET / HTTP/1.1\r\n\r\n").1)).collect();
        for t in threads {
            let answer = t.join().unwrap();
            assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("(JSON, with --spike)\n"), "{answer}");
        }
    }

    /// The head deadline is one for the whole head, not one a read: a
    /// client that sends a header line every 300 ms is closed after it.
    #[test]
    fn a_trickling_head_is_closed_at_its_deadline() {
        let addr = start();
        let mut s = TcpStream::connect(addr).unwrap();
        let t = Instant::now();
        s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        while s.write_all(b"X-Slow: 1\r\n").is_ok() && t.elapsed() < Duration::from_secs(6) {
            std::thread::sleep(Duration::from_millis(300));
        }
        let took = t.elapsed();
        assert!(took >= HEAD_DEADLINE && took < HEAD_DEADLINE + Duration::from_millis(1500), "closed after {took:?}");
    }

    /// HEAD is the method httparse parsed (here after a leading empty line,
    /// which HTTP allows): the head alone, with the body's length.
    #[test]
    fn head_gets_the_head_alone() {
        let addr = start();
        let (_, answer) = ask(addr, "\r\nHEAD / HTTP/1.1\r\n\r\n");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK") && head.contains("Content-Length: 80"), "{head}");
        assert_eq!(body, "");
        let (_, answer) = ask(addr, "GET / HTTP/1.1\r\n\r\n");
        assert!(answer
            .ends_with("\r\n\r\nrtick monitor: /metrics (Prometheus, OpenMetrics), /spikes (JSON, with --spike)\n"));
    }
}
