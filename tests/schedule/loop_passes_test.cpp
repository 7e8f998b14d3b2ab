// The loop transformations the lowering carries out for schedule annotations: vectorize (with
// predicated lanes for uneven splits), unroll, prefetch, double_buffer and tensorize.
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("vectorize turns a loop into ramps, predicating lanes past an uneven split") {
  Tensor A = placeholder({37, 45}, f32, "A");
  Tensor B = placeholder({37, 45}, f32, "B");
  Tensor C = compute(
      {37, 45}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
  CHECK(contains(f.to_string(), " if "));  // the predicate on the last, partial vector
}

TEST_CASE("vectorize of a reduction's data-parallel loop") {
  Tensor A = placeholder({19, 21}, f32, "A");
  Tensor B = placeholder({21, 24}, f32, "B");
  IterVar k = reduce_axis(0, 21, "k");
  Tensor C = compute(
      {19, 24}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].reorder({C.axis(0), jo, k, ji});
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
}

TEST_CASE("unroll copies the body once per iteration") {
  Tensor A = placeholder({10, 6}, f32, "A");
  Tensor C = compute(
      {10, 6}, [&](Expr i, Expr j) { return A(i, j) + 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 4);
  s[C].unroll(ii);
  LoweredFunc f = check_against_default(s, {A}, {C});
  CHECK(contains(f.to_string(), "for (j_3: int32, 0, 6)"));
}

TEST_CASE("prefetch and double_buffer do not change results") {
  Tensor A = placeholder({33, 50}, f32, "A");
  Tensor B = placeholder({50, 27}, f32, "B");
  IterVar k = reduce_axis(0, 50, "k");
  Tensor C = compute(
      {33, 27}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AL = s.cache_read(A, "local", {C});
  auto [ko, ki] = s[C].split(k, 8);
  s[AL].compute_at(s[C], ko);
  s[AL].double_buffer();
  s[C].prefetch(B, ko, 1);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  std::string text = f.to_string();
  CHECK(contains(text, "prefetch(B["));
  CHECK(contains(text, "allocate(A.local: Pointer(local float32), float32, [16])"));  // two halves of 8
  CHECK(contains(text, "floormod((k.outer + 1), 2)"));
}

namespace {
TensorIntrin vector_add_intrin(int width) {
  Tensor x = placeholder({width}, f32, "x");
  Tensor y = placeholder({width}, f32, "y");
  Tensor z = compute(
      {width}, [&](Expr i) { return x(i) + y(i); }, "z");
  return decl_tensor_intrin(
      z,
      [width](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& out) {
        Var i("lane");
        return ForNode::make(i, 0, width, ForKind::Serial,
                             out[0].store({i}, in[0].load({i}) + in[1].load({i})));
      },
      "vadd" + std::to_string(width));
}
}  // namespace

TEST_CASE("tensorize replaces a matching loop nest by the intrinsic's code") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "for (lane: int32, 0, 8)"));
}

TEST_CASE("tensorize reports what differs") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) - B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s, {A, B, C}, "f"),
                       doctest::Contains("they first differ at '(x[j.inner] - y[j.inner])'"), ScheduleError);
  Schedule s2 = create_schedule(C);
  auto [jo2, ji2] = s2[C].split(C.axis(1), 4);
  s2[C].tensorize(ji2, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s2, {A, B, C}, "f"), doctest::Contains("data-parallel [j.inner: 4]"),
                       ScheduleError);
}
