//! Proof that each mechanism really waits with its kernel interface: under
//! `strace -f`, the system calls of the mechanism table are made between
//! consecutive wake-ups of the measuring thread, and spin makes none.
//!
//! Each call is placed between the two wake-ups around it by its time: the
//! run uses CLOCK_REALTIME, the clock of strace's timestamps, and strace
//! reads its clock while the thread is stopped inside the call — after the
//! previous wake-up's time was read, before the next one's. So the counts
//! are per wait, exact whatever the load: no share of late wake-ups to allow
//! for. Skips where strace is missing (`scripts/setup` installs it; under CI
//! that fails).

mod common;
use common::*;

use std::process::Command;

/// Mechanisms that make no call when the deadline has already passed as the
/// wait begins (a loaded machine does that now and then): at most one call
/// per wait, and some. Every other mechanism calls on every wait.
const NO_CALL_WHEN_LATE: &[&str] = &["hybrid", "ppoll", "pselect", "epoll-pwait2", "usleep", "std-sleep"];

/// strace with nanosecond UNIX timestamps, or why not.
fn strace_usable() -> Result<(), String> {
    let o = Command::new("strace")
        .args(["-qq", "--absolute-timestamps=format:unix,precision:ns", "-e", "trace=none", "true"])
        .output()
        .map_err(|e| format!("strace is not installed (scripts/setup installs it): {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("strace cannot give ns timestamps (6.0 or later needed): {}", stderr(&o).trim()))
    }
}

/// One traced call: (CLOCK_REALTIME ns at entry, name).
fn calls_of(log: &str, tid: i64) -> Vec<(i64, String)> {
    log.lines()
        .filter_map(|l| {
            // "TID SECONDS.NANOSECONDS name(args…", or "TID … <... name resumed>"
            let mut f = l.split_whitespace();
            (f.next()? == tid.to_string()).then_some(())?;
            let (s, ns) = f.next()?.split_once('.')?;
            let name = f.next()?.split_once('(')?.0;
            Some((s.parse::<i64>().ok()? * 1_000_000_000 + ns.parse::<i64>().ok()?, name.to_string()))
        })
        .collect()
}

#[test]
fn each_mechanism_uses_its_system_calls() {
    if let Err(why) = strace_usable() {
        skip(&why, false);
        return;
    }
    let loops = 50;
    // Every call a mechanism makes per wait, plus those that arm the timers,
    // and the mask query that must not come with any wait.
    let mut traced: Vec<&str> = rtick::wait::KINDS.iter().flat_map(|k| k.syscalls.iter().copied()).collect();
    traced.extend([
        "nanosleep",
        "timer_create",
        "timer_settime",
        "setitimer",
        "timerfd_settime",
        "sched_setattr",
        "rt_sigprocmask",
    ]);
    traced.sort_unstable();
    traced.dedup();
    let filter = format!("trace={}", traced.join(","));
    for k in rtick::wait::KINDS.iter().filter(|k| !k.hidden) {
        let dir = tempfile::tempdir().unwrap();
        let (log, j, t) = (dir.path().join("strace.log"), dir.path().join("r.json"), dir.path().join("t.csv"));
        let o = Command::new("strace")
            .args(["-f", "-qq", "--absolute-timestamps=format:unix,precision:ns", "-o", path_str(&log), "-e", &filter])
            .arg(env!("CARGO_BIN_EXE_rtick"))
            .args(["measure", "-m", k.name, "-i", "1ms", "-l", &loops.to_string(), "--hybrid-slack", "100us"])
            .args(["--clock", "realtime"])
            .args(PLAIN)
            .args(["--json", path_str(&j), "--trace", path_str(&t)])
            .output()
            .unwrap();
        ok(&o);
        let j = json(&j);
        if j["results"].as_array().unwrap().is_empty() {
            skip(&format!("{}: unavailable here: {}", k.name, j["unavailable"][0]["reason"]), kernel_lacks(k.name));
            continue;
        }
        // Only the measuring thread's calls: the main thread sleeps while it polls progress.
        let tid = j["results"][0]["tid"].as_i64().unwrap();
        let log = std::fs::read_to_string(&log).unwrap();
        let text: String = log
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(&tid.to_string()))
            .map(|l| format!("{l}\n"))
            .collect();
        let calls = calls_of(&log, tid);
        let woke: Vec<i64> = trace(&t).iter().map(|r| r.4).collect();
        assert_eq!(woke.len(), loops, "{}", k.name);
        // The calls of wait i: after wake-up i − 1, up to wake-up i.
        let per_wait: Vec<Vec<&str>> = woke
            .windows(2)
            .map(|w| calls.iter().filter(|(at, _)| w[0] < *at && *at <= w[1]).map(|(_, n)| n.as_str()).collect())
            .collect();
        let count = |w: &[&str], name: &str| w.iter().filter(|n| **n == name).count();
        for sc in k.syscalls {
            let counts: Vec<usize> = per_wait.iter().map(|w| count(w, sc)).collect();
            if NO_CALL_WHEN_LATE.contains(&k.name) {
                assert!(counts.iter().all(|c| *c <= 1), "{}: at most one {sc} per wait: {counts:?}\n{text}", k.name);
                assert!(counts.contains(&1), "{}: no wait made {sc}:\n{text}", k.name);
            } else {
                assert!(counts.iter().all(|c| *c >= 1), "{}: {sc} in every wait: {counts:?}\n{text}", k.name);
            }
        }
        // The wait is the only call: no signal mask is read or set around it.
        let masks: Vec<usize> = per_wait.iter().map(|w| count(w, "rt_sigprocmask")).collect();
        assert!(masks.iter().all(|c| *c == 0), "{}: rt_sigprocmask in a wait: {masks:?}\n{text}", k.name);
        match k.name {
            "posix-timer" => {
                assert!(text.contains("timer_create(") && text.contains("SIGEV_THREAD_ID"), "{text}");
                assert!(text.contains("timer_settime(") && text.contains("TIMER_ABSTIME"), "{text}");
            }
            "itimer" => assert!(text.contains("setitimer(ITIMER_REAL"), "{text}"),
            "clock_nanosleep" | "hybrid" => assert!(text.contains("TIMER_ABSTIME"), "{text}"),
            "timerfd" | "timerfd-epoll" => assert!(text.contains("TFD_TIMER_ABSTIME"), "{text}"),
            "posix-timer-handler" => {
                assert!(text.contains("timer_settime(") && text.contains("TIMER_ABSTIME"), "{text}");
                // The mask sigsuspend takes is computed when the timer is
                // armed: the waits make no other call. A suspend that ends
                // without the handler (another signal, a ptrace stop of
                // strace's on a loaded machine) is made again, and strace's
                // timestamps, taken by strace, may put a call on the next
                // wait's side of a wake-up: so the count is checked over
                // all the waits, at least one each.
                assert!(
                    per_wait.iter().flatten().all(|c| *c == "rt_sigsuspend"),
                    "posix-timer-handler: only rt_sigsuspend in the waits: {per_wait:?}\n{text}"
                );
                let suspends = per_wait.iter().map(Vec::len).sum::<usize>();
                assert!(
                    suspends >= per_wait.len(),
                    "posix-timer-handler: a suspend in each wait: {per_wait:?}\n{text}"
                );
            }
            "sched-deadline" => assert!(text.contains("SCHED_DEADLINE"), "{text}"),
            "futex" => assert!(text.contains("FUTEX_WAIT_BITSET"), "{text}"),
            "clock_nanosleep-rel" => assert!(!text.contains("TIMER_ABSTIME"), "{text}"),
            "spin" => {
                // Whatever it did before its first wake-up (the start gate
                // sleeps), spin enters the kernel in none of its waits.
                assert!(
                    per_wait.iter().all(|w| w.is_empty()),
                    "spin must not sleep in the kernel: {per_wait:?}\n{text}"
                );
            }
            _ => {}
        }
    }
}
