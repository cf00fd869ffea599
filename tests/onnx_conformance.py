#!/usr/bin/python3
"""onnx_conformance.py - runs ONNX's backend test suite (Debian libonnx-testdata) through `superopt run` with typed I/O.

Each test (node tests, and `simple`, `pytorch-operator` at opset >= 7) whose graph inputs and outputs
are float32 / int64 / int32 / bool tensors runs as
    superopt run model.onnx --inputs test_data_set_N --outputs OUT/ --iters 1 --warmup 0 --json
and its outputs are compared with the suite's expected output_K.pb at the suite's tolerances
(rtol 1e-3, atol 1e-7 for floats; integers and booleans exactly). Result per test:
  pass     every data set matches
  refused  exit 1 with a one-line message naming the file, the node and its operator (an operator, form or type
           superopt does not support); a refusal without them counts as a crash
  mismatch exit 0 but an output differs, is missing or has another shape or type (the tests in FOLLOW_ORT, whose
           reference data ONNX Runtime does not reproduce, are compared with ONNX Runtime's output instead)
  crash    any other exit (signal, status 2+), a message that is not one line, or a timeout
Mismatches and crashes fail the run; a refusal fails unless the test is listed, with its reason,
in the expected-refusals file (tests/onnx_expected_refusals.txt: "test_name  reason", # comments).
Tests outside the scope (opset < 7, other tensor types, sequences) are counted as out of scope.

usage: onnx_conformance.py [--superopt BIN] [--data DIR] [--expected FILE] [--jobs N]
                           [--json FILE] [--write-expected FILE] [--filter SUBSTR] [-v]
Exit status 0 when nothing failed, 1 otherwise.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

SUITES = ["node", "simple", "pytorch-operator"]
TYPES = {1, 6, 7, 9}  # float32, int32, int64, bool
TIMEOUT = 60


def in_scope(model):
    """None if the test is in scope, else why not."""
    ops = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not ops or max(ops) < 7:
        return "opset < 7"
    inits = {i.name for i in model.graph.initializer}
    for v in list(model.graph.input) + list(model.graph.output):
        if v.name in inits:
            continue
        t = v.type
        if t.WhichOneof("value") != "tensor_type":
            return "non-tensor value (%s)" % t.WhichOneof("value")
        if t.tensor_type.elem_type not in TYPES:
            return "tensor type %s" % onnx.TensorProto.DataType.Name(t.tensor_type.elem_type)
    return None


def op_label(model, name):
    types = sorted({n.op_type for n in model.graph.node})
    if len(types) == 1:
        return types[0]
    return "+".join(types) if len(types) <= 3 else name


def compare(got_path, exp_path):
    """None if equal within the suite's tolerances, else a short description."""
    if not os.path.exists(got_path):
        return "%s not written" % os.path.basename(got_path)
    exp = numpy_helper.to_array(onnx.load_tensor(exp_path))
    got = numpy_helper.to_array(onnx.load_tensor(got_path))
    if got.shape != exp.shape:
        return "shape %s, expected %s" % (list(got.shape), list(exp.shape))
    if exp.dtype.kind == "f":
        if got.dtype.kind != "f":
            return "type %s, expected %s" % (got.dtype, exp.dtype)
        try:
            np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=1e-3, atol=1e-7)
        except AssertionError:
            diff = np.abs(got.astype(np.float64) - exp.astype(np.float64))
            return "max abs diff %.3g" % np.nanmax(diff) if diff.size else "differs"
        return None
    if got.dtype.kind == "f":
        return "type %s, expected %s" % (got.dtype, exp.dtype)
    if not np.array_equal(got.astype(np.int64), exp.astype(np.int64)):
        return "integer values differ"
    return None


# Tests whose reference data ONNX Runtime does not reproduce, where superopt follows ONNX Runtime (what real
# exporters' models are run with): checked against ONNX Runtime's output on the same inputs instead.
FOLLOW_ORT = {
    # ONNX Runtime and PyTorch index MaxUnpool's output_shape plane; ONNX's reference indexes the pool's inverse shape
    "test_maxunpool_export_with_output_shape",
}
ORT_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "ort", "ort_run.js")


