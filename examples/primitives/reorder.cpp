// reorder(axes): permutes loops of a stage; the listed loops take the positions they occupy
// now, in the given order (here the inner x loop moves inside the inner y loop).
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
  auto [xo, xi] = s[C].split(C.axis(0), 32);
  auto [yo, yi] = s[C].split(C.axis(1), 32);
  Lowered out;
  out.before = lower(s, {A, B, C}, "main");
  s[C].reorder({xo, yo, yi, xi});
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
  example::expect_all_close(c_after, c_before, "C[i, j] after reorder", 0);
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);
  check(build(100), 100);  // 100 is not a multiple of 32
  std::cout << "ok\n";
}
