//! Kernel stacks taken where a thread's wake-up was due, on the running
//! kernel: a thread reading `/dev/urandom` in the kernel on the traced CPU
//! is in the stacks of a sleeping thread's timer expiries there.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::*;

/// Reads `/dev/urandom` 8 MiB at a time on `cpu` until `stop`: it spends
/// nearly all its time in the kernel's `get_random_bytes_user`.
fn urandom_reader(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        sys::sched::set_affinity(&[cpu]).unwrap();
        let mut f = std::fs::File::open("/dev/urandom").unwrap();
        let mut buf = vec![0u8; 8 << 20];
        while !stop.load(Ordering::Relaxed) {
            f.read_exact(&mut buf).unwrap();
        }
    })
}

#[test]
fn a_timer_expiry_of_a_sleeping_thread_carries_the_stack_it_interrupted() {
    let Some((root, _lock)) = kernel() else { return };
    let k = kallsyms::system().expect("root reads /proc/kallsyms");
    let cpu = test_cpu();
    let mut session = Session::start(&root, &[cpu], &Options::default()).unwrap();
    assert_eq!(session.stacks_unavailable(), None);
    let trigger = session.instance_dir().join("events/timer/hrtimer_expire_entry/trigger");
    // The file lists the commands it takes in comments, then the triggers set.
    let armed = || std::fs::read_to_string(&trigger).unwrap().lines().any(|l| l.starts_with("stacktrace"));
    assert!(armed(), "the trigger is set");
    session.pause().unwrap();
    assert!(!armed(), "a paused session has no trigger running");
    session.resume().unwrap();
    assert!(armed(), "it is set again on resume");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = urandom_reader(cpu, Arc::clone(&stop));
    let (tid, _) = sleep_loop(cpu, Nanos::from_ms(2), 300);
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let capture = session.stop().unwrap();
    let events = &capture.cpu(cpu).unwrap().events;
    let wake_fns: Vec<u64> = stack::WAKE_CALLBACKS.iter().filter_map(|f| k.address(f)).collect();
    // The sleeper's timers armed and not yet expired: an address is the
    // sleeper's from its start to its expiry only (once the thread has
    // exited, another test's thread may arm a timer at the same address).
    let mut armed_by_sleeper = std::collections::HashSet::new();
    let (mut stacks, mut sleeper_expiries, mut in_reader) = (0, 0, 0);
    assert!(k.address("get_random_bytes_user").is_some(), "this kernel reads /dev/urandom in get_random_bytes_user");
    for (i, e) in events.iter().enumerate() {
        match e.kind {
            EventKind::HrtimerStart { hrtimer, .. } if e.pid == tid => _ = armed_by_sleeper.insert(hrtimer),
            EventKind::HrtimerStart { hrtimer, .. } => _ = armed_by_sleeper.remove(&hrtimer),
            EventKind::HrtimerExpireEntry { hrtimer, .. } => {
                sleeper_expiries += usize::from(armed_by_sleeper.remove(&hrtimer));
            }
            _ => {}
        }
        let EventKind::KernelStack { frames } = &e.kind else { continue };
        stacks += 1;
        // Right after the expiry of a wake-up callback, on the same CPU.
        let before = i.checked_sub(1).map(|j| &events[j].kind);
        assert!(
            matches!(before, Some(EventKind::HrtimerExpireEntry { function, .. }) if wake_fns.contains(function)),
            "a stack after {before:?}"
        );
        assert!(!frames.is_empty());
        let names = stack::named(frames);
        assert!(names.iter().any(|n| n.starts_with("hrtimer_interrupt")), "{names:?}");
        in_reader += usize::from(names.iter().any(|n| n.split('+').next() == Some("get_random_bytes_user")));
    }
    assert!(sleeper_expiries >= 250, "{sleeper_expiries} expiries of the sleeper's timer");
    assert!(stacks >= sleeper_expiries * 9 / 10, "{stacks} stacks for {sleeper_expiries} wake-ups");
    assert!(in_reader > 0, "no stack in get_random_bytes_user among {stacks}");
    eprintln!("{stacks} stacks for {sleeper_expiries} wake-ups, {in_reader} in get_random_bytes_user");
}
