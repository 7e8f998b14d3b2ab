// Expressions inside computes: if_then_else (lazy: a padding read outside the input must not
// fault), select (eager), all/any, casts (truncation, widening, wraparound) and math functions.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

// if_then_else is lazy: the padding never reads outside A, computed at the root or inlined (the
// interpreter checks every access, so A[-1] would throw).
TEST_CASE("te: a 2-D zero-padded convolution with the padding inlined stays in bounds") {
  const int n = 6, k = 3, pad = 1, out = n + 2 * pad - k + 1;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor W = placeholder({k, k}, f32, "W");
  Tensor Apad = compute(
      {n + 2 * pad, n + 2 * pad},
      [&](Expr y, Expr x) {
        return if_then_else(all(y >= pad, y < n + pad, x >= pad, x < n + pad), A(y - pad, x - pad), 0.0f);
      },
      "Apad");
  IterVar ry = reduce_axis(0, k, "ry"), rx = reduce_axis(0, k, "rx");
  Tensor B = compute(
      {out, out},
      [&](Expr y, Expr x) {
        return sum(Apad(y + ry, x + rx) * W(ry, rx), {ry, rx});
      },
      "B");
  Buffer<float> a = random_buffer<float>({n, n}, 2), w = random_buffer<float>({k, k}, 3);
  auto check = [&](const LoweredFunc& f) {
    Buffer<float> b({out, out});
    test::interpret_checked(f, {a, w, b});
    for (int y = 0; y < out; ++y)
      for (int x = 0; x < out; ++x) {
        float e = 0.0f;
        for (int dy = 0; dy < k; ++dy)
          for (int dx = 0; dx < k; ++dx) {
            int sy = y + dy - pad, sx = x + dx - pad;
            e += (sy >= 0 && sy < n && sx >= 0 && sx < n ? a(sy, sx) : 0.0f) * w(dy, dx);
          }
        CHECK(b(y, x) == e);
      }
  };
  Schedule s = create_schedule(B);
  check(lower(s, {A, W, B}, "conv"));
  s[Apad].compute_inline();
  check(lower(s, {A, W, B}, "conv_inline"));
}

TEST_CASE("te: select evaluates both branches, so a padding read through select faults") {
  const int n = 5;
  Tensor A = placeholder({n}, f32, "A");
  Tensor Safe = compute(
      {n}, [&](Expr i) { return select(A(i) > 0.0f, A(i), A(n - 1 - i) * 2.0f); }, "Safe");
  Schedule s = create_schedule(Safe);
  LoweredFunc f = lower(s, {A, Safe}, "select");
  CHECK(f.to_string().find("select(") != std::string::npos);
  Buffer<float> a = random_buffer<float>({n}, 4), out({n});
  test::interpret_checked(f, {a, out});
  for (int i = 0; i < n; ++i) CHECK(out(i) == (a(i) > 0.0f ? a(i) : a(n - 1 - i) * 2.0f));

  Tensor Unsafe = compute(
      {n + 1}, [&](Expr i) { return select(i < n, A(i), 0.0f); }, "Unsafe");
  Schedule s2 = create_schedule(Unsafe);
  LoweredFunc g = lower(s2, {A, Unsafe}, "unsafe_select");
  Buffer<float> out2({n + 1});
  // select reads A(5) at i = 5: the call's input region check refuses it before it runs.
  CHECK_THROWS_WITH_AS(test::interpret_checked(g, {a, out2}),
                       doctest::Contains("argument 'A' of kernel 'unsafe_select': stage 'Unsafe' reads A(i)"),
                       loom::Error);
}

TEST_CASE("te: all and any over several conditions, with zero and one conditions too") {
  const int n = 16;
  Tensor A = placeholder({n}, i32, "A");
  std::vector<Tensor> out = compute(
      {n},
      [&](Expr i) {
        Expr a = A(i);
        return std::vector<Expr>{all(a > 0, a % 2 == 0, a < 50), any(a<-40, a == 7, a> 45),
                                 all(std::vector<Expr>{}), any(std::vector<Expr>{}), all(a != 3)};
      },
      "Logic");
  Schedule s = create_schedule(out);
  LoweredFunc f = lower(s, {A, out[0], out[1], out[2], out[3], out[4]}, "all_any");
  Buffer<int32_t> a({n});
  int32_t values[n] = {-50, -41, -40, -1, 0, 1, 2, 3, 7, 8, 44, 45, 46, 48, 50, 51};
  for (int i = 0; i < n; ++i) a(i) = values[i];
  Buffer<bool> all3({n}), any3({n}), all0({n}), any0({n}), all1({n});
  test::interpret_checked(f, {a, all3, any3, all0, any0, all1});
  for (int i = 0; i < n; ++i) {
    int v = values[i];
    CAPTURE(v);
    CHECK(all3(i) == (v > 0 && v % 2 == 0 && v < 50));
    CHECK(any3(i) == (v < -40 || v == 7 || v > 45));
    CHECK(all0(i) == true);
    CHECK(any0(i) == false);
    CHECK(all1(i) == (v != 3));
  }
}