def ort_expected(tdir, dset, outdir):
    """Runs ONNX Runtime on dset's inputs; returns {output_k.pb basename: array} or a string on failure."""
    model = onnx.load(os.path.join(tdir, "model.onnx"))
    raw = b"".join(numpy_helper.to_array(onnx.load_tensor(os.path.join(dset, "input_%d.pb" % k))).tobytes()
                   for k in range(len([i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}])))
    inp, outp = os.path.join(outdir, "ort.in"), os.path.join(outdir, "ort.out")
    with open(inp, "wb") as f:
        f.write(raw)
    p = subprocess.run(["node", ORT_RUN, os.path.join(tdir, "model.onnx"), "--inputs", inp, "--outputs", outp],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        return "ONNX Runtime failed: " + p.stderr.strip()[:200]
    data, off, res = open(outp, "rb").read(), 0, {}
    for k in range(len(model.graph.output)):
        exp = numpy_helper.to_array(onnx.load_tensor(os.path.join(dset, "output_%d.pb" % k)))
        n = exp.size * exp.dtype.itemsize
        res["output_%d.pb" % k] = np.frombuffer(data[off:off + n], dtype=exp.dtype).reshape(exp.shape)
        off += n
    return res


def run_test(binary, tdir, name):
    """(result, message, specialised): specialised is True when some data set had an input whose value the
    importer needed (a shape or parameter) bound as a constant, False when every input was fed at run time."""
    specialised = [False]
    res, msg = run_sets(binary, tdir, specialised)
    return res, msg, specialised[0]


def run_sets(binary, tdir, specialised):
    sets = sorted(glob.glob(os.path.join(tdir, "test_data_set_*")))
    if not sets:
        return "crash", "no test_data_set"
    for s in sets:
        with tempfile.TemporaryDirectory(prefix="so_conf_") as out:
            cmd = [binary, "run", os.path.join(tdir, "model.onnx"), "--inputs", s, "--outputs", out + "/",
                   "--iters", "1", "--warmup", "0", "--json"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                return "crash", "timeout after %d s" % TIMEOUT
            err = p.stderr.strip()
            if p.returncode == 1:
                if not err or "\n" in err:
                    return "crash", "exit 1 without a one-line message: %r" % err[:200]
                # the one line names the file, the node (by name or #index) and its operator (or "input")
                if (os.path.join(tdir, "model.onnx") not in err or not re.search(r"node (#\d+|'[^']*')", err) or
                        not re.search(r"(operator '[A-Za-z0-9_.]+'|\((input|[A-Za-z][A-Za-z0-9_.]*)\))", err)):
                    return "crash", "refusal does not name the file, the node and its operator: %r" % err[:200]
                return "refused", err
            if p.returncode != 0:
                return "crash", "exit status %d: %s" % (p.returncode, err[:200])
            try:
                if json.loads(p.stdout.strip().splitlines()[-1]).get("specialised_inputs", 0):
                    specialised[0] = True
            except (ValueError, IndexError, AttributeError):
                return "crash", "no JSON line on stdout: %r" % p.stdout[:200]
            ort = ort_expected(tdir, s, out) if os.path.basename(os.path.dirname(tdir.rstrip("/") + "/")) in FOLLOW_ORT else None
            if isinstance(ort, str):
                return "crash", ort
            for exp in sorted(glob.glob(os.path.join(s, "output_*.pb"))):
                if ort is not None:  # ONNX Runtime's output in place of the reference data
                    onnx.save_tensor(numpy_helper.from_array(ort[os.path.basename(exp)]), os.path.join(out, "ort_" + os.path.basename(exp)))
                    exp = os.path.join(out, "ort_" + os.path.basename(exp))
                why = compare(os.path.join(out, os.path.basename(exp).replace("ort_", "")), exp)
                if why:
                    return "mismatch", "%s %s: %s" % (os.path.basename(s), os.path.basename(exp), why)
    return "pass", ""


# Why a refused test is refused, by its message or name (the category written into the expected-refusals file).
CATEGORIES = [
    ("training-only or random", ("Dropout", "Bernoulli", "RandomUniformLike", "RandomNormal", "Gradient", "training")),
    ("sequence values", ("Sequence", "SplitToSequence")),
    ("control flow (subgraphs)", ("subgraphs",)),
    ("zero-size tensor", ("non-positive dimension", "is empty")),
    ("data-dependent output shape", ("NonZero", "Unique", "Compress", "NonMaxSuppression")),
    ("integer result of a float operator", ("dtypes differ",)),
]


def category(name, msg):
    for cat, keys in CATEGORIES:
        if any(k in msg or k.lower() in name for k in keys):
            return cat
    return "not implemented yet"


def read_expected(path):
    exp = {}
    if not path or not os.path.exists(path):
        return exp
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            exp[parts[0]] = parts[1] if len(parts) > 1 else ""
    return exp


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--superopt", default=os.path.join(here, "..", "build", "superopt"))
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--expected", default=os.path.join(here, "onnx_expected_refusals.txt"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="write per-test and per-operator results here")
    ap.add_argument("--write-expected", help="write the refusals of this run as an expected-refusals file")
    ap.add_argument("--markdown", help="write the per-operator results as a markdown table here (docs/CONFORMANCE.md)")
    ap.add_argument("--filter", default="")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.data, "node")):
        print("onnx_conformance: %s has no node tests (install libonnx-testdata: make deps)" % a.data, file=sys.stderr)
        return 1
    expected = read_expected(a.expected)

    tests = []  # (suite, name, dir, op)
    out_of_scope = {}
    for suite in SUITES:
        for tdir in sorted(glob.glob(os.path.join(a.data, suite, "*", ""))):
            name = os.path.basename(os.path.dirname(tdir))
            if a.filter and a.filter not in name:
                continue
            model = onnx.load(os.path.join(tdir, "model.onnx"), load_external_data=False)
            why = in_scope(model)
            if why:
                out_of_scope[why] = out_of_scope.get(why, 0) + 1
                continue
            tests.append((suite, name, tdir, op_label(model, name)))

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(run_test, a.superopt, t[2], t[1]): t for t in tests}
        for f in concurrent.futures.as_completed(futs):
            results[futs[f][1]] = f.result()

    counts = {}
    failed = []
    stale = []
    per_op = {}
    for suite, name, _, op in tests:
        res, msg, spec = results[name]
        counts.setdefault(suite, {}).setdefault(res, 0)
        counts[suite][res] += 1
        if res == "pass":
            counts[suite].setdefault("pass_specialised", 0)
            counts[suite]["pass_specialised"] += spec
        po = per_op.setdefault(op, {"pass": 0, "refused": 0, "mismatch": 0, "crash": 0})
        po[res] += 1
        if res in ("mismatch", "crash") or (res == "refused" and name not in expected):
            failed.append((name, res, msg))
        if res == "pass" and name in expected:
            stale.append(name)
        if a.v:
            print("%-60s %-8s %s" % (name, res, msg))

    for name, res, msg in sorted(failed):
        print("FAIL %s: %s: %s" % (name, res, msg))
    for name in sorted(stale):
        print("note: %s passes but is listed in %s: remove it" % (name, a.expected))
    for suite in SUITES:
        c = counts.get(suite, {})
        n = sum(c.values())
        if not n:
            continue
        n -= c.get("pass_specialised", 0)  # a sub-count of pass
        print("onnx conformance %s: %d tests in scope: %d pass (%.1f%%: %d with every input fed at run time, %d specialised to an "
              "input needed at import), %d refused, %d mismatch, %d crash" %
              (suite, n, c.get("pass", 0), 100.0 * c.get("pass", 0) / n, c.get("pass", 0) - c.get("pass_specialised", 0),
               c.get("pass_specialised", 0), c.get("refused", 0), c.get("mismatch", 0), c.get("crash", 0)))
    print("onnx conformance: out of scope: %s; failures: %d" %
          (", ".join("%s %d" % kv for kv in sorted(out_of_scope.items())) or "none", len(failed)))

    if a.write_expected:
        with open(a.write_expected, "w") as f:
            f.write("# onnx_expected_refusals.txt - ONNX backend tests superopt refuses today, each with the reason it\n"
                    "# gives (tests/onnx_conformance.py fails on a refusal not listed here). Regenerate with\n"
                    "# tests/onnx_conformance.py --write-expected tests/onnx_expected_refusals.txt\n")
            for suite, name, _, op in tests:
                res, msg, _ = results[name]
                if res == "refused":
                    reason = msg.split(": ", 1)[1] if msg.startswith("superopt: ") else msg
                    reason = reason.replace(os.path.join(a.data, suite, name) + "/", "")
                    f.write("%s  [%s] %s\n" % (name, category(name, reason), reason))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# ONNX backend conformance, per operator\n\n"
                    "Generated by `tests/onnx_conformance.py --markdown docs/CONFORMANCE.md` (`make conformance`) from ONNX's\n"
                    "backend test suite (Debian libonnx-testdata, ONNX 1.12) run through `superopt run` with typed I/O;\n"
                    "tolerances rtol 1e-3, atol 1e-7 (floats), exact (integers, booleans). Tests in scope: opset >= 7, graph\n"
                    "inputs and outputs float32 / int64 / int32 / bool. Inputs of every type are fed to the executor at run time,\n"
                    "except an input whose value the importer needs (it reaches a shape or parameter position: Reshape's shape,\n"
                    "Slice's starts, Resize's scales, TopK's k, ...): that one is bound as a constant and the graph specialised\n"
                    "to it (counted as 'specialised'). The operator of a test is the\n"
                    "one operator of its graph, or the operators of an `_expanded` / multi-node test joined by `+`.\n"
                    "Refusals and their reasons: tests/onnx_expected_refusals.txt.\n\n")
            for suite in SUITES:
                c = counts.get(suite, {})
                n = sum(c.values()) - c.get("pass_specialised", 0)
                if n:
                    f.write("- %s: %d tests, %d pass (%.1f%%; %d with every input fed at run time, %d specialised to an input "
                            "needed at import), %d refused, %d mismatch, %d crash\n" %
                            (suite, n, c.get("pass", 0), 100.0 * c.get("pass", 0) / n,
                             c.get("pass", 0) - c.get("pass_specialised", 0), c.get("pass_specialised", 0),
                             c.get("refused", 0), c.get("mismatch", 0), c.get("crash", 0)))
            f.write("\n| operator | tests | pass | refused | mismatch | crash |\n|---|---|---|---|---|---|\n")
            for op in sorted(per_op, key=str.lower):
                r = per_op[op]
                f.write("| %s | %d | %d | %d | %d | %d |\n" % (op, sum(r.values()), r["pass"], r["refused"], r["mismatch"], r["crash"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "out_of_scope": out_of_scope, "per_op": per_op,
                       "tests": {k: {"result": v[0], "message": v[1], "specialised": v[2]} for k, v in sorted(results.items())}}, f, indent=1,
                      sort_keys=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
