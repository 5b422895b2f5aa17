//! What a measurement run is asked to do.

use std::sync::Arc;

use super::TraceMark;
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::rt::{ThreadSetup, DEFAULT_STACK_PREFAULT};
use crate::schedule::OverrunPolicy;
use crate::time::Nanos;
use crate::wait::{HybridSlack, Mechanism, WaitConfig};

/// cyclictest-style fixed-width buckets to keep per thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HistogramSpec {
    /// Number of buckets.
    pub buckets: usize,
    /// Bucket width in ns (1000: µs buckets; 1 with -N).
    pub unit_ns: i64,
}

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
    /// The script of the test-only `mock` mechanism (feature `mock`).
    #[cfg(any(test, feature = "mock"))]
    pub mock: crate::wait::MockScript,
    /// Interleave the mechanisms in slices of this length (`--compare`);
    /// `None` measures them one after the other.
    pub interleave: Option<Nanos>,
    /// Rest after each slice of a mechanism that spins at least this share of
    /// its period, so that RT throttling it causes ends before the next slice:
    /// `(share, rest)`; set from `sched_rt_runtime_us` by the caller.
    pub rest_after_spinning: Option<(f64, Nanos)>,
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
            #[cfg(any(test, feature = "mock"))]
            mock: Default::default(),
            interleave: None,
            rest_after_spinning: None,
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
            #[cfg(any(test, feature = "mock"))]
            if *m == Mechanism::Mock && self.mock.latencies.is_empty() {
                return Err(Error::Invalid("the mock mechanism needs latencies".into()));
            }
        }
        if let HybridSlack::Fixed(s) = self.hybrid_slack {
            if s < Nanos::ZERO {
                return Err(Error::Invalid("the hybrid slack must not be negative".into()));
            }
        }
        if self.interleave.is_some() && self.duration.is_none() && self.loops.is_none() {
            return Err(Error::Invalid("interleaved runs need a duration or a loop count".into()));
        }
        if let Some(h) = self.histogram {
            if h.buckets == 0 || h.unit_ns <= 0 {
                return Err(Error::Invalid("the histogram needs at least one bucket".into()));
            }
        }
        Ok(())
    }

    /// Wall time the run is expected to take (all mechanisms), when bounded by a duration.
    pub fn expected_duration(&self) -> Option<Nanos> {
        let per = match (self.duration, self.loops) {
            (Some(d), Some(l)) => d.min(self.interval * l as i64),
            (Some(d), None) => d,
            (None, Some(l)) => self.interval * l as i64,
            (None, None) => return None,
        };
        Some(per * self.mechanisms.len() as i64)
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
                let total = match (self.duration, self.loops) {
                    (Some(d), _) => d,
                    (None, Some(l)) => self.interval * l as i64,
                    (None, None) => Nanos::ZERO,
                };
                super::slices::interleaved(self.mechanisms.len(), total, slice, rest)
            }
        }
    }

    pub(crate) fn wait_config(&self) -> WaitConfig {
        WaitConfig {
            clock: self.clock,
            hybrid_slack: self.hybrid_slack,
            #[cfg(any(test, feature = "mock"))]
            mock: self.mock.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
