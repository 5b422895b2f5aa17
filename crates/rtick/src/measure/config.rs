//! What a measurement run is asked to do.

use std::sync::Arc;

use super::TraceMark;
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::rt::{ThreadSetup, DEFAULT_STACK_PREFAULT, MAX_SPAWNED_STACK_PREFAULT};
use crate::schedule::OverrunPolicy;
use crate::time::Nanos;
use crate::wait::{HybridSlack, Mechanism, WaitConfig, WaiterSource};

/// cyclictest-style fixed-width buckets to keep per thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HistogramSpec {
    /// Number of buckets.
    pub buckets: usize,
    /// Bucket width in ns (1000: µs buckets; 1 with -N).
    pub unit_ns: i64,
}

/// The most fixed-width histogram buckets a thread may keep (80 MB of counts).
pub const MAX_HISTOGRAM_BUCKETS: usize = 10_000_000;

/// The longest interval, duration or run (see [`crate::time::MAX_SPAN`]):
/// a clock's own time plus an interval plus a duration still fits in a deadline.
const MAX_LENGTH: Nanos = crate::time::MAX_SPAN;
/// [`MAX_LENGTH`] for people.
const LONGEST: &str = crate::time::MAX_SPAN_TEXT;

/// The most slices an interleaved run may be cut into.
const MAX_SLICES: usize = 1_000_000;

/// A measurement run.
#[derive(Clone, Debug)]
pub struct MeasureConfig {
    /// Mechanisms, measured one after the other with the same settings.
    pub mechanisms: Vec<Mechanism>,
    /// The period.
    pub interval: Nanos,
    /// Stop after this many wake-ups per thread.
    pub loops: Option<u64>,
    /// Stop when the next deadline is this far past the first (per mechanism).
    pub duration: Option<Nanos>,
    /// One entry per measuring thread.
    pub threads: Vec<ThreadSetup>,
    /// The clock of the deadlines.
    pub clock: ClockId,
    /// What to do after an overrun.
    pub overrun: OverrunPolicy,
    /// The hybrid's slack.
    pub hybrid_slack: HybridSlack,
    /// Stop everything when a latency exceeds this.
    pub breaktrace: Option<Nanos>,
    /// With `breaktrace`: mark the kernel trace and stop tracing at the break.
    pub tracemark: Option<Arc<TraceMark>>,
    /// Keep cyclictest-style buckets.
    pub histogram: Option<HistogramSpec>,
    /// Stack each measuring thread touches before starting.
    pub stack_prefault: usize,
    /// Waiters in place of the library's own, made in each measuring
    /// thread (a test's scripted waiter, `rtick::testing`).
    pub waiters: Option<Arc<dyn WaiterSource>>,
    /// Interleave the mechanisms in slices of this length (`--compare`);
    /// `None` measures them one after the other.
    pub interleave: Option<Nanos>,
    /// Rest after each slice of a mechanism that spins at least this share of
    /// its period, so that RT throttling it causes ends before the next slice:
    /// `(share, rest)`; set from `sched_rt_runtime_us` by the caller.
    pub rest_after_spinning: Option<(f64, Nanos)>,
    /// Discard the wake-ups of each mechanism's first this-long (per thread,
    /// from its first deadline): caches, page tables, the CPU's frequency
    /// and the hybrid's calibration settle before anything is recorded.
    /// It comes before the duration or the loops, which count what is
    /// recorded; interleaved, it lengthens each mechanism's first slice.
    pub warm_up: Nanos,
}

impl Default for MeasureConfig {
    fn default() -> Self {
        MeasureConfig {
            mechanisms: vec![Mechanism::ClockNanosleep],
            interval: Nanos::from_us(1000),
            loops: None,
            duration: Some(Nanos::from_secs(10)),
            threads: vec![ThreadSetup::default()],
            clock: ClockId::Monotonic,
            overrun: OverrunPolicy::Skip,
            hybrid_slack: HybridSlack::Auto,
            breaktrace: None,
            tracemark: None,
            histogram: None,
            stack_prefault: DEFAULT_STACK_PREFAULT,
            waiters: None,
            interleave: None,
            rest_after_spinning: None,
            warm_up: Nanos::ZERO,
        }
    }
}

