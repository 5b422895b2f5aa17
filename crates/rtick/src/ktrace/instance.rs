//! A tracefs instance of rtick's own: `instances/<name>` under the tracefs
//! root, with its own ring buffers, clock, CPU mask and events. The global
//! trace (top-level `tracing_on`, `current_tracer`, events) and every other
//! instance are never touched, so rtick runs beside trace-cmd, rtla, perf or
//! a second rtick. The instance is removed (tracing off, events off, rmdir)
//! by [`Instance::remove`] or on drop.

use std::fs::OpenOptions;
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

use super::{Error, Result};

/// Counters of one CPU's ring buffer, from `per_cpu/cpuN/stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Events still in the buffer, unread.
    pub entries: u64,
    /// Events overwritten before they were read (the buffer was full).
    pub overrun: u64,
    /// Events lost while a writer was interrupted across a page boundary.
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (when it does not overwrite).
    pub dropped: u64,
    /// Events read by consuming reads (`trace_pipe_raw`).
    pub read: u64,
}

impl BufferStats {
    /// Parses the text of `per_cpu/cpuN/stats`.
    pub fn parse(text: &str) -> Result<BufferStats, String> {
        let get = |key: &str| -> Result<u64, String> {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
                .ok_or_else(|| format!("no `{key}` line"))?
                .parse()
                .map_err(|e| format!("`{key}`: {e}"))
        };
        Ok(BufferStats {
            entries: get("entries")?,
            overrun: get("overrun")?,
            commit_overrun: get("commit overrun")?,
            dropped: get("dropped events")?,
            read: get("read events")?,
        })
    }
}

/// rtick's instance directory; removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    removed: bool,
}

impl Instance {
    /// Checks that `tracefs` is a mounted tracefs this process may use, and
    /// creates `instances/<name>` in it. An existing instance of that name is
    /// an error, never reused: it may belong to another process.
    pub fn create(tracefs: &Path, name: &str) -> Result<Instance> {
        check_tracefs(tracefs)?;
        let dir = tracefs.join("instances").join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok(Instance { dir, removed: false }),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(Error::InstanceExists(dir)),
            Err(e) if is_permission(&e) => Err(Error::NotPermitted { path: tracefs.to_path_buf(), os: e }),
            Err(e) => Err(Error::io(format!("mkdir {}", dir.display()), e)),
        }
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `events` directory (format files, enable switches, headers).
    pub fn events_dir(&self) -> PathBuf {
        self.dir.join("events")
    }

    /// Writes `value` to the instance's file `rel` (never truncating: some
    /// tracefs files clear the buffer when truncated).
    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        write_file(&self.dir.join(rel), value)
    }

    /// Reads the instance's file `rel` ([`read_whole`]).
    pub fn read(&self, rel: &str) -> Result<String> {
        let path = self.dir.join(rel);
        std::fs::File::open(&path).and_then(read_whole).map_err(|e| Error::io(format!("reading {}", path.display()), e))
    }

    /// Whether the instance has the file or directory `rel`.
    pub fn has(&self, rel: &str) -> bool {
        self.dir.join(rel).exists()
    }

    /// Selects the trace clock and checks the kernel took it.
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        let offered = self.read("trace_clock")?;
        if !offered.split_whitespace().any(|c| c.trim_matches(['[', ']']) == clock) {
            return Err(Error::Invalid(format!(
                "this kernel has no `{clock}` trace clock (it offers: {}); explaining latency needs Linux 4.10 or later",
                offered.trim()
            )));
        }
        self.write("trace_clock", clock)?;
        let now = self.read("trace_clock")?;
        if !now.split_whitespace().any(|c| c == format!("[{clock}]")) {
            return Err(Error::Invalid(format!("trace_clock did not switch to {clock}: {}", now.trim())));
        }
        Ok(())
    }

    /// Records only on `cpus`.
    pub fn set_cpumask(&self, cpus: &[usize]) -> Result<()> {
        self.write("tracing_cpumask", &cpumask(cpus))
    }

    /// The ring-buffer counters of `cpu`.
    pub fn buffer_stats(&self, cpu: usize) -> Result<BufferStats> {
        let rel = format!("per_cpu/cpu{cpu}/stats");
        BufferStats::parse(&self.read(&rel)?).map_err(|what| Error::Format { path: self.dir.join(rel), what })
    }

    /// Stops recording, disables every event and removes the directory.
    /// Idempotent; an instance someone else already removed counts as removed.
    /// Every file of the instance must be closed first (rmdir says EBUSY).
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        if !self.dir.exists() {
            self.removed = true;
            return Ok(());
        }
        // Off before rmdir, so nothing records while the kernel tears it down.
        self.write("tracing_on", "0")?;
        self.write("events/enable", "0")?;
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("rmdir {}", self.dir.display()), e)),
        }
        self.removed = true;
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; `remove` reports them to
        // callers who want to know.
        let _ = self.remove();
    }
}

