//! For the tests of kernel stacks: a task that spends its time in one
//! kernel function, made to order, and hidden kernel addresses.

use std::io::Read;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A thread reading `/dev/urandom` 8 MiB at a time on `cpu`, SCHED_OTHER,
/// named `rtick-urandom`: in the kernel nearly all the time, in
/// `get_random_bytes_user` (this kernel's `/dev/urandom` read: a ChaCha20
/// block at a time, `cond_resched` every page, so under preempt=none a
/// woken thread waits for that page). Returns its tid and the flag and
/// handle that stop it.
pub fn urandom_reader(cpu: usize) -> (i32, Arc<AtomicBool>, JoinHandle<()>) {
    let mut f = std::fs::File::open("/dev/urandom").unwrap();
    let mut buf = vec![0u8; 8 << 20];
    super::tracee::pinned_loop("rtick-urandom", cpu, move || f.read_exact(&mut buf).unwrap())
}

/// Restores `kernel.kptr_restrict` when dropped (also when the test fails).
pub struct KptrRestrict(String);

impl KptrRestrict {
    pub const PATH: &str = "/proc/sys/kernel/kptr_restrict";

    pub fn set(value: &str) -> KptrRestrict {
        let before = std::fs::read_to_string(Self::PATH).unwrap();
        std::fs::write(Self::PATH, value).unwrap();
        KptrRestrict(before.trim().to_string())
    }
}

impl Drop for KptrRestrict {
    fn drop(&mut self) {
        std::fs::write(Self::PATH, &self.0).unwrap();
    }
}

/// The frames of a JSON object's `stack` (none when absent).
pub fn frames(s: &serde_json::Value) -> Vec<String> {
    let list = s.get("stack").and_then(|f| f.as_array()).cloned().unwrap_or_default();
    list.iter().map(|f| f.as_str().unwrap().to_string()).collect()
}

/// The function of a named frame (`name+0xOFFSET`).
pub fn function(frame: &str) -> &str {
    frame.split('+').next().unwrap()
}
