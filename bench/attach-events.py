#!/usr/bin/env python3
"""Which of `rtick attach`'s trace events the traced program pays for (issue #20).

bench/attach-overhead.py measures what attach as a whole costs a program;
this script splits it by event. The same C loop (bench/c/attach_target.c:
clock_nanosleep(TIMER_ABSTIME), SCHED_FIFO, pinned, memory locked, its own
latency recorded) runs at one rate, and the script's own tracefs instance
records the events `rtick attach` enables, with attach's filters (wake-ups
cut to the program's CPU, system calls' exits to the program's thread), on
the program's CPU only, as attach does for a pinned program.

1. Count: one stretch with every event of the set, its events read back
   and counted by event, per wake-up of the program.
2. Cost: short stretches, each with one configuration of events enabled
   (none, the set, the set minus each group of candidates), every
   configuration once a round in a shuffled order, many rounds, all in ONE
   run of the program (a loaded machine drifts: only neighbours compare).
   For each configuration, the program's p50 and p99 latency per stretch,
   minus those of the no-events stretch of the same round: the median over
   rounds, and per event dropped.

Needs root, tracefs and cc. It runs off the program's CPU; the instance
(rtick-events-PID) is removed on every exit.
"""

import argparse
import os
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tracepoint::ALL (crates/rtick/src/ktrace/events.rs) and the system calls'
# exits: `rtick attach`'s set until it left the local timer's edges out
# (Tracepoint::ATTACH is now "full - local_timer").
FULL = [
    "timer:hrtimer_start", "timer:hrtimer_expire_entry", "timer:hrtimer_expire_exit", "timer:hrtimer_cancel",
    "irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit",
    "sched:sched_waking", "sched:sched_wakeup", "sched:sched_switch",
    "irq:irq_handler_entry", "irq:irq_handler_exit", "irq:softirq_entry", "irq:softirq_exit",
    "irq_vectors:reschedule_entry", "irq_vectors:reschedule_exit",
    "irq_vectors:call_function_entry", "irq_vectors:call_function_exit",
    "irq_vectors:call_function_single_entry", "irq_vectors:call_function_single_exit",
    "irq_vectors:irq_work_entry", "irq_vectors:irq_work_exit", "nmi:nmi_handler",
    "workqueue:workqueue_execute_start", "workqueue:workqueue_execute_end",
    "power:cpu_idle", "raw_syscalls:sys_exit",
]

# The candidates, each dropped from the set in a configuration of its own.
CANDIDATES = {
    "local_timer": ["irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit"],
    "sched_wakeup": ["sched:sched_wakeup"],
    "sched_waking": ["sched:sched_waking"],
    "sched_switch": ["sched:sched_switch"],
    "sys_exit": ["raw_syscalls:sys_exit"],
    "hrtimer_expire": ["timer:hrtimer_expire_entry", "timer:hrtimer_expire_exit"],
    "hrtimer_start": ["timer:hrtimer_start"],
    "hrtimer_cancel": ["timer:hrtimer_cancel"],
    "cpu_idle": ["power:cpu_idle"],
    "hrtimer_expire_exit": ["timer:hrtimer_expire_exit"],
    # What only a spike's explanation reads (other contexts on the CPU, the
    # idle state, inferred switches): a lean set is the full one without it.
    "explain": [
        "timer:hrtimer_expire_exit", "timer:hrtimer_cancel",
        "irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit", "sched:sched_wakeup",
        "irq:irq_handler_entry", "irq:irq_handler_exit", "irq:softirq_entry", "irq:softirq_exit",
        "irq_vectors:reschedule_entry", "irq_vectors:reschedule_exit",
        "irq_vectors:call_function_entry", "irq_vectors:call_function_exit",
        "irq_vectors:call_function_single_entry", "irq_vectors:call_function_single_exit",
        "irq_vectors:irq_work_entry", "irq_vectors:irq_work_exit", "nmi:nmi_handler",
        "workqueue:workqueue_execute_start", "workqueue:workqueue_execute_end", "power:cpu_idle",
    ],
}


# Not events: attach's stack trigger, and the CPU filters on every event
# that recording the other CPUs' IPI sends brings (with --stacks).
STACKS, FILTERS = "stacktrace", "cpu filters"


def hrtimer_wakeup():
    """The address of hrtimer_wakeup, the sleeps' callback, from /proc/kallsyms."""
    with open("/proc/kallsyms") as f:
        for line in f:
            addr, _, name = line.split()[:3]
            if name == "hrtimer_wakeup" and int(addr, 16):
                return "0x" + addr
    fail("no address for hrtimer_wakeup in /proc/kallsyms (kernel.kptr_restrict?): run without --stacks")


