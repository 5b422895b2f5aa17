//! `measure --load`, `--load-cmd` and `--phases` on the real binary: every
//! built-in load really loads the measured CPU, and nothing of a load —
//! thread or process — outlives rtick: not at the end of the run, not after
//! SIGINT or SIGTERM, not when the command ignores SIGTERM. Bad values are
//! usage errors that leave no file.
//!
//! The tests take turns (one lock): each compares a CPU's load with and
//! without its own load, which another test's load would blur.

mod common;
use common::*;

use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A hang guard only: far beyond what any machine needs to start a run.
const GUARD: Duration = Duration::from_secs(120);

/// A process as found in /proc: its id and start time (pids are reused).
#[derive(Debug, Clone, PartialEq)]
struct Proc {
    pid: u32,
    start: u64,
    comm: String,
}

/// (state, parent, start time, command name) of a process, from /proc/PID/stat.
fn stat(pid: u32) -> Option<(char, u32, u64, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = s.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields from 3 on follow the command name: state (3), ppid (4), starttime (22).
    Some((f[0].chars().next()?, f[1].parse().ok()?, f[22 - 3].parse().ok()?, comm))
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Every process below `root` (children, their children …).
fn descendants(root: u32) -> Vec<Proc> {
    let table: Vec<(u32, u32, u64, String)> =
        all_pids().into_iter().filter_map(|p| stat(p).map(|(_, pp, st, c)| (p, pp, st, c))).collect();
    let mut found: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, _, start, comm) in table.iter().filter(|t| t.1 == parent) {
            found.push(Proc { pid: *pid, start: *start, comm: comm.clone() });
            parents.push(*pid);
        }
    }
    found
}

/// Whether the very process `p` still runs (a zombie has ended: it only waits to be reaped).
fn alive(p: &Proc) -> bool {
    matches!(stat(p.pid), Some((state, _, start, _)) if start == p.start && state != 'Z')
}

/// Live `sleep` processes whose command line holds `marker` (not rtick's
/// nor sh's, whose command lines hold it too).
fn with_marker(marker: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains(marker) && stat(p).is_some_and(|s| s.0 != 'Z' && s.3 == "sleep")
        })
        .collect()
}

/// The names of a process's threads.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A marker no other process has: `sleep` of 1000.<this test's pid><n> s.
fn marker(n: u32) -> String {
    format!("1000.{}{n}", std::process::id())
}

/// A running rtick that a failing check interrupts (so that it ends its
/// loads) instead of leaving it to run for its hour.
struct Rtick(Option<Child>);

impl Rtick {
    fn child(&self) -> &Child {
        self.0.as_ref().unwrap()
    }
    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Rtick {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            signal(&c, "INT");
            let _ = c.wait();
        }
    }
}

