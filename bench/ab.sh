#!/usr/bin/env bash
# ab.sh - this tree's superopt against an OLD binary on the models given: `superopt run` side by side in paired
# interleaved rounds (bench/ab_lib.sh: lockstep batches, median of per-round ratios new/old, every round printed).
# The tool for "is the new kernel / plan faster on this model": give it the models both binaries run (e.g. a model
# `superopt MODEL -o OPT.onnx --cost-table T` wrote, so both run one graph; or the original files).
# Usage: OLD=/path/to/old/superopt bench/ab.sh MODEL.onnx [MODEL.onnx ...]
#   OLD: e.g. `git worktree add --detach /tmp/old main && make -C /tmp/old -j2`.
# Env: BUILD (default build), ROUNDS (default 7), ITERS (default 20), WARMUP (default 3), THREADS (default "1 2"),
#      ISA (a level both binaries run at, e.g. avx2; default the CPU's), JSON (append one JSON line per model and
#      thread count), LOCKSTEP (default 1: one `run --serve` server per binary, short alternating batches,
#      bench/lockstep.py; 0: the old mode, a process per binary per round), BATCH_MS (default 80).
#      Run claims on a quiet machine: nothing else of ours beside it.
set -u
THREADS=${THREADS:-1 2}
ISA=${ISA:-}
AB_NAME=ab
. "$(dirname "$0")/ab_lib.sh"
[ $# -gt 0 ] || { echo "ab: usage: OLD=/path/to/old/superopt bench/ab.sh MODEL.onnx ..." >&2; exit 1; }
ab_check
ab_header
rc=0
for m in "$@"; do
    [ -f "$m" ] || { echo "ab: $m: no such file" >&2; rc=1; continue; }
    for t in $THREADS; do ab_model "$m" "$t" "$ISA" "$ISA" 0 || rc=1; done
done
echo "ab: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
