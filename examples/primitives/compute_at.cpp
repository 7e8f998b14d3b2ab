// compute_at(parent, axis): computes a stage inside a loop of a consumer stage, only the part
// that one iteration of that loop needs, instead of all of it before the consumer runs.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// The tutorial's program: a sum whose reduce loop is split by 32 and factored (rfactor), the
// final reduction bound to threadIdx.x (a cross-thread reduction), and then the factored
// stage B.rf moved into that thread loop: each thread computes its own partial sum.
static Lowered build(int n) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  Tensor BF = s.rfactor(B, ki);
  IterVar tx = thread_axis("threadIdx.x");
  // TVM's s[B].op.reduce_axis[0]: after rfactor, B reduces over k.inner.v, its last loop.
  IterVar kv = s[B].leaf_axes().back();
  s[B].bind(kv, tx);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  s[BF].compute_at(s[B], kv);
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
  example::expect_close(b_before(0), expected, "B[0] before compute_at");
  example::expect_close(b_after(0), expected, "B[0] after compute_at");
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
