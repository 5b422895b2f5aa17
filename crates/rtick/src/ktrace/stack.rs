//! The kernel stack of whatever held a CPU when a thread's wake-up was due.
//!
//! A timer wakes a sleeping thread from its callback, in the timer
//! interrupt: `timer:hrtimer_expire_entry` fires there, at the moment the
//! wake-up is due (or as soon as interrupts let it). A stack taken at that
//! event runs through the interrupt's own frames into the context it
//! interrupted — the task in the kernel that held the CPU (and, under a
//! non-preemptible kernel, goes on holding it until its next `cond_resched`),
//! the code that had just enabled interrupts again, or the idle loop — or
//! ends at the interrupt entry when it interrupted user space.
//!
//! So the session sets a `stacktrace` trigger on that event (what `rtla
//! timerlat -s` reads, on any kernel with the ordinary events), filtered to
//! the callbacks that wake a thread ([`WAKE_CALLBACKS`]): once per wake-up
//! of a sleeping thread on the traced CPUs, not on every tick.
//! `sched_waking` filtered to the measured thread would be as precise but
//! needs its thread id before the thread exists; `sched_switch` comes after
//! the culprit left the CPU. The kernel records the stack right after the
//! event it belongs to, on the same CPU, as a `ftrace:kernel_stack` record
//! (`int size; unsigned long caller[size]`, though its format file says 8).
//!
//! Where no stack comes: mainline has no exit for an idle CPU on this
//! path (the interrupt's entry makes RCU watch in the idle task,
//! `irqentry_enter` → `ct_irq_enter`; `__trace_stack` records whenever RCU
//! watches; ORC unwinds the idle task's stack), but this VM's kernel, a
//! sandbox build of 6.18, leaves some tasks out of a tracefs instance: for
//! the idle tasks and the VM agent's threads (pid 1's) it records no event
//! in their own context (no `sched_switch` away from idle, no
//! `power:cpu_idle`: 0 of 19,404 switches from idle, where the 19,404 to
//! it were recorded), and in an interrupt that came in while one of them
//! ran it records the event but not its stack — except for the boot CPU's
//! idle task (pid 0 of CPU 0), whose stacks are all recorded. So a wake-up
//! on an idle CPU 1 has no stack (0 of 39,932), one on an idle CPU 0 always
//! has one (98 of 98). No other trigger point does better: the instance's
//! `stacktrace` option instead of the trigger, and stacks at
//! `local_timer_entry`, `irq_handler_entry`, `sched_waking` and
//! `softirq_entry`, are missing alike. The spike's IRQ-delay culprit says
//! `idle` then.
//!
//! Named frames need `/proc/kallsyms`, and so does the filter: when it
//! hides the addresses (`kernel.kptr_restrict`), no trigger is set and the
//! reason is given instead.
//!
//! The same trigger goes on another event with another filter
//! ([`StackTrigger::on`]): `rtick noise` takes the stack at each switch
//! back to a spinner, that of the task that gave the CPU back
//! ([`Stream::record_stacks`](super::Stream::record_stacks)).

use std::collections::HashSet;
use std::sync::Arc;

use super::events::{Decoder, Tracepoint};
use super::format::{EventFormat, Field};
use super::instance::Instance;
use super::kallsyms::{self, Kallsyms};
use super::Result;

/// The hrtimer callbacks that wake a thread: sleeps, `poll`/`select`/
/// `epoll` and futex timeouts (`hrtimer_wakeup`), timerfd, POSIX timers,
/// `ITIMER_REAL` and SCHED_DEADLINE's replenishment.
pub const WAKE_CALLBACKS: [&str; 5] =
    ["hrtimer_wakeup", "timerfd_tmrproc", "posix_timer_fn", "it_real_fn", "dl_task_timer"];

/// Distinct stacks kept for sharing before the set starts afresh: a monitor
/// runs for months and an interrupted task is seldom at the same address twice.
const INTERNED_MAX: usize = 4096;

/// A `stacktrace` trigger on an event, filtered, as written to the
/// instance's trigger file of the event: by default on
/// `hrtimer_expire_entry` for the wake-up callbacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackTrigger {
    event: Tracepoint,
    command: String,
}

