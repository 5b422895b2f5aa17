//! Ctrl-C and SIGTERM: the summary so far is printed, output files are
//! complete, and settings are restored.
//!
//! The signal is sent once rtick is known to be measuring, never after a
//! guessed delay: its header line (printed after the signal handler is
//! installed) has come on stdout, and trace rows have come through the
//! `--trace` FIFO (written only while wake-ups are recorded).

mod common;
use common::*;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What the reader threads report while rtick runs.
#[derive(Debug)]
enum Seen {
    Header,
    TraceRows,
    /// stdout closed: rtick has exited.
    Exited,
}

/// Longest wait for a readiness event: a hang guard only, far beyond what
/// any machine needs (the first mechanism alone runs for an hour).
const GUARD: Duration = Duration::from_secs(120);

fn interrupt_with(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (j, t, h) = (dir.path().join("r.json"), dir.path().join("t.csv"), dir.path().join("h.txt"));
    assert!(Command::new("mkfifo").arg(&t).status().unwrap().success());
    let (tx, events) = mpsc::channel();
    // rtick opens the FIFO before measuring, and its trace writer fills it
    // while wake-ups are recorded; drained to the end so that no row is lost.
    let fifo = {
        let (t, tx) = (t.clone(), tx.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(t).unwrap();
            let mut all = Vec::new();
            let mut buf = [0u8; 1 << 16];
            loop {
                let n = f.read(&mut buf).unwrap();
                if n == 0 {
                    break String::from_utf8(all).unwrap();
                }
                if all.is_empty() {
                    let _ = tx.send(Seen::TraceRows);
                }
                all.extend_from_slice(&buf[..n]);
            }
        })
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-m", "clock_nanosleep,posix-timer", "-t", "2", "-i", "100us", "-D", "1h"])
        .args(["--json", path_str(&j), "--trace", path_str(&t), "--histogram", path_str(&h)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = {
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            let mut text = String::new();
            for line in stdout.lines() {
                let line = line.unwrap();
                if line.starts_with("rtick ") && line.contains(" measure: ") {
                    let _ = tx.send(Seen::Header);
                }
                text.push_str(&line);
                text.push('\n');
            }
            let _ = tx.send(Seen::Exited);
            text
        })
    };
    let (mut header, mut rows) = (false, false);
    while !(header && rows) {
        match events.recv_timeout(GUARD) {
            Ok(Seen::Header) => header = true,
            Ok(Seen::TraceRows) => rows = true,
            ended => {
                let _ = child.kill();
                let o = child.wait_with_output().unwrap();
                panic!("rtick never got to measuring (header {header}, trace rows {rows}, {ended:?}): {}", stderr(&o));
            }
        }
    }
    let pid = child.id().to_string();
    let kill = Command::new("sh").args(["-c", "kill -s \"$1\" \"$2\"", "sh", signal, &pid]).status().unwrap();
    assert!(kill.success(), "kill -s {signal} {pid}");
    let o = child.wait_with_output().unwrap();
    let trace_text = fifo.join().unwrap();
    let stdout = out.join().unwrap();
    assert!(o.status.success(), "rtick failed ({:?}):\n{stdout}\n{}", o.status.code(), stderr(&o));
    assert!(stdout.contains("interrupted after"), "{stdout}");
    let j = json(&j);
    assert_eq!(j["interrupted"], true, "a run that ends by itself is not interrupted");
    let results = j["results"].as_array().unwrap();
    // Trace rows came, so wake-ups were recorded: the summary so far has them.
    let total: u64 = results.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert!(total > 0 && results.len() <= 4, "{results:?}");
    for r in results {
        let m = r["mechanism"].as_str().unwrap();
        assert!(["clock_nanosleep", "posix-timer"].contains(&m), "{m}");
        let row = stdout.lines().find(|l| l.split_whitespace().take(2).eq([m, &r["thread"].to_string()]));
        assert!(row.is_some_and(|l| l.split_whitespace().nth(3) == Some(&r["count"].to_string())), "{stdout}");
    }
    let rows = trace_rows(&trace_text);
    assert_eq!(rows.len() as u64, total, "trace rows = count");
    let hist = std::fs::read_to_string(&h).unwrap();
    assert!(hist.contains("# Max Latencies:"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtick-tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn sigint_writes_complete_files() {
    interrupt_with("INT");
}

#[test]
fn sigterm_writes_complete_files() {
    interrupt_with("TERM");
}

#[test]
fn dma_latency_is_released_at_exit() {
    let Some(before) = rtick::rt::DmaLatency::current() else {
        let exists = std::path::Path::new("/dev/cpu_dma_latency").exists();
        skip("/dev/cpu_dma_latency is not readable here", !exists);
        return;
    };
    let o = rtick(&["measure", "-l", "50", "--dma-latency", "0", "--no-mlock", "--policy", "other", "-q"]);
    if o.status.code() == Some(1) && stderr(&o).contains("cpu_dma_latency") {
        skip(&format!("no permission to write /dev/cpu_dma_latency: {}", stderr(&o)), false);
        return;
    }
    ok(&o);
    assert_eq!(rtick::rt::DmaLatency::current(), Some(before), "the request ends with the process");
}
