//! The cgroups of this process, as far as timing cares: the real-time budget
//! of its cpu cgroup, and the CPUs its cpuset allows. With `CONFIG_RT_GROUP_SCHED`, a cgroup other than the
//! root starts with `cpu.rt_runtime_us = 0`, and `sched_setscheduler` to
//! SCHED_FIFO/RR then fails with EPERM even for root — the classic trap of
//! services and containers, which "run as root" does not fix.
//!
//! Everything is read through a [`SysRoot`] from `/proc/self/cgroup` and
//! `/proc/self/mountinfo`, so fixtures can stand in for a machine.

use crate::system::SysRoot;

/// This process's cgroup of the cpu controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCgroup {
    /// Its path inside the hierarchy, as `/proc/self/cgroup` gives it.
    pub path: String,
    /// The directory holding its files on the running system.
    pub dir: String,
    /// Where its hierarchy is mounted.
    pub mount: String,
    /// cgroup v2 (the unified hierarchy) rather than v1.
    pub v2: bool,
    /// `cpu.rt_runtime_us`: `None` when the file does not exist (no RT
    /// group scheduling on this hierarchy); -1 means unlimited.
    pub rt_runtime_us: Option<i64>,
    /// `cpu.rt_period_us`.
    pub rt_period_us: Option<i64>,
}

impl CpuCgroup {
    /// Whether this is the hierarchy's root, where the global sysctl budget applies.
    pub fn is_root(&self) -> bool {
        self.path == "/"
    }

    /// Whether real-time threads are refused here: a budget of 0.
    pub fn refuses_realtime(&self) -> bool {
        self.rt_runtime_us == Some(0)
    }

    /// The commands that give real-time threads a budget here.
    pub fn remedy(&self) -> String {
        let tasks = if self.v2 { "cgroup.procs" } else { "tasks" };
        format!(
            "echo 950000 > {}/cpu.rt_runtime_us (its parents first), or start from the root cgroup: \
             echo $$ > {}/{tasks}; for Docker, --cpu-rt-runtime=950000",
            self.dir, self.mount
        )
    }

    /// Cause and fix, for a cgroup that refuses real-time threads.
    pub fn fix(&self) -> String {
        format!(
            "this process's cgroup {} has no real-time budget (cpu.rt_runtime_us = 0, CONFIG_RT_GROUP_SCHED): {}",
            self.path,
            self.remedy()
        )
    }
}

/// This process's cpu cgroup, or `None` when `/proc/self/cgroup` or the
/// hierarchy's mount cannot be read.
pub fn cpu_cgroup(root: &SysRoot) -> Option<CpuCgroup> {
    cpu_cgroup_of(root, "self")
}

/// The cpu cgroup of process or thread `proc` (`self`, a pid, or
/// `PID/task/TID`), from its `/proc/{proc}/cgroup` and this process's mounts.
pub fn cpu_cgroup_of(root: &SysRoot, proc: &str) -> Option<CpuCgroup> {
    let at = locate(root, proc, "cpu")?;
    let num = |f: &str| root.read(&format!("{}/{f}", at.dir)).and_then(|v| v.parse::<i64>().ok());
    Some(CpuCgroup {
        rt_runtime_us: num("cpu.rt_runtime_us"),
        rt_period_us: num("cpu.rt_period_us"),
        path: at.path,
        dir: at.dir,
        mount: at.mount,
        v2: at.v2,
    })
}

/// This process's cpuset: the CPUs its threads may be pinned to, whatever
/// their inherited affinity (which `isolcpus=` narrows without limiting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpuset {
    /// Its path inside the hierarchy.
    pub path: String,
    /// The file the CPUs were read from.
    pub file: String,
    /// The CPUs.
    pub cpus: Vec<usize>,
}

