// The reference interpreter on whole kernels built by hand: elementwise, reduction, matmul (timed),
// vectors with predicates, lazy if_then_else, extern stages, statements, and the errors it raises.
#include <loom/sim/interpreter.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "../support/interpret_checked.hpp"
#include "interp_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// C = A x B for n x n float32 matrices: an init nest and a k-innermost update nest.
LoweredFunc matmul_func(int n) {
  BufferParam A = buffer_param("A", f32, {n, n}), B = buffer_param("B", f32, {n, n}),
              C = buffer_param("C", f32, {n, n});
  Var i("i"), j("j"), k("k");
  Stmt init = loop(i, 0, n, loop(j, 0, n, store(C, Expr(0.0f), i * n + j)));
  Expr update = load(C, i * n + j) + load(A, i * n + k) * load(B, k * n + j);
  Stmt body = loop(i, 0, n, loop(j, 0, n, loop(k, 0, n, store(C, update, i * n + j))));
  return make_func("gemm", {param(A), param(B), param(C)}, SeqNode::make({init, body}));
}

/// The same float32 sum order as the kernel, so the results agree bit for bit.
Buffer<float> reference_matmul(const Buffer<float>& a, const Buffer<float>& b, int n) {
  Buffer<float> c({n, n});
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < n; ++k) sum = sum + a(i, k) * b(k, j);
      c(i, j) = sum;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("interpreter: elementwise add over a symbolic extent") {
  Var n("n");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n}),
              C = buffer_param("C", f32, {n});
  Var i("i");
  LoweredFunc f = make_func("add", {param(A), param(B), param(C)},
                            loop(i, 0, n, store(C, load(A, i) + load(B, i), i)), {n});
  for (int size : {1, 37, 1000}) {
    Buffer<float> a({size}), b({size}), c({size});
    fill_random(a, 1);
    fill_random(b, 2);
    test::interpret_checked(f, {a, b, c});
    for (int x = 0; x < size; ++x) CHECK(c(x) == a(x) + b(x));
  }
}

TEST_CASE("interpreter: a shape variable missing from size_vars is still bound by the call") {
  Var n("n");
  BufferParam A = buffer_param("A", i32, {n});
  Var i("i");
  LoweredFunc f = make_func("iota", {param(A)}, loop(i, 0, n, store(A, i, i)));  // no size_vars
  Buffer<int32_t> a({6});
  test::interpret_checked(f, {a});
  for (int x = 0; x < 6; ++x) CHECK(a(x) == x);
}

TEST_CASE("interpreter: row sums through an allocated accumulator (float64)") {
  const int rows = 13, cols = 29;
  BufferParam A = buffer_param("A", f64, {rows, cols}), S = buffer_param("S", f64, {rows});
  Var i("i"), k("k"), acc("acc", handle_type);
  Expr acc0 = LoadNode::make(f64, acc, 0);
  Stmt body = loop(i, 0, rows,
                   AllocateNode::make(
                       acc, f64, {1}, "local",
                       SeqNode::make({StoreNode::make(acc, make_const(f64, 0.0), 0),
                                      loop(k, 0, cols, StoreNode::make(acc, acc0 + load(A, i * cols + k), 0)),
                                      store(S, acc0, i)})));
  LoweredFunc f = make_func("row_sum", {param(A), param(S)}, body);
  Buffer<double> a({rows, cols}), s({rows});
  fill_random(a, 3);
  test::interpret_checked(f, {a, s});
  for (int r = 0; r < rows; ++r) {
    double expected = 0.0;
    for (int c = 0; c < cols; ++c) expected += a(r, c);
    CHECK(s(r) == expected);
  }
}

TEST_CASE("interpreter: allocations start zeroed and are fresh in every iteration") {
  BufferParam out = buffer_param("out", i32, {4});
  Var i("i"), tmp("tmp", handle_type);
  // tmp[0] += i + 1 inside the allocation: a fresh (zeroed) tmp each time gives i + 1.
  Stmt body =
      loop(i, 0, 4,
           AllocateNode::make(tmp, i32, {2, 3}, "global",
                              SeqNode::make({StoreNode::make(tmp, LoadNode::make(i32, tmp, 5) + i + 1, 5),
                                             store(out, LoadNode::make(i32, tmp, 5), i)})));
  Buffer<int32_t> o({4});
  test::interpret_checked(make_func("fresh", {param(out)}, body), {o});
  for (int x = 0; x < 4; ++x) CHECK(o(x) == x + 1);
}

