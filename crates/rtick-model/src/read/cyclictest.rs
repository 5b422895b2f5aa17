//! cyclictest's files: `--json` output (note its key names with a colon
//! inside, `"cmdline:"`) and `-h` histograms in both layouts — the classic
//! one with every bucket and a `# Total:` line, and the compact one without
//! empty buckets. One column per thread; µs buckets (ns with -N). A bucket
//! i holds latencies truncated to i units, as cyclictest computes them, so
//! its value is i units.

use super::{row, Dist, HistUnit, Series};

/// The `file_version` of cyclictest's `--json` files that rtick reads.
pub const FILE_VERSION: u64 = 1;

pub fn looks_like_histogram(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("# Histogram") || l.starts_with("# Max Latencies"))
        || text.lines().find(|l| !l.starts_with('#') && !l.trim().is_empty()).is_some_and(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 2 && f.iter().all(|x| x.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// The numbers of a summary line (`# Max Latencies: 00012 00009`), one per
/// thread; whole numbers (counts: ≥ 0), or an error naming the line.
fn summary_line(text: &str, label: &str, threads: usize) -> Result<Option<Vec<i64>>, String> {
    let counts = matches!(label, "# Total:" | "# Histogram Overflows:");
    let Some((i, rest)) = text.lines().enumerate().find_map(|(i, l)| Some((i, l.strip_prefix(label)?))) else {
        return Ok(None);
    };
    let bad = |what: String| format!("{}: '{label}' {what}", i + 1);
    let v: Vec<i64> = rest
        .split_whitespace()
        .map(|v| match v.parse::<i64>() {
            Ok(n) if n >= 0 || !counts => Ok(n),
            _ if counts => Err(bad(format!("'{v}' is not a count ≥ 0"))),
            _ => Err(bad(format!("'{v}' is not a whole number"))),
        })
        .collect::<Result<_, _>>()?;
    if v.len() != threads {
        return Err(bad(format!("has {} values for {threads} threads", v.len())));
    }
    Ok(Some(v))
}

/// The rtick histogram header `# rtick VERSION histogram: mechanism NAME, buckets of N ns`:
/// (mechanism, bucket width in ns).
pub fn rtick_section(line: &str) -> Option<(&str, i64)> {
    let rest = line.strip_prefix("# rtick ")?.split_once(" histogram: mechanism ")?.1;
    let (name, unit) = rest.split_once(", buckets of ")?;
    Some((name, unit.strip_suffix(" ns")?.parse().ok().filter(|u| *u > 0)?))
}

/// rtick's `--histogram` file: one cyclictest histogram per mechanism, each
/// after its header line; its buckets' width is in the header. Errors name
/// the line in the file.
pub fn from_rtick_histogram(text: &str) -> Result<Vec<Series>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len()).filter(|&i| rtick_section(lines[i]).is_some()).collect();
    let mut out = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let (mechanism, unit) = rtick_section(lines[start]).unwrap_or_default();
        // Blank lines keep the numbering: an error's line is the file's.
        let section = "\n".repeat(start) + &lines[start..end].join("\n");
        out.extend(histogram_of(&section, unit, mechanism)?);
    }
    Ok(out)
}

/// `v` units in ns; `None` when it does not fit (a damaged file).
fn in_ns(v: i64, unit_ns: i64) -> Option<i64> {
    v.checked_mul(unit_ns)
}

pub fn from_histogram(text: &str, unit: HistUnit) -> Result<Vec<Series>, String> {
    histogram_of(text, if unit == HistUnit::Nanos { 1 } else { 1000 }, "cyclictest")
}

/// One histogram of `mechanism`, in buckets of `u` ns.
fn histogram_of(text: &str, u: i64, mechanism: &str) -> Result<Vec<Series>, String> {
    let mut cols: Vec<Vec<(i64, u64)>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad =
            |what: &str| format!("{}: {what}; expected a bucket line 'NNNNNN count…' of a cyclictest histogram", i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 2 {
            return Err(bad("a bucket without counts"));
        }
        let bucket: i64 = f[0].parse().map_err(|_| bad(&format!("'{}' is not a bucket number", f[0])))?;
        if bucket < 0 {
            return Err(bad(&format!("bucket {bucket} is negative")));
        }
        let bucket = in_ns(bucket, u).ok_or_else(|| bad(&format!("bucket {bucket} is too large")))?;
        if cols.is_empty() {
            cols = vec![Vec::new(); f.len() - 1];
        } else if cols.len() != f.len() - 1 {
            return Err(bad(&format!("{} columns after {} before", f.len() - 1, cols.len())));
        }
        for (c, v) in cols.iter_mut().zip(&f[1..]) {
            let n: u64 = v.parse().map_err(|_| bad(&format!("'{v}' is not a count")))?;
            if n > 0 {
                c.push((bucket, n));
            }
        }
    }
    if cols.is_empty() {
        return Err(" no histogram buckets; expected cyclictest -h output".into());
    }
    // cyclictest always ends a histogram with its summary lines.
    if text.lines().any(|l| l.starts_with("# Histogram")) && !text.lines().any(|l| l.starts_with("# Max Latencies:")) {
        return Err(
            " truncated: the '# Max Latencies:' summary line that ends a cyclictest histogram is missing".into()
        );
    }
    let threads = cols.len();
    let get = |label: &str| summary_line(text, label, threads);
    let (mins, avgs, maxs, overflows) =
        (get("# Min Latencies:")?, get("# Avg Latencies:")?, get("# Max Latencies:")?, get("# Histogram Overflows:")?);
    if let Some(total) = get("# Total:")? {
        for (t, (c, tot)) in cols.iter().zip(&total).enumerate() {
            let sum: u64 = c.iter().map(|x| x.1).sum();
            if sum != *tot as u64 {
                return Err(format!(
                    " thread {t}: buckets add up to {sum}, but '# Total:' says {tot}: truncated file?"
                ));
            }
        }
    }
    let mut out = Vec::new();
    for (t, mut w) in cols.into_iter().enumerate() {
        w.sort_unstable();
        let overflow = overflows.as_ref().map_or(0, |o| o[t] as u64);
        let dist = Dist { weighted: w, overflow, resolution_ns: u };
        let summary = |v: &Option<Vec<i64>>, label: &str| -> Result<Option<i64>, String> {
            v.as_ref()
                .map(|v| in_ns(v[t], u).ok_or(format!(" thread {t}: '{label}' {} is too large", v[t])))
                .transpose()
        };
        let min = summary(&mins, "# Min Latencies:")?.unwrap_or_else(|| dist.weighted.first().map_or(0, |x| x.0));
        let max = summary(&maxs, "# Max Latencies:")?.unwrap_or_else(|| dist.weighted.last().map_or(0, |x| x.0));
        let n: u64 = dist.weighted.iter().map(|x| x.1).sum();
        let mean = avgs.as_ref().map_or_else(
            || dist.weighted.iter().map(|x| x.0 as f64 * x.1 as f64).sum::<f64>() / n.max(1) as f64,
            |a| a[t] as f64 * u as f64,
        );
        let r = row(mechanism, t, None, &dist, min, max, mean);
        out.push(Series { result: r, dist: Some(dist), timeline: None });
    }
    Ok(out)
}

