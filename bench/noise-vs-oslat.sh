#!/usr/bin/env bash
# rtick noise vs oslat (rt-tests), identical settings: one spinner pinned to
# CPU (1 by default), SCHED_FIFO PRIO (50), memory locked, SECS seconds.
# Runs alternate oslat, rtick --no-attribution, rtick (gaps attributed from
# trace events) … so that machine noise hits all alike. Both tools write
# oslat's histogram (every loop step in 1 µs buckets, 1024 of them: the last
# holds the steps of 1 ms and more) and one parser reads all three, so the
# comparison is like for like:
#   - period: the loop's mean step (duration ÷ steps): its sampling resolution;
#   - gaps: steps of 1 µs and more; their p50, p90, p99 (floor of the µs bucket) and the maximum;
#   - noise: the time in gaps under 1 ms (bucket midpoints), % of the run; the
#     gaps of 1 ms and more (RT throttling's 50 ms, the host) counted apart.
# attributed/plain says what tracing the CPU adds to the noise it measures.
#
# Usage: bench/noise-vs-oslat.sh        (PAIRS=3 SECS=10 CPU=1 PRIO=50 by default; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
SECS=${SECS:-10}
CPU=${CPU:-1}
PRIO=${PRIO:-50}

. bench/rt-tests.sh oslat
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), $(oslat -v 2>&1 | head -1); CPU $CPU, SCHED_FIFO $PRIO, ${SECS} s per run; results in $out"

for i in $(seq 1 "$PAIRS"); do
  oslat -c "$CPU" -f "$PRIO" -D "$SECS" -b 1024 >"$out/oslat-$i.txt"
  "$RTICK" noise -a "$CPU" -p "$PRIO" -D "$SECS" -q --no-attribution \
    --histogram "$out/plain-$i.txt" --histogram-buckets 1024 >/dev/null
  "$RTICK" noise -a "$CPU" -p "$PRIO" -D "$SECS" -q \
    --histogram "$out/attributed-$i.txt" --histogram-buckets 1024 --json "$out/attributed-$i.json" >/dev/null
done

python3 - "$out" "$PAIRS" <<'PY'
import statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])

def load(path):
    """oslat's summary: the buckets of the first CPU, its duration and maximum."""
    buckets, fields = [], {}
    for line in open(path):
        if ":\t" not in line:
            continue
        label, rest = line.split(":\t", 1)
        value = rest.split()[0]
        if label.strip().endswith("(us)"):
            buckets.append(int(value))
        else:
            fields[label.strip()] = value
    return buckets, float(fields["Duration"]), int(fields["Maximum"])

def pct(counts, q):
    n = sum(counts)
    rank = max(1, -(-int(q * n * 1000) // 1000))
    seen = 0
    for i, c in enumerate(counts):
        seen += c
        if seen >= rank:
            return i
    return float("nan")

tools = ("oslat", "plain", "attributed")
rows = {t: [] for t in tools}
print(f"{'run':<14}{'period ns':>10}{'gaps':>8}{'p50':>6}{'p90':>6}{'p99':>7}{'max':>8}{'noise %':>9}{'≥1ms':>6}   (gaps ≥ 1 µs; µs, floor of bucket)")
for i in range(1, pairs + 1):
    for t in tools:
        b, secs, mx = load(f"{out}/{t}-{i}.txt")
        gaps = b[1:]  # bucket i+1 holds steps of i µs to just under i+1
        period = secs * 1e9 / sum(b)
        noise = sum(c * (k + 1.5) for k, c in enumerate(gaps[:-1])) / (secs * 1e6) * 100
        r = dict(period=period, gaps=sum(gaps), p50=pct(gaps, 0.5) + 1, p90=pct(gaps, 0.9) + 1,
                 p99=pct(gaps, 0.99) + 1, max=mx, noise=noise, long=gaps[-1])
        rows[t].append(r)
        print(f"{t + '-' + str(i):<14}{r['period']:>10.1f}{r['gaps']:>8}{r['p50']:>6}{r['p90']:>6}{r['p99']:>7}{r['max']:>8}{r['noise']:>9.3f}{r['long']:>6}")
print()
def ratios(a, b, k):
    v = [y[k] / x[k] if x[k] else float("nan") for x, y in zip(rows[a], rows[b])]
    return f"{k:<7} ratios {', '.join(f'{x:.2f}' for x in v)}  median {statistics.median(v):.2f}"
for k in ("period", "p50", "p90", "p99", "max"):
    print("rtick plain / oslat      " + ratios("oslat", "plain", k))
for k in ("period", "gaps", "p50", "p90", "p99", "noise"):
    print("attributed / plain       " + ratios("plain", "attributed", k))
PY
