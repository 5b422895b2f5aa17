#!/usr/bin/env python3
"""What `rtick attach` costs the program it traces (issue #20).

A C loop (bench/c/attach_target.c) that records its own latency runs
SCHED_FIFO, pinned to one CPU, memory locked, at each rate in turn. While it
runs, stretches alternate untraced / traced (`rtick attach PID -D STRETCH
--json --trace`: the trace's rows are how the wake-ups are matched). Every
wake-up of the program is classed by the stretch its planned time falls in,
on CLOCK_MONOTONIC (time.monotonic_ns here, the program's clock): untraced
stretches from rtick's exit to the next start, traced ones while rtick's
tracefs instance records (its tracing_on 1, polled every 10 ms), so rtick's
start-up and its figures after tracing count for neither (the wake-ups while
it makes its figures, its instance removed, are shown apart as "after");
MARGIN is dropped at each edge.

Reported per rate: the program's own latency (actual − planned wake-up) p50,
p99 and max untraced vs traced and their ratios (goal: p50 and p99 ≤ 1.10×),
the events rtick lost (its JSON), the share of the traced wake-ups rtick
matched (its --trace rows by requested time), and rtick's own CPU time
(os.wait4: utime + stime) per second traced, with the CPUs its threads ran
on while tracing (schedstat, sampled every 10 ms).

Usage: bench/attach-overhead.py [--quick] [--stretches N] [--stretch SECS] ...
Needs root, tracefs, cc and cargo; the script itself runs off the target's CPU.
"""
import argparse
import array
import bisect
import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"attach-overhead: {msg}", file=sys.stderr)
    sys.exit(1)


def cpu_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])

    def usage(msg):  # one line, exit 2, before anything runs
        print(f"attach-overhead: {msg} (see --help)", file=sys.stderr)
        sys.exit(2)

    p.error = usage
    p.add_argument("--rates", default="1000,10000,20000", help="loop rates in Hz (default 1000,10000,20000)")
    p.add_argument("--stretches", type=int, help="stretches per rate, untraced first, alternating (default 8)")
    p.add_argument("--stretch", type=float, help="seconds per stretch (default 8)")
    p.add_argument("--margin", type=float, help="seconds dropped at each edge of a stretch (default 0.5)")
    p.add_argument("--cpu", type=int, default=1, help="the CPU the program runs on (default 1)")
    p.add_argument("--priority", type=int, default=90, help="the program's SCHED_FIFO priority (default 90)")
    p.add_argument("--rtick-cpus", help="pin rtick to these CPUs (e.g. 0 or 0-1; default: not pinned, as a user runs it)")
    p.add_argument("--out", help="directory for the raw results, some hundreds of MB for a full run (default: a new temporary one)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 stretches of 2 s per rate")
    a = p.parse_args()
    quick = (2, 2.0, 0.25) if a.quick else (8, 8.0, 0.5)
    a.stretches = a.stretches if a.stretches is not None else quick[0]
    a.stretch = a.stretch if a.stretch is not None else quick[1]
    a.margin = a.margin if a.margin is not None else quick[2]
    try:
        a.rates = [int(r) for r in a.rates.split(",")]
        a.rtick_cpus = cpu_list(a.rtick_cpus) if a.rtick_cpus else None
    except ValueError:
        p.error("--rates and --rtick-cpus take comma-separated numbers (e.g. --rates 1000,20000 --rtick-cpus 0)")
    allowed = os.sched_getaffinity(0)
    if a.stretches < 2 or a.stretches % 2:
        p.error(f"--stretches {a.stretches}: give an even number, at least 2 (untraced, traced, …)")
    if not 0 <= a.margin < a.stretch / 2:
        p.error(f"--margin {a.margin} must be at least 0 and under half of --stretch {a.stretch}")
    if any(r <= 0 or r > 100000 for r in a.rates):
        p.error(f"--rates {a.rates}: each from 1 to 100000 Hz")
    if a.cpu not in allowed or (a.rtick_cpus and not a.rtick_cpus <= allowed):
        p.error(f"--cpu / --rtick-cpus must be among the CPUs this script may use: {sorted(allowed)}")
    if not 1 <= a.priority <= 99:
        p.error(f"--priority {a.priority}: SCHED_FIFO priorities are 1-99")
    return a


