// ConstIntBound: an interval [min_value, max_value] that an integer expression is known to lie
// in, and interval arithmetic on it that saturates to the infinities instead of overflowing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>

#include "loom/ir/dtype.hpp"
#include "loom/ir/int_math.hpp"

namespace loom {

struct ConstIntBound {
  /// The ends of the int64 range stand for "unbounded" on that side.
  static constexpr int64_t kPosInf = INT64_MAX;
  static constexpr int64_t kNegInf = INT64_MIN;

  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;

  static constexpr ConstIntBound everything() { return {kNegInf, kPosInf}; }
  static constexpr ConstIntBound single(int64_t v) { return {v, v}; }

  bool is_single_point() const { return min_value == max_value && is_finite(); }
  bool is_finite() const { return min_value != kNegInf && max_value != kPosInf; }
  bool is_non_negative() const { return min_value >= 0; }
  bool contains(int64_t v) const { return min_value <= v && v <= max_value; }
  friend bool operator==(const ConstIntBound& a, const ConstIntBound& b) {
    return a.min_value == b.min_value && a.max_value == b.max_value;
  }
  friend std::ostream& operator<<(std::ostream& os, const ConstIntBound& b) {
    os << "[";
    if (b.min_value == kNegInf)
      os << "-inf";
    else
      os << b.min_value;
    os << ", ";
    if (b.max_value == kPosInf)
      os << "+inf";
    else
      os << b.max_value;
    return os << "]";
  }
};

namespace bound_detail {

constexpr int64_t kPosInf = ConstIntBound::kPosInf;
constexpr int64_t kNegInf = ConstIntBound::kNegInf;

inline bool is_inf(int64_t x) { return x == kPosInf || x == kNegInf; }
inline int64_t neg(int64_t x) { return x == kNegInf ? kPosInf : x == kPosInf ? kNegInf : -x; }
inline int64_t abs(int64_t x) { return x < 0 ? neg(x) : x; }

// Sums of lower ends round down and sums of upper ends round up, so an infinity on the side
// being computed wins over one on the other side.
inline int64_t add_lo(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  return int_math::saturating_add(a, b);
}
inline int64_t add_hi(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  return int_math::saturating_add(a, b);
}

// Products on the extended line: 0 * inf = 0 is right here because every value bounded is finite.
inline int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  return int_math::saturating_mul(a, b);
}

// Quotients by a positive divisor b (b may be +inf); an infinite dividend stays infinite.
inline int64_t truncdiv_pos(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (b == kPosInf) return 0;
  return a / b;
}
inline int64_t floordiv_pos(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (b == kPosInf) return a >= 0 ? 0 : -1;
  return int_math::floordiv(a, b);
}

}  // namespace bound_detail

inline ConstIntBound bound_neg(const ConstIntBound& a) {
  return {bound_detail::neg(a.max_value), bound_detail::neg(a.min_value)};
}

inline ConstIntBound bound_add(const ConstIntBound& a, const ConstIntBound& b) {
  return {bound_detail::add_lo(a.min_value, b.min_value), bound_detail::add_hi(a.max_value, b.max_value)};
}

inline ConstIntBound bound_sub(const ConstIntBound& a, const ConstIntBound& b) {
  return bound_add(a, bound_neg(b));
}

