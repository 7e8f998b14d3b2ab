// The occupancy model (support/gpu_device.hpp) against the CUDA occupancy calculator's rules, and
// the Stream-K persistent grid sized by it: SMs x the blocks one SM holds.
#include "cuda_test_util.hpp"

#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_residency.hpp>
#include <loom/support/gpu_device.hpp>

using namespace loom;
using namespace loom::cuda_test;

TEST_CASE("occupancy: threads, registers per sub-partition, shared memory and the block limit") {
  const GpuDeviceSpec h100 = GpuDeviceSpec::h100();
  // 256 threads: 8 warps; 64 warps per SM allow 8 blocks.
  CHECK(occupancy(h100, {256, 32, 0}).blocks_per_sm == 8);
  CHECK(occupancy(h100, {256, 32, 0}).limiter == "threads");
  // 64 registers: 2048 per warp, 8 warps per sub-partition, 32 per SM: 4 blocks of 8 warps.
  const Occupancy regs64 = occupancy(h100, {256, 64, 8192});
  CHECK(regs64.blocks_per_sm == 4);
  CHECK(regs64.limiter == "registers");
  CHECK(regs64.by_shared == 25);  // 228 KB / (8 KB + 1 KB reserved)
  CHECK(regs64.str() ==
        "4 blocks per SM (limited by registers: threads allow 8, registers 4, shared memory 25, blocks 32)");
  // 96 registers: 3072 per warp, 5 warps per sub-partition (not 21.33 / 4): 20 warps, 2 blocks.
  CHECK(occupancy(h100, {256, 96, 0}).blocks_per_sm == 2);
  // Registers are given in units of 256 per warp: 33 registers take as many as 40.
  CHECK(occupancy(h100, {128, 33, 0}).by_registers == occupancy(h100, {128, 40, 0}).by_registers);
  CHECK(occupancy(h100, {128, 33, 0}).by_registers == 12);  // 1280 per warp: 12 per partition, 48 warps
  // Shared memory with the 1 KB reservation: 100 KB blocks, 2 on an H100, 1 on an A100.
  CHECK(occupancy(h100, {128, 32, 100 * 1024}).blocks_per_sm == 2);
  CHECK(occupancy(GpuDeviceSpec::a100(), {128, 32, 100 * 1024}).blocks_per_sm == 1);
  CHECK(occupancy(h100, {128, 32, 100 * 1024}).limiter == "shared memory");
  // Tiny blocks hit the 32-blocks limit.
  CHECK(occupancy(h100, {32, 16, 0}).blocks_per_sm == 32);
  CHECK(occupancy(h100, {32, 16, 0}).limiter == "blocks");
  // What does not fit at all.
  CHECK(occupancy(h100, {256, 256, 0}).blocks_per_sm == 0);
  CHECK(occupancy(h100, {256, 32, 228 * 1024}).blocks_per_sm == 0);
  CHECK_THROWS_WITH_AS(occupancy(h100, {0, 32, 0}), doctest::Contains("a block of 0 threads"), Error);
}

TEST_CASE("occupancy: the limits of each compute capability") {
  const GpuDeviceSpec ga102 = GpuDeviceSpec::for_compute_capability(86, 84);
  CHECK(ga102.sms == 84);
  CHECK(ga102.max_threads_per_sm == 1536);
  CHECK(occupancy(ga102, {256, 32, 0}).blocks_per_sm == 6);
  CHECK(GpuDeviceSpec::for_compute_capability(89, 128).max_blocks_per_sm == 24);
  CHECK(GpuDeviceSpec::for_compute_capability(120, 170).max_shared_bytes_per_block == 99 * 1024);
  CHECK(GpuDeviceSpec::for_compute_capability(90, 132).shared_bytes_per_sm == 228 * 1024);
  CHECK(GpuDeviceSpec::for_compute_capability(75, 40).max_threads_per_sm == 1024);
  CHECK_THROWS_WITH_AS(GpuDeviceSpec::for_compute_capability(61, 20),
                       doctest::Contains("Loom models sm_70 and newer"), Error);
  CHECK_THROWS_WITH_AS(GpuDeviceSpec::for_compute_capability(80, 0), doctest::Contains("positive SM count"),
                       Error);
}

