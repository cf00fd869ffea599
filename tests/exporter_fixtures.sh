#!/usr/bin/env bash
# exporter_fixtures.sh - the models of tests/make_exporter_fixtures.py (Paddle2ONNX, tf2onnx and PyTorch
# opset-18 styles) through superopt and ONNX Runtime: each must run under `superopt run` (symbolic
# dimensions pinned with --dim) and match ONNX Runtime on the same seeded inputs within 1e-4 relative,
# and the model `superopt MODEL` writes must run in ONNX Runtime with the same outputs.
# usage: exporter_fixtures.sh [SUPEROPT] [--table]   (--table prints a markdown table of the results)
# Prints "exporter fixtures: N passed, N failed"; exit 1 if any failed.
set -u
SO=${1:-build/superopt}
TABLE=${2:-}
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$PY tests/make_exporter_fixtures.py "$TMP" >/dev/null || { echo "make_exporter_fixtures.py failed"; exit 1; }
pass=0
fail=0
[ -n "$TABLE" ] && echo "| model | style | superopt run matches ORT | optimized model in ORT matches | error vs ORT: superopt run / optimized in ORT (pass: abs err <= 1e-5 + 1e-4 x |ORT value|) |" &&
    echo "|---|---|---|---|---|"
while read -r name style opts; do
    m=$TMP/$name.onnx
    # shellcheck disable=SC2086
    node tools/ort/ort_run.js "$m" $opts --seed 3 --outputs "$TMP/$name.ort" >"$TMP/log" 2>&1 || { echo "FAIL - $name: ONNX Runtime cannot run the fixture"; cat "$TMP/log"; fail=$((fail + 1)); continue; }
    run=no opt=no e1=- e2=-
    # shellcheck disable=SC2086
    if $SO run "$m" $opts --seed 3 --iters 1 --warmup 0 --outputs "$TMP/$name.so" >"$TMP/log" 2>&1; then
        e1=$($PY data/compare_outputs.py "$TMP/$name.so" "$TMP/$name.ort" --rtol 1e-4 2>&1 | tail -1 | sed 's/.*\(max_abs=[^ ]*\) \(max_rel=[^ ]*\).*/\1 \2/')
        $PY data/compare_outputs.py "$TMP/$name.so" "$TMP/$name.ort" --rtol 1e-4 >/dev/null 2>&1 && run=yes
    else e1=$(head -c 160 "$TMP/log" | tr '\n' ' '); fi
    # shellcheck disable=SC2086
    if [ $run = yes ] && $SO "$m" $opts -o "$TMP/$name.opt.onnx" -q --cost flops >"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$TMP/$name.opt.onnx" --seed 3 --outputs "$TMP/$name.opt.ort" >>"$TMP/log" 2>&1; then
        e2=$($PY data/compare_outputs.py "$TMP/$name.opt.ort" "$TMP/$name.ort" --rtol 1e-4 2>&1 | tail -1 | sed 's/.*\(max_abs=[^ ]*\) \(max_rel=[^ ]*\).*/\1 \2/')
        $PY data/compare_outputs.py "$TMP/$name.opt.ort" "$TMP/$name.ort" --rtol 1e-4 >/dev/null 2>&1 && opt=yes
    elif [ $run = yes ]; then e2=$(head -c 160 "$TMP/log" | tr '\n' ' '); fi
    if [ $run = yes ] && [ $opt = yes ]; then pass=$((pass + 1)); [ -z "$TABLE" ] && echo "ok   - $name ($style)"
    else fail=$((fail + 1)); [ -z "$TABLE" ] && echo "FAIL - $name ($style): run: $e1 | optimized: $e2"; fi
    [ -n "$TABLE" ] && echo "| $name | $style | $run | $opt | $e1 / $e2 |"
done <"$TMP/list.txt"
echo "exporter fixtures: $pass passed, $fail failed"
[ $fail -eq 0 ]
