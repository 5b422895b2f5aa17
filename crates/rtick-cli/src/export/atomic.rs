//! A file that appears under its name only when completely written.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

/// A temporary file beside its destination; renamed there by [`AtomicFile::commit`],
/// removed if dropped uncommitted.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file now, so that an unwritable path is found
    /// before anything runs. The error names the option.
    pub fn create(option: &str, dest: &Path) -> Result<AtomicFile, String> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if dest.is_dir() {
            return Err(format!("{option}: {} is a directory; give a file name", dest.display()));
        }
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".rtick-tmp")
            .tempfile_in(dir)
            .map_err(|e| format!("{option}: cannot write {}: {e}", dest.display()))?;
        Ok(AtomicFile { tmp, dest: dest.to_path_buf() })
    }

    /// [`AtomicFile::create`] for an optional path; the error is a usage error.
    pub fn create_opt(option: &str, dest: Option<&Path>) -> Result<Option<AtomicFile>, crate::Usage> {
        dest.map(|p| AtomicFile::create(option, p)).transpose().map_err(crate::Usage)
    }

    /// Writes `value` as pretty JSON with a final newline (commit separately).
    pub fn write_json<T: serde::Serialize>(&self, value: &T) -> Result<()> {
        use std::io::Write;
        serde_json::to_writer_pretty(self.file(), value).context("writing the JSON file")?;
        writeln!(self.file()).context("writing the JSON file")
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// A second handle to the temporary file (for a writer thread).
    pub fn try_clone(&self) -> Result<File> {
        self.tmp.as_file().try_clone().context("duplicating an output file handle")
    }

    /// Flushes to disk and renames into place.
    pub fn commit(self) -> Result<()> {
        self.tmp.as_file().sync_all().with_context(|| format!("writing {}", self.dest.display()))?;
        let dest = self.dest.clone();
        self.tmp.persist(&dest).map_err(|e| e.error).with_context(|| format!("renaming into {}", dest.display()))?;
        Ok(())
    }
}
