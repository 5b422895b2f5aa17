//! Where a thread's time went between two instants it was running at, from
//! its context switches and wake-ups: on the CPU; preempted (switched out
//! runnable: something else ran, or its CPU idled: throttled); blocked
//! (asleep in its own work: I/O, a lock, a page fault) and, after its
//! wake-up, waking (runnable until it is switched back in: its wake-up
//! latency). `rtick attach` splits an overrun cycle's compute phase so:
//! "compute 4 ms > interval 1 ms" is the program's own doing only when it
//! ran for most of it.
//!
//! While the thread is runnable (preempted or waking), what ran on the CPU
//! it came back on is tallied task by task (the idle task too): the one
//! that held it longest is named.

use super::input::{CpuTrace, Task};
use crate::ktrace::{Event, EventKind, Switch};
use crate::time::{Nanos, Time};

/// A thread's time from one instant it ran at to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpu {
    /// On a CPU.
    pub ran: Nanos,
    /// Switched out runnable, until switched back in.
    pub preempted: Nanos,
    /// Switched out asleep (any state but running), until its wake-up.
    pub blocked: Nanos,
    /// From such a wake-up to its switch back in.
    pub waking: Nanos,
    /// What held the CPU longest while it was runnable (preempted or
    /// waking; the idle task when its CPU idled), and how long.
    pub by: Option<(Task, Nanos)>,
    /// The thread's kernel priority when it was switched out (to tell
    /// real-time throttling from CFS's).
    pub prio: Option<i32>,
}

/// What a stretch off the CPU was.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Off {
    Preempted,
    Blocked,
    Waking,
}

/// One stretch off the CPU: from, to, what, the CPU it came back on.
type Stretch = (Time, Time, Off, u32);

