// create_group and reverse_compute_at: where stages are computed, checked against the
// unscheduled computation, and the errors for placements that would change results.
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("create_group places its members at the group's attach point") {
  const int n = 24;
  IterVar k = reduce_axis(0, n, "k");
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  Tensor D = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "D");
  Tensor E = compute(
      {n, n}, [&](Expr i, Expr j) { return D(i, j) * B(i, j); }, "E");
  Tensor F = compute(
      {n}, [&](Expr i) { return sum(E(i, k), {k}); }, "F");
  Schedule s = create_schedule(F);
  Stage g = s.create_group({E}, {A, B}, true);
  g.compute_at(s[F], F.reduce_axis(0));
  LoweredFunc f = check_against_default(s, {A, B}, {F});
  CHECK(contains(f.to_string(), "allocate(D: Pointer(global float32), float32, [1])"));
  CHECK(contains(f.to_string(), "allocate(E: Pointer(global float32), float32, [1])"));
}

TEST_CASE("a group can only go where every outside reader is enclosed") {
  const int n = 8;
  Tensor A = placeholder({n}, f32, "A");
  Tensor D = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "D");
  Tensor E = compute(
      {n}, [&](Expr i) { return D(i) * 2.0f; }, "E");
  Tensor F = compute(
      {n}, [&](Expr i) { return E(i) - 1.0f; }, "F");
  Tensor G = compute(
      {n}, [&](Expr i) { return E(i) + F(i); }, "G");
  Schedule s = create_schedule(G);
  Stage g = s.create_group({E}, {A});
  CHECK_THROWS_WITH_AS(g.compute_at(s[F], F.axis(0)), doctest::Contains("Legal locations"), ScheduleError);
}

TEST_CASE("reverse_compute_at computes an element-wise consumer per producer tile") {
  Tensor A = placeholder({45, 30}, f32, "A");
  Tensor B = compute(
      {45, 30}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {45, 30}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[B].split(B.axis(0), 8);
  s[C].reverse_compute_at(s[B], io);
  LoweredFunc f = check_against_default(s, {A}, {C});
  // C's loop over the tile sits inside B's outer loop, after B's inner loop.
  std::string text = f.to_string();
  CHECK(text.find("C[") > text.find("B[("));
}

TEST_CASE("reverse_compute_at of a row reduction over a row tile") {
  Tensor A = placeholder({21, 13}, f32, "A");
  Tensor B = compute(
      {21, 13}, [&](Expr i, Expr j) { return A(i, j) - 0.5f; }, "B");
  IterVar k = reduce_axis(0, 13, "k");
  Tensor C = compute(
      {21}, [&](Expr i) { return sum(B(i, k), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[B].split(B.axis(0), 4);
  s[C].reverse_compute_at(s[B], io);
  check_against_default(s, {A}, {C});
}

TEST_CASE("reverse_compute_at rejects a consumer that reads past the tile") {
  Tensor A = placeholder({16}, f32, "A");
  Tensor B = compute(
      {16}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {15}, [&](Expr i) { return B(i) + B(i + 1); }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[B].split(B.axis(0), 4);
  s[C].reverse_compute_at(s[B], io);
  CHECK_THROWS_WITH_AS(lower(s, {A, C}, "f"), doctest::Contains("reaches outside the tile"), ScheduleError);
  Tensor D = placeholder({16}, f32, "D");
  Tensor E = compute(
      {16}, [&](Expr i) { return D(i) + 1.0f; }, "E");
  Schedule s2 = create_schedule(E);
  CHECK_THROWS_WITH_AS(s2[E].reverse_compute_at(s[B], io), doctest::Contains("another schedule"),
                       ScheduleError);
}
