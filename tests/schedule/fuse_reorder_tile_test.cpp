// fuse (2 and 3 adjacent axes, then split the fused axis), reorder (full and partial, with
// reduce axes) and tile, each checked numerically against the unscheduled computation.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "schedule_test_util.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("schedule: fuse two adjacent axes, then split the fused axis") {
  const int m = 13, n = 11;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * cast(f32, i - j); }, "C");
  Schedule plain = create_schedule(C);
  IterVar f0 = plain[C].fuse(C.axis(0), C.axis(1));
  CHECK(f0.name() == "i.j.fused");
  std::string text = check_against_default(plain, {A}, {C}).to_string();
  CHECK(contains(text, "for (i.j.fused: int32, 0, 143)"));

  for (int factor : {8, 16, 32, 200}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    IterVar f = s[C].fuse(C.axis(0), C.axis(1));
    auto [fo, fi] = s[C].split(f, factor);
    CHECK(fo.name() == "i.j.fused.outer");
    check_against_default(s, {A}, {C});
  }
}

TEST_CASE("schedule: fuse three axes with fuse({...}), and fuse inner axes only") {
  const int x = 5, y = 7, z = 3;
  Tensor A = placeholder({x, y, z}, f32, "A");
  Tensor C = compute(
      {x, y, z}, [&](Expr i, Expr j, Expr k) { return A(i, j, k) + cast(f32, i * 100 + j * 10 + k); }, "C");
  Schedule s = create_schedule(C);
  IterVar f = s[C].fuse({C.axis(0), C.axis(1), C.axis(2)});
  CHECK(s[C]->leaf_iter_vars.size() == 1);
  auto [fo, fi] = s[C].split(f, 16);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "floordiv"));
  CHECK(contains(text, "floormod"));

  Schedule s2 = create_schedule(C);
  IterVar jk = s2[C].fuse(C.axis(1), C.axis(2));
  CHECK(s2[C]->leaf_iter_vars.size() == 2);
  CHECK(s2[C]->leaf_iter_vars[1].same_as(jk));
  s2[C].split(jk, NParts{4});
  check_against_default(s2, {A}, {C});
}

TEST_CASE("schedule: fuse the two halves of a non-dividing split back together") {
  const int n = 97;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 0.25f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, i] = s[C].split(C.axis(0), 8);
  IterVar f = s[C].fuse(o, i);
  s[C].split(f, 13);
  check_against_default(s, {A}, {C});
}

TEST_CASE("schedule: fuse two reduce axes of a reduction") {
  const int m = 6, kh = 5, kw = 7;
  Tensor A = placeholder({m, kh, kw}, f32, "A");
  IterVar ry = reduce_axis(0, kh, "ry"), rx = reduce_axis(0, kw, "rx");
  Tensor C = compute(
      {m},
      [&](Expr i) {
        return sum(A(i, ry, rx), {ry, rx});
      },
      "C");
  Schedule s = create_schedule(C);
  IterVar r = s[C].fuse(ry, rx);
  CHECK(r.is_reduce());
  s[C].split(r, 8);
  check_against_default(s, {A}, {C});
}

TEST_CASE("schedule: reorder all axes of a 3-D compute, and a partial reorder keeps the others in place") {
  const int x = 4, y = 6, z = 5;
  Tensor A = placeholder({x, y, z}, f32, "A");
  Tensor C = compute(
      {x, y, z}, [&](Expr i, Expr j, Expr k) { return A(i, j, k) * 2.0f; }, "C");
  IterVar i = C.axis(0), j = C.axis(1), k = C.axis(2);
  Schedule s = create_schedule(C);
  s[C].reorder({k, i, j});
  CHECK(same_iter_vars(s[C]->leaf_iter_vars, {k, i, j}));
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(text.find("for (k:") < text.find("for (i:"));
  CHECK(text.find("for (i:") < text.find("for (j:"));

  // TVM semantics: the listed loops take the positions they occupy, in the order given.
  Schedule s2 = create_schedule(C);
  s2[C].reorder({k, i});
  CHECK(same_iter_vars(s2[C]->leaf_iter_vars, {k, j, i}));
  check_against_default(s2, {A}, {C});
}

TEST_CASE("schedule: reorder split loops and reduce axes of a matmul (k outermost, then innermost)") {
  const int m = 19, n = 21, kk = 17;
  Tensor A = placeholder({m, kk}, f32, "A");
  Tensor B = placeholder({kk, n}, f32, "B");
  IterVar k = reduce_axis(0, kk, "k");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  {
    Schedule s = create_schedule(C);
    s[C].reorder({k, C.axis(0), C.axis(1)});  // the init nest goes before the k loop
    std::string text = check_against_default(s, {A, B}, {C}).to_string();
    CHECK(text.find("for (k:") < text.rfind("for (i:"));
  }
  {
    Schedule s = create_schedule(C);
    auto [ko, ki] = s[C].split(k, 4);
    auto [io, ii] = s[C].split(C.axis(0), 8);
    s[C].reorder({io, ko, C.axis(1), ii, ki});
    check_against_default(s, {A, B}, {C});
  }
  {
    Schedule s = create_schedule(C);
    auto [ko, ki] = s[C].split(k, 5);
    s[C].reorder({ko, C.axis(0), ki, C.axis(1)});  // data axes between reduce loops
    check_against_default(s, {A, B}, {C});
  }
}

TEST_CASE("schedule: tile a 2-D compute with factors that do not divide it") {
  const int m = 37, n = 29;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) + A(m - 1 - i, n - 1 - j); }, "C");
  for (auto [fx, fy] : {std::pair{8, 8}, std::pair{16, 4}, std::pair{32, 32}, std::pair{1, 64}}) {
    CAPTURE(fx);
    CAPTURE(fy);
    Schedule s = create_schedule(C);
    auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), fx, fy);
    CHECK(same_iter_vars(s[C]->leaf_iter_vars, {xo, yo, xi, yi}));
    check_against_default(s, {A}, {C});
  }
}

TEST_CASE("schedule: the DESIGN.md matmul schedule (tile, split k, reorder) on a size tiles do not divide") {
  const int n = 45;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 32, 32);
  auto [ko, ki] = s[C].split(k, 4);
  s[C].reorder({xo, yo, ko, xi, ki, yi});
  s[C].vectorize(yi);
  s[C].parallel(xo);
  check_against_default(s, {A, B}, {C});
}
