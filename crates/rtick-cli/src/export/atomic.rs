//! A file that appears under its name only when completely written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

/// A temporary file beside its destination; renamed there by [`AtomicFile::commit`],
/// removed if dropped uncommitted; named `.NAME.<pid>.XXXXXX.rtick-tmp`, so
/// that one left by an rtick killed with SIGKILL is known and removed by the
/// next rtick that writes into the directory. A destination that is not a regular file
/// (a pipe, a terminal, /dev/null) is written directly: it cannot be
/// replaced, and must not be. `-` (or /dev/stdout) is standard output, and
/// the program's report for people then goes to standard error.
/// The names of standard output: one output may go there.
pub const STDOUT_NAMES: [&str; 4] = ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"];
/// The names of standard error, written in place.
pub const STDERR_NAMES: [&str; 3] = ["/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"];

#[derive(Debug)]
pub struct AtomicFile {
    out: Out,
    dest: PathBuf,
}

#[derive(Debug)]
enum Out {
    Temp(NamedTempFile),
    /// Standard output or error, shared with the program's own printing.
    Std(File),
    Direct(File),
}

impl AtomicFile {
    /// Creates the temporary file now, so that an unwritable path is found
    /// before anything runs. The error names the option.
    pub fn create(option: &str, dest: &Path) -> Result<AtomicFile, String> {
        let cannot = |e: std::io::Error| {
            // tempfile appends the temporary file's path: not the user's concern.
            let e = e.to_string();
            format!("{option}: cannot write {}: {}", dest.display(), e.split(" at path ").next().unwrap_or(&e))
        };
        match dest.to_str() {
            Some(n) if STDOUT_NAMES.contains(&n) => {
                // The report for people moves to stderr; one output may have stdout.
                static TAKEN: AtomicBool = AtomicBool::new(false);
                if TAKEN.swap(true, Ordering::SeqCst) {
                    return Err(format!("{option}: only one output can go to standard output"));
                }
                let fd = rtick::system::divert_stdout_to_stderr().map_err(cannot)?;
                return Ok(AtomicFile { out: Out::Std(File::from(fd)), dest: dest.to_path_buf() });
            }
            Some(n) if STDERR_NAMES.contains(&n) => {
                let fd = std::io::stderr().as_fd().try_clone_to_owned().map_err(cannot)?;
                return Ok(AtomicFile { out: Out::Std(File::from(fd)), dest: dest.to_path_buf() });
            }
            _ => {}
        }
        if dest.is_dir() {
            return Err(format!("{option}: {} is a directory; give a file name", dest.display()));
        }
        // An existing destination: a special file is written in place; a
        // symlink to a regular file is replaced at its target.
        let target = match std::fs::metadata(dest) {
            Ok(m) if !m.is_file() => {
                let f = OpenOptions::new().write(true).open(dest).map_err(cannot)?;
                return Ok(AtomicFile { out: Out::Direct(f), dest: dest.to_path_buf() });
            }
            Ok(_) => dest.canonicalize().map_err(cannot)?,
            // A dangling symlink: create its target.
            Err(_) => match std::fs::read_link(dest) {
                Ok(t) => dest.parent().unwrap_or(Path::new(".")).join(t),
                Err(_) => dest.to_path_buf(),
            },
        };
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // What a killed rtick left here goes first: its pid, in the name, is dead.
        rtick::leftovers::temp_files(dir).iter().for_each(|t| drop(t.remove()));
        let tmp = tempfile::Builder::new()
            .prefix(&rtick::leftovers::temp_prefix(&name))
            .suffix(rtick::leftovers::TEMP_SUFFIX)
            .tempfile_in(dir)
            .map_err(|e| no_temp(option, dest, dir, e))?;
        Ok(AtomicFile { out: Out::Temp(tmp), dest: target })
    }

    /// [`AtomicFile::create`] for an optional path; the error is a usage error.
    pub fn create_opt(option: &str, dest: Option<&Path>) -> Result<Option<AtomicFile>, crate::Usage> {
        dest.map(|p| AtomicFile::create(option, p)).transpose().map_err(crate::Usage)
    }

    /// Writes `value` as pretty JSON with a final newline (commit separately).
    pub fn write_json<T: serde::Serialize>(&self, value: &T) -> Result<()> {
        if matches!(self.out, Out::Std(_)) {
            // Whatever the program printed to stderr comes first.
            let _ = std::io::stdout().flush();
        }
        // Buffered: the serializer writes token by token.
        let mut w = std::io::BufWriter::new(self.file());
        serde_json::to_writer_pretty(&mut w, value).context("writing the JSON file")?;
        writeln!(w).and_then(|()| w.flush()).context("writing the JSON file")
    }

    /// The open file (the temporary one, or the special file itself).
    pub fn file(&self) -> &File {
        match &self.out {
            Out::Temp(t) => t.as_file(),
            Out::Std(f) | Out::Direct(f) => f,
        }
    }

    /// A second handle to the file (for a writer thread).
    pub fn try_clone(&self) -> Result<File> {
        self.file().try_clone().context("duplicating an output file handle")
    }

    /// Flushes to disk and renames into place (a special file: flushes).
    pub fn commit(self) -> Result<()> {
        let dest = self.dest;
        match self.out {
            Out::Temp(tmp) => {
                // A temporary file is private (0600); the result gets the
                // mode of the file it replaces, or what the umask gives.
                let mode = std::fs::metadata(&dest).map(|m| m.permissions().mode()).unwrap_or(0o666 & !umask());
                tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode & 0o7777)).ok();
                tmp.as_file().sync_all().with_context(|| format!("writing {}", dest.display()))?;
                tmp.persist(&dest).map_err(|e| e.error).with_context(|| format!("renaming into {}", dest.display()))?;
            }
            Out::Std(mut f) | Out::Direct(mut f) => f.flush().with_context(|| format!("writing {}", dest.display()))?,
        }
        Ok(())
    }
}

/// The error when no temporary file can be created beside `dest`: the
/// file is written whole under another name and renamed, so its directory
/// must take new files (/proc, /sys and read-only mounts do not).
fn no_temp(option: &str, dest: &Path, dir: &Path, e: std::io::Error) -> String {
    if !dir.is_dir() {
        return format!(
            "{option}: cannot create {}: the directory {} does not exist; create it or choose another",
            dest.display(),
            dir.display()
        );
    }
    let what = if dest.symlink_metadata().is_ok() { "cannot replace" } else { "cannot create" };
    // ENOENT in an existing directory: a filesystem such as /proc or /sys.
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "it takes no new files".to_string(),
        _ => e.to_string().split(" (os error").next().unwrap_or_default().to_lowercase(),
    };
    format!(
        "{option}: {what} {}: cannot create a temporary file in {} ({why}); write to a directory where files can be created",
        dest.display(),
        dir.display()
    )
}

/// This process's umask, from /proc/self/status (022 when unreadable).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Umask:").and_then(|v| u32::from_str_radix(v.trim(), 8).ok()))
        })
        .unwrap_or(0o022)
}
