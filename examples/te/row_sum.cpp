// The row sum of the TVM schedule tutorial: B[i] = sum_k A[i, k]. Prints the loop IR Loom
// lowers it to and checks the interpreter against a plain C++ loop.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 1024;
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");

  Schedule s = create_schedule(B);
  LoweredFunc f = lower(s, {A, B}, "row_sum");
  std::cout << f << "\n";

  Buffer<float> a({n, n}), b({n});
  example::fill_random(a, 1);
  interpret(f, {a, b});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < n; ++j) expected += a(i, j);
    example::expect_close(b(i), expected, "B[i]");
  }
  std::cout << "ok\n";
}
