// pragma(axis, key, value): attaches an annotation to a loop. As in TVM, the keys "unroll"
// and "vectorize" act as those primitives; any other key is carried into the IR as an attr.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after, other;
};

static Lowered build(int n, int m) {
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar l = reduce_axis(0, m, "l");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, l), {l}); }, "B");

  Schedule s = create_schedule(B);
  auto [lo, li] = s[B].split(B.reduce_axis(0), 4);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[B].pragma(li, "unroll");
  out.after = lower(s, {A, B}, "main");
  // A key Loom does not interpret itself stays in the IR for a later pass or the backend.
  s[B].pragma(lo, "my_hint", 7);
  out.other = lower(s, {A, B}, "main");
  return out;
}

static void check(const Lowered& f, int n, int m) {
  Buffer<float> a({n, m}), b_before({n}), b_after({n}), b_other({n});
  example::fill_random(a, 1);
  interpret(f.before, {a, b_before});
  interpret(f.after, {a, b_after});
  interpret(f.other, {a, b_other});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < m; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before pragma");
  }
  example::expect_all_close(b_after, b_before, "B[i] after pragma unroll");
  example::expect_all_close(b_other, b_before, "B[i] with pragma my_hint");
}

int main() {
  const int n = 1024, m = 1024;
  Lowered f = build(n, m);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, n, m);

  Lowered ragged = build(10, 30);  // 30 is not a multiple of 4
  std::cout << "With another pragma key (and m = 30, not a multiple of the factor):\n"
            << ragged.other << "\n";
  check(ragged, 10, 30);
  std::cout << "ok\n";
}
