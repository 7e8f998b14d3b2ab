// lib::gemm with a fused epilogue, compiled by the JIT, against a naive product in double with the
// epilogue applied after it: bias and every built-in activation on shapes no tile divides, a
// custom epilogue (per-row scale plus a residual) row- and column-major, transposed, batched and in
// float64; that with K in one block the register tile is stored through the epilogue with no
// m x n temporary (and in a pass of its own with K in several blocks); and the epilogue's mistakes.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/lib/gemm.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../runtime/interp_test_util.hpp"
#include "lib_gemm_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// op(A) op(B) for batch t at (i, j), in double, from storage as lib::gemm reads it.
template <typename T>
double product(const lib::GemmProblem& p, const Buffer<T>& a, const Buffer<T>& b, int64_t t, int64_t i,
               int64_t j) {
  const bool col = p.layout == lib::Layout::ColMajor;
  const bool a_swapped = p.transpose_a != col, b_swapped = p.transpose_b != col;
  const T* pa = a.data() + t * p.m * p.k;
  const T* pb = b.data() + t * p.k * p.n;
  double s = 0;
  for (int64_t k = 0; k < p.k; ++k)
    s += static_cast<double>(a_swapped ? pa[k * p.m + i] : pa[i * p.k + k]) *
         static_cast<double>(b_swapped ? pb[j * p.k + k] : pb[k * p.n + j]);
  return s;
}

double activate(const std::string& act, double x) {
  if (act == "relu") return std::max(x, 0.0);
  if (act == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (act == "tanh") return std::tanh(x);
  if (act == "sigmoid") return 1 / (1 + std::exp(-x));
  return x;
}

/// Runs C = bias_activation(bias, act) of A B (row-major), with `cfg` when given, and returns the
/// largest error.
double bias_error(int64_t m, int64_t n, int64_t k, const std::string& act,
                  const lib::GemmConfig* cfg = nullptr) {
  lib::GemmProblem p = problem(m, n, k);
  Tensor bias = placeholder({static_cast<int>(n)}, f32, "bias");
  p.epilogue = lib::bias_activation(bias, act);
  lib::Gemm g = cfg ? lib::gemm(p, *cfg) : lib::gemm(p);
  Kernel f = build(g.schedule, g.args(), Target::cpu(), "gemm_bias");
  Buffer<float> a{m, k}, b{k, n}, bv{n}, c{m, n};
  fill_random(a, 1);
  fill_random(b, 2);
  fill_random(bv, 3);
  c.fill(12345.0f);
  f(a, b, bv, c);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      worst = std::max(worst, std::abs(c(i, j) - activate(act, product(p, a, b, 0, i, j) + bv(j))));
  return worst;
}

}  // namespace

TEST_CASE("lib::gemm epilogue: bias and each activation on shapes no tile divides") {
  for (const char* act : {"none", "relu", "gelu", "tanh", "sigmoid"}) {
    CAPTURE(act);
    CHECK(bias_error(37, 45, 29, act) < 1e-5 * 30);
  }
  // No padding (C would be the accumulation itself without the epilogue), and a single row.
  CHECK(bias_error(64, 64, 64, "relu") < 1e-5 * 65);
  CHECK(bias_error(1, 70, 33, "gelu") < 1e-5 * 34);
}

TEST_CASE("lib::gemm epilogue: with K in one block the tile goes from registers to C, else C is a pass") {
  with_threads(1, [] {
    // K in one block: the accumulation is one mr x nr register tile, applied and stored by C's loop
    // nest (no m x n temporary); the same for a padded product without an epilogue.
    lib::GemmProblem p = problem(64, 64, 40);
    Tensor bias = placeholder({64}, f32, "bias");
    p.epilogue = lib::bias_activation(bias, "relu");
    const lib::Gemm one = lib::gemm(p);
    CHECK(one.config.kc == 40);
    CHECK(packed_elements(one, "C_product") == one.config.mr * one.config.nr);
    const lib::Gemm padded = lib::gemm(problem(37, 45, 29));
    CHECK(packed_elements(padded, "C_padded") == padded.config.mr * padded.config.nr);
    check_gemm<float>(problem(37, 45, 29));
    CHECK(bias_error(64, 64, 40, "relu") < 1e-5 * 41);
    // K in three blocks: the product is kept whole between them, and C is a pass of its own.
    lib::GemmConfig cfg = one.config;
    cfg.kc = 16;
    cfg.pack_a = cfg.pack_b = true;
    const lib::Gemm blocks = lib::gemm(p, cfg);
    CHECK(packed_elements(blocks, "C_product") == 64 * 64);
    CHECK(bias_error(64, 64, 40, "relu", &cfg) < 1e-5 * 41);
    check_gemm<float>(problem(37, 45, 29), &cfg);
  });
}

