// extern_compute (a C++ function computing a stage that later computes read) and scan (TVM's
// recurrence over the first axis) with one and two states, checked against plain C++.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

TEST_CASE("te: extern_compute computes a prefix sum that a later compute reads") {
  const int n = 29;
  Tensor A = placeholder({n}, f32, "A");
  int calls = 0;
  Tensor P = extern_compute(
      {n}, f32, {A},
      [&calls](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        ++calls;
        REQUIRE(in.size() == 1);
        REQUIRE(out.size() == 1);
        CHECK(in[0].shape == std::vector<int64_t>{n});
        CHECK(in[0].dtype == f32);
        const float* a = static_cast<const float*>(in[0].data);
        float* p = static_cast<float*>(out[0].data);
        float acc = 0.0f;
        for (int64_t i = 0; i < in[0].shape[0]; ++i) p[i] = acc += a[i];
      },
      "prefix");
  CHECK(P.op()->kind == OpKind::Extern);
  Tensor C = compute(
      {n}, [&](Expr i) { return P(i) * 2.0f + A(i); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C}, "prefix_then_scale");
  Buffer<float> a = random_buffer<float>({n}, 1), c({n});
  test::interpret_checked(f, {a, c});
  CHECK(calls == (test::interpret_checked_runs_jit() ? 2 : 1));  // once per run: interpreter, JIT
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
    acc += a(i);
    CHECK(c(i) == acc * 2.0f + a(i));
  }
}

TEST_CASE("te: extern_compute sorts the rows of a computed tensor, and its result feeds a reduction") {
  const int m = 6, n = 15;
  Tensor A = placeholder({m, n}, i32, "A");
  Tensor Neg = compute(
      {m, n}, [&](Expr i, Expr j) { return 0 - A(i, j); }, "Neg");
  Tensor Sorted = extern_compute(
      {m, n}, i32, {Neg},
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        const int32_t* x = static_cast<const int32_t*>(in[0].data);
        int32_t* y = static_cast<int32_t*>(out[0].data);
        const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
        for (int64_t r = 0; r < rows; ++r) {
          std::copy(x + r * in[0].strides[0], x + r * in[0].strides[0] + cols, y + r * out[0].strides[0]);
          std::sort(y + r * out[0].strides[0], y + r * out[0].strides[0] + cols);
        }
      },
      "sort_rows");
  IterVar k = reduce_axis(0, 3, "k");
  Tensor Top3 = compute(
      {m}, [&](Expr i) { return sum(Sorted(i, k), {k}); }, "Top3");  // three smallest of -A
  Schedule s = create_schedule({Sorted, Top3});
  LoweredFunc f = lower(s, {A, Sorted, Top3}, "sort_rows");
  Buffer<int32_t> a = random_buffer<int32_t>({m, n}, 2, -500, 500), sorted({m, n}), top({m});
  test::interpret_checked(f, {a, sorted, top});
  for (int i = 0; i < m; ++i) {
    std::vector<int32_t> row;
    for (int j = 0; j < n; ++j) row.push_back(-a(i, j));
    std::sort(row.begin(), row.end());
    for (int j = 0; j < n; ++j) CHECK(sorted(i, j) == row[static_cast<size_t>(j)]);
    CHECK(top(i) == row[0] + row[1] + row[2]);
  }
}

TEST_CASE("te: extern_compute with two outputs of different dtypes") {
  const int n = 9;
  Tensor A = placeholder({n}, f32, "A");
  std::vector<Tensor> out = extern_compute(
      {{n}, {1}}, {f32, i32}, {A},
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& outs) {
        const float* a = static_cast<const float*>(in[0].data);
        float* sq = static_cast<float*>(outs[0].data);
        int32_t* count = static_cast<int32_t*>(outs[1].data);
        *count = 0;
        for (int i = 0; i < n; ++i) {
          sq[i] = a[i] * a[i];
          *count += a[i] > 0.0f;
        }
      },
      "square_and_count");
  REQUIRE(out.size() == 2);
  CHECK(out[1].dtype() == i32);
  Tensor C = compute(
      {n}, [&](Expr i) { return out[0](i) + cast(f32, out[1](0)); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C}, "two_out_extern");
  Buffer<float> a = random_buffer<float>({n}, 3), c({n});
  test::interpret_checked(f, {a, c});
  int positives = 0;
  for (int i = 0; i < n; ++i) positives += a(i) > 0.0f;
  for (int i = 0; i < n; ++i) CHECK(c(i) == a(i) * a(i) + static_cast<float>(positives));
}

