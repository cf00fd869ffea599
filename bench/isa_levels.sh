#!/usr/bin/env bash
# isa_levels.sh - the per-ISA-level table of docs/BENCHMARKS.md: for each kernel level this CPU has (scalar,
# avx2, avx512), GFLOP/s of each hot kernel (from `superopt run --profile`, summed over the steps that ran it)
# against the best sgemm 2048^3 of the machine measured in the same run (oneDNN's dnnl_sgemm, OpenBLAS with its
# own core choice, OpenBLAS held to Haswell as in the tests: the best of them is the peak), and whole-model
# latency per level with the median of per-round paired ratios against the avx2 level.
# Usage: bench/isa_levels.sh [MODEL.onnx ...]   (default: the data/full models of issue 22, `make models`)
# Env: BUILD (build dir, default build), ROUNDS (interleaved rounds, default 7), ITERS (timed runs per model and
#      round, default 10), THREADS (default "1 2"), LEVELS (default: every level the CPU has), JSON (one JSON
#      line per model, level and thread count).
# Each round runs every level back to back (the order rotates from round to round), so load from other
# processes hits the levels alike; latency = median over rounds of each run's median, ratio = median of the
# per-round ratios level / avx2. Run it on a quiet machine: the figures are only as steady as the machine.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-10}
THREADS=${THREADS:-1 2}
JSON=${JSON:-}
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ -x "$SO" ] || { echo "isa_levels: $SO not built (make)" >&2; exit 1; }
if [ $# -gt 0 ]; then MODELS=("$@"); else
    MODELS=()
    for m in resnet50 resnext50_32x4d inception_v3 mobilenet_v2 squeezenet1_1 densenet121 efficientnet_b0 bert_base4; do
        [ -f data/full/$m.onnx ] && MODELS+=(data/full/$m.onnx)
    done
    [ ${#MODELS[@]} -gt 0 ] || { echo "isa_levels: no models in data/full (make models)" >&2; exit 1; }
fi
if [ -z "${LEVELS:-}" ]; then
    LEVELS=""
    for l in scalar avx2 avx512; do "$SO" run data/deepandwide.onnx --isa "$l" --iters 1 --warmup 0 >/dev/null 2>&1 && LEVELS="$LEVELS $l"; done
fi
read -r -a LV <<<"$LEVELS"
DNNL=""
[ -f /usr/include/oneapi/dnnl/dnnl.h ] && DNNL="-DSO_BENCH_DNNL -ldnnl"
cc -O2 -fopenmp bench/sgemm_peak.c -o "$TMP/sgemm_peak" -lopenblas $DNNL || exit 1

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); levels:${LEVELS}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $THREADS; do
    # the machine's sgemm 2048^3 peak, same run: best of 10 for each library
    pk_dnnl=""
    [ -n "$DNNL" ] && pk_dnnl=$(SGEMM=onednn "$TMP/sgemm_peak" 2048 "$t" 10 | $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["gflops"])')
    pk_own=$(env -u OPENBLAS_CORETYPE "$TMP/sgemm_peak" 2048 "$t" 10 | $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["gflops"])')
    pk_hsw=$(OPENBLAS_CORETYPE=Haswell "$TMP/sgemm_peak" 2048 "$t" 10 | $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["gflops"])')
    echo "sgemm 2048^3 at $t thread(s): oneDNN ${pk_dnnl:-n/a}, OpenBLAS own core choice $pk_own, OpenBLAS Haswell $pk_hsw GFLOP/s"
    for model in "${MODELS[@]}"; do
        for ((r = 0; r < ROUNDS; r++)); do
            n=${#LV[@]}
            for ((q = 0; q < n; q++)); do
                l=${LV[$(((q + r) % n))]}
                "$SO" run "$model" --isa "$l" --threads "$t" --iters "$ITERS" --warmup 2 --json --profile \
                    >"$TMP/run.$l.$r.json" 2>"$TMP/prof.$l.$r.txt" || { echo "isa_levels: $model at $l failed" >&2; exit 1; }
            done
        done
        $PY - "$model" "$t" "$ROUNDS" "$TMP" "${pk_dnnl:-0}" "$pk_own" "$pk_hsw" "$JSON" "${LV[@]}" <<'EOF'
import json, statistics as st, sys
model, t, rounds, tmp, pd, po, ph, jf = sys.argv[1:9]
levels = sys.argv[9:]
rounds = int(rounds)
peak = max(float(pd), float(po), float(ph))
lat, kern = {}, {}
for l in levels:
    lat[l] = [json.loads(open(f"{tmp}/run.{l}.{r}.json").read().strip().splitlines()[-1])["median_ms"] for r in range(rounds)]
    # per kernel: GFLOP and ms summed over the steps that ran it (profile lines: step node op kernel ms % GFLOP/s)
    k = {}
    for r in range(rounds):
        for line in open(f"{tmp}/prof.{l}.{r}.txt"):
            f = line.split()
            if len(f) == 7 and f[0].isdigit():
                name = f[3].split("+")[0]
                ms, gfs = float(f[4]), float(f[6])
                a = k.setdefault(name, [0.0, 0.0])
                a[0] += ms * gfs / 1e3
                a[1] += ms
    kern[l] = {n: (g / (ms / 1e3) if ms > 0 else 0.0, ms / rounds) for n, (g, ms) in k.items()}
base = "avx2" if "avx2" in levels else levels[0]
print(f"\n{model}, {t} thread(s), {rounds} rounds; peak {peak:.1f} GFLOP/s")
print("  level    median_ms  ratio_vs_" + base)
for l in levels:
    ratio = st.median(a / b for a, b in zip(lat[l], lat[base]))
    print(f"  {l:8s} {st.median(lat[l]):10.3f}  {ratio:.3f}")
names = sorted({n for l in levels for n in kern[l]}, key=lambda n: -max(kern[l].get(n, (0, 0))[1] for l in levels))
print("  kernel (GFLOP/s, % of peak)   " + "".join(f"{l:>20s}" for l in levels))
for n in names[:12]:
    cells = ""
    for l in levels:
        g = kern[l].get(n)
        cells += f"{g[0]:12.1f} ({100 * g[0] / peak:4.0f}%)" if g else f"{'-':>20s}"
    print(f"  {n:30s}{cells}")
if jf:
    with open(jf, "a") as f:
        for l in levels:
            f.write(json.dumps({"model": model, "threads": int(t), "isa": l, "median_ms": st.median(lat[l]),
                                "ratio_vs_" + base: st.median(a / b for a, b in zip(lat[l], lat[base])),
                                "sgemm_peak_gflops": peak, "kernels_gflops": {n: v[0] for n, v in kern[l].items()}}) + "\n")
EOF
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
