# ab_lib.sh - shared old-vs-new timing for the A/B bench scripts (sourced by bench/ab.sh, bench/gelu_ab.sh,
# bench/refactor_ab.sh; not run on its own).
# What it measures, lockstep (the default when both binaries have `run --serve`; bench/lockstep.py): one
# `superopt run MODEL --threads T --warmup WARMUP --serve` server per binary, model and thread count (load and plan
# untimed), each round >= 8 cycles (and >= ITERS timed runs of new) of short batches (~BATCH_MS, default 80 ms, one
# untimed re-warm run first), new and old alternating first; a round's ratio is the median of its cycles' ratios
# new/old, so both sides of a ratio ran within ~200 ms of each other (this VM flips between speed states for seconds).
# Old mode (LOCKSTEP=0, or an OLD binary without --serve): `superopt run MODEL --iters ITERS --warmup WARMUP --threads
# T --json` once per binary per round, back to back, the order alternating from round to round (old new, new old,
# ...), a round's ratio new/old of the two runs' medians. Either way the figure is the median over rounds of the
# per-round ratios, every round printed. Claims need >= 7 rounds on a quiet machine (nothing else of ours running).
# Contract: the sourcing script sets AB_NAME (its name for messages) and THREADS; the environment may set BUILD (the new
# build directory, default build: SO is $BUILD/superopt), OLD (the old binary), ROUNDS (default 7), ITERS (default
# 20), WARMUP (default 3), JSON (a file: one JSON line per ab_model call is appended), LOCKSTEP (default 1; 0: old
# mode) and BATCH_MS (default 80). ab_check
# validates them and exits non-zero with a one-line message when one is wrong. Temporary files live in AB_TMP,
# which ab_check creates and removes at exit.
PY=${PY:-/usr/bin/python3}
BUILD=${BUILD:-build}
SO=$BUILD/superopt
OLD=${OLD:-}
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-3}
JSON=${JSON:-}
LOCKSTEP=${LOCKSTEP:-1}
BATCH_MS=${BATCH_MS:-80}

# validate the environment the caller set (see the contract above); exits on error
ab_check() {
    [ -x "$SO" ] || { echo "$AB_NAME: $SO not built (make)" >&2; exit 1; }
    [ -n "${OLD:-}" ] && [ -x "$OLD" ] || { echo "$AB_NAME: set OLD to the superopt binary to compare with (see the header)" >&2; exit 1; }
    case "$ROUNDS$ITERS$WARMUP" in *[!0-9]*) echo "$AB_NAME: ROUNDS, ITERS and WARMUP must be numbers" >&2; exit 1 ;; esac
    [ "$ROUNDS" -ge 1 ] && [ "$ITERS" -ge 1 ] || { echo "$AB_NAME: ROUNDS and ITERS must be >= 1" >&2; exit 1; }
    AB_TMP=$(mktemp -d)
    trap 'rm -rf "$AB_TMP"' EXIT
    if [ "$LOCKSTEP" = 1 ] && ! { "$SO" run --help 2>&1 | grep -q -- --serve && "$OLD" run --help 2>&1 | grep -q -- --serve; }; then
        echo "$AB_NAME: a binary has no 'run --serve': old mode (separate processes per round)" >&2
        LOCKSTEP=0
    fi
}

ab_median() { $PY -c 'import statistics,sys; print("%.6f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

# one timed run: binary, model, threads, ISA level ("" = the CPU's) -> the run's median in ms on stdout, or nothing
# and a one-line message on stderr
ab_run1() {
    local v
    v=$(SUPEROPT_ISA=${4:-${SUPEROPT_ISA:-}} "$1" run "$2" --iters "$ITERS" --warmup "$WARMUP" --threads "$3" --json 2>"$AB_TMP/err" |
        $PY -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])' 2>/dev/null)
    [ -n "$v" ] || { echo "$AB_NAME: $1 on $(basename "$2") failed: $(head -1 "$AB_TMP/err")" >&2; return 1; }
    echo "$v"
}

