//! `rtick report`: saved runs — rtick's JSON and traces, cyclictest's JSON
//! and histograms — read into one model: `results` rows exactly as
//! `rtick measure` writes them, plus the latency distribution behind each
//! row (and, from a trace, the latency over time), and the kernel phases of
//! a run made with `--explain` (`breakdown`).

pub mod analysis;
mod cyclictest;
mod rtick_files;

use std::path::{Path, PathBuf};

use crate::breakdown::Breakdown;
use crate::json::ExplainJson;
use crate::json::{AttachFile, NoiseFile, PercentilesJson, ResultJson};
use std::sync::Arc;

/// What kind of file an input is, detected from its content.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    RtickJson,
    RtickTrace,
    CyclictestJson,
    CyclictestHistogram,
    RtickHistogram,
    AttachJson,
    NoiseJson,
}

impl InputKind {
    pub fn name(self) -> &'static str {
        match self {
            InputKind::RtickJson => "rtick measure JSON",
            InputKind::RtickTrace => "rtick trace CSV",
            InputKind::CyclictestJson => "cyclictest JSON",
            InputKind::CyclictestHistogram => "cyclictest histogram",
            InputKind::RtickHistogram => "rtick histogram",
            InputKind::AttachJson => "rtick attach JSON",
            InputKind::NoiseJson => "rtick noise JSON",
        }
    }

    /// What it holds, for telling inputs that cannot be compared apart:
    /// latencies of a measured loop (rtick measure's files, cyclictest's),
    /// an attached program's lateness, or OS noise.
    pub fn family(self) -> &'static str {
        match self {
            InputKind::AttachJson => "rtick attach",
            InputKind::NoiseJson => "rtick noise",
            _ => "latency measurements",
        }
    }
}

/// An attach or noise run file, whole: `report` prints its summary, checks
/// its gates and draws its picture from it.
#[derive(Debug)]
pub enum RunFile {
    Attach(AttachFile),
    Noise(NoiseFile),
}

/// One series' latency distribution.
#[derive(Clone, Debug, Default)]
pub struct Dist {
    /// (value ns, count), ascending by value.
    pub weighted: Vec<(i64, u64)>,
    /// Samples beyond the histogram's range (cyclictest overflows).
    pub overflow: u64,
    /// The width of the source's buckets (1 for exact samples).
    pub resolution_ns: i64,
}

/// Latency over time, from a trace.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Planned wake-up time since the first one, ns.
    pub t_ns: Vec<i64>,
    pub latency_ns: Vec<i64>,
    pub overrun: Vec<bool>,
}

/// One mechanism on one thread of one input.
#[derive(Clone, Debug)]
pub struct Series {
    pub result: ResultJson,
    pub dist: Option<Dist>,
    pub timeline: Option<Timeline>,
}

/// A loaded input file.
#[derive(Clone, Debug)]
pub struct Input {
    pub path: PathBuf,
    pub kind: InputKind,
    pub series: Vec<Series>,
    /// The kernel phases, from a run measured with `--explain`.
    pub breakdown: Option<Breakdown>,
    /// An rtick JSON's `load` object: what ran beside the measurement.
    pub load: Option<crate::json::LoadJson>,
    /// An attach or noise run file, whole.
    pub run: Option<Arc<RunFile>>,
}

impl Input {
    /// A short name for tables and legends: the file name.
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }
}

/// Units of cyclictest histogram buckets (it has no marker for -N).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HistUnit {
    Micros,
    Nanos,
}

/// Why a file could not be read, and what to do about it.
fn unreadable(path: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file: check the path".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied: make it readable, or read it as its owner".into(),
        _ if path.is_dir() => "a directory: give a file written by rtick measure or cyclictest".into(),
        _ => format!("cannot read: {e}"),
    }
}

