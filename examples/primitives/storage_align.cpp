// storage_align(axis, factor, offset): pads the row stride of a stage's buffer to
// k*factor + offset elements, so that rows start in different shared-memory banks.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 1024, factor = 100, offset = 8;
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");

  Schedule s = create_schedule(B);
  Tensor AA = s.cache_read(A, "shared", {B});
  LoweredFunc before = lower(s, {A, B}, "main");
  std::cout << before << "\n";
  example::print_cutting_line();

  // TVM's rule: stride += (factor + offset - stride % factor) % factor, so the 1024-element
  // rows get stride 1108 and the buffer 1023 * 1108 + 1024 = 1134592 elements.
  s[AA].storage_align(AA.axis(0), factor, offset);
  LoweredFunc after = lower(s, {A, B}, "main");
  std::cout << after << "\n";

  Buffer<float> a({n, n}), b_before({n}), b_after({n});
  example::fill_random(a, 1);
  interpret(before, {a, b_before});
  interpret(after, {a, b_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < n; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before storage_align");
  }
  example::expect_all_close(b_after, b_before, "B[i] after storage_align");
  std::cout << "ok\n";
}
