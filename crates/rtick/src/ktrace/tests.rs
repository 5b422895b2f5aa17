//! Tests against the running kernel: a real instance, real events of a real
//! sleeping thread, checked against its own clock reads. They need root and
//! tracefs (mounted here when it is not); without them they skip, except
//! under CI (`CI=true`), where only a kernel without tracefs may skip.
//! They run one at a time: the instance name is per process.

mod fixture;
mod stacks;
#[path = "../../tests/support/tracefs.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::*;
use crate::sys;
use crate::time::{Nanos, Time};

use support::TRACEFS;
const MONO: libc::clockid_t = libc::CLOCK_MONOTONIC;

static KERNEL: Mutex<()> = Mutex::new(());

/// The tracefs root and the lock on it, or `None` to skip the test.
fn kernel() -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    let guard = KERNEL.lock().unwrap_or_else(|p| p.into_inner());
    match support::tracefs() {
        Ok(root) => Some((root, guard)),
        Err((why, kernel_lacks_it)) => {
            crate::sys::skip::skip(why, kernel_lacks_it);
            None
        }
    }
}

/// The CPU the tests trace: the last one this process may use.
fn test_cpu() -> usize {
    *sys::sched::affinity().unwrap().last().unwrap()
}

/// One sleep of the loop: its deadline and the thread's clock reads around it.
#[derive(Clone, Copy, Debug)]
struct Cycle {
    deadline: Time,
    before: Time,
    after: Time,
}

/// `cycles` absolute `clock_nanosleep`s of `period` on a thread pinned to
/// `cpu` (SCHED_FIFO 90, as rtick measures); returns its tid and the cycles.
fn sleep_loop(cpu: usize, period: Nanos, cycles: usize) -> (i32, Vec<Cycle>) {
    std::thread::spawn(move || {
        sys::sched::set_affinity(&[cpu]).unwrap();
        sys::sched::set_scheduler(libc::SCHED_FIFO, 90).unwrap();
        let mut out = Vec::with_capacity(cycles);
        let first = crate::ClockId::Monotonic.now() + Nanos::from_ms(5);
        for k in 0..cycles as i64 {
            let deadline = first + Nanos(period.0 * k);
            let before = crate::ClockId::Monotonic.now();
            sys::clock::sleep_until(MONO, deadline).unwrap();
            let after = crate::ClockId::Monotonic.now();
            out.push(Cycle { deadline, before, after });
        }
        (sys::timer::gettid(), out)
    })
    .join()
    .unwrap()
}

