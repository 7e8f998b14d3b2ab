// rfactor(tensor, axis): factors a reduction over a split axis into a new stage B.rf that
// keeps `axis` as a data-parallel dimension, and a final reduction over B.rf's partial sums.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int n) {
  IterVar k = reduce_axis(0, n, "k");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  Tensor BR = s.rfactor(B, ki);
  out.after = lower(s, {A, B}, "main");
  return out;
}

static void check(const Lowered& f, int n) {
  Buffer<float> a({n}), b_before({1}), b_after({1});
  example::fill_random(a, 1);
  interpret(f.before, {a, b_before});
  interpret(f.after, {a, b_after});
  float expected = 0.0f;
  for (int i = 0; i < n; ++i) expected += a(i);
  example::expect_close(b_before(0), expected, "B[0] before rfactor");
  example::expect_close(b_after(0), expected, "B[0] after rfactor");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);

  Lowered ragged = build(1000);  // 1000 is not a multiple of 32: B.rf's reduction is guarded
  std::cout << "With n = 1000, not a multiple of the factor:\n" << ragged.after << "\n";
  check(ragged, 1000);
  std::cout << "ok\n";
}