pub fn from_json(v: &serde_json::Value) -> Result<Vec<Series>, String> {
    let threads =
        v.get("thread").and_then(|t| t.as_object()).ok_or("no \"thread\" object; expected cyclictest --json output")?;
    let u: i64 = if v.get("resolution_in_ns").and_then(|r| r.as_i64()) == Some(1) { 1 } else { 1000 };
    let mut keys: Vec<(usize, &serde_json::Value)> = Vec::new();
    for (k, t) in threads {
        let i: usize = k.parse().map_err(|_| format!("thread key '{k}' is not a number"))?;
        keys.push((i, t));
    }
    keys.sort_by_key(|k| k.0);
    let mut out = Vec::new();
    for (i, t) in keys {
        let num = |key: &str| t.get(key).and_then(|x| x.as_f64()).ok_or(format!("thread {i}: no number \"{key}\""));
        let (cycles, min, max, avg) = (num("cycles")?, num("min")?, num("max")?, num("avg")?);
        let ns = |key: &str, v: f64| {
            // `as` saturates a float; the product must fit too.
            in_ns(v as i64, u).ok_or(format!("thread {i}: \"{key}\" {v} is too large for a latency"))
        };
        let (min_ns, max_ns) = (ns("min", min)?, ns("max", max)?);
        let mut w: Vec<(i64, u64)> = Vec::new();
        if let Some(h) = t.get("histogram").and_then(|h| h.as_object()) {
            for (b, c) in h {
                let b: i64 = match b.parse() {
                    Ok(n) if n >= 0 => n,
                    _ => return Err(format!("thread {i}: histogram bucket '{b}' is not a bucket number ≥ 0")),
                };
                let c =
                    c.as_u64().ok_or(format!("thread {i}: histogram count {c} of bucket {b} is not a count ≥ 0"))?;
                w.push((in_ns(b, u).ok_or(format!("thread {i}: histogram bucket {b} is too large"))?, c));
            }
        }
        w.sort_unstable();
        let in_hist: u64 = w.iter().map(|x| x.1).sum();
        let has_hist = !w.is_empty();
        let dist = Dist { weighted: w, overflow: (cycles as u64).saturating_sub(in_hist), resolution_ns: u };
        let mut r = row(
            "cyclictest",
            i,
            t.get("cpu").and_then(|c| c.as_u64()).map(|c| c as usize),
            &dist,
            min_ns,
            max_ns,
            avg * u as f64,
        );
        r.count = cycles as u64;
        if !has_hist {
            r.early_wakeups = None;
        }
        out.push(Series { result: r, dist: has_hist.then_some(dist), timeline: None });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_too_large_for_ns_are_errors_not_overflows() {
        // 9223372036854776 µs is just over i64::MAX ns.
        let e = from_histogram("000001 5\n9223372036854776 1\n", HistUnit::Micros).unwrap_err();
        assert!(e.contains("2: bucket 9223372036854776 is too large"), "{e}");
        let e = from_histogram("000001 5\n# Max Latencies: 9223372036854776\n", HistUnit::Micros).unwrap_err();
        assert!(e.contains("'# Max Latencies:' 9223372036854776 is too large"), "{e}");
        // The same numbers fit in ns buckets.
        assert!(from_histogram("000001 5\n9223372036854776 1\n", HistUnit::Nanos).is_ok());
        let json = |min: &str, bucket: &str| {
            serde_json::from_str::<serde_json::Value>(&format!(
                r#"{{"thread": {{"0": {{"cycles": 5, "min": {min}, "max": 9, "avg": 3, "histogram": {{"{bucket}": 5}}}}}}}}"#
            ))
            .unwrap()
        };
        assert!(from_json(&json("1", "1")).is_ok());
        let e = from_json(&json("1e300", "1")).unwrap_err();
        assert!(e.contains("\"min\"") && e.contains("too large"), "{e}");
        let e = from_json(&json("1", "9223372036854776")).unwrap_err();
        assert!(e.contains("bucket 9223372036854776 is too large"), "{e}");
    }
}