/// Checks the kernel's account of every sleep armed before its deadline: one
/// `hrtimer_start` of the thread for that deadline, its expiry, the thread's
/// `sched_waking` and `sched_wakeup`, and the switch to it, in that order,
/// all within [deadline − period, the thread's clock read after waking]
/// (from its clock read before sleeping, when that is earlier). A thread
/// whose timer fired while it was still on the CPU (before it could sleep,
/// or after a preemption ended) is woken where it runs, with no switch: the
/// switch back is required only when the wake-up found it off the CPU.
/// Returns how many sleeps were checked.
fn check_wake_ups(events: &[Event], tid: i32, cycles: &[Cycle], period: Nanos) -> usize {
    let mut starts = std::collections::HashMap::new();
    for e in events {
        if let EventKind::HrtimerStart { softexpires, .. } = e.kind {
            if e.pid == tid {
                *starts.entry(softexpires).or_insert(0) += 1;
            }
        }
    }
    let mut at = 0;
    let mut checked = 0;
    for c in cycles.iter().filter(|c| c.before < c.deadline) {
        // The first sleep is armed further ahead than one period.
        let from = c.before.min(c.deadline - period);
        let window = |e: &Event, what: &str| {
            assert!(
                e.ts >= from && e.ts <= c.after,
                "{what} at {} outside [{}, {}] (deadline {})",
                e.ts.0,
                from.0,
                c.after.0,
                c.deadline.0
            );
        };
        assert_eq!(starts.get(&c.deadline), Some(&1), "hrtimer_start of the sleep until {}", c.deadline.0);
        let find = |from: usize, what: &str, f: &dyn Fn(&Event) -> bool| -> usize {
            let i = from + events[from..].iter().position(f).unwrap_or_else(|| panic!("no {what} for {c:?}"));
            window(&events[i], what);
            i
        };
        let s = find(at, "hrtimer_start", &|e| {
            e.pid == tid && matches!(e.kind, EventKind::HrtimerStart { softexpires, .. } if softexpires == c.deadline)
        });
        assert!(events[s].ts >= c.before, "hrtimer_start before the thread called clock_nanosleep");
        let EventKind::HrtimerStart { hrtimer, .. } = events[s].kind else { unreachable!() };
        let x = find(
            s,
            "hrtimer_expire_entry",
            &|e| matches!(e.kind, EventKind::HrtimerExpireEntry { hrtimer: h, .. } if h == hrtimer),
        );
        let EventKind::HrtimerExpireEntry { now, .. } = events[x].kind else { unreachable!() };
        assert!(now >= c.deadline, "a timer expired at {} before its deadline {}", now.0, c.deadline.0);
        let w = find(x, "sched_waking", &|e| matches!(&e.kind, EventKind::SchedWaking(w) if w.pid == tid));
        let w = find(w, "sched_wakeup", &|e| matches!(&e.kind, EventKind::SchedWakeup(w) if w.pid == tid));
        // Off the CPU when woken: its last switch before the wake-up took it away.
        let off = events[s..w].iter().rev().find_map(|e| match &e.kind {
            EventKind::SchedSwitch(s) if s.prev_pid == tid => Some(true),
            EventKind::SchedSwitch(s) if s.next_pid == tid => Some(false),
            _ => None,
        });
        // Then it runs: its switch in, or, where the kernel records no switch
        // out of the idle task (this VM's CPU 1 never does), its own next event.
        at = if off == Some(true) {
            let switched_in = events[w..]
                .iter()
                .take_while(|e| e.ts <= c.after)
                .position(|e| matches!(&e.kind, EventKind::SchedSwitch(s) if s.next_pid == tid));
            match switched_in {
                Some(i) => w + i,
                // No switch in recorded before its clock read: the kernel did
                // not record the switch out of the idle task. The thread's own
                // next event (the next sleep's timer) shows it ran.
                None => w + events[w..].iter().position(|e| e.pid == tid).expect("the thread ran again"),
            }
        } else {
            w
        };
        checked += 1;
    }
    checked
}

fn global_state(root: &Path) -> Vec<String> {
    ["tracing_on", "current_tracer", "trace_clock", "tracing_cpumask", "set_event", "buffer_size_kb"]
        .iter()
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap())
        .collect()
}

#[test]
fn every_clock_nanosleep_wake_up_has_its_kernel_events_on_the_monotonic_clock() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let global = global_state(&root);
    let session =
        Session::start(&root, &[cpu], &Options { events: &Tracepoint::EXPLAIN, ..Options::default() }).unwrap();
    let dir = session.instance_dir().to_path_buf();
    assert_eq!(dir, root.join(format!("instances/rtick-{}", std::process::id())));
    assert!(std::fs::read_to_string(dir.join("trace_clock")).unwrap().contains("[mono]"));
    // Every online CPU records (the others for the IPIs they send to this one), the other events only here.
    let mask = std::fs::read_to_string(dir.join("tracing_cpumask")).unwrap();
    let all = (1u64 << crate::sys::sched::online_cpus()) - 1;
    assert_eq!(u64::from_str_radix(mask.trim(), 16), Ok(all), "{mask}");
    let filter = |e: &str| std::fs::read_to_string(dir.join(format!("events/{e}/filter"))).unwrap();
    assert_eq!(filter("sched/sched_switch").trim(), format!("CPU == {cpu}"));
    assert_eq!(filter("ipi/ipi_send_cpu").trim(), format!("cpu == {cpu}"));
    let period = Nanos::from_ms(1);
    let (tid, cycles) = sleep_loop(cpu, period, 1000);
    let capture = session.stop().unwrap();
    assert!(!dir.exists(), "the instance is removed by stop");
    assert_eq!(global_state(&root), global, "the global trace was touched");
    assert!(!capture.lost.any(), "{:?}", capture.lost);
    assert!(capture.missing_events.is_empty(), "{:?}", capture.missing_events);
    let c = capture.cpu(cpu).unwrap();
    assert!(c.events.windows(2).all(|w| w[0].ts <= w[1].ts), "events out of order");
    assert_eq!(c.read.unknown + c.read.malformed, 0);
    let checked = check_wake_ups(&c.events, tid, &cycles, period);
    // A SCHED_FIFO thread arms most sleeps ahead of their deadlines, even
    // beside other real-time tests; those armed too late have no sleep to check.
    assert!(checked >= 500, "only {checked} of 1000 sleeps were armed ahead");
}

