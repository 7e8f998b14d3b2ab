// The arithmetic of every Loom dtype: integer wrap-around, C and floor division, per-operation
// rounding of float32/float16/bfloat16, casts, and memory codecs. The reference interpreter computes
// with it, and code generators fold constants with it, so both agree on every value.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "loom/ir/dtype.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/int_math.hpp"
#include "loom/ir/node_kinds.hpp"

namespace loom::arith {

// ---------------------------------------------------------------------------------------------
// Integers. Every integral value (int8..int64, uint8..uint64, bool) travels as an int64_t that is
// normalised to its type: sign-extended for signed types, zero-extended for unsigned ones, and
// the raw bit pattern for uint64. Signed int64 comparisons and divisions are then correct for
// every type but uint64, which needs unsigned ones.

struct IntFormat {
  int bits = 32;
  bool is_signed = true;

  static IntFormat of(DType t) { return IntFormat{t.bits, t.code == TypeCode::Int}; }
  bool is_u64() const { return !is_signed && bits == 64; }
  bool is_bool() const { return bits == 1; }
  DType dtype() const { return DType(is_signed ? TypeCode::Int : TypeCode::UInt, bits); }

  /// Reduces a two's-complement result to this type's width (the wrap-around of C's unsigned
  /// arithmetic, which is also what LLVM and CUDA do for signed overflow in practice).
  int64_t wrap(uint64_t v) const {
    if (bits == 64) return static_cast<int64_t>(v);
    if (is_signed) {
      int shift = 64 - bits;
      return static_cast<int64_t>(v << shift) >> shift;
    }
    return static_cast<int64_t>(v & ((uint64_t{1} << bits) - 1));
  }
  int64_t min_value() const {
    if (!is_signed) return 0;
    return bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  }
  /// The largest value (for uint64 its bit pattern, -1).
  int64_t max_value() const {
    if (bits == 64) return is_signed ? std::numeric_limits<int64_t>::max() : -1;
    return is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  }
};

inline constexpr bool is_division(IRNodeKind op) {
  return op == IRNodeKind::Div || op == IRNodeKind::Mod || op == IRNodeKind::FloorDiv ||
         op == IRNodeKind::FloorMod;
}

/// a (op) b for integral operands of format t. Division by zero is the caller's to reject.
template <IRNodeKind Op>
inline int64_t int_binary(int64_t a, int64_t b, IntFormat t) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const bool unsigned_compare = t.is_u64();
  if constexpr (Op == IRNodeKind::Add) return t.wrap(ua + ub);
  if constexpr (Op == IRNodeKind::Sub) return t.wrap(ua - ub);
  if constexpr (Op == IRNodeKind::Mul) return t.wrap(ua * ub);
  if constexpr (Op == IRNodeKind::Div || Op == IRNodeKind::FloorDiv) {
    if (unsigned_compare) return static_cast<int64_t>(ua / ub);
    // INT64_MIN / -1 traps on x86; as a wrapping negation it is INT64_MIN again.
    if (b == -1) return t.wrap(0 - ua);
    int64_t q = a / b;
    if constexpr (Op == IRNodeKind::FloorDiv) {
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
    }
    return q;
  }
  if constexpr (Op == IRNodeKind::Mod || Op == IRNodeKind::FloorMod) {
    if (unsigned_compare) return static_cast<int64_t>(ua % ub);
    if (b == -1) return 0;
    int64_t r = a % b;
    if constexpr (Op == IRNodeKind::FloorMod) {
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
    }
    return r;
  }
  if constexpr (Op == IRNodeKind::Min) return (unsigned_compare ? ua < ub : a < b) ? a : b;
  if constexpr (Op == IRNodeKind::Max) return (unsigned_compare ? ua > ub : a > b) ? a : b;
  if constexpr (Op == IRNodeKind::EQ) return a == b;
  if constexpr (Op == IRNodeKind::NE) return a != b;
  if constexpr (Op == IRNodeKind::LT) return unsigned_compare ? ua < ub : a < b;
  if constexpr (Op == IRNodeKind::LE) return unsigned_compare ? ua <= ub : a <= b;
  if constexpr (Op == IRNodeKind::GT) return unsigned_compare ? ua > ub : a > b;
  if constexpr (Op == IRNodeKind::GE) return unsigned_compare ? ua >= ub : a >= b;
  if constexpr (Op == IRNodeKind::And) return a != 0 && b != 0;
  if constexpr (Op == IRNodeKind::Or) return a != 0 || b != 0;
  if constexpr (Op == IRNodeKind::BitwiseAnd) return int_math::bitwise_and(t.dtype(), a, b);
  if constexpr (Op == IRNodeKind::BitwiseOr) return int_math::bitwise_or(t.dtype(), a, b);
  if constexpr (Op == IRNodeKind::BitwiseXor) return int_math::bitwise_xor(t.dtype(), a, b);
  if constexpr (Op == IRNodeKind::ShiftLeft) return int_math::shift_left(t.dtype(), a, b);
  if constexpr (Op == IRNodeKind::ShiftRight) return int_math::shift_right(t.dtype(), a, b);
}

