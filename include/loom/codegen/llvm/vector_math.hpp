// Inline polynomial IR for exp, log, tanh and erf on float (scalar or vector), and the entry point
// for double's (vector_math_f64.hpp): the CPU backend emits these instead of
// LLVM's math intrinsics, which a vector lowers to one libm call per lane.
// Everything is branch-free (selects, integer bit tricks, fused multiply-adds where the target has
// them), so a vectorized loop stays vectorized. The coefficients are our own weighted least-squares
// fits on Chebyshev nodes (near minimax), rounded to float.
//
// Accuracy against the correctly rounded result, every float input checked (bench/vector_math.cpp,
// docs/vector-math.md): exp 1.02 ulp, log 0.97, tanh 1.34, erf 1.30 at most; on AVX-512 targets tanh
// 0.73 and erf 0.63 (polynomials per interval). NaN, +-inf, +-0, subnormal inputs and results behave
// as libm's.
#pragma once

#include "loom/codegen/llvm/interval_polynomials.hpp"
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

  /// log x: x = m 2^e with m in [3/4, 3/2); log(1 + f) = f + f^2 (-1/2 + f P(f)), f = m - 1 in
  /// [-1/4, 1/2) (the interval vgetmantps offers that contains 1, so that log x near 1 is f itself).
  llvm::Value* log(llvm::Value* x) {
    const bool zmm = is_zmm_vector(x);
    const LogArgument arg = zmm ? log_argument_avx512(x) : log_argument_from_bits(x);
    llvm::Value* fr = b_.CreateFSub(arg.m, f(x, 1.0f));
    llvm::Value* f2 = b_.CreateFMul(fr, fr);
    llvm::Value* p = horner(
        fr, {0.33333449218411176f, -0.2500009627058708f, 0.19990857663411568f, -0.16647293878830155f,
             0.14478405770299183f, -0.13161371520859774f, 0.10463336424016187f, -0.04507647721395351f});
    // f + f^2 (-1/2 + f P): as with erf, the last operation adds a small correction to f.
    llvm::Value* log_m = fma(f2, fma(fr, p, f(x, -0.5f)), fr);
    // + e ln2, ln2 in two parts: the first has 16 significant bits, so e times it is exact (|e| <= 150);
    // the second is positive, so that e = +-inf (x = inf or 0 on the AVX-512 path) gives +-inf.
    llvm::Value* result = fma(arg.e, f(x, 0.693145751953125f), fma(arg.e, f(x, 1.42860682e-6f), log_m));
    if (zmm) return result;  // vgetmantps and vgetexpps made the special values already (below)
    // log 0 = -inf, log of a negative number (-inf too) is NaN; log inf = inf and log NaN is that NaN.
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, f(x, 0.0f)), f(x, -INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, 0.0f)), f(x, NAN), result);
    return b_.CreateSelect(b_.CreateFCmpOLT(x, f(x, INFINITY)), result, x);
  }

  /// log's reduction x = m 2^e, m in [3/4, 3/2), e an integer as a float.
  struct LogArgument {
    llvm::Value* m;
    llvm::Value* e;
  };
  /// The reduction from integer arithmetic alone: subtracting the bits of 3/4 carries into the
  /// exponent exactly when the mantissa is at least 3/2's. Subnormal x is scaled into the normal range
  /// first. Finite positive x only: log() selects the special values after.
  LogArgument log_argument_from_bits(llvm::Value* x) {
    llvm::Value* tiny = b_.CreateFCmpOLT(x, f(x, 1.17549435e-38f));
    llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, f(x, 8388608.0f)), x);
    llvm::Value* bits = b_.CreateBitCast(xs, i32(x));
    llvm::Value* k = b_.CreateAShr(b_.CreateSub(bits, c32(x, 0x3f400000)), c32(x, 23));
    llvm::Value* m = b_.CreateBitCast(b_.CreateSub(bits, b_.CreateShl(k, c32(x, 23))), x->getType());
    llvm::Value* e = b_.CreateSIToFP(k, x->getType());
    return {m, b_.CreateSelect(tiny, b_.CreateFSub(e, f(x, 23.0f)), e)};
  }
  /// The same reduction in two AVX-512 instructions, subnormal x included: vgetmantps (interval
  /// [3/4, 3/2), NaN for a negative sign) and vgetexpps (floor(log2 |x|), one more where the mantissa
  /// was halved into [3/4, 1)). Their special values make log's: x = +-0 gives e = -inf (and m = +-1,
  /// finite), x = inf gives m = 1 and e = inf, and a negative x (-inf too) or NaN gives m = NaN. The
  /// same bits as log_argument_from_bits's results except for NaNs: these are the default NaN (sign
  /// set, as glibc's) and quiet a signalling NaN, where the selects give +NaN and pass x through.
  LogArgument log_argument_avx512(llvm::Value* x) {
    llvm::Value* keep_all = b_.getInt16(0xffff);
    llvm::Value* current_rounding = b_.getInt32(4);
    llvm::Value* m = b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_getmant_ps_512, {},
                                        {x, b_.getInt32(0b1011 /* NaN if negative, interval [3/4, 3/2) */),
                                         llvm::PoisonValue::get(x->getType()), keep_all, current_rounding});
    llvm::Value* e =
        b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_getexp_ps_512, {},
                           {x, llvm::PoisonValue::get(x->getType()), keep_all, current_rounding});
    return {m, b_.CreateSelect(b_.CreateFCmpOLT(m, f(x, 1.0f)), b_.CreateFAdd(e, f(x, 1.0f)), e)};
  }

  /// tanh x. On AVX-512 targets, a polynomial per interval of |x| (by_intervals). Elsewhere an odd
  /// polynomial below |x| = 0.625, 1 - 2 / (e^(2|x|) + 1) with x's sign above.
  llvm::Value* tanh(llvm::Value* x) {
    if (target_.avx512) return by_intervals(x, kTanhPolynomials);
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

  /// erf x. On AVX-512 targets, a polynomial per interval of |x| (by_intervals). Elsewhere x P(x^2)
  /// below |x| = 0.875; above, 1 - e^Q(|x|) with Q fitted to log erfc on [0.875, 4] (erf rounds to 1
  /// beyond 4), with x's sign.
  llvm::Value* erf(llvm::Value* x) {
    if (target_.avx512) return by_intervals(x, kErfPolynomials);
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
