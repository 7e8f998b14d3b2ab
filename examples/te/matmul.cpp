// Matrix multiply C[i, j] = sum_k A[i, k] * B[k, j]: the loop IR of the default schedule,
// then of a tiled one (the example of docs/getting-started.md and README.md), both checked
// against a plain C++ loop on sizes the tiles do not divide.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

static void check(const LoweredFunc& f, int n) {
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f, {a, b, c});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float expected = 0.0f;
      for (int k = 0; k < n; ++k) expected += a(i, k) * b(k, j);
      example::expect_close(c(i, j), expected, "C[i, j]");
    }
}

int main() {
  const int n = 100;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");

  Schedule s = create_schedule(C);
  LoweredFunc plain = lower(s, {A, B, C}, "matmul");
  std::cout << plain << "\n";
  check(plain, n);

  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 32, 32);
  auto [ko, ki] = s[C].split(k, 4);
  s[C].reorder({xo, yo, ko, xi, ki, yi});
  LoweredFunc tiled = lower(s, {A, B, C}, "matmul_tiled");
  std::cout << tiled << "\n";
  check(tiled, n);
  std::cout << "ok\n";
}
