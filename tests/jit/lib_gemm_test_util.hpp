// Shared pieces of the lib::gemm tests: a problem from its sizes, and a scope that runs a test body
// with the CPU thread pool limited to a given number of threads.
#pragma once

#include <loom/lib/gemm.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <cstdint>
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

}  // namespace loom::test
