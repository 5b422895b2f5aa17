//! The monitor's HTTP endpoint: `/metrics` (Prometheus text format, or
//! OpenMetrics or Prometheus protobuf when the Accept header asks for it:
//! [`format`]), `/spikes` (JSON), and nothing else; GET and HEAD only,
//! every answer bounded.
//!
//! hyper (HTTP/1) on a tokio current-thread runtime, in one thread of normal
//! priority started after setup: connections are tasks on the heap, not
//! threads, so measure's mlockall(MCL_FUTURE) locks no stack per client. What
//! a client can hold is bounded: its request head ([`MAX_HEAD`], read within
//! [`HEAD_DEADLINE`], its first byte within [`FIRST_BYTE`]), its connection
//! ([`CONN_DEADLINE`] in all, keep-alive included), and the connections
//! together ([`MAX_CONNS`]: a new one beyond them closes the oldest, so idle
//! or stuck clients never keep a scrape out).

mod format;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Notify;

use super::metrics::Exporter;
use format::Format;

/// The largest request head read (hyper's smallest buffer); a longer one is
/// answered 431.
const MAX_HEAD: usize = 8 << 10;
/// How long a client may take to send its first byte (a scraper sends its
/// request at once; an idle connection is closed).
const FIRST_BYTE: Duration = Duration::from_secs(1);
/// How long a client may take to send a whole request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// How long a connection may last in all, its requests and the writing of
/// their answers included: a client that never reads holds nothing longer.
const CONN_DEADLINE: Duration = Duration::from_secs(10);
/// Connections open at once; a new one beyond them closes the oldest.
const MAX_CONNS: usize = 128;
/// Stack of the HTTP thread: the connections are on the heap.
const STACK: usize = 256 << 10;

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

/// Starts the HTTP thread; it runs until the process ends.
pub fn serve(listener: TcpListener, exporter: Arc<Exporter>) -> Result<()> {
    listener.set_nonblocking(true).context("making the listening socket non-blocking")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("starting the HTTP runtime")?;
    std::thread::Builder::new()
        .name("rtick-http".into())
        .stack_size(STACK)
        .spawn(move || {
            if let Err(e) = runtime.block_on(accept(listener, exporter)) {
                eprintln!("error: rtick monitor's endpoint stopped: {e:#}");
            }
        })
        .context("starting the HTTP thread")?;
    Ok(())
}

/// The open connections, oldest first, each with what closes it.
type Open = Arc<Mutex<BTreeMap<u64, Arc<Notify>>>>;

/// Accepts connections, each served by a task; beyond [`MAX_CONNS`] the
/// oldest is closed. A failing accept (EMFILE: too many open files) is
/// retried after a pause, not at once: the listener stays readable.
async fn accept(listener: TcpListener, exporter: Arc<Exporter>) -> Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener).context("serving the listening socket")?;
    let open: Open = Arc::default();
    for id in 0u64.. {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::ConnectionAborted || e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let close = Arc::new(Notify::new());
        {
            let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
            if open.len() >= MAX_CONNS {
                // notify_one keeps the wake-up for a task not yet waiting.
                open.pop_first().inspect(|(_, oldest)| oldest.notify_one());
            }
            open.insert(id, Arc::clone(&close));
        }
        let (open, exporter) = (Arc::clone(&open), Arc::clone(&exporter));
        // A panicking task ends alone: the runtime and the others go on.
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONN_DEADLINE, until(close.notified(), connection(stream, exporter))).await;
            open.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        });
    }
    Ok(())
}

/// Runs `work` until it ends or `closed` fires.
async fn until(closed: impl Future<Output = ()>, work: impl Future<Output = ()>) {
    let (mut closed, mut work) = (pin!(closed), pin!(work));
    std::future::poll_fn(|cx| {
        if closed.as_mut().poll(cx).is_ready() || work.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        Poll::Pending
    })
    .await
}

