#!/usr/bin/env bash
# integration.sh - end-to-end checks on the real models in data/: run vs PyTorch, optimize vs
# original (our backend and ONNX Runtime), and clean errors on bad input. Prints "N passed, N failed".
set -u
. "$(dirname "$0")/harness.sh"

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
# 1c. an OpenBLAS below our level (kernels/blas.h): OPENBLAS_CORETYPE=Prescott gives OpenBLAS its SSE3 kernels (what
#     Debian's 0.3.21 picks on a CPU it does not recognise), so at avx2 and avx512 so_sgemm's products run on our
#     GEMV / GEMM (oneDNN where it is used): run --json names it, every model matches PyTorch at 1 and 2 threads, and
#     the two thread counts give bitwise identical outputs. With OpenBLAS at our level nothing is routed.
for l in $levels; do
    [ "$l" = scalar ] && continue
    for m in $MODELS; do
        if OPENBLAS_CORETYPE=Prescott $SO run data/$m.onnx --isa $l --json --iters 1 --warmup 0 >"$TMP/bj" 2>"$TMP/log" &&
            $PY -c 'import json,sys; b=json.load(open(sys.argv[1]))["blas"]; assert b.startswith("OpenBLAS Prescott (below ") and "on superopt" in b, b' "$TMP/bj" >>"$TMP/log" 2>&1 &&
            OPENBLAS_CORETYPE=Prescott $SO run data/$m.onnx --isa $l --threads 1 --inputs data/$m.in.bin --outputs "$TMP/$m.$l.p1" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
            OPENBLAS_CORETYPE=Prescott $SO run data/$m.onnx --isa $l --threads 2 --inputs data/$m.in.bin --outputs "$TMP/$m.$l.p2" --iters 2 --warmup 0 >>"$TMP/log" 2>&1 &&
            cmp "$TMP/$m.$l.p1" "$TMP/$m.$l.p2" >>"$TMP/log" 2>&1 &&
            $PY data/compare_outputs.py "$TMP/$m.$l.p1" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
            ok "OpenBLAS Prescott at $l: $m on our kernels matches PyTorch, 1 and 2 threads identical"
        else cat "$TMP/bj" >>"$TMP/log" 2>/dev/null; bad "OpenBLAS Prescott at $l: $m on our kernels matches PyTorch, 1 and 2 threads identical" "$TMP/log"; fi
    done
    ok_core=$([ "$l" = avx512 ] && echo SkylakeX || echo Haswell)
    if OPENBLAS_CORETYPE=$ok_core $SO run data/nasrnn.onnx --isa $l --json --iters 1 --warmup 0 >"$TMP/bj" 2>"$TMP/log" &&
        $PY -c 'import json,sys; b=json.load(open(sys.argv[1]))["blas"]; assert b == "OpenBLAS " + sys.argv[2], b' "$TMP/bj" $ok_core >>"$TMP/log" 2>&1; then
        ok "OpenBLAS $ok_core at $l: not routed around"
    else cat "$TMP/bj" >>"$TMP/log" 2>/dev/null; bad "OpenBLAS $ok_core at $l: not routed around" "$TMP/log"; fi
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
#     Runtime runs with the same outputs (with --search none no rewrite is kept, so it is the input file, byte for
#     byte). A node of that domain that superopt does not know is a clean error.
for m in resnet_small squeezenet; do
    out=$TMP/$m.nchwc.onnx
    if $SO data/$m.onnx -o "$out" -q --search none --layout nchwc --report "$TMP/$m.nchwc.json" >"$TMP/log" 2>&1 &&
        $PY - "$TMP/$m.nchwc.json" rules/default.rules <<'PYEOF' >>"$TMP/log" 2>&1 &&
import json, re, sys
# the placement is made of proven rules: every rule applied is a generated layout rule (layout universe, or the
# extended ones: strided convs and their folds, pools, k x k kernels, padded stems and the 1000-class conv) or a
# conv+BN fold
rep = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
blocks = {int(b.split()[1]): b for b in re.split(r"\n(?=rule \d+\n)", text) if b.startswith("rule ")}
applied = rep["rules_applied"]
assert rep["layout"]["applied"] and rep["layout"]["convs"] > 0 and applied, rep["layout"]
for k in applied:
    b = blocks[int(k.split("-")[0])]
    assert "proof proved" in b and (re.search(r"generate layout(-stride|-pool|-kernel|-stem|-classifier|-depthwise)? b=", b) or "bnfold_w" in b), k
PYEOF
        $PY -c 'import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); assert sum(n.domain=="ai.superopt" for n in m.graph.node)>=3' "$out" >>"$TMP/log" 2>&1 &&
        $SO run "$out" --inputs data/$m.in.bin --outputs "$TMP/$m.nchwc.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.nchwc.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "optimize $m --layout nchwc: placed by proven layout rules (report), passes onnx.checker and matches PyTorch on our backend"
    else bad "optimize $m --layout nchwc: placed by proven layout rules (report), passes onnx.checker and matches PyTorch on our backend" "$TMP/log"; fi
    if $SO data/$m.onnx -o "$out" -q --search none --layout pass >"$TMP/log" 2>&1 &&
        $SO run "$out" --inputs data/$m.in.bin --outputs "$TMP/$m.pass.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.pass.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "optimize $m --layout pass (the hand-written placement pass): matches PyTorch on our backend"
    else bad "optimize $m --layout pass (the hand-written placement pass): matches PyTorch on our backend" "$TMP/log"; fi
    std=$TMP/$m.std.onnx
    if $SO data/$m.onnx -o "$std" -q --search none --layout none >"$TMP/log" 2>&1 &&
        { cmp "data/$m.onnx" "$std" >>"$TMP/log" 2>&1 || { echo "--layout none with no rewrite: not the input's bytes" >>"$TMP/log"; false; }; } &&
        $PY -c 'import onnx,sys; m=onnx.load(sys.argv[1]); assert all(n.domain in ("","ai.onnx") for n in m.graph.node)' "$std" >>"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$std" --inputs data/$m.in.bin --outputs "$TMP/$m.std.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/$m.std.out" data/$m.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "optimize $m --layout none (no rewrite: the input file written unchanged): standard ONNX that ONNX Runtime runs, matching PyTorch"
    else bad "optimize $m --layout none (no rewrite: the input file written unchanged): standard ONNX that ONNX Runtime runs, matching PyTorch" "$TMP/log"; fi
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

