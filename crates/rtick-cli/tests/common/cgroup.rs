//! A cgroup made for a test's programs: a child of this process's cpu
//! cgroup (v1 or v2, wherever `rtick::cgroup::cpu_cgroup` finds it),
//! removed when dropped however the test ends, the tasks left in it (the
//! test's own) killed first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub struct ChildCgroup {
    pub dir: PathBuf,
    /// Its path as /proc/PID/cgroup names it.
    pub path: String,
    /// The file a process joins it by: `cgroup.procs` (v2), `tasks` (v1).
    pub procs: &'static str,
    /// Whether it is in the v2 hierarchy.
    pub v2: bool,
}

impl ChildCgroup {
    /// `NAME-<this process's pid>-<n>`, each of a test binary's its own (its
    /// tests run at once); `Err`: why there is none, to skip with.
    pub fn create(name: &str) -> Result<ChildCgroup, String> {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let cg = rtick::cgroup::cpu_cgroup(&rtick::system::SysRoot::default())
            .ok_or("no cpu cgroup controller found in /proc/self/cgroup and /proc/self/mountinfo")?;
        let name = format!("{name}-{}-{}", std::process::id(), MADE.fetch_add(1, Ordering::Relaxed));
        let dir = PathBuf::from(&cg.dir).join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create the cgroup {}: {e}", dir.display()))?;
        let path = format!("{}/{name}", cg.path.trim_end_matches('/'));
        Ok(ChildCgroup { dir, path, procs: if cg.v2 { "cgroup.procs" } else { "tasks" }, v2: cg.v2 })
    }

    /// One for a test's culprits, real-time ones allowed in it (100 ms a
    /// second, on kernels that budget groups); `None` where none can be made.
    pub fn for_culprits(name: &str) -> Option<ChildCgroup> {
        let cg = ChildCgroup::create(name).ok()?;
        let budget = cg.dir.join("cpu.rt_runtime_us");
        // A parent with less RT budget refuses it: no cgroup then.
        (!budget.exists() || std::fs::write(&budget, "100000").is_ok()).then_some(cg)
    }

    /// The pids in it.
    pub fn pids(&self) -> Vec<i32> {
        let text = std::fs::read_to_string(self.dir.join(self.procs)).unwrap_or_default();
        text.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// A shell that joins it (exit 77 when it cannot), then runs `script`
    /// with `program ARGS…` as `"$0" "$@"`.
    pub fn shell(&self, script: &str, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!("echo $$ > \"{}/{}\" || exit 77; {script}", self.dir.display(), self.procs));
        c.arg(program).args(args);
        c
    }

    /// `program ARGS…`, run in it from its first instruction.
    pub fn command(&self, program: &Path, args: &[&str]) -> Command {
        self.shell("exec \"$0\" \"$@\"", program, args)
    }
}

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        // SIGTERM first, so that an rtick in it (a test's run) removes its
        // trace instance; then SIGKILL whatever is left.
        for round in 0..100 {
            let signal = if round < 20 { "-TERM" } else { "-KILL" };
            for pid in self.pids() {
                let _ = Command::new("kill").arg(signal).arg(pid.to_string()).status();
            }
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("could not remove {}", self.dir.display());
    }
}
