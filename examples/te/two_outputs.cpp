// A compute with two outputs produced by one loop nest (TVM's tuple outputs), and an argmax
// written with a user-defined two-value comm_reducer; both checked against plain C++.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int m = 64, n = 48;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = placeholder({m, n}, f32, "B");
  std::vector<Tensor> both = compute(
      {m, n},
      [&](Expr i, Expr j) {
        return std::vector<Expr>{A(i, j) + B(i, j), A(i, j) * B(i, j)};
      },
      "C");
  Tensor Sum = both[0], Prod = both[1];

  Schedule s = create_schedule({Sum, Prod});
  LoweredFunc f = lower(s, {A, B, Sum, Prod}, "two_outputs");
  std::cout << f << "\n";

  Buffer<float> a({m, n}), b({m, n}), sum_out({m, n}), prod_out({m, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f, {a, b, sum_out, prod_out});
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      example::expect_close(sum_out(i, j), a(i, j) + b(i, j), "C.v0", 0);
      example::expect_close(prod_out(i, j), a(i, j) * b(i, j), "C.v1", 0);
    }

  // argmax over each row: reduce (index, value) pairs, keeping the larger value.
  Reducer argmax = comm_reducer(
      [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
        Expr take_y = y[1] > x[1];
        return std::vector<Expr>{select(take_y, y[0], x[0]), select(take_y, y[1], x[1])};
      },
      [](const std::vector<DType>& t) {
        return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])};
      },
      "argmax");
  IterVar k = reduce_axis(0, n, "k");
  std::vector<Tensor> arg = compute(
      {m},
      [&](Expr i) {
        return argmax({k, A(i, k)}, {k});
      },
      "T");
  Schedule s2 = create_schedule({arg[0], arg[1]});
  LoweredFunc g = lower(s2, {A, arg[0], arg[1]}, "argmax");
  std::cout << g << "\n";
  Buffer<int32_t> index({m});
  Buffer<float> value({m});
  interpret(g, {a, index, value});
  for (int i = 0; i < m; ++i) {
    int best = 0;
    for (int j = 1; j < n; ++j)
      if (a(i, j) > a(i, best)) best = j;
    example::expect_close(index(i), best, "argmax index", 0);
    example::expect_close(value(i), a(i, best), "argmax value", 0);
  }
  std::cout << "ok\n";
}
