// CodeGenLLVM's expressions: arithmetic with the interpreter's semantics (integers wrap, division
// by zero is a run-time error, INT_MIN / -1 wraps, shift amounts are taken modulo the width,
// float16/bfloat16 round after every operation), comparisons, ramps, lets, lazy if_then_else, and
// calls. Casts are in codegen_cast.hpp.
#pragma once

#include <cmath>
#include <string>

#include "loom/codegen/llvm/codegen_llvm.hpp"
#include "loom/codegen/llvm/math_lanes.hpp"
#include "loom/codegen/llvm/vector_math.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/te/warp_intrinsic.hpp"

namespace loom::codegen {

inline llvm::Value* CodeGenLLVM::float_constant(DType t, double value) {
  const double rounded = arith::round_double_to(value, arith::float_format_of(t));
  return llvm::ConstantFP::get(value_type(t), rounded);
}

inline llvm::Value* CodeGenLLVM::round_to(DType t, llvm::Value* v) {
  if (t.is_bfloat()) return floats_.round_to_bfloat16(v);
  if (t.is_float() && t.bits == 16) return floats_.round_to_half(v);
  return v;
}

inline llvm::Value* CodeGenLLVM::to_bool(llvm::Value* v) {
  llvm::Type* t = v->getType();
  if (t->getScalarType()->isIntegerTy(1)) return v;
  if (t->isFPOrFPVectorTy()) return builder_.CreateFCmpUNE(v, llvm::Constant::getNullValue(t));
  return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(t));
}

inline llvm::Value* CodeGenLLVM::any_lane(llvm::Value* mask) {
  if (!mask->getType()->isVectorTy()) return mask;
  return builder_.CreateOrReduce(mask);
}

inline llvm::Value* CodeGenLLVM::extend_to_i64(llvm::Value* v, DType t) {
  llvm::Type* target = with_lanes(i64_type(), t.lanes);
  if (v->getType() == target) return v;
  return t.is_int() ? builder_.CreateSExt(v, target) : builder_.CreateZExt(v, target);
}

// ---------------------------------------------------------------------------------------------
// Indices. Addresses are computed in 64 bits: for every access that is in bounds the value equals
// the one the IR's 32-bit arithmetic gives (an overflowing index is out of bounds either way), and
// 64-bit arithmetic without wrap-around lets LLVM see that consecutive iterations touch
// consecutive addresses, which is what its loop vectorizer needs.

inline llvm::Value* CodeGenLLVM::emit_index(const Expr& e) {
  const DType t = e.dtype();
  if (t.is_int()) {
    auto binary = [&](auto* op) { return std::pair{emit_index(op->a), emit_index(op->b)}; };
    switch (e.kind()) {
      case IRNodeKind::IntImm:
        return llvm::ConstantInt::get(i64_type(), static_cast<uint64_t>(e.as<IntImmNode>()->value), true);
      case IRNodeKind::Add: {
        auto [x, y] = binary(e.as<AddNode>());
        return builder_.CreateNSWAdd(x, y);
      }
      case IRNodeKind::Sub: {
        auto [x, y] = binary(e.as<SubNode>());
        return builder_.CreateNSWSub(x, y);
      }
      case IRNodeKind::Mul: {
        auto [x, y] = binary(e.as<MulNode>());
        return builder_.CreateNSWMul(x, y);
      }
      case IRNodeKind::Min: {
        auto [x, y] = binary(e.as<MinNode>());
        return builder_.CreateSelect(builder_.CreateICmpSLT(x, y), x, y);
      }
      case IRNodeKind::Max: {
        auto [x, y] = binary(e.as<MaxNode>());
        return builder_.CreateSelect(builder_.CreateICmpSGT(x, y), x, y);
      }
      case IRNodeKind::FloorDiv:
      case IRNodeKind::FloorMod: {
        const Expr& a = e.kind() == IRNodeKind::FloorDiv ? e.as<FloorDivNode>()->a : e.as<FloorModNode>()->a;
        const Expr& b = e.kind() == IRNodeKind::FloorDiv ? e.as<FloorDivNode>()->b : e.as<FloorModNode>()->b;
        const int64_t* c = as_const_int(b);
        if (!c || *c <= 0) break;
        llvm::Value* x = emit_index(a);
        llvm::Value* d = llvm::ConstantInt::get(x->getType(), static_cast<uint64_t>(*c));
        const bool pow2 = (*c & (*c - 1)) == 0;
        if (e.kind() == IRNodeKind::FloorDiv) {
          if (pow2)
            return builder_.CreateAShr(x, static_cast<uint64_t>(std::countr_zero(static_cast<uint64_t>(*c))));
          llvm::Value* r = builder_.CreateSRem(x, d);
          llvm::Value* negative = builder_.CreateICmpSLT(r, llvm::Constant::getNullValue(x->getType()));
          return builder_.CreateSub(builder_.CreateSDiv(x, d), builder_.CreateZExt(negative, x->getType()));
        }
        if (pow2)
          return builder_.CreateAnd(x, llvm::ConstantInt::get(x->getType(), static_cast<uint64_t>(*c - 1)));
        llvm::Value* r = builder_.CreateSRem(x, d);
        llvm::Value* negative = builder_.CreateICmpSLT(r, llvm::Constant::getNullValue(x->getType()));
        return builder_.CreateSelect(negative, builder_.CreateAdd(r, d), r);
      }
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        const unsigned lanes = static_cast<unsigned>(op->lanes);
        llvm::Value* base = builder_.CreateVectorSplat(lanes, emit_index(op->base));
        llvm::Value* stride = builder_.CreateVectorSplat(lanes, emit_index(op->stride));
        llvm::SmallVector<llvm::Constant*, 16> steps;
        for (unsigned i = 0; i < lanes; ++i) steps.push_back(builder_.getInt64(i));
        return builder_.CreateNSWAdd(base, builder_.CreateNSWMul(stride, llvm::ConstantVector::get(steps)));
      }
      case IRNodeKind::Broadcast: {
        const BroadcastNode* op = e.as<BroadcastNode>();
        return builder_.CreateVectorSplat(static_cast<unsigned>(op->lanes), emit_index(op->value));
      }
      case IRNodeKind::Cast: {
        const Expr& v = e.as<CastNode>()->value;
        if (v.dtype().is_int() && v.dtype().bits <= t.bits) return emit_index(v);  // a widening: exact
        break;
      }
      default: break;
    }
  }
  return extend_to_i64(emit(e), t);
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

