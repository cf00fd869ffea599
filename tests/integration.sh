#!/usr/bin/env bash
# integration.sh - end-to-end checks on the real models in data/: run vs PyTorch, optimize vs
# original (our backend and ONNX Runtime), and clean errors on bad input. Prints "N passed, N failed".
set -u
BUILD=${BUILD:-build}
SO=$BUILD/superopt
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && sed 's/^/       /' "$2" | head -20; }

# expect_error NAME EXPECTED_SUBSTRING CMD...: exit status 1 within 60 s (a hang fails) and a one-line
# message containing the substring
expect_error() {
    local name=$1 want=$2
    shift 2
    timeout 60 "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$want" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -le 2 ]; then ok "$name"
    else echo "exit $rc" >>"$TMP/err"; bad "$name (wanted exit 1 and '$want')" "$TMP/err"; fi
}

MODELS="deepandwide lstm2 nasrnn bert2 squeezenet resnet_small tinyseg"

# 1. every committed model runs and matches PyTorch within 1e-4 relative
for m in $MODELS; do
    if $SO run data/$m.onnx --inputs data/$m.in.bin --outputs "$TMP/$m.out" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "run $m matches PyTorch"
    else bad "run $m matches PyTorch" "$TMP/log"; fi
    if $SO run data/$m.onnx --inputs data/$m.in.bin --outputs "$TMP/$m.ref.out" --reference --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.ref.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "run --reference $m matches PyTorch"
    else bad "run --reference $m matches PyTorch" "$TMP/log"; fi
done

# 1b. every kernel ISA level from scalar up to the current one (the CPU's, or SUPEROPT_ISA's): each model
#     matches PyTorch at that level, and a second run at the same level gives bitwise identical outputs
cur=$($SO run data/deepandwide.onnx --json --iters 1 --warmup 0 2>/dev/null | $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["isa"])')
levels=""
for l in scalar avx2 avx512; do
    levels="$levels $l"
    [ "$l" = "$cur" ] && break
done
for l in $levels; do
    for m in $MODELS; do
        if $SO run data/$m.onnx --isa $l --inputs data/$m.in.bin --outputs "$TMP/$m.$l.out" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
            $SO run data/$m.onnx --isa $l --inputs data/$m.in.bin --outputs "$TMP/$m.$l.out2" --iters 2 --warmup 0 >>"$TMP/log" 2>&1 &&
            cmp "$TMP/$m.$l.out" "$TMP/$m.$l.out2" >>"$TMP/log" 2>&1 &&
            $PY data/compare_outputs.py "$TMP/$m.$l.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
            ok "run --isa $l $m matches PyTorch, identical run to run"
        else bad "run --isa $l $m matches PyTorch, identical run to run" "$TMP/log"; fi
    done
done
# the level is named in run --json; an unknown level is a usage error (2), an invalid SUPEROPT_ISA a failure (1)
if [ "$cur" = scalar ] || [ "$cur" = avx2 ] || [ "$cur" = avx512 ]; then ok "run --json names the ISA level ($cur)"
else bad "run --json names the ISA level (got '$cur')"; fi
$SO run data/deepandwide.onnx --isa avx9 >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 2 ] && grep -q -- "--isa" "$TMP/err"; then ok "--isa with an unknown level exits 2"
else bad "--isa with an unknown level exits 2" "$TMP/err"; fi
expect_error "SUPEROPT_ISA with an unknown level" "SUPEROPT_ISA=avx9" env SUPEROPT_ISA=avx9 $SO run data/deepandwide.onnx

# 2. run --json prints the contract's one line
if $SO run data/deepandwide.onnx --json --iters 5 >"$TMP/json" 2>"$TMP/log" &&
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert set(d)>={"median_ms","min_ms","iters","peak_activation_bytes"} and d["iters"]==5' "$TMP/json"; then
    ok "run --json"
else bad "run --json" "$TMP/json"; fi

# 3. inspect names ops and FLOPs
if $SO inspect data/squeezenet.onnx >"$TMP/insp" 2>&1 && grep -q "Conv" "$TMP/insp" && grep -q "GFLOP" "$TMP/insp"; then
    ok "inspect squeezenet"
