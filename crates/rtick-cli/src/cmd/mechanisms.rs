//! `rtick mechanisms`: the mechanism table.

use rtick::wait::KINDS;

pub fn run() {
    let w = KINDS.iter().filter(|k| !k.hidden).map(|k| k.name.len()).max().unwrap_or(0);
    for k in KINDS.iter().filter(|k| !k.hidden) {
        let mut tags = Vec::new();
        if k.relative {
            tags.push("relative");
        }
        if k.burns_cpu {
            tags.push("burns CPU");
        }
        if k.kernel_grid {
            tags.push("kernel interval timer");
        }
        if k.per_process {
            tags.push("one per process");
        }
        let sys = if k.syscalls.is_empty() { "none (vDSO clock reads)".to_string() } else { k.syscalls.join(", ") };
        println!("{:<w$}  {}", k.name, k.description);
        println!(
            "{:<w$}  syscalls per wait: {sys}; needs: {}{}",
            "",
            k.needs,
            if tags.is_empty() { String::new() } else { format!("; {}", tags.join(", ")) }
        );
    }
}
