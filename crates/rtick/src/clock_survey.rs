//! What reading time costs: every clock's read cost, resolution, observed
//! granularity and whether the vDSO serves it; the TSC's flags, frequency
//! and cross-CPU consistency.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::clock::PosixClock;
use crate::sys::{clock, sched, tsc};
use crate::time::Nanos;

pub use crate::sys::tsc::Rdtscp;

/// A clock that can be read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A POSIX clock ([`PosixClock::ALL`] are those measured, in order).
    Posix(PosixClock),
    /// The `rdtsc` instruction (x86-64).
    Rdtsc,
    /// The `rdtscp` instruction (x86-64), on a CPU that has it.
    Rdtscp(Rdtscp),
}

impl Source {
    /// The name as the kernel (or the instruction set) spells it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Posix(c) => c.name(),
            Source::Rdtsc => "rdtsc",
            Source::Rdtscp(_) => "rdtscp",
        }
    }

    /// One reading, in the source's own unit (ns, or TSC ticks).
    #[inline]
    fn read(self) -> i64 {
        match self {
            Source::Posix(c) => clock::now(c).as_ns(),
            #[cfg(target_arch = "x86_64")]
            Source::Rdtsc => tsc::rdtsc() as i64,
            #[cfg(target_arch = "x86_64")]
            Source::Rdtscp(r) => r.read() as i64,
            #[cfg(not(target_arch = "x86_64"))]
            _ => 0,
        }
    }
}

/// How to measure.
#[derive(Copy, Clone, Debug)]
pub struct CostSpec {
    /// Batches to time (the median and p99 are over batches).
    pub batches: usize,
    /// Reads per batch.
    pub reads: usize,
}

impl CostSpec {
    /// The most batches: each keeps one `f64` (8 MB at most).
    pub const MAX_BATCHES: usize = 1_000_000;
    /// The most reads per batch.
    pub const MAX_READS: usize = 1_000_000;
    /// The most reads of one clock (batches × reads): at a system call's
    /// cost in a VM, about a minute per clock.
    pub const MAX_TOTAL_READS: u64 = 100_000_000;
}

/// The most timestamp exchanges per CPU pair in [`cross_cpu`].
pub const MAX_ROUNDS: usize = 10_000_000;

impl Default for CostSpec {
    fn default() -> Self {
        CostSpec { batches: 200, reads: 1000 }
    }
}

/// Median and p99 of per-read cost over batches, in ns.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Cost {
    /// Median per-read cost.
    pub median_ns: f64,
    /// 99th percentile per-read cost.
    pub p99_ns: f64,
}

/// Times `batches` batches of `reads` calls to `f`, each batch with two
/// CLOCK_MONOTONIC reads around it (their cost is spread over the batch).
pub fn cost_of(spec: CostSpec, f: impl FnMut() -> i64) -> Cost {
    cost_timed_by(spec, || clock::now(PosixClock::Monotonic).as_ns(), f)
}

/// [`cost_of`] with the clock that times the batches (ns) given.
fn cost_timed_by(spec: CostSpec, mut now: impl FnMut() -> i64, mut f: impl FnMut() -> i64) -> Cost {
    let mut per = Vec::with_capacity(spec.batches);
    let mut sink = 0i64;
    for _ in 0..spec.batches {
        let a = now();
        for _ in 0..spec.reads {
            sink = sink.wrapping_add(std::hint::black_box(f()));
        }
        let b = now();
        per.push((b - a) as f64 / spec.reads as f64);
    }
    std::hint::black_box(sink);
    per.sort_by(f64::total_cmp);
    let at = |q: f64| crate::stats::percentile::of_sorted(&per, q).unwrap_or(f64::NAN);
    Cost { median_ns: at(0.5), p99_ns: at(0.99) }
}

/// The smallest non-zero step between consecutive readings (source units):
/// at least `reads` readings, and on until a few steps were seen (coarse
/// clocks move once per tick) or 50 ms passed; `None` if it never moved.
pub fn granularity(src: Source, reads: usize) -> Option<i64> {
    granularity_of(reads, || src.read())
}

/// [`granularity`] of any reading function.
fn granularity_of(reads: usize, mut read: impl FnMut() -> i64) -> Option<i64> {
    let start = clock::now(PosixClock::Monotonic);
    let mut prev = read();
    let (mut best, mut steps, mut n): (Option<i64>, u32, usize) = (None, 0, 0);
    while n < reads || (steps < 3 && clock::now(PosixClock::Monotonic) - start < Nanos::from_ms(50)) {
        let v = read();
        let d = v - prev;
        if d > 0 {
            best = Some(best.map_or(d, |b| b.min(d)));
            steps += 1;
        }
        prev = v;
        n += 1;
    }
    best
}

