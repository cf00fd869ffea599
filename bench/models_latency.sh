#!/usr/bin/env bash
# models_latency.sh - latency of docs/MODELS.md's models (ours: `superopt run` on the optimized model; ONNX Runtime
# 'all' on the original; one thread) in paired interleaved rounds, as JSON lines, and the step that fills the table.
#
# usage: bench/models_latency.sh [--missing] [--only REGEX] [OUT.jsonl]   measure (default OUT: models_latency.jsonl)
#        bench/models_latency.sh --fill OUT.jsonl [docs/MODELS.md]         write the figures into the table
#   --missing     only the rows of docs/MODELS.md whose latency cells are empty ("–")
#   --only REGEX  only the models whose name matches REGEX (extended regular expression)
# The timing is tests/exporter_fixtures.sh --table --latency (the harness that made the table; it also re-runs
# checks 1-3 on each model and times only models that pass them), with ROUNDS (default 7) rounds of ITERS runs
# (default 30) after 5 warm-ups per side, ours first in odd rounds and ONNX Runtime first in even ones; per model
# the JSON line holds each round's medians, their median per side and the median of the per-round ratios ours / ORT.
# The markdown table of the run goes to OUT.jsonl's name with .md. Needs build/superopt (or SO=BINARY) and tools/ort (npm ci).
# --fill replaces, for each model of the JSON lines, the last four cells of its table row (check 3, ours ms, ORT
# ms, ratio) and prints how many rows it filled and the geometric mean of their ratios; rows of other models stay.
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
MODELS_MD=docs/MODELS.md
# the committed TorchScript exports in the table (with the dims bert_tok needs), as integration section 10 runs them
DATA_MODELS=(data/bert2.onnx "data/bert_tok.onnx:--dim batch=1 --dim seq=32" data/deepandwide.onnx data/lstm2.onnx
    data/nasrnn.onnx data/resnet_small.onnx data/squeezenet.onnx data/tinyseg.onnx)

if [ "${1:-}" = --fill ]; then
    [ $# -ge 2 ] || { echo "usage: $0 --fill OUT.jsonl [docs/MODELS.md]" >&2; exit 2; }
    exec $PY - "$2" "${3:-$MODELS_MD}" <<'PYEOF'
import json, math, sys
src, md = sys.argv[1:]
try:
    rows = [json.loads(l) for l in open(src) if l.strip()]
except (OSError, ValueError) as e:
    sys.exit("models_latency.sh: %s: %s" % (src, e))
got = {r["model"]: r for r in rows if "model" in r}
lines = open(md).read().split("\n")
filled, ratios = 0, []
for i, l in enumerate(lines):
    cells = l.split("|")
    if len(cells) < 11 or cells[1].strip() not in got:  # | model | ... 9 cells ... |
        continue
    r = got[cells[1].strip()]
    ms = lambda t: " %.3f " % t if t >= 0.1 else " %.4f " % t
    cells[-5:-1] = [" yes ", ms(r["ours_ms"]), ms(r["ort_ms"]), " %.2f " % r["ratio"]]
    lines[i] = "|".join(cells)
    filled += 1
    ratios.append(r["ratio"])
missing = sorted(set(got) - {l.split("|")[1].strip() for l in lines if l.count("|") >= 10})
if missing:
    sys.exit("models_latency.sh: %s has no row for %s" % (md, ", ".join(missing)))
open(md, "w").write("\n".join(lines))
gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
print("filled %d rows of %s from %s (%d rounds); geomean ratio of those rows %.3f" %
      (filled, md, src, max((r["rounds"] for r in got.values()), default=0), gm))
PYEOF
fi

ONLY= OUT=models_latency.jsonl
while [ $# -gt 0 ]; do
    case "$1" in
        --missing) ONLY=$($PY -c 'import sys
names = [l.split("|")[1].strip() for l in open(sys.argv[1]) if l.count("|") >= 10 and l.rstrip().endswith("| – |")]
print("^(" + "|".join(names) + ")$" if names else "^$")' "$MODELS_MD") ;;
        --only) ONLY=$2; shift ;;
        -*) echo "usage: $0 [--missing] [--only REGEX] [OUT.jsonl] | --fill OUT.jsonl [MODELS.md]" >&2; exit 2 ;;
        *) OUT=$1 ;;
    esac
    shift
done
SO=${SO:-build/superopt}
[ -x "$SO" ] || { echo "models_latency.sh: $SO missing (make)" >&2; exit 1; }
[ -d tools/ort/node_modules ] || { echo "models_latency.sh: tools/ort/node_modules missing (cd tools/ort && npm ci --ignore-scripts)" >&2; exit 1; }
: >"$OUT"
start=$(date +%s)
ROUNDS=${ROUNDS:-7} ITERS=${ITERS:-30} ONLY=$ONLY LAT_JSON=$OUT OPT_ARGS=${OPT_ARGS-} \
    bash tests/exporter_fixtures.sh "$SO" --table --latency "${DATA_MODELS[@]}" >"${OUT%.jsonl}.md"
rc=$?
tail -1 "${OUT%.jsonl}.md"
echo "models_latency.sh: $(grep -c . "$OUT") models timed, ROUNDS=${ROUNDS:-7}, $(($(date +%s) - start)) s, commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg); $OUT, ${OUT%.jsonl}.md"
exit $rc
