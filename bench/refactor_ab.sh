#!/usr/bin/env bash
# refactor_ab.sh - issue 14's "data/ model latencies unchanged within noise (paired rounds)": the run time of the
# data/ models (the original files, not optimized: this measures the runtime the refactor could have touched, not
# the search) with this tree's binary held to the avx2 kernel level (SUPEROPT_ISA=avx2) against a binary built from
# the tree the issue was read from (a19a8e6, before the refactor, AVX2 kernels, built with -march=x86-64-v3), on
# the same machine, in paired interleaved rounds. Each round runs `superopt run MODEL --iters ITERS --warmup WARMUP
# --threads T --json` once per binary, back to back (the order alternates from round to round); the figure is the
# median over rounds of the per-round ratios new/old of the run medians, every round printed.
# Usage: OLD=/path/to/old/build/superopt bench/refactor_ab.sh [MODEL.onnx ...]   (default: data/*.onnx)
#   Build OLD with: git worktree add --detach /work/old14 a19a8e6 && make -C /work/old14 -j2 ARCH=-march=x86-64-v3
# Env: BUILD (this tree's build dir, default build), ROUNDS (default 7), ITERS (default 20), WARMUP (default 3),
#      THREADS (default "1 2"), JSON (append one JSON line per model and thread count to this file).
# A model one of the binaries cannot run (e.g. data/bert_tok.onnx has a symbolic batch dimension) is reported and
# skipped. Run it on a quiet machine: nothing else of ours may run beside it; a loaded machine gives noise only.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
OLD=${OLD:-}
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-3}
THREADS=${THREADS:-1 2}
JSON=${JSON:-}
PY=/usr/bin/python3
[ -x "$SO" ] || { echo "refactor_ab: $SO not built (make)" >&2; exit 1; }
[ -n "$OLD" ] && [ -x "$OLD" ] || { echo "refactor_ab: set OLD to the pre-refactor superopt binary (see the header)" >&2; exit 1; }
case "$ROUNDS$ITERS$WARMUP" in *[!0-9]*) echo "refactor_ab: ROUNDS, ITERS and WARMUP must be numbers" >&2; exit 1 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ITERS" -ge 1 ] || { echo "refactor_ab: ROUNDS and ITERS must be >= 1" >&2; exit 1; }
[ $# -gt 0 ] || set -- data/*.onnx
ERR=$(mktemp); trap 'rm -f "$ERR"' EXIT
median() { $PY -c 'import statistics,sys; print("%.6f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ms() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])' 2>/dev/null; }
# one timed run: who (old|new), model, threads -> the run's median in ms on stdout, or nothing (message on stderr)
run1() {
    local who=$1 m=$2 t=$3 v
    if [ "$who" = old ]; then
        v=$("$OLD" run "$m" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$ERR" | ms)
    else
        v=$(SUPEROPT_ISA=avx2 "$SO" run "$m" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$ERR" | ms)
    fi
    [ -n "$v" ] || { echo "$(basename "$m" .onnx): $who run failed: $(head -1 "$ERR")" >&2; return 1; }
    echo "$v"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); new: $SO at SUPEROPT_ISA=avx2; old: $OLD"
echo "rounds $ROUNDS, iters $ITERS, warmup $WARMUP; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "$@"; do
    [ -f "$m" ] || { echo "refactor_ab: $m: no such file" >&2; continue; }
    name=$(basename "$m" .onnx)
    for t in $THREADS; do
        olds=(); news=(); ratios=(); failed=0
        for r in $(seq 1 "$ROUNDS"); do
            order="old new"; [ $((r % 2)) -eq 0 ] && order="new old"
            a=""; b=""
            for who in $order; do
                v=$(run1 "$who" "$m" "$t") || { failed=1; break; }
                if [ "$who" = old ]; then a=$v; else b=$v; fi
            done
            [ "$failed" = 1 ] && break
            olds+=("$a"); news+=("$b"); ratios+=("$($PY -c "print('%.4f' % ($b / $a))")")
        done
        if [ ${#ratios[@]} -eq 0 ]; then printf '%-20s %d thr  skipped (a run failed, above)\n' "$name" "$t"; continue; fi
        mo=$(median "${olds[@]}"); mn=$(median "${news[@]}"); mr=$(median "${ratios[@]}")
        printf '%-20s %d thr  old %10.4f ms  new(avx2) %10.4f ms  new/old %.3f  rounds: %s\n' "$name" "$t" "$mo" "$mn" "$mr" "${ratios[*]}"
        [ -n "$JSON" ] && printf '{"model": "%s", "threads": %d, "old_ms": %s, "new_avx2_ms": %s, "ratio": %s, "rounds": [%s]}\n' \
            "$name" "$t" "$mo" "$mn" "$mr" "$(IFS=,; echo "${ratios[*]}")" >>"$JSON"
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
