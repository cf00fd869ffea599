#!/usr/bin/env python3
"""Compare two raw little-endian float32 files element-wise: |a - b| <= atol + rtol * |b|.

Usage: compare_outputs.py A.bin B.bin [--rtol 1e-4] [--atol 1e-5] [-q]
B is the reference (its magnitude scales the relative tolerance). Prints the element count,
max abs error, max rel error, and the worst element (largest |a-b| / (atol + rtol*|b|)).
Exit status: 0 within tolerance, 1 beyond tolerance / NaN / size mismatch / unreadable file,
2 usage error. Standard library only, so it runs without numpy.
"""

import argparse
import array
import math
import sys


def load(path):
    a = array.array("f")
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) % 4:
        raise ValueError("%s: %d bytes is not a multiple of 4" % (path, len(raw)))
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare two raw float32 files within tolerance.")
    ap.add_argument("a", help="candidate output (raw float32)")
    ap.add_argument("b", help="reference output (raw float32)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("-q", "--quiet", action="store_true", help="print only on failure")
    args = ap.parse_args(argv)

    try:
        a, b = load(args.a), load(args.b)
    except (OSError, ValueError) as e:
        print("compare_outputs: %s" % e, file=sys.stderr)
        return 1
    if len(a) != len(b):
        print("compare_outputs: %s has %d floats, %s has %d" % (args.a, len(a), args.b, len(b)),
              file=sys.stderr)
        return 1

    max_abs = max_rel = 0.0
    worst, worst_ratio, bad, nan = -1, -1.0, 0, 0
    for i, (x, y) in enumerate(zip(a, b)):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                nan += 1
                bad += 1
                if worst_ratio != math.inf:
                    worst, worst_ratio = i, math.inf
            continue
        d = abs(x - y)
        if d > max_abs:
            max_abs = d
        if y != 0 and d / abs(y) > max_rel:
            max_rel = d / abs(y)
        ratio = d / (args.atol + args.rtol * abs(y)) if d else 0.0
        if ratio > 1.0:
            bad += 1
        if ratio > worst_ratio:
            worst, worst_ratio = i, ratio

    ok = bad == 0
    if not ok or not args.quiet:
        line = ("%s: n=%d max_abs=%.3e max_rel=%.3e bad=%d (rtol=%g atol=%g)"
                % ("OK" if ok else "FAIL", len(a), max_abs, max_rel, bad, args.rtol, args.atol))
        if worst >= 0:
            line += "; worst [%d] a=%.9g b=%.9g (%.3g x tolerance)" % (
                worst, a[worst], b[worst], worst_ratio)
        if nan:
            line += "; %d NaN mismatches" % nan
        print(line, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
