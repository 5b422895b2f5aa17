//! The threads `rtick attach` follows and what /proc says of each.

use std::fs;
use std::path::Path;

use crate::rt::Policy;
use crate::system::parse_cpu_list;

/// `PF_KTHREAD` in `/proc/PID/stat`'s flags: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// What the user named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// A process: all its threads, including those it creates later.
    Pid(i32),
    /// These threads only.
    Tids(Vec<i32>),
    /// The one process of this name (`/proc/PID/comm`).
    Comm(String),
}

/// Why a target cannot be attached to: each a usage error, one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No such process or thread.
    #[error("no process or thread {0}: give the pid of a running program (ps -eLo pid,tid,comm)")]
    NoSuch(i32),
    /// No process of that name.
    #[error("no process is named {0:?}: give the name /proc/PID/comm shows (ps -eo pid,comm), or its pid")]
    NoSuchComm(String),
    /// Several processes of that name.
    #[error("{count} processes are named {name:?} (pids {pids}): attach to one of them by pid", count = .pids.split(", ").count())]
    AmbiguousComm {
        /// The name.
        name: String,
        /// Their pids, comma-separated.
        pids: String,
    },
    /// A kernel thread: it makes no system calls to return from.
    #[error("{pid} ({comm}) is a kernel thread: attach follows user-space programs; give a program's pid")]
    KernelThread {
        /// Its pid.
        pid: i32,
        /// Its name.
        comm: String,
    },
    /// rtick itself.
    #[error("{0} is rtick's own process: attach to another program")]
    OwnPid(i32),
}

/// How lines name thread `tid` called `comm` ([`ThreadInfo::label`]).
pub fn label(tid: i32, comm: &str) -> String {
    match tid {
        0 => comm.to_string(),
        tid => format!("{tid} {comm}"),
    }
}

/// One thread and its scheduling settings, as read from /proc when it was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Its thread id.
    pub tid: i32,
    /// Its process (thread group) id.
    pub tgid: i32,
    /// Its name.
    pub comm: String,
    /// Its policy (`None`: one rtick has no name for, e.g. SCHED_DEADLINE).
    pub policy: Option<Policy>,
    /// Its real-time priority (0 for the normal policies).
    pub rt_priority: i32,
    /// Its nice value.
    pub nice: i32,
    /// The CPUs it may run on.
    pub affinity: Vec<usize>,
    /// Its timer slack, ns (`/proc/TID/timerslack_ns`).
    pub timer_slack_ns: Option<u64>,
}

impl ThreadInfo {
    /// How lines name it: "tid comm"; the exited threads' pooled row (tid
    /// 0) by its comm alone, "3 exited threads".
    pub fn label(&self) -> String {
        label(self.tid, &self.comm)
    }