# 4c. --layout auto picks the placement whose answer is known (layout.method in the report): lay_rules.onnx is covered
#     by proven layout rules node for node (strided conv + batchnorm fold, strided max pool, global average pool), so
#     the rule placement is at least as cheap as the pass and auto keeps "rules" (ties go to the rules); lay_pass.onnx
#     has 20 channels (no exact blocking), no rule applies and auto keeps "pass"; lay_dw.onnx (MobileNet's block: depthwise
#     3x3 convs, stride 1 with batchnorm and 2) is covered by the depthwise layout rules (group=dw); there the two
#     placements price within ~1 % of each other (measured, so the cheaper one flips under load: seen 0.02506 rules
#     vs 0.02478 pass), so auto may keep either, but must keep the one it priced cheaper (ties to the rules), and
#     the pass only as a near-tie (the rules' price within 5 % of it). All outputs checked by the safety net.
#     Whether the kept placement is then applied at all (priced below the plain graph) is decided by measured time
#     and is not a known answer: on this Intel Xeon at load ~9 lay_pass priced blocked/plain 0.79, 0.85 and 1.12 in
#     three fresh-cache runs (the third left the plain graph and failed the case as it was written before session
#     20). So the auto run checks the method and the choice rule (applied exactly when the placement priced lower,
#     the graph kept the cheapest; a choice decided by paired re-timing, layout.choice_retimed / apply_retimed,
#     is not held to the cached prices), and the rule placement itself (all convs blocked, 2 reorders, the stride / pool /
#     depthwise rules used) is checked on a `--layout nchwc` run, which prices nothing; when auto did apply the rules,
#     the same facts are checked on its report too.
#     The known answers come from measured costs of the optimized kernels: a sanitizer build (-O1, no oneDNN) times
#     other kernels, so there the check is skipped and says so. The known answers are the AVX-512 level's (block 16);
#     at block 8 (SUPEROPT_ISA=avx2) only auto's choice rule (the cheaper placement, ties to the rules) is checked.
#     Each model is priced on its own fresh --cache-dir: the user's disk cost cache keeps (cost cache v3) a settled
#     timing from any earlier run, possibly a contended one, so a known answer read through it would be that run's.
case "$BUILD" in *asan*) SAN_BUILD=1 ;; *) SAN_BUILD=0 ;; esac
if [ "$SAN_BUILD" = 1 ]; then
    echo "skip - optimize lay_rules / lay_pass --layout auto: known answers hold for measured costs of the optimized build only"
elif $PY tests/make_layout_models.py "$TMP" >"$TMP/log" 2>&1; then
    for c in "lay_rules rules" "lay_pass pass" "lay_dw rules"; do
        set -- $c
        nrep=-
        : >"$TMP/log"
        if [ "$2" = rules ]; then nrep="$TMP/$1.nchwc.json"; $SO "$TMP/$1.onnx" -o "$TMP/$1.nchwc.onnx" -q --search none --layout nchwc --cache-dir "$TMP/cache_$1" --report "$nrep" >>"$TMP/log" 2>&1 || nrep=failed; fi
        if $SO "$TMP/$1.onnx" -o "$TMP/$1.opt.onnx" -q --search none --cache-dir "$TMP/cache_$1" --report "$TMP/$1.json" >>"$TMP/log" 2>&1 &&
            $PY tests/layout_known.py "$TMP/$1.json" "$2" rules/default.rules "$nrep" >>"$TMP/log" 2>&1; then
            if grep -q "known answer not checked\|auto kept the pass\|not applied" "$TMP/log"; then ok "optimize $1 --layout auto: $(tail -1 "$TMP/log")"
            else ok "optimize $1 --layout auto: layout.method is '$2' (the known answer)"; fi
        else bad "optimize $1 --layout auto: layout.method is '$2' (the known answer)" "$TMP/log"; fi
    done
else bad "make_layout_models.py" "$TMP/log"; fi

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
mkdir -p "$TMP/emptydir"
expect_error "inputs directory without input_0.pb" "--inputs gives 0 tensors for the model's 3 inputs" $SO run data/deepandwide.onnx --inputs "$TMP/emptydir"

# 5b. symbolic dimensions and typed tensor I/O (--input-shape, --dim, --inputs DIR, --outputs DIR/)
if $PY tests/make_typed_fixtures.py "$TMP/ty" >"$TMP/log" 2>&1; then
    expect_error "symbolic dimension without a pin names the option" "input 'x' has a symbolic dimension 'batch' (dimension 0); pin it with --dim batch=N" \
        $SO run "$TMP/ty/sym.onnx"
    expect_error "--input-shape of a missing input" "--input-shape names 'nope'" $SO run "$TMP/ty/sym.onnx" --input-shape nope=1,2
    expect_error "--input-shape disagreeing with a fixed dimension" "dimension 1 is 3 in the file, --input-shape gives 4" \
        $SO run "$TMP/ty/sym.onnx" --input-shape x=2,4,5
    if $SO run "$TMP/ty/sym.onnx" --dim batch=2 --dim len=5 --inputs "$TMP/ty/sym.in.bin" --outputs "$TMP/ty/sym.out.bin" >"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/ty/sym.out.bin" "$TMP/ty/sym.ref.bin" --rtol 1e-5 >>"$TMP/log" 2>&1; then
        ok "run with --dim batch=2 --dim len=5 matches numpy"
    else bad "run with --dim batch=2 --dim len=5 matches numpy" "$TMP/log"; fi
    if $SO "$TMP/ty/sym.onnx" --input-shape x=2,3,5 -o "$TMP/ty/sym.opt.onnx" -q --cost flops --report "$TMP/ty/sym.json" >"$TMP/log" 2>&1 &&
        $PY -c 'import json,sys,onnx; d=json.load(open(sys.argv[1])); assert d["input_shapes"]["x"]=={"shape":[2,3,5],"pinned":True}, d["input_shapes"]; m=onnx.load(sys.argv[2]); assert [x.dim_value for x in m.graph.input[0].type.tensor_type.shape.dim]==[2,3,5]' \
            "$TMP/ty/sym.json" "$TMP/ty/sym.opt.onnx" >>"$TMP/log" 2>&1; then
        ok "optimize --input-shape: the model and the report carry the pinned shape"
    else bad "optimize --input-shape: the model and the report carry the pinned shape" "$TMP/log"; fi
    mkdir -p "$TMP/ty/out"
    if $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/typed_set" --outputs "$TMP/ty/out/" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
        $PY tests/make_typed_fixtures.py --compare "$TMP/ty/out" "$TMP/ty/typed_set" >>"$TMP/log" 2>&1; then
        ok "run --inputs DIR (float32 + int64) --outputs DIR/ (float32 + int64) matches numpy"
    else bad "run --inputs DIR --outputs DIR/ matches numpy" "$TMP/log"; fi
    expect_error "--inputs DIR: tensor of the wrong type" "is FLOAT in the model, the given tensor is INT32" \
        $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/bad_type"
    expect_error "--inputs DIR: tensor of the wrong shape" "dimension 1 is 3 in the model, 4 in the given tensor" \
        $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/bad_shape"
    expect_error "--inputs DIR: an extra file" "input_5.pb is given but input_2.pb is missing" \
        $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/extra"
    expect_error "--inputs DIR: too many tensors" "--inputs gives 3 tensors for the model's 2 inputs" \
        $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/three"
    expect_error "--inputs DIR: a file that is not a TensorProto" "input_1.pb: not a serialized ONNX TensorProto" \
        $SO run "$TMP/ty/typed.onnx" --inputs "$TMP/ty/garbage"