#[test]
fn a_20_khz_loop_on_one_cpu_loses_nothing_with_the_default_buffer() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let session = Session::start(&root, &[cpu], &Options::default()).unwrap();
    let t0 = crate::ClockId::Monotonic.now();
    let (tid, cycles) = sleep_loop(cpu, Nanos::from_us(50), 40_000);
    let elapsed = crate::ClockId::Monotonic.now() - t0;
    let capture = session.stop().unwrap();
    assert!(!capture.lost.any(), "{:?}", capture.lost);
    let c = capture.cpu(cpu).unwrap();
    assert_eq!(c.buffer.read, c.read.records, "the reader decoded every event the kernel handed out");
    // The load was the one asked: the kernel woke the thread for (nearly)
    // every sleep it armed ahead of the deadline.
    let ahead = cycles.iter().filter(|c| c.before < c.deadline).count();
    let wakes = c.events.iter().filter(|e| matches!(&e.kind, EventKind::SchedWakeup(w) if w.pid == tid)).count();
    assert!(wakes as f64 >= 0.95 * ahead as f64, "{wakes} wake-ups of the thread for {ahead} sleeps armed ahead");
    eprintln!(
        "20 kHz for {:.2} s, {ahead} of {} sleeps armed ahead: {} events ({:.0}/s), {} pages ({:.0} KiB/s), none lost",
        elapsed.as_secs_f64(),
        cycles.len(),
        c.events.len(),
        c.events.len() as f64 / elapsed.as_secs_f64(),
        c.read.pages,
        (c.read.pages * 4) as f64 / elapsed.as_secs_f64()
    );
}

/// A stream read a page at a time leaves the rest for the next read, in
/// order, and counts nothing lost; its system call exits follow the pids
/// given (`rtick attach`'s threads as they come and go).
#[test]
fn a_stream_read_up_to_a_page_leaves_the_rest_for_the_next_read() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let opts = Options { events: &Tracepoint::ATTACH, syscall_pids: vec![1], ..Options::default() };
    let mut stream = Stream::start(&root, &[cpu], &opts).unwrap();
    let filter = stream.instance_dir().join("events/raw_syscalls/sys_exit/filter");
    // One read of a page: the kernel answers a filter file's second read
    // with nothing, so read_to_string's 32-byte probe would cut it.
    let read = |f: &Path| {
        use std::io::Read;
        let mut buf = vec![0u8; 4096];
        let n = std::fs::File::open(f).and_then(|mut file| file.read(&mut buf)).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).trim().to_string()
    };
    // attach names IPIs' senders: the other CPUs record their sends, the rest stays on this CPU.
    assert_eq!(read(&filter), format!("(common_pid == 1) && (CPU == {cpu})"));
    stream.set_syscall_pids(&[2, 3]).unwrap();
    assert_eq!(read(&filter), format!("(common_pid == 2 || common_pid == 3) && (CPU == {cpu})"));
    assert_eq!(stream.cpus().collect::<Vec<_>>(), [cpu], "the measured CPU only");
    sleep_loop(cpu, Nanos::from_us(200), 1000);
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    // (The other CPUs deliver the IPIs they send to this one: apart.)
    fn of(cpu: usize, to: &mut Vec<Time>) -> impl FnMut(usize, Event) + '_ {
        move |c, e| {
            if c == cpu {
                to.push(e.ts)
            }
        }
    }
    let cut = stream.read_up_to(1, &mut of(cpu, &mut first)).unwrap();
    assert!(cut.contains(&cpu), "a thousand sleeps' events take more than a page");
    assert!(!first.is_empty() && first.len() < 1000, "{} events in one page", first.len());
    while !stream.read_up_to(64, &mut of(cpu, &mut rest)).unwrap().is_empty() {}
    // The CPU goes on recording until stopped: what came meanwhile is read
    // after the stop, else it counts as unread.
    stream.stop_recording().unwrap();
    while !stream.read_up_to(64, &mut of(cpu, &mut rest)).unwrap().is_empty() {}
    assert!(rest.len() > 4 * first.len(), "{} then {}", first.len(), rest.len());
    assert!(first.iter().chain(&rest).collect::<Vec<_>>().windows(2).all(|w| w[0] <= w[1]), "in order");
    assert!(!stream.lost().unwrap().any(), "{:?}", stream.lost().unwrap());
}