TEST_CASE("interpreter: 64x64 matmul matches C++, and the 256^3 matmul is timed") {
  {
    const int n = 64;
    Buffer<float> a({n, n}), b({n, n}), c({n, n});
    fill_random(a, 4);
    fill_random(b, 5);
    test::interpret_checked(matmul_func(n), {a, b, c});
    Buffer<float> expected = reference_matmul(a, b, n);
    for (int x = 0; x < n * n; ++x) REQUIRE(c.at_flat(x) == expected.at_flat(x));
  }
  const int n = 256;
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill_random(a, 6);
  fill_random(b, 7);
  LoweredFunc f = matmul_func(n);
  auto start = std::chrono::steady_clock::now();
  test::interpret_checked(f, {a, b, c});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("interpreter: 256x256x256 float32 matmul took " << seconds << " s ("
                                                          << 2.0 * n * n * n / seconds / 1e6 << " MFLOP/s)");
  Buffer<float> expected = reference_matmul(a, b, n);
  for (int x = 0; x < n * n; ++x) REQUIRE(c.at_flat(x) == expected.at_flat(x));
}

TEST_CASE("interpreter: every loop kind runs its iterations in order") {
  for (ForKind kind :
       {ForKind::Serial, ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled, ForKind::ThreadBinding}) {
    BufferParam out = buffer_param("out", i32, {8});
    Var i("i");
    // out[0] records the order: out[0] = out[0] * 10 + i.
    Stmt body = loop(i, 1, 5, store(out, load(out, 0) * 10 + i, 0), kind);
    Buffer<int32_t> o({8});
    test::interpret_checked(make_func("order", {param(out)}, body), {o});
    CHECK(o(0) == 12345);
  }
}

TEST_CASE("interpreter: loop bounds are evaluated once at entry") {
  BufferParam out = buffer_param("out", i32, {1});
  Var i("i");
  // The extent reads out[0], which the body changes; the loop still runs 3 times.
  Stmt body = SeqNode::make({store(out, 3, 0), loop(i, 0, load(out, 0), store(out, load(out, 0) + 1, 0))});
  Buffer<int32_t> o({1});
  test::interpret_checked(make_func("once", {param(out)}, body), {o});
  CHECK(o(0) == 6);
}

TEST_CASE("interpreter: vector ramps, broadcasts and predicated loads and stores") {
  const int n = 21, lanes = 8;
  Var nv("n");
  BufferParam A = buffer_param("A", f32, {nv}), B = buffer_param("B", f32, {nv});
  Var io("io");
  Expr index = RampNode::make(io * lanes, 1, lanes);
  Expr mask = index < BroadcastNode::make(nv, lanes);
  Expr two = BroadcastNode::make(Expr(2.0f), lanes);
  // B[io*8 : io*8+8] = A[...] * 2 + lane, for lanes below n: the tail lanes would be out of bounds.
  Expr lane_index = CastNode::make(f32.with_lanes(lanes), RampNode::make(Expr(0), Expr(1), lanes));
  Stmt body =
      loop(io, 0, (n + lanes - 1) / lanes, store(B, load(A, index, mask) * two + lane_index, index, mask));
  LoweredFunc f = make_func("vec", {param(A), param(B)}, body, {nv});
  Buffer<float> a({n}), b({n});
  fill_random(a, 8);
  test::interpret_checked(f, {a, b});
  for (int x = 0; x < n; ++x) CHECK(b(x) == a(x) * 2.0f + static_cast<float>(x % lanes));
}

TEST_CASE("interpreter: strided ramps, vector select, vector let and unmasked vector stores") {
  BufferParam A = buffer_param("A", i32, {16}), B = buffer_param("B", i32, {8});
  Var v("v", i32.with_lanes(4)), q("q");
  Expr even = RampNode::make(q * 8, 2, 4);  // A[q*8], A[q*8+2], ...
  Expr odd = RampNode::make(q * 8 + 1, 2, 4);
  Expr bigger = select(load(A, even) > load(A, odd), load(A, even), load(A, odd));
  Expr let_body = LetNode::make(v, bigger, v * BroadcastNode::make(Expr(3), 4));
  Stmt body = loop(q, 0, 2, store(B, let_body, RampNode::make(q * 4, 1, 4)));
  Buffer<int32_t> a({16}), b({8});
  for (int x = 0; x < 16; ++x) a(x) = (x * 7919) % 23;
  test::interpret_checked(make_func("pairs", {param(A), param(B)}, body), {a, b});
  for (int x = 0; x < 8; ++x) CHECK(b(x) == 3 * std::max(a(2 * x), a(2 * x + 1)));
}

