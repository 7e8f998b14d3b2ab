// tile(x, y, x_factor, y_factor): splits two loops and reorders them into (x.outer, y.outer,
// x.inner, y.inner), a 2-D tiling; the same as two splits and a reorder.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int n) {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  IterVar K = reduce_axis(0, n, "K");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, K) * B(K, j), {K}); }, "C");

  Schedule s = create_schedule(C);
  Lowered out;
  out.before = lower(s, {A, B, C}, "main");
  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 32, 32);
  out.after = lower(s, {A, B, C}, "main");
  return out;
}

static void check(const Lowered& f, int n) {
  Buffer<float> a({n, n}), b({n, n}), c_before({n, n}), c_after({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f.before, {a, b, c_before});
  interpret(f.after, {a, b, c_after});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float expected = 0.0f;
      for (int k = 0; k < n; ++k) expected += a(i, k) * b(k, j);
      example::expect_close(c_before(i, j), expected, "C[i, j] before tile");
    }
  example::expect_all_close(c_after, c_before, "C[i, j] after tile");
}

int main() {
  // A 1024^3 matrix multiply takes far too long on the interpreter: print the tutorial's
  // size, check the same schedule on 100 x 100, which the 32 x 32 tiles do not divide.
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  Lowered small = build(100);
  check(small, 100);
  std::cout << "ok\n";
}
