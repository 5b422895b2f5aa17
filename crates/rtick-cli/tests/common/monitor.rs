//! A running `rtick monitor` for the tests: started on a free port,
//! waited for until /metrics answers, stopped with SIGTERM (SIGKILL only
//! if that fails) however the test ends.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::prometheus::{free_port, get};

/// A running `rtick monitor`, killed when dropped.
pub struct Monitor {
    pub child: Child,
    pub port: u16,
}

impl Monitor {
    /// Starts it on a free port and waits until /metrics answers.
    pub fn start(args: &[&str]) -> Monitor {
        Monitor::start_with(args, Stdio::null())
    }

    /// [`Monitor::start`], its standard output going to `stdout`.
    pub fn start_with(args: &[&str], stdout: Stdio) -> Monitor {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_rtick"))
            .args(["monitor", "--listen", &listen])
            .args(args)
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("rtick monitor starts");
        let mut m = Monitor { child, port };
        let t0 = Instant::now();
        while get(&m.url("/metrics")).map_or(true, |(s, _)| s != 200) {
            if let Some(status) = m.child.try_wait().unwrap() {
                panic!("rtick monitor {args:?} exited: {status:?}");
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "rtick monitor does not answer on {listen}");
            std::thread::sleep(Duration::from_millis(100));
        }
        m
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("the monitor runs");
        let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("a VmRSS line");
        line.trim().trim_end_matches("kB").trim().parse().unwrap()
    }

    /// Sends SIGTERM; the time until it exited, and its exit status.
    pub fn terminate(&mut self) -> (Duration, std::process::ExitStatus) {
        let t0 = Instant::now();
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child's pid is positive");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("the monitor is our child");
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (t0.elapsed(), status);
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "still running 10 s after SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Monitor {
    /// SIGTERM first, as a failed assertion leaves it running: killed, a
    /// monitor with --explain would leave its tracefs instance tracing the
    /// CPU for every later run on the machine. SIGKILL if it does not end.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child's pid is positive");
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
