//! Two outputs of one command must not be one file: the second written
//! would replace the first, which would be lost without a word.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::atomic::{STDERR_NAMES, STDOUT_NAMES};
use crate::Usage;

/// What a destination names: an existing file's inode, or for a file yet to
/// be created, its name in its directory resolved (`./x.json` is `x.json`).
#[derive(PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    New(PathBuf),
}

/// The file `dest` would write; `None` for what may be shared: standard
/// output (one output only, checked by [`super::atomic::AtomicFile`]) or
/// error, and special files written in place (/dev/null, a FIFO).
fn identity(dest: &Path) -> Option<Identity> {
    let name = dest.to_str();
    if name.is_some_and(|n| STDOUT_NAMES.contains(&n) || STDERR_NAMES.contains(&n)) {
        return None;
    }
    match std::fs::metadata(dest) {
        Ok(m) if m.is_file() => Some(Identity::Inode(m.dev(), m.ino())),
        Ok(_) => None,
        Err(_) => {
            // A dangling symlink: its target is what gets created, as AtomicFile does.
            let parent = || dest.parent().unwrap_or(Path::new(""));
            let target = std::fs::read_link(dest).map_or_else(|_| dest.to_path_buf(), |t| parent().join(t));
            let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            Some(Identity::New(dir.join(target.file_name()?)))
        }
    }
}

/// Checks that no two of `outputs` (option, path) name the same file, also
/// through a symlink, a hard link or another spelling of the path.
pub fn check(outputs: &[(&str, Option<&Path>)]) -> Result<(), Usage> {
    let given: Vec<(&str, &Path, Identity)> =
        outputs.iter().filter_map(|(o, p)| p.and_then(|p| Some((*o, p, identity(p)?)))).collect();
    for (i, (option, path, id)) in given.iter().enumerate() {
        if let Some((first, first_path, _)) = given[..i].iter().find(|g| g.2 == *id) {
            return Err(Usage(format!(
                "{option}: {} is the same file as {first} {}; give each output its own file",
                path.display(),
                first_path.display()
            )));
        }
    }
    Ok(())
}
