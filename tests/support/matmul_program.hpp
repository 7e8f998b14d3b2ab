// A small product C = A B (m x k times k x n, float32) for tests that schedule one: the tensors and
// the reduce axis, named A, B, C and k as the tests' expected IR text spells them.
#pragma once

#include <loom/core.hpp>

namespace loom::test {

struct MatmulProgram {
  Tensor A, B, C;
  IterVar k;
};

inline MatmulProgram matmul_program(int m, int n, int k) {
  MatmulProgram p;
  p.A = placeholder({m, k}, f32, "A");
  p.B = placeholder({k, n}, f32, "B");
  p.k = reduce_axis(0, k, "k");
  p.C = compute(
      {m, n}, [&](Expr i, Expr j) { return sum(p.A(i, p.k) * p.B(p.k, j), {p.k}); }, "C");
  return p;
}

}  // namespace loom::test
