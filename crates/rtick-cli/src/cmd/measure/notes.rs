//! What `measure` prints after the run: the table, what was unavailable,
//! the notes, the warnings, and with --compare the recommendation.

use rtick::measure::{MeasureConfig, MeasureReport};
use rtick_model::json::RunFile;

use crate::cli::MeasureArgs;
use crate::output::{fmt_latency, header, recommend};

/// The table, what is unavailable, the notes, the warnings after the run,
/// and with --compare the recommendation.
pub fn print_results(
    a: &MeasureArgs,
    cfg: &MeasureConfig,
    file: &RunFile,
    report: &MeasureReport,
    rows: Option<u64>,
    after: &[String],
) {
    println!();
    if !file.results.is_empty() {
        print!("{}", crate::output::phases::render(&file.results, a.nsecs));
    }
    if let Some(l) = &file.load {
        print!("{}", header::load_summary(l));
    }
    for u in &file.unavailable {
        println!("unavailable: {}: {}", u.mechanism, u.reason);
    }
    print_notes(cfg, report, rows, a.nsecs);
    for w in after {
        println!("warning: {w}");
    }
    if cfg.interleave.is_some() && !file.results.is_empty() {
        println!();
        for line in recommend::recommend(&crate::output::phases::last_phase(&file.results), a.nsecs) {
            println!("{line}");
        }
    }
}

fn print_notes(cfg: &MeasureConfig, report: &MeasureReport, rows: Option<u64>, nsecs: bool) {
    let rel: Vec<&str> = cfg.mechanisms.iter().filter(|m| m.info().relative).map(|m| m.name()).collect();
    if !rel.is_empty() {
        println!(
            "note: {} sleep relative intervals: latency is against the time read before the sleep (cyclictest -r)",
            rel.join(", ")
        );
    }
    for r in report.results.iter().filter(|r| r.slack.is_some()) {
        let slack = r.slack.unwrap_or_default();
        match r.calibration {
            Some(c) if c.spins_whole_period => println!(
                "note: hybrid T{} spins the whole period, CPU as spin (auto: the sleep overshoot, p50 {}, p99 {} over {} calibration sleeps, does not fit in ¾ of the interval; a fixed --hybrid-slack overrides)",
                r.thread, c.overshoot_p50, c.overshoot_p99, c.samples
            ),
            Some(c) => println!(
                "note: hybrid T{} slack settled at {} (auto: started at {} from a sleep overshoot p50 {}, p99 {} over {} calibration sleeps, then followed the overshoot's p99)",
                r.thread, slack, c.first_slack, c.overshoot_p50, c.overshoot_p99, c.samples
            ),
            None => println!("note: hybrid T{} slack {slack} (fixed)", r.thread),
        }
    }
    if let Some(rows) = rows {
        println!("note: trace: {} written", rtick::text::count(rows, "row"));
    }
    if let Some(b) = report.breaktrace {
        println!(
            "breaktrace: {} T{} cycle {}: latency {} {} exceeded the threshold; run stopped",
            b.mechanism,
            b.thread,
            b.cycle,
            fmt_latency(b.latency.as_ns(), nsecs),
            crate::output::unit(nsecs)
        );
        if let Some(t) = &cfg.tracemark {
            let dir = t.dir().display();
            if b.marked {
                println!("breaktrace: marked in {dir}/trace_marker and tracing stopped; read {dir}/trace (or trace-cmd extract), then echo 1 > {dir}/tracing_on");
            } else {
                println!("breaktrace: writing the mark to {dir} failed; the trace was not stopped");
            }
        }
    }
    if report.interrupted {
        println!("interrupted after {}: results so far", report.elapsed);
    }
}
