// The CPU backend's polynomial exp, log, tanh and erf on double (codegen/llvm/vector_math_f64.hpp)
// against long double references: ulp error over inputs spread across each function's ranges and
// all exponents, the special values libm defines, the same kernel for baseline x86-64 (no FMA) and
// AVX2 as for this machine, erf's table of polynomials on AVX-512 targets, 8-lane vectors (vscalefpd
// where the target has 512-bit AVX-512) against 4-lane ones bit for bit, and accuracy on a fast-math
// target. bench/vector_math.cpp measures the speed.
#include <doctest/doctest.h>

#include <loom/loom.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace loom;

namespace {

/// |got - want| in units of the double spacing at want (2^-1074 below DBL_MIN); infinities must
/// match exactly, and any NaN matches any NaN.
double ulp_error_f64(double got, long double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const double rounded = static_cast<double>(want);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  // The spacing in want's own binade (not in that of want rounded, which may be the next one up).
  const int exponent = want == 0 ? -1022 : std::max(static_cast<int>(std::ilogb(std::fabs(want))), -1022);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) /
                             std::ldexp(1.0L, exponent - 52));
}

struct MathCaseF64 {
  const char* name;
  Expr (*make)(Expr);
  long double (*reference)(long double);
  double max_ulp;  // docs/vector-math.md's bound, which the largest error seen stays under
};

/// docs/vector-math.md's bound for double erf on AVX-512 targets (the table of polynomials).
constexpr double kErfTableMaxUlp = 0.75;

const std::vector<MathCaseF64>& cases_f64() {
  static const std::vector<MathCaseF64> all = {
      {"exp", [](Expr x) { return loom::exp(x); }, [](long double x) { return ::expl(x); }, 0.9},
      {"log", [](Expr x) { return loom::log(x); }, [](long double x) { return ::logl(x); }, 0.9},
      {"tanh", [](Expr x) { return loom::tanh(x); }, [](long double x) { return ::tanhl(x); }, 1.75},
      {"erf", [](Expr x) { return loom::erf(x); }, [](long double x) { return ::erfl(x); }, 1.2},
  };
  return all;
}

/// Y = f(X) over n doubles, in vectors of `lanes` with a scalar remainder.
Kernel build_math_f64(const MathCaseF64& c, int64_t n, const Target& target, int lanes = 8) {
  Tensor X = placeholder({n}, f64, "X");
  Tensor Y = compute(
      {n}, [&](Expr i) { return c.make(X(i)); }, "Y");
  Schedule s = create_schedule(Y);
  auto [outer, inner] = s[Y].split(Y.axis(0), lanes);
  s[Y].vectorize(inner);
  return build(s, {X, Y}, target, std::string("vector_math_f64_") + c.name + "_" + std::to_string(lanes));
}

/// 3 x 2^19 + 1 inputs for `fn` (not a multiple of 8): uniform over the range where it is neither
/// constant nor overflowing, uniform in [-1, 1] (log: [0.5, 2]), and every exponent (log: every
/// positive double's exponent, and 1 + tiny), then the values it treats specially.
std::vector<double> inputs_f64(const std::string& fn) {
  std::vector<double> xs;
  uint64_t state = 7;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
  };
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  };
  for (int i = 0; i < (1 << 19); ++i) {
    if (fn == "log") {
      uint64_t bits = next() & 0x7fffffffffffffffull;  // any positive double, subnormals included
      double any;
      std::memcpy(&any, &bits, sizeof any);
      xs.push_back(std::isnan(any) ? 1.0 : any);
      xs.push_back(uniform(0.5, 2));
      xs.push_back(1 + std::ldexp(uniform(-1, 1), -static_cast<int>(next() % 53)));
    } else {
      const double range = fn == "exp" ? 746 : fn == "erf" ? 6.5 : 20;
      xs.push_back(uniform(-range, range));
      xs.push_back(uniform(-1, 1));
      xs.push_back(std::ldexp(uniform(-1, 1), -static_cast<int>(next() % 1070)));
    }
  }
  const double inf = std::numeric_limits<double>::infinity(),
               denorm = std::numeric_limits<double>::denorm_min();
  for (double x : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1.0, -1.0, denorm, -denorm,
                   2.2250738585072014e-308, 1.7976931348623157e308, 709.782712893384, 709.7827128933841,
                   -708.3964185322641, -745.1332191019411, -745.1332191019412, 0.6931471805599453, 19.06,
                   1.4142135623730951, 0.7071067811865476,
                   // The largest errors a search of billions of inputs found (exp before its 1 + r was
                   // kept exact; log just below 1/sqrt(2), on this CPU and on baseline x86-64).
                   690.72133584819505, -42.628357550668632, 0.70236161018323184, 0.70695633335300367,
                   // erf's two polynomials meet at 0.875; beyond 5.95 it rounds to 1.
                   0.87499999999999989, 0.875, 0.87500000000000011, 1.0, 5.86, 5.9, 5.95, 5.950000000000001})
    xs.push_back(x);
  xs.push_back(0.5);
  return xs;
}

}  // namespace

