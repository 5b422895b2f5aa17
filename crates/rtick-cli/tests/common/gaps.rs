//! The rows of `rtick noise --trace`, read back.

use std::path::Path;

/// A row of `rtick noise --trace`.
#[derive(Debug)]
pub struct GapRow {
    pub cpu: usize,
    pub start: i64,
    pub duration: i64,
    pub main: String,
    pub sources: Vec<(String, i64)>,
}

pub fn gap_rows(path: &Path) -> Vec<GapRow> {
    let mut r = csv::Reader::from_path(path).unwrap();
    assert_eq!(r.headers().unwrap(), vec!["cpu", "start_ns", "duration_ns", "main_source", "sources"]);
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let sources = rec[4]
                .split(';')
                .filter(|s| !s.is_empty())
                .map(|s| s.rsplit_once('=').map(|(n, d)| (n.to_string(), d.parse().unwrap())).unwrap())
                .collect();
            let n = |i: usize| rec[i].parse::<i64>().unwrap();
            GapRow { cpu: n(0) as usize, start: n(1), duration: n(2), main: rec[3].to_string(), sources }
        })
        .collect()
}
