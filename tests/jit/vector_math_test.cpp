// The CPU backend's polynomial exp, log, tanh, erf (codegen/llvm/vector_math.hpp) against libm's
// double versions rounded to float: ulp error over a sample spread across every float bit pattern,
// the special values libm defines, and the same kernel compiled for baseline x86-64 (no FMA, SSE2
// vectors) as for this machine. bench/vector_math.cpp checks every float and measures the speed.
#include <doctest/doctest.h>

#include <loom/loom.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace loom;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// |got - want| in units of the float spacing at want (subnormal spacing below FLT_MIN); the
/// special values must match exactly (any NaN matches any NaN).
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const float rounded = static_cast<float>(want);
  if (std::isinf(rounded) || rounded == 0) return got == rounded ? 0 : std::fabs(got - want) / 1.4e-45;
  const int exponent = std::max(std::ilogb(rounded), -126);
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 23);
}

struct MathCase {
  const char* name;
  Expr (*make)(Expr);
  double (*reference)(double);
  double max_ulp;  // the exhaustive check's maximum over both targets (docs/vector-math.md), rounded up
                   // (tanh, erf: baseline x86-64's exp-based formulas; AVX-512's tables have their own test)
};

const std::vector<MathCase>& cases() {
  static const std::vector<MathCase> all = {
      {"exp", [](Expr x) { return loom::exp(x); }, [](double x) { return std::exp(x); }, 1.02},
      {"log", [](Expr x) { return loom::log(x); }, [](double x) { return std::log(x); }, 0.97},
      {"tanh", [](Expr x) { return loom::tanh(x); }, [](double x) { return std::tanh(x); }, 1.34},
      {"erf", [](Expr x) { return loom::erf(x); }, [](double x) { return std::erf(x); }, 1.30},
  };
  return all;
}

/// Y = f(X) over n floats, in vectors of `lanes` with a scalar remainder (n is not a multiple of 16).
Kernel build_math(const MathCase& c, int64_t n, const Target& target, int lanes = 16) {
  Tensor X = placeholder({n}, f32, "X");
  Tensor Y = compute(
      {n}, [&](Expr i) { return c.make(X(i)); }, "Y");
  Schedule s = create_schedule(Y);
  auto [outer, inner] = s[Y].split(Y.axis(0), lanes);
  s[Y].vectorize(inner);
  return build(s, {X, Y}, target, std::string("vector_math_") + c.name + "_" + std::to_string(lanes));
}

/// Every 1021st bit pattern (1021 is odd, so over 2^32 steps this visits them all; here 4.2 million
/// of them, all exponents and signs), then the values each function treats specially.
std::vector<float> sample_inputs() {
  std::vector<float> xs;
  for (uint64_t k = 0; k < (uint64_t{1} << 22); ++k)
    xs.push_back(from_bits(static_cast<uint32_t>(k * 1021 + 7)));
  const float inf = std::numeric_limits<float>::infinity();
  for (float x :
       {0.0f,          -0.0f,          inf,        -inf,      std::numeric_limits<float>::quiet_NaN(),
        1.0f,          -1.0f,          1e-45f,     -1e-45f,   1.17549435e-38f,
        3.4028235e38f, -3.4028235e38f, 0.625f,     -0.625f,   0.875f,
        -0.875f,       4.0f,           -4.0f,      88.72283f, 88.72284f,
        -87.33655f,    -103.2789f,     -103.9721f, -104.0f,   89.0f,
        0.6931472f,    0.125f,         -0.125f,    8.0f,      9.0f,
        9.5f,          12.0f})
    xs.push_back(x);
  xs.push_back(1.5f);  // 4,194,337 in all: not a multiple of 16
  return xs;
}

/// The largest ulp error of `out` (c applied to xs) and the input where it occurs.
struct Worst {
  double ulp = 0;
  float at = 0;
};
Worst worst_error(const MathCase& c, const std::vector<float>& xs, const Buffer<float>& out) {
  Worst w;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = ulp_error(out.at_flat(static_cast<int64_t>(i)), c.reference(xs[i]));
    if (e > w.ulp) w = {e, xs[i]};
  }
  return w;
}

}  // namespace