inline llvm::Value* CodeGenLLVM::emit(const Expr& e) {
  internal_check(e.defined(), "LLVM backend: undefined expression");
  const DType t = e.dtype();
  switch (e.kind()) {
    case IRNodeKind::IntImm:
      return llvm::ConstantInt::get(value_type(t), static_cast<uint64_t>(e.as<IntImmNode>()->value));
    case IRNodeKind::FloatImm: return float_constant(t, e.as<FloatImmNode>()->value);
    case IRNodeKind::StringImm: return string_constant(e.as<StringImmNode>()->value);
    case IRNodeKind::Var: return lookup(e.as<VarNode>());
#define LOOM_BINARY_CASE(name, node) case IRNodeKind::name:
      LOOM_BINARY_EXPR_NODES(LOOM_BINARY_CASE)
#undef LOOM_BINARY_CASE
      return emit_binary(e);
    case IRNodeKind::Not: return builder_.CreateNot(to_bool(emit(e.as<NotNode>()->a)));
    case IRNodeKind::Select: {
      // Both branches are evaluated, as the IR node says (a division in either may fail).
      const SelectNode* op = e.as<SelectNode>();
      llvm::Value* c = to_bool(emit(op->condition));
      llvm::Value* a = emit(op->true_value);
      llvm::Value* b = emit(op->false_value);
      return builder_.CreateSelect(c, a, b);
    }
    case IRNodeKind::Cast: return emit_cast(t, e.as<CastNode>()->value);
    case IRNodeKind::Load: return emit_load(e.as<LoadNode>());
    case IRNodeKind::Ramp: return emit_ramp(e.as<RampNode>());
    case IRNodeKind::Broadcast: {
      const BroadcastNode* op = e.as<BroadcastNode>();
      return builder_.CreateVectorSplat(static_cast<unsigned>(op->lanes), emit(op->value));
    }
    case IRNodeKind::Call: return emit_call(e.as<CallNode>());
    case IRNodeKind::Let: return emit_let(e.as<LetNode>());
    case IRNodeKind::Reduce: not_lowered("Reduce");
    case IRNodeKind::ProducerLoad: not_lowered("ProducerLoad");
    default: break;
  }
  throw InternalError(cat("LLVM backend: cannot compile ", to_string(e)));
}

