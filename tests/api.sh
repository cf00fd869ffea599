#!/usr/bin/env bash
# api.sh - the library as a user gets it (make test-api, part of make test-core): `make install` into a temporary
# prefix (and a DESTDIR staging, then `make uninstall` leaving nothing), the C example built with
# `pkg-config --cflags --libs superopt` against that install runs every data/ model and matches the stored
# outputs (also under valgrind; under ASan in make test-asan), the installed superopt finds the installed rule
# set from any directory, the installed Python package passes tests/test_python.py, and
# examples/optimize_and_run.py optimizes a model that then matches in superopt.Session and in ONNX Runtime.
# Usage: BUILD=build [SAN=1] bash tests/api.sh
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
SAN=${SAN:-}
. tests/harness.sh

P=$TMP/prefix
if make -s install PREFIX="$P" SAN="$SAN" >"$TMP/log" 2>&1; then ok "make install PREFIX=$P"; else bad "make install" "$TMP/log"; fi
missing=""
for f in bin/superopt include/superopt.h lib/libsuperopt.a lib/libsuperopt.so lib/pkgconfig/superopt.pc share/superopt/default.rules \
         lib/python3/dist-packages/superopt/__init__.py; do
    [ -e "$P/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "install holds bin, header, both libraries, superopt.pc, rules, python package" || bad "installed files missing:$missing"
soname=$(objdump -p "$P/lib/libsuperopt.so" 2>/dev/null | awk '/SONAME/ {print $2}')
[[ $soname == libsuperopt.so.[0-9]* ]] && ok "versioned soname ($soname)" || bad "versioned soname (got '$soname')"
nm -D --defined-only "$P/lib/libsuperopt.so" | awk '$2 ~ /[TDBRW]/ {print $3}' >"$TMP/syms"
other=$(grep -v '^superopt_' "$TMP/syms" | grep -v '^_' | head -5)
[ -s "$TMP/syms" ] && [ -z "$other" ] && ok "libsuperopt.so exports only superopt_* ($(wc -l <"$TMP/syms") symbols)" ||
    bad "libsuperopt.so exports only superopt_* (also: $other)"

# DESTDIR staging and uninstall
D=$TMP/stage
if make -s install PREFIX=/opt/superopt DESTDIR="$D" SAN="$SAN" >"$TMP/log" 2>&1 && [ -x "$D/opt/superopt/bin/superopt" ] &&
    grep -q '^prefix=/opt/superopt$' "$D/opt/superopt/lib/pkgconfig/superopt.pc" &&
    make -s uninstall PREFIX=/opt/superopt DESTDIR="$D" >>"$TMP/log" 2>&1 && [ -z "$(find "$D" -type f -o -type l)" ]; then
    ok "make install DESTDIR=... PREFIX=/opt/superopt stages under DESTDIR; make uninstall removes every file"
else bad "DESTDIR install / uninstall" "$TMP/log"; fi

# the C example, built the way a user builds it
export PKG_CONFIG_PATH=$P/lib/pkgconfig
export LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CFL=""
[ -n "$SAN" ] && CFL="-fsanitize=address,undefined -fno-sanitize-recover=undefined -g"
if cc -std=c11 -Wall -Wextra -Werror $CFL examples/run_model.c $(pkg-config --cflags --libs superopt) -lm -o "$TMP/run_model" >"$TMP/log" 2>&1; then
    ok "examples/run_model.c builds with pkg-config --cflags --libs superopt"
else bad "examples/run_model.c builds with pkg-config" "$TMP/log"; fi
ldd "$TMP/run_model" 2>/dev/null | grep -q "$P/lib/libsuperopt.so" && ok "the example links the installed libsuperopt.so" ||
    bad "the example links the installed libsuperopt.so"
for m in $(ls data/*.out.bin | sed 's|data/||; s|\.out\.bin||'); do
    if (cd "$TMP" && ./run_model "$ROOT/data/$m.onnx" "$ROOT/data/$m.in.bin" "$ROOT/data/$m.out.bin") >"$TMP/log" 2>&1 && grep -q '^OK:' "$TMP/log"; then
        ok "C example: $m matches the stored outputs"
    else bad "C example: $m matches the stored outputs" "$TMP/log"; fi
done
if ! (cd "$TMP" && ./run_model "$ROOT/data/no_such.onnx" "$ROOT/data/deepandwide.in.bin" "$ROOT/data/deepandwide.out.bin") >"$TMP/log" 2>&1 &&
    grep -q "no_such.onnx" "$TMP/log"; then ok "C example: a bad path fails with the library's message"
else bad "C example: a bad path fails with the library's message" "$TMP/log"; fi
if [ -z "$SAN" ] && command -v valgrind >/dev/null; then
    vg="valgrind -q --error-exitcode=101 --leak-check=full --errors-for-leak-kinds=definite --suppressions=$ROOT/tests/valgrind.supp"
    for m in deepandwide squeezenet; do
        if (cd "$TMP" && SUPEROPT_ISA=avx2 SUPEROPT_ONEDNN=0 $vg ./run_model "$ROOT/data/$m.onnx" "$ROOT/data/$m.in.bin" "$ROOT/data/$m.out.bin" 1) >"$TMP/log" 2>&1; then
            ok "C example clean under valgrind ($m)"
        else bad "C example clean under valgrind ($m)" "$TMP/log"; fi
    done
fi

# the installed command: --version, and optimize from another directory finds the installed rules
cd "$TMP" || exit 1
if "$P/bin/superopt" --version >"$TMP/log" 2>&1 && grep -q "^superopt [0-9]" "$TMP/log"; then ok "installed superopt --version"; else bad "installed superopt --version" "$TMP/log"; fi
if SUPEROPT_RULES= "$P/bin/superopt" "$ROOT/data/deepandwide.onnx" -o "$TMP/dw.opt.onnx" -q --cost flops --report "$TMP/dw.json" >"$TMP/log" 2>&1 &&
    grep -q "\"rules\": \"$P/bin/../share/superopt/default.rules\"" "$TMP/dw.json"; then
    ok "installed superopt optimizes with the installed share/superopt/default.rules"
else bad "installed superopt finds the installed rules" "$TMP/log"; fi
cd "$ROOT" || exit 1

# the installed Python package (not under ASan: python3 would need the sanitizer runtime preloaded)
if [ -z "$SAN" ]; then
    export PYTHONPATH=$P/lib/python3/dist-packages
    if $PY tests/test_python.py data >"$TMP/log" 2>&1; then ok "tests/test_python.py ($(grep -c '^ok' "$TMP/log") checks) on the installed package"
    else bad "tests/test_python.py on the installed package" <(grep -v '^ok' "$TMP/log"); fi
    $PY -c 'import superopt, sys; sys.exit(0 if superopt._lib._name.startswith(sys.argv[1]) else 1)' "$P/lib" >"$TMP/log" 2>&1 &&
        ok "the installed package loads the installed library" || bad "the installed package loads the installed library" "$TMP/log"
    if [ -e tools/ort/node_modules/onnxruntime-node/package.json ]; then ort=--ort; else ort=""; echo "note - tools/ort not installed: ONNX Runtime part skipped"; fi
    if $PY examples/optimize_and_run.py data/nasrnn.onnx --out "$TMP" $ort --time-limit 2 >"$TMP/log" 2>&1; then
        ok "examples/optimize_and_run.py: optimized nasrnn matches in superopt.Session${ort:+ and ONNX Runtime}"
    else bad "examples/optimize_and_run.py" "$TMP/log"; fi
fi
echo "api: $pass passed, $fail failed"
[ $fail -eq 0 ]
