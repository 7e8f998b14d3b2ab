// thread_allreduce on the GPU simulator: schedules lowered by Loom (rfactor + threadIdx sum, max,
// a two-value argmax with threadIdx.y rows kept apart) and hand-built ones (groups along x or y,
// inside a loop), with thread counts that are not multiples of 32. Results match C++ exactly.
#include <loom/core.hpp>
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <vector>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// The simulator's documented combination order: a binary tree over the group in linear order.
template <typename T, typename Op>
T tree_reduce(std::vector<T> v, Op op) {
  for (size_t s = 1; s < v.size(); s *= 2)
    for (size_t i = 0; i + s < v.size(); i += 2 * s) v[i] = op(v[i], v[i + s]);
  return v[0];
}

/// B[0] = sum(A): split the reduction by `threads`, rfactor the inner part, bind it to
/// threadIdx.x: each thread sums a strided share, then one allreduce combines the threads.
LoweredFunc rfactor_sum(int n, int threads) {
  Tensor A = placeholder({n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(k, threads);
  Tensor BF = s.rfactor(B, ki);
  IterVar tx = thread_axis("threadIdx.x");
  s[B].bind(s[B]->leaf_iter_vars.back(), tx);
  s[BF].compute_at(s[B], s[B]->leaf_iter_vars.back());
  return lower(s, {A, B}, "rfactor_sum");
}

}  // namespace

TEST_CASE("sim allreduce: rfactor + threadIdx.x sum, 32 threads and 40 (a partial second warp)") {
  for (auto [n, threads] : {std::pair{1024, 32}, std::pair{1000, 40}}) {
    CAPTURE(threads);
    Buffer<float> a({n}), b({1});
    fill_random(a, 41);
    SimReport report = simulate(rfactor_sum(n, threads), {a, b});
    std::vector<float> partial(static_cast<size_t>(threads), 0.0f);
    for (int t = 0; t < threads; ++t)
      for (int ko = 0; ko < n / threads; ++ko) partial[t] = partial[t] + a(ko * threads + t);
    CHECK(b(0) == tree_reduce(partial, [](float x, float y) { return x + y; }));
    REQUIRE(report.launches.size() == 1);
    CHECK(report.launches[0].block == SimDim3{threads, 1, 1});
  }
}

TEST_CASE("sim allreduce: max over 70 threads per block, one row per block") {
  const int m = 4, n = 70;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor B = compute(
      {m}, [&](Expr i) { return max(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  s[B].bind(B.axis(0), thread_axis("blockIdx.x"));
  s[B].bind(k, thread_axis("threadIdx.x"));
  Buffer<float> a({m, n}), b({m});
  fill_random(a, 42);
  SimReport report = simulate(lower(s, {A, B}, "row_max"), {a, b});
  for (int i = 0; i < m; ++i) {
    float best = a(i, 0);
    for (int j = 1; j < n; ++j) best = std::max(best, a(i, j));
    CHECK(b(i) == best);
  }
  CHECK(report.launches.at(0).grid == SimDim3{m, 1, 1});
  CHECK(report.launches.at(0).warps_per_block == 3);
}

TEST_CASE("sim allreduce: a two-value argmax over threadIdx.x, rows on threadIdx.y kept apart") {
  const int m = 3, n = 50;  // 150 threads: warps straddle rows
  Reducer argmax = comm_reducer(
      [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
        Expr take_y = y[1] > x[1];
        return std::vector<Expr>{select(take_y, y[0], x[0]), select(take_y, y[1], x[1])};
      },
      [](const std::vector<DType>& t) {
        return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])};
      },
      "argmax");
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  std::vector<Tensor> T = compute(
      {m},
      [&](Expr i) {
        return argmax({k, A(i, k)}, {k});
      },
      "T");
  Schedule s = create_schedule({T[0], T[1]});
  s[T[0]].bind(T[0].axis(0), thread_axis("threadIdx.y"));
  s[T[0]].bind(k, thread_axis("threadIdx.x"));
  Buffer<float> a({m, n}), value({m});
  Buffer<int32_t> index({m});
  // Small integers, so there are ties: the tree keeps the lower index (lhs) on a tie.
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) a(i, j) = static_cast<float>((i * 37 + j * 11) % 23);
  simulate(lower(s, {A, T[0], T[1]}, "argmax"), {a, index, value});
  for (int i = 0; i < m; ++i) {
    int best = 0;
    for (int j = 1; j < n; ++j)
      if (a(i, j) > a(i, best)) best = j;
    CHECK(index(i) == best);
    CHECK(value(i) == a(i, best));
  }
}

