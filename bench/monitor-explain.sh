#!/usr/bin/env bash
# What `rtick monitor --explain` costs: clock_nanosleep on one CPU (SCHED_FIFO
# 90, memory locked) at 1 kHz and 10 kHz, the monitor scraped once a second
# as Prometheus would, in four configurations run in turn, REPEAT times:
#   spike     --spike THRESHOLD             (no tracing: the baseline)
#   explain   --spike THRESHOLD --explain   (tracing, few spikes explained)
#   spike1    --spike 1                     (every wake-up logged, no tracing)
#   explain1  --spike 1 --explain           (every wake-up a spike: the most
#                                            explaining work there can be)
# Per run, between 3 s and 1 s before the end (the steady state):
#   - CPU time of each thread, from /proc/PID/task/TID/schedstat (ns, not
#     10 ms ticks): the monitor's own threads (collector + HTTP) beyond the
#     measuring thread, per 1000 wake-ups and as % of a core; the measuring
#     thread's own per wake-up (the tracepoints on its path run in it);
#   - latency from the monitor's own rtick_wakeup_latency_seconds histogram
#     (bucket counts at the two scrapes subtracted): p50 and p99
#     interpolated in the bucket as Prometheus's histogram_quantile does, and
#     the exact share of wake-ups over 10, 20, 50 and 100 µs (bucket bounds);
#   - spikes counted, how many explained (phase != "unknown"), events lost.
# A run is redone when another rtick or another tracefs instance was there
# (any enabled trace event costs every CPU, the baseline's too).
# Then resident memory (VmRSS) every 10 s for RSS_SECS at 1 kHz and 10 kHz,
# with and without --explain, and at 1 kHz with --explain under a
# context-switch storm on the measured CPU (stress-ng --switch, when
# installed): the window of events at its cap.
# Usage: bench/monitor-explain.sh
#        (SECS=20 REPEAT=3 CPU=1 THRESHOLD=100 RSS_SECS=60 PORT=19465; needs root and tracefs;
#         REPEAT=0: the memory part only)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-20}
REPEAT=${REPEAT:-3}
CPU=${CPU:-1}
THRESHOLD=${THRESHOLD:-100}
RSS_SECS=${RSS_SECS:-60}
PORT=${PORT:-19465}
cargo build --release -q --bin rtick
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); CPU $CPU, $SECS s per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$SECS" "$REPEAT" "$CPU" "$THRESHOLD" "$RSS_SECS" "$PORT" <<'PY'
import os, re, statistics, subprocess, sys, time, urllib.request
secs, repeat, cpu, threshold, rss_secs, port = sys.argv[1:7]
secs, repeat, rss_secs, port = int(secs), int(repeat), int(rss_secs), int(port)
if secs < 8:
    sys.exit("SECS: at least 8 (the steady state is from 3 s to 1 s before the end)")
rtick = "target/release/rtick"
base = f"http://127.0.0.1:{port}"

