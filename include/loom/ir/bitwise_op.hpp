// The bitwise operators users write on integer expressions: & | ^ << >> ~ and their names
// (bitwise_and, bitwise_or, bitwise_xor, shift_left, shift_right, bitwise_not). They take
// int8..int64 and uint8..uint64 only: a float or bool operand is an error that names it.
#pragma once

#include <string>

#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"

namespace loom {
namespace detail {

inline void require_integer_operand(const Expr& e, const char* side, const char* op_name) {
  if (!e.defined()) throw Error(cat("operator ", op_name, " applied to an undefined expression"));
  const DType t = e.dtype();
  if (t.is_int() || t.is_uint()) return;
  const std::string text = to_string(e);
  if (t.is_bool())
    throw Error(cat("operator ", op_name, " needs integer operands, but its ", side, " operand ", text,
                    " is bool; use &&, || and ! on conditions, or cast(i32, ", text, ") for its bit"));
  throw Error(cat("operator ", op_name, " needs integer operands, but its ", side, " operand ", text,
                  " has type ", t.str(), "; cast it to an integer type first, e.g. cast(i32, ", text,
                  "), or reinterpret(i32, ...) for a float's bits"));
}

template <typename Node>
Expr bitwise(Expr a, Expr b, const char* op_name) {
  require_integer_operand(a, "left", op_name);
  require_integer_operand(b, "right", op_name);
  match_types(a, b, op_name);
  return Node::make(std::move(a), std::move(b));
}

/// A shift has the type of the value shifted (the amount is converted to it, as C promotes
/// only the left operand). A constant amount must be in [0, bits); a computed one is taken
/// modulo bits at run time (int_math::shift_amount), the same in every backend.
template <typename Node>
Expr shift(Expr a, Expr b, const char* op_name) {
  require_integer_operand(a, "left", op_name);
  require_integer_operand(b, "right", op_name);
  if (a.dtype().lanes == 1 && b.dtype().lanes > 1) a = BroadcastNode::make(a, b.dtype().lanes);
  const DType t = a.dtype();
  if (b.dtype().lanes != 1 && b.dtype().lanes != t.lanes)
    throw Error(
        cat("operator ", op_name, " on vectors of different lanes: ", t.str(), " and ", b.dtype().str()));
  if (const int64_t* amount = as_const_int(b)) {
    const bool negative = b.dtype().is_int() && *amount < 0;
    if (negative || static_cast<uint64_t>(*amount) >= t.bits)
      throw Error(cat("operator ", op_name, ": shifting ", to_string(a), " (", t.element_of().str(), ") by ",
                      to_string(b), " is out of range; the amount must be in [0, ", int(t.bits),
                      "): shift by less, or cast the value to a wider type first"));
  }
  const DType amount_type = t.with_lanes(b.dtype().lanes);  // read before b is moved from
  b = cast(amount_type, std::move(b));
  if (b.dtype().lanes != t.lanes) b = BroadcastNode::make(std::move(b), t.lanes);
  return Node::make(std::move(a), std::move(b));
}

}  // namespace detail

/// Bitwise and, or, xor of two integer expressions (int8..int64, uint8..uint64; not bool or floats, which
/// throw loom::Error); the operands are promoted to one type as for arithmetic.
/// @{
inline Expr bitwise_and(Expr a, Expr b) {
  return detail::bitwise<BitwiseAndNode>(std::move(a), std::move(b), "&");
}
inline Expr bitwise_or(Expr a, Expr b) {
  return detail::bitwise<BitwiseOrNode>(std::move(a), std::move(b), "|");
}
inline Expr bitwise_xor(Expr a, Expr b) {
  return detail::bitwise<BitwiseXorNode>(std::move(a), std::move(b), "^");
}
/// @}
/// a << b, wrapping at a's width.
inline Expr shift_left(Expr a, Expr b) {
  return detail::shift<ShiftLeftNode>(std::move(a), std::move(b), "<<");
}
/// a >> b: arithmetic (sign-filling) for signed a, logical for unsigned a.
inline Expr shift_right(Expr a, Expr b) {
  return detail::shift<ShiftRightNode>(std::move(a), std::move(b), ">>");
}
/// ~a: every bit flipped (a ^ all ones; no node of its own).
inline Expr bitwise_not(Expr a) {
  detail::require_integer_operand(a, "only", "~");
  const DType t = a.dtype();
  return BitwiseXorNode::make(std::move(a), make_int_const(t, -1));
}

/// The C++ spellings of bitwise_and(), bitwise_or(), bitwise_xor(), shift_left(), shift_right() and
/// bitwise_not(), with their type rules and errors.
/// @{
inline Expr operator&(Expr a, Expr b) { return bitwise_and(std::move(a), std::move(b)); }
inline Expr operator|(Expr a, Expr b) { return bitwise_or(std::move(a), std::move(b)); }
inline Expr operator^(Expr a, Expr b) { return bitwise_xor(std::move(a), std::move(b)); }
inline Expr operator<<(Expr a, Expr b) { return shift_left(std::move(a), std::move(b)); }
inline Expr operator>>(Expr a, Expr b) { return shift_right(std::move(a), std::move(b)); }
inline Expr operator~(Expr a) { return bitwise_not(std::move(a)); }
/// @}

}  // namespace loom