inline llvm::Value* CodeGenLLVM::emit_binary(const Expr& e) {
  Expr a, b;
  switch (e.kind()) {
#define LOOM_OPERANDS(name, node) \
  case IRNodeKind::name:          \
    a = e.as<node>()->a;          \
    b = e.as<node>()->b;          \
    break;
    LOOM_BINARY_EXPR_NODES(LOOM_OPERANDS)
#undef LOOM_OPERANDS
    default: throw InternalError("emit_binary on a non-binary node");
  }
  const IRNodeKind op = e.kind();
  switch (op) {
    case IRNodeKind::EQ:
    case IRNodeKind::NE:
    case IRNodeKind::LT:
    case IRNodeKind::LE:
    case IRNodeKind::GT:
    case IRNodeKind::GE: return emit_compare(op, a, b);
    case IRNodeKind::And: {
      llvm::Value* x = to_bool(emit(a));  // both sides are evaluated: And is not a short circuit
      return builder_.CreateAnd(x, to_bool(emit(b)));
    }
    case IRNodeKind::Or: {
      llvm::Value* x = to_bool(emit(a));
      return builder_.CreateOr(x, to_bool(emit(b)));
    }
    default: break;
  }
  const DType t = a.dtype();
  if (!t.is_float()) {
    if (arith::is_division(op)) return emit_int_division(e, op, a, b);
    llvm::Value* x = emit(a);
    llvm::Value* y = emit(b);
    const bool is_signed = t.is_int();
    switch (op) {
      case IRNodeKind::Add: return builder_.CreateAdd(x, y);
      case IRNodeKind::Sub: return builder_.CreateSub(x, y);
      case IRNodeKind::Mul: return builder_.CreateMul(x, y);
      case IRNodeKind::Min:
        return builder_.CreateSelect(is_signed ? builder_.CreateICmpSLT(x, y) : builder_.CreateICmpULT(x, y),
                                     x, y);
      case IRNodeKind::Max:
        return builder_.CreateSelect(is_signed ? builder_.CreateICmpSGT(x, y) : builder_.CreateICmpUGT(x, y),
                                     x, y);
      case IRNodeKind::BitwiseAnd: return builder_.CreateAnd(x, y);
      case IRNodeKind::BitwiseOr: return builder_.CreateOr(x, y);
      case IRNodeKind::BitwiseXor: return builder_.CreateXor(x, y);
      case IRNodeKind::ShiftLeft:
      case IRNodeKind::ShiftRight: {
        // The amount modulo the width, as ir/int_math.hpp defines it (LLVM makes a larger one
        // poison); a constant amount folds the mask away.
        llvm::Value* amount = builder_.CreateAnd(y, llvm::ConstantInt::get(y->getType(), t.bits - 1u));
        if (op == IRNodeKind::ShiftLeft) return builder_.CreateShl(x, amount);
        return is_signed ? builder_.CreateAShr(x, amount) : builder_.CreateLShr(x, amount);
      }
      default: break;
    }
    throw InternalError(cat("LLVM backend: integer ", kind_name(op)));
  }
  // Floats compute in float (float32, float16, bfloat16) or double, then round to their type.
  llvm::Value* x = emit(a);
  llvm::Value* y = emit(b);
  llvm::Value* r = nullptr;
  switch (op) {
    case IRNodeKind::Add: r = builder_.CreateFAdd(x, y); break;
    case IRNodeKind::Sub: r = builder_.CreateFSub(x, y); break;
    case IRNodeKind::Mul: r = builder_.CreateFMul(x, y); break;
    case IRNodeKind::Div: r = builder_.CreateFDiv(x, y); break;
    case IRNodeKind::Mod: r = builder_.CreateFRem(x, y); break;  // C's fmod
    case IRNodeKind::FloorDiv:
      r = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(x, y));
      break;
    case IRNodeKind::FloorMod: {
      llvm::Value* q = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(x, y));
      r = builder_.CreateFSub(x, builder_.CreateFMul(q, y));
      break;
    }
    // `a < b ? a : b`, as the interpreter (and C) computes it, NaN handling included.
    case IRNodeKind::Min: r = builder_.CreateSelect(builder_.CreateFCmpOLT(x, y), x, y); break;
    case IRNodeKind::Max: r = builder_.CreateSelect(builder_.CreateFCmpOGT(x, y), x, y); break;
    default: throw InternalError(cat("LLVM backend: float ", kind_name(op)));
  }
  return round_to(t, r);
}

