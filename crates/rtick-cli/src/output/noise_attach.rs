//! What `rtick noise --attach TID` prints above the tables: the thread
//! followed, the CPUs traced for it, and what this mode cannot see.

use std::fmt::Write;

use rtick::noise::{NoiseRun, Plan};
use rtick::system::format_cpu_list;
use rtick::Nanos;
use rtick_model::json::NoiseFile;

/// The header of a run that followed a thread.
pub fn header(r: &NoiseRun, plan: &Plan, file: &NoiseFile) -> String {
    let mut o = String::new();
    let Some(t) = &r.attached else { return o };
    let span = r.cpus.iter().fold(Nanos::ZERO, |a, c| a + c.runtime);
    let _ = writeln!(
        o,
        "rtick {} noise --attach {}: CPUs {} | {:.3} s on them | threshold {} | gaps found in trace events",
        file.rtick_version,
        t.tid,
        format_cpu_list(&plan.cpus),
        span.as_secs_f64(),
        r.threshold
    );
    o += &super::header::system_lines(&file.system, "the kernel's trace clock (mono)");
    let _ = writeln!(
        o,
        "  thread        {} (tid {}, process {}), {}, may run on CPUs {}: no spinner of rtick's",
        t.comm,
        t.tid,
        t.tgid,
        t.policy_text(),
        format_cpu_list(&t.affinity)
    );
    o += "  a gap         the thread switched out while runnable (who ran instead), or an interrupt while it ran\n";
    o += "  not seen      gaps that leave no kernel event: the host (in a VM) or an SMI; the wait after a wake-up\n";
    o.push('\n');
    o
}

/// The title of the table of a run that followed a thread (`None` for spinners).
pub fn title(f: &NoiseFile) -> Option<String> {
    f.attached.as_ref().map(|t| {
        format!(
            "noise of thread {} per CPU (runtime: its time on the CPU, running or waiting; a gap: over {}):\n",
            t.tid,
            Nanos(f.threshold_ns)
        )
    })
}