/// Serves one connection: its first byte within [`FIRST_BYTE`], then hyper.
async fn connection(stream: tokio::net::TcpStream, exporter: Arc<Exporter>) {
    // peek, not readable(): that may report readiness before any byte.
    if !matches!(tokio::time::timeout(FIRST_BYTE, stream.peek(&mut [0u8])).await, Ok(Ok(1))) {
        return;
    }
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        // Several Accept headers are one list (RFC 9110 §5.3).
        let accept: Vec<&str> = req.headers().get_all(ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect();
        let accept = (!accept.is_empty()).then(|| accept.join(","));
        let reply = route(req.method().as_str(), req.uri().path(), accept.as_deref(), &exporter);
        std::future::ready(Ok::<_, Infallible>(reply.response()))
    });
    // A client that goes away mid-answer is its own business.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_DEADLINE)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// An answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    /// The Allow header (of a 405).
    pub allow: Option<&'static str>,
    pub body: Vec<u8>,
}

impl Reply {
    fn text(status: u16, body: &str) -> Reply {
        Reply { status, content_type: "text/plain; charset=utf-8", allow: None, body: body.into() }
    }

    /// hyper's response (hyper leaves the body out for HEAD, keeping its length).
    fn response(self) -> Response<Full<Bytes>> {
        let mut r = Response::new(Full::new(Bytes::from(self.body)));
        *r.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        if let Some(v) = self.allow {
            r.headers_mut().insert(ALLOW, HeaderValue::from_static(v));
        }
        r
    }
}

/// What a request gets: read-only, whatever it asks.
pub fn route(method: &str, path: &str, accept: Option<&str>, exporter: &Exporter) -> Reply {
    if method != "GET" && method != "HEAD" {
        let mut r = Reply::text(405, "rtick monitor is read-only: GET or HEAD\n");
        r.allow = Some("GET, HEAD");
        return r;
    }
    match path.split('?').next().unwrap_or("") {
        "/metrics" => metrics(accept, exporter),
        "/spikes" => match &exporter.spikes {
            Some(log) => {
                let json = log.lock().unwrap_or_else(|e| e.into_inner()).json();
                Reply { status: 200, content_type: "application/json", allow: None, body: (json + "\n").into_bytes() }
            }
            None => Reply::text(404, "no spike log: start rtick monitor with --spike US\n"),
        },
        "/" => Reply::text(200, "rtick monitor: /metrics (Prometheus, OpenMetrics), /spikes (JSON, with --spike)\n"),
        _ => Reply::text(404, "not found: /metrics or /spikes\n"),
    }
}

