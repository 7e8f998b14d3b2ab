// A TE GEMM on tensor cores through tensorize (lib/gpu_tensorized_gemm.hpp): each warp keeps its
// tiles of A, B and C in "local.fragment" stages, and the loops that fill them (ldmatrix), multiply
// them (mma.sync) and store C are tensorized. Prints the lowered main loop of a small instance and
// the CUDA's tensor-core instructions, runs it on the GPU when there is one and on the simulator
// otherwise, and checks C against a plain loop.
#include <iostream>
#include <sstream>

#include <loom/backend/build.hpp>
#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gpu_tensorized_gemm.hpp>

#include "example_util.hpp"

using namespace loom;

int main() {
  const bool gpu = runtime::cuda::driver_available();
  // The default tiles: 128 x 128 blocks of four 64 x 64 warps, K steps of 32 in 3 cp.async stages.
  const int m = 256, n = 128, k = 96;
  lib::TensorizedGemm g = lib::gpu_tensorized_gemm(m, n, k, f16);
  const LoweredFunc f = lower(g.schedule, {g.A, g.B, g.C}, "tensorized_gemm");

  // The lines of one k step that run on the tensor cores: the fragment loads and the mma.
  std::ostringstream printed;
  printed << f;
  std::istringstream ir(printed.str());
  int shown = 0;
  for (std::string line; std::getline(ir, line) && shown < 6;)
    if (line.find("ldmatrix") != std::string::npos || line.find("mma.m16n8k16") != std::string::npos) {
      std::cout << line << "\n";
      ++shown;
    }

  Kernel kernel = build(f, gpu ? Target::cuda() : Target::cuda_sim("sm_80"));
  std::istringstream cuda(kernel.source());
  for (std::string line; std::getline(cuda, line);)
    if (line.find("asm volatile(\"mma") != std::string::npos) {
      std::cout << "CUDA: " << line.substr(line.find_first_not_of(' ')) << "\n";
      break;
    }

  Buffer<half> a({m, k}), b({k, n});
  Buffer<float> c({m, n}), expected({m, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  kernel(a, b, c);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
      expected(i, j) = static_cast<float>(sum);
    }
  example::expect_all_close(c, expected, "C on tensor cores");  // products exact, sums in f32
  if (!gpu) {
    const SimReport r = kernel.sim_report();
    int64_t conflicts = 0;
    for (const SimSharedBuffer& s : r.shared_buffers) conflicts += s.load.conflicts();
    std::cout << "simulated: " << r.races.size() << " races, " << conflicts << " bank conflicts in loads\n";
  }
  std::cout << "ok\n";
}
