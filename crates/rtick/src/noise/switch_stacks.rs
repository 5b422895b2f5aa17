//! Where a thread that took a CPU from its spinner was in the kernel: its
//! stack when it gave the CPU back.
//!
//! The session sets a `stacktrace` trigger on `sched:sched_switch`
//! filtered to the switches back to a spinner (`next_pid ==` its thread
//! id; with `--attach`, the thread followed). The kernel takes the stack
//! at that switch in the context of the task switched away from: the one
//! that gave the CPU back. On a kernel without preemption of kernel code
//! (preempt=none) a task in the kernel holds the CPU until it calls
//! `cond_resched` or blocks, so its stack names the kernel path that held
//! the CPU (`__cond_resched ← get_random_bytes_user ← vfs_read ← ksys_read`
//! for a reader of `/dev/urandom`). A task preempted in user space shows
//! its return from the interrupt (`schedule ← irqentry_exit_to_user_mode`,
//! read as "in user space"); one that blocked, its blocking path (a pipe
//! read, a futex wait). Some kernels record nothing in the context of the
//! idle tasks of CPUs other than the boot CPU, nor of some system threads
//! ([`ktrace::stack`](crate::ktrace::stack) tells which here): their runs
//! have no stack.
//!
//! What it costs: the stack is walked at the switch back, inside the gap
//! it ends, just before the spinner (or the followed thread) runs again:
//! from 3 µs to about 30 µs here (the record's timestamp after its
//! switch's, a deep read path the most), added only to gaps that end with
//! another task giving the CPU back — never on a wake-up path, nothing to
//! the spinner's loop between gaps, nothing to gaps of interrupts alone.
//!
//! Each thread source keeps one stack, that of its longest run that ended
//! with a switch back to the spinner ([`KeptStacks`]): memory bounded as
//! the sources are.

use std::collections::HashMap;
use std::sync::Arc;

use super::source::Source;
use crate::ktrace::{kallsyms, Stream, Tracepoint};
use crate::time::Nanos;

/// The trigger's filter: a switch to one of `tids`.
fn filter(tids: &[i32]) -> String {
    tids.iter().map(|t| format!("next_pid == {t}")).collect::<Vec<_>>().join(" || ")
}

/// Loads the kernel's symbols that name the stacks (and without which
/// none is recorded) ahead of a run: a second or more on a busy CPU, not
/// to be taken from the run's time once its spinners wait.
pub(super) fn load_symbols() {
    let _ = kallsyms::system();
}

/// Records from now on the stack at each switch back to one of `tids` in
/// `stream`; when it cannot, why, as the run's note (one line).
pub(super) fn record(stream: &mut Stream, tids: &[i32]) -> Option<String> {
    let tids: Vec<i32> = tids.iter().copied().filter(|&t| t > 0).collect();
    if tids.is_empty() {
        return None;
    }
    let why = stream.record_stacks(Tracepoint::SchedSwitch, &filter(&tids)).err()?;
    Some(format!("no kernel stacks: {why}"))
}

/// Per thread source, the stack of its longest run that has one.
#[derive(Clone, Debug, Default)]
pub struct KeptStacks(HashMap<Source, (Nanos, Arc<[u64]>)>);

impl KeptStacks {
    /// A run of `source` of `net` time that gave the CPU back with `stack`:
    /// kept if it is a thread's and its longest so far.
    pub fn offer(&mut self, source: &Source, net: Nanos, stack: &Arc<[u64]>) {
        if !matches!(source, Source::Thread { .. }) {
            return;
        }
        match self.0.get_mut(source) {
            Some((longest, _)) if *longest >= net => {}
            Some(kept) => *kept = (net, Arc::clone(stack)),
            None => {
                self.0.insert(source.clone(), (net, Arc::clone(stack)));
            }
        }
    }

    /// The stack kept for `source`.
    pub fn get(&self, source: &Source) -> Option<&Arc<[u64]>> {
        self.0.get(source).map(|(_, s)| s)
    }

