#!/usr/bin/env bash
# avx2_vs_before.sh - issue 22's "on an AVX2 machine nothing gets slower than today": this tree's binary held to the
# avx2 kernel level (SUPEROPT_ISA=avx2) against a binary built from the tree as it was before the ISA dispatch
# (147d24e: AVX2-only kernels, built with -march=x86-64-v3, i.e. what an AVX2 machine ran), on the same machine, in
# paired interleaved rounds. Each binary optimizes each model itself (`superopt MODEL -o OUT --threads T`, its own
# defaults: for this tree that includes the blocked layout at block 8), then each round runs both optimized models
# back to back (the order alternates from round to round) with `superopt run --iters ITERS --json`; the figure is
# the median over rounds of new/old per-round ratios of the run medians, every round printed.
# Usage: OLD=/path/to/old/superopt bench/avx2_vs_before.sh MODEL.onnx ...
#   Build OLD with: git worktree add --detach /tmp/old 147d24e && make -C /tmp/old -j2 (its Makefile defaults to
#   -march=x86-64-v3).
# Env: BUILD (this tree's build dir, default build), ROUNDS (default 7), ITERS (default 10), WARMUP (default 2),
#      THREADS (default "1 2"), CACHE (directory that keeps the optimized models between invocations, so the
#      optimizing can be done before the quiet measurement; default a temporary directory), PREP_ONLY=1 (optimize
#      only), CLOCK=cpu (time each inference by the CPU time of the thread that runs it, through the LD_PRELOAD shim
#      bench/cpuclock.c, for both binaries: threads 1 only; on a loaded machine this compares the work each process
#      does, not the time it waits for a CPU — a diagnostic, the quiet wall-clock run stays the claim), OLD_RULES (the old tree's rules/default.rules; default: next to OLD's build directory), JSON (append one JSON line per model and thread count to this file).
# Run the measuring part on a quiet machine: nothing else of ours may run beside it.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
OLD=${OLD:-}
OLD_RULES=${OLD_RULES:-$(dirname "${OLD:-.}")/../rules/default.rules}   # the old tree's own rule file
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-2}
THREADS=${THREADS:-1 2}
JSON=${JSON:-}
PY=/usr/bin/python3
[ -x "$SO" ] || { echo "avx2_vs_before: $SO not built (make)" >&2; exit 1; }
[ -n "$OLD" ] && [ -x "$OLD" ] || { echo "avx2_vs_before: set OLD to the old superopt binary (see the header)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: OLD=... bench/avx2_vs_before.sh MODEL.onnx ..." >&2; exit 1; }
OWN_TMP=""; ERR=""; SHIM=""
trap 'rm -rf ${OWN_TMP:+"$OWN_TMP"} ${ERR:+"$ERR"} ${SHIM:+"$SHIM"}' EXIT   # one trap: a second would replace the first
if [ -n "${CACHE:-}" ]; then mkdir -p "$CACHE" || exit 1; TMP=$CACHE; else TMP=$(mktemp -d); OWN_TMP=$TMP; fi
ERR=$(mktemp)
PRE=""
if [ "${CLOCK:-wall}" = cpu ]; then
    [ "$THREADS" = 1 ] || { echo "avx2_vs_before: CLOCK=cpu needs THREADS=1 (one thread's CPU time)" >&2; exit 1; }
    SHIM=$(mktemp --suffix=.so)
    cc -O2 -shared -fPIC "$(dirname "$0")/cpuclock.c" -o "$SHIM" -ldl || { echo "avx2_vs_before: cannot build bench/cpuclock.c" >&2; exit 1; }
    PRE=$SHIM
elif [ "${CLOCK:-wall}" != wall ]; then
    echo "avx2_vs_before: CLOCK must be wall or cpu, not '$CLOCK'" >&2; exit 1
fi
median() { $PY -c 'import statistics,sys; print("%.6f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ms() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])'; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); new: $SO at SUPEROPT_ISA=avx2; old: $OLD; clock: ${CLOCK:-wall}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "$@"; do
    name=$(basename "$m" .onnx)
    for t in $THREADS; do
        o_old=$TMP/$name.t$t.old.onnx
        o_new=$TMP/$name.t$t.new.onnx
        [ -s "$o_old" ] || "$OLD" "$m" -o "$o_old" -q --threads "$t" --rules "$OLD_RULES" 2>"$ERR" ||
            { echo "$name: old optimize failed: $(head -1 "$ERR")" >&2; continue; }
        [ -s "$o_new" ] || SUPEROPT_ISA=avx2 "$SO" "$m" -o "$o_new" -q --threads "$t" 2>"$ERR" ||
            { echo "$name: new optimize failed: $(head -1 "$ERR")" >&2; continue; }
        [ "${PREP_ONLY:-0}" = 1 ] && continue
        olds=(); news=(); ratios=()
        for r in $(seq 1 "$ROUNDS"); do
            order="old new"; [ $((r % 2)) -eq 0 ] && order="new old"
            for who in $order; do
                if [ "$who" = old ]; then
                    v=$(LD_PRELOAD=$PRE "$OLD" run "$o_old" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$ERR" | ms) ||
                        { echo "$name: old run failed: $(head -1 "$ERR")" >&2; v=""; }
                    a=$v
                else
                    v=$(LD_PRELOAD=$PRE SUPEROPT_ISA=avx2 "$SO" run "$o_new" --iters "$ITERS" --warmup "$WARMUP" --threads "$t" --json 2>"$ERR" | ms) ||
                        { echo "$name: new run failed: $(head -1 "$ERR")" >&2; v=""; }
                    b=$v
                fi
            done
            [ -n "$a" ] && [ -n "$b" ] || continue
            olds+=("$a"); news+=("$b"); ratios+=("$($PY -c "print('%.4f' % ($b / $a))")")
        done
        [ ${#ratios[@]} -gt 0 ] || continue
        mo=$(median "${olds[@]}"); mn=$(median "${news[@]}"); mr=$(median "${ratios[@]}")
        printf '%-20s %d thr  old %9.3f ms  new(avx2) %9.3f ms  new/old %.3f  rounds: %s\n' "$name" "$t" "$mo" "$mn" "$mr" "${ratios[*]}"
        [ -n "$JSON" ] && printf '{"model": "%s", "threads": %d, "old_ms": %s, "new_avx2_ms": %s, "ratio": %s, "rounds": [%s]}\n' \
            "$name" "$t" "$mo" "$mn" "$mr" "$(IFS=,; echo "${ratios[*]}")" >>"$JSON"
    done
done