def get(path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return r.read().decode()

def wait_ready(p):
    for _ in range(400):
        if p.poll() is not None:
            sys.exit(f"the monitor exited with {p.returncode}")
        try:
            return get("/metrics")
        except OSError:
            time.sleep(0.05)
    sys.exit("the monitor does not answer")

def threads_ns(pid):
    """On-CPU time of each thread (schedstat's first field, ns), by role:
    the measuring threads (rtick-tN) and the monitor's own (the rest)."""
    out = {"measuring": 0, "own": 0}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            ns = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except OSError:
            continue
        out["measuring" if re.fullmatch(r"rtick-t\d+", name) else "own"] += ns
    return out

SAMPLE = re.compile(r'^(\w+)(?:\{([^}]*)\})? (\S+)$')

def metrics(text):
    """(name, labels dict) -> value of every sample."""
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out

def total(ms, name, pred=lambda l: True):
    return sum(v for (n, l), v in ms.items() if n == name and pred(dict(l)))

def buckets(ms):
    b = {}
    for (n, l), v in ms.items():
        if n == "rtick_wakeup_latency_seconds_bucket":
            le = dict(l)["le"]
            le = float("inf") if le == "+Inf" else float(le)
            b[le] = b.get(le, 0) + v
    return sorted(b.items())

def quantile(q, cum):
    """histogram_quantile: linear within the bucket (the first from 0)."""
    n = cum[-1][1]
    rank, lo, below = q * n, 0.0, 0.0
    for le, c in cum:
        if c >= rank:
            if le == float("inf"):
                return lo
            return lo + (le - lo) * (rank - below) / max(c - below, 1)
        lo, below = le, c
    return lo

def others(mine):
    """What spoils a run: other rtick processes (another loop on the CPU)
    and tracefs instances not the run's own (any enabled trace event costs
    every CPU its probes, traced or not: the baseline would be traced)."""
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(pid) != mine and open(f"/proc/{pid}/comm").read().strip() == "rtick":
                out.add(f"pid {pid}")
        except OSError:
            pass
    try:
        out |= {i for i in os.listdir("/sys/kernel/tracing/instances") if i != f"rtick-{mine}"}
    except OSError:
        pass
    return out

def quiet():
    """Waits (up to 20 min) until nothing else would share the run."""
    for waited in range(1200):
        busy = others(None)
        if not busy:
            return
        if waited % 60 == 0:
            print(f"  waiting for {', '.join(sorted(busy))} to end", file=sys.stderr, flush=True)
        time.sleep(1)
    sys.exit(f"still there after 20 min: {', '.join(sorted(busy))} (a stale instance? rmdir it)")

def run(interval, args):
    """One run, redone (up to 3 times) when something else shared it."""
    for _ in range(3):
        quiet()
        r = run_once(interval, args)
        if not r["crowded"]:
            break
    return r

def run_once(interval, args):
    cmd = [rtick, "monitor", "-a", cpu, "-p", "90", "-q", "-m", "clock_nanosleep", "-i", interval,
           "--listen", f"127.0.0.1:{port}", "-D", str(secs), *args]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_ready(p)
    t0 = time.monotonic()
    time.sleep(3)
    c0, m0, w0 = threads_ns(p.pid), metrics(get("/metrics")), time.monotonic()
    crowded = others(p.pid)
    while time.monotonic() - t0 < secs - 3:
        time.sleep(1)
        get("/metrics")
        crowded |= others(p.pid)
    c1, m1, w1 = threads_ns(p.pid), metrics(get("/metrics")), time.monotonic()
    _, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {err}")
    d = lambda name, pred=lambda l: True: total(m1, name, pred) - total(m0, name, pred)
    wakes = d("rtick_wakeups_total")
    cum = [(le, c - dict(buckets(m0)).get(le, 0)) for le, c in buckets(m1)]
    over = lambda s: 1 - dict(cum)[s] / cum[-1][1]
    return {
        "own_us_per_1000": (c1["own"] - c0["own"]) / wakes * 1000 / 1e3,
        "own_pct": (c1["own"] - c0["own"]) / ((w1 - w0) * 1e9) * 100,
        "meas_ns_per_wake": (c1["measuring"] - c0["measuring"]) / wakes,
        "p50_us": quantile(0.5, cum) * 1e6, "p99_us": quantile(0.99, cum) * 1e6,
        **{f"over{us}": over(us / 1e6) * 100 for us in (10, 20, 50, 100)},
        "spikes_s": d("rtick_spikes_total") / (w1 - w0),
        "explained": d("rtick_spikes_total", lambda l: l["phase"] != "unknown"),
        "explained_s": d("rtick_spikes_total", lambda l: l["phase"] != "unknown") / (w1 - w0),
        "spikes": d("rtick_spikes_total"),
        "lost": total(m1, "rtick_trace_events_lost_total"),
        "wakes": wakes,
        "traced": "--explain" in args,
        "crowded": len(crowded),
    }

configs = [("spike", ["--spike", threshold]), ("explain", ["--spike", threshold, "--explain"]),
           ("spike1", ["--spike", "1"]), ("explain1", ["--spike", "1", "--explain"])]
rates = [("1ms", "1 kHz"), ("100us", "10 kHz")]
res = {}
for r in range(repeat):
    for interval, _ in rates:
        for name, args in configs:
            res.setdefault((interval, name), []).append(run(interval, args))

n = sum(1 for rs in res.values() for x in rs if x["crowded"])
if n:
    print(f"warning: {n} runs shared the machine with another rtick or trace instance, three times in a row")

def spread(vals, fmt):
    vals = sorted(vals)
    return f"{fmt.format(statistics.median(vals))} ({fmt.format(vals[0])}–{fmt.format(vals[-1])})"

def table(title, cols):
    """One row per rate and configuration: median (min–max) over the runs."""
    if not res:
        return
    print(f"\n{title}: median (min–max) over {repeat} runs")
    print(f"{'rate':<8}{'config':<10}" + "".join(f"{h:>{w}}" for h, _, _, w in cols))
    for interval, label in rates:
        for name, _ in configs:
            rs = res[(interval, name)]
            print(f"{label:<8}{name:<10}" + "".join(f"{f(rs, fmt):>{w}}" for _, f, fmt, w in cols))

col = lambda k: lambda rs, fmt: spread([x[k] for x in rs], fmt)
def explained(rs, fmt):
    n = sum(x["spikes"] for x in rs)
    return fmt.format(sum(x["explained"] for x in rs) / n * 100) if n and rs[0]["traced"] else "-"
table("CPU (own: the monitor's threads beside the measuring one: collector, HTTP)", [
    ("own µs/1000 wake-ups", col("own_us_per_1000"), "{:.0f}", 24),
    ("own % of a core", col("own_pct"), "{:.2f}", 22),
    ("measuring ns/wake-up", col("meas_ns_per_wake"), "{:.0f}", 26),
    ("spikes/s", col("spikes_s"), "{:.1f}", 26),
    ("explained %", explained, "{:.1f}", 13),
    ("lost", lambda rs, fmt: fmt.format(max(x["lost"] for x in rs)) if rs[0]["traced"] else "-", "{:.0f}", 6),
])
if res:
    print("\nexplaining one spike, collector CPU: (explain1 − explain) ÷ spikes explained, per run")
    for interval, label in rates:
        per = [(b["own_pct"] - a["own_pct"]) * 1e4 / b["explained_s"]
               for a, b in zip(res[(interval, "explain")], res[(interval, "explain1")])]
        print(f"{label:<8}" + spread(per, "{:.1f}") + " µs")
table("latency (rtick_wakeup_latency_seconds; p50/p99 interpolated in 1-2-5 buckets, shares exact)", [
    ("p50 µs", col("p50_us"), "{:.1f}", 22),
    ("p99 µs", col("p99_us"), "{:.1f}", 24),
    (">10 µs %", col("over10"), "{:.2f}", 24),
    (">20 µs %", col("over20"), "{:.2f}", 24),
    (">50 µs %", col("over50"), "{:.2f}", 22),
    (">100 µs %", col("over100"), "{:.3f}", 24),
])

def rss_run(interval, args, storm):
    """VmRSS every 10 s; with `storm`, a context-switch storm on the
    measured CPU meanwhile (the most trace events a CPU makes: the window
    then holds its cap, not 2 s). Returns the samples and the spikes by
    cause at the end."""
    cmd = [rtick, "monitor", "-a", cpu, "-p", "90", "-q", "-m", "clock_nanosleep", "-i", interval,
           "--listen", f"127.0.0.1:{port}", *args]
    quiet()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(p)
    load = storm and subprocess.Popen(["stress-ng", "--switch", "2", "--taskset", cpu, "--timeout", str(rss_secs + 5)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, rss, crowded = time.monotonic(), [], set()
    while 10 * len(rss) < rss_secs:
        time.sleep(max(0, t0 + 10 * (len(rss) + 1) - time.monotonic()))
        get("/metrics")
        crowded |= others(p.pid)
        kb = next(int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS:"))
        rss.append(kb / 1024)
    ms = metrics(get("/metrics"))
    if load:
        load.terminate(); load.wait()
    p.terminate(); p.wait()
    causes = {}
    for (n, l), v in ms.items():
        if n == "rtick_spikes_total" and v:
            causes[dict(l)["cause"]] = causes.get(dict(l)["cause"], 0) + v
    return rss, causes, total(ms, "rtick_trace_events_lost_total"), crowded

print(f"\nresident memory (VmRSS, MiB) every 10 s for {rss_secs} s, --spike {threshold}"
      f" (storm: explain, with stress-ng --switch 2 --taskset {cpu} meanwhile)")
cases = [(interval, label, name, args, False) for interval, label in rates for name, args in configs[:2]]
if subprocess.run(["sh", "-c", "command -v stress-ng"], stdout=subprocess.DEVNULL).returncode == 0:
    cases.append(("1ms", "1 kHz", "storm", configs[1][1], True))
for interval, label, name, args, storm in cases:
    rss, causes, lost, crowded = rss_run(interval, args, storm)
    why = ", ".join(f"{k} {v:.0f}" for k, v in sorted(causes.items(), key=lambda kv: -kv[1]))
    print(f"{label:<8}{name:<10}" + " ".join(f"{v:6.1f}" for v in rss)
          + (f"   spikes: {why}; events lost {lost:.0f}" if storm else "")
          + (f"   (shared with {', '.join(sorted(crowded))})" if crowded else ""))
PY
