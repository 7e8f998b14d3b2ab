// NVRTC compile time of the tiled GEMM kernel's CUDA C (budget 300 ms), against its peer, the same
// source compiled by an nvcc subprocess (what TVM does). No GPU needed; skipped without NVRTC.
// Prints `loom-bench nvrtc_compile kernel=<name> ms=<median> nvcc_ms=<median> ratio=<loom/budget>`.
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/core.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace loom;

namespace {

/// A 1024^3 GEMM with 16x16 shared tiles of A and B and a local accumulator, 16x16 threads.
cuda::CudaModule gemm_module() {
  lib::TiledGemm g = lib::gpu_tiled_gemm(1024, 16);
  return cuda::codegen_cuda(lower(g.schedule, {g.A, g.B, g.C}, "gemm"));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<double> nvrtc_ms, nvcc_ms;

void BM_NvrtcCompile(benchmark::State& state) {
  if (!runtime::cuda::nvrtc()) {
    state.SkipWithError(("NVRTC not available: " + runtime::cuda::nvrtc_unavailable_reason()).c_str());
    return;
  }
  const cuda::CudaModule m = gemm_module();
  for (auto _ : state) {
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "gemm", "sm_80");
    benchmark::DoNotOptimize(out.ptx.data());
    nvrtc_ms.push_back(out.milliseconds);
  }
}
BENCHMARK(BM_NvrtcCompile)->Unit(benchmark::kMillisecond)->Iterations(5);

/// The peer: `nvcc -ptx` in a subprocess on the same source.
void BM_NvccSubprocess(benchmark::State& state) {
  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  if (access(nvcc, X_OK) != 0) {
    state.SkipWithError("nvcc not found in /usr/local/cuda/bin");
    return;
  }
  const cuda::CudaModule m = gemm_module();
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = "loom_bench_nvcc_" + std::to_string(getpid());
  const std::filesystem::path src = dir / (stem + ".cu"), ptx = dir / (stem + ".ptx");
  std::ofstream(src) << m.source;
  const std::string command = std::string(nvcc) + " -ptx -arch=compute_80 -fmad=false -o '" + ptx.string() +
                              "' '" + src.string() + "' > /dev/null 2>&1";
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError("nvcc failed");
      break;
    }
    nvcc_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::filesystem::remove(src);
  std::filesystem::remove(ptx);
}
BENCHMARK(BM_NvccSubprocess)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!nvrtc_ms.empty()) {
    const double ms = median(nvrtc_ms);
    std::printf(
        "loom-bench nvrtc_compile kernel=gemm_kernel0 ms=%.1f nvcc_ms=%.1f budget_ms=300 ratio=%.2f\n", ms,
        median(nvcc_ms), ms / 300.0);
  }
  return 0;
}
