// create_group(outputs, inputs, include_inputs): a virtual stage over all the stages between
// `inputs` and `outputs`; a primitive on the group (here compute_at) places all its members.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// D = A + B and E = D + B feed F = row sums of E. The group {D, E} is computed inside F's
// reduce loop, one element of each per iteration.
static Lowered build(int n) {
  IterVar k = reduce_axis(0, n, "k");
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  Tensor D = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "D");
  Tensor E = compute(
      {n, n}, [&](Expr i, Expr j) { return D(i, j) + B(i, j); }, "E");
  Tensor F = compute(
      {n}, [&](Expr i) { return sum(E(i, k), {k}); }, "F");

  Schedule s = create_schedule(F);
  // The tutorial lowers with the arguments [A, B, E], which leaves the result F without a
  // buffer to land in; here F is an argument too, so that it can be checked.
  Lowered out;
  out.before = lower(s, {A, B, E, F}, "main");
  Stage g = s.create_group({E}, {A, B}, /*include_inputs=*/true);
  g.compute_at(s[F], F.reduce_axis(0));
  out.after = lower(s, {A, B, E, F}, "main");
  return out;
}

static void check(const Lowered& f, int n) {
  Buffer<float> a({n, n}), b({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  Buffer<float> e_before({n, n}), f_before({n}), e_after({n, n}), f_after({n});
  interpret(f.before, {a, b, e_before, f_before});
  interpret(f.after, {a, b, e_after, f_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < n; ++j) {
      float e = (a(i, j) + b(i, j)) + b(i, j);
      example::expect_close(e_before(i, j), e, "E[i, j] before create_group", 0);
      expected += e;
    }
    example::expect_close(f_before(i), expected, "F[i] before create_group");
  }
  example::expect_all_close(e_after, e_before, "E[i, j] after create_group", 0);
  example::expect_all_close(f_after, f_before, "F[i] after create_group");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);
  std::cout << "ok\n";
}