inline llvm::Value* CodeGenLLVM::emit_compare(IRNodeKind op, const Expr& a, const Expr& b) {
  llvm::Value* x = emit(a);
  llvm::Value* y = emit(b);
  const DType t = a.dtype();
  if (t.is_float()) {
    switch (op) {
      case IRNodeKind::EQ: return builder_.CreateFCmpOEQ(x, y);
      case IRNodeKind::NE: return builder_.CreateFCmpUNE(x, y);
      case IRNodeKind::LT: return builder_.CreateFCmpOLT(x, y);
      case IRNodeKind::LE: return builder_.CreateFCmpOLE(x, y);
      case IRNodeKind::GT: return builder_.CreateFCmpOGT(x, y);
      case IRNodeKind::GE: return builder_.CreateFCmpOGE(x, y);
      default: break;
    }
  }
  const bool s = t.is_int();
  switch (op) {
    case IRNodeKind::EQ: return builder_.CreateICmpEQ(x, y);
    case IRNodeKind::NE: return builder_.CreateICmpNE(x, y);
    case IRNodeKind::LT: return s ? builder_.CreateICmpSLT(x, y) : builder_.CreateICmpULT(x, y);
    case IRNodeKind::LE: return s ? builder_.CreateICmpSLE(x, y) : builder_.CreateICmpULE(x, y);
    case IRNodeKind::GT: return s ? builder_.CreateICmpSGT(x, y) : builder_.CreateICmpUGT(x, y);
    case IRNodeKind::GE: return s ? builder_.CreateICmpSGE(x, y) : builder_.CreateICmpUGE(x, y);
    default: break;
  }
  throw InternalError(cat("LLVM backend: comparison ", kind_name(op)));
}

/// Integer Div, Mod, FloorDiv, FloorMod. A divisor that is not a non-zero constant is checked at
/// run time (in active lanes only); x / -1 is a wrapping negation (x86's idiv would trap on
/// INT_MIN / -1) and x % -1 is 0, as in the interpreter.
inline llvm::Value* CodeGenLLVM::emit_int_division(const Expr& e, IRNodeKind op, const Expr& a,
                                                   const Expr& b) {
  const DType t = a.dtype();
  const bool is_signed = t.is_int();
  const bool is_div = op == IRNodeKind::Div || op == IRNodeKind::FloorDiv;
  llvm::Value* x = emit(a);
  llvm::Type* type = x->getType();
  auto constant = [&](int64_t v) { return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), true); };
  const int64_t* c = as_const_int(b);
  if (c && is_signed && *c == -1) return is_div ? builder_.CreateSub(constant(0), x) : constant(0);
  if (c && *c > 0 && is_signed && (*c & (*c - 1)) == 0 &&
      (op == IRNodeKind::FloorDiv || op == IRNodeKind::FloorMod)) {
    // Floor division by a power of two is an arithmetic shift; the floor remainder a mask.
    if (op == IRNodeKind::FloorDiv)
      return builder_.CreateAShr(x, static_cast<uint64_t>(std::countr_zero(static_cast<uint64_t>(*c))));
    return builder_.CreateAnd(x, constant(*c - 1));
  }

  llvm::Value* y = emit(b);
  llvm::Value* minus_one = nullptr;
  if (!c || *c == 0) {
    llvm::Value* zero = builder_.CreateICmpEQ(y, constant(0));
    llvm::Value* active_zero = zero;
    if (mask_) {
      active_zero = zero->getType()->isVectorTy() ? builder_.CreateAnd(zero, mask_)
                                                  : builder_.CreateAnd(zero, any_lane(mask_));
    }
    fail_if(any_lane(active_zero),
            cat("integer division by zero in ", to_string(e), " (", e.dtype().str(),
                "): the divisor evaluated to 0; guard the division or make sure its divisor cannot be 0"));
    // Lanes that are masked off, or divide by -1, divide by 1 instead (their result is replaced).
    llvm::Value* replace = zero;
    if (is_signed) {
      minus_one = builder_.CreateICmpEQ(y, constant(-1));
      replace = builder_.CreateOr(replace, minus_one);
    }
    y = builder_.CreateSelect(replace, constant(1), y);
  }

  llvm::Value* r = nullptr;
  if (!is_signed) {
    r = is_div ? builder_.CreateUDiv(x, y) : builder_.CreateURem(x, y);
  } else if (op == IRNodeKind::Div) {
    r = builder_.CreateSDiv(x, y);
  } else if (op == IRNodeKind::Mod) {
    r = builder_.CreateSRem(x, y);
  } else {
    // Floor: when the remainder is non-zero and its sign differs from the divisor's, step down.
    llvm::Value* rem = builder_.CreateSRem(x, y);
    llvm::Value* adjust = builder_.CreateAnd(builder_.CreateICmpNE(rem, constant(0)),
                                             builder_.CreateICmpSLT(builder_.CreateXor(rem, y), constant(0)));
    r = op == IRNodeKind::FloorDiv
            ? builder_.CreateSub(builder_.CreateSDiv(x, y), builder_.CreateZExt(adjust, type))
            : builder_.CreateSelect(adjust, builder_.CreateAdd(rem, y), rem);
  }
  if (minus_one)
    r = builder_.CreateSelect(minus_one, is_div ? builder_.CreateSub(constant(0), x) : constant(0), r);
  return r;
}

