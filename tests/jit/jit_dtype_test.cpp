// The interpreter's arithmetic (tests/runtime/interpreter_dtype_test.cpp) through the JIT: every
// dtype's elementwise ops on random data (scalar and vectorized loops), wrap-around, truncating and
// floor division with negative operands, comparisons, float16/bfloat16 rounding after every
// operation (with F16C and with its emulation), every cast, and math calls.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// A kernel computing out_k[0] = exprs[k] for every k (one output buffer per expression), checked
/// against the interpreter. Constant expressions exercise LLVM's constant folding.
void check_exprs(const std::string& name, const std::vector<Expr>& exprs, JitCheckOptions options = {}) {
  std::vector<FuncParam> params;
  std::vector<Stmt> stores;
  std::vector<RandomArgs> outputs;
  for (size_t k = 0; k < exprs.size(); ++k) {
    BufferParam out = buffer_param("out" + std::to_string(k), exprs[k].dtype(), {1});
    params.push_back(param(out));
    stores.push_back(store(out, exprs[k], 0));
  }
  LoweredFunc f = make_func(name, params, SeqNode::make(stores));
  RandomArgs args = random_args(f, 1);
  options.exact_floats = true;
  check_jit_matches_interpreter(f, args.args, options);
}

Expr imm(DType t, double v) {
  return t.is_float() ? FloatImmNode::make(t, v) : IntImmNode::make(t, static_cast<int64_t>(v));
}

/// C_op[i] = A[i] op B[i] for the seven elementwise ops, in a loop of kind `kind`.
LoweredFunc elementwise_ops(DType t, ForKind kind) {
  const int n = 67;
  BufferParam A = buffer_param("A", t, {n}), B = buffer_param("B", t, {n});
  std::vector<FuncParam> params{param(A), param(B)};
  Var i("i");
  std::vector<Stmt> body;
  auto add = [&](const char* name, Expr value) {
    BufferParam C = buffer_param(name, value.dtype(), {n});
    params.push_back(param(C));
    body.push_back(store(C, value, i));
  };
  Expr a = load(A, i), b = load(B, i);
  add("add", AddNode::make(a, b));
  add("sub", SubNode::make(a, b));
  add("mul", MulNode::make(a, b));
  add("min", MinNode::make(a, b));
  add("max", MaxNode::make(a, b));
  add("lt", LTNode::make(a, b));
  add("ne", NENode::make(a, b));
  if (t.is_float()) {
    add("div", DivNode::make(a, b));
    add("mod", ModNode::make(a, b));
    add("floordiv", FloorDivNode::make(a, b));
    add("floormod", FloorModNode::make(a, b));
  } else {
    // Divisors that are never zero, of either sign: b | 1 would be a bitwise op, so use select.
    Expr safe_b = select(b == make_zero(t), make_const(t, 3), b);
    add("div", DivNode::make(a, safe_b));
    add("mod", ModNode::make(a, safe_b));
    add("floordiv", FloorDivNode::make(a, safe_b));
    add("floormod", FloorModNode::make(a, safe_b));
  }
  return make_func("ew_" + t.str(), params, loop(i, 0, n, SeqNode::make(body), kind));
}

void check_elementwise(DType t, double lo, double hi, const Target& target = Target::cpu()) {
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
    CAPTURE(for_kind_name(kind));
    LoweredFunc f = elementwise_ops(t, kind);
    RandomArgs args = random_args(f, 21, {}, lo, hi);
    JitCheckOptions options;
    options.target = target;
    options.exact_floats = true;  // + - * / fmod floor: correctly rounded, so bit-exact
    check_jit_matches_interpreter(f, args.args, options);
  }
}

}  // namespace

TEST_CASE("jit dtype: integer elementwise ops on random data, every integer type") {
  for (DType t : {i8, i16, i32, i64, u8, u16, u32, u64}) {
    CAPTURE(t.str());
    const double range = t.bits >= 53 ? 9e15 : std::ldexp(1.0, t.bits - (t.is_int() ? 1 : 0)) - 1;
    check_elementwise(t, t.is_int() ? -range : 0, range);
  }
}

TEST_CASE("jit dtype: float elementwise ops on random data, every float type") {
  for (DType t : {f32, f64, f16, bf16}) {
    CAPTURE(t.str());
    check_elementwise(t, -100.0, 100.0);
  }
}

TEST_CASE("jit dtype: float16 and bfloat16 without F16C (x86-64) round the same way") {
  for (DType t : {f16, bf16}) {
    CAPTURE(t.str());
    check_elementwise(t, -100.0, 100.0, Target::cpu("x86-64"));
    check_elementwise(t, -70000.0, 70000.0, Target::cpu("x86-64"));  // overflow to infinity
    check_elementwise(t, -1e-6, 1e-6, Target::cpu("x86-64"));        // subnormal halves
  }
}

