#!/usr/bin/env bash
# wall.sh - the time a user waits for `superopt MODEL.onnx` (default settings), phase by phase (the report's
# "seconds": rules, import, input_cost, search, layout, check; rest = writing and exit), on a first run (a fresh
# HOME: empty proof and cost caches) and a second run (the same HOME), and with OLD given, paired interleaved
# against an older binary (the order alternates per round; median of per-round ratios new/old; every run printed).
# Usage: [OLD=/path/to/old/superopt] [ROUNDS=7] [MODELS="resnet50 inception_v3 bert_taso nasrnn_512"] bench/wall.sh
# Env: BUILD (default build), DATA (default data/full), OLD_RULES (the rules file passed to OLD with --rules, default
#      rules/default.rules: a binary outside a source tree finds no rule set), OUT (default a temporary folder, kept),
#      JSON (append one JSON line per run). Claims from a quiet machine only: nothing else of ours beside it.
set -u
BUILD=${BUILD:-build}
DATA=${DATA:-data/full}
ROUNDS=${ROUNDS:-7}
MODELS=${MODELS:-resnet50 inception_v3 bert_taso nasrnn_512}
OLD=${OLD:-}
OLD_RULES=${OLD_RULES:-rules/default.rules}
OUT=${OUT:-$(mktemp -d /tmp/wall.XXXXXX)}
PY=/usr/bin/python3
mkdir -p "$OUT"
echo "wall: $(date -u +%H:%M:%S) new=$BUILD/superopt old=${OLD:-none} rounds=$ROUNDS out=$OUT load $(cut -d' ' -f1-3 /proc/loadavg)"

# one_run TAG BIN ROUND MODEL: run 1 (fresh HOME) and run 2 (same HOME); one line each
one_run() {
    local tag=$1 bin=$2 r=$3 m=$4 extra=()
    [ "$tag" = old ] && extra=(--rules "$OLD_RULES")
    local h="$OUT/home.$tag.$m.$r"
    rm -rf "$h" && mkdir -p "$h"
    for k in 1 2; do
        local b="$OUT/$tag.$m.$r.$k"
        HOME="$h" XDG_CACHE_HOME= /usr/bin/time -f "%e %U" -o "$b.time" "$bin" "$DATA/$m.onnx" -o "$b.onnx" "${extra[@]}" -q \
            --report "$b.json" >"$b.log" 2>&1 || { echo "wall: $tag $m round $r run $k failed: $(tail -1 "$b.log")"; continue; }
        $PY - "$b.json" "$b.time" "$tag" "$m" "$r" "$k" "$(cut -d' ' -f1-3 /proc/loadavg)" "${JSON:-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); wall, user = map(float, open(sys.argv[2]).read().split()[:2])
s = r["seconds"]; p = r.get("proofs", {})
row = {"build": sys.argv[3], "model": sys.argv[4], "round": int(sys.argv[5]), "run": int(sys.argv[6]), "wall": wall, "user": user,
       "rules": s["rules"], "proved_now": p.get("proved_now"), "import": s["import"], "input_cost": s["input_cost"],
       "search": s["search"], "layout": s["layout"], "check": s["check"], "rest": round(wall - s["until_report"], 3),
       "check_sets": r.get("numeric_check_sets"), "identical": r.get("numeric_check_identical"), "load": sys.argv[7]}
print("%(build)-3s %(model)-13s round %(round)d run %(run)d wall %(wall)7.2f user %(user)7.2f | rules %(rules)6.3f (proved now %(proved_now)s) "
      "import %(import).3f input_cost %(input_cost).3f search %(search).3f layout %(layout).3f check %(check).3f rest %(rest).3f "
      "| sets %(check_sets)s identical %(identical)s | load %(load)s" % row)
if sys.argv[8]:
    with open(sys.argv[8], "a") as f: f.write(json.dumps(row) + "\n")
PY
    done
}

for r in $(seq 1 "$ROUNDS"); do
    for m in $MODELS; do
        if [ -z "$OLD" ]; then one_run new "$BUILD/superopt" "$r" "$m"
        elif [ $(((r + ${#m}) % 2)) = 0 ]; then one_run new "$BUILD/superopt" "$r" "$m"; one_run old "$OLD" "$r" "$m"
        else one_run old "$OLD" "$r" "$m"; one_run new "$BUILD/superopt" "$r" "$m"; fi
    done
done
[ -n "$OLD" ] && $PY - "$OUT" $MODELS <<'PY'
import glob, os, statistics, sys
out = sys.argv[1]
def wall(p):
    try: return float(open(p).read().split()[0])
    except Exception: return None
for m in sys.argv[2:]:
    for k in (1, 2):
        ratios = []
        for t in sorted(glob.glob(os.path.join(out, "new.%s.*.%d.time" % (m, k)))):
            r = os.path.basename(t).split(".")[-3]
            a, b = wall(t), wall(os.path.join(out, "old.%s.%s.%d.time" % (m, r, k)))
            if a and b: ratios.append(a / b)
        if ratios:
            print("wall: %-13s run %d new/old wall: median %.3f of %d rounds (per round %s)" % (m, k, statistics.median(ratios), len(ratios),
                  " ".join("%.2f" % x for x in ratios)))
PY
echo "wall: $(date -u +%H:%M:%S) load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
