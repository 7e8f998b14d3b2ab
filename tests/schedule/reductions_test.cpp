// rfactor and set_store_predicate: factored reductions agree with the plain reduction on sizes
// the splits do not divide, for both factor axes and for a tuple (argmax) reducer.
#include "../support/interpret_checked.hpp"
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("rfactor of a split reduction, factor axis 0 and 1") {
  for (int factor_axis : {0, 1}) {
    Tensor A = placeholder({7, 101}, f32, "A");
    IterVar k = reduce_axis(0, 101, "k");
    Tensor B = compute(
        {7}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
    Schedule s = create_schedule(B);
    auto [ko, ki] = s[B].split(k, 16);
    Tensor BF = s.rfactor(B, ki, factor_axis);
    CHECK(BF.name() == "B.rf");
    CHECK(BF.ndim() == 2);
    LoweredFunc f = check_against_default(s, {A}, {B});
    CHECK(contains(f.to_string(), "k.inner.v"));
  }
}

TEST_CASE("rfactor keeps the data-parallel schedule and retires the reduce axes") {
  Tensor A = placeholder({45, 60}, f32, "A");
  IterVar k = reduce_axis(0, 60, "k");
  Tensor B = compute(
      {45}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [io, ii] = s[B].split(B.axis(0), 8);
  auto [ko, ki] = s[B].split(k, 7);
  Tensor BF = s.rfactor(B, ko);
  s[BF].compute_at(s[B], io);
  check_against_default(s, {A}, {B});
  CHECK_THROWS_WITH_AS(s[B].split(ki, 2), doctest::Contains("was factored out by rfactor into stage 'B.rf'"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[B].split(k, 2), doctest::Contains("now reduces over 'k.outer.v'"), ScheduleError);
}

TEST_CASE("leaf_axes lists a stage's current loops, rfactor's new axes included") {
  Tensor A = placeholder({45, 60}, f32, "A");
  IterVar k = reduce_axis(0, 60, "k");
  Tensor B = compute(
      {45}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto names = [](const std::vector<IterVar>& axes) {
    std::string out;
    for (const IterVar& a : axes) out += (out.empty() ? "" : " ") + a.name();
    return out;
  };
  CHECK(names(s[B].leaf_axes()) == "i k");
  auto [ko, ki] = s[B].split(k, 8);
  Tensor BF = s.rfactor(B, ki);
  CHECK(names(s[BF].leaf_axes()) == "k.inner i k.outer");
  CHECK(names(s[B].leaf_axes()) == "i k.inner.v");
  // The accessor's axes are the ones primitives take: reorder the factored stage with them.
  const std::vector<IterVar> leaves = s[BF].leaf_axes();
  s[BF].reorder({leaves[1], leaves[0], leaves[2]});
  CHECK(names(s[BF].leaf_axes()) == "i k.inner k.outer");
  check_against_default(s, {A}, {B});
}

TEST_CASE("rfactor of an argmax tuple reduction") {
  Tensor A = placeholder({5, 50}, f32, "A");
  Reducer argmax = comm_reducer(
      [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
        Expr take = y[1] > x[1];
        return std::vector<Expr>{select(take, y[0], x[0]), select(take, y[1], x[1])};
      },
      [](const std::vector<DType>& t) {
        return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])};
      },
      "argmax");
  IterVar k = reduce_axis(0, 50, "k");
  std::vector<Tensor> out = compute(
      {5},
      [&](Expr i) {
        return argmax({cast(f32, Expr(k)), A(i, k)}, {k});
      },
      "T");
  Schedule s = create_schedule(out);
  auto [ko, ki] = s[out[0]].split(k, 8);
  std::vector<Tensor> rf = s.rfactor_all(out[0], ki);
  CHECK(rf.size() == 2);
  check_against_default(s, {A}, out);
}

TEST_CASE("set_store_predicate guards the store") {
  Tensor A = placeholder({20}, f32, "A");
  Tensor B = compute(
      {20}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  s[B].set_store_predicate(B.axis(0).var() != 3);
  LoweredFunc f = lower(s, {A, B}, "f");
  CHECK(contains(f.to_string(), "if ((i != 3))"));
  Buffer<float> a({20}), b({20});
  for (int i = 0; i < 20; ++i) a(i) = static_cast<float>(i);
  b.fill(-1.0f);
  test::interpret_checked(f, {a, b});
  for (int i = 0; i < 20; ++i) CHECK(b(i) == (i == 3 ? -1.0f : a(i) + 1.0f));
}

TEST_CASE("set_store_predicate on an axis that was split afterwards guards through the new loops") {
  Tensor A = placeholder({20}, f32, "A");
  Tensor B = compute(
      {20}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  s[B].set_store_predicate(B.axis(0).var() < 13);
  auto [o, i] = s[B].split(B.axis(0), 8);
  s[B].vectorize(i);
  LoweredFunc f = lower(s, {A, B}, "f");
  Buffer<float> a({20}), b({20});
  for (int x = 0; x < 20; ++x) a(x) = static_cast<float>(x);
  b.fill(-1.0f);
  test::interpret_checked(f, {a, b});
  for (int x = 0; x < 20; ++x) CHECK(b(x) == (x < 13 ? a(x) + 1.0f : -1.0f));
}

TEST_CASE("a reduce loop bound to blockIdx is rejected with advice") {
  Tensor A = placeholder({64}, f32, "A");
  IterVar k = reduce_axis(0, 64, "k");
  Tensor B = compute(
      {1}, [&](Expr) { return sum(A(k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(k, 16);
  CHECK_THROWS_WITH_AS(s[B].bind(ko, thread_axis("blockIdx.x")),
                       doctest::Contains("cannot be bound to 'blockIdx.x'"), ScheduleError);
}
