//! A task's name as trace events record it.

use std::fmt;

/// A task name (`comm`): up to 16 bytes, not necessarily UTF-8.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Comm([u8; 16]);

impl Comm {
    /// From the bytes of a `comm` field (cut at 16 bytes and at the first NUL).
    pub fn new(bytes: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let n = bytes.iter().take(16).position(|&b| b == 0).unwrap_or(bytes.len().min(16));
        c[..n].copy_from_slice(&bytes[..n]);
        Comm(c)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        &self.0[..n]
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}
