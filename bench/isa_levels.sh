#!/usr/bin/env bash
# isa_levels.sh - the per-ISA-level tables of docs/BENCHMARKS.md: for each kernel level this CPU has (scalar,
# avx2, avx512), GFLOP/s of each hot kernel (from `superopt run --profile`, summed over the steps that ran it)
# against the best sgemm 2048^3 of the machine measured in the same run (oneDNN's dnnl_sgemm, OpenBLAS with its
# own core choice — OPENBLAS_CORETYPE unset for that one command only —, OpenBLAS held to Haswell as in the
# tests: the best of them is the peak), whole-model latency per level with the median of per-round paired ratios
# against the avx2 level, and whole-model throughput (the model's FLOPs counted as direct convolution / median
# latency) against that peak. Ends with the two tables as Markdown, ready for docs/BENCHMARKS.md.
# Usage: bench/isa_levels.sh [MODEL.onnx ...]   (default: resnet50 squeezenet1_1 inception_v3 densenet121 from
#        data/full, `make models`)
# Env: BUILD (build dir, default build), ROUNDS (interleaved rounds, default 5), ITERS (timed runs per model,
#      level and round, default 10; the scalar level ITERS_SCALAR, default 3), THREADS (default "1 2"), LEVELS
#      (default: every level the CPU has), OPTIMIZE (1, default: each level runs the model `superopt MODEL --isa L`
#      writes — blocked layout b=16 at avx512, b=8 at avx2, which the scalar level runs too —; 0: the original),
#      JSON (one JSON line per model, level and thread count).
# Each round runs every level back to back (the order rotates from round to round), so load from other
# processes hits the levels alike; latency = median over rounds of each run's median, ratio = median of the
# per-round ratios level / avx2. Takes ~3-4 minutes on a quiet 2-core Zen 5 with the defaults. Run it on a quiet
# machine: the figures are only as steady as the machine.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-10}
ITERS_SCALAR=${ITERS_SCALAR:-3}
THREADS=${THREADS:-1 2}
OPTIMIZE=${OPTIMIZE:-1}
JSON=${JSON:-}
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ -x "$SO" ] || { echo "isa_levels: $SO not built (make)" >&2; exit 1; }
if [ $# -gt 0 ]; then MODELS=("$@"); else
    MODELS=()
    for m in resnet50 squeezenet1_1 inception_v3 densenet121; do
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
# shellcheck disable=SC2086
cc -O2 -fopenmp bench/sgemm_peak.c -o "$TMP/sgemm_peak" -lopenblas $DNNL || exit 1
gf() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["gflops"])'; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); levels:${LEVELS}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# the model each level runs: optimized once (1 thread) at avx512 (b = 16) and at avx2 (b = 8; the scalar level
# runs the b = 8 file on its portable kernels)
model_for() { # model level -> path
    local name fam
    name=$(basename "$1" .onnx)
    fam=avx2
    [ "$2" = avx512 ] && fam=avx512
    if [ "$OPTIMIZE" = 1 ]; then echo "$TMP/$name.$fam.onnx"; else echo "$1"; fi
}
if [ "$OPTIMIZE" = 1 ]; then
    for model in "${MODELS[@]}"; do
        for l in "${LV[@]}"; do
            [ "$l" = scalar ] && continue
            out=$(model_for "$model" "$l")
            "$SO" "$model" --isa "$l" -q --threads 1 -o "$out" 2>"$TMP/opt.err" ||
                { echo "isa_levels: optimizing $model at $l failed: $(head -1 "$TMP/opt.err")" >&2; exit 1; }
        done
    done
