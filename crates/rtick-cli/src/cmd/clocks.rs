//! `rtick clocks`: what reading each clock costs here.

use anyhow::Result;
use rtick::clock_survey::{self, ClockFigures, CostSpec, CrossCpu};
use rtick::system::SysRoot;
use rtick::tsc_clock::TscFlags;
use rtick::Nanos;
use serde::{Deserialize, Serialize};

use crate::cli::ClocksArgs;
use crate::export::atomic::AtomicFile;
use crate::Usage;

/// Clocksources the vDSO can read without entering the kernel.
pub const VDSO_CLOCKSOURCES: &[&str] = &["tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "xen"];

#[derive(Debug, Serialize, Deserialize)]
pub struct ClocksFile {
    pub rtick_version: String,
    pub clocksource: Option<String>,
    /// clock_gettime(CLOCK_MONOTONIC) forced through the system call: the reference for `vdso`.
    pub syscall_cost_ns_median: f64,
    pub clocks: Vec<ClockJson>,
    pub tsc: TscJson,
    pub cross_cpu: CrossCpuJson,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ClockJson {
    /// As the kernel spells it (`CLOCK_MONOTONIC`), or `rdtsc` / `rdtscp`.
    pub name: String,
    pub cost_ns_median: f64,
    pub cost_ns_p99: f64,
    /// clock_getres (null for the TSC instructions).
    pub resolution_ns: Option<i64>,
    /// Smallest non-zero step seen between consecutive reads.
    pub granularity_ns: Option<f64>,
    /// Reads stay in user space (cost well under the system call's).
    pub vdso: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct TscJson {
    pub present: bool,
    pub flags: Vec<String>,
    /// constant_tsc and nonstop_tsc.
    pub invariant: bool,
    /// Calibrated against CLOCK_MONOTONIC_RAW.
    pub frequency_hz: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CrossCpuJson {
    /// `rdtsc`, or `CLOCK_MONOTONIC_RAW` without a TSC.
    pub clock: String,
    pub pairs_tested: usize,
    pub max_backwards_ns: f64,
    pub max_backwards_ticks: Option<i64>,
}

pub fn run(a: &ClocksArgs) -> Result<()> {
    // Each bound alone is clap's; their product bounds the reads of each clock.
    if (a.batches as u64).saturating_mul(a.reads as u64) > CostSpec::MAX_TOTAL_READS {
        return Err(Usage(format!(
            "--batches × --reads: {} × {} reads of each clock is more than {}; give fewer batches or reads",
            a.batches,
            a.reads,
            CostSpec::MAX_TOTAL_READS
        ))
        .into());
    }
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    super::cleanup::warnings(None).iter().for_each(|w| println!("warning: {w}"));
    let root = SysRoot::default();
    let clocksource = rtick::system::current_clocksource(&root);
    let flags = TscFlags::read(&root).unwrap_or_default();
    let tsc_flags: Vec<String> = flags.names().into_iter().map(str::to_string).collect();
    let has_tsc = cfg!(target_arch = "x86_64") && flags.tsc;
    let invariant = flags.invariant();
    #[cfg(target_arch = "x86_64")]
    let hz = has_tsc.then(|| clock_survey::tsc_frequency(Nanos::from_ms(200)));
    #[cfg(not(target_arch = "x86_64"))]
    let hz: Option<f64> = None;

    let spec = CostSpec { batches: a.batches, reads: a.reads };
    let syscall = clock_survey::syscall_cost(spec);
    let figs = clock_survey::measure_all(spec, syscall, hz);
    let cpus = rtick::info::allowed_cpus()?;
    #[cfg(target_arch = "x86_64")]
    let (cross, cross_clock): (CrossCpu, &str) = if has_tsc {
        (clock_survey::cross_cpu(&cpus, a.rounds, clock_survey::read_tsc), "rdtsc")
    } else {
        (clock_survey::cross_cpu(&cpus, a.rounds, clock_survey::read_monotonic_raw), "CLOCK_MONOTONIC_RAW")
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (cross, cross_clock): (CrossCpu, &str) =
        (clock_survey::cross_cpu(&cpus, a.rounds, clock_survey::read_monotonic_raw), "CLOCK_MONOTONIC_RAW");
    let backwards_ns = match (cross_clock, hz) {
        ("rdtsc", Some(h)) => cross.max_backwards as f64 * 1e9 / h,
        _ => cross.max_backwards as f64,
    };

    let file = ClocksFile {
        rtick_version: env!("CARGO_PKG_VERSION").into(),
        clocksource: clocksource.clone(),
        syscall_cost_ns_median: syscall.median_ns,
        clocks: figs.iter().map(clock_json).collect(),
        tsc: TscJson { present: has_tsc, flags: tsc_flags.clone(), invariant, frequency_hz: hz },
        cross_cpu: CrossCpuJson {
            clock: cross_clock.into(),
            pairs_tested: cross.pairs_tested,
            max_backwards_ns: backwards_ns,
            max_backwards_ticks: (cross_clock == "rdtsc").then_some(cross.max_backwards),
        },
    };
    print!("{}", render(&file));
    if let Some(f) = json {
        f.write_json(&file)?;
        f.commit()?;
    }
    Ok(())
}

fn clock_json(f: &ClockFigures) -> ClockJson {
    ClockJson {
        name: f.source.name().into(),
        cost_ns_median: (f.cost.median_ns * 10.0).round() / 10.0,
        cost_ns_p99: (f.cost.p99_ns * 10.0).round() / 10.0,
        resolution_ns: f.resolution.map(|r| r.as_ns()),
        granularity_ns: f.granularity_ns,
        vdso: f.vdso,
    }
}

pub fn render(f: &ClocksFile) -> String {
    let mut o = String::new();
    let cs = f.clocksource.as_deref().unwrap_or("unknown");
    let vdso_cs = VDSO_CLOCKSOURCES.contains(&cs);
    o += &format!("clocksource: {cs}{}\n", if vdso_cs { " (the vDSO reads it without a system call)" } else { "" });
    if !vdso_cs {
        o += &format!("warning: the vDSO cannot read the {cs} clocksource: every clock read is a system call (~{:.0} ns here); use tsc if the CPU has an invariant one\n", f.syscall_cost_ns_median);
    }
    o += &format!(
        "\n{:<26}{:>10}{:>10}{:>12}{:>14}  {}\n",
        "clock", "cost p50", "cost p99", "resolution", "granularity", "where"
    );
    for c in &f.clocks {
        let res = c.resolution_ns.map_or("-".into(), |r| Nanos(r).to_string());
        let gran = c.granularity_ns.map_or("-".into(), |g| {
            if g < 10.0 {
                format!("{g:.1} ns")
            } else {
                Nanos(g.round() as i64).to_string()
            }
        });
        let place = if c.name.starts_with("rdtsc") {
            "instruction"
        } else if c.vdso {
            "vDSO"
        } else {
            "system call"
        };
        o += &format!(
            "{:<26}{:>7.1} ns{:>7.1} ns{:>12}{:>14}  {place}\n",
            c.name, c.cost_ns_median, c.cost_ns_p99, res, gran
        );
    }
    o += &format!(
        "(reference: clock_gettime forced through the system call costs {:.1} ns here)\n\n",
        f.syscall_cost_ns_median
    );
    if f.tsc.present {
        o += &format!(
            "TSC: {} ({}); {}\n",
            f.tsc.flags.join(" "),
            if f.tsc.invariant { "invariant" } else { "NOT invariant: it may change rate or stop in deep C-states" },
            f.tsc.frequency_hz.map_or("frequency unknown".into(), |h| format!(
                "{:.4} GHz, calibrated against CLOCK_MONOTONIC_RAW over 200 ms",
                h / 1e9
            ))
        );
    } else {
        o += "TSC: none (not x86-64)\n";
    }
    let cc = &f.cross_cpu;
    o += &format!(
        "cross-CPU: {} (each pair both ways) exchanged {} timestamps; largest backwards step {}{}\n",
        rtick::text::count(cc.pairs_tested as u64, "ordered CPU pair"),
        cc.clock,
        if cc.max_backwards_ns == 0.0 {
            "0 (consistent)".to_string()
        } else {
            format!("{:.1} ns", cc.max_backwards_ns)
        },
        cc.max_backwards_ticks.filter(|t| *t > 0).map_or(String::new(), |t| format!(
            " ({t} ticks): timestamps from different CPUs cannot be compared; pin the thread (taskset -c N)"
        ))
    );
    if cc.pairs_tested == 0 {
        o += "  (one CPU only: nothing to compare)\n";
    }
    o
}
