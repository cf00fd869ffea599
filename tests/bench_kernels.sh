#!/usr/bin/env bash
# bench_kernels.sh - backend benchmark: superopt run vs ONNX Runtime (optimizations disabled and all) on the same
# unoptimized models in the same run, at 1 and 2 threads, with achieved GFLOP/s against the machine's best sgemm 2048^3 (OpenBLAS or oneDNN).
# Usage: tests/bench_kernels.sh [MODEL.onnx ...]   (default: the data/full models of issue #3)
# Env: BUILD (build dir with superopt), ROUNDS (interleaved rounds, default 5), ITERS (timed runs per round; default
#      per model: enough for ~1 s of superopt per round, 10..200, so a 10 ms model is not timed over 0.1 s windows
#      that one burst of load on the shared machine covers whole), WARMUP (default ITERS/5, at least 2), THREADS
#      ("1 2"), JSON (file for one JSON line per model and thread count), OPTIMIZE=1 (superopt's column runs the
#      model `superopt MODEL` writes — the issue-15/22 comparison — while ORT runs the original; OPT_ARGS adds
#      optimize options; COST_TABLE: the measured costs the optimization decides with — default a table
#      measured by this run alone (superopt --cost-table, a fresh file per run), so the graph timed is the one
#      this run's own conditions choose, not one chosen from costs cached by earlier runs of the same
#      executable (the disk cache keeps the first measurement of each node configuration for good: one
#      measured at load ~10 kept a 1x1 conv enlarged to 3x3 in MNASNet, 0.42 ms instead of ~0.05 ms);
#      COST_TABLE=cache uses the disk cache, COST_TABLE=FILE that table), ORT_DISABLED=0 (leave out the ORT 'disabled' column), TORCH=1 (a PyTorch eager column, bench/torch_run.py, same rounds; data/ model names only).
#      LOCKSTEP=0 (the old mode below instead of lockstep), BATCH_MS (lockstep batch length, default 80).
# Lockstep (the default, bench/lockstep.py): each tool runs as ONE server per model and thread count (`superopt run
# --serve`, `ort_run.js --serve`, `torch_run.py --serve`: loaded, planned and warmed once, untimed), and every round
# is >= 8 cycles of short batches (~BATCH_MS each, one untimed re-warm run first), one batch per tool, the order
# running through all permutations; a round's ratio is the median of its cycles' paired batch ratios, so both sides of
# a ratio ran within a few hundred ms of each other (this VM flips between speed states for seconds at a time). A
# round times ~ITERS runs of superopt as before. Old mode (LOCKSTEP=0): each round starts superopt, ORT 'disabled'
# and ORT 'all' as processes back to back (the order rotates from round to round), ITERS timed runs each, and a
# round's ratio is the ratio of the two processes' medians.
# Either way the latency columns are the median over rounds of each tool's median latency, and the ratio columns are
# the MEDIAN OF THE PER-ROUND (PAIRED) RATIOS, so load from other processes hits both sides of a ratio alike.
# The min columns (fastest single run over all rounds) are less sensitive to a loaded machine. 'acc' is the
# issue-3 acceptance per row: so/dis <= 1 and so/all <= 1.25 (paired medians). The load average is printed
# before each thread count and at the end.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
ROUNDS=${ROUNDS:-5}
ITERS_SET=${ITERS:-}
WARMUP_SET=${WARMUP:-}
THREADS=${THREADS:-1 2}
JSON=${JSON:-}
OPTIMIZE=${OPTIMIZE:-0}
OPT_ARGS=${OPT_ARGS:-}
COST_TABLE=${COST_TABLE:-fresh}
TORCH=${TORCH:-0}
ORT_DISABLED=${ORT_DISABLED:-1}
LOCKSTEP=${LOCKSTEP:-1}
BATCH_MS=${BATCH_MS:-80}
ORT="node tools/ort/ort_run.js"
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ $# -gt 0 ]; then MODELS=("$@"); else
    MODELS=()
    for m in resnet50 resnext50_32x4d inception_v3 mobilenet_v2 squeezenet1_1 bert_base4 deepandwide; do
        [ -f data/full/$m.onnx ] && MODELS+=(data/full/$m.onnx)
    done
    if [ ${#MODELS[@]} -eq 0 ]; then echo "bench_kernels: no models in data/full (run 'make models')" >&2; exit 1; fi
fi
[ -x "$SO" ] || { echo "bench_kernels: $SO not built" >&2; exit 1; }
DNNL=""
[ -f /usr/include/oneapi/dnnl/dnnl.h ] && DNNL="-DSO_BENCH_DNNL -ldnnl"
# shellcheck disable=SC2086
cc -O2 -fopenmp bench/sgemm_peak.c -o "$TMP/sgemm_peak" -lopenblas $DNNL || exit 1
have_ort=1
$ORT "${MODELS[0]}" --iters 1 --warmup 0 --json >/dev/null 2>&1 || have_ort=0
[ $have_ort -eq 1 ] || echo "bench_kernels: ONNX Runtime (tools/ort/ort_run.js) not usable; ORT columns empty" >&2

# median_ms from one JSON line (or empty)
field() { $PY -c 'import json,sys
try: print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])
except Exception: print("")' "$1"; }

[ -n "$JSON" ] && : >"$JSON"
printf '%-16s %3s %10s %10s %10s %7s %7s %4s | %9s %9s %9s %7s %7s | %8s %6s | %9s %7s\n' model thr "so_med_ms" "dis_med" "all_med" "so/dis" "so/all" "acc" "so_min_ms" "dis_min" "all_min" "so/dis" "so/all" "GFLOP/s" "%peak" "torch_med" "so/tch"
CONT=(0 2); [ "$ORT_DISABLED" = 1 ] && CONT+=(1); [ "$TORCH" = 1 ] && CONT+=(3) # contenders, rotated per round
NK=${#CONT[@]}
COST_ARGS=()
case $COST_TABLE in
    cache) ;;
    fresh) COST_ARGS=(--cost-table "$TMP/costs.tsv") ;;
    *) COST_ARGS=(--cost-table "$COST_TABLE") ;;