/// The exposition, in the format the scraper prefers.
fn metrics(accept: Option<&str>, exporter: &Exporter) -> Reply {
    let format = Format::negotiate(accept);
    match format.encode(&exporter.registry) {
        Ok(body) => Reply { status: 200, content_type: format.content_type(), allow: None, body },
        Err(_) => Reply::text(500, "encoding the metrics failed\n"),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::time::Instant;

    use super::*;

    /// One test at a time: their clients would share the 2 CPUs, and the
    /// memory test measures the whole process.
    static SERIAL: Mutex<()> = Mutex::new(());

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

    /// Until `stop`, writes `bytes` to every socket that takes them (each
    /// non-blocking), reconnecting those the endpoint closed.
    fn keep_writing(addr: SocketAddr, n: usize, first: &'static [u8], bytes: &'static [u8], stop: Arc<AtomicBool>) {
        std::thread::spawn(move || {
            let open = |_| {
                let mut s = TcpStream::connect(addr).unwrap();
                let _ = s.write_all(first);
                s.set_nonblocking(true).unwrap();
                s
            };
            let mut socks: Vec<TcpStream> = (0..n).map(open).collect();
            while !stop.load(Relaxed) {
                for s in &mut socks {
                    if s.write(bytes).is_err_and(|e| e.kind() != ErrorKind::WouldBlock) {
                        *s = open(0);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
    }

    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// 50 idle clients, 50 sending a header line now and then, 50 sending
    /// requests without reading the answers, 50 streaming an endless head:
    /// more than [`MAX_CONNS`], and each scrape still answers at once.
    #[test]
    fn abusive_clients_do_not_hold_up_a_scrape() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let before = rss_kib();
        let stop = Arc::new(AtomicBool::new(false));
        let idle: Vec<_> = (0..50).map(|_| TcpStream::connect(addr).unwrap()).collect();
        keep_writing(addr, 50, b"GET /metrics HTTP/1.1\r\n", b"X-Slow: 1\r\n", Arc::clone(&stop));
        keep_writing(addr, 50, b"", b"GET / HTTP/1.1\r\n\r\n", Arc::clone(&stop));
        keep_writing(addr, 50, b"GET / HTTP/1.1\r\n", &[b'x'; 4096], Arc::clone(&stop));
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..5 {
            let (took, answer) = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
            assert!(took < Duration::from_millis(1500), "a scrape took {took:?}");
            std::thread::sleep(Duration::from_millis(300));
        }
        let grew = rss_kib().saturating_sub(before);
        assert!(grew < 16 << 10, "RSS grew by {grew} KiB");
        stop.store(true, Relaxed);
        drop(idle);
    }

    /// 16 clients streaming an endless head, reconnecting when closed: the
    /// heads are not kept beyond [`MAX_HEAD`], memory stays flat (it grew
    /// by 12 MiB a client a second before).
    #[test]
    fn endless_heads_do_not_grow_memory() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let stop = Arc::new(AtomicBool::new(false));
        let before = rss_kib();
        keep_writing(addr, 16, b"GET / HTTP/1.1\r\n", &[b'x'; 65536], Arc::clone(&stop));
        std::thread::sleep(Duration::from_secs(3));
        let grew = rss_kib().saturating_sub(before);
        stop.store(true, Relaxed);
        assert!(grew < 16 << 10, "RSS grew by {grew} KiB");
    }

    /// An idle connection is closed after [`FIRST_BYTE`].
    #[test]
    fn an_idle_connection_is_closed_after_a_second() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = Instant::now();
        assert_eq!(s.read(&mut [0u8; 16]).unwrap_or(0), 0);
        let took = t.elapsed();
        assert!(took >= FIRST_BYTE && took < FIRST_BYTE + Duration::from_millis(700), "closed after {took:?}");
    }

    /// A burst of scrapes: every one is answered, in full.
    #[test]
    fn a_burst_of_scrapes_is_answered_in_full() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let threads: Vec<_> = (0..MAX_CONNS / 2)
            .map(|_| std::thread::spawn(move || ask(addr, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n").1))
            .collect();
        for t in threads {
            let answer = t.join().unwrap();
            assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("(JSON, with --spike)\n"), "{answer}");
        }
    }

    /// The head deadline is one for the whole head, not one a read: a
    /// client that sends a header line every 300 ms is closed after it.
    #[test]
    fn a_trickling_head_is_closed_at_its_deadline() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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

    /// HEAD: the head alone, with the body's length.
    #[test]
    fn head_gets_the_head_alone() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let (_, answer) = ask(addr, "HEAD / HTTP/1.1\r\nConnection: close\r\n\r\n");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let head = head.to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200 ok") && head.contains("content-length: 80"), "{head}");
        assert_eq!(body, "");
        let (_, answer) = ask(addr, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(answer
            .ends_with("\r\n\r\nrtick monitor: /metrics (Prometheus, OpenMetrics), /spikes (JSON, with --spike)\n"));
    }

    /// Read-only: POST is 405 naming the methods allowed; other paths 404.
    #[test]
    fn post_is_refused_and_other_paths_are_not_found() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let addr = start();
        let (_, answer) = ask(addr, "POST /metrics HTTP/1.1\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
        let head = answer.to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 405") && head.contains("allow: get, head"), "{answer}");
        let (_, answer) = ask(addr, "GET /x HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    }
}
