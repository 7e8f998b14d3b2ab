// lib::gemm's Stream-K mode compiled by the JIT: against a naive product (in double) and the
// data-parallel schedule on 3, 5 and 7 tiles whose sizes the tiles do not divide, f32 and f64,
// 1 and 2 workers and threads; the work split equals plan_decomposition's; bad options throw.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lib_gemm_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// Small tiles, so that a few hundred rows make several tiles: bm = 32, bn = 64, kc = 16.
lib::GemmConfig tiles(const lib::GemmProblem& p, lib::Decomposition d, int workers) {
  lib::GemmConfig c = lib::default_gemm_config(p.m, p.n, p.k, p.dtype, 2);
  c.mr = 8;
  c.nr = 2 * c.lanes;
  c.mc = 32;
  c.nc = 64;
  c.kc = 16;
  c.decomposition = d;
  c.workers = workers;
  return c;
}

template <typename T>
struct Operands {
  Buffer<T> a, b;
  std::vector<double> expected;  // C, row-major, computed in double
  Operands(const lib::GemmProblem& p)
      : a(p.transpose_a ? std::vector<int64_t>{p.k, p.m} : std::vector<int64_t>{p.m, p.k}),
        b(p.transpose_b ? std::vector<int64_t>{p.n, p.k} : std::vector<int64_t>{p.k, p.n}) {
    std::mt19937 rng(static_cast<unsigned>(p.m * 131 + p.n * 7 + p.k));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<T>(dist(rng));
    for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(dist(rng));
    expected.assign(static_cast<size_t>(p.m * p.n), 0.0);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          const double av = p.transpose_a ? a.data()[k * p.m + i] : a.data()[i * p.k + k];
          const double bv = p.transpose_b ? b.data()[j * p.k + k] : b.data()[k * p.n + j];
          s += av * bv;
        }
        expected[static_cast<size_t>(i * p.n + j)] = s;
      }
  }
};

template <typename T>
Buffer<T> run(const lib::Gemm& g, Operands<T>& d) {
  Kernel f = build(g.schedule, g.args(), Target::cpu(), "lib_gemm_streamk");
  Buffer<T> c({g.problem.m, g.problem.n});
  c.fill(static_cast<T>(12345));  // every element must be written
  f(d.a, d.b, c);
  return c;
}

template <typename T>
int64_t mismatches(const Buffer<T>& c, const std::vector<double>& expected, int64_t k) {
  const double tolerance = (sizeof(T) == 4 ? 1e-5 : 1e-12) * static_cast<double>(k + 1);
  int64_t bad = 0;
  for (int64_t i = 0; i < c.num_elements(); ++i) {
    const double e = expected[static_cast<size_t>(i)], got = static_cast<double>(c.at_flat(i));
    if (std::abs(got - e) > tolerance * (1.0 + std::abs(e)) && bad++ < 5)
      FAIL_CHECK("C[", i, "] = ", got, ", expected ", e);
  }
  return bad;
}

/// Stream-K with `workers` against the reference and the data-parallel schedule of the same tiles.
template <typename T>
void check_streamk(const lib::GemmProblem& p, int workers, int64_t expected_tiles) {
  CAPTURE(p.m);
  CAPTURE(p.n);
  CAPTURE(p.k);
  CAPTURE(workers);
  lib::GemmConfig sk = tiles(p, lib::Decomposition::StreamK, workers);
  const lib::StreamKLayout layout = lib::streamk_layout(p, sk);
  CHECK(layout.tiles() == expected_tiles);
  CHECK(layout.iterations_per_tile == (p.k + 15) / 16);
  // With two workers and an odd number of tiles, a tile is shared: the fixup is exercised.
  if (workers == 2 && layout.iterations_per_tile > 1) CHECK(layout.plan.split_tiles() >= 1);
  CHECK(layout.workers == std::min<int64_t>(workers, layout.iterations()));
  Operands<T> d(p);
  lib::Gemm g = lib::gemm(p, sk);
  CAPTURE(g.config.str());
  Buffer<T> c = run(g, d);
  CHECK(mismatches(c, d.expected, p.k) == 0);
  Buffer<T> dp = run(lib::gemm(p, tiles(p, lib::Decomposition::DataParallel, 0)), d);
  std::vector<double> dp_values(static_cast<size_t>(dp.num_elements()));
  for (int64_t i = 0; i < dp.num_elements(); ++i) dp_values[static_cast<size_t>(i)] = dp.at_flat(i);
  CHECK(mismatches(c, dp_values, p.k) == 0);
}

}  // namespace

