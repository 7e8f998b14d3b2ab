// bind(axis, thread_axis): maps a loop onto a GPU thread or block index: the loop disappears
// and its variable becomes threadIdx.x / blockIdx.x, whose extent the loop's extent sets.
//
// Departure from the TVM tutorial, which splits the reduce axis k into (k.outer, k.inner) and
// binds k.outer to blockIdx.x and k.inner to threadIdx.x, a reduction across blocks that TVM
// lowers to one thread_allreduce over blockIdx.x and threadIdx.x -- CUDA threads of different
// blocks cannot combine values that way, so Loom rejects binding a reduce loop to blockIdx.*
// (with a message saying so). Here, as that message suggests, B is first rfactored over
// k.outer: B.rf[k.outer] = sum over k.inner, a data-parallel axis k.outer that goes to
// blockIdx.x and a reduce axis k.inner that goes to threadIdx.x (a cross-thread reduction
// inside each block); B then adds up the 32 partial sums. (The tutorial also reads A[i] in
// place of A[k], which sums A[0] 1024 times; this program sums A.)
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static Lowered build(int n) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");

  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 32);
  Tensor BF = s.rfactor(B, ko);
  Lowered out;
  out.before = lower(s, {A, B}, "main");
  // B.rf's data-parallel axis k.outer goes to blocks, its reduce axis k.inner to threads.
  s[BF].bind(BF.axis(0), thread_axis("blockIdx.x"));
  s[BF].bind(BF.reduce_axis(0), thread_axis("threadIdx.x"));
  out.after = lower(s, {A, B}, "main");
  return out;
}

static void check(const Lowered& f, int n) {
  Buffer<float> a({n}), b_before({1}), b_after({1});
  example::fill_random(a, 1);
  interpret(f.before, {a, b_before});
  float expected = 0.0f;
  for (int i = 0; i < n; ++i) expected += a(i);
  example::expect_close(b_before(0), expected, "B[0] before bind");
  interpret(f.after, {a, b_after});
  example::expect_close(b_after(0), expected, "B[0] after bind");
}

int main() {
  Lowered f = build(1024);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 1024);
  // 1000 is not a multiple of 32: the threads past the end contribute the identity.
  check(build(1000), 1000);
  std::cout << "ok\n";
}
