// Cross-thread reduction: binding a reduce loop to threadIdx.x makes the threads of a block
// each reduce a slice and then combine their partial results with one thread_allreduce.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// The row sum of TVM's reduction tutorial: rows split by 32 over blockIdx.x and threadIdx.y,
// the reduce axis split by 16. Before: every thread sums its row alone, serially. After:
// k.inner goes to threadIdx.x, so 16 threads share a row.
static Lowered build(int n, int m) {
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar k = reduce_axis(0, m, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 16);
  auto [xo, xi] = s[B].split(B.axis(0), 32);
  s[B].reorder({xo, xi, ko, ki});
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.y"));
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[B].bind(ki, thread_axis("threadIdx.x"));
  out.after = lower(s, {A, B}, "main");
  return out;
}

static void check(const Lowered& f, int n, int m) {
  Buffer<float> a({n, m}), b_before({n}), b_after({n});
  example::fill_random(a, 1);
  interpret(f.before, {a, b_before});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < m; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before the cross-thread reduction");
  }
  interpret(f.after, {a, b_after});
  example::expect_all_close(b_after, b_before, "B[i] after the cross-thread reduction");
}

int main() {
  const int n = 1024, m = 1024;
  Lowered f = build(n, m);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, n, m);
  // Neither 32 nor 16 divides 100 x 50: rows and reduction lanes past the ends are guarded.
  check(build(100, 50), 100, 50);
  std::cout << "ok\n";
}