impl StackTrigger {
    /// The trigger for the callbacks of [`WAKE_CALLBACKS`] that `k` names
    /// (a kernel may lack some); `Err` says why there is none. `only`: the
    /// CPUs it fires on, when the session records others (for the IPIs
    /// they send: a trigger fires whatever its event's filter).
    pub fn new(k: &Kallsyms, only: Option<&[usize]>) -> Result<StackTrigger, String> {
        let addrs: Vec<String> =
            WAKE_CALLBACKS.iter().filter_map(|f| k.address(f)).map(|a| format!("function == {a:#x}")).collect();
        if addrs.is_empty() {
            return Err(format!("/proc/kallsyms names none of {}", WAKE_CALLBACKS.join(", ")));
        }
        let callbacks = addrs.join(" || ");
        let filter = match only {
            None => callbacks,
            Some(cpus) => {
                let here = cpus.iter().map(|c| format!("CPU == {c}")).collect::<Vec<_>>().join(" || ");
                format!("({callbacks}) && ({here})")
            }
        };
        Ok(StackTrigger::on(Tracepoint::HrtimerExpireEntry, &filter))
    }

    /// A stack at each `event` that `filter` (the kernel's filter syntax,
    /// over the event's fields) lets through.
    pub fn on(event: Tracepoint, filter: &str) -> StackTrigger {
        StackTrigger { event, command: format!("stacktrace if {filter}") }
    }

    /// What is written to the trigger file.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The event it is set on.
    pub fn event(&self) -> Tracepoint {
        self.event
    }

    /// The trigger file of its event, in an instance.
    fn file(&self) -> String {
        format!("events/{}/{}/trigger", self.event.system(), self.event.name())
    }

    /// Sets the trigger in `instance`.
    pub(super) fn arm(&self, instance: &Instance) -> Result<()> {
        instance.write(&self.file(), &self.command)
    }

    /// Removes it (the instance's removal does too).
    pub(super) fn disarm(&self, instance: &Instance) -> Result<()> {
        instance.write(&self.file(), "!stacktrace")
    }
}

/// The frames of a `kernel_stack` record: `size` of them from `caller` on,
/// as many as the record holds. Older kernels padded the array to 8 with
/// zeros, or ended it with `ULONG_MAX`: neither is a frame.
pub(super) fn frames(size: &Field, caller: &Field, payload: &[u8]) -> Option<Vec<u64>> {
    // `unsigned long`: the kernel traced is the one we run on.
    const WORD: usize = std::mem::size_of::<usize>();
    const END: u64 = usize::MAX as u64;
    let n = usize::try_from(size.i64(payload)?).ok()?;
    let bytes = payload.get(usize::from(caller.offset)..)?;
    let word = |c: &[u8]| {
        let mut b = [0u8; 8];
        b[..WORD].copy_from_slice(c);
        // Native order: the low bytes come first only on little-endian machines.
        if cfg!(target_endian = "big") && WORD == 4 {
            u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            u64::from_ne_bytes(b)
        }
    };
    let all = bytes.chunks_exact(WORD).take(n).map(word);
    Some(all.take_while(|&a| a != END).filter(|&a| a != 0).collect())
}

/// Identical stacks shared (an idle CPU is interrupted at the same place
/// every time).
#[derive(Clone, Debug, Default)]
pub(super) struct Interned(HashSet<Arc<[u64]>>);

impl Interned {
    /// The shared copy of `frames`.
    pub(super) fn get(&mut self, frames: Vec<u64>) -> Arc<[u64]> {
        if let Some(a) = self.0.get(frames.as_slice()) {
            return Arc::clone(a);
        }
        if self.0.len() >= INTERNED_MAX {
            self.0.clear();
        }
        let a: Arc<[u64]> = frames.into();
        self.0.insert(Arc::clone(&a));
        a
    }
}

/// A stack's frames named from `/proc/kallsyms` (`function+0xOFFSET`),
/// innermost first.
pub fn named(frames: &[u64]) -> Vec<String> {
    frames.iter().map(|&a| kallsyms::describe(a)).collect()
}

/// Of a stack's named frames, those of the context the timer interrupt
/// came in: the frames after the interrupt's entry (x86's `asm_sysvec_…`,
/// `asm_common_interrupt`), none when it came in user space; all of them
/// when no entry frame is seen (another architecture).
pub fn interrupted(named: &[String]) -> &[String] {
    match named.iter().position(|n| n.starts_with("asm_")) {
        Some(i) => &named[i + 1..],
        None => named,
    }
}

