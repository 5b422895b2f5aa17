//! What the tests that trace real programs share (attach, noise): whether
//! this machine can trace, the programs of tests/c compiled, `rtick`
//! started with its output piped, its trace instance awaited, and checked
//! gone once it has ended.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::skip;
use super::support::{self, TRACEFS};

/// Whether this machine can trace (root, tracefs, mounted here when it is
/// not); a skip, said on stderr, when it cannot.
pub fn ready() -> bool {
    support::tracefs().map_err(|(why, kernel_lacks_it)| skip(why, kernel_lacks_it)).is_ok()
}

/// [`ready`], and CPUs 0 and 1 both allowed: for the tests that `what`
/// on CPU 1 with CPU 0 left for the rest.
pub fn ready_on_cpu_1(what: &str) -> bool {
    if rtick::info::allowed_cpus().map_or(true, |c| !c.contains(&0) || !c.contains(&1)) {
        skip(&format!("{what} on CPU 1 with CPU 0 left for the rest: they need two CPUs"), false);
        return false;
    }
    ready()
}

/// tests/c/`source`.c compiled into `dir` as `name` (the program's comm;
/// each test its own: they run at once, and some find theirs by name),
/// or `None` (skipped) without a C compiler.
pub fn compile(dir: &Path, source: &str, name: &str) -> Option<PathBuf> {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let src = c.join(format!("{source}.c"));
    let exe = dir.join(name);
    match Command::new("cc").args(["-O2", "-pthread", "-I"]).arg(&c).arg("-o").arg(&exe).arg(&src).status() {
        Ok(s) if s.success() => Some(exe),
        Ok(s) => panic!("cc failed on {}: {s}", src.display()),
        Err(e) => {
            skip(&format!("no C compiler (cc: {e}); scripts/setup installs gcc"), false);
            None
        }
    }
}

/// tests/c/periodic.c compiled into `dir` as `name` (see [`compile`]).
pub fn periodic(dir: &Path, name: &str) -> Option<PathBuf> {
    compile(dir, "periodic", name)
}

/// `rtick SUBCOMMAND ARGS…` started, its stdout and stderr piped.
pub fn spawn(subcommand: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rtick"))
        .arg(subcommand)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtick starts")
}

/// The trace instance of the `rtick` whose process id is `pid`.
pub fn instance(pid: u32) -> PathBuf {
    Path::new(TRACEFS).join("instances").join(format!("rtick-{pid}"))
}

/// Waits (up to 30 s: a loaded VM) for `rtick`'s trace instance to trace:
/// its events enabled and `tracing_on` 1, the last step of its set-up
/// (made with tracing off, it is turned on once its events are enabled:
/// enabling them takes most of a second on some VMs).
pub fn wait_for_instance(rtick: &Child) {
    let dir = instance(rtick.id());
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let started = Instant::now();
    while read("tracing_on").trim() != "1" || read("set_event").trim().is_empty() {
        // Exited (a zombie until waited for): its error is in its output.
        assert!(super::running(rtick.id() as i32), "rtick exited before it traced");
        assert!(started.elapsed() < Duration::from_secs(30), "rtick's trace instance did not trace within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `rtick` to end: its output, once its trace instance is
/// checked gone.
pub fn finish(rtick: Child) -> Output {
    let pid = rtick.id();
    let o = rtick.wait_with_output().unwrap();
    assert!(!instance(pid).exists(), "rtick's instance is removed");
    o
}

/// A thread named `name`, pinned to `cpu`, running `step` again and again
/// until the flag returned is set. Returns its tid, the flag and its handle.
pub fn pinned_loop(
    name: &str,
    cpu: usize,
    mut step: impl FnMut() + Send + 'static,
) -> (i32, std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            rustix::thread::sched_setaffinity(None, &set).unwrap();
            tx.send(rustix::thread::gettid().as_raw_nonzero().get()).unwrap();
            while !flag.load(Ordering::Relaxed) {
                step();
            }
        })
        .unwrap();
    (rx.recv().unwrap(), stop, h)
}
