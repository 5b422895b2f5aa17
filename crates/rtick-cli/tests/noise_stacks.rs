//! `rtick noise`: a thread that took the spinner's CPU carries its kernel
//! stack from when it gave the CPU back — a reader of `/dev/urandom` on the
//! measured CPU, in `get_random_bytes_user` — in the summary and the JSON;
//! with the kernel's addresses hidden (kptr_restrict=2), one note says so
//! and the sources are named as before. Root, tracefs and two CPUs needed;
//! under CI a skip is a failure.

mod common;
use common::stacks::{frames, function, urandom_reader, KptrRestrict};
use common::tracee::ready_on_cpu_1;
use common::*;

use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// The tests of this file one at a time: two spinners on one CPU would
/// measure each other, and one test changes a system setting.
static SERIAL: Mutex<()> = Mutex::new(());

/// `rtick noise` on CPU 1 for `secs` (SCHED_OTHER spinner: it shares the
/// CPU with the reader), its output and its JSON.
fn noise(secs: &str) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("n.json");
    let o = rtick(&["noise", "-a", "1", "-D", secs, "--json", j.to_str().unwrap()]);
    ok(&o);
    (stdout(&o), json(&j))
}

/// The JSON source of the reader `tid`.
fn reader_source(j: &serde_json::Value, tid: i32, out: &str) -> serde_json::Value {
    let name = format!("thread rtick-urandom (pid {tid}, prio ");
    let sources = j["cpus"][0]["sources"].as_array().unwrap();
    sources
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with(&name))
        .unwrap_or_else(|| panic!("{name} in {out}"))
        .clone()
}

#[test]
fn a_thread_reading_in_the_kernel_carries_the_stack_it_gave_the_cpu_back_from() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready_on_cpu_1("this test measures") {
        return;
    }
    let (tid, stop, reader) = urandom_reader(1);
    let (out, j) = noise("2");
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let mine = reader_source(&j, tid, &out);
    let stack = frames(&mine);
    // Preempted in its read (preempt=none: at a cond_resched of it).
    assert!(stack.iter().any(|f| function(f) == "get_random_bytes_user"), "{mine:#}");
    assert!(!j["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("kernel stacks")), "{j:#}");
    // Only threads have one.
    let sources = j["cpus"][0]["sources"].as_array().unwrap();
    assert!(sources.iter().all(|s| s["kind"] == "thread" || frames(s).is_empty()), "{sources:#?}");
    // On the terminal: the line under its row, a few frames without offsets.
    let lines: Vec<&str> = out.lines().collect();
    let row = format!("thread rtick-urandom (pid {tid}, prio ");
    let i = lines.iter().position(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("{out}"));
    let under = lines[i + 1];
    assert!(under.starts_with("    stack: ") && under.contains("get_random_bytes_user ← "), "{out}");
    assert!(!under.contains("+0x"), "{out}");
}

#[test]
fn hidden_kernel_addresses_are_one_note_and_the_sources_are_named_still() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !ready_on_cpu_1("this test measures") {
        return;
    }
    let before = std::fs::read_to_string(KptrRestrict::PATH).unwrap();
    let (tid, stop, reader) = urandom_reader(1);
    let (out, j) = {
        let _restrict = KptrRestrict::set("2");
        noise("1")
    };
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(std::fs::read_to_string(KptrRestrict::PATH).unwrap(), before, "kptr_restrict restored");
    let said: Vec<&str> = out.lines().filter(|l| l.contains("kernel stacks")).collect();
    let why = "note: no kernel stacks: /proc/kallsyms shows every address as 0 (kernel.kptr_restrict is 2";
    assert!(said.len() == 1 && said[0].starts_with(why), "{out}");
    assert!(j["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("kptr_restrict is 2")));
    let mine = reader_source(&j, tid, &out);
    assert!(mine["total_ns"].as_i64().unwrap() > 0 && frames(&mine).is_empty(), "{mine:#}");
    assert!(!out.contains("    stack: "), "{out}");
}
