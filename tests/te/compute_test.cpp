// compute() of rank 0 to 4, with lambdas over Exprs and over const std::vector<Var>&, custom axis
// names, and multi-output (tuple) computes; every result checked against a plain C++ loop.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

namespace {
const std::vector<Expr> kNoIndex{};
const std::vector<int64_t> kScalar{};
}  // namespace

TEST_CASE("te: compute of rank 0 over a rank-0 placeholder") {
  Tensor A = placeholder({}, f32, "A");
  Tensor C = compute(
      {}, [&]() { return A(kNoIndex) * 3.0f + 1.0f; }, "C");
  CHECK(C.ndim() == 0);
  Tensor D = compute(
      {}, [&](const std::vector<Var>& axes) { return C(kNoIndex) - cast(f32, Expr(int(axes.size()))); }, "D");
  Schedule s = create_schedule(D);
  LoweredFunc f = lower(s, {A, D}, "rank0");
  CHECK(f.to_string().find("for (") == std::string::npos);  // no loops at all
  Buffer<float> a(kScalar), d(kScalar);
  a.at_flat(0) = 2.5f;
  test::interpret_checked(f, {a, d});
  CHECK(d.at_flat(0) == 8.5f);
}

TEST_CASE("te: compute of rank 1, lambda over one Expr") {
  const int n = 23;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(n - 1 - i) * cast(f32, i); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C}, "rank1");
  Buffer<float> a = random_buffer<float>({n}, 1), c({n});
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < n; ++i) CHECK(c(i) == a(n - 1 - i) * static_cast<float>(i));
}

TEST_CASE("te: compute of rank 2 with custom axis names") {
  const int m = 5, n = 9;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor T = compute({n, m}, [&](Expr r, Expr c) { return A(c, r); }, "T", "transpose", {"row", "col"});
  CHECK(T.axis(0).name() == "row");
  CHECK(T.axis(1).name() == "col");
  CHECK(T.op()->tag == "transpose");
  Schedule s = create_schedule(T);
  LoweredFunc f = lower(s, {A, T}, "rank2");
  std::string text = f.to_string();
  CHECK(text.find("for (row: int32, 0, 9)") != std::string::npos);
  CHECK(text.find("for (col: int32, 0, 5)") != std::string::npos);
  Buffer<float> a = random_buffer<float>({m, n}, 2), t({n, m});
  test::interpret_checked(f, {a, t});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) CHECK(t(i, j) == a(j, i));
}

TEST_CASE("te: compute of rank 3, lambda over Exprs and over a vector of Vars give the same result") {
  const int x = 3, y = 4, z = 5;
  Tensor A = placeholder({x, y, z}, f32, "A");
  auto body = [&](Expr i, Expr j, Expr k) { return A(i, j, k) * 2.0f + cast(f32, i * 100 + j * 10 + k); };
  Tensor C1 = compute({x, y, z}, body, "C1");
  Tensor C2 = compute({x, y, z}, [&](const std::vector<Var>& v) { return body(v[0], v[1], v[2]); }, "C2", "",
                      {"p", "q", "r"});
  CHECK(C2.axis(2).name() == "r");
  Schedule s = create_schedule({C1, C2});
  LoweredFunc f = lower(s, {A, C1, C2}, "rank3");
  Buffer<float> a = random_buffer<float>({x, y, z}, 3), c1({x, y, z}), c2({x, y, z});
  test::interpret_checked(f, {a, c1, c2});
  for (int i = 0; i < x; ++i)
    for (int j = 0; j < y; ++j)
      for (int k = 0; k < z; ++k) {
        float expected = a(i, j, k) * 2.0f + static_cast<float>(i * 100 + j * 10 + k);
        CHECK(c1(i, j, k) == expected);
        CHECK(c2(i, j, k) == expected);
      }
}

TEST_CASE("te: default data-axis names skip the names of the compute's reduce axes") {
  // A batched matmul: three data axes and a reduce axis named k, as users name it.
  Tensor A = placeholder({2, 3, 4}, f32, "A"), B = placeholder({2, 4, 5}, f32, "B");
  IterVar k = reduce_axis(0, 4, "k");
  Tensor C = compute(
      {2, 3, 5}, [&](Expr b, Expr i, Expr j) { return sum(A(b, i, k) * B(b, k, j), {k}); }, "C");
  CHECK(C.axis(0).name() == "i");
  CHECK(C.axis(1).name() == "j");
  CHECK(C.axis(2).name() == "l");
  CHECK(C.reduce_axis(0).name() == "k");
  // Without a clash the defaults stay i, j, k; names the user gives are kept even if they clash.
  Tensor D = compute(
      {2, 3, 5}, [&](Expr b, Expr i, Expr j) { return A(b, i, 0) + B(b, 0, j); }, "D");
  CHECK(D.axis(2).name() == "k");
  IterVar r = reduce_axis(0, 4, "r");
  Tensor E = compute({2, 3, 5}, [&](Expr b, Expr i, Expr j) { return sum(A(b, i, r) * B(b, r, j), {r}); },
                     "E", "", {"b", "r", "j"});
  CHECK(E.axis(1).name() == "r");
  // The renamed axes compute the same values.
  LoweredFunc f = lower(create_schedule(C), {A, B, C}, "bmm");
  CHECK(f.to_string().find("for (l: int32, 0, 5)") != std::string::npos);
  Buffer<float> a({2, 3, 4}), b({2, 4, 5}), c({2, 3, 5});
  for (int64_t x = 0; x < a.num_elements(); ++x) a.at_flat(x) = static_cast<float>(x % 7) - 3;
  for (int64_t x = 0; x < b.num_elements(); ++x) b.at_flat(x) = static_cast<float>(x % 5) - 2;
  test::interpret_checked(f, {a, b, c});
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        float expected = 0;
        for (int p = 0; p < 4; ++p) expected += a(n, i, p) * b(n, p, j);
        CHECK(c(n, i, j) == expected);
      }
}