    /// The stacks kept, by source.
    pub fn into_frames(self) -> HashMap<Source, Arc<[u64]>> {
        self.0.into_iter().map(|(s, (_, f))| (s, f)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::Comm;

    fn thread(pid: i32) -> Source {
        Source::Thread { comm: Comm::new(b"dd"), pid, prio: 120 }
    }

    #[test]
    fn a_source_keeps_the_stack_of_its_longest_run() {
        let stack = |f: &[u64]| -> Arc<[u64]> { f.into() };
        let (a, b, c) = (stack(&[1, 2]), stack(&[3]), stack(&[4]));
        let mut k = KeptStacks::default();
        k.offer(&thread(7), Nanos(500), &a);
        k.offer(&thread(7), Nanos(900), &b);
        // Shorter, or as long: the longest run's stays.
        k.offer(&thread(7), Nanos(300), &c);
        k.offer(&thread(7), Nanos(900), &c);
        assert!(Arc::ptr_eq(k.get(&thread(7)).unwrap(), &b));
        // Each source its own.
        k.offer(&thread(8), Nanos(10), &c);
        assert!(Arc::ptr_eq(k.get(&thread(8)).unwrap(), &c));
        // Only threads: RT throttling is whoever ran, not one task's path.
        k.offer(&Source::RtThrottling, Nanos(1_000_000), &a);
        assert_eq!(k.get(&Source::RtThrottling), None);
        let all = k.into_frames();
        assert_eq!((all.len(), &all[&thread(7)][..]), (2, &[3u64][..]));
    }

    #[test]
    fn the_filter_lets_through_the_switches_to_each_thread() {
        assert_eq!(filter(&[42]), "next_pid == 42");
        assert_eq!(filter(&[42, 43]), "next_pid == 42 || next_pid == 43");
    }
}

#[cfg(test)]
mod attribution {
    use std::sync::Arc;

    use crate::ktrace::{Comm, Event, EventKind, Switch};
    use crate::noise::{Attributor, Gap, Source};
    use crate::time::Time;

    const SPINNER: i32 = 100;

    fn ev(ts: i64, pid: i32, kind: EventKind) -> Event {
        Event { ts: Time(ts), pid, flags: 0, preempt_count: 0, kind }
    }

    /// `prev` switches to `next` (runnable), then the stack the trigger
    /// takes when `next` is the spinner.
    fn switch(ts: i64, prev: (&str, i32), next: (&str, i32), stack: &[u64]) -> Vec<Event> {
        let sw = Switch {
            prev_comm: Comm::new(prev.0.as_bytes()),
            prev_pid: prev.1,
            prev_prio: 120,
            prev_state: 0,
            next_comm: Comm::new(next.0.as_bytes()),
            next_pid: next.1,
            next_prio: 120,
        };
        let mut v = vec![ev(ts, prev.1, EventKind::SchedSwitch(sw))];
        if next.1 == SPINNER {
            v.push(ev(ts + 20, prev.1, EventKind::KernelStack { frames: stack.to_vec().into() }));
        }
        v
    }

    fn thread(comm: &str, pid: i32) -> Source {
        Source::Thread { comm: Comm::new(comm.as_bytes()), pid, prio: 120 }
    }

    #[test]
    fn a_thread_s_run_takes_the_stack_recorded_when_it_gave_the_cpu_back() {
        let (me, dd, kw) = (("rtick-noise-1", SPINNER), ("dd", 7), ("kworker/1:0", 8));
        let mut a = Attributor::new(SPINNER, 120);
        let events: Vec<Event> = [
            // dd runs 2 µs and gives the CPU back: its stack.
            switch(1_000, me, dd, &[]),
            switch(3_000, dd, me, &[0xa1, 0xa2]),
            // dd runs 3 µs, then a kworker, which gives the CPU back: the
            // kworker's stack, not dd's.
            switch(5_000, me, dd, &[]),
            switch(8_000, dd, kw, &[]),
            switch(8_500, kw, me, &[0xb1]),
            // dd runs 1 µs and gives it back: shorter, its first stays.
            switch(10_000, me, dd, &[]),
            switch(11_000, dd, me, &[0xc1]),
        ]
        .concat();
        events.iter().for_each(|e| a.event(e));
        for (s, e) in [(990, 3_030), (4_990, 8_530), (9_990, 11_030)] {
            a.gap(Gap { start: Time(s), end: Time(e) });
        }
        a.settle(Time(20_000));
        assert_eq!(a.sources[&thread("dd", 7)].count, 3);
        assert_eq!(a.stacks.get(&thread("dd", 7)).map(|s| s.to_vec()), Some(vec![0xa1, 0xa2]));
        assert_eq!(a.stacks.get(&thread("kworker/1:0", 8)).map(|s| s.to_vec()), Some(vec![0xb1]));
        // A stack with no switch back before it belongs to no run.
        let mut b = Attributor::new(SPINNER, 120);
        let stray = ev(2_000, 7, EventKind::KernelStack { frames: Arc::from(vec![0xd1]) });
        [switch(1_000, me, dd, &[]), vec![stray], switch(3_000, dd, me, &[])[..1].to_vec()]
            .concat()
            .iter()
            .for_each(|e| b.event(e));
        b.gap(Gap { start: Time(990), end: Time(3_030) });
        b.settle(Time(20_000));
        assert_eq!(b.sources[&thread("dd", 7)].count, 1);
        assert!(b.stacks.get(&thread("dd", 7)).is_none());
        // A switch back from a task whose switch in was not recorded (some
        // kernels record nothing in the context of some tasks): its stack
        // is not the open task's.
        let mut c = Attributor::new(SPINNER, 120);
        [switch(1_000, me, kw, &[]), switch(3_000, dd, me, &[0xe1])].concat().iter().for_each(|e| c.event(e));
        c.gap(Gap { start: Time(990), end: Time(3_030) });
        c.settle(Time(20_000));
        assert_eq!(c.sources[&thread("kworker/1:0", 8)].count, 1);
        assert!(c.stacks.get(&thread("kworker/1:0", 8)).is_none());
    }
}
