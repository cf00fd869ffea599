#!/usr/bin/env bash
# picks_agree.sh - do separate processes pick the same kernels? Per round and model: `superopt MODEL -o OPT` on a fresh
# cost cache, then `superopt run OPT --profile` (with that cache when the build takes --cache-dir for run); per conv step
# the kernel the run's plan chose (its layout placement and its plan-time backend choice), compared across rounds:
# the steps whose kernel differs from the most common one, and per round the search and layout-step seconds.
# Usage: bench/picks_agree.sh MODEL.onnx...   Env: BUILD (default build), ROUNDS (default 3), THREADS (default 1),
#        ITERS (default 3), KEEP (a directory to keep the models, reports and profiles in; default: removed),
#        ANALYSE=1 (with KEEP: only compare what an earlier run kept there).
#        Loaded-machine evidence only: it shows agreement, not speed.
set -u
PY=${PY:-/usr/bin/python3}
BUILD=${BUILD:-build}
SO=$BUILD/superopt
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
ITERS=${ITERS:-3}
[ $# -ge 1 ] || { echo "picks_agree: usage: bench/picks_agree.sh MODEL.onnx..." >&2; exit 1; }
[ -x "$SO" ] || { echo "picks_agree: $SO not built (make)" >&2; exit 1; }
case "$ROUNDS$THREADS$ITERS" in *[!0-9]*) echo "picks_agree: ROUNDS, THREADS and ITERS must be numbers" >&2; exit 1 ;; esac
if [ -n "${KEEP:-}" ]; then
    TMP=$KEEP
    mkdir -p "$TMP" || exit 1
else
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
fi
RUNCACHE=0
"$SO" run --help 2>&1 | grep -q -- --cache-dir && RUNCACHE=1
echo "picks_agree: $BUILD, $ROUNDS rounds, $THREADS thread(s), run reads the cost cache: $RUNCACHE; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "$@"; do
    b=$(basename "$m" .onnx)
    for ((r = 1; r <= ROUNDS; r++)); do
        [ -n "${ANALYSE:-}" ] && break
        c="$TMP/cache.$b.$r"
        mkdir -p "$c"
        "$SO" "$m" -o "$TMP/$b.$r.onnx" -q --threads "$THREADS" --cache-dir "$c" --report "$TMP/$b.$r.json" 2>"$TMP/$b.$r.err" ||
            { echo "picks_agree: optimize $m failed: $(head -1 "$TMP/$b.$r.err")" >&2; exit 1; }
        extra=()
        [ "$RUNCACHE" = 1 ] && extra=(--cache-dir "$c")
        "$SO" run "$TMP/$b.$r.onnx" --threads "$THREADS" --iters "$ITERS" --warmup 1 --profile "${extra[@]}" >"$TMP/$b.$r.txt" 2>&1 ||
            { echo "picks_agree: run failed: $(head -1 "$TMP/$b.$r.txt")" >&2; exit 1; }
    done
    $PY - "$TMP" "$b" "$ROUNDS" <<'EOF'
import collections, json, re, sys
tmp, b, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
picks, names = [], []
for r in range(1, rounds + 1):
    p, nm = [], []
    for line in open(f"{tmp}/{b}.{r}.txt"):
        f = line.split()
        if len(f) >= 4 and f[0].isdigit() and f[2].startswith("conv"):
            # the conv steps in executor order (node names differ between placements); the kernel without its fused
            # count and oneDNN's per-run '@fast' (which of its two primitives ran: the input's facts, not the plan)
            p.append(re.sub(r"(@fast)?(\+\d+)?$", "", f[3]))
            nm.append(f[1])
    picks.append(p)
    names.append(nm)
    rep = json.load(open(f"{tmp}/{b}.{r}.json"))
    lay = rep.get("layout", {})
    sd = rep.get("search_detail", {})
    print(f"  {b} round {r}: {len(p)} convs; search {rep.get('search_seconds', 0):.2f} s, layout step {lay.get('seconds', 0):.2f} s "
          f"(paired {sd.get('layout_paired_seconds', 0):.2f} s, {sd.get('layout_paired', 0)} decisions"
          + (f", {sd['layout_paired_cut']} cut by the budget" if "layout_paired_cut" in sd else "") + ")"
          + f"; kernels: " + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(p).items())))
n = max(len(p) for p in picks)
diff = []
for i in range(n):
    ks = [p[i] if i < len(p) else "-" for p in picks]
    if len(set(ks)) > 1:
        diff.append((names[0][i] if i < len(names[0]) else str(i), ks))
print(f"{b}: {n} conv steps, {len(diff)} differ between the {rounds} rounds (kernel of the i-th conv step)")
for nm, ks in diff:
    print(f"    {nm}: {' | '.join(ks)}")
EOF
done
