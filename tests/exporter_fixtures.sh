#!/usr/bin/env bash
# exporter_fixtures.sh - the models of tests/make_exporter_fixtures.py (Paddle2ONNX, tf2onnx and PyTorch
# opset-18 styles), plus any model files named on the command line, through superopt and ONNX Runtime:
# each must run under `superopt run` (symbolic dimensions pinned with --dim) and match ONNX Runtime on the
# same seeded inputs within 1e-4 relative, and the model `superopt MODEL` writes must run in ONNX Runtime
# with the same outputs (written with --layout none: standard ONNX, without superopt's blocked-layout domain).
# usage: exporter_fixtures.sh [SUPEROPT] [--table] [--latency] [MODEL.onnx ...]
#   --table    print a markdown table of the results (docs/MODELS.md is made with --table --latency)
#   --latency  also optimize with OPT_ARGS alone (default layout: the file may hold blocked-layout operators
#              only superopt runs), check `superopt run` of that model against ONNX Runtime too, and time,
#              one thread, median of ITERS runs (default 30) after 5 warm-ups: `superopt run` on it next to
#              ONNX Runtime (graph optimizations 'all') on the original, in ROUNDS (default 1) paired rounds
#              interleaved (ours first in odd rounds, ONNX Runtime first in even ones); the table gives the
#              median over rounds of each side's median and the median of the per-round ratios
#   MODEL.onnx[:OPTIONS]  extra models (style "torchscript": data/*.onnx are PyTorch TorchScript exports), fed
#              the same seeded inputs; OPTIONS (after a colon, space-separated) pin symbolic dimensions
# OPT_ARGS (default "--cost flops", the fast setting for make test) are the options given to `superopt MODEL`.
# ONLY (an extended regular expression) keeps the models whose name it matches. LAT_JSON=FILE appends one JSON
# line per timed model: {"model", "style", "rounds", "iters", "ours_ms", "ort_ms", "ratio", "ours", "ort", "ratios"}
# (the last three per round); bench/models_latency.sh drives this and fills docs/MODELS.md from it.
# Prints "exporter fixtures: N passed, N failed"; exit 1 if any failed.
set -u
SO=build/superopt
case "${1:-}" in --*|*.onnx|"") ;; *) SO=$1; shift ;; esac
TABLE= LAT= EXTRA=()
for a in "$@"; do
    case "$a" in
        --table) TABLE=1 ;;
        --latency) LAT=1 ;;
        *) EXTRA+=("$a") ;;
    esac
