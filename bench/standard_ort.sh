#!/usr/bin/env bash
# standard_ort.sh - issue 15 item 6: the standard-ONNX form of an optimized model (superopt --layout none: the searched
# graph, layout decisions not written, standard operators only) under ONNX Runtime against the original model under
# ONNX Runtime: the same outputs as the original's there (data/compare_outputs.py, rtol 1e-4 atol 1e-5; the distance of
# both to MODEL.out.bin, the PyTorch reference, is printed for information) and no slower: time ratio standard /
# original, median over ROUNDS paired interleaved rounds (odd rounds original first, even rounds standard first; each
# timing = ort_run.js --json median of ITERS runs).
# A speed claim needs a quiet machine: the lead runs it; on a loaded machine it only decides designs (say so).
# Usage: [ROUNDS=7] [THREADS="1 2"] [ITERS=20] [OPT_ARGS="..."] [BENCH_TABLE=FILE] [OUT=FILE.tsv] [KEEP=DIR]
#        bench/standard_ort.sh MODEL.onnx...
# OPT_ARGS are extra superopt options (default: none, i.e. the default search); BENCH_TABLE reuses/keeps a cost table.
# KEEP=DIR keeps each standard file as DIR/MODEL.std.onnx (for bench/ort_profile.js). Every round's two timings and the
# load average go to stderr.
# Output: one TSV line per model and thread count (model, threads, median ratio, min, max, outputs_match) on stdout
# and in OUT; exit 1 if a model fails to optimize or its outputs differ.
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
THREADS=${THREADS:-"1 2"}
ITERS=${ITERS:-20}
OPT_ARGS=${OPT_ARGS:-}
SO=${SO:-build/superopt}
PY=${PY:-/usr/bin/python3}
ORT="node tools/ort/ort_run.js"
OUT=${OUT:-build/bench-standard-ort.tsv}
[ $# -ge 1 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ -x "$SO" ] || { echo "standard_ort.sh: $SO not built (make)" >&2; exit 1; }
$ORT --help >/dev/null 2>&1; [ $? -le 2 ] && [ -d tools/ort/node_modules ] || { echo "standard_ort.sh: ONNX Runtime not installed (cd tools/ort && npm ci --ignore-scripts)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TABLE_ARGS=()
[ -n "${BENCH_TABLE:-}" ] && TABLE_ARGS=(--cost-table "$BENCH_TABLE")
printf "model\tthreads\tratio_median\tratio_min\tratio_max\toutputs_match\n" | tee "$OUT"
rc=0
for model in "$@"; do
    name=$(basename "$model" .onnx)
    base=${model%.onnx}
    std=$TMP/$name.std.onnx
    # shellcheck disable=SC2086
    if ! $SO "$model" -o "$std" -q --layout none "${TABLE_ARGS[@]}" $OPT_ARGS >"$TMP/log" 2>&1; then
        echo "standard_ort.sh: $model: optimize failed: $(tail -1 "$TMP/log")" >&2
        rc=1
        continue
    fi
    [ -n "${KEEP:-}" ] && cp "$std" "$KEEP/$name.std.onnx"
    cmp -s "$model" "$std" && echo "standard_ort.sh: $name: no rewrite kept, the standard file is the input, byte for byte" >&2
    IN=()
    [ -f "$base.in.bin" ] && IN=(--inputs "$base.in.bin")
    match=yes
    if ! $ORT "$model" "${IN[@]}" --outputs "$TMP/orig.out" >"$TMP/log" 2>&1 ||
        ! $ORT "$std" "${IN[@]}" --outputs "$TMP/std.out" >>"$TMP/log" 2>&1 ||
        ! $PY data/compare_outputs.py "$TMP/std.out" "$TMP/orig.out" --rtol 1e-4 >>"$TMP/log" 2>&1; then
        match=no
        rc=1
        echo "standard_ort.sh: $model: outputs differ from the original's under ONNX Runtime, or it failed: $(tail -1 "$TMP/log")" >&2
    elif [ -f "$base.out.bin" ]; then
        # the PyTorch reference, for information: in float32 a deep net's original under ONNX Runtime is itself
        # ~1e-4 from it (ResNet-50: max_abs 9.3e-5, 3 of 1000 logits outside rtol 1e-4 + atol 1e-5), so it does not decide
        for f in orig std; do
            echo "standard_ort.sh: $name: $f vs PyTorch: $($PY data/compare_outputs.py "$TMP/$f.out" "$base.out.bin" --rtol 1e-4 2>&1 | tail -1)" >&2
        done
    fi
    for t in $THREADS; do
        : >"$TMP/ratios"
        for ((r = 1; r <= ROUNDS; r++)); do
            o= s=
            if ((r % 2)); then order="$model $std"; else order="$std $model"; fi
            for f in $order; do
                ms=$($ORT "$f" "${IN[@]}" --threads "$t" --iters "$ITERS" --json 2>/dev/null |
                    $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["median_ms"])' 2>/dev/null) || ms=
                if [ "$f" = "$model" ]; then o=$ms; else s=$ms; fi
            done
            [ -n "$o" ] && [ -n "$s" ] && $PY -c "print($s / $o)" >>"$TMP/ratios"
            echo "standard_ort.sh: $name threads $t round $r: original ${o:-failed} ms, standard ${s:-failed} ms, load $(cut -d' ' -f1 /proc/loadavg)" >&2
        done
        $PY - "$TMP/ratios" "$name" "$t" "$match" <<'PYEOF' | tee -a "$OUT"
import statistics, sys
r = [float(x) for x in open(sys.argv[1]) if x.strip()]
if not r:
    print("%s\t%s\tnan\tnan\tnan\t%s" % (sys.argv[2], sys.argv[3], sys.argv[4]))
else:
    print("%s\t%s\t%.4f\t%.4f\t%.4f\t%s" % (sys.argv[2], sys.argv[3], statistics.median(r), min(r), max(r), sys.argv[4]))
PYEOF
    done
done
exit $rc
