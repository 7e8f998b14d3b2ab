// Inline polynomial IR for exp, log, tanh and erf on float (scalar or vector), and the entry point
// for double's (vector_math_f64.hpp): the CPU backend emits these instead of
// LLVM's math intrinsics, which a vector lowers to one libm call per lane.
// Everything is branch-free (selects, integer bit tricks, fused multiply-adds where the target has
// them), so a vectorized loop stays vectorized. The coefficients are our own weighted least-squares
// fits on Chebyshev nodes (near minimax), rounded to float.
//
// Accuracy against the correctly rounded result, every float input checked (bench/vector_math.cpp,
// docs/vector-math.md): exp 1.02 ulp, log 0.94, tanh 1.34, erf 1.30 at most; NaN, +-inf, +-0,
// subnormal inputs and results behave as libm's.
#pragma once

#include "loom/codegen/llvm/math_lanes.hpp"
#include "loom/codegen/llvm/polynomial_ir.hpp"
#include "loom/codegen/llvm/vector_math_f64.hpp"

#include <cmath>
#include <string>

namespace loom::codegen {

class VectorMath : PolynomialIR {
 public:
  explicit VectorMath(llvm::IRBuilder<>& b, MathTarget target) : PolynomialIR(b, target) {}

  /// Whether `name` has a polynomial version for values of IR type `type` (float, or double:
  /// vector_math_f64.hpp).
  static bool handles(const std::string& name, llvm::Type* type) {
    llvm::Type* scalar = type->getScalarType();
    return (scalar->isFloatTy() || scalar->isDoubleTy()) && has_cpu_polynomial(name);
  }

  llvm::Value* emit(const std::string& name, llvm::Value* x) {
    // The reductions below rely on the exact order of their roundings: their own instructions carry
    // no fast-math flags. On a fast-math target (Target::set_fast_math) NaN and infinite inputs are
    // outside the contract, as everywhere under fast math (LLVM may drop the NaN selects); finite
    // inputs keep their accuracy (tests/jit/vector_math_test.cpp, vector_math_f64_test.cpp).
    llvm::IRBuilderBase::FastMathFlagGuard keep_flags(b_);
    b_.clearFastMathFlags();
    if (x->getType()->getScalarType()->isDoubleTy()) {
      VectorMathF64 f64(b_, target_);
      if (name == "exp") return f64.exp(x);
      if (name == "log") return f64.log(x);
      if (name == "tanh") return f64.tanh(x);
      return f64.erf(x);
    }
    if (name == "exp") return exp(x);
    if (name == "log") return log(x);
    if (name == "tanh") return tanh(x);
    return erf(x);
  }

  /// e^x: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, so r carries no rounding of n ln2),
  /// e^r by a degree-6 polynomial, then times 2^n (times_power_of_two: one vscalefps, or two halves)
  /// so that subnormal and overflowing results round once.
  llvm::Value* exp(llvm::Value* x) {
    const ExpArgument arg = exp_argument(x, -104.0f, 89.0f);  // e^-104 rounds to 0, e^89 to inf
    llvm::Value* xc = arg.x;
    NearestInteger nearest =
        nearest_integer(b_.CreateFMul(xc, f(x, 1.44269504088896341f)));  // in [-150, 129]
    llvm::Value* n = nearest.n;
    llvm::Value* r = fma(n, f(x, -0.693359375f), xc);
    r = fma(n, f(x, 2.12194440e-4f), r);  // ln2 = 0.693359375 - 2.12194440e-4 + O(1e-12)
    llvm::Value* p = horner(r, {0.49999988595112802f, 0.16666518459980375f, 0.04166953310922325f,
                                0.0083689163413751267f, 0.0013751407895822139f});
    p = b_.CreateFAdd(fma(b_.CreateFMul(r, r), p, r), f(x, 1.0f));
    // p 2^n rounded once (vscalefps on 16 lanes of AVX-512; the same bits otherwise).
    return exp_result(arg, x, times_power_of_two(p, nearest));
  }