/// rtick measuring with a load whose command's `sleep` carries `marker`,
/// once that sleep runs: rtick, its processes and its thread names then.
fn started(args: &[&str], marker: &str) -> (Rtick, Vec<Proc>, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure"])
        .args(PLAIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while with_marker(marker).is_empty() {
        if t0.elapsed() > GUARD || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("the load command never ran: {}{}", stdout(&o), stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id();
    (Rtick(Some(child)), descendants(pid), thread_names(pid))
}

fn signal(child: &Child, sig: &str) {
    let pid = child.id().to_string();
    let kill = Command::new("sh").args(["-c", "kill -s \"$1\" \"$2\"", "sh", sig, &pid]).status().unwrap();
    assert!(kill.success(), "kill -s {sig} {pid}");
}

/// After rtick has exited: none of its processes runs, nor anything with the marker.
fn nothing_left(procs: &[Proc], marker: &str, o: &Output) {
    let left: Vec<&Proc> = procs.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "still running after rtick: {left:?}\n{}", stdout(o));
    assert_eq!(with_marker(marker), Vec::<u32>::new(), "the load command's sleep survived");
}

/// Ends a run with `sig` while its load runs; checks what was left and how the command ended.
fn interrupt_leaves_nothing(sig: &str, n: u32, cmd_prefix: &str, stopped_with: &[&str], exit_signal: i64) {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let m = marker(n);
    let cmd = format!("{cmd_prefix}sleep {m}");
    let (child, procs, threads) =
        started(&["-D", "1h", "--load", "cpu:1,sched:1,net:1", "--load-cmd", &cmd, "--json", path_str(&j)], &m);
    for t in ["load-cpu0", "load-sched0a", "load-sched0b", "load-net0tx", "load-net0rx", "load-cmd"] {
        assert!(threads.iter().any(|n| n == t), "no thread {t} while loading: {threads:?}");
    }
    assert!(procs.iter().any(|p| p.comm == "sleep"), "the command's processes: {procs:?}");
    signal(child.child(), sig);
    let o = child.output();
    ok(&o);
    assert!(stdout(&o).contains("interrupted after"), "{}", stdout(&o));
    nothing_left(&procs, &m, &o);
    let c = &json(&j)["load"]["command"];
    assert_eq!(c["stopped_with"], serde_json::json!(stopped_with), "{c}");
    assert_eq!((c["exit_code"].as_i64(), c["exit_signal"].as_i64()), (None, Some(exit_signal)), "{c}");
    assert_eq!(c["exited_early_after_ns"], serde_json::Value::Null);
}

#[test]
fn sigint_mid_run_stops_every_load() {
    interrupt_leaves_nothing("INT", 1, "", &["SIGTERM"], 15);
}

#[test]
fn sigterm_mid_run_stops_every_load() {
    interrupt_leaves_nothing("TERM", 2, "", &["SIGTERM"], 15);
}

#[test]
fn a_command_that_ignores_sigterm_gets_sigkill() {
    // sh waits for the sleep (two commands: no exec), and both ignore TERM.
    interrupt_leaves_nothing("INT", 3, "trap '' TERM; ", &["SIGTERM", "SIGKILL"], 9);
}

#[test]
fn a_run_that_ends_by_itself_leaves_nothing() {
    let _s = serial();
    let m = marker(4);
    let (child, procs, _) = started(&["-D", "2", "--load", "timers:1,io:1", "--load-cmd", &format!("sleep {m}")], &m);
    let o = child.output();
    ok(&o);
    nothing_left(&procs, &m, &o);
    let out = stdout(&o);
    assert!(out.contains("load: command: sh -c 'sleep 1000."), "{out}");
    assert!(out.contains("ended by SIGTERM, after rtick sent SIGTERM to its group"), "{out}");
}

#[test]
fn sigint_in_the_loaded_phase_keeps_both_phases() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let m = marker(5);
    let args = ["-m", "clock_nanosleep,timerfd", "--phases", "idle=300ms,loaded=1h", "--load", "cpu:1"];
    let (mut child, procs, _) =
        started(&[&args[..], &["--load-cmd", &format!("sleep {m}"), "--json", path_str(&j)]].concat(), &m);
    // The command starts between the phases: the loaded phase measures once
    // its measuring thread exists again (the idle phase's has ended by then).
    let t0 = Instant::now();
    while !thread_names(child.child().id()).iter().any(|n| n == "rtick-t0") {
        let exited = child.0.as_mut().unwrap().try_wait().unwrap().is_some();
        assert!(t0.elapsed() < GUARD && !exited, "the loaded phase never measured");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Its first wake-ups (1 ms apart): the interrupted mechanism has a row.
    std::thread::sleep(Duration::from_millis(200));
    signal(child.child(), "INT");
    let o = child.output();
    ok(&o);
    nothing_left(&procs, &m, &o);
    let out = stdout(&o);
    assert!(out.contains("phase idle (without the load): ") && out.contains("phase loaded (with the load): "), "{out}");
    let j = json(&j);
    let labels: Vec<(&str, &str)> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["mechanism"].as_str().unwrap(), r["phase"].as_str().unwrap()))
        .collect();
    // Interrupted in the loaded phase's first mechanism: it has rows, the idle phase has all.
    assert_eq!(labels[..3], [("clock_nanosleep", "idle"), ("timerfd", "idle"), ("clock_nanosleep", "loaded")]);
    let phases = j["phases"].as_array().unwrap();
    assert_eq!((phases[0]["interrupted"].as_bool(), phases[1]["interrupted"].as_bool()), (Some(false), Some(true)));
    assert!(j["load"]["kinds"][0]["work"].as_u64().unwrap() > 0);
}

