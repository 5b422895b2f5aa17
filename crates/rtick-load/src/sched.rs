//! `sched`: pairs of threads passing a message back and forth over a Unix
//! datagram socket pair, as hackbench does with its groups: every message
//! is a wake-up and, on one CPU, a context switch.
//!
//! Datagram sockets because a stream whose peer has gone raises SIGPIPE,
//! which would end rtick; a datagram to a closed peer is an error.

use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::workers::{timed_out, KindCounters, Workers};

/// The longest a blocked end waits before looking at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// The message: small, like hackbench's 100 bytes.
const MESSAGE: usize = 100;

/// Receives one message, or `None` when stopped while waiting.
fn receive(s: &UnixDatagram, buf: &mut [u8], running: impl Fn() -> bool) -> std::io::Result<Option<usize>> {
    loop {
        match s.recv(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if timed_out(&e) && running() => {}
            Err(e) if timed_out(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

pub fn start(w: &mut Workers, workers: usize, counters: &Arc<KindCounters>) -> Result<String> {
    for i in 0..workers {
        let (ping, pong) = UnixDatagram::pair().context("--load sched: socketpair")?;
        for s in [&ping, &pong] {
            s.set_read_timeout(Some(POLL)).context("--load sched: SO_RCVTIMEO")?;
            s.set_write_timeout(Some(POLL)).context("--load sched: SO_SNDTIMEO")?;
        }
        let cpu = w.next_cpu();
        // The initiator sends, waits for the answer, counts both.
        w.spawn(format!("load-sched{i}a"), cpu, counters, move |ctx| {
            let mut buf = [0u8; MESSAGE];
            ctx.ready();
            while ctx.running() {
                ping.send(&buf)?;
                if receive(&ping, &mut buf, || ctx.running())?.is_none() {
                    break;
                }
                ctx.add(2);
            }
            Ok(())
        })?;
        // The other end answers every message.
        w.spawn(format!("load-sched{i}b"), cpu, counters, move |ctx| {
            let mut buf = [0u8; MESSAGE];
            ctx.ready();
            while let Some(n) = receive(&pong, &mut buf, || ctx.running())? {
                match pong.send(&buf[..n]) {
                    Ok(_) => {}
                    // The initiator stopped between its send and our answer.
                    Err(_) if !ctx.running() => break,
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })?;
    }
    Ok(format!("pairs of threads, {MESSAGE}-byte messages over Unix datagram sockets"))
}