inline llvm::Value* CodeGenLLVM::emit_ramp(const RampNode* op) {
  const DType t = op->dtype;
  const unsigned lanes = static_cast<unsigned>(op->lanes);
  llvm::Value* base = builder_.CreateVectorSplat(lanes, emit(op->base));
  llvm::Value* stride = builder_.CreateVectorSplat(lanes, emit(op->stride));
  llvm::SmallVector<llvm::Constant*, 16> steps;
  llvm::Type* element = value_type(t.element_of());
  for (unsigned i = 0; i < lanes; ++i) {
    steps.push_back(t.is_float() ? llvm::cast<llvm::Constant>(float_constant(t.element_of(), i))
                                 : llvm::ConstantInt::get(element, i));
  }
  llvm::Value* lane = llvm::ConstantVector::get(steps);
  if (!t.is_float()) return builder_.CreateAdd(base, builder_.CreateMul(stride, lane));
  // Lane i is base + i * stride, each operation rounded to the type.
  llvm::Value* step = round_to(t, builder_.CreateFMul(lane, stride));
  return round_to(t, builder_.CreateFAdd(base, step));
}

inline llvm::Value* CodeGenLLVM::emit_let(const LetNode* op) {
  if (op->var.dtype().is_handle()) {
    const VarNode* source = op->value.as<VarNode>();
    BufferBinding b{emit(op->value), -1, op->var.name()};
    if (source && buffers_.count(source) && !buffers_[source].empty()) b = buffers_[source].back();
    bind_buffer(op->var, b);
    llvm::Value* body = emit(op->body);
    unbind_buffer(op->var);
    return body;
  }
  llvm::Value* v = emit(op->value);
  bind(op->var, v);
  llvm::Value* body = emit(op->body);
  unbind(op->var);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Calls

/// Only the chosen branch is evaluated. A scalar condition branches; a vector condition evaluates
/// each branch with the lanes that chose it as the active mask (masked loads, checked divisions
/// in those lanes only), then selects lane by lane.
inline llvm::Value* CodeGenLLVM::emit_if_then_else(const CallNode* op) {
  llvm::Value* c = to_bool(emit(op->args[0]));
  if (!c->getType()->isVectorTy())
    return emit_branches(
        c, "ite", [&] { return emit(op->args[1]); }, [&] { return emit(op->args[2]); });
  llvm::Value* outer = mask_;
  mask_ = outer ? builder_.CreateAnd(outer, c) : c;
  llvm::Value* a = emit(op->args[1]);
  llvm::Value* not_c = builder_.CreateNot(c);
  mask_ = outer ? builder_.CreateAnd(outer, not_c) : not_c;
  llvm::Value* b = emit(op->args[2]);
  mask_ = outer;
  return builder_.CreateSelect(c, a, b);
}

inline llvm::Value* CodeGenLLVM::emit_reinterpret(const CallNode* op) {
  const DType from = op->args[0].dtype(), to = op->dtype;
  internal_check(from.bits == to.bits && from.lanes == to.lanes, "reinterpret from ", from.str(), " to ",
                 to.str());
  llvm::Value* v = emit(op->args[0]);
  // 16-bit floats live in float registers: go through their bit patterns.
  if (from.is_float() && from.bits == 16)
    v = from.is_bfloat() ? floats_.float_to_bfloat16_bits(v) : floats_.float_to_half_bits(v);
  if (to.is_float() && to.bits == 16) {
    llvm::Value* bits = builder_.CreateBitCast(v, with_lanes(builder_.getInt16Ty(), to.lanes));
    return to.is_bfloat() ? floats_.bfloat16_bits_to_float(bits) : floats_.half_bits_to_float(bits);
  }
  return builder_.CreateBitCast(v, value_type(to));
}

/// call_llvm_intrinsic: a call of the named, non-overloaded LLVM intrinsic that computes a value from
/// values (no memory, no side effects: the IR treats the call as pure). Operands and result are
/// bit-cast to and from the intrinsic's types when their sizes agree (an int32x16 operand passes
/// where the intrinsic takes <32 x bfloat>); an immediate operand must be an integer constant. The
/// target must enable the features the call names: LLVM would otherwise abort the process when it
/// cannot select the instruction. Every misuse is a loom::Error, none reaches LLVM.
inline llvm::Value* CodeGenLLVM::emit_llvm_intrinsic(const CallNode* op) {
  const auto* name = op->args.size() >= 2 ? op->args[0].as<StringImmNode>() : nullptr;
  const auto* features = op->args.size() >= 2 ? op->args[1].as<StringImmNode>() : nullptr;
  internal_check(name && features, "loom.llvm_intrinsic needs its name and features as strings");
  const std::string where = cat("kernel '", func_.name, "' calls the LLVM intrinsic '", name->value, "'");
  const llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(name->value);
  if (id == llvm::Intrinsic::not_intrinsic)
    throw Error(cat("kernel '", func_.name, "' calls '", name->value, "', which LLVM ", LLVM_VERSION_STRING,
                    " does not know as an intrinsic"));
  if (llvm::Intrinsic::isOverloaded(id))
    throw Error(cat(where,
                    ", which is overloaded (its types are not fixed by its name); call_llvm_intrinsic "
                    "takes only intrinsics with fixed types, such as the x86 ones"));
  if (const std::string f = target_.first_missing(features->value); !f.empty())
    throw Error(cat(where, ", which needs the CPU feature '", f, "'; the target (", target_.description(),
                    ") lacks it: build for a CPU that has it, or choose a schedule without this intrinsic "
                    "(lib::gemm: GemmConfig::dot = DotInstruction::MultiplyAdd)"));
  llvm::Function* decl = llvm::Intrinsic::getDeclaration(module_.get(), id);
  if (!decl->doesNotAccessMemory())
    throw Error(cat(where,
                    ", which reads or writes memory or has side effects; call_llvm_intrinsic takes "
                    "only intrinsics that compute a value from their operands"));
  llvm::FunctionType* type = decl->getFunctionType();
  const size_t n = op->args.size() - 2;
  if (type->getNumParams() != n)
    throw Error(cat(where, ", which takes ", type->getNumParams(), " operands; the call gives ", n));
  const llvm::DataLayout& layout = module_->getDataLayout();
  auto plain = [](llvm::Type* t) { return t->isIntOrIntVectorTy() || t->isFPOrFPVectorTy(); };
  auto fit = [&](llvm::Value* v, llvm::Type* want, const std::string& what) -> llvm::Value* {
    if (!plain(want))
      throw Error(cat(where, ": its ", what,
                      " is not an integer or float value (or vector of them), which "
                      "call_llvm_intrinsic cannot pass"));
    if (v->getType() == want) return v;
    if (layout.getTypeSizeInBits(v->getType()) != layout.getTypeSizeInBits(want))
      throw Error(cat(where, ": its ", what, " is ", layout.getTypeSizeInBits(want).getFixedValue(),
                      " bits, the call's is ", layout.getTypeSizeInBits(v->getType()).getFixedValue()));
    return builder_.CreateBitCast(v, want);
  };
  auto refuse_half = [&](DType t, const std::string& what) {
    if (t.is_float() && t.bits == 16)
      throw Error(cat(where, ": its ", what, " is ", t.str(),
                      " in the call; pass and take 16-bit floats as their bits (int16)"));
  };
  refuse_half(op->dtype, "result");
  if (!plain(type->getReturnType()))
    throw Error(cat(where,
                    ": its result is not an integer or float value (or vector of them), which "
                    "call_llvm_intrinsic cannot return"));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < n; ++i) {
    const Expr& arg = op->args[i + 2];
    const std::string what = cat("operand ", i);
    refuse_half(arg.dtype(), what);
    llvm::Type* want = type->getParamType(static_cast<unsigned>(i));
    if (decl->getAttributes().hasParamAttr(static_cast<unsigned>(i), llvm::Attribute::ImmArg)) {
      const int64_t* v = as_const_int(arg);
      if (!v || !want->isIntegerTy())
        throw Error(cat(where, ": its ", what, " is an immediate; pass an integer constant"));
      args.push_back(llvm::ConstantInt::get(want, static_cast<uint64_t>(*v), true));
      continue;
    }
    args.push_back(fit(emit(arg), want, what));
  }
  llvm::Value* result = builder_.CreateCall(decl, args);
  llvm::Type* call_type = value_type(op->dtype);
  if (layout.getTypeSizeInBits(result->getType()) != layout.getTypeSizeInBits(call_type))
    throw Error(cat(where, ": its result is ", layout.getTypeSizeInBits(result->getType()).getFixedValue(),
                    " bits, the call's is ", layout.getTypeSizeInBits(call_type).getFixedValue()));
  return result->getType() == call_type ? result : builder_.CreateBitCast(result, call_type);
}

