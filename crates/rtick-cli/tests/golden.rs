//! The golden test: a fixed set of mock runs and reports, whose stdout,
//! stderr and every output file must stay byte-identical to the files in
//! tests/golden/ (after [`mask`], which hides only what differs between
//! runs or machines). A restructuring that changes no behaviour passes it
//! unchanged; a change of any other byte fails it, naming the file.
//!
//! `RTICK_BLESS=1 cargo test -p rtick-cli --features mock --test golden`
//! rewrites the expected files (review the diff before committing it).
//!
//! Every case runs in one temporary directory, in order, with relative file
//! names: the reports read what the measure cases wrote.

mod common;

use std::path::Path;
use std::process::Command;

use regex_lite::Regex;

/// A case: its name (the prefix of its expected files), the exit code it
/// must have, its arguments, and the files it writes (compared too, each
/// with tests/golden/FILE; stdout and stderr with tests/golden/NAME.stdout,
/// NAME.stderr).
struct Case {
    name: &'static str,
    code: i32,
    args: &'static [&'static str],
    files: &'static [&'static str],
}

/// Pinned to CPU 0 (so the CPU column is the same everywhere), unprivileged,
/// no progress line.
const PLAIN: [&str; 6] = ["--policy", "other", "--no-mlock", "-q", "-a", "0"];

const CASES: &[Case] = &[
    Case {
        name: "threads",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=1000,2000,3000,4000",
            "-i",
            "10ms",
            "-l",
            "8",
            "-t",
            "2",
            "--json",
            "threads.json",
            "--histogram",
            "threads.hist",
        ],
        files: &["threads.json", "threads.hist"],
    },
    Case {
        name: "nsecs",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=1234,5678,3",
            "-i",
            "10ms",
            "-l",
            "6",
            "-N",
            "--histogram",
            "nsecs.hist",
            "--histogram-max",
            "8",
            "--json",
            "nsecs.json",
        ],
        files: &["nsecs.hist", "nsecs.json"],
    },
    Case {
        name: "skip",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=0,25000000",
            "-i",
            "10ms",
            "-l",
            "6",
            "--overrun",
            "skip",
            "--json",
            "skip.json",
            "--trace",
            "skip.csv",
        ],
        files: &["skip.json", "skip.csv"],
    },
    Case {
        name: "catch-up",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=0,25000000",
            "-i",
            "10ms",
            "-l",
            "6",
            "--overrun",
            "catch-up",
            "--trace",
            "catch-up.csv",
        ],
        files: &["catch-up.csv"],
    },
    Case {
        name: "gate-fail",
        code: 3,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=1000,2000,3000,4000",
            "-i",
            "10ms",
            "-l",
            "8",
            "--fail-if",
            "p99>3us,overruns>0",
            "--json",
            "gate-fail.json",
            "--trace",
            "gate-fail.csv",
        ],
        files: &["gate-fail.json", "gate-fail.csv"],
    },
    Case {
        name: "gate-pass",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=1000,2000",
            "-i",
            "10ms",
            "-l",
            "8",
            "--fail-if",
            "p99>3us",
            "--json",
            "gate-pass.json",
        ],
        files: &["gate-pass.json"],
    },
    // One mechanism has nothing to compare with: refused, no file written
    // (interleaved runs of the mock beside a real mechanism: tests/mock.rs).
    Case {
        name: "compare-alone",
        code: 2,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=100,200,300,400,500",
            "-i",
            "10ms",
            "--compare",
            "--slice",
            "20ms",
            "-D",
            "60ms",
            "--json",
            "compare.json",
        ],
        files: &[],
    },
    Case {
        name: "phases",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=500,1000",
            "--mock-loaded-latencies=1500,2000",
            "-i",
            "10ms",
            "-l",
            "10",
            "-t",
            "2",
            "--phases",
            "idle,loaded",
            "--load",
            "timers:1",
            "--load-cpus",
            "0",
            "--json",
            "phases.json",
        ],
        files: &["phases.json"],
    },
    Case {
        name: "breaktrace",
        code: 0,
        args: &[
            "measure",
            "-m",
            "mock",
            "--mock-latencies=1000,2000,9000",
            "-i",
            "10ms",
            "-l",
            "8",
            "-b",
            "5",
            "--warm-up",
            "10ms",
            "--json",
            "breaktrace.json",
        ],
        files: &["breaktrace.json"],
    },
    Case { name: "report-table", code: 0, args: &["report", "threads.json", "skip.csv", "phases.json"], files: &[] },
    Case {
        name: "report-files",
        code: 0,
        args: &["report", "gate-fail.csv", "--buckets", "1", "--json", "report.json", "--hdr-log", "report.hdr"],
        files: &["report.json", "report.hdr"],
    },
    Case {
        name: "baseline-pass",
        code: 0,
        args: &["report", "gate-pass.json", "--baseline", "gate-pass.json"],
        files: &[],
    },
    Case {
        name: "baseline-fail",
        code: 3,
        args: &["report", "gate-fail.json", "--baseline", "gate-pass.json", "--metrics", "p50,p99,p99.999"],
        files: &[],
    },
];

