// Shared pieces of the lib::gemm tests: a problem from its sizes, a scope that runs a test body with
// the CPU thread pool limited to a given number of threads, and the check of a built GEMM against a
// naive product for any of its element types, and the size of a packed buffer in its lowered code.
#pragma once

#include <loom/backend/build.hpp>
#include <loom/ir/half.hpp>
#include <loom/ir/visitor.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/lib/gemm_epilogue.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace loom::test {

inline lib::GemmProblem problem(int64_t m, int64_t n, int64_t k, DType t = f32) {
  lib::GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = t;
  return p;
}

/// problem(m, n, k, a) with B of type `b`.
inline lib::GemmProblem typed(int64_t m, int64_t n, int64_t k, DType a, DType b) {
  lib::GemmProblem p = problem(m, n, k, a);
  if (b != a) p.b_dtype = b;
  return p;
}

/// Storage shape of an r x c matrix (batch first when batched).
inline std::vector<int64_t> shape_of(int64_t batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> s;
  if (batch > 0) s.push_back(batch);
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

/// Runs the body with the thread pool limited to n threads, then restores the previous limit.
template <typename F>
void with_threads(int n, F&& body) {
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  const int previous = pool.num_threads();
  pool.set_num_threads(n);
  body();
  pool.set_num_threads(previous);
}

/// Random operand values: float32/float64 in [-1, 1], bfloat16 in [-2, 2], 8-bit integers over their
/// whole range (negative ones and ones above 127: a wrong signedness shows).
template <typename T>
void fill_operand(Buffer<T>& b, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      b.at_flat(i) = static_cast<T>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    else if constexpr (std::is_same_v<T, bfloat16>)
      b.at_flat(i) = bfloat16(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
    else
      b.at_flat(i) = static_cast<T>(static_cast<int>(rng() % 256) - (std::is_signed_v<T> ? 128 : 0));
  }
}

/// Builds lib::gemm(p) (or with cfg) for `target`, runs it on A of TA, B of TB, C of TC, and compares
/// every element of C with the naive product of the same storage: exactly for integers, else within
/// a few roundings of C's type per term.
template <typename TA, typename TB, typename TC>
void check_typed_gemm(const lib::GemmProblem& p, const lib::GemmConfig* cfg = nullptr,
                      const Target& target = Target::cpu()) {
  CAPTURE(p.m);
  CAPTURE(p.n);
  CAPTURE(p.k);
  CAPTURE(p.batch);
  CAPTURE(p.transpose_a);
  CAPTURE(p.transpose_b);
  const bool col = p.layout == lib::Layout::ColMajor;
  CAPTURE(col);
  lib::Gemm g = cfg ? lib::gemm(p, *cfg) : lib::gemm(p);
  CAPTURE(g.config.str());
  Kernel f = build(g.schedule, g.args(), target, "lib_gemm");

  const int64_t M = p.m, N = p.n, K = p.k, nb = std::max<int64_t>(p.batch, 1);
  const bool a_swapped = p.transpose_a != col, b_swapped = p.transpose_b != col;
  Buffer<TA> a(a_swapped ? shape_of(p.batch, K, M) : shape_of(p.batch, M, K));
  Buffer<TB> b(b_swapped ? shape_of(p.batch, N, K) : shape_of(p.batch, K, N));
  Buffer<TC> c(col ? shape_of(p.batch, N, M) : shape_of(p.batch, M, N));
  fill_operand(a, 11);
  fill_operand(b, 12);
  c.fill(static_cast<TC>(12345));  // every element must be written
  f(a, b, c);

  int64_t mismatches = 0;
  for (int64_t t = 0; t < nb; ++t) {
    const TA* pa = a.data() + t * M * K;
    const TB* pb = b.data() + t * K * N;
    const TC* pc = c.data() + t * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double expected = 0, magnitude = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double av = static_cast<double>(a_swapped ? pa[k * M + i] : pa[i * K + k]);
          const double bv = static_cast<double>(b_swapped ? pb[j * K + k] : pb[k * N + j]);
          expected += av * bv;
          magnitude += std::abs(av * bv);
        }
        const double got = static_cast<double>(col ? pc[j * M + i] : pc[i * N + j]);
        // float32/float64 throughout: a bound relative to the result; bfloat16 inputs: float32
        // roundings of the terms' magnitudes (exact products, rounded sums); integers: exact.
        double tolerance = 0;
        if constexpr (std::is_same_v<TA, TC> && std::is_floating_point_v<TC>)
          tolerance =
              (sizeof(TC) == 4 ? 1e-5 : 1e-12) * static_cast<double>(K + 1) * (1.0 + std::abs(expected));
        else if constexpr (!std::is_integral_v<TC>)
          tolerance = 1e-6 * static_cast<double>(K + 1) * (1.0 + magnitude);
        const bool ok = std::abs(got - expected) <= tolerance;
        if (!ok && mismatches++ < 5)
          FAIL_CHECK("C[", t, "][", i, "][", j, "] = ", got, ", expected ", expected);
      }
  }
  CHECK(mismatches == 0);
}

