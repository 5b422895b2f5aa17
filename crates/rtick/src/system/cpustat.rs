//! Per-CPU time accounting from `/proc/stat`: where each CPU's time went
//! (user, system, idle, IRQ, softirq, steal …), in nanoseconds.
//!
//! Steal time is what the hypervisor took from a vCPU while it had work:
//! the explanation of latency reads it around a spike to tell a host stall
//! from an idle-state exit. The kernel prints it in USER_HZ ticks (10 ms on
//! most systems), so small stalls show only as they add up.

use crate::time::Nanos;

/// One CPU's accumulated times.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// The CPU.
    pub cpu: u32,
    /// Running user code (with nice).
    pub user: Nanos,
    /// Running the kernel.
    pub system: Nanos,
    /// Idle (with I/O wait).
    pub idle: Nanos,
    /// The part of `idle` with a task of this CPU waiting for I/O: idle for
    /// the CPU, not for a load that does I/O.
    pub iowait: Nanos,
    /// Hard and soft interrupts.
    pub interrupts: Nanos,
    /// Taken by the hypervisor while the vCPU had work.
    pub steal: Nanos,
}

impl CpuTimes {
    /// All of it.
    pub fn total(&self) -> Nanos {
        self.user + self.system + self.idle + self.interrupts + self.steal
    }
}

/// Parses the `cpuN` lines of `/proc/stat` (not the `cpu` total), with
/// `tick` the length of a USER_HZ tick. Lines it cannot read are left out.
pub fn parse(text: &str, tick: Nanos) -> Vec<CpuTimes> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_ascii_whitespace();
            let cpu: u32 = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<i64> = f.map(|x| x.parse().ok()).collect::<Option<_>>()?;
            let at = |i: usize| tick * v.get(i).copied().unwrap_or(0);
            (v.len() >= 4).then(|| CpuTimes {
                cpu,
                user: at(0) + at(1),
                system: at(2),
                idle: at(3) + at(4),
                iowait: at(4),
                interrupts: at(5) + at(6),
                steal: at(7),
            })
        })
        .collect()
}

/// This system's per-CPU times now.
pub fn read() -> std::io::Result<Vec<CpuTimes>> {
    Ok(parse(&std::fs::read_to_string("/proc/stat")?, crate::sys::sched::clock_tick()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_lines_in_ticks() {
        let t = "cpu  10 0 5 100 0 0 0 7 0 0\ncpu0 4 1 2 50 3 1 2 3 0 0\ncpu1 6 0 3 50 0 0 0 4 0 0\nintr 1 2\n";
        let c = parse(t, Nanos::from_ms(10));
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0],
            CpuTimes {
                cpu: 0,
                user: Nanos::from_ms(50),
                system: Nanos::from_ms(20),
                idle: Nanos::from_ms(530),
                iowait: Nanos::from_ms(30),
                interrupts: Nanos::from_ms(30),
                steal: Nanos::from_ms(30),
            }
        );
        assert_eq!(c[1].steal, Nanos::from_ms(40));
        assert_eq!(c[0].total(), Nanos::from_ms(660));
        // An old kernel without the steal column, and junk.
        assert_eq!(parse("cpu3 1 2 3 4\nbogus\ncpuX 1 2 3 4\n", Nanos(1))[0].steal, Nanos::ZERO);
        assert_eq!(parse("cpu3 1 2 3 4\nbogus\ncpuX 1 2 3 4\n", Nanos(1)).len(), 1);
    }

    #[test]
    fn this_machine_has_a_line_per_online_cpu() {
        let c = read().unwrap();
        assert_eq!(c.len(), crate::sys::sched::online_cpus());
    }
}
