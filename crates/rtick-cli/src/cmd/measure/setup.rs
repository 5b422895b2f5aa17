//! What `measure` and `monitor` both do before their run: settle the
//! configuration, take the system settings, say how memory is locked.

use anyhow::Result;
use rtick::measure::MeasureConfig;
use rtick::rt::MemoryLock;
use rtick::session::{self, Request, Session};
use rtick::system::SystemInfo;

use crate::cmd::plan::Plan;
use crate::cmd::warnings::{audit_warnings, static_warnings};

/// What `measure` and `monitor` settle before changing anything: the
/// policy (probed, with its fallback), the warnings about this system and
/// configuration, the rest after spinning slices.
pub fn settle(
    cfg: &mut MeasureConfig,
    sys: &SystemInfo,
    policy_explicit: bool,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let findings =
        rtick::audit::run(&rtick::system::SysRoot::default(), &rtick::audit::Options { run_commands: false });
    let fallback = session::settle(cfg, sys, policy_explicit)?;
    warnings.extend(fallback.map(|f| f.to_string()));
    warnings.extend(static_warnings(cfg, sys));
    warnings.extend(audit_warnings(cfg, &findings));
    Ok(())
}

/// What `plan` (and --dma-latency) asks of the system, the idle states aside.
pub fn request<'a>(plan: &Plan, dma_latency: Option<i32>) -> Request<'a> {
    Request { mlock: plan.mlock, mlock_explicit: plan.mlock_explicit, dma_latency, idle: None }
}

/// Takes the system settings `req` asks for, its fallbacks as warnings.
pub fn take(req: &Request<'_>, warnings: &mut Vec<String>) -> Result<Session> {
    let s = Session::take(req)?;
    warnings.extend(s.fallbacks().iter().map(|f| f.to_string()));
    Ok(s)
}

/// How memory is locked, for the header.
pub fn mlock_detail(mem: Option<&MemoryLock>, cfg: &MeasureConfig) -> String {
    match mem {
        Some(m) => format!(
            "mlockall(MCL_CURRENT|MCL_FUTURE), {} MiB heap and {} KiB stack per thread prefaulted",
            m.heap_prefaulted() >> 20,
            cfg.stack_prefault >> 10
        ),
        None => "not locked".into(),
    }
}