/// A 21 x 35 x 27 bfloat16 product with a bias + ReLU epilogue: lib::gemm(p, make_config(p)) (the
/// model's configuration without make_config), built for `target`, against a plain loop.
inline void check_bf16_bias_relu(const Target& target,
                                 lib::GemmConfig (*make_config)(const lib::GemmProblem&) = nullptr) {
  const int64_t M = 21, N = 35, K = 27;
  lib::GemmProblem p = problem(M, N, K, bf16);
  Tensor bias = placeholder({static_cast<int>(N)}, f32, "bias");
  p.epilogue = lib::bias_activation(bias, "relu");
  lib::Gemm g = make_config ? lib::gemm(p, make_config(p)) : lib::gemm(p);
  CAPTURE(g.config.str());
  Kernel f = build(g.schedule, g.args(), target, "bf16_bias_relu");
  Buffer<bfloat16> a({M, K}), b({K, N});
  Buffer<float> vb({N}), c({M, N});
  fill_operand(a, 3);
  fill_operand(b, 4);
  for (int64_t j = 0; j < N; ++j) vb.at_flat(j) = 0.25f * static_cast<float>(j % 7) - 0.75f;
  f(a, b, vb, c);
  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = vb.at_flat(j);
      for (int64_t k = 0; k < K; ++k)
        sum += static_cast<double>(float(a.at_flat(i * K + k))) *
               static_cast<double>(float(b.at_flat(k * N + j)));
      if (std::abs(c.at_flat(i * N + j) - std::max(sum, 0.0)) > 1e-4 * (1.0 + std::abs(sum))) ++bad;
    }
  CHECK(bad == 0);
}

/// The allocation of `buffer` in g's lowered function: its elements (-1: none) and element type.
struct PackedAllocation {
  int64_t elements = -1;
  DType dtype;
};
inline PackedAllocation packed_allocation(const lib::Gemm& g, const std::string& buffer) {
  struct Finder : IRVisitor {
    std::string name;
    PackedAllocation found;
    using IRVisitor::visit;
    void visit(const AllocateNode* op) override {
      if (op->buffer.name() == name && op->extents.size() == 1 && as_const_int(op->extents[0]))
        found = {*as_const_int(op->extents[0]), op->dtype};
      IRVisitor::visit(op);
    }
  } finder;
  finder.name = buffer;
  finder.visit_stmt(lower(g.schedule, g.args(), "lib_gemm").body);
  return finder.found;
}

/// The elements of the allocation of `buffer` in g's lowered function (-1: none).
inline int64_t packed_elements(const lib::Gemm& g, const std::string& buffer) {
  return packed_allocation(g, buffer).elements;
}

/// check_typed_gemm with A, B and C all of type T.
template <typename T>
void check_gemm(const lib::GemmProblem& p, const lib::GemmConfig* cfg = nullptr) {
  check_typed_gemm<T, T, T>(p, cfg);
}

}  // namespace loom::test