/// Reads one input; the error is one line naming the file (and line) and what was expected.
pub fn load(path: &Path, unit: HistUnit) -> Result<Input, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), unreadable(path, &e)))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: not a text file (expected JSON, CSV or a cyclictest histogram)", path.display()))?;
    let at = |msg: String| format!("{}:{msg}", path.display());
    let trimmed = text.trim_start();
    let (mut breakdown, mut load, mut run) = (None, None, None);
    let (kind, series) = if trimmed.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| at(format!("{}: invalid or truncated JSON: {e}", e.line())))?;
        if v.get("cmdline:").is_some() || v.get("rt_test_version:").is_some() {
            version(&v, "file_version", cyclictest::FILE_VERSION, "cyclictest --json").map_err(at)?;
            (InputKind::CyclictestJson, cyclictest::from_json(&v).map_err(|e| at(format!(" {e}")))?)
        } else if let Some((kind, file)) = rtick_files::run_file(&v, &text).map_err(at)? {
            let series = match &file {
                RunFile::Attach(a) => rtick_files::series_of_results(a.rows().to_vec()),
                RunFile::Noise(_) => Vec::new(),
            };
            run = Some(Arc::new(file));
            (kind, series)
        } else if v.get("rtick_version").is_some() {
            if v.get("results").is_some() {
                let schema = u64::from(crate::json::SCHEMA_VERSION);
                version(&v, "schema_version", schema, "rtick measure --json").map_err(at)?;
            }
            let run = rtick_files::from_json(&v, &text).map_err(at)?;
            breakdown = run.breakdown;
            load = run.load;
            (InputKind::RtickJson, run.series)
        } else {
            return Err(at(" a JSON file that is neither rtick measure results nor cyclictest --json output".into()));
        }
    } else if trimmed.starts_with(rtick_files::TRACE_HEADER) {
        let run = rtick_files::from_trace(&text).map_err(at)?;
        breakdown = run.breakdown;
        (InputKind::RtickTrace, run.series)
    } else if text.lines().any(|l| cyclictest::rtick_section(l).is_some()) {
        (InputKind::RtickHistogram, cyclictest::from_rtick_histogram(&text).map_err(at)?)
    } else if cyclictest::looks_like_histogram(&text) {
        (InputKind::CyclictestHistogram, cyclictest::from_histogram(&text, unit).map_err(at)?)
    } else {
        return Err(format!(
            "{}: unknown content; expected rtick --json or --trace output, cyclictest --json output, or a cyclictest histogram",
            path.display()
        ));
    };
    if series.is_empty() && run.is_none() {
        return Err(format!("{}: holds no measurement", path.display()));
    }
    Ok(Input { path: path.to_path_buf(), kind, series, breakdown, load, run })
}

/// Checks a JSON file's format version `field`: `supported` is the one
/// read; another, or none, would be read wrongly without a word.
pub(crate) fn version(v: &serde_json::Value, field: &str, supported: u64, writer: &str) -> Result<(), String> {
    match v.get(field) {
        Some(n) if n.as_u64() == Some(supported) => Ok(()),
        Some(n) => Err(format!(
            " \"{field}\" is {n}, a version this rtick cannot read; it reads {writer} files of {field} {supported}"
        )),
        None => Err(format!(" no \"{field}\"; this rtick reads {writer} files of {field} {supported}")),
    }
}

/// The results of a run just measured, and its explanation, as an input
/// (for `measure --plot`).
pub fn from_measure(results: &[ResultJson], explain: Option<&ExplainJson>) -> Result<Input, String> {
    Ok(Input {
        path: PathBuf::from("this run"),
        kind: InputKind::RtickJson,
        series: rtick_files::series_of_results(results.to_vec()),
        breakdown: explain.map(Breakdown::from_explain).transpose()?,
        load: None,
        run: None,
    })
}

/// A results row from a distribution and the figures the source states.
pub fn row(
    mechanism: &str,
    thread: usize,
    cpu: Option<usize>,
    dist: &Dist,
    min: i64,
    max: i64,
    mean: f64,
) -> ResultJson {
    let count = dist.weighted.iter().map(|w| w.1).sum::<u64>() + dist.overflow;
    let percentiles = (count > 0 && !dist.weighted.is_empty()).then(|| {
        let p = analysis::percentiles(dist, max);
        PercentilesJson { p50: p[0], p90: p[1], p99: p[2], p99_9: p[3], p99_99: p[4], p99_999: p[5] }
    });
    let mut r = ResultJson::with_figures(mechanism.to_string(), thread, count, min, max, mean);
    r.cpu = cpu;
    r.percentiles_ns = percentiles;
    r.early_wakeups = Some(dist.weighted.iter().filter(|w| w.0 < 0).map(|w| w.1).sum());
    r.histogram_ns = dist.weighted.clone();
    r
}
