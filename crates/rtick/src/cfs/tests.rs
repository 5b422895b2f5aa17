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

/// A live run samples forever: forgetting what no spike in the window
/// needs keeps a bounded number of samples, and every spike planned in the
/// window is matched as if nothing had been forgotten.
#[test]
fn a_live_watch_keeps_a_bounded_window_of_samples_and_the_same_answers() {
    let t = |path: &str| Throttling {
        path: path.into(),
        quota: None,
        quota_file: String::new(),
        delta: CpuStat::default(),
    };
    let b = |path: &str| Bandwidth {
        path: path.into(),
        dir: String::new(),
        quota: None,
        stat: CpuStat::default(),
        v2: false,
    };
    let first = vec![b("/pod/c"), b("/pod")];
    let mut w = CfsWatch {
        root: SysRoot::new("/nonexistent"),
        first,
        run: CfsRun { throttling: vec![t("/pod/c"), t("/pod")], samples: Vec::new() },
    };
    let mut all = CfsRun { throttling: w.run.throttling.clone(), samples: Vec::new() };
    // Ten samples a second for 1000 s; /pod throttled 30 ms in every third
    // 100 ms, its child 5 ms in every seventh (one reading of /pod/c missing).
    let window = 20; // two seconds of samples
    let mut most = 0;
    for k in 0..10_000i64 {
        let at = Time(k * 100_000_000);
        let s = [(0, Nanos::from_ms(5 * (k / 7))), (1, Nanos::from_ms(30 * (k / 3)))];
        for (cgroup, throttled) in s.into_iter().filter(|&(c, _)| c == 1 || k != 9_990) {
            let sample = ThrottleSample { at, cgroup, throttled };
            w.run.samples.push(sample);
            all.samples.push(sample);
        }
        w.forget_before(at - Nanos(window * 100_000_000));
        most = most.max(w.run().samples.len());
    }
    assert!(most <= 2 * (window as usize + 2), "at most a window of samples per cgroup: {most}");
    let end = Time(9_999 * 100_000_000);
    for from in (0..window).map(|i| end - Nanos(i * 100_000_000 + 50_000_000)) {
        for to in [from + Nanos::from_ms(20), from + Nanos::from_ms(150), end] {
            assert_eq!(w.run().throttled_around(from, to, Nanos::ZERO), all.throttled_around(from, to, Nanos::ZERO));
        }
    }
    assert!(w.run().throttled_around(end - Nanos::from_ms(1050), end, Nanos::ZERO).is_some());
    // Forgetting never invents an earlier sample: a spike before the window is not matched.
    let old = end - Nanos::from_secs(30);
    assert_eq!(w.run().throttled_around(old, old + Nanos::from_ms(20), Nanos::ZERO), None);
}

/// The threads of one process share its cgroup's watch; a thread of the
/// root cgroup has none; the cgroups watched are bounded and a note says
/// so; the counts name each cgroup once.
#[test]
fn threads_are_watched_by_cgroup_within_a_bound() {
    let stat = "nr_periods 3\nnr_throttled 1\nthrottled_time 5000\n";
    let mut files: Vec<(String, String)> = vec![(
        "/proc/self/mountinfo".into(),
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct\n".into(),
    )];
    let mut cgroup = |tid: i32, path: &str| {
        files.push((format!("/proc/{tid}/cgroup"), format!("2:cpu,cpuacct:{path}\n0::/\n")));
        for (f, v) in [("cpu.cfs_quota_us", "10000"), ("cpu.cfs_period_us", "100000"), ("cpu.stat", stat)] {
            files.push((format!("/sys/fs/cgroup/cpu{path}/{f}"), v.into()));
        }
    };
    cgroup(1, "/app");
    cgroup(2, "/app");
    for i in 0..MAX_CGROUPS as i32 + 1 {
        cgroup(10 + i, &format!("/app/c{i}"));
    }
    files.push(("/proc/3/cgroup".into(), "2:cpu,cpuacct:/\n0::/\n".into()));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let d = tree(&refs);
    let mut w = CfsWatches::new(SysRoot::new(d.path()));
    w.follow(&[1, 2, 3]);
    assert_eq!(w.watched(), 1, "one process, one cgroup; the root has no bandwidth control");
    assert!(std::ptr::eq(w.run_of(1).unwrap(), w.run_of(2).unwrap()));
    assert!(w.run_of(3).is_none() && w.note().is_none());
    assert_eq!(w.run_of(1).unwrap().throttling[0].path.as_ref(), "/app");
    w.follow(&(10..10 + MAX_CGROUPS as i32 + 1).collect::<Vec<_>>());
    assert_eq!(w.watched(), MAX_CGROUPS);
    assert!(w.run_of(10 + MAX_CGROUPS as i32).is_none(), "beyond the bound");
    assert_eq!(
        w.note().as_deref(),
        Some(
            "2 threads in cgroups beyond the 8 whose CFS throttling rtick watches: their waits are not matched with it"
        )
    );
    w.sample();
    w.forget(&[1]);
    assert!(w.run_of(1).is_none() && w.run_of(2).is_some());
    let counts = w.finish();
    // /app, then /app/c0 … c6 (each with /app, its ancestor with a quota, named once).
    assert_eq!(counts.len(), MAX_CGROUPS, "{counts:?}");
    assert_eq!(counts.iter().filter(|t| &*t.path == "/app").count(), 1);
}
