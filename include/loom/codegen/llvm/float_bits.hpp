// LLVM IR for the 16-bit float storage types and exact roundings, with the interpreter's semantics
// (ir/half.hpp, ir/dtype_arith.hpp): float16/bfloat16 values live in float registers and
// are rounded (to nearest even) after every operation; double -> 16-bit rounds to odd first.
// Everything is branch-free integer and float IR, so it vectorizes; float16 uses F16C when present.
#pragma once

#include "loom/codegen/llvm/llvm_includes.hpp"

namespace loom::codegen {

/// `t` with the lane count of v (t itself for a scalar v).
inline llvm::Type* like(llvm::Value* v, llvm::Type* t) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
    return llvm::FixedVectorType::get(t, vt->getNumElements());
  return t;
}

class FloatBits {
 public:
  FloatBits(llvm::IRBuilder<>& b, bool has_f16c) : b_(b), has_f16c_(has_f16c) {}

  /// float (scalar or vector) -> the binary16 bits of its nearest half, as i16.
  llvm::Value* float_to_half_bits(llvm::Value* f) {
    if (has_f16c_)
      return b_.CreateBitCast(b_.CreateFPTrunc(f, like(f, b_.getHalfTy())), like(f, b_.getInt16Ty()));
    // ir/half.hpp's float_to_half_bits, lane-wise with selects.
    llvm::Value* x = b_.CreateBitCast(f, i32(f));
    llvm::Value* sign = b_.CreateAnd(b_.CreateLShr(x, c32(f, 16)), c32(f, 0x8000));
    llvm::Value* abs = b_.CreateAnd(x, c32(f, 0x7fffffff));
    // NaN keeps its top payload bits and becomes quiet; inf stays inf.
    llvm::Value* nan_payload =
        b_.CreateOr(c32(f, 0x200), b_.CreateAnd(b_.CreateLShr(abs, c32(f, 13)), c32(f, 0x3ff)));
    llvm::Value* inf_nan = b_.CreateOr(
        c32(f, 0x7c00), b_.CreateSelect(b_.CreateICmpUGT(abs, c32(f, 0x7f800000)), nan_payload, c32(f, 0)));
    // Subnormal halves: scale so the half's last bit is 1.0, round to nearest even in float.
    llvm::Value* scaled =
        b_.CreateFMul(b_.CreateBitCast(abs, f->getType()), llvm::ConstantFP::get(f->getType(), 16777216.0));
    llvm::Value* subnormal = b_.CreateFPToUI(round_even(scaled), i32(f));
    // Normal halves: rebias the exponent, keep 10 mantissa bits, round the 13 dropped ones to even
    // (a carry into the exponent is the correct result).
    llvm::Value* mantissa = b_.CreateAnd(abs, c32(f, 0x7fffff));
    llvm::Value* exponent = b_.CreateSub(b_.CreateLShr(abs, c32(f, 23)), c32(f, 127 - 15));
    llvm::Value* h = b_.CreateOr(b_.CreateShl(exponent, c32(f, 10)), b_.CreateLShr(mantissa, c32(f, 13)));
    llvm::Value* rest = b_.CreateAnd(mantissa, c32(f, 0x1fff));
    llvm::Value* round_up = b_.CreateOr(b_.CreateICmpUGT(rest, c32(f, 0x1000)),
                                        b_.CreateAnd(b_.CreateICmpEQ(rest, c32(f, 0x1000)),
                                                     b_.CreateICmpNE(b_.CreateAnd(h, c32(f, 1)), c32(f, 0))));
    llvm::Value* normal = b_.CreateAdd(h, b_.CreateZExt(round_up, i32(f)));
    llvm::Value* bits = b_.CreateSelect(b_.CreateICmpULT(abs, c32(f, 0x38800000)), subnormal, normal);
    bits = b_.CreateSelect(b_.CreateICmpUGE(abs, c32(f, 0x477ff000)), c32(f, 0x7c00), bits);
    bits = b_.CreateSelect(b_.CreateICmpUGE(abs, c32(f, 0x7f800000)), inf_nan, bits);
    return b_.CreateTrunc(b_.CreateOr(sign, bits), like(f, b_.getInt16Ty()));
  }