TEST_CASE("te: casts truncate floats toward zero, widen and narrow integers with wraparound") {
  const int n = 8;
  Tensor F = placeholder({n}, f32, "F");
  Tensor I = placeholder({n}, i32, "I");
  Tensor U = placeholder({n}, u8, "U");
  std::vector<Tensor> out = compute(
      {n},
      [&](Expr i) {
        return std::vector<Expr>{cast(i32, F(i)),            // truncation toward zero
                                 cast(i8, I(i)),             // narrowing wraps
                                 cast(u16, cast(i8, I(i))),  // sign-extends, then reinterprets
                                 cast(i32, U(i)),            // zero-extends
                                 cast(i64, I(i)) * Expr(int64_t{3000000000}),  // widened before multiplying
                                 cast(f64, I(i)) / 4.0,
                                 cast(u8, I(i) + 1)};
      },
      "X");
  Schedule s = create_schedule(out);
  LoweredFunc f = lower(s, {F, I, U, out[0], out[1], out[2], out[3], out[4], out[5], out[6]}, "casts");
  Buffer<float> fl({n});
  Buffer<int32_t> in({n}), to_i32({n}), from_u8({n});
  Buffer<uint8_t> u({n}), plus_one({n});
  Buffer<int8_t> narrow({n});
  Buffer<uint16_t> sext({n});
  Buffer<int64_t> wide({n});
  Buffer<double> half_of({n});
  float fv[n] = {2.7f, -2.7f, 0.99f, -0.99f, 255.5f, -129.9f, 1e6f, 7.0f};
  int32_t iv[n] = {0, 1, -1, 127, 128, 255, -129, 70000};
  uint8_t uv[n] = {0, 1, 127, 128, 200, 254, 255, 37};
  for (int i = 0; i < n; ++i) {
    fl(i) = fv[i];
    in(i) = iv[i];
    u(i) = uv[i];
  }
  test::interpret_checked(f, {fl, in, u, to_i32, narrow, sext, from_u8, wide, half_of, plus_one});
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(to_i32(i) == static_cast<int32_t>(fv[i]));
    CHECK(narrow(i) == static_cast<int8_t>(static_cast<uint8_t>(iv[i] & 0xff)));
    CHECK(sext(i) == static_cast<uint16_t>(static_cast<int16_t>(static_cast<int8_t>(iv[i] & 0xff))));
    CHECK(from_u8(i) == static_cast<int32_t>(uv[i]));
    CHECK(wide(i) == static_cast<int64_t>(iv[i]) * int64_t{3000000000});
    CHECK(half_of(i) == static_cast<double>(iv[i]) / 4.0);
    CHECK(plus_one(i) == static_cast<uint8_t>((iv[i] + 1) & 0xff));
  }
}

namespace {

struct MathCase {
  const char* name;
  std::function<Expr(Expr)> loom_fn;
  std::function<double(double)> reference;
};

std::vector<MathCase> math_cases() {
  return {
      {"exp", [](Expr x) { return exp(x); }, [](double x) { return std::exp(x); }},
      {"log", [](Expr x) { return log(abs(x) + 0.25f); },
       [](double x) { return std::log(std::abs(x) + 0.25); }},
      {"sqrt", [](Expr x) { return sqrt(abs(x)); }, [](double x) { return std::sqrt(std::abs(x)); }},
      {"tanh", [](Expr x) { return tanh(x); }, [](double x) { return std::tanh(x); }},
      {"pow", [](Expr x) { return pow(abs(x) + 0.5f, 1.75f); },
       [](double x) { return std::pow(std::abs(x) + 0.5, 1.75); }},
      {"abs", [](Expr x) { return abs(x); }, [](double x) { return std::abs(x); }},
      {"floor", [](Expr x) { return floor(x); }, [](double x) { return std::floor(x); }},
      {"ceil", [](Expr x) { return ceil(x); }, [](double x) { return std::ceil(x); }},
      {"erf", [](Expr x) { return erf(x); }, [](double x) { return std::erf(x); }},
      {"sigmoid", [](Expr x) { return sigmoid(x); }, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"sin", [](Expr x) { return sin(x); }, [](double x) { return std::sin(x); }},
      {"cos", [](Expr x) { return cos(x); }, [](double x) { return std::cos(x); }},
      {"round", [](Expr x) { return round(x); }, [](double x) { return std::round(x); }},
      {"trunc", [](Expr x) { return trunc(x); }, [](double x) { return std::trunc(x); }},
  };
}

// Halves (rounding ties), integers, small and large magnitudes, both signs.
const std::vector<double> kMathInputs = {-6.3, -3.5, -2.5, -1.5, -1.0, -0.5, -0.2, 0.0,
                                         0.1,  0.5,  0.75, 1.5,  2.5,  3.49, 4.0,  9.8};

template <typename T>
void check_math(DType t) {
  const int n = static_cast<int>(kMathInputs.size());
  for (const MathCase& mc : math_cases()) {
    CAPTURE(mc.name);
    CAPTURE(t.str());
    Tensor A = placeholder({n}, t, "A");
    Tensor C = compute(
        {n}, [&](Expr i) { return mc.loom_fn(A(i)); }, "C");
    CHECK(C.dtype() == t);
    Schedule s = create_schedule(C);
    LoweredFunc f = lower(s, {A, C}, mc.name);
    Buffer<T> a({n}), c({n});
    for (int i = 0; i < n; ++i) a(i) = static_cast<T>(kMathInputs[static_cast<size_t>(i)]);
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < n; ++i) {
      double x = static_cast<double>(a(i));
      double expected = static_cast<double>(static_cast<T>(mc.reference(x)));
      CAPTURE(x);
      double got = static_cast<double>(c(i));
      CHECK(std::abs(got - expected) <= 1e-5 * std::abs(expected));
    }
  }
}

}  // namespace

TEST_CASE("te: math functions agree with <cmath> within 1e-5 relative error (float32)") {
  check_math<float>(f32);
}

TEST_CASE("te: math functions agree with <cmath> within 1e-5 relative error (float64)") {
  check_math<double>(f64);
}
