//! `rtick noise` on this machine: a SCHED_FIFO thread of higher priority
//! than the spinner, busy to order on the measured CPU (tests/c/busy.c),
//! is named with the time its own schedstat says it ran; TLB shootdowns
//! made to order from CPU 0 (tests/c/shootdown.c) are counted as
//! call-function IPIs; a FIFO spinner under RT throttling sees its ~50 ms
//! gaps named as throttling; Ctrl-C ends a run with its summary and
//! complete files (--json, --trace, --histogram, --plot), which agree;
//! --fail-if exits 3 when a condition holds; bad input is a one-line
//! usage error. Root, tracefs, two CPUs and a C compiler needed; under CI
//! a skip is a failure. The runs take turns: two spinners on one CPU would
//! measure each other.

mod common;
use common::cgroup::ChildCgroup;
use common::gaps::gap_rows;
use common::tracee::{compile, finish, ready_on_cpu_1, spawn};
use common::*;
use rtick::cgroup::task_path;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The measured CPU.
const CPU: &str = "1";

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn ready() -> bool {
    ready_on_cpu_1("these tests measure")
}

/// tests/c/busy.c compiled into `dir` (its name is the thread's comm).
fn busy(dir: &Path) -> Option<PathBuf> {
    compile(dir, "busy", "noise_busy")
}

fn noise(args: &[&str]) -> Child {
    spawn("noise", args)
}

