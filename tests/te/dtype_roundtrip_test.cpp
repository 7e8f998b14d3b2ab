// Placeholders of every dtype round-trip through compute + lower + interpret, checked element by
// element against the same arithmetic written as a plain C++ loop (wrapping, rounding included).
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

namespace {

constexpr int kRows = 3, kCols = 7;

/// Random values over the whole range of an integer type, or in [-100, 100] for floats.
template <typename T>
void fill_any(const Buffer<T>& b, uint32_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    uint64_t bits = rng();
    if constexpr (std::is_same_v<T, bool>) {
      b.at_flat(i) = (bits & 1u) != 0;
    } else if constexpr (std::is_integral_v<T>) {
      T v;
      std::memcpy(&v, &bits, sizeof(T));
      b.at_flat(i) = v;
    } else {
      double u = static_cast<double>(bits >> 11) / 9007199254740992.0;  // [0, 1)
      b.at_flat(i) = static_cast<T>(static_cast<float>(-100.0 + 200.0 * u));
    }
  }
}

/// a + b as the interpreter computes it: integers wrap at their width, 16-bit floats round the
/// float sum once.
template <typename T>
T reference_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(a) + static_cast<float>(b));
  } else {
    return a + b;
  }
}

template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
bool same_value(T a, T b) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return a.bits == b.bits;
  } else {
    return a == b;
  }
}