/// CPU 0's figures in a phase of a run: busy and I/O wait, in percent.
fn cpu0(phase: &serde_json::Value) -> (f64, f64) {
    let cpus = phase["cpu_busy"].as_array().unwrap();
    let c = cpus.iter().find(|c| c["cpu"] == 0).expect("CPU 0 in the phase's figures");
    (c["busy_percent"].as_f64().unwrap(), c["iowait_percent"].as_f64().unwrap())
}

/// At or above this, CPU 0 was (nearly) saturated without the load, by
/// something else on the machine: only the load's own share can show.
const SATURATED: f64 = 90.0;
/// Below this in the idle phase, the rise of CPU 0's utilisation is
/// checked: the two phases are separate windows of a shared machine,
/// whose other work varies between them.
const ROOM_FOR_A_RISE: f64 = 70.0;
/// Below this in the idle phase, a busy kind's threads (confined to CPU 0,
/// never waiting) get at least half of it: others want less than half.
const ROOM_FOR_HALF: f64 = 40.0;

/// The least share of CPU 0 a kind's threads take while it runs (their CPU
/// time over the load's life) whatever else runs there: measured 70–98 %
/// for the busy kinds and ~14 % for io and timers:8 with CPU 0 saturated
/// by others; far above a load that idles.
fn least_share(kind: &str) -> f64 {
    match kind {
        "io" | "timers" => 2.0,
        _ => 10.0,
    }
}

fn kind_really_loads(kind: &str) {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(
        &[
            &["measure", "-a", "0", "--load-cpus", "0", "--load", kind, "--phases", "idle=1s,loaded=1s"][..],
            &PLAIN,
            &["--json", path_str(&j)],
        ]
        .concat(),
    );
    ok(&o);
    let j = json(&j);
    let k = &j["load"]["kinds"][0];
    let (name, workers) = kind.split_once(':').map_or((kind, 1.0), |(n, w)| (n, w.parse().unwrap()));
    assert_eq!(k["kind"], name);
    assert_eq!(k["error"], serde_json::Value::Null, "{k}");
    let rate = k["rate_per_s"].as_f64().unwrap();
    assert!(k["work"].as_u64().unwrap() > 0 && rate > 0.0, "{k}");
    assert_eq!(j["load"]["cpus"], serde_json::json!([0]));
    assert_eq!(j["load"]["shares_measured_cpus"], true);
    // The load's own threads ran on CPU 0: a share of it whatever else runs there.
    let share = 100.0 * k["cpu_time_ns"].as_f64().unwrap() / j["load"]["ran_ns"].as_f64().unwrap();
    assert!(share >= least_share(name), "{kind}: its threads took {share:.1}% of CPU 0: {k}");
    let ((idle, idle_io), (loaded, loaded_io)) = (cpu0(&j["phases"][0]), cpu0(&j["phases"][1]));
    let seen = format!("{kind}: CPU 0 {idle:.1}% busy ({idle_io:.1}% I/O wait) without the load, {loaded:.1}% ({loaded_io:.1}%) with it, its threads {share:.1}%: {k}");
    if idle >= SATURATED {
        eprintln!("{seen}: saturated by others, only the load's own share checked");
        return;
    }
    match name {
        // Its waiting for the disk is I/O wait of CPU 0, idle otherwise.
        "io" if idle < ROOM_FOR_A_RISE => assert!(loaded + loaded_io > idle + idle_io, "{seen}"),
        // Each worker sleeps 100 µs (+ 50 µs slack): thousands of wake-ups a second.
        "timers" => assert!(rate / workers > 1000.0, "{seen}"),
        "io" => {}
        _ => {
            if idle < ROOM_FOR_HALF {
                assert!(share >= 50.0, "{seen}");
            }
            if idle < ROOM_FOR_A_RISE {
                assert!(loaded > idle, "{seen}");
            }
        }
    }
    eprintln!("{seen}");
}

#[test]
fn cpu_loads() {
    kind_really_loads("cpu");
}

