//! What rtick says to its users names no design source: no "seed NNN" in the
//! help of any subcommand, nor in any string literal of the sources (where
//! warnings, errors and notes are written).

mod common;
use common::*;

use regex_lite::Regex;

fn seed() -> Regex {
    Regex::new(r"(?i)\bseed \d").unwrap()
}

/// The subcommands `rtick --help` lists (so a new one is covered without
/// editing this test).
fn subcommands() -> Vec<String> {
    let o = rtick(&["--help"]);
    ok(&o);
    let out = stdout(&o);
    let list = out.split("Commands:").nth(1).expect("a Commands: section").split("Options:").next().unwrap();
    let names: Vec<String> = list
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(String::from)
        .collect();
    assert!(names.len() >= 5 && names.iter().any(|n| n == "measure"), "{names:?}");
    names
}

#[test]
fn no_help_text_names_a_seed() {
    let re = seed();
    let mut helps = vec![vec!["--help".to_string()]];
    helps.extend(subcommands().into_iter().map(|c| vec![c, "--help".into()]));
    for args in helps {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = rtick(&args);
        ok(&o);
        let text = stdout(&o);
        assert!(text.contains("Usage: rtick"), "{args:?}: not a help text");
        if let Some(m) = re.find(&text) {
            panic!("rtick {}: help says {:?}", args.join(" "), m.as_str());
        }
    }
}

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_message_in_the_sources_names_a_seed() {
    let re = seed();
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for c in ["rtick", "rtick-cli", "rtick-ffi"] {
        rust_files(&crates.join(c).join("src"), &mut files);
    }
    assert!(files.len() > 20, "{} source files", files.len());
    let mut found = Vec::new();
    for f in &files {
        for (i, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            let code = line.trim_start();
            // Doc comments become --help text (checked above too); plain comments are for developers.
            let said = code.starts_with("///") || !code.starts_with("//") && code.contains('"');
            if said && re.is_match(line) {
                found.push(format!("{}:{}: {}", f.display(), i + 1, code));
            }
        }
    }
    assert!(found.is_empty(), "user-facing text names a seed:\n{}", found.join("\n"));
}