/// This process's cpuset, or `None` when there is none to read (no cpuset
/// controller, or files missing).
pub fn cpuset(root: &SysRoot) -> Option<Cpuset> {
    let at = locate(root, "self", "cpuset")?;
    let names: &[&str] = if at.v2 { &["cpuset.cpus.effective"] } else { &["cpuset.effective_cpus", "cpuset.cpus"] };
    names.iter().find_map(|n| {
        let file = format!("{}/{n}", at.dir);
        let cpus = crate::system::parse_cpu_list(&root.read(&file)?)?;
        Some(Cpuset { path: at.path.clone(), file, cpus })
    })
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or
/// `/sys/fs/cgroup/unified` on a hybrid system), from `/proc/self/mountinfo`.
pub fn v2_mount(root: &SysRoot) -> Option<String> {
    find_mount(&root.read("/proc/self/mountinfo")?, "", true).map(|(_, mount)| mount)
}

struct Located {
    path: String,
    dir: String,
    mount: String,
    v2: bool,
}

/// Where `controller`'s cgroup of `proc` lives.
fn locate(root: &SysRoot, proc: &str, controller: &str) -> Option<Located> {
    let cgroups = root.read(&format!("/proc/{proc}/cgroup"))?;
    let mountinfo = root.read("/proc/self/mountinfo")?;
    let (path, v2) = find_path(&cgroups, controller)?;
    let (mount_root, mount) = find_mount(&mountinfo, controller, v2)?;
    // Inside a cgroup namespace or a container the mount may show a subtree.
    let rel = if mount_root == "/" {
        path.as_str()
    } else {
        path.strip_prefix(mount_root.as_str()).filter(|r| r.is_empty() || r.starts_with('/')).unwrap_or("/")
    };
    let dir = format!("{}{}", mount.trim_end_matches('/'), if rel == "/" { "" } else { rel });
    Some(Located { path, dir, mount, v2 })
}

/// The cgroup that names a task's container or unit, from the text of its
/// `/proc/PID/cgroup`: its v2 path when that is not the root, else (on a
/// host that still mounts v1, with an empty v2 hierarchy) its v1 `cpu`,
/// then `cpuset` path; `None` when every one is the root.
pub fn task_path(text: &str) -> Option<String> {
    let path_of = |want: &dyn Fn(&str) -> bool| {
        text.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            want(controllers).then(|| path.to_string())
        })
    };
    let has = |name: &'static str| move |c: &str| c.split(',').any(|x| x == name);
    [path_of(&|c: &str| c.is_empty()), path_of(&has("cpu")), path_of(&has("cpuset"))]
        .into_iter()
        .flatten()
        .find(|p| p != "/")
}

/// The controller's path: the v1 line naming it among its controllers,
/// else the v2 line (`0::PATH`).
fn find_path(text: &str, controller: &str) -> Option<(String, bool)> {
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            return Some((path.to_string(), false));
        }
        if controllers.is_empty() {
            v2 = Some((path.to_string(), true));
        }
    }
    v2
}

