// Argument checking of kernel calls (runtime/arg_check.hpp): every mismatch is an ArgumentError
// that names the kernel, the parameter and the fix, and a failed check leaves the output untouched.
#include <loom/runtime/arg_check.hpp>
#include <loom/sim/interpreter.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../support/interpret_checked.hpp"
#include "interp_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// gemm(A: [n, k], B: [k, m], C: [n, m]) with C = A x B, float32.
struct Gemm {
  Var n{"n"}, k{"k"}, m{"m"};
  BufferParam A = buffer_param("A", f32, {n, k});
  BufferParam B = buffer_param("B", f32, {k, m});
  BufferParam C = buffer_param("C", f32, {n, m});
  LoweredFunc func;

  Gemm() {
    Var i("i"), j("j"), r("r");
    Stmt init = loop(i, 0, n, loop(j, 0, m, store(C, Expr(0.0f), i * m + j)));
    Stmt update =
        loop(i, 0, n,
             loop(j, 0, m,
                  loop(r, 0, k,
                       store(C, load(C, i * m + j) + load(A, i * k + r) * load(B, r * m + j), i * m + j))));
    func = make_func("gemm", {param(A), param(B), param(C)}, SeqNode::make({init, update}), {n, k, m});
  }
};

constexpr float kSentinel = 12345.0f;

/// Expects an ArgumentError containing `message` and the output buffer still all sentinel.
void check_rejected(const LoweredFunc& f, const std::vector<KernelArg>& args, const Buffer<float>& output,
                    const std::string& message) {
  CHECK_THROWS_WITH_AS(test::interpret_checked(f, args), doctest::Contains(message.c_str()), ArgumentError);
  for (int64_t x = 0; x < output.num_elements(); ++x) REQUIRE(output.at_flat(x) == kSentinel);
}

Buffer<float> sentinel(std::vector<int64_t> shape) {
  Buffer<float> b(std::move(shape));
  b.fill(kSentinel);
  return b;
}

}  // namespace

TEST_CASE("arg_check: a good call binds every size and buffer") {
  Gemm g;
  Buffer<float> a({4, 3}), b({3, 5}), c({4, 5});
  BoundArgs bound = bind_arguments(g.func, {a, b, c});
  CHECK(bound.scalar(g.n) == 4);
  CHECK(bound.scalar(g.k) == 3);
  CHECK(bound.scalar(g.m) == 5);
  CHECK(bound.data(g.A.data) == a.data());
  CHECK(bound.data(g.C.data) == c.data());
  CHECK(bound.buffers.at(g.B.data.get()).begin == 0);
  CHECK(bound.buffers.at(g.B.data.get()).end == 15);

  fill_random(a, 31);
  fill_random(b, 32);
  interpret(g.func, bound);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      float expected = 0.0f;
      for (int r = 0; r < 3; ++r) expected = expected + a(i, r) * b(r, j);
      CHECK(c(i, j) == expected);
    }
  }
}

TEST_CASE("arg_check: wrong number of arguments lists the parameters") {
  Gemm g;
  Buffer<float> a({4, 3}), b({3, 5});
  CHECK_THROWS_WITH_AS(
      bind_arguments(g.func, {a, b}),
      "kernel 'gemm' takes 3 arguments (A, B, C) but was called with 2: pass one argument per "
      "parameter, in this order",
      ArgumentError);
}

TEST_CASE("arg_check: buffers and scalars in the wrong places") {
  Var n("n");
  BufferParam A = buffer_param("A", f32, {n});
  Var i("i");
  LoweredFunc f = make_func("scale", {param(A), scalar_param(n)},
                            loop(i, 0, n, store(A, load(A, i) * Expr(2.0f), i)), {n});
  Buffer<float> a = sentinel({6});
  check_rejected(f, {3, a}, a,
                 "argument 'A' of kernel 'scale' is a buffer of float32 but a scalar was passed: pass a "
                 "loom::Buffer<float>");
  check_rejected(f, {a, a}, a, "argument 'n' of kernel 'scale' is a scalar (int32) but a buffer was passed");
  check_rejected(f, {a, 2.5}, a,
                 "argument 'n' of kernel 'scale' is an integer (int32) but the floating-point value 2.5");
}

TEST_CASE("arg_check: element type") {
  Gemm g;
  Buffer<double> a({4, 3});
  Buffer<float> b({3, 5});
  Buffer<float> c = sentinel({4, 5});
  check_rejected(g.func, {a, b, c}, c,
                 "argument 'A' of kernel 'gemm' has float64 elements but the kernel expects float32: pass a "
                 "loom::Buffer<float>");
  Buffer<half> h({3, 5});
  check_rejected(g.func, {Buffer<float>({4, 3}), h, c}, c,
                 "argument 'B' of kernel 'gemm' has float16 elements");
}

TEST_CASE("arg_check: rank and null data") {
  Gemm g;
  Buffer<float> a({4, 3}), b({3, 5});
  Buffer<float> c = sentinel({4, 5});
  check_rejected(g.func, {Buffer<float>({12}), b, c}, c,
                 "argument 'A' of kernel 'gemm' has 1 dimension but the kernel expects 2 (shape [n, k])");
  BufferView null_view(static_cast<float*>(nullptr), {3, 5});
  check_rejected(g.func, {a, null_view, c}, c, "argument 'B' of kernel 'gemm' has a null data pointer");
}

