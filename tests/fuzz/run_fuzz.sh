#!/usr/bin/env bash
# run_fuzz.sh TARGET SECONDS - replays tests/fuzz/regressions/TARGET/*, then runs libFuzzer target
# $FUZZ_DIR/fuzz/fuzz_TARGET for SECONDS from the seed corpus tests/fuzz/TARGET/ (new inputs are
# kept in $FUZZ_DIR/corpus/TARGET/, crashes in $FUZZ_DIR/artifacts/TARGET/). Exit 1 on any finding.
# FUZZ_SEED: libFuzzer's -seed (0 = random, the default here; make fuzz passes 1 for repeatable CI runs).
set -u
t=$1
secs=$2
dir=${FUZZ_DIR:-build-fuzz}
bin=$dir/fuzz/fuzz_$t
case $t in
onnx) opts=(-max_len=131072 -dict=tests/fuzz/onnx.dict) ;;
onnx_dir) opts=(-max_len=65536 -dict=tests/fuzz/onnx.dict) ;;
rules) opts=(-max_len=16384 -dict=tests/fuzz/rules.dict) ;;
inputs) opts=(-max_len=1400) ;;
*) echo "run_fuzz.sh: unknown target '$t'" >&2; exit 2 ;;
esac
[ -x "$bin" ] || { echo "run_fuzz.sh: $bin not built (make fuzz-build)" >&2; exit 2; }
mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
shopt -s nullglob
regs=(tests/fuzz/regressions/$t/*)
if [ ${#regs[@]} -gt 0 ]; then
    if ! "$bin" "${opts[@]}" "${regs[@]}" >"$dir/fuzz_$t.replay.log" 2>&1; then
        tail -40 "$dir/fuzz_$t.replay.log"
        echo "fuzz_$t: a regression input fails again (log: $dir/fuzz_$t.replay.log)"
        exit 1
    fi
    echo "fuzz_$t: ${#regs[@]} regression inputs replayed clean"
fi
if ! "$bin" "${opts[@]}" -seed="${FUZZ_SEED:-0}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$t/" "$dir/corpus/$t" "tests/fuzz/$t" >"$dir/fuzz_$t.log" 2>&1; then
    tail -60 "$dir/fuzz_$t.log"
    echo "fuzz_$t: FAILED after fuzzing (crash input in $dir/artifacts/$t/, log $dir/fuzz_$t.log)"
    exit 1
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz_$t.log")
cov=$(grep -o 'cov: [0-9]*' "$dir/fuzz_$t.log" | tail -1)
echo "fuzz_$t: ${secs} s, ${execs:-?} executions, $cov, no crash"
