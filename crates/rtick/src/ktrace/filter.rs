//! The kernel-side event filters a session writes: wake-ups cut to the
//! measured CPUs, system calls' exits to the attached threads while their
//! list fits the kernel's limit.

use super::events::Tracepoint;
use super::instance::Instance;

/// The kernel refuses a filter of a page or more (`EINVAL`).
const MAX_FILTER: usize = 4095;

/// The kernel-side filter of `tp`, where one cuts volume without hiding
/// anything the analysis needs. Wake-ups are recorded on the waker's CPU:
/// only those of tasks that will run on a measured CPU matter (the measured
/// thread, and whoever competes with it). Every `sched_switch`, IRQ,
/// softirq and timer event on a measured CPU is kept: each may be a culprit.
/// System calls' exits are only those of `pids` (none when empty), or all
/// of them (`"0"` clears a filter) when `pids` are too many for one.
///
/// When the session also records the other CPUs (`senders`: for the IPIs
/// they send to the measured ones, [`Tracepoint::SENDS`]), a send is kept
/// when it targets a measured CPU, and every other event only on a measured CPU.
pub(super) fn filter(tp: Tracepoint, cpus: &[usize], pids: &[i32], senders: bool) -> Option<String> {
    let any = |f: &dyn Fn(usize) -> String| cpus.iter().map(|&c| f(c)).collect::<Vec<_>>().join(" || ");
    let own = own_filter(tp, cpus, pids);
    if !senders {
        return own;
    }
    Some(match tp {
        Tracepoint::IpiSendCpu | Tracepoint::CsdQueueCpu => any(&|c| format!("cpu == {c}")),
        Tracepoint::IpiSendCpumask => {
            format!("cpumask & CPUS{{{}}}", cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","))
        }
        _ => {
            let here = any(&|c| format!("CPU == {c}"));
            match own.as_deref() {
                None => here,
                // "0" clears a filter: every event of the measured CPUs.
                Some("0") => here,
                Some(own) if own.len() + here.len() + 8 <= MAX_FILTER => format!("({own}) && ({here})"),
                // Too long with the CPUs' clause (many attached threads):
                // every exit of the measured CPUs, the reader keeps theirs.
                Some(_) => here,
            }
        }
    })
}

/// [`filter`] for a session recording the measured CPUs only.
fn own_filter(tp: Tracepoint, cpus: &[usize], pids: &[i32]) -> Option<String> {
    match tp {
        Tracepoint::SchedWaking | Tracepoint::SchedWakeup => {
            Some(cpus.iter().map(|c| format!("target_cpu == {c}")).collect::<Vec<_>>().join(" || "))
        }
        Tracepoint::SysExit => Some(pid_filter(pids).unwrap_or_else(|| "0".into())),
        _ => None,
    }
}

/// The CPUs besides `cpus` a session records, for the IPIs they send to
/// them: every other online CPU with a buffer in `instance`, when `events`
/// include the sends and the kernel filters events by CPU (the `CPU`
/// field: the other events stay on `cpus`); otherwise none, and an IPI's
/// sender is only seen when it is a measured CPU.
pub(super) fn sender_cpus(instance: &Instance, cpus: &[usize], events: &[Tracepoint]) -> Vec<usize> {
    let tp = Tracepoint::IpiSendCpu;
    let rel = format!("events/{}/{}/filter", tp.system(), tp.name());
    if !events.contains(&tp) || instance.write(&rel, "CPU == 0").and_then(|_| instance.write(&rel, "0")).is_err() {
        return Vec::new();
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    let online = online.and_then(|s| crate::system::parse_cpu_list(&s)).unwrap_or_default();
    online.into_iter().filter(|c| !cpus.contains(c) && instance.has(&format!("per_cpu/cpu{c}"))).collect()
}

/// Whether the kernel can filter events to `pids` (their filter fits its
/// limit, with the clause of the measured `cpus` a session recording
/// other CPUs' IPI sends adds); otherwise every one is recorded and the
/// reader must filter.
pub fn kernel_filters_pids(pids: &[i32], cpus: &[usize]) -> bool {
    filter(Tracepoint::SysExit, cpus, pids, true).is_some_and(|f| f.contains("common_pid"))
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
        assert_eq!(filter(Tracepoint::SchedWaking, &[1, 3], &[], false).unwrap(), "target_cpu == 1 || target_cpu == 3");
        assert_eq!(filter(Tracepoint::SchedWakeup, &[0], &[], false).unwrap(), "target_cpu == 0");
        assert_eq!(filter(Tracepoint::SchedSwitch, &[0], &[7], false), None);
    }

    #[test]
    fn system_call_exits_are_only_the_attached_threads() {
        assert_eq!(filter(Tracepoint::SysExit, &[0], &[7, 9], false).unwrap(), "common_pid == 7 || common_pid == 9");
        assert_eq!(filter(Tracepoint::SysExit, &[0], &[], false).unwrap(), "common_pid == -1");
    }

    /// With the other CPUs recorded, the pids and the CPUs' clause must fit
    /// together: past the limit, the exits are cut to the CPUs alone.
    #[test]
    fn the_pids_and_the_cpus_clause_never_pass_the_kernels_limit() {
        for n in 100..200 {
            let pids: Vec<i32> = (4_000_000..4_000_000 + n).collect();
            let f = filter(Tracepoint::SysExit, &[1, 3], &pids, true).unwrap();
            assert!(f.len() <= MAX_FILTER, "{n} threads: {} bytes", f.len());
            let named = f.contains("common_pid");
            assert_eq!(named, kernel_filters_pids(&pids, &[1, 3]), "{n} threads");
            assert!(named || f == "CPU == 1 || CPU == 3", "{f}");
        }
        assert!(
            kernel_filters_pids(&[7], &[1]) && !kernel_filters_pids(&(4_000_000..4_000_200).collect::<Vec<_>>(), &[1])
        );
    }

    #[test]
    fn too_many_threads_for_the_kernels_filter_clear_it() {
        let many: Vec<i32> = (4_000_000..4_000_300).collect();
        assert!(!kernel_filters_pids(&many, &[0]));
        assert_eq!(filter(Tracepoint::SysExit, &[0], &many, false).unwrap(), "0");
        let fits: Vec<i32> = (4_000_000..4_000_150).collect();
        assert!(filter(Tracepoint::SysExit, &[0], &fits, false).unwrap().len() <= MAX_FILTER);
    }

    #[test]
    fn with_the_senders_recorded_sends_target_the_measured_cpus_and_the_rest_stays_on_them() {
        let f = |tp, pids: &[i32]| filter(tp, &[1, 3], pids, true).unwrap();
        assert_eq!(f(Tracepoint::IpiSendCpu, &[]), "cpu == 1 || cpu == 3");
        assert_eq!(f(Tracepoint::CsdQueueCpu, &[]), "cpu == 1 || cpu == 3");
        assert_eq!(f(Tracepoint::IpiSendCpumask, &[]), "cpumask & CPUS{1,3}");
        assert_eq!(f(Tracepoint::SchedSwitch, &[]), "CPU == 1 || CPU == 3");
        assert_eq!(f(Tracepoint::SchedWaking, &[]), "(target_cpu == 1 || target_cpu == 3) && (CPU == 1 || CPU == 3)");
        assert_eq!(f(Tracepoint::SysExit, &[7]), "(common_pid == 7) && (CPU == 1 || CPU == 3)");
        let many: Vec<i32> = (4_000_000..4_000_300).collect();
        assert_eq!(f(Tracepoint::SysExit, &many), "CPU == 1 || CPU == 3");
    }
}
