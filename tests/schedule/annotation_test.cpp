// Loop annotations (parallel, vectorize, unroll, pragma) and thread bindings appear in the
// printed IR and do not change results; lower() leaves the schedule it is given unchanged.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "schedule_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// Whether the loop named `name` was vectorized: still a "vectorized" loop, or turned into
/// vector code (ramps) with no loop of that name left.
bool vectorized(const std::string& text, const std::string& name) {
  bool loop_left = contains(text, "for (" + name + ":");
  return (loop_left && contains(text, "\"vectorized\"")) || (!loop_left && contains(text, "ramp("));
}

/// Whether the loop named `name` was unrolled: an "unroll" loop, or no loop of that name left.
bool unrolled(const std::string& text, const std::string& name) {
  bool loop_left = contains(text, "for (" + name + ":");
  return loop_left ? contains(text, "\"unroll\"") : true;
}

}  // namespace

TEST_CASE("schedule: parallel marks the loop \"parallel\" and keeps the results") {
  const int m = 37, n = 5;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 8);
  s[C].parallel(o);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "for (i.outer: int32, 0, 5) \"parallel\""));
  CHECK_FALSE(contains(text, "for (i.inner: int32, 0, 8) \"parallel\""));
}

TEST_CASE("schedule: vectorize an inner loop (dividing and not dividing the extent)") {
  const int n = 37;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = placeholder({n}, f32, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * B(i) + 1.0f; }, "C");
  for (int factor : {4, 8, 37, 64}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    auto [o, in] = s[C].split(C.axis(0), factor);
    s[C].vectorize(in);
    std::string text = check_against_default(s, {A, B}, {C}).to_string();
    CHECK(vectorized(text, "i.inner"));
  }
}

TEST_CASE("schedule: unroll a loop of constant extent (and of an extent the split does not divide)") {
  const int n = 30;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) - 3.0f; }, "C");
  for (int factor : {3, 4, 7}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    auto [o, in] = s[C].split(C.axis(0), factor);
    s[C].unroll(in);
    std::string text = check_against_default(s, {A}, {C}).to_string();
    CHECK(unrolled(text, "i.inner"));
    if (!contains(text, "for (i.inner:")) CHECK(count_of(text, "C[") >= factor);  // one store per copy
  }
}

TEST_CASE("schedule: pragma prints as a loop annotation; pragma unroll/vectorize are the primitives") {
  const int n = 40;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + A(i); }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 5);
  s[C].pragma(o, "auto_unroll_max_step", 16);
  s[C].pragma(o, "debug_skip_region");
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "\"pragma_auto_unroll_max_step\"=16"));
  CHECK(contains(text, "\"pragma_debug_skip_region\"=1"));

  Schedule s2 = create_schedule(C);
  auto [o2, in2] = s2[C].split(C.axis(0), 5);
  s2[C].pragma(in2, "unroll");
  std::string text2 = check_against_default(s2, {A}, {C}).to_string();
  CHECK_FALSE(contains(text2, "pragma_unroll"));
  CHECK(unrolled(text2, "i.inner"));
}

TEST_CASE("schedule: parallel, unroll and vectorize together on one nest") {
  const int n = 37;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 0.5f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, i] = s[C].split(C.axis(0), 8);
  auto [oo, oi] = s[C].split(o, NParts{2});
  s[C].parallel(oo);
  s[C].unroll(oi);
  s[C].vectorize(i);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "\"parallel\""));
  CHECK(unrolled(text, "i.outer.inner"));
  CHECK(vectorized(text, "i.inner"));
}

TEST_CASE("schedule: bind to blockIdx.x and threadIdx.x gives thread_extent attributes") {
  const int m = 13, n = 10;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) + cast(f32, j); }, "C");
  Schedule s = create_schedule(C);
  IterVar f = s[C].fuse(C.axis(0), C.axis(1));
  auto [bx, tx] = s[C].split(f, 32);  // 130 elements: the last block is partial
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(tx, thread_axis("threadIdx.x"));
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "attr [IterVar(blockIdx.x: int32, \"blockIdx.x\")] \"thread_extent\" = 5"));
  CHECK(contains(text, "attr [IterVar(threadIdx.x: int32, \"threadIdx.x\")] \"thread_extent\" = 32"));
  CHECK(contains(text, "likely"));
  CHECK_FALSE(contains(text, "for ("));
}

