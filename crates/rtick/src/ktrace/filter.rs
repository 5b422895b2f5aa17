//! The kernel-side event filters a session writes: wake-ups cut to the
//! measured CPUs, system calls' exits to the attached threads while their
//! list fits the kernel's limit.

use super::events::Tracepoint;

/// The kernel refuses a filter of a page or more (`EINVAL`).
const MAX_FILTER: usize = 4095;

/// The kernel-side filter of `tp`, where one cuts volume without hiding
/// anything the analysis needs. Wake-ups are recorded on the waker's CPU:
/// only those of tasks that will run on a measured CPU matter (the measured
/// thread, and whoever competes with it). Every `sched_switch`, IRQ,
/// softirq and timer event on a measured CPU is kept: each may be a culprit.
/// System calls' exits are only those of `pids` (none when empty), or all
/// of them (`"0"` clears a filter) when `pids` are too many for one.
pub(super) fn filter(tp: Tracepoint, cpus: &[usize], pids: &[i32]) -> Option<String> {
    match tp {
        Tracepoint::SchedWaking | Tracepoint::SchedWakeup => {
            Some(cpus.iter().map(|c| format!("target_cpu == {c}")).collect::<Vec<_>>().join(" || "))
        }
        Tracepoint::SysExit => Some(pid_filter(pids).unwrap_or_else(|| "0".into())),
        _ => None,
    }
}

/// Whether the kernel can filter events to `pids` (their filter fits its
/// limit); otherwise every one is recorded and the reader must filter.
pub fn kernel_filters_pids(pids: &[i32]) -> bool {
    pid_filter(pids).is_some()
}

/// `common_pid == a || common_pid == b`; for no pid, a filter no event
/// passes; `None` past the kernel's limit.
fn pid_filter(pids: &[i32]) -> Option<String> {
    if pids.is_empty() {
        return Some("common_pid == -1".into());
    }
    let f = pids.iter().map(|p| format!("common_pid == {p}")).collect::<Vec<_>>().join(" || ");
    (f.len() <= MAX_FILTER).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_ups_are_filtered_to_the_measured_cpus_and_nothing_else_is() {
        assert_eq!(filter(Tracepoint::SchedWaking, &[1, 3], &[]).unwrap(), "target_cpu == 1 || target_cpu == 3");
        assert_eq!(filter(Tracepoint::SchedWakeup, &[0], &[]).unwrap(), "target_cpu == 0");
        assert_eq!(filter(Tracepoint::SchedSwitch, &[0], &[7]), None);
    }

    #[test]
    fn system_call_exits_are_only_the_attached_threads() {
        assert_eq!(filter(Tracepoint::SysExit, &[0], &[7, 9]).unwrap(), "common_pid == 7 || common_pid == 9");
        assert_eq!(filter(Tracepoint::SysExit, &[0], &[]).unwrap(), "common_pid == -1");
    }

    #[test]
    fn too_many_threads_for_the_kernels_filter_clear_it() {
        let many: Vec<i32> = (4_000_000..4_000_300).collect();
        assert!(!kernel_filters_pids(&many));
        assert_eq!(filter(Tracepoint::SysExit, &[0], &many).unwrap(), "0");
        let fits: Vec<i32> = (4_000_000..4_000_150).collect();
        assert!(filter(Tracepoint::SysExit, &[0], &fits).unwrap().len() <= MAX_FILTER);
    }
}