def tracefs_root():
    """Where rtick traces: RTICK_TRACEFS, else where tracefs is mounted."""
    if os.environ.get("RTICK_TRACEFS"):
        return os.environ["RTICK_TRACEFS"]
    with open("/proc/mounts") as f:
        for line in f:
            dev, path, kind = line.split()[:3]
            if kind == "tracefs":
                return path
    return "/sys/kernel/tracing"


def prerequisites():
    """One line and exit 1 for the first thing missing."""
    if os.geteuid() != 0:
        fail("needs root (tracefs, SCHED_FIFO, mlockall): run it with sudo")
    tracefs = tracefs_root()
    if not os.path.isdir(os.path.join(tracefs, "instances")):
        fail(f"no tracefs at {tracefs}: mount it (mount -t tracefs nodev /sys/kernel/tracing)")
    if not shutil.which("cc"):
        fail("no C compiler (cc) for bench/c/attach_target.c: install one (apt-get install gcc)")
    if not shutil.which("cargo"):
        fail("no cargo to build rtick: install Rust (https://rustup.rs)")
    return tracefs


def build(out):
    """rtick (release) and the C loop; the path of each."""
    subprocess.run(["cargo", "build", "--release", "-q", "--bin", "rtick"], cwd=ROOT, check=True)
    rtick = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"), "release", "rtick")
    loop = os.path.join(out, "attach_target")
    src = os.path.join(ROOT, "bench", "c", "attach_target.c")
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-o", loop, src], check=True)
    return rtick, loop


def machine_line(cpu):
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    clocksource = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    return (f"machine: {os.cpu_count()} CPUs ({model}), kernel {os.uname().release}, clocksource {clocksource}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load}; program on CPU {cpu}")


def read(path):
    with open(path) as f:
        return f.read()


class Watch(threading.Thread):
    """Every 10 ms while rtick runs, on CLOCK_MONOTONIC: when its tracefs
    instance records (`tracing_on` 1: the traced window) and when the
    instance is removed (its events off), and each of its threads' CPU time
    (schedstat, ns) charged to the CPU it last ran on."""

    def __init__(self, pid, tracefs):
        super().__init__(daemon=True)
        self.pid, self.inst = pid, os.path.join(tracefs, "instances", f"rtick-{pid}")
        self.on = self.off = self.gone = None
        self.seen = {}  # tid -> CPU ns so far
        self.by_cpu = {}  # (comm, cpu) -> CPU ns while tracing
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            now = time.monotonic_ns()
            try:
                state = read(os.path.join(self.inst, "tracing_on")).strip()
            except OSError:
                state = None  # not there yet, or removed
            # A new instance records until rtick sets it up (tracing_on 0,
            # then 1): the last stretch of 1 is the run's.
            if state == "1" and self.on is None or state == "1" and self.off is not None:
                self.on, self.off = now, None
            if self.on is not None and state != "1" and self.off is None:
                self.off = now
            if self.on is not None and state is None and self.gone is None:
                self.gone = now
            self.sample(tracing=state == "1")
            self.done.wait(0.01)

    def sample(self, tracing):
        task = f"/proc/{self.pid}/task"
        try:
            tids = os.listdir(task)
        except OSError:
            return
        for tid in tids:
            try:
                ran = int(read(f"{task}/{tid}/schedstat").split()[0])
                stat = read(f"{task}/{tid}/stat")
            except (OSError, ValueError, IndexError):
                continue  # the thread ended meanwhile
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            cpu = int(stat[stat.rindex(")") + 2:].split()[36])  # field 39, processor
            delta, self.seen[tid] = ran - self.seen.get(tid, 0), ran
            if tracing:
                self.by_cpu[(comm, cpu)] = self.by_cpu.get((comm, cpu), 0) + delta

    def finish(self, reaped):
        self.done.set()
        self.join()
        if self.on is not None:
            self.off, self.gone = self.off or reaped, self.gone or reaped


