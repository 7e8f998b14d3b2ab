// The reference of the bitwise nodes for tests: a (op) b computed natively in C++20 for the C type
// of an integer dtype, with the shift amount taken modulo the width (ir/int_math.hpp's rule).
#pragma once

#include <loom/ir/node_kinds.hpp>

#include <stdexcept>
#include <type_traits>

namespace loom::test {

inline constexpr IRNodeKind kBitwiseKinds[] = {IRNodeKind::BitwiseAnd, IRNodeKind::BitwiseOr,
                                               IRNodeKind::BitwiseXor, IRNodeKind::ShiftLeft,
                                               IRNodeKind::ShiftRight};

template <typename T>
T native_bitwise(IRNodeKind k, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const unsigned amount = static_cast<unsigned>(static_cast<U>(b)) & (sizeof(T) * 8 - 1);
  switch (k) {
    case IRNodeKind::BitwiseAnd: return static_cast<T>(a & b);
    case IRNodeKind::BitwiseOr: return static_cast<T>(a | b);
    case IRNodeKind::BitwiseXor: return static_cast<T>(a ^ b);
    // Left: through the unsigned type, as a negative value may not be shifted in C++17.
    case IRNodeKind::ShiftLeft: return static_cast<T>(static_cast<U>(static_cast<U>(a) << amount));
    case IRNodeKind::ShiftRight: return static_cast<T>(a >> amount);  // arithmetic when T is signed
    default: break;
  }
  throw std::logic_error("native_bitwise: not a bitwise kind");
}

}  // namespace loom::test
