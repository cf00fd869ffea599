#!/usr/bin/env bash
# refactor_ab.sh - issue 14's "data/ model latencies unchanged within noise (paired rounds)": the run time of the
# data/ models (the original files, not optimized: this measures the runtime the refactor could have touched, not
# the search) with this tree's binary held to the avx2 kernel level (SUPEROPT_ISA=avx2) against a binary built from
# the tree the issue was read from (a19a8e6, before the refactor, AVX2 kernels, built with -march=x86-64-v3), on
# the same machine, in paired interleaved rounds (bench/ab_lib.sh: the order alternates from round to round, the
# figure is the median over rounds of the per-round ratios new/old of the run medians, every round printed).
# Usage: OLD=/path/to/old/build/superopt bench/refactor_ab.sh [MODEL.onnx ...]   (default: data/*.onnx)
#   Build OLD with: git worktree add --detach /work/old14 a19a8e6 && make -C /work/old14 -j2 ARCH=-march=x86-64-v3
# Env: BUILD (this tree's build dir, default build), ROUNDS (default 7), ITERS (default 20), WARMUP (default 3),
#      THREADS (default "1 2"), JSON (append one JSON line per model and thread count to this file).
# A model one of the binaries cannot run (e.g. data/bert_tok.onnx has a symbolic batch dimension) is reported and
# skipped. Run it on a quiet machine: nothing else of ours may run beside it; a loaded machine gives noise only.
set -u
THREADS=${THREADS:-1 2}
AB_NAME=refactor_ab
. "$(dirname "$0")/ab_lib.sh"
ab_check
[ $# -gt 0 ] || set -- data/*.onnx
ab_header
for m in "$@"; do
    [ -f "$m" ] || { echo "refactor_ab: $m: no such file" >&2; continue; }
    for t in $THREADS; do
        ab_model "$m" "$t" "" avx2 0 || printf '%-20s %d thr  skipped (a run failed, above)\n' "$(basename "$m" .onnx)" "$t"
    done
done
echo "refactor_ab: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