/// One clock's figures.
#[derive(Clone, Debug)]
pub struct ClockFigures {
    /// The source.
    pub source: Source,
    /// Read cost.
    pub cost: Cost,
    /// `clock_getres` (POSIX clocks).
    pub resolution: Option<Nanos>,
    /// Smallest observed step, in ns (TSC: converted with the calibrated frequency).
    pub granularity_ns: Option<f64>,
    /// Whether reads stay in user space (vDSO or an instruction): read cost
    /// well under that of the same read forced through the system call.
    pub vdso: bool,
}

/// Measures every clock the kernel has (and the TSC instructions on x86-64
/// when `tsc_hz` is known; `rdtscp` where the CPU has it). `syscall` is
/// [`syscall_cost`]: a read that costs well under it stays in user space.
pub fn measure_all(spec: CostSpec, syscall: Cost, tsc_hz: Option<f64>) -> Vec<ClockFigures> {
    let mut out = Vec::new();
    // A clock this kernel lacks (CLOCK_TAI before Linux 3.10) is left out.
    for c in PosixClock::ALL.into_iter().filter(|&c| clock::try_now(c).is_ok()) {
        let src = Source::Posix(c);
        let cost = cost_of(spec, || src.read());
        out.push(ClockFigures {
            source: src,
            cost,
            resolution: clock::resolution(c).ok(),
            granularity_ns: granularity(src, 100_000).map(|g| g as f64),
            // A vDSO read costs a fraction of a kernel entry; half is a wide margin.
            vdso: cost.median_ns < syscall.median_ns * 0.5,
        });
    }
    if let (true, Some(hz)) = (cfg!(target_arch = "x86_64"), tsc_hz) {
        let mut srcs = vec![Source::Rdtsc];
        srcs.extend(Rdtscp::detect().map(Source::Rdtscp));
        for src in srcs {
            let cost = cost_of(spec, || src.read());
            out.push(ClockFigures {
                source: src,
                cost,
                resolution: None,
                granularity_ns: granularity(src, 100_000).map(|g| g as f64 * 1e9 / hz),
                vdso: true,
            });
        }
    }
    out
}

/// The cost of a `clock_gettime(CLOCK_MONOTONIC)` forced through the kernel.
pub fn syscall_cost(spec: CostSpec) -> Cost {
    cost_of(spec, || clock::syscall_now(PosixClock::Monotonic).as_ns())
}

/// Calibrates the TSC frequency against CLOCK_MONOTONIC_RAW over `span`
/// ([`crate::tsc_clock::calibrate`]); NaN if the TSC did not move.
#[cfg(target_arch = "x86_64")]
pub fn tsc_frequency(span: Nanos) -> f64 {
    crate::tsc_clock::calibrate(PosixClock::MonotonicRaw, span).map_or(f64::NAN, |c| c.hz)
}

/// What the cross-CPU test saw.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CrossCpu {
    /// Ordered CPU pairs tested.
    pub pairs_tested: usize,
    /// The largest backwards step: a reading taken after another one on a
    /// different CPU, yet smaller (TSC ticks, or ns without a TSC).
    pub max_backwards: i64,
}

/// For every ordered pair of `cpus`, two pinned threads pass a timestamp back
/// and forth `rounds` times through an atomic; each reads its own clock right
/// after seeing the other's value, so causally later. Any reading smaller
/// than the one it followed is a backwards step.
pub fn cross_cpu(cpus: &[usize], rounds: usize, read: fn() -> i64) -> CrossCpu {
    let mut res = CrossCpu::default();
    for &a in cpus {
        for &b in cpus {
            if a == b {
                continue;
            }
            res.pairs_tested += 1;
            res.max_backwards = res.max_backwards.max(ping_pong(a, b, rounds, read));
        }
    }
    res
}

