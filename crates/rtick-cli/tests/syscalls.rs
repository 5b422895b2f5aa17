//! Proof that each mechanism really waits with its kernel interface: the
//! system calls in the mechanism table appear under `strace -f` once per
//! wait, and spin makes none (it burns its CPU instead). Skips, saying so,
//! where strace is missing (`.ci/run` installs it).

mod common;
use common::*;

use std::process::Command;

fn strace_available() -> bool {
    Command::new("strace").arg("-V").output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn each_mechanism_uses_its_system_calls() {
    if !strace_available() {
        eprintln!("SKIPPED: strace is not installed (apt-get install strace)");
        return;
    }
    let loops = 50;
    // Every call a mechanism makes per wait, plus those that arm the timers.
    let mut calls: Vec<&str> = rtick::wait::KINDS.iter().flat_map(|k| k.syscalls.iter().copied()).collect();
    calls.extend(["nanosleep", "timer_create", "timer_settime", "setitimer", "timerfd_settime", "sched_setattr"]);
    calls.sort_unstable();
    calls.dedup();
    let filter = format!("trace={}", calls.join(","));
    for k in rtick::wait::KINDS.iter().filter(|k| !k.hidden) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("strace.log");
        let j = dir.path().join("r.json");
        let o = Command::new("strace")
            .args(["-f", "-qq", "-o", path_str(&log), "-e", &filter])
            .arg(env!("CARGO_BIN_EXE_rtick"))
            .args(["measure", "-m", k.name, "-i", "1ms", "-l", &loops.to_string(), "--hybrid-slack", "100us"])
            .args(PLAIN)
            .args(["--json", path_str(&j)])
            .output()
            .unwrap();
        ok(&o);
        // Only the measuring thread's calls: the main thread sleeps while it polls progress.
        let j = json(&j);
        if j["results"].as_array().unwrap().is_empty() {
            eprintln!("SKIPPED {}: unavailable here: {}", k.name, j["unavailable"][0]["reason"]);
            continue;
        }
        let tid = j["results"][0]["tid"].as_i64().unwrap();
        let text: String = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(&tid.to_string()))
            .map(|l| format!("{l}\n"))
            .collect();
        // "TID name(args…" — the call's exact name, not a longer one ending in it.
        let count = |name: &str| {
            text.lines()
                .filter(|l| l.split_whitespace().nth(1).is_some_and(|c| c.starts_with(&format!("{name}("))))
                .count()
        };
        // One call per wait — except where the deadline had already passed
        // when the wait began (a hybrid or a timeout mechanism then makes
        // none): on a loaded machine a few may, hence nine in ten.
        let least = loops * 9 / 10;
        for sc in k.syscalls {
            assert!(count(sc) >= least, "{}: expected ≥ {least} {sc} calls, saw {}:\n{text}", k.name, count(sc));
        }
        match k.name {
            "posix-timer" => {
                assert!(text.contains("timer_create(") && text.contains("SIGEV_THREAD_ID"), "{text}");
                assert!(text.contains("timer_settime(") && text.contains("TIMER_ABSTIME"), "{text}");
            }
            "itimer" => assert!(text.contains("setitimer(ITIMER_REAL"), "{text}"),
            "clock_nanosleep" | "hybrid" => assert!(text.contains("TIMER_ABSTIME"), "{text}"),
            "timerfd" | "timerfd-epoll" => assert!(text.contains("TFD_TIMER_ABSTIME"), "{text}"),
            "posix-timer-handler" => {
                assert!(text.contains("timer_settime(") && text.contains("TIMER_ABSTIME"), "{text}")
            }
            "sched-deadline" => assert!(text.contains("SCHED_DEADLINE"), "{text}"),
            "futex" => assert!(text.contains("FUTEX_WAIT_BITSET"), "{text}"),
            "clock_nanosleep-rel" => assert!(!text.contains("TIMER_ABSTIME"), "{text}"),
            "spin" => {
                let waits = ["clock_nanosleep", "nanosleep", "rt_sigtimedwait"].iter().map(|s| count(s)).sum::<usize>();
                // A few sleeps at the start gate, none per wait.
                assert!(waits < 10, "spin must not sleep in the kernel:\n{text}");
            }
            _ => {}
        }
    }
}