#[test]
fn remove_and_drop_take_the_instance_away_and_a_second_session_is_refused() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let mut session = Session::start(&root, &[cpu], &Options::default()).unwrap();
    let dir = session.instance_dir().to_path_buf();
    assert!(dir.is_dir());
    let e = Session::start(&root, &[cpu], &Options::default()).unwrap_err();
    assert!(matches!(e, Error::InstanceExists(_)), "{e}");
    assert!(e.to_string().contains(&format!("rmdir {}", dir.display())), "{e}");
    assert!(dir.is_dir(), "the refused session left ours alone");
    session.remove().unwrap();
    assert!(!dir.exists());
    session.remove().unwrap();
    drop(session);
    let session = Session::start(&root, &[cpu], &Options::default()).unwrap();
    drop(session);
    assert!(!dir.exists(), "drop removes the instance");
}

#[test]
fn stale_instances_of_dead_processes_are_removed_and_live_ones_kept() {
    let Some((root, _lock)) = kernel() else { return };
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let session = Session::start(&root, &[test_cpu()], &Options::default()).unwrap();
    let stale = root.join(format!("instances/rtick-{dead}"));
    std::fs::create_dir(&stale).unwrap();
    let found = crate::leftovers::instances(&root);
    let removed: Vec<_> = found.iter().filter(|l| l.remove().is_ok()).map(|l| l.path.clone()).collect();
    // Never left behind by a failing test.
    let _ = std::fs::remove_dir(&stale);
    assert!(removed.contains(&stale) && !stale.exists(), "{removed:?}");
    assert!(session.instance_dir().is_dir(), "ours lives: our pid is alive");
}

#[test]
fn bad_cpus_are_refused_before_anything_is_left_behind() {
    let Some((root, _lock)) = kernel() else { return };
    let e = Session::start(&root, &[], &Options::default()).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e}");
    let e = Session::start(&root, &[4095], &Options::default()).unwrap_err();
    assert!(e.to_string().contains("CPU 4095"), "{e}");
    assert!(!root.join(format!("instances/rtick-{}", std::process::id())).exists());
}

/// The second process of [`two_processes_have_independent_instances`]:
/// starts its session, says where, waits for "go", sleeps 100 × 1 ms and
/// reports what it recorded.
#[test]
#[ignore = "run by two_processes_have_independent_instances in a child process"]
fn child_session() {
    let Ok(cpu) = std::env::var("RTICK_KTRACE_CHILD") else { return };
    let cpu: usize = cpu.parse().unwrap();
    let session = Session::start(Path::new(TRACEFS), &[cpu], &Options::default()).unwrap();
    println!("instance {}", session.instance_dir().display());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let period = Nanos::from_ms(1);
    let (tid, cycles) = sleep_loop(cpu, period, 100);
    let capture = session.stop().unwrap();
    let checked = check_wake_ups(&capture.cpu(cpu).unwrap().events, tid, &cycles, period);
    println!("checked {checked} lost {}", capture.lost.any());
}