// ---------------------------------------------------------------------------------------------
// Floats. Every float value travels as a double holding a value exactly representable in its
// type. Each operation converts its operands to the type's compute precision (float for float32,
// float16 and bfloat16; double for float64), computes once, and rounds the result back, so
// float32 code gives the bits a float32 machine gives. float16/bfloat16 results computed in
// float and rounded again are correctly rounded for + - * / sqrt: float has more than twice
// their precision plus two bits.

enum class FloatFormat : uint8_t { F64, F32, F16, BF16 };

inline FloatFormat float_format_of(DType t) {
  if (t.is_bfloat()) return FloatFormat::BF16;
  if (t.bits == 16) return FloatFormat::F16;
  if (t.bits == 32) return FloatFormat::F32;
  return FloatFormat::F64;
}

template <FloatFormat F>
struct FloatTraits;
template <>
struct FloatTraits<FloatFormat::F64> {
  using Compute = double;
  static double round(double v) { return v; }
};
template <>
struct FloatTraits<FloatFormat::F32> {
  using Compute = float;
  static double round(float v) { return v; }
};
template <>
struct FloatTraits<FloatFormat::F16> {
  using Compute = float;
  static double round(float v) { return half_bits_to_float(float_to_half_bits(v)); }
};
template <>
struct FloatTraits<FloatFormat::BF16> {
  using Compute = float;
  static double round(float v) { return bfloat16_bits_to_float(float_to_bfloat16_bits(v)); }
};

/// double -> float rounding to odd: truncate, then set the last bit when anything was lost.
/// Rounding that float once more to a 16-bit type then equals rounding the double directly
/// (no double-rounding error), because float keeps more than two extra bits.
inline float float_round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || std::isnan(d) || std::isinf(f)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return bits_float(float_bits(f) | 1u);
}

/// Rounds any double to the nearest value of format F (ties to even).
template <FloatFormat F>
inline double round_double_to(double v) {
  if constexpr (F == FloatFormat::F64) return v;
  if constexpr (F == FloatFormat::F32) return static_cast<float>(v);
  if constexpr (F == FloatFormat::F16 || F == FloatFormat::BF16)
    return FloatTraits<F>::round(float_round_to_odd(v));
}

inline double round_double_to(double v, FloatFormat f) {
  switch (f) {
    case FloatFormat::F64: return v;
    case FloatFormat::F32: return round_double_to<FloatFormat::F32>(v);
    case FloatFormat::F16: return round_double_to<FloatFormat::F16>(v);
    case FloatFormat::BF16: return round_double_to<FloatFormat::BF16>(v);
  }
  return v;
}

