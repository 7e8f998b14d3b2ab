// vectorize(axis): turns a loop of constant extent into vector operations: the loop variable
// becomes a ramp(base, 1, lanes), and each load and store moves `lanes` elements at once.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int m, int n) {
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = placeholder({m, n}, f32, "B");
  Tensor C = compute({m, n}, [&](Expr x, Expr y) { return A(x, y) + B(x, y); }, "C", "", {"x", "y"});

  Schedule s = create_schedule(C);
  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 32, 32);
  Lowered out;
  out.before = lower(s, {A, B, C}, "main");
  s[C].vectorize(yi);
  out.after = lower(s, {A, B, C}, "main");
  return out;
}

static void check(const Lowered& f, int m, int n) {
  Buffer<float> a({m, n}), b({m, n}), c_before({m, n}), c_after({m, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f.before, {a, b, c_before});
  interpret(f.after, {a, b, c_after});
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) example::expect_close(c_before(i, j), a(i, j) + b(i, j), "C[x, y]", 0);
  example::expect_all_close(c_after, c_before, "C[x, y] after vectorize", 0);
}

int main() {
  const int M = 1024, N = 1024;
  Lowered f = build(M, N);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, M, N);

  Lowered ragged = build(40, 50);  // 50 is not a multiple of 32: the last vector is guarded
  std::cout << "With a 40 x 50 C, not a multiple of the tile:\n" << ragged.after << "\n";
  check(ragged, 40, 50);
  std::cout << "ok\n";
}
