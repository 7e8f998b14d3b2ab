#!/usr/bin/env python3
# Fits the table of double erf's polynomials per interval (include/loom/codegen/llvm/
# interval_polynomials_f64.hpp), the double counterpart of interval_polynomials_f32.py:
#   interval 0:     |x| in [0, 1/2): erf x = x + x P(x^2), P of degree DEGREE - 1 (rows p1 .. p_D
#                   hold P's coefficients; c = 0, p0 = 0);
#   intervals 1-14: four per binade from 1/2 ([1/2, 5/8), [5/8, 3/4), ...), up to [5, 6), of which
#                   [5, LARGEST] is used: erf(c + t) = p0 + t (p1 + ... + t p_D) around a double c
#                   near the middle whose erf is within a tiny fraction of an ulp of a double, p0.
# The index is 4 bits (one vpermi2pd of two 8-double registers); entry 15 is never reached and
# holds erf = 1. The coefficients minimize the largest relative error: weighted least squares on
# Chebyshev nodes, then Lawson's reweighting toward the minimax fit. Prints each interval's own
# error (in units of 2^-53, relative) and the C++ table rows.
# Needs mpmath (Debian: python3-mpmath). Usage: python3 scripts/fit/erf_intervals_f64.py [degree]
import struct
import sys

import mpmath as mp

mp.mp.dps = 50
DEGREE = int(sys.argv[1]) if len(sys.argv) > 1 else 14
# erfc(5.95) = 4.0e-17 is below half an ulp below 1 (2^-54 = 5.6e-17, which erfc reaches near
# 5.92): from there erf rounds to 1. The code limits |x| to this.
LARGEST = 5.95
ENTRIES = 16


def double_bits(v):
    return struct.unpack("Q", struct.pack("d", v))[0]


def from_bits(b):
    return struct.unpack("d", struct.pack("Q", b))[0]


def ulp(v):
    v = abs(float(v))
    return from_bits(double_bits(v) + 1) - v


def intervals():
    out = [(0.0, 0.5)]
    for e in range(-1, 3):
        for q in range(4):
            lo, hi = 2.0**e * (1 + q / 4), 2.0**e * (1 + (q + 1) / 4)
            if lo < LARGEST:
                out.append((lo, min(hi, LARGEST)))
    return out


def pick_center(lo, hi):
    """A double near the middle whose erf rounds to a double with the least error."""
    mid = double_bits((lo + hi) / 2)
    span = (double_bits(hi) - double_bits(lo)) // 8
    best = None
    for b in range(mid - span, mid + span, max(1, span // 3000)):
        c = from_bits(b)
        y = mp.erf(c)
        p0 = float(y)
        err = abs(y - p0) / ulp(p0)
        if best is None or err < best[0]:
            best = (err, c, p0)
    return best


def lawson_fit(xs, targets, weights, basis, count, rounds=40):
    """Coefficients of `basis(x, j)`, j < count, minimizing max |weight (sum - target)|."""
    nodes = len(xs)
    lawson = [mp.mpf(1)] * nodes
    best = None
    for _ in range(rounds):
        A = mp.matrix(nodes, count)
        b = mp.matrix(nodes, 1)
        for i in range(nodes):
            s = mp.sqrt(lawson[i]) * weights[i]
            for j in range(count):
                A[i, j] = s * basis(xs[i], j)
            b[i] = s * targets[i]
        coef = mp.lu_solve(A.T * A, A.T * b)
        errors = [abs(weights[i] * (sum(coef[j] * basis(xs[i], j) for j in range(count)) - targets[i])) for i in range(nodes)]
        worst = max(errors)
        if best is None or worst < best[0]:
            best = (worst, [coef[j] for j in range(count)])
        total = sum(lawson[i] * errors[i] for i in range(nodes))
        lawson = [lawson[i] * errors[i] / total for i in range(nodes)]
    return best


def chebyshev_nodes(lo, hi, nodes=200):
    return [mp.mpf(lo) + (hi - lo) * (1 - mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes)) / 2 for k in range(nodes)]


def fit_first(hi):
    """P with erf x ~ x + x P(x^2) on [0, hi]: relative error of erf, so weight x / erf x."""
    xs = chebyshev_nodes(0, hi)
    xs = [x for x in xs if x > 0]
    targets = [mp.erf(x) / x - 1 for x in xs]
    weights = [x / mp.erf(x) for x in xs]
    return lawson_fit(xs, targets, weights, lambda x, j: x ** (2 * j), DEGREE)


def fit_interval(lo, hi, c, p0):
    """p1 .. p_D with erf(c + t) ~ p0 + t (p1 + ...) on [lo, hi], relative error."""
    xs = chebyshev_nodes(lo, hi)
    targets = [mp.erf(x) - p0 for x in xs]
    weights = [1 / mp.erf(x) for x in xs]
    return lawson_fit(xs, targets, weights, lambda x, j: (x - c) ** (j + 1), DEGREE)


def main():
    rows = [[] for _ in range(2 + DEGREE)]  # c, p0, p1 .. p_D
    for lo, hi in intervals():
        if lo == 0:
            c_err, c, p0 = 0.0, 0.0, 0.0
            worst, coef = fit_first(hi)
        else:
            c_err, c, p0 = pick_center(lo, hi)
            worst, coef = fit_interval(lo, hi, c, p0)
        rows[0].append(c)
        rows[1].append(p0)
        for j in range(DEGREE):
            rows[2 + j].append(float(coef[j]))
        print(f"// [{lo}, {hi}): c = {c!r}, erf(c) - p0 = {float(c_err):.5f} ulp, fit {float(worst) * 2**53:.5f}")
    used = len(rows[0])
    for row in rows:  # entries past the last interval are never reached: erf there is 1
        row += [0.0] * (ENTRIES - len(row))
    rows[1][used:] = [1.0] * (ENTRIES - used)
    for name, row in zip(["c", "p0"] + [f"p{j}" for j in range(1, DEGREE + 1)], rows):
        items = [repr(v) for v in row]
        lines = [", ".join(items[i : i + 4]) for i in range(0, len(items), 4)]
        print(f"    // {name}\n    {{" + ",\n     ".join(lines) + "},")


if __name__ == "__main__":
    main()
