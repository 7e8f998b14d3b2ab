// The SIMT Stream-K main loop's model (lib/streamk_simt_model.hpp) and the Stream-K model played
// with it: the per-warp counts and bank conflicts in closed form, the round's terms, a plan's time,
// and the rankings the H200 measured (docs/gpu-measurements.md, sixth session). Resources are given
// where the numbers must not depend on ptxas.
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_model.hpp>
#include <loom/lib/streamk_simt_model.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace loom;
using namespace loom::lib;

namespace {

StreamKGemm simt_kernel(int64_t m, int64_t n, int64_t k, const GpuPerfSpec& spec, Decomposition d,
                        int blocks_per_sm, GemmTile tile = {64, 64, 16}, int thread_m = 4, int thread_n = 4) {
  StreamKConfig c;
  c.tile = tile;
  c.thread_m = thread_m;
  c.thread_n = thread_n;
  c.sms = spec.device.sms;
  c.arch = spec.arch;
  c.blocks_per_sm = blocks_per_sm;
  c.decomposition = d;
  return streamk_gemm(m, n, k, f32, c);
}

/// The default block with the register count the H200 run's occupancy implies (4 blocks per SM).
GpuGemmResources simt_resources(int threads = 256, int64_t shared_bytes = (64 * 16 + 16 * 64) * 4) {
  GpuGemmResources r;
  r.threads = threads;
  r.registers = 64;
  r.registers_from = "given";
  r.shared_bytes = shared_bytes;
  return r;
}

}  // namespace

TEST_CASE("streamk simt model: a k-step's counts, with and without bank conflicts") {
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  // 16 x 16 threads of 4 x 4: a warp spans two rows of A, 16 words apart (banks 0 and 16), and 16
  // consecutive words of B.
  const SimtStepCounts d =
      streamk_simt_step_counts(simt_kernel(512, 512, 512, spec, Decomposition::StreamK, 1));
  CHECK(d.ffma == 16 * 4 * 4);
  CHECK(d.shared_loads == 16 * (4 + 4));
  CHECK(d.global_loads == 4 + 4);  // 64 x 16 elements of A and of B over 256 threads
  CHECK(d.shared_stores == 8);
  CHECK(d.shared_wavefronts == doctest::Approx(128 + 8));
  CHECK(d.barriers == 2);
  CHECK(d.instructions == doctest::Approx(256 + 128 + 5 * 8 + 2 + 8));
  // 16 x 8 threads of 4 x 8: a warp spans four rows of A, at banks 0, 16, 0, 16: two words in a
  // bank, two wavefronts per load of A; 8 words of B, one.
  const SimtStepCounts c = streamk_simt_step_counts(
      simt_kernel(512, 512, 512, spec, Decomposition::StreamK, 1, {64, 64, 16}, 4, 8));
  CHECK(c.ffma == 16 * 4 * 8);
  CHECK(c.global_loads == 8 + 8);  // 1024 elements of each over 128 threads
  CHECK(c.shared_wavefronts == doctest::Approx(16 * 4 * 2 + 16 * 8 * 1 + 16));
  // With bk = 8 the four rows start at banks 0, 8, 16, 24: no conflict.
  const SimtStepCounts n = streamk_simt_step_counts(
      simt_kernel(512, 512, 512, spec, Decomposition::StreamK, 1, {64, 64, 8}, 4, 8));
  CHECK(n.shared_wavefronts == doctest::Approx(8 * 4 + 8 * 8 + 8));
  // 4 x 12 threads of 4 x 4 (bn / thread_n = 12 does not divide 32): warp 0 spans rows 0-2 of A (banks
  // 0, 16, 0: two wavefronts), warp 1 rows 2-3 (banks 0, 16: one); 1.5 on average. Copies: ceil(256 /
  // 48) of A and 768 / 48 of B.
  const SimtStepCounts w = streamk_simt_step_counts(
      simt_kernel(512, 512, 512, spec, Decomposition::StreamK, 1, {16, 48, 16}, 4, 4));
  CHECK(w.global_loads == 6 + 16);
  CHECK(w.shared_wavefronts == doctest::Approx(16 * 4 * 1.5 + 16 * 4 + 22));
}

