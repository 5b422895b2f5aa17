//! rtick's own files: `measure --json` results and `--trace` CSV.

use std::collections::BTreeMap;

use rtick::stats::LatencyStats;
use serde::de::Error as _;
use serde::Deserializer;

use super::{row, Dist, InputKind, RunFile, Series, Timeline};
use crate::breakdown::{Breakdown, Wakeup};
use crate::json::ExplainJson;
use crate::json::{LoadJson, PercentilesJson, ResultJson};
use crate::trace_csv::{HEADER, PHASE_HEADER};

pub const TRACE_HEADER: &str = "thread,mechanism,cycle,planned_ns,actual_ns,latency_ns";

/// What a run file or trace holds for `report`.
#[derive(Debug)]
pub struct RunParts {
    /// Its results.
    pub series: Vec<Series>,
    /// From `--explain`: its kernel phases.
    pub breakdown: Option<Breakdown>,
    /// From `--load` or `--load-cmd`: what ran beside the measurement (a
    /// trace has none).
    pub load: Option<LoadJson>,
}

/// Reads a run file (`v`: its text parsed, to tell what it is). The members
/// are read from the text, once, so an error has its line: it starts with
/// it (`12: …`), else a space.
pub fn from_json(v: &serde_json::Value, text: &str) -> Result<RunParts, String> {
    if v.get("findings").is_some() {
        return Err(" an rtick audit file; expected rtick measure results".into());
    }
    if v.get("clocks").is_some() || v.get("hz").is_some() {
        return Err(" an rtick clocks or drift file; expected rtick measure results".into());
    }
    if v.get("results").is_none() {
        return Err(" no \"results\" array; expected rtick measure --json output".into());
    }
    let run: RunIn = serde_json::from_str(text).map_err(|e| {
        // A member's error carries where it was found (see `member`); the
        // outer position is where the parser stopped, further on.
        let msg = e.to_string();
        let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |m| m.0);
        match msg.rsplit_once(" at line ").and_then(|(m, at)| Some((m, at.split(' ').next()?.parse::<usize>().ok()?))) {
            Some((m, line)) => format!("{line}: {m}"),
            None => format!("{}: {msg}", e.line()),
        }
    })?;
    let breakdown = run.explain.as_ref().map(Breakdown::from_explain).transpose().map_err(|e| format!(" {e}"))?;
    Ok(RunParts { series: series_of_results(run.results), breakdown, load: run.load })
}

/// An attach or noise run file (they carry their command; attach's has
/// findings too, as an audit file), read whole; `None` for another file.
/// An error starts with its line (`12: …`), else a space.
pub fn run_file(v: &serde_json::Value, text: &str) -> Result<Option<(InputKind, RunFile)>, String> {
    let Some(c @ ("attach" | "noise")) = v.get("command").and_then(|c| c.as_str()) else { return Ok(None) };
    let schema = u64::from(crate::json::SCHEMA_VERSION);
    super::version(v, "schema_version", schema, &format!("rtick {c} --json"))?;
    let schema_error = |e: serde_json::Error| format!("{}: does not match rtick {c}'s --json schema: {e}", e.line());
    Ok(Some(match c {
        "attach" => (InputKind::AttachJson, RunFile::Attach(serde_json::from_str(text).map_err(schema_error)?)),
        _ => (InputKind::NoiseJson, RunFile::Noise(serde_json::from_str(text).map_err(schema_error)?)),
    }))
}

/// The members of a measure file `report` reads; each names itself in an error.
#[derive(serde::Deserialize)]
struct RunIn {
    #[serde(deserialize_with = "results")]
    results: Vec<ResultJson>,
    #[serde(default, deserialize_with = "explain")]
    explain: Option<ExplainJson>,
    #[serde(default, deserialize_with = "load")]
    load: Option<LoadJson>,
}

fn results<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ResultJson>, D::Error> {
    member(d, "the \"results\" array does not match the measure schema")
}

fn explain<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExplainJson>, D::Error> {
    member(d, "the \"explain\" object does not match measure --explain's schema")
}

fn load<'de, D: Deserializer<'de>>(d: D) -> Result<Option<LoadJson>, D::Error> {
    member(d, "the \"load\" object does not match measure --load's schema")
}

/// A member, its error prefixed with `what`; the error keeps the text of
/// the inner one, its position (`at line N column M`) included.
fn member<'de, D: Deserializer<'de>, T: serde::Deserialize<'de>>(d: D, what: &str) -> Result<T, D::Error> {
    T::deserialize(d).map_err(|e| D::Error::custom(format!("{what}: {e}")))
}