else bad "tests/make_typed_fixtures.py" "$TMP/log"; fi

# 5c. integer and boolean graph inputs fed to the executor at run time (issue 23): a float32 + bool + int32
#     model through the raw typed FILE form, optimize (numeric check on valid inputs; the written model keeps
#     the input types) and ONNX Runtime; the tokenizer-fed BERT-style encoder data/bert_tok.onnx (int64
#     input_ids, attention_mask, token_type_ids; tests/make_bert_tok.py) from its test-set folder vs PyTorch
#     with every input fed at run time, and its optimized model in ONNX Runtime vs PyTorch
if [ -f "$TMP/ty/mixed.onnx" ]; then
    if $SO run "$TMP/ty/mixed.onnx" --inputs "$TMP/ty/mixed.in.bin" --outputs "$TMP/ty/mixed.out" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
        cmp "$TMP/ty/mixed.out" "$TMP/ty/mixed.ref.bin" >>"$TMP/log" 2>&1; then
        ok "run: float32 + bool + int32 inputs from a raw typed file, float32 + bool outputs equal numpy's"
    else bad "run: float32 + bool + int32 inputs from a raw typed file, outputs equal numpy's" "$TMP/log"; fi
    if $SO "$TMP/ty/mixed.onnx" -o "$TMP/ty/mixed.opt.onnx" --cost flops --report "$TMP/ty/mixed.json" -q >"$TMP/log" 2>&1 &&
        $PY -c 'import json,sys,onnx; d=json.load(open(sys.argv[1])); assert d["numeric_check"] is True, d; m=onnx.load(sys.argv[2]); t=[i.type.tensor_type.elem_type for i in m.graph.input]; assert t==[1,9,6], t' \
            "$TMP/ty/mixed.json" "$TMP/ty/mixed.opt.onnx" >>"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$TMP/ty/mixed.opt.onnx" --inputs "$TMP/ty/mixed.in.bin" --outputs "$TMP/ty/mixed.ort.out" >>"$TMP/log" 2>&1 &&
        cmp "$TMP/ty/mixed.ort.out" "$TMP/ty/mixed.ref.bin" >>"$TMP/log" 2>&1; then
        ok "optimize a float32 + bool + int32 model: numeric check, input types kept, ONNX Runtime equals numpy"
    else bad "optimize a float32 + bool + int32 model: numeric check, input types kept, ONNX Runtime equals numpy" "$TMP/log"; fi
fi
# If with a condition known at import (issue 16): computed from the pinned batch dimension, replaced by the taken
# branch (which reads an outer value and has its own initializer); a condition known only at run time is refused
if [ -f "$TMP/ty/ifshape.onnx" ]; then
    for b in 1 2; do
        if $SO run "$TMP/ty/ifshape.onnx" --dim batch=$b --inputs "$TMP/ty/ifshape.in$b.bin" --outputs "$TMP/ty/if$b.out" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
            $PY data/compare_outputs.py "$TMP/ty/if$b.out" "$TMP/ty/ifshape.ref$b.bin" --rtol 1e-6 >>"$TMP/log" 2>&1; then
            ok "If on Shape(x)[0] == 1 with --dim batch=$b: the $([ $b = 1 ] && echo then || echo else) branch, equal to numpy"
        else bad "If on Shape(x)[0] == 1 with --dim batch=$b: the taken branch, equal to numpy" "$TMP/log"; fi
    done
    if $SO "$TMP/ty/ifshape.onnx" --dim batch=2 -o "$TMP/ty/ifo.onnx" -q --cost flops >"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$TMP/ty/ifo.onnx" --inputs "$TMP/ty/ifshape.in2.bin" --outputs "$TMP/ty/ifo.out" >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/ty/ifo.out" "$TMP/ty/ifshape.ref2.bin" --rtol 1e-6 >>"$TMP/log" 2>&1; then
        ok "If known at import: the optimized model (branch inlined) runs in ONNX Runtime, equal to numpy"
    else bad "If known at import: the optimized model runs in ONNX Runtime, equal to numpy" "$TMP/log"; fi