TEST_CASE("vector math: exp, log, tanh, erf within their documented ulp of libm, specials exact") {
  const std::vector<float> xs = sample_inputs();
  const int64_t n = static_cast<int64_t>(xs.size());
  REQUIRE(n % 16 != 0);
  Buffer<float> in({n}), out({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
  for (const Target& target : {Target::cpu(), Target::cpu("x86-64")}) {
    for (const MathCase& c : cases()) {
      CAPTURE(std::string(c.name));
      CAPTURE(target.str());
      build_math(c, n, target)(in, out);
      const Worst worst = worst_error(c, xs, out);
      CAPTURE(worst.at);
      CHECK(worst.ulp <= c.max_ulp);
    }
  }
}

TEST_CASE("vector math: the sign of zero, infinities and NaN follow libm") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> specials = {0.0f, -0.0f, inf, -inf, nan, -nan, 1e-45f, -1e-45f};
  // Five copies: two 16-lane vectors (AVX-512's own instructions where the target has them) and a
  // scalar remainder of eight.
  std::vector<float> xs;
  for (int copy = 0; copy < 5; ++copy) xs.insert(xs.end(), specials.begin(), specials.end());
  const int64_t n = static_cast<int64_t>(xs.size());
  Buffer<float> in({n}), out({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
  for (const MathCase& c : cases()) {
    CAPTURE(std::string(c.name));
    build_math(c, n, Target::cpu())(in, out);
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(xs[i]);
      const float want = static_cast<float>(c.reference(xs[i]));
      const float got = out.at_flat(i);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == want);
        CHECK(std::signbit(got) == std::signbit(want));
      }
    }
  }
}

TEST_CASE("vector math: 16-lane vectors (vscalefps, vgetmantps on AVX-512) give the bits of 8-lane vectors") {
  // exp scales a 16-lane vector with one AVX-512 instruction where the target has it, other widths
  // in two integer-built steps: both round p 2^n once, so the bits must agree (tanh and erf use exp).
  // log splits x into mantissa and exponent with vgetmantps and vgetexpps there, from x's bits
  // elsewhere: both exact, so again the same bits.
  const std::vector<float> xs = sample_inputs();
  const int64_t n = static_cast<int64_t>(xs.size());
  // Without evex512 (AVX-512 on 256-bit registers only, as AVX10/256), 16 lanes take the integer
  // path: LLVM cannot lower the 512-bit intrinsic there.
  Buffer<float> in({n}), wide({n}), narrow({n}), no_zmm({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
  auto differ = [&](const Buffer<float>& a, const Buffer<float>& b) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i)
      if (std::memcmp(&a.at_flat(i), &b.at_flat(i), sizeof(float)) != 0 &&
          !(std::isnan(a.at_flat(i)) && std::isnan(b.at_flat(i))))
        ++count;
    return count;
  };
  for (const MathCase& c : cases()) {
    CAPTURE(std::string(c.name));
    build_math(c, n, Target::cpu(), 16)(in, wide);
    build_math(c, n, Target::cpu(), 8)(in, narrow);
    build_math(c, n, Target::cpu("host", "-evex512"), 16)(in, no_zmm);
    CHECK(differ(wide, narrow) == 0);
    CHECK(differ(wide, no_zmm) == 0);
  }
}

TEST_CASE("vector math: exp rounds n with one instruction where the target has one") {
  // SSE4.1 and newer round to the nearest integer in one instruction (roundps, vrndscaleps), and
  // vscalefps takes n as a float: no conversion to integer and back. Baseline x86-64 has neither and
  // rounds by adding a signed half and truncating (cvttps2dq). The targets are named, so this holds on
  // any x86-64 host that runs the kernels.
  const MathCase& exp_case = cases()[0];
  REQUIRE(std::string(exp_case.name) == "exp");
  const std::string v2 = build_math(exp_case, 64, Target::cpu("x86-64-v2"), 4).assembly();
  CHECK(v2.find("roundps") != std::string::npos);
  CHECK(v2.find("cvttps2dq") != std::string::npos);  // 2^n from integer bits: n converted once
  const std::string baseline = build_math(exp_case, 64, Target::cpu("x86-64"), 4).assembly();
  CHECK(baseline.find("roundps") == std::string::npos);
  CHECK(baseline.find("cvttps2dq") != std::string::npos);
  if (__builtin_cpu_supports("avx512f")) {
    // 16 lanes of AVX-512: one vrndscaleps, one vscalefps, NaN through the arithmetic (no unordered
    // compare and select at the end), nothing converted to integer.
    const std::string zmm = build_math(exp_case, 64, Target::cpu(), 16).assembly();
    CHECK(zmm.find("vrndscaleps") != std::string::npos);
    CHECK(zmm.find("vscalefps") != std::string::npos);
    CHECK(zmm.find("cvttps2dq") == std::string::npos);
    CHECK(zmm.find("vcmpunordps") == std::string::npos);
    Buffer<float> in({64}), out({64});
    for (int64_t i = 0; i < 64; ++i) in.at_flat(i) = static_cast<float>(i % 3 == 0 ? NAN : i - 32);
    build_math(exp_case, 64, Target::cpu(), 16)(in, out);
    for (int64_t i = 0; i < 64; ++i) CHECK(std::isnan(out.at_flat(i)) == (i % 3 == 0));
  }
}