#[test]
fn memory_loads() {
    kind_really_loads("memory");
}

#[test]
fn io_loads() {
    kind_really_loads("io");
}

#[test]
fn net_loads() {
    kind_really_loads("net");
}

#[test]
fn sched_loads() {
    kind_really_loads("sched");
}

#[test]
fn timers_load() {
    // One sleeper per CPU is a light load, lost in a busy machine's noise:
    // eight make the rise of CPU 0's utilisation plain.
    kind_really_loads("timers:8");
}

#[test]
fn a_command_that_exits_early_is_reported() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(&[&["measure", "-D", "1", "--load-cmd", "exit 3", "--json", path_str(&j)][..], &PLAIN].concat());
    // The run was not under its load: exit 1, after the outputs.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.starts_with("rtick: the load command exited by itself (exit status 3) after "), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(stdout(&o).contains("warning: the load command exited by itself after "), "{}", stdout(&o));
    assert!(stdout(&o).contains("load: command: sh -c 'exit 3': exit status 3\n"), "{}", stdout(&o));
    let c = &json(&j)["load"]["command"];
    assert_eq!((c["exit_code"].as_i64(), c["stopped_with"].as_array().unwrap().len()), (Some(3), 0), "{c}");
    assert!(c["exited_early_after_ns"].as_i64().unwrap() < c["ran_ns"].as_i64().unwrap(), "{c}");
}

/// With --fail-if, a load that failed is a violation (exit 3), though no
/// result row meets a condition.
#[test]
fn a_failed_load_does_not_pass_fail_if() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let args = ["measure", "-D", "0.5", "--load-cmd", "no-such-command-rtick", "--fail-if", "max>1h"];
    let o = rtick(&[&args[..], &PLAIN, &["--json", path_str(&j)]].concat());
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("FAIL the load command exited by itself (exit status 127) after "), "{out}");
    assert!(!out.contains("PASS"), "{out}");
    let g = &json(&j)["gates"];
    assert_eq!((g["passed"].as_bool(), g["violations"].as_array().unwrap().len()), (Some(false), 0), "{g}");
    assert!(g["load_failures"][0].as_str().unwrap().starts_with("the load command exited by itself"), "{g}");
}

