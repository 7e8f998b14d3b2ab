// A scan (TVM semantics): the cumulative sum over rows, s[t] = s[t-1] + X[t], with symbolic
// sizes m and n bound from the buffers at call time.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  Var m = size_var("m"), n = size_var("n");
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "s_state");
  Tensor init = compute({1, n}, [&](Expr, Expr i) { return X(0, i); }, "s_init", "", {"t", "i"});
  Tensor update =
      compute({m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "s_update", "", {"t", "i"});
  Tensor result = scan(init, update, state, {X}, "s_scan");

  Schedule s = create_schedule(result);
  LoweredFunc f = lower(s, {X, result}, "cumsum");
  std::cout << f << "\n";

  for (auto [rows, cols] : {std::pair{7, 5}, std::pair{1, 3}, std::pair{33, 17}}) {
    Buffer<float> x({rows, cols}), out({rows, cols});
    example::fill_random(x, 3);
    interpret(f, {x, out});
    for (int j = 0; j < cols; ++j) {
      float running = 0.0f;
      for (int t = 0; t < rows; ++t) {
        running += x(t, j);
        example::expect_close(out(t, j), running, "s_scan[t, i]");
      }
    }
  }
  std::cout << "ok\n";
}
