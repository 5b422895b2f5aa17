#!/usr/bin/env bash
# What the native histogram costs a scrape of rtick monitor: the size of
# /metrics and the time to get it in each format a scraper can ask for —
# Prometheus text and OpenMetrics (fixed buckets) and Prometheus protobuf
# (fixed and native buckets, what Prometheus with native histograms enabled
# asks for) — and the CPU its HTTP thread (which encodes) spends per scrape. Two loops: one thread of
# one mechanism (1 series), and one thread on each CPU of four mechanisms
# (-S, 2 × 4 series here), each at 1 kHz, SCHED_FIFO 90, scraped after
# WARM seconds of wake-ups have filled the buckets.
# The cost per observation in the collector: cargo bench -p rtick-cli --bench latency_histogram.
# Usage: bench/monitor-native.sh      (N=2000 WARM=20; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
WARM=${WARM:-20}
cargo build --release -q --bin rtick
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $N scrapes per format after ${WARM} s"
python3 - "$N" "$WARM" <<'PY'
import os, socket, statistics, subprocess, sys, time, urllib.request
n, warm = int(sys.argv[1]), int(sys.argv[2])
# A free loopback port: a monitor someone else runs must not answer instead.
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
url = f"http://127.0.0.1:{port}/metrics"
hz = os.sysconf("SC_CLK_TCK")
formats = {
    "text": None,
    "OpenMetrics": "application/openmetrics-text;version=1.0.0",
    # What Prometheus 2.42 sends with --enable-feature=native-histograms.
    "protobuf": "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
                "application/openmetrics-text;version=1.0.0;q=0.8,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
}

def http_cpu(pid):
    """CPU time of the monitor's HTTP thread (rtick-http), in seconds."""
    for t in os.listdir(f"/proc/{pid}/task"):
        if open(f"/proc/{pid}/task/{t}/comm").read().strip() == "rtick-http":
            f = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / hz
    sys.exit("no rtick-http thread")

def get(accept):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers["Content-Type"], r.read()

def wait_ready(p):
    for _ in range(200):
        if p.poll() is not None:
            sys.exit(f"the monitor exited ({p.returncode})")
        try:
            get(None); return
        except OSError:
            time.sleep(0.05)
    sys.exit("the monitor does not answer")

loops = {
    "1 thread, 1 mechanism": ["-a", "1", "-m", "clock_nanosleep"],
    "-S, 4 mechanisms": ["-S", "-m", "clock_nanosleep,timerfd,posix-timer,futex"],
}
print(f"{'loop':<24}{'format':<13}{'bytes':>8}{'median µs':>11}{'p99 µs':>9}{'HTTP thread CPU µs/scrape':>27}   Content-Type")
for name, args in loops.items():
    p = subprocess.Popen(["target/release/rtick", "monitor", *args, "-p", "90", "-q", "-i", "1ms",
                          "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL)
    try:
        wait_ready(p); time.sleep(warm)
        for fmt, accept in formats.items():
            if p.poll() is not None:
                sys.exit(f"the monitor exited ({p.returncode})")
            times, c0 = [], http_cpu(p.pid)
            for _ in range(n):
                t = time.perf_counter(); ctype, body = get(accept); times.append(time.perf_counter() - t)
            cpu = (http_cpu(p.pid) - c0) / n
            times.sort()
            print(f"{name:<24}{fmt:<13}{len(body):>8}{statistics.median(times) * 1e6:>11.0f}"
                  f"{times[int(n * 0.99) - 1] * 1e6:>9.0f}{cpu * 1e6:>27.0f}   {ctype}")
    finally:
        p.terminate(); p.wait()
PY
