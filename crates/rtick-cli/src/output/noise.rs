//! What `rtick noise` prints: the header (system, spinners, resolution),
//! the table per CPU as `osnoise top` shows it, each CPU's sources, its
//! largest gaps, and the notes.

use std::fmt::Write;

use rtick::noise::{NoiseRun, Plan, Source};
use rtick::system::format_cpu_list;
use rtick::Nanos;
use rtick_model::json::{NoiseCpuJson, NoiseFile, NoiseSourceJson};

use super::columns::layout;
use super::explain::STACK_FRAMES;

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
    let clock = file.loop_clock.as_ref().map_or("", |c| c.description.as_str());
    o += &super::header::system_lines(&file.system, clock);
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

/// The tables, the largest gaps and the notes: what `rtick noise` prints
/// at its end, and `rtick report` of its --json file.
pub fn render(f: &NoiseFile) -> String {
    let mut rows = vec![["CPU", "runtime s", "noise µs", "available %", "max µs", "p50 µs", "p99 µs", "gaps"]
        .map(String::from)
        .to_vec()];
    let secs = |ns: i64| format!("{:.3}", ns as f64 / 1e9);
    for c in &f.cpus {
        rows.push(vec![
            c.cpu.to_string(),
            secs(c.runtime_ns),
            us(Nanos(c.noise_ns)),
            format!("{:.4}", c.available_percent),
            us(Nanos(c.max_gap_ns)),
            us(Nanos(c.gap_p50_ns)),
            us(Nanos(c.gap_p99_ns)),
            c.gaps.to_string(),
        ]);
    }
    let threshold = Nanos(f.threshold_ns);
    let mut o = super::noise_attach::title(f)
        .unwrap_or_else(|| format!("noise per CPU (a gap: two clock reads more than {} µs apart):\n", us(threshold)));
    o += &layout(&rows, true);
    if f.attribution {
        for c in &f.cpus {
            o += &sources(c);
        }
    }
    o + &notes(f)
}

/// A source as its row names it: with its cgroup, or an IPI's most frequent sender.
fn source_name(s: &NoiseSourceJson) -> String {
    match (&s.cgroup, &s.top_sender) {
        (Some(cg), _) => format!("{} in {cg}", s.name),
        (None, Some(t)) if t.count == s.count => format!("{} {}", s.name, t.name),
        (None, Some(t)) => format!("{} {} ({} of {})", s.name, t.name, t.count, s.count),
        (None, None) => s.name.clone(),
    }
}

/// One CPU's sources, most time first, and its largest gap.
fn sources(c: &NoiseCpuJson) -> String {
    let mut o = format!("\nCPU {}: where the noise went, most time first\n", c.cpu);
    let mut rows = vec![["source", "count", "total µs", "max µs", "share %"].map(String::from).to_vec()];
    let share = |t: i64| format!("{:.1}", 100.0 * t as f64 / c.noise_ns.max(1) as f64);
    for s in c.sources.iter().take(SHOWN) {
        rows.push(vec![
            source_name(s),
            s.count.to_string(),
            us(Nanos(s.total_ns)),
            us(Nanos(s.max_ns)),
            share(s.total_ns),
        ]);
    }
    if let Some(rest) = c.sources.get(SHOWN..).filter(|r| !r.is_empty()) {
        let (count, total) = rest.iter().fold((0, 0), |(n, d), s| (n + s.count, d + s.total_ns));
        let max = rest.iter().map(|s| s.max_ns).max().unwrap_or(0);
        let name = format!("… {} more sources (--json lists them)", rest.len());
        rows.push(vec![name, count.to_string(), us(Nanos(total)), us(Nanos(max)), share(total)]);
    }
    if c.sources.is_empty() {
        o += "  no gap\n";
    } else {
        o += &with_stacks(&layout(&rows, true), c.sources.iter().take(SHOWN));
    }
    if let Some(w) = c.largest_gaps.first() {
        let parts: Vec<String> = w.sources.iter().take(4).map(|(s, d)| format!("{s} {} µs", us(Nanos(*d)))).collect();
        let _ = writeln!(o, "  largest gap {} µs: {}", us(Nanos(w.length_ns)), parts.join(", "));
    }
    o += &super::noise_tick::line(c);
    if c.below_threshold.count > 0 {
        let _ = writeln!(
            o,
            "  below the threshold: {} kernel entries, {} µs in all (shorter than a gap)",
            c.below_threshold.count,
            us(Nanos(c.below_threshold.total_ns))
        );
    }
    if let Some(hw) = c.sources.iter().find(|s| s.kind == Source::HardwareOrHost.kind()) {
        let steal = c.steal_ns.map_or("unknown".into(), |s| format!("{} ms", s / 1_000_000));
        let _ = writeln!(
            o,
            "  hardware or host: {} µs in gaps without a kernel event; the host's steal time over the run: {steal} \
             (/proc/stat counts it in 10 ms units, and a guest's short exits to the host are not steal)",
            us(Nanos(hw.total_ns))
        );
    }
    o
}

/// The sources' table with each thread's kernel stack on the line under
/// its row (its header and rule first, then a row per source, in order).
fn with_stacks<'a>(table: &str, sources: impl Iterator<Item = &'a NoiseSourceJson>) -> String {
    let mut lines = table.lines();
    let mut o: String = lines.by_ref().take(2).map(|l| format!("{l}\n")).collect();
    let mut sources = sources.fuse();
    for line in lines {
        let _ = writeln!(o, "{line}");
        if let Some(s) = sources.next().filter(|s| !s.stack.is_empty()) {
            let _ = writeln!(o, "    stack: {}", rtick::ktrace::stack::switch_summary(&s.stack, STACK_FRAMES));
        }
    }
    o
}

fn notes(f: &NoiseFile) -> String {
    let mut o = String::new();
    if !f.missing_events.is_empty() {
        let _ = writeln!(
            o,
            "\nnote: this kernel lacks {}: their time counts as around kernel events",
            f.missing_events.join(", ")
        );
    }
    for c in f.cpus.iter().filter(|c| c.lost_events > 0) {
        let _ = writeln!(
            o,
            "\nwarning: CPU {}: {} trace events lost: gaps around them may be misattributed",
            c.cpu, c.lost_events
        );
    }
    for c in f.cpus.iter().filter(|c| c.unattributed_gaps > 0) {
        let _ = writeln!(
            o,
            "\nnote: CPU {}: {} gaps left unattributed (past the memory bound)",
            c.cpu, c.unattributed_gaps
        );
    }
    for c in f.cpus.iter().filter(|c| c.dropped_instances > 0) {
        let _ = writeln!(
            o,
            "\nnote: CPU {}: {} pieces of kernel work from the trace dropped past the memory bound: \
             gaps around them may be attributed short",
            c.cpu, c.dropped_instances
        );
    }
    for n in &f.notes {
        let _ = writeln!(o, "\nnote: {n}");
    }
    if f.ended_by == "interrupted" {
        o += "\nnote: interrupted; the figures cover the run until then\n";
    }
    o
}
