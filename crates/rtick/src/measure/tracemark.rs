//! The ftrace side of breaktrace, as cyclictest `-b --tracemark` does it:
//! when a wake-up exceeds the threshold, a line goes into `trace_marker` and
//! `tracing_on` is set to 0, so the kernel trace ends at the spike and shows
//! what delayed the thread. Both files are opened before the run; the break
//! writes them from a stack buffer, without allocating.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ktrace;
use crate::time::Nanos;
use crate::wait::Mechanism;

/// Open `trace_marker` and `tracing_on` of the tracefs instance.
#[derive(Debug)]
pub struct TraceMark {
    dir: PathBuf,
    marker: File,
    tracing_on: File,
    was_on: Option<bool>,
}

impl TraceMark {
    /// Opens the files in `dir` (a tracefs directory, or an instance in
    /// one), or when `None` in the tracefs root that `--explain` uses
    /// ([`ktrace::root`]). Nothing is mounted or written.
    pub fn open(dir: Option<&Path>) -> Result<TraceMark> {
        let root = ktrace::root(dir);
        let open = |name: &str| {
            OpenOptions::new().write(true).open(root.join(name)).map_err(|e| open_error(&root, name, dir.is_some(), e))
        };
        let (marker, tracing_on) = (open("trace_marker")?, open("tracing_on")?);
        let was_on = std::fs::read_to_string(root.join("tracing_on")).ok().map(|s| s.trim() != "0");
        Ok(TraceMark { dir: root, marker, tracing_on, was_on })
    }

    /// The tracefs directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether tracing was on when opened (`None`: unreadable). When it was
    /// off there is no trace for the mark to end.
    pub fn was_on(&self) -> Option<bool> {
        self.was_on
    }

    /// Writes the mark and stops tracing. No allocation.
    pub(crate) fn hit(
        &self,
        mechanism: Mechanism,
        thread: usize,
        cycle: u64,
        latency: Nanos,
        threshold: Nanos,
    ) -> bool {
        let mut buf = [0u8; 192];
        let len = {
            let mut w: &mut [u8] = &mut buf;
            let _ = writeln!(
                w,
                "rtick: hit latency threshold ({} > {} ns): {} T{} cycle {}",
                latency.as_ns(),
                threshold.as_ns(),
                mechanism.name(),
                thread,
                cycle
            );
            192 - w.len()
        };
        let marked = (&self.marker).write_all(&buf[..len]).is_ok();
        let stopped = (&self.tracing_on).write_all(b"0").is_ok();
        marked && stopped
    }
}

/// Why `name` in the tracefs directory `dir` (`explicit`: given by the
/// user) could not be opened, in the words `--explain` uses for tracefs.
fn open_error(dir: &Path, name: &str, explicit: bool, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::PermissionDenied => ktrace::Error::NotPermitted { path: dir.to_path_buf(), os: e }.into(),
        ErrorKind::NotFound if !explicit || !dir.is_dir() => ktrace::Error::NotMounted(dir.to_path_buf()).into(),
        ErrorKind::NotFound => Error::sys(
            format!("open({})", dir.join(name).display()),
            e,
            format!("{} is not a tracefs directory", dir.display()),
        ),
        _ => Error::sys(format!("open({})", dir.join(name).display()), e, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_stops_in_a_fake_tracefs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("trace_marker"), "").unwrap();
        std::fs::write(d.path().join("tracing_on"), "1\n").unwrap();
        let t = TraceMark::open(Some(d.path())).unwrap();
        assert_eq!(t.was_on(), Some(true));
        assert!(t.hit(Mechanism::ClockNanosleep, 1, 42, Nanos(123_456), Nanos::from_us(100)));
        let mark = std::fs::read_to_string(d.path().join("trace_marker")).unwrap();
        assert_eq!(mark, "rtick: hit latency threshold (123456 > 100000 ns): clock_nanosleep T1 cycle 42\n");
        assert!(std::fs::read_to_string(d.path().join("tracing_on")).unwrap().starts_with('0'));
    }

    #[test]
    fn a_directory_without_the_files_is_a_one_line_error() {
        let d = tempfile::tempdir().unwrap();
        let e = TraceMark::open(Some(d.path())).unwrap_err().to_string();
        assert!(e.contains("trace_marker") && e.contains("is not a tracefs directory"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn a_missing_directory_is_not_mounted_and_a_refusal_is_a_permission() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("tracing");
        let e = TraceMark::open(Some(&gone)).unwrap_err().to_string();
        assert!(e.contains("mount -t tracefs nodev"), "{e}");
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let e = open_error(d.path(), "trace_marker", false, denied);
        assert!(e.is_permission(), "{e}");
        assert!(e.to_string().contains("CAP_DAC_OVERRIDE") && !e.to_string().contains("mount"), "{e}");
    }
}
