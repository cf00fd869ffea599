#!/usr/bin/env bash
# gelu_ab.sh - session 17's erf/GELU kernel against the one before it: this tree's superopt and an OLD binary, side by
# side in paired interleaved rounds, on (1) two generated one-kernel models, the exported GELU chain
# Div -> Erf -> Add -> Mul -> Mul and a lone Erf, both on ConvNeXt-T's first-stage shape [1, 3136, 384]
# (1.2 M elements: the figure is ns per element, the run's median over the element count), at each ISA level
# (SUPEROPT_ISA), and (2) the models given (default data/full/convnext_tiny.onnx) at the CPU's level.
# Each round runs `superopt run MODEL --iters ITERS --warmup WARMUP --threads T --json` once per binary, back to
# back, the order alternating; the figure is the median over rounds of the per-round ratios new/old of the run
# medians; every round is printed, and the load average before and after.
# Usage: OLD=/path/to/old/superopt bench/gelu_ab.sh [MODEL.onnx ...]
#   OLD: e.g. `git worktree add --detach /tmp/old 47d404f && make -C /tmp/old -j2` (main before session 17).
# Env: BUILD (default build), ROUNDS (default 7), ITERS (default 20), WARMUP (default 3), THREADS (default 1),
#      LEVELS (default "avx512 avx2 scalar": the levels the generated models run at; the CPU must have them).
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
OLD=${OLD:-}
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-3}
THREADS=${THREADS:-1}
LEVELS=${LEVELS:-avx512 avx2 scalar}
PY=/usr/bin/python3
[ -x "$SO" ] || { echo "gelu_ab: $SO not built (make)" >&2; exit 1; }
[ -n "$OLD" ] && [ -x "$OLD" ] || { echo "gelu_ab: set OLD to the superopt binary to compare with (see the header)" >&2; exit 1; }
case "$ROUNDS$ITERS$WARMUP$THREADS" in *[!0-9]*) echo "gelu_ab: ROUNDS, ITERS, WARMUP and THREADS must be numbers" >&2; exit 1 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ITERS" -ge 1 ] || { echo "gelu_ab: ROUNDS and ITERS must be >= 1" >&2; exit 1; }
[ $# -gt 0 ] || set -- data/full/convnext_tiny.onnx
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
$PY - "$TMP" <<'EOF' || { echo "gelu_ab: could not write the generated models (python3 onnx)" >&2; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d, shape = sys.argv[1], [1, 3136, 384]
x = helper.make_tensor_value_info('x', TensorProto.FLOAT, shape)
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, shape)
w = [numpy_helper.from_array(np.array(v, dtype=np.float32), n) for n, v in (('c', 2 ** 0.5), ('a', 1.0), ('h', 0.5))]
gelu = [helper.make_node('Div', ['x', 'c'], ['d']), helper.make_node('Erf', ['d'], ['e']), helper.make_node('Add', ['e', 'a'], ['s']),
        helper.make_node('Mul', ['x', 's'], ['m']), helper.make_node('Mul', ['m', 'h'], ['y'])]
for name, nodes, inits in (('gelu', gelu, w), ('erf', [helper.make_node('Erf', ['x'], ['y'])], [])):
    g = helper.make_graph(nodes, name, [x], [y], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '%s/%s.onnx' % (d, name))
EOF
ERR=$TMP/err
median() { $PY -c 'import statistics,sys; print("%.6f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ms() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])' 2>/dev/null; }
# one timed run: binary, model, level ("" = the CPU's) -> the run's median in ms, or nothing (message on stderr)
run1() {
    local v
    if [ -n "$3" ]; then v=$(SUPEROPT_ISA=$3 "$1" run "$2" --iters "$ITERS" --warmup "$WARMUP" --threads "$THREADS" --json 2>"$ERR" | ms)
    else v=$("$1" run "$2" --iters "$ITERS" --warmup "$WARMUP" --threads "$THREADS" --json 2>"$ERR" | ms); fi
    [ -n "$v" ] || { echo "gelu_ab: $1 on $2 failed: $(head -c 300 "$ERR")" >&2; return 1; }
    echo "$v"
}
# paired rounds of one model at one level; per_elem: elements (prints ns per element too) or 0
ab() {
    local m=$1 lvl=$2 nel=$3 r o n ratios=() olds=() news=()
    for ((r = 0; r < ROUNDS; r++)); do
        if ((r % 2 == 0)); then o=$(run1 "$OLD" "$m" "$lvl") || return; n=$(run1 "$SO" "$m" "$lvl") || return
        else n=$(run1 "$SO" "$m" "$lvl") || return; o=$(run1 "$OLD" "$m" "$lvl") || return; fi
        olds+=("$o"); news+=("$n"); ratios+=("$($PY -c "print('%.4f' % ($n / $o))")")
        echo "  round $r: old $o ms, new $n ms, new/old ${ratios[-1]}"
    done
    local mo mn
    mo=$(median "${olds[@]}"); mn=$(median "${news[@]}")
    if [ "$nel" -gt 0 ]; then
        echo "$(basename "$m") ${lvl:-cpu} $THREADS thread(s): old $mo ms ($($PY -c "print('%.3f' % ($mo * 1e6 / $nel))") ns/element), new $mn ms ($($PY -c "print('%.3f' % ($mn * 1e6 / $nel))") ns/element), median new/old $(median "${ratios[@]}")"
    else
        echo "$(basename "$m") ${lvl:-cpu} $THREADS thread(s): old $mo ms, new $mn ms, median new/old $(median "${ratios[@]}")"
    fi
}
echo "gelu_ab: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, $ITERS iters"
for lvl in $LEVELS; do
    for g in gelu erf; do ab "$TMP/$g.onnx" "$lvl" $((3136 * 384)); done
done
for m in "$@"; do ab "$m" "" 0; done
echo "gelu_ab: load after $(cut -d' ' -f1-3 /proc/loadavg)"
