//! Checks of `rtick report` on a run made with `measure --explain`, shared by
//! the fixture tests (tests/breakdown.rs) and the real-kernel test
//! (tests/explain.rs): what it prints equals the run's JSON, and its
//! breakdown pictures are whole PNG/SVG files.

#![allow(dead_code)]

use std::path::Path;

use super::{ok, path_str, rtick, stdout};

/// A row of the phase table as printed with `-N`: mechanism, thread,
/// "matched/wakeups", and p50/p99/max (ns) of each phase.
pub type PhaseRow = (String, u64, String, [[i64; 3]; 4]);

/// The phase table's rows (those with phases) in `out`.
pub fn phase_rows(out: &str) -> Vec<PhaseRow> {
    let start = out.find("where the latency went").expect("a phase table");
    out[start..]
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty() && !l.starts_with("spikes") && !l.starts_with("worst") && !l.starts_with("note"))
        .filter(|l| !l.starts_with(' ') && !l.contains("no phases"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3 + 4 * 5, "{l}");
            let v = |i: usize| f[i].parse::<i64>().unwrap_or_else(|_| panic!("'{}' in {l}", f[i]));
            let cells = std::array::from_fn(|k| [v(3 + 5 * k), v(5 + 5 * k), v(7 + 5 * k)]);
            (f[0].to_string(), f[1].parse().unwrap(), f[2].to_string(), cells)
        })
        .collect()
}

/// The rows the JSON's `explain` object says the table must have.
pub fn rows_of_json(run: &serde_json::Value) -> Vec<PhaseRow> {
    let results = run["explain"]["results"].as_array().expect("an explain object");
    results
        .iter()
        .filter(|r| r["not_timer_woken"].is_null() && r["matched"].as_u64() > Some(0))
        .map(|r| {
            let p = r["phases_ns"].as_array().unwrap();
            let cell = |k: usize| ["p50", "p99", "max"].map(|q| p[k][q].as_i64().unwrap());
            (
                r["mechanism"].as_str().unwrap().to_string(),
                r["thread"].as_u64().unwrap(),
                format!("{}/{}", r["matched"], r["wakeups"]),
                std::array::from_fn(cell),
            )
        })
        .collect()
}

/// `report -N` of the JSON prints its phase table and every spike's line;
/// that of the trace prints the same table, computed from its columns.
pub fn report_prints_the_json(json_file: &Path, trace_file: &Path) {
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json_file).unwrap()).unwrap();
    let want = rows_of_json(&run);
    assert!(!want.is_empty(), "the run has phases");
    let o = rtick(&["report", "-N", path_str(json_file)]);
    ok(&o);
    let out = stdout(&o);
    assert_eq!(phase_rows(&out), want, "{out}");
    for r in run["explain"]["results"].as_array().unwrap() {
        for s in r["spikes"].as_array().unwrap() {
            let line = s["line"].as_str().unwrap();
            assert!(out.contains(&format!("  {line}\n")), "spike line '{line}' in {out}");
        }
        if let Some(why) = r["not_timer_woken"].as_str() {
            assert!(out.contains(&format!("no phases: {why}")), "{out}");
        }
    }
    let o = rtick(&["report", "-N", path_str(trace_file)]);
    ok(&o);
    // The trace has every matched wake-up's phases: its summary is the JSON's.
    assert_eq!(phase_rows(&stdout(&o)), want, "{}", stdout(&o));
}

/// Draws the breakdown of `inputs` as PNG and SVG into `dir` (the default
/// kind for inputs with phases) and checks both are whole pictures, with no
/// temporary file left beside them.
pub fn draws_whole_pictures(inputs: &[&Path], dir: &Path) {
    for ext in ["png", "svg"] {
        let out = dir.join(format!("breakdown.{ext}"));
        let mut args = vec!["report"];
        args.extend(inputs.iter().map(|p| path_str(p)));
        args.extend(["--plot", path_str(&out)]);
        let o = rtick(&args);
        ok(&o);
        assert!(stdout(&o).contains(&format!("plot: {} (Breakdown)", out.display())), "{}", stdout(&o));
        let bytes = std::fs::read(&out).unwrap();
        if ext == "png" {
            let (w, h) = png_size(&bytes);
            assert_eq!(w, 1200);
            assert!(h >= 720, "{h}");
        } else {
            let svg = String::from_utf8(bytes).unwrap();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "a whole SVG");
            for text in ["Where the latency went", "IRQ delay", "scheduling", "percentile"] {
                assert!(svg.contains(text), "'{text}' in the SVG");
            }
        }
    }
    no_temporaries(dir);
}

/// The atomic writer leaves no `.name.XXXX` temporary behind.
pub fn no_temporaries(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "a temporary file is left: {name}");
    }
}

/// Width and height of a PNG, after checking its signature and that it decodes whole.
pub fn png_size(b: &[u8]) -> (u32, u32) {
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&b[12..16], b"IHDR");
    assert_eq!(&b[b.len() - 8..b.len() - 4], b"IEND", "the PNG ends with IEND");
    (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
}