/// Whether a stack's named frames show its interrupt came in user space:
/// an interrupt entry (`asm_…`) with no frame of the interrupted context
/// after it. Unnamed frames (no kallsyms) never say so.
pub fn came_in_user_space(named: &[String]) -> bool {
    named.iter().any(|n| n.starts_with("asm_")) && interrupted(named).is_empty()
}

/// The innermost `n` frames of the interrupted context in one line,
/// without offsets (`chacha_permute ← get_random_bytes_user ← vfs_read`),
/// or where it was when it has none.
pub fn summary(named: &[String], n: usize) -> String {
    let frames = interrupted(named);
    if frames.is_empty() {
        return "in user space (the interrupt came there)".to_string();
    }
    line(frames, n)
}

/// The innermost `n` of `frames` in one line, without offsets.
fn line(frames: &[String], n: usize) -> String {
    let mut s = frames.iter().take(n).map(|f| function(f)).collect::<Vec<_>>().join(" ← ");
    if frames.len() > n {
        s.push_str(" ← …");
    }
    s
}

/// The function of a named frame (`function+0xOFFSET`).
fn function(frame: &str) -> &str {
    frame.split('+').next().unwrap_or(frame)
}

/// Of the named frames of a stack taken at a `sched_switch`, those of the
/// task that called the scheduler: the frames after `__schedule` (the
/// tracepoint's and the scheduler's own come first); all of them when it
/// is not seen.
pub fn scheduling(named: &[String]) -> &[String] {
    match named.iter().position(|n| function(n) == "__schedule") {
        Some(i) => &named[i + 1..],
        None => named,
    }
}

/// A stack taken at a task's switch away in one line: the innermost `n`
/// frames of its call into the scheduler, without offsets
/// (`__cond_resched ← get_random_bytes_user ← vfs_read ← …`), or "in user
/// space" when it was preempted on its way back there from an interrupt.
pub fn switch_summary(named: &[String], n: usize) -> String {
    let frames = scheduling(named);
    if came_in_user_space(frames) {
        return "in user space (preempted on its return from an interrupt)".to_string();
    }
    line(frames, n)
}

/// Whether a session records stacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Stacks {
    /// Not asked for.
    Off,
    /// Recorded by this trigger, while it is set (from the start, or from
    /// [`Stacks::arm`] on).
    Ready(StackTrigger),
    /// Asked for, but not possible: why, in one line.
    Unavailable(String),
}

impl Stacks {
    /// Prepares the stack trigger in `instance` when `on`, and sets it when
    /// `armed` too (else [`Stacks::arm`] does, later), firing on `only`
    /// when given: see [`set_up`].
    pub(super) fn set_up(
        on: bool,
        armed: bool,
        instance: &Instance,
        decoder: &mut Decoder,
        missing: &[&str],
        only: Option<&[usize]>,
    ) -> Stacks {
        if !on {
            return Stacks::Off;
        }
        Stacks::set_up_on(instance, decoder, missing, armed, Tracepoint::HrtimerExpireEntry, |k| {
            StackTrigger::new(k, only)
        })
    }

    /// Prepares the trigger `make` builds (from the kernel's symbols) on
    /// `event` in `instance`, set at once when `armed`: see [`set_up`].
    pub(super) fn set_up_on(
        instance: &Instance,
        decoder: &mut Decoder,
        missing: &[&str],
        armed: bool,
        event: Tracepoint,
        make: impl FnOnce(&Kallsyms) -> Result<StackTrigger, String>,
    ) -> Stacks {
        match set_up(instance, decoder, missing, armed, event, make) {
            Ok(t) => Stacks::Ready(t),
            Err(why) => Stacks::Unavailable(why),
        }
    }

    /// Whether stacks are recorded while the trigger is set.
    pub(super) fn ready(&self) -> bool {
        matches!(self, Stacks::Ready(_))
    }

    /// Why there are no stacks, when they were asked for.
    pub(super) fn unavailable(&self) -> Option<&str> {
        match self {
            Stacks::Unavailable(why) => Some(why),
            _ => None,
        }
    }

    /// Sets the trigger (again after [`Stacks::disarm`]).
    pub(super) fn arm(&self, instance: &Instance) -> Result<()> {
        match self {
            Stacks::Ready(t) => t.arm(instance),
            _ => Ok(()),
        }
    }