TEST_CASE("lib::gemm Stream-K: 3, 5 and 7 tiles that the sizes do not fill, f32, 1 and 2 workers") {
  for (int workers : {1, 2})
    with_threads(workers, [&] {
      check_streamk<float>(problem(91, 50, 77), workers, 3);    // 3 x 1 tiles of 32 x 64, K = 4.8 x 16
      check_streamk<float>(problem(150, 61, 45), workers, 5);   // 5 x 1
      check_streamk<float>(problem(20, 439, 33), workers, 7);   // 1 x 7
      check_streamk<float>(problem(221, 33, 129), workers, 7);  // 7 x 1
    });
}

TEST_CASE("lib::gemm Stream-K: A read in place when no tile overhangs it (M and K fill the tiles)") {
  for (bool transposed : {false, true}) {
    lib::GemmProblem p = problem(96, 50, 80);  // 3 x 1 tiles of 32 rows, 5 kc-blocks of 16
    p.transpose_a = transposed;
    CHECK_FALSE(lib::gemm(p, tiles(p, lib::Decomposition::StreamK, 2)).config.pack_a);
    with_threads(2, [&] { check_streamk<float>(p, 2, 3); });
  }
  lib::GemmProblem q = problem(224, 33, 64, f64);  // 7 x 1 tiles
  CHECK_FALSE(lib::gemm(q, tiles(q, lib::Decomposition::StreamK, 2)).config.pack_a);
  check_streamk<double>(q, 2, 7);
}

TEST_CASE("lib::gemm Stream-K: float64") {
  for (int workers : {1, 2})
    with_threads(workers, [&] {
      check_streamk<double>(problem(91, 50, 77, f64), workers, 3);
      check_streamk<double>(problem(150, 61, 45, f64), workers, 5);
      check_streamk<double>(problem(20, 439, 33, f64), workers, 7);
    });
}

TEST_CASE("lib::gemm Stream-K: transposed operands and column-major C") {
  lib::GemmProblem p = problem(91, 50, 77);
  p.transpose_a = true;
  p.transpose_b = true;
  check_streamk<float>(p, 2, 3);
  // Column-major C is the row-major C^T: the same as the data-parallel schedule, to rounding.
  lib::GemmProblem q = problem(50, 91, 77);
  q.layout = lib::Layout::ColMajor;
  lib::GemmConfig sk = tiles(q, lib::Decomposition::StreamK, 2);
  lib::Gemm g = lib::gemm(q, sk);
  CHECK(lib::streamk_layout(q, sk).tiles() == 3);  // C^T is 91 x 50: 3 x 1 tiles
  Kernel f = build(g.schedule, g.args(), Target::cpu(), "lib_gemm_streamk");
  Buffer<float> a{77, 50}, b{91, 77}, c{91, 50}, c_dp{91, 50};  // column-major storage
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = dist(rng);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = dist(rng);
  f(a, b, c);
  lib::Gemm gdp = lib::gemm(q);
  Kernel fdp = build(gdp.schedule, gdp.args(), Target::cpu(), "lib_gemm_dp");
  fdp(a, b, c_dp);
  int64_t bad = 0;
  for (int64_t i = 0; i < c.num_elements(); ++i)
    if (std::abs(c.at_flat(i) - c_dp.at_flat(i)) > 1e-4f) ++bad;
  CHECK(bad == 0);
}

TEST_CASE("lib::gemm Stream-K: the result does not depend on the threads that run the workers") {
  // Two workers, run by one thread and by two: every tile is summed in the same order.
  lib::GemmProblem p = problem(150, 61, 45);
  Operands<float> d(p);
  lib::Gemm g = lib::gemm(p, tiles(p, lib::Decomposition::StreamK, 2));
  Buffer<float> one({1, 1}), two({1, 1});
  with_threads(1, [&] { one = run(g, d); });
  with_threads(2, [&] { two = run(g, d); });
  CHECK(std::memcmp(one.data(), two.data(), sizeof(float) * static_cast<size_t>(one.num_elements())) == 0);
  CHECK(mismatches(one, d.expected, p.k) == 0);
}

