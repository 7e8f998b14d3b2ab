// unroll(axis): replaces a loop of constant extent by that many copies of its body, each
// with the loop variable replaced by its value.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int n) {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");

  Schedule s = create_schedule(C);
  auto [xo, xi] = s[C].split(C.axis(0), 4);
  Lowered out;
  out.before = lower(s, {A, B, C}, "main");
  s[C].unroll(xi);
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
    for (int j = 0; j < n; ++j) example::expect_close(c_before(i, j), a(i, j) + b(i, j), "C[i, j]", 0);
  example::expect_all_close(c_after, c_before, "C[i, j] after unroll", 0);
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);

  Lowered ragged = build(30);  // 30 is not a multiple of 4: each unrolled copy keeps its guard
  std::cout << "With n = 30, not a multiple of the factor:\n" << ragged.after << "\n";
  check(ragged, 30);
  std::cout << "ok\n";
}