TEST_CASE(
    "sim allreduce: hand-built, groups along x or y, inside a loop, every thread gets its group's result") {
  // A block of 20 x 3 threads (2 warps); four rounds j of an integer sum of (tx+1)*(ty+2)*(j+1);
  // each thread stores what it received, so every member of every group is checked.
  const int nx = 20, ny = 3, rounds = 4;
  BufferParam out = buffer_param("out", i64, {rounds, ny, nx});
  Var tx("tx"), ty("ty"), j("j"), result("result", handle_type), x("x", i64), y("y", i64);
  auto kernel = [&](std::vector<Var> threads) {
    ThreadAllreduce r;
    r.lhs = {x};
    r.rhs = {y};
    r.combine = {Expr(x) + Expr(y)};
    r.identity = {make_const(i64, 0)};
    r.values = {cast(i64, (tx + 1) * (ty + 2) * (j + 1))};
    r.results = {result};
    r.threads = std::move(threads);
    Stmt round =
        seq({EvaluateNode::make(r.encode()), store(out, ld(result, i64, 0), (j * ny + ty) * nx + tx)});
    Stmt body = allocate(result, i64, 1, "local", loop(j, 0, rounds, round));
    return make_func("groups", {param(out)}, bind(ty, "threadIdx.y", ny, bind(tx, "threadIdx.x", nx, body)));
  };
  Buffer<int64_t> o({rounds, ny, nx});
  SUBCASE("reduce over threadIdx.x: one group per row") {
    simulate(kernel({tx}), {o});
    for (int r = 0; r < rounds; ++r)
      for (int b = 0; b < ny; ++b)
        for (int a = 0; a < nx; ++a) REQUIRE(o(r, b, a) == int64_t{210} * (b + 2) * (r + 1));
  }
  SUBCASE("reduce over threadIdx.y: one group per column") {
    simulate(kernel({ty}), {o});
    for (int r = 0; r < rounds; ++r)
      for (int b = 0; b < ny; ++b)
        for (int a = 0; a < nx; ++a) REQUIRE(o(r, b, a) == int64_t{9} * (a + 1) * (r + 1));
  }
  SUBCASE("reduce over both: the whole block") {
    simulate(kernel({tx, ty}), {o});
    for (int r = 0; r < rounds; ++r)
      for (int b = 0; b < ny; ++b)
        for (int a = 0; a < nx; ++a) REQUIRE(o(r, b, a) == int64_t{1890} * (r + 1));
  }
}

TEST_CASE("sim allreduce: in divergent control flow it is an error, like a barrier") {
  BufferParam out = buffer_param("out", f32, {64});
  Var tx("tx"), result("result", handle_type), x("x", f32), y("y", f32);
  ThreadAllreduce r;
  r.lhs = {x};
  r.rhs = {y};
  r.combine = {Expr(x) + Expr(y)};
  r.identity = {make_const(f32, 0.0)};
  r.values = {cast(f32, tx)};
  r.results = {result};
  r.threads = {tx};
  Stmt body =
      allocate(result, f32, 1, "local",
               IfThenElseNode::make(
                   tx < 40, seq({EvaluateNode::make(r.encode()), store(out, ld(result, f32, 0), tx)})));
  Buffer<float> o({64});
  CHECK_THROWS_WITH_AS(simulate(make_func("partial", {param(out)}, bind(tx, "threadIdx.x", 64, body)), {o}),
                       doctest::Contains("thread_allreduce #1 of kernel partial_kernel0 (in: if (tx < 40))"),
                       Error);
}
