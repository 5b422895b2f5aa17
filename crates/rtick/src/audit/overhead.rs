//! What the kernel adds to every entry and every lock: debug options built
//! in, and the CPU-vulnerability mitigations paid on each system call and
//! interrupt. A timing loop enters the kernel at least once per period.

use super::read::Context;
use super::{Finding, Status};

/// Debug options that make locking, allocation or interrupt toggling
/// markedly slower, with what they do.
const HEAVY_DEBUG: &[(&str, &str)] = &[
    ("CONFIG_PROVE_LOCKING", "lock dependency checking on every lock"),
    ("CONFIG_DEBUG_LOCK_ALLOC", "lock allocation tracking"),
    ("CONFIG_LOCK_STAT", "lock statistics"),
    ("CONFIG_KASAN", "address sanitizer on every memory access"),
    ("CONFIG_KCSAN", "data-race sanitizer"),
    ("CONFIG_DEBUG_PAGEALLOC_ENABLE_DEFAULT", "page unmapping on every free"),
    ("CONFIG_DEBUG_OBJECTS", "object lifetime tracking"),
    ("CONFIG_SLUB_DEBUG_ON", "slab poisoning and checks on"),
    ("CONFIG_DEBUG_KMEMLEAK", "leak scanning"),
    ("CONFIG_IRQSOFF_TRACER", "a hook on every interrupt disable/enable"),
    ("CONFIG_PREEMPT_TRACER", "a hook on every preemption disable/enable"),
];

/// Mitigation strings (from /sys/devices/system/cpu/vulnerabilities) that
/// cost time on each kernel entry or exit.
const COSTLY: &[&str] =
    &["PTI", "Clear CPU buffers", "Safe RET", "untrained return thunk", "Retpolines", "Stuffing", "IBRS"];

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    out.push(match &ctx.config {
        None => Finding::unreadable("kernel.debug_options", "the kernel config", &["/proc/config.gz", "/boot/config-*"]),
        Some(c) => {
            let on: Vec<String> =
                HEAVY_DEBUG.iter().filter(|(k, _)| c.is_y(k)).map(|(k, what)| format!("{k} ({what})")).collect();
            if on.is_empty() {
                Finding::new("kernel.debug_options", Status::Ok, "no latency-heavy debug options built in")
                    .evidence(format!("{}: none of {}", c.source, HEAVY_DEBUG.len()))
            } else {
                Finding::new(
                    "kernel.debug_options",
                    Status::Warn,
                    format!("a debug kernel: {} built in", crate::text::count(on.len() as u64, "latency-heavy option")),
                )
                .evidence(format!("{}: {}", c.source, on.join(", ")))
                .impact("locking, allocation and interrupt toggling are slower everywhere in the kernel: wake-ups and their tails are longer")
                .remedy("boot a production kernel without these options for timing work")
            }
        }
    });

    let dir = ctx.root.path("/sys/devices/system/cpu/vulnerabilities");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        out.push(Finding::unreadable(
            "kernel.mitigations",
            "CPU vulnerability mitigations",
            &["/sys/devices/system/cpu/vulnerabilities"],
        ));
        return;
    };
    let mut costly: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let state = std::fs::read_to_string(e.path()).ok()?;
            let state = state.trim();
            let paid = state.starts_with("Mitigation")
                && COSTLY.iter().any(|c| state.contains(c) && !(*c == "IBRS" && is_cheap_ibrs(state)));
            paid.then(|| format!("{}: {state}", e.file_name().to_string_lossy()))
        })
        .collect();
    costly.sort();
    let off = ctx.param("mitigations").is_some_and(|v| v == "off");
    out.push(if costly.is_empty() {
        Finding::new("kernel.mitigations", Status::Ok, "no costly CPU-vulnerability mitigation on kernel entry").evidence(
            format!("/sys/devices/system/cpu/vulnerabilities: none of {}{}", COSTLY.join(", "), if off { "; mitigations=off" } else { "" }),
        )
    } else {
        Finding::new(
            "kernel.mitigations",
            Status::Info,
            costly_title(costly.len()),
        )
        .evidence(costly.join("; "))
        .impact("each system call and interrupt pays for them (from a few hundred ns to µs): a timing loop enters the kernel at least once per period")
        .remedy("mitigations=off on the kernel command line, only on a machine that runs no untrusted code")
    });
}

/// The finding's title: the verb agrees with "entry", whatever the count.
fn costly_title(n: usize) -> String {
    format!("every kernel entry pays for {}", crate::text::count(n as u64, "CPU-vulnerability mitigation"))
}

/// Enhanced/automatic IBRS is set once and costs nothing per entry; only
/// legacy IBRS, written on every entry, is costly.
fn is_cheap_ibrs(state: &str) -> bool {
    let legacy = state.replace("Enhanced / Automatic IBRS", "").replace("Enhanced IBRS", "").replace("eIBRS", "");
    !legacy.contains("IBRS")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_title_reads_right_for_one_mitigation_or_several() {
        assert_eq!(super::costly_title(1), "every kernel entry pays for 1 CPU-vulnerability mitigation");
        assert_eq!(super::costly_title(3), "every kernel entry pays for 3 CPU-vulnerability mitigations");
    }
}
