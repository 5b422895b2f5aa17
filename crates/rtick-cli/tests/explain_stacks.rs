//! `rtick measure --explain`: each spike carries the kernel stack where its
//! wake-up was due, named; and without named addresses (kptr_restrict=2)
//! one line says so while the spikes are explained as before. `rtick
//! attach`: stacks are taken from the first late wait on, never for a
//! program whose waits are never late. Root and tracefs needed (a C
//! compiler for attach's); under CI a skip is a failure.

mod common;
use common::stacks::{frames, function, urandom_reader, KptrRestrict};
use common::tracee::{finish, periodic, ready, spawn};
use common::*;

use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// The tests of this file one at a time: one of them changes a system setting.
static SERIAL: Mutex<()> = Mutex::new(());

/// The last CPU this process may use (the tests pin rtick there).
fn cpu() -> usize {
    *rtick::info::allowed_cpus().unwrap().last().unwrap()
}

/// `rtick measure --explain` of `cycles` clock_nanosleep wake-ups on `cpu`,
/// its `extra` options, and its JSON.
fn measure(cpu: usize, cycles: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let cpu = cpu.to_string();
    let mut args = vec!["measure", "-m", "clock_nanosleep", "-l", cycles, "-a", &cpu, "-q", "--explain"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", j.to_str().unwrap()]);
    let o = rtick(&args);
    ok(&o);
    (stdout(&o), json(&j))
}

#[test]
fn a_spike_held_up_by_a_read_in_the_kernel_shows_the_function_it_was_in() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let cpu = cpu();
    let (tid, stop, reader) = urandom_reader(cpu);
    let (out, j) = measure(cpu, "1000", &["--explain-top", "30"]);
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let e = &j["explain"];
    assert!(e.get("stacks_unavailable").is_none(), "{e}");
    let spikes = e["results"][0]["spikes"].as_array().unwrap();
    assert_eq!(spikes.len(), 30, "{out}");
    // Every spike is a timer's wake-up: each has the stack of its expiry,
    // the timer interrupt's frames first. Not quite every one: spikes of
    // 1–2 ms where the host stalled the vCPU inside the interrupt (IRQ
    // delay or return to user of a millisecond) were seen with their
    // expiry but no stack record after it, 3 or 4 in 30 under load (why is
    // not known yet).
    let with: Vec<&serde_json::Value> = spikes.iter().filter(|s| !frames(s).is_empty()).collect();
    assert!(with.len() * 4 >= spikes.len() * 3, "{} of {} spikes have a stack: {out}", with.len(), spikes.len());
    for s in &with {
        assert!(frames(s).iter().any(|f| function(f) == "hrtimer_interrupt"), "{s}");
    }
    // Those the reader held up were in its read.
    let reader = format!("rtick-urandom:{tid}");
    let held: Vec<&&serde_json::Value> =
        with.iter().filter(|s| frames(s).iter().any(|f| function(f) == "get_random_bytes_user")).collect();
    assert!(!held.is_empty(), "no spike's stack in get_random_bytes_user: {out}");
    assert!(
        held.iter().any(|s| s["line"].as_str().unwrap().contains(&reader)),
        "no spike in get_random_bytes_user blamed on {reader}: {out}"
    );
    // On the terminal: a few frames of the interrupted context under the spike's line.
    let lines: Vec<&str> = out.lines().collect();
    let shown = lines
        .windows(2)
        .any(|w| w[0].contains(&reader) && w[1].starts_with("    stack: ") && w[1].contains("get_random_bytes_user"));
    assert!(shown, "{out}");
    assert!(!lines.iter().any(|l| l.contains("stack: ") && l.contains("hrtimer_interrupt")), "{out}");
}

#[test]
fn hidden_kernel_addresses_are_one_line_and_the_spikes_are_explained_still() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let before = std::fs::read_to_string(KptrRestrict::PATH).unwrap();
    let (out, j) = {
        let _restrict = KptrRestrict::set("2");
        measure(cpu(), "500", &[])
    };
    assert_eq!(std::fs::read_to_string(KptrRestrict::PATH).unwrap(), before, "kptr_restrict restored");
    let why = "no kernel stacks: /proc/kallsyms shows every address as 0 (kernel.kptr_restrict is 2";
    let said: Vec<&str> = out.lines().filter(|l| l.contains("kernel stacks")).collect();
    assert!(said.len() == 1 && said[0].contains(why), "{out}");
    let e = &j["explain"];
    assert!(e["stacks_unavailable"].as_str().unwrap().contains("kptr_restrict is 2"), "{e}");
    let spikes = e["results"][0]["spikes"].as_array().unwrap();
    assert_eq!(spikes.len(), 5, "{out}");
    for s in spikes {
        assert!(!s["cause"].as_str().unwrap().is_empty() && frames(s).is_empty(), "{s}");
    }
    assert!(!out.contains("    stack: "), "{out}");
}

