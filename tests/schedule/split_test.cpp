// split by factor and by nparts on sizes the factors do not divide (97 by 8/16/32), factors above
// the extent and 1, nested and 2-D/reduce splits; each checked against the unscheduled result.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "schedule_test_util.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("schedule: split by factor over 97 elements with factors 1, 8, 16, 32 and 200") {
  const int n = 97;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 3.0f - 1.0f; }, "C");
  for (int factor : {1, 8, 16, 32, 97, 200}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    auto [outer, inner] = s[C].split(C.axis(0), factor);
    CHECK(outer.name() == "i.outer");
    CHECK(inner.name() == "i.inner");
    REQUIRE(s[C]->leaf_iter_vars.size() == 2);
    CHECK(s[C]->leaf_iter_vars[0].same_as(outer));
    CHECK(s[C]->leaf_iter_vars[1].same_as(inner));
    std::string text = check_against_default(s, {A}, {C}).to_string();
    const int outer_extent = (n + factor - 1) / factor;
    if (outer_extent > 1)
      CHECK(contains(text, "for (i.outer: int32, 0, " + std::to_string(outer_extent) + ")"));
    if (factor > 1) CHECK(contains(text, "for (i.inner: int32, 0, " + std::to_string(factor) + ")"));
    CHECK(contains(text, "likely") == (n % factor != 0));
  }
}

TEST_CASE("schedule: split by nparts over 97 elements (1, 3, 8, 16, 32, 97, 200 parts)") {
  const int n = 97;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + A(n - 1 - i); }, "C");
  for (int parts : {1, 3, 8, 16, 32, 97, 200}) {
    CAPTURE(parts);
    Schedule s = create_schedule(C);
    auto [outer, inner] = s[C].split(C.axis(0), NParts{parts});
    std::string text = check_against_default(s, {A}, {C}).to_string();
    const int inner_extent = (n + parts - 1) / parts;
    if (parts > 1) CHECK(contains(text, "for (i.outer: int32, 0, " + std::to_string(parts) + ")"));
    if (inner_extent > 1)
      CHECK(contains(text, "for (i.inner: int32, 0, " + std::to_string(inner_extent) + ")"));
    CHECK(contains(text, "likely") == (parts * inner_extent != n));
  }
}

TEST_CASE("schedule: split(x, Factor{...}) and split(x, Expr) are the same split") {
  const int n = 50;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * A(i); }, "C");
  Schedule s1 = create_schedule(C), s2 = create_schedule(C);
  s1[C].split(C.axis(0), Factor{16});
  s2[C].split(C.axis(0), Expr(16));
  CHECK(lower(s1, {A, C}, "f").to_string() == lower(s2, {A, C}, "f").to_string());
}

TEST_CASE("schedule: nested splits (split the outer, then the inner of a split)") {
  const int n = 97;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) - 0.5f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 16);
  auto [oo, oi] = s[C].split(o, 3);
  auto [io, ii] = s[C].split(in, NParts{5});
  CHECK(oo.name() == "i.outer.outer");
  CHECK(ii.name() == "i.inner.inner");
  CHECK(s[C]->leaf_iter_vars.size() == 4);
  check_against_default(s, {A}, {C});
}

TEST_CASE("schedule: split both axes of a 2-D compute and the reduce axis of a matmul") {
  const int m = 37, n = 23, k = 29;
  Tensor A = placeholder({m, k}, f32, "A");
  Tensor B = placeholder({k, n}, f32, "B");
  IterVar r = reduce_axis(0, k, "r");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
  for (int factor : {4, 8, 32}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    s[C].split(C.axis(0), factor);
    s[C].split(C.axis(1), NParts{3});
    auto [ro, ri] = s[C].split(r, factor);
    CHECK(ro.name() == "r.outer");
    std::string text = check_against_default(s, {A, B}, {C}).to_string();
    CHECK(contains(text, "for (r.outer") == (factor < k));  // an outer loop of extent 1 is omitted
  }
}

TEST_CASE("schedule: a split of an axis of extent 1 and of a rank-0 reduction's axis") {
  Tensor A = placeholder({1, 13}, f32, "A");
  IterVar r = reduce_axis(0, 13, "r");
  Tensor C = compute(
      {1}, [&](Expr i) { return sum(A(i, r), {r}); }, "C");
  Tensor D = compute(
      {}, [&]() { return max(A(0, r), {r}); }, "D");
  Schedule s = create_schedule({C, D});
  s[C].split(C.axis(0), 4);
  s[C].split(r, 5);
  s[D].split(r, NParts{2});
  check_against_default(s, {A}, {C, D});
}

TEST_CASE("schedule: split factor expressions of another integer type are cast to the axis type") {
  const int n = 40;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, i] = s[C].split(C.axis(0), Expr(int64_t{6}));
  CHECK(o.var().dtype() == i32);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK_FALSE(contains(text, "i64"));
}

TEST_CASE("split: a symbolic factor or part count is checked when the function runs") {
  // A factor of -1 would give the outer loop extent floordiv(f + 5, f) = -4: no iteration, and a
  // call that returns with C unwritten. The lowered function asserts f > 0 instead.
  const int n = 6;
  Var f = size_var("f");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  for (bool by_factor : {true, false}) {
    CAPTURE(by_factor);
    Schedule s = create_schedule(C);
    if (by_factor) {
      s[C].split(C.axis(0), Factor{Expr(f)});
    } else {
      s[C].split(C.axis(0), NParts{Expr(f)});
    }
    LoweredFunc fn = lower(s, {A, C, f}, "symbolic_factor");
    Buffer<float> a = random_buffer({n}, 1), c({n});
    c.fill(kSentinel);
    CHECK_THROWS_WITH_AS(
        test::interpret_checked(fn, {a, c, -1}),
        doctest::Contains(by_factor ? "stage 'C': the split of axis 'i' by Factor{f} needs a "
                                      "positive value when the function runs; pass f > 0"
                                    : "by NParts{f} needs a positive value"),
        Error);
    for (int i = 0; i < n; ++i) CHECK(c(i) == kSentinel);
    for (int factor : {1, 4, 7}) {
      test::interpret_checked(fn, {a, c, factor});
      for (int i = 0; i < n; ++i) CHECK(c(i) == a(i) + 1.0f);
    }
  }
}
