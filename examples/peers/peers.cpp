// The peers of peers.hpp: plain loops, as a user writes them, for the compiler to optimize.
#include "peers.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <thread>
#include <vector>

namespace example_peers {

namespace {

/// Runs body(begin, end) on `threads` threads, each a contiguous block of the rows [0, rows).
template <typename Body>
void parallel_rows(int rows, int threads, Body body) {
  std::vector<std::thread> workers;
  const int per = (rows + threads - 1) / threads;
  for (int t = 1; t < threads && t * per < rows; ++t)
    workers.emplace_back([=] { body(t * per, std::min(rows, (t + 1) * per)); });
  body(0, std::min(rows, per));  // the calling thread takes the first block
  for (std::thread& w : workers) w.join();
}

}  // namespace

std::string flags() {
  const std::string s = LOOM_EXAMPLE_PEER_FLAGS;  // the flags written without spaces: "-O3-march=native"
  return s.empty() ? "-default-flags" : s;
}

std::string compiler() { return LOOM_EXAMPLE_PEER_COMPILER; }

void blur_two_pass(const float* in, int h, int w, float* tmp, float* out, int threads) {
  const int ow = w - 2;
  parallel_rows(h, threads, [&](int begin, int end) {
    for (int y = begin; y < end; ++y) {
      const float* src = in + static_cast<std::ptrdiff_t>(y) * w;
      float* dst = tmp + static_cast<std::ptrdiff_t>(y) * ow;
      for (int x = 0; x < ow; ++x) dst[x] = (src[x] + src[x + 1] + src[x + 2]) / 3.0f;
    }
  });
  parallel_rows(h - 2, threads, [&](int begin, int end) {
    for (int y = begin; y < end; ++y) {
      const float* src = tmp + static_cast<std::ptrdiff_t>(y) * ow;
      float* dst = out + static_cast<std::ptrdiff_t>(y) * ow;
      for (int x = 0; x < ow; ++x) dst[x] = (src[x] + src[x + ow] + src[x + 2 * ow]) / 3.0f;
    }
  });
}

void bias_gelu(float* out, const float* bias, int rows, int cols, int threads) {
  parallel_rows(rows, threads, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      float* row = out + static_cast<std::ptrdiff_t>(i) * cols;
      for (int j = 0; j < cols; ++j) {
        const float v = row[j] + bias[j];
        row[j] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
      }
    }
  });
}

}  // namespace example_peers
