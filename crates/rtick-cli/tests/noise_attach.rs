//! `rtick noise --attach TID` on this machine: an application's own
//! polling thread (tests/c/spin.c, SCHED_FIFO pinned to CPU 1), no spinner
//! of rtick's; a higher-priority FIFO thread busy to order on that CPU
//! (tests/c/busy.c) is named with the time its own schedstat says it ran,
//! in the JSON, --trace's rows, --plot and --fail-if's verdict alike.
//! Bad input (a dead thread, a kernel thread, rtick's own) is a one-line
//! usage error. Root, tracefs, two CPUs and a C compiler needed; under CI
//! a skip is a failure.

mod common;
use common::gaps::gap_rows;
use common::tracee::{compile, finish, ready_on_cpu_1, spawn, wait_for_instance};
use common::*;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The CPU the application's thread is pinned to.
const CPU: &str = "1";

fn ready() -> bool {
    ready_on_cpu_1("these tests follow a thread")
}

/// The application: spin.c at FIFO 50 on CPU 1, with its thread id.
struct App(Child, i32);

impl App {
    fn start(exe: &Path) -> App {
        let mut c = Command::new(exe).args([CPU, "50", "60"]).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(c.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let tid = line.trim().parse().unwrap_or_else(|_| panic!("spin printed {line:?}"));
        App(c, tid)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until rtick's trace instance traces: it follows the thread from then on.
fn tracing(c: &Child) {
    wait_for_instance(c);
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn a_higher_priority_thread_is_named_in_the_attached_thread_s_noise() {
    let dir = tempfile::tempdir().unwrap();
    let Some(spin) = compile(dir.path(), "spin", "noise_app") else { return };
    let Some(busy) = compile(dir.path(), "busy", "noise_busy").filter(|_| ready()) else { return };
    let app = App::start(&spin);
    let [out, csv, png] = ["r.json", "t.csv", "p.png"].map(|f| dir.path().join(f));
    let tid = app.1.to_string();
    let files = ["--json", path_str(&out), "--trace", path_str(&csv), "--plot", path_str(&png)];
    let rtick = spawn(
        "noise",
        &[&["--attach", &tid, "-D", "5", "--fail-if", "source:thread noise_busy>1ms"], &files[..]].concat(),
    );
    tracing(&rtick);
    // 2 ms of every 100 ms, 15 times, at FIFO 60: above the application's
    // 50. FIFO from its start (chrt): born SCHED_OTHER, pinned to the
    // spinning application's CPU, it would wait for the application's RT
    // throttling and run its first busy cycle in that throttled stretch,
    // rightly counted as the throttling's (the application could not run).
    let args = ["-f", "60", path_str(&busy), CPU, "fifo", "60", "2000", "100000", "15"];
    let b = Command::new("chrt").args(args).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let o = finish(rtick);
    let s = stdout(&o);
    // --fail-if: the helper's 2 ms runs took the thread's CPU for longer than 1 ms.
    assert_eq!(o.status.code(), Some(3), "{s}\n{}", stderr(&o));
    let text = String::from_utf8_lossy(&b.stdout);
    let (busy_tid, ran) = text.trim().split_once(' ').expect("tid and runtime");
    let ran: i64 = ran.parse().unwrap();
    assert!(ran > 10_000_000, "the helper ran {ran} ns");
    let j = json(&out);
    assert_eq!(j["ended_by"], "duration");
    assert_eq!(j["attached"]["tid"].as_i64(), Some(i64::from(app.1)));
    assert_eq!(j["attached"]["policy"], "SCHED_FIFO 50");
    let cpu = &j["cpus"][0];
    assert_eq!(cpu["cpu"], 1);
    let name = format!("thread noise_busy (pid {busy_tid}, prio 39)");
    let src = cpu["sources"].as_array().unwrap();
    let mine = src.iter().find(|s| s["name"] == name.as_str()).unwrap_or_else(|| panic!("{name} in {src:#?}"));
    // As in tests/noise.rs: its schedstat counts the interrupts inside its
    // run unless IRQ time is accounted apart.
    let (net, nested) = (mine["total_ns"].as_i64().unwrap(), mine["nested_ns"].as_i64().unwrap());
    let kconfig = rtick::system::KernelConfig::read(&rtick::system::SysRoot::default());
    let held = if kconfig.is_some_and(|k| k.is_y("CONFIG_IRQ_TIME_ACCOUNTING")) { net } else { net + nested };
    assert!(
        (held - ran).abs() * 10 <= ran,
        "attributed {net} + {nested} ns, the thread's schedstat says {ran} ns: {src:#?}"
    );
    // Its 15 runs preempted the application (one may be split in two; one
    // that falls in an RT-throttling stretch of the application counts in
    // that stretch, its time still the thread's: CI saw 14).
    assert!(mine["count"].as_u64().unwrap() >= 12, "{mine:#?}");
    // Every gap here has kernel events: none is the hardware's or the host's.
    assert!(src.iter().all(|s| s["kind"] != "hardware_or_host"), "{src:#?}");
    let total: i64 = src.iter().map(|s| s["total_ns"].as_i64().unwrap()).sum();
    assert!(total <= cpu["noise_ns"].as_i64().unwrap() + 1, "sources add up to the noise at most");
    // --trace: a row per gap of the thread, on the CPUs of the JSON, each
    // one's sources adding up to it; the helper's time in them is the JSON's.
    let rows = gap_rows(&csv);
    let (gaps, unattributed) = (cpu["gaps"].as_u64().unwrap(), cpu["unattributed_gaps"].as_u64().unwrap());
    assert!((gaps - unattributed..=gaps).contains(&(rows.len() as u64)), "{} rows, {gaps} gaps", rows.len());
    assert!(rows.iter().all(|r| r.cpu == 1), "{rows:#?}");
    for r in &rows {
        assert_eq!(r.sources.iter().map(|(_, d)| d).sum::<i64>(), r.duration, "{r:#?}");
    }
    let in_rows: i64 = rows.iter().flat_map(|r| &r.sources).filter(|(s, _)| *s == name).map(|(_, d)| d).sum();
    assert_eq!(in_rows, net, "the trace's rows and the JSON agree on {name}");
    let png = std::fs::read(&png).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 1000, "--plot wrote a picture");
    let fail = format!("FAIL longest {name} of CPU 1: ");
    assert!(s.lines().any(|l| l.starts_with(&fail)), "{s}");
    assert!(s.contains(&format!("noise --attach {tid}")) && s.contains("not seen") && s.contains(&name), "{s}");
}

/// Bad input: exit 2, one line, no file, no trace instance.
#[test]
fn a_dead_thread_a_kernel_thread_and_rtick_s_own_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut dead = Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let dead = dead.id().to_string();
    let rtick = env!("CARGO_BIN_EXE_rtick");
    let json = path_str(&out);
    for (args, says) in [
        (vec![rtick, "noise", "--attach", &dead, "--json", json], "no process or thread"),
        (vec![rtick, "noise", "--attach", "2", "--json", json], "is a kernel thread"),
        (vec![rtick, "noise", "--attach", "1", "-a", "1", "--json", json], "cannot be used with"),
        (
            vec![rtick, "noise", "--attach", "1", "--histogram", json],
            "--histogram counts the steps of rtick's spinning loop",
        ),
        (vec!["sh", "-c", &format!("exec {rtick} noise --attach $$ --json {json}")], "is rtick's own process"),
    ] {
        let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
        let err = stderr(&o);
        assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(stdout(&o).is_empty() && !out.exists(), "{args:?}");
    }
}