TEST_CASE("vector math f64: exp, log, tanh, erf within their documented ulp, specials exact") {
  for (const MathCaseF64& c : cases_f64()) {
    CAPTURE(std::string(c.name));
    const std::vector<double> xs = inputs_f64(c.name);
    const int64_t n = static_cast<int64_t>(xs.size());
    REQUIRE(n % 8 != 0);
    std::vector<long double> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) want[i] = c.reference(xs[i]);
    Buffer<double> in({n}), out({n});
    std::memcpy(in.data(), xs.data(), xs.size() * sizeof(double));
    // This CPU, baseline x86-64 (no FMA), and AVX2 with FMA (erf's exp-based formula, which an
    // AVX-512 host otherwise never runs).
    for (const Target& target : {Target::cpu(), Target::cpu("x86-64"), Target::cpu("x86-64-v3")}) {
      CAPTURE(target.str());
      build_math_f64(c, n, target)(in, out);
      double worst = 0, worst_at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = ulp_error_f64(out.at_flat(i), want[i]);
        if (e > worst) worst = e, worst_at = xs[i];
      }
      CAPTURE(worst_at);
      CHECK(worst <= c.max_ulp);
    }
  }
}

TEST_CASE("vector math f64: the sign of zero, infinities and NaN follow libm") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> xs = {0.0, -0.0, inf, -inf, nan, -nan, 4.9e-324, -4.9e-324, -1e-300};
  const int64_t n = static_cast<int64_t>(xs.size());
  Buffer<double> in({n}), out({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(double));
  for (const MathCaseF64& c : cases_f64()) {
    CAPTURE(std::string(c.name));
    build_math_f64(c, n, Target::cpu())(in, out);
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(xs[i]);
      const double want = static_cast<double>(c.reference(xs[i]));
      const double got = out.at_flat(i);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == want);
        CHECK(std::signbit(got) == std::signbit(want));
      }
    }
  }
}

TEST_CASE("vector math f64: 8-lane vectors (vscalefpd on AVX-512) give the bits of 4-lane vectors") {
  // Where this CPU has AVX-512 on 512-bit registers, the 8-lane exp must use vscalefpd (else the
  // comparison below compares one method with itself).
  if (__builtin_cpu_supports("avx512f")) {  // the host target uses 512-bit registers where it can
    Tensor X = placeholder({64}, f64, "X");
    Tensor Y = compute(
        {64}, [&](Expr i) { return loom::exp(X(i)); }, "Y");
    Schedule s = create_schedule(Y);
    auto [o, in] = s[Y].split(Y.axis(0), 8);
    s[Y].vectorize(in);
    CHECK(build(s, {X, Y}, Target::cpu(), "exp_f64_scalef").assembly().find("vscalefpd") !=
          std::string::npos);
  }
  // exp(1) is e rounded (as glibc's).
  {
    Buffer<double> one({1}), e({1});
    one.at_flat(0) = 1.0;
    build_math_f64(cases_f64()[0], 1, Target::cpu())(one, e);
    CHECK(e.at_flat(0) == 2.718281828459045);
  }
  for (const MathCaseF64& c : cases_f64()) {
    CAPTURE(std::string(c.name));
    const std::vector<double> xs = inputs_f64(c.name);
    const int64_t n = static_cast<int64_t>(xs.size());
    Buffer<double> in({n}), wide({n}), narrow({n}), no_zmm({n});
    std::memcpy(in.data(), xs.data(), xs.size() * sizeof(double));
    build_math_f64(c, n, Target::cpu(), 8)(in, wide);
    build_math_f64(c, n, Target::cpu(), 4)(in, narrow);
    build_math_f64(c, n, Target::cpu("host", "-evex512"), 8)(in, no_zmm);
    int64_t differ_narrow = 0, differ_no_zmm = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(wide.at_flat(i))) continue;
      differ_narrow += std::memcmp(&wide.at_flat(i), &narrow.at_flat(i), sizeof(double)) != 0;
      differ_no_zmm += std::memcmp(&wide.at_flat(i), &no_zmm.at_flat(i), sizeof(double)) != 0;
    }
    CHECK(differ_narrow == 0);
    CHECK(differ_no_zmm == 0);
  }
}

