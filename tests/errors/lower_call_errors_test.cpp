// Mistakes in lower() arguments and in calls of a lowered function end in a loom::Error that
// names the function, the argument and the fix; a rejected call writes no output.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>
#include "../support/interpret_checked.hpp"
#include "errors_test_util.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

namespace {

struct AddOne {
  static constexpr int n = 6;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "add_one");
};

}  // namespace

TEST_CASE("errors: a placeholder that is read but not passed to lower()") {
  AddOne g;
  Schedule s = create_schedule(g.C);
  CHECK_THROWS_WITH_AS(
      lower(s, {g.C}, "no_input"),
      Contains("lower 'no_input': placeholder 'A' is read but is not an argument; add it to the "
               "arguments (lower(s, {A, ...}, ...))"),
      loom::Error);
}

TEST_CASE("errors: lower() arguments listed twice, foreign, undefined or not integer") {
  AddOne g;
  Schedule s = create_schedule(g.C);
  CHECK_THROWS_WITH_AS(lower(s, {g.A, g.C, g.A}, "dup"),
                       Contains("lower 'dup': tensor 'A' is listed twice among the arguments"), loom::Error);
  Tensor Z = placeholder({3}, f32, "Z");
  CHECK_THROWS_WITH_AS(
      lower(s, {g.A, g.C, Z}, "foreign"),
      Contains("lower 'foreign': argument 'Z' is not part of the schedule; pass tensors that the "
               "schedule's outputs depend on"),
      loom::Error);
  CHECK_THROWS_WITH_AS(lower(s, {g.A, g.C, Tensor()}, "undef"),
                       Contains("lower 'undef': an argument is undefined"), loom::Error);
  Var m = size_var("m");
  CHECK_THROWS_WITH_AS(lower(s, {g.A, g.C, m, m}, "dup_var"),
                       Contains("lower 'dup_var': variable 'm' is listed twice among the arguments"),
                       loom::Error);
}

TEST_CASE("errors: an inlined intermediate passed to lower() as an argument, which nothing would write") {
  const int n = 4;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  s[B].compute_inline();
  // catalog: E-LOWER-INLINED-ARG
  CHECK_THROWS_WITH_AS(
      lower(s, {A, B, C}, "inlined_arg"),
      Contains("lower 'inlined_arg': argument 'B' is computed inline (compute_inline), so it "
               "is never stored; remove it from the arguments, or compute it at the root "
               "(compute_root) to get its values"),
      loom::Error);
  // The fix the message gives: B at the root is written in place.
  s[B].compute_root();
  LoweredFunc f = lower(s, {A, B, C}, "root_arg");
  Buffer<float> a({n}), b({n}), c({n});
  for (int i = 0; i < n; ++i) a(i) = static_cast<float>(i) - 1.5f;
  b.fill(kSentinel);
  c.fill(kSentinel);
  test::interpret_checked(f, {a, b, c});
  for (int i = 0; i < n; ++i) {
    CHECK(b(i) == a(i) * 2.0f);
    CHECK(c(i) == a(i) * 2.0f + 1.0f);
  }
}

TEST_CASE("errors: a size variable nobody can bind is reported by lower() and by the call, naming it") {
  Var m = size_var("m");
  // m is only the extent of an intermediate: no argument has it as a dimension.
  Tensor C = compute(
      {m}, [&](Expr i) { return cast(f32, i); }, "C");
  Tensor D = compute(
      {4}, [&](Expr i) { return C(i) * 2.0f; }, "D");
  // catalog: E-LOWER-UNBOUND-SIZE
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(D), {D}, "unbound"),
      Contains("lower 'unbound': the computation uses variable 'm', which is neither a dimension of an "
               "argument nor an argument; pass it as an argument"),
      loom::Error);
  // m only inside a shape expression cannot be bound from a buffer either.
  Tensor Q = placeholder({m * 2}, f32, "Q");
  Tensor R = compute(
      {m * 2}, [&](Expr i) { return Q(i); }, "R");
  // catalog: E-LOWER-SIZE-IN-EXPRESSION
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(R), {Q, R}, "expr_only"),
      Contains(
          "lower 'expr_only': size variable 'm' appears in argument shapes only inside "
          "expressions, so a call cannot bind it; pass 'm' itself as an argument (lower(s, {..., m}, ...))"),
      loom::Error);
  // At call time: a function whose size var no argument binds.
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  LoweredFunc f = lower(create_schedule(B), {A, B}, "needs_n");
  f.size_vars.push_back(m);  // as if the body needed m too
  Buffer<float> a({5}), b({5});
  b.fill(kSentinel);
  CHECK_THROWS_WITH_AS(
      test::interpret_checked(f, {a, b}),
      Contains("extent variable 'm' of kernel 'needs_n' is unbound at call time: pass a buffer whose "
               "shape has 'm' as a dimension, or pass 'm' itself as a scalar argument"),
      loom::ArgumentError);
  CHECK(untouched(b));
}