fn ping_pong(a: usize, b: usize, rounds: usize, read: fn() -> i64) -> i64 {
    // Even values: a's turn; odd: b's. The slot carries the last timestamp.
    let turn = AtomicU64::new(0);
    let stamp = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let player = |cpu: usize, parity: u64| {
        let (turn, stamp, failed) = (&turn, &stamp, &failed);
        move || {
            if sched::set_affinity(&[cpu]).is_err() {
                failed.store(true, Ordering::Relaxed);
                return 0;
            }
            let mut worst = 0i64;
            for i in 0..rounds as u64 {
                let my = 2 * i + parity;
                while turn.load(Ordering::Acquire) != my {
                    if failed.load(Ordering::Relaxed) {
                        return worst;
                    }
                    std::hint::spin_loop();
                }
                let now = read();
                let theirs = stamp.load(Ordering::Relaxed) as i64;
                if my > 0 {
                    worst = worst.max(theirs - now);
                }
                stamp.store(now as u64, Ordering::Relaxed);
                turn.store(my + 1, Ordering::Release);
            }
            worst
        }
    };
    std::thread::scope(|s| {
        let ha = s.spawn(player(a, 0));
        let hb = s.spawn(player(b, 1));
        ha.join().unwrap_or(0).max(hb.join().unwrap_or(0))
    })
}

/// The TSC read as a plain function for [`cross_cpu`]: fenced, so that it is
/// ordered after the load that saw the other CPU's timestamp.
#[cfg(target_arch = "x86_64")]
pub fn read_tsc() -> i64 {
    tsc::rdtsc_ordered() as i64
}

/// CLOCK_MONOTONIC_RAW in ns (for [`cross_cpu`] without a TSC).
pub fn read_monotonic_raw() -> i64 {
    clock::now(PosixClock::MonotonicRaw).as_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::Cell;
    use std::sync::atomic::AtomicI64;

    /// Batches timed by a clock that only `f` advances: batch `k` of 100
    /// costs exactly 100 − k ns a read, so the per-read costs are 1..=100
    /// (in reverse order) and the nearest-rank median and p99 are 50 and 99.
    #[test]
    fn costs_are_per_read_and_nearest_rank() {
        let spec = CostSpec { batches: 100, reads: 8 };
        let (t, calls) = (Cell::new(0i64), Cell::new(0usize));
        let f = || {
            let batch = (calls.get() / spec.reads) as i64;
            calls.set(calls.get() + 1);
            t.set(t.get() + 100 - batch);
            0
        };
        let c = cost_timed_by(spec, || t.get(), f);
        assert_eq!(calls.get(), 800);
        assert_eq!(c, Cost { median_ns: 50.0, p99_ns: 99.0 });
        // A real clock read costs something: not zero, and under a millisecond.
        let real = cost_of(CostSpec { batches: 20, reads: 200 }, || clock::now(PosixClock::Monotonic).as_ns());
        assert!(real.median_ns > 0.0 && real.median_ns < 1e6, "{real:?}");
    }

    /// Readings stepping by 7, 5, 3 and 5 (and standing still between): the
    /// smallest step is 3; a step backwards is no step; a source that never
    /// moves has none.
    #[test]
    fn granularity_is_the_smallest_forward_step() {
        let seq = |values: &'static [i64]| {
            let i = Cell::new(0usize);
            move || {
                let v = values[i.get().min(values.len() - 1)];
                i.set(i.get() + 1);
                v
            }
        };
        assert_eq!(granularity_of(9, seq(&[10, 10, 17, 17, 22, 22, 22, 25, 30])), Some(3));
        assert_eq!(granularity_of(4, seq(&[10, 20, 15, 19])), Some(4));
        assert_eq!(granularity_of(10, seq(&[5])), None);
    }

    /// A source that steps back 5 units at every reading, whichever thread
    /// reads: every hand-over sees a backwards step of exactly 5. One that
    /// only goes forward shows none.
    #[test]
    fn cross_cpu_measures_backward_steps() {
        static BACKWARDS: AtomicI64 = AtomicI64::new(1_000_000);
        static FORWARD: AtomicI64 = AtomicI64::new(0);
        fn backwards() -> i64 {
            BACKWARDS.fetch_sub(5, Ordering::Relaxed) - 5
        }
        fn forward() -> i64 {
            FORWARD.fetch_add(3, Ordering::Relaxed) + 3
        }
        let cpus = sched::affinity().unwrap();
        let pair = [cpus[0], *cpus.last().unwrap()];
        // On a single CPU both players share it (the pair is tested all the same).
        assert_eq!(ping_pong(pair[0], pair[1], 100, backwards), 5);
        assert_eq!(ping_pong(pair[0], pair[1], 100, forward), 0);
        let n = cpus.len().min(3);
        let r = cross_cpu(&cpus[..n], 50, backwards);
        assert_eq!(r, CrossCpu { pairs_tested: n * (n - 1), max_backwards: if n > 1 { 5 } else { 0 } });
    }
}