/// a (op) b for float operands of format F. Comparisons and logic are handled by
/// float_compare; min/max follow `a < b ? a : b` (a NaN in b is returned, as C code would).
template <IRNodeKind Op, FloatFormat F>
inline double float_binary(double a, double b) {
  using C = typename FloatTraits<F>::Compute;
  const C x = static_cast<C>(a), y = static_cast<C>(b);
  C r{};
  if constexpr (Op == IRNodeKind::Add) r = x + y;
  if constexpr (Op == IRNodeKind::Sub) r = x - y;
  if constexpr (Op == IRNodeKind::Mul) r = x * y;
  if constexpr (Op == IRNodeKind::Div) r = x / y;
  if constexpr (Op == IRNodeKind::Mod) r = std::fmod(x, y);
  if constexpr (Op == IRNodeKind::FloorDiv) r = std::floor(x / y);
  if constexpr (Op == IRNodeKind::FloorMod) r = x - std::floor(x / y) * y;
  if constexpr (Op == IRNodeKind::Min) r = x < y ? x : y;
  if constexpr (Op == IRNodeKind::Max) r = x > y ? x : y;
  return FloatTraits<F>::round(r);
}

template <IRNodeKind Op>
inline int64_t float_compare(double a, double b) {
  if constexpr (Op == IRNodeKind::EQ) return a == b;
  if constexpr (Op == IRNodeKind::NE) return a != b;
  if constexpr (Op == IRNodeKind::LT) return a < b;
  if constexpr (Op == IRNodeKind::LE) return a <= b;
  if constexpr (Op == IRNodeKind::GT) return a > b;
  if constexpr (Op == IRNodeKind::GE) return a >= b;
}

// ---------------------------------------------------------------------------------------------
// Casts (C semantics where C defines them).

/// Integer -> float of format F, rounded to nearest. Conversions to float16/bfloat16 go through
/// double, which is exact for |v| <= 2^53 (larger values may be off by a double rounding).
template <FloatFormat F>
inline double int_to_float(int64_t v, bool source_is_u64) {
  if constexpr (F == FloatFormat::F32) {
    // Straight to float: going through double would round twice for |v| > 2^24.
    return source_is_u64 ? static_cast<float>(static_cast<uint64_t>(v)) : static_cast<float>(v);
  } else {
    double d = source_is_u64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
    return round_double_to<F>(d);
  }
}

/// Float -> integer: truncation toward zero, as C. Where C is undefined (NaN, out of range) the
/// interpreter saturates: NaN gives 0, values beyond the type's range give its min or max
/// (LLVM's fptosi.sat). To bool: v != 0, as C.
inline int64_t float_to_int(double v, IntFormat t) {
  if (t.is_bool()) return v != 0.0;
  if (std::isnan(v)) return 0;
  double truncated = std::trunc(v);
  if (t.is_signed) {
    double limit = std::ldexp(1.0, t.bits - 1);  // 2^(bits-1): the first value out of range
    if (truncated < -limit) return t.min_value();
    if (truncated >= limit) return t.max_value();
    return static_cast<int64_t>(truncated);
  }
  if (truncated <= 0.0) return 0;
  if (truncated >= std::ldexp(1.0, t.bits)) return t.max_value();
  return static_cast<int64_t>(static_cast<uint64_t>(truncated));
}

/// Integer -> integer: C's modular conversion; to bool: v != 0.
inline int64_t int_to_int(int64_t v, IntFormat to) {
  if (to.is_bool()) return v != 0;
  return to.wrap(static_cast<uint64_t>(v));
}

// ---------------------------------------------------------------------------------------------
// Bit patterns, for the `reinterpret` intrinsic.

inline uint64_t bits_of_float(double v, FloatFormat f) {
  switch (f) {
    case FloatFormat::F64: {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
    }
    case FloatFormat::F32: return float_bits(static_cast<float>(v));
    case FloatFormat::F16: return float_to_half_bits(static_cast<float>(v));
    case FloatFormat::BF16: return float_to_bfloat16_bits(static_cast<float>(v));
  }
  return 0;
}

