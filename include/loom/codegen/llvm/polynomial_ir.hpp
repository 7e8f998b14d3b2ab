// The building blocks that the CPU backend's inline math (vector_math.hpp for float,
// vector_math_f64.hpp for double) is written with: constants of the operand's type and lanes,
// fused multiply-adds, Horner polynomials, clamps, sign and NaN tests, round to nearest integer.
// Every one is a plain IR instruction or an LLVM intrinsic that x86 has an instruction for, so a
// vectorized loop stays vectorized.
#pragma once

#include "loom/codegen/llvm/float_bits.hpp"
#include "loom/codegen/llvm/llvm_includes.hpp"

#include <llvm/IR/IntrinsicsX86.h>

#include <initializer_list>

namespace loom::codegen {

class PolynomialIR {
 protected:
  explicit PolynomialIR(llvm::IRBuilder<>& b) : b_(b) {}

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
  /// The integer nearest v (ties away from zero), as i32, for |v| < 2^30. Not the shorter
  /// (v + 1.5 * 2^23) - 1.5 * 2^23: on a fast-math target the code generator may reassociate that
  /// back to v (LLVM 19 did not in our tests, but nothing forbids it).
  llvm::Value* round_to_integer(llvm::Value* v) {
    return b_.CreateFPToSI(b_.CreateFAdd(v, copysign(f(v, 0.5), v)), i32(v));
  }
  /// 2^n for integer n (i32 lanes) in the normal exponent range of `scalar` (float or double), built
  /// from its exponent bits.
  llvm::Value* power_of_two(llvm::Value* n, llvm::Type* scalar) {
    if (scalar->isFloatTy())
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, c32(n, 127)), c32(n, 23)), like(n, scalar));
    llvm::Type* i64 = like(n, b_.getInt64Ty());
    llvm::Value* biased = b_.CreateAdd(b_.CreateSExt(n, i64), llvm::ConstantInt::get(i64, 1023));
    return b_.CreateBitCast(b_.CreateShl(biased, llvm::ConstantInt::get(i64, 52)), like(n, scalar));
  }
  /// p 2^n (n as a float value `n` and as i32 `ni`, its exponent range twice the type's), rounded
  /// once, subnormal and overflowing results included: one vscalefps/vscalefpd on a 512-bit vector
  /// where the target has AVX-512 on 512-bit registers, else times two exact powers of two (the
  /// same bits).
  llvm::Value* times_power_of_two(llvm::Value* p, llvm::Value* n, llvm::Value* ni, bool has_avx512_zmm) {
    llvm::Type* scalar = p->getType()->getScalarType();
    auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(p->getType());
    const unsigned zmm_lanes = scalar->isFloatTy() ? 16 : 8;
    if (has_avx512_zmm && vector && vector->getNumElements() == zmm_lanes)
      return b_.CreateIntrinsic(scalar->isFloatTy() ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_512
                                                    : llvm::Intrinsic::x86_avx512_mask_scalef_pd_512,
                                {},
                                {p, n, llvm::PoisonValue::get(p->getType()),
                                 scalar->isFloatTy() ? b_.getInt16(0xffff) : b_.getInt8(0xff),
                                 b_.getInt32(4 /* the current rounding mode */)});
    llvm::Value* n1 = b_.CreateAShr(ni, c32(ni, 1));
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    return b_.CreateFMul(b_.CreateFMul(p, power_of_two(n1, scalar)), power_of_two(n2, scalar));
  }
  /// c[0] + x (c[1] + x (c[2] + ...)), each coefficient rounded to x's type.
  llvm::Value* horner(llvm::Value* x, std::initializer_list<double> c) {
    const double* last = c.end() - 1;
    llvm::Value* p = f(x, *last);
    for (const double* k = last; k != c.begin();) p = fma(p, x, f(x, *--k));
    return p;
  }

  llvm::IRBuilder<>& b_;
};

}  // namespace loom::codegen