TEST_CASE("interpreter: a vector LetStmt binds every lane before its body runs") {
  BufferParam out = buffer_param("out", f64, {4});
  Var v("v", f64.with_lanes(4));
  Expr ramp = RampNode::make(make_const(f64, 0.5), make_const(f64, 0.25), 4);
  Stmt body = LetStmtNode::make(v, ramp, store(out, v + v, RampNode::make(Expr(0), Expr(1), 4)));
  Buffer<double> o({4});
  test::interpret_checked(make_func("vlet", {param(out)}, body), {o});
  for (int x = 0; x < 4; ++x) CHECK(o(x) == 2 * (0.5 + 0.25 * x));
}

TEST_CASE("interpreter: a vector store reads all lanes before writing any") {
  BufferParam A = buffer_param("A", i32, {5});
  // A[1:5] = A[0:4]: shifting right in place needs every old value.
  Stmt body = store(A, load(A, RampNode::make(Expr(0), Expr(1), 4)), RampNode::make(Expr(1), Expr(1), 4));
  Buffer<int32_t> a({5});
  for (int x = 0; x < 5; ++x) a(x) = 10 + x;
  test::interpret_checked(make_func("shift", {param(A)}, body), {a});
  CHECK(a(0) == 10);
  for (int x = 1; x < 5; ++x) CHECK(a(x) == 10 + x - 1);
}

TEST_CASE("interpreter: if_then_else evaluates only the chosen branch (zero padding)") {
  const int n = 10;
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n + 2});
  Var i("i");
  // B[i] = A[i - 1] inside, 0 in the padding: A[-1] and A[n] sit in the untaken branch.
  Expr padded = if_then_else(i >= 1 && i < n + 1, load(A, i - 1), Expr(0.0f));
  LoweredFunc f = make_func("pad", {param(A), param(B)}, loop(i, 0, n + 2, store(B, padded, i)));
  Buffer<float> a({n}), b({n + 2});
  fill_random(a, 9);
  CHECK_NOTHROW(test::interpret_checked(f, {a, b}));
  CHECK(b(0) == 0.0f);
  CHECK(b(n + 1) == 0.0f);
  for (int x = 1; x <= n; ++x) CHECK(b(x) == a(x - 1));

  SUBCASE("select evaluates both branches, so the same read in a select is caught") {
    Expr eager = select(i >= 1 && i < n + 1, load(A, i - 1), Expr(0.0f));
    LoweredFunc g = make_func("pad_select", {param(A), param(B)}, loop(i, 0, n + 2, store(B, eager, i)));
    CHECK_THROWS_WITH_AS(test::interpret_checked(g, {a, b}), doctest::Contains("index -1"), Error);
  }
  SUBCASE("lanes of a vector if_then_else are lazy one by one") {
    Expr index = RampNode::make(Expr(-2), Expr(1), 4);  // -2, -1, 0, 1
    Expr lane_padded = if_then_else(index >= BroadcastNode::make(Expr(0), 4), load(A, index),
                                    BroadcastNode::make(Expr(-5.0f), 4));
    LoweredFunc g =
        make_func("vpad", {param(A), param(B)}, store(B, lane_padded, RampNode::make(Expr(0), Expr(1), 4)));
    test::interpret_checked(g, {a, b});
    CHECK(b(0) == -5.0f);
    CHECK(b(1) == -5.0f);
    CHECK(b(2) == a(0));
    CHECK(b(3) == a(1));
  }
}

