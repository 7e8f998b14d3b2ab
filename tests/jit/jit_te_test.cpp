// Whole pipelines built with compute/schedule/lower, compiled by the JIT and compared with the
// interpreter on random data whose sizes the split factors do not divide: tiled matmul (DESIGN.md's
// schedule), padded convolution, scan, reductions, parallel and vectorized loops, symbolic shapes.
#include <doctest/doctest.h>

#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

Kernel check_pipeline(const LoweredFunc& f, const std::vector<int64_t>& sizes = {}, uint32_t seed = 1) {
  RandomArgs args = random_args(f, seed, sizes);
  return check_jit_matches_interpreter(f, args.args);
}

struct Matmul {
  Tensor A, B, C;
  IterVar k;
  explicit Matmul(Expr n, Expr m, Expr l, DType t = f32) {
    A = placeholder({n, l}, t, "A");
    B = placeholder({l, m}, t, "B");
    k = reduce_axis(0, l, "k");
    C = compute(
        {n, m}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  }
};

}  // namespace

TEST_CASE("jit te: matmul with DESIGN.md's schedule on sizes the tiles do not divide") {
  Matmul mm(67, 45, 29);
  Schedule s = create_schedule(mm.C);
  auto [xo, yo, xi, yi] = s[mm.C].tile(mm.C.axis(0), mm.C.axis(1), 32, 32);
  auto [ko, ki] = s[mm.C].split(mm.k, 4);
  s[mm.C].reorder({xo, yo, ko, xi, ki, yi});
  s[mm.C].vectorize(yi);
  s[mm.C].parallel(xo);
  check_pipeline(lower(s, {mm.A, mm.B, mm.C}, "gemm"));
}

TEST_CASE("jit te: matmul, default and tiled, with symbolic sizes bound at call time") {
  Var n = size_var("n"), m = size_var("m"), l = size_var("l");
  Matmul mm(n, m, l);
  Schedule s = create_schedule(mm.C);
  LoweredFunc plain = lower(s, {mm.A, mm.B, mm.C}, "matmul");
  auto [xo, yo, xi, yi] = s[mm.C].tile(mm.C.axis(0), mm.C.axis(1), 8, 16);
  s[mm.C].parallel(xo);
  s[mm.C].unroll(xi);
  LoweredFunc tiled = lower(s, {mm.A, mm.B, mm.C}, "matmul_tiled");
  for (auto sizes :
       {std::vector<int64_t>{17, 33, 9}, std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{40, 16, 3}}) {
    CAPTURE(sizes[0]);
    // size_vars order is the lowering's; bind by name through the buffers' shapes instead.
    Buffer<float> a({sizes[0], sizes[2]}), b({sizes[2], sizes[1]}), c({sizes[0], sizes[1]});
    fill_random_view(a.view(), 3);
    fill_random_view(b.view(), 4);
    check_jit_matches_interpreter(plain, a, b, c);
    check_jit_matches_interpreter(tiled, a, b, c);
  }
}

TEST_CASE("jit te: float64 and int32 matmuls, fused and split axes") {
  for (DType t : {f64, i32}) {
    CAPTURE(t.str());
    Matmul mm(23, 19, 11, t);
    Schedule s = create_schedule(mm.C);
    IterVar fused = s[mm.C].fuse(mm.C.axis(0), mm.C.axis(1));
    auto [fo, fi] = s[mm.C].split(fused, 8);
    s[mm.C].parallel(fo);
    s[mm.C].vectorize(fi);
    check_pipeline(lower(s, {mm.A, mm.B, mm.C}, "mm_" + t.str()));
  }
}

TEST_CASE("jit te: 3x3 convolution over a zero-padded input, padding stage and inlined") {
  const int n = 30, kernel = 3, pad = 2;
  const int m = n - kernel + 2 * pad + 1;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor W = placeholder({kernel, kernel}, f32, "W");
  Tensor Apad = compute({n + 2 * pad, n + 2 * pad},
                        [&](Expr yy, Expr xx) {
                          return if_then_else(all(yy >= pad, yy < pad + n, xx >= pad, xx < pad + n),
                                              A(yy - pad, xx - pad), 0.0f);
                        },
                        "Apad", "", {"yy", "xx"});
  IterVar ry = reduce_axis(0, kernel, "ry"), rx = reduce_axis(0, kernel, "rx");
  Tensor B = compute({m, m},
                     [&](Expr yy, Expr xx) {
                       return sum(Apad(yy + ry, xx + rx) * W(ry, rx), {ry, rx});
                     },
                     "B", "", {"yy", "xx"});
  Schedule s = create_schedule(B);
  check_pipeline(lower(s, {A, W, B}, "conv2d"));
  s[Apad].compute_inline();
  auto [yo, yi] = s[B].split(B.axis(0), 5);
  auto [xo, xi] = s[B].split(B.axis(1), 8);
  s[B].reorder({yo, xo, yi, xi});
  s[B].parallel(yo);
  s[B].vectorize(xi);
  check_pipeline(lower(s, {A, W, B}, "conv2d_inline"));
}

