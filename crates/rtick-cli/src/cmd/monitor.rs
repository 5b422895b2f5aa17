//! `rtick monitor`: the loop of `rtick measure`, run until stopped, its
//! figures served to Prometheus at `/metrics` and its latest spikes at
//! `/spikes`.
//!
//! Order, as in measure: every usage error first; then the port is bound,
//! so that a second instance fails before any setting changes; then the
//! settings (policy probe, locked memory, cpu_dma_latency) are taken by
//! measure's own code and held by guards that restore them on return, also
//! after Ctrl-C or SIGTERM. The measuring threads only push trace rows and
//! store atomics; the thread that watches the run collects them into the
//! metrics (see `metrics`), and the HTTP thread only reads.

mod attach;
mod http;
mod metrics;
mod noise;
mod spikes;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use anyhow::{Context, Result};
use rtick::measure::{self, MeasureConfig};
use rtick::system::SystemInfo;
use rtick::Nanos;

use super::measure::run_file::run_file;
use super::measure::setup::{mlock_detail, request, settle, take};
use super::plan::{loop_plan, Cpus};
use crate::cli::MonitorArgs;
use crate::output::header;
use crate::Usage;
use rtick::explain::TraceBuffers;

/// With several mechanisms: the slice each gets in turn …
const SLICE: Nanos = Nanos::from_secs(1);
/// … in runs of this long per mechanism, one run after the other.
const ROUND: Nanos = Nanos::from_secs(60);
/// Moves this thread — the collector, and the endpoint's thread it starts
/// next — off the measured CPUs when the loop is pinned and other CPUs are
/// allowed: a scrape's work, and the loopback traffic the kernel handles on
/// the CPU that sends it, then never delays a measured wake-up. The guard
/// puts the affinity back; `None` when every allowed CPU is measured (or a
/// thread is not pinned).
fn beside_the_loop(cfg: &MeasureConfig) -> Result<Option<Beside>> {
    cfg.pinned_cpus().map_or(Ok(None), |measured| off_cpus(&measured))
}

/// This thread's affinity while off the measured CPUs: the guard that puts
/// it back, and the CPUs it is on.
type Beside = (rtick::rt::SetupGuard, Vec<usize>);

/// Moves this thread — and the endpoint's thread it starts next — off
/// `cpus` (the loop's, the spinners', the attached program's) when another
/// CPU is allowed.
fn off_cpus(cpus: &[usize]) -> Result<Option<Beside>> {
    let others: Vec<usize> = rtick::info::allowed_cpus()?.into_iter().filter(|c| !cpus.contains(c)).collect();
    if others.is_empty() {
        return Ok(None);
    }
    let guard = rtick::rt::Setup::new().affinity(&others).apply().context("moving off the measured CPUs")?;
    Ok(Some((guard, others)))
}

/// Seconds of wake-ups a trace ring holds if the collector stalls. The
/// collector runs at normal priority, by design: on a machine loaded far
/// beyond its CPUs (load average 60–97 seen with two busy loops and parallel
/// builds) it stalled over 8 s. A row is 32 bytes: 16 s at 1 kHz is 512 KiB
/// per thread. The rings are locked into memory with the rest (mlockall), so
/// their total is capped at [`RINGS_BYTES`]: at high rates or with many
/// threads each ring holds fewer seconds (the header says how many).
const RING_SECONDS: i64 = 16;
/// The most memory all the trace rings take together: 64 MiB (16 s at
/// 20 kHz on 6 threads; 4 s at 20 kHz on 25; with -S on 64 CPUs at 1 kHz,
/// 2 s).
const RINGS_BYTES: usize = 64 << 20;
/// The size of a trace row in a ring.
const ROW_BYTES: usize = std::mem::size_of::<measure::TraceRow>();