/// Waits until rtick's spinner runs (its thread is named for its CPU).
fn spinning(c: &Child) {
    let tasks = PathBuf::from(format!("/proc/{}/task", c.id()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let names = std::fs::read_dir(&tasks).into_iter().flatten().flatten();
        if names
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .any(|n| n.trim() == "rtick-noise-1")
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("rtick's spinner did not start within 30 s");
}

/// The sources of the one CPU of a run file.
fn sources(j: &serde_json::Value) -> Vec<serde_json::Value> {
    j["cpus"][0]["sources"].as_array().expect("sources").clone()
}

#[test]
fn a_higher_priority_thread_is_named_with_the_time_it_ran() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = busy(dir.path()).filter(|_| ready()) else { return };
    let (out, csv) = (dir.path().join("r.json"), dir.path().join("t.csv"));
    // The helper runs 2 ms at a time: a gate at 1 ms on its longest fails the run.
    let gate = "source:thread noise_busy>1ms";
    let rtick = noise(&[
        "-a",
        CPU,
        "-p",
        "50",
        "-D",
        "5",
        "--json",
        path_str(&out),
        "--trace",
        path_str(&csv),
        "--fail-if",
        gate,
    ]);
    spinning(&rtick);
    // 2 ms of every 100 ms, 15 times, at FIFO 60: above the spinner's 50;
    // in a cgroup of its own (else in this test's).
    let cgroup = ChildCgroup::for_culprits("rtick-test-busy");
    let args = [CPU, "fifo", "60", "2000", "100000", "15"];
    let b = match &cgroup {
        Some(cg) => cg.command(&exe, &args).output(),
        None => Command::new(&exe).args(args).output(),
    }
    .unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let in_cgroup = match &cgroup {
        Some(cg) => Some(cg.path.clone()),
        None => task_path(&std::fs::read_to_string("/proc/self/cgroup").unwrap()),
    };
    let o = finish(rtick);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let text = String::from_utf8_lossy(&b.stdout);
    let (tid, ran) = text.trim().split_once(' ').expect("tid and runtime");
    let (tid, ran): (i64, i64) = (tid.parse().unwrap(), ran.parse().unwrap());
    assert!(ran > 10_000_000, "the helper ran {ran} ns");
    let j = json(&out);
    assert_eq!(j["ended_by"], "duration");
    let name = format!("thread noise_busy (pid {tid}, prio 39)");
    let src = sources(&j);
    let mine = src.iter().find(|s| s["name"] == name.as_str()).unwrap_or_else(|| panic!("{name} in {src:#?}"));
    assert_eq!(mine["kind"], "thread");
    assert_eq!(mine["cgroup"].as_str(), in_cgroup.as_deref(), "{mine:#?}");
    // Without IRQ_TIME_ACCOUNTING (this VM) its schedstat counts the
    // interrupts inside its run as its own; rtick counts them apart, in nested_ns.
    let (net, nested) = (mine["total_ns"].as_i64().unwrap(), mine["nested_ns"].as_i64().unwrap());
    let kconfig = rtick::system::KernelConfig::read(&rtick::system::SysRoot::default());
    let irq_time_apart = kconfig.is_some_and(|k| k.is_y("CONFIG_IRQ_TIME_ACCOUNTING"));
    let held = if irq_time_apart { net } else { net + nested };
    assert!((held - ran).abs() * 10 <= ran, "attributed {net} + {nested} ns, the thread's schedstat says {ran} ns");
    assert!(nested >= 0 && net > 0, "{mine:#?}");
    let shown = in_cgroup.as_ref().map_or_else(|| format!("{name} "), |path| format!("{name} in {path} "));
    assert!(stdout(&o).contains(&shown), "{}", stdout(&o));
    let fail = format!("FAIL longest {name} of CPU 1: ");
    assert!(
        stdout(&o).lines().any(|l| l.starts_with(&fail) && l.ends_with("> 1000 µs (source:threadnoise_busy>1ms)")),
        "{}",
        stdout(&o)
    );
    // The trace's rows, streamed, hold the same time for it as the summary.
    let rows = gap_rows(&csv);
    let in_rows: i64 = rows.iter().flat_map(|r| &r.sources).filter(|(s, _)| *s == name).map(|(_, d)| d).sum();
    assert_eq!(in_rows, net, "the trace's rows and the JSON agree on {name}");
}

#[test]
fn an_rt_spinner_s_throttled_time_is_named_rt_throttling() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = busy(dir.path()).filter(|_| ready()) else { return };
    let rt_runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    if rt_runtime.trim() == "-1" {
        skip("RT throttling is off here (sched_rt_runtime_us = -1)", false);
        return;
    }
    // A normal task that always wants CPU 1: throttling gives it the CPU
    // (with or without the kernel's fair server).
    let mut hog =
        Command::new(&exe).args([CPU, "other", "0", "100000", "100000", "100"]).stdout(Stdio::null()).spawn().unwrap();
    let out = dir.path().join("r.json");
    let gate = "source:RT throttling>1s";
    let o = finish(noise(&["-a", CPU, "-p", "50", "-D", "2.5", "--json", path_str(&out), "--fail-if", gate]));
    let _ = hog.kill();
    let _ = hog.wait();
    ok(&o);
    assert!(
        stdout(&o).contains("PASS no CPU (1) meets a --fail-if condition (source:RTthrottling>1s)"),
        "{}",
        stdout(&o)
    );
    let j = json(&out);
    let src = sources(&j);
    let throttled = src.iter().find(|s| s["kind"] == "rt_throttling").unwrap_or_else(|| panic!("{src:#?}"));
    // sched_rt_runtime_us 950000 of 1 s: 50 ms a second go to the others.
    assert!(throttled["total_ns"].as_i64().unwrap() >= 20_000_000, "{throttled:#?}");
    let largest = &j["cpus"][0]["largest_gaps"][0];
    assert!(largest["length_ns"].as_i64().unwrap() >= 10_000_000, "{largest:#?}");
    assert_eq!(largest["sources"][0][0], "RT throttling", "{largest:#?}");
    assert!(src.iter().all(|s| s["kind"] != "thread" || s["max_ns"].as_i64().unwrap() < 10_000_000), "{src:#?}");
}