else bad "inspect squeezenet" "$TMP/insp"; fi

# 4. optimize each model: the optimized model matches the original on our backend and in ONNX Runtime
if [ -x "$SO" ] && $SO data/deepandwide.onnx -o "$TMP/probe.onnx" -q --cost flops >/dev/null 2>&1; then
    for m in $MODELS; do
        out=$TMP/$m.opt.onnx
        if $SO data/$m.onnx -o "$out" -q --cost flops --report "$TMP/$m.report.json" >"$TMP/log" 2>&1 &&
            $SO run "$out" --inputs data/$m.in.bin --outputs "$TMP/$m.opt.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
            $PY data/compare_outputs.py "$TMP/$m.opt.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
            ok "optimize $m: optimized model matches PyTorch on our backend"
        else bad "optimize $m: optimized model matches PyTorch on our backend" "$TMP/log"; fi
        if node tools/ort/ort_run.js "$out" --inputs data/$m.in.bin --outputs "$TMP/$m.ort.out" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
            $PY data/compare_outputs.py "$TMP/$m.ort.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
            ok "optimize $m: optimized model matches PyTorch under ONNX Runtime"
        else bad "optimize $m: optimized model matches PyTorch under ONNX Runtime" "$TMP/log"; fi
        if $PY -c 'import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]))' "$out" >"$TMP/log" 2>&1; then
            ok "optimize $m: output passes onnx.checker"
        else bad "optimize $m: output passes onnx.checker" "$TMP/log"; fi
    done
else
    bad "optimize command available (superopt MODEL.onnx)" /dev/null
fi

# 4b. blocked layout (issue 15): --layout nchwc keeps the layout operators (custom domain ai.superopt); the file
#     passes onnx.checker and `superopt run` matches PyTorch. --layout none writes standard ONNX only, which ONNX
#     Runtime runs with the same outputs. A node of that domain that superopt does not know is a clean error.
for m in resnet_small squeezenet; do
    out=$TMP/$m.nchwc.onnx
    if $SO data/$m.onnx -o "$out" -q --search none --layout nchwc >"$TMP/log" 2>&1 &&
        $PY -c 'import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); assert sum(n.domain=="ai.superopt" for n in m.graph.node)>=3' "$out" >>"$TMP/log" 2>&1 &&
        $SO run "$out" --inputs data/$m.in.bin --outputs "$TMP/$m.nchwc.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.nchwc.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "optimize $m --layout nchwc: blocked model passes onnx.checker and matches PyTorch on our backend"
    else bad "optimize $m --layout nchwc: blocked model passes onnx.checker and matches PyTorch on our backend" "$TMP/log"; fi
    std=$TMP/$m.std.onnx
    if $SO data/$m.onnx -o "$std" -q --search none --layout none >"$TMP/log" 2>&1 &&
        $PY -c 'import onnx,sys; m=onnx.load(sys.argv[1]); assert all(n.domain in ("","ai.onnx") for n in m.graph.node)' "$std" >>"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$std" --inputs data/$m.in.bin --outputs "$TMP/$m.std.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.std.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "optimize $m --layout none: standard ONNX that ONNX Runtime runs, matching PyTorch"
    else bad "optimize $m --layout none: standard ONNX that ONNX Runtime runs, matching PyTorch" "$TMP/log"; fi
done
$PY - "$TMP/badlayout.onnx" <<'PYEOF' >"$TMP/log" 2>&1
import sys, onnx
from onnx import helper, TensorProto
n = helper.make_node("bogus", ["x"], ["y"], domain="ai.superopt")
g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.superopt", 1)]), sys.argv[1])
PYEOF
expect_error "unknown operator of the layout domain" "bogus" $SO run "$TMP/badlayout.onnx"

# 5. bad input: clean one-line errors, exit 1
head -c 300 data/squeezenet.onnx >"$TMP/trunc.onnx"
expect_error "truncated model" "trunc.onnx" $SO run "$TMP/trunc.onnx"
head -c 4096 /dev/urandom >"$TMP/random.onnx"
expect_error "random bytes" "random.onnx" $SO inspect "$TMP/random.onnx"
expect_error "missing file" "nope.onnx" $SO run "$TMP/nope.onnx"
head -c 10 data/deepandwide.in.bin >"$TMP/short.bin"
expect_error "inputs file of the wrong size" "short.bin" $SO run data/deepandwide.onnx --inputs "$TMP/short.bin"
$SO run >/dev/null 2>&1
[ $? -eq 2 ] && ok "usage error exits 2" || bad "usage error exits 2"

