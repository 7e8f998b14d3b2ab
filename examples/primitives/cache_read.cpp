// cache_read(tensor, scope, readers): copies a tensor into a cache in another memory scope
// (here "shared") as a new stage, and makes the listed readers read the copy instead.
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
  LoweredFunc before = lower(s, {A, B}, "main");
  std::cout << before << "\n";
  example::print_cutting_line();

  Tensor AA = s.cache_read(A, "shared", {B});
  LoweredFunc after = lower(s, {A, B}, "main");
  std::cout << after << "\n";

  Buffer<float> a({n, n}), b_before({n}), b_after({n});
  example::fill_random(a, 1);
  interpret(before, {a, b_before});
  interpret(after, {a, b_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < n; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before cache_read");
  }
  example::expect_all_close(b_after, b_before, "B[i] after cache_read");
  std::cout << "ok\n";
}
