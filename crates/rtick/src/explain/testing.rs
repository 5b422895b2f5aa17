//! Event sequences for the tests, with exact times (ns).

use crate::ktrace::{Comm, Event, EventKind, Switch, Wakeup};
use crate::time::Time;

/// The measuring thread of the tests (SCHED_FIFO 90: kernel prio 9).
pub(crate) const ME: i32 = 77;

pub(crate) fn ev(ts: i64, pid: i32, kind: EventKind) -> Event {
    Event { ts: Time(ts), pid, flags: 0, preempt_count: 0, kind }
}

/// `sched_switch` from `prev` to `next`, each (comm, pid, prio).
pub(crate) fn switch(prev: (&str, i32, i32), next: (&str, i32, i32)) -> EventKind {
    EventKind::SchedSwitch(Switch {
        prev_comm: Comm::new(prev.0.as_bytes()),
        prev_pid: prev.1,
        prev_prio: prev.2,
        prev_state: if prev.1 == 0 { 0 } else { 1 },
        next_comm: Comm::new(next.0.as_bytes()),
        next_pid: next.1,
        next_prio: next.2,
    })
}

/// [`switch`] with `prev` preempted: switched out runnable (`R+`).
pub(crate) fn preempted(prev: (&str, i32, i32), next: (&str, i32, i32)) -> EventKind {
    let mut out = switch(prev, next);
    if let EventKind::SchedSwitch(sw) = &mut out {
        sw.prev_state = 0x100;
    }
    out
}

pub(crate) fn waking(pid: i32, prio: i32) -> EventKind {
    EventKind::SchedWaking(Wakeup { comm: Comm::new(b"t"), pid, prio, target_cpu: 1 })
}

pub(crate) const IDLE: (&str, i32, i32) = ("swapper/1", 0, 120);
pub(crate) const MEE: (&str, i32, i32) = ("rtick-m0", ME, 9);

/// One clock_nanosleep cycle of thread [`ME`] on CPU 1, in time order: armed
/// at `arm` for `deadline`, switched out, the timer's callback at `exp`,
/// woken at `wake`, switched in at `run`.
pub(crate) fn cycle(arm: i64, deadline: i64, exp: i64, wake: i64, run: i64) -> Vec<Event> {
    vec![
        ev(
            arm,
            ME,
            EventKind::HrtimerStart {
                hrtimer: 0xa0,
                function: 0xf0,
                expires: Time(deadline),
                softexpires: Time(deadline),
                mode: 0,
            },
        ),
        ev(arm + 1, ME, switch(MEE, IDLE)),
        ev(exp, 0, EventKind::HrtimerExpireEntry { hrtimer: 0xa0, now: Time(exp), function: 0xf0 }),
        ev(wake, 0, waking(ME, 9)),
        ev(exp.max(wake) + 1, 0, EventKind::HrtimerExpireExit { hrtimer: 0xa0 }),
        ev(run.max(exp.max(wake) + 2), 0, switch(IDLE, MEE)),
    ]
}

pub(crate) fn wakeup(pid: i32, prio: i32) -> EventKind {
    EventKind::SchedWakeup(Wakeup { comm: Comm::new(b"t"), pid, prio, target_cpu: 1 })
}