inline llvm::Value* CodeGenLLVM::emit_math(const CallNode* op) {
  static const std::unordered_map<std::string, llvm::Intrinsic::ID> intrinsics = {
      {"exp", llvm::Intrinsic::exp},   {"exp2", llvm::Intrinsic::exp2},   {"log", llvm::Intrinsic::log},
      {"log2", llvm::Intrinsic::log2}, {"log10", llvm::Intrinsic::log10}, {"sqrt", llvm::Intrinsic::sqrt},
      {"sin", llvm::Intrinsic::sin},   {"cos", llvm::Intrinsic::cos},     {"floor", llvm::Intrinsic::floor},
      {"ceil", llvm::Intrinsic::ceil}, {"round", llvm::Intrinsic::round}, {"trunc", llvm::Intrinsic::trunc},
      {"abs", llvm::Intrinsic::fabs},  {"pow", llvm::Intrinsic::pow},
  };
  // No LLVM 19 intrinsic (or no portable lowering) for these: call libm's float or double version.
  static const std::unordered_set<std::string> libm = {"tan", "tanh", "erf"};
  const DType t = op->dtype;
  std::vector<llvm::Value*> args;
  for (const Expr& a : op->args) args.push_back(emit(a));
  llvm::Value* r = nullptr;
  // exp, log, tanh and erf of float and double: inline polynomials, so that vectors stay
  // vectors (and a loop's scalar remainder computes what its vector body does).
  if (VectorMath::handles(op->name, args[0]->getType())) {
    const MathTarget math{
        .avx512_zmm = target_.has_avx512_zmm,
        .round_instruction = target_.enables("sse4.1"),
        .avx512 = target_.enables("avx512f") && (target_.has_avx512_zmm || target_.enables("avx512vl"))};
    r = VectorMath(builder_, math).emit(op->name, args[0]);
  } else if (auto it = intrinsics.find(op->name); it != intrinsics.end()) {
    r = builder_.CreateIntrinsic(it->second, {args[0]->getType()}, args);
  } else {
    internal_check(libm.count(op->name) != 0, "emit_math: ", op->name);
    llvm::Type* scalar = value_type(t.element_of());
    const std::string symbol = scalar->isFloatTy() ? op->name + "f" : op->name;
    llvm::FunctionCallee fn =
        module_->getOrInsertFunction(symbol, llvm::FunctionType::get(scalar, {scalar}, false));
    if (t.lanes == 1) {
      r = builder_.CreateCall(fn, args);
    } else {
      r = llvm::PoisonValue::get(args[0]->getType());
      for (unsigned i = 0; i < static_cast<unsigned>(t.lanes); ++i) {
        llvm::Value* lane = builder_.CreateCall(fn, {builder_.CreateExtractElement(args[0], uint64_t{i})});
        r = builder_.CreateInsertElement(r, lane, uint64_t{i});
      }
    }
  }
  return round_to(t, r);
}

