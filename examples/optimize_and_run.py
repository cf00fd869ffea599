#!/usr/bin/env python3
"""optimize_and_run.py - example client of the Python package: optimizes a model, runs the original and the
optimized model with superopt.Session and checks both against stored outputs; with --ort also runs the
optimized model in ONNX Runtime (tools/ort) and checks that too.

Usage: optimize_and_run.py data/nasrnn.onnx [--out DIR] [--ort] [--time-limit S]
The model's inputs/expected outputs are data/NAME.in.bin / data/NAME.out.bin (raw float32, graph order).
Exit status 0 when every check passes, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import superopt


def feed_from(sess, path):
    """The inputs of sess read from a raw float32 file (all inputs back to back, graph order)."""
    flat = np.fromfile(path, np.float32)
    feed, off = {}, 0
    for a in sess.get_inputs():
        n = int(np.prod(a.shape, dtype=np.int64))
        feed[a.name] = flat[off:off + n].reshape(a.shape)
        off += n
    if off != flat.size:
        raise SystemExit("%s: %d floats, the inputs take %d" % (path, flat.size, off))
    return feed


def check(name, got, want):
    ok = got.size == want.size and np.allclose(got, want, rtol=1e-4, atol=1e-5)
    print("%s: %s (max abs err %.3g)" % ("OK" if ok else "MISMATCH", name,
                                          float(np.max(np.abs(got - want))) if got.size == want.size else float("inf")))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--out", default=None, help="folder for the optimized model (default: a temporary one)")
    ap.add_argument("--ort", action="store_true", help="also run the optimized model in ONNX Runtime (node tools/ort)")
    ap.add_argument("--time-limit", type=float, default=8.0)
    args = ap.parse_args()
    base = args.model[:-5] if args.model.endswith(".onnx") else args.model
    out_dir = args.out or tempfile.mkdtemp(prefix="superopt_example_")
    opt = os.path.join(out_dir, os.path.basename(base) + ".opt.onnx")

    # layout="none": the written model stays in standard ONNX operators, so ONNX Runtime can run it too
    report = superopt.optimize(args.model, opt, layout="none", time_limit=args.time_limit)
    print(report.text, end="")
    print("cost %.4g -> %.4g, rules applied: %s" % (report.cost_before, report.cost_after, report.rules_applied or "none"))

    want = np.fromfile(base + ".out.bin", np.float32)
    ok = True
    for label, path in (("original", args.model), ("optimized", opt)):
        with superopt.Session(path, threads=1) as sess:
            outs = sess.run(None, feed_from(sess, base + ".in.bin"))
        ok &= check("%s model on superopt.Session" % label, np.concatenate([o.ravel() for o in outs]), want)
    if args.ort:
        here = os.path.dirname(os.path.abspath(__file__))
        ort_out = os.path.join(out_dir, "ort.out.bin")
        r = subprocess.run(["node", os.path.join(here, "..", "tools", "ort", "ort_run.js"), opt,
                            "--inputs", base + ".in.bin", "--outputs", ort_out], capture_output=True, text=True)
        if r.returncode != 0:
            print("MISMATCH: ONNX Runtime failed on the optimized model: %s" % r.stderr.strip())
            ok = False
        else:
            ok &= check("optimized model in ONNX Runtime", np.fromfile(ort_out, np.float32), want)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