TEST_CASE("vector math: log reduces with vgetmantps and vgetexpps on 16 lanes of AVX-512") {
  // Those two make log's special values too (log 0 = -inf, log of a negative number NaN), so the
  // 16-lane code has no compare-and-select for them; 8 lanes take the integer reduction.
  if (!__builtin_cpu_supports("avx512f")) return;
  const MathCase& log_case = cases()[1];
  REQUIRE(std::string(log_case.name) == "log");
  const std::string zmm = build_math(log_case, 64, Target::cpu(), 16).assembly();
  CHECK(zmm.find("vgetmantps") != std::string::npos);
  CHECK(zmm.find("vgetexpps") != std::string::npos);
  CHECK(zmm.find("vpsrad") == std::string::npos);  // no exponent taken from the bits
  const std::string ymm = build_math(log_case, 64, Target::cpu(), 8).assembly();
  CHECK(ymm.find("vgetmantps") == std::string::npos);
  CHECK(ymm.find("vpsrad") != std::string::npos);
}

TEST_CASE(
    "vector math: tanh and erf on AVX-512 targets are a polynomial per interval, picked with vpermt2ps") {
  // The AVX-512 targets pick each interval's coefficients with a two-register permute (vpermt2ps or
  // vpermi2ps) and call no exp; AVX2 keeps the exp-based formulas. The targets are named, so the
  // assembly holds on any x86-64 host. Every float was checked (docs/vector-math.md): tanh within
  // 0.721 ulp, erf 0.626, against 1.33 and 1.17 for the exp-based formulas.
  struct Bound {
    const char* name;
    double max_ulp;
  };
  for (const Bound& bound : {Bound{"tanh", 0.73}, Bound{"erf", 0.63}}) {
    const MathCase& c = *std::find_if(cases().begin(), cases().end(),
                                      [&](const MathCase& m) { return std::string(m.name) == bound.name; });
    CAPTURE(std::string(c.name));
    for (int lanes : {16, 8, 1}) {
      CAPTURE(lanes);
      const std::string avx512 = build_math(c, 64, Target::cpu("x86-64-v4"), lanes).assembly();
      CHECK((avx512.find("vpermt2ps") != std::string::npos || avx512.find("vpermi2ps") != std::string::npos));
      CHECK(avx512.find("vscalefps") == std::string::npos);
    }
    // Without 512-bit registers: 256-bit permutes, no element-by-element loads.
    const std::string ymm = build_math(c, 64, Target::cpu("x86-64-v4", "-evex512"), 8).assembly();
    CHECK((ymm.find("vpermt2ps\t%ymm") != std::string::npos ||
           ymm.find("vpermi2ps\t%ymm") != std::string::npos));
    CHECK(ymm.find("zmm") == std::string::npos);
    CHECK(ymm.find("vinsertps") == std::string::npos);
    const std::string avx2 = build_math(c, 64, Target::cpu("x86-64-v3"), 8).assembly();
    CHECK(avx2.find("vpermt2ps") == std::string::npos);
    CHECK(avx2.find("vroundps") != std::string::npos);  // exp's n
    if (!__builtin_cpu_supports("avx512f")) continue;
    // The sample at 16 lanes, 8 (the low half of a permute) and 20 (a second permute, partly used);
    // without 512-bit registers, two 256-bit permutes per 8 lanes, at 16 and 5 lanes.
    const std::vector<float> xs = sample_inputs();
    const int64_t n = static_cast<int64_t>(xs.size());
    Buffer<float> in({n}), out({n});
    std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
    const Target no_zmm = Target::cpu("host", "-evex512");
    for (const auto& [lanes, target] :
         {std::pair{16, Target::cpu()}, std::pair{8, Target::cpu()}, std::pair{20, Target::cpu()},
          std::pair{16, no_zmm}, std::pair{5, no_zmm}}) {
      CAPTURE(lanes);
      CAPTURE(target.str());
      build_math(c, n, target, lanes)(in, out);
      const Worst worst = worst_error(c, xs, out);
      CAPTURE(worst.at);
      CHECK(worst.ulp <= bound.max_ulp);
    }
  }
}

TEST_CASE("vector math: with fast math, finite inputs keep their accuracy") {
  // A fast-math target lets the code generator reassociate and assume no NaN or infinity, whatever
  // the IR's flags: the sequences must not rely on roundings it may fold away.
  std::vector<float> xs;
  for (float x : sample_inputs())
    if (std::isfinite(x) && std::fabs(x) < 80.0f && x != 0) xs.push_back(x);
  while (xs.size() % 16 == 0) xs.push_back(0.5f);
  const int64_t n = static_cast<int64_t>(xs.size());
  Buffer<float> in({n}), out({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
  Target fast = Target::cpu();
  fast.set_fast_math();
  for (const MathCase& c : cases()) {
    CAPTURE(std::string(c.name));
    build_math(c, n, fast)(in, out);
    double worst = 0;
    float worst_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = c.reference(xs[i]);
      if (!std::isfinite(want)) continue;  // log of a negative number: fast math promised none
      const double e = ulp_error(out.at_flat(i), want);
      if (e > worst) worst = e, worst_at = xs[i];
    }
    CAPTURE(worst_at);
    CHECK(worst <= c.max_ulp + 1.0);
  }
}