fi
# If whose condition is known only at run time (issue 16 item 2): kept opaque. run refuses it with one line (raw
# inputs), runs the taken branch when --inputs DIR gives the values its condition needs; the optimized model keeps
# it (the outer values its branches read, an initializer in a nested If included, keep their names) and runs in
# ONNX Runtime on both branches; with no output shape declared anywhere, one line naming the node and operator
if [ -f "$TMP/ty/ifrun.onnx" ]; then
    expect_error "If on ReduceSum(x) > 0: run refuses the opaque If with one line" "unsupported operator 'If' at node 'pick' (its condition is not known at import" \
        $SO run "$TMP/ty/ifrun.onnx" --inputs "$TMP/ty/ifrun.pos.bin"
    expect_error "If with no output shape declared anywhere: one line naming the node and operator" "node 'pick' (If) is not supported and the file declares no shape" \
        $SO "$TMP/ty/ifnoshape.onnx" -o "$TMP/ty/ifns.onnx" --allow-unchecked -q
    if $SO "$TMP/ty/ifrun.onnx" -o "$TMP/ty/ifrun.opt.onnx" --allow-unchecked -q --cost flops >"$TMP/log" 2>&1; then
        for t in pos neg; do
            if $SO run "$TMP/ty/ifrun.onnx" --inputs "$TMP/ty/ifrun_$t" --outputs "$TMP/ty/ifr.$t.so" --iters 1 --warmup 0 >"$TMP/log" 2>&1 &&
                $PY data/compare_outputs.py "$TMP/ty/ifr.$t.so" "$TMP/ty/ifrun.$t.ref.bin" --rtol 1e-6 >>"$TMP/log" 2>&1 &&
                node tools/ort/ort_run.js "$TMP/ty/ifrun.opt.onnx" --inputs "$TMP/ty/ifrun.$t.bin" --outputs "$TMP/ty/ifr.$t.ort" >>"$TMP/log" 2>&1 &&
                $PY data/compare_outputs.py "$TMP/ty/ifr.$t.ort" "$TMP/ty/ifrun.$t.ref.bin" --rtol 1e-6 >>"$TMP/log" 2>&1; then
                ok "opaque If, $([ $t = pos ] && echo then || echo else) branch: run --inputs DIR and the optimized model in ONNX Runtime equal numpy"
            else bad "opaque If ($t): run --inputs DIR and the optimized model in ONNX Runtime equal numpy" "$TMP/log"; fi
        done
    else bad "optimize a model with an opaque If (--allow-unchecked)" "$TMP/log"; fi
fi
# Resize cubic and antialias (issue 16): opset-18 antialiased downscales, linear and cubic (cubic_coeff_a, exclude_outside),
# and 1-D Conv / MaxPool / ConvTranspose / AveragePool (lifted to 2-D at import) match ONNX Runtime on the same seeded
# input, and the optimized models (antialias written back; 2-D operators between Unsqueeze and Squeeze) run there alike
for mode in linear cubic conv1d; do
    f=$TMP/ty/aa_$mode.onnx
    [ $mode = conv1d ] && f=$TMP/ty/conv1d.onnx
    if [ -f "$f" ] && node tools/ort/ort_run.js "$f" --seed 5 --outputs "$TMP/ty/aa.ort" >"$TMP/log" 2>&1 &&
        $SO run "$f" --seed 5 --iters 1 --warmup 0 --outputs "$TMP/ty/aa.so" >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/ty/aa.so" "$TMP/ty/aa.ort" --rtol 1e-4 >>"$TMP/log" 2>&1 &&
        $SO "$f" -o "$TMP/ty/aa.opt.onnx" -q --cost flops >>"$TMP/log" 2>&1 &&
        node tools/ort/ort_run.js "$TMP/ty/aa.opt.onnx" --seed 5 --outputs "$TMP/ty/aa.opt.ort" >>"$TMP/log" 2>&1 &&
        $PY data/compare_outputs.py "$TMP/ty/aa.opt.ort" "$TMP/ty/aa.ort" --rtol 1e-4 >>"$TMP/log" 2>&1; then
        ok "$(basename "$f" .onnx): run matches ONNX Runtime; the optimized model runs there alike"
    else bad "$(basename "$f" .onnx): run matches ONNX Runtime; the optimized model runs there alike" "$TMP/log"; fi
done
BT=data/bert_tok/test_data_set_0
mkdir -p "$TMP/bt"
if $SO run data/bert_tok.onnx --dim batch=1 --dim seq=32 --inputs $BT --outputs "$TMP/bt/" --iters 1 --warmup 0 --json >"$TMP/bt/json" 2>"$TMP/log" &&
    $PY -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); assert d["specialised_inputs"]==0, d' "$TMP/bt/json" >>"$TMP/log" 2>&1 &&
    $PY tests/make_bert_tok.py --compare "$TMP/bt" $BT >>"$TMP/log" 2>&1; then
    ok "bert_tok (int64 ids, mask, token types fed at run time): run --inputs DIR matches PyTorch ($(tail -1 "$TMP/log" | sed 's/.*worst/worst/'))"
else bad "bert_tok: run --inputs DIR matches PyTorch, every input fed at run time" "$TMP/log"; fi
if $PY tests/make_bert_tok.py --raw $BT "$TMP/bt/in.bin" >"$TMP/log" 2>&1 &&
    $SO data/bert_tok.onnx --dim batch=1 --dim seq=32 -o "$TMP/bt/opt.onnx" --cost flops --report "$TMP/bt/rep.json" -q >>"$TMP/log" 2>&1 &&
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["numeric_check"] is True, d' "$TMP/bt/rep.json" >>"$TMP/log" 2>&1 &&
    node tools/ort/ort_run.js "$TMP/bt/opt.onnx" --inputs "$TMP/bt/in.bin" --outputs "$TMP/bt/ort.out" >>"$TMP/log" 2>&1 &&
    $PY tests/make_bert_tok.py --compare "$TMP/bt/ort.out" $BT >>"$TMP/log" 2>&1; then
    ok "bert_tok: optimized model (int64 inputs kept) runs in ONNX Runtime and matches PyTorch ($(tail -1 "$TMP/log" | sed 's/.*worst/worst/'))"
else bad "bert_tok: optimized model runs in ONNX Runtime and matches PyTorch" "$TMP/log"; fi
if $PY tests/mutate_models.py --superopt "$SO" --keep "$BUILD/mutants-failed" >"$TMP/mut" 2>&1; then
    ok "mutated models: $(sed -n 's/^mutate: \(.*\) mutants of.*/\1/p' "$TMP/mut") mutants, clean results"
