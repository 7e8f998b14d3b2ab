// User mistakes in tensor expressions end in a loom::Error whose message names the compute,
// tensor or axis involved and says how to fix the call.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace loom;
using doctest::Contains;

namespace {
const int n = 10;
}

TEST_CASE("errors: compute shape rank differs from the lambda's number of indices") {
  Tensor A = placeholder({n, n}, f32, "A");
  CHECK_THROWS_WITH_AS(
      compute(
          {n, n}, [&](Expr i) { return A(i, i); }, "C"),
      Contains("compute 'C': the shape has 2 dimensions but the lambda takes 1 index argument; "
               "give the lambda one index per dimension, or make it take a const std::vector<Var>&"),
      loom::Error);
  CHECK_THROWS_WITH_AS(
      compute(
          {n}, [&](Expr i, Expr j) { return A(i, j); }, "D"),
      Contains("compute 'D': the shape has 1 dimension but the lambda takes 2 index arguments"), loom::Error);
  CHECK_THROWS_WITH_AS(
      compute({n}, [&](const std::vector<Var>& v) { return A(v[0], v[0]); }, "E", "", {"a", "b"}),
      Contains("compute 'E': 2 axis names given for 1 dimensions"), loom::Error);
}

TEST_CASE("errors: a tensor indexed with the wrong number of indices or a non-integer index") {
  Tensor A = placeholder({n, n}, f32, "A");
  Var i("i");
  // catalog: E-TE-INDEX-COUNT
  CHECK_THROWS_WITH_AS(
      A(i), Contains("tensor 'A' has 2 dimensions but A(i) indexes it with 1; pass exactly 2 indexes"),
      loom::Error);
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr x) { return A(x, x, x); }, "C"),
                       Contains("A(i, i, i) indexes it with 3"), loom::Error);
  Tensor V = placeholder({n}, f32, "V");
  CHECK_THROWS_WITH_AS(
      V(i, i), Contains("tensor 'V' has 1 dimension but V(i, i) indexes it with 2; pass exactly 1 index"),
      loom::Error);
  // catalog: E-TE-INDEX-TYPE
  CHECK_THROWS_WITH_AS(A(i, 0.5f),
                       Contains("index 1 of tensor 'A' must be a scalar integer expression, got float32"),
                       loom::Error);
  CHECK_THROWS_WITH_AS(A(i, i > 0),
                       Contains("index 1 of tensor 'A' must be a scalar integer expression, got bool"),
                       loom::Error);
}

TEST_CASE("errors: a reduce axis used outside the reducer that lists it") {
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k"), k2 = reduce_axis(0, n, "k2");
  // Not in any reducer.
  CHECK_THROWS_WITH_AS(
      compute(
          {n}, [&](Expr i) { return A(i, k); }, "C"),
      Contains("compute 'C': reduce axis 'k' is used outside of a reduction that lists it; wrap the "
               "expression that uses it in a reducer with the axis listed, e.g. sum(expr, {k})"),
      loom::Error);
  // In a reducer that does not list it.
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr i) { return sum(A(i, k) * A(k2, i), {k}); }, "D"),
                       Contains("compute 'D': reduce axis 'k2' is used outside of a reduction that lists it"),
                       loom::Error);
  // In the where condition only.
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr i) { return sum(A(i, k), {k}, k2 > 3); }, "E"),
                       Contains("reduce axis 'k2'"), loom::Error);
}

TEST_CASE("errors: a reduction nested inside a larger expression") {
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  const char* message =
      "compute 'C': a reduction (sum) must be the whole body of a compute, but one appears inside a larger "
      "expression; compute the reduction in a compute of its own and combine the results in another";
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr i) { return sum(A(i, k), {k}) + 1.0f; }, "C"),
                       Contains(message), loom::Error);
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr i) { return max(A(i, k), {k}) * sum(A(k, i), {k}); }, "C"),
                       Contains("a reduction (max) must be the whole body"), loom::Error);
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr i) { return exp(sum(A(i, k), {k})); }, "C"),
                       Contains("must be the whole body of a compute"), loom::Error);
}

TEST_CASE("errors: reducers given no axes, a data axis, a non-boolean where, or an empty reduce axis") {
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j); }, "C");
  // catalog: E-TE-REDUCE-NO-AXES
  CHECK_THROWS_WITH_AS(
      sum(A(0, 0), {}),
      Contains("sum(): no reduce axes given; list the axes to reduce over, e.g. sum(A(i, k), {k})"),
      loom::Error);
  CHECK_THROWS_WITH_AS(
      max(A(0, 0), {C.axis(0)}),
      Contains(
          "max(): axis 'i' is not a reduce axis; create reduction axes with reduce_axis(begin, end, name)"),
      loom::Error);
  CHECK_THROWS_WITH_AS(sum(A(0, k), {k}, Expr(k) + 1),
                       Contains("sum(): the 'where' condition must be boolean"), loom::Error);
  // catalog: E-TE-REDUCE-AXIS-EMPTY
  CHECK_THROWS_WITH_AS(reduce_axis(5, 3, "r"),
                       Contains("reduce_axis 'r' is empty: [5, 3); a reduction axis needs end > begin"),
                       loom::Error);
  CHECK_THROWS_WITH_AS(reduce_axis(4, 4, "r"), Contains("reduce_axis 'r' is empty"), loom::Error);
}