esac
[ "$OPTIMIZE" = 1 ] && echo "superopt column: the model written by 'superopt MODEL ${COST_ARGS[*]} $OPT_ARGS'; ORT and PyTorch run the original"
for t in $THREADS; do
    # the best sgemm of the machine (as bench/isa_levels.sh): OpenBLAS as the environment sets it, and oneDNN where
    # installed. OpenBLAS alone is no peak where it does not know the CPU (0.3.21 on an Intel Xeon model 207:
    # Prescott kernels, 20 GFLOP/s), best of 10 each: robust to load spikes
    peak=$("$TMP/sgemm_peak" 2048 "$t" 10 | field gflops) peak_lib=OpenBLAS
    if [ -n "$DNNL" ]; then
        pk=$(SGEMM=onednn "$TMP/sgemm_peak" 2048 "$t" 10 | field gflops)
        [ -n "$pk" ] && $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2] or 0) else 1)' "$pk" "$peak" && peak=$pk peak_lib=oneDNN
    fi
    echo "sgemm 2048^3 peak at $t thread(s): $peak GFLOP/s ($peak_lib, the best of OpenBLAS and oneDNN); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    for m in "${MODELS[@]}"; do
        name=$(basename "$m" .onnx)
        sm=$m
        if [ "$OPTIMIZE" = 1 ]; then
            sm=$TMP/$name.opt.onnx
            # shellcheck disable=SC2086
            [ -f "$sm" ] || $SO "$m" -o "$sm" -q --threads "$t" "${COST_ARGS[@]}" $OPT_ARGS 2>"$TMP/err" ||
                { echo "$name: superopt optimize failed: $(head -1 "$TMP/err")" >&2; continue; }
        fi
        estj=$($SO run "$sm" --iters 3 --warmup 1 --threads "$t" --profile --json 2>"$TMP/prof") || estj=""
        gflop=$(sed -n 's/.*, \([0-9.]*\) GFLOP per run.*/\1/p' "$TMP/prof")
        est=$(echo "$estj" | field median_ms)
        ITERS=${ITERS_SET:-$($PY -c 'import math,sys
try: print(max(10, min(200, math.ceil(1000 / float(sys.argv[1])))))
except Exception: print(10)' "${est:-0}")}
        WARMUP=${WARMUP_SET:-$((ITERS / 5 > 2 ? ITERS / 5 : 2))}
        so=() dis=() all=() somin=() dismin=() allmin=() tch=() peak_act="" ls_json=""
        if [ "$LOCKSTEP" = 1 ]; then
            # one server per tool (the server prints no summary: peak activations from the estimating run)
            peak_act=$(echo "$estj" | field peak_activation_bytes)
            srv=("so=$SO run '$sm' --threads $t --warmup $WARMUP --serve")
            if [ $have_ort -eq 1 ]; then
                srv+=("all=$ORT '$m' --threads $t --warmup $WARMUP --opt all --serve")
                [ "$ORT_DISABLED" = 1 ] && srv+=("dis=$ORT '$m' --threads $t --warmup $WARMUP --opt disabled --serve")
            fi
            [ "$TORCH" = 1 ] && srv+=("tch=$PY bench/torch_run.py '$name' --threads $t --warmup $WARMUP --serve")
            $PY bench/lockstep.py --rounds "$ROUNDS" --iters "$ITERS" --batch-ms "$BATCH_MS" "${srv[@]}" >"$TMP/ls.json" 2>"$TMP/ls_err" ||
                { echo "$name: lockstep failed: $(grep -m1 . "$TMP/ls_err")" >&2; continue; }
            ls_json=$TMP/ls.json
            lsv() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(x) for x in d[sys.argv[2]].get(sys.argv[3], [])))' "$ls_json" "$1" "$2"; }
            read -ra so <<<"$(lsv per_round_ms so)"; read -ra somin <<<"$(lsv per_round_min_ms so)"
            read -ra all <<<"$(lsv per_round_ms all)"; read -ra allmin <<<"$(lsv per_round_min_ms all)"
            read -ra dis <<<"$(lsv per_round_ms dis)"; read -ra dismin <<<"$(lsv per_round_min_ms dis)"
            read -ra tch <<<"$(lsv per_round_ms tch)"
        fi
        for r in $(seq "$([ "$LOCKSTEP" = 1 ] && echo 0 || echo "$ROUNDS")"); do
            for k in $(seq 0 $((NK - 1))); do
                case ${CONT[$(((k + r) % NK))]} in
                0)
                    out=$($SO run "$sm" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$TMP/err") ||
                        { echo "$name: superopt run failed: $(head -1 "$TMP/err")" >&2; continue 3; }
                    so+=("$(echo "$out" | field median_ms)")
                    somin+=("$(echo "$out" | field min_ms)")
                    peak_act=$(echo "$out" | field peak_activation_bytes)
                    ;;
                1)
                    [ $have_ort -eq 1 ] || continue
                    o=$($ORT "$m" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --opt disabled --json 2>"$TMP/ort_err") ||
                        echo "$name: ONNX Runtime (disabled) failed: $(head -1 "$TMP/ort_err")" >&2
                    v=$(echo "$o" | field median_ms)
                    dis+=("${v:-x}")
                    dismin+=("$(echo "$o" | field min_ms)")
                    ;;
                2)
                    [ $have_ort -eq 1 ] || continue
                    o=$($ORT "$m" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --opt all --json 2>"$TMP/ort_err") ||
                        echo "$name: ONNX Runtime (all) failed: $(head -1 "$TMP/ort_err")" >&2
                    v=$(echo "$o" | field median_ms)
                    all+=("${v:-x}")
                    allmin+=("$(echo "$o" | field min_ms)")
                    ;;
                3)
                    o=$($PY bench/torch_run.py "$name" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$TMP/tch_err") ||
                        echo "$name: PyTorch failed: $(head -1 "$TMP/tch_err")" >&2
                    v=$(echo "$o" | field median_ms)
                    tch+=("${v:-x}")
                    ;;
                esac
            done
        done
        $PY - "$name" "$t" "${gflop:-0}" "${peak:-0}" "${peak_act:-0}" "${so[*]}" "${dis[*]:-}" "${all[*]:-}" "$JSON" "${somin[*]}" "${dismin[*]:-}" "${allmin[*]:-}" "$ITERS" "${tch[*]:-}" "$OPTIMIZE" "$ls_json" <<'EOF'
import json, statistics, sys
name, t, gflop, peak, act, so, dis, al, jf, somin, dismin, allmin, iters, tc, optimized, lsf = sys.argv[1:17]
ls = json.load(open(lsf)) if lsf else None # lockstep: the paired ratios are the driver's (median of cycle ratios)
def vals(s): # per round, None for a failed run ('x')
    return [float(x) if x not in ("x", "") else None for x in s.split()]
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
def paired(a, b): # median over rounds of a[r] / b[r]
    r = [x / y for x, y in zip(a, b) if x and y]
    return statistics.median(r) if r else None
S, D, A, T = vals(so), vals(dis), vals(al), vals(tc)
s, d, a = med(S), med(D), med(A)
rd, ra, rt = paired(S, D), paired(S, A), paired(S, T)
PR = {} # per-round paired ratios superopt / tool
if ls:
    PR = ls["per_round_ratio"]
    rd, ra, rt = (ls["ratio"].get(x) for x in ("dis", "all", "tch"))
tm = med(T)
s2, d2, a2 = med([min(vals(somin))] if somin.split() else []), None, None
dm, am = [x for x in vals(dismin) if x is not None], [x for x in vals(allmin) if x is not None]
d2, a2 = (min(dm) if dm else None), (min(am) if am else None)
gflop, peak = float(gflop), float(peak)
gfs = gflop / (s / 1e3) if s else 0.0
fmt = lambda x, w: ("%" + str(w) + ".4f") % x if x is not None else ("%" + str(w) + "s") % "-"
rat = lambda x: "%7.2f" % x if x is not None else "%7s" % "-"
rat2 = lambda x, y: "%7.2f" % (x / y) if x and y else "%7s" % "-"
acc = "-" if rd is None or ra is None else ("ok" if rd <= 1.0 and ra <= 1.25 else "no")
print("%-16s %3s %s %s %s %s %s %4s | %s %s %s %s %s | %8.2f %5.1f%% | %s %s" % (name, t, fmt(s, 10), fmt(d, 10), fmt(a, 10), rat(rd),
      rat(ra), acc, fmt(s2, 9), fmt(d2, 9), fmt(a2, 9), rat2(s2, d2), rat2(s2, a2), gfs, 100 * gfs / peak if peak else 0,
      fmt(tm, 9), rat(rt)))
if ls:
    print("   per-round superopt/ORT-all (lockstep: %d cycles a round, batches of %s runs): %s" % (ls["cycles"],
          "/".join("%s %d" % (x, ls["k"][x]) for x in ls["labels"]), " ".join("%.3f" % x for x in PR.get("all", []))))
    for x in ("dis", "tch"):
        if x in PR:
            print("   per-round superopt/%s: %s" % ({"dis": "ORT-disabled", "tch": "PyTorch"}[x], " ".join("%.3f" % y for y in PR[x])))
else:
    print("   per-round superopt/ORT-all: " + " ".join("%.3f" % (x / y) for x, y in zip(S, A) if x and y))
sys.stdout.flush()
if jf:
    with open(jf, "a") as f:
        f.write(json.dumps({"model": name, "threads": int(t), "superopt_ms": s, "ort_disabled_ms": d, "ort_all_ms": a,
                            "ratio_disabled_paired": rd, "ratio_all_paired": ra, "rounds": len(S), "iters_per_round": int(iters),
                            "superopt_min_ms": s2, "ort_disabled_min_ms": d2, "ort_all_min_ms": a2,
                            "gflop": gflop, "gflops": gfs, "sgemm_peak_gflops": peak,
                            "peak_activation_bytes": int(float(act)), "optimized": optimized == "1",
                            "per_round_superopt_ms": S, "per_round_ort_all_ms": A, "per_round_torch_ms": T,
                            "torch_ms": tm, "ratio_torch_paired": rt, "mode": "lockstep" if ls else "processes",
                            "per_round_ratio_all": PR.get("all") if ls else [x / y for x, y in zip(S, A) if x and y],
                            "per_round_ratio_disabled": PR.get("dis"), "per_round_ratio_torch": PR.get("tch"),
                            "lockstep": {k: ls[k] for k in ("k", "warm", "cycles", "cycle_ratio_iqr")} if ls else None}) + "\n")
EOF
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