    /// Removes the trigger for a while (an A/B's plain stretch, an
    /// attach's quiet spell). It returns once the kernel is done with the
    /// trigger: an RCU grace period, 70–170 ms measured here.
    pub(super) fn disarm(&self, instance: &Instance) -> Result<()> {
        match self {
            Stacks::Ready(t) => t.disarm(instance),
            _ => Ok(()),
        }
    }
}

/// Prepares the stack trigger `make` builds on `event` in `instance`,
/// whose events are enabled (this kernel lacking `missing`), sets it when
/// `armed`, and teaches `decoder` the stack records. `Err`: why a session
/// has no stacks, in one line; the session goes on.
fn set_up(
    instance: &Instance,
    decoder: &mut Decoder,
    missing: &[&str],
    armed: bool,
    event: Tracepoint,
    make: impl FnOnce(&Kallsyms) -> Result<StackTrigger, String>,
) -> Result<StackTrigger, String> {
    if missing.contains(&event.full_name()) {
        return Err(format!("this kernel lacks {event}, where they are taken"));
    }
    // Needed to name the frames, whatever the filter.
    let k = kallsyms::system().map_err(ToString::to_string)?;
    let tp = Tracepoint::KernelStack;
    let format = EventFormat::load(&instance.events_dir(), tp.system(), tp.name()).map_err(|e| e.to_string())?;
    decoder.add(tp, &format)?;
    let trigger = make(k)?;
    // Not set and removed again to try it when not armed: the removal
    // waits an RCU grace period, and the start would wait for it.
    if armed {
        trigger.arm(instance).map_err(|e| refused(&e))?;
    }
    Ok(trigger)
}

