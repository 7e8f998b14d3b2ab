// Exact int64 helpers shared by the constant folder, the bound analysis and the simplifier:
// floor division, reduction of a value to a type's width, arithmetic that saturates, and the
// one definition of the bitwise operations that every evaluator and backend follows.
#pragma once

#include <cstdint>
#include <limits>

#include "loom/ir/dtype.hpp"

namespace loom::int_math {

/// a / b rounded toward negative infinity. b != 0, and not INT64_MIN / -1.
constexpr int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// The remainder of floordiv: it has the sign of b.
constexpr int64_t floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

constexpr int64_t gcd(int64_t a, int64_t b) {
  // Magnitudes as uint64 so that INT64_MIN does not overflow on negation.
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t r = x % y;
    x = y;
    y = r;
  }
  return x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? 0 : static_cast<int64_t>(x);
}

/// The low `bits` bits of v, sign-extended: two's-complement wrap-around at that width. The
/// linear forms keep coefficients this way for signed and unsigned types alike (a ring).
constexpr int64_t wrap_signed(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  int shift = 64 - bits;
  return static_cast<int64_t>(v << shift) >> shift;
}

/// v as integer type t stores it: sign-extended for Int, zero-extended for UInt and bool (the
/// bit pattern for uint64), as IntImmNode::make normalises.
constexpr int64_t wrap_to(DType t, uint64_t v) {
  if (t.bits >= 64) return static_cast<int64_t>(v);
  if (t.code == TypeCode::Int) return wrap_signed(v, t.bits);
  return static_cast<int64_t>(v & ((uint64_t{1} << t.bits) - 1));
}

/// The smallest and largest value of an integer type, with int64 limits standing for a
/// uint64 that does not fit (its largest value).
constexpr int64_t type_min(DType t) {
  if (t.code != TypeCode::Int) return 0;
  return t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1));
}
constexpr int64_t type_max(DType t) {
  if (t.bits >= 64) return std::numeric_limits<int64_t>::max();
  return t.code == TypeCode::Int ? (int64_t{1} << (t.bits - 1)) - 1 : (int64_t{1} << t.bits) - 1;
}

/// a + b and a * b clamped to [INT64_MIN, INT64_MAX] instead of wrapping.
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return a > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}
inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  return r;
}

/// a * b and -a with two's-complement wrap-around (never undefined behaviour).
constexpr int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
constexpr int64_t wrapping_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

/// The shift amount a shift by b uses in type t: b modulo t's bit width (its low bits). The
/// interpreter, constant folding, LLVM and CUDA all mask it, so that a shift by a negative or too
/// large amount gives the same value everywhere (C and LLVM leave it undefined).
constexpr int shift_amount(DType t, int64_t b) {
  return static_cast<int>(static_cast<uint64_t>(b) & (t.bits - 1u));
}

/// a & b, a | b, a ^ b, a << b, a >> b for values of integer type t normalised as wrap_to does.
/// `>>` is arithmetic for signed types and logical for unsigned ones; `<<` wraps at t's width.
constexpr int64_t bitwise_and(DType t, int64_t a, int64_t b) {
  return wrap_to(t, static_cast<uint64_t>(a) & static_cast<uint64_t>(b));
}
constexpr int64_t bitwise_or(DType t, int64_t a, int64_t b) {
  return wrap_to(t, static_cast<uint64_t>(a) | static_cast<uint64_t>(b));
}
constexpr int64_t bitwise_xor(DType t, int64_t a, int64_t b) {
  return wrap_to(t, static_cast<uint64_t>(a) ^ static_cast<uint64_t>(b));
}
constexpr int64_t shift_left(DType t, int64_t a, int64_t b) {
  return wrap_to(t, static_cast<uint64_t>(a) << shift_amount(t, b));
}
constexpr int64_t shift_right(DType t, int64_t a, int64_t b) {
  const int s = shift_amount(t, b);
  const uint64_t normalised = static_cast<uint64_t>(wrap_to(t, static_cast<uint64_t>(a)));
  if (t.code == TypeCode::Int) return static_cast<int64_t>(normalised) >> s;  // sign-extended: arithmetic
  return wrap_to(t, normalised >> s);  // zero-extended (or uint64's bits): logical
}

/// a * b when it fits in int64.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

}  // namespace loom::int_math
