//! `rtick audit` on fixture trees: a tuned PREEMPT_RT machine (all ok), a
//! stock desktop, a VM, an empty tree; then one change at a time to the tuned
//! tree, each turning one finding to warn or fail.

use std::fs;
use std::path::{Path, PathBuf};

use rtick::audit::{run, verdict, Finding, Options, Status};
use rtick::system::{Preempt, SysRoot, SystemInfo};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit").join(name)
}

fn audit(dir: &Path) -> Vec<Finding> {
    run(&SysRoot::new(dir), &Options { run_commands: false })
}

fn status(f: &[Finding], id: &str) -> Status {
    f.iter().find(|x| x.id == id).unwrap_or_else(|| panic!("no finding {id}: {f:#?}")).status
}

fn well_formed(f: &[Finding]) {
    let mut ids: Vec<&str> = f.iter().map(|x| x.id.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "finding ids are unique");
    for x in f {
        assert!(!x.title.is_empty() && !x.evidence.is_empty(), "{x:?}");
        assert!(x.id.starts_with(&format!("{}.", x.area)), "{x:?}");
        if matches!(x.status, Status::Warn | Status::Fail) {
            assert!(!x.impact.is_empty() && !x.remedy.is_empty(), "warn/fail needs impact and remedy: {x:?}");
        }
    }
}

#[test]
fn tuned_rt_machine_is_ready() {
    let f = audit(&fixture("rt-tuned"));
    well_formed(&f);
    let bad: Vec<_> = f.iter().filter(|x| matches!(x.status, Status::Warn | Status::Fail)).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for id in [
        "timers.hres_active",
        "timers.resolution",
        "clocksource.current",
        "clocksource.tsc_flags",
        "clocksource.tsc_stability",
        "kernel.preempt_rt",
        "kernel.preempt_model",
        "kernel.high_res_timers",
        "kernel.debug_options",
        "kernel.mitigations",
        "boot.isolcpus",
        "boot.nohz_full",
        "boot.cstate_limits",
        "boot.rt_tuning",
        "power.cstates",
        "power.pm_qos",
        "power.cpufreq",
        "power.turbo",
        "sched.rt_throttling",
        "sched.timer_migration",
        "sched.smt",
        "sched.numa_balancing",
        "sched.rt_group",
        "sched.cpus_allowed",
        "memory.memlock",
        "memory.swap",
        "memory.thp",
        "memory.ksm",
        "permissions.realtime",
        "permissions.dma_latency",
        "noise.irqbalance",
        "noise.irq_affinity",
        "noise.nmi_watchdog",
        "noise.softlockup_watchdog",
        "noise.damon",
        "environment.virtualization",
        "environment.tuned",
    ] {
        assert_eq!(status(&f, id), Status::Ok, "{id}");
    }
    assert_eq!(verdict(&f), "ready for precise timing");
}

