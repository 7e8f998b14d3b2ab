// reverse_compute_at(producer, loop): the mirror of compute_at. Computes a *consumer* inside a
// loop of its producer, right after each iteration of that loop has produced its tile, so an
// element-wise epilogue (here bias + relu after a matmul) reads each tile while it is still in
// cache instead of in a second pass over the whole result. The loop must be outside the
// producer's reduce loops (a tile is final only once its reduction is done), and the consumer
// must read only the tile that iteration produced.
#include <algorithm>
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

// D = relu(A W + bias): the matmul C is tiled 8 x 16 (its reduce loop k innermost); D starts
// at the root, computed after all of C, and is then moved into C's loop over column tiles.
static Lowered build(int n, int m, int l) {
  Tensor A = placeholder({n, l}, f32, "A");
  Tensor W = placeholder({l, m}, f32, "W");
  Tensor bias = placeholder({m}, f32, "bias");
  IterVar k = reduce_axis(0, l, "k");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return sum(A(i, k) * W(k, j), {k}); }, "C");
  Tensor D = compute(
      {n, m}, [&](Expr i, Expr j) { return max(C(i, j) + bias(j), 0.0f); }, "D");

  Schedule s = create_schedule(D);
  auto [io, jo, ii, ji] = s[C].tile(C.axis(0), C.axis(1), 8, 16);
  Lowered out;
  out.before = lower(s, {A, W, bias, D}, "main");
  s[D].reverse_compute_at(s[C], jo);  // D's 8 x 16 tile right after C's
  out.after = lower(s, {A, W, bias, D}, "main");
  return out;
}

static void check(const Lowered& f, int n, int m, int l) {
  Buffer<float> a({n, l}), w({l, m}), bias({m}), d_before({n, m}), d_after({n, m}), expected({n, m});
  example::fill_random(a, 1);
  example::fill_random(w, 2);
  example::fill_random(bias, 3);
  interpret(f.before, {a, w, bias, d_before});
  interpret(f.after, {a, w, bias, d_after});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      float c = 0.0f;
      for (int p = 0; p < l; ++p) c += a(i, p) * w(p, j);
      expected(i, j) = std::max(c + bias(j), 0.0f);
    }
  example::expect_all_close(d_before, expected, "D before reverse_compute_at");
  example::expect_all_close(d_after, d_before, "D after reverse_compute_at");
}

int main() {
  Lowered f = build(64, 64, 64);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, 64, 64, 64);

  // 45 rows and 70 columns are not multiples of the 8 x 16 tile: the last tiles are partial, and
  // D covers exactly the part of each tile that C produced.
  Lowered ragged = build(45, 70, 37);
  std::cout << "With a 45 x 70 result, not a multiple of the tile:\n" << ragged.after << std::endl;
  check(ragged, 45, 70, 37);
  std::cout << "ok\n";
}
