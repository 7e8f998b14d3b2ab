// The tensor-core GEMM's performance model (lib/gpu_gemm_model.hpp) without the CUDA toolkit: the
// per-k-step instruction counts it reads from the lowered IR against counts worked out by hand from
// the kernel's tiles, the shared memory, occupancy from registers and shared memory, hand-computed
// predictions where one term decides (a compute-bound configuration's time is its math time; one
// block more than a wave costs a second wave), properties that must hold for any inputs, and its
// refusals. Resources are given, never asked of ptxas, so these results do not depend on the machine.
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::lib;

namespace {

GpuGemmConfig model_config(int bm, int bn, int bk, int wm, int wn, int stages) {
  return {bm, bn, bk, wm, wn, stages};  // GpuGemmConfig is an aggregate in this order
}

/// What a block of `g` asks of an SM, with `registers` per thread given.
GpuGemmResources given(const GpuGemm& g, int registers) {
  GpuGemmResources r;
  r.threads = 32 * (g.config.block_m / g.config.warp_m) * (g.config.block_n / g.config.warp_n);
  r.registers = registers;
  r.registers_from = "given";
  // The stages of A and B as the kernel lays them out (lib/impl/gpu_gemm.hpp): rows of the stored
  // layout, XOR-swizzled without padding when a row is a power of two 16-byte chunks (up to 8) or
  // a multiple of 8, else padded by 16 bytes; tf32 tiles read with 32-bit loads padded by 32.
  const bool tf32 = g.input == f32;
  const int chunk = tf32 ? 4 : 8, eb = tf32 ? 4 : 2;
  const bool a_row = g.a_layout == Layout::RowMajor, b_row = g.b_layout == Layout::RowMajor;
  const int a_rows = a_row ? g.config.block_m : g.config.block_k,
            a_cols = a_row ? g.config.block_k : g.config.block_m;
  const int b_rows = b_row ? g.config.block_k : g.config.block_n,
            b_cols = b_row ? g.config.block_n : g.config.block_k;
  auto pitch = [&](int cols, bool scalar) {
    const int chunks = cols / chunk;
    if (scalar) return cols + 8;
    return chunks % 8 == 0 || (chunks < 8 && (chunks & (chunks - 1)) == 0) ? cols : cols + chunk;
  };
  const int pitch_a = pitch(a_cols, tf32 && !a_row), pitch_b = pitch(b_cols, tf32 && b_row);
  r.shared_bytes = int64_t{g.config.stages} * (a_rows * pitch_a + b_rows * pitch_b) * eb;
  return r;
}

/// A GPU whose memories are free: bandwidths so large and latencies so small that only the
/// tensor pipe and the instructions issued can set a round.
GpuPerfSpec free_memory(GpuPerfSpec s) {
  s.l2_tbps = 1e9;
  s.dram_tbps = 1e9;
  s.shared_bytes_per_clock = 1 << 30;
  s.l2_latency = s.dram_latency = s.barrier_latency = s.shared_latency = 0;
  return s;
}

}  // namespace