pub fn run(a: &MonitorArgs) -> Result<()> {
    if let Some(set) = &a.noise {
        return noise::run(a, set);
    }
    let t = &a.target;
    if t.attach.is_some() || t.tid.is_some() || t.comm.is_some() {
        return attach::run(a, t);
    }
    let plan = loop_plan(&a.looping, false, &Cpus::detect()?)?;
    let req = request(&plan, a.looping.dma_latency);
    let mut cfg = plan.cfg;
    if cfg.mechanisms.len() > 1 {
        // The mechanisms take turns in short slices, so that each is
        // measured all the time, as --compare does.
        cfg.interleave = Some(SLICE);
        cfg.duration = Some(ROUND);
    }
    cfg.validate().map_err(|e| Usage(e.to_string()))?;
    if a.explain {
        super::explain::check_clock(cfg.clock)?;
    }
    if a.duration.is_some_and(|d| d <= Nanos::ZERO) {
        return Err(Usage("-D/--duration: must be greater than zero".into()).into());
    }
    let listener = http::bind(a.listen)?;
    // The address bound: port 0 asks the kernel for a free one.
    let listening = listener.local_addr().unwrap_or(a.listen);

    let sys = SystemInfo::read();
    let mut warnings = super::cleanup::warnings(a.tracefs.as_deref());
    settle(&mut cfg, &sys, plan.policy_explicit, &mut warnings)?;
    let stop = crate::stop_flag()?;
    let rows = ring_rows(cfg.interval, cfg.threads.len());
    let (mut producers, consumers) = measure::trace_rings(cfg.threads.len(), rows);
    let (live, trace_line) = a.explain.then(|| start_trace(a, &cfg)).transpose()?.unzip();
    let mut collector = metrics::Collector::new(&cfg, &sys, a.spike, live, consumers);

    let held = take(&req, &mut warnings)?;
    // Before the endpoint's thread starts, which inherits it.
    let beside = beside_the_loop(&cfg)?;
    // After the settings: the endpoint answers once they hold.
    http::serve(listener, collector.exporter())?;
    let file = run_file(&cfg, &sys, &held, warnings);
    if a.quiet {
        // As measure -q: the warnings on stdout.
        file.warnings.iter().for_each(|w| println!("warning: {w}"));
    } else {
        // measure's header, with monitor's own bound (a run of several
        // mechanisms is only one round of the loop).
        let bound = a.duration.map_or("until Ctrl-C".to_string(), |d| format!("for {d}"));
        print!("{}", header::render_as(&file, &mlock_detail(held.memory(), &cfg), "monitor", Some(&bound)));
        let paths = if a.spike.is_some() { "/metrics and /spikes" } else { "/metrics" };
        println!("  serving       {}", serving(listening, paths));
        println!("  collector     may lag {} before trace rows are dropped", lag(rows, cfg.interval));
        if let Some(line) = &trace_line {
            println!("  explain       {line}");
        }
        if let Some((_, cpus)) = &beside {
            println!(
                "  beside        collector and endpoint on CPU {}, off the measured CPUs",
                rtick::system::format_cpu_list(cpus)
            );
        }
    }
    let until = a.duration.map(|d| Instant::now() + d.to_std());
    rounds(&cfg, &stop, until, &mut producers, &mut collector)?;
    drop(held);
    Ok(())
}

/// Measures round after round until stopped (Ctrl-C or --duration), the
/// collector fed as the run goes and given each round's final counts.
fn rounds(
    cfg: &MeasureConfig,
    stop: &AtomicBool,
    until: Option<Instant>,
    producers: &mut [measure::TraceProducer],
    collector: &mut metrics::Collector,
) -> Result<()> {
    let mut first = true;
    while !stop.load(Relaxed) {
        collector.new_run();
        let report = measure::run(cfg, stop, Some(producers), |p| {
            collector.collect(p);
            stop_at(stop, until);
        })?;
        collector.finish(report.results.iter().map(|r| metrics::Final {
            thread: r.thread,
            mechanism: r.mechanism,
            tid: r.tid,
            counts: metrics::Counts {
                wakeups: r.latency.count(),
                overruns: r.overruns,
                missed: r.missed,
                dropped: r.trace_dropped,
            },
        }));
        if first {
            for u in &report.unavailable {
                println!("warning: {} is unavailable: {}", u.mechanism, u.reason);
            }
            first = false;
        }
        if report.results.is_empty() && !stop.load(Relaxed) {
            anyhow::bail!("no mechanism could run here (see the warnings above)");
        }
    }
    Ok(())
}

/// The kernel events `--explain` keeps in its window, in all: 64 MiB (at
/// 20 kHz, 180 000 events a second of 80 bytes, about 4 s of one CPU's; at
/// 1 kHz the window's seconds take 1 to 2 MiB).
const EVENTS_BYTES: usize = 64 << 20;

/// How long the window of kernel events lasts: the collector's lag (it
/// drains ten times a second; a loaded machine holds it off longer), and
/// the periods before a spike that its explanation reads.
fn keep(interval: Nanos) -> Nanos {
    Nanos::from_secs(2) + interval * 3
}

/// The sizes `--explain` takes for `cpus` traced CPUs: each CPU's kernel
/// buffer (as `measure --explain`'s; the collector reads them ten times a
/// second) and the events its window holds at most.
fn trace_sizes(cpus: usize) -> (TraceBuffers, usize) {
    let cap = rtick::explain::Recent::cap(EVENTS_BYTES / std::mem::size_of::<rtick::ktrace::Event>() / cpus.max(1));
    (TraceBuffers::for_cpus(cpus), cap)
}

/// Starts tracing the measured CPUs for `--explain`; with the header's line
/// saying what is kept.
fn start_trace(a: &MonitorArgs, cfg: &MeasureConfig) -> Result<(rtick::explain::Live, String)> {
    let cpus = cfg.measured_cpus()?;
    let root = rtick::ktrace::root(a.tracefs.as_deref());
    let (buffers, cap) = trace_sizes(cpus.len());
    let keep = keep(cfg.interval);
    let live = rtick::explain::Live::start(&root, &cpus, buffers.kb, keep, cap).context("--explain")?;
    let event = std::mem::size_of::<rtick::ktrace::Event>();
    let mut line = format!(
        "kernel trace of CPU {}, its last {keep} kept (at most {} MiB; kernel buffers {}): every spike explained; tracing adds to every latency",
        rtick::system::format_cpu_list(&cpus),
        (cap * event * cpus.len()) >> 20,
        buffers.describe()
    );
    if let Some(why) = live.stream().stacks_unavailable() {
        line.push_str(&format!("; no kernel stacks: {why}"));
    }
    Ok((live, line))
}

