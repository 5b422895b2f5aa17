//! The kernel: PREEMPT_RT, the preemption model, HZ, NO_HZ, high-resolution timers.

use super::read::Context;
use super::{Finding, Status};
use crate::system::{KernelConfig, Preempt, PreemptModel, PreemptSource, DEBUGFS_PREEMPT};

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    out.push(preempt_rt(&ctx.preempt, ctx.config.as_ref()));
    out.push(preempt_model(&ctx.preempt, ctx.config.as_ref()));
    build_config(ctx, out);
}

/// Whether the kernel is PREEMPT_RT, from the typed reading of the model,
/// which checks every sign of it (the kernel config, `/sys/kernel/realtime`,
/// `uname -v`) before anything else: it names RT, with the file that said so,
/// or some other model, or nothing.
fn preempt_rt(p: &PreemptModel, config: Option<&KernelConfig>) -> Finding {
    const ID: &str = "kernel.preempt_rt";
    if p.is_rt() {
        return Finding::new(ID, Status::Ok, "PREEMPT_RT kernel").evidence(preempt_evidence(p, config));
    }
    // A model, PREEMPT_DYNAMIC or a config was read, and none said PREEMPT_RT.
    if p.model.is_none() && !p.dynamic && config.is_none() {
        return Finding::unreadable(
            ID,
            "the kernel build",
            &["/proc/sys/kernel/version", "/sys/kernel/realtime", "the kernel config"],
        );
    }
    Finding::new(ID, Status::Warn, "not a PREEMPT_RT kernel")
        .evidence(format!("no sign of PREEMPT_RT; preemption model {p}: {}", preempt_evidence(p, config)))
        .impact("long non-preemptible kernel sections can delay a real-time thread's wake-up by hundreds of µs")
        .remedy("boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) for hard real-time")
}

/// The preemption model, with PREEMPT_DYNAMIC's current mode where debugfs shows it.
fn preempt_model(p: &PreemptModel, config: Option<&KernelConfig>) -> Finding {
    const ID: &str = "kernel.preempt_model";
    let ev = format!("{}{}", if p.dynamic { "PREEMPT_DYNAMIC kernel; " } else { "" }, preempt_evidence(p, config));
    match p.model {
        Some(m @ (Preempt::Rt | Preempt::Full)) => {
            Finding::new(ID, Status::Ok, format!("preemption model: {m}")).evidence(ev)
        }
        Some(m) => Finding::new(ID, Status::Warn, format!("preemption model: {m}"))
            .evidence(ev)
            .impact(
                "the kernel preempts only at certain points: a woken real-time thread may wait for a long kernel path",
            )
            .remedy(if p.dynamic {
                "boot with preempt=full (PREEMPT_DYNAMIC), or echo full > /sys/kernel/debug/sched/preempt"
            } else {
                "a kernel built with CONFIG_PREEMPT=y or PREEMPT_RT"
            }),
        None => Finding::new(ID, Status::Info, "preemption model: unknown").evidence(ev),
    }
}

/// Where the model was read, as evidence.
fn preempt_evidence(p: &PreemptModel, config: Option<&KernelConfig>) -> String {
    let m = p.model.map_or("?", Preempt::name);
    match p.source {
        PreemptSource::Debugfs => format!("{DEBUGFS_PREEMPT}: ({m})"),
        PreemptSource::Cmdline => format!("/proc/cmdline: preempt={m}"),
        PreemptSource::Config(k) if p.dynamic => {
            format!("{k}=y in the kernel config: the default mode, no preempt= on the command line")
        }
        PreemptSource::Config(k) => format!("{k}=y in the kernel config"),
        PreemptSource::Realtime => "/sys/kernel/realtime: 1".into(),
        PreemptSource::Version => "uname -v: PREEMPT_RT".into(),
        PreemptSource::Unknown if p.dynamic => {
            "mode not readable (mount debugfs: mount -t debugfs none /sys/kernel/debug)".into()
        }
        PreemptSource::Unknown => match config {
            Some(c) => format!("{}: no CONFIG_PREEMPT_* option set", c.source),
            None => "nothing readable names it: the kernel config is unreadable".into(),
        },
    }
}

