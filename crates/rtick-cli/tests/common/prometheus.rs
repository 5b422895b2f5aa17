//! A real Prometheus server for the tests (Debian's `prometheus`, installed
//! by scripts/setup): started on a free loopback port with a configuration
//! and a database of its own in a temporary directory, scraping one target
//! every second, stopped when dropped. `query` runs PromQL through its HTTP
//! API. The package's own service, where one runs, is not involved.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Prometheus scraping one target.
pub struct Prometheus {
    child: Child,
    _dir: tempfile::TempDir,
    pub port: u16,
}

/// Whether the `prometheus` and `promtool` commands are here.
pub fn installed() -> bool {
    ["prometheus", "promtool"]
        .iter()
        .all(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// A loopback port nothing listens on (a moment ago).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (host:port) every second, and
    /// waits until it is ready.
    pub fn start(target: &str) -> Prometheus {
        Prometheus::start_with(target, &[])
    }

    /// As [`Prometheus::start`], with extra command-line flags (e.g.
    /// `--enable-feature=native-histograms`).
    pub fn start_with(target: &str, flags: &[&str]) -> Prometheus {
        Prometheus::start_with_rules(target, flags, &[])
    }

    /// As [`Prometheus::start_with`], evaluating the rules of the files
    /// `rules` every second (their state: /api/v1/rules and /api/v1/alerts).
    pub fn start_with_rules(target: &str, flags: &[&str], rules: &[&Path]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        let rule_files: String = rules.iter().map(|r| format!("  - '{}'\n", r.display())).collect();
        let rule_files = if rules.is_empty() { String::new() } else { format!("rule_files:\n{rule_files}") };
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{rule_files}scrape_configs:\n  - job_name: rtick\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.path().join("log")).unwrap()))
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, _dir: dir, port };
        p.wait_ready();
        p
    }

    fn wait_ready(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if get(&format!("http://127.0.0.1:{}/-/ready", self.port)).is_ok_and(|(s, _)| s == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus not ready after 60 s: {}", self.log());
    }

    /// Prometheus's own log (warnings and errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("log")).unwrap_or_default()
    }

    /// Runs an instant query; the `data.result` array. Panics when
    /// Prometheus answers with an error (a query that does not parse, …).
    pub fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let (status, body) = get_with(ureq::get(&url).query("query", expr)).expect("prometheus answers");
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON from prometheus");
        assert!(status == 200 && v["status"] == "success", "query {expr}: {status} {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The value of the query's first sample, when it has one.
    pub fn value(&self, expr: &str) -> Option<f64> {
        let r = self.query(expr);
        r.first().and_then(|s| s["value"][1].as_str()).and_then(|v| v.parse().ok())
    }

    /// Waits until the query has a finite value (at most `timeout`).
    pub fn wait_value(&self, expr: &str, timeout: Duration) -> f64 {
        let t0 = Instant::now();
        loop {
            if let Some(v) = self.value(expr).filter(|v| v.is_finite()) {
                return v;
            }
            assert!(t0.elapsed() < timeout, "no value for {expr} after {timeout:?}; log: {}", self.log());
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GET: (status, body); any status is an answer, not an error.
pub fn get(url: &str) -> Result<(u16, String), ureq::Error> {
    get_with(ureq::get(url))
}

/// Sends a prepared GET: (status, body).
pub fn get_with(req: ureq::RequestBuilder<ureq::typestate::WithoutBody>) -> Result<(u16, String), ureq::Error> {
    let mut r =
        req.config().http_status_as_error(false).timeout_global(Some(Duration::from_secs(30))).build().call()?;
    let status = r.status().as_u16();
    Ok((status, r.body_mut().read_to_string()?))
}

/// Runs `promtool check metrics` on an exposition: its output on failure.
pub fn promtool_check_metrics(exposition: &str, dir: &Path) -> Result<(), String> {
    let file = dir.join("exposition.txt");
    std::fs::write(&file, exposition).unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("promtool check metrics < '{}'", file.display()))
        .output()
        .expect("promtool runs");
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if o.status.success() && text.trim().is_empty() {
        Ok(())
    } else {
        Err(text)
    }
}