#[test]
fn ctrl_c_ends_the_run_with_its_summary_and_a_complete_file() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let [out, csv, hist, png] = ["r.json", "t.csv", "h.txt", "p.png"].map(|f| dir.path().join(f));
    let files = ["--json", path_str(&out), "--trace", path_str(&csv), "--histogram", path_str(&hist)];
    let rtick = noise(&[&["-a", CPU, "--plot", path_str(&png), "--fail-if", "max>1h"], &files[..]].concat());
    spinning(&rtick);
    std::thread::sleep(Duration::from_millis(500));
    Command::new("kill").args(["-INT", &rtick.id().to_string()]).status().unwrap();
    let o = finish(rtick);
    // A partial run does not pass --fail-if; its files are written all the same.
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).ends_with("FAIL the run was interrupted: a partial run does not pass --fail-if\n"),
        "{}",
        stdout(&o)
    );
    let j = json(&out);
    assert_eq!(j["ended_by"], "interrupted");
    let c = &j["cpus"][0];
    let figure = |k: &str| c[k].as_i64().unwrap_or_else(|| panic!("{k} in {c:#?}"));
    assert!(figure("runtime_ns") > 0);
    assert!(stdout(&o).contains("note: interrupted"), "{}", stdout(&o));
    // --trace: a row per gap, each one's sources adding up to it.
    let rows = gap_rows(&csv);
    let (gaps, unattributed) = (figure("gaps"), figure("unattributed_gaps"));
    let threshold = j["threshold_ns"].as_i64().unwrap();
    assert!(rows.len() as i64 <= gaps && rows.len() as i64 + unattributed >= gaps, "{} rows, {c:#?}", rows.len());
    for r in &rows {
        assert_eq!(r.cpu, 1);
        assert!(r.duration > threshold, "{r:?}");
        assert_eq!(r.sources.iter().map(|s| s.1).sum::<i64>(), r.duration, "{r:?}");
        assert_eq!(Some(&r.main), r.sources.first().map(|s| &s.0), "{r:?}");
    }
    assert!(rows.windows(2).all(|w| w[0].start + w[0].duration <= w[1].start), "in order, apart");
    if unattributed == 0 {
        assert_eq!(rows.iter().map(|r| r.duration).sum::<i64>(), figure("noise_ns"));
    }
    // --histogram, read back as oslat's tooling reads it: every loop step in a bucket.
    let h = oslat_histogram(&std::fs::read_to_string(&hist).unwrap());
    assert_eq!(h["Core"], ["1"]);
    assert_eq!(h["Counter Freq"], ["1000"]);
    let buckets: Vec<u64> = (1..=32).map(|i| h[&format!("{i:03} (us)")][0].parse().unwrap()).collect();
    assert_eq!(buckets.iter().sum::<u64>() as i64, figure("iterations"));
    if gaps > 0 {
        assert_eq!(h["Maximum"][0].parse::<i64>().unwrap(), figure("max_gap_ns") / 1000 + 1);
    }
    assert_eq!(h["Duration"][0], format!("{:.3}", figure("runtime_ns") as f64 / 1e9));
    // --plot: a whole PNG.
    let png = std::fs::read(&png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.ends_with(&[0xae, 0x42, 0x60, 0x82]), "a complete PNG");
}

