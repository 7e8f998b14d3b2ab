// compute_root(): undoes compute_at: the stage is computed in full at the root of the
// function again, before its consumers, into a buffer that holds all of it.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// The tutorial's program: the compute_at example (B.rf computed inside the thread loop of the
// cross-thread reduction of B), then B.rf moved back to the root.
static Lowered build(int n) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  Tensor BF = s.rfactor(B, ki);
  IterVar tx = thread_axis("threadIdx.x");
  IterVar kv = s[B].leaf_axes().back();  // TVM's s[B].op.reduce_axis[0] after rfactor
  s[B].bind(kv, tx);
  s[BF].compute_at(s[B], kv);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[BF].compute_root();
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
  example::expect_close(b_before(0), expected, "B[0] before compute_root");
  example::expect_close(b_after(0), expected, "B[0] after compute_root");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);
  check(build(1000), 1000);  // 1000 is not a multiple of 32
  std::cout << "ok\n";
}