/// `rtick attach` for `secs` to tests/c/periodic.c as `name` on `cpu`:
/// `cycles` waits of `period_us` at SCHED_FIFO 50, each thread's
/// `top` worst explained; its output and its JSON (`None`: skipped).
fn attach_loop(
    cpu: usize,
    name: &str,
    (cycles, period_us): (u32, u32),
    secs: &str,
    top: &str,
) -> Option<(String, serde_json::Value)> {
    let dir = tempfile::tempdir().unwrap();
    let exe = periodic(dir.path(), name)?;
    let out = dir.path().join("loop.txt");
    let (c, cycles, period) = (cpu.to_string(), cycles.to_string(), period_us.to_string());
    let mut prog = std::process::Command::new("taskset")
        .args(["-c", &c, path_str(&exe), path_str(&out), &cycles, &period, "fifo"])
        .spawn()
        .expect("taskset starts the loop");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let j = dir.path().join("a.json");
    let o =
        finish(spawn("attach", &[&prog.id().to_string(), "-D", secs, "--explain-top", top, "--json", path_str(&j)]));
    let _ = prog.kill();
    let _ = prog.wait();
    ok(&o);
    Some((stdout(&o), json(&j)))
}

/// A loop whose waits a `/dev/urandom` reader on its CPU makes late again
/// and again: the stack trigger is set from its first late wait on, and
/// the waits explained after carry the stack of the reader's read; one
/// without a stack because the trigger was not set yet says so.
#[test]
fn attach_takes_stacks_once_the_waits_run_late() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let cpu = cpu();
    let (tid, stop, reader) = urandom_reader(cpu);
    let run = attach_loop(cpu, "rtick-lazy-late", (4000, 1000), "3", "20");
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let Some((out, j)) = run else { return };
    assert!(j["stacks_armed_ns"].as_i64().unwrap() > 0 && j["stacks_armed_times"].as_u64().unwrap() >= 1, "{j}");
    let spikes = j["threads"][0]["spikes"].as_array().unwrap();
    assert_eq!(spikes.len(), 20, "{out}");
    let reader = format!("rtick-urandom:{tid}");
    let held: Vec<&serde_json::Value> =
        spikes.iter().filter(|s| frames(s).iter().any(|f| function(f) == "get_random_bytes_user")).collect();
    assert!(held.iter().any(|s| s["line"].as_str().unwrap().contains(&reader)), "{out}");
    for s in spikes {
        let missing = s.get("stack_missing").and_then(|m| m.as_str());
        assert!(frames(s).is_empty() || missing.is_none(), "{s}");
        assert!(
            missing.is_none_or(|m| m.starts_with("not taken (stacks are armed from the first late wait on)")),
            "{s}"
        );
    }
    assert!(out.contains("kernel stacks taken for ") && out.contains("    stack: "), "{out}");
}

/// A program whose waits are never late (each of its 20 waits explained,
/// none a new record of a full list): the stack trigger is never set, no
/// wait has a stack, and each explained one says why.
#[test]
fn attach_takes_no_stack_of_a_program_whose_waits_are_never_late() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let Some((out, j)) = attach_loop(cpu(), "rtick-lazy-calm", (30, 50_000), "1", "50") else { return };
    assert_eq!((j["stacks_armed_ns"].as_i64(), j["stacks_armed_times"].as_u64()), (Some(0), Some(0)), "{j}");
    let spikes = j["threads"][0]["spikes"].as_array().unwrap();
    assert!(spikes.len() >= 10, "{out}");
    for s in spikes {
        assert!(frames(s).is_empty(), "{s}");
        if s["cause"].is_string() {
            assert_eq!(s["stack_missing"], "not taken (stacks are armed from the first late wait on)", "{s}");
        }
    }
    assert!(!out.contains("kernel stacks taken"), "{out}");
}