/// CONFIG_HZ, NO_HZ and CONFIG_HIGH_RES_TIMERS, from the build configuration.
fn build_config(ctx: &Context<'_>, out: &mut Vec<Finding>) {
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
    out.push(config_hz(cfg));
    out.push(nohz(ctx, cfg));
    out.push(high_res_timers(cfg));
}

fn config_hz(cfg: &KernelConfig) -> Finding {
    let hz = cfg.get("CONFIG_HZ").unwrap_or("?");
    Finding::new(
        "kernel.config_hz",
        Status::Info,
        format!(
            "CONFIG_HZ={hz}: a scheduler tick every {}",
            hz.parse::<f64>().map(|h| format!("{:.1} ms", 1000.0 / h)).unwrap_or_else(|_| "? ms".into())
        ),
    )
    .evidence(format!("{}: CONFIG_HZ={hz}", cfg.source))
    .impact("CPU-time timers (ITIMER_VIRTUAL/PROF) and tick-based accounting are this coarse; hrtimers are not")
}

fn nohz(ctx: &Context<'_>, cfg: &KernelConfig) -> Finding {
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
    Finding::new(
        "kernel.nohz",
        Status::Info,
        format!("NO_HZ mode: {nohz}{}", if nohz_off { ", but disabled by nohz=off" } else { "" }),
    )
    .evidence(cfg.source.clone())
    .impact("a tick interrupts a running real-time thread every tick period unless the CPU is nohz_full")
}

fn high_res_timers(cfg: &KernelConfig) -> Finding {
    if cfg.is_y("CONFIG_HIGH_RES_TIMERS") {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finding follows the typed reading alone: its evidence is where
    /// the reading found the model, not a second reading of the files.
    #[test]
    fn preempt_rt_takes_its_evidence_from_the_typed_reading() {
        let model = |model, dynamic, source| PreemptModel { model, dynamic, source };
        let rt = preempt_rt(&model(Some(Preempt::Rt), false, PreemptSource::Realtime), None);
        assert_eq!((rt.status, rt.evidence.as_str()), (Status::Ok, "/sys/kernel/realtime: 1"));
        let rt = preempt_rt(&model(Some(Preempt::Rt), false, PreemptSource::Version), None);
        assert_eq!(rt.evidence, "uname -v: PREEMPT_RT");
        let rt = preempt_rt(&model(Some(Preempt::Rt), false, PreemptSource::Config("CONFIG_PREEMPT_RT")), None);
        assert_eq!(rt.evidence, "CONFIG_PREEMPT_RT=y in the kernel config");

        let cmdline = preempt_rt(&model(Some(Preempt::None), true, PreemptSource::Cmdline), None);
        assert_eq!(cmdline.status, Status::Warn);
        assert_eq!(
            cmdline.evidence,
            "no sign of PREEMPT_RT; preemption model none (PREEMPT_DYNAMIC): /proc/cmdline: preempt=none"
        );
        // PREEMPT_DYNAMIC was read (uname -v), the mode was not.
        let dynamic = preempt_rt(&model(None, true, PreemptSource::Unknown), None);
        assert_eq!(dynamic.status, Status::Warn);
        assert!(dynamic.evidence.contains("unknown (PREEMPT_DYNAMIC): mode not readable"), "{dynamic:?}");
        // A config without any CONFIG_PREEMPT_*: read, and not RT.
        let c = KernelConfig::parse("CONFIG_HZ=250\n", "/boot/config-x");
        let config = preempt_rt(&model(None, false, PreemptSource::Unknown), Some(&c));
        assert_eq!(config.status, Status::Warn);
        assert!(config.evidence.ends_with("/boot/config-x: no CONFIG_PREEMPT_* option set"), "{config:?}");
        // Nothing read: no claim.
        let nothing = preempt_rt(&model(None, false, PreemptSource::Unknown), None);
        assert!(nothing.is_unreadable() && nothing.status == Status::Info, "{nothing:?}");
    }
}