/// Why a session has no stacks when the kernel refused the trigger `e`.
pub fn refused(e: &super::Error) -> String {
    format!("the kernel refused the stacktrace trigger: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::events::Decoded;
    use crate::ktrace::page::RawRecord;
    use crate::ktrace::EventKind;

    /// This kernel's `ftrace:kernel_stack` format: it says 8 callers, a
    /// record holds `size`.
    fn format() -> EventFormat {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ktrace/events/ftrace/kernel_stack/format");
        EventFormat::parse("ftrace", &std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A record of `size` with `words` after the header (16 bytes: common
    /// fields, `size`, padding).
    fn record(id: u16, size: i32, words: &[u64]) -> Vec<u8> {
        let mut p = vec![0u8; 16];
        p[0..2].copy_from_slice(&id.to_ne_bytes());
        p[4..8].copy_from_slice(&77i32.to_ne_bytes());
        p[8..12].copy_from_slice(&size.to_ne_bytes());
        words.iter().for_each(|w| p.extend_from_slice(&w.to_ne_bytes()));
        p
    }

    fn frames_of(d: &mut Decoder, p: &[u8]) -> Arc<[u64]> {
        match d.decode(&RawRecord { ts: 1, payload: p }) {
            Decoded::Event(e) => match e.kind {
                EventKind::KernelStack { frames } => frames,
                k => panic!("{k:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_stack_record_holds_as_many_frames_as_its_size_says() {
        let f = format();
        assert_eq!(f.id(), 4, "TRACE_STACK on this kernel");
        let mut d = Decoder::new();
        d.add(Tracepoint::KernelStack, &f).unwrap();
        let a = [0xffff_ffff_8142_0500, 0xffff_ffff_8142_1000, 0xffff_ffff_8100_0010];
        // Three frames: shorter than the 8 of the format.
        let three = frames_of(&mut d, &record(4, 3, &a));
        assert_eq!(&three[..], &a[..]);
        // Twelve: longer than the format's 8.
        let twelve: Vec<u64> = (1..=12).map(|k| 0xffff_ffff_8100_0000 + k).collect();
        assert_eq!(&frames_of(&mut d, &record(4, 12, &twelve))[..], &twelve[..]);
        // Older kernels: padded to 8 with zeros, or ended by ULONG_MAX.
        let mut padded = a.to_vec();
        padded.resize(8, 0);
        assert_eq!(&frames_of(&mut d, &record(4, 8, &padded))[..], &a[..]);
        let mut ended = a.to_vec();
        ended.extend([u64::MAX, 0xffff_ffff_8100_0020]);
        assert_eq!(&frames_of(&mut d, &record(4, 5, &ended))[..], &a[..]);
        // A size beyond the record: the frames it holds.
        assert_eq!(&frames_of(&mut d, &record(4, 50, &a))[..], &a[..]);
        // The same stack twice is shared, not copied.
        let again = frames_of(&mut d, &record(4, 3, &a));
        assert!(Arc::ptr_eq(&three, &again));
        // No room for `size`: malformed, not a stack.
        assert_eq!(
            d.decode(&RawRecord { ts: 1, payload: &record(4, 3, &a)[..10] }),
            Decoded::Malformed(Tracepoint::KernelStack)
        );
    }

    /// Named frames, as [`named`] gives them.
    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_line_shows_the_interrupted_context() {
        let irq = ["__hrtimer_run_queues+0x10", "hrtimer_interrupt+0xf0", "asm_sysvec_apic_timer_interrupt+0x1a"];
        let mut hog = v(&irq);
        hog.extend(v(&["chacha_permute+0x33", "get_random_bytes_user+0x9c", "vfs_read+0xa1", "ksys_read+0x6f"]));
        assert_eq!(interrupted(&hog).len(), 4);
        assert_eq!(summary(&hog, 3), "chacha_permute ← get_random_bytes_user ← vfs_read ← …");
        assert_eq!(summary(&hog, 4), "chacha_permute ← get_random_bytes_user ← vfs_read ← ksys_read");
        assert_eq!(summary(&v(&irq), 4), "in user space (the interrupt came there)");
        assert!(came_in_user_space(&v(&irq)) && !came_in_user_space(&hog));
        assert!(!came_in_user_space(&v(&["ffffffff81000000", "ffffffff81000100"])), "unnamed");
        // No entry frame: all of them are the context.
        assert_eq!(summary(&v(&["a+0x1", "b"]), 4), "a ← b");
    }

    #[test]
    fn a_switch_stack_shows_the_task_s_call_into_the_scheduler() {
        let tp = ["trace_event_raw_event_sched_switch+0x11", "__traceiter_sched_switch+0x2", "__schedule+0x300"];
        let mut read = v(&tp);
        read.extend(v(&["__cond_resched+0x2", "get_random_bytes_user+0x9c", "vfs_read+0xa1", "ksys_read+0x6f"]));
        assert_eq!(scheduling(&read).len(), 4);
        assert_eq!(switch_summary(&read, 3), "__cond_resched ← get_random_bytes_user ← vfs_read ← …");
        let mut user = v(&tp);
        user.extend(v(&["schedule+0x1", "irqentry_exit_to_user_mode+0x40", "asm_sysvec_apic_timer_interrupt+0x1a"]));
        assert_eq!(switch_summary(&user, 5), "in user space (preempted on its return from an interrupt)");
        // No scheduler frame seen: all of them.
        assert_eq!(switch_summary(&v(&["a+0x1", "b"]), 5), "a ← b");
    }

    #[test]
    fn the_trigger_fires_for_the_wake_up_callbacks_the_kernel_has() {
        let k = Kallsyms::parse("ffffffff814204b0 t hrtimer_wakeup\nffffffff81500000 t timerfd_tmrproc\n").unwrap();
        let t = StackTrigger::new(&k, None).unwrap();
        assert_eq!(t.command(), "stacktrace if function == 0xffffffff814204b0 || function == 0xffffffff81500000");
        // A session that records other CPUs for their sends takes stacks on the measured ones only.
        let t = StackTrigger::new(&k, Some(&[1, 3])).unwrap();
        assert_eq!(
            t.command(),
            "stacktrace if (function == 0xffffffff814204b0 || function == 0xffffffff81500000) && (CPU == 1 || CPU == 3)"
        );
        assert_eq!(t.file(), "events/timer/hrtimer_expire_entry/trigger");
        let none = Kallsyms::parse("ffffffff81000000 T _stext\n").unwrap();
        assert!(StackTrigger::new(&none, None).unwrap_err().contains("hrtimer_wakeup"));
    }

    #[test]
    fn a_trigger_on_another_event_writes_that_event_s_file() {
        let t = StackTrigger::on(Tracepoint::SchedSwitch, "next_pid == 42 || next_pid == 43");
        assert_eq!(t.command(), "stacktrace if next_pid == 42 || next_pid == 43");
        assert_eq!((t.event(), t.file().as_str()), (Tracepoint::SchedSwitch, "events/sched/sched_switch/trigger"));
    }
}
