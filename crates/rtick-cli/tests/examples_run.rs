//! Every documented example runs as printed (#18): the commands of
//! README.md and docs/*.md (whatever pages exist), in document order, with
//! this build's `rtick`, in one temporary directory per document, so that
//! `rtick report run.json` finds the run.json an earlier example wrote.
//!
//! What is an example: in a sh, bash or shell code block every line, in a
//! console or plain block the lines after a `$ ` prompt; `\` continuations
//! joined, a `# comment` dropped, a leading `sudo ` dropped (this runs as
//! root), `cargo run … --bin rtick -- ` read as `rtick `. Of those, the ones
//! that run `rtick`, or `cyclictest` (the README sets a cyclictest histogram
//! beside an rtick run). Other commands — scripts/, cargo's examples,
//! systemctl, dpkg — are other tests' subjects or change the system.
//!
//! The rewrite only shortens time (`rewrite`): an rtick `-D TIME` becomes
//! `-D 0.2s`; `measure`, `drift`, `monitor`, `attach` and `noise` without `-D` or `-l` get one
//! (they run 10 s, or until Ctrl-C); `--phases` durations become 0.2s;
//! `--warm-up TIME` becomes 0.1s; `-l N` stays when N <= 1000, else 200;
//! cyclictest's `-DN` becomes `-D1` (whole seconds). Not a time, the one
//! other: a monitor without `--listen` gets a free port, since 9464 may be
//! a running monitor's; `rtick attach` examples attach to a stand-in
//! program (`attach_stand_in`).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{is_root, skip};

/// Examples not run, each with why (matched as a substring of the example).
/// An example with a `$`-substitution must be here: it cannot run as printed.
const SKIP: &[(&str, &str)] = &[];

/// Exit statuses an example may have besides 0, as the text around it says
/// (matched as a word of the rtick command): which one a run has depends on
/// this machine's latencies or configuration, not on whether the example works.
const EXIT_CODES: &[(&str, &[i32], &str)] = &[
    ("--fail-if", &[0, 3], "Gates for CI: 3 when a condition holds, 0 when none does"),
    ("--baseline", &[0, 3], "Gates for CI: 3 when a figure grew past the allowance"),
    ("audit", &[0, 3], "rtick audit: 3 when a finding fails on this machine"),
];

/// Files examples read that no earlier example writes: the name the example
/// uses → a fixture under tests/fixtures/. Copied only where missing.
const FIXTURES: &[(&str, &str)] = &[("last-release.json", "examples/last-release.json")];

/// Tools examples run, with the Debian package scripts/setup installs them from.
const TOOLS: &[(&str, &str)] = &[("stress-ng", "stress-ng"), ("cyclictest", "rt-tests")];

/// The shortened duration, and the loops count above which -l is shortened.
const SHORT: &str = "0.2s";
const MAX_LOOPS: u64 = 1000;
const SHORT_LOOPS: &str = "200";
/// Generous: an example here takes seconds, on a loaded VM maybe ten times that.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A command of a document: where it starts (file:line) and its text.
#[derive(Debug, PartialEq)]
struct Example {
    at: String,
    text: String,
}

/// The examples of a markdown document, in order.
fn examples(markdown: &str, file: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<&str> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let line = line.trim();
        if let Some(lang) = line.strip_prefix("```") {
            block = if block.is_some() { None } else { Some(lang.trim()) };
            pending = None;
            continue;
        }
        let Some(lang) = block else { continue };
        let shell = matches!(lang, "sh" | "bash" | "shell");
        let (start, text) = match pending.take() {
            Some((start, head)) => {
                (start, format!("{head} {}", if shell { line } else { line.trim_start_matches("> ") }))
            }
            None if shell => (i + 1, line.to_string()),
            None if matches!(lang, "console" | "") => match line.strip_prefix("$ ") {
                Some(cmd) => (i + 1, cmd.to_string()),
                None => continue,
            },
            None => continue,
        };
        if let Some(head) = text.strip_suffix('\\') {
            pending = Some((start, head.trim_end().to_string()));
        } else if let Some(text) = command(&text) {
            out.push(Example { at: format!("{file}:{start}"), text });
        }
    }
    out
}

