// double_buffer(): gives a buffer that is filled at the start of every iteration of a loop
// two halves, and fills the half for iteration k+1 while iteration k reads the other one.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// The tutorial's row sum with A staged through shared memory 32 columns at a time: the copy
// A.shared is computed inside the k.outer loop, so it can be double buffered across it.
static Lowered build(int n, int m) {
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar k = reduce_axis(0, m, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");

  Schedule s = create_schedule(B);
  Tensor AA = s.cache_read(A, "shared", {B});
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  s[AA].compute_at(s[B], ko);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[AA].double_buffer();
  out.after = lower(s, {A, B}, "main");
  return out;
}

static void check(const Lowered& f, int n, int m) {
  Buffer<float> a({n, m}), b_before({n}), b_after({n});
  example::fill_random(a, 1);
  interpret(f.before, {a, b_before});
  interpret(f.after, {a, b_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < m; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before double_buffer");
  }
  example::expect_all_close(b_after, b_before, "B[i] after double_buffer");
}

int main() {
  const int n = 1024;
  Lowered f = build(n, n);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, n, n);

  Lowered ragged = build(10, 50);  // 50 columns are not a multiple of 32
  std::cout << "With 50 columns, not a multiple of the factor:\n" << ragged.after << std::endl;
  check(ragged, 10, 50);
  std::cout << "ok\n";
}
