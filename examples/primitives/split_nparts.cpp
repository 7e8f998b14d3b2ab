// split(axis, NParts{n}): splits a loop into an outer loop of n iterations and an inner loop
// of ceil(extent / n) iterations (TVM's split(..., nparts=n)); ragged extents get a guard.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int n) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  auto [ko, ki] = s[B].split(B.reduce_axis(0), NParts{32});
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
  example::expect_close(b_before(0), expected, "B[0] before split(nparts)");
  example::expect_close(b_after(0), expected, "B[0] after split(nparts)");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);

  // 1000 is not a multiple of 32 parts: inner extent ceil(1000 / 32) = 32, and a guard.
  Lowered ragged = build(1000);
  std::cout << "With n = 1000, not a multiple of the number of parts:\n" << ragged.after << "\n";
  check(ragged, 1000);
  std::cout << "ok\n";
}
