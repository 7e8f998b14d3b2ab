// cache_read, cache_write, set_scope and storage_align: the printed structure and, for every
// schedule, agreement with the unscheduled computation on sizes the splits do not divide.
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("cache_read inserts a copy stage that the reader reads instead") {
  Tensor A = placeholder({37, 23}, f32, "A");
  IterVar k = reduce_axis(0, 23, "k");
  Tensor B = compute(
      {37}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  Tensor AA = s.cache_read(A, "shared", {B});
  CHECK(AA.name() == "A.shared");
  LoweredFunc f = check_against_default(s, {A}, {B});
  std::string text = f.to_string();
  CHECK(contains(text, "allocate(A.shared: Pointer(shared float32), float32, [851])"));
  CHECK(contains(text, "A.shared[((ax0*23) + ax1)] = A[((ax0*23) + ax1)]"));
  CHECK(contains(text, "(B[i] + A.shared[((i*23) + k)])"));
}

TEST_CASE("cache_read at a consumer's loop holds only the consumer's tile") {
  Tensor A = placeholder({50, 40}, f32, "A");
  Tensor B = compute(
      {50, 40}, [&](Expr i, Expr j) { return A(i, j) * 3.0f; }, "B");
  Schedule s = create_schedule(B);
  Tensor AL = s.cache_read(A, "local", {B});
  auto [io, ii] = s[B].split(B.axis(0), 8);
  s[AL].compute_at(s[B], io);
  LoweredFunc f = check_against_default(s, {A}, {B});
  CHECK(contains(f.to_string(), "allocate(A.local: Pointer(local float32), float32, [320])"));
}

TEST_CASE("cache_write computes into the cache and copies out, also for reductions") {
  Tensor A = placeholder({31, 17}, f32, "A");
  Tensor B = placeholder({17, 29}, f32, "B");
  IterVar k = reduce_axis(0, 17, "k");
  Tensor C = compute(
      {31, 29}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor CL = s.cache_write(C, "local");
  auto [io, jo, ii, ji] = s[C].tile(C.axis(0), C.axis(1), 8, 8);
  s[CL].compute_at(s[C], jo);
  // The user's reduce_axis handle now names the cache stage's reduction.
  auto [ko, ki] = s[CL].split(k, 4);
  s[CL].reorder({ko, CL.axis(0), CL.axis(1), ki});
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "allocate(C.local: Pointer(local float32), float32, [64])"));
  CHECK_THROWS_WITH_AS(s[C].split(k, 2), doctest::Contains("moved into the cache stage 'C.local'"),
                       ScheduleError);
}

TEST_CASE("cache_write of a two-output compute caches both outputs") {
  Tensor A = placeholder({19, 13}, f32, "A");
  std::vector<Tensor> out = compute(
      {19, 13},
      [&](Expr i, Expr j) {
        return std::vector<Expr>{A(i, j) + 1.0f, A(i, j) * 2.0f};
      },
      "T");
  Schedule s = create_schedule(out);
  std::vector<Tensor> cached = s.cache_write(out, "local");
  CHECK(cached.size() == 2);
  check_against_default(s, {A}, out);
}

TEST_CASE("cache_write must come before the stage is split") {
  Tensor A = placeholder({8}, f32, "A");
  Tensor B = compute(
      {8}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  s[B].split(B.axis(0), 2);
  CHECK_THROWS_WITH_AS(s.cache_write(B, "local"), doctest::Contains("call cache_write first"), ScheduleError);
}

TEST_CASE("set_scope changes where an intermediate lives") {
  Tensor A = placeholder({16, 16}, f32, "A");
  IterVar k = reduce_axis(0, 16, "k");
  Tensor B = compute(
      {16}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Tensor C = compute(
      {16}, [&](Expr i) { return B(i) + 10.0f; }, "C");
  Schedule s = create_schedule(C);
  s[B].set_scope("shared");
  LoweredFunc f = check_against_default(s, {A}, {C});
  CHECK(
      contains(f.to_string(), "allocate(B: Pointer(shared float32), float32, [16]), storage_scope = shared"));
  CHECK_THROWS_WITH_AS(s[B].set_scope("texture"), doctest::Contains("unknown storage scope 'texture'"),
                       ScheduleError);
}

TEST_CASE("storage_align pads rows by TVM's rule") {
  Tensor A = placeholder({1024, 1024}, f32, "A");
  IterVar k = reduce_axis(0, 1024, "k");
  Tensor B = compute(
      {1024}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  Tensor AA = s.cache_read(A, "shared", {B});
  s[AA].storage_align(AA.axis(0), 100, 8);
  std::string text = lower(s, {A, B}, "aligned").to_string();
  CHECK(contains(text, "float32, [1134592])"));
  CHECK(contains(text, "A.shared[((ax0*1108) + ax1)]"));
  // Numerics on a smaller instance: 30x30 aligned to 8 with offset 3 -> stride 35.
  Tensor A2 = placeholder({30, 30}, f32, "A");
  IterVar k2 = reduce_axis(0, 30, "k");
  Tensor B2 = compute(
      {30}, [&](Expr i) { return sum(A2(i, k2), {k2}); }, "B");
  Schedule s2 = create_schedule(B2);
  Tensor AA2 = s2.cache_read(A2, "shared", {B2});
  s2[AA2].storage_align(AA2.axis(0), 8, 3);
  LoweredFunc f = check_against_default(s2, {A2}, {B2});
  CHECK(contains(f.to_string(), "(ax0*35)"));
  CHECK_THROWS_WITH_AS(s2[AA2].storage_align(AA2.axis(0), 8, 9), doctest::Contains("must be in [0, factor)"),
                       ScheduleError);
}
