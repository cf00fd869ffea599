#!/usr/bin/env bash
# repro_costs.sh - issue 18's reproducibility check of the research comparison: `superopt bench` twice
# over the same models with one saved cost table (the first run fills it unless TABLE names an existing
# one, the second only reads it), then every strategy's cost is compared, measured and flops (costs,
# not latencies: latencies are timed again in every run). Prints one Markdown row per model and
# strategy and exits 1 if any cost differs.
# Usage: BUILD=build bash bench/repro_costs.sh [MODEL.onnx ...]
#        (default: the seven literature models in data/full/; TABLE=FILE reuses a saved table;
#        OUT=DIR keeps both runs' JSON and the table there; EXTRA="--budget 100 ..." adds bench options)
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
PY=/usr/bin/python3
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ $# -eq 0 ]; then
    set -- data/full/bert_taso.onnx data/full/resnext50_32x4d.onnx data/full/nasnet_a.onnx data/full/nasrnn_512.onnx \
        data/full/inception_v3.onnx data/full/squeezenet1_1.onnx data/full/resnet50.onnx
fi
for f in "$@"; do [ -f "$f" ] || { echo "repro_costs.sh: $f: no such model file (make models?)" >&2; exit 1; }; done
T=${TABLE:-$OUT/cost-table.tsv}
for run in 1 2; do
    t0=$(date +%s)
    # shellcheck disable=SC2086
    if ! $SO bench "$@" --no-ort --no-ablations --rounds 1 --threads 1 --target-seconds 0.05 --cost-table "$T" \
        --json "$OUT/run$run.json" ${EXTRA:-} >"$OUT/run$run.md" 2>"$OUT/run$run.err"; then
        echo "repro_costs.sh: bench run $run failed:" >&2
        tail -5 "$OUT/run$run.err" >&2
        exit 1
    fi
    echo "run $run: $(($(date +%s) - t0)) s, table $T ($(grep -vc '^#' "$T") entries)" >&2
done
$PY - "$OUT/run1.json" "$OUT/run2.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
bad = 0
print("| model | strategy | measured: run 1 | run 2 | flops: run 1 | run 2 | same |")
print("|---|---|---:|---:|---:|---:|---|")
for ma, mb in zip(a["models"], b["models"]):
    assert ma["name"] == mb["name"]
    for s in ("none", "greedy", "backtrack", "eqsat"):
        oa, ob = ma["strategies"][s]["optimize"], mb["strategies"][s]["optimize"]
        ca, cb = (o["cost_after"] if o.get("ok") else None for o in (oa, ob))
        fa = fb = None
        if s != "none" and "flops_check" in ma:
            fa, fb = (m["flops_check"][s]["cost_after"] if m["flops_check"][s].get("ok") else None for m in (ma, mb))
        same = ca is not None and ca == cb and fa == fb
        bad += not same
        f = lambda x: "–" if x is None else "%.9g" % x
        print("| %s | %s | %s | %s | %s | %s | %s |" % (ma["name"], s, f(ca), f(cb), f(fa), f(fb), "yes" if same else "**NO**"))
print("\n%s: %d of %d costs differ" % ("REPRODUCED" if not bad else "DIFFERENT", bad, 4 * len(a["models"])))
sys.exit(1 if bad else 0)
PYEOF