    /// The CPUs any of `threads` may run on, in order: those an attach traces.
    pub fn cpus_of<'a>(threads: impl IntoIterator<Item = &'a ThreadInfo>) -> Vec<usize> {
        let mut cpus: Vec<usize> = threads.into_iter().flat_map(|t| t.affinity.iter().copied()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// Reads thread `tid` from `proc` (normally `/proc`).
    pub fn read(proc: &Path, tid: i32) -> Option<ThreadInfo> {
        let dir = proc.join(tid.to_string());
        let stat = Stat::parse(&fs::read_to_string(dir.join("stat")).ok()?)?;
        let status = fs::read_to_string(dir.join("status")).ok()?;
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        let slack = fs::read_to_string(dir.join("timerslack_ns")).ok().and_then(|s| s.trim().parse().ok());
        Some(ThreadInfo {
            tid,
            tgid: field("Tgid:")?.parse().ok()?,
            comm: stat.comm,
            policy: Policy::from_raw(stat.policy),
            rt_priority: stat.rt_priority,
            nice: stat.nice,
            affinity: allowed(&status)?,
            timer_slack_ns: slack,
        })
    }

    /// The CPUs thread `tid` may run on now (`None`: it is gone).
    pub fn affinity_now(proc: &Path, tid: i32) -> Option<Vec<usize>> {
        allowed(&fs::read_to_string(proc.join(tid.to_string()).join("status")).ok()?)
    }

    /// The kernel function thread `tid` is blocked in (`/proc/TID/wchan`:
    /// `hrtimer_nanosleep`, `do_epoll_wait`…), `None` when it runs or is gone.
    pub fn blocked_in(proc: &Path, tid: i32) -> Option<String> {
        let w = fs::read_to_string(proc.join(tid.to_string()).join("wchan")).ok()?;
        let w = w.trim();
        (!w.is_empty() && w != "0").then(|| w.to_string())
    }

    /// `SCHED_FIFO 80`, `SCHED_OTHER nice 0`.
    pub fn policy_text(&self) -> String {
        match self.policy {
            Some(p @ (Policy::Fifo | Policy::Rr)) => format!("{} {}", p.kernel_name(), self.rt_priority),
            Some(p) => format!("{} nice {}", p.kernel_name(), self.nice),
            None => "an unnamed policy".into(),
        }
    }

    /// The CPU thread `tid` is on when it is running or runnable (state
    /// `R`), `None` when it sleeps or is gone.
    pub fn running_on(proc: &Path, tid: i32) -> Option<usize> {
        let stat = Stat::parse(&fs::read_to_string(proc.join(tid.to_string()).join("stat")).ok()?)?;
        (stat.state == 'R').then_some(stat.processor)
    }

    /// The thread's kernel priority, as trace events show it: 99 − p for
    /// SCHED_FIFO/RR p, 120 + nice for the normal policies.
    pub fn kernel_prio(&self) -> i32 {
        self.policy.unwrap_or_default().kernel_prio(self.rt_priority, self.nice)
    }

    /// Whether the kernel gives it timer slack (the normal policies).
    pub fn has_slack_policy(&self) -> bool {
        !matches!(self.policy, Some(Policy::Fifo | Policy::Rr))
    }
}

/// The fields of `/proc/PID/stat` read here.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stat {
    comm: String,
    state: char,
    flags: u64,
    nice: i32,
    rt_priority: i32,
    policy: i32,
    processor: usize,
    /// When it started, in clock ticks since boot: with its pid, names it
    /// (a pid is reused, not with the same start).
    starttime: u64,
}

impl Stat {
    /// `pid (comm) state ppid …`: the name may hold spaces and parentheses,
    /// so the fields are counted from its last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let (open, close) = (text.find('(')?, text.rfind(')')?);
        let comm = text.get(open + 1..close)?.to_string();
        // After the name, field 3 (state) is at index 0.
        let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        let at = |n: usize| f.get(n - 3).and_then(|v| v.parse::<i64>().ok());
        Some(Stat {
            comm,
            state: f.first()?.chars().next()?,
            flags: at(9)? as u64,
            nice: at(19)? as i32,
            rt_priority: at(40)? as i32,
            policy: at(41)? as i32,
            processor: at(39)? as usize,
            starttime: at(22)? as u64,
        })
    }
}

/// The process or threads attached to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The process (of the first thread, for a list of tids).
    pub pid: i32,
    /// Its name.
    pub comm: String,
    /// Follow every thread of `pid`, including later ones (else only `tids`).
    pub whole_process: bool,
    /// The threads named (for a list of tids).
    pub tids: Vec<i32>,
    /// When the process started (`/proc/PID/stat` field 22): another with
    /// its pid later is another process.
    pub starttime: u64,
}

impl Target {
    /// Resolves `spec` against `/proc`.
    pub fn resolve(spec: &Spec) -> Result<Target, TargetError> {
        Target::resolve_in(Path::new("/proc"), spec, std::process::id() as i32)
    }