def fail(msg):
    print(f"attach-events.py: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, default=20000, help="loop rate in Hz (default 20000)")
    p.add_argument("--rounds", type=int, default=30, help="rounds of every configuration (default 30)")
    p.add_argument("--stretch", type=float, default=1.0, help="seconds per stretch (default 1)")
    p.add_argument("--margin", type=float, default=0.2, help="seconds dropped at each stretch's start (default 0.2)")
    p.add_argument("--cpu", type=int, default=1, help="the program's CPU (default 1)")
    p.add_argument("--priority", type=int, default=90, help="its SCHED_FIFO priority (default 90)")
    p.add_argument("--drop", default="local_timer,sched_wakeup,local_timer+sched_wakeup",
                   help="groups of events, each a configuration without it (default "
                   "local_timer,sched_wakeup,local_timer+sched_wakeup; 'a+b' drops both in one configuration): "
                   + ", ".join(CANDIDATES))
    p.add_argument("--stacks", action="store_true",
                   help="also attach's set (the full one but the local timer's edges) alone, with its "
                   "stacktrace trigger, and with that and a CPU filter on every event (the IPI senders' cost), "
                   "a configuration each")
    a = p.parse_args()
    bad = [g for c in a.drop.split(",") if c for g in c.split("+") if g not in CANDIDATES]
    if a.rate <= 0 or a.rounds <= 0 or a.stretch <= a.margin or a.margin < 0 or bad:
        p.error(f"rate and rounds must be positive, stretch longer than margin; unknown groups: {bad or 'none'}")
    return a


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


class Instance:
    """The script's tracefs instance on one CPU, removed by close()."""

    def __init__(self, cpu, tid):
        tracefs = "/sys/kernel/tracing"
        self.dir = os.path.join(tracefs, "instances", f"rtick-events-{os.getpid()}")
        os.mkdir(self.dir)
        self.cpu, self.on = cpu, set()
        self.filters = {"sched:sched_waking": f"target_cpu == {cpu}", "sched:sched_wakeup": f"target_cpu == {cpu}",
                        "raw_syscalls:sys_exit": f"common_pid == {tid}"}
        write(self.p("tracing_on"), "0")
        write(self.p("trace_clock"), "mono")
        write(self.p("tracing_cpumask"), format(1 << cpu, "x"))
        write(self.p(f"per_cpu/cpu{cpu}/buffer_size_kb"), "32768")
        self.cpu_filters(False)
        write(self.p("tracing_on"), "1")

    def cpu_filters(self, on):
        """Every event's filter, with `CPU == N` added when `on`: what an
        rtick session adds when it records other CPUs' IPI sends (the
        traced CPU records no more events, but each passes a filter)."""
        for ev in FULL:
            f = self.filters.get(ev)
            if on:
                f = f"({f}) && CPU == {self.cpu}" if f else f"CPU == {self.cpu}"
            write(self.event(ev, "filter"), f or "0")

    def p(self, rel):
        return os.path.join(self.dir, rel)

    def event(self, ev, what):
        system, name = ev.split(":")
        return self.p(f"events/{system}/{name}/{what}")

    def enable(self, events):
        """Exactly `events` on, the rest of the set off; STACKS among them:
        attach's `stacktrace` trigger on hrtimer_expire_entry for the
        sleep's wake-up callback (crates/rtick/src/ktrace/stack.rs)."""
        want = set(events)
        trigger = self.event("timer:hrtimer_expire_entry", "trigger")
        if (FILTERS in want) != (FILTERS in self.on):
            self.cpu_filters(FILTERS in want)
        if (STACKS in want) != (STACKS in self.on):
            write(trigger, f"stacktrace if function == {hrtimer_wakeup()}" if STACKS in want else "!stacktrace")
        for ev in FULL:
            if (ev in want) != (ev in self.on):
                write(self.event(ev, "enable"), "1" if ev in want else "0")
        self.on = want

    def count(self):
        """Events recorded since the last clear, by name; clears."""
        write(self.p("tracing_on"), "0")
        counts = {}
        with open(self.p(f"per_cpu/cpu{self.cpu}/trace")) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                parts = line.split(": ", 2)
                if len(parts) >= 2:
                    name = parts[1].split()[-1] if parts[1] else "?"
                    counts[name] = counts.get(name, 0) + 1
        write(self.p("trace"), "")
        write(self.p("tracing_on"), "1")
        return counts

    def close(self):
        self.enable([])
        write(self.p("tracing_on"), "0")
        os.rmdir(self.dir)


def latencies(records, lo, hi):
    """The program's latencies (µs) of the wake-ups planned in [lo, hi)."""
    return sorted((a - p) / 1000 for p, a in records if lo <= p < hi)


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def main():
    a = parse_args()
    if os.geteuid() != 0:
        fail("needs root (tracefs, SCHED_FIFO, mlockall): run it with sudo")
    if not os.path.isdir("/sys/kernel/tracing/instances"):
        fail("no tracefs at /sys/kernel/tracing: mount it (mount -t tracefs nodev /sys/kernel/tracing)")
    if not shutil.which("cc"):
        fail("no C compiler (cc) for bench/c/attach_target.c: install one (apt-get install gcc)")
    out = tempfile.mkdtemp(prefix="attach-events-")
    loop, rec = os.path.join(out, "attach_target"), os.path.join(out, "rec.bin")
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-o", loop, os.path.join(ROOT, "bench/c/attach_target.c")],
                   check=True)
    os.sched_setaffinity(0, [c for c in os.sched_getaffinity(0) if c != a.cpu] or [0])
    configs = {"none": [], "full": FULL}
    if a.stacks:
        attach = [e for e in FULL if e not in CANDIDATES["local_timer"]]
        configs["attach"], configs["attach + stacks"] = attach, attach + [STACKS]
        configs["attach + stacks + filters"] = attach + [STACKS, FILTERS]
    for c in a.drop.split(","):
        if c:
            gone = {e for g in c.split("+") for e in CANDIDATES[g]}
            configs["full - " + c] = [e for e in FULL if e not in gone]
    total = int(120 + a.rounds * len(configs) * a.stretch * 2)
    prog = subprocess.Popen([loop, rec, str(10**9 // a.rate), str(total), str(a.priority), str(a.cpu)])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    inst = None
    try:
        time.sleep(0.5)
        inst = Instance(a.cpu, prog.pid)
        stretches = run(a, inst, configs)
    finally:
        if inst:
            inst.close()
        prog.send_signal(signal.SIGTERM)
        prog.wait()
    with open(rec, "rb") as f:
        data = f.read()
    shutil.rmtree(out)
    records = list(struct.iter_unpack("qq", data))
    if not records:
        fail(f"the program recorded no wake-up ({rec})")
    report(a, configs, stretches, records)


def run(a, inst, configs):
    """The count, then the rounds; each stretch as (config, start, end) in CLOCK_MONOTONIC ns."""
    inst.enable(FULL)
    time.sleep(0.3)
    inst.count()
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    time.sleep(1.0)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    counts = inst.count()
    wakes = (t1 - t0) * a.rate / 1e9
    print(f"events on CPU {a.cpu} per wake-up of the {a.rate} Hz loop, every event of the full set "
          f"({sum(counts.values())} in {(t1 - t0) / 1e9:.2f} s):")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {n / wakes:6.2f}")
    print(f"  {'all':28s} {sum(counts.values()) / wakes:6.2f}")
    stretches = []
    names = list(configs)
    for r in range(a.rounds):
        random.shuffle(names)
        for c in names:
            inst.enable(configs[c])
            s = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            time.sleep(a.stretch)
            stretches.append((r, c, s + int(a.margin * 1e9), time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
        write(inst.p("trace"), "")  # keeps the buffer from wrapping
    return stretches


def report(a, configs, stretches, records):
    records.sort()
    by = {}
    for r, c, lo, hi in stretches:
        v = latencies(records, lo, hi)
        by.setdefault(r, {})[c] = (pct(v, 0.5), pct(v, 0.99), len(v))
    n_full = len(configs["full"])
    print(f"\nthe program's latency, µs: median over {a.rounds} rounds of the stretch's p50 / p99 "
          f"({a.stretch:g} s stretches, {a.margin:g} s dropped at each start), and of its difference "
          "from the same round's stretch with no event")
    print(f"  {'configuration':28s} {'events':>6s} {'p50':>7s} {'p99':>7s} {'Δp50':>7s} {'Δp99':>7s}  Δp50 > 0 in")
    for c in configs:
        pairs = [(by[r][c], by[r]["none"]) for r in by if c in by[r] and "none" in by[r]]
        rows = [x for x, _ in pairs]
        d50 = [x[0] - n[0] for x, n in pairs]
        d99 = [x[1] - n[1] for x, n in pairs]
        pos = sum(1 for d in d50 if d > 0)
        print(f"  {c:28s} {len([e for e in configs[c] if e not in (STACKS, FILTERS)]):6d} {statistics.median(x[0] for x in rows):7.2f} "
              f"{statistics.median(x[1] for x in rows):7.2f} {statistics.median(d50):+7.2f} "
              f"{statistics.median(d99):+7.2f}  {pos}/{len(rows)}")
    print("\nper group, the full set minus it against the full set in the same round (µs of p50; > 0: it costs):")
    for c in configs:
        if not c.startswith("full - "):
            continue
        d = [by[r]["full"][0] - by[r][c][0] for r in by if c in by[r] and "full" in by[r]]
        print(f"  {c[7:]:28s} median {statistics.median(d):+6.2f}, mean {statistics.mean(d):+6.2f}, "
              f"> 0 in {sum(1 for x in d if x > 0)}/{len(d)} rounds ({n_full - len(configs[c])} events fewer)")


if __name__ == "__main__":
    main()