TEST_CASE("streamk simt model: a round is its largest throughput term plus one exposed copy latency") {
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  const StreamKGemm g = simt_kernel(2048, 2048, 2048, spec, Decomposition::DataParallel, 4);
  const SimtLoopPrediction p = predict_streamk_simt_loop(g, spec, simt_resources());
  CHECK(p.occupancy.blocks_per_sm == 4);  // 64 registers x 256 threads: 4 blocks of 65536 registers
  // Four blocks of eight warps: 32 warps, 8 per scheduler, each FFMA one clock of a 32-lane pipe.
  CHECK(p.fma_cycles == doctest::Approx(8.0 * 256));
  CHECK(p.shared_cycles == doctest::Approx(32.0 * 136));
  CHECK(p.issue_cycles == doctest::Approx(32.0 * 434 / 4));
  const double l2 = 528.0 * (64 + 64) * 16 * 4 / spec.l2_bytes_per_clock();
  CHECK(p.l2_cycles == doctest::Approx(l2));
  CHECK(p.exposed_cycles ==
        doctest::Approx(spec.dram_latency + 2 * spec.barrier_latency + spec.shared_latency));
  CHECK(p.limiter == "shared");
  CHECK(p.round_cycles == doctest::Approx(32.0 * 136 + p.exposed_cycles));
  // Fewer blocks: each term shrinks, the exposed latency stays, so a block's step takes longer.
  const double two = streamk_simt_round_cycles(g, spec, p, 2, 264);
  CHECK(two == doctest::Approx(16.0 * 136 + p.exposed_cycles));
  CHECK(two / 2 > p.round_cycles / 4);
  // An A100's 64 FP32 lanes per SM: an FFMA takes two clocks of a scheduler.
  const GpuPerfSpec a100 = GpuPerfSpec::a100();
  const SimtLoopPrediction q = predict_streamk_simt_loop(
      simt_kernel(2048, 2048, 2048, a100, Decomposition::DataParallel, 4), a100, simt_resources());
  CHECK(q.fma_cycles == doctest::Approx(2 * 8.0 * 256));
  CHECK(q.limiter == "shared");
  // What the model cannot use: resources of another block, a GPU with a zero rate.
  CHECK_THROWS_WITH(
      predict_streamk_simt_loop(g, spec, simt_resources(128)),
      doctest::Contains("the resources give 128 threads per block and the kernel's block has 256"));
  GpuPerfSpec broken = spec;
  broken.shared_bytes_per_clock = 0;
  CHECK_THROWS_WITH(predict_streamk_simt_loop(g, broken, simt_resources()),
                    doctest::Contains("needs a positive clock, L2 and DRAM bandwidth"));
  broken = spec;
  broken.device.sub_partitions = 0;
  CHECK_THROWS_WITH(predict_streamk_simt_loop(g, broken, simt_resources()),
                    doctest::Contains("SM count and schedulers per SM"));
  CHECK_THROWS_WITH(streamk_simt_round_cycles(g, broken, p, 1, 1),
                    doctest::Contains("SM count and schedulers per SM"));
  broken = spec;
  broken.clock_ghz = std::nan("");
  CHECK_THROWS_WITH(predict_streamk_simt_loop(g, broken, simt_resources()),
                    doctest::Contains("a positive clock"));
  broken = spec;
  broken.dram_latency = -1;
  CHECK_THROWS_WITH(predict_streamk_simt_loop(g, broken, simt_resources()),
                    doctest::Contains("latencies of 0 cycles or more"));
  CHECK_THROWS_WITH(streamk_simt_round_cycles(g, spec, p, 3, 2),
                    doctest::Contains("3 blocks on the SM and 2 on the GPU; give at least one block"));
  const std::string text = p.str();
  CHECK(text.find("256 FFMA, 128 shared loads (136 wavefronts") != std::string::npos);
  CHECK(text.find("(shared) + exposed") != std::string::npos);
}

