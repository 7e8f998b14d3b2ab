// The operators and functions users write expressions with (+, <, min, select, exp, cast,
// ...). They promote types the way TVM does (an immediate adopts the other operand's type,
// int meets float as float, narrower meets wider as wider) and reject what cannot mix.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/ir/expr.hpp"

namespace loom {

/// A constant of type t (a Broadcast for vector types).
inline Expr make_const(DType t, double value) {
  DType e = t.element_of();
  Expr scalar =
      e.is_float() ? FloatImmNode::make(e, value) : IntImmNode::make(e, static_cast<int64_t>(value));
  return t.lanes > 1 ? BroadcastNode::make(scalar, t.lanes) : scalar;
}
/// A constant of type t holding the integer `value` (a float constant for float types, a Broadcast for
/// vectors).
inline Expr make_int_const(DType t, int64_t value) {
  DType e = t.element_of();
  Expr scalar = e.is_float() ? FloatImmNode::make(e, static_cast<double>(value)) : IntImmNode::make(e, value);
  return t.lanes > 1 ? BroadcastNode::make(scalar, t.lanes) : scalar;
}
/// The zero of type t (a Broadcast of zero for vector types).
inline Expr make_zero(DType t) { return make_int_const(t, 0); }

/// The integer value of a constant (or a broadcast constant), if it is one.
inline const int64_t* as_const_int(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (const IntImmNode* imm = e.as<IntImmNode>()) return &imm->value;
  if (const BroadcastNode* b = e.as<BroadcastNode>()) return as_const_int(b->value);
  return nullptr;
}
/// The floating-point value of a float constant (or a broadcast one), if it is one; otherwise nullptr.
inline const double* as_const_float(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (const FloatImmNode* imm = e.as<FloatImmNode>()) return &imm->value;
  if (const BroadcastNode* b = e.as<BroadcastNode>()) return as_const_float(b->value);
  return nullptr;
}
/// True when `e` is an integer constant (or broadcast constant) equal to `value`.
inline bool is_const_int(const Expr& e, int64_t value) {
  const int64_t* v = as_const_int(e);
  return v && *v == value;
}
/// Constant tests that see through Broadcast: is_zero() and is_one() accept integer and float constants.
/// @{
inline bool is_zero(const Expr& e) {
  if (is_const_int(e, 0)) return true;
  const double* f = as_const_float(e);
  return f && *f == 0.0;
}
inline bool is_one(const Expr& e) {
  if (is_const_int(e, 1)) return true;
  const double* f = as_const_float(e);
  return f && *f == 1.0;
}
inline bool is_const(const Expr& e) { return as_const_int(e) || as_const_float(e); }
/// @}

/// Converts e to type t: constants fold, scalars broadcast to vectors.
inline Expr cast(DType t, Expr e) {
  if (e.dtype() == t) return e;
  if (const int64_t* v = as_const_int(e)) {
    if (e.dtype().is_bool() || !t.is_bool()) {
      if (!e.dtype().is_float()) {
        int64_t value = *v;
        if (t.is_bool()) value = value != 0;
        return make_int_const(t, value);
      }
    }
    if (t.is_bool()) return make_int_const(t, *v != 0);
    return make_int_const(t, *v);
  }
  if (const double* f = as_const_float(e)) {
    if (t.is_float()) return make_const(t, *f);
    if (t.is_bool()) return make_int_const(t, *f != 0.0);
    return make_int_const(t, static_cast<int64_t>(*f));
  }
  if (t.lanes != e.dtype().lanes) {
    internal_check(e.dtype().lanes == 1, "cannot cast ", e.dtype().str(), " to ", t.str());
    e = BroadcastNode::make(cast(t.element_of(), e), t.lanes);
    return e;
  }
  return CastNode::make(t, e);
}

namespace detail {

inline bool is_imm(const Expr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

/// Brings a and b to one type, as TVM's BinaryOpMatchTypes does.
inline void match_types(Expr& a, Expr& b, const char* op_name) {
  if (!a.defined() || !b.defined())
    throw Error(cat("operator ", op_name, " applied to an undefined expression"));
  DType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return;
  if (ta.is_handle() || tb.is_handle())
    throw Error(cat("operator ", op_name, " cannot combine ", ta.str(), " and ", tb.str()));
  // Scalars meet vectors by broadcasting.
  if (ta.lanes != tb.lanes) {
    if (ta.lanes == 1) {
      a = BroadcastNode::make(a, tb.lanes);
    } else if (tb.lanes == 1) {
      b = BroadcastNode::make(b, ta.lanes);
    } else {
      throw Error(cat("operator ", op_name, " on vectors of different lanes: ", ta.str(), " and ", tb.str()));
    }
    ta = a.dtype();
    tb = b.dtype();
    if (ta == tb) return;
  }
  auto element_imm = [](const Expr& e) {
    if (is_imm(e)) return true;
    const BroadcastNode* br = e.as<BroadcastNode>();
    return br && is_imm(br->value);
  };
  bool imm_a = element_imm(a), imm_b = element_imm(b);
  // An immediate adopts the type of the other side, unless it is a float meeting an int.
  if (imm_a && !imm_b && !(ta.is_float() && !tb.is_float())) {
    a = cast(tb, a);
    return;
  }
  if (imm_b && !imm_a && !(tb.is_float() && !ta.is_float())) {
    b = cast(ta, b);
    return;
  }
  if (ta.is_float() && !tb.is_float()) {
    b = cast(ta, b);
  } else if (!ta.is_float() && tb.is_float()) {
    a = cast(tb, a);
  } else if (ta.is_float() && tb.is_float()) {
    if (ta.bits == tb.bits)  // float16 meets bfloat16: compute in float32
    {
      a = cast(f32.with_lanes(ta.lanes), a);
      b = cast(f32.with_lanes(ta.lanes), b);
    } else if (ta.bits > tb.bits) {
      b = cast(ta, b);
    } else {
      a = cast(tb, a);
    }
  } else {
    // Two integer types: the wider wins; at equal width signed wins; bool widens to the other.
    bool a_wins = ta.is_bool()         ? false
                  : tb.is_bool()       ? true
                  : ta.bits != tb.bits ? ta.bits > tb.bits
                                       : ta.is_int();
    if (a_wins) {
      b = cast(ta, b);
    } else {
      a = cast(tb, a);
    }
  }
}

template <typename Node>
Expr binary(Expr a, Expr b, const char* op_name) {
  match_types(a, b, op_name);
  return Node::make(std::move(a), std::move(b));
}

inline void require_bool(const Expr& e, const char* what) {
  if (!e.dtype().is_bool())
    throw Error(cat(what, " needs a boolean condition, got an expression of type ", e.dtype().str(),
                    "; compare it explicitly, e.g. (x != 0)"));
}

}  // namespace detail

/// Arithmetic and comparison of expressions. The operands are promoted to one type first (an immediate
/// adopts the other operand's type, int with float gives float, the wider integer wins); throws loom::Error
/// for an undefined operand, a handle, or vectors of different lanes. Comparisons give bool.
/// @{
inline Expr operator+(Expr a, Expr b) { return detail::binary<AddNode>(std::move(a), std::move(b), "+"); }
inline Expr operator-(Expr a, Expr b) { return detail::binary<SubNode>(std::move(a), std::move(b), "-"); }
inline Expr operator*(Expr a, Expr b) { return detail::binary<MulNode>(std::move(a), std::move(b), "*"); }
/// Truncating division for integers, as in C++; use floordiv for index arithmetic.
inline Expr operator/(Expr a, Expr b) { return detail::binary<DivNode>(std::move(a), std::move(b), "/"); }
inline Expr operator%(Expr a, Expr b) { return detail::binary<ModNode>(std::move(a), std::move(b), "%"); }
inline Expr operator-(Expr a) { return make_zero(a.dtype()) - a; }
inline Expr operator<(Expr a, Expr b) { return detail::binary<LTNode>(std::move(a), std::move(b), "<"); }
inline Expr operator<=(Expr a, Expr b) { return detail::binary<LENode>(std::move(a), std::move(b), "<="); }
inline Expr operator>(Expr a, Expr b) { return detail::binary<GTNode>(std::move(a), std::move(b), ">"); }
inline Expr operator>=(Expr a, Expr b) { return detail::binary<GENode>(std::move(a), std::move(b), ">="); }
inline Expr operator==(Expr a, Expr b) { return detail::binary<EQNode>(std::move(a), std::move(b), "=="); }
inline Expr operator!=(Expr a, Expr b) { return detail::binary<NENode>(std::move(a), std::move(b), "!="); }
/// @}
/// Logical and, or, not of bool expressions; throws loom::Error for a non-bool operand (compare it
/// explicitly, e.g. `x != 0`).
/// @{
inline Expr operator&&(Expr a, Expr b) {
  detail::require_bool(a, "&&");
  detail::require_bool(b, "&&");
  return detail::binary<AndNode>(std::move(a), std::move(b), "&&");
}
inline Expr operator||(Expr a, Expr b) {
  detail::require_bool(a, "||");
  detail::require_bool(b, "||");
  return detail::binary<OrNode>(std::move(a), std::move(b), "||");
}
inline Expr operator!(Expr a) {
  detail::require_bool(a, "!");
  return NotNode::make(std::move(a));
}
/// @}

/// Division rounding toward negative infinity, and the matching non-negative remainder for a positive
/// divisor: the index arithmetic of split loops. Operands promote as for `/`.
/// @{
inline Expr floordiv(Expr a, Expr b) {
  return detail::binary<FloorDivNode>(std::move(a), std::move(b), "floordiv");
}
inline Expr floormod(Expr a, Expr b) {
  return detail::binary<FloorModNode>(std::move(a), std::move(b), "floormod");
}
/// @}
/// Division rounding toward zero and its remainder (C semantics), the same as `/` and `%` on integers.
/// @{
inline Expr truncdiv(Expr a, Expr b) {
  return detail::binary<DivNode>(std::move(a), std::move(b), "truncdiv");
}
inline Expr truncmod(Expr a, Expr b) {
  return detail::binary<ModNode>(std::move(a), std::move(b), "truncmod");
}
/// @}
/// The smaller and the larger of two expressions, promoted to one type as for `+`.
/// Templates rather than (Expr, Expr) so that a braced list never converts to Expr here:
/// min(x, {k}) must reach the reduction min of te/reduction.hpp, not this one.
/// @{
template <typename A, typename B,
          typename = std::enable_if_t<std::is_convertible_v<A, Expr> && std::is_convertible_v<B, Expr>>>
Expr min(A a, B b) {
  return detail::binary<MinNode>(Expr(std::move(a)), Expr(std::move(b)), "min");
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_convertible_v<A, Expr> && std::is_convertible_v<B, Expr>>>
Expr max(A a, B b) {
  return detail::binary<MaxNode>(Expr(std::move(a)), Expr(std::move(b)), "max");
}
/// @}

/// Both branches are evaluated; prefer if_then_else when a branch may read out of bounds.
inline Expr select(Expr condition, Expr true_value, Expr false_value) {
  detail::require_bool(condition, "select");
  detail::match_types(true_value, false_value, "select");
  if (condition.dtype().lanes == 1 && true_value.dtype().lanes > 1)
    condition = BroadcastNode::make(condition, true_value.dtype().lanes);
  return SelectNode::make(std::move(condition), std::move(true_value), std::move(false_value));
}

/// Only the chosen branch is evaluated (the zero padding of a convolution relies on it).
inline Expr if_then_else(Expr condition, Expr true_value, Expr false_value) {
  detail::require_bool(condition, "if_then_else");
  detail::match_types(true_value, false_value, "if_then_else");
  DType t = true_value.dtype();
  return CallNode::make(t, intrinsic::if_then_else,
                        {std::move(condition), std::move(true_value), std::move(false_value)});
}

/// Marks a condition that is almost always true (the guard of a non-dividing split).
inline Expr likely(Expr condition) {
  DType t = condition.dtype();  // read before the move below
  return CallNode::make(t, intrinsic::likely, {std::move(condition)});
}

/// The conjunction of all conditions (true when there are none).
inline Expr all(const std::vector<Expr>& conditions) {
  Expr result;
  for (const Expr& c : conditions)
    result = result.defined() ? (result && c) : (detail::require_bool(c, "all"), c);
  return result.defined() ? result : Expr(true);
}
/// all() over the arguments, each a bool Expr.
template <typename... Es>
Expr all(Expr first, Es... rest) {
  return all(std::vector<Expr>{std::move(first), Expr(std::move(rest))...});
}
/// The disjunction of all conditions (false when there are none).
inline Expr any(const std::vector<Expr>& conditions) {
  Expr result;
  for (const Expr& c : conditions)
    result = result.defined() ? (result || c) : (detail::require_bool(c, "any"), c);
  return result.defined() ? result : Expr(false);
}
/// any() over the arguments, each a bool Expr.
template <typename... Es>
Expr any(Expr first, Es... rest) {
  return any(std::vector<Expr>{std::move(first), Expr(std::move(rest))...});
}

namespace detail {
inline Expr float_call(const char* name, Expr x) {
  if (!x.dtype().is_float())
    throw Error(cat(name, "() needs a floating-point argument, got ", x.dtype().str(), "; write ", name,
                    "(cast(f32, x))"));
  DType t = x.dtype();
  return CallNode::make(t, name, {std::move(x)});
}
}  // namespace detail

/// Elementwise math of floating-point expressions, evaluated in the expression's type (float16 and
/// bfloat16 through float32); throws loom::Error for an integer argument: cast it first, exp(cast(f32, x)).
/// rsqrt is 1 / sqrt(x), sigmoid 1 / (1 + exp(-x)).
/// @{
inline Expr exp(Expr x) { return detail::float_call("exp", std::move(x)); }
inline Expr exp2(Expr x) { return detail::float_call("exp2", std::move(x)); }
inline Expr log(Expr x) { return detail::float_call("log", std::move(x)); }
inline Expr log2(Expr x) { return detail::float_call("log2", std::move(x)); }
inline Expr log10(Expr x) { return detail::float_call("log10", std::move(x)); }
inline Expr sqrt(Expr x) { return detail::float_call("sqrt", std::move(x)); }
inline Expr rsqrt(Expr x) { return make_const(x.dtype(), 1.0) / sqrt(x); }
inline Expr sin(Expr x) { return detail::float_call("sin", std::move(x)); }
inline Expr cos(Expr x) { return detail::float_call("cos", std::move(x)); }
inline Expr tan(Expr x) { return detail::float_call("tan", std::move(x)); }
inline Expr tanh(Expr x) { return detail::float_call("tanh", std::move(x)); }
inline Expr erf(Expr x) { return detail::float_call("erf", std::move(x)); }
inline Expr floor(Expr x) { return detail::float_call("floor", std::move(x)); }
inline Expr ceil(Expr x) { return detail::float_call("ceil", std::move(x)); }
inline Expr round(Expr x) { return detail::float_call("round", std::move(x)); }
inline Expr trunc(Expr x) { return detail::float_call("trunc", std::move(x)); }
inline Expr sigmoid(Expr x) {
  Expr one = make_const(x.dtype(), 1.0);
  return one / (one + exp(-x));
}
/// @}
/// x raised to the power y, both promoted to one floating-point type; throws loom::Error for integers.
inline Expr pow(Expr x, Expr y) {
  detail::match_types(x, y, "pow");
  if (!x.dtype().is_float()) throw Error(cat("pow() needs floating-point arguments, got ", x.dtype().str()));
  DType t = x.dtype();
  return CallNode::make(t, "pow", {std::move(x), std::move(y)});
}
/// The absolute value; an unsigned or bool expression is returned unchanged.
inline Expr abs(Expr x) {
  if (x.dtype().is_uint() || x.dtype().is_bool()) return x;
  DType t = x.dtype();
  return CallNode::make(t, "abs", {std::move(x)});
}

}  // namespace loom
