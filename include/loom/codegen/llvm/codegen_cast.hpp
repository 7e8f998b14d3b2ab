// CodeGenLLVM's casts, with the interpreter's rules: float -> int truncates and saturates (NaN -> 0),
// integers convert modulo 2^bits, to bool is != 0, and every conversion to a 16-bit float rounds once.
#pragma once

#include "loom/codegen/llvm/codegen_llvm.hpp"

namespace loom::codegen {

inline llvm::Value* CodeGenLLVM::emit_cast(DType to, const Expr& value) {
  const DType from = value.dtype();
  llvm::Value* v = emit(value);
  if (from == to) return v;
  if (to.is_handle() || from.is_handle()) {
    if (to.is_handle() && from.is_handle()) return v;
    throw Error(
        cat("kernel '", func_.name, "': the LLVM backend cannot cast ", from.str(), " to ", to.str()));
  }
  llvm::Type* target = value_type(to);
  if (to.is_bool()) return to_bool(v);
  if (to.is_integral()) {
    if (from.is_float()) {
      const llvm::Intrinsic::ID id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      return builder_.CreateIntrinsic(id, {target, v->getType()}, {v});
    }
    const unsigned from_bits = v->getType()->getScalarSizeInBits(), to_bits = target->getScalarSizeInBits();
    if (to_bits < from_bits) return builder_.CreateTrunc(v, target);
    if (to_bits == from_bits) return v;
    return from.is_int() ? builder_.CreateSExt(v, target) : builder_.CreateZExt(v, target);
  }
  // To a float type.
  const bool to_f64 = !is_compute_f32(to), to_f32 = to.code == TypeCode::Float && to.bits == 32;
  if (from.is_integral()) {
    const bool s = from.is_int();
    if (to_f32 || to_f64) return s ? builder_.CreateSIToFP(v, target) : builder_.CreateUIToFP(v, target);
    // 16-bit targets go through double, as the interpreter does (exact up to 2^53).
    llvm::Type* f64 = with_lanes(builder_.getDoubleTy(), to.lanes);
    llvm::Value* d = s ? builder_.CreateSIToFP(v, f64) : builder_.CreateUIToFP(v, f64);
    return round_to(to, floats_.double_to_float_round_to_odd(d));
  }
  if (!is_compute_f32(from)) {  // from float64
    if (to_f32) return builder_.CreateFPTrunc(v, target);
    return round_to(to, floats_.double_to_float_round_to_odd(v));
  }
  if (to_f64) return builder_.CreateFPExt(v, target);
  return round_to(to, v);  // between float32, float16 and bfloat16, all held in float
}

}  // namespace loom::codegen