#[test]
#[cfg_attr(not(feature = "mock"), ignore = "drives the hidden -m mock: needs --features mock")]
fn outputs_are_byte_identical() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("RTICK_BLESS").is_some_and(|v| v == "1");
    let dir = tempfile::tempdir().unwrap();
    let mut diffs = Vec::new();
    for case in CASES {
        let plain: &[&str] = if case.args[0] == "measure" { &PLAIN } else { &[] };
        let args: Vec<&str> = case.args.iter().chain(plain).copied().collect();
        let o = Command::new(env!("CARGO_BIN_EXE_rtick")).args(&args).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(case.code), "{}: rtick {}\n{stderr}", case.name, args.join(" "));
        let mut outputs = vec![("stdout".to_string(), o.stdout.clone()), ("stderr".to_string(), o.stderr.clone())];
        for f in case.files {
            let bytes = std::fs::read(dir.path().join(f)).unwrap_or_else(|e| panic!("{}: {f}: {e}", case.name));
            outputs.push((f.to_string(), bytes));
        }
        for (what, bytes) in outputs {
            let got = mask(&String::from_utf8(bytes).expect("UTF-8 output"), dir.path());
            // Output files have names of their own; stdout and stderr are the case's.
            let expected =
                golden.join(if case.files.contains(&what.as_str()) { what } else { format!("{}.{what}", case.name) });
            if bless {
                std::fs::write(&expected, &got).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&expected).unwrap_or_else(|e| panic!("{}: {e}", expected.display()));
            if let Some(d) = first_difference(&want, &got) {
                diffs.push(format!("{}: {d}", expected.display()));
            }
        }
    }
    assert!(diffs.is_empty(), "outputs differ from tests/golden (RTICK_BLESS=1 rewrites them):\n{}", diffs.join("\n"));
}

/// The first line where `got` differs from `want`, both shown.
fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    let i = (0..w.len().max(g.len())).find(|&i| w.get(i) != g.get(i)).unwrap_or(0);
    Some(format!("line {}:\n  want: {:?}\n  got:  {:?}", i + 1, w.get(i), g.get(i)))
}