else bad "mutated models: clean exit or one-line error, no crash, <= 1 s, <= 1 GB" "$TMP/mut"; fi

# 6b. hostile files and paths (issue 20): outputs to devices/pipes/symlinks, non-regular inputs, poisoned
#     cost cache (tests/hostile.sh, sourced: one ok line per case)
. tests/hostile.sh

# 6c. no wrong rule reaches a written model (issue 19): forged proofs, rules in the current directory,
#     the numeric safety net (clip, relu next to large values, Inf outputs, unrunnable models), the proof
#     cache, verify's witnesses (tests/safety.sh, sourced: one ok line per case)
. tests/safety.sh

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

# 10. other exporters' styles (issue 16): Paddle2ONNX (opsets 9-11), tf2onnx (NHWC, auto_pad) and PyTorch
#     opset-18+ models with symbolic dimensions pinned by --dim match ONNX Runtime under `superopt run`,
#     and the optimized models run in ONNX Runtime with the same outputs (tests/exporter_fixtures.sh); with
#     the data/ models, the rows of docs/MODELS.md's acceptance table (the same command without --table --latency)
if bash tests/exporter_fixtures.sh "$SO" data/bert2.onnx "data/bert_tok.onnx:--dim batch=1 --dim seq=32" data/deepandwide.onnx \
    data/lstm2.onnx data/nasrnn.onnx data/resnet_small.onnx data/squeezenet.onnx data/tinyseg.onnx >"$TMP/exp" 2>&1; then ok "$(tail -1 "$TMP/exp")"
else bad "exporter-style fixtures vs ONNX Runtime" "$TMP/exp"; fi
# 10a. bench/models_latency.sh (docs/MODELS.md's latency columns): two paired rounds on one fixture give one JSON line
#      holding both rounds, and --fill writes that row of a copy of docs/MODELS.md (its cells were "–")
cp docs/MODELS.md "$TMP/models.md"
if SO=$SO ROUNDS=2 ITERS=3 bash bench/models_latency.sh --only '^onnx18_13_op17_melweightmatrix$' "$TMP/lat.jsonl" >"$TMP/log" 2>&1 &&
    bash bench/models_latency.sh --fill "$TMP/lat.jsonl" "$TMP/models.md" >>"$TMP/log" 2>&1 &&
    $PY - "$TMP/lat.jsonl" "$TMP/models.md" >>"$TMP/log" 2>&1 <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1 and rows[0]["model"] == "onnx18_13_op17_melweightmatrix" and rows[0]["rounds"] == 2, rows
r = rows[0]
assert len(r["ours"]) == len(r["ort"]) == len(r["ratios"]) == 2 and min(r["ours"] + r["ort"]) > 0, r
line = [l for l in open(sys.argv[2]) if l.startswith("| onnx18_13_op17_melweightmatrix |")][0]
assert "–" not in line and " %.2f |" % r["ratio"] in line, line
PYEOF
then ok "models_latency.sh: 2 paired rounds -> one JSON line, --fill writes the row"
else bad "models_latency.sh rounds / JSON line / --fill" "$TMP/log"; fi

# 10b. constructs the importer cannot handle (issue 16): custom operators without and with a declared shape, a
#      data-dependent shape, Loop, a Cast to float16, an LSTM activation ONNX does not define, a GRU clip <= 0, MaxRoiPool,
#      a TfIdfVectorizer whose ngram_counts do not split its pool. `run` and
#      optimize each refuse with exit 1 and one line naming the file, the node and its operator; nothing is written.
mkdir -p "$TMP/un"
if $PY tests/make_unsupported.py "$TMP/un" >"$TMP/log" 2>&1; then
    while read -r name node op; do
        f="$TMP/un/$name.onnx"
        for cmd in run optimize; do
            if [ $cmd = run ]; then timeout 60 $SO run "$f" --iters 1 --warmup 0 >"$TMP/out" 2>"$TMP/err"
            else timeout 60 $SO "$f" -o "$TMP/un/$name.opt.onnx" -q --cost flops >"$TMP/out" 2>"$TMP/err"; fi
            rc=$?
            if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qF "$f" "$TMP/err" && grep -qF "'$node'" "$TMP/err" &&
                grep -qE "(\(|')$op(\)|')" "$TMP/err" && [ ! -e "$TMP/un/$name.opt.onnx" ]; then
                ok "$cmd refuses $name: one line naming the file, node '$node' and $op"
            else echo "exit $rc" >>"$TMP/err"; bad "$cmd refuses $name: one line naming the file, node '$node' and $op" "$TMP/err"; fi
        done
    done <"$TMP/un/list.txt"
else bad "tests/make_unsupported.py" "$TMP/log"; fi

# 10c. --layout none writes standard ONNX under the default (measured) cost too: the search does not place the
#      generated layout rules' blocked operators either (before: squeezenet came out with ai.superopt nodes)
if $SO data/squeezenet.onnx --layout none -o "$TMP/sq_none.onnx" -q >"$TMP/log" 2>&1 &&
    $PY -c 'import onnx, sys; m = onnx.load(sys.argv[1]); bad = [n.op_type for n in m.graph.node if n.domain not in ("", "ai.onnx")]; sys.exit(1 if bad else 0)' "$TMP/sq_none.onnx" >>"$TMP/log" 2>&1 &&
    node tools/ort/ort_run.js "$TMP/sq_none.onnx" --inputs data/squeezenet.in.bin --outputs "$TMP/sq_none.out" >>"$TMP/log" 2>&1 &&
    $PY data/compare_outputs.py "$TMP/sq_none.out" data/squeezenet.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
    ok "--layout none (measured cost): squeezenet written as standard ONNX, runs in ONNX Runtime, matches PyTorch"
else bad "--layout none (measured cost): squeezenet written as standard ONNX, runs in ONNX Runtime, matches PyTorch" "$TMP/log"; fi