impl MeasureConfig {
    /// Checks the configuration without running anything.
    pub fn validate(&self) -> Result<()> {
        if self.mechanisms.is_empty() {
            return Err(Error::Invalid("no mechanism to measure".into()));
        }
        if self.interval <= Nanos::ZERO {
            return Err(Error::Invalid("the interval must be greater than zero".into()));
        }
        if self.loops == Some(0) {
            return Err(Error::Invalid("loops must be greater than zero".into()));
        }
        if matches!(self.duration, Some(d) if d <= Nanos::ZERO) {
            return Err(Error::Invalid("the duration must be greater than zero".into()));
        }
        if self.threads.is_empty() {
            return Err(Error::Invalid("at least one thread is needed".into()));
        }
        for t in &self.threads {
            t.validate()?;
        }
        for m in &self.mechanisms {
            let info = m.info();
            if info.per_process && self.threads.len() > 1 {
                return Err(Error::Invalid(format!(
                    "{} is one timer per process: measure it with one thread (-t 1)",
                    info.name
                )));
            }
            if *m == Mechanism::Itimer && !crate::sys::timer::itimer_keeps(self.interval) {
                return Err(Error::Invalid(format!(
                    "itimer counts whole microseconds: an interval of {} cannot be kept (-i in whole µs, or another mechanism)",
                    self.interval
                )));
            }
            if !m.built_in() && self.waiters.is_none() {
                return Err(crate::wait::no_waiter_of_its_own(*m));
            }
        }
        if let HybridSlack::Fixed(s) = self.hybrid_slack {
            if s < Nanos::ZERO {
                return Err(Error::Invalid("the hybrid slack must not be negative".into()));
            }
        }
        if self.warm_up < Nanos::ZERO {
            return Err(Error::Invalid("the warm-up must not be negative".into()));
        }
        if self.interleave.is_some() && self.duration.is_none() && self.loops.is_none() {
            return Err(Error::Invalid("interleaved runs need a duration or a loop count".into()));
        }
        if let Some(h) = self.histogram {
            if h.buckets == 0 || h.unit_ns <= 0 {
                return Err(Error::Invalid("the histogram needs at least one bucket".into()));
            }
            if h.buckets > MAX_HISTOGRAM_BUCKETS {
                return Err(Error::Invalid(format!(
                    "{} histogram buckets are more than {MAX_HISTOGRAM_BUCKETS}: give a shorter range or wider buckets",
                    h.buckets
                )));
            }
        }
        if self.stack_prefault > MAX_SPAWNED_STACK_PREFAULT {
            return Err(Error::Invalid(format!(
                "a stack prefault of {} KiB is more than the {} KiB a measuring thread (2 MiB of stack) can take: prefault less",
                self.stack_prefault.div_ceil(1 << 10),
                MAX_SPAWNED_STACK_PREFAULT >> 10
            )));
        }
        self.validate_lengths()
    }

    /// Every length is at most [`MAX_LENGTH`] — the interval, the duration,
    /// loops × interval, all mechanisms together — computed without
    /// overflowing, and interleaving makes at most [`MAX_SLICES`] slices.
    fn validate_lengths(&self) -> Result<()> {
        for (what, length) in
            [("interval", Some(self.interval)), ("duration", self.duration), ("warm-up", Some(self.warm_up))]
        {
            if length.is_some_and(|l| l > MAX_LENGTH) {
                return Err(Error::Invalid(format!("the {what} is longer than {LONGEST}: give a shorter one")));
            }
        }
        if self.duration.is_none() {
            if let (Some(l), None) = (self.loops, self.loops_length().filter(|l| *l <= MAX_LENGTH)) {
                return Err(Error::Invalid(format!(
                    "{l} loops of {} last longer than {LONGEST}: give fewer loops or a shorter interval",
                    self.interval
                )));
            }
        }
        let Some(per) = self.per_mechanism() else { return Ok(()) };
        if self.expected_duration().is_none_or(|all| all > MAX_LENGTH) {
            return Err(Error::Invalid(format!(
                "{} mechanisms of {per} each last longer than {LONGEST}: measure fewer mechanisms or for less time",
                self.mechanisms.len()
            )));
        }
        if let (Some(slice), Some(total)) = (self.interleave, self.interleaved_total()) {
            // Both are positive here (checked above); a slice of zero is one round.
            let (total, len) = (total.as_ns().unsigned_abs(), slice.as_ns().max(0).unsigned_abs());
            let rounds = if len > 0 { total.div_ceil(len) } else { 1 };
            let slices = usize::try_from(rounds).ok().and_then(|r| r.checked_mul(self.mechanisms.len()));
            if slices.is_none_or(|n| n > MAX_SLICES) {
                return Err(Error::Invalid(format!(
                    "interleaving {} of {} mechanisms in slices of {slice} makes more than {MAX_SLICES} slices: give longer slices or a shorter duration",
                    Nanos(total as i64),
                    self.mechanisms.len()
                )));
            }
        }
        Ok(())
    }

    /// loops × interval; `None` without loops or when it overflows.
    fn loops_length(&self) -> Option<Nanos> {
        let loops = i64::try_from(self.loops?).ok()?;
        self.interval.as_ns().checked_mul(loops).map(Nanos)
    }