// End to end through compute + lower (runtime/arg_check_test.cpp covers every argument check on
// hand-built functions: counts, kinds, ranks, strides, size variables that disagree).
TEST_CASE("errors: a buffer of the wrong shape or dtype is rejected before anything is written") {
  AddOne g;
  const int n = AddOne::n;
  Buffer<float> a({n, n}), c({n, n});
  c.fill(kSentinel);
  Buffer<float> wide({n, n + 1});
  Buffer<double> doubles({n, n});
  CHECK_THROWS_WITH_AS(
      test::interpret_checked(g.f, {wide, c}),
      Contains("dimension 1 of argument 'A' is 7, but kernel 'add_one' expects 6: pass a buffer "
               "of shape [6, 6]"),
      loom::ArgumentError);
  CHECK(untouched(c));
  CHECK_THROWS_WITH_AS(
      test::interpret_checked(g.f, {doubles, c}),
      Contains("argument 'A' of kernel 'add_one' has float64 elements but the kernel expects float32: "
               "pass a loom::Buffer<float> (convert the data first)"),
      loom::ArgumentError);
  CHECK(untouched(c));
  // The output's shape is checked too: the good input must not lead to a partial write.
  Buffer<float> short_out({n - 1, n});
  short_out.fill(kSentinel);
  CHECK_THROWS_WITH_AS(test::interpret_checked(g.f, {a, short_out}),
                       Contains("dimension 0 of argument 'C' is 5, but kernel 'add_one' expects 6"),
                       loom::ArgumentError);
  CHECK(untouched(short_out));
  // The right call works afterwards.
  test::interpret_checked(g.f, {a, c});
  CHECK(c(0, 0) == a(0, 0) + 1.0f);
}

TEST_CASE("errors: scalar arguments that are not one integer or float, and a float value not passed") {
  const int n = 8;
  Tensor A = placeholder({n}, f32, "A");
  Var gamma("gamma", f32), v("v", f32.with_lanes(4)), ptr("ptr", handle_type);
  Tensor D = compute(
      {n}, [&](Expr i) { return A(i) * gamma; }, "D");
  Schedule s = create_schedule(D);
  CHECK_THROWS_WITH_AS(  // catalog: E-LOWER-UNLISTED-VALUE
      lower(s, {A, D}, "unlisted"),
      Contains("lower 'unlisted': the computation uses the float32 variable 'gamma', which is not an "
               "argument; pass it as one (lower(s, {..., gamma}, ...))"),
      loom::Error);
  CHECK_THROWS_WITH_AS(  // catalog: E-LOWER-SCALAR-TYPE
      lower(s, {A, D, gamma, v}, "lanes"),
      Contains("lower 'lanes': scalar argument 'v' has 4 lanes; declare it with one lane and broadcast it "
               "in the computation"),
      loom::Error);
  CHECK_THROWS_WITH_AS(lower(s, {A, D, gamma, ptr}, "handle"),
                       Contains("lower 'handle': scalar argument 'ptr' has type handle; a scalar argument is "
                                "an integer or a float (declare it Var(\"ptr\", i32) or Var(\"ptr\", f32))"),
                       loom::Error);
  LoweredFunc f = lower(s, {A, D, gamma}, "listed");
  CHECK(f.size_vars.empty());  // a float value is not a size
}

TEST_CASE("errors: an input smaller than the region the computation reads") {
  // C reads one row and column beyond itself; an A of C's shape is too small, and nothing runs.
  Var n = size_var("n"), m = size_var("m");
  Tensor A = placeholder({m, m}, f32, "A");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i + 1, j + 1) - A(i, j); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "diff");
  Buffer<float> a({5, 5}), c({5, 5});
  c.fill(7.0f);
  CHECK_THROWS_WITH_AS(  // catalog: E-ARG-INPUT-REGION
      interpret(f, {a, c}),
      Contains("argument 'A' of kernel 'diff': stage 'C' reads A(i + 1, j + 1), which along dimension 0 "
               "reaches indices 1 to 5, but dimension 0 of 'A' has extent 5 (indices 0 to 4): pass a larger "
               "'A' (at least 6 along dimension 0), or compute 'C' over fewer points"),
      ArgumentError);
  for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 7.0f);
  Buffer<float> big({6, 6});
  big.fill(1.0f);
  test::interpret_checked(f, {big, c});
  for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 0.0f);
}