TEST_CASE("streamk simt model: one tile per block runs its k-steps' rounds, then stores C") {
  // An H100 of two SMs, one block each, two 64 x 64 tiles of 64 k-steps: both blocks compute at
  // once, then store their tiles (an L2 latency and 16 KB at the SM's 64 bytes per clock).
  GpuPerfSpec spec = GpuPerfSpec::h100();
  spec.device.sms = 2;
  const StreamKGemm g = simt_kernel(64, 128, 1024, spec, Decomposition::DataParallel, 1);
  const StreamKPrediction p = predict_streamk_gemm(g, spec, simt_resources());
  CHECK(p.units == 2);
  CHECK(p.unit_start_cycles == 0);
  const double round = streamk_simt_round_cycles(g, spec, p.simt_loop, 1, 2);
  CHECK(p.makespan_cycles == doctest::Approx(64 * round + spec.l2_latency + 64.0 * 64 * 4 / 64));
  CHECK(p.peak_tflops == doctest::Approx(2.0 * 2 * 128 * spec.clock_ghz / 1e3));
  CHECK(p.main_loop.round_cycles == 0);
  CHECK(p.str().find("(SIMT, ") != std::string::npos);
  // The kernel's own resources: its threads and shared tiles, the residency's registers.
  const GpuGemmResources r = streamk_main_loop_resources(g, "sm_90");
  CHECK(r.threads == 256);
  CHECK(r.shared_bytes == (64 * 16 + 16 * 64) * 4);
  CHECK(r.registers > 0);
  // A grid of more blocks than an SM holds (64 registers x 256 threads: four).
  CHECK_THROWS_WITH(
      predict_streamk_gemm(simt_kernel(64, 128, 1024, spec, Decomposition::DataParallel, 5), spec,
                           simt_resources()),
      doctest::Contains("the grid's 10 blocks need 5 per SM of H100-SXM5 (2 SMs), which holds 4"));
  GpuGemmResources huge = simt_resources();
  huge.shared_bytes = 512 * 1024;
  CHECK_THROWS_WITH(predict_streamk_simt_loop(g, spec, huge),
                    doctest::Contains("does not fit on an SM of H100-SXM5"));
  CHECK_THROWS_WITH(streamk_simt_step_counts(streamk_gemm(512, 512, 512, f16,
                                                          [] {
                                                            StreamKConfig c;
                                                            c.tensor_cores = GpuGemmConfig{};
                                                            c.sms = 132;
                                                            c.blocks_per_sm = 1;
                                                            return c;
                                                          }())),
                    doctest::Contains("the kernel runs the tensor-core main loop"));
}

TEST_CASE("streamk simt model: the H200's measured rankings of decompositions and grids") {
  // docs/gpu-measurements.md (sixth session), f32 on the SIMT loop, 132 x 4 blocks: the hybrid ran
  // ahead of data-parallel at every shape (1.43x at 1024^3, 1.47x at 1024 x 1024 x 8192, 1.03x at
  // 4096^3), and four blocks per SM ahead of one (1.0-1.9x). The model agrees on each ranking, and
  // its times are within 0.85-1.35x of the measured ones.
  const GpuPerfSpec spec = GpuPerfSpec::h200();
  struct Measured {
    int64_t m, n, k;
    double hybrid_ms, data_parallel_ms;
  };
  for (const Measured& s :
       {Measured{1024, 1024, 1024, 0.100, 0.143}, Measured{1000, 1000, 1000, 0.112, 0.145},
        Measured{2048, 2048, 2048, 0.690, 0.728}, Measured{4096, 4096, 4096, 5.439, 5.622},
        Measured{1024, 1024, 8192, 0.727, 1.072}, Measured{4096, 11008, 4096, 13.797, 14.065}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    const StreamKPrediction hybrid = predict_streamk_gemm(
        simt_kernel(s.m, s.n, s.k, spec, Decomposition::StreamKHybrid, 4), spec, simt_resources());
    const StreamKPrediction dp = predict_streamk_gemm(
        simt_kernel(s.m, s.n, s.k, spec, Decomposition::DataParallel, 4), spec, simt_resources());
    const StreamKPrediction one = predict_streamk_gemm(
        simt_kernel(s.m, s.n, s.k, spec, Decomposition::StreamKHybrid, 1), spec, simt_resources());
    CHECK(hybrid.seconds < dp.seconds);
    CHECK(hybrid.seconds < one.seconds);
    for (const auto& [predicted, measured] :
         {std::pair{hybrid.seconds * 1e3, s.hybrid_ms}, std::pair{dp.seconds * 1e3, s.data_parallel_ms}}) {
      CHECK(measured / predicted > 0.85);
      CHECK(measured / predicted < 1.35);
    }
  }
}
