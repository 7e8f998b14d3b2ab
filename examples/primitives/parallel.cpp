// parallel(axis): marks a loop to run its iterations on several CPU threads (the interpreter
// runs them in order; the LLVM backend hands them to its thread pool).
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 1024, m = 1024;
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar l = reduce_axis(0, m, "l");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, l), {l}); }, "B");

  Schedule s = create_schedule(B);
  LoweredFunc before = lower(s, {A, B}, "main");
  std::cout << before << "\n";
  example::print_cutting_line();

  // The tutorial parallelizes the reduce loop l, whose iterations all update B[i]: a race on
  // real threads, which TVM accepts and Loom rejects with an error. Loom parallelizes the
  // data-parallel loop i instead, which is what the tutorial's schedule means to do.
  try {
    s[B].parallel(B.reduce_axis(0));
    std::cout << "expected parallel() of a reduce axis to be rejected\n";
    return 1;
  } catch (const ScheduleError& e) {
    std::cout << "parallel(l) is rejected: " << e.what() << "\n";
  }
  s[B].parallel(B.axis(0));
  LoweredFunc after = lower(s, {A, B}, "main");
  std::cout << after << "\n";

  Buffer<float> a({n, m}), b_before({n}), b_after({n});
  example::fill_random(a, 1);
  interpret(before, {a, b_before});
  interpret(after, {a, b_after});
  for (int i = 0; i < n; ++i) {
    float expected = 0.0f;
    for (int j = 0; j < m; ++j) expected += a(i, j);
    example::expect_close(b_before(i), expected, "B[i] before parallel");
  }
  example::expect_all_close(b_after, b_before, "B[i] after parallel");
  std::cout << "ok\n";
}
