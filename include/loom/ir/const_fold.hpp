// Constant folding: evaluates a node whose operands are immediates with the semantics of its type
// (integers wrap at their width, float32 rounds every operation) or declines when it cannot.
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/ir/expr.hpp"
#include "loom/ir/int_math.hpp"

namespace loom {
namespace fold_detail {

/// The immediate behind e (e itself, or the value of a Broadcast), or null.
inline const ExprNode* immediate(const Expr& e) {
  const Expr* s = &e;
  if (const BroadcastNode* b = e.as<BroadcastNode>()) s = &b->value;
  if (s->as<IntImmNode>() || s->as<FloatImmNode>()) return s->get();
  return nullptr;
}

inline Expr with_lanes(Expr scalar, int lanes) {
  return lanes > 1 ? BroadcastNode::make(std::move(scalar), lanes) : scalar;
}

/// Floats Loom can fold exactly: float64 and float32. float16/bfloat16 arithmetic rounds through
/// float32 to a storage format the IR layer does not model, so it is left to run time.
inline bool foldable_float(DType t) { return t.code == TypeCode::Float && (t.bits == 64 || t.bits == 32); }

/// An immediate's value in the precision of its type (a float32 immediate may hold a double that
/// float32 cannot represent; the generated code sees it rounded).
inline double float_value(const FloatImmNode* imm) {
  return imm->dtype.bits == 32 ? static_cast<double>(static_cast<float>(imm->value)) : imm->value;
}

inline Expr fold_int(IRNodeKind kind, DType t, int64_t a, int64_t b) {
  const bool is_unsigned = t.code != TypeCode::Int;
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const bool less = is_unsigned ? ua < ub : a < b;
  auto make = [&](uint64_t v) { return IntImmNode::make(t, static_cast<int64_t>(v)); };
  auto make_bool = [](bool v) { return IntImmNode::make(boolean, v ? 1 : 0); };
  bool division = kind == IRNodeKind::Div || kind == IRNodeKind::Mod || kind == IRNodeKind::FloorDiv ||
                  kind == IRNodeKind::FloorMod;
  if (division) {
    if (b == 0) return Expr();  // undefined behaviour: leave it for the program to hit
    if (!is_unsigned && b == -1 && a == int_math::type_min(t)) return Expr();  // overflows in C too
  }
  switch (kind) {
    case IRNodeKind::Add: return make(ua + ub);
    case IRNodeKind::Sub: return make(ua - ub);
    case IRNodeKind::Mul: return make(ua * ub);
    case IRNodeKind::Div: return is_unsigned ? make(ua / ub) : make(static_cast<uint64_t>(a / b));
    case IRNodeKind::Mod: return is_unsigned ? make(ua % ub) : make(static_cast<uint64_t>(a % b));
    case IRNodeKind::FloorDiv:
      return is_unsigned ? make(ua / ub) : make(static_cast<uint64_t>(int_math::floordiv(a, b)));
    case IRNodeKind::FloorMod:
      return is_unsigned ? make(ua % ub) : make(static_cast<uint64_t>(int_math::floormod(a, b)));
    case IRNodeKind::Min: return make(less ? ua : ub);
    case IRNodeKind::Max: return make(less ? ub : ua);
    case IRNodeKind::EQ: return make_bool(a == b);
    case IRNodeKind::NE: return make_bool(a != b);
    case IRNodeKind::LT: return make_bool(less);
    case IRNodeKind::LE: return make_bool(less || a == b);
    case IRNodeKind::GT: return make_bool(!less && a != b);
    case IRNodeKind::GE: return make_bool(!less);
    case IRNodeKind::And: return make_bool(a != 0 && b != 0);
    case IRNodeKind::Or: return make_bool(a != 0 || b != 0);
    // Shift amounts are taken modulo the width, as every backend computes them (int_math.hpp).
    case IRNodeKind::BitwiseAnd: return make(static_cast<uint64_t>(int_math::bitwise_and(t, a, b)));
    case IRNodeKind::BitwiseOr: return make(static_cast<uint64_t>(int_math::bitwise_or(t, a, b)));
    case IRNodeKind::BitwiseXor: return make(static_cast<uint64_t>(int_math::bitwise_xor(t, a, b)));
    case IRNodeKind::ShiftLeft: return make(static_cast<uint64_t>(int_math::shift_left(t, a, b)));
    case IRNodeKind::ShiftRight: return make(static_cast<uint64_t>(int_math::shift_right(t, a, b)));
    default: return Expr();
  }
}

template <typename F>
Expr fold_float_in(IRNodeKind kind, DType t, F a, F b) {
  auto make = [&](F v) { return FloatImmNode::make(t, static_cast<double>(v)); };
  auto make_bool = [](bool v) { return IntImmNode::make(boolean, v ? 1 : 0); };
  switch (kind) {
    case IRNodeKind::Add: return make(a + b);
    case IRNodeKind::Sub: return make(a - b);
    case IRNodeKind::Mul: return make(a * b);
    case IRNodeKind::Div: return b == 0 ? Expr() : make(a / b);
    case IRNodeKind::Min:
    case IRNodeKind::Max:
      // NaN and the sign of min(0.0, -0.0) depend on the backend's min/max instruction.
      if (std::isnan(a) || std::isnan(b) || (a == b && std::signbit(a) != std::signbit(b))) return Expr();
      return make(kind == IRNodeKind::Min ? (a < b ? a : b) : (a < b ? b : a));
    case IRNodeKind::EQ: return make_bool(a == b);
    case IRNodeKind::NE: return make_bool(a != b);
    case IRNodeKind::LT: return make_bool(a < b);
    case IRNodeKind::LE: return make_bool(a <= b);
    case IRNodeKind::GT: return make_bool(a > b);
    case IRNodeKind::GE: return make_bool(a >= b);
    default: return Expr();  // Mod, FloorDiv, FloorMod of floats are left to the backend
  }
}

}  // namespace fold_detail

/// `a kind b` evaluated when both are immediates (or broadcast immediates) of one type;
/// undefined when they are not, or when folding would not be exact: division by zero,
/// INT_MIN / -1, float16/bfloat16 arithmetic, float min/max of NaN or signed zeros.
inline Expr fold_binary(IRNodeKind kind, const Expr& a, const Expr& b) {
  const ExprNode* x = fold_detail::immediate(a);
  const ExprNode* y = fold_detail::immediate(b);
  if (!x || !y || a.dtype() != b.dtype()) return Expr();
  DType t = x->dtype;
  Expr scalar;
  if (t.is_integral()) {
    scalar = fold_detail::fold_int(kind, t, static_cast<const IntImmNode*>(x)->value,
                                   static_cast<const IntImmNode*>(y)->value);
  } else if (fold_detail::foldable_float(t)) {
    double fa = fold_detail::float_value(static_cast<const FloatImmNode*>(x));
    double fb = fold_detail::float_value(static_cast<const FloatImmNode*>(y));
    scalar = t.bits == 32
                 ? fold_detail::fold_float_in<float>(kind, t, static_cast<float>(fa), static_cast<float>(fb))
                 : fold_detail::fold_float_in<double>(kind, t, fa, fb);
  }
  if (!scalar.defined()) return Expr();
  return fold_detail::with_lanes(scalar, a.dtype().lanes);
}

/// !a for an immediate boolean.
inline Expr fold_not(const Expr& a) {
  const ExprNode* x = fold_detail::immediate(a);
  if (!x || !x->dtype.is_bool()) return Expr();
  bool v = static_cast<const IntImmNode*>(x)->value != 0;
  return fold_detail::with_lanes(IntImmNode::make(boolean, v ? 0 : 1), a.dtype().lanes);
}

/// cast(t, value) for an immediate value, as C converts: integers wrap to the target width,
/// floats truncate toward zero. Declines conversions C leaves undefined (a float out of the
/// target's range, NaN to an integer) and conversions to or from float16/bfloat16.
inline Expr fold_cast(DType t, const Expr& value) {
  const ExprNode* x = fold_detail::immediate(value);
  if (!x || t.lanes != value.dtype().lanes) return Expr();
  DType to = t.element_of(), from = x->dtype;
  Expr scalar;
  if (from.is_integral()) {
    const auto* imm = static_cast<const IntImmNode*>(x);
    const bool from_u64 = from.code != TypeCode::Int && from.bits == 64;
    if (to.is_bool()) {
      scalar = IntImmNode::make(to, imm->value != 0 ? 1 : 0);
    } else if (to.is_integral()) {
      scalar = IntImmNode::make(to, imm->value);  // make() wraps to the target's width
    } else if (to.code == TypeCode::Float && to.bits == 64) {
      scalar = FloatImmNode::make(to, from_u64 ? static_cast<double>(static_cast<uint64_t>(imm->value))
                                               : static_cast<double>(imm->value));
    } else if (to.code == TypeCode::Float && to.bits == 32) {
      // Converted straight to float: going through double could round twice.
      float f =
          from_u64 ? static_cast<float>(static_cast<uint64_t>(imm->value)) : static_cast<float>(imm->value);
      scalar = FloatImmNode::make(to, static_cast<double>(f));
    }
  } else if (fold_detail::foldable_float(from)) {
    double v = fold_detail::float_value(static_cast<const FloatImmNode*>(x));
    if (to.is_bool()) {
      scalar = IntImmNode::make(to, v != 0 ? 1 : 0);
    } else if (to.is_integral()) {
      if (std::isnan(v)) return Expr();
      double tv = std::trunc(v);
      bool is_signed = to.code == TypeCode::Int;
      double lo = is_signed ? -std::ldexp(1.0, to.bits - 1) : 0.0;
      double hi_excl = std::ldexp(1.0, is_signed ? to.bits - 1 : to.bits);
      if (!(tv >= lo && tv < hi_excl)) return Expr();
      scalar = is_signed ? IntImmNode::make(to, static_cast<int64_t>(tv))
                         : IntImmNode::make(to, static_cast<int64_t>(static_cast<uint64_t>(tv)));
    } else if (to.code == TypeCode::Float && to.bits == 64) {
      scalar = FloatImmNode::make(to, v);
    } else if (to.code == TypeCode::Float && to.bits == 32) {
      scalar = FloatImmNode::make(to, static_cast<double>(static_cast<float>(v)));
    }
  }
  if (!scalar.defined()) return Expr();
  return fold_detail::with_lanes(scalar, t.lanes);
}

}  // namespace loom
