#!/usr/bin/python3
"""fit_erf.py - derives the erf polynomial of kernels/vmath.h (SO_ERF_*): a Remez fit, printed as C.

erf(a) for a = |x| in [0, A] is written a * Q(t), t = 2a/A - 1 in [-1, 1], Q a polynomial of degree N
in t (monomials of the centred variable: the coefficients stay small, sum |q_k| ~ 2.5, so Horner in float
loses little). Q(1) is pinned to (1 + DELTA) / A, so A * Q(1) rounds above 1 and min(., 1) saturates to
exactly 1 for |x| >= A (1 - erf(A) = 7.7e-8 for A = 3.8). The other N coefficients minimise the RELATIVE
error of a * Q(t) against erf(a) on [0, A] (a weighted Remez exchange on a dense grid, float64 numpy;
reference math.erf), so erf keeps its relative accuracy near 0. The float32 evaluation error (FMA Horner
as the vector levels run it, and a*b+c as the scalar level does) is measured over a dense sweep.

Usage: /usr/bin/python3 tools/fit_erf.py [A N DELTA]     (defaults 3.8 14 1.5e-7: the constants in use)
"""
import math
import sys

import numpy as np

erf = np.vectorize(math.erf)


def remez(f, w, lo, hi, basis, nb, iters=80, npts=200001):
    """Coefficients c minimising max |w(a) * (sum_j c_j basis(j, a) - f(a))| over [lo, hi], and that maximum."""
    m = nb + 1
    xs = (lo + hi) / 2 - (hi - lo) / 2 * np.cos(np.pi * (np.arange(m) + 0.5) / m)
    dense = np.linspace(lo, hi, npts)
    fd, wd = f(dense), w(dense)
    bd = np.stack([basis(j, dense) for j in range(nb)], 1)
    best = None
    for _ in range(iters):
        mat = np.zeros((m, m))
        for j in range(nb):
            mat[:, j] = basis(j, xs)
        mat[:, nb] = (-1.0) ** np.arange(m) / w(xs)
        c = np.linalg.solve(mat, f(xs))[:nb]
        err = wd * (bd @ c - fd)
        e = np.max(np.abs(err))
        if best is None or e < best[1]:
            best = (c, e)
        # the new reference: the largest |error| of each run of one sign
        s = np.where(err < 0, -1, 1)
        cut = np.concatenate(([0], np.nonzero(np.diff(s))[0] + 1, [len(err)]))
        ext = [i0 + int(np.argmax(np.abs(err[i0:i1]))) for i0, i1 in zip(cut[:-1], cut[1:])]
        while len(ext) > m:
            ext = ext[1:] if abs(err[ext[0]]) < abs(err[ext[-1]]) else ext[:-1]
        if len(ext) < m:
            break
        xs = dense[ext]
    return best


def fit(A, n, delta):
    """Monomial coefficients q_0..q_n of Q(t) (float64) and the minimax relative error."""
    q1 = (1 + delta) / A
    g = lambda a: np.where(a == 0, 2 / math.sqrt(math.pi), erf(a) / np.where(a == 0, 1, a))
    T = lambda a: a * (2 / A) - 1
    basis = lambda j, a: (T(a) - 1) * T(a) ** j  # Q(t) = q1 + (t - 1) R(t): Q(1) = q1 whatever R is
    c, e = remez(lambda a: g(a) - q1, lambda a: 1 / g(a), 0.0, A, basis, n)
    q = np.polynomial.Polynomial([q1]) + np.polynomial.Polynomial([-1, 1]) * np.polynomial.Polynomial(c)
    return q.coef, e


def erf32(x, q, A, fma):
    """vmath.h's evaluation in float32: fma = one rounding per a*b+c (float64 then float32)."""
    x = x.astype(np.float32)
    a = np.minimum(np.abs(x), np.float32(A))
    s = np.float32(2 / A)
    t = (a.astype(np.float64) * s - 1).astype(np.float32) if fma else (a * s).astype(np.float32) - np.float32(1)
    acc = np.full_like(a, q[-1])
    for k in range(len(q) - 2, -1, -1):
        acc = (acc.astype(np.float64) * t + np.float64(q[k])).astype(np.float32) if fma else (acc * t).astype(np.float32) + q[k]
    return np.copysign(np.minimum((a * acc).astype(np.float32), np.float32(1)), x)


def main():
    A, n, delta = (float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) == 4 else (3.8, 14, 1.5e-7)
    q, e = fit(A, n, delta)
    q32 = q.astype(np.float32)
    xs = np.linspace(0, 6, 2000001).astype(np.float32)
    ref = erf(xs.astype(np.float64))
    print("/* tools/fit_erf.py %g %d %g: minimax relative error %.3g (float64)" % (A, n, delta, e))
    for fma in (True, False):
        d = np.abs(erf32(xs, q32, A, fma).astype(np.float64) - ref)
        print("   float32 %s: max |erf error| %.3g at %.6g" % ("FMA Horner" if fma else "a*b+c Horner", d.max(), xs[d.argmax()]))
    print("   saturation at A: %s (FMA), %s (a*b+c) */" % (erf32(np.array([A]), q32, A, True)[0], erf32(np.array([A]), q32, A, False)[0]))
    print("#define SO_ERF_A %.9gf" % np.float32(A))
    print("#define SO_ERF_S %.9gf /* 2 / A */" % np.float32(2 / A))
    for k, v in enumerate(q32):
        print("#define SO_ERF_Q%d %.9ef" % (k, v))


if __name__ == "__main__":
    main()