#[test]
fn stock_desktop() {
    let f = audit(&fixture("desktop"));
    well_formed(&f);
    for (id, s) in [
        ("kernel.preempt_rt", Status::Warn),
        ("kernel.preempt_model", Status::Warn),
        ("kernel.config_hz", Status::Info),
        ("power.cstates", Status::Warn),
        ("power.pm_qos", Status::Info),
        ("power.cpufreq", Status::Warn),
        ("power.turbo", Status::Info),
        ("sched.rt_throttling", Status::Warn),
        ("sched.timer_migration", Status::Info),
        ("sched.smt", Status::Warn),
        ("sched.numa_balancing", Status::Warn),
        ("memory.memlock", Status::Warn),
        ("memory.swap", Status::Info),
        ("memory.thp", Status::Warn),
        ("permissions.realtime", Status::Fail),
        ("noise.irqbalance", Status::Info),
        ("noise.nmi_watchdog", Status::Warn),
        ("noise.softlockup_watchdog", Status::Info),
        ("boot.isolcpus", Status::Info),
        ("environment.virtualization", Status::Ok),
        ("environment.tuned", Status::Warn),
        ("kernel.debug_options", Status::Ok),
        ("kernel.mitigations", Status::Info),
        ("sched.rt_group", Status::Ok),
        ("sched.cpus_allowed", Status::Ok),
    ] {
        assert_eq!(status(&f, id), s, "{id}");
    }
    let m = f.iter().find(|x| x.id == "kernel.mitigations").unwrap();
    assert!(
        m.title.ends_with("pays for 3 CPU-vulnerability mitigations")
            && m.evidence.contains("meltdown: Mitigation: PTI"),
        "{m:?}"
    );
    let c = f.iter().find(|x| x.id == "power.cstates").unwrap();
    assert!(c.title.contains("C10") && c.title.contains("890 µs"), "{c:?}");
    assert!(
        f.iter().find(|x| x.id == "kernel.config_hz").unwrap().title.contains("CONFIG_HZ=250"),
        "read from config.gz"
    );
    assert!(verdict(&f).starts_with("not ready for precise timing: 1 failure"));
}

#[test]
fn vm_like_this_one() {
    let f = audit(&fixture("vm"));
    well_formed(&f);
    assert_eq!(status(&f, "environment.virtualization"), Status::Warn);
    assert_eq!(status(&f, "clocksource.current"), Status::Warn, "kvm-clock while tsc is available");
    assert_eq!(status(&f, "kernel.config"), Status::Info);
    assert!(f.iter().find(|x| x.id == "kernel.config").unwrap().is_unreadable());
    assert_eq!(status(&f, "power.cstates"), Status::Info);
    assert_eq!(status(&f, "sched.rt_throttling"), Status::Warn);
    // Started from a service's cgroup without a real-time budget.
    let g = f.iter().find(|x| x.id == "sched.rt_group").unwrap();
    assert_eq!(g.status, Status::Fail);
    assert!(g.remedy.contains("/sys/fs/cgroup/cpu,cpuacct/system.slice/rtick.service/cpu.rt_runtime_us"), "{g:?}");
    let p = f.iter().find(|x| x.id == "permissions.realtime").unwrap();
    assert!(p.title.ends_with("but cgroup /system.slice/rtick.service refuses them (see sched.rt_group)"), "{p:?}");
    let d = f.iter().find(|x| x.id == "noise.damon").unwrap();
    assert_eq!(d.status, Status::Info);
    assert!(
        d.title.contains("kdamond 0 (pid 77): pageout") && d.remedy.contains("taskset -pc HOUSEKEEPING_CPUS 77"),
        "{d:?}"
    );
}

#[test]
fn empty_tree_reads_nothing_and_claims_nothing() {
    let f = audit(&fixture("empty"));
    well_formed(&f);
    let ok: Vec<_> = f.iter().filter(|x| x.status != Status::Info).collect();
    assert!(ok.is_empty(), "no ok, warn or fail without evidence: {ok:#?}");
    assert!(f.iter().filter(|x| x.is_unreadable()).count() >= 10);
    assert!(verdict(&f).starts_with("cannot tell"));
}

/// Copies the tuned tree and applies `edits` (path, content).
fn variant(edits: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy(&fixture("rt-tuned"), dir.path());
    for (p, c) in edits {
        let f = dir.path().join(p.trim_start_matches('/'));
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(f, c).unwrap();
    }
    dir
}