TEST_CASE("gpu_gemm model: a k-step's instructions, counted in the IR, are those of the kernel's tiles") {
  // Per warp and k-step: block_k / mma_k slices; in each, an ldmatrix.x4 per 16 rows of the warp
  // tile's A (m tiles) and per two 8-column n tiles of B, and an mma per (m tile, n tile); 16-byte
  // copies of the block's A and B tiles shared among its threads. tf32 data not contiguous in k is
  // read with four 32-bit shared loads per fragment instead (B row-major, A column-major); tf32
  // fragments are rounded, 4 elements per A m tile and per B n-tile pair in each slice.
  struct Case {
    DType input;
    GpuGemmConfig config;
    Layout a, b;
    int64_t mma, ldmatrix, shared_loads, cp_async, tf32_roundings = 0;
  };
  GpuGemmConfig truncating;
  truncating.tf32_round = false;
  const std::vector<Case> cases = {
      // 4 slices x (4 m tiles x 8 n tiles); 4 x (4 + 4) ldmatrix; (128x64 + 64x128) / 8 / 128 threads.
      {f16, {}, Layout::RowMajor, Layout::RowMajor, 128, 32, 0, 16},
      {bf16, {}, Layout::ColMajor, Layout::ColMajor, 128, 32, 0, 16},
      // tf32, block_k 32: 4 slices of 8; A by ldmatrix (4 x 4), B by 4 loads per n-tile pair (4 x 4 x 4).
      // Rounded: 4 slices x (4 + 4) x 4 elements.
      {f32, {}, Layout::RowMajor, Layout::RowMajor, 128, 16, 64, 16, 128},
      {f32, truncating, Layout::RowMajor, Layout::RowMajor, 128, 16, 64, 16, 0},
      // tf32 column-major: A by 32-bit loads (4 x 4 x 4), B by ldmatrix (4 x 4).
      {f32, {}, Layout::ColMajor, Layout::ColMajor, 128, 16, 64, 16, 128},
      // 32x64 warps, 8 warps: 2 slices x (2 x 8) mma; 2 x (2 + 4) ldmatrix; (128x32 + 32x128) / 8 / 256.
      {f16, model_config(128, 128, 32, 32, 64, 4), Layout::RowMajor, Layout::RowMajor, 32, 12, 0, 4},
      // 128x256 block, 8 warps of 64x64: 4 x 32 mma; (128x64 + 64x256) / 8 / 256 = 4 + 8 copies.
      {f16, model_config(128, 256, 64, 64, 64, 3), Layout::RowMajor, Layout::RowMajor, 128, 32, 0, 12},
  };
  for (const Case& c : cases) {
    const GpuGemm g = gpu_gemm(4096, 4096, 4096, c.input, c.config, c.a, c.b);
    CAPTURE(g.describe());
    const GpuGemmStepCounts s = gpu_gemm_step_counts(g);
    CHECK(s.mma == c.mma);
    CHECK(s.ldmatrix == c.ldmatrix);
    CHECK(s.shared_loads == c.shared_loads);
    CHECK(s.cp_async == c.cp_async);
    CHECK(s.tf32_roundings == c.tf32_roundings);
    CHECK(s.shared_stores == 0);
    CHECK(s.global_loads == 0);
    CHECK(s.barriers == 1);
  }
}

TEST_CASE("gpu_gemm model: element copies are loads and shared stores, and the main loop is found at any K") {
  // K = 1001 and N = 999 (not multiples of 8): element copies, 128x64 + 64x128 elements over 128
  // threads, a global load and a shared store each.
  const GpuGemmStepCounts s = gpu_gemm_step_counts(gpu_gemm(1000, 999, 1001, f16));
  CHECK(s.mma == 128);
  CHECK(s.cp_async == 0);
  CHECK(s.global_loads == 128);
  CHECK(s.shared_stores == 128);
  CHECK(s.barriers >= 1);
  // K = 1000: A's rows are whole 16-byte chunks and take 8 cp.async per thread; B's stay 64 element
  // copies.
  const GpuGemmStepCounts mixed = gpu_gemm_step_counts(gpu_gemm(1000, 999, 1000, f16));
  CHECK(mixed.cp_async == 8);
  CHECK(mixed.global_loads == 64);
  CHECK(mixed.shared_stores == 64);
  // One k-step: no loop is left; the kernel's body is the step.
  CHECK(gpu_gemm_step_counts(gpu_gemm(256, 256, 64, f16)).mma == 128);
}

TEST_CASE("gpu_gemm model: occupancy from registers and shared memory") {
  const GpuPerfSpec h100 = GpuPerfSpec::h100();
  // 2 stages of 128x32 and 32x128 halves, swizzled: 32,768 bytes; 6 blocks fit 228 KB.
  const GpuGemm g = gpu_gemm(4096, 4096, 4096, f16, model_config(128, 128, 32, 64, 64, 2));
  GpuGemmResources r = given(g, 128);
  CHECK(r.shared_bytes == 32768);
  // 128 registers: 4096 per warp, 4 warps of a sub-partition's 16,384: 16 warps, 4 blocks.
  GpuGemmPrediction p = predict_gpu_gemm(g, h100, r);
  CHECK(p.occupancy.blocks_per_sm == 4);
  CHECK(p.occupancy.limiter == "registers");
  CHECK(p.warps_per_sm == 16);
  // 64 registers allow 8 blocks; shared memory then decides: 6.
  r.registers = 64;
  p = predict_gpu_gemm(g, h100, r);
  CHECK(p.occupancy.blocks_per_sm == 6);
  CHECK(p.occupancy.limiter == "shared memory");
  // The default kernel's 98,304 bytes of stages: two blocks on an H100, one on an A100 (164 KB).
  const GpuGemm d = gpu_gemm(4096, 4096, 4096, f16);
  CHECK(given(d, 208).shared_bytes == 98304);
  CHECK(predict_gpu_gemm(d, h100, given(d, 208)).occupancy.blocks_per_sm == 2);
  const GpuGemmPrediction a = predict_gpu_gemm(d, GpuPerfSpec::a100(), given(d, 210));
  CHECK(a.occupancy.blocks_per_sm == 1);
  CHECK(a.occupancy.limiter == "shared memory");
  CHECK(a.warps_per_sm == 4);
}