#[test]
fn two_processes_have_independent_instances() {
    use std::io::{BufRead, BufReader, Write};
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "ktrace::tests::child_session", "--ignored", "--nocapture", "--test-threads=1"])
        .env("RTICK_KTRACE_CHILD", cpu.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut next = |prefix: &str| loop {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "the child ended before saying {prefix}");
        // The harness's "test … " may share the line.
        if let Some((_, rest)) = l.split_once(prefix) {
            return rest.trim().to_string();
        }
    };
    let theirs = PathBuf::from(next("instance "));
    let ours = Session::start(&root, &[cpu], &Options::default()).unwrap();
    assert_ne!(ours.instance_dir(), theirs);
    assert!(theirs.is_dir() && ours.instance_dir().is_dir());
    let (_, _) = sleep_loop(cpu, Nanos::from_ms(1), 20);
    let mine = ours.stop().unwrap();
    assert!(!mine.lost.any());
    assert!(theirs.is_dir(), "stopping ours left theirs");
    // Theirs records on after ours is gone.
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let report = next("checked ");
    assert!(child.wait().unwrap().success());
    let (checked, lost) = report.split_once(" lost ").unwrap();
    assert!(checked.parse::<usize>().unwrap() >= 50, "{report}");
    assert_eq!(lost, "false");
    assert!(!theirs.exists(), "the child removed its own");
}

#[test]
fn pause_switches_the_events_off_and_resume_on_again_leaving_the_global_trace() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let global = global_state(&root);
    let mut session = Session::start(&root, &[cpu], &Options::default()).unwrap();
    let enables: Vec<PathBuf> = Tracepoint::ALL
        .iter()
        .map(|t| session.instance_dir().join(format!("events/{}/{}/enable", t.system(), t.name())))
        .collect();
    // `1*`: on, and kept registered by the stack trigger (`ktrace::stack`).
    let enabled =
        |want: &str| enables.iter().all(|p| std::fs::read_to_string(p).unwrap().trim().trim_end_matches('*') == want);
    let now = || crate::ClockId::Monotonic.now();
    // 600 sleeps of 1 ms: traced for ~100 ms, paused for ~100 ms, traced
    // again (the pause itself takes an RCU grace period, ~100 ms here: the
    // kernel waits for it when the stack trigger is removed).
    let sleeper = std::thread::spawn(move || sleep_loop(cpu, Nanos::from_ms(1), 600));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let pause_began = now();
    session.pause().unwrap();
    session.pause().unwrap();
    let paused = now();
    assert!(session.is_paused() && enabled("0"), "every event is off");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let resume_began = now();
    session.resume().unwrap();
    session.resume().unwrap();
    let resumed = now();
    assert!(!session.is_paused() && enabled("1"), "every event is on again");
    let (tid, cycles) = sleeper.join().unwrap();
    let capture = session.stop().unwrap();
    assert_eq!(global_state(&root), global, "the global trace was touched");
    assert!(!capture.lost.any(), "{:?}", capture.lost);
    let events = &capture.cpu(cpu).unwrap().events;
    let wakes_in = |from: Time, to: Time| {
        events
            .iter()
            .filter(|e| e.ts > from && e.ts < to)
            .filter(|e| matches!(&e.kind, EventKind::SchedWaking(w) if w.pid == tid))
            .count()
    };
    let during = events.iter().filter(|e| e.ts > paused && e.ts < resume_began).count();
    assert_eq!(during, 0, "events recorded while paused");
    let end = cycles.last().unwrap().after;
    let (before, after) = (wakes_in(Time(0), pause_began), wakes_in(resumed, end));
    assert!(before >= 50 && after >= 50, "wake-ups traced before the pause: {before}, after the resume: {after}");
    eprintln!(
        "pause took {}, resume {}; {before} wake-ups traced before, {after} after, none in the {} between",
        paused - pause_began,
        resumed - resume_began,
        resume_began - paused
    );
}