/// call_extern of a C function registered with register_extern_c: the registered signature, and
/// the interpreter's conversions of the arguments to it; the JIT links the name to the registered
/// address (backend/cpu/orc_jit.hpp), so a cached object file finds it again in another process.
inline llvm::Value* CodeGenLLVM::emit_extern_c(const CallNode* op) {
  ExternCFunction fn = ExternCRegistry::global().get(op->name);  // the error says how to register it
  if (fn.params.size() != op->args.size())
    throw Error(cat("extern C function '", op->name, "' takes ", fn.params.size(), " arguments but kernel '",
                    func_.name, "' calls it with ", op->args.size()));
  auto c_type = [&](DType t) -> llvm::Type* {
    if (t.is_handle()) return ptr_type();
    if (t.is_float()) return t.bits == 64 ? builder_.getDoubleTy() : builder_.getFloatTy();
    if (t.is_bool()) return builder_.getInt8Ty();  // a C bool is a byte holding 0 or 1
    return builder_.getIntNTy(t.bits);
  };
  std::vector<llvm::Value*> args;
  std::vector<llvm::Type*> types;
  for (size_t i = 0; i < op->args.size(); ++i) {
    const Expr& a = op->args[i];
    const DType p = fn.params[i];
    if (a.dtype().lanes > 1)
      throw Error(cat("kernel '", func_.name, "': extern C function '", op->name,
                      "' cannot take the vector argument ", to_string(a)));
    if (!p.is_float() && p.is_handle() != a.dtype().is_handle())
      throw Error(cat("argument ", i, " of extern C function '", op->name, "' is ", p.str(), " but kernel '",
                      func_.name, "' passes ", to_string(a), " of type ", a.dtype().str()));
    llvm::Type* type = c_type(p);
    llvm::Value* v = nullptr;
    if (p.is_handle()) {
      v = emit(a);
    } else if (p.is_float()) {
      v = a.dtype().is_float() ? emit(a) : emit_cast(p, a);
      if (v->getType() != type) v = builder_.CreateFPCast(v, type);
    } else if (a.dtype().is_float()) {
      v = emit_cast(p, a);  // float -> int saturates, as the interpreter's cast does
    } else {
      v = emit(a);
      if (v->getType() != type)
        v = a.dtype().is_int() ? builder_.CreateSExtOrTrunc(v, type) : builder_.CreateZExtOrTrunc(v, type);
    }
    args.push_back(v);
    types.push_back(type);
  }
  llvm::FunctionCallee callee =
      module_->getOrInsertFunction(op->name, llvm::FunctionType::get(c_type(fn.result), types, false));
  llvm::Value* r = builder_.CreateCall(callee, args);
  // The call's IR type may differ from the C result type: convert as a C assignment would.
  llvm::Type* want = value_type(op->dtype);
  if (r->getType() == want) return r;
  if (want->isFloatingPointTy() && r->getType()->isFloatingPointTy()) return builder_.CreateFPCast(r, want);
  if (want->isIntegerTy() && r->getType()->isIntegerTy())
    return fn.result.is_int() ? builder_.CreateSExtOrTrunc(r, want) : builder_.CreateZExtOrTrunc(r, want);
  throw Error(cat("kernel '", func_.name, "' uses the ", fn.result.str(), " result of extern C function '",
                  op->name, "' as ", op->dtype.str()));
}