#[test]
fn tlb_shootdowns_from_cpu_0_are_counted_as_call_function_ipis() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "shootdown", "noise_shootdown").filter(|_| ready()) else { return };
    let out = dir.path().join("r.json");
    let before = ipis(1);
    let rtick = noise(&["-a", CPU, "-p", "50", "-D", "3.5", "--json", path_str(&out)]);
    spinning(&rtick);
    // On CPU 1 at FIFO 60 (above the spinner), 2 ms of every 20 ms for 2 s,
    // reading pages that CPU 0 unmaps again and again.
    let during = ipis(1);
    let z = Command::new(&exe).args([CPU, "0", "60", "2000", "20000", "100"]).output().unwrap();
    assert!(z.status.success(), "{}", String::from_utf8_lossy(&z.stderr));
    let shootdowns = ipis(1).1 - during.1;
    let o = finish(rtick);
    ok(&o);
    let calls = ipis(1).0 - before.0;
    assert!(shootdowns >= 100, "the helper made {shootdowns} TLB shootdowns on CPU 1 (/proc/interrupts)");
    let src = sources(&json(&out));
    let counted: i64 = src
        .iter()
        .filter(|s| s["kind"] == "vector" && s["name"].as_str().is_some_and(|n| n.starts_with("call_function")))
        .map(|s| s["count"].as_i64().unwrap())
        .sum();
    // Each shootdown interrupts the helper, inside a gap of the spinner;
    // rtick cannot count more than the kernel delivered.
    assert!(counted * 2 >= shootdowns, "{counted} call-function IPIs named, {shootdowns} shootdowns: {src:#?}");
    assert!(counted <= calls, "{counted} named, the kernel's count over the run: {calls}");
    // Their sender: the helper's zapping thread, on CPU 0, flushing the TLB.
    let zapper: i64 = String::from_utf8_lossy(&z.stdout).split_whitespace().nth(2).unwrap().parse().unwrap();
    let tlb = src.iter().find(|s| s["kind"] == "vector" && s["top_sender"]["function"] == "flush_tlb_func");
    let top = &tlb.unwrap_or_else(|| panic!("no call-function IPI sent to flush the TLB: {src:#?}"))["top_sender"];
    assert_eq!(
        (top["cpu"].as_i64(), top["pid"].as_i64(), top["comm"].as_str()),
        (Some(0), Some(zapper), Some("noise_shootdown")),
        "{top:#}"
    );
    let name = format!("(flush_tlb_func) from CPU 0 task noise_shootdown:{zapper}");
    assert_eq!(top["name"], name.as_str());
    assert!(top["count"].as_u64().unwrap() * 2 >= top["named"].as_u64().unwrap(), "the most of those named: {top:#}");
    // The table names it too.
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.lines().any(|l| l.contains(" IPI (flush_tlb_func) from CPU 0 task noise_shootdown:")), "{text}");
}

/// CPU `cpu`'s function-call and TLB-shootdown interrupts so far (/proc/interrupts' CAL and TLB rows).
fn ipis(cpu: usize) -> (i64, i64) {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap();
    let row = |name: &str| -> i64 {
        let l = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name} in {text}"));
        l.split_whitespace().nth(1 + cpu).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{l}"))
    };
    (row("CAL:"), row("TLB:"))
}

/// oslat's summary: each `LABEL:` with its values (one per CPU; the unit or note after them dropped).
fn oslat_histogram(text: &str) -> std::collections::HashMap<String, Vec<String>> {
    text.lines()
        .filter_map(|l| l.split_once(":\t"))
        .map(|(label, rest)| {
            let rest = rest.split(" (").next().unwrap();
            (label.trim().to_string(), rest.split_whitespace().map(str::to_string).collect())
        })
        .collect()
}

/// Bad input: exit 2, one line, no file, no trace instance.
#[test]
fn bad_input_is_one_line_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let online = rtick::info::online_cpus();
    let offline = online.to_string();
    for args in [
        vec!["--threshold", "0"],
        vec!["-D", "0"],
        vec!["-p", "0"],
        vec!["-p", "100"],
        vec!["-a", &offline],
        vec!["-a", "1-0x"],
        vec!["--fail-if", "max"],
        vec!["--fail-if", "sorce:local_timer>1us"],
        vec!["--fail-if", "noise>x%"],
        vec!["--no-attribution", "--fail-if", "source:local_timer>50us"],
        vec!["--histogram", "h.txt", "--histogram-buckets", "3"],
        vec!["--histogram", "h.txt", "--histogram-buckets", "1025"],
        vec!["--histogram-buckets", "8"],
        vec!["--plot", "p.txt"],
        vec!["--trace", "/nonexistent/t.csv"],
    ] {
        let c = Command::new(env!("CARGO_BIN_EXE_rtick"))
            .current_dir(dir.path())
            .arg("noise")
            .args(&args)
            .args(["--json", path_str(&out)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtick starts");
        let o = finish(c);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: no file");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{args:?}: no file");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // A CPU that exists but is not allowed to rtick.
    let o = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_rtick"), "noise", "-a", "1", "--json", path_str(&out)])
        .output()
        .expect("taskset runs (util-linux)");
    let err = stderr(&o);
    assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("CPU 1 is not allowed"), "{err}");
    assert!(!out.exists());
}