    /// Resolves `spec` against `proc`, rtick being `own`.
    pub fn resolve_in(proc: &Path, spec: &Spec, own: i32) -> Result<Target, TargetError> {
        let (pid, whole, tids) = match spec {
            Spec::Pid(p) => (*p, true, Vec::new()),
            Spec::Tids(t) => (*t.first().ok_or(TargetError::NoSuch(0))?, false, t.clone()),
            Spec::Comm(name) => (by_comm(proc, name, own)?, true, Vec::new()),
        };
        let mut first = None;
        for &t in if whole { std::slice::from_ref(&pid) } else { &tids[..] } {
            let text = fs::read_to_string(proc.join(t.to_string()).join("stat")).map_err(|_| TargetError::NoSuch(t))?;
            let stat = Stat::parse(&text).ok_or(TargetError::NoSuch(t))?;
            if stat.flags & PF_KTHREAD != 0 {
                return Err(TargetError::KernelThread { pid: t, comm: stat.comm });
            }
            let tgid = ThreadInfo::read(proc, t).map_or(t, |i| i.tgid);
            if t == own || tgid == own {
                return Err(TargetError::OwnPid(t));
            }
            first.get_or_insert((tgid, stat.comm));
        }
        let (pid, comm) = first.ok_or(TargetError::NoSuch(pid))?;
        let starttime = start_of(proc, pid).ok_or(TargetError::NoSuch(pid))?;
        Ok(Target { pid, comm, whole_process: whole, tids, starttime })
    }

    /// The threads alive now (empty: the target has exited; a zombie
    /// waiting for its parent to reap it has, and so has a process whose
    /// pid another now has).
    pub fn threads(&self, proc: &Path) -> Vec<i32> {
        if start_of(proc, self.pid) != Some(self.starttime) {
            return Vec::new();
        }
        let alive = |t: &i32| {
            let stat = fs::read_to_string(proc.join(t.to_string()).join("stat")).unwrap_or_default();
            stat.rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next())
                .is_some_and(|s| !matches!(s, "Z" | "X"))
        };
        if !self.whole_process {
            return self.tids.iter().copied().filter(alive).collect();
        }
        let Ok(dir) = fs::read_dir(proc.join(self.pid.to_string()).join("task")) else { return Vec::new() };
        let mut t: Vec<i32> =
            dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).filter(alive).collect();
        t.sort_unstable();
        t
    }
}

/// The CPUs of `Cpus_allowed_list:` in `/proc/TID/status` text.
fn allowed(status: &str) -> Option<Vec<usize>> {
    parse_cpu_list(status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?.trim())
}

/// When process or thread `pid` started (`None`: it is gone).
fn start_of(proc: &Path, pid: i32) -> Option<u64> {
    Some(Stat::parse(&fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?)?.starttime)
}

