use super::*;

use crate::cgroup::tests::tree;

fn cg(path: &str, dir: &str, mount: &str, v2: bool) -> CpuCgroup {
    CpuCgroup { path: path.into(), dir: dir.into(), mount: mount.into(), v2, rt_runtime_us: None, rt_period_us: None }
}

#[test]
fn cpu_stat_v1_counts_ns_and_v2_counts_us() {
    let v1 = "nr_periods 40\nnr_throttled 39\nthrottled_time 3104498071\nnr_bursts 0\nburst_time 0\n";
    assert_eq!(CpuStat::parse(v1), Some(CpuStat { nr_periods: 40, nr_throttled: 39, throttled: Nanos(3_104_498_071) }));
    let v2 = "usage_usec 8000\nuser_usec 6000\nsystem_usec 2000\nnr_periods 12\nnr_throttled 5\nthrottled_usec 420123\nnr_bursts 0\nburst_usec 0\n";
    let s = CpuStat::parse(v2).unwrap();
    assert_eq!(s, CpuStat { nr_periods: 12, nr_throttled: 5, throttled: Nanos(420_123_000) });
    // v2 without the cpu controller: usage only, no bandwidth control.
    assert_eq!(CpuStat::parse("usage_usec 8000\nuser_usec 6000\nsystem_usec 2000\n"), None);
    let before = CpuStat { nr_periods: 2, nr_throttled: 1, throttled: Nanos(20_123_000) };
    assert_eq!(s.since(&before), CpuStat { nr_periods: 10, nr_throttled: 4, throttled: Nanos(400_000_000) });
}

#[test]
fn quotas_of_v1_and_v2() {
    let q = Quota { runtime: Nanos::from_ms(10), period: Nanos::from_ms(100) };
    assert_eq!(Quota::parse_max("10000 100000\n"), Some(Some(q)));
    assert_eq!(Quota::parse_max("max 100000"), Some(None));
    assert_eq!(Quota::parse_max("lots 100000"), None);
    assert_eq!(Quota::from_v1("10000\n", "100000\n"), Some(Some(q)));
    assert_eq!(Quota::from_v1("-1", "100000"), Some(None));
    assert_eq!(q.to_string(), "10.00 ms every 100.00 ms");
}

#[test]
fn the_chain_is_the_cgroup_and_its_ancestors_with_a_quota() {
    let m = "/sys/fs/cgroup/cpu";
    let stat = "nr_periods 3\nnr_throttled 1\nthrottled_time 5000\n";
    let d = tree(&[
        ("/sys/fs/cgroup/cpu/pod/c/cpu.cfs_quota_us", "-1"),
        ("/sys/fs/cgroup/cpu/pod/c/cpu.cfs_period_us", "100000"),
        ("/sys/fs/cgroup/cpu/pod/c/cpu.stat", stat),
        ("/sys/fs/cgroup/cpu/pod/cpu.cfs_quota_us", "50000"),
        ("/sys/fs/cgroup/cpu/pod/cpu.cfs_period_us", "100000"),
        ("/sys/fs/cgroup/cpu/pod/cpu.stat", stat),
        ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1"),
        ("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"),
        ("/sys/fs/cgroup/cpu/cpu.stat", stat),
    ]);
    let root = SysRoot::new(d.path());
    let chain = Bandwidth::chain(&root, &cg("/pod/c", "/sys/fs/cgroup/cpu/pod/c", m, false));
    let paths: Vec<&str> = chain.iter().map(|b| &*b.path).collect();
    assert_eq!(paths, ["/pod/c", "/pod"], "the thread's own, then the ancestor with a quota; not the root");
    assert_eq!(chain[1].quota.map(|q| q.runtime), Some(Nanos::from_ms(50)));
    assert_eq!(chain[1].quota_file(), "/sys/fs/cgroup/cpu/pod/cpu.cfs_quota_us");
    // A namespaced mount shows the cgroup at its root: the walk stops there.
    let ns = Bandwidth::chain(&root, &cg("/pod/c", "/sys/fs/cgroup/cpu/pod", "/sys/fs/cgroup/cpu/pod", false));
    assert_eq!(ns.len(), 1);
    // A cgroup whose counters cannot be read: only its ancestors with a quota.
    let gone = Bandwidth::chain(&root, &cg("/pod/gone", "/sys/fs/cgroup/cpu/pod/gone", m, false));
    assert_eq!(gone.iter().map(|b| &*b.path).collect::<Vec<_>>(), ["/pod"]);
    let unlimited = Bandwidth::chain(&root, &cg("/pod/c/gone", "/sys/fs/cgroup/cpu/pod/c/gone", m, false));
    assert_eq!(unlimited.iter().map(|b| &*b.path).collect::<Vec<_>>(), ["/pod"], "/pod/c has no quota");
    // The root has no quota to watch; a v2 cgroup without the cpu controller has no counters.
    assert!(Bandwidth::chain(&root, &cg("/", m, m, false)).is_empty());
    let d2 = tree(&[("/sys/fs/cgroup/app/cpu.stat", "usage_usec 1\n"), ("/sys/fs/cgroup/app/cpu.max", "max 100000")]);
    assert!(Bandwidth::chain(&SysRoot::new(d2.path()), &cg("/app", "/sys/fs/cgroup/app", "/sys/fs/cgroup", true))
        .is_empty());
}

#[test]
fn a_spike_is_matched_to_the_cgroup_throttled_longest_around_it() {
    let t = |path: &str| Throttling {
        path: path.into(),
        quota: None,
        quota_file: String::new(),
        delta: CpuStat::default(),
    };
    let s = |at: i64, cgroup: usize, ms: i64| ThrottleSample { at: Time(at), cgroup, throttled: Nanos::from_ms(ms) };
    let run = CfsRun {
        throttling: vec![t("/pod/c"), t("/pod")],
        samples: vec![s(0, 0, 0), s(0, 1, 0), s(100, 0, 0), s(100, 1, 80), s(200, 0, 0), s(200, 1, 80)],
    };
    // Around [10, 90]: /pod was throttled 80 ms, its child not at all.
    assert_eq!(run.throttled_around(Time(10), Time(90), Nanos::from_ms(40)), Some(("/pod".into(), Nanos::from_ms(80))));
    // Less throttling than the thread was held up: not the cause.
    assert_eq!(run.throttled_around(Time(10), Time(90), Nanos::from_ms(81)), None);
    // Nothing throttled between 100 and 200; nothing sampled after 200.
    assert_eq!(run.throttled_around(Time(110), Time(190), Nanos::ZERO), None);
    assert_eq!(run.throttled_around(Time(110), Time(210), Nanos::ZERO), None);
}