/// Where to scrape: the URL, or for a wildcard address the port on every
/// address (0.0.0.0 is not an address a client can use).
fn serving(listen: std::net::SocketAddr, paths: &str) -> String {
    if listen.ip().is_unspecified() {
        format!("{paths} on port {} of every address of this machine", listen.port())
    } else {
        format!("http://{listen}{paths}")
    }
}

/// Ends the run once `until` has passed (-D).
fn stop_at(stop: &AtomicBool, until: Option<Instant>) {
    if until.is_some_and(|u| Instant::now() >= u) {
        stop.store(true, Relaxed);
    }
}

/// Rows per trace ring: [`RING_SECONDS`] of wake-ups, within bounds that keep
/// its memory between 256 KiB and 32 MiB a thread, and all the `threads`
/// rings within [`RINGS_BYTES`] (down to 32 KiB a ring past 2048 threads).
fn ring_rows(interval: Nanos, threads: usize) -> usize {
    let per_second = Nanos::from_secs(1).as_ns() / interval.as_ns().max(1);
    let wanted = (per_second * RING_SECONDS).clamp(1 << 13, 1 << 20) as usize;
    wanted.min(RINGS_BYTES / ROW_BYTES / threads.max(1)).max(1 << 10)
}

/// How long `rows` last at one wake-up per `interval`: how far the collector
/// may fall behind before the measuring threads drop rows.
fn lag(rows: usize, interval: Nanos) -> String {
    let secs = rows as f64 * interval.as_ns() as f64 / 1e9;
    format!("{secs:.1} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_hold_seconds_of_wake_ups_within_bounds() {
        assert_eq!(ROW_BYTES, 32);
        assert_eq!(ring_rows(Nanos::from_us(100), 1), 160_000);
        assert_eq!(ring_rows(Nanos::from_ms(1), 1), 16_000);
        assert_eq!(ring_rows(Nanos::from_ms(10), 1), 1 << 13, "at least 8192 rows");
        assert_eq!(ring_rows(Nanos(1), 1), 1 << 20, "at most 2^20 rows");
        assert_eq!(lag(16_000, Nanos::from_ms(1)), "16.0 s");
    }

    /// Many threads at a high rate: the rings together stay within 64 MiB,
    /// each holding fewer seconds.
    #[test]
    fn all_rings_together_stay_within_their_cap() {
        for threads in [1, 2, 6, 25, 64, 256, 2048] {
            for interval in [Nanos(1), Nanos::from_us(50), Nanos::from_ms(1)] {
                let rows = ring_rows(interval, threads);
                assert!(rows * ROW_BYTES * threads <= RINGS_BYTES, "{threads} threads, {interval:?}: {rows} rows");
                assert!(rows >= 1 << 10);
            }
        }
        assert_eq!(ring_rows(Nanos::from_us(50), 6), 320_000, "16 s at 20 kHz on 6 threads");
        assert_eq!(ring_rows(Nanos::from_us(50), 64), 32_768);
        assert_eq!(lag(32_768, Nanos::from_us(50)), "1.6 s");
    }

    /// The window of events and the kernel buffers stay within 64 MiB each,
    /// whatever the number of traced CPUs.
    #[test]
    fn the_trace_takes_bounded_memory() {
        let event = std::mem::size_of::<rtick::ktrace::Event>();
        for cpus in [1, 2, 7, 8, 9, 64, 1024] {
            let (buffers, cap) = trace_sizes(cpus);
            assert!(cap * event * cpus <= EVENTS_BYTES, "{cpus} CPUs: {cap} events a CPU");
            assert!(cap.is_power_of_two(), "{cpus} CPUs: {cap}");
            let kb = buffers.kb;
            assert!((64..=8 << 10).contains(&kb) && kb % 4 == 0, "{cpus} CPUs: {kb} KiB");
            assert!(kb * cpus <= 64 << 10, "{cpus} CPUs: {kb} KiB a CPU");
            assert_eq!(buffers.capped(), cpus > 8, "{cpus} CPUs");
        }
        assert_eq!(trace_sizes(1).0.kb, 8 << 10);
    }

    #[test]
    fn a_wildcard_address_is_said_to_be_every_address() {
        assert_eq!(
            serving("0.0.0.0:9464".parse().unwrap(), "/metrics"),
            "/metrics on port 9464 of every address of this machine"
        );
        assert_eq!(
            serving("[::]:9464".parse().unwrap(), "/metrics"),
            "/metrics on port 9464 of every address of this machine"
        );
        assert_eq!(serving("127.0.0.1:9464".parse().unwrap(), "/metrics"), "http://127.0.0.1:9464/metrics");
    }
}
