// Stream-K GEMM on the GPU: builds the kernel of lib/streamk_gemm.hpp (a persistent grid of one block
// per SM; the MAC-loop iterations of all tiles split evenly; partial tiles fixed up through a
// workspace and flags), prints which block does what and the CUDA C, runs it on the GPU when there
// is one and on the GPU simulator otherwise, and checks the result against a plain loop.
#include <iostream>

#include <loom/backend/build.hpp>
#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/streamk_gemm.hpp>

#include "example_util.hpp"

using namespace loom;

int main() {
  const bool gpu = runtime::cuda::driver_available();
  lib::StreamKConfig cfg;  // the Stream-K + data-parallel hybrid by default
  int64_t m = 0, n = 0, k = 0;
  if (gpu) {
    // The GPU's own SM count (cfg.sms = 0) times the blocks one SM holds (cfg.blocks_per_sm = 0:
    // the driver's occupancy of the kernel) and 64x64x16 tiles; 50 tiles is rarely a whole wave.
    m = 640 - 17, n = 320 - 5, k = 1000;
  } else {
    // The simulator runs blocks one after another on the CPU: a small grid of 8 "SMs" with one
    // block each and 32x32x8 tiles (16x16 threads of 2x2 elements) on 7 x 5 = 35 tiles, 3 more
    // than 4 waves.
    cfg.sms = 8;
    cfg.blocks_per_sm = 1;
    cfg.tile = lib::GemmTile{32, 32, 8};
    cfg.thread_m = 2;
    cfg.thread_n = 2;
    m = 200, n = 150, k = 100;
  }
  lib::StreamKGemm g = lib::streamk_gemm(m, n, k, f32, cfg);
  std::cout << "C (" << m << " x " << n << ") = A x B with k = " << k << "\n" << g.describe() << "\n";

  Kernel f = build(g.func, gpu ? Target::cuda() : Target::cuda_sim("sm_90"));
  std::cout << f.source() << "\n";

  Buffer<float> a({m, k}), b({k, n}), c({m, n}), expected({m, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) acc += static_cast<double>(a(i, kk)) * b(kk, j);
      expected(i, j) = static_cast<float>(acc);
    }
  f(a, b, c);
  if (gpu) {
    std::cout << "ran on the GPU: " << f.target().str() << "\n";
  } else {
    std::cout << "ran on the GPU simulator (no GPU here)\n" << f.sim_report().to_string() << "\n";
  }
  example::expect_all_close(c, expected, "C of the Stream-K GEMM");
  std::cout << "ok\n";
}