TEST_CASE("schedule: a producer computed at a bound loop lives in shared or local memory, or is rejected") {
  const int n = 12;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return B(i, j) + B(i, n - 1 - j); }, "C");
  {
    // Shared by the block's threads: one row, fetched cooperatively (B's columns bound to the
    // threads too), then read reversed, so a barrier must separate the writes from the reads.
    Schedule s = create_schedule(C);
    s[C].bind(C.axis(0), thread_axis("blockIdx.x"));
    s[C].bind(C.axis(1), thread_axis("threadIdx.x"));
    s[B].compute_at(s[C], C.axis(0));
    s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
    std::string text = check_against_default(s, {A}, {C}).to_string();
    CHECK(contains(text, "allocate(B: Pointer(shared float32), float32, [12])"));
    CHECK(contains(text, "barrier(\"shared\")"));
    CHECK(text.find("B[threadIdx.x] = ") < text.find("barrier("));
  }
  {
    Tensor D = compute(
        {n, n}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "D");
    Schedule s = create_schedule(D);
    s[D].bind(D.axis(0), thread_axis("blockIdx.x"));
    s[D].bind(D.axis(1), thread_axis("threadIdx.x"));
    s[B].compute_at(s[D], D.axis(1));  // private to a thread: one element
    std::string text = check_against_default(s, {A}, {D}).to_string();
    CHECK(contains(text, "allocate(B: Pointer(local float32), float32, [1])"));
  }
  // TVM lowers a shared producer that no thread loop divides into every thread computing all of it:
  // a write/write race by CUDA's rules (the simulator reports it) and the work repeated per thread.
  // Loom rejects it when lowering and names the two fixes above: bind one of B's loops to the
  // threads, or compute B inside a thread loop.
  {
    Schedule s = create_schedule(C);
    s[C].bind(C.axis(0), thread_axis("blockIdx.x"));
    s[C].bind(C.axis(1), thread_axis("threadIdx.x"));
    s[B].compute_at(s[C], C.axis(0));
    CHECK_THROWS_WITH_AS(
        lower(s, {A, C}, "unbound_shared"),
        doctest::Contains("stage 'B' is stored in shared memory (it is computed at loop 'i' of stage "
                          "'C', which is bound to blockIdx.x), but none of its loops is bound to "
                          "threadIdx"),
        ScheduleError);
  }
  {
    // A serial loop inside the block loop is named with the bound loop around it; a scope the user
    // set stays shared wherever the stage is computed, so only the binding is offered.
    Schedule s = create_schedule(C);
    auto [io, ii] = s[C].split(C.axis(0), 4);
    s[C].bind(io, thread_axis("blockIdx.x"));
    s[C].bind(C.axis(1), thread_axis("threadIdx.x"));
    s[B].compute_at(s[C], ii);
    s[B].set_scope("shared");
    std::string message;
    try {
      lower(s, {A, C}, "explicit_shared");
    } catch (const ScheduleError& e) {
      message = e.what();
    }
    CHECK(contains(message,
                   "stage 'B' is stored in shared memory (it is computed at loop 'i.inner' of stage "
                   "'C', inside loop 'i.outer' bound to blockIdx.x)"));
    CHECK(contains(message, "to threadIdx.x, splitting it by the number of threads first if it is longer"));
    CHECK_FALSE(contains(message, "local memory"));
  }
  {
    // One thread per block: shared memory with nobody to race with is accepted.
    Schedule s = create_schedule(C);
    s[C].bind(C.axis(0), thread_axis("blockIdx.x"));
    s[B].compute_at(s[C], C.axis(0));
    CHECK(contains(check_against_default(s, {A}, {C}).to_string(), "Pointer(shared float32)"));
  }
}

TEST_CASE("schedule: lower() leaves the schedule unchanged (lowering twice gives the same text)") {
  const int n = 21;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor E = compute(
      {n, n}, [&](Expr i, Expr j) { return B(i, j) - 1.0f; }, "E");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(E(i, k) * A(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 8, 4);
  s[E].compute_inline();
  s[B].compute_at(s[C], yo);
  s[C].parallel(xo);
  std::vector<IterVar> leaves_before = s[C]->leaf_iter_vars;
  const size_t stages_before = s.stages().size();
  const AttachType e_attach = s[E]->attach_type;
  const Operation c_op = s[C]->op;

  std::string first = lower(s, {A, C}, "twice").to_string();
  std::string second = lower(s, {A, C}, "twice").to_string();
  CHECK(first == second);
  CHECK(same_iter_vars(s[C]->leaf_iter_vars, leaves_before));
  CHECK(s.stages().size() == stages_before);
  CHECK(s[E]->attach_type == e_attach);  // inlining happened on lower()'s copy only
  CHECK(s[C]->op.same_as(c_op));
  CHECK(s[B]->attach_stage == s[C].get());

  // The schedule can still be changed and lowered after being lowered.
  s[C].vectorize(yi);
  check_against_default(s, {A}, {C});
}

TEST_CASE("schedule: Schedule::copy is deep: scheduling the copy leaves the original alone") {
  const int n = 16;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  Schedule t = s.copy();
  auto [o, in] = t[C].split(C.axis(0), 4);
  t[B].compute_at(t[C], o);
  CHECK(s[C]->leaf_iter_vars.size() == 1);
  CHECK(s[B]->attach_type == AttachType::Root);
  CHECK(t[B]->attach_stage == t[C].get());
  check_against_default(t, {A}, {C});
  check_against_default(s, {A}, {C});
}
