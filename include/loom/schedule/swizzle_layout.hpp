// An XOR swizzle of a buffer's flat element offsets with CuTe's Swizzle<B,M,S> meaning: bits
// [M, M+B) of an offset are XORed with bits [M+S, M+S+B). Shared by the schedule primitive, the
// storage flattener that applies it and the bank-conflict analysis that tries it.
#pragma once

#include <cstdint>
#include <string>

#include "loom/ir/bitwise_op.hpp"
#include "loom/ir/op.hpp"
#include "loom/support/error.hpp"

namespace loom {

namespace attr {
/// On an Allocate: the buffer is swizzled; `node` is the buffer variable, the value says how.
inline constexpr const char* swizzle = "swizzle";
}  // namespace attr

/// CuTe's Swizzle<B, M, S> on the flat element offsets of a buffer (Stage::swizzle()): XORs bits
/// [M, M + B) with bits [M + S, M + S + B). Default-constructed it is the identity.
struct SwizzleLayout {
  int bits = 0;   ///< B: how many bits change (0: no swizzle)
  int base = 0;   ///< M: the lowest changed bit; 2^M consecutive elements move together
  int shift = 0;  ///< S: the distance to the bits that select the change

  /// True when the layout swizzles (bits > 0).
  bool defined() const { return bits > 0; }
  /// 2^(M+B): a swizzle maps every aligned block of this many elements onto itself.
  int64_t period() const { return int64_t{1} << (base + bits); }
  /// "Swizzle<B,M,S>".
  std::string str() const { return cat("Swizzle<", bits, ",", base, ",", shift, ">"); }

  /// The swizzled element offset of `offset`.
  int64_t apply(int64_t offset) const {
    const int64_t mask = ((int64_t{1} << bits) - 1) << (base + shift);
    return offset ^ ((offset & mask) >> shift);
  }

  /// The same function as IR, with bitwise operations: the offset is split into the 2^M
  /// elements that move together and the unit they form, floormod(x, 2^M) + 2^M * swizzled(u)
  /// for u = floordiv(x, 2^M), and swizzled(u) = u ^ ((u >> S) & (2^B - 1)). Floor division and
  /// remainder by 2^M are a shift and a mask in generated code, so the whole swizzle is a few
  /// integer instructions; keeping the unit apart lets a vector access within one unit keep a
  /// ramp index once the simplifier sees the unit is the same for all its lanes. Equal to
  /// apply(int64_t) for every offset, negative ones included (two's complement).
  Expr apply(const Expr& offset) const {
    const DType t = offset.dtype();
    auto constant = [&](int64_t v) {
      Expr c = make_int_const(t.element_of(), v);
      return t.lanes > 1 ? BroadcastNode::make(c, t.lanes) : c;
    };
    const int64_t unit_size = int64_t{1} << base;
    Expr unit = base == 0 ? offset : floordiv(offset, constant(unit_size));
    Expr swizzled = unit ^ ((unit >> constant(shift)) & constant((int64_t{1} << bits) - 1));
    if (base == 0) return swizzled;
    return floormod(offset, constant(unit_size)) + swizzled * constant(unit_size);
  }
};

}  // namespace loom