/// A command that exits early is not reaped until rtick has ended its
/// group: the zombie `sh` keeps the group's id from being reused, so
/// rtick's SIGTERM cannot reach another process group.
#[test]
fn the_command_is_reaped_only_after_its_group_is_ended() {
    let _s = serial();
    let child = Rtick(Some(
        Command::new(env!("CARGO_BIN_EXE_rtick"))
            .args(["measure", "-D", "3", "--load-cmd", "exit 0"])
            .args(PLAIN)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let pid = child.child().id();
    let zombie_sh = || descendants(pid).into_iter().find(|p| p.comm == "sh" && stat(p.pid).is_some_and(|s| s.0 == 'Z'));
    // The run lasts 3 s: the exited sh shows as a zombie early in it …
    let t0 = Instant::now();
    let zombie = loop {
        if let Some(z) = zombie_sh() {
            break z;
        }
        assert!(t0.elapsed() < Duration::from_millis(2000), "the exited load command was never a zombie");
        std::thread::sleep(Duration::from_millis(5));
    };
    // … and stays one (not reaped by a poll of the command, 20 ms apart).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(zombie_sh(), Some(zombie), "the exited load command was reaped during the run");
    let o = child.output();
    assert_eq!(o.status.code(), Some(1), "an early exit fails the run: {}", stderr(&o));
    assert!(stdout(&o).contains("load: command: sh -c 'exit 0': exit status 0\n"), "{}", stdout(&o));
}

/// `--load-cpus` confines the command too: it prints its own affinity.
#[test]
fn the_command_runs_on_the_load_cpus() {
    let _s = serial();
    // Confined to one CPU already, the command would show CPU 0 without the feature.
    let allowed = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = allowed.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    if !allowed.contains([',', '-']) {
        return skip(&format!("this test process may run on CPU {allowed} only (taskset?)"), false);
    }
    let cmd = "grep Cpus_allowed_list /proc/self/status >&2; exec sleep 100";
    let o = rtick(&[&["measure", "-D", "0.3", "--load-cpus", "0", "--load-cmd", cmd][..], &PLAIN].concat());
    ok(&o);
    assert!(stderr(&o).contains("Cpus_allowed_list:\t0\n"), "{}", stderr(&o));
}

/// A kind's CPU time is counted over the wall time it is divided by: many
/// threads on few CPUs never show more CPU than the CPUs had.
#[test]
fn a_loads_cpu_time_fits_in_its_cpus() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(&[&["measure", "-D", "1", "--load", "timers:200", "--json", path_str(&j)][..], &PLAIN].concat());
    ok(&o);
    let l = &json(&j)["load"];
    let (cpu_ns, ran_ns) = (l["kinds"][0]["cpu_time_ns"].as_f64().unwrap(), l["ran_ns"].as_f64().unwrap());
    let cpus = l["cpus"].as_array().unwrap().len() as f64;
    assert!(cpu_ns > 0.0 && cpu_ns <= ran_ns * cpus, "{cpu_ns} ns of CPU in {ran_ns} ns on {cpus} CPUs: {l}");
}

#[test]
fn a_load_that_cannot_start_is_one_line_and_stops_the_others() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-D", "1", "--load", "cpu:1,io:1", "--json", path_str(&j)])
        .args(PLAIN)
        .env("TMPDIR", dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("rtick: --load io: cannot create a temporary file in "), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(!j.exists());
}

#[test]
fn bad_load_and_phase_values_are_usage_errors_without_files() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    for (args, says) in [
        (&["--load", "gpu"][..], "--load: unknown load 'gpu'"),
        (&["--load", "cpu:0"], "--load: cpu:0: give at least 1 worker"),
        (&["--load", "timers:257"], "--load: timers:257: more than 256 workers"),
        (&["--load", "cpu", "--load-cpus", "99"], "--load-cpus: CPU 99 does not exist"),
        (&["--load", "cpu", "--load-cpus", "x"], "--load-cpus: 'x' is not a CPU list"),
        (&["--load-cpus", "0"], "--load-cpus: confines a load; give --load or --load-cmd too"),
        (&["--load-cmd", " "], "--load-cmd: the command is empty"),
        (&["--phases", "idle,loaded"], "--phases: needs a load"),
        (&["--load", "cpu", "--phases", "loaded,idle"], "--phases: 'loaded,idle' is not the two phases"),
        (&["--load", "cpu", "--phases", "idle=x,loaded"], "--phases: idle: 'x' is not a number"),
        (&["--load", "cpu", "--phases", "idle,loaded", "--explain"], "cannot be used with"),
    ] {
        let o = rtick(&[&["measure", "-D", "1", "--json", path_str(&j)][..], &PLAIN, args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with("rtick: ") && e.contains(says), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(!j.exists(), "{args:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{args:?}: a temporary file left");
    }
}

#[test]
fn sigint_in_the_idle_phase_never_starts_the_load() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let mut child = Rtick(Some(
        Command::new(env!("CARGO_BIN_EXE_rtick"))
            .args(["measure", "--phases", "idle=1h,loaded=1s", "--load", "cpu:1", "--load-cmd", "sleep 1000.5"])
            .args(PLAIN)
            .args(["--json", path_str(&j)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    // The measuring thread (rtick-t0) exists only inside a phase's run: the idle one here.
    let t0 = Instant::now();
    while !thread_names(child.child().id()).iter().any(|n| n == "rtick-t0") {
        let exited = child.0.as_mut().unwrap().try_wait().unwrap().is_some();
        assert!(t0.elapsed() < GUARD && !exited, "rtick never measured");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(child.child(), "INT");
    let o = child.output();
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("load: not started (the run stopped before)"), "{out}");
    let j = json(&j);
    assert!(j["results"].as_array().unwrap().iter().all(|r| r["phase"] == "idle"), "{}", j["results"]);
    assert_eq!((j["phases"][1]["elapsed_ns"].as_i64(), j["load"]["ran_ns"].as_i64()), (Some(0), Some(0)));
    assert_eq!(j["load"]["command"]["pid"], serde_json::Value::Null, "the command never started");
}
