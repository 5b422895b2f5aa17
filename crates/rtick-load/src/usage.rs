//! How busy each CPU was over a stretch of time: the difference of two
//! readings of `/proc/stat` (through `rtick::system::cpustat`). It shows
//! whether a load really loaded the CPUs, and how much more than without it.

use rtick::system::cpustat::CpuTimes;

/// A CPU's busy share over a stretch of time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CpuBusy {
    pub cpu: usize,
    /// 100 − idle (with I/O wait) in percent.
    pub busy_percent: f64,
    /// The I/O wait within the idle share, in percent.
    pub iowait_percent: f64,
}

/// Per CPU present in both readings: the share of its time not idle
/// (user, system, interrupts, steal), in percent. I/O wait counts as idle,
/// and has a figure of its own.
pub fn busy(before: &[CpuTimes], after: &[CpuTimes]) -> Vec<CpuBusy> {
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.cpu == a.cpu)?;
            let total = (a.total() - b.total()).as_ns();
            let idle = (a.idle - b.idle).as_ns();
            let iowait = (a.iowait - b.iowait).as_ns();
            (total > 0).then(|| CpuBusy {
                cpu: a.cpu as usize,
                busy_percent: 100.0 * (total - idle).max(0) as f64 / total as f64,
                iowait_percent: 100.0 * iowait.max(0) as f64 / total as f64,
            })
        })
        .collect()
}

/// A reading now; `None` where /proc/stat cannot be read (no figures then).
pub fn now() -> Option<Vec<CpuTimes>> {
    rtick::system::cpustat::read().ok()
}

#[cfg(test)]
mod tests {
    use rtick::Nanos;

    use super::*;

    #[test]
    fn busy_is_the_share_not_idle() {
        let t = |cpu, user, idle, iowait| CpuTimes {
            cpu,
            user: Nanos::from_ms(user),
            idle: Nanos::from_ms(idle),
            iowait: Nanos::from_ms(iowait),
            ..Default::default()
        };
        let before = [t(0, 100, 1000, 500), t(1, 0, 0, 0)];
        let after = [t(0, 175, 1025, 520), t(1, 0, 0, 0), t(2, 5, 5, 0)];
        let b = busy(&before, &after);
        // CPU 0: 75 of 100 ms busy, 20 of the idle 25 waiting for I/O; CPU 1:
        // no time passed; CPU 2: not in the first reading.
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].cpu, b[0].busy_percent, b[0].iowait_percent), (0, 75.0, 20.0));
    }
}