/// Stops the instance at `dir` recording and removes it (gone already: done).
pub fn remove_instance(dir: &Path) -> Result<()> {
    Instance { dir: dir.to_path_buf(), removed: false }.remove()
}

/// A tracefs root: it exists, it is mounted (has `instances`), we may use it.
fn check_tracefs(root: &Path) -> Result<()> {
    for p in [root.to_path_buf(), root.join("instances")] {
        match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::NotMounted(root.to_path_buf())),
            Err(e) if is_permission(&e) => return Err(Error::NotPermitted { path: root.to_path_buf(), os: e }),
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(Error::NotMounted(root.to_path_buf())),
            Err(e) => return Err(Error::io(format!("stat {}", p.display()), e)),
        }
    }
    Ok(())
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

fn write_file(path: &Path, value: &str) -> Result<()> {
    let what = || format!("writing {value:?} to {}", path.display());
    let mut f = OpenOptions::new().write(true).open(path).map_err(|e| Error::io(what(), e))?;
    f.write_all(value.as_bytes()).map_err(|e| Error::io(what(), e))
}

/// A CPU mask as tracefs reads it: hexadecimal 32-bit groups, most
/// significant first, separated by commas.
pub fn cpumask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |&m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// The text of a tracefs file, read in one call where it fits 64 KiB.
/// Such a file (`per_cpu/cpuN/stats`) is made afresh at each read and
/// served from the offset asked for: read in pieces, as
/// `fs::read_to_string` does (a 32-byte probe first, for a file whose size
/// says 0), its lines come from texts of different lengths (`entries: 99999`
/// then `100000`) and are cut or lost.
fn read_whole(mut f: impl io::Read) -> io::Result<String> {
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_are_32_bit_groups_most_significant_first() {
        assert_eq!(cpumask(&[0]), "00000001");
        assert_eq!(cpumask(&[1, 3]), "0000000a");
        assert_eq!(cpumask(&[33, 0]), "00000002,00000001");
    }

    /// A file made afresh at each read, as tracefs's `stats`: each read
    /// serves, from the offset asked for, a text whose count went up by
    /// one (`entries: 99999`, then `100000`: a character longer).
    struct Regenerated {
        offset: usize,
        entries: u64,
    }

    impl io::Read for Regenerated {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let text = format!(
                "entries: {}\noverrun: 0\ncommit overrun: 0\nbytes: 2408\ndropped events: 0\nread events: 46\n",
                self.entries
            );
            self.entries += 1;
            let rest = text.as_bytes().get(self.offset..).unwrap_or_default();
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.offset += n;
            Ok(n)
        }
    }

    #[test]
    fn a_file_made_afresh_at_each_read_is_read_whole() {
        let text = read_whole(Regenerated { offset: 0, entries: 99_999 }).unwrap();
        assert_eq!(BufferStats::parse(&text).unwrap().entries, 99_999, "{text}");
        // Read in pieces, its lines are torn.
        let torn = io::read_to_string(Regenerated { offset: 0, entries: 99_999 }).unwrap();
        assert!(BufferStats::parse(&torn).is_err(), "{torn}");
    }

    #[test]
    fn buffer_stats_parse_from_the_kernel_text() {
        let text = "entries: 3\noverrun: 7\ncommit overrun: 1\nbytes: 2408\noldest event ts:  3873.357121\n\
now ts:  3873.445191\ndropped events: 2\nread events: 46\n";
        let s = BufferStats::parse(text).unwrap();
        assert_eq!(s, BufferStats { entries: 3, overrun: 7, commit_overrun: 1, dropped: 2, read: 46 });
        assert!(BufferStats::parse("entries: 3\n").is_err());
    }

    #[test]
    fn a_missing_or_unmounted_tracefs_says_how_to_mount_it() {
        let d = tempfile::tempdir().unwrap();
        for root in [d.path().join("absent"), d.path().to_path_buf()] {
            let e = Instance::create(&root, "rtick-1").unwrap_err();
            assert!(matches!(e, Error::NotMounted(_)), "{e}");
            let msg = e.to_string();
            assert!(msg.contains(&format!("mount -t tracefs nodev {}", root.display())), "{msg}");
            assert!(!msg.contains('\n'));
        }
    }

    #[test]
    fn no_permission_says_which_privilege_is_needed() {
        let e =
            Error::NotPermitted { path: "/sys/kernel/tracing".into(), os: io::Error::from_raw_os_error(libc::EACCES) };
        let msg = e.to_string();
        assert!(msg.contains("root") && msg.contains("CAP_DAC_OVERRIDE"), "{msg}");
        let lib: crate::Error = e.into();
        assert!(lib.is_permission(), "{lib}");
    }
}