/// The command a line runs, if it runs rtick or cyclictest: without its
/// comment and `sudo`, `cargo run … --bin rtick -- ` read as `rtick `.
fn command(line: &str) -> Option<String> {
    let mut w: Vec<String> = words(line).into_iter().take_while(|w| !w.starts_with('#')).collect();
    if w.first().is_some_and(|w| w == "sudo") {
        w.remove(0);
    }
    if w.first().is_some_and(|w| w == "cargo") && w.get(1).is_some_and(|w| w == "run") {
        let dashes = w.iter().position(|w| w == "--")?;
        w.windows(2).any(|p| p[0] == "--bin" && p[1] == "rtick").then_some(())?;
        w.splice(..=dashes, ["rtick".to_string()]);
    }
    matches!(w.first()?.as_str(), "rtick" | "cyclictest").then(|| w.join(" "))
}

/// A command line's words as written (quotes kept), split at unquoted blanks.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut escaped) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (q, '\\') if q != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn unquote(word: &str) -> String {
    word.replace(['\'', '"', '\\'], "")
}

fn is_separator(w: &str) -> bool {
    matches!(w, "&&" | "||" | "|" | ";" | "&")
}

fn is_redirection(w: &str) -> bool {
    w.starts_with(['>', '<']) || w.starts_with("2>") || w.starts_with("&>")
}

/// The example with its times shortened (see the module's comment).
fn rewrite(text: &str) -> String {
    let words = words(text);
    let mut out = Vec::new();
    for command in words.split_inclusive(|w| is_separator(w)) {
        let (args, sep) = match command.split_last() {
            Some((last, args)) if is_separator(last) => (args, Some(last)),
            _ => (command, None),
        };
        out.extend(match args.first().map(String::as_str) {
            Some("rtick") => rewrite_rtick(args),
            Some("cyclictest") => rewrite_cyclictest(args),
            _ => args.to_vec(),
        });
        out.extend(sep.cloned());
    }
    out.join(" ")
}

/// cyclictest's `-D TIME` (or `-DTIME`) → `-D1`: its durations are whole seconds.
fn rewrite_cyclictest(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = words.iter();
    while let Some(w) = words.next() {
        if w == "-D" {
            words.next();
        }
        out.push(if w.starts_with("-D") { "-D1".to_string() } else { w.clone() });
    }
    out
}

fn rewrite_rtick(words: &[String]) -> Vec<String> {
    let sub = words.iter().skip(1).find(|w| !w.starts_with('-')).map_or("", String::as_str);
    let end = words.iter().position(|w| is_redirection(w)).unwrap_or(words.len());
    let (mut out, mut timed, mut i) = (Vec::new(), false, 0);
    while i < end {
        let (w, value) = (words[i].as_str(), words[..end].get(i + 1).map(|v| unquote(v)));
        let replaced = match (w, value) {
            ("-D" | "--duration", Some(_)) => Some(SHORT.to_string()),
            ("--warm-up", Some(_)) => Some("0.1s".to_string()),
            ("--phases", Some(p)) => Some(
                p.split(',')
                    .map(|ph| ph.split_once('=').map_or(ph.to_string(), |(n, _)| format!("{n}={SHORT}")))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ("-l" | "--loops", Some(n)) => {
                Some(if n.parse::<u64>().is_ok_and(|n| n <= MAX_LOOPS) { n } else { SHORT_LOOPS.to_string() })
            }
            _ => None,
        };
        timed |= matches!(w, "-l" | "--loops" | "--duration") || w.starts_with("-D") || w.starts_with("--duration=");
        match replaced {
            Some(v) => {
                out.extend([w.to_string(), v]);
                i += 2;
            }
            None if w.starts_with("--duration=") || (w.starts_with("-D") && w.len() > 2) => {
                out.extend(["-D".to_string(), SHORT.to_string()]);
                i += 1;
            }
            None => {
                out.push(w.to_string());
                i += 1;
            }
        }
    }
    if !timed && matches!(sub, "measure" | "drift" | "monitor" | "attach" | "noise") {
        out.extend(["-D".to_string(), SHORT.to_string()]);
    }
    if sub == "monitor" && !words.iter().any(|w| w == "--listen" || w.starts_with("--listen=")) {
        out.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    }
    out.extend(words[end..].iter().cloned());
    out
}

/// `rtick attach` (and `rtick noise --attach`) examples name a program that
/// is not running here: a stand-in runs instead (`sleep`, copied under the
/// `--comm` name the example gives, so that its comm is that name), and the
/// example's pid, `--tid` list and `--attach` thread become the stand-in's pid. Not a time: the other rewrite.
fn attach_stand_in(cmd: &str, dir: &Path) -> Option<(String, std::process::Child)> {
    let w = words(cmd);
    let noise = w.get(1).map(String::as_str) == Some("noise") && w.iter().any(|x| x == "--attach");
    if w.get(1).map(String::as_str) != Some("attach") && !noise {
        return None;
    }
    let comm = w.windows(2).find(|p| p[0] == "--comm").map_or("example-app".to_string(), |p| unquote(&p[1]));
    let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("sleep"))
        .find(|p| p.is_file())
        .expect("sleep on PATH");
    let exe = dir.join(&comm);
    std::fs::copy(&sleep, &exe).unwrap();
    let child = common::spawn_copied(&exe, &["60"]);
    let pid = child.id().to_string();
    let mut out = Vec::new();
    let mut after_tid = false;
    for word in &w {
        let numeric = word.split(',').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        out.push(if numeric && (after_tid || (out.len() == 2 && !noise)) { pid.clone() } else { word.clone() });
        after_tid = word == "--tid" || word == "--attach";
    }
    Some((out.join(" "), child))
}