fn copy(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            fs::create_dir_all(&dest).unwrap();
            copy(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// (finding id, files changed in the tuned tree, the status it must get).
type Case = (&'static str, Vec<(&'static str, Vec<u8>)>, Status);

#[test]
fn each_problem_turns_its_finding() {
    let cmd = |extra: &str| {
        format!("root=/dev/sda1 isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 intel_idle.max_cstate=1 skew_tick=1 threadirqs nosoftlockup {extra}\n")
    };
    let cases: Vec<Case> = vec![
        ("timers.hres_active", vec![("/proc/timer_list", b"cpu: 0\n .hres_active : 1\ncpu: 1\n .hres_active : 0\n".to_vec())], Status::Fail),
        // A value that is neither 0 nor 1 is unknown, not inactive.
        ("timers.hres_active", vec![("/proc/timer_list", b"cpu: 0\n .hres_active : 1\ncpu: 1\n .hres_active : x\n".to_vec())], Status::Info),
        ("timers.resolution", vec![("/proc/timer_list", b"cpu: 0\n .resolution: 4000000 nsecs\n .hres_active : 1\n".to_vec())], Status::Warn),
        ("clocksource.current", vec![("/sys/devices/system/clocksource/clocksource0/current_clocksource", b"acpi_pm\n".to_vec())], Status::Warn),
        ("clocksource.current", vec![("/sys/devices/system/clocksource/clocksource0/current_clocksource", b"jiffies\n".to_vec())], Status::Fail),
        ("clocksource.tsc_flags", vec![("/proc/cpuinfo", b"flags\t: fpu tsc rdtscp\n".to_vec())], Status::Warn),
        ("clocksource.tsc_stability", vec![("/dev/kmsg", b"clocksource: timekeeping watchdog: Marking clocksource 'tsc' as unstable because the skew is too large\n".to_vec())], Status::Fail),
        ("kernel.preempt_rt", vec![("/sys/kernel/realtime", b"0\n".to_vec()), ("/proc/sys/kernel/version", b"#1 SMP PREEMPT_DYNAMIC\n".to_vec()), ("/boot/config-6.1.0-18-rt-amd64", b"CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HIGH_RES_TIMERS=y\n".to_vec())], Status::Warn),
        ("kernel.preempt_model", vec![("/sys/kernel/realtime", b"0\n".to_vec()), ("/proc/sys/kernel/version", b"#1 SMP PREEMPT_DYNAMIC\n".to_vec()), ("/boot/config-6.1.0-18-rt-amd64", b"CONFIG_PREEMPT_NONE=y\n".to_vec())], Status::Warn),
        ("kernel.high_res_timers", vec![("/boot/config-6.1.0-18-rt-amd64", b"CONFIG_PREEMPT_RT=y\n# CONFIG_HIGH_RES_TIMERS is not set\n".to_vec())], Status::Fail),
        ("boot.isolcpus", vec![("/proc/cmdline", b"isolcpus=0-3 nohz_full=1-3 rcu_nocbs=1-3\n".to_vec())], Status::Fail),
        ("boot.nohz_full", vec![("/proc/cmdline", cmd("nohz_full=1-3").into_bytes())], Status::Warn),
        ("boot.nohz_full", vec![("/proc/cmdline", b"nohz_full=0-3 rcu_nocbs=0-3 isolcpus=1-3\n".to_vec())], Status::Fail),
        ("power.cstates", vec![("/dev/cpu_dma_latency", 2_000_000_000i32.to_ne_bytes().to_vec()), ("/sys/devices/system/cpu/cpu1/cpuidle/state1/latency", b"150\n".to_vec())], Status::Warn),
        ("power.cpufreq", vec![("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", b"schedutil\n".to_vec())], Status::Warn),
        ("sched.rt_throttling", vec![("/proc/sys/kernel/sched_rt_runtime_us", b"950000\n".to_vec())], Status::Warn),
        ("sched.smt", vec![("/sys/devices/system/cpu/smt/active", b"1\n".to_vec())], Status::Warn),
        ("sched.numa_balancing", vec![("/proc/sys/kernel/numa_balancing", b"1\n".to_vec())], Status::Warn),
        ("memory.memlock", vec![("/proc/self/status", b"Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n".to_vec()), ("/proc/self/limits", b"Max locked memory         65536                65536                bytes\nMax realtime priority     99                   99\n".to_vec())], Status::Warn),
        ("memory.thp", vec![("/sys/kernel/mm/transparent_hugepage/enabled", b"[always] madvise never\n".to_vec())], Status::Warn),
        ("memory.ksm", vec![("/sys/kernel/mm/ksm/run", b"1\n".to_vec())], Status::Warn),
        ("permissions.realtime", vec![("/proc/self/status", b"Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n".to_vec()), ("/proc/self/limits", b"Max realtime priority     0                    0\n".to_vec())], Status::Fail),
        ("permissions.realtime", vec![("/proc/self/status", b"Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n".to_vec()), ("/proc/self/limits", b"Max realtime priority     50                   50\n".to_vec())], Status::Warn),
        ("noise.irqbalance", vec![("/proc/733/comm", b"irqbalance\n".to_vec())], Status::Warn),
        ("noise.irq_affinity", vec![("/proc/irq/30/smp_affinity_list", b"0-3\n".to_vec())], Status::Warn),
        ("noise.nmi_watchdog", vec![("/proc/sys/kernel/nmi_watchdog", b"1\n".to_vec())], Status::Warn),
        ("environment.virtualization", vec![("/sys/class/dmi/id/sys_vendor", b"QEMU\n".to_vec())], Status::Warn),
        ("environment.tuned", vec![("/etc/tuned/active_profile", b"powersave\n".to_vec())], Status::Warn),
        ("kernel.debug_options", vec![("/boot/config-6.1.0-18-rt-amd64", b"CONFIG_PREEMPT_RT=y\nCONFIG_HIGH_RES_TIMERS=y\nCONFIG_PROVE_LOCKING=y\n".to_vec())], Status::Warn),
        ("kernel.mitigations", vec![("/sys/devices/system/cpu/vulnerabilities/retbleed", b"Mitigation: IBRS\n".to_vec())], Status::Info),
        ("kernel.mitigations", vec![("/sys/devices/system/cpu/vulnerabilities/spectre_v2", b"Vulnerable: Retpolines\n".to_vec())], Status::Ok),
        ("environment.tuned", vec![("/etc/tuned/active_profile", b"".to_vec())], Status::Info),
        ("sched.rt_group", vec![("/proc/self/cgroup", b"2:cpu,cpuacct:/app\n".to_vec()), ("/sys/fs/cgroup/cpu,cpuacct/app/cpu.rt_runtime_us", b"0\n".to_vec())], Status::Fail),
        ("sched.rt_group", vec![("/proc/self/cgroup", b"2:cpu,cpuacct:/app\n".to_vec()), ("/sys/fs/cgroup/cpu,cpuacct/app/cpu.rt_runtime_us", b"100000\n".to_vec())], Status::Info),
        ("sched.cpus_allowed", vec![("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", b"0-1\n".to_vec())], Status::Warn),
        ("sched.cpus_allowed", vec![("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", b"0-2\n".to_vec()), ("/sys/devices/system/cpu/isolated", b"2\n".to_vec())], Status::Info),
    ];
    for (id, edits, want) in cases {
        let edits: Vec<(&str, &[u8])> = edits.iter().map(|(p, c)| (*p, c.as_slice())).collect();
        let dir = variant(&edits);
        let f = audit(dir.path());
        well_formed(&f);
        assert_eq!(
            status(&f, id),
            want,
            "{id} after {:?}: {:#?}",
            edits.iter().map(|e| e.0).collect::<Vec<_>>(),
            f.iter().find(|x| x.id == id)
        );
    }
}

/// The header of `rtick measure` ([`SystemInfo`]) and the audit read each
/// fact through the same parser, so they agree on every tree.
#[test]
fn system_info_agrees_with_the_findings() {
    for name in ["rt-tuned", "desktop", "vm", "empty"] {
        let dir = fixture(name);
        let (f, sys) = (audit(&dir), SystemInfo::read_from(&SysRoot::new(&dir)));
        let find = |id: &str| f.iter().find(|x| x.id == id).unwrap();
        let model = sys.preempt.model.map_or("unknown", Preempt::name);
        assert_eq!(find("kernel.preempt_model").title, format!("preemption model: {model}"), "{name}");
        assert_eq!(find("kernel.preempt_rt").status == Status::Ok, sys.preempt.is_rt(), "{name}");
        let hres = match sys.hres_active() {
            Some(true) => Status::Ok,
            Some(false) => Status::Fail,
            None => Status::Info,
        };
        assert_eq!(find("timers.hres_active").status, hres, "{name}");
        assert_eq!(find("environment.virtualization").status == Status::Warn, sys.hypervisor().is_some(), "{name}");
    }
    let rt = SystemInfo::read_from(&SysRoot::new(fixture("rt-tuned")));
    assert_eq!((rt.preempt.to_string(), rt.hres_active(), rt.hypervisor()), ("rt".into(), Some(true), None));
    let desktop = SystemInfo::read_from(&SysRoot::new(fixture("desktop")));
    assert_eq!(desktop.preempt.to_string(), "voluntary (PREEMPT_DYNAMIC)");
    let vm = SystemInfo::read_from(&SysRoot::new(fixture("vm")));
    assert_eq!(vm.hypervisor().map(|h| h.to_string()).as_deref(), Some("QEMU"));
}

/// A PREEMPT_RT kernel known only by /sys/kernel/realtime names that file as
/// its evidence (it said "mode not readable").
#[test]
fn rt_evidence_names_where_it_was_read() {
    let dir = variant(&[("/boot/config-6.1.0-18-rt-amd64", b"")]);
    let f = audit(dir.path());
    let m = f.iter().find(|x| x.id == "kernel.preempt_model").unwrap();
    assert_eq!(
        (m.status, m.title.as_str(), m.evidence.as_str()),
        (Status::Ok, "preemption model: rt", "/sys/kernel/realtime: 1")
    );
}

#[test]
fn irqbalance_remedy_is_a_cpu_list_to_paste() {
    let remedy = |isolated: &[u8]| {
        let dir = variant(&[("/proc/733/comm", b"irqbalance\n"), ("/sys/devices/system/cpu/isolated", isolated)]);
        let f = audit(dir.path());
        let x = f.into_iter().find(|x| x.id == "noise.irqbalance").unwrap();
        assert_eq!(x.status, Status::Warn, "{x:?}");
        x.remedy
    };
    let r = remedy(b"2-3\n");
    assert!(r.contains("IRQBALANCE_BANNED_CPULIST=2-3 in /etc/default/irqbalance"), "{r}");
    let r = remedy(b"1,3\n");
    assert!(r.contains("IRQBALANCE_BANNED_CPULIST=1,3 in "), "{r}");
}

#[test]
fn this_machine_invariants() {
    let f = run(&SysRoot::default(), &Options { run_commands: true });
    well_formed(&f);
    // A fact read here independently: `.hres_active` of each CPU's entry in
    // /proc/timer_list (readable as root; Info when it cannot be read).
    let want = match fs::read_to_string("/proc/timer_list") {
        Ok(text) => {
            let per_cpu: Vec<bool> = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix(".hres_active"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim() == "1")
                .collect();
            match (per_cpu.is_empty(), per_cpu.iter().all(|on| *on)) {
                (true, _) => Status::Info,
                (false, true) => Status::Ok,
                (false, false) => Status::Fail,
            }
        }
        Err(_) => Status::Info,
    };
    assert_eq!(status(&f, "timers.hres_active"), want);
    // The verdict follows the statuses: a failure, or not ready.
    let fails = f.iter().filter(|x| x.status == Status::Fail).count();
    assert_eq!(verdict(&f).starts_with("not ready"), fails > 0, "{}", verdict(&f));
}