#[test]
fn the_root_is_where_proc_mounts_says_tracefs_is() {
    let mounts = "sysfs /sys sysfs rw 0 0\nnodev /mnt/t tracefs rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\n";
    assert_eq!(super::mounted(mounts), Some(PathBuf::from(super::TRACEFS)));
    assert_eq!(super::mounted("nodev /mnt/t tracefs rw 0 0\n"), Some(PathBuf::from("/mnt/t")));
    assert_eq!(super::mounted("sysfs /sys sysfs rw 0 0\n"), None);
    assert_eq!(super::root(Some(Path::new("/x/instances/y"))), PathBuf::from("/x/instances/y"));
}

/// A CPU that allocates and frees memory for 2.5 s changes its vmstat
/// counters, and with `vm.stat_interval` 1 s a kworker folds them each
/// second: the trace has that work item, named `vmstat_update`.
#[test]
fn a_kworker_work_item_is_traced_and_named() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let sysctl = Path::new("/proc/sys/vm/stat_interval");
    let before = std::fs::read_to_string(sysctl).unwrap();
    std::fs::write(sysctl, "1").unwrap();
    let session = Session::start(&root, &[cpu], &Options::default());
    if session.is_ok() {
        std::thread::spawn(move || {
            sys::sched::set_affinity(&[cpu]).unwrap();
            let until = std::time::Instant::now() + std::time::Duration::from_millis(2500);
            while std::time::Instant::now() < until {
                let v = vec![1u8; 1 << 20];
                std::hint::black_box(&v);
            }
        })
        .join()
        .unwrap();
    }
    let capture = session.and_then(|s| s.stop());
    std::fs::write(sysctl, before.trim()).unwrap();
    let capture = capture.unwrap();
    let c = capture.cpu(cpu).unwrap();
    let tl = crate::explain::Timeline::build(&c.events, c.events.last().map_or(Time(0), |e| e.ts));
    let names: Vec<String> = tl.works.iter().map(|w| kallsyms::describe(w.function)).collect();
    assert!(names.iter().any(|n| n == "vmstat_update"), "work items traced: {names:?}");
    let w = tl.works.iter().find(|w| kallsyms::describe(w.function) == "vmstat_update").unwrap();
    assert!(w.end >= w.start && w.pid > 0, "{w:?}");
    let ran = tl.tasks.iter().find(|s| s.start <= w.start && s.end >= w.start).map(|s| s.what.to_string());
    assert!(ran.as_deref().is_some_and(|r| r.starts_with("kworker/")), "run by {ran:?}");
}

