//! The workspace's structural invariants, kept from drifting:
//! `scripts/architecture --check` (no cycle between the top-level modules of
//! a crate nor between the CLI's files, no function over 80 lines nor file
//! over 450, `unsafe` only where allowed, `#![forbid(unsafe_code)]` on every
//! other crate root, every top-level module named in ARCHITECTURE.md).
//! python3 is installed by scripts/setup.

use std::path::Path;
use std::process::Command;

#[test]
fn the_architecture_check_finds_no_violation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .arg("scripts/architecture")
        .arg("--check")
        .current_dir(&root)
        .output()
        .expect("running python3 scripts/architecture (python3 missing? run scripts/setup)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/architecture --check failed ({}):\n{text}", out.status);
    assert!(text.contains("no violations"), "{text}");
}