  /// log x: x = m 2^e with m in (sqrt(1/2), sqrt(2)); log(1 + f) = f + f^2 (-1/2 + f P(f)), f = m - 1.
  llvm::Value* log(llvm::Value* x) {
    // Subnormal x: scale into the normal range first.
    llvm::Value* tiny = b_.CreateFCmpOLT(x, f(x, 1.17549435e-38f));
    llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, f(x, 8388608.0f)), x);
    // m = xs / 2^k in (sqrt(1/2), sqrt(2)) from integer arithmetic alone: subtracting the bits of
    // sqrt(1/2) (rounded up) carries into the exponent exactly when the mantissa is above sqrt(2)'s.
    llvm::Value* bits = b_.CreateBitCast(xs, i32(x));
    llvm::Value* k = b_.CreateAShr(b_.CreateSub(bits, c32(x, 0x3f3504f4)), c32(x, 23));
    llvm::Value* m = b_.CreateBitCast(b_.CreateSub(bits, b_.CreateShl(k, c32(x, 23))), x->getType());
    llvm::Value* e = b_.CreateSIToFP(k, x->getType());
    e = b_.CreateSelect(tiny, b_.CreateFSub(e, f(x, 23.0f)), e);
    llvm::Value* fr = b_.CreateFSub(m, f(x, 1.0f));
    llvm::Value* f2 = b_.CreateFMul(fr, fr);
    llvm::Value* p = horner(
        fr, {0.33333354047279121f, -0.25000851943542837f, 0.19999826572957434f, -0.16621369910242969f,
             0.14227114035864636f, -0.13202104208880273f, 0.12620327488929574f, -0.073628678714710166f});
    // f + f^2 (-1/2 + f P): as with erf, the last operation adds a small correction to f.
    llvm::Value* log_m = fma(f2, fma(fr, p, f(x, -0.5f)), fr);
    // e ln2 with ln2 in two parts, the first short enough that e times it is exact (|e| <= 150).
    llvm::Value* result = fma(e, f(x, 0.693359375f), fma(e, f(x, -2.12194440e-4f), log_m));
    // log 0 = -inf, log of a negative number (-inf too) is NaN; log inf = inf and log NaN is that NaN.
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, f(x, 0.0f)), f(x, -INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, 0.0f)), f(x, NAN), result);
    return b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, INFINITY)), result, x);
  }

  /// tanh x: an odd polynomial below |x| = 0.625, 1 - 2 / (e^(2|x|) + 1) with x's sign above.
  llvm::Value* tanh(llvm::Value* x) {
    llvm::Value* a = fabs(x);
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* p = horner(x2, {-0.3333328521960245f, 0.13331512665829802f, -0.053744657959036463f,
                                 0.020653124681708542f, -0.0057189627268747183f});
    // x + x^3 P rounds -0 to +0: tanh is odd, so take x's sign.
    llvm::Value* small = copysign(fma(b_.CreateFMul(x2, x), p, x), x);
    llvm::Value* e = exp(b_.CreateFMul(a, f(x, 2.0f)));
    llvm::Value* large =
        copysign(b_.CreateFSub(f(x, 1.0f), b_.CreateFDiv(f(x, 2.0f), b_.CreateFAdd(e, f(x, 1.0f)))), x);
    return b_.CreateSelect(b_.CreateFCmpOLT(a, f(x, 0.625f)), small, large);
  }

  /// erf x: x P(x^2) below |x| = 0.875; above, 1 - e^Q(|x|) with Q fitted to log erfc on
  /// [0.875, 4] (erf rounds to 1 beyond 4), with x's sign.
  llvm::Value* erf(llvm::Value* x) {
    llvm::Value* a = fabs(x);
    // x + x (P(x^2) - 1): the last operation adds a small correction to x, so it rounds once.
    llvm::Value* small = fma(x,
                             horner(b_.CreateFMul(x, x), {0.1283791628326126f, -0.37612569153994247f,
                                                          0.11282608233803425f, -0.026796305042379505f,
                                                          0.0050387377036569219f, -0.0006235155625274758f}),
                             x);
    llvm::Value* q =
        horner(clamp(a, 0.875f, 4.0f), {0.00016660624724877069f, -1.1294770148569375f, -0.63342134535904216f,
                                        -0.10820093983876195f, 0.025070258730037898f, -0.0041532374228719723f,
                                        0.0004309741551188414f, -2.0811062949714764e-5f});
    llvm::Value* large = copysign(b_.CreateFSub(f(x, 1.0f), exp(q)), x);
    // NaN fails both comparisons' "less than" and takes `large`, whose clamp dropped it: keep x.
    llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOLT(a, f(x, 0.875f)), small, large);
    return b_.CreateSelect(is_nan(x), x, result);
  }
};

}  // namespace loom::codegen
