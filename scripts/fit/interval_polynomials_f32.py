#!/usr/bin/env python3
# Fits the tables of float tanh's and erf's polynomials per interval
# (include/loom/codegen/llvm/interval_polynomials.hpp): |x| in [0, 1/8) and four intervals per binade
# from 1/8 up to the interval that holds the largest argument (tanh: [8, 10), erf: [3.5, 4)), and in
# each, f(c + t) = p0 + t (p1 + ... + t p_d) around a float c.
#   c:  a float near the middle of the interval whose f is closest to a float (p0, which then carries
#       almost no rounding); 0 for the first interval, whose p0 is 0.
#   p1 .. p_d minimize the largest relative error of the polynomial: weighted least squares on
#       Chebyshev nodes, then Lawson's reweighting toward the minimax fit.
# The first interval's p1 is stored less 1: the code adds t last there (t + t (p1 - 1 + ...)).
# The table has 32 entries (a 5-bit index); those past the last interval are never reached and hold
# f = 1. Prints each interval's own error (units of 2^-24, relative) and the C++ table rows.
# Needs mpmath (Debian: python3-mpmath). Usage: python3 scripts/fit/interval_polynomials_f32.py tanh|erf
import struct

import mpmath as mp

import sys

mp.mp.dps = 40
# The function, the degree of its polynomials, and its intervals' count (the last holds the largest
# argument the code passes: tanh 9.5, erf 3.95; beyond, both round to 1).
FUNCTIONS = {"tanh": (mp.tanh, 5, 26), "erf": (mp.erf, 6, 21)}
FN, DEGREE, INTERVALS = FUNCTIONS[sys.argv[1] if len(sys.argv) > 1 else "tanh"]


def to_float(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def float_bits(v):
    return struct.unpack("I", struct.pack("f", v))[0]


def from_bits(b):
    return struct.unpack("f", struct.pack("I", b))[0]


def ulp(v):
    v = abs(to_float(v))
    return from_bits(float_bits(v) + 1) - v


def intervals():
    out = [(0.0, 0.125)]
    for e in range(-3, 4):
        for q in range(4):
            out.append((2.0**e * (1 + q / 4), 2.0**e * (1 + (q + 1) / 4)))
    return out[:INTERVALS]


def pick_center(lo, hi):
    """A float near the middle whose f rounds to a float with the least error."""
    mid = float_bits(to_float((lo + hi) / 2))
    span = (float_bits(to_float(hi)) - float_bits(to_float(lo))) // (2 if lo >= 8 else 8)
    best = None
    for b in range(mid - span, mid + span, max(1, span // 2000)):
        c = from_bits(b)
        y = FN(c)
        p0 = to_float(y)
        err = abs(y - p0) / ulp(p0)
        if best is None or err < best[0]:
            best = (err, c, p0)
    return best


def fit(lo, hi, c, p0, nodes=240, rounds=40):
    xs = [mp.mpf(lo) + (hi - lo) * (1 - mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes)) / 2 for k in range(nodes)]
    ys = [FN(x) for x in xs]
    ts = [x - c for x in xs]
    lawson = [mp.mpf(1)] * nodes
    best = None
    for _ in range(rounds):
        A = mp.matrix(nodes, DEGREE)
        b = mp.matrix(nodes, 1)
        for i in range(nodes):
            s = mp.sqrt(lawson[i]) / ys[i]
            for j in range(DEGREE):
                A[i, j] = s * ts[i] ** (j + 1)
            b[i] = s * (ys[i] - p0)
        coef = mp.lu_solve(A.T * A, A.T * b)
        errors = [abs(p0 + sum(coef[j] * ts[i] ** (j + 1) for j in range(DEGREE)) - ys[i]) / ys[i] for i in range(nodes)]
        worst = max(errors)
        if best is None or worst < best[0]:
            best = (worst, [coef[j] for j in range(DEGREE)])
        total = sum(lawson[i] * errors[i] for i in range(nodes))
        lawson = [lawson[i] * errors[i] / total for i in range(nodes)]
    return best


def main():
    rows = [[] for _ in range(2 + DEGREE)]  # c, p0, p1 .. p5
    for k, (lo, hi) in enumerate(intervals()):
        if lo == 0:
            c_err, c, p0 = 0.0, 0.0, 0.0
        else:
            c_err, c, p0 = pick_center(lo, hi)
        worst, coef = fit(lo, hi, c, p0)
        if lo == 0:
            coef[0] -= 1
        rows[0].append(c)
        rows[1].append(p0)
        for j in range(DEGREE):
            rows[2 + j].append(to_float(coef[j]))
        print(f"// [{lo}, {hi}): c = {c!r}, f(c) - p0 = {float(c_err):.5f} ulp, fit {float(worst) * 2**24:.5f}")
    for row in rows:  # entries past the last interval are never reached: f there is 1
        row += [0.0] * (32 - len(row))
    rows[1][INTERVALS:] = [1.0] * (32 - INTERVALS)
    for name, row in zip(["c", "p0"] + [f"p{j}" for j in range(1, DEGREE + 1)], rows):
        items = [shortest(v) + "f" for v in row]
        lines = [", ".join(items[i : i + 6]) for i in range(0, len(items), 6)]
        print(f"    // {name}\n    {{" + ",\n     ".join(lines) + "},")


def shortest(v):
    """The fewest significant digits that read back as the float v."""
    for digits in range(1, 10):
        text = f"{v:.{digits}g}"
        if to_float(float(text)) == v:
            return text if ("." in text or "e" in text) else text + ".0"
    return repr(v)


if __name__ == "__main__":
    main()