# 11. reproducible measured costs (issue 18): a run with --cost-table T that makes T and two runs that
#     read it write byte-identical models (budget-bound search: a time limit would make the explored
#     set depend on speed); the second and third measure nothing; a table of another ISA level is refused
#     with one line; a damaged entry is refused with its line number
T11="$TMP/cost.tsv"
ct_ok=1
for i in 1 2 3; do
    $SO data/nasrnn.onnx -o "$TMP/ct$i.onnx" --cost-table "$T11" --budget 60 --time-limit 0 --layout none -q \
        --report "$TMP/ct$i.json" >"$TMP/log" 2>&1 || ct_ok=0
done
if [ $ct_ok = 1 ] && cmp "$TMP/ct1.onnx" "$TMP/ct2.onnx" >>"$TMP/log" 2>&1 && cmp "$TMP/ct2.onnx" "$TMP/ct3.onnx" >>"$TMP/log" 2>&1 &&
    $PY -c 'import json,sys; a,b,c=(json.load(open(f)) for f in sys.argv[1:]); assert a["cost_table_new"]>0 and b["cost_table_new"]==0 and c["cost_table_new"]==0 and b["cost_table_loaded"]==a["cost_table_new"] and a["cost_after"]==b["cost_after"]==c["cost_after"], (a["cost_table_new"],b["cost_table_new"])' \
        "$TMP/ct1.json" "$TMP/ct2.json" "$TMP/ct3.json" >>"$TMP/log" 2>&1 &&
    head -1 "$T11" | grep -q '^# superopt cost table v1$' && sed -n 2p "$T11" | grep -q "isa=$cur "; then
    ok "--cost-table: 3 runs (1 measuring, 2 reading) write byte-identical models, the table keyed by isa=$cur"
else bad "--cost-table: byte-identical models from one table" "$TMP/log"; fi
if [ "$cur" != scalar ]; then
    expect_error "--cost-table of another ISA level refused" "cost table is for 'isa=$cur" $SO data/nasrnn.onnx -o "$TMP/ctx.onnx" --cost-table "$T11" --isa scalar -q
fi
sed '3s/.*/zz/' "$T11" >"$TMP/ctbad.tsv"
expect_error "--cost-table with a damaged entry refused" "ctbad.tsv:3: bad cost table entry" $SO data/nasrnn.onnx -o "$TMP/ctx.onnx" --cost-table "$TMP/ctbad.tsv" -q

# 11b. reproducible at the default settings (issue 18): squeezenet 1.1 (the full model), greedy,
#     backtracking (with its layout search) and eqsat, each run twice with one cost table (the first
#     run fills it): byte-identical models. No search may stop on its time limit (a CPU-time safety net):
#     the budget, the work limit or exhaustion stops them, which the machine's load does not move.
#     Then nasrnn with a small --work-limit: stopped by it, twice the same model. The report's timing split
#     (session 16): the first run's "measure" counts the configurations it added to the table, its
#     search_measure_seconds is part of search_seconds; the second run times nothing.
#     A sanitizer build (-O1 + ASan/UBSan, several times slower) gets a larger CPU-time safety net (--time-limit 120,
#     default 8): the full test-asan of session 18's tree saw eqsat's second run stop on the 8 s limit at load ~7.
T11b="$TMP/cost11b.tsv"
TL11b=; [ "$SAN_BUILD" = 1 ] && TL11b="--time-limit 120"
for s in greedy backtrack eqsat; do
    r11=1
    for i in 1 2; do
        $SO data/squeezenet.onnx -o "$TMP/r11_$s$i.onnx" --search $s --cost-table "$T11b" --threads 1 $TL11b -q --report "$TMP/r11_$s$i.json" >"$TMP/log" 2>&1 || r11=0
    done
    if [ $r11 = 1 ] && cmp "$TMP/r11_${s}1.onnx" "$TMP/r11_${s}2.onnx" >>"$TMP/log" 2>&1 &&
        $PY -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); st=[x["stopped_by"] for x in (a,b)]+[x["layout"]["search_stopped_by"] for x in (a,b)]+[x.get("eqsat",{}).get("stopped_by") for x in (a,b)]; assert "time-limit" not in st and a["cost_after"]==b["cost_after"] and b["cost_table_new"]==0, (st, a["cost_after"], b["cost_after"], b["cost_table_new"]); m=[x["measure"] for x in (a,b)]; assert m[0]["configurations"]==a["cost_table_new"] and 0<=a["search_measure_seconds"]<=a["search_seconds"]*(1+1e-5) and a["search_measure_seconds"]<=m[0]["seconds"] and m[1]["configurations"]==m[1]["timed_runs"]==0 and b["search_measure_seconds"]==0 and set(a["seconds"])>={"rules","import","input_cost","search","layout","check"}, (m, a["search_measure_seconds"], b["search_measure_seconds"])'             "$TMP/r11_${s}1.json" "$TMP/r11_${s}2.json" >>"$TMP/log" 2>&1; then
        ok "--cost-table, default settings: squeezenet --search $s twice, byte-identical models, no time-limit stop"
    else bad "--cost-table, default settings: squeezenet --search $s twice, byte-identical" "$TMP/log"; fi
done
r11=1
for i in 1 2; do
    # default --layout (auto: nasrnn has no conv, no layout step); --layout none would add the standard-ONNX
    # check, which keeps the original here (the small gemv merges cost more FLOPs+bytes with their split copies)
    # (the flops model, not the measured table: with the M = 1 products on our GEMV (session 14, an OpenBLAS below
    # the level, e.g. Haswell kernels at avx512) the measured gate merges are near-neutral, and within this work a
    # table timed under load let the search find nothing in 2 of 3 tries; the work limit's determinism is the point)
    $SO data/nasrnn.onnx -o "$TMP/r11_w$i.onnx" --cost flops --budget 0 --work-limit 300000 -q --report "$TMP/r11_w$i.json" >"$TMP/log" 2>&1 || r11=0
done
if [ $r11 = 1 ] && cmp "$TMP/r11_w1.onnx" "$TMP/r11_w2.onnx" >>"$TMP/log" 2>&1 &&
    $PY -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert a["stopped_by"]==b["stopped_by"]=="work-limit" and a["search_detail"]["work"]==b["search_detail"]["work"] and a["cost_after"]==b["cost_after"]<a["cost_before"], (a["stopped_by"], a["search_detail"]["work"], b["search_detail"]["work"])'         "$TMP/r11_w1.json" "$TMP/r11_w2.json" >>"$TMP/log" 2>&1; then
    ok "--work-limit: nasrnn backtracking stopped by its work limit, twice the same work and byte-identical models"
