// The building blocks that the CPU backend's inline math (vector_math.hpp for float,
// vector_math_f64.hpp for double) is written with: constants of the operand's type and lanes,
// fused multiply-adds, Horner polynomials, clamps, sign and NaN tests, round to nearest integer, and
// tables of polynomials per interval (entries picked by permutes). Every one is a plain IR
// instruction or an LLVM intrinsic that x86 has an instruction for, so a vectorized loop stays
// vectorized.
#pragma once

#include "loom/codegen/llvm/float_bits.hpp"
#include "loom/codegen/llvm/interval_polynomials.hpp"
#include "loom/codegen/llvm/llvm_includes.hpp"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

namespace loom::codegen {

/// What the target offers the math sequences.
struct MathTarget {
  /// AVX-512F on 512-bit registers: one vscalefps / vscalefpd scales a whole 512-bit vector by 2^n.
  bool avx512_zmm = false;
  /// SSE4.1 or newer: roundps / vrndscaleps round to the nearest integer in one instruction.
  bool round_instruction = false;
  /// AVX-512F with 512-bit registers or AVX-512VL (FMA among it): float tanh and erf, and double
  /// erf, take their tables of polynomials, picked by two-table permutes, for the same bits with and
  /// without 512-bit registers.
  bool avx512 = false;
};

class PolynomialIR {
 protected:
  PolynomialIR(llvm::IRBuilder<>& b, MathTarget target) : b_(b), target_(target) {}