TEST_CASE("gpu_gemm model: with free memories, a full-wave shape runs at the mma.sync rate exactly") {
  // 22 x 24 = 528 tiles: two full waves of 132 SMs x 2 blocks. The instructions issued are the mma
  // alone, so no bubble: every round is two warps' mma on each tensor pipe.
  const GpuPerfSpec s = free_memory(GpuPerfSpec::h100());
  const GpuGemm g = gpu_gemm(22 * 128, 24 * 128, 640, f16);
  const GpuGemmPrediction p = predict_gpu_gemm(g, s, given(g, 208), 128);
  CHECK(p.waves == 2);
  CHECK(p.last_wave_fill == 1.0);
  CHECK(p.limiter == "tensor");
  const double math_seconds = 2.0 * g.m * g.n * g.k / (s.dense_tflops_16bit * 1e12 * s.mma_sync_fraction);
  CHECK(p.seconds == doctest::Approx(math_seconds).epsilon(1e-6));
  CHECK(p.fraction_of_peak == doctest::Approx(s.mma_sync_fraction).epsilon(1e-6));
  // One warp's 128 mma of 4096 flops on a quarter of the SM's mma.sync rate.
  const double per_sm_clock = s.dense_tflops_16bit * 1e12 * s.mma_sync_fraction / (132 * s.clock_ghz * 1e9);
  CHECK(p.tensor_cycles == doctest::Approx(2 * 128 * 4096 / (per_sm_clock / 4)));
}

TEST_CASE("gpu_gemm model: one tile more than a wave costs a second wave of one block") {
  // 5 x 53 = 265 tiles = 132 x 2 + 1. The second wave runs one block on one SM: its round is one
  // warp's mma per pipe (m), the full wave's two (2m); the time is k-steps x 3m, not 265/264 of a wave.
  const GpuPerfSpec s = free_memory(GpuPerfSpec::h100());
  const GpuGemm g = gpu_gemm(5 * 128, 53 * 128, 640, f16);
  const GpuGemmPrediction p = predict_gpu_gemm(g, s, given(g, 208), 128);
  CHECK(p.tiles == 265);
  CHECK(p.waves == 2);
  CHECK(p.last_wave_fill == doctest::Approx(1.0 / 264));
  const double m = p.tensor_cycles / 2;
  CHECK(p.seconds * s.clock_ghz * 1e9 == doctest::Approx(10 * 3 * m).epsilon(1e-6));
}

TEST_CASE("gpu_gemm model: L2 bandwidth decides where the tiles' bytes outweigh their flops") {
  // 128x128 tiles read 32 KiB per k-step for 2.1 Mflop: 64 flops per byte. With a slow L2 and
  // everything else free, the time is the bytes through L2 over its bandwidth: per tile 64 k-steps
  // of A and B, the prologue's first tile again, and the 64 KiB of C stored.
  GpuPerfSpec s = free_memory(GpuPerfSpec::h100());
  s.l2_tbps = 2.0;
  const GpuGemm g = gpu_gemm(22 * 128, 24 * 128, 64 * 64, f16);
  const GpuGemmPrediction p = predict_gpu_gemm(g, s, given(g, 208), 128);
  CHECK(p.limiter == "l2");
  const double bytes = 528 * (32768.0 * (64 + 1) + 128 * 128 * 4);
  CHECK(p.seconds == doctest::Approx(bytes / 2e12).epsilon(1e-6));
  CHECK(p.tflops == doctest::Approx(122.27).epsilon(1e-3));  // 64 flops per byte, less the prologue and C
  // DRAM below what the waves' panels need: DRAM decides.
  s.dram_tbps = 0.05;
  CHECK(predict_gpu_gemm(g, s, given(g, 208), 128).limiter == "dram");
}

