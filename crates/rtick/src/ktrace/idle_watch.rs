//! Switches out of the idle task that the trace does not hold. On some
//! kernels (this VM's, on every CPU but the boot CPU) no `sched_switch`
//! out of the idle task is ever recorded, though the idle task's interrupts
//! are. Without it an idle stretch would last until the next switch
//! recorded, swallowing the run of whoever came after it: in `noise`, a
//! throttled stretch (the CPU idle while the spinner is runnable) would
//! take the run of a task of higher priority that became runnable during
//! it; in `--explain`, the idle CPU would seem to hold a late thread that
//! another task held. `noise`'s attribution and `explain`'s timeline both
//! infer it here.
//!
//! The switch is inferred when an event in another task's context comes
//! while the idle task runs: it happened right after the idle task's last
//! event (the interrupt that made it reschedule: the RT period timer that
//! ends a throttled stretch, or the wake-up of a task). The task switched
//! to is named by its own switch out (its comm and priority) or, for the
//! spinner (noise's followed thread), by any event of its.

use super::{Comm, Event, EventKind, Switch};
use crate::time::Time;

/// Whether the idle task runs, and its latest event.
#[derive(Debug, Default)]
pub struct IdleWatch {
    /// The latest event in the idle task's context since a switch to it.
    last: Option<Time>,
}

impl IdleWatch {
    /// Takes event `e` (in order): the switch out of the idle task that it
    /// shows was not recorded, with when it happened, if so. `spinner` is
    /// a thread whose every event names it (0: none).
    pub fn missed(&mut self, e: &Event, spinner: i32) -> Option<(Time, Switch)> {
        let since = self.last?;
        if e.pid == 0 {
            self.last = Some(e.ts);
            return None;
        }
        let (comm, prio) = match &e.kind {
            EventKind::SchedSwitch(sw) => (sw.prev_comm, sw.prev_prio),
            // The spinner's priority is the attribution's own.
            _ if e.pid == spinner => (Comm::new(b""), 0),
            // Another task's interrupt: its switch out will name it.
            _ => return None,
        };
        self.last = None;
        Some((since, from_idle(comm, e.pid, prio)))
    }

    /// The spinner `pid` is known to have run by `by` (it read its clock
    /// then): if the idle task ran until before that as far as the trace
    /// says, the switch from it to the spinner, not recorded, and when.
    pub fn back_to(&mut self, pid: i32, by: Time) -> Option<(Time, Switch)> {
        let since = self.last.filter(|&t| t <= by)?;
        self.last = None;
        Some((since, from_idle(Comm::new(b""), pid, 0)))
    }

    /// A switch recorded (or inferred) at `ts`: to the idle task, it runs from then.
    pub fn switched(&mut self, ts: Time, sw: &Switch) {
        self.last = (sw.next_pid == 0).then_some(ts);
    }

    /// When the idle task runs: its latest event (a switch out of it not
    /// recorded happened after it).
    pub fn last(&self) -> Option<Time> {
        self.last
    }
}

/// A switch from the idle task to `pid`.
fn from_idle(comm: Comm, pid: i32, prio: i32) -> Switch {
    Switch {
        prev_comm: Comm::new(b"swapper"),
        prev_pid: 0,
        prev_prio: 120,
        prev_state: 0,
        next_comm: comm,
        next_pid: pid,
        next_prio: prio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: i64, pid: i32, kind: EventKind) -> Event {
        Event { ts: Time(ts), pid, flags: 0, preempt_count: 0, kind }
    }

    fn switch(prev: i32, next: i32) -> Switch {
        let c = |p: i32| Comm::new(if p == 0 { b"swapper/1" } else { b"busy" });
        Switch {
            prev_comm: c(prev),
            prev_pid: prev,
            prev_prio: 39,
            prev_state: 0,
            next_comm: c(next),
            next_pid: next,
            next_prio: 39,
        }
    }

    /// Idle from 100, its last interrupt at 500; the busy thread's switch
    /// out at 2 500 shows it ran, switched in after 500.
    #[test]
    fn a_switch_out_of_idle_is_inferred_after_its_last_event() {
        let mut w = IdleWatch::default();
        w.switched(Time(100), &switch(7, 0));
        let timer = ev(500, 0, EventKind::HrtimerExpireExit { hrtimer: 1 });
        assert_eq!(w.missed(&timer, 7), None);
        // The busy thread's own interrupt: not named yet.
        assert_eq!(w.missed(&ev(1_500, 9, EventKind::LocalTimerEntry { vector: 236 }), 7), None);
        let out = ev(2_500, 9, EventKind::SchedSwitch(switch(9, 7)));
        let (at, sw) = w.missed(&out, 7).expect("inferred");
        assert_eq!((at, sw.prev_pid, sw.next_pid, sw.next_prio), (Time(500), 0, 9, 39));
        assert_eq!(sw.next_comm.to_string(), "busy");
        assert_eq!(w.last(), None);
    }

    /// The spinner's own event names it; a recorded switch out of idle (the
    /// boot CPU's) leaves nothing to infer.
    #[test]
    fn the_spinners_event_ends_idle_and_a_recorded_switch_needs_nothing() {
        let mut w = IdleWatch::default();
        w.switched(Time(100), &switch(7, 0));
        let (at, sw) = w.missed(&ev(900, 7, EventKind::LocalTimerEntry { vector: 236 }), 7).expect("inferred");
        assert_eq!((at, sw.next_pid), (Time(100), 7));
        w.switched(Time(1_000), &switch(7, 0));
        let recorded = ev(1_200, 0, EventKind::SchedSwitch(switch(0, 7)));
        assert_eq!(w.missed(&recorded, 7), None);
        w.switched(Time(1_200), &switch(0, 7));
        assert_eq!(w.missed(&ev(1_300, 7, EventKind::LocalTimerEntry { vector: 236 }), 7), None);
        // The spinner's clock read at 2 000 after idle's last event at 1 500.
        w.switched(Time(1_400), &switch(7, 0));
        assert_eq!(w.missed(&ev(1_500, 0, EventKind::HrtimerExpireExit { hrtimer: 1 }), 7), None);
        assert_eq!(w.back_to(7, Time(1_450)), None, "idle ran past that read");
        let (at, sw) = w.back_to(7, Time(2_000)).expect("inferred");
        assert_eq!((at, sw.prev_pid, sw.next_pid), (Time(1_500), 0, 7));
        assert_eq!(w.last(), None);
    }
}
