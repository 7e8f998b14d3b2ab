// A tiled GEMM for the GPU: shared-memory tiles of A and B (cache_read), a per-thread accumulator
// (cache_write "local"), 16x16 threads per block. Prints the CUDA C, compiles it with NVRTC when
// the toolkit is present, runs it on the GPU simulator (Target::cuda_sim) and checks the result.
#include <iostream>

#include <loom/backend/build.hpp>
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/backend/cuda/ptxas.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>

#include "example_util.hpp"

using namespace loom;

int main() {
  const int n = 128;
  // The schedule (read it in include/loom/lib/gpu_tiled_gemm.hpp): 16x16 output tiles per block,
  // each step of k.outer the block's threads copy one 16x16 tile of A and of B to shared memory.
  lib::TiledGemm g = lib::gpu_tiled_gemm(n, 16);

  Kernel f = build(g.schedule, {g.A, g.B, g.C}, Target::cuda_sim("sm_80"), "gemm");
  std::cout << f.source() << std::endl;

  // NVRTC and ptxas, when this machine has the CUDA toolkit (no GPU needed).
  if (runtime::cuda::nvrtc()) {
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(f.source(), "gemm", "sm_80");
    std::cout << "NVRTC: " << out.ptx.size() << " bytes of PTX for sm_80\n";
    if (auto report = runtime::cuda::run_ptxas(out.ptx, "sm_80", "gemm_kernel0")) std::cout << report->text;
  } else {
    std::cout << "NVRTC not available (" << runtime::cuda::nvrtc_unavailable_reason() << "); skipping it\n";
  }

  Buffer<float> a({n, n}), b({n, n}), c({n, n}), expected({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int kk = 0; kk < n; ++kk) acc += a(i, kk) * b(kk, j);
      expected(i, j) = acc;
    }
  f(a, b, c);
  std::cout << f.sim_report().to_string() << "\n";
  example::expect_all_close(c, expected, "C on the GPU simulator");
  std::cout << "ok\n";
}
