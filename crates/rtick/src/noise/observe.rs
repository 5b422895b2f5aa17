//! What watches a run as it goes: one [`Observer`] for both kinds of run,
//! the spinners' ([`run_observed`](super::run_observed)) and a followed
//! thread's ([`run_attached`](super::run_attached)). It is handed every gap
//! as soon as it is attributed (`rtick noise --trace`, `--plot`; the
//! histogram of `rtick monitor --noise`), and each CPU's state after every
//! round, ten times a second (the monitor's counters). Nothing is kept for
//! it: what it wants past the call, it copies.

use std::collections::HashMap;

use super::attribute::GapRecord;
use super::source::{Source, Tally};
use crate::time::Nanos;

/// One CPU's state after a round.
#[derive(Debug)]
pub struct Live<'a> {
    /// The CPU.
    pub cpu: usize,
    /// How long its spinner has spun so far, or the followed thread has
    /// been on it (running or waiting) with `--attach`.
    pub runtime: Nanos,
    /// Its sources so far (empty without attribution).
    pub sources: &'a HashMap<Source, Tally>,
}

/// Watches a run: both methods do nothing unless implemented. A closure
/// `FnMut(usize, &GapRecord)` is an observer of the gaps.
pub trait Observer {
    /// A gap of `cpu` as it is known, with its sources, most first (none
    /// without attribution); a CPU's gaps come in time order.
    fn gap(&mut self, cpu: usize, g: &GapRecord) {
        let _ = (cpu, g);
    }

    /// A CPU after a round (every CPU, every round, and once at the end).
    fn round(&mut self, live: &Live) {
        let _ = live;
    }
}

impl<F: FnMut(usize, &GapRecord)> Observer for F {
    fn gap(&mut self, cpu: usize, g: &GapRecord) {
        self(cpu, g)
    }
}

/// An observer that watches nothing ([`run`](fn@super::run)).
#[derive(Debug, Default)]
pub struct Unobserved;

impl Observer for Unobserved {}