else bad "--work-limit: nasrnn stopped by its work limit, byte-identical" "$TMP/log"; fi

# 12. --search eqsat (issue 18) on nasrnn under the flops model: the e-graph grows, an extraction is
#     reported, the written model is cheaper than the input, passed the numeric check and matches PyTorch
#     (search time is a benchmark figure, docs/BENCHMARKS.md: it was asserted < 10 s here and failed under load)
if $SO data/nasrnn.onnx -o "$TMP/eq.onnx" --search eqsat --cost flops --time-limit 4 -q --report "$TMP/eq.json" >"$TMP/log" 2>&1 &&
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["eqsat"]; assert d["search"]=="eqsat" and e["enodes"]>d["nodes_before"] and e["applied"]>0 and e["extraction"] in ("greedy","ilp-optimal","ilp-feasible","moves","start") and d["numeric_check"] is True and d["cost_after"]<d["cost_before"], (e, d["cost_after"], d["cost_before"])' \
        "$TMP/eq.json" >>"$TMP/log" 2>&1 &&
    $SO run "$TMP/eq.onnx" --inputs data/nasrnn.in.bin --outputs "$TMP/eq.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
    $PY data/compare_outputs.py "$TMP/eq.out" data/nasrnn.out.bin --rtol 1e-4 >>"$TMP/log" 2>&1; then
    ok "--search eqsat nasrnn (flops): e-graph grown, extraction reported, cheaper, numeric check, matches PyTorch"
else bad "--search eqsat nasrnn (flops)" "$TMP/log"; fi
# tuning knobs of eqsat and the generator's checkpoint hooks: a value that is not a number is a one-line error
# (they were read with atoi/atof: garbage meant 0, silently)
expect_error "SO_EQSAT_WORK that is not a number" "SO_EQSAT_WORK=abc: expected a positive integer" \
    env SO_EQSAT_WORK=abc $SO data/nasrnn.onnx -o "$TMP/eqbad.onnx" --search eqsat --cost flops -q
expect_error "SO_GEN_CKPT_INTERVAL that is not a number" "SO_GEN_CKPT_INTERVAL=x: expected seconds" \
    env SO_GEN_CKPT_INTERVAL=x $SO generate --max-ops 2 --seed 1 --threads 2 -q -o "$TMP/gbad.rules"