# paired rounds of one model: model, threads, old's ISA level, new's ISA level ("" = the CPU's), elements (> 0:
# also print ns per element) -> every round and a summary line on stdout, a JSON line appended to $JSON if set;
# returns 1 (after a message) when a run fails
ab_model() {
    local m=$1 t=$2 lo=$3 ln=$4 nel=${5:-0} r o n mo mn mr olds=() news=() ratios=() per=""
    if [ "$LOCKSTEP" = 1 ]; then
        # servers: new first (the driver's ratios are first / other = new / old)
        $PY "$(dirname "${BASH_SOURCE[0]}")/lockstep.py" --rounds "$ROUNDS" --iters "$ITERS" --batch-ms "$BATCH_MS" \
            "new=env SUPEROPT_ISA='${ln:-${SUPEROPT_ISA:-}}' '$SO' run '$m' --threads $t --warmup $WARMUP --serve" \
            "old=env SUPEROPT_ISA='${lo:-${SUPEROPT_ISA:-}}' '$OLD' run '$m' --threads $t --warmup $WARMUP --serve" >"$AB_TMP/ls.json" 2>"$AB_TMP/err" ||
            { echo "$AB_NAME: lockstep on $(basename "$m") failed: $(grep -m1 . "$AB_TMP/err")" >&2; return 1; }
        while read -r o n mr; do
            olds+=("$o"); news+=("$n"); ratios+=("$mr")
            echo "  round $((${#ratios[@]} - 1)): old $o ms, new $n ms, new/old $mr (lockstep)"
        done < <($PY -c 'import json,sys; d=json.load(open(sys.argv[1]))
for o, n, r in zip(d["per_round_ms"]["old"], d["per_round_ms"]["new"], d["per_round_ratio"]["old"]): print(o, n, r)
print("  lockstep: %d cycles a round, batches of %d (new) / %d (old) runs" % (d["cycles"], d["k"]["new"], d["k"]["old"]), file=sys.stderr)' "$AB_TMP/ls.json")
    fi
    for ((r = 0; r < (LOCKSTEP == 1 ? 0 : ROUNDS); r++)); do
        if ((r % 2 == 0)); then o=$(ab_run1 "$OLD" "$m" "$t" "$lo") || return 1; n=$(ab_run1 "$SO" "$m" "$t" "$ln") || return 1
        else n=$(ab_run1 "$SO" "$m" "$t" "$ln") || return 1; o=$(ab_run1 "$OLD" "$m" "$t" "$lo") || return 1; fi
        olds+=("$o"); news+=("$n"); ratios+=("$($PY -c "print('%.4f' % ($n / $o))")")
        echo "  round $r: old $o ms, new $n ms, new/old ${ratios[-1]}"
    done
    mo=$(ab_median "${olds[@]}"); mn=$(ab_median "${news[@]}"); mr=$(ab_median "${ratios[@]}")
    [ "$nel" -gt 0 ] && per=$($PY -c "print(' (%.3f / %.3f ns per element)' % ($mo * 1e6 / $nel, $mn * 1e6 / $nel))")
    printf '%-22s %d thr  old%s %10.4f ms  new%s %10.4f ms%s  median new/old %.3f  rounds: %s\n' "$(basename "$m" .onnx)" "$t" \
        "${lo:+($lo)}" "$mo" "${ln:+($ln)}" "$mn" "$per" "$mr" "${ratios[*]}"
    [ -n "${JSON:-}" ] && printf '{"model": "%s", "threads": %d, "old_isa": "%s", "new_isa": "%s", "old_ms": %s, "new_ms": %s, "ratio": %s, "rounds": [%s], "mode": "%s"}\n' \
        "$(basename "$m" .onnx)" "$t" "$lo" "$ln" "$mo" "$mn" "$mr" "$(IFS=,; echo "${ratios[*]}")" \
        "$([ "$LOCKSTEP" = 1 ] && echo lockstep || echo processes)" >>"$JSON"
    return 0
}

# the header line every A/B run prints: CPU, binaries, rounds, load
ab_header() {
    echo "$AB_NAME: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); new: $SO; old: $OLD"
    echo "$AB_NAME: rounds $ROUNDS, iters $ITERS, warmup $WARMUP; $([ "$LOCKSTEP" = 1 ] && echo "lockstep (one server per binary, batches of ~$BATCH_MS ms)" || echo "old mode (a process per binary per round)"); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}
