//! High-resolution timers and the clocksource.

use super::read::Context;
use super::{Finding, Status};
use crate::system::{HresActive, TIMER_LIST};

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    hres(ctx, out);
    clocksource(ctx, out);
    tsc(ctx, out);
    tsc_unstable(ctx, out);
}

fn hres(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(text) = ctx.read(TIMER_LIST) else {
        out.push(Finding::unreadable("timers.hres_active", "high-resolution timer state", &[TIMER_LIST]));
        return;
    };
    out.push(hres_active(&HresActive::parse(&text), &text));
    out.push(resolution(&text));
}

fn hres_active(hres: &HresActive, timer_list: &str) -> Finding {
    const ID: &str = "timers.hres_active";
    let handlers = timer_list
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("event_handler:") && l.ends_with("hrtimer_interrupt"))
        .count();
    let (cpus, active, inactive, unknown) =
        (hres.cpus().len(), hres.count(Some(true)), hres.count(Some(false)), hres.count(None));
    let unread = if unknown > 0 { format!(" (unreadable on {unknown})") } else { String::new() };
    let evidence = format!(
        "{TIMER_LIST}: .hres_active = 1 on {active} of {cpus} {}{unread}; event_handler hrtimer_interrupt on {}",
        crate::text::noun(cpus as u64, "CPU"),
        crate::text::count(handlers as u64, "clock event device")
    );
    let f = if cpus == 0 {
        Finding::new(ID, Status::Info, "high-resolution timers: no CPU listed in /proc/timer_list")
    } else if inactive > 0 {
        Finding::new(
            ID,
            Status::Fail,
            format!(
                "high-resolution timers are inactive on {inactive} of {cpus} {}",
                crate::text::noun(cpus as u64, "CPU")
            ),
        )
        .impact("sleeps and timers on those CPUs expire only at scheduler ticks: milliseconds late")
        .remedy("a kernel with CONFIG_HIGH_RES_TIMERS=y; remove highres=off from the boot parameters")
    } else if unknown > 0 {
        Finding::new(ID, Status::Info, format!("high-resolution timers: state unreadable on {unknown} of {cpus} CPUs"))
    } else {
        Finding::new(ID, Status::Ok, "high-resolution timers are active on every CPU")
    };
    f.evidence(evidence)
}

/// The resolution of the first clock listed.
fn resolution(timer_list: &str) -> Finding {
    let first = timer_list.lines().find_map(|l| l.trim().strip_prefix(".resolution:")).map(str::trim);
    let f = match first {
        Some("1 nsecs") => Finding::new("timers.resolution", Status::Ok, "timer resolution: 1 ns (hrtimers)"),
        Some(r) => Finding::new("timers.resolution", Status::Warn, format!("timer resolution: {r}"))
            .impact("timer expiries are rounded to this resolution")
            .remedy("enable high-resolution timers (CONFIG_HIGH_RES_TIMERS=y, no highres=off)"),
        None => Finding::new("timers.resolution", Status::Info, "timer resolution: not listed"),
    };
    f.evidence("/proc/timer_list: .resolution of clock 0")
}

fn clocksource(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let base = "/sys/devices/system/clocksource/clocksource0";
    let (Some(cur), avail) =
        (ctx.read(&format!("{base}/current_clocksource")), ctx.read(&format!("{base}/available_clocksource")))
    else {
        out.push(Finding::unreadable(
            "clocksource.current",
            "the clocksource",
            &[&format!("{base}/current_clocksource")],
        ));
        return;
    };
    let avail = avail.unwrap_or_default();
    let evidence = format!("{base}: current {cur}, available {avail}");
    let better = avail.split_whitespace().any(|c| c == "tsc") && cur != "tsc";
    let f = match cur.as_str() {
        "tsc" | "arch_sys_counter" => Finding::new("clocksource.current", Status::Ok, format!("clocksource {cur}: read in the vDSO, without a system call")),
        "kvm-clock" | "hyperv_clocksource_tsc_page" | "xen" => Finding::new("clocksource.current", if better { Status::Warn } else { Status::Info }, format!("clocksource {cur} (paravirtual)"))
            .impact("clock reads go through the hypervisor's page: slower than the TSC, and only as good as the host")
            .remedy(if better { "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource (or boot with clocksource=tsc tsc=reliable)" } else { "" }),
        "jiffies" => Finding::new("clocksource.current", Status::Fail, "clocksource jiffies: time advances in ticks")
            .impact("every clock read is a tick-granular, slow value; precise timing is impossible")
            .remedy("fix the hardware clocksource (check dmesg for why tsc/hpet were rejected)"),
        _ => Finding::new("clocksource.current", Status::Warn, format!("clocksource {cur}: every clock read is a system call"))
            .impact("clock_gettime costs about a microsecond instead of ~20 ns, in every loop")
            .remedy(if better { "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource (boot: clocksource=tsc)" } else { "use hardware with an invariant TSC" }),
    };
    out.push(f.evidence(evidence));
}

