//! What `rtick noise` prints: the header (system, spinners, resolution),
//! the table per CPU as `osnoise top` shows it, each CPU's sources, its
//! largest gaps, and the notes.

use std::fmt::Write;

use rtick::noise::{CpuNoise, End, NoiseRun, Plan, Source};
use rtick::system::format_cpu_list;
use rtick::Nanos;
use rtick_model::json::NoiseFile;

use super::columns::layout;

/// Sources shown per CPU; the rest are summed in one row.
const SHOWN: usize = 12;

/// µs with one decimal (ns below 10 µs with two).
fn us(n: Nanos) -> String {
    let v = n.as_ns() as f64 / 1000.0;
    if v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// The run's settings and the loop's resolution.
pub fn header(r: &NoiseRun, plan: &Plan, file: &NoiseFile) -> String {
    if r.attached.is_some() {
        return super::noise_attach::header(r, plan, file);
    }
    let mut o = String::new();
    let runtime = r.cpus.iter().map(|c| c.runtime).max().unwrap_or(Nanos::ZERO);
    let _ = writeln!(
        o,
        "rtick {} noise: CPUs {} | {:.3} s | threshold {} µs | {}",
        file.rtick_version,
        format_cpu_list(&plan.cpus),
        runtime.as_secs_f64(),
        us(r.threshold),
        if r.attribution { "gaps attributed from trace events" } else { "no attribution" }
    );
    o += &super::header::system_lines(&file.system, &rtick::noise::spin::LoopClock::get().describe());
    let policy = match plan.priority {
        0 => plan.policy.kernel_name().to_string(),
        p => format!("{} {p}", plan.policy.kernel_name()),
    };
    let left = if plan.cpu0_left_out {
        "; CPU 0 left out (it runs rtick's reader and the system's chores; -a 0 to measure it)"
    } else {
        ""
    };
    let memory = if r.memory_locked { "memory locked" } else { "memory NOT locked" };
    let _ = writeln!(o, "  spinners      {policy}, one pinned to each CPU, {memory}{left}");
    for c in &r.cpus {
        let rate = c.iterations as f64 / c.runtime.as_secs_f64().max(1e-9) / 1e6;
        let _ = writeln!(
            o,
            "  resolution    CPU {}: a clock read every {} ns at best, {} ns median ({rate:.1} M reads/s)",
            c.cpu,
            c.resolution.0.as_ns(),
            c.resolution.1.as_ns()
        );
    }
    o.push('\n');
    o
}

/// The tables, the largest gaps and the notes.
pub fn render(r: &NoiseRun) -> String {
    let mut rows = vec![["CPU", "runtime s", "noise µs", "available %", "max µs", "p50 µs", "p99 µs", "gaps"]
        .map(String::from)
        .to_vec()];
    for c in &r.cpus {
        rows.push(vec![
            c.cpu.to_string(),
            format!("{:.3}", c.runtime.as_secs_f64()),
            us(c.noise),
            format!("{:.4}", c.available_percent()),
            us(c.max_gap),
            us(c.gap_p50_p99.0),
            us(c.gap_p50_p99.1),
            c.gaps.to_string(),
        ]);
    }
    let mut o = super::noise_attach::title(r)
        .unwrap_or_else(|| format!("noise per CPU (a gap: two clock reads more than {} µs apart):\n", us(r.threshold)));
    o += &layout(&rows, true);
    if r.attribution {
        for c in &r.cpus {
            o += &sources(c);
        }
    }
    o + &notes(r)
}

/// One CPU's sources, most time first, and its largest gap.
fn sources(c: &CpuNoise) -> String {
    let mut o = format!("\nCPU {}: where the noise went, most time first\n", c.cpu);
    let mut rows = vec![["source", "count", "total µs", "max µs", "share %"].map(String::from).to_vec()];
    let share = |t: Nanos| format!("{:.1}", 100.0 * t.as_ns() as f64 / c.noise.as_ns().max(1) as f64);
    for (s, t) in c.sources.iter().take(SHOWN) {
        let name = c.cgroups.get(s).map_or_else(|| s.to_string(), |cg| format!("{s} in {cg}"));
        rows.push(vec![name, t.count.to_string(), us(t.total), us(t.max), share(t.total)]);
    }
    if let Some(rest) = c.sources.get(SHOWN..).filter(|r| !r.is_empty()) {
        let (count, total) = rest.iter().fold((0, Nanos::ZERO), |(n, d), (_, t)| (n + t.count, d + t.total));
        let max = rest.iter().map(|(_, t)| t.max).max().unwrap_or(Nanos::ZERO);
        let name = format!("… {} more sources (--json lists them)", rest.len());
        rows.push(vec![name, count.to_string(), us(total), us(max), share(total)]);
    }
    if c.sources.is_empty() {
        o += "  no gap\n";
    } else {
        o += &layout(&rows, true);
    }
    if let Some(w) = c.worst.first() {
        let parts: Vec<String> = w.sources.iter().take(4).map(|(s, d)| format!("{s} {} µs", us(*d))).collect();
        let _ = writeln!(o, "  largest gap {} µs: {}", us(w.gap.len()), parts.join(", "));
    }
    o += &super::noise_tick::line(c);
    if c.below_threshold.count > 0 {
        let _ = writeln!(
            o,
            "  below the threshold: {} kernel entries, {} µs in all (shorter than a gap)",
            c.below_threshold.count,
            us(c.below_threshold.total)
        );
    }
    if let Some(hw) = c.sources.iter().find(|(s, _)| *s == Source::HardwareOrHost) {
        let steal = c.steal.map_or("unknown".into(), |s| format!("{} ms", s.as_ns() / 1_000_000));
        let _ = writeln!(
            o,
            "  hardware or host: {} µs in gaps without a kernel event; the host's steal time over the run: {steal} \
             (/proc/stat counts it in 10 ms units, and a guest's short exits to the host are not steal)",
            us(hw.1.total)
        );
    }
    o
}

fn notes(r: &NoiseRun) -> String {
    let mut o = String::new();
    if !r.missing.is_empty() {
        let _ = writeln!(
            o,
            "\nnote: this kernel lacks {}: their time counts as around kernel events",
            r.missing.join(", ")
        );
    }
    for c in r.cpus.iter().filter(|c| c.lost_events > 0) {
        let _ = writeln!(
            o,
            "\nwarning: CPU {}: {} trace events lost: gaps around them may be misattributed",
            c.cpu, c.lost_events
        );
    }
    for c in r.cpus.iter().filter(|c| c.unattributed > 0) {
        let _ = writeln!(o, "\nnote: CPU {}: {} gaps left unattributed (past the memory bound)", c.cpu, c.unattributed);
    }
    for c in r.cpus.iter().filter(|c| c.dropped_instances > 0) {
        let _ = writeln!(
            o,
            "\nnote: CPU {}: {} pieces of kernel work from the trace dropped past the memory bound: \
             gaps around them may be attributed short",
            c.cpu, c.dropped_instances
        );
    }
    for n in &r.notes {
        let _ = writeln!(o, "\nnote: {n}");
    }
    if r.end == End::Interrupted {
        o += "\nnote: interrupted; the figures cover the run until then\n";
    }
    o
}