impl OffCpu {
    /// From `cpus`' events (each CPU's in time order, every switch of
    /// `[from, to]` held, and as much before `from` as is known): `tid`
    /// runs at `from` and at `to`. `None` when its switches do not say
    /// that (it ran on a CPU not traced).
    pub fn of(tid: i32, from: Time, to: Time, cpus: &[CpuTrace<'_>]) -> Option<OffCpu> {
        let within = |e: &&Event| e.ts > from && e.ts <= to;
        let all = cpus.iter().flat_map(|c| c.events.iter().filter(within).map(move |e| (c.cpu, e)));
        let mut mine: Vec<(Time, u32, &Switch)> = all
            .clone()
            .filter_map(|(cpu, e)| match &e.kind {
                EventKind::SchedSwitch(s) if s.prev_pid == tid || s.next_pid == tid => Some((e.ts, cpu, s)),
                _ => None,
            })
            .collect();
        // At one time on two CPUs, the switch out comes first.
        mine.sort_by_key(|&(ts, cpu, s)| (ts, s.next_pid == tid, cpu));
        // Its wake-ups: a sleep is blocked until then, waking after.
        let woken: Vec<Time> = all
            .filter_map(|(_, e)| matches!(&e.kind, EventKind::SchedWakeup(w) if w.pid == tid).then_some(e.ts))
            .collect();
        let (mut stretches, mut out, mut prio) = (Vec::<Stretch>::new(), None::<(Time, bool)>, None);
        for (ts, cpu, s) in mine {
            match out {
                None if s.prev_pid == tid => {
                    out = Some((ts, !s.slept()));
                    prio = Some(s.prev_prio);
                }
                Some((at, true)) if s.next_pid == tid => stretches.push((at, ts, Off::Preempted, cpu)),
                Some((at, false)) if s.next_pid == tid => {
                    let w = woken.iter().copied().filter(|&w| w >= at && w <= ts).max().unwrap_or(ts);
                    stretches.extend([(at, w, Off::Blocked, cpu), (w, ts, Off::Waking, cpu)]);
                }
                // Switched out twice, or in while running: not all of its CPUs are traced.
                _ => return None,
            }
            if s.next_pid == tid {
                out = None;
            }
        }
        if out.is_some() {
            return None;
        }
        let span = |k: Off| stretches.iter().filter(|s| s.2 == k).fold(Nanos::ZERO, |t, s| t + (s.1 - s.0));
        let (preempted, blocked, waking) = (span(Off::Preempted), span(Off::Blocked), span(Off::Waking));
        let mut held: Vec<(Task, Nanos)> = Vec::new();
        for &(a, b, _, cpu) in stretches.iter().filter(|s| s.2 != Off::Blocked) {
            let Some(c) = cpus.iter().find(|c| c.cpu == cpu) else { continue };
            for (task, d) in running(c, a, b) {
                match held.iter_mut().find(|(t, _)| *t == task) {
                    Some((_, total)) => *total = *total + d,
                    None => held.push((task, d)),
                }
            }
        }
        let by = held.into_iter().max_by_key(|&(_, d)| d);
        let ran = (to - from) - preempted - blocked - waking;
        Some(OffCpu { ran, preempted, blocked, waking, by, prio })
    }
}

/// The tasks that ran on `c` from `a` to `b`, each with its time, in the
/// order they ran (the one running at `a` told by the last switch before it).
fn running(c: &CpuTrace<'_>, a: Time, b: Time) -> Vec<(Task, Nanos)> {
    let switches = c.events.iter().filter_map(|e| match &e.kind {
        EventKind::SchedSwitch(s) => Some((e.ts, s)),
        _ => None,
    });
    let mut current: Option<(Time, Task)> = None;
    let mut out = Vec::new();
    for (ts, s) in switches {
        if ts >= b {
            break;
        }
        if ts > a {
            if let Some((since, t)) = current.take() {
                out.push((t, ts - since.max(a)));
            }
        }
        current = Some((ts, Task::new(&s.next_comm, s.next_pid, s.next_prio)));
    }
    if let Some((since, t)) = current {
        out.push((t, b - since.max(a)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::{Comm, Event};

    const T: i32 = 42;

    fn switch(ts: i64, (from, state): (i32, i64), to: i32) -> Event {
        let name = |p: i32| {
            Comm::new(match p {
                T => b"app",
                0 => b"swapper/0",
                _ => b"hog",
            })
        };
        let s = Switch {
            prev_comm: name(from),
            prev_pid: from,
            prev_prio: if from == T { 120 } else { 19 },
            prev_state: state,
            next_comm: name(to),
            next_pid: to,
            next_prio: if to == T { 120 } else { 19 },
        };
        Event { ts: Time(ts), pid: from, flags: 0, preempt_count: 0, kind: EventKind::SchedSwitch(s) }
    }

    /// From 1 000 to 10 000: preempted by the hog (2 000–5 000, then idle
    /// 5 000–6 000 before it is back), asleep 7 000–7 600, woken then and
    /// waking until 8 000 (its switch in), running the rest.
    #[test]
    fn preempted_blocked_and_ran_add_up_and_the_longest_holder_is_named() {
        let events = [
            switch(500, (0, 0), T),
            switch(2_000, (T, 0), 9),
            switch(5_000, (9, 1), 0),
            switch(6_000, (0, 0), T),
            switch(7_000, (T, 1), 0),
            wakeup(7_600),
            switch(8_000, (0, 0), T),
        ];
        let cpus = [CpuTrace { cpu: 0, events: &events }];
        let o = OffCpu::of(T, Time(1_000), Time(10_000), &cpus).unwrap();
        assert_eq!((o.ran, o.preempted, o.blocked, o.waking), (Nanos(4_000), Nanos(4_000), Nanos(600), Nanos(400)));
        let (who, held) = o.by.clone().unwrap();
        assert_eq!((who.pid, who.comm.as_str(), who.prio, held), (9, "hog", 19, Nanos(3_000)));
        assert_eq!(o.prio, Some(120));
    }

    fn wakeup(ts: i64) -> Event {
        let w = crate::ktrace::Wakeup { comm: Comm::new(b"app"), pid: T, prio: 120, target_cpu: 0 };
        Event { ts: Time(ts), pid: 0, flags: 0, preempt_count: 0, kind: EventKind::SchedWakeup(w) }
    }

    /// Preempted on CPU 0 and run again on CPU 1: what ran on CPU 1
    /// meanwhile is what it waited for (the idle task longest here).
    #[test]
    fn the_holder_is_taken_on_the_cpu_it_came_back_on() {
        let cpu0 = [switch(2_000, (T, 0), 0)];
        let cpu1 = [switch(1_000, (0, 0), 9), switch(3_000, (9, 1), 0), switch(9_000, (0, 0), T)];
        let cpus = [CpuTrace { cpu: 0, events: &cpu0 }, CpuTrace { cpu: 1, events: &cpu1 }];
        let o = OffCpu::of(T, Time(1_500), Time(10_000), &cpus).unwrap();
        assert_eq!((o.ran, o.preempted, o.blocked), (Nanos(1_500), Nanos(7_000), Nanos::ZERO));
        assert_eq!(o.by.as_ref().map(|(t, d)| (t.pid, *d)), Some((0, Nanos(6_000))));
    }

    /// Running throughout: no stretch off the CPU; switches that do not
    /// pair (it ran on a CPU not traced) give nothing rather than a guess.
    #[test]
    fn a_thread_that_ran_throughout_or_whose_switches_do_not_pair() {
        let cpus = [CpuTrace { cpu: 0, events: &[] }];
        let o = OffCpu::of(T, Time(0), Time(1_000), &cpus).unwrap();
        assert_eq!(
            (o.ran, o.preempted, o.blocked, o.waking, o.by),
            (Nanos(1_000), Nanos::ZERO, Nanos::ZERO, Nanos::ZERO, None)
        );
        let unpaired = [switch(200, (0, 0), T)];
        assert_eq!(OffCpu::of(T, Time(0), Time(1_000), &[CpuTrace { cpu: 0, events: &unpaired }]), None);
        let left = [switch(200, (T, 0), 9)];
        assert_eq!(OffCpu::of(T, Time(0), Time(1_000), &[CpuTrace { cpu: 0, events: &left }]), None);
    }

    /// Through the live window, on a CPU that records no switch out of
    /// idle: the thread sleeps at 1 000, is woken by an interrupt in the
    /// idle task at 4 000 and runs from then (its own event at 4 500 says
    /// so): blocked 3 µs, no waking; the switch into it is inferred.
    #[test]
    fn the_window_infers_a_switch_in_out_of_idle() {
        use crate::explain::Recent;
        let mut recent = Recent::new(&[1], Nanos::from_secs(1), 1 << 10, Time(-1_000_000));
        let wake = crate::ktrace::Wakeup { comm: Comm::new(b"app"), pid: T, prio: 120, target_cpu: 1 };
        let events = [
            switch(-200_000_000, (9, 1), T),
            switch(1_000, (T, 1), 0),
            Event { ts: Time(4_000), pid: 0, flags: 0, preempt_count: 0, kind: EventKind::SchedWakeup(wake) },
            Event { ts: Time(4_500), pid: T, flags: 0, preempt_count: 0, kind: EventKind::SysExit { id: 1, ret: 0 } },
        ];
        for e in events {
            recent.push(1, e);
        }
        let o = recent.off_cpu(T, Time(0), Time(6_000)).expect("held");
        assert_eq!((o.ran, o.preempted, o.blocked, o.waking), (Nanos(3_000), Nanos::ZERO, Nanos(3_000), Nanos::ZERO));
    }
}