  /// The constant `value` in v's floating-point type and lanes (rounded to that type).
  llvm::Value* f(llvm::Value* v, double value) { return llvm::ConstantFP::get(v->getType(), value); }
  llvm::Type* i32(llvm::Value* v) { return like(v, b_.getInt32Ty()); }
  llvm::Value* c32(llvm::Value* v, uint32_t value) { return llvm::ConstantInt::get(i32(v), value); }
  llvm::Value* fabs(llvm::Value* v) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v); }
  llvm::Value* copysign(llvm::Value* magnitude, llvm::Value* sign) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
  }
  /// a * b + c, fused where the target has an FMA instruction.
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
  }
  llvm::Value* is_nan(llvm::Value* v) { return b_.CreateFCmpUNO(v, v); }
  /// v limited to [lo, hi]; NaN becomes hi (callers that must return NaN select it back).
  llvm::Value* clamp(llvm::Value* v, double lo, double hi) {
    llvm::Value* below_hi = b_.CreateSelect(b_.CreateFCmpOLT(v, f(v, hi)), v, f(v, hi));
    return b_.CreateSelect(b_.CreateFCmpOGT(below_hi, f(v, lo)), below_hi, f(v, lo));
  }
  /// v limited to [lo, hi], NaN kept: each select takes v unless a comparison holds, which x86's
  /// minps / maxps compute in one instruction each (they return their second operand on NaN).
  llvm::Value* clamp_keep_nan(llvm::Value* v, double lo, double hi) {
    llvm::Value* below_hi = b_.CreateSelect(b_.CreateFCmpOGT(v, f(v, hi)), f(v, hi), v);
    return b_.CreateSelect(b_.CreateFCmpOLT(below_hi, f(v, lo)), f(v, lo), below_hi);
  }
  /// The integer nearest v (ties away from zero), as i32, for |v| < 2^30. Not the shorter
  /// (v + 1.5 * 2^23) - 1.5 * 2^23: on a fast-math target the code generator may reassociate that
  /// back to v (LLVM 19 did not in our tests, but nothing forbids it).
  llvm::Value* round_to_integer(llvm::Value* v) {
    return b_.CreateFPToSI(b_.CreateFAdd(v, copysign(f(v, 0.5), v)), i32(v));
  }
  /// The integer nearest v (|v| < 2^30, not NaN unless on the vscalef path), as a value of v's type
  /// (`n`) and as i32 (`ni`, null where it is not computed: then fptosi(n) is exact). One rounding
  /// instruction where the target has it (ties to even), else round_to_integer (ties away from zero,
  /// four instructions): either n serves an argument reduction, whose remainder is at most half a step
  /// either way.
  struct NearestInteger {
    llvm::Value* n;
    llvm::Value* ni;
  };
  NearestInteger nearest_integer(llvm::Value* v) {
    if (target_.round_instruction) return {b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, v), nullptr};
    llvm::Value* ni = round_to_integer(v);
    return {b_.CreateSIToFP(ni, v->getType()), ni};
  }
  /// Whether nearest_integer keeps a NaN a NaN (the rounding instruction does; round_to_integer's
  /// fptosi makes it poison). AVX-512 implies SSE4.1, so the vscalef path always has it.
  bool nan_survives_rounding() const { return target_.round_instruction; }
  /// exp's argument limited to [lo, hi] (beyond, the result is 0 or inf), and whether a NaN argument
  /// flows through the rest of exp to its result: on the vscalef path, where rounding keeps NaN a NaN.
  /// Elsewhere the clamp turns NaN into a number (fptosi of NaN is poison) and exp_result puts it
  /// back.
  struct ExpArgument {
    llvm::Value* x;
    bool nan_flows;
  };
  ExpArgument exp_argument(llvm::Value* x, double lo, double hi) {
    const bool nan_flows = scales_in_one_instruction(x) && nan_survives_rounding();
    return {nan_flows ? clamp_keep_nan(x, lo, hi) : clamp(x, lo, hi), nan_flows};
  }
  /// exp's result for argument `x` from the value computed from the clamped argument.
  llvm::Value* exp_result(const ExpArgument& a, llvm::Value* x, llvm::Value* result) {
    return a.nan_flows ? result : b_.CreateSelect(is_nan(x), x, result);
  }
  /// `n` as i32: `ni` where nearest_integer computed it, else converted (exactly).
  llvm::Value* as_i32(const NearestInteger& n) { return n.ni ? n.ni : b_.CreateFPToSI(n.n, i32(n.n)); }
  /// 2^n for integer n (i32 lanes) in the normal exponent range of `scalar` (float or double), built
  /// from its exponent bits.
  llvm::Value* power_of_two(llvm::Value* n, llvm::Type* scalar) {
    if (scalar->isFloatTy())
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, c32(n, 127)), c32(n, 23)), like(n, scalar));
    llvm::Type* i64 = like(n, b_.getInt64Ty());
    llvm::Value* biased = b_.CreateAdd(b_.CreateSExt(n, i64), llvm::ConstantInt::get(i64, 1023));
    return b_.CreateBitCast(b_.CreateShl(biased, llvm::ConstantInt::get(i64, 52)), like(n, scalar));
  }
  /// Whether times_power_of_two scales values of v's type with one vscalefps / vscalefpd: a 512-bit
  /// vector on a target with AVX-512 on 512-bit registers. That instruction takes n as a float and
  /// returns NaN for a NaN operand, so a NaN may flow through a sequence that ends in it.
  bool scales_in_one_instruction(llvm::Value* v) { return is_zmm_vector(v); }
  /// Whether v is a 512-bit vector on a target with AVX-512 on 512-bit registers: the sequences may
  /// use AVX-512's whole-vector instructions on it (vscalef, vgetmant, vgetexp). Other widths (and a
  /// loop's scalar remainder) compute the same bits by other means.
  bool is_zmm_vector(llvm::Value* v) {
    auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
    return target_.avx512_zmm && vector &&
           vector->getNumElements() * vector->getScalarType()->getPrimitiveSizeInBits() == 512;
  }
  /// p 2^n (n from nearest_integer, its exponent range twice the type's), rounded once, subnormal and
  /// overflowing results included: one vscalefps/vscalefpd (scales_in_one_instruction), else times
  /// two exact powers of two (the same bits).
  llvm::Value* times_power_of_two(llvm::Value* p, const NearestInteger& n) {
    llvm::Type* scalar = p->getType()->getScalarType();
    if (scales_in_one_instruction(p))
      return b_.CreateIntrinsic(scalar->isFloatTy() ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_512
                                                    : llvm::Intrinsic::x86_avx512_mask_scalef_pd_512,
                                {},
                                {p, n.n, llvm::PoisonValue::get(p->getType()),
                                 scalar->isFloatTy() ? b_.getInt16(0xffff) : b_.getInt8(0xff),
                                 b_.getInt32(4 /* the current rounding mode */)});
    llvm::Value* ni = as_i32(n);
    llvm::Value* n1 = b_.CreateAShr(ni, c32(ni, 1));
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    return b_.CreateFMul(b_.CreateFMul(p, power_of_two(n1, scalar)), power_of_two(n2, scalar));
  }
  /// f(x) = sign(x) P_i(|x| - c_i) for an odd f whose table `fn` holds (interval_polynomials.hpp),
  /// |x| limited to fn.largest (NaN kept), i its interval. In interval 0 (c = 0, so t = |x|) the
  /// polynomial is t + t Q with Q in t (float) or t^2 (double erf), rounded once; elsewhere p0 + t Q.
  /// The coefficients are picked from registers by permutes (table_entry), the same bits at every
  /// width. float tanh: 22 instructions per 16 lanes (7 of them permutes), where its exp-based
  /// formula takes 34.
  template <class T>
  llvm::Value* by_intervals(llvm::Value* x, const IntervalPolynomials<T>& fn) {
    llvm::Value* a = fabs(x);
    a = b_.CreateSelect(b_.CreateFCmpOGT(a, f(x, fn.largest)), f(x, fn.largest), a);
    llvm::Type* bits = like(x, b_.getIntNTy(8 * sizeof(T)));
    auto integer = [&](int64_t v) { return llvm::ConstantInt::get(bits, v); };
    constexpr int shift = std::numeric_limits<T>::digits - 3;  // drops all but 2 mantissa bits
    llvm::Value* index =
        b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(a, bits), integer(shift)), integer(fn.index_bias));
    index = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, index, integer(0));
    llvm::Value* t = b_.CreateFSub(a, table_entry(fn.row(0), index, x));
    llvm::Value* first = b_.CreateICmpEQ(index, integer(0));
    llvm::Value* v = fn.first_in_squares ? b_.CreateSelect(first, b_.CreateFMul(t, t), t) : t;
    llvm::Value* q = table_entry(fn.row(fn.rows - 1), index, x);
    for (int row = fn.rows - 2; row >= 2; --row) q = fma(q, v, table_entry(fn.row(row), index, x));
    // p0 + t q; in interval 0, t + t q (for float the table's p1 there is 1 less), rounded once.
    return copysign(fma(q, t, b_.CreateSelect(first, t, table_entry(fn.row(1), index, x))), x);
  }

  /// Entry `index` of a table of 32 floats or 16 doubles (`values`, x's element type: two 512-bit
  /// registers' worth), in x's type and lanes; `index` has x's lanes and the integer type of x's width,
  /// and only its low 5 (float) or 4 (double) bits count, so a NaN's index picks some entry. With
  /// 512-bit registers one two-table permute (vpermt2ps / vpermt2pd) per 512 bits of x: the top index
  /// bit picks the register, the others the lane; without them (AVX-512VL on 256-bit registers) two
  /// per 256 bits, one for each half of the table, and a blend on the top bit: the same entries. A
  /// scalar, or the lanes past a multiple of the permute's width, go in the low lanes of one more.
  template <class T>
  llvm::Value* table_entry(const T* values, llvm::Value* index, llvm::Value* x) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    constexpr bool is_float = std::is_same_v<T, float>;
    auto table = [&](unsigned first, unsigned count) {
      return llvm::ConstantDataVector::get(b_.getContext(), llvm::ArrayRef<T>(values + first, count));
    };
    const bool zmm = target_.avx512_zmm;
    const unsigned width = (zmm ? 512 : 256) / (8 * sizeof(T));  // lanes of one permute
    auto permute = [&](llvm::Value* part) -> llvm::Value* {
      auto two_table = [&](llvm::Intrinsic::ID id, unsigned first) {
        return b_.CreateIntrinsic(id, {}, {table(first, width), part, table(first + width, width)});
      };
      if (zmm)
        return two_table(is_float ? llvm::Intrinsic::x86_avx512_vpermi2var_ps_512
                                  : llvm::Intrinsic::x86_avx512_vpermi2var_pd_512,
                         0);
      const llvm::Intrinsic::ID id = is_float ? llvm::Intrinsic::x86_avx512_vpermi2var_ps_256
                                              : llvm::Intrinsic::x86_avx512_vpermi2var_pd_256;
      llvm::Value* top_bit = llvm::ConstantInt::get(part->getType(), 2 * width);
      llvm::Value* upper =
          b_.CreateICmpNE(b_.CreateAnd(part, top_bit), llvm::Constant::getNullValue(part->getType()));
      llvm::Value* low = two_table(id, 0);
      llvm::Value* high = two_table(id, 2 * width);
      return b_.CreateSelect(upper, high, low);
    };
    auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
    if (!vector) return b_.CreateExtractElement(permute(b_.CreateVectorSplat(width, index)), uint64_t{0});
    const unsigned lanes = vector->getNumElements();
    // Each `width` lanes of the index (poison past the last), permuted, then joined.
    std::vector<llvm::Value*> parts;
    for (unsigned first = 0; first < lanes; first += width) {
      const unsigned used = std::min(width, lanes - first);
      parts.push_back(permute(
          lanes == width
              ? index
              : b_.CreateShuffleVector(index, llvm::createSequentialMask(first, used, width - used))));
    }
    llvm::Value* joined = llvm::concatenateVectors(b_, parts);
    if (parts.size() * width == lanes) return joined;
    return b_.CreateShuffleVector(joined, llvm::createSequentialMask(0, lanes, 0));
  }
  /// c[0] + x (c[1] + x (c[2] + ...)), each coefficient rounded to x's type.
  llvm::Value* horner(llvm::Value* x, std::initializer_list<double> c) {
    const double* last = c.end() - 1;
    llvm::Value* p = f(x, *last);
    for (const double* k = last; k != c.begin();) p = fma(p, x, f(x, *--k));
    return p;
  }

  llvm::IRBuilder<>& b_;
  MathTarget target_;
};

}  // namespace loom::codegen