    /// How long each mechanism is measured: the duration, or loops ×
    /// interval when shorter (a product too large for i64 is longer than any
    /// duration); `None` when nothing bounds it or loops × interval overflows
    /// without a duration.
    fn per_mechanism(&self) -> Option<Nanos> {
        match (self.duration, self.loops_length()) {
            (Some(d), Some(l)) => Some(d.min(l)),
            (Some(d), None) => Some(d),
            (None, l) => l,
        }
    }

    /// What each mechanism gets in all its interleaved slices together.
    fn interleaved_total(&self) -> Option<Nanos> {
        self.duration.or_else(|| self.loops_length())
    }

    /// Wall time the run is expected to take (all mechanisms, warm-ups
    /// included), when bounded by a duration; `None` also when it does not
    /// fit in i64 (which [`MeasureConfig::validate`] rejects).
    pub fn expected_duration(&self) -> Option<Nanos> {
        let mechanisms = i64::try_from(self.mechanisms.len()).ok()?;
        let each = self.per_mechanism()?.as_ns().checked_add(self.warm_up.as_ns())?;
        each.checked_mul(mechanisms).map(Nanos)
    }

    /// The CPUs the threads are pinned to, sorted and without repeats;
    /// `None` when a thread is not pinned (it may run on any allowed CPU).
    pub fn pinned_cpus(&self) -> Option<Vec<usize>> {
        if self.threads.iter().any(|t| t.cpus.is_empty()) {
            return None;
        }
        let mut cpus: Vec<usize> = self.threads.iter().flat_map(|t| t.cpus.iter().copied()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        Some(cpus)
    }

    /// The CPUs the run's threads may run on: the pinned ones, or every CPU
    /// the process may use when a thread is not pinned.
    pub fn measured_cpus(&self) -> Result<Vec<usize>> {
        self.pinned_cpus().map_or_else(crate::info::allowed_cpus, Ok)
    }

    /// The slices the run is made of.
    pub fn slices(&self) -> Vec<super::slices::Slice> {
        let rest = |m: usize| match self.rest_after_spinning {
            Some((share, rest)) if self.mechanisms[m].spin_share(self.interval, self.hybrid_slack) >= share => rest,
            _ => Nanos::ZERO,
        };
        match self.interleave {
            None => super::slices::sequential(self.mechanisms.len(), self.duration, rest),
            Some(slice) => {
                // Unbounded, or too long to count (validate rejects both): no slices.
                let total = self.interleaved_total().unwrap_or(Nanos::ZERO);
                super::slices::interleaved(self.mechanisms.len(), total, slice, rest)
            }
        }
    }

    pub(crate) fn wait_config(&self) -> WaitConfig {
        WaitConfig { clock: self.clock, hybrid_slack: self.hybrid_slack, waiters: self.waiters.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_cpus_are_the_pinned_ones_or_all_allowed() {
        let pinned = |cpus: Vec<usize>| ThreadSetup { cpus, ..ThreadSetup::default() };
        let cfg = MeasureConfig { threads: vec![pinned(vec![3, 1]), pinned(vec![1])], ..MeasureConfig::default() };
        assert_eq!(cfg.pinned_cpus(), Some(vec![1, 3]));
        assert_eq!(cfg.measured_cpus().unwrap(), vec![1, 3]);
        let cfg = MeasureConfig { threads: vec![pinned(vec![0]), ThreadSetup::default()], ..cfg };
        assert_eq!(cfg.pinned_cpus(), None);
        assert_eq!(cfg.measured_cpus().unwrap(), crate::info::allowed_cpus().unwrap());
    }

    #[test]
    fn rejects_bad_values() {
        let ok = MeasureConfig::default();
        ok.validate().unwrap();
        for bad in [
            MeasureConfig { interval: Nanos::ZERO, ..ok.clone() },
            MeasureConfig { loops: Some(0), ..ok.clone() },
            MeasureConfig { duration: Some(Nanos(-1)), ..ok.clone() },
            MeasureConfig { mechanisms: vec![], ..ok.clone() },
            MeasureConfig { threads: vec![], ..ok.clone() },
            MeasureConfig {
                mechanisms: vec![Mechanism::Itimer],
                threads: vec![ThreadSetup::default(), ThreadSetup::default()],
                ..ok.clone()
            },
            MeasureConfig { mechanisms: vec![Mechanism::Itimer], interval: Nanos(1500), ..ok.clone() },
            MeasureConfig { stack_prefault: MAX_SPAWNED_STACK_PREFAULT + 1, ..ok.clone() },
            MeasureConfig { stack_prefault: usize::MAX, ..ok.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn expected_duration() {
        let c = MeasureConfig { loops: Some(100), duration: None, ..Default::default() };
        assert_eq!(c.expected_duration(), Some(Nanos::from_ms(100)));
        let c = MeasureConfig { mechanisms: vec![Mechanism::Spin, Mechanism::Hybrid], ..Default::default() };
        assert_eq!(c.expected_duration(), Some(Nanos::from_secs(20)));
        let c = MeasureConfig { loops: Some(3), duration: Some(Nanos::from_secs(1)), ..Default::default() };
        assert_eq!(c.expected_duration(), Some(Nanos::from_ms(3)), "the loops end it first");
    }

    #[test]
    fn the_warm_up_comes_before_each_mechanism() {
        let c = MeasureConfig {
            mechanisms: vec![Mechanism::Spin, Mechanism::Hybrid],
            duration: Some(Nanos::from_secs(3)),
            warm_up: Nanos::from_secs(1),
            ..Default::default()
        };
        c.validate().unwrap();
        assert_eq!(c.expected_duration(), Some(Nanos::from_secs(8)));
        assert!(MeasureConfig { warm_up: Nanos(-1), ..c.clone() }.validate().is_err());
        let long = MeasureConfig { warm_up: Nanos(i64::MAX), ..c };
        assert!(long.validate().unwrap_err().to_string().contains("the warm-up is longer than 73 years"));
    }

    #[test]
    fn products_that_overflow_are_rejected() {
        let second = Nanos::from_secs(1);
        let ok = MeasureConfig { interval: second, duration: None, ..Default::default() };
        for loops in [i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX, 9_223_372_037, 2_305_843_010] {
            let c = MeasureConfig { loops: Some(loops), ..ok.clone() };
            let e = c.validate().expect_err("loops × interval overflows").to_string();
            assert!(
                e.contains(&format!("{loops} loops of 1.000 s last longer than 73 years")) && e.contains("fewer loops"),
                "{e}"
            );
            assert!(c.expected_duration().is_none_or(|d| d > MAX_LENGTH));
        }
        // The largest loop count that fits is accepted.
        let fits = MeasureConfig { loops: Some(2_305_843_009), ..ok.clone() };
        fits.validate().unwrap();
        assert_eq!(fits.expected_duration(), Some(Nanos(2_305_843_009_000_000_000)));
        // Lengths beyond MAX_LENGTH: a deadline on the clock would overflow.
        for bad in [
            MeasureConfig { interval: Nanos(i64::MAX), ..ok.clone() },
            MeasureConfig { duration: Some(Nanos(i64::MAX)), ..ok.clone() },
        ] {
            assert!(bad.validate().unwrap_err().to_string().contains("longer than 73 years"), "{bad:?}");
        }
        // A duration bounds the run whatever the loop count.
        let bounded = MeasureConfig { loops: Some(u64::MAX), duration: Some(second), ..ok.clone() };
        bounded.validate().unwrap();
        assert_eq!(bounded.expected_duration(), Some(second));
        // Each mechanism fits, all of them together do not.
        let all = MeasureConfig {
            mechanisms: vec![Mechanism::Spin, Mechanism::Hybrid],
            duration: Some(Nanos(i64::MAX / 4 + 1)),
            ..ok.clone()
        };
        assert!(all.validate().unwrap_err().to_string().contains("2 mechanisms"));
        let overflow = MeasureConfig { mechanisms: vec![Mechanism::Spin; 5], duration: Some(MAX_LENGTH), ..ok.clone() };
        assert!(overflow.validate().is_err());
        assert_eq!(overflow.expected_duration(), None, "5 × MAX_LENGTH does not fit in i64");
        // Too many interleaved slices: an allocation the size of the universe.
        let tiny = MeasureConfig {
            mechanisms: vec![Mechanism::Spin, Mechanism::Hybrid],
            duration: Some(Nanos::from_secs(3600)),
            interleave: Some(Nanos(1)),
            ..ok.clone()
        };
        assert!(tiny.validate().unwrap_err().to_string().contains("longer slices"));
        let fine = MeasureConfig { interleave: Some(Nanos::from_ms(10)), ..tiny };
        fine.validate().unwrap();
        assert_eq!(fine.slices().len(), 2 * 360_000);
        let huge = MeasureConfig { histogram: Some(HistogramSpec { buckets: usize::MAX, unit_ns: 1 }), ..ok };
        assert!(huge.validate().unwrap_err().to_string().contains("histogram buckets"));
    }

    #[test]
    fn a_mechanism_without_a_waiter_is_refused_in_the_same_words_before_and_at_the_run() {
        let m = crate::testing::MOCK;
        let cfg = MeasureConfig { mechanisms: vec![m], ..Default::default() };
        let before = cfg.validate().unwrap_err().to_string();
        let at = crate::wait::build(m, &cfg.wait_config()).err().unwrap().to_string();
        assert_eq!(before, at);
        assert!(before.contains("mock has no waiter of the library's own: supply one (WaiterSource)"), "{before}");
    }
}
