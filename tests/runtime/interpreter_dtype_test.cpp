// The reference interpreter's arithmetic for every dtype: integer wrap-around, truncating and
// floor division, float32/float16/bfloat16 rounding after each operation, casts and math calls.
#include <loom/sim/interpreter.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../support/interpret_checked.hpp"
#include "interp_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// Runs `out[0] = e` and returns out[0]; T must be the C++ type of e's dtype.
template <typename T>
T eval_scalar(const Expr& e, std::vector<FuncParam> scalars = {}, std::vector<KernelArg> values = {}) {
  REQUIRE(e.dtype() == dtype_of<T>::value);
  BufferParam out = buffer_param("out", dtype_of<T>::value, {1});
  std::vector<FuncParam> params{param(out)};
  params.insert(params.end(), scalars.begin(), scalars.end());
  Buffer<T> result({1});
  std::vector<KernelArg> args{result};
  args.insert(args.end(), values.begin(), values.end());
  test::interpret_checked(make_func("eval", params, store(out, e, 0)), args);
  return result.at_flat(0);
}

template <typename T>
Expr constant(T value) {
  DType t = dtype_of<T>::value;
  if constexpr (std::is_floating_point_v<T>) {
    return FloatImmNode::make(t, static_cast<double>(value));
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return FloatImmNode::make(t, static_cast<float>(value));
  } else {
    return IntImmNode::make(t, static_cast<int64_t>(value));
  }
}

/// The C++ reference of each elementwise op, with the interpreter's promised semantics.
template <typename T>
T reference(IRNodeKind op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case IRNodeKind::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case IRNodeKind::Sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case IRNodeKind::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case IRNodeKind::Div: return static_cast<T>(a / b);
      case IRNodeKind::Mod: return static_cast<T>(a % b);
      case IRNodeKind::Min: return std::min(a, b);
      case IRNodeKind::Max: return std::max(a, b);
      default: break;
    }
  } else {
    // float16/bfloat16 compute in float and round; float32 in float; float64 in double.
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    C x = static_cast<C>(a), y = static_cast<C>(b);
    switch (op) {
      case IRNodeKind::Add: return T(x + y);
      case IRNodeKind::Sub: return T(x - y);
      case IRNodeKind::Mul: return T(x * y);
      case IRNodeKind::Div: return T(x / y);
      case IRNodeKind::Min: return T(x < y ? x : y);
      case IRNodeKind::Max: return T(x > y ? x : y);
      default: break;
    }
  }
  FAIL("no reference for ", kind_name(op));
  return T{};
}

Expr apply(IRNodeKind op, Expr a, Expr b) {
  switch (op) {
    case IRNodeKind::Add: return AddNode::make(a, b);
    case IRNodeKind::Sub: return SubNode::make(a, b);
    case IRNodeKind::Mul: return MulNode::make(a, b);
    case IRNodeKind::Div: return DivNode::make(a, b);
    case IRNodeKind::Mod: return ModNode::make(a, b);
    case IRNodeKind::Min: return MinNode::make(a, b);
    case IRNodeKind::Max: return MaxNode::make(a, b);
    default: break;
  }
  return Expr();
}

template <typename T>
bool same_value(T a, T b) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return a.bits == b.bits;
  } else {
    return a == b;
  }
}

