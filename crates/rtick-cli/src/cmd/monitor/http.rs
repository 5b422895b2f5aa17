//! The monitor's HTTP endpoint: `/metrics` (Prometheus text format, or
//! OpenMetrics when the Accept header asks for it), `/spikes` (JSON), and
//! nothing else; GET and HEAD only, every answer bounded.
//!
//! A fixed pool of [`WORKERS`] threads accepts connections from one
//! listening socket and answers one request per connection; httparse parses
//! the request head. Why not an HTTP server crate: tiny_http, the small one,
//! starts a thread for every concurrent connection, and with measure's
//! mlockall(MCL_FUTURE) each new thread's stack is locked into memory — a
//! hundred concurrent scrapes would lock hundreds of MiB next to the
//! real-time threads. Here concurrent connections wait in the listen
//! backlog, and memory stays what it was at start.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::metrics::Exporter;

/// Threads answering requests.
pub const WORKERS: usize = 2;
/// The largest request head read; a longer one is answered 431.
const MAX_HEAD: usize = 8 << 10;
/// How long a client may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
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

/// Starts the workers; they run until the process ends.
pub fn serve(listener: TcpListener, exporter: Arc<Exporter>) -> Result<()> {
    for i in 0..WORKERS {
        let listener = listener.try_clone().context("sharing the listening socket")?;
        let exporter = Arc::clone(&exporter);
        std::thread::Builder::new()
            .name(format!("rtick-http{i}"))
            .stack_size(WORKER_STACK)
            .spawn(move || loop {
                if let Ok((stream, _)) = listener.accept() {
                    // A client that goes away mid-answer is its own business.
                    let _ = answer_connection(stream, &exporter);
                }
            })
            .context("starting the HTTP threads")?;
    }
    Ok(())
}

/// Reads one request head, answers it, and closes the connection.
fn answer_connection(mut stream: TcpStream, exporter: &Exporter) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let reply = loop {
        if len == buf.len() {
            break Reply::text(431, "request head too large\n");
        }
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            return Ok(());
        }
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..len]) {
            Ok(httparse::Status::Complete(_)) => {
                let accept = req.headers.iter().find(|h| h.name.eq_ignore_ascii_case("accept"));
                let accept = accept.and_then(|h| std::str::from_utf8(h.value).ok());
                break route(req.method.unwrap_or(""), req.path.unwrap_or(""), accept, exporter);
            }
            Ok(httparse::Status::Partial) => continue,
            Err(httparse::Error::TooManyHeaders) => break Reply::text(431, "too many headers\n"),
            Err(_) => break Reply::text(400, "not an HTTP/1 request\n"),
        }
    };
    let head_only = buf.starts_with(b"HEAD ");
    stream.write_all(&reply.head())?;
    if !head_only {
        stream.write_all(reply.body.as_bytes())?;
    }
    // Close gracefully: a body the client still sends (a POST's) would
    // otherwise turn the close into a reset that can swallow the answer.
    stream.shutdown(std::net::Shutdown::Write)?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        if stream.read(&mut sink).map_or(true, |n| n == 0) {
            break;
        }
    }
    Ok(())
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

    fn head(&self) -> Vec<u8> {
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