/// C = A + B and D = max(A, B) over a 2-D shape, for element type T.
template <typename T>
void check_add_and_max() {
  const DType t = dtype_of<T>::value;
  CAPTURE(t.str());
  Tensor A = placeholder({kRows, kCols}, t, "A");
  Tensor B = placeholder({kRows, kCols}, t, "B");
  Tensor C = compute(
      {kRows, kCols}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");
  Tensor D = compute(
      {kRows, kCols}, [&](Expr i, Expr j) { return max(A(i, j), B(i, j)); }, "D");
  CHECK(C.dtype() == t);
  CHECK(D.dtype() == t);
  Schedule s = create_schedule({C, D});
  LoweredFunc f = lower(s, {A, B, C, D}, "roundtrip");
  CHECK(f.to_string().find("Buffer(" + t.str() + ", [3, 7])") != std::string::npos);

  Buffer<T> a({kRows, kCols}), b({kRows, kCols}), c({kRows, kCols}), d({kRows, kCols});
  fill_any(a, 11);
  fill_any(b, 12);
  test::interpret_checked(f, {a, b, c, d});
  int bad = 0;
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) {
      T bigger = as_double(b(i, j)) > as_double(a(i, j)) ? b(i, j) : a(i, j);
      if constexpr (std::is_integral_v<T>) bigger = std::max(a(i, j), b(i, j));  // exact for 64 bits
      if (!same_value(c(i, j), reference_add(a(i, j), b(i, j)))) ++bad;
      if (!same_value(d(i, j), bigger)) ++bad;
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE_TEMPLATE("te: a placeholder of each numeric dtype round-trips through compute, lower and interpret",
                   T, half, bfloat16, float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                   uint32_t, uint64_t) {
  check_add_and_max<T>();
}

TEST_CASE("te: a bool placeholder round-trips through logic, select and a cast") {
  Tensor A = placeholder({kRows, kCols}, boolean, "A");
  Tensor B = placeholder({kRows, kCols}, boolean, "B");
  std::vector<Tensor> out = compute(
      {kRows, kCols},
      [&](Expr i, Expr j) {
        return std::vector<Expr>{A(i, j) && !B(i, j), A(i, j) || B(i, j), A(i, j) != B(i, j),
                                 select(A(i, j), cast(i32, B(i, j)) + 10, Expr(-1))};
      },
      "L");
  REQUIRE(out.size() == 4);
  CHECK(out[0].dtype() == boolean);
  CHECK(out[3].dtype() == i32);
  Schedule s = create_schedule(out);
  LoweredFunc f = lower(s, {A, B, out[0], out[1], out[2], out[3]}, "logic");
  Buffer<bool> a({kRows, kCols}), b({kRows, kCols}), and_not({kRows, kCols}), either({kRows, kCols}),
      differ({kRows, kCols});
  Buffer<int32_t> chosen({kRows, kCols});
  fill_any(a, 3);
  fill_any(b, 4);
  test::interpret_checked(f, {a, b, and_not, either, differ, chosen});
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(and_not(i, j) == (a(i, j) && !b(i, j)));
      CHECK(either(i, j) == (a(i, j) || b(i, j)));
      CHECK(differ(i, j) == (a(i, j) != b(i, j)));
      CHECK(chosen(i, j) == (a(i, j) ? (b(i, j) ? 11 : 10) : -1));
    }
}

TEST_CASE("te: 16-bit floats round after every operation of a compute") {
  // 2049 is not representable in float16 (spacing 2 above 2048): (a + 1) + 1 differs from a + 2.
  Tensor A = placeholder({2}, f16, "A");
  Tensor C = compute(
      {2}, [&](Expr i) { return (A(i) + make_const(f16, 1.0)) + make_const(f16, 1.0); }, "C");
  Tensor D = compute(
      {2}, [&](Expr i) { return A(i) + make_const(f16, 2.0); }, "D");
  Schedule s = create_schedule({C, D});
  LoweredFunc f = lower(s, {A, C, D}, "f16_steps");
  Buffer<half> a({2}), c({2}), d({2});
  a(0) = half(2048.0f);
  a(1) = half(1.0f);
  test::interpret_checked(f, {a, c, d});
  CHECK(static_cast<float>(c(0)) == 2048.0f);  // 2049 rounds to even (2048), twice
  CHECK(static_cast<float>(d(0)) == 2050.0f);
  CHECK(static_cast<float>(c(1)) == 3.0f);
  CHECK(static_cast<float>(d(1)) == 3.0f);

  Tensor E = placeholder({1}, bf16, "E");
  Tensor G = compute(
      {1}, [&](Expr i) { return E(i) + make_const(bf16, 1.0); }, "G");
  Schedule s2 = create_schedule(G);
  LoweredFunc g = lower(s2, {E, G}, "bf16_add");
  Buffer<bfloat16> e({1}), out({1});
  e(0) = bfloat16(256.0f);  // bfloat16 has 8 significant bits: 257 rounds to 256
  test::interpret_checked(g, {e, out});
  CHECK(static_cast<float>(out(0)) == 256.0f);
}

TEST_CASE("te: mixed dtypes promote like TVM (int meets float as float, narrow meets wide as wide)") {
  Tensor A = placeholder({4}, i8, "A");
  Tensor B = placeholder({4}, i32, "B");
  Tensor F = placeholder({4}, f32, "F");
  Tensor C = compute(
      {4}, [&](Expr i) { return A(i) + B(i); }, "C");
  Tensor D = compute(
      {4}, [&](Expr i) { return B(i) * F(i); }, "D");
  Tensor E = compute(
      {4}, [&](Expr i) { return A(i) + 1; }, "E");  // the immediate adopts int8
  CHECK(C.dtype() == i32);
  CHECK(D.dtype() == f32);
  CHECK(E.dtype() == i8);
  Schedule s = create_schedule({C, D, E});
  LoweredFunc f = lower(s, {A, B, F, C, D, E}, "promote");
  Buffer<int8_t> a({4}), e({4});
  Buffer<int32_t> b({4}), c({4});
  Buffer<float> fl({4}), d({4});
  int8_t av[] = {127, -128, 5, -1};
  int32_t bv[] = {1000, -1000, 70000, 3};
  for (int i = 0; i < 4; ++i) {
    a(i) = av[i];
    b(i) = bv[i];
    fl(i) = 0.5f * static_cast<float>(i + 1);
  }
  test::interpret_checked(f, {a, b, fl, c, d, e});
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(c(i) == av[i] + bv[i]);
    CHECK(d(i) == static_cast<float>(bv[i]) * fl(i));
    CHECK(e(i) == static_cast<int8_t>(static_cast<uint8_t>(av[i] + 1)));  // 127 + 1 wraps to -128
  }
}