TEST_CASE("jit dtype: integers wrap at their width, INT_MIN / -1 wraps instead of trapping") {
  check_exprs("wrap", {
                          imm(i32, INT32_MAX) + imm(i32, 1),
                          imm(i8, 100) + imm(i8, 100),
                          imm(i16, 300) * imm(i16, 300),
                          imm(u8, 0) - imm(u8, 1),
                          imm(u32, 0) - imm(u32, 1),
                          IntImmNode::make(i64, INT64_MAX) + IntImmNode::make(i64, 1),
                          imm(u64, 0) - imm(u64, 1),
                          imm(i32, INT32_MIN) / imm(i32, -1),
                          IntImmNode::make(i64, INT64_MIN) / IntImmNode::make(i64, -1),
                          truncmod(IntImmNode::make(i64, INT64_MIN), IntImmNode::make(i64, -1)),
                      });
  // The same at run time, from memory: the divisor is not a constant the JIT can see.
  BufferParam A = buffer_param("A", i32, {2}), Q = buffer_param("Q", i32, {4});
  Expr a = load(A, 0), b = load(A, 1);
  Stmt body = SeqNode::make({store(Q, a / b, 0), store(Q, truncmod(a, b), 1), store(Q, floordiv(a, b), 2),
                             store(Q, floormod(a, b), 3)});
  Buffer<int32_t> in({2}), q({4});
  in(0) = INT32_MIN;
  in(1) = -1;
  check_jit_matches_interpreter(make_func("wrap_rt", {param(A), param(Q)}, body), in, q);
}

TEST_CASE("jit dtype: uint64 compares and divides unsigned") {
  Expr big = IntImmNode::make(u64, static_cast<int64_t>(UINT64_MAX - 5));
  check_exprs("u64", {big > imm(u64, 1), big / imm(u64, 2), big % imm(u64, 7), max(big, imm(u64, 3)),
                      floordiv(big, imm(u64, 10))});
}

TEST_CASE("jit dtype: truncating and floor division with negative operands, constant and run-time") {
  std::vector<Expr> exprs;
  BufferParam A = buffer_param("A", i32, {12}), Q = buffer_param("Q", i32, {48});
  BufferParam A64 = buffer_param("A64", i64, {12}), Q64 = buffer_param("Q64", i64, {24});
  std::vector<Stmt> body;
  const int pairs[6][2] = {{7, 2}, {-7, 2}, {7, -2}, {-7, -2}, {-8, 2}, {0, -3}};
  Buffer<int32_t> a({12}), q({48});
  Buffer<int64_t> a64({12}), q64({24});
  for (int c = 0; c < 6; ++c) {
    Expr x = pairs[c][0], y = pairs[c][1];
    exprs.insert(exprs.end(), {truncdiv(x, y), truncmod(x, y), floordiv(x, y), floormod(x, y)});
    a(2 * c) = pairs[c][0];
    a(2 * c + 1) = pairs[c][1];
    a64(2 * c) = pairs[c][0];
    a64(2 * c + 1) = pairs[c][1];
    Expr lx = load(A, 2 * c), ly = load(A, 2 * c + 1);
    body.push_back(store(Q, truncdiv(lx, ly), 8 * c));
    body.push_back(store(Q, truncmod(lx, ly), 8 * c + 1));
    body.push_back(store(Q, floordiv(lx, ly), 8 * c + 2));
    body.push_back(store(Q, floormod(lx, ly), 8 * c + 3));
    // by constants: the power-of-two shortcut and the general one
    body.push_back(store(Q, floordiv(lx, 4), 8 * c + 4));
    body.push_back(store(Q, floormod(lx, 4), 8 * c + 5));
    body.push_back(store(Q, floordiv(lx, 3), 8 * c + 6));
    body.push_back(store(Q, floormod(lx, -3), 8 * c + 7));
    Expr wx = LoadNode::make(i64, A64.data, 2 * c), wy = LoadNode::make(i64, A64.data, 2 * c + 1);
    body.push_back(StoreNode::make(Q64.data, floordiv(wx, wy), 4 * c));
    body.push_back(StoreNode::make(Q64.data, floormod(wx, wy), 4 * c + 1));
    body.push_back(StoreNode::make(Q64.data, floordiv(wx, IntImmNode::make(i64, 8)), 4 * c + 2));
    body.push_back(StoreNode::make(Q64.data, floormod(wx, IntImmNode::make(i64, 5)), 4 * c + 3));
  }
  check_exprs("divisions", exprs);
  exprs = {floordiv(Expr(-7.0f), Expr(2.0f)), floormod(Expr(-7.0f), Expr(2.0f)),
           truncmod(make_const(f64, -7.5), make_const(f64, 2.0))};
  check_exprs("float_divisions", exprs);
  check_jit_matches_interpreter(
      make_func("divisions_rt", {param(A), param(Q), param(A64), param(Q64)}, SeqNode::make(body)), a, q, a64,
      q64);
}

