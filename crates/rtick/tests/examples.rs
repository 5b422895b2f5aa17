//! The examples, run as built by `cargo test`: isochronous counts its cycles;
//! dc_sync's recorded phase error converges and then stays within a bound.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    // `cargo test --test examples` alone does not build examples (`--all-targets`
    // does): build it here, a no-op when it is up to date, so it is never stale.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo).args(["build", "-q", "-p", "rtick", "--example", name]).status().unwrap();
    assert!(ok.success(), "building example {name}");
    path
}

#[test]
fn isochronous_runs_its_cycles() {
    let o = Command::new(example("isochronous")).args(["--cycles", "200"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("isochronous: 200 cycles of 1.00 ms"), "{out}");
    let bad = Command::new(example("isochronous")).args(["--cycles", "zero"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn dc_sync_converges_and_stays() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("e.csv");
    let o =
        Command::new(example("dc_sync")).args(["--cycles", "1500", "--errors", f.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let errors: Vec<(u64, i64)> = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .map(|l| {
            let (c, e) = l.split_once(',').unwrap();
            (c.parse().unwrap(), e.parse().unwrap())
        })
        .collect();
    // Catch-up: every deadline is a cycle, however late the thread ran.
    assert_eq!(errors.len(), 1500);
    assert!(errors.windows(2).all(|w| w[1].0 == w[0].0 + 1), "cycles are consecutive");
    // Starts 300 µs out of phase.
    assert!(errors[0].1.abs() > 250_000, "{:?}", errors[0]);
    // At most 5 µs per cycle: 300 µs need at least 60 cycles. Settled means the
    // error stays under 1 µs from then on (the PI overshoots once on the way).
    let settle = errors.iter().rposition(|(_, e)| e.abs() >= 1000).map_or(0, |i| i + 1);
    assert!((60..500).contains(&settle), "settled after {settle} cycles");
    // Then the +50 ppm drift is tracked: the error stays within 200 ns.
    let worst = errors[settle + 100..].iter().map(|(_, e)| e.abs()).max().unwrap();
    assert!(worst < 200, "worst phase error after settling: {worst} ns");
    assert!(String::from_utf8_lossy(&o.stdout).contains("stayed within 1 µs from cycle"));
}
