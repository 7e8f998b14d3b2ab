// Inline polynomial IR for exp, log, tanh and erf on double (scalar or vector), the double-precision
// counterpart of vector_math.hpp: branch-free, so a vectorized loop of doubles stays vectorized
// instead of calling libm once per lane. The coefficients are our own weighted least-squares fits
// on Chebyshev nodes (near minimax, made with mpmath), rounded to double: their own error is below
// 0.08 ulp; the rest is the rounding of the last few operations.
//
// Accuracy against the correctly rounded result (tests/jit/vector_math_f64_test.cpp, docs/vector-math.md):
// exp within 0.9 ulp, log 0.9, tanh 1.75, erf 1.2 (0.75 on AVX-512 targets, where erf is a polynomial
// per interval); NaN, +-inf, +-0, subnormal inputs and results behave as libm's (on targets without
// fast math).
#pragma once

#include "loom/codegen/llvm/interval_polynomials_f64.hpp"
#include "loom/codegen/llvm/polynomial_ir.hpp"

#include <cmath>
#include <cstdint>

namespace loom::codegen {

class VectorMathF64 : PolynomialIR {
 public:
  VectorMathF64(llvm::IRBuilder<>& b, MathTarget target) : PolynomialIR(b, target) {}

  /// e^x: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, so r carries no rounding of n ln2),
  /// e^r = 1 + r + r^2 Q(r) with Q of degree 9 (1 + r kept exactly as a sum of two doubles, so that
  /// only the last addition rounds), then times 2^n, so that subnormal and overflowing results
  /// round once.
  llvm::Value* exp(llvm::Value* x) {
    const ExpArgument arg = exp_argument(x, -746.0, 710.0);  // e^-746 rounds to 0, e^710 to inf
    llvm::Value* xc = arg.x;
    NearestInteger nearest =
        nearest_integer(b_.CreateFMul(xc, f(x, 1.4426950408889634)));  // in [-1077, 1025]
    llvm::Value* r = reduce(nearest.n, xc);
    llvm::Value* one_plus_r = b_.CreateFAdd(f(x, 1.0), r);
    llvm::Value* rounding = b_.CreateFAdd(b_.CreateFSub(f(x, 1.0), one_plus_r), r);  // exact: |r| < 1
    llvm::Value* p = b_.CreateFAdd(one_plus_r, fma(b_.CreateFMul(r, r), q_of(r), rounding));  // e^r
    // p 2^n rounded once (vscalefpd on 8 lanes of AVX-512; the same bits otherwise).
    return exp_result(arg, x, times_power_of_two(p, nearest));
  }