TEST_CASE("gpu_gemm model: properties of every prediction") {
  for (const GpuPerfSpec& spec : {GpuPerfSpec::a100(), GpuPerfSpec::h100()})
    for (DType input : {f16, f32})
      for (const int64_t n : {1000, 2048, 4096}) {
        const GpuGemm g = gpu_gemm(n, n, n, input);
        const GpuGemmResources r = given(g, gpu_gemm_estimated_registers(g));
        CAPTURE(spec.name);
        CAPTURE(g.describe());
        const GpuGemmPrediction p = predict_gpu_gemm(g, spec, r);
        // Never past what mma.sync can do.
        CHECK(p.fraction_of_peak > 0);
        CHECK(p.fraction_of_peak <= spec.mma_sync_fraction + 1e-9);
        CHECK(p.round_cycles >= std::max({p.tensor_cycles, p.shared_cycles, p.l2_cycles, p.issue_cycles}));
        CHECK(p.l2_bytes >= 2.0 * n * n * input.bytes());  // A and B at least once
        // A faster L2 or DRAM, or shorter latencies, never slow it down.
        GpuPerfSpec faster = spec;
        faster.l2_tbps *= 1.5;
        CHECK(predict_gpu_gemm(g, faster, r).seconds <= p.seconds);
        faster = spec;
        faster.dram_tbps *= 1.5;
        CHECK(predict_gpu_gemm(g, faster, r).seconds <= p.seconds);
        faster = spec;
        faster.l2_latency /= 2;
        faster.dram_latency /= 2;
        faster.barrier_latency /= 2;
        CHECK(predict_gpu_gemm(g, faster, r).seconds <= p.seconds);
        // Fewer registers never fewer blocks per SM.
        GpuGemmResources fewer = r;
        fewer.registers = std::max(32, r.registers - 64);
        CHECK(predict_gpu_gemm(g, spec, fewer).occupancy.blocks_per_sm >= p.occupancy.blocks_per_sm);
      }
  // Longer K at a fixed M x N amortizes the prologue and the stores of C.
  double last = 0;
  for (const int64_t k : {64, 256, 1024, 4096}) {
    const GpuGemm g = gpu_gemm(4096, 4096, k, f16);
    const double tflops = predict_gpu_gemm(g, GpuPerfSpec::h100(), given(g, 208)).tflops;
    CHECK(tflops > last);
    last = tflops;
  }
}

TEST_CASE("gpu_gemm model: the latency figures move predictions at 2048^3 and above by under 3%") {
  // GpuPerfSpec::sources says so of its round microbenchmark latencies. tf32's rounding adds two
  // instructions per fragment element, which each wait longer between barriers: under 5% there.
  for (const GpuPerfSpec& spec : {GpuPerfSpec::a100(), GpuPerfSpec::h100()})
    for (DType input : {f16, f32})
      for (const int64_t n : {2048, 4096, 8192}) {
        const GpuGemm g = gpu_gemm(n, n, n, input);
        const GpuGemmResources r = given(g, input == f32 ? 204 : 208);
        const double base = predict_gpu_gemm(g, spec, r).seconds;
        for (const double scale : {0.5, 2.0}) {
          GpuPerfSpec s = spec;
          s.l2_latency *= scale;
          s.dram_latency *= scale;
          s.barrier_latency *= scale;
          s.shared_latency *= scale;
          CAPTURE(spec.name);
          CAPTURE(g.describe());
          CAPTURE(scale);
          CHECK(std::abs(predict_gpu_gemm(g, s, r).seconds / base - 1) < (input == f32 ? 0.05 : 0.03));
        }
      }
}

TEST_CASE("gpu_gemm model: the sources of its figures, and its refusals") {
  for (const GpuPerfSpec& s : {GpuPerfSpec::a100(), GpuPerfSpec::h100(), GpuPerfSpec::h200()}) {
    CHECK(s.sources.size() >= 4);
    CHECK(s.dense_tflops(f16) == s.dense_tflops(bf16));
    CHECK(s.dense_tflops(f32) == doctest::Approx(s.dense_tflops(f16) / 2));
  }
  CHECK(GpuPerfSpec::for_arch("sm_80").name == GpuPerfSpec::a100().name);
  CHECK(GpuPerfSpec::for_arch("sm_90").name == GpuPerfSpec::h100().name);
  CHECK_THROWS_WITH_AS(GpuPerfSpec::for_arch("sm_75"),
                       doctest::Contains("it describes sm_80 (A100) and sm_90 (H100); for another GPU fill a "
                                         "GpuPerfSpec"),
                       Error);
  const GpuGemm g = gpu_gemm(1024, 1024, 1024, f16);
  CHECK_THROWS_WITH_AS(predict_gpu_gemm(g, "sm_86"), doctest::Contains("no GPU for architecture 'sm_86'"),
                       Error);
  GpuPerfSpec broken = GpuPerfSpec::h100();
  broken.clock_ghz = 0;
  CHECK_THROWS_WITH_AS(predict_gpu_gemm(g, broken, given(g, 208)),
                       doctest::Contains("needs a positive clock"), Error);
  // 256 registers per thread do not fit a warp's share of a sub-partition.
  CHECK_THROWS_WITH_AS(predict_gpu_gemm(g, GpuPerfSpec::h100(), given(g, 256)),
                       doctest::Contains("does not fit on an SM of H100-SXM5"), Error);
  CHECK_THROWS_WITH_AS(GpuPerfSpec::h100().dense_tflops(i8),
                       doctest::Contains("no tensor-core peak for int8"), Error);
}
