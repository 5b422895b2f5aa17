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
//! metrics (see `metrics`), and the HTTP threads only read.

mod http;
mod metrics;
mod spikes;
mod window;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use anyhow::Result;
use rtick::measure;
use rtick::system::SystemInfo;
use rtick::Nanos;

use super::measure::{run_file, settle, Held};
use super::plan::{loop_plan, Cpus};
use crate::cli::MonitorArgs;
use crate::output::header;
use crate::Usage;

/// With several mechanisms: the slice each gets in turn …
const SLICE: Nanos = Nanos::from_secs(1);
/// … in runs of this long per mechanism, one run after the other.
const ROUND: Nanos = Nanos::from_secs(60);
/// Seconds of wake-ups a trace ring holds if the collector stalls. The
/// collector runs at normal priority, by design: on a machine loaded far
/// beyond its CPUs (load average 60–97 seen with two busy loops and parallel
/// builds) it stalled over 8 s. A row is 32 bytes: 16 s at 1 kHz is 512 KiB
/// per thread.
const RING_SECONDS: i64 = 16;

pub fn run(a: &MonitorArgs) -> Result<()> {
    let plan = loop_plan(&a.looping, false, &Cpus::detect()?)?;
    let mut cfg = plan.cfg;
    if cfg.mechanisms.len() > 1 {
        // The mechanisms take turns in short slices, so that each is
        // measured all the time, as --compare does.
        cfg.interleave = Some(SLICE);
        cfg.duration = Some(ROUND);
    }
    cfg.validate().map_err(|e| Usage(e.to_string()))?;
    if a.duration.is_some_and(|d| d <= Nanos::ZERO) {
        return Err(Usage("-D/--duration: must be greater than zero".into()).into());
    }
    let listener = http::bind(a.listen)?;

    let sys = SystemInfo::read();
    let mut warnings = Vec::new();
    settle(&mut cfg, &sys, plan.policy_explicit, &mut warnings)?;
    let stop = crate::stop_flag()?;
    let (mut producers, consumers) = measure::trace_rings(cfg.threads.len(), ring_rows(cfg.interval));
    let mut collector = metrics::Collector::new(&cfg, &sys, a.spike, consumers);
    http::serve(listener, collector.exporter())?;

    let held = Held::take((plan.mlock, plan.mlock_explicit), &cfg, a.looping.dma_latency, &mut warnings)?;
    let file = run_file(&cfg, &sys, &held, warnings);
    if a.quiet {
        // As measure -q: the warnings on stdout.
        file.warnings.iter().for_each(|w| println!("warning: {w}"));
    } else {
        // measure's header, with monitor's own bound (a run of several
        // mechanisms is only one round of the loop).
        let bound = a.duration.map_or("until Ctrl-C".to_string(), |d| format!("for {d}"));
        print!("{}", header::render_as(&file, &held.mlock_detail, "monitor", Some(&bound)));
        let paths = if a.spike.is_some() { "/metrics and /spikes" } else { "/metrics" };
        println!("  serving       {}", serving(a.listen, paths));
    }
    let started = Instant::now();
    let until = a.duration.map(|d| started + d.to_std());
    let mut first = true;
    while !stop.load(Relaxed) {
        collector.new_run();
        let report = measure::run(&cfg, &stop, Some(&mut producers), |p| {
            collector.collect(p);
            stop_at(&stop, until);
        })?;
        collector.finish(
            report
                .results
                .iter()
                .map(|r| (r.thread, r.mechanism, [r.latency.count(), r.overruns, r.missed, r.trace_dropped])),
        );
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
    drop(held);
    Ok(())
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
/// its memory between 256 KiB and 32 MiB a thread.
fn ring_rows(interval: Nanos) -> usize {
    let per_second = Nanos::from_secs(1).as_ns() / interval.as_ns().max(1);
    (per_second * RING_SECONDS).clamp(1 << 13, 1 << 20) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_hold_seconds_of_wake_ups_within_bounds() {
        assert_eq!(ring_rows(Nanos::from_us(100)), 160_000);
        assert_eq!(ring_rows(Nanos::from_ms(1)), 16_000);
        assert_eq!(ring_rows(Nanos::from_ms(10)), 1 << 13, "at least 8192 rows");
        assert_eq!(ring_rows(Nanos(1)), 1 << 20, "at most 2^20 rows");
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
