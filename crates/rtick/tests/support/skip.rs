//! What a test does when this machine cannot run it. The one rule, shared by
//! the test crates of every package (they include this file by path): a test
//! that cannot run says so on stderr and passes — except under CI
//! (`CI=true`, which `.ci/run` sets), where it fails. CI runs as root with
//! everything `scripts/setup` installs, so a missing tool or permission there
//! is a broken setup, not a reason to pass. Only a kernel that lacks the
//! feature, which no setup can install, excuses a skip under CI.

#![allow(dead_code)]

/// Whether this is a CI run: `CI=true` (or `CI=1`) in the environment.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Reports that the calling test cannot run here (the caller then returns):
/// `SKIPPED: reason` on stderr — or, under CI, a panic, unless
/// `kernel_lacks_it`.
#[track_caller]
pub fn skip(reason: &str, kernel_lacks_it: bool) {
    if under_ci() && !kernel_lacks_it {
        panic!(
            "under CI a test may not skip, and this one would: {reason} \
             (CI runs as root with everything scripts/setup installs: fix the CI machine or scripts/setup)"
        );
    }
    eprintln!("SKIPPED: {reason}");
}

/// Whether the running kernel lacks what a wait mechanism needs, found out
/// independently of rtick (which reports such a mechanism unavailable): the
/// only mechanism with a kernel version requirement is `epoll-pwait2`
/// (Linux 5.11).
pub fn kernel_lacks(mechanism: &str) -> bool {
    match mechanism {
        "epoll-pwait2" => kernel_older_than(5, 11),
        _ => false,
    }
}

/// Whether the running kernel's version (`/proc/sys/kernel/osrelease`,
/// e.g. `6.1.0-18-amd64`) is below `major.minor`.
pub fn kernel_older_than(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("/proc/sys/kernel/osrelease");
    let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().expect("numeric kernel version"));
    let (a, b) = (parts.next().unwrap(), parts.next().unwrap());
    (a, b) < (major, minor)
}
