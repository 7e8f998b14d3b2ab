// An XOR swizzle of a buffer's flat element offsets with CuTe's Swizzle<B,M,S> meaning: bits
// [M, M+B) of an offset are XORed with bits [M+S, M+S+B). Shared by the schedule primitive, the
// storage flattener that applies it and the bank-conflict analysis that tries it.
#pragma once

#include <cstdint>
#include <string>

#include "loom/ir/op.hpp"
#include "loom/support/error.hpp"

namespace loom {

namespace attr {
/// On an Allocate: the buffer is swizzled; `node` is the buffer variable, the value says how.
inline constexpr const char* swizzle = "swizzle";
}  // namespace attr

struct SwizzleLayout {
  int bits = 0;   // B: how many bits change (0: no swizzle)
  int base = 0;   // M: the lowest changed bit; 2^M consecutive elements move together
  int shift = 0;  // S: the distance to the bits that select the change

  bool defined() const { return bits > 0; }
  /// 2^(M+B): a swizzle maps every aligned block of this many elements onto itself.
  int64_t period() const { return int64_t{1} << (base + bits); }
  std::string str() const { return cat("Swizzle<", bits, ",", base, ",", shift, ">"); }

  int64_t apply(int64_t offset) const {
    const int64_t mask = ((int64_t{1} << bits) - 1) << (base + shift);
    return offset ^ ((offset & mask) >> shift);
  }

  /// The same function as IR. The IR has no bitwise operators, so each changed bit is rebuilt
  /// with floordiv/floormod: bit_i XOR bit_{i+S} = (bit_i + bit_{i+S}) mod 2. The offset is split
  /// into the 2^M elements that move together and the unit they form, floormod(x, 2^M) +
  /// 2^M * swizzled_unit(floordiv(x, 2^M)), so that a vector access within one unit keeps a
  /// ramp index once the simplifier sees the unit is the same for all its lanes.
  Expr apply(const Expr& offset) const {
    const DType t = offset.dtype();
    auto constant = [&](int64_t v) {
      Expr c = make_int_const(t.element_of(), v);
      return t.lanes > 1 ? BroadcastNode::make(c, t.lanes) : c;
    };
    const int64_t unit_size = int64_t{1} << base;
    Expr unit = base == 0 ? offset : floordiv(offset, constant(unit_size));
    auto bit = [&](int position) {
      Expr shifted = position == 0 ? unit : floordiv(unit, constant(int64_t{1} << position));
      return floormod(shifted, constant(2));
    };
    Expr swizzled = unit;
    for (int i = 0; i < bits; ++i) {
      Expr low = bit(i);
      swizzled = swizzled + (floormod(low + bit(shift + i), constant(2)) - low) * constant(int64_t{1} << i);
    }
    if (base == 0) return swizzled;
    return floormod(offset, constant(unit_size)) + swizzled * constant(unit_size);
  }
};

}  // namespace loom