/// The exit statuses the example may have: 0, or what EXIT_CODES lists.
fn expected_codes(text: &str) -> &'static [i32] {
    let words: Vec<String> = words(text).iter().map(|w| unquote(w)).collect();
    EXIT_CODES.iter().find(|(key, ..)| words.iter().any(|w| w == key)).map_or(&[0], |(_, codes, _)| codes)
}

/// The files the example writes with rtick's output options.
fn outputs(text: &str) -> Vec<String> {
    let w = words(text);
    w.windows(2)
        .filter(|p| matches!(p[0].as_str(), "--json" | "--trace" | "--plot" | "--histogram"))
        .map(|p| unquote(&p[1]))
        .collect()
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// Runs one example with `sh -c` in `dir`; its output goes to `log`. Returns its exit status.
fn run(cmd: &str, dir: &Path, path: &OsString, log: &Path) -> Option<i32> {
    let out = File::create(log).unwrap();
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0)
        .spawn()
        .expect("sh runs");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if start.elapsed() > TIMEOUT {
            let _ = rustix::process::kill_process_group(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            );
            let _ = child.wait();
            panic!("`{cmd}` still ran after {TIMEOUT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a document's examples in one directory, failing on the first that does not run.
fn run_document(name: &str, examples: &[Example], path: &OsString) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let (dir, logs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (n, ex) in examples.iter().enumerate() {
        if let Some((_, why)) = SKIP.iter().find(|(s, _)| ex.text.contains(s)) {
            eprintln!("{}: not run ({why}): {}", ex.at, ex.text);
            continue;
        }
        assert!(
            !ex.text.contains('$'),
            "{}: `{}` has a $-substitution: write it out, or list it in SKIP with why",
            ex.at,
            ex.text
        );
        if let Some((tool, package)) = TOOLS.iter().find(|(t, _)| ex.text.contains(t) && !on_path(t)) {
            skip(&format!("{}: {tool} is not installed (scripts/setup installs {package})", ex.at), false);
            continue;
        }
        for (name, fixture) in FIXTURES {
            if words(&ex.text).iter().any(|w| unquote(w) == *name) && !dir.path().join(name).exists() {
                std::fs::copy(fixtures.join(fixture), dir.path().join(name)).unwrap();
            }
        }
        let cmd = rewrite(&ex.text);
        let mut target = None;
        let cmd = match attach_stand_in(&cmd, dir.path()) {
            Some((cmd, child)) => {
                target = Some(child);
                cmd
            }
            None => cmd,
        };
        let log = logs.path().join(format!("{n}.log"));
        let began = Instant::now();
        let code = run(&cmd, dir.path(), path, &log);
        if let Some(mut t) = target {
            let _ = t.kill();
            let _ = t.wait();
        }
        eprintln!("{}: `{cmd}`: exit {code:?} after {:.1} s", ex.at, began.elapsed().as_secs_f64());
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        let codes = expected_codes(&ex.text);
        assert!(
            code.is_some_and(|c| codes.contains(&c)),
            "{}: `{}` (run as `{cmd}`) exited {code:?}, expected one of {codes:?}:\n{output}",
            ex.at,
            ex.text
        );
        for o in outputs(&cmd) {
            assert!(dir.path().join(&o).exists(), "{}: `{cmd}` exited {code:?} but wrote no {o}:\n{output}", ex.at);
        }
    }
    eprintln!("{name}: {} examples ran", examples.len());
}

#[test]
fn every_documented_example_runs_as_printed() {
    if !is_root() {
        skip("the examples run as root (they are printed with sudo, or for root's real-time settings)", false);
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect())
        .unwrap_or_default();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    // `rtick` on the PATH is this build's binary.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rtick"), bin.path().join("rtick")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let start = Instant::now();
    let mut total = 0;
    for file in &docs {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let found = examples(&std::fs::read_to_string(file).unwrap(), &name);
        if name == "README.md" {
            assert!(!found.is_empty(), "README.md: no example found: is the extraction broken?");
        }
        total += found.len();
        run_document(&name, &found, &path);
    }
    for (s, why) in SKIP {
        let used = docs.iter().any(|f| std::fs::read_to_string(f).unwrap().contains(s));
        assert!(used, "SKIP lists `{s}` ({why}), which no document has any more: remove it");
    }
    eprintln!("{total} examples of {} documents in {:.1} s", docs.len(), start.elapsed().as_secs_f64());
}

#[test]
fn extraction_takes_shell_lines_and_prompted_lines_only() {
    let md = "text\n```sh\n# a comment\nrtick measure -D 10 \\\n    --json run.json   # why\nscripts/test\n\
              sudo rtick audit\ncargo run --release --bin rtick -- measure\n```\n\
              ```console\n$ sudo rtick monitor -a 1\nrtick 0.1.0 monitor: output\n```\n\
              ```\nrtick report run.json\n```\n```jsonc\n$ rtick clocks\n```\n";
    let got: Vec<(String, String)> = examples(md, "X.md").into_iter().map(|e| (e.at, e.text)).collect();
    let want = [
        ("X.md:4", "rtick measure -D 10 --json run.json"),
        ("X.md:7", "rtick audit"),
        ("X.md:8", "rtick measure"),
        ("X.md:11", "rtick monitor -a 1"),
    ];
    assert_eq!(got, want.map(|(a, t)| (a.to_string(), t.to_string())));
}

#[test]
fn the_rewrite_only_shortens_time() {
    for (printed, run) in [
        ("rtick measure -m hybrid -D 60 --json r.json", "rtick measure -m hybrid -D 0.2s --json r.json"),
        ("rtick measure --duration=5m -q", "rtick measure -D 0.2s -q"),
        ("rtick measure -D10", "rtick measure -D 0.2s"),
        ("rtick measure -a 1 --phases idle=60s,loaded=5m", "rtick measure -a 1 --phases idle=0.2s,loaded=0.2s -D 0.2s"),
        (
            "rtick measure --load-cmd 'stress-ng --cpu 2' --phases idle,loaded",
            "rtick measure --load-cmd 'stress-ng --cpu 2' --phases idle,loaded -D 0.2s",
        ),
        ("rtick measure -l 500 --warm-up 5s", "rtick measure -l 500 --warm-up 0.1s"),
        ("rtick measure -l 100000", "rtick measure -l 200"),
        ("rtick monitor -a 1 --spike 100", "rtick monitor -a 1 --spike 100 -D 0.2s --listen 127.0.0.1:0"),
        ("rtick report run.json --plot p.png", "rtick report run.json --plot p.png"),
        ("rtick drift > d.txt && rtick audit", "rtick drift -D 0.2s > d.txt && rtick audit"),
        ("cyclictest -m -p95 -D10 -q -h 1000 > ct.hist", "cyclictest -m -p95 -D1 -q -h 1000 > ct.hist"),
        ("cyclictest -D 10 -q", "cyclictest -D1 -q"),
    ] {
        assert_eq!(rewrite(printed), run, "{printed}");
    }
    assert_eq!(expected_codes("rtick measure --fail-if 'max>1ms'"), &[0, 3]);
    assert_eq!(expected_codes("rtick measure -D 1"), &[0]);
}
