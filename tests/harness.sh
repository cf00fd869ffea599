# harness.sh - the prelude the end-to-end scripts share (sourced by integration.sh, bench_smoke.sh, api.sh):
# BUILD, SO, PY, a temporary folder TMP removed at exit, and the ok / bad counters their summary line prints.
# bad NAME [LOG] shows LOG's first 20 lines, or its last 20 when the script set BAD_TAIL=1 before sourcing.
BUILD=${BUILD:-build}
SO=$BUILD/superopt
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() {
    fail=$((fail + 1))
    echo "FAIL - $1"
    [ -n "${2:-}" ] && sed 's/^/       /' "$2" | if [ -n "${BAD_TAIL:-}" ]; then tail -20; else head -20; fi
}
