//! The columns of the CSV trace (`measure --trace`): what the writer puts
//! in its header and what the reader expects there.

/// The CSV header.
pub const HEADER: [&str; 6] = ["thread", "mechanism", "cycle", "planned_ns", "actual_ns", "latency_ns"];
/// The columns `--explain` adds: each wake-up's kernel phases (empty when
/// it could not be matched to its kernel events).
pub const PHASE_HEADER: [&str; 4] = ["irq_delay_ns", "wakeup_path_ns", "scheduling_ns", "return_to_user_ns"];