TEST_CASE("arg_check: dimensions must agree on a size variable") {
  Gemm g;
  Buffer<float> a({8, 3}), b({3, 5});
  Buffer<float> c = sentinel({7, 5});
  check_rejected(g.func, {a, b, c}, c,
                 "dimension 0 of argument 'C' is 7, but 'n' is already 8 from argument 'A'");
  Buffer<float> c2 = sentinel({8, 5});
  check_rejected(g.func, {a, Buffer<float>({4, 5}), c2}, c2,
                 "dimension 0 of argument 'B' is 4, but 'k' is already 3 from argument 'A' (dimension 1)");
  check_rejected(g.func, {a, b, BufferView(c2.data(), {-1, 5})}, c2,
                 "dimension 0 of argument 'C' is negative");
}

TEST_CASE("arg_check: dimensions given by expressions are evaluated") {
  Var n("n");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n + 2});
  Var i("i");
  LoweredFunc f = make_func("pad", {param(A), param(B)}, loop(i, 0, n, store(B, load(A, i), i + 1)), {n});
  Buffer<float> a({6});
  Buffer<float> b = sentinel({7});
  check_rejected(f, {a, b}, b,
                 "dimension 0 of argument 'B' is 7, but kernel 'pad' expects (n + 2) = 8 (with n = 6)");
  Buffer<float> good({8});
  CHECK_NOTHROW(test::interpret_checked(f, {a, good}));
}

TEST_CASE("arg_check: strides") {
  Gemm g;
  Buffer<float> a({4, 3}), b({3, 5});
  Buffer<float> padded({4, 5}, {8, 1});  // rows padded to 8 elements
  padded.fill(kSentinel);
  check_rejected(
      g.func, {a, b, padded}, padded,
      "argument 'C' of kernel 'gemm' has strides [8, 1] but the kernel expects [5, 1] (dimension 0 has "
      "stride 8, expected 5)");
  SUBCASE("the stride of an extent-1 dimension is irrelevant") {
    Buffer<float> a1({1, 3}, {100, 1}), c1({1, 5});
    CHECK_NOTHROW(test::interpret_checked(g.func, {a1, b, c1}));
  }
  SUBCASE("declared strides are evaluated") {
    Var n("n");
    BufferParam P = buffer_param("P", f32, {n, 4});
    P.strides = {n * 0 + 8, 1};
    Var i("i");
    LoweredFunc f = make_func("strided", {param(P)}, loop(i, 0, n, store(P, Expr(1.0f), i * 8)), {n});
    Buffer<float> p({3, 4}, {8, 1});
    CHECK_NOTHROW(test::interpret_checked(f, {p}));
    CHECK(p(2, 0) == 1.0f);
    Buffer<float> compact = sentinel({3, 4});
    check_rejected(f, {compact}, compact, "the kernel expects [8, 1]");
  }
}

TEST_CASE("arg_check: every size variable must be bound") {
  Var n("n"), total("total");
  BufferParam A = buffer_param("A", f32, {n});
  Var i("i");
  LoweredFunc f = make_func("f", {param(A)}, loop(i, 0, total, store(A, Expr(1.0f), i % n)), {n, total});
  Buffer<float> a = sentinel({4});
  check_rejected(
      f, {a}, a,
      "extent variable 'total' of kernel 'f' is unbound at call time: pass a buffer whose shape has 'total' "
      "as a dimension, or pass 'total' itself as a scalar argument");
}

TEST_CASE("arg_check: scalar parameters bind their variable") {
  Var n("n"), count("count");
  BufferParam A = buffer_param("A", f32, {n});
  Var i("i");
  LoweredFunc f = make_func("fill_first", {param(A), scalar_param(count), scalar_param(n)},
                            loop(i, 0, count, store(A, Expr(1.0f), i)), {n});
  Buffer<float> a({5});
  BoundArgs bound = bind_arguments(f, {a, 3, int64_t{5}});
  CHECK(bound.scalar(count) == 3);
  interpret(f, bound);
  CHECK(a(2) == 1.0f);
  CHECK(a(3) == 0.0f);

  Buffer<float> s = sentinel({5});
  check_rejected(f, {s, 3, 6}, s, "argument 'n' is 6, but 'n' is already 5 from argument 'A' (dimension 0)");
  check_rejected(
      f, {s, int64_t{1} << 40, 5}, s,
      "argument 'count' of kernel 'fill_first' is 1099511627776, which does not fit 'count' (int32");
}

TEST_CASE("arg_check: a dimension too large for its int32 size variable") {
  Var n("n");
  BufferParam A = buffer_param("A", i8, {n});
  LoweredFunc f = make_func("big", {param(A)}, EvaluateNode::make(0), {n});
  int8_t byte = 0;
  BufferView huge(&byte, {int64_t{1} << 32});
  CHECK_THROWS_WITH_AS(
      bind_arguments(f, {huge}),
      doctest::Contains("dimension 0 of argument 'A' of kernel 'big' is 4294967296, which does not "
                        "fit 'n' (int32"),
      ArgumentError);
}
