// Element-wise C = A + B, the tutorial's simplest compute, printed and checked.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 1024;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");

  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, B, C}, "add");
  std::cout << f << "\n";

  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f, {a, b, c});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) example::expect_close(c(i, j), a(i, j) + b(i, j), "C[i, j]", 0);
  std::cout << "ok\n";
}
