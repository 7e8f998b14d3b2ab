// Guards (likely(...)) appear exactly when a split does not divide its axis; storage flattening
// gives row-major flat indices, region-relative ones for attached buffers, and no tensor nodes.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../support/interpret_checked.hpp"
#include "lower_test_util.hpp"

using namespace loom;
using namespace loom::lower_test;

TEST_CASE("lower: a guard appears exactly when a split factor does not divide the extent") {
  for (int n : {96, 97, 100}) {
    for (int factor : {1, 3, 8, 16, 32}) {
      CAPTURE(n);
      CAPTURE(factor);
      Tensor A = placeholder({n}, f32, "A");
      Tensor C = compute(
          {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
      Schedule s = create_schedule(C);
      s[C].split(C.axis(0), factor);
      std::string text = lower(s, {A, C}, "guard").to_string();
      CHECK(contains(text, "likely(") == (n % factor != 0));
      if (n % factor != 0)
        CHECK(contains(text, "likely((((i.outer*" + std::to_string(factor) + ") + i.inner) < " +
                                 std::to_string(n) + "))"));
    }
  }
}

TEST_CASE("lower: guards per axis of a 2-D tile, of nparts splits and of a reduce axis") {
  const int m = 32, n = 30;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "C");
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  {
    Schedule s = create_schedule(C);
    s[C].tile(C.axis(0), C.axis(1), 8, 8);  // 32 divides, 30 does not
    std::string text = lower(s, {A, C}, "tile").to_string();
    CHECK(count_of(text, "likely(") == 1);
    CHECK(contains(text, "< 30)"));
    CHECK_FALSE(contains(text, "< 32)"));
  }
  {
    Schedule s = create_schedule(C);
    s[C].split(C.axis(0), NParts{4});  // 4 x 8 = 32: no guard
    s[C].split(C.axis(1), NParts{4});  // 4 x 8 = 32 > 30: guard
    std::string text = lower(s, {A, C}, "nparts").to_string();
    CHECK(count_of(text, "likely(") == 1);
  }
  {
    Schedule s = create_schedule(S);
    s[S].split(k, 4);  // 30 = 7 x 4 + 2: the update is guarded, the init is not
    std::string text = lower(s, {A, S}, "reduce").to_string();
    CHECK(count_of(text, "likely(") == 1);
    CHECK(contains(text, "S[i] = 0f32"));
  }
  {
    Schedule s = create_schedule(S);
    s[S].split(k, 5);  // 30 = 6 x 5
    CHECK_FALSE(contains(lower(s, {A, S}, "reduce_div").to_string(), "likely("));
  }
}

TEST_CASE("lower: a guard on a symbolic extent, and none for a split of a split that divides") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  s[C].split(C.axis(0), 4);
  CHECK(contains(lower(s, {A, C}, "sym").to_string(), "likely((((i.outer*4) + i.inner) < n))"));

  const int m = 64;
  Tensor B = placeholder({m}, f32, "B");
  Tensor D = compute(
      {m}, [&](Expr i) { return B(i) * 2.0f; }, "D");
  Schedule t = create_schedule(D);
  auto [o, in] = t[D].split(D.axis(0), 16);
  t[D].split(in, 4);
  t[D].split(o, NParts{2});
  CHECK_FALSE(contains(lower(t, {B, D}, "nested").to_string(), "likely("));
}