inline double float_of_bits(uint64_t u, FloatFormat f) {
  switch (f) {
    case FloatFormat::F64: {
      double v;
      std::memcpy(&v, &u, 8);
      return v;
    }
    case FloatFormat::F32: return bits_float(static_cast<uint32_t>(u));
    case FloatFormat::F16: return half_bits_to_float(static_cast<uint16_t>(u));
    case FloatFormat::BF16: return bfloat16_bits_to_float(static_cast<uint16_t>(u));
  }
  return 0.0;
}

// ---------------------------------------------------------------------------------------------
// Memory codecs: how each element type is laid out in a buffer (bool takes a byte), and how it
// becomes an interpreter value. `Raw` is the in-memory representation, `Value` the lane type.

template <typename RawT>
struct IntCodec {
  using Raw = RawT;
  using Value = int64_t;
  static Value decode(Raw r) { return static_cast<int64_t>(r); }
  static Raw encode(Value v) { return static_cast<Raw>(v); }
};
struct BoolCodec {
  using Raw = uint8_t;
  using Value = int64_t;
  static Value decode(Raw r) { return r != 0; }
  static Raw encode(Value v) { return v != 0; }
};
template <typename RawT>
struct FloatCodec {
  using Raw = RawT;
  using Value = double;
  static Value decode(Raw r) { return r; }
  static Raw encode(Value v) { return static_cast<Raw>(v); }
};
struct HalfCodec {
  using Raw = uint16_t;
  using Value = double;
  static Value decode(Raw r) { return half_bits_to_float(r); }
  static Raw encode(Value v) { return float_to_half_bits(static_cast<float>(v)); }
};
struct BFloat16Codec {
  using Raw = uint16_t;
  using Value = double;
  static Value decode(Raw r) { return bfloat16_bits_to_float(r); }
  static Raw encode(Value v) { return float_to_bfloat16_bits(static_cast<float>(v)); }
};

/// Calls fn(Codec{}) with the codec of element type t; returns whatever fn returns.
template <typename Fn>
decltype(auto) with_codec(DType t, Fn&& fn) {
  switch (t.code) {
    case TypeCode::Int:
      switch (t.bits) {
        case 8: return fn(IntCodec<int8_t>{});
        case 16: return fn(IntCodec<int16_t>{});
        case 32: return fn(IntCodec<int32_t>{});
        case 64: return fn(IntCodec<int64_t>{});
      }
      break;
    case TypeCode::UInt:
      switch (t.bits) {
        case 1: return fn(BoolCodec{});
        case 8: return fn(IntCodec<uint8_t>{});
        case 16: return fn(IntCodec<uint16_t>{});
        case 32: return fn(IntCodec<uint32_t>{});
        case 64: return fn(IntCodec<uint64_t>{});
      }
      break;
    case TypeCode::Float:
      switch (t.bits) {
        case 16: return fn(HalfCodec{});
        case 32: return fn(FloatCodec<float>{});
        case 64: return fn(FloatCodec<double>{});
      }
      break;
    case TypeCode::BFloat:
      if (t.bits == 16) return fn(BFloat16Codec{});
      break;
    case TypeCode::Handle: break;
  }
  throw Error(cat("the interpreter cannot load or store elements of type ", t.str()));
}

/// Calls fn(std::integral_constant<FloatFormat, F>{}) for the float format of t.
template <typename Fn>
decltype(auto) with_float_format(DType t, Fn&& fn) {
  switch (float_format_of(t)) {
    case FloatFormat::F64: return fn(std::integral_constant<FloatFormat, FloatFormat::F64>{});
    case FloatFormat::F32: return fn(std::integral_constant<FloatFormat, FloatFormat::F32>{});
    case FloatFormat::F16: return fn(std::integral_constant<FloatFormat, FloatFormat::F16>{});
    case FloatFormat::BF16: return fn(std::integral_constant<FloatFormat, FloatFormat::BF16>{});
  }
  return fn(std::integral_constant<FloatFormat, FloatFormat::F64>{});
}

}  // namespace loom::arith
