#!/usr/bin/env bash
# steps_threads.sh - where a model's 2-thread time goes, step by step: `superopt run MODEL --profile` at 1 and 2
# threads alternately (one process per round and thread count, so each round also re-makes the plan-time kernel
# choices), then per step the kernel each thread count ran (a/b when processes differ), the median over rounds of the
# step's median, the fastest run over all rounds, GFLOP/s on the fastest runs and the speed-up 1T/2T on medians and
# on minima, and the sums: time outside the steps per run, and 2T - 1T/2 (the loss against a perfect 2x) per step.
# On a loaded machine only the minima mean anything (a step's fastest run is the one in which both vCPUs were ours).
# Usage: bench/steps_threads.sh MODEL.onnx   (e.g. a model `superopt MODEL -o OPT.onnx --threads 2` wrote)
# Env: BUILD (default build), ROUNDS (default 5), ITERS (default 30), WARMUP (default 3), TOP (rows of the largest
#      losses printed after the table, default 10).
set -u
PY=${PY:-/usr/bin/python3}
BUILD=${BUILD:-build}
SO=$BUILD/superopt
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-3}
TOP=${TOP:-10}
[ $# -eq 1 ] || { echo "steps_threads: usage: bench/steps_threads.sh MODEL.onnx" >&2; exit 1; }
[ -f "$1" ] || { echo "steps_threads: $1: no such file" >&2; exit 1; }
[ -x "$SO" ] || { echo "steps_threads: $SO not built (make)" >&2; exit 1; }
case "$ROUNDS$ITERS$WARMUP$TOP" in *[!0-9]*) echo "steps_threads: ROUNDS, ITERS, WARMUP and TOP must be numbers" >&2; exit 1 ;; esac
if [ "$ROUNDS" -lt 1 ] || [ "$ITERS" -lt 1 ]; then echo "steps_threads: ROUNDS and ITERS must be >= 1" >&2; exit 1; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "steps_threads: $(basename "$1"), $ROUNDS rounds x $ITERS runs at 1 and 2 threads; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
    for t in 1 2; do
        "$SO" run "$1" --threads "$t" --iters "$ITERS" --warmup "$WARMUP" --profile >"$TMP/t$t.r$r.txt" 2>&1 ||
            { echo "steps_threads: $SO run $1 --threads $t failed: $(head -1 "$TMP/t$t.r$r.txt")" >&2; exit 1; }
    done
done
$PY - "$TMP" "$ROUNDS" "$TOP" <<'EOF'
import re, statistics as st, sys
tmp, rounds, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(t):
    out = []
    for r in range(1, rounds + 1):
        steps, gap, flop = {}, None, None
        for line in open(f"{tmp}/t{t}.r{r}.txt"):
            m = re.match(r"runs: wall median ([\d.]+) ms, min ([\d.]+) ms; outside the steps median ([\d.]+)", line)
            if m: gap = float(m.group(3))
            f = line.split()
            # step node op kernel ms % GFLOP/s min_ms min_GF/s ("-" without GFLOP/s)
            if len(f) == 9 and f[0].isdigit():
                fl = float(f[6]) * float(f[4]) * 1e6 if f[6] != "-" else 0.0
                steps[int(f[0])] = (f[1], re.sub(r"_(scalar|avx2|avx512)", "", f[3]), float(f[4]), float(f[7]), fl)
        if not steps: sys.exit(f"steps_threads: no profile table in {tmp}/t{t}.r{r}.txt")
        out.append((steps, gap))
    return out
r1, r2 = load(1), load(2)
if sorted(r1[0][0]) != sorted(r2[0][0]): sys.exit("steps_threads: the 1- and 2-thread runs have different steps")
print("%-4s %-22s %-26s %-26s %8s %8s %8s %8s %7s %7s %6s %6s" % ("step", "node", "kernel 1T", "kernel 2T", "med1", "min1", "med2", "min2",
      "GF1min", "GF2min", "sp_med", "sp_min"))
tot = [0.0] * 4
loss = []
for s in sorted(r1[0][0]):
    node = r1[0][0][s][0]
    k1 = "/".join(sorted({x[0][s][1] for x in r1})); k2 = "/".join(sorted({x[0][s][1] for x in r2}))
    med1 = st.median(x[0][s][2] for x in r1); mn1 = min(x[0][s][3] for x in r1)
    med2 = st.median(x[0][s][2] for x in r2); mn2 = min(x[0][s][3] for x in r2)
    fl = max(x[0][s][4] for x in r1)
    for i, v in enumerate((med1, mn1, med2, mn2)): tot[i] += v
    loss.append((mn2 - mn1 / 2, s, node, k2))
    g = lambda ms: "%7.0f" % (fl / ms / 1e6) if fl and ms > 0 else "%7s" % "-"
    sp = lambda a, b: a / b if b > 0 else 0
    print("%-4d %-22s %-26s %-26s %8.3f %8.3f %8.3f %8.3f %s %s %6.2f %6.2f" % (s, node[:22], k1[:26], k2[:26], med1, mn1, med2, mn2,
          g(mn1), g(mn2), sp(med1, med2), sp(mn1, mn2)))
print("sums of the steps: medians 1T %.2f / 2T %.2f ms (%.2fx), minima 1T %.2f / 2T %.2f ms (%.2fx); 2T - 1T/2 on minima %.2f ms" % (
      tot[0], tot[2], tot[0] / tot[2] if tot[2] else 0, tot[1], tot[3], tot[1] / tot[3] if tot[3] else 0, tot[3] - tot[1] / 2))
print("time outside the steps per run (median): 1T %s ms, 2T %s ms" % ([x[1] for x in r1], [x[1] for x in r2]))
print("largest losses against a perfect 2x on minima (2T - 1T/2, ms):")
for l, s, node, k in sorted(loss, reverse=True)[:top]:
    print("  %7.3f  step %d %s (%s)" % (l, s, node, k))
EOF
echo "steps_threads: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