  /// log x: x = m 2^e with m in (sqrt(1/2), sqrt(2) rounded], f = m - 1 (exact), s = f / (2 + f), so that
  /// log(1 + f) = 2 atanh(s) = 2s + s R(s^2) with R of degree 7; written as
  /// f - (f^2/2 - s (f^2/2 + R)), where the last operation adds a small correction to f, plus e ln2
  /// in two parts.
  llvm::Value* log(llvm::Value* x) {
    // Subnormal x: scale into the normal range first.
    llvm::Value* tiny = b_.CreateFCmpOLT(x, f(x, 2.2250738585072014e-308));
    llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, f(x, 18014398509481984.0 /* 2^54 */)), x);
    // m = xs / 2^k in (sqrt(1/2), sqrt(2) rounded] from integer arithmetic alone: subtracting the
    // bits of half of sqrt(2) rounded, plus one, carries into the exponent exactly when the mantissa
    // is above that of sqrt(2) rounded (which is above sqrt(2)).
    llvm::Value* bits = b_.CreateBitCast(xs, i64(x));
    llvm::Value* k = b_.CreateAShr(b_.CreateSub(bits, c64(x, 0x3fe6a09e667f3bceull)), c64(x, 52));
    llvm::Value* m = b_.CreateBitCast(b_.CreateSub(bits, b_.CreateShl(k, c64(x, 52))), x->getType());
    llvm::Value* e = b_.CreateSIToFP(k, x->getType());
    e = b_.CreateSelect(tiny, b_.CreateFSub(e, f(x, 54.0)), e);
    llvm::Value* fr = b_.CreateFSub(m, f(x, 1.0));
    llvm::Value* s = b_.CreateFDiv(fr, b_.CreateFAdd(fr, f(x, 2.0)));
    llvm::Value* z = b_.CreateFMul(s, s);
    llvm::Value* r = b_.CreateFMul(
        z, horner(z, {0.6666666666666736, 0.3999999999940507, 0.2857142874413889, 0.22222198419192385,
                      0.1818357138419732, 0.15313888042339555, 0.1479743510950102}));
    llvm::Value* half_f2 = b_.CreateFMul(b_.CreateFMul(fr, fr), f(x, 0.5));
    // ln2 = ln2_hi + ln2_lo, ln2_hi with 21 trailing zero bits, so that e ln2_hi is exact.
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    llvm::Value* correction = fma(s, b_.CreateFAdd(half_f2, r), b_.CreateFMul(e, f(x, ln2_lo)));
    llvm::Value* log_m = b_.CreateFSub(fr, b_.CreateFSub(half_f2, correction));
    llvm::Value* result = fma(e, f(x, ln2_hi), log_m);
    // log 0 = -inf, log of a negative number (-inf too) is NaN; log inf = inf and log NaN is that NaN.
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, f(x, 0.0)), f(x, -INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, 0.0)), f(x, NAN), result);
    return b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, INFINITY)), result, x);
  }

  /// tanh x: x + x^3 P(x^2) with P of degree 9 below |x| = 0.5; above, E / (E + 2) with
  /// E = e^(2|x|) - 1, computed without cancellation (expm1's way), and x's sign; beyond |x| = 20
  /// the quotient rounds to 1.
  llvm::Value* tanh(llvm::Value* x) {
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* p =
        horner(x2, {-0.3333333333333316, 0.13333333333299915, -0.05396825394575727, 0.021869487783081135,
                    -0.00886322099055298, 0.003591953638215406, -0.0014544883916415392, 0.0005832996872409513,
                    -0.00021783079014437703, 5.6801393819045294e-05});
    // x + x^3 P rounds -0 to +0: tanh is odd, so take x's sign.
    llvm::Value* small = copysign(fma(b_.CreateFMul(x2, x), p, x), x);
    llvm::Value* y = clamp(b_.CreateFMul(fabs(x), f(x, 2.0)), 0.0, 40.0);
    NearestInteger nearest = nearest_integer(b_.CreateFMul(y, f(x, 1.4426950408889634)));  // in [0, 58]
    llvm::Value* n = nearest.n;
    // e^y - 1 = 2^n (e^r - 1) + (2^n - 1): the scaling is exact and 2^n - 1 is exact for n <= 53
    // (beyond, its rounding is far below the result's ulp), so the sum rounds once; for n = 0 it is
    // e^r - 1 itself, accurate near 0.
    llvm::Value* scale = power_of_two(as_i32(nearest), b_.getDoubleTy());
    llvm::Value* r = reduce(n, y);
    llvm::Value* em1 = fma(scale, fma(b_.CreateFMul(r, r), q_of(r), r), b_.CreateFSub(scale, f(x, 1.0)));
    llvm::Value* large = copysign(b_.CreateFDiv(em1, b_.CreateFAdd(em1, f(x, 2.0))), x);
    llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOLT(fabs(x), f(x, 0.5)), small, large);
    return b_.CreateSelect(is_nan(x), x, result);
  }

  /// erf x. On AVX-512 targets, a polynomial per interval of |x| (by_intervals with
  /// interval_polynomials_f64.hpp's table). Elsewhere x + x P(x^2) with P of degree 11 below
  /// |x| = 0.875; above, 1 - e^Q(|x| - 1) with Q of degree 19 fitted to log erfc on [0.875, 5.95]
  /// weighted by erfc (what matters is erfc's absolute error, which 1 - erfc keeps; erfc is 0.22 at
  /// 0.875 and shrinks fast), with x's sign; beyond 5.95 erfc is below half an ulp of 1, so the
  /// result rounds to +-1.
  llvm::Value* erf(llvm::Value* x) {
    if (target_.avx512) return by_intervals(x, kErfPolynomialsF64);
    // x + x P: the last operation adds a correction of at most 11% to x, so with an FMA it rounds
    // once (without one, x P rounds first: hence 1.08 ulp on baseline x86-64 against 0.92).
    llvm::Value* small =
        fma(x,
            horner(b_.CreateFMul(x, x),
                   {0.1283791670955126, -0.3761263890318374, 0.1128379167095436, -0.026866170644944072,
                    0.0052239776230748654, -0.0008548326846629225, 0.00012055324597344716,
                    -1.4925388070524112e-05, 1.6456621204102028e-06, -1.6289374933405383e-07,
                    1.4123504912995225e-08, -8.668002688745283e-10}),
            x);
    llvm::Value* a = fabs(x);
    // Q in powers of |x| - 1 (exact near 1, where erfc is largest and Q's rounding counts most).
    llvm::Value* q = horner(
        b_.CreateFSub(clamp(a, 0.875, 5.95), f(x, 1.0)),
        {-1.8496055099332482,     -2.6389675142347913,    -0.8431072563584866,     -0.04156109804651333,
         0.01003382543442217,     -0.0019779030223697975, 0.00023732470779043558,  2.627041022292872e-05,
         -2.7141309398032862e-05, 9.5778908309522e-06,    -2.0196153069952196e-06, 1.0379389335898191e-07,
         1.2626432814855118e-07,  -6.794444121044134e-08, 2.1496029906890332e-08,  -4.864839269866201e-09,
         8.004794527366504e-10,   -9.153337098491363e-11, 6.509580196304078e-12,   -2.1641993331971637e-13});
    llvm::Value* large = copysign(b_.CreateFSub(f(x, 1.0), exp(q)), x);
    // NaN fails "less than" and takes `large`, whose clamp dropped it: keep x.
    llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOLT(a, f(x, 0.875)), small, large);
    return b_.CreateSelect(is_nan(x), x, result);
  }

 private:
  llvm::Type* i64(llvm::Value* v) { return like(v, b_.getInt64Ty()); }
  llvm::Value* c64(llvm::Value* v, uint64_t value) { return llvm::ConstantInt::get(i64(v), value); }

  /// r = x - n ln2, |r| <= ln2/2 for n the integer nearest x / ln2. ln2_hi has 32 significant bits
  /// (21 trailing zeros), so n ln2_hi is exact for |n| < 2^21 and x - n ln2_hi is exact (Sterbenz),
  /// with or without an FMA; only the ln2_lo term rounds.
  llvm::Value* reduce(llvm::Value* n, llvm::Value* x) {
    llvm::Value* r = fma(n, f(x, -6.93147180369123816490e-01), x);
    return fma(n, f(x, -1.90821492927058770002e-10), r);
  }

  /// Q(r), where e^r = 1 + r + r^2 Q(r) on |r| <= ln2/2.
  llvm::Value* q_of(llvm::Value* r) {
    return horner(r, {0.5000000000000012, 0.16666666666666483, 0.04166666666651632, 0.008333333333451433,
                      0.0013888888946678828, 0.00019841269597118904, 2.480149034623507e-05,
                      2.755750728541229e-06, 2.7631125446226205e-07, 2.50246452096493e-08});
  }
};

}  // namespace loom::codegen