def traced_stretch(a, rtick, pid, tracefs, out, rate, k):
    """One `rtick attach`: its JSON, its window, its CPU time."""
    base = os.path.join(out, f"attach-{rate}-{k}")
    cpus = a.rtick_cpus or a.all_cpus
    cmd = [rtick, "attach", str(pid), "-D", f"{a.stretch}s", "--json", base + ".json", "--trace", base + ".csv"]
    t0 = time.monotonic_ns()
    with open(base + ".txt", "w") as so, open(base + ".err", "w") as se:
        p = subprocess.Popen(cmd, stdout=so, stderr=se, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        watch = Watch(p.pid, tracefs)
        watch.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # interrupted: rtick removes its instance on SIGTERM
            p.send_signal(signal.SIGTERM)
            os.waitpid(p.pid, 0)
            raise
        t1 = time.monotonic_ns()
        p.returncode = os.waitstatus_to_exitcode(status)
    watch.finish(t1)
    if p.returncode != 0:
        err = read(base + ".err").strip().splitlines()
        fail(f"rtick attach exited with {p.returncode}: {err[-1] if err else '(no message)'} ({' '.join(cmd)})")
    j = json.loads(read(base + ".json"))
    j["asked"] = asked_times(base + ".csv")
    seen = watch.on is not None
    on, off, gone = (watch.on, watch.off, watch.gone) if seen else (t0, t1, t1)
    return {"t0": t0, "t1": t1, "on": on, "off": off, "gone": gone, "instance_seen": seen,
            "cpu_ns": round((ru.ru_utime + ru.ru_stime) * 1e9), "by_cpu": watch.by_cpu, "json": j}


def run_rate(a, rtick, loop, tracefs, out, rate):
    """The program at `rate`, stretches alternating; its record and rtick's runs."""
    rec = os.path.join(out, f"wakeups-{rate}.bin")
    max_secs = int(2 * a.stretches * a.stretch + 120)
    prog = subprocess.Popen([loop, rec, str(round(1e9 / rate)), str(max_secs), str(a.priority), str(a.cpu)])
    stretches = []
    try:
        time.sleep(0.3)
        if prog.poll() is not None:
            fail(f"the program exited with status {prog.returncode} before its loop (its message above)")
        for k in range(a.stretches):
            if k % 2 == 0:
                t0 = time.monotonic_ns()
                time.sleep(a.stretch)
                stretches.append({"traced": False, "on": t0, "off": time.monotonic_ns()})
            else:
                r = traced_stretch(a, rtick, prog.pid, tracefs, out, rate, k)
                stretches.append({"traced": True, **r})
            if prog.poll() is not None:
                fail(f"the program ended during stretch {k + 1} (status {prog.returncode})")
    finally:
        if prog.poll() is None:
            prog.send_signal(signal.SIGTERM)
        prog.wait()
    if prog.returncode != 0:
        fail(f"the program exited with status {prog.returncode} (its message above)")
    with open(os.path.join(out, f"stretches-{rate}.json"), "w") as f:  # to re-read the record later
        json.dump([{k: v for k, v in s.items() if k in ("traced", "t0", "on", "off", "gone", "t1")} for s in stretches], f)
    raw = array.array("q")
    with open(rec, "rb") as f:
        raw.frombytes(f.read())
    return raw[0::2], raw[1::2], stretches


def pct(sorted_values, q):
    """Nearest rank, as rtick's stats::percentile."""
    return sorted_values[max(1, math.ceil(q * len(sorted_values))) - 1] if sorted_values else float("nan")


def latencies(planned, actual, lo, hi):
    """The program's latencies (ns) for planned times in [lo, hi]."""
    i, j = bisect.bisect_left(planned, lo), bisect.bisect_right(planned, hi)
    return list(planned[i:j]), [actual[n] - planned[n] for n in range(i, j)]


# rtick's wake-up and the program's are the same one when the times asked
# for agree this closely (far below any period here).
MATCH_NS = 1000


def asked_times(csv_path):
    """The times asked for of the timed waits in rtick's --trace rows (sorted)."""
    with open(csv_path, newline="") as f:
        return sorted(int(r["requested_ns"]) for r in csv.DictReader(f) if r["kind"] == "timed" and r["requested_ns"])


def match(when, j):
    """How many of the planned times `when` rtick saw asked for, and by how
    much its times differed from the program's (ns, each match)."""
    asked = j["asked"]
    found, diffs = 0, []
    for p in when:
        i = bisect.bisect_left(asked, p)
        near = min((asked[k] for k in (i - 1, i) if 0 <= k < len(asked)), key=lambda q: abs(q - p), default=None)
        if near is not None and abs(near - p) <= MATCH_NS:
            found += 1
            diffs.append(near - p)
    return found, diffs


def summarise(a, planned, actual, stretches):
    """Per side: latencies; for the traced side the matched share and rtick's figures."""
    m = round(a.margin * 1e9)
    sides = {False: [], True: []}
    after = []  # rtick still running, making its figures, tracing off
    pairs, matched, in_traced, diffs = [], 0, 0, []
    for s in stretches:
        when, lat = latencies(planned, actual, s["on"] + m, s["off"] - m)
        sides[s["traced"]] += lat
        pairs.append(sorted(lat))
        if s["traced"]:
            found, d = match(when, s["json"])
            matched, in_traced, diffs = matched + found, in_traced + len(when), diffs + d
            after += latencies(planned, actual, s["gone"] + m, s["t1"] - m)[1]
    traced = [s for s in stretches if s["traced"]]
    return {
        "untraced": sorted(sides[False]), "traced": sorted(sides[True]), "after": sorted(after), "pairs": pairs,
        "matched": matched / in_traced if in_traced else float("nan"),
        "diffs": sorted(diffs),
        "tracing_s": sum(s["off"] - s["on"] for s in traced) / 1e9,
        "events": sum(s["json"]["events"] for s in traced),
        "lost": sum(s["json"]["lost_events"] for s in traced),
        "traced_s": sum(s["json"]["elapsed_ns"] for s in traced) / 1e9,
        "cpu_ns": sum(s["cpu_ns"] for s in traced),
        "setup_ms": [(s["on"] - s["t0"]) / 1e6 for s in traced],
        "after_ms": [(s["t1"] - s["off"]) / 1e6 for s in traced],
        "no_instance": sum(1 for s in traced if not s["instance_seen"]),
        "by_cpu": merge_by_cpu(traced),
    }


def merge_by_cpu(traced):
    total = {}
    for s in traced:
        for key, ns in s["by_cpu"].items():
            total[key] = total.get(key, 0) + ns
    return total


def us(ns):
    return f"{ns / 1e3:.1f}"


def report(rate, r, a):
    u, t = r["untraced"], r["traced"]
    print(f"{rate / 1000:g} kHz ({len(r['pairs']) // 2} pairs of {a.stretch:g} s stretches)")
    if not u or not t:
        print(f"  no wake-up left on one side ({len(u)} untraced, {len(t)} traced): give longer stretches or a smaller --margin")
        return
    for name, v in (("untraced", u), ("traced", t), ("after", r["after"])):
        if v:
            print(f"  {name:<10}{len(v):>9}{us(pct(v, .5)):>9}{us(pct(v, .99)):>9}{us(v[-1]):>10}")
    r50, r99 = pct(t, .5) / pct(u, .5), pct(t, .99) / pct(u, .99)
    both = [(un, tr) for un, tr in zip(r["pairs"][0::2], r["pairs"][1::2]) if un and tr]
    per = [(pct(tr, .5) / pct(un, .5), pct(tr, .99) / pct(un, .99)) for un, tr in both]
    added = "  ".join(f"{(pct(tr, .5) - pct(un, .5)) / 1e3:+.1f}/{(pct(tr, .99) - pct(un, .99)) / 1e3:+.1f}" for un, tr in both)
    verdict = "met" if r50 <= 1.10 and r99 <= 1.10 else "NOT met"
    print(f"  traced/untraced p50 ×{r50:.2f}, p99 ×{r99:.2f}: goal ≤ 1.10 {verdict}"
          + (f"; per pair p50 ×{min(p[0] for p in per):.2f}–{max(p[0] for p in per):.2f} (median {median([p[0] for p in per]):.2f}),"
             f" p99 ×{min(p[1] for p in per):.2f}–{max(p[1] for p in per):.2f} (median {median([p[1] for p in per]):.2f})" if per else ""))
    print(f"  traced − untraced per pair, p50/p99 µs: {added}")
    cpu = r["cpu_ns"] / 1e6 / r["traced_s"] if r["traced_s"] else float("nan")
    d = r["diffs"]
    exact = f", rtick's time asked for − the program's: {d[0]}…{d[-1]} ns" if d else ""
    print(f"  rtick: matched {100 * r['matched']:.2f} % of the traced wake-ups{exact}; lost {r['lost']} of {r['events']} events"
          f" ({r['events'] / r['traced_s']:,.0f}/s)")
    total = sum(r["by_cpu"].values()) or 1
    print(f"  rtick's CPU time: {cpu:.1f} ms per s traced in all (os.wait4), {total / 1e6 / r['tracing_s']:.1f} ms/s while tracing (sampled)")
    shares = ", ".join(f"{comm} on CPU {c} {100 * ns / total:.0f} %" for (comm, c), ns in
                       sorted(r["by_cpu"].items(), key=lambda kv: -kv[1]) if ns * 100 >= total)
    print(f"  rtick's CPU time while tracing, by thread and CPU: {shares or 'none sampled'}")
    print(f"  rtick start to tracing {median(r['setup_ms']):.0f} ms, tracing end to exit {median(r['after_ms']):.0f} ms (median)"
          + (f"; {r['no_instance']} run(s) without a seen instance: edges taken at its start and exit" if r["no_instance"] else ""))


def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else float("nan")


def interrupted(*_):
    raise KeyboardInterrupt


def main():
    a = parse_args()
    tracefs = prerequisites()
    out = a.out or tempfile.mkdtemp(prefix="attach-overhead-")
    os.makedirs(out, exist_ok=True)
    rtick, loop = build(out)
    a.all_cpus = os.sched_getaffinity(0)
    others = a.all_cpus - {a.cpu}
    if others:
        os.sched_setaffinity(0, others)  # the script itself off the program's CPU
    signal.signal(signal.SIGTERM, interrupted)  # the children are ended on the way out
    print(machine_line(a.cpu))
    print(f"command: {' '.join(sys.argv)}; rtick {'on CPUs ' + ','.join(map(str, sorted(a.rtick_cpus))) if a.rtick_cpus else 'not pinned'}; results in {out}")
    print(f"the program's own latency (actual − planned wake-up), µs; margin {a.margin:g} s dropped at each edge;")
    print("traced: while rtick's instance records (tracing_on 1); after: rtick still running, its instance removed (making its figures)")
    print(f"  {'side':<10}{'wake-ups':>9}{'p50':>9}{'p99':>9}{'max':>10}")
    for rate in a.rates:
        planned, actual, stretches = run_rate(a, rtick, loop, tracefs, out, rate)
        report(rate, summarise(a, planned, actual, stretches), a)
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        fail("interrupted")
