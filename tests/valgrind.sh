#!/usr/bin/env bash
# valgrind.sh - memcheck over the fast unit-test binaries and superopt run / optimize / inspect /
# generate on the small committed models: any invalid access, uninitialised use or leak (definite,
# indirect, possible; tests/valgrind.supp lists the few suppressed, all inside Z3) fails the step.
# Two jobs at a time: ~85 s of CPU in all (about 45 s wall on 2 idle cores; 3 min at load average 5).
# Usage: BUILD=build tests/valgrind.sh. Prints ok/FAIL lines; exit 0 iff all pass.
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v valgrind >/dev/null || { echo "FAIL - valgrind not found (make deps installs it)"; exit 1; }
# one thread each: OpenBLAS / OpenMP pools add nothing under valgrind (it serialises threads) but time
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 VG_TMP=$TMP
# valgrind 3.19 decodes AVX2 but not AVX-512, and its emulated cpuid reports no AVX-512: without
# SUPEROPT_ISA the kernels run at avx2 (on an AVX2 CPU), and a forced avx512 is lowered to avx2 here.
[ "${SUPEROPT_ISA:-}" = avx512 ] && { echo "note - valgrind runs the kernels at avx2 (SUPEROPT_ISA=avx512 given)"; export SUPEROPT_ISA=avx2; }
# oneDNN (dlopen'd by the blocked convs at avx2 too, kernels/dnnl.h) never loaded: its JIT code is not ours to check
export SUPEROPT_ONEDNN=0
export VG="valgrind -q --error-exitcode=101 --leak-check=full --suppressions=$(dirname "$0")/valgrind.supp"

# longest first, two at a time. Not test_search (27 s CPU of memcheck, a quarter of the step): the
# search, matcher and cost model run under memcheck through the four optimize jobs instead.
jobs=()
for t in limits verify gen; do jobs+=("$BUILD/tests/test_$t"); done
for m in bert2 nasrnn lstm2 deepandwide; do jobs+=("$SO data/$m.onnx -o $TMP/$m.opt.onnx -q --cost flops"); done
jobs+=("$SO generate --max-ops 1 --seed 1 -q -o $TMP/g.rules")
for m in bert2 resnet_small lstm2 nasrnn deepandwide; do
    jobs+=("$SO run data/$m.onnx --inputs data/$m.in.bin --outputs $TMP/$m.out --iters 1 --warmup 0")
done
jobs+=("$SO inspect data/squeezenet.onnx")
for t in cost match ref rule shape align; do jobs+=("$BUILD/tests/test_$t"); done

# one job: "ok"/"FAIL" line with the time; on failure the first lines of valgrind's report
run_one() {
    local i=$1 cmd=$2 log=$VG_TMP/$1.log t0 rc
    t0=$(date +%s%N)
    $VG $cmd >"$log" 2>&1 </dev/null
    rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -eq 0 ]; then echo "ok   - valgrind $cmd ($ms ms)"
    else
        echo "FAIL - valgrind $cmd (exit $rc$([ $rc -eq 101 ] && echo ': memcheck errors'), $ms ms)"
        grep -v '^\[' "$log" | head -40 | sed 's/^/       /'
    fi
}
export -f run_one
t0=$(date +%s)
for i in "${!jobs[@]}"; do printf '%s\0%s\0' "$i" "${jobs[$i]}"; done |
    xargs -0 -n 2 -P 2 bash -c 'run_one "$0" "$1"' >"$TMP/results"
cat "$TMP/results"
pass=$(grep -c '^ok' "$TMP/results")
fail=$(grep -c '^FAIL' "$TMP/results")
echo "valgrind: $pass passed, $fail failed ($(($(date +%s) - t0)) s)"
[ "$fail" -eq 0 ] && [ "$pass" -eq "${#jobs[@]}" ]