TEST_CASE("streamk_gemm: the persistent grid is SMs x the blocks one SM holds") {
  if (runtime::cuda::driver_available()) {
    MESSAGE("a GPU is present: its driver sizes the grid; the model's figures are not checked");
    return;
  }
  // 64x64x16 tiles, 4x4 accumulators per thread: 256 threads, 8 KB (f32) or 4 KB (f16) of shared
  // memory, 64 registers for f32 and 60 for f16 (ptxas 13, sm_90; the estimate says 64 for both):
  // the registers allow 4 blocks per SM.
  for (DType t : {f32, f16}) {
    CAPTURE(t.str());
    lib::StreamKConfig cfg;
    lib::StreamKGemm g = lib::streamk_gemm(1000, 1100, 777, t, cfg);
    MESSAGE(g.residency.source << ": " << g.residency.registers_per_thread << " registers, "
                               << g.residency.occupancy.str());
    CHECK((g.residency.source == "ptxas" || g.residency.source == "estimate"));
    CHECK(g.residency.device == "H100-SXM5");
    CHECK(g.residency.registers_per_thread > 32);
    CHECK(g.residency.registers_per_thread <= 64);
    CHECK(g.residency.occupancy.blocks_per_sm == 4);
    CHECK(g.residency.occupancy.limiter == "registers");
    CHECK(g.config.sms == 132);
    CHECK(g.config.blocks_per_sm == 4);
    CHECK(g.plan.workers.size() == 132 * 4);
    CHECK(g.describe().find("528 blocks (132 SMs x 4 per SM, ") != std::string::npos);
  }
  // On an A100 model: the same kernel, 108 SMs.
  lib::StreamKConfig a100;
  a100.arch = "sm_80";
  a100.sms = 108;
  lib::StreamKGemm g = lib::streamk_gemm(1000, 1100, 777, f32, a100);
  CHECK(g.residency.device == "A100-SXM4");
  CHECK(g.plan.workers.size() == 108 * g.config.blocks_per_sm);
  // Given blocks per SM: the grid as asked, no measurement.
  lib::StreamKConfig given;
  given.sms = 10;
  given.blocks_per_sm = 3;
  lib::StreamKGemm fixed = lib::streamk_gemm(1000, 1100, 777, f32, given);
  CHECK(fixed.residency.source == "config");
  CHECK(fixed.plan.workers.size() == 30);
}

TEST_CASE("streamk_gemm: each problem's grid follows its own kernel's registers, whatever was built first") {
  // K = 1024 and 2048 with the same configuration are different kernels (ptxas 13: 5 and 4 blocks of
  // the SIMT loop per SM). Kept per configuration, the first one built decided the other's grid.
  if (runtime::cuda::driver_available()) {
    MESSAGE("a GPU is present: its driver sizes the grid");
    return;
  }
  for (int64_t first_k : {int64_t{2048}, int64_t{1024}}) {
    const lib::StreamKGemm first = lib::streamk_gemm(512, 384, first_k, f32, lib::StreamKConfig{});
    const lib::StreamKGemm second = lib::streamk_gemm(512, 384, 3072 - first_k, f32, lib::StreamKConfig{});
    for (const lib::StreamKGemm* g : {&first, &second}) {
      if (g->residency.source != "ptxas") {
        MESSAGE("no ptxas: the estimate does not depend on the kernel's code");
        return;
      }
      CAPTURE(g->shape.k);
      // The residency is found on the kernel built for one block per SM.
      lib::StreamKConfig one;
      one.blocks_per_sm = 1;
      const lib::StreamKGemm probe = lib::streamk_gemm(512, 384, g->shape.k, f32, one);
      const cuda::CudaModule module = cuda::codegen_cuda(probe.func);
      const runtime::cuda::NvrtcOutput out =
          runtime::cuda::nvrtc_compile(module.source, probe.func.name, "sm_90");
      const std::optional<runtime::cuda::PtxasReport> report =
          runtime::cuda::run_ptxas(out.ptx, "sm_90", lib::detail::streamk_main_kernel(module).kernel.name);
      REQUIRE(report.has_value());
      CHECK(g->residency.registers_per_thread == report->registers);
    }
  }
}