/// Wake-ups sent from another CPU to a thread of the traced CPU, while a
/// spinner keeps that CPU busy, come as IPIs (reschedule, or the
/// call-function-single of a queued wake-up): the timeline has them as
/// interrupt work, named by vector and by their sender (this thread, on
/// the other CPU: recorded there by the session for the IPIs it sends).
#[test]
fn ipis_sent_from_another_cpu_are_named_by_vector_and_sender() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let other = *sys::sched::affinity().unwrap().first().unwrap();
    assert_ne!(cpu, other, "two CPUs");
    let session =
        Session::start(&root, &[cpu], &Options { events: &Tracepoint::EXPLAIN, ..Options::default() }).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let spinner = std::thread::spawn(move || {
        sys::sched::set_affinity(&[cpu]).unwrap();
        while !flag.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    wake_from(other, cpu, 500);
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    let capture = session.stop().unwrap();
    let c = capture.cpu(cpu).unwrap();
    // The sends, recorded on the sender's CPU (this thread's).
    let mut senders = crate::ktrace::Senders::new(true);
    for c in &capture.per_cpu {
        c.events.iter().for_each(|e| senders.event(c.cpu, e));
    }
    let end = c.events.last().map_or(Time(0), |e| e.ts);
    let tl = crate::explain::Timeline::build_on(&c.events, end, cpu, &senders);
    let me = format!(
        "from CPU {other} task {}:{}",
        std::fs::read_to_string("/proc/thread-self/comm").unwrap().trim(),
        sys::timer::gettid()
    );
    let sent = tl
        .interrupts
        .iter()
        .filter(|s| matches!(&s.what, crate::explain::Culprit::Ipi(i, _) if *i != crate::ktrace::Ipi::IrqWork));
    let named = sent.clone().filter(|s| s.what.to_string().ends_with(&me)).count();
    assert!(named * 2 >= sent.count() && named >= 25, "{named} IPIs named {me:?}: {:?}", tl.interrupts);
    let ipis: Vec<String> = tl
        .interrupts
        .iter()
        .filter(|s| matches!(s.what, crate::explain::Culprit::Ipi(..)))
        .map(|s| s.what.to_string())
        .collect();
    assert!(ipis.len() >= 50, "{} IPIs on CPU {cpu} for 500 remote wake-ups: {ipis:?}", ipis.len());
    assert!(
        ipis.iter().all(|n| ["reschedule IPI", "call_function_single IPI", "call_function IPI", "irq_work interrupt"]
            .iter()
            .any(|v| n.starts_with(v))),
        "{ipis:?}"
    );
}

/// What the senders cost the traced CPU, counted: with attach's events
/// (the sends among them) and wake-ups sent from another CPU to a thread
/// of the traced one, the other CPU records only sends aimed at the traced
/// CPU (no kernel stack either: the stack trigger is cut to the traced CPU
/// too), and the traced CPU no send at all (it sends none to itself): the
/// send events are written on the sender's CPU.
#[test]
fn the_senders_events_are_written_on_the_other_cpus() {
    let Some((root, _lock)) = kernel() else { return };
    let cpu = test_cpu();
    let other = *sys::sched::affinity().unwrap().first().unwrap();
    assert_ne!(cpu, other, "two CPUs");
    let opts = Options { events: &Tracepoint::ATTACH, syscall_pids: vec![1], ..Options::default() };
    let mut stream = Stream::start(&root, &[cpu], &opts).unwrap();
    wake_from(other, cpu, 300);
    stream.stop_recording().unwrap();
    let mut per_cpu: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
    let mut aimed_elsewhere = Vec::new();
    while !stream
        .read_up_to(64, &mut |c, e| {
            let n = per_cpu.entry(c).or_default();
            match &e.kind {
                EventKind::IpiSend(s) => {
                    n.0 += 1;
                    if !s.targets.contains(cpu) {
                        aimed_elsewhere.push((c, e));
                    }
                }
                EventKind::CsdQueue { cpu: to, .. } => {
                    n.0 += 1;
                    if *to as usize != cpu {
                        aimed_elsewhere.push((c, e));
                    }
                }
                _ => n.1 += 1,
            }
        })
        .unwrap()
        .is_empty()
    {}
    let (sends_here, others_here) = per_cpu.get(&cpu).copied().unwrap_or_default();
    let (sends_there, others_there) = per_cpu.get(&other).copied().unwrap_or_default();
    assert_eq!(sends_here, 0, "the traced CPU records no send: {per_cpu:?}");
    assert!(others_here >= 300, "its own events: {per_cpu:?}");
    assert!(sends_there >= 30, "the wake-ups' IPIs, sent from CPU {other}: {per_cpu:?}");
    assert_eq!(others_there, 0, "nothing else of CPU {other}: {per_cpu:?}");
    assert!(aimed_elsewhere.is_empty(), "sends aimed elsewhere: {aimed_elsewhere:?}");
    assert!(!stream.lost().unwrap().any(), "{:?}", stream.lost().unwrap());
}

/// From this thread, moved to CPU `from`, `n` wake-ups of a thread
/// sleeping on CPU `to`, 500 µs apart (IPIs, and their sends on `from`).
fn wake_from(from: usize, to: usize, n: u32) {
    let (tx, rx) = std::sync::mpsc::channel::<u32>();
    let sleeper = std::thread::spawn(move || {
        sys::sched::set_affinity(&[to]).unwrap();
        rx.iter().count()
    });
    sys::sched::set_affinity(&[from]).unwrap();
    for k in 0..n {
        tx.send(k).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    drop(tx);
    assert_eq!(sleeper.join().unwrap(), n as usize);
}