/// C[i] = A[i] (op) B[i] over random data, for each op, against the C++ reference.
template <typename T>
void check_elementwise_ops(double lo, double hi) {
  const DType t = dtype_of<T>::value;
  const int n = 64;
  BufferParam A = buffer_param("A", t, {n}), B = buffer_param("B", t, {n}), C = buffer_param("C", t, {n});
  Buffer<T> a({n}), b({n}), c({n});
  fill_random(a, 21, lo, hi);
  fill_random(b, 22, lo, hi);
  std::vector<IRNodeKind> ops{IRNodeKind::Add, IRNodeKind::Sub, IRNodeKind::Mul,
                              IRNodeKind::Min, IRNodeKind::Max, IRNodeKind::Div};
  if constexpr (std::is_integral_v<T>) {
    ops.push_back(IRNodeKind::Mod);
    for (int x = 0; x < n; ++x) {
      if (b(x) == T{0}) b(x) = T{3};  // keep integer divisions defined
    }
  }
  Var i("i");
  for (IRNodeKind op : ops) {
    CAPTURE(kind_name(op));
    LoweredFunc f = make_func("ew", {param(A), param(B), param(C)},
                              loop(i, 0, n, store(C, apply(op, load(A, i), load(B, i)), i)));
    test::interpret_checked(f, {a, b, c});
    for (int x = 0; x < n; ++x) {
      CAPTURE(x);
      CHECK(same_value(c(x), reference<T>(op, a(x), b(x))));
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("interpreter: elementwise ops on random data", T, int8_t, int16_t, int32_t, int64_t,
                   uint8_t, uint16_t, uint32_t, uint64_t) {
  check_elementwise_ops<T>(static_cast<double>(std::numeric_limits<T>::min()) * 0.99,
                           static_cast<double>(std::numeric_limits<T>::max()) * 0.99);
}

TEST_CASE_TEMPLATE("interpreter: elementwise float ops on random data", T, float, double, half, bfloat16) {
  check_elementwise_ops<T>(-100.0, 100.0);
}

TEST_CASE("interpreter: integers wrap at their width") {
  CHECK(eval_scalar<int32_t>(constant<int32_t>(INT32_MAX) + constant<int32_t>(1)) == INT32_MIN);
  CHECK(eval_scalar<int8_t>(constant<int8_t>(100) + constant<int8_t>(100)) == -56);
  CHECK(eval_scalar<int16_t>(constant<int16_t>(300) * constant<int16_t>(300)) ==
        static_cast<int16_t>(90000 - 65536 * 1));
  CHECK(eval_scalar<uint8_t>(constant<uint8_t>(0) - constant<uint8_t>(1)) == 255);
  CHECK(eval_scalar<uint32_t>(constant<uint32_t>(0) - constant<uint32_t>(1)) == 4294967295u);
  CHECK(eval_scalar<int64_t>(constant<int64_t>(INT64_MAX) + constant<int64_t>(1)) == INT64_MIN);
  CHECK(eval_scalar<uint64_t>(constant<uint64_t>(0) - constant<uint64_t>(1)) == UINT64_MAX);
  // INT_MIN / -1 overflows: it wraps to INT_MIN rather than trapping.
  CHECK(eval_scalar<int32_t>(constant<int32_t>(INT32_MIN) / constant<int32_t>(-1)) == INT32_MIN);
  CHECK(eval_scalar<int64_t>(constant<int64_t>(INT64_MIN) / constant<int64_t>(-1)) == INT64_MIN);
  CHECK(eval_scalar<int64_t>(truncmod(constant<int64_t>(INT64_MIN), constant<int64_t>(-1))) == 0);
}

TEST_CASE("interpreter: uint64 compares and divides unsigned") {
  Expr big = constant<uint64_t>(UINT64_MAX - 5);
  CHECK(eval_scalar<bool>(big > constant<uint64_t>(1)));
  CHECK(eval_scalar<uint64_t>(big / constant<uint64_t>(2)) == (UINT64_MAX - 5) / 2);
  CHECK(eval_scalar<uint64_t>(big % constant<uint64_t>(7)) == (UINT64_MAX - 5) % 7);
  CHECK(eval_scalar<uint64_t>(max(big, constant<uint64_t>(3))) == UINT64_MAX - 5);
  CHECK(eval_scalar<uint64_t>(floordiv(big, constant<uint64_t>(10))) == (UINT64_MAX - 5) / 10);
}

TEST_CASE("interpreter: truncating and floor division with negative operands") {
  struct Case {
    int a, b, div, mod, floordiv, floormod;
  };
  for (Case c : {Case{7, 2, 3, 1, 3, 1}, Case{-7, 2, -3, -1, -4, 1}, Case{7, -2, -3, 1, -4, -1},
                 Case{-7, -2, 3, -1, 3, -1}, Case{-8, 2, -4, 0, -4, 0}, Case{0, -3, 0, 0, 0, 0}}) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    Expr a = c.a, b = c.b;
    CHECK(eval_scalar<int32_t>(truncdiv(a, b)) == c.div);
    CHECK(eval_scalar<int32_t>(truncmod(a, b)) == c.mod);
    CHECK(eval_scalar<int32_t>(floordiv(a, b)) == c.floordiv);
    CHECK(eval_scalar<int32_t>(floormod(a, b)) == c.floormod);
    Expr a64 = constant<int64_t>(c.a), b64 = constant<int64_t>(c.b);
    CHECK(eval_scalar<int64_t>(floordiv(a64, b64)) == c.floordiv);
    CHECK(eval_scalar<int64_t>(floormod(a64, b64)) == c.floormod);
  }
  CHECK(eval_scalar<float>(floordiv(Expr(-7.0f), Expr(2.0f))) == -4.0f);
  CHECK(eval_scalar<float>(floormod(Expr(-7.0f), Expr(2.0f))) == 1.0f);
  CHECK(eval_scalar<double>(truncmod(make_const(f64, -7.5), make_const(f64, 2.0))) == -1.5);
}

TEST_CASE("interpreter: comparisons and logic give bool") {
  CHECK(eval_scalar<bool>(Expr(3) < Expr(4)));
  CHECK_FALSE(eval_scalar<bool>(Expr(-3) >= Expr(4)));
  CHECK(eval_scalar<bool>(constant<int8_t>(-1) < constant<int8_t>(0)));
  CHECK(eval_scalar<bool>(constant<uint8_t>(200) > constant<uint8_t>(100)));
  CHECK(eval_scalar<bool>(Expr(1.5f) != Expr(2.5f)));
  CHECK_FALSE(eval_scalar<bool>(make_const(f64, NAN) == make_const(f64, NAN)));
  CHECK(eval_scalar<bool>((Expr(1) < Expr(2)) && !(Expr(3) < Expr(2))));
  CHECK(eval_scalar<bool>((Expr(1) > Expr(2)) || (Expr(3) > Expr(2))));
  CHECK(eval_scalar<int32_t>(select(Expr(2) > Expr(1), Expr(10), Expr(20))) == 10);
}

TEST_CASE("interpreter: float32 computes in float, not double") {
  // 1 + 2^-30 is 1 in float32; only a double intermediate would keep the small term.
  Expr tiny = Expr(std::ldexp(1.0f, -30));
  CHECK(eval_scalar<float>((Expr(1.0f) + tiny) - Expr(1.0f)) == 0.0f);
  CHECK(eval_scalar<double>((make_const(f64, 1.0) + make_const(f64, std::ldexp(1.0, -30))) -
                            make_const(f64, 1.0)) == std::ldexp(1.0, -30));
  // 0.1f * 3 rounds the same way a float32 machine rounds it.
  float expected = 0.1f * 3.0f;
  CHECK(eval_scalar<float>(Expr(0.1f) * Expr(3.0f)) == expected);
}

TEST_CASE("interpreter: float16 and bfloat16 round after every operation") {
  SUBCASE("float16") {
    // 1 + 2^-12 is 1 in half precision (10-bit mantissa), so the sum minus 1 is 0.
    Expr one = constant<half>(half(1.0f)), small = constant<half>(half(std::ldexp(1.0f, -12)));
    CHECK(float(eval_scalar<half>((one + small) - one)) == 0.0f);
    // s - 1 = -(1 - 2^-12) is a tie between two halves and rounds to -1 (even), so 1 + (s - 1) is 0;
    // in float the same expression would be 2^-12.
    CHECK(float(eval_scalar<half>(one + (small - one))) == 0.0f);
    // 65504 is the largest half; doubling overflows to infinity.
    CHECK(std::isinf(float(eval_scalar<half>(constant<half>(half(65504.0f)) * constant<half>(half(2.0f))))));
  }
  SUBCASE("bfloat16") {
    Expr one = constant<bfloat16>(bfloat16(1.0f)), small = constant<bfloat16>(bfloat16(std::ldexp(1.0f, -9)));
    CHECK(float(eval_scalar<bfloat16>((one + small) - one)) == 0.0f);
  }
  SUBCASE("a float16 accumulation matches rounding at each step") {
    const int n = 300;
    BufferParam out = buffer_param("out", f16, {1});
    Var i("i");
    Expr step = constant<half>(half(0.1f));
    LoweredFunc f = make_func("acc16", {param(out)}, loop(i, 0, n, store(out, load(out, 0) + step, 0)));
    Buffer<half> o({1});
    test::interpret_checked(f, {o});
    half expected(0.0f);
    for (int x = 0; x < n; ++x) expected = half(float(expected) + float(half(0.1f)));
    CHECK(o(0).bits == expected.bits);
    CHECK(float(o(0)) != doctest::Approx(30.0).epsilon(0.001));  // half really loses precision here
  }
}

TEST_CASE("interpreter: casts follow C, and saturate where C is undefined") {
  // CastNode::make directly: loom::cast() folds constants before the interpreter sees them.
  auto to = [](DType t, Expr e) { return CastNode::make(t, std::move(e)); };
  SUBCASE("float to integer truncates toward zero") {
    CHECK(eval_scalar<int32_t>(to(i32, Expr(-2.7f))) == -2);
    CHECK(eval_scalar<int32_t>(to(i32, Expr(2.7f))) == 2);
    CHECK(eval_scalar<uint8_t>(to(u8, Expr(-0.7f))) == 0);
    CHECK(eval_scalar<int64_t>(to(i64, make_const(f64, -1e15 - 0.5))) == -1000000000000000LL);
  }
  SUBCASE("out of range and NaN saturate") {
    CHECK(eval_scalar<int32_t>(to(i32, Expr(3e10f))) == INT32_MAX);
    CHECK(eval_scalar<int32_t>(to(i32, Expr(-3e10f))) == INT32_MIN);
    CHECK(eval_scalar<int32_t>(to(i32, make_const(f32, NAN))) == 0);
    CHECK(eval_scalar<uint8_t>(to(u8, Expr(300.0f))) == 255);
    CHECK(eval_scalar<uint8_t>(to(u8, Expr(-300.0f))) == 0);
    CHECK(eval_scalar<uint64_t>(to(u64, make_const(f64, 1e30))) == UINT64_MAX);
  }
  SUBCASE("integer to integer is modular") {
    CHECK(eval_scalar<uint8_t>(to(u8, Expr(300))) == 44);
    CHECK(eval_scalar<uint32_t>(to(u32, Expr(-1))) == 4294967295u);
    CHECK(eval_scalar<int8_t>(to(i8, constant<uint8_t>(255))) == -1);
    CHECK(eval_scalar<int64_t>(to(i64, constant<int8_t>(-1))) == -1);
    CHECK(eval_scalar<int64_t>(to(i64, constant<uint32_t>(4294967295u))) == 4294967295LL);
    CHECK(eval_scalar<uint64_t>(to(u64, constant<int64_t>(-2))) == UINT64_MAX - 1);
  }
  SUBCASE("bool") {
    CHECK(eval_scalar<bool>(to(boolean, Expr(256))));  // != 0, not the low bit
    CHECK_FALSE(eval_scalar<bool>(to(boolean, Expr(0.0f))));
    CHECK(eval_scalar<bool>(to(boolean, Expr(0.25f))));
    CHECK(eval_scalar<int32_t>(to(i32, Expr(true))) == 1);
  }
  SUBCASE("integer to float rounds once") {
    CHECK(eval_scalar<float>(to(f32, constant<int64_t>((1LL << 24) + 1))) == 16777216.0f);
    CHECK(eval_scalar<float>(to(f32, constant<int64_t>((1LL << 40) + (1LL << 16) + 1))) ==
          static_cast<float>((1LL << 40) + (1LL << 16) + 1));
    CHECK(eval_scalar<float>(to(f32, constant<uint64_t>(UINT64_MAX))) == static_cast<float>(UINT64_MAX));
    CHECK(float(eval_scalar<half>(to(f16, Expr(2049)))) == 2048.0f);  // ties to even
    CHECK(float(eval_scalar<half>(to(f16, Expr(2051)))) == 2052.0f);
    CHECK(eval_scalar<double>(to(f64, Expr(-7))) == -7.0);
  }
  SUBCASE("float to float rounds to nearest even, without double rounding") {
    CHECK(eval_scalar<float>(to(f32, make_const(f64, 0.1))) == 0.1f);
    // 1 + 2^-11 + 2^-40 lies just above the midpoint of two halves: it must round up, though
    // rounding to float first would land exactly on the midpoint and round down to 1.
    double just_above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    CHECK(float(eval_scalar<half>(to(f16, make_const(f64, just_above)))) == 1.0f + std::ldexp(1.0f, -10));
    CHECK(float(eval_scalar<bfloat16>(to(bf16, Expr(1.00390625f)))) == 1.0f);  // 1 + 2^-8: a tie, to even
    CHECK(float(eval_scalar<half>(to(f16, to(bf16, Expr(3.0f))))) == 3.0f);
    CHECK(eval_scalar<double>(to(f64, constant<half>(half(0.1f)))) == static_cast<double>(float(half(0.1f))));
  }
  SUBCASE("reinterpret keeps the bits") {
    CHECK(eval_scalar<int32_t>(CallNode::make(i32, intrinsic::reinterpret, {Expr(1.0f)})) == 0x3f800000);
    CHECK(eval_scalar<float>(CallNode::make(f32, intrinsic::reinterpret, {Expr(0x40000000)})) == 2.0f);
    CHECK(eval_scalar<uint16_t>(CallNode::make(u16, intrinsic::reinterpret, {constant<half>(half(1.0f))})) ==
          0x3c00);
  }
}

TEST_CASE("interpreter: math calls compute in their argument's precision") {
  // The references read volatile copies so that GCC cannot fold them at compile time with a
  // correctly rounded libm of its own: the interpreter calls the run-time libm, as backends do.
  volatile float fv[] = {0.5f, 2.0f, 0.3f, 10.0f, 1.5f, 2.5f, 1.0f};
  volatile double dv[] = {0.5, 1.0, 7.0, 3.0};
  CHECK(eval_scalar<float>(exp(Expr(0.5f))) == std::exp(fv[0]));
  CHECK(eval_scalar<float>(sqrt(Expr(2.0f))) == std::sqrt(fv[1]));
  CHECK(eval_scalar<float>(tanh(Expr(0.3f))) == std::tanh(fv[2]));
  CHECK(eval_scalar<float>(erf(Expr(0.3f))) == std::erf(fv[2]));
  CHECK(eval_scalar<float>(log2(Expr(10.0f))) == std::log2(fv[3]));
  CHECK(eval_scalar<float>(pow(Expr(1.5f), Expr(2.5f))) == std::pow(fv[4], fv[5]));
  CHECK(eval_scalar<double>(exp(make_const(f64, 0.5))) == std::exp(dv[0]));
  CHECK(eval_scalar<double>(sin(make_const(f64, 1.0))) == std::sin(dv[1]));
  CHECK(eval_scalar<double>(exp2(make_const(f64, 0.5))) == std::exp2(dv[0]));
  CHECK(eval_scalar<double>(log10(make_const(f64, 7.0))) == std::log10(dv[2]));
  CHECK(eval_scalar<double>(cos(make_const(f64, 1.0))) == std::cos(dv[1]));
  CHECK(eval_scalar<double>(tan(make_const(f64, 1.0))) == std::tan(dv[1]));
  CHECK(eval_scalar<double>(log(make_const(f64, 3.0))) == std::log(dv[3]));
  CHECK(eval_scalar<half>(sqrt(constant<half>(half(2.0f)))).bits == half(std::sqrt(fv[1])).bits);
  CHECK(eval_scalar<bfloat16>(exp(constant<bfloat16>(bfloat16(1.0f)))).bits ==
        bfloat16(std::exp(fv[6])).bits);
  CHECK(eval_scalar<float>(round(Expr(-2.5f))) == -3.0f);  // C round: half away from zero
  CHECK(eval_scalar<float>(floor(Expr(-2.5f))) == -3.0f);
  CHECK(eval_scalar<float>(ceil(Expr(-2.5f))) == -2.0f);
  CHECK(eval_scalar<float>(trunc(Expr(-2.5f))) == -2.0f);
  CHECK(eval_scalar<float>(abs(Expr(-2.5f))) == 2.5f);
  CHECK(eval_scalar<int32_t>(abs(Expr(-5))) == 5);
  CHECK(eval_scalar<int32_t>(abs(Expr(INT32_MIN))) == INT32_MIN);  // wraps, as in C
  CHECK(eval_scalar<int8_t>(abs(constant<int8_t>(-128))) == -128);
  CHECK(eval_scalar<bool>(likely(Expr(3) < Expr(4))));
}