/// The (root inside the hierarchy, mount point) of the controller's hierarchy.
fn find_mount(mountinfo: &str, controller: &str, v2: bool) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let mut right = right.split(' ');
        let (fstype, _source, options) = (right.next()?, right.next()?, right.next().unwrap_or(""));
        let wanted =
            if v2 { fstype == "cgroup2" } else { fstype == "cgroup" && options.split(',').any(|o| o == controller) };
        wanted.then(|| Some((unescape(left.get(3)?), unescape(left.get(4)?))))?
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod task_tests {
    use super::task_path;

    #[test]
    fn a_task_is_named_by_its_v2_path_else_its_v1_cpu_then_cpuset_path() {
        let hybrid = "9:name=systemd:/system.slice/x.service\n4:memory:/m\n3:cpuset:/set\n1:cpu,cpuacct:/system.slice/x.service\n0::/\n";
        assert_eq!(task_path(hybrid).as_deref(), Some("/system.slice/x.service"));
        assert_eq!(task_path("3:cpuset:/set\n1:cpu,cpuacct:/\n0::/\n").as_deref(), Some("/set"));
        assert_eq!(task_path("0::/kubepods/pod1/abc\n").as_deref(), Some("/kubepods/pod1/abc"));
        assert_eq!(task_path("3:cpuset:/\n1:cpu:/\n0::/\n"), None, "the root names nothing");
        assert_eq!(task_path(""), None);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A directory tree under a temporary root (`/proc`, `/sys/fs/cgroup`
    /// as a test needs them): each path with its contents.
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        }
        d
    }

    const V1_MOUNTS: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
        33 31 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n";

    #[test]
    fn v1_service_without_budget() {
        let d = tree(&[
            ("/proc/self/cgroup", "4:cpuset:/\n2:cpu,cpuacct:/system.slice/app.service\n0::/\n"),
            ("/proc/self/mountinfo", V1_MOUNTS),
            ("/sys/fs/cgroup/cpu,cpuacct/system.slice/app.service/cpu.rt_runtime_us", "0\n"),
            ("/sys/fs/cgroup/cpu,cpuacct/system.slice/app.service/cpu.rt_period_us", "1000000\n"),
        ]);
        let c = cpu_cgroup(&SysRoot::new(d.path())).unwrap();
        assert_eq!(c.dir, "/sys/fs/cgroup/cpu,cpuacct/system.slice/app.service");
        assert_eq!((c.v2, c.is_root(), c.rt_runtime_us, c.rt_period_us), (false, false, Some(0), Some(1_000_000)));
        assert!(c.refuses_realtime());
        assert!(c.fix().contains("echo $$ > /sys/fs/cgroup/cpu,cpuacct/tasks"), "{}", c.fix());
        assert_eq!(cpuset(&SysRoot::new(d.path())), None, "no cpuset files");
    }

    #[test]
    fn cpusets_v1_and_v2() {
        let d = tree(&[
            ("/proc/self/cgroup", "4:cpuset:/rt\n2:cpu,cpuacct:/\n"),
            ("/proc/self/mountinfo", V1_MOUNTS),
            ("/sys/fs/cgroup/cpuset/rt/cpuset.cpus", "2-3\n"),
        ]);
        let c = cpuset(&SysRoot::new(d.path())).unwrap();
        assert_eq!(
            (c.path.as_str(), c.file.as_str(), c.cpus),
            ("/rt", "/sys/fs/cgroup/cpuset/rt/cpuset.cpus", vec![2, 3])
        );
        let d = tree(&[
            ("/proc/self/cgroup", "0::/app\n"),
            ("/proc/self/mountinfo", "40 30 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            ("/sys/fs/cgroup/app/cpuset.cpus.effective", "0,2\n"),
        ]);
        assert_eq!(cpuset(&SysRoot::new(d.path())).unwrap().cpus, vec![0, 2]);
    }

    #[test]
    fn v2_without_rt_files_and_namespaced_mounts() {
        let d = tree(&[
            ("/proc/self/cgroup", "0::/user.slice/session-2.scope\n"),
            ("/proc/self/mountinfo", "40 30 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"),
        ]);
        let c = cpu_cgroup(&SysRoot::new(d.path())).unwrap();
        assert_eq!((c.dir.as_str(), c.v2, c.rt_runtime_us), ("/sys/fs/cgroup/user.slice/session-2.scope", true, None));
        assert!(!c.refuses_realtime());
        // A container's view: the mount shows its own subtree, with an escaped space.
        let d = tree(&[
            ("/proc/self/cgroup", "3:cpu:/docker/abc\n"),
            ("/proc/self/mountinfo", "50 40 0:29 /docker/abc /sys/fs/cgroup/my\\040cpu ro - cgroup cgroup ro,cpu\n"),
            ("/sys/fs/cgroup/my cpu/cpu.rt_runtime_us", "-1\n"),
        ]);
        let c = cpu_cgroup(&SysRoot::new(d.path())).unwrap();
        assert_eq!((c.dir.as_str(), c.rt_runtime_us), ("/sys/fs/cgroup/my cpu", Some(-1)));
        assert!(cpu_cgroup(&SysRoot::new("/nonexistent")).is_none());
    }
}