done
ITERS=${ITERS:-30}
ROUNDS=${ROUNDS:-1}
ONLY=${ONLY:-}
LAT_JSON=${LAT_JSON:-}
OPT_ARGS=${OPT_ARGS---cost flops}
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$PY tests/make_exporter_fixtures.py "$TMP" >/dev/null || { echo "make_exporter_fixtures.py failed"; exit 1; }
while read -r name style opts; do echo "$name $style $TMP/$name.onnx $opts"; done <"$TMP/list.txt" >"$TMP/all.txt"
for a in ${EXTRA[@]+"${EXTRA[@]}"}; do
    f=${a%%:*} o=
    [ "$f" != "$a" ] && o=${a#*:}
    echo "$(basename "$f" .onnx) torchscript $f $o" >>"$TMP/all.txt"
done
if [ -n "$ONLY" ]; then
    awk -v re="$ONLY" '$1 ~ re' "$TMP/all.txt" >"$TMP/only.txt"
    mv "$TMP/only.txt" "$TMP/all.txt"
fi
# median_ms of a --json line
ms() { $PY -c 'import json,sys
try: print("%.6f" % json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])
except Exception: print("-")'; }
# ONNX Runtime ('all', one thread) on model $1 with options $2: median ms of ITERS runs after 5 warm-ups
ort_ms() {
    # shellcheck disable=SC2086
    node tools/ort/ort_run.js "$1" $2 --json --iters "$ITERS" --warmup 5 --threads 1 --opt all 2>/dev/null | ms
}
pass=0
fail=0
if [ -n "$TABLE" ]; then
    h="| model | style | superopt run matches ORT | optimized model in ORT matches | max abs / max rel error vs ORT: superopt run; optimized in ORT |"
    s="|---|---|---|---|---|"
    [ -n "$LAT" ] && h="$h optimized (default layout) under superopt run matches | ours, optimized (ms) | ORT 'all', original (ms) | ratio |" && s="$s---|---|---|---|"
    echo "$h"; echo "$s"
fi
while read -r name style m opts; do
    # shellcheck disable=SC2086
    node tools/ort/ort_run.js "$m" $opts --seed 3 --outputs "$TMP/$name.ort" >"$TMP/log" 2>&1 || { echo "FAIL - $name: ONNX Runtime cannot run the model"; cat "$TMP/log"; fail=$((fail + 1)); continue; }
    run=no opt=no lat=- e1=- e2=- t1=- t2=- ratio=-
    # shellcheck disable=SC2086
    if $SO run "$m" $opts --seed 3 --iters 1 --warmup 0 --outputs "$TMP/$name.so" >"$TMP/log" 2>&1; then
        e1=$($PY data/compare_outputs.py "$TMP/$name.so" "$TMP/$name.ort" --rtol 1e-4 2>&1 | tail -1 | sed 's/.*max_abs=\([^ ]*\) max_rel=\([^ ]*\).*/\1 \/ \2/')
        $PY data/compare_outputs.py "$TMP/$name.so" "$TMP/$name.ort" --rtol 1e-4 >/dev/null 2>&1 && run=yes
    else e1=$(head -c 160 "$TMP/log" | tr '\n|' '  '); fi
    # shellcheck disable=SC2086
    if [ $run = yes ] && $SO "$m" $opts -o "$TMP/$name.opt.onnx" -q $OPT_ARGS --layout none >"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$TMP/$name.opt.onnx" --seed 3 --outputs "$TMP/$name.opt.ort" >>"$TMP/log" 2>&1; then
        e2=$($PY data/compare_outputs.py "$TMP/$name.opt.ort" "$TMP/$name.ort" --rtol 1e-4 2>&1 | tail -1 | sed 's/.*max_abs=\([^ ]*\) max_rel=\([^ ]*\).*/\1 \/ \2/')
        $PY data/compare_outputs.py "$TMP/$name.opt.ort" "$TMP/$name.ort" --rtol 1e-4 >/dev/null 2>&1 && opt=yes
    elif [ $run = yes ]; then e2=$(head -c 160 "$TMP/log" | tr '\n|' '  '); fi
    # shellcheck disable=SC2086
    if [ -n "$LAT" ] && [ $opt = yes ] && lat=no && $SO "$m" $opts -o "$TMP/$name.lat.onnx" -q $OPT_ARGS >"$TMP/log" 2>&1 &&
        $SO run "$TMP/$name.lat.onnx" --seed 3 --iters 1 --warmup 0 --outputs "$TMP/$name.lat.so" >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$name.lat.so" "$TMP/$name.ort" --rtol 1e-4 >>"$TMP/log" 2>&1; then
        lat=yes
        ours=() ort=()
        for ((r = 0; r < ROUNDS; r++)); do # paired rounds, interleaved: A B, B A, ...
            [ $((r % 2)) = 1 ] && ort+=("$(ort_ms "$m" "$opts")")
            ours+=("$($SO run "$TMP/$name.lat.onnx" --json --iters "$ITERS" --warmup 5 --threads 1 2>/dev/null | ms)")
            [ $((r % 2)) = 0 ] && ort+=("$(ort_ms "$m" "$opts")")
        done
        read -r t1 t2 ratio < <($PY - "$name" "$style" "$ITERS" "${ours[*]}" "${ort[*]}" "$LAT_JSON" <<'PYEOF'
import json, statistics, sys
name, style, iters, a, b, out = sys.argv[1:]
a, b = a.split(), b.split()
if "-" in a + b:
    print("- - -")
    sys.exit()
a, b = [float(x) for x in a], [float(x) for x in b]
rat = [x / y for x, y in zip(a, b)]
t1, t2, r = statistics.median(a), statistics.median(b), statistics.median(rat)
print("%s %s %.2f" % tuple(["%.3f" % t if t >= 0.1 else "%.4f" % t for t in (t1, t2)] + [r]))
if out:
    with open(out, "a") as f:
        f.write(json.dumps({"model": name, "style": style, "rounds": len(a), "iters": int(iters), "ours_ms": round(t1, 6),
                            "ort_ms": round(t2, 6), "ratio": round(r, 4), "ours": a, "ort": b,
                            "ratios": [round(x, 4) for x in rat]}) + "\n")
PYEOF
        )
    fi
    if [ $run = yes ] && [ $opt = yes ] && [ $lat != no ]; then pass=$((pass + 1)); [ -z "$TABLE" ] && echo "ok   - $name ($style)"
    else fail=$((fail + 1)); [ -z "$TABLE" ] && echo "FAIL - $name ($style): run: $e1 | optimized: $e2"; fi
    if [ -n "$TABLE" ]; then
        row="| $name | $style | $run | $opt | $e1; $e2 |"
        [ -n "$LAT" ] && row="$row $lat | $t1 | $t2 | $ratio |"
        echo "$row"
    fi
done <"$TMP/all.txt"
if [ -n "$LAT" ]; then # what a run costs in each harness when the model does nothing: one Identity on 4 floats
    $PY -c 'import onnx, sys; from onnx import helper as h, TensorProto as T
g = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "floor", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 7; onnx.save(m, sys.argv[1])' "$TMP/floor.onnx"
    f1=$($SO run "$TMP/floor.onnx" --json --iters "$ITERS" --warmup 5 --threads 1 2>/dev/null | ms)
    f2=$(node tools/ort/ort_run.js "$TMP/floor.onnx" --json --iters "$ITERS" --warmup 5 --threads 1 --opt all 2>/dev/null | ms)
    echo ""
    echo "Per-run floor (a model of one Identity on 4 floats): superopt run $f1 ms, ONNX Runtime (onnxruntime-node) $f2 ms."
fi
echo "exporter fixtures: $pass passed, $fail failed"
[ $fail -eq 0 ]
