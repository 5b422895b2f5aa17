//! `net`: a loopback TCP stream per worker, a sender thread and a receiver
//! thread — the network stack, softirqs and socket wake-ups without a NIC.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::workers::{timed_out, KindCounters, Workers};

/// One write; the receiver reads into a buffer of the same size.
pub(crate) const BLOCK: usize = 64 << 10;
/// The longest a blocked end waits before looking at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// A connected pair on 127.0.0.1, each end with bounded waits.
fn pair() -> std::io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let tx = TcpStream::connect(listener.local_addr()?)?;
    let (rx, _) = listener.accept()?;
    for s in [&tx, &rx] {
        s.set_read_timeout(Some(POLL))?;
        s.set_write_timeout(Some(POLL))?;
    }
    Ok((tx, rx))
}

pub fn start(w: &mut Workers, workers: usize, counters: &Arc<KindCounters>) -> Result<String> {
    for i in 0..workers {
        let (mut tx, mut rx) = pair().context("--load net: connecting a loopback TCP stream")?;
        let cpu = w.next_cpu();
        w.spawn(format!("load-net{i}tx"), cpu, counters, move |ctx| {
            let block = vec![0xA5u8; BLOCK];
            ctx.ready();
            while ctx.running() {
                // Send with MSG_NOSIGNAL (std): a closed peer is an error, not SIGPIPE.
                match tx.write(&block) {
                    Ok(_) => {}
                    Err(e) if timed_out(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            let _ = tx.shutdown(Shutdown::Write);
            Ok(())
        })?;
        w.spawn(format!("load-net{i}rx"), cpu, counters, move |ctx| {
            let mut buf = vec![0u8; BLOCK];
            ctx.ready();
            while ctx.running() {
                match rx.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => ctx.add(n as u64),
                    Err(e) if timed_out(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })?;
    }
    Ok(format!("loopback TCP, {} KiB writes", BLOCK >> 10))
}