  /// i16 binary16 bits -> float (exact).
  llvm::Value* half_bits_to_float(llvm::Value* h16) {
    llvm::Type* f32 = like(h16, b_.getFloatTy());
    if (has_f16c_) return b_.CreateFPExt(b_.CreateBitCast(h16, like(h16, b_.getHalfTy())), f32);
    llvm::Value* h = b_.CreateZExt(h16, like(h16, b_.getInt32Ty()));
    llvm::Value* sign = b_.CreateShl(b_.CreateAnd(h, c32(h, 0x8000)), c32(h, 16));
    llvm::Value* exponent = b_.CreateAnd(b_.CreateLShr(h, c32(h, 10)), c32(h, 0x1f));
    llvm::Value* mantissa = b_.CreateAnd(h, c32(h, 0x3ff));
    llvm::Value* sub_value =
        b_.CreateFMul(b_.CreateUIToFP(mantissa, f32), llvm::ConstantFP::get(f32, 1.0 / 16777216.0));
    llvm::Value* subnormal = b_.CreateOr(b_.CreateBitCast(sub_value, like(h16, b_.getInt32Ty())), sign);
    llvm::Value* shifted_mantissa = b_.CreateShl(mantissa, c32(h, 13));
    llvm::Value* inf_nan = b_.CreateOr(b_.CreateOr(sign, c32(h, 0x7f800000)), shifted_mantissa);
    llvm::Value* normal =
        b_.CreateOr(b_.CreateOr(sign, b_.CreateShl(b_.CreateAdd(exponent, c32(h, 127 - 15)), c32(h, 23))),
                    shifted_mantissa);
    llvm::Value* bits =
        b_.CreateSelect(b_.CreateICmpEQ(exponent, c32(h, 0)), subnormal,
                        b_.CreateSelect(b_.CreateICmpEQ(exponent, c32(h, 31)), inf_nan, normal));
    return b_.CreateBitCast(bits, f32);
  }

  /// float -> bfloat16 bits (round to nearest even; NaN stays a quiet NaN), as i16.
  llvm::Value* float_to_bfloat16_bits(llvm::Value* f) {
    llvm::Value* x = b_.CreateBitCast(f, i32(f));
    llvm::Value* is_nan = b_.CreateICmpUGT(b_.CreateAnd(x, c32(f, 0x7fffffff)), c32(f, 0x7f800000));
    llvm::Value* nan_bits = b_.CreateOr(b_.CreateLShr(x, c32(f, 16)), c32(f, 0x40));
    llvm::Value* rounding =
        b_.CreateAdd(c32(f, 0x7fff), b_.CreateAnd(b_.CreateLShr(x, c32(f, 16)), c32(f, 1)));
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(x, rounding), c32(f, 16));
    return b_.CreateTrunc(b_.CreateSelect(is_nan, nan_bits, rounded), like(f, b_.getInt16Ty()));
  }

  llvm::Value* bfloat16_bits_to_float(llvm::Value* b16) {
    llvm::Value* x = b_.CreateShl(b_.CreateZExt(b16, like(b16, b_.getInt32Ty())), c32(b16, 16));
    return b_.CreateBitCast(x, like(b16, b_.getFloatTy()));
  }

  /// A float value rounded to the nearest half / bfloat16, back in float.
  llvm::Value* round_to_half(llvm::Value* f) { return half_bits_to_float(float_to_half_bits(f)); }
  llvm::Value* round_to_bfloat16(llvm::Value* f) { return bfloat16_bits_to_float(float_to_bfloat16_bits(f)); }

  /// double -> float rounding to odd (ir/dtype_arith.hpp's float_round_to_odd): rounding the result
  /// once more to a 16-bit type equals rounding the double directly.
  llvm::Value* double_to_float_round_to_odd(llvm::Value* d) {
    llvm::Type* f32 = like(d, b_.getFloatTy());
    llvm::Value* f = b_.CreateFPTrunc(d, f32);
    llvm::Value* back = b_.CreateFPExt(f, d->getType());
    llvm::Value* exact = b_.CreateFCmpOEQ(back, d);
    llvm::Value* is_nan = b_.CreateFCmpUNO(d, d);
    llvm::Value* is_inf = b_.CreateFCmpOEQ(fabs(f), llvm::ConstantFP::getInfinity(f32));
    llvm::Value* keep = b_.CreateOr(b_.CreateOr(exact, is_nan), is_inf);
    // Rounded away from zero: step one ulp back toward zero (the magnitude bits minus one).
    llvm::Value* bits = b_.CreateBitCast(f, i32(f));
    llvm::Value* too_big = b_.CreateFCmpOGT(fabs(back), fabs(d));
    bits = b_.CreateSelect(too_big, b_.CreateSub(bits, c32(f, 1)), bits);
    llvm::Value* odd = b_.CreateBitCast(b_.CreateOr(bits, c32(f, 1)), f32);
    return b_.CreateSelect(keep, f, odd);
  }

 private:
  llvm::Type* i32(llvm::Value* v) { return like(v, b_.getInt32Ty()); }
  llvm::Value* c32(llvm::Value* v, uint32_t value) { return llvm::ConstantInt::get(i32(v), value); }
  llvm::Value* round_even(llvm::Value* v) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, v); }
  llvm::Value* fabs(llvm::Value* v) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v); }

  llvm::IRBuilder<>& b_;
  bool has_f16c_;
};

}  // namespace loom::codegen