inline llvm::Value* CodeGenLLVM::emit_call(const CallNode* op) {
  const std::string& name = op->name;
  auto arg_count = [&](size_t n) {
    internal_check(op->args.size() == n, "call ", name, " with ", op->args.size(), " arguments, expected ",
                   n);
  };
  if (name == intrinsic::likely) {
    arg_count(1);
    return emit(op->args[0]);
  }
  if (name == intrinsic::if_then_else) {
    arg_count(3);
    return emit_if_then_else(op);
  }
  if (name == intrinsic::reinterpret) {
    arg_count(1);
    return emit_reinterpret(op);
  }
  if (name == intrinsic::llvm_intrinsic) return emit_llvm_intrinsic(op);
  if (name == intrinsic::address_of) {
    arg_count(1);
    const LoadNode* load = op->args[0].as<LoadNode>();
    if (!load)
      throw Error(cat("kernel '", func_.name, "': address_of needs a Load, got ", to_string(op->args[0])));
    return address_of(load);
  }
  if (op->call_kind != CallKind::Extern && name != intrinsic::extern_stage) {
    if (name == "abs" && !op->dtype.is_float()) {
      arg_count(1);
      llvm::Value* v = emit(op->args[0]);
      if (!op->dtype.is_int()) return v;
      // abs(INT_MIN) wraps to INT_MIN, as in C and the interpreter.
      llvm::Value* negative = builder_.CreateICmpSLT(v, llvm::Constant::getNullValue(v->getType()));
      return builder_.CreateSelect(negative, builder_.CreateNeg(v), v);
    }
    if (is_math_function(name) && op->dtype.is_float()) {
      arg_count(name == "pow" ? 2 : 1);
      return emit_math(op);
    }
  }
  if (op->call_kind == CallKind::Extern) return emit_extern_c(op);
  // GPU-only constructs reach the CPU when a schedule made for a GPU is built for the CPU.
  if (name == intrinsic::thread_allreduce)
    throw Error(cat("kernel '", func_.name,
                    "' has a cross-thread reduction (a reduce axis bound to threadIdx), which only GPU "
                    "targets run: build it for Target::cuda_sim() or Target::cuda(), or leave the reduce "
                    "axis unbound (or split it and parallelize an outer data axis) for the CPU"));
  if (name == intrinsic::warp_intrinsic) {
    const StringImmNode* which = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>();
    throw Error(cat("kernel '", func_.name, "' calls the warp intrinsic '", which ? which->value : "?",
                    "', which only GPU targets run: build it for Target::cuda_sim() or Target::cuda(), "
                    "or tensorize with a CPU intrinsic"));
  }
  throw Error(
      cat("the LLVM backend cannot compile the call ", name, "(...) in kernel '", func_.name,
          "': it knows if_then_else, likely, reinterpret, address_of, abs, pow, exp, exp2, log, log2, "
          "log10, sqrt, sin, cos, tan, tanh, erf, floor, ceil, round, trunc, loom.extern_stage (as a "
          "statement), and call_extern of C functions registered with register_extern_c"));
}

}  // namespace loom::codegen