TEST_CASE("lib::gemm Stream-K: more workers than iterations, and one iteration per tile") {
  check_streamk<float>(problem(40, 40, 9), 7, 2);   // 2 tiles x 1 iteration: 2 workers do the work
  check_streamk<float>(problem(91, 50, 16), 2, 3);  // K is one kc-block: 3 iterations over 2 workers
}

TEST_CASE("lib::gemm Stream-K: the test of whose iteration it is sits outside the micro-kernel") {
  // pragma "hoist_guards" moves it out of the loops it does not depend on: inside the k loop of the
  // micro-kernel there are only the unrolled multiply-adds.
  lib::GemmProblem p = problem(150, 61, 45);
  lib::Gemm g = lib::gemm(p, tiles(p, lib::Decomposition::StreamK, 2));
  std::ostringstream ir;
  ir << lower(g.schedule, g.args(), "streamk");
  const std::string text = ir.str();
  const size_t kernel = text.find("\"pragma_fp_contract\"");
  REQUIRE(kernel != std::string::npos);
  const std::string body = text.substr(kernel, text.find('}', kernel) - kernel);
  CHECK(body.find("if (") == std::string::npos);
  CHECK(body.find("partial[") != std::string::npos);
  CHECK(text.rfind("if (", kernel) != std::string::npos);  // the guard, hoisted above the kernel
}

TEST_CASE("lib::gemm Stream-K: each worker runs the iterations plan_decomposition gives it") {
  lib::GemmProblem p = problem(221, 33, 129);
  for (int workers : {2, 3, 5}) {
    const lib::StreamKLayout l = lib::streamk_layout(p, tiles(p, lib::Decomposition::StreamK, workers));
    REQUIRE(static_cast<int64_t>(l.plan.workers.size()) == l.workers);
    int64_t begin = 0;
    for (int64_t w = 0; w < l.workers; ++w) {
      // The kernel's closed form: worker w starts at w * per_worker + min(w, extra).
      CHECK(begin == w * l.per_worker + std::min(w, l.extra));
      const auto& units = l.plan.workers[static_cast<size_t>(w)];
      CHECK(static_cast<int64_t>(units.size()) <= l.segments);
      for (size_t u = 0; u < units.size(); ++u) {
        // Consecutive tiles, listed from the last back to the first as the GPU kernel runs them
        // (the CPU kernel adds the partials after the loop, so its own order does not matter).
        CHECK(units[u].tile == units[0].tile - static_cast<int64_t>(u));
        begin += units[u].iterations();
      }
    }
    CHECK(begin == l.iterations());
    // Balanced: the busiest worker has at most one iteration more than the least busy one.
    CHECK(l.plan.busiest() <= l.per_worker + 1);
  }
}

TEST_CASE("lib::gemm Stream-K: options it cannot honour are loom::Error with what to do") {
  lib::GemmProblem p = problem(64, 64, 64);
  lib::GemmConfig c = tiles(p, lib::Decomposition::SplitK, 2);
  CHECK_THROWS_WITH_AS(lib::gemm(p, c),
                       doctest::Contains("use Decomposition::DataParallel or Decomposition::StreamK"), Error);
  c = tiles(p, lib::Decomposition::StreamK, -1);
  CHECK_THROWS_WITH_AS(lib::gemm(p, c), doctest::Contains("workers = -1 must be at least 1"), Error);
  c = tiles(p, lib::Decomposition::StreamK, 2);
  c.parallel = false;
  CHECK_THROWS_WITH_AS(lib::gemm(p, c), doctest::Contains("parallel = false"), Error);
  lib::GemmProblem batched = p;
  batched.batch = 3;
  c = tiles(p, lib::Decomposition::StreamK, 2);
  CHECK_THROWS_WITH_AS(lib::gemm(batched, c),
                       doctest::Contains("does not handle batched products (batch = 3)"), Error);
}