TEST_CASE("jit dtype: comparisons and logic give bool") {
  check_exprs("compare",
              {Expr(3) < Expr(4), Expr(-3) >= Expr(4), imm(i8, -1) < imm(i8, 0), imm(u8, 200) > imm(u8, 100),
               Expr(1.5f) != Expr(2.5f), make_const(f64, NAN) == make_const(f64, NAN),
               make_const(f64, NAN) != make_const(f64, NAN), (Expr(1) < Expr(2)) && !(Expr(3) < Expr(2)),
               (Expr(1) > Expr(2)) || (Expr(3) > Expr(2)), select(Expr(2) > Expr(1), Expr(10), Expr(20))});
}

TEST_CASE("jit dtype: float32 computes in float, float16 and bfloat16 round after every operation") {
  Expr one16 = FloatImmNode::make(f16, 1.0), small16 = FloatImmNode::make(f16, std::ldexp(1.0, -12));
  Expr oneb = FloatImmNode::make(bf16, 1.0), smallb = FloatImmNode::make(bf16, std::ldexp(1.0, -9));
  check_exprs("rounding",
              {(Expr(1.0f) + Expr(std::ldexp(1.0f, -30))) - Expr(1.0f), Expr(0.1f) * Expr(3.0f),
               (one16 + small16) - one16, one16 + (small16 - one16),
               FloatImmNode::make(f16, 65504.0) * FloatImmNode::make(f16, 2.0), (oneb + smallb) - oneb});
  SUBCASE("a float16 accumulation rounds at each step, in memory and in registers") {
    for (const Target& target : {Target::cpu(), Target::cpu("x86-64")}) {
      BufferParam out = buffer_param("out", f16, {1});
      Var i("i");
      LoweredFunc f = make_func("acc16", {param(out)},
                                loop(i, 0, 300, store(out, load(out, 0) + FloatImmNode::make(f16, 0.1), 0)));
      Buffer<half> o({1});
      JitCheckOptions options;
      options.target = target;
      options.exact_floats = true;
      check_jit_matches_interpreter(f, {o}, options);
    }
  }
}

TEST_CASE("jit dtype: every cast between every pair of types, on special values") {
  // Sources hold values that hit each rule: truncation, saturation, NaN, infinities, ties,
  // subnormal halves, negative zero, values beyond every integer range.
  const std::vector<double> values = {0.0,       -0.0,       0.25,       -0.7,         2.7,   -2.5,
                                      2049.0,    65504.0,    65520.0,    1e-6,         -3e10, 3e10,
                                      300.0,     -300.0,     1e30,       -1e30,        NAN,   INFINITY,
                                      -INFINITY, 1.00390625, 16777217.0, 4294967295.0, -1.0,  127.5};
  const std::vector<DType> types = {boolean, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64};
  for (const Target& target : {Target::cpu(), Target::cpu("x86-64")}) {
    CAPTURE(target.str());
    for (DType from : types) {
      CAPTURE(from.str());
      const int n = static_cast<int>(values.size());
      BufferParam src = buffer_param("src", from, {n});
      std::vector<FuncParam> params{param(src)};
      std::vector<Stmt> body;
      Var i("i");
      for (DType to : types) {
        BufferParam dst = buffer_param("to_" + to.str(), to, {n});
        params.push_back(param(dst));
        body.push_back(store(dst, CastNode::make(to, load(src, i)), i));
      }
      LoweredFunc f = make_func("casts_" + from.str(), params, loop(i, 0, n, SeqNode::make(body)));
      RandomArgs args = random_args(f, 3);
      // The special values as this type holds them (the interpreter's conversion: ints saturate).
      for (int x = 0; x < n; ++x) set_element(args.args[0].buffer, x, values[x]);
      JitCheckOptions options;
      options.target = target;
      options.exact_floats = true;
      check_jit_matches_interpreter(f, args.args, options);
    }
  }
}

