//! The kernel: PREEMPT_RT, the preemption model, HZ, NO_HZ, high-resolution timers.

use super::read::Context;
use super::{Finding, Status};

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let version = ctx.read("/proc/sys/kernel/version");
    let realtime = ctx.read("/sys/kernel/realtime");
    let rt = realtime.as_deref() == Some("1")
        || version.as_deref().is_some_and(|v| v.contains("PREEMPT_RT"))
        || ctx.config.as_ref().is_some_and(|c| c.is_y("CONFIG_PREEMPT_RT"));
    let ev = format!(
        "uname -v: {}; /sys/kernel/realtime: {}",
        version.as_deref().unwrap_or("unreadable"),
        realtime.as_deref().unwrap_or("absent")
    );
    out.push(if version.is_none() && realtime.is_none() && ctx.config.is_none() {
        Finding::unreadable(
            "kernel.preempt_rt",
            "the kernel build",
            &["/proc/sys/kernel/version", "/sys/kernel/realtime"],
        )
    } else if rt {
        Finding::new("kernel.preempt_rt", Status::Ok, "PREEMPT_RT kernel").evidence(ev)
    } else {
        Finding::new("kernel.preempt_rt", Status::Warn, "not a PREEMPT_RT kernel")
            .evidence(ev)
            .impact("long non-preemptible kernel sections can delay a real-time thread's wake-up by hundreds of µs")
            .remedy("boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) for hard real-time")
    });

    // The preemption model, with PREEMPT_DYNAMIC's current mode where debugfs shows it.
    let dynamic = version.as_deref().is_some_and(|v| v.contains("PREEMPT_DYNAMIC"));
    let mode = ctx.read("/sys/kernel/debug/sched/preempt").and_then(|s| {
        let a = s.find('(')?;
        let b = s[a..].find(')')?;
        Some(s[a + 1..a + b].to_string())
    });
    let from_config = ctx.config.as_ref().and_then(|c| {
        [
            "CONFIG_PREEMPT_RT",
            "CONFIG_PREEMPT",
            "CONFIG_PREEMPT_LAZY",
            "CONFIG_PREEMPT_VOLUNTARY",
            "CONFIG_PREEMPT_NONE",
        ]
        .into_iter()
        .find(|k| c.is_y(k))
    });
    // On PREEMPT_DYNAMIC kernels preempt= on the command line overrides the built-in default.
    let boot_mode = ctx.param("preempt").filter(|_| dynamic);
    let model =
        if rt {
            Some("rt".to_string())
        } else if let Some(m) = &mode {
            Some(m.clone())
        } else if let Some(m) = &boot_mode {
            Some(m.clone())
        } else {
            from_config
                .map(|k| k.trim_start_matches("CONFIG_PREEMPT").trim_start_matches('_').to_lowercase())
                .map(|m| if m.is_empty() { "full".into() } else { m })
        };
    let ev = format!(
        "{}{}",
        if dynamic { "PREEMPT_DYNAMIC kernel; " } else { "" },
        match (&mode, from_config) {
            (Some(m), _) => format!("/sys/kernel/debug/sched/preempt: ({m})"),
            (None, _) if boot_mode.is_some() =>
                format!("/proc/cmdline: preempt={}", boot_mode.clone().unwrap_or_default()),
            (None, Some(k)) if dynamic =>
                format!("{k}=y in the kernel config: the default mode, no preempt= on the command line"),
            (None, Some(k)) => format!("{k}=y in the kernel config"),
            (None, None) => "mode not readable (mount debugfs: mount -t debugfs none /sys/kernel/debug)".into(),
        }
    );
    out.push(match model.as_deref() {
        Some("rt") | Some("full") => {
            Finding::new("kernel.preempt_model", Status::Ok, format!("preemption model: {}", model.unwrap_or_default()))
                .evidence(ev)
        }
        Some(m @ ("none" | "voluntary" | "lazy")) => Finding::new(
            "kernel.preempt_model",
            Status::Warn,
            format!("preemption model: {m}"),
        )
        .evidence(ev)
        .impact("the kernel preempts only at certain points: a woken real-time thread may wait for a long kernel path")
        .remedy(if dynamic {
            "boot with preempt=full (PREEMPT_DYNAMIC), or echo full > /sys/kernel/debug/sched/preempt"
        } else {
            "a kernel built with CONFIG_PREEMPT=y or PREEMPT_RT"
        }),
        _ => Finding::new("kernel.preempt_model", Status::Info, "preemption model: unknown").evidence(ev),
    });

    let Some(cfg) = &ctx.config else {
        out.push(
            Finding::unreadable(
                "kernel.config",
                "the kernel configuration",
                &["/proc/config.gz", "/boot/config-<release>"],
            )
            .impact("CONFIG_HZ, NO_HZ and CONFIG_HIGH_RES_TIMERS are unknown")
            .remedy("modprobe configs (for /proc/config.gz), or install the kernel's config in /boot"),
        );
        return;
    };
    let hz = cfg.get("CONFIG_HZ").unwrap_or("?");
    out.push(
        Finding::new(
            "kernel.config_hz",
            Status::Info,
            format!(
                "CONFIG_HZ={hz}: a scheduler tick every {}",
                hz.parse::<f64>().map(|h| format!("{:.1} ms", 1000.0 / h)).unwrap_or_else(|_| "? ms".into())
            ),
        )
        .evidence(format!("{}: CONFIG_HZ={hz}", cfg.source))
        .impact("CPU-time timers (ITIMER_VIRTUAL/PROF) and tick-based accounting are this coarse; hrtimers are not"),
    );
    let nohz = if cfg.is_y("CONFIG_NO_HZ_FULL") {
        "full (CONFIG_NO_HZ_FULL): ticks stop on nohz_full CPUs running one task"
    } else if cfg.is_y("CONFIG_NO_HZ_IDLE") || cfg.is_y("CONFIG_NO_HZ") {
        "idle (CONFIG_NO_HZ_IDLE): ticks stop on idle CPUs"
    } else if cfg.is_y("CONFIG_HZ_PERIODIC") {
        "periodic (CONFIG_HZ_PERIODIC): a tick on every CPU, always"
    } else {
        "unknown"
    };
    let nohz_off = ctx.param("nohz").as_deref() == Some("off");
    out.push(
        Finding::new(
            "kernel.nohz",
            Status::Info,
            format!("NO_HZ mode: {nohz}{}", if nohz_off { ", but disabled by nohz=off" } else { "" }),
        )
        .evidence(cfg.source.clone())
        .impact("a tick interrupts a running real-time thread every tick period unless the CPU is nohz_full"),
    );
    out.push(if cfg.is_y("CONFIG_HIGH_RES_TIMERS") {
        Finding::new("kernel.high_res_timers", Status::Ok, "CONFIG_HIGH_RES_TIMERS=y").evidence(cfg.source.clone())
    } else {
        Finding::new("kernel.high_res_timers", Status::Fail, "the kernel is built without CONFIG_HIGH_RES_TIMERS")
            .evidence(format!(
                "{}: CONFIG_HIGH_RES_TIMERS={}",
                cfg.source,
                cfg.get("CONFIG_HIGH_RES_TIMERS").unwrap_or("absent")
            ))
            .impact("every sleep and timer is rounded up to the scheduler tick")
            .remedy("a kernel built with CONFIG_HIGH_RES_TIMERS=y")
    });
}
