//! `rtick audit` as a user runs it: exit status, output, JSON schema.

mod common;
use common::*;

fn fixture(name: &str) -> String {
    format!("{}/../rtick/tests/fixtures/audit/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn failing_machine_exits_3_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("a.json");
    let o = rtick(&["audit", "--sysroot", &fixture("desktop"), "--json", path_str(&j)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("verdict: not ready for precise timing"), "{out}");
    assert!(out.contains("Permissions\n") && out.contains("  fail  real-time scheduling is not allowed"), "{out}");
    assert!(out.contains("remedy:   cpupower frequency-set -g performance"), "{out}");
    assert!(!out.contains('\x1b'), "no colour codes on a pipe");
    let j = json(&j);
    assert_eq!(j["rtick_version"], env!("CARGO_PKG_VERSION"));
    assert!(j["verdict"].as_str().unwrap().starts_with("not ready"));
    let findings = j["findings"].as_array().unwrap();
    assert!(findings.len() >= 30);
    for f in findings {
        for k in ["id", "status", "title", "evidence", "impact", "remedy"] {
            assert!(f[k].is_string(), "{k} in {f}");
        }
        assert!(["ok", "info", "warn", "fail"].contains(&f["status"].as_str().unwrap()));
    }
}

#[test]
fn ready_machine_exits_0() {
    let o = rtick(&["audit", "--sysroot", &fixture("rt-tuned")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("verdict: ready for precise timing"));
    let v = rtick(&["audit", "--sysroot", &fixture("rt-tuned"), "-v"]);
    assert!(stdout(&v).contains("evidence: /proc/timer_list"), "verbose shows evidence of ok findings");
}

#[test]
fn empty_tree_cannot_tell() {
    let o = rtick(&["audit", "--sysroot", &fixture("empty")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("verdict: cannot tell"), "{}", stdout(&o));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["audit", "--sysroot", "/nonexistent-rtick"][..],
        &["audit", "--json", "/nonexistent-dir/a.json"],
        &["audit", "--bogus"],
    ] {
        let o = rtick(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn this_machine() {
    let o = rtick(&["audit"]);
    let out = stdout(&o);
    // Exit 3 exactly when a finding failed, as its printed status says.
    let failed = out.lines().any(|l| l.starts_with("  fail  "));
    assert_eq!(o.status.code(), Some(if failed { 3 } else { 0 }), "{out}{}", stderr(&o));
    assert_eq!(out.contains("verdict: not ready"), failed, "{out}");
}