TEST_CASE("jit dtype: reinterpret keeps the bits") {
  check_exprs("reinterpret", {CallNode::make(i32, intrinsic::reinterpret, {Expr(1.0f)}),
                              CallNode::make(f32, intrinsic::reinterpret, {Expr(0x40000000)}),
                              CallNode::make(u16, intrinsic::reinterpret, {FloatImmNode::make(f16, 1.0)}),
                              CallNode::make(f16, intrinsic::reinterpret, {imm(u16, 0x3c01)}),
                              CallNode::make(i16, intrinsic::reinterpret, {FloatImmNode::make(bf16, -2.0)})});
}

TEST_CASE("jit dtype: math calls compute in their argument's precision") {
  // From memory, so that LLVM cannot fold them with its own math: the JIT calls libm as the
  // interpreter does; constant-folded calls may differ in the last bit, hence the tolerance.
  const std::vector<std::string> unary = {"exp", "exp2", "log", "log2",  "log10", "sqrt",  "sin",   "cos",
                                          "tan", "tanh", "erf", "floor", "ceil",  "round", "trunc", "abs"};
  for (DType t : {f32, f64, f16, bf16}) {
    CAPTURE(t.str());
    for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
      const int n = 19;
      BufferParam X = buffer_param("X", t, {n}), Y = buffer_param("Y", t, {n});
      std::vector<FuncParam> params{param(X), param(Y)};
      std::vector<Stmt> body;
      Var i("i");
      Expr x = load(X, i), y = load(Y, i);
      for (const std::string& name : unary) {
        BufferParam out = buffer_param(name, t, {n});
        params.push_back(param(out));
        Expr arg = (name == "log" || name == "log2" || name == "log10" || name == "sqrt") ? abs(x) : x;
        body.push_back(store(out, CallNode::make(t, name, {arg}), i));
      }
      BufferParam p = buffer_param("pow", t, {n});
      params.push_back(param(p));
      body.push_back(store(p, pow(abs(x), y), i));
      LoweredFunc f = make_func("math_" + t.str(), params, loop(i, 0, n, SeqNode::make(body), kind));
      RandomArgs args = random_args(f, 7, {}, -3.0, 3.0);
      JitCheckOptions options;
      options.relative_tolerance = t.bits == 16 ? 1e-2 : 1e-5;  // a last-bit difference of a half
      check_jit_matches_interpreter(f, args.args, options);
    }
  }
  check_exprs("math_consts", {round(Expr(-2.5f)), floor(Expr(-2.5f)), ceil(Expr(-2.5f)), trunc(Expr(-2.5f)),
                              abs(Expr(-2.5f)), abs(Expr(-5)), abs(Expr(INT32_MIN)), abs(imm(i8, -128)),
                              likely(Expr(3) < Expr(4)), sqrt(FloatImmNode::make(f16, 2.0))});
}

TEST_CASE("jit dtype: bool buffers are bytes, and vector bools load and store") {
  const int n = 37;
  BufferParam A = buffer_param("A", boolean, {n}), B = buffer_param("B", boolean, {n}),
              C = buffer_param("C", boolean, {n});
  Var i("i");
  LoweredFunc f =
      make_func("bools", {param(A), param(B), param(C)},
                loop(i, 0, n, store(C, (load(A, i) && !load(B, i)) || (load(A, i) == load(B, i)), i),
                     ForKind::Vectorized));
  RandomArgs args = random_args(f, 5);
  check_jit_matches_interpreter(f, args.args);
}

namespace {
/// Copies every 16-bit pattern through a kernel B(i) = A(i) of element type T and counts the changed ones.
template <typename T>
int64_t changed_by_copy(DType t, int lanes) {
  const int n = 65536;
  Tensor A = placeholder({n}, t, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i); }, "B");
  Schedule s = create_schedule(B);
  if (lanes > 1) s[B].vectorize(s[B].split(B.axis(0), lanes).second);
  Kernel f = build(s, {A, B}, Target::cpu(), "copy16");
  Buffer<T> a({n}), b({n});
  for (int i = 0; i < n; ++i) a.at_flat(i).bits = static_cast<uint16_t>(i);
  f(a, b);
  int64_t changed = 0;
  for (int i = 0; i < n; ++i) changed += a.at_flat(i).bits != b.at_flat(i).bits;
  return changed;
}
}  // namespace

TEST_CASE("jit dtype: a copy of float16 or bfloat16 keeps every bit pattern, signalling NaNs included") {
  // Such copies move bits (the packed panels of lib::gemm's bfloat16 kernel are copies); scalar and
  // vector loops alike.
  for (int lanes : {1, 16}) {
    CAPTURE(lanes);
    CHECK(changed_by_copy<bfloat16>(bf16, lanes) == 0);
    CHECK(changed_by_copy<half>(f16, lanes) == 0);
  }
}