fi
: >"$TMP/all.jsonl"
for t in $THREADS; do
    # the machine's sgemm 2048^3 peak, same run: best of 10 for each library
    pk_dnnl=0
    [ -n "$DNNL" ] && pk_dnnl=$(SGEMM=onednn "$TMP/sgemm_peak" 2048 "$t" 10 | gf)
    pk_own=$(env -u OPENBLAS_CORETYPE "$TMP/sgemm_peak" 2048 "$t" 10 | gf)
    pk_hsw=$(OPENBLAS_CORETYPE=Haswell "$TMP/sgemm_peak" 2048 "$t" 10 | gf)
    echo "sgemm 2048^3 at $t thread(s): oneDNN $pk_dnnl, OpenBLAS own core choice $pk_own, OpenBLAS Haswell $pk_hsw GFLOP/s"
    for model in "${MODELS[@]}"; do
        for ((r = 0; r < ROUNDS; r++)); do
            n=${#LV[@]}
            for ((q = 0; q < n; q++)); do
                l=${LV[$(((q + r) % n))]}
                it=$ITERS
                [ "$l" = scalar ] && it=$ITERS_SCALAR
                "$SO" run "$(model_for "$model" "$l")" --isa "$l" --threads "$t" --iters "$it" --warmup 1 --json --profile \
                    >"$TMP/run.$l.$r.json" 2>"$TMP/prof.$l.$r.txt" || { echo "isa_levels: $model at $l failed" >&2; exit 1; }
            done
        done
        $PY - "$model" "$t" "$ROUNDS" "$TMP" "$pk_dnnl" "$pk_own" "$pk_hsw" "$JSON" "${LV[@]}" <<'EOF'
import json, re, statistics as st, sys
model, t, rounds, tmp, pd, po, ph, jf = sys.argv[1:9]
levels = sys.argv[9:]
rounds = int(rounds)
peak = max(float(pd), float(po), float(ph))
lat, kern, gflop = {}, {}, {}
for l in levels:
    lat[l] = [json.loads(open(f"{tmp}/run.{l}.{r}.json").read().strip().splitlines()[-1])["median_ms"] for r in range(rounds)]
    # per kernel: GFLOP and ms summed over the steps that ran it (profile lines: step node op kernel ms % GFLOP/s
    # min_ms min_GF/s; "-" for an op without GFLOP/s)
    k = {}
    for r in range(rounds):
        for line in open(f"{tmp}/prof.{l}.{r}.txt"):
            f = line.split()
            if line.startswith("profile:") and "GFLOP per run" in line:
                gflop[l] = float(line.split(",")[-1].split()[0])
            if len(f) == 9 and f[0].isdigit() and f[6] != "-":
                name = re.sub(r"_(scalar|avx2|avx512)$", "", f[3].split("+")[0])  # one row per kernel family
                ms, gfs = float(f[4]), float(f[6])
                a = k.setdefault(name, [0.0, 0.0])
                a[0] += ms * gfs / 1e3
                a[1] += ms
    kern[l] = {n: (g / (ms / 1e3) if ms > 0 else 0.0, ms / rounds) for n, (g, ms) in k.items()}
base = "avx2" if "avx2" in levels else levels[0]
name = model.rsplit("/", 1)[-1].rsplit(".", 1)[0]
print(f"\n{name}, {t} thread(s), {rounds} rounds; sgemm 2048^3 peak {peak:.1f} GFLOP/s")
print("  level    median_ms  ratio_vs_" + base + "  whole-model GFLOP/s (% of peak)")
rows = []
for l in levels:
    ratio = st.median(a / b for a, b in zip(lat[l], lat[base]))
    thr = gflop.get(l, 0.0) / (st.median(lat[l]) / 1e3)
    print(f"  {l:8s} {st.median(lat[l]):10.3f}  {ratio:.3f}        {thr:8.1f} ({100 * thr / peak:4.0f}%)")
    rows.append({"model": name, "threads": int(t), "isa": l, "median_ms": st.median(lat[l]), "ratio_vs_" + base: ratio,
                 "model_gflops": thr, "sgemm_peak_gflops": peak, "kernels_gflops": {n: v[0] for n, v in kern[l].items()},
                 "kernels_ms": {n: v[1] for n, v in kern[l].items()}})
names = sorted({n for l in levels for n in kern[l]}, key=lambda n: -max(kern[l].get(n, (0, 0))[1] for l in levels))
print("  kernel (GFLOP/s, % of peak)   " + "".join(f"{l:>20s}" for l in levels))
for n in names[:12]:
    cells = ""
    for l in levels:
        g = kern[l].get(n)
        cells += f"{g[0]:12.1f} ({100 * g[0] / peak:4.0f}%)" if g else f"{'-':>20s}"
    print(f"  {n:30s}{cells}")
with open(f"{tmp}/all.jsonl", "a") as f:
    for row in rows: f.write(json.dumps(row) + "\n")
if jf:
    with open(jf, "a") as f:
        for row in rows: f.write(json.dumps(row) + "\n")
EOF
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# the Markdown tables of docs/BENCHMARKS.md
$PY - "$TMP/all.jsonl" "${LV[@]}" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
levels = sys.argv[2:]
by = {}
for r in rows: by.setdefault((r["model"], r["threads"]), {})[r["isa"]] = r
top = levels[-1]
print("\n| model | threads | " + " | ".join(f"{l} ms" for l in levels) + f" | {top} / avx2 | {top} whole-model GFLOP/s (% of sgemm peak) |")
print("|---|---|" + "---|" * len(levels) + "---|---|")
for (m, t), d in by.items():
    r = d[top]
    ratio = r.get("ratio_vs_avx2", float("nan"))
    print(f"| {m} | {t} | " + " | ".join(f"{d[l]['median_ms']:.2f}" for l in levels) +
          f" | {ratio:.3f} | {r['model_gflops']:.1f} ({100 * r['model_gflops'] / r['sgemm_peak_gflops']:.0f}% of {r['sgemm_peak_gflops']:.0f}) |")
# hot kernels: summed over the models, per thread count (GFLOP/s = GFLOP / ms over every step that ran it)
for t in sorted({r["threads"] for r in rows}):
    acc = {}
    peak = max(r["sgemm_peak_gflops"] for r in rows if r["threads"] == t)
    for r in rows:
        if r["threads"] != t: continue
        for n, g in r["kernels_gflops"].items():
            ms = r["kernels_ms"][n]
            a = acc.setdefault(n, {}).setdefault(r["isa"], [0.0, 0.0])
            a[0] += g * ms / 1e3
            a[1] += ms
    names = sorted(acc, key=lambda n: -max(v[1] for v in acc[n].values()))[:14]
    print(f"\n| kernel ({t} thread(s), sgemm peak {peak:.0f} GFLOP/s) | " + " | ".join(f"{l} GFLOP/s (% peak)" for l in levels) + " |")
    print("|---|" + "---|" * len(levels))
    for n in names:
        cells = []
        for l in levels:
            v = acc[n].get(l)
            cells.append(f"{v[0] / (v[1] / 1e3):.1f} ({100 * v[0] / (v[1] / 1e3) / peak:.0f}%)" if v and v[1] > 0 else "-")
        print(f"| {n} | " + " | ".join(cells) + " |")
EOF