TEST_CASE("vector math f64: erf on AVX-512 targets is a polynomial per interval, picked with vpermt2pd") {
  // The AVX-512 targets pick each interval's coefficients with a two-register permute (vpermt2pd or
  // vpermi2pd) and call no exp; AVX2 keeps the exp-based formula. The targets are named, so the
  // assembly holds on any x86-64 host.
  const MathCaseF64& erf_case = cases_f64()[3];
  REQUIRE(std::string(erf_case.name) == "erf");
  for (int lanes : {8, 4, 1}) {
    CAPTURE(lanes);
    const std::string avx512 = build_math_f64(erf_case, 64, Target::cpu("x86-64-v4"), lanes).assembly();
    CHECK((avx512.find("vpermt2pd") != std::string::npos || avx512.find("vpermi2pd") != std::string::npos));
    CHECK(avx512.find("vscalefpd") == std::string::npos);
  }
  const std::string ymm = build_math_f64(erf_case, 64, Target::cpu("x86-64-v4", "-evex512"), 4).assembly();
  CHECK(
      (ymm.find("vpermt2pd\t%ymm") != std::string::npos || ymm.find("vpermi2pd\t%ymm") != std::string::npos));
  CHECK(ymm.find("zmm") == std::string::npos);
  const std::string avx2 = build_math_f64(erf_case, 64, Target::cpu("x86-64-v3"), 4).assembly();
  CHECK(avx2.find("vpermt2pd") == std::string::npos);
  CHECK(avx2.find("vroundpd") != std::string::npos);  // exp's n
  if (!__builtin_cpu_supports("avx512f")) return;
  // The sample, plus each interval's edges and their neighbours (interval_polynomials_f64.hpp:
  // [0, 1/2), four per binade from 1/2, |x| limited to 5.95), at 8 lanes, 4 (the low half of a
  // permute), 13 (a second permute, partly used), 1 (a loop left scalar), and without 512-bit
  // registers at 8, 3 and 1.
  std::vector<double> xs = inputs_f64("erf");
  std::vector<double> edges = {5.95};
  for (int e = -1; e <= 2; ++e)
    for (int q = 0; q < 4; ++q) edges.push_back(std::ldexp(1 + q / 4.0, e));
  for (double edge : edges)
    for (double x : {std::nextafter(edge, 0.0), edge, std::nextafter(edge, 8.0)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  const int64_t n = static_cast<int64_t>(xs.size());
  Buffer<double> in({n}), out({n});
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(double));
  const Target no_zmm = Target::cpu("host", "-evex512");
  for (const auto& [lanes, target] :
       {std::pair{8, Target::cpu()}, std::pair{4, Target::cpu()}, std::pair{13, Target::cpu()},
        std::pair{1, Target::cpu()}, std::pair{8, no_zmm}, std::pair{3, no_zmm}, std::pair{1, no_zmm}}) {
    CAPTURE(lanes);
    CAPTURE(target.str());
    build_math_f64(erf_case, n, target, lanes)(in, out);
    double worst = 0, worst_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = ulp_error_f64(out.at_flat(i), ::erfl(xs[i]));
      if (e > worst) worst = e, worst_at = xs[i];
    }
    CAPTURE(worst_at);
    CHECK(worst <= kErfTableMaxUlp);
  }
}

TEST_CASE("vector math f64: with fast math, finite inputs keep their accuracy") {
  Target fast = Target::cpu();
  fast.set_fast_math();
  for (const MathCaseF64& c : cases_f64()) {
    CAPTURE(std::string(c.name));
    std::vector<double> xs;
    for (double x : inputs_f64(c.name))
      if (std::isfinite(x) && x != 0 && std::isfinite(std::exp(std::fabs(x))) && (c.name[0] != 'l' || x > 0))
        xs.push_back(x);
    while (xs.size() % 8 == 0) xs.push_back(0.5);
    const int64_t n = static_cast<int64_t>(xs.size());
    Buffer<double> in({n}), out({n});
    std::memcpy(in.data(), xs.data(), xs.size() * sizeof(double));
    build_math_f64(c, n, fast)(in, out);
    double worst = 0, worst_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = ulp_error_f64(out.at_flat(i), c.reference(xs[i]));
      if (e > worst) worst = e, worst_at = xs[i];
    }
    CAPTURE(worst_at);
    CHECK(worst <= c.max_ulp + 1.0);
  }
}