TEST_CASE("lib::gemm epilogue: a per-row scale and a residual, both layouts, transposed, batched, f64") {
  struct Case {
    int64_t m, n, k, batch;
    bool col, ta, tb, f64;
  };
  for (const Case& cs :
       {Case{23, 41, 19, 0, false, false, false, false}, Case{23, 41, 19, 0, true, true, false, false},
        Case{16, 33, 12, 3, false, false, true, false}, Case{30, 17, 25, 0, true, false, true, true}}) {
    CAPTURE(cs.m);
    CAPTURE(cs.col);
    CAPTURE(cs.batch);
    CAPTURE(cs.f64);
    const DType t = cs.f64 ? f64 : f32;
    lib::GemmProblem p = problem(cs.m, cs.n, cs.k, t);
    p.batch = cs.batch;
    p.layout = cs.col ? lib::Layout::ColMajor : lib::Layout::RowMajor;
    p.transpose_a = cs.ta;
    p.transpose_b = cs.tb;
    // scale[i] * (A B)[i, j] + residual[i, j]: the residual indexed as the user indexes C.
    Tensor scale = placeholder({static_cast<int>(cs.m)}, t, "scale");
    std::vector<Expr> rshape;
    if (cs.batch > 0) rshape.push_back(Expr(static_cast<int>(cs.batch)));
    rshape.push_back(Expr(static_cast<int>(cs.m)));
    rshape.push_back(Expr(static_cast<int>(cs.n)));
    Tensor residual = placeholder(rshape, t, "residual");
    p.epilogue.inputs = {scale, residual};
    p.epilogue.name = "scale_residual";
    p.epilogue.apply = [=](const Expr& v, const std::vector<Expr>& index) {
      return scale(index[index.size() - 2]) * v + residual(index);
    };
    lib::Gemm g = lib::gemm(p);
    Kernel f = build(g.schedule, g.args(), Target::cpu(), "gemm_scale_residual");
    auto run = [&](auto zero) {
      using T = decltype(zero);
      const bool a_swapped = cs.ta != cs.col, b_swapped = cs.tb != cs.col;
      Buffer<T> a(a_swapped ? shape_of(cs.batch, cs.k, cs.m) : shape_of(cs.batch, cs.m, cs.k));
      Buffer<T> b(b_swapped ? shape_of(cs.batch, cs.n, cs.k) : shape_of(cs.batch, cs.k, cs.n));
      Buffer<T> s({cs.m}), r(shape_of(cs.batch, cs.m, cs.n));
      Buffer<T> c(cs.col ? shape_of(cs.batch, cs.n, cs.m) : shape_of(cs.batch, cs.m, cs.n));
      fill_random(a, 4);
      fill_random(b, 5);
      fill_random(s, 6);
      fill_random(r, 7);
      c.fill(static_cast<T>(12345));
      f(a, b, s, r, c);
      double worst = 0;
      for (int64_t bt = 0; bt < std::max<int64_t>(cs.batch, 1); ++bt)
        for (int64_t i = 0; i < cs.m; ++i)
          for (int64_t j = 0; j < cs.n; ++j) {
            const double expected = static_cast<double>(s.at_flat(i)) * product(p, a, b, bt, i, j) +
                                    static_cast<double>(r.at_flat((bt * cs.m + i) * cs.n + j));
            const int64_t at = bt * cs.m * cs.n + (cs.col ? j * cs.m + i : i * cs.n + j);
            worst = std::max(worst, std::abs(static_cast<double>(c.at_flat(at)) - expected));
          }
      return worst;
    };
    CHECK(cs.f64 ? run(0.0) < 1e-12 * (cs.k + 1) : run(0.0f) < 1e-5 * (cs.k + 1));
  }
}

TEST_CASE("lib::gemm epilogue: mistakes are loom::Error with what to do") {
  lib::GemmProblem p = problem(8, 8, 8);
  Tensor bias = placeholder({8}, f32, "bias");
  CHECK_THROWS_WITH_AS(lib::bias_activation(bias, "swish"),
                       doctest::Contains("activation 'swish' is not one of none, relu, gelu, tanh, sigmoid"),
                       Error);
  // An input that is computed, not an argument.
  Tensor doubled = compute(
      {8}, [&](Expr j) { return bias(j) * 2.0f; }, "doubled");
  p.epilogue = lib::bias_activation(doubled, "relu");
  CHECK_THROWS_WITH_AS(lib::gemm(p), doctest::Contains("input 'doubled' is not a placeholder"), Error);
  // The wrong element type.
  p.epilogue = lib::bias_activation(bias);
  p.epilogue.apply = [](const Expr& v, const std::vector<Expr>&) { return cast(f64, v); };
  CHECK_THROWS_WITH_AS(lib::gemm(p), doctest::Contains("gives float64 but C is float32; cast its result"),
                       Error);
  // Stream-K has no epilogue stage.
  p.epilogue = lib::bias_activation(bias);
  lib::GemmConfig cfg = lib::default_gemm_config(8, 8, 8, f32);
  cfg.decomposition = lib::Decomposition::StreamK;
  CHECK_THROWS_WITH_AS(lib::gemm(p, cfg), doctest::Contains("needs the data-parallel decomposition"), Error);
  // Inputs without a function.
  p.epilogue.apply = nullptr;
  CHECK_THROWS_WITH_AS(lib::gemm(p), doctest::Contains("has 1 input tensors but no apply function"), Error);
}