TEST_CASE("lower: storage flattening gives row-major flat indices for argument buffers") {
  const int x = 3, y = 4, z = 5;
  Tensor A = placeholder({x, y, z}, f32, "A");
  Tensor C =
      compute({z, y, x}, [&](Expr k, Expr j, Expr i) { return A(i, j, k) + 1.0f; }, "C", "", {"k", "j", "i"});
  LoweredFunc f = lower(create_schedule(C), {A, C}, "flat");
  std::string text = f.to_string();
  CHECK(contains(text, "C[(((k*12) + (j*3)) + i)] = (A[(((i*20) + (j*5)) + k)] + 1f32)"));
  // The flattened body holds no tensor-level nodes any more.
  KindCounter kinds = count_kinds(f.body);
  CHECK(kinds[IRNodeKind::Provide] == 0);
  CHECK(kinds[IRNodeKind::Realize] == 0);
  CHECK(kinds[IRNodeKind::ProducerLoad] == 0);
  CHECK(kinds[IRNodeKind::Store] == 1);
  CHECK(kinds[IRNodeKind::Load] == 1);
  Buffer<float> a = random_buffer({x, y, z}, 1), c({z, y, x});
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < x; ++i)
    for (int j = 0; j < y; ++j)
      for (int k = 0; k < z; ++k) CHECK(c(k, j, i) == a(i, j, k) + 1.0f);
}

TEST_CASE("lower: symbolic shapes flatten with symbolic strides") {
  Var m = size_var("m"), n = size_var("n");
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "C");
  std::string text = lower(create_schedule(C), {A, C}, "flat_sym").to_string();
  CHECK(contains(text, "C[((i*n) + j)] = (A[((i*n) + j)]*2f32)"));
}

TEST_CASE("lower: an attached buffer is indexed relative to its region, an intermediate at the root is not") {
  const int m = 10, n = 9;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "C");
  {
    Schedule s = create_schedule(C);
    auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 4, 3);
    s[B].compute_at(s[C], yo);
    LoweredFunc f = lower(s, {A, C}, "relative");
    std::string text = f.to_string();
    CHECK(contains(text, "allocate(B: Pointer(global float32), float32, [12])"));
    CHECK(contains(text, "(B[((i.inner*3) + j.inner)] + 1f32)"));  // tile-relative, row stride 3
    Buffer<float> a = random_buffer({m, n}, 2), c({m, n});
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) CHECK(c(i, j) == a(i, j) * 2.0f + 1.0f);
  }
  {
    Schedule s = create_schedule(C);
    std::string text = lower(s, {A, C}, "root").to_string();
    CHECK(contains(text, "allocate(B: Pointer(global float32), float32, [90])"));
    CHECK(contains(text, "B[((i*9) + j)] = (A[((i*9) + j)]*2f32)"));
  }
  {
    // A region that does not start at 0 along a dimension: the origin is subtracted.
    Tensor E = compute(
        {m - 2, n}, [&](Expr i, Expr j) { return B(i + 2, j) - B(i, j); }, "E");
    Schedule s = create_schedule(E);
    s[B].compute_at(s[E], E.axis(0));
    std::string sched = schedule_phase_text(s, {A, E});
    CHECK(contains(sched, "realize(B, [i:3, 0:9], \"global\")"));
    LoweredFunc f = lower(s, {A, E}, "offset");
    CHECK(contains(f.to_string(), "float32, [27])"));
    Buffer<float> a = random_buffer({m, n}, 3), e({m - 2, n});
    test::interpret_checked(f, {a, e});
    for (int i = 0; i < m - 2; ++i)
      for (int j = 0; j < n; ++j) CHECK(e(i, j) == a(i + 2, j) * 2.0f - a(i, j) * 2.0f);
  }
}

TEST_CASE("lower: a multi-output stage flattens to one allocation per output") {
  const int n = 12;
  Tensor A = placeholder({n}, f32, "A");
  std::vector<Tensor> T = compute(
      {n},
      [&](Expr i) {
        return std::vector<Expr>{A(i) + 1.0f, A(i) * 3.0f};
      },
      "T");
  Tensor C = compute(
      {n}, [&](Expr i) { return T[0](i) - T[1](i); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "tuple");
  std::string text = f.to_string();
  CHECK(contains(text, "allocate(T.v0: Pointer(global float32), float32, [12])"));
  CHECK(contains(text, "allocate(T.v1: Pointer(global float32), float32, [12])"));
  CHECK(count_kinds(f.body)[IRNodeKind::Allocate] == 2);
}