inline ConstIntBound bound_mul(const ConstIntBound& a, const ConstIntBound& b) {
  using bound_detail::mul;
  int64_t c[4] = {mul(a.min_value, b.min_value), mul(a.min_value, b.max_value), mul(a.max_value, b.min_value),
                  mul(a.max_value, b.max_value)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

inline ConstIntBound bound_min(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
}
inline ConstIntBound bound_max(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}
/// The smallest interval holding both (the bound of a value that is one or the other).
inline ConstIntBound bound_union(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}
/// Both facts at once; `a` when they contradict (only possible in code that never runs).
inline ConstIntBound bound_intersect(const ConstIntBound& a, const ConstIntBound& b) {
  ConstIntBound r{std::max(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
  return r.min_value <= r.max_value ? r : a;
}

namespace bound_detail {
// A divisor interval that contains 0: division by zero is undefined, so |b| >= 1 and the
// quotient is no larger in magnitude than the dividend.
inline ConstIntBound magnitude_of(const ConstIntBound& a) {
  return {std::min({a.min_value, neg(a.max_value), int64_t{0}}),
          std::max({a.max_value, neg(a.min_value), int64_t{0}})};
}
}  // namespace bound_detail

/// C division (rounds toward zero).
inline ConstIntBound bound_truncdiv(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (b.min_value > 0) {
    // a/b grows with a; it shrinks as b grows for a >= 0 and grows as b grows for a < 0.
    int64_t lo =
        a.min_value >= 0 ? truncdiv_pos(a.min_value, b.max_value) : truncdiv_pos(a.min_value, b.min_value);
    int64_t hi =
        a.max_value >= 0 ? truncdiv_pos(a.max_value, b.min_value) : truncdiv_pos(a.max_value, b.max_value);
    return {lo, hi};
  }
  if (b.max_value < 0) return bound_neg(bound_truncdiv(a, bound_neg(b)));  // a/b == -(a/-b)
  return magnitude_of(a);
}

/// Division rounding toward negative infinity.
inline ConstIntBound bound_floordiv(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (b.min_value > 0) {
    int64_t lo =
        a.min_value >= 0 ? floordiv_pos(a.min_value, b.max_value) : floordiv_pos(a.min_value, b.min_value);
    int64_t hi =
        a.max_value >= 0 ? floordiv_pos(a.max_value, b.min_value) : floordiv_pos(a.max_value, b.max_value);
    return {lo, hi};
  }
  if (b.max_value < 0) return bound_floordiv(bound_neg(a), bound_neg(b));  // floor(a/b) == floor(-a/-b)
  return magnitude_of(a);
}

/// C remainder: the sign of the dividend, smaller in magnitude than the divisor.
inline ConstIntBound bound_truncmod(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (b.is_single_point() && b.min_value != 0 && a.is_finite()) {
    int64_t c = abs(b.min_value);
    bool one_sign = a.min_value >= 0 || a.max_value <= 0;
    if (one_sign && a.min_value / c == a.max_value / c) return {a.min_value % c, a.max_value % c};
  }
  int64_t m = std::max(abs(b.min_value), abs(b.max_value));
  if (m != kPosInf) m -= 1;
  int64_t lo = a.min_value >= 0 ? 0 : std::max(a.min_value, neg(m));
  int64_t hi = a.max_value <= 0 ? 0 : std::min(a.max_value, m);
  return {lo, hi};
}

/// The remainder of floordiv: the sign of the divisor.
inline ConstIntBound bound_floormod(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (b.is_single_point() && b.min_value != 0 && a.is_finite()) {
    int64_t c = b.min_value;
    if (int_math::floordiv(a.min_value, c) == int_math::floordiv(a.max_value, c)) {
      return {int_math::floormod(a.min_value, c), int_math::floormod(a.max_value, c)};
    }
  }
  if (b.min_value > 0) {
    int64_t hi = b.max_value == kPosInf ? kPosInf : b.max_value - 1;
    if (a.min_value >= 0) hi = std::min(hi, a.max_value);
    return {0, hi};
  }
  if (b.max_value < 0) {
    int64_t lo = b.min_value == kNegInf ? kNegInf : b.min_value + 1;
    if (a.max_value <= 0) lo = std::max(lo, a.min_value);
    return {lo, 0};
  }
  int64_t m = std::max(abs(b.min_value), abs(b.max_value));
  if (m != kPosInf) m -= 1;
  return {neg(m), m};
}

// Bitwise operations. Only what follows from two's complement for every width is used: nothing
// is claimed for negative operands except where the sign bit is known to be clear.
namespace bound_detail {
/// 2^k - 1 for the smallest k with 2^k > x >= 0: every value with no bit above x's highest one.
inline int64_t fill_low_bits(int64_t x) {
  uint64_t v = static_cast<uint64_t>(x);
  for (int s = 1; s < 64; s *= 2) v |= v >> s;
  return static_cast<int64_t>(v);
}
inline bool finite_non_negative(const ConstIntBound& b) { return b.min_value >= 0 && b.max_value != kPosInf; }
}  // namespace bound_detail

/// a & b: a non-negative operand bounds the result to [0, its max] whatever the other is.
inline ConstIntBound bound_bitwise_and(const ConstIntBound& a, const ConstIntBound& b) {
  if (a.min_value >= 0 && b.min_value >= 0) return {0, std::min(a.max_value, b.max_value)};
  if (a.min_value >= 0) return {0, a.max_value};
  if (b.min_value >= 0) return {0, b.max_value};
  return ConstIntBound::everything();
}

/// a | b and a ^ b for non-negative a, b: no bit above the highest bit of the larger maximum.
/// a | b is at least the larger minimum (it has every bit of both).
inline ConstIntBound bound_bitwise_or(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (!finite_non_negative(a) || !finite_non_negative(b)) return ConstIntBound::everything();
  return {std::max(a.min_value, b.min_value), fill_low_bits(std::max(a.max_value, b.max_value))};
}
inline ConstIntBound bound_bitwise_xor(const ConstIntBound& a, const ConstIntBound& b) {
  using namespace bound_detail;
  if (!finite_non_negative(a) || !finite_non_negative(b)) return ConstIntBound::everything();
  return {0, bound_detail::fill_low_bits(std::max(a.max_value, b.max_value))};
}

/// a >> b in type t for an amount known to be in [0, bits): floor(a / 2^b), monotonic in a (for
/// signed types too: the shift is arithmetic) and, for a >= 0, decreasing in b.
inline ConstIntBound bound_shift_right(const ConstIntBound& a, const ConstIntBound& b, DType t) {
  if (b.min_value < 0 || b.max_value >= t.bits || (t.is_uint() && t.bits == 64))
    return ConstIntBound::everything();
  auto shr = [](int64_t x, int64_t s) { return bound_detail::is_inf(x) ? x : x >> s; };
  if (a.min_value >= 0) return {shr(a.min_value, b.max_value), shr(a.max_value, b.min_value)};
  if (b.is_single_point()) return {shr(a.min_value, b.min_value), shr(a.max_value, b.min_value)};
  return ConstIntBound::everything();
}

/// a << c in type t for a constant c in [0, bits): a * 2^c when every such product fits the
/// type (then no bit is lost); otherwise the shift may wrap and nothing is known.
inline ConstIntBound bound_shift_left(const ConstIntBound& a, const ConstIntBound& b, DType t) {
  if (!b.is_single_point() || b.min_value < 0 || b.min_value >= t.bits || !a.is_finite())
    return ConstIntBound::everything();
  const int64_t scale = int64_t{1} << std::min<int64_t>(b.min_value, 62);
  int64_t lo = 0, hi = 0;
  if (b.min_value > 62 || !int_math::checked_mul(a.min_value, scale, &lo) ||
      !int_math::checked_mul(a.max_value, scale, &hi) || lo < int_math::type_min(t) ||
      hi > int_math::type_max(t))
    return ConstIntBound::everything();
  return {lo, hi};
}

/// Every value of integer type t (uint64's upper half is beyond +inf, i.e. unbounded).
inline ConstIntBound bound_of_type(DType t) {
  if (!t.is_integral()) return ConstIntBound::everything();
  int64_t lo = int_math::type_min(t), hi = int_math::type_max(t);
  return {lo == INT64_MIN ? ConstIntBound::kNegInf : lo, hi};
}

/// Fits an interval computed with unbounded arithmetic to what type t can hold. Signed types
/// are assumed not to overflow (as C does), so the bound is intersected with the type's range;
/// unsigned types wrap, so a bound that leaves their range says nothing.
inline ConstIntBound fit_to_type(const ConstIntBound& b, DType t) {
  if (!t.is_integral()) return ConstIntBound::everything();
  ConstIntBound range = bound_of_type(t);
  if (range.min_value <= b.min_value && b.max_value <= range.max_value && b.min_value <= b.max_value)
    return b;
  if (t.is_int()) return bound_intersect(range, b);
  return range;
}

}  // namespace loom