/// Measure results as series, each with the distribution its histogram gives.
pub fn series_of_results(results: Vec<ResultJson>) -> Vec<Series> {
    results
        .into_iter()
        .map(|r| {
            let dist = (!r.histogram_ns.is_empty()).then(|| Dist {
                weighted: r.histogram_ns.clone(),
                overflow: 0,
                resolution_ns: 1,
            });
            Series { result: r, dist, timeline: None }
        })
        .collect()
}

struct Acc {
    rows: Vec<(u64, i64, i64)>,
}

/// Reads a trace; checks every row (six fields, or ten with `--explain`'s
/// phases, as many as the header has; latency = actual − planned, and the
/// phases, where the wake-up was matched, add up to it).
pub fn from_trace(text: &str) -> Result<RunParts, String> {
    let header: Vec<&str> = text.lines().next().unwrap_or_default().split(',').collect();
    let with_phases = header.len() > HEADER.len();
    if header[..] != HEADER[..] && !header.iter().copied().eq(HEADER.iter().chain(PHASE_HEADER.iter()).copied()) {
        return Err(format!(
            "1: not a trace header; expected {TRACE_HEADER} (and with --explain {})",
            PHASE_HEADER.join(",")
        ));
    }
    let mut by: BTreeMap<(String, usize), Acc> = BTreeMap::new();
    let mut order: Vec<(String, usize)> = Vec::new();
    let mut wakeups: Vec<Wakeup<'_>> = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = |what: &str| format!("{n}: {what}; expected {}", header.join(","));
        if f.len() != header.len() {
            return Err(bad(&format!("{} fields", f.len())));
        }
        let num = |s: &str| s.parse::<i64>().map_err(|_| bad(&format!("'{s}' is not a whole number")));
        let (thread, cycle, planned, actual, latency) = (num(f[0])?, num(f[2])?, num(f[3])?, num(f[4])?, num(f[5])?);
        if actual.checked_sub(planned) != Some(latency) || thread < 0 || cycle < 0 {
            return Err(bad("latency_ns is not actual_ns − planned_ns"));
        }
        let key = (f[1].to_string(), thread as usize);
        if !by.contains_key(&key) {
            order.push(key.clone());
        }
        by.entry(key).or_insert(Acc { rows: Vec::new() }).rows.push((cycle as u64, planned, actual));
        if with_phases {
            let phases = phases_of_row(&f[6..], latency).map_err(|e| bad(&e))?;
            wakeups.push((f[1], thread as usize, cycle as u64, latency, phases));
        }
    }
    // As `rtick measure` lists them: mechanisms in run order, threads in
    // index order (the writer thread interleaves the threads' rows as they come).
    let rank = |m: &str| order.iter().position(|k| k.0 == m);
    let mut keys = order.clone();
    keys.sort_by_key(|k| (rank(&k.0), k.1));
    let breakdown = with_phases.then(|| {
        let mut b = Breakdown::from_wakeups(wakeups);
        b.series.sort_by_key(|s| (rank(&s.mechanism), s.thread));
        b
    });
    let series = keys.iter().map(|k| series_of(&k.0, k.1, &by[k].rows)).collect();
    Ok(RunParts { series, breakdown, load: None })
}

/// A row's four phase fields: all empty (not matched), or four whole
/// numbers that add up to the latency.
fn phases_of_row(f: &[&str], latency: i64) -> Result<Option<[i64; 4]>, String> {
    if f.iter().all(|x| x.is_empty()) {
        return Ok(None);
    }
    let mut p = [0i64; 4];
    for (v, s) in p.iter_mut().zip(f) {
        *v = s.parse().map_err(|_| format!("phase '{s}' is not a whole number (or all four empty)"))?;
    }
    // Checked: a crafted row must be an error, not an overflow.
    let sum = p.iter().try_fold(0i64, |a, &v| a.checked_add(v));
    if sum != Some(latency) {
        let sum = sum.map_or("more than an i64 holds".into(), |s| format!("{s} ns"));
        return Err(format!("the phases add up to {sum}, not to latency_ns {latency}"));
    }
    Ok(Some(p))
}

