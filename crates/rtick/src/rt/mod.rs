//! Real-time setup: scheduling policy and priority, CPU affinity, memory
//! locking with prefaulting, `/dev/cpu_dma_latency`, cpuidle states, and
//! timer slack.
//!
//! Process-wide settings are held by guards that undo them on drop; per-thread
//! settings die with the measuring threads.

mod dma;
mod idle;
mod memory;
mod policy;
mod setup;

/// A child process that does not outlive rtick, even killed with SIGKILL; one confined to CPUs.
pub use crate::sys::child::{kill_with_parent, set_child_affinity};
pub use dma::{DmaLatency, DmaLatencyLimit, DMA_LATENCY_PATH, PM_QOS_DEFAULT_US};
pub use idle::{IdleLimit, IdleState, IdleStates};
pub use memory::{
    check_heap_prefault, check_stack_prefault, prefault_stack, stack_prefault_limit, MemoryLock, DEFAULT_HEAP_PREFAULT,
    DEFAULT_STACK_PREFAULT, MAX_SPAWNED_STACK_PREFAULT,
};
pub use policy::{probe, Policy, ThreadSetup};
pub use setup::{DeadlineParams, Setup, SetupGuard};