TEST_CASE("te: scan with one state (cumulative sum over rows) at several symbolic sizes") {
  Var m = size_var("m"), n = size_var("n");
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "state");
  Tensor init = compute({1, n}, [&](Expr, Expr i) { return X(0, i); }, "init", "", {"t", "i"});
  Tensor update =
      compute({m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "update", "", {"t", "i"});
  Tensor result = scan(init, update, state, {X}, "cumsum");
  CHECK(result.op()->kind == OpKind::Scan);
  Schedule s = create_schedule(result);
  LoweredFunc f = lower(s, {X, result}, "cumsum");
  for (auto [rows, cols] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{7, 5}, std::pair{13, 2}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    Buffer<float> x = random_buffer<float>({rows, cols}, 4), out({rows, cols});
    test::interpret_checked(f, {x, out});
    int bad = 0;
    for (int j = 0; j < cols; ++j) {
      float running = 0.0f;
      for (int t = 0; t < rows; ++t) {
        running += x(t, j);
        bad += out(t, j) != running;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("te: scan with two states that read each other (a coupled recurrence)") {
  const int m = 10, n = 4;
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor s1 = placeholder({m, n}, f32, "s1");
  Tensor s2 = placeholder({m, n}, f32, "s2");
  Tensor i1 = compute(
      {1, n}, [&](Expr, Expr i) { return X(0, i); }, "i1");
  Tensor i2 = compute(
      {1, n}, [&](Expr, Expr i) { return X(0, i) * 0.5f; }, "i2");
  // s1[t] = s1[t-1] + X[t];  s2[t] = s2[t-1] * 0.5 + s1[t-1] (reads the other state's old row)
  Tensor u1 = compute(
      {m, n}, [&](Expr t, Expr i) { return s1(t - 1, i) + X(t, i); }, "u1");
  Tensor u2 = compute(
      {m, n}, [&](Expr t, Expr i) { return s2(t - 1, i) * 0.5f + s1(t - 1, i); }, "u2");
  std::vector<Tensor> res = scan({i1, i2}, {u1, u2}, {s1, s2}, {X}, "coupled");
  REQUIRE(res.size() == 2);
  Schedule s = create_schedule(res);
  LoweredFunc f = lower(s, {X, res[0], res[1]}, "coupled");
  Buffer<float> x = random_buffer<float>({m, n}, 5), r1({m, n}), r2({m, n});
  test::interpret_checked(f, {x, r1, r2});
  for (int j = 0; j < n; ++j) {
    float a = x(0, j), b = x(0, j) * 0.5f;
    CHECK(r1(0, j) == a);
    CHECK(r2(0, j) == b);
    for (int t = 1; t < m; ++t) {
      float na = a + x(t, j), nb = b * 0.5f + a;
      a = na;
      b = nb;
      CHECK(r1(t, j) == a);
      CHECK(r2(t, j) == b);
    }
  }
}

TEST_CASE("te: scan whose init covers two rows (a Fibonacci-like recurrence over t-1 and t-2)") {
  const int m = 12;
  Tensor state = placeholder({m, 1}, i64, "state");
  Tensor init = compute(
      {2, 1}, [&](Expr t, Expr) { return cast(i64, t + 1); }, "init");
  Tensor update = compute(
      {m, 1}, [&](Expr t, Expr i) { return state(t - 1, i) + state(t - 2, i); }, "update");
  Tensor fib = scan(init, update, state, {}, "fib");
  Schedule s = create_schedule(fib);
  LoweredFunc f = lower(s, {fib}, "fib");
  Buffer<int64_t> out({m, 1});
  test::interpret_checked(f, {out});
  int64_t a = 1, b = 2;
  CHECK(out(0, 0) == 1);
  CHECK(out(1, 0) == 2);
  for (int t = 2; t < m; ++t) {
    int64_t c = a + b;
    a = b;
    b = c;
    CHECK(out(t, 0) == c);
  }
}
