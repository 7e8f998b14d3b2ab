// Symbolic shapes: a size_var used as an extent, one LoweredFunc interpreted at several sizes
// (including 1 and primes), and a size variable passed as a scalar argument.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

namespace {
const std::vector<int> kSizes = {1, 2, 3, 7, 13, 31, 64, 97};
}

TEST_CASE("te: a size_var extent is bound from the buffers, one compiled function for every size") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = placeholder({n}, f32, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * B(n - 1 - i) + cast(f32, i); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, B, C}, "sym_add");
  CHECK(f.to_string().find("Buffer(float32, [n])") != std::string::npos);
  REQUIRE(f.size_vars.size() == 1);
  CHECK(f.size_vars[0].same_as(n));
  InterpretedFunc compiled(f);
  for (int size : kSizes) {
    CAPTURE(size);
    Buffer<float> a = random_buffer<float>({size}, 1), b = random_buffer<float>({size}, 2), c({size});
    compiled({a, b, c});
    int bad = 0;
    for (int i = 0; i < size; ++i) bad += c(i) != a(i) * b(size - 1 - i) + static_cast<float>(i);
    CHECK(bad == 0);
  }
}

TEST_CASE("te: two independent size vars, a reduction over one of them, and a scheduled split") {
  Var m = size_var("m"), n = size_var("n");
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  Schedule s = create_schedule(S);
  auto [io, ii] = s[S].split(S.axis(0), 4);
  auto [ko, ki] = s[S].split(k, 3);
  LoweredFunc f = lower(s, {A, S}, "sym_rowsum");
  InterpretedFunc compiled(f);
  for (auto [rows, cols] :
       {std::pair{1, 1}, std::pair{1, 7}, std::pair{5, 1}, std::pair{13, 11}, std::pair{4, 3}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    Buffer<float> a = random_buffer<float>({rows, cols}, 3), out = filled<float>({rows}, 1e30f);
    compiled({a, out});
    int bad = 0;
    for (int i = 0; i < rows; ++i) {
      float e = 0.0f;
      for (int j = 0; j < cols; ++j) e += a(i, j);
      bad += out(i) != e;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("te: a size var that only the body uses is passed as a scalar argument") {
  Var n = size_var("n");
  Var scale = size_var("scale");
  Tensor A = placeholder({n}, i32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * scale + i; }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C, scale}, "scaled");
  REQUIRE(f.params.size() == 3);
  CHECK(f.params[2].kind == FuncParam::Kind::Scalar);
  CHECK(f.to_string().find("scale: int32") != std::string::npos);
  for (int size : {1, 5, 11}) {
    for (int factor : {-3, 0, 7}) {
      Buffer<int32_t> a = random_buffer<int32_t>({size}, 4, -100, 100), c({size});
      test::interpret_checked(f, {a, c, factor});
      for (int i = 0; i < size; ++i) CHECK(c(i) == a(i) * factor + i);
    }
  }
}

TEST_CASE("te: a size var that is both a dimension and a scalar argument must agree") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + cast(f32, n); }, "C");
  Schedule s = create_schedule(C);
  LoweredFunc f = lower(s, {A, C, n}, "n_twice");
  Buffer<float> a = random_buffer<float>({6}, 5), c({6});
  test::interpret_checked(f, {a, c, 6});
  for (int i = 0; i < 6; ++i) CHECK(c(i) == a(i) + 6.0f);
  CHECK_THROWS_WITH_AS(test::interpret_checked(f, {a, c, 5}), doctest::Contains("'n' is already 6"),
                       loom::ArgumentError);
}

TEST_CASE("te: a size var used in an extent expression (n + 2) is bound through n") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor P = compute(
      {n + 2}, [&](Expr i) { return if_then_else(all(i >= 1, i <= n), A(i - 1), 0.0f); }, "P");
  Schedule s = create_schedule(P);
  LoweredFunc f = lower(s, {A, P}, "pad_sym");
  for (int size : {1, 4, 17}) {
    Buffer<float> a = random_buffer<float>({size}, 6), p({size + 2});
    test::interpret_checked(f, {a, p});
    CHECK(p(0) == 0.0f);
    CHECK(p(size + 1) == 0.0f);
    for (int i = 0; i < size; ++i) CHECK(p(i + 1) == a(i));
  }
  Buffer<float> a({4}), wrong({5});
  CHECK_THROWS_WITH_AS(test::interpret_checked(f, {a, wrong}), doctest::Contains("expects (n + 2) = 6"),
                       loom::ArgumentError);
}

TEST_CASE("te: an int64 size var gives int64 loops") {
  Var n = size_var("n", i64);
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "C");
  CHECK(C.axis(0).var().dtype() == i64);
  Schedule s = create_schedule(C);
  s[C].split(C.axis(0), 8);
  LoweredFunc f = lower(s, {A, C}, "i64_loops");
  CHECK(f.to_string().find("i.outer: int64") != std::string::npos);
  for (int size : {1, 9, 16}) {
    Buffer<float> a = random_buffer<float>({size}, 7), c({size});
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < size; ++i) CHECK(c(i) == a(i) * 2.0f);
  }
}