/// The one process named `name`, rtick excepted.
fn by_comm(proc: &Path, name: &str, own: i32) -> Result<i32, TargetError> {
    let mut pids: Vec<i32> = fs::read_dir(proc)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&p| p != own)
                .filter(|p| {
                    fs::read_to_string(proc.join(p.to_string()).join("comm")).is_ok_and(|c| c.trim_end() == name)
                })
                // A process, not one of its threads (listed here by a fake /proc).
                .filter(|&p| ThreadInfo::read(proc, p).is_some_and(|i| i.tgid == p))
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    match pids[..] {
        [] => Err(TargetError::NoSuchComm(name.into())),
        [p] => Ok(p),
        _ => Err(TargetError::AmbiguousComm {
            name: name.into(),
            pids: pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(pid: i32, comm: &str, flags: u64, policy: i32) -> String {
        // Fields 3..=41: state ppid … flags(9) … nice(19) … rt_priority(40) policy(41).
        let mut f = vec!["0".to_string(); 39];
        f[0] = "S".into();
        f[9 - 3] = flags.to_string();
        f[19 - 3] = "-5".into();
        f[40 - 3] = if policy == 1 { "80".into() } else { "0".into() };
        f[41 - 3] = policy.to_string();
        format!("{pid} ({comm}) {}\n", f.join(" "))
    }

    fn fake(root: &Path, pid: i32, tids: &[i32], comm: &str, flags: u64) {
        for &t in std::iter::once(&pid).chain(tids) {
            let d = root.join(t.to_string());
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("stat"), stat(t, comm, flags, 1)).unwrap();
            fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            fs::write(d.join("status"), format!("Name:\t{comm}\nTgid:\t{pid}\nCpus_allowed_list:\t0-1\n")).unwrap();
            fs::write(d.join("timerslack_ns"), "50000\n").unwrap();
            fs::create_dir_all(root.join(pid.to_string()).join("task").join(t.to_string())).unwrap();
        }
    }

    #[test]
    fn stat_names_with_spaces_and_parentheses_parse() {
        let s = Stat::parse(&stat(7, "a (b) c", 0x40, 1)).unwrap();
        assert_eq!((s.comm.as_str(), s.flags, s.nice, s.rt_priority, s.policy), ("a (b) c", 0x40, -5, 80, 1));
        assert_eq!((s.state, s.processor), ('S', 0));
    }

    #[test]
    fn targets_resolve_and_bad_ones_are_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fake(p, 100, &[101, 102], "app", 0);
        fake(p, 200, &[], "twin", 0);
        fake(p, 300, &[], "twin", 0);
        fake(p, 2, &[], "kthreadd", PF_KTHREAD);
        fake(p, 400, &[], "rtick", 0);
        let t = Target::resolve_in(p, &Spec::Pid(100), 400).unwrap();
        assert_eq!((t.pid, t.comm.as_str(), t.whole_process), (100, "app", true));
        assert_eq!(t.threads(p), vec![100, 101, 102]);
        let t = Target::resolve_in(p, &Spec::Tids(vec![102]), 400).unwrap();
        assert_eq!((t.pid, t.threads(p)), (100, vec![102]));
        fs::write(p.join("102/stat"), stat(102, "app", 0, 1).replace(" S ", " Z ")).unwrap();
        assert_eq!(t.threads(p), Vec::<i32>::new(), "a zombie has exited");
        // Its pid reused by another process, started later: the target has exited.
        let t = Target::resolve_in(p, &Spec::Pid(100), 400).unwrap();
        assert_eq!(t.threads(p).len(), 2);
        let later: Vec<String> = stat(100, "app", 0, 1).split(' ').map(String::from).collect();
        let later: Vec<String> =
            later.iter().enumerate().map(|(i, v)| if i == 21 { "777".into() } else { v.clone() }).collect();
        fs::write(p.join("100/stat"), later.join(" ")).unwrap();
        assert_eq!(t.threads(p), Vec::<i32>::new(), "another process has its pid");
        assert_eq!(Target::resolve_in(p, &Spec::Comm("app".into()), 400).unwrap().pid, 100);
        let err = |s: Spec| Target::resolve_in(p, &s, 400).unwrap_err().to_string();
        assert!(err(Spec::Pid(999)).starts_with("no process or thread 999"));
        assert_eq!(
            err(Spec::Comm("twin".into())),
            "2 processes are named \"twin\" (pids 200, 300): attach to one of them by pid"
        );
        assert!(err(Spec::Comm("nobody".into())).starts_with("no process is named \"nobody\""));
        assert!(err(Spec::Pid(2)).starts_with("2 (kthreadd) is a kernel thread"));
        assert!(err(Spec::Pid(400)).starts_with("400 is rtick's own process"));
        assert_eq!(
            Target::resolve_in(p, &Spec::Comm("rtick".into()), 400).unwrap_err(),
            TargetError::NoSuchComm("rtick".into())
        );
    }

    #[test]
    fn thread_info_reads_policy_affinity_and_slack() {
        let d = tempfile::tempdir().unwrap();
        fake(d.path(), 100, &[], "app", 0);
        let i = ThreadInfo::read(d.path(), 100).unwrap();
        assert_eq!((i.tgid, i.affinity.clone(), i.timer_slack_ns), (100, vec![0, 1], Some(50_000)));
        assert_eq!(i.policy_text(), "SCHED_FIFO 80");
        assert_eq!(i.kernel_prio(), 19);
        assert_eq!(ThreadInfo::running_on(d.path(), 100), None, "it sleeps (S)");
        let running = stat(100, "app", 0, 1).replacen(" S ", " R ", 1);
        let f: Vec<&str> = running.split_whitespace().collect();
        let on_1 = f.iter().enumerate().map(|(i, v)| if i == 38 { "1" } else { v }).collect::<Vec<_>>().join(" ");
        fs::write(d.path().join("100/stat"), on_1).unwrap();
        assert_eq!(ThreadInfo::running_on(d.path(), 100), Some(1));
        assert!(!i.has_slack_policy());
        let me = ThreadInfo::read(Path::new("/proc"), std::process::id() as i32).unwrap();
        assert!(!me.affinity.is_empty() && me.timer_slack_ns.is_some());
    }
}