TEST_CASE("errors: multi-output computes mixing reductions, or reductions that are not one tuple reducer") {
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  CHECK_THROWS_WITH_AS(
      compute(
          {n},
          [&](Expr i) {
            return std::vector<Expr>{sum(A(i, k), {k}), A(i, 0)};
          },
          "M"),
      Contains("compute 'M': either every output of a multi-output compute is a reduction or none is"),
      loom::Error);
  CHECK_THROWS_WITH_AS(
      compute(
          {n},
          [&](Expr i) {
            return std::vector<Expr>{sum(A(i, k), {k}), max(A(i, k), {k})};
          },
          "T"),
      Contains(
          "compute 'T': the outputs of a multi-output reduction must be the values of one tuple reducer, in "
          "order (write auto [a, b] = my_reducer({x, y}, {k}) and return {a, b})"),
      loom::Error);
  CHECK_THROWS_WITH_AS(compute(
                           {n}, [&](Expr) { return std::vector<Expr>{}; }, "Z"),
                       Contains("compute 'Z': the lambda returned no values"), loom::Error);
}

TEST_CASE("errors: shapes with negative or non-integer extents") {
  // catalog: E-TE-SHAPE-NEGATIVE
  CHECK_THROWS_WITH_AS(placeholder({4, -3}, f32, "P"),
                       Contains("placeholder 'P': extent 1 of the shape is -3; extents must not be negative"),
                       loom::Error);
  CHECK_THROWS_WITH_AS(
      compute(
          {Expr(2.5f)}, [](Expr i) { return i; }, "C"),
      Contains("compute 'C': extent 0 of the shape must be a scalar integer (a constant or a size Var)"),
      loom::Error);
}

TEST_CASE("errors: asking a tensor for axes it does not have") {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j); }, "C");
  CHECK_THROWS_WITH_AS(
      A.axis(0), Contains("tensor 'A' is produced by a placeholder, which has no compute axes"), loom::Error);
  CHECK_THROWS_WITH_AS(C.axis(2), Contains("compute 'C' has 2 axes; axis(2) does not exist"), loom::Error);
  CHECK_THROWS_WITH_AS(C.reduce_axis(0),
                       Contains("compute 'C' has 0 reduce axes; reduce_axis(0) does not exist"), loom::Error);
}

TEST_CASE("errors: math functions and logic given the wrong types") {
  Tensor I = placeholder({n}, i32, "I");
  Var x("x");
  // catalog: E-TE-MATH-TYPE
  CHECK_THROWS_WITH_AS(exp(I(x)),
                       Contains("exp() needs a floating-point argument, got int32; write exp(cast(f32, x))"),
                       loom::Error);
  CHECK_THROWS_WITH_AS(pow(I(x), 2), Contains("pow() needs floating-point arguments, got int32"),
                       loom::Error);
  CHECK_THROWS_WITH_AS(
      I(x) && I(x), Contains("&& needs a boolean condition, got an expression of type int32"), loom::Error);
  CHECK_THROWS_WITH_AS(if_then_else(I(x), 1, 2), Contains("if_then_else needs a boolean condition"),
                       loom::Error);
  // catalog: E-TE-THREAD-TAG
  CHECK_THROWS_WITH_AS(thread_axis("threadIdx.w"),
                       Contains("thread_axis: unknown thread tag 'threadIdx.w'; use one of blockIdx.x/y/z, "
                                "threadIdx.x/y/z, vthread"),
                       loom::Error);
}

TEST_CASE("errors: scan and extern_compute given inconsistent tensors") {
  const int m = 6;
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "state");
  Tensor init = compute(
      {1, n}, [&](Expr, Expr i) { return X(0, i); }, "init");
  Tensor update = compute(
      {m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "update");
  // catalog: E-TE-SCAN-STATE
  CHECK_THROWS_WITH_AS(scan(init, update, update, {X}, "s"),
                       Contains("scan 's': state 'update' must be a placeholder (the scan fills it)"),
                       loom::Error);
  Tensor flat_init = compute(
      {n}, [&](Expr i) { return X(0, i); }, "flat_init");
  CHECK_THROWS_WITH_AS(
      scan(flat_init, update, state, {X}, "s"),
      Contains("scan 's': init 'flat_init', update 'update' and state 'state' must have the same rank "
               "(got 1, 2, 2)"),
      loom::Error);
  Tensor int_state = placeholder({m, n}, i32, "int_state");
  CHECK_THROWS_WITH_AS(scan(init, update, int_state, {X}, "s"),
                       Contains("scan 's': init, update and state must share one dtype"), loom::Error);
  CHECK_THROWS_WITH_AS(
      scan(std::vector<Tensor>{init}, {update, update}, {state}, {X}, "s"),
      Contains("scan 's': give the same number of init, update and state tensors (got 1, 2, 1)"),
      loom::Error);

  CHECK_THROWS_WITH_AS(
      extern_compute(
          std::vector<std::vector<Expr>>{{n}, {n}}, std::vector<DType>{f32}, {X}, [](auto&, auto&) {}, "ext"),
      Contains("extern_compute 'ext': give one dtype per output shape (got 2 shapes and 1 dtypes)"),
      loom::Error);
  CHECK_THROWS_WITH_AS(extern_compute({n}, f32, {X}, ExternFunction(), "ext"),
                       Contains("extern_compute 'ext': the function is empty"), loom::Error);
}