fn series_of(mechanism: &str, thread: usize, rows: &[(u64, i64, i64)]) -> Series {
    let mut lat: Vec<i64> = rows.iter().map(|r| r.2 - r.1).collect();
    // The interval: planned times lie on cycle·interval (absolute mechanisms).
    let (first, last) = (rows[0], rows[rows.len() - 1]);
    let interval = (last.0 > first.0).then(|| (last.1 - first.1) / (last.0 - first.0) as i64).filter(|i| *i > 0);
    let mut stats = LatencyStats::new();
    lat.iter().for_each(|&l| stats.record(l));
    let s = stats.summary();
    let mut period = LatencyStats::new();
    let overrun: Vec<bool> = rows.iter().map(|r| interval.is_some_and(|i| r.2 > r.1 + i)).collect();
    if let Some(i) = interval {
        for w in rows.windows(2) {
            period.record(w[1].2 - w[0].2 - i);
        }
    }
    let timeline = Timeline {
        t_ns: rows.iter().map(|r| r.1 - first.1).collect(),
        latency_ns: lat.clone(),
        overrun: overrun.clone(),
    };
    lat.sort_unstable();
    let mut weighted: Vec<(i64, u64)> = Vec::new();
    for v in lat {
        match weighted.last_mut() {
            Some((x, c)) if *x == v => *c += 1,
            _ => weighted.push((v, 1)),
        }
    }
    let dist = Dist { weighted, overflow: 0, resolution_ns: 1 };
    let mut r = row(mechanism, thread, None, &dist, s.min, s.max, s.mean);
    r.stddev_ns = Some(s.stddev);
    r.overruns = interval.map(|_| overrun.iter().filter(|o| **o).count() as u64);
    if period.count() > 0 {
        let p = period.summary();
        r.period_min_ns = Some(p.min);
        r.period_max_ns = Some(p.max);
        r.period_percentiles_ns = Some(PercentilesJson::from(&p));
    }
    r.histogram_ns = stats.histogram().buckets();
    Series { result: r, dist: Some(dist), timeline: Some(timeline) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_series_come_in_measure_order() {
        // The writer thread may drain thread 1's ring before thread 0's.
        let text = format!(
            "{TRACE_HEADER}\n1,timerfd,0,1000,1100,100\n0,timerfd,0,1000,1200,200\n1,spin,5,6000,6000,0\n0,spin,5,6000,6001,1\n"
        );
        let s = from_trace(&text).unwrap().series;
        let keys: Vec<(&str, usize)> = s.iter().map(|x| (x.result.mechanism.as_str(), x.result.thread)).collect();
        assert_eq!(keys, [("timerfd", 0), ("timerfd", 1), ("spin", 0), ("spin", 1)]);
    }

    #[test]
    fn huge_phases_are_an_error_naming_the_row_not_an_overflow() {
        let header = format!("{TRACE_HEADER},{}", PHASE_HEADER.join(","));
        let max = i64::MAX;
        let text = format!("{header}\n0,timerfd,0,1000,1100,100,1,2,3,94\n0,timerfd,1,2000,2100,100,{max},{max},1,1\n");
        let err = from_trace(&text).map(|_| ()).expect_err("the phases overflow");
        assert!(err.starts_with("3: the phases add up to more than an i64 holds, not to latency_ns 100"), "{err}");
        let text = format!("{TRACE_HEADER}\n0,timerfd,0,{},{max},-1\n", -2);
        let err = from_trace(&text).map(|_| ()).expect_err("actual − planned overflows");
        assert!(err.starts_with("2: latency_ns is not actual_ns − planned_ns"), "{err}");
    }

    #[test]
    fn attach_and_noise_files_are_read_as_such_not_as_audits() {
        let run = |text: &str| run_file(&serde_json::from_str(text).unwrap(), text);
        let err = |text: &str| run(text).map(|_| ()).unwrap_err();
        let attach = r#"{"command": "attach", "schema_version": 1, "findings": [], "threads": []}"#;
        assert!(
            err(attach).starts_with("1: does not match rtick attach's --json schema: missing field"),
            "{}",
            err(attach)
        );
        let noise = r#"{"command": "noise", "schema_version": 7, "cpus": []}"#;
        assert_eq!(
            err(noise),
            " \"schema_version\" is 7, a version this rtick cannot read; it reads rtick noise --json files of schema_version 1"
        );
        assert!(run(r#"{"findings": []}"#).unwrap().is_none());
        let text = r#"{"findings": []}"#;
        let audit = from_json(&serde_json::from_str(text).unwrap(), text).map(|_| ()).unwrap_err();
        assert!(audit.starts_with(" an rtick audit file"));
    }
}