TEST_CASE("interpreter: let expressions and statements, shadowing, asserts, branches, no-ops") {
  BufferParam out = buffer_param("out", i32, {4});
  Var x("x"), i("i");
  // let x = 5 in (let x = x * 2 in x) + x  ==  10 + 5
  Expr inner = LetNode::make(x, x * 2, x);
  Expr shadowed = LetNode::make(x, 5, inner + x);
  Stmt body = SeqNode::make({
      store(out, shadowed, 0),
      LetStmtNode::make(x, 7, AttrStmtNode::make("pragma_test", x, 1, store(out, x, 1))),
      loop(i, 0, 2, IfThenElseNode::make(i == 0, store(out, 100, 2), store(out, 200, 3))),
      BarrierNode::make("shared"),
      PrefetchNode::make(load(out, 1000)),  // a hint, never a read: an out-of-range one is fine
      EvaluateNode::make(0),
  });
  Buffer<int32_t> o({4});
  test::interpret_checked(make_func("misc", {param(out)}, body), {o});
  CHECK(o(0) == 15);
  CHECK(o(1) == 7);
  CHECK(o(2) == 100);
  CHECK(o(3) == 200);

  Stmt asserting = AssertStmtNode::make(Expr(1) > Expr(2), "one is not greater than two", store(out, 1, 0));
  CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("assert", {param(out)}, asserting), {o}),
                       "one is not greater than two", Error);
}

TEST_CASE("interpreter: scalar parameters, integer and float") {
  Var n("n"), alpha("alpha", f32);
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  Var i("i");
  LoweredFunc f = make_func("axpy", {param(A), param(B), scalar_param(alpha), scalar_param(n)},
                            loop(i, 0, n, store(B, alpha * load(A, i) + load(B, i), i)), {n});
  Buffer<float> a({5}), b({5});
  fill_random(a, 10);
  fill_random(b, 11);
  Buffer<float> b0 = Buffer<float>({5});
  for (int x = 0; x < 5; ++x) b0(x) = b(x);
  test::interpret_checked(f, {a, b, 0.1, int64_t{5}});  // a double 0.1 rounds to the float32 parameter
  for (int x = 0; x < 5; ++x) CHECK(b(x) == 0.1f * a(x) + b0(x));
}

TEST_CASE("interpreter: extern stage calls see views of their buffers") {
  static int64_t doubler = ExternRegistry::global().add(
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        const float* src = static_cast<const float*>(in.at(0).data);
        float* dst = static_cast<float*>(out.at(0).data);
        for (int64_t x = 0; x < in[0].shape.at(0); ++x)
          dst[x * out[0].strides[0]] = 2.0f * src[x * in[0].strides[0]];
      },
      "doubler");
  const int n = 9;
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  Var tmp("tmp", handle_type), i("i");
  ExternStageCall call;
  call.function_id = doubler;
  call.inputs.push_back({A.data, f32, {n}, {1}});
  call.outputs.push_back({tmp, f32, {n}, {1}});
  Stmt body = AllocateNode::make(
      tmp, f32, {n}, "global",
      SeqNode::make({EvaluateNode::make(call.encode()),
                     loop(i, 0, n, store(B, LoadNode::make(f32, tmp, i) + Expr(1.0f), i))}));
  Buffer<float> a({n}), b({n});
  fill_random(a, 12);
  test::interpret_checked(make_func("ext", {param(A), param(B)}, body), {a, b});
  for (int x = 0; x < n; ++x) CHECK(b(x) == 2.0f * a(x) + 1.0f);

  SUBCASE("a view larger than its buffer is refused before the call") {
    ExternStageCall too_big = call;
    too_big.inputs[0].shape = {Expr(n + 1)};
    Stmt bad = AllocateNode::make(tmp, f32, {n}, "global", EvaluateNode::make(too_big.encode()));
    CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("ext_bad", {param(A), param(B)}, bad), {a, b}),
                         doctest::Contains("extern stage 'doubler': the view of buffer 'A'"), Error);
  }
}

