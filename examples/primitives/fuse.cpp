// fuse(outer, inner): merges two adjacent loops into one loop over the product of their
// extents; the body recovers the old indices by division and remainder (simplified away here).
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// The tutorial's schedule for a vector of n elements, lowered before and after the fuse.
static Lowered build(int n) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[B].fuse(ko, ki);
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
  example::expect_close(b_before(0), expected, "B[0] before fuse");
  example::expect_close(b_after(0), expected, "B[0] after fuse");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);
  check(build(1000), 1000);  // 1000 is not a multiple of the split factor 32
  std::cout << "ok\n";
}