/// Hides what differs between runs and machines, and nothing else:
/// - the temporary directory's path and the binary's path (in the JSON
///   `command`): where the test runs and was built;
/// - warnings about the machine (hypervisor, high-resolution timers, clock
///   resolution, the audit's findings such as `kernel.preempt_model`, what
///   a killed rtick left, e.g. another test's instance):
///   each machine has its own; warnings about the run itself stay;
/// - JSON values measured from the real clock or read from the machine:
///   `started_at` (the date), `elapsed_ns`, `tid`, `cpu_percent` (CPU time,
///   real, over the mock's wall time), the `system` block (kernel,
///   clocksource, preemption model, CPU count, hypervisor, RT throttling),
///   `dma_latency_system_us`, and the load's `work`, `rate_per_s`,
///   `cpu_time_ns`, `ran_ns` (work done in real time) and `cpu_busy` (one
///   entry per CPU of the machine, each CPU's real business);
/// - the tables' CPU% column and the recommendation's "% CPU" (real CPU
///   time), the `load:` lines' figures (real work), and the HdrHistogram
///   log's `StartTime` (the date of the run).
fn mask(text: &str, tmp: &Path) -> String {
    let tmp = tmp.to_str().unwrap();
    let text = text.replace(tmp, "<TMP>").replace(env!("CARGO_BIN_EXE_rtick"), "rtick");
    let kept: Vec<&str> = text.split('\n').filter(|l| !is_machine_warning(l)).collect();
    let text = mask_cpu_column(&kept.join("\n"));
    let keys = "started_at|elapsed_ns|tid|cpu_percent|kernel|kernel_version|clocksource|hres_active|preempt|cpus\
                |hypervisor|sched_rt_runtime_us|dma_latency_system_us|work|rate_per_s|cpu_time_ns|ran_ns";
    let subs = [
        (format!(r#"("(?:{keys})": )(?:"[^"]*"|[-+0-9.eE]+|true|false|null)"#), r#"$1"<masked>""#),
        (r#""warnings": \[\s*\]"#.into(), r#""warnings": []"#),
        (r#""cpu_busy": \[[^\]]*\]"#.into(), r#""cpu_busy": "<masked>""#),
        (r"at [0-9.]+ % CPU".into(), "at <masked> % CPU"),
        (r"(?m)^(load: [^:\n]+: ).*$".into(), "$1<masked>"),
        (r"#\[StartTime: [^\]]*\]".into(), "#[StartTime: <masked>]"),
    ];
    subs.iter().fold(text, |t, (re, by)| Regex::new(re).unwrap().replace_all(&t, *by).into_owned())
}

/// A warning (on stderr, or a string of a JSON `warnings` array) that
/// describes the machine rather than the run.
fn is_machine_warning(line: &str) -> bool {
    let msg = line.trim_start().trim_start_matches("warning: ").trim_start_matches('"');
    let finding = Regex::new(r"^[^(]*\((timers|clocksource|kernel|sched|noise|power)\.[a-z_]+\): ").unwrap();
    msg.starts_with("running under a hypervisor")
        || msg.starts_with("high-resolution timers are not active")
        || msg.contains(" resolution is ")
        || msg.contains("kernel.sched_rt_runtime_us=")
        || msg.contains(" was left by an rtick that no longer runs")
        || finding.is_match(msg)
}

/// The CPU% column of every table (its header's width, right-aligned
/// values) replaced by `#`: real CPU time.
fn mask_cpu_column(text: &str) -> String {
    // The column's span in the table below its heading: from the spaces
    // after the column before it to the end of "CPU%". Its width follows
    // the widest value (real CPU time: "2.5" or "100.0"), so the whole
    // span goes, in the heading, the rule under it and every row.
    let heading = Regex::new(r" +CPU%").unwrap();
    let mut span: Option<std::ops::Range<usize>> = None;
    let mut out = Vec::new();
    for line in text.split('\n') {
        let mut line = line.to_string();
        if line.is_empty() {
            span = None;
        } else if let Some(m) = heading.find(&line) {
            span = Some(m.range());
            line.replace_range(m.range(), "");
        } else if let Some(r) = span.clone().filter(|r| line.len() >= r.end && line.is_char_boundary(r.start)) {
            if line.starts_with('-') {
                line.truncate(line.len() - r.len());
            } else {
                line.replace_range(r, "");
            }
        }
        out.push(line);
    }
    out.join("\n")
}