TEST_CASE("interpreter: out-of-bounds accesses throw and name buffer, index and extent") {
  const int n = 8;
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  Var i("i");
  Buffer<float> a({n}), b({n});
  SUBCASE("store one past the end") {
    LoweredFunc f =
        make_func("oob_store", {param(A), param(B)}, loop(i, 0, n + 1, store(B, load(A, i % n), i)));
    CHECK_THROWS_WITH_AS(
        test::interpret_checked(f, {a, b}),
        doctest::Contains("out-of-bounds store to buffer 'B': index 8 is outside its extent of 8 "
                          "float32 elements"),
        Error);
  }
  SUBCASE("load before the start") {
    LoweredFunc f = make_func("oob_load", {param(A), param(B)}, loop(i, 0, n, store(B, load(A, i - 3), i)));
    CHECK_THROWS_WITH_AS(test::interpret_checked(f, {a, b}),
                         doctest::Contains("load from buffer 'A': index -3"), Error);
  }
  SUBCASE("an allocation's own extent") {
    Var tmp("tmp", handle_type);
    Stmt body = AllocateNode::make(tmp, i32, {2, 2}, "local", loop(i, 0, 5, StoreNode::make(tmp, i, i)));
    CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("oob_alloc", {param(A), param(B)}, body), {a, b}),
                         doctest::Contains("buffer 'tmp': index 4 is outside its extent of 4 int32"), Error);
  }
  SUBCASE("a masked-in vector lane") {
    Stmt body = store(B, load(A, RampNode::make(Expr(6), Expr(1), 4)), RampNode::make(Expr(0), Expr(1), 4));
    CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("oob_vec", {param(A), param(B)}, body), {a, b}),
                         doctest::Contains("index 8"), Error);
  }
}

TEST_CASE("interpreter: integer division by zero throws and names the expression") {
  Var d("d");
  BufferParam out = buffer_param("out", i32, {1});
  LoweredFunc f = make_func("div0", {param(out), scalar_param(d)}, store(out, Expr(7) / d, 0));
  Buffer<int32_t> o({1});
  CHECK_THROWS_WITH_AS(test::interpret_checked(f, {o, 0}),
                       doctest::Contains("integer division by zero in (7 / d)"), Error);
  test::interpret_checked(f, {o, 2});
  CHECK(o(0) == 3);
}

TEST_CASE("interpreter: unlowered IR and unbound variables are reported") {
  BufferParam out = buffer_param("out", i32, {1});
  Buffer<int32_t> o({1});
  SUBCASE("a variable no one binds") {
    Var ghost("ghost");
    CHECK_THROWS_WITH_AS(
        test::interpret_checked(make_func("ghostly", {param(out)}, store(out, ghost, 0)), {o}),
        doctest::Contains("uses variable 'ghost'"), Error);
  }
  SUBCASE("Realize and Provide mean the function was not lowered") {
    struct FakeProducer : ProducerNode {
      std::string name = "T";
      std::vector<Expr> shape{Expr(1)};
      const std::string& producer_name() const override { return name; }
      DType producer_dtype() const override { return i32; }
      const std::vector<Expr>& producer_shape() const override { return shape; }
    };
    Producer t = make_ref<FakeProducer>();
    Stmt body = RealizeNode::make(t, {Range(0, 1)}, "global", ProvideNode::make(t, {Expr(0)}, 1));
    CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("unlowered", {param(out)}, body), {o}),
                         doctest::Contains("was not lowered"), InternalError);
    Stmt load_producer = store(out, ProducerLoadNode::make(t, {Expr(0)}), 0);
    CHECK_THROWS_AS(test::interpret_checked(make_func("unlowered2", {param(out)}, load_producer), {o}),
                    InternalError);
  }
  SUBCASE("an extern C function no one registered") {
    Expr call = CallNode::make(i32, "my_c_function", {Expr(1)}, CallKind::Extern);
    CHECK_THROWS_WITH_AS(
        test::interpret_checked(make_func("calls", {param(out)}, store(out, call, 0)), {o}),
        doctest::Contains("extern C function 'my_c_function' is called by generated code but "
                          "not registered"),
        Error);
  }
  SUBCASE("an intrinsic the interpreter does not know") {
    Expr call = CallNode::make(i32, "my_intrinsic", {Expr(1)}, CallKind::PureIntrinsic);
    CHECK_THROWS_WITH_AS(test::interpret_checked(make_func("calls", {param(out)}, store(out, call, 0)), {o}),
                         doctest::Contains("cannot run the call my_intrinsic"), Error);
  }
}

TEST_CASE("interpreter: a compiled function runs many times with different arguments") {
  Var n("n");
  BufferParam A = buffer_param("A", i64, {n});
  Var i("i");
  InterpretedFunc f(
      make_func("iota", {param(A)}, loop(i, 0, n, store(A, cast(i64, i) * cast(i64, i), i)), {n}));
  for (int size : {3, 50}) {
    Buffer<int64_t> a({size});
    f({a});
    for (int x = 0; x < size; ++x) CHECK(a(x) == int64_t{x} * x);
  }
}
