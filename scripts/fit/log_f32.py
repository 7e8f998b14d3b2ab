#!/usr/bin/env python3
# Fits the polynomial of float log (include/loom/codegen/llvm/vector_math.hpp):
#   log(1 + f) = f + f^2 (-1/2 + f P(f)),  f = m - 1 in [-1/4, 1/2)  (m in [3/4, 3/2), vgetmantps's interval)
# P of degree 7 minimizes the largest relative error of log(1 + f): weighted least squares on Chebyshev
# nodes, then Lawson's reweighting toward the minimax fit. Prints that error (in units of 2^-24) and
# the coefficients, constant term first, as doubles (the code rounds them to float).
# Needs mpmath (Debian: python3-mpmath). Usage: python3 scripts/fit/log_f32.py [degree]
import sys

import mpmath as mp

mp.mp.dps = 50


def fit(g, weight, lo, hi, degree, nodes=400, rounds=30):
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes) for k in range(nodes)]
    ys = [g(x) for x in xs]
    ws = [weight(x) for x in xs]
    lawson = [mp.mpf(1)] * nodes
    for _ in range(rounds):
        A = mp.matrix(nodes, degree + 1)
        b = mp.matrix(nodes, 1)
        for i, x in enumerate(xs):
            s = mp.sqrt(lawson[i]) * ws[i]
            for j in range(degree + 1):
                A[i, j] = s * x**j
            b[i] = s * ys[i]
        c = mp.lu_solve(A.T * A, A.T * b)
        errors = [abs(ws[i] * (sum(c[j] * xs[i] ** j for j in range(degree + 1)) - ys[i])) for i in range(nodes)]
        total = sum(lawson[i] * errors[i] for i in range(nodes))
        # Lawson: raise the weight where the error is large; the weighted L2 fit tends to minimax.
        lawson = [max(lawson[i] * errors[i] / total, mp.mpf(10) ** -30) for i in range(nodes)]
    return [c[j] for j in range(degree + 1)], max(errors)


def remainder(f):
    # (log(1 + f) - f + f^2/2) / f^3, by its series near 0 where the subtraction cancels.
    if abs(f) < mp.mpf(10) ** -8:
        return mp.mpf(1) / 3 - f / 4 + f * f / 5
    return (mp.log1p(f) - f + f * f / 2) / f**3


def weight(f):
    # P's error, times f^3, relative to log(1 + f).
    if abs(f) < mp.mpf(10) ** -8:
        return f * f
    return abs(f**3 / mp.log1p(f))


if __name__ == "__main__":
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    coefficients, error = fit(remainder, weight, mp.mpf(-0.25), mp.mpf(0.5), degree)
    print("largest relative error of log1p, in units of 2^-24:", mp.nstr(error * 2**24, 5))
    for c in coefficients:
        print(repr(float(c)))