TEST_CASE("jit te: a scan (cumulative sum over rows) with symbolic sizes") {
  Var m = size_var("m"), n = size_var("n");
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "s_state");
  Tensor init = compute({1, n}, [&](Expr, Expr i) { return X(0, i); }, "s_init", "", {"t", "i"});
  Tensor update =
      compute({m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "s_update", "", {"t", "i"});
  Tensor result = scan(init, update, state, {X}, "s_scan");
  Schedule s = create_schedule(result);
  LoweredFunc f = lower(s, {X, result}, "cumsum");
  for (auto [rows, cols] : {std::pair{7, 5}, std::pair{1, 3}, std::pair{33, 17}}) {
    Buffer<float> x({rows, cols}), out({rows, cols});
    fill_random_view(x.view(), 3);
    check_jit_matches_interpreter(f, x, out);
  }
}

TEST_CASE("jit te: sum, max, min and product reductions, over one and two axes") {
  const int rows = 37, cols = 21;
  Tensor A = placeholder({rows, cols}, f32, "A");
  IterVar k = reduce_axis(0, cols, "k");
  IterVar r = reduce_axis(0, rows, "r"), c = reduce_axis(0, cols, "c");
  Tensor S = compute(
      {rows}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  Tensor Mx = compute(
      {rows}, [&](Expr i) { return max(A(i, k), {k}); }, "Mx");
  Tensor Mn = compute(
      {cols}, [&](Expr j) { return min(A(r, j), {r}); }, "Mn");
  Tensor P = compute(
      {rows}, [&](Expr i) { return prod(A(i, k) * 0.5f + 1.0f, {k}); }, "P");
  Tensor T = compute(
      {1},
      [&](Expr) {
        return sum(A(r, c), {r, c});
      },
      "T");
  for (const Tensor& out : {S, Mx, Mn, P, T}) {
    CAPTURE(out.name());
    Schedule s = create_schedule(out);
    check_pipeline(lower(s, {A, out}, "reduce_" + out.name()));
  }
  SUBCASE("a split reduction axis, parallel rows") {
    Schedule s = create_schedule(S);
    auto [ko, ki] = s[S].split(S.reduce_axis(0), 4);
    s[S].reorder({S.axis(0), ko, ki});
    s[S].parallel(S.axis(0));
    check_pipeline(lower(s, {A, S}, "reduce_split"));
  }
}

TEST_CASE("jit te: elementwise with vectorize + parallel, symbolic length, many sizes") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A"), B = placeholder({n}, f32, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f + B(i); }, "C");
  Schedule s = create_schedule(C);
  auto [xo, xi] = s[C].split(C.axis(0), 64);
  auto [xio, xii] = s[C].split(xi, 16);
  s[C].parallel(xo);
  s[C].vectorize(xii);
  LoweredFunc f = lower(s, {A, B, C}, "axpb");
  for (int64_t size : {0, 1, 15, 16, 17, 1000, 4099}) {
    CAPTURE(size);
    check_pipeline(f, {size});
  }
}

TEST_CASE("jit te: a two-stage pipeline with compute_at and a half-precision stage") {
  const int n = 50, m = 33;
  Tensor A = placeholder({n, m}, f16, "A");
  Tensor B = compute(
      {n, m}, [&](Expr i, Expr j) { return A(i, j) * A(i, j) + cast(f16, 1.0f); }, "B");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return cast(f32, B(i, j)) * 0.25f; }, "C");
  Schedule s = create_schedule(C);
  auto [xo, xi] = s[C].split(C.axis(0), 8);
  s[B].compute_at(s[C], xo);
  s[C].parallel(xo);
  LoweredFunc f = lower(s, {A, C}, "two_stage");
  RandomArgs args = random_args(f, 9);
  JitCheckOptions options;
  options.exact_floats = true;
  check_jit_matches_interpreter(f, args.args, options);
}
