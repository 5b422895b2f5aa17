//! The C API compiled and run from C: tests/c/test_api.c and the C example,
//! both with gcc -Wall -Wextra -Werror against include/rtick.h and librtick.a.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../rtick/tests/support/skip.rs"]
mod skip;
use skip::skip;

fn target_dir() -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>
    std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds librtick.a (a no-op when fresh) and compiles `src` against it.
fn compile(src: &Path, out: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let profile = if target_dir().ends_with("release") { vec!["--release"] } else { vec![] };
    let ok = Command::new(cargo).args(["build", "-q", "-p", "rtick-ffi"]).args(profile).status().unwrap();
    assert!(ok.success(), "building librtick");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let o = Command::new("gcc")
        .args(["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(&include)
        .arg(src)
        .arg(target_dir().join("librtick.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .output()
        .expect("gcc runs");
    assert!(o.status.success(), "gcc failed:\n{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn c_test_program_passes() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("test_api");
    compile(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/test_api.c"), &exe);
    let o = Command::new(&exe).output().unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("checks passed"));
}

#[test]
fn c_example_builds_with_werror_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("isochronous");
    compile(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/c/isochronous.c"), &exe);
    let o = Command::new(&exe).args(["--cycles", "100"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("isochronous: 100 cycles of 1 ms"), "{out}");
    let bad = Command::new(&exe).args(["--cycles", "-4"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn pkg_config_install_builds_the_example() {
    if let Err(e) = Command::new("pkg-config").arg("--version").output() {
        skip(&format!("pkg-config is not installed (scripts/setup installs it): {e}"), false);
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prefix = tempfile::tempdir().unwrap();
    let ok = Command::new(root.join("scripts/install-c")).arg(prefix.path()).arg("--debug").status().unwrap();
    assert!(ok.success(), "scripts/install-c");
    let pc = prefix.path().join("lib/pkgconfig");
    let flags =
        Command::new("pkg-config").args(["--cflags", "--libs", "rtick"]).env("PKG_CONFIG_PATH", &pc).output().unwrap();
    assert!(flags.status.success(), "{}", String::from_utf8_lossy(&flags.stderr));
    let flags = String::from_utf8(flags.stdout).unwrap();
    assert!(flags.contains("-lrtick") && flags.contains("include"), "{flags}");
    let exe = prefix.path().join("iso");
    let o = Command::new("gcc")
        .args(["-Wall", "-Werror", "-O2"])
        .arg(root.join("examples/c/isochronous.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run =
        Command::new(&exe).args(["--cycles", "20"]).env("LD_LIBRARY_PATH", prefix.path().join("lib")).output().unwrap();
    assert!(run.status.success() && String::from_utf8_lossy(&run.stdout).contains("20 cycles"));
}
