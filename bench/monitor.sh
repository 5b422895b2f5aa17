#!/usr/bin/env bash
# What rtick monitor costs beyond the wait: CPU time of `rtick monitor` and of
# `rtick measure` with the same loop over the same time (clock_nanosleep on
# one CPU, SCHED_FIFO 90, memory locked), at 1 kHz and 10 kHz, the monitor
# scraped once a second as Prometheus would; the difference per 1000
# wake-ups and as a share of a core (target: under 1 % at 1 kHz per CPU).
# Then the cost of one scrape: 1000 scrapes in a row, the time each takes
# (client side), the monitor's CPU per scrape, and the bytes of each format.
# Usage: bench/monitor.sh      (SECS=30 CPU=1 PORT=19464; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-30}
CPU=${CPU:-1}
PORT=${PORT:-19464}
cargo build --release -q --bin rtick
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); CPU $CPU, $SECS s per run"
python3 - "$SECS" "$CPU" "$PORT" <<'PY'
import os, statistics, subprocess, sys, time, urllib.request
secs, cpu, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rtick = "target/release/rtick"
url = f"http://127.0.0.1:{port}/metrics"
hz = os.sysconf("SC_CLK_TCK")

def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz

def get(u, accept=None):
    req = urllib.request.Request(u, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()

def wait_ready():
    for _ in range(200):
        try:
            get(url); return
        except OSError:
            time.sleep(0.05)
    sys.exit("the monitor does not answer")

def threads_cpu(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        name = open(f"/proc/{pid}/task/{t}/comm").read().strip()
        out[name] = out.get(name, 0) + proc_cpu(f"{pid}/task/{t}")
    return out

def run(cmd, scrape):
    """CPU time of the steady state (from 3 s to 1 s before the end: not
    the setup, audit and prefault), per thread name."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    time.sleep(3)
    c0 = threads_cpu(p.pid)
    while time.monotonic() - t0 < secs - 1:
        if scrape:
            try: get(url)
            except OSError: pass
        time.sleep(1)
    c1 = threads_cpu(p.pid)
    p.wait()
    return time.monotonic() - t0, {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}, secs - 4

loop = ["-a", cpu, "-p", "90", "-q", "-m", "clock_nanosleep"]
print(f"{'interval':<10}{'measure CPU s':>14}{'monitor CPU s':>14}{'extra per 1000 wake-ups':>25}{'extra, % of a core':>20}   monitor per thread (s)")
for interval, per_s in (("1ms", 1000), ("100us", 10000)):
    _, m, span = run([rtick, "measure", *loop, "-i", interval, "-D", str(secs)], False)
    _, n, span = run([rtick, "monitor", *loop, "-i", interval, "-D", str(secs), "--listen", f"127.0.0.1:{port}"], True)
    ms, ns = sum(m.values()), sum(n.values())
    wakes = per_s * span
    per = ", ".join(f"{k} {v:.3f}" for k, v in sorted(n.items()))
    print(f"{interval:<10}{ms:>14.3f}{ns:>14.3f}{(ns - ms) / wakes * 1000 * 1e6:>21.1f} µs{(ns - ms) / span * 100:>19.3f}%   {per}")

p = subprocess.Popen([rtick, "monitor", *loop, "-i", "1ms", "--listen", f"127.0.0.1:{port}", "--spike", "100"], stdout=subprocess.DEVNULL)
wait_ready(); time.sleep(2)
times, c0 = [], proc_cpu(p.pid)
for _ in range(1000):
    t = time.perf_counter(); body = get(url); times.append(time.perf_counter() - t)
c1 = proc_cpu(p.pid)
om = get(url, "application/openmetrics-text;version=1.0.0")
spikes = get(f"http://127.0.0.1:{port}/spikes")
p.terminate(); p.wait()
times.sort()
print(f"one scrape: median {statistics.median(times) * 1e6:.0f} µs, p99 {times[989] * 1e6:.0f} µs (client side, loopback); "
      f"monitor CPU {(c1 - c0) / 1000 * 1e6:.0f} µs per scrape (incl. the 1 kHz loop meanwhile); "
      f"{len(body)} bytes text, {len(om)} bytes OpenMetrics, /spikes {len(spikes)} bytes (1 thread, 1 mechanism)")
PY
