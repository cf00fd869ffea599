#!/usr/bin/env bash
# gelu_ab.sh - session 17's erf/GELU kernel against the one before it: this tree's superopt and an OLD binary, side by
# side in paired interleaved rounds, on (1) two generated one-kernel models, the exported GELU chain
# Div -> Erf -> Add -> Mul -> Mul and a lone Erf, both on ConvNeXt-T's first-stage shape [1, 3136, 384]
# (1.2 M elements: the figure is ns per element, the run's median over the element count), at each ISA level
# (SUPEROPT_ISA), and (2) the models given (default data/full/convnext_tiny.onnx) at the CPU's level.
# Paired interleaved rounds as bench/ab_lib.sh times them (the order alternates, the figure is the median over rounds
# of the per-round ratios new/old of the run medians, every round printed), the load average before and after.
# Usage: OLD=/path/to/old/superopt bench/gelu_ab.sh [MODEL.onnx ...]
#   OLD: e.g. `git worktree add --detach /tmp/old 47d404f && make -C /tmp/old -j2` (main before session 17).
# Env: BUILD (default build), ROUNDS (default 7), ITERS (default 20), WARMUP (default 3), THREADS (default 1),
#      LEVELS (default "avx512 avx2 scalar": the levels the generated models run at; the CPU must have them).
set -u
THREADS=${THREADS:-1}
LEVELS=${LEVELS:-avx512 avx2 scalar}
AB_NAME=gelu_ab
. "$(dirname "$0")/ab_lib.sh"
case "$THREADS" in ''|*[!0-9]*) echo "gelu_ab: THREADS must be a number" >&2; exit 1 ;; esac
ab_check
[ $# -gt 0 ] || set -- data/full/convnext_tiny.onnx
TMP=$AB_TMP
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
ab_header
for lvl in $LEVELS; do
    for g in gelu erf; do ab_model "$TMP/$g.onnx" "$THREADS" "$lvl" "$lvl" $((3136 * 384)); done
done
for m in "$@"; do ab_model "$m" "$THREADS" "" "" 0; done
echo "gelu_ab: load after $(cut -d' ' -f1-3 /proc/loadavg)"
