// Float scalar arguments of a tensor-expression kernel (build(s, {A, C, alpha}) with
// Var alpha("alpha", f32)): the same values on the LLVM JIT, the interpreter and the CUDA
// simulator, each rounded to its declared type (float16, float32, float64) at the call, as the
// kernel sees them; and wrong calls. (What lower() refuses: tests/errors/lower_call_errors_test.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// C(i, j) = A(i, j) * alpha + float(B(j) * beta) + float(h), with alpha f32, beta f64, h f16,
/// over symbolic n x m, and the integer scalar m passed between the float ones.
struct Axpb {
  Var n = size_var("n"), m = size_var("m");
  Var alpha{"alpha", f32}, beta{"beta", f64}, h{"h", f16};
  Tensor A = placeholder({n, m}, f32, "A");
  Tensor B = placeholder({m}, f64, "B");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return A(i, j) * alpha + cast(f32, B(j) * beta) + cast(f32, Expr(h)); },
      "C");
  std::vector<LowerArg> args() const { return {A, B, alpha, m, beta, h, C}; }
};

/// Something that runs a kernel on its arguments: a Kernel, or the interpreter on a LoweredFunc.
using Runner = std::function<void(const std::vector<KernelArg>&)>;

Runner interpreter(const LoweredFunc& f) {
  return [f](const std::vector<KernelArg>& args) { interpret(f, args); };
}

/// Runs `kernel` on n x m random data with the given scalars; returns C.
Buffer<float> run(const Runner& kernel, int64_t n, int64_t m, double alpha, double beta, double h,
                  uint32_t seed = 7) {
  Buffer<float> a({n, m}), c({n, m});
  Buffer<double> b({m});
  fill_random(a, seed);
  fill_random(b, seed + 1);
  c.fill(0.0f);
  kernel({a, b, alpha, m, beta, h, c});
  return c;
}

void check_equal(const Buffer<float>& got, const Buffer<float>& want, double tolerance) {
  REQUIRE(got.num_elements() == want.num_elements());
  for (int64_t e = 0; e < got.num_elements(); ++e)
    REQUIRE(std::abs(got.at_flat(e) - want.at_flat(e)) <= tolerance * (1.0 + std::abs(want.at_flat(e))));
}

}  // namespace

TEST_CASE("float scalars: a vectorized, parallel CPU kernel matches the unscheduled interpreter") {
  Axpb p;
  Schedule reference = create_schedule(p.C);
  Runner want = interpreter(lower(reference, p.args(), "reference"));
  Schedule s = create_schedule(p.C);
  auto [jo, ji] = s[p.C].split(p.C.axis(1), 8);  // m = 29 and 37: not multiples of 8
  s[p.C].vectorize(ji);
  s[p.C].parallel(p.C.axis(0));
  Runner got = build(s, p.args(), Target::cpu());
  for (auto [n, m] : {std::pair<int64_t, int64_t>{13, 29}, {5, 37}}) {
    CAPTURE(m);
    for (double alpha : {1.5, -0.3}) {
      Buffer<float> c = run(got, n, m, alpha, 2.25, 0.5);
      check_equal(c, run(want, n, m, alpha, 2.25, 0.5), 1e-6);
      // And against the formula, so that a kernel that ignored a scalar would fail.
      Buffer<float> a({n, m});
      Buffer<double> b({m});
      fill_random(a, 7);
      fill_random(b, 8);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j)
          REQUIRE(c(i, j) == doctest::Approx(a(i, j) * alpha + b(j) * 2.25 + 0.5).epsilon(1e-5));
    }
  }
}

TEST_CASE("float scalars: each is rounded to its type at the call, on every target") {
  // With A = 0 and B = 0, C is exactly float(h) after h was rounded to float16 at the call:
  // 1/3 is 0.333251953125 in float16 (0.3333333432674408 in float32).
  Axpb p;
  Schedule s = create_schedule(p.C);
  auto [jo, ji] = s[p.C].split(p.C.axis(1), 16);
  s[p.C].vectorize(ji);
  Schedule g = create_schedule(p.C);
  auto [bx, tx] = g[p.C].split(p.C.axis(1), 32);
  g[p.C].bind(p.C.axis(0), thread_axis("blockIdx.x"));
  g[p.C].bind(tx, thread_axis("threadIdx.x"));
  g[p.C].unroll(bx);
  struct Built {
    const char* name;
    Runner kernel;
  };
  std::vector<Built> kernels = {{"cpu", build(s, p.args(), Target::cpu())},
                                {"interpreter", interpreter(lower(s, p.args(), "rounding"))},
                                {"cuda_sim", build(g, p.args(), Target::cuda_sim())}};
  for (Built& k : kernels) {
    CAPTURE(k.name);
    Buffer<float> a({3, 20}), c({3, 20});
    Buffer<double> b({20});
    a.fill(0.0f);
    b.fill(0.0);
    c.fill(-1.0f);
    k.kernel({a, b, 1.0, int64_t{20}, 1.0, 1.0 / 3.0, c});
    for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 0.333251953125f);
    // alpha = 0.1 in float32 times A = 1: exactly float(0.1), not 0.1 in double rounded later.
    a.fill(1.0f);
    k.kernel({a, b, 0.1, int64_t{20}, 1.0, 0.0, c});
    for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 0.1f);
    // beta is float64: B(j) * beta rounds once, from double, to float.
    a.fill(0.0f);
    b.fill(3.0);
    k.kernel({a, b, 0.0, int64_t{20}, 1.0 / 3.0, 0.0, c});
    for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 1.0f);
    // An integer value for a float parameter is that value.
    k.kernel({a, b, 0.0, int64_t{20}, 2, 0.0, c});
    for (int64_t e = 0; e < c.num_elements(); ++e) REQUIRE(c.at_flat(e) == 6.0f);
  }
}

TEST_CASE("float scalars: a wrong call names the parameter and writes nothing") {
  Axpb p;
  Kernel k = build(create_schedule(p.C), p.args(), Target::cpu());
  Buffer<float> a({2, 4}), c({2, 4});
  Buffer<double> b({4});
  c.fill(5.0f);
  CHECK_THROWS_WITH_AS(k(a, b, c, int64_t{4}, 1.0, 1.0, c),
                       doctest::Contains("argument 'alpha' of kernel 'main' is a scalar (float32) "
                                         "but a buffer was passed: pass a floating-point value"),
                       ArgumentError);
  CHECK_THROWS_WITH_AS(k(a, b, 1.0, 4.0, 1.0, 1.0, c),
                       doctest::Contains("argument 'm' of kernel 'main' is an integer (int32) but "
                                         "the floating-point value 4 was passed: pass an integer"),
                       ArgumentError);
  for (int64_t e = 0; e < c.num_elements(); ++e) CHECK(c.at_flat(e) == 5.0f);
}