fn tsc(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(flags) = ctx.cpu_flags() else {
        out.push(Finding::unreadable("clocksource.tsc_flags", "CPU flags", &["/proc/cpuinfo"]));
        return;
    };
    if !flags.contains(&"tsc") {
        out.push(
            Finding::new("clocksource.tsc_flags", Status::Info, "no TSC (not an x86 CPU)")
                .evidence("/proc/cpuinfo flags: no tsc"),
        );
        return;
    }
    let want = ["constant_tsc", "nonstop_tsc", "rdtscp", "tsc_known_freq"];
    let have: Vec<&str> = want.iter().copied().filter(|w| flags.contains(w)).collect();
    let missing: Vec<&str> = want.iter().copied().filter(|w| !flags.contains(w)).collect();
    let evidence =
        format!("/proc/cpuinfo flags: {}", if have.is_empty() { "none of them".into() } else { have.join(" ") });
    let f = if !flags.contains(&"constant_tsc") || !flags.contains(&"nonstop_tsc") {
        Finding::new("clocksource.tsc_flags", Status::Warn, format!("TSC is not invariant (missing {})", missing.join(", ")))
            .impact("the TSC may change rate with frequency or stop in deep C-states; the kernel may reject it as a clocksource")
            .remedy("pin timing threads to one CPU (taskset -c N), or use hardware with constant_tsc and nonstop_tsc")
    } else if missing.is_empty() {
        Finding::new("clocksource.tsc_flags", Status::Ok, "invariant TSC with RDTSCP and a known frequency")
    } else {
        Finding::new("clocksource.tsc_flags", Status::Ok, format!("invariant TSC (without {})", missing.join(", ")))
    };
    out.push(f.evidence(evidence));
}

/// "Marking TSC unstable" / a clocksource switch in the kernel log.
fn tsc_unstable(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(log) = read_kmsg(ctx) else {
        out.push(
            Finding::unreadable("clocksource.tsc_stability", "the kernel log", &["/dev/kmsg"])
                .remedy("run as root to read the kernel log"),
        );
        return;
    };
    let hits: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("TSC unstable")
                || l.contains("Marking clocksource 'tsc' as unstable")
                || l.contains("Switched to clocksource") && !l.contains("tsc")
        })
        .collect();
    let hit_tsc = hits.iter().any(|l| l.contains("unstable"));
    let f = if hit_tsc {
        Finding::new("clocksource.tsc_stability", Status::Fail, "the kernel marked the TSC unstable")
            .impact("the clocksource fell back to a slower one; clock reads may be system calls")
            .remedy("check BIOS power settings and firmware; tsc=reliable only if the TSC is known to be good")
    } else {
        Finding::new("clocksource.tsc_stability", Status::Ok, "no \"TSC unstable\" in the kernel log")
    };
    let ev = if hits.is_empty() {
        "kernel log: no clocksource trouble".to_string()
    } else {
        format!("kernel log: {}", hits.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" | "))
    };
    out.push(f.evidence(ev));
}

/// The kernel log from /dev/kmsg, read without blocking.
fn read_kmsg(ctx: &Context<'_>) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(ctx.root.path("/dev/kmsg")).ok()?;
    let mut text = String::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                // "prio,seq,ts,flags;message" per record; plain text lines in fixtures.
                text.push_str(rec.split_once(';').map_or(&rec, |(_, m)| m));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    Some(text)
}