# 6. hostile input (fuzz): --max-memory, non-regular inputs file, and the seeded corpus of 240 mutated
#    models (tests/mutate_models.py): each exits 0 or 1 with a one-line message naming the file, never a
#    signal, within 1 s CPU and 1 GB. Failing mutants are kept in $BUILD/mutants-failed/.
expect_error "--max-memory refuses a model over the limit" "allocation limit" $SO run data/squeezenet.onnx --max-memory 1M
expect_error "inputs file that is a directory" "not a regular file" $SO run data/deepandwide.onnx --inputs "$TMP"
if $PY tests/mutate_models.py --superopt "$SO" --keep "$BUILD/mutants-failed" >"$TMP/mut" 2>&1; then
    ok "mutated models: $(sed -n 's/^mutate: \(.*\) mutants of.*/\1/p' "$TMP/mut") mutants, clean results"
else bad "mutated models: clean exit or one-line error, no crash, <= 1 s, <= 1 GB" "$TMP/mut"; fi

# 6b. hostile files and paths (issue 20): outputs to devices/pipes/symlinks, non-regular inputs, poisoned
#     cost cache (tests/hostile.sh, sourced: one ok line per case)
. tests/hostile.sh

# 7. resumable generate: SIGKILL + --resume gives the uninterrupted file (tests/gen_resume.sh)
if tests/gen_resume.sh "$SO" 1 >"$TMP/resume" 2>&1; then ok "generate --resume after SIGKILL: $(tail -1 "$TMP/resume" | sed 's/^ok - //')"
else bad "generate --resume after SIGKILL" "$TMP/resume"; fi

# 8. generate --mpi: mpirun -np 2 == single process, errors abort all ranks, resume (tests/gen_mpi.sh)
if tests/gen_mpi.sh "$SO" >"$TMP/mpi" 2>&1; then ok "generate --mpi: $(grep -c '^ok' "$TMP/mpi") checks ($(head -1 "$TMP/mpi" | sed 's/^ok - //'))"
else bad "generate --mpi (tests/gen_mpi.sh)" "$TMP/mpi"; fi

# 9. deep graph (issue 8): a 100,000-node chain (tests/make_chain.py) imports, optimizes under
#    --time-limit 1, passes the numeric check and exports a valid model (unique names, onnx.checker)
#    that runs again. `timeout 120` is a hang guard for quadratic stages, not a speed assertion.
if $PY tests/make_chain.py 100000 "$TMP/chain.onnx" >"$TMP/log" 2>&1 &&
    timeout 120 $SO "$TMP/chain.onnx" -o "$TMP/chain.opt.onnx" --search greedy --time-limit 1 --cost flops -q \
        --report "$TMP/chain.json" >>"$TMP/log" 2>&1 &&
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes_before"]==100000 and d["numeric_check"] is True and d["max_rel_err"]<=1e-4, d' \
        "$TMP/chain.json" >>"$TMP/log" 2>&1 &&
    $PY -c 'import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); o=[t for n in m.graph.node for t in n.output]; nm=[n.name for n in m.graph.node]; assert len(o)>=90000 and len(set(o))==len(o) and len(set(nm))==len(nm), len(o)' \
        "$TMP/chain.opt.onnx" >>"$TMP/log" 2>&1 &&
    timeout 120 $SO run "$TMP/chain.opt.onnx" --iters 1 --warmup 0 >>"$TMP/log" 2>&1; then
    ok "100,000-node chain: import, optimize --time-limit 1, numeric check, export (valid, unique names), run"
else bad "100,000-node chain: import, optimize --time-limit 1, numeric check, export, run (timeout 120 s each)" "$TMP/log"; fi

echo
echo "integration: $pass passed, $fail failed"
[ $fail -eq 0 ]
