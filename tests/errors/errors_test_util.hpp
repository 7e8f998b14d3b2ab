// Shared pieces of the error tests: the A -> B -> C -> D graph most schedule mistakes are made on,
// and sentinel-filled outputs that show a rejected call wrote nothing.
#pragma once

#include <loom/core.hpp>

#include <cstdint>
#include <vector>

namespace loom::test {

/// A -> B -> C (a matmul of B with A) -> D.
struct Graph {
  static constexpr int n = 12;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(B(i, k) * A(k, j), {k}); }, "C");
  Tensor D = compute(
      {n, n}, [&](Expr i, Expr j) { return C(i, j) * 2.0f; }, "D");
};

/// What outputs are filled with before a call that must be rejected.
inline constexpr float kSentinel = -12345.0f;

inline Buffer<float> sentinel(std::vector<int64_t> shape) {
  Buffer<float> b(std::move(shape));
  b.fill(kSentinel);
  return b;
}

/// True when no element of b was written since it was filled with kSentinel.
inline bool untouched(const Buffer<float>& b) {
  for (int64_t i = 0; i < b.num_elements(); ++i)
    if (b.at_flat(i) != kSentinel) return false;
  return true;
}

}  // namespace loom::test
