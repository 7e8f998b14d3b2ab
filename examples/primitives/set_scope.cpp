// set_scope(scope): stores a stage's result in another memory scope (here "shared") instead
// of global memory; the buffer's allocation changes scope, the loops stay as they are.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 1024;
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + 10.0f; }, "C");

  Schedule s = create_schedule(C);
  LoweredFunc before = lower(s, {A, C}, "main");
  std::cout << before << "\n";
  example::print_cutting_line();

  s[B].set_scope("shared");
  LoweredFunc after = lower(s, {A, C}, "main");
  std::cout << after << "\n";

  Buffer<float> a({n, n}), c_before({n}), c_after({n});
  example::fill_random(a, 1);
  interpret(before, {a, c_before});
  interpret(after, {a, c_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < n; ++j) expected += a(i, j);
    example::expect_close(c_before(i), expected + 10.0f, "C[i] before set_scope");
  }
  example::expect_all_close(c_after, c_before, "C[i] after set_scope");
  std::cout << "ok\n";
}