TEST_CASE("te: compute of rank 4 (NCHW layout change) with named axes") {
  const int N = 2, C = 3, H = 4, W = 5;
  Tensor A = placeholder({N, C, H, W}, f32, "A");
  Tensor B = compute({N, H, W, C}, [&](Expr n, Expr h, Expr w, Expr c) { return A(n, c, h, w); }, "NHWC", "",
                     {"n", "h", "w", "c"});
  Tensor D =
      compute({N, C, H, W}, [&](const std::vector<Var>& v) { return B(v[0], v[2], v[3], v[1]) + 1.0f; },
              "NCHW", "", {"n", "c", "h", "w"});
  Schedule s = create_schedule(D);
  LoweredFunc f = lower(s, {A, B, D}, "rank4");
  Buffer<float> a = random_buffer<float>({N, C, H, W}, 4), b({N, H, W, C}), d({N, C, H, W});
  test::interpret_checked(f, {a, b, d});
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) {
          CHECK(b(n, h, w, c) == a(n, c, h, w));
          CHECK(d(n, c, h, w) == a(n, c, h, w) + 1.0f);
        }
}

TEST_CASE("te: a multi-output (tuple) compute writes every output in one loop nest") {
  const int m = 6, n = 11;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = placeholder({m, n}, i32, "B");
  std::vector<Tensor> out = compute(
      {m, n},
      [&](Expr i, Expr j) {
        return std::vector<Expr>{A(i, j) + cast(f32, B(i, j)), B(i, j) * 3 - j, A(i, j) > 0.0f};
      },
      "T");
  REQUIRE(out.size() == 3);
  CHECK(out[0].name() == "T.v0");
  CHECK(out[2].name() == "T.v2");
  CHECK(out[0].op().same_as(out[1].op()));
  CHECK(out[1].dtype() == i32);
  CHECK(out[2].dtype() == boolean);
  Schedule s = create_schedule(out);
  CHECK(s[out[0]] == s[out[2]]);  // one stage for all outputs
  LoweredFunc f = lower(s, {A, B, out[0], out[1], out[2]}, "tuple");
  std::string text = f.to_string();
  // One loop nest: the i loop appears once.
  CHECK(text.find("for (i:") == text.rfind("for (i:"));

  Buffer<float> a = random_buffer<float>({m, n}, 5), sum({m, n});
  Buffer<int32_t> b = random_buffer<int32_t>({m, n}, 6, -1000, 1000), lin({m, n});
  Buffer<bool> pos({m, n});
  test::interpret_checked(f, {a, b, sum, lin, pos});
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      CHECK(sum(i, j) == a(i, j) + static_cast<float>(b(i, j)));
      CHECK(lin(i, j) == b(i, j) * 3 - j);
      CHECK(pos(i, j) == (a(i, j) > 0.0f));
    }
}

TEST_CASE("te: one output of a tuple compute can be consumed without the others being arguments") {
  const int n = 10;
  Tensor A = placeholder({n}, f32, "A");
  std::vector<Tensor> t = compute(
      {n},
      [&](Expr i) {
        return std::vector<Expr>{A(i) * 2.0f, A(i) - 1.0f};
      },
      "T");
  Tensor C = compute(
      {n}, [&](Expr i) { return t[0](i) * t[1](i); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C}, "tuple_internal");
  Buffer<float> a = random_buffer<float>({n}, 7), c({n});
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < n; ++i) CHECK(c(i) == (a(i) * 2.0f) * (a(i) - 1.0f));
}

TEST_CASE("te: tensors report their shape, dtype, op kind and input tensors") {
  Var n = size_var("n");
  Tensor A = placeholder({n, 4}, f64, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i, 0) + A(i, 3); }, "B");
  CHECK(A.ndim() == 2);
  CHECK(A.op()->kind == OpKind::Placeholder);
  CHECK(B.op()->kind == OpKind::Compute);
  CHECK(B.dtype() == f64);
  REQUIRE(B.op()->input_tensors().size() == 1);
  CHECK(B.op()->input_tensors()[0] == A);
  CHECK(B.shape()[0].same_as(n));
  CHECK(A(1, 2).same_as(A(1, 2)) == false);   // each read is a fresh expression...
  CHECK(structural_equal(A(1, 2), A(1, 2)));  // ...but structurally the same
}
