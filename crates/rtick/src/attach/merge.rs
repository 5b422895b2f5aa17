//! The traced CPUs' events merged into one time order, as they are read.
//!
//! Each read takes every event recorded before it began, but the CPUs are
//! read one after another: an event of CPU 0 recorded while CPU 1 was
//! being read is taken by the next read, after CPU 1's later ones. So only
//! events older than the read's start (its watermark) are released, in time
//! order across the CPUs; the rest wait for the next read.

use std::collections::VecDeque;

use crate::ktrace::Event;
use crate::time::Time;

/// Events read but not yet released, per CPU in its ring buffer's order.
#[derive(Debug, Default)]
pub struct Merge {
    cpus: Vec<(usize, VecDeque<Event>)>,
}

impl Merge {
    /// Nothing held yet.
    pub fn new() -> Merge {
        Merge::default()
    }

    /// Holds event `e` of `cpu` (each CPU's in the order read).
    pub fn push(&mut self, cpu: usize, e: Event) {
        match self.cpus.iter_mut().find(|(c, _)| *c == cpu) {
            Some((_, q)) => q.push_back(e),
            None => self.cpus.push((cpu, VecDeque::from([e]))),
        }
    }

    /// Events held: at most what one read brought.
    pub fn held(&self) -> usize {
        self.cpus.iter().map(|(_, q)| q.len()).sum()
    }

    /// Hands every held event older than `watermark` to `sink` with its
    /// CPU, all CPUs' in time order (equal times: the lower CPU first).
    pub fn release(&mut self, watermark: Time, sink: &mut dyn FnMut(usize, Event)) {
        loop {
            let next = self
                .cpus
                .iter_mut()
                .filter(|(_, q)| q.front().is_some_and(|e| e.ts < watermark))
                .min_by_key(|(cpu, q)| (q.front().map(|e| e.ts), *cpu));
            let Some((cpu, q)) = next else { return };
            let cpu = *cpu;
            if let Some(e) = q.pop_front() {
                sink(cpu, e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::EventKind;

    fn ev(ts: i64) -> Event {
        Event { ts: Time(ts), pid: 1, flags: 0, preempt_count: 0, kind: EventKind::SysExit { id: 0, ret: 0 } }
    }

    #[test]
    fn events_below_the_watermark_come_out_in_time_order_and_the_rest_wait() {
        let mut m = Merge::new();
        for (cpu, ts) in [(1, 10), (1, 30), (1, 50), (0, 20), (0, 30), (0, 60)] {
            m.push(cpu, ev(ts));
        }
        let mut out = Vec::new();
        m.release(Time(50), &mut |cpu, e| out.push((cpu, e.ts.0)));
        assert_eq!(out, [(1, 10), (0, 20), (0, 30), (1, 30)]);
        assert_eq!(m.held(), 2);
        // The next read brought CPU 1's event of 55, recorded while CPU 0 was read.
        m.push(1, ev(55));
        out.clear();
        m.release(Time(i64::MAX), &mut |cpu, e| out.push((cpu, e.ts.0)));
        assert_eq!((out, m.held()), (vec![(1, 50), (1, 55), (0, 60)], 0));
    }
}