# 13. the wait policy (kernels/README.md "Wait policy", cli/main.c omp_wait_default): the process that runs the model
#     (seen once it has started its OpenMP threads, so after main) started with GOMP_SPINCOUNT=200000 when the user set
#     neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, and with the user's value untouched (no re-execution) otherwise
wp_probe() { # wp_probe FILE [VAR=VALUE ...]: once a 2-thread run has started its threads, the CPUs each of its tasks
    # may use ("cpus LIST" lines) and its initial environment (VAR=VALUE lines); fails if it never had 2 threads
    local f=$1 pid i n=0 t
    shift
    env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$@" $SO run data/squeezenet.onnx --iters 1000000 --warmup 0 --threads 2 >/dev/null 2>&1 &
    pid=$!
    for i in $(seq 600); do
        n=$(awk '/^Threads:/ {print $2}' /proc/$pid/status 2>/dev/null)
        [ "${n:-0}" -ge 2 ] && break
        sleep 0.1
    done
    sleep 0.5 # libgomp binds a worker in the worker, after its creation
    : >"$f"
    for t in /proc/$pid/task/*; do awk '/^Cpus_allowed_list:/ {print "cpus " $2}' "$t/status" >>"$f" 2>/dev/null; done
    tr '\0' '\n' </proc/$pid/environ >>"$f" 2>/dev/null
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    [ "${n:-0}" -ge 2 ]
}
if wp_probe "$TMP/wp1" && grep -qx 'GOMP_SPINCOUNT=200000' "$TMP/wp1" && grep -qx 'SUPEROPT_GOMP_SPINCOUNT_SET=1' "$TMP/wp1" &&
    wp_probe "$TMP/wp2" GOMP_SPINCOUNT=77 && grep -qx 'GOMP_SPINCOUNT=77' "$TMP/wp2" && ! grep -q 'SUPEROPT_GOMP_SPINCOUNT_SET' "$TMP/wp2" &&
    wp_probe "$TMP/wp3" OMP_WAIT_POLICY=active && ! grep -q 'GOMP_SPINCOUNT' "$TMP/wp3"; then
    ok "wait policy: GOMP_SPINCOUNT=200000 unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT"
else grep -H "OMP" "$TMP"/wp? >"$TMP/log" 2>&1; echo "(each file: the OMP variables a run started with)" >>"$TMP/log"; bad "wait policy: GOMP_SPINCOUNT=200000 unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT" "$TMP/log"; fi

# 13b. the re-execution keeps the CPU affinity the user gave (cli/main.c omp_wait_capture): with OMP_PROC_BIND /
#      OMP_PLACES set, libgomp's constructor binds the initial thread to the first place before main, and the exec
#      inherited that one-CPU mask: the executed process built its places from it and ran both threads on one CPU
#      (session 19's pinning probe, ~2x slower). Once a bound 2-thread run has started its threads, they must span
#      2 CPUs, and the run must still be the re-executed one (GOMP_SPINCOUNT=200000). Skipped when this shell may use
#      one CPU only.
n_cpus() { # the number of CPUs in the union of the "cpus LIST" lines of FILE (lists as in /proc: 0-3,6)
    $PY -c 'import sys
s = set()
for l in open(sys.argv[1]):
    if l.startswith("cpus "):
        for r in l.split()[1].split(","):
            a, _, b = r.partition("-")
            s.update(range(int(a), int(b or a) + 1))
print(len(s))' "$1"
}
echo "cpus $(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status)" >"$TMP/wpself"
if [ "$(n_cpus "$TMP/wpself")" -lt 2 ]; then echo "skip - bound runs keep the start affinity: this shell may use one CPU only"
else
    for e in "OMP_PROC_BIND=true" "OMP_PLACES=cores" "OMP_PROC_BIND=spread OMP_PLACES=threads"; do
        if wp_probe "$TMP/wpb" $e && grep -qx 'GOMP_SPINCOUNT=200000' "$TMP/wpb" && [ "$(n_cpus "$TMP/wpb")" -ge 2 ]; then
            ok "wait policy re-execution keeps the start affinity: $e, 2 threads on $(n_cpus "$TMP/wpb") CPUs"
        else grep -H "cpus\|OMP" "$TMP/wpb" >"$TMP/log" 2>&1; bad "wait policy re-execution keeps the start affinity: $e, 2 threads on 2 CPUs" "$TMP/log"; fi
    done
fi

# N. run --serve (bench/lockstep.py's servers): 'run K [W]' answers K times, a bad line an error line and serving
#    goes on, quit and end of input exit 0, the outputs equal a plain run's; the same protocol in ort_run.js; and
#    the driver on two servers of one model (no timing asserted)
serve_check() { # FILE K...: line 1 is ready, the next lines have K times each, or an error when K is 'e'
    $PY - "$@" <<'PYEOF'
import json, sys
lines = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
want = sys.argv[2:]
assert lines[0].get("ready") is True, lines[0]
assert len(lines) == len(want) + 1, (len(lines), want)
for l, w in zip(lines[1:], want):
    if w == "e":
        assert "error" in l and "bad command" in l["error"], l
    else:
        assert len(l["times_ms"]) == int(w) and l["min_ms"] <= l["median_ms"], l
PYEOF
}
if printf 'run 3\nrun 2 1\nfoo\nrun 0\nrun 2 x\nrun 1\nquit\n' |
    timeout 120 $SO run data/squeezenet.onnx --inputs data/squeezenet.in.bin --outputs "$TMP/serve.out" --serve >"$TMP/serve.txt" 2>"$TMP/log" &&
    serve_check "$TMP/serve.txt" 3 2 e e e 1 >>"$TMP/log" 2>&1 &&
    $SO run data/squeezenet.onnx --inputs data/squeezenet.in.bin --outputs "$TMP/plain.out" --iters 1 --warmup 0 >>"$TMP/log" 2>&1 &&
    cmp "$TMP/serve.out" "$TMP/plain.out" >>"$TMP/log" 2>&1; then
    ok "run --serve: run K [W], bad lines answered with an error, quit exits 0, outputs equal a plain run's"
else cat "$TMP/serve.txt" >>"$TMP/log"; bad "run --serve protocol" "$TMP/log"; fi
if printf 'run 1' | timeout 120 $SO run data/squeezenet.onnx --serve --threads 2 >"$TMP/serve.txt" 2>"$TMP/log" &&
    serve_check "$TMP/serve.txt" 1 >>"$TMP/log" 2>&1 &&
    timeout 120 $SO run data/squeezenet.onnx --serve --warmup 0 </dev/null >"$TMP/serve.txt" 2>>"$TMP/log" &&
    serve_check "$TMP/serve.txt" >>"$TMP/log" 2>&1; then
    ok "run --serve: end of input (also without a newline, or at once) exits 0"
else cat "$TMP/serve.txt" >>"$TMP/log"; bad "run --serve at end of input" "$TMP/log"; fi
if printf 'run 2 1\nbad\nrun 1\nquit\n' |
    timeout 120 node tools/ort/ort_run.js data/squeezenet.onnx --inputs data/squeezenet.in.bin --outputs "$TMP/ort_serve.out" --serve >"$TMP/serve.txt" 2>"$TMP/log" &&
    serve_check "$TMP/serve.txt" 2 e 1 >>"$TMP/log" 2>&1 &&
    node tools/ort/ort_run.js data/squeezenet.onnx --inputs data/squeezenet.in.bin --outputs "$TMP/ort_plain.out" >>"$TMP/log" 2>&1 &&
    cmp "$TMP/ort_serve.out" "$TMP/ort_plain.out" >>"$TMP/log" 2>&1; then
    ok "ort_run.js --serve: the same protocol, outputs equal a plain run's"
else cat "$TMP/serve.txt" >>"$TMP/log"; bad "ort_run.js --serve protocol" "$TMP/log"; fi
if ! $PY -c 'import torch' 2>/dev/null; then ok "torch_run.py --serve: skipped (no PyTorch)"
elif printf 'run 2 1\nrun x\n' | timeout 300 $PY bench/torch_run.py squeezenet --serve --warmup 1 >"$TMP/serve.txt" 2>"$TMP/log" &&
    serve_check "$TMP/serve.txt" 2 e >>"$TMP/log" 2>&1; then
    ok "torch_run.py --serve: the same protocol"
else cat "$TMP/serve.txt" >>"$TMP/log"; bad "torch_run.py --serve protocol" "$TMP/log"; fi
if timeout 300 $PY bench/lockstep.py --rounds 2 --min-cycles 2 --batch-ms 5 "a=$SO run data/squeezenet.onnx --serve" \
    "b=$SO run data/squeezenet.onnx --serve" "o=node tools/ort/ort_run.js data/squeezenet.onnx --serve" >"$TMP/ls.json" 2>"$TMP/log" &&
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["labels"] == ["a", "b", "o"] and d["cycles"] == 2 and len(d["per_round_ratio"]["b"]) == 2, d
assert all(x > 0 for x in d["per_round_ms"]["a"] + d["per_round_ratio"]["o"]) and d["ratio"]["b"] > 0, d' "$TMP/ls.json" >>"$TMP/log" 2>&1 &&
    ! timeout 120 $PY bench/lockstep.py --rounds 1 "a=$SO run data/squeezenet.onnx --serve" "b=$SO run data/nosuch.onnx --serve" \
        >"$TMP/ls.json" 2>"$TMP/ls_err" && grep -q 'lockstep.py: b' "$TMP/ls_err"; then
    ok "bench/lockstep.py: three servers, per-round paired ratios; a server that fails is named"
else cat "$TMP/ls_err" >>"$TMP/log" 2>/dev/null; bad "bench/lockstep.py" "$TMP/log"; fi

echo
echo "integration: $pass passed, $fail failed"
[ $fail -eq 0 ]
