// The tensor-core Stream-K GEMM's time model (lib/streamk_model.hpp; the SIMT loop's in
// streamk_simt_model_test.cpp): data-parallel plans agree
// with lib::gpu_gemm's model, Stream-K shortens a data-parallel tail, split tiles cost waits and
// transfers, and what it refuses. Resources are given (not ptxas's) so that the numbers are the same
// on every machine.
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_model.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace loom;
using namespace loom::lib;

namespace {

/// The default tile's block (128 x 128 x 64, four warps, three stages) with a fixed register count:
/// one block per SM on an A100 (164 KB of shared memory), two on an H100.
GpuGemmResources streamk_model_resources() {
  GpuGemmResources r;
  r.threads = 128;
  r.registers = 168;
  r.registers_from = "given";
  // Three stages of A's 128 x 64 and B's 64 x 128 f16 tiles, swizzled without padding.
  r.shared_bytes = 3 * (128 * 64 + 64 * 128) * 2;
  return r;
}

StreamKGemm streamk_model_kernel(int64_t m, int64_t n, int64_t k, const GpuPerfSpec& spec, Decomposition d,
                                 int blocks_per_sm) {
  StreamKConfig c;
  c.tensor_cores = GpuGemmConfig{};
  c.sms = spec.device.sms;
  c.blocks_per_sm = blocks_per_sm;
  c.decomposition = d;
  return streamk_gemm(m, n, k, f16, c);
}

}  // namespace

TEST_CASE("streamk model: a data-parallel plan takes what gpu_gemm's model predicts for the same main loop") {
  for (const GpuPerfSpec& spec : {GpuPerfSpec::a100(), GpuPerfSpec::h100()})
    for (const std::vector<int64_t>& s : std::vector<std::vector<int64_t>>{
             {2048, 2048, 2048}, {4096, 4096, 4096}, {1024, 1024, 8192}, {8192, 8192, 1024}}) {
      CAPTURE(spec.name);
      CAPTURE(s[0]);
      CAPTURE(s[2]);
      const GpuGemmResources r = streamk_model_resources();
      const GpuGemm gg = gpu_gemm(s[0], s[1], s[2], f16);
      const GpuGemmPrediction q = predict_gpu_gemm(gg, spec, r);
      const int per_sm = q.occupancy.blocks_per_sm;
      REQUIRE(per_sm == (spec.arch == "sm_80" ? 1 : 2));
      const StreamKPrediction p = predict_streamk_gemm(
          streamk_model_kernel(s[0], s[1], s[2], spec, Decomposition::DataParallel, per_sm), spec, r);
      // The same rounds and tile counts; the waves' prologues and C's stores are costed slightly
      // differently (per unit here, per wave there).
      CHECK(p.seconds / q.seconds > 0.95);
      CHECK(p.seconds / q.seconds < 1.05);
      CHECK(p.workers == per_sm * spec.device.sms);
      CHECK(p.blocks_per_sm == per_sm);
      CHECK(p.split_tiles == 0);
      CHECK(p.longest_wait_cycles == 0);
      CHECK(p.units == q.tiles);
      CHECK(p.makespan_cycles >= p.busiest_worker_cycles);
      // Every block computing: gpu_gemm's full wave where the tiles fill the grid.
      CHECK(p.full_round_cycles == doctest::Approx(gpu_gemm_round_cycles(gg, spec, q, per_sm, p.workers)));
      if (q.tiles >= p.workers) CHECK(p.full_round_cycles == doctest::Approx(q.round_cycles));
      CHECK(p.main_loop.round_cycles == doctest::Approx(q.round_cycles));
      CHECK(p.tflops == doctest::Approx(2.0 * s[0] * s[1] * s[2] / p.seconds / 1e12));
    }
}

TEST_CASE("streamk model: Stream-K spreads a data-parallel tail of one tile over every SM") {
  // 7 x 19 = 133 tiles of 128 x 128 on an H100's 132 SMs, one block each: data-parallel runs a
  // second tile on one SM while the others idle; Stream-K gives every SM about 1.01 tiles of
  // iterations, paying a partial sum per split tile.
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  const GpuGemmResources r = streamk_model_resources();
  const StreamKPrediction dp = predict_streamk_gemm(
      streamk_model_kernel(896, 2432, 8192, spec, Decomposition::DataParallel, 1), spec, r);
  const StreamKPrediction sk =
      predict_streamk_gemm(streamk_model_kernel(896, 2432, 8192, spec, Decomposition::StreamK, 1), spec, r);
  CHECK(dp.units == 133);
  CHECK(dp.split_tiles == 0);
  CHECK(sk.split_tiles > 100);
  CHECK(sk.units > 133);
  // The busiest data-parallel block runs two tiles (the second alone on the GPU, faster), a
  // Stream-K block about one and its partial sums.
  CHECK(sk.busiest_worker_cycles < 0.7 * dp.busiest_worker_cycles);
  CHECK(sk.seconds < 0.7 * dp.seconds);
  CHECK(sk.makespan_cycles >= sk.busiest_worker_cycles);
}

TEST_CASE("streamk model: split tiles wait for their partial sums and move them") {
  // 64 tiles of 128 steps over 264 blocks: every tile is split among about four blocks.
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  const GpuGemmResources r = streamk_model_resources();
  const StreamKPrediction sk =
      predict_streamk_gemm(streamk_model_kernel(1024, 1024, 8192, spec, Decomposition::StreamK, 2), spec, r);
  CHECK(sk.split_tiles == 64);
  CHECK(sk.longest_wait_cycles > 0);
  CHECK(sk.makespan_cycles >= sk.busiest_worker_cycles);
  // A tile of floats: an L2 latency and 64 KB at a block's share of the port or of L2.
  CHECK(sk.tile_transfer_cycles > spec.l2_latency);
  CHECK(sk.unit_start_cycles > spec.l2_latency);
  const std::string text = sk.str();
  CHECK(text.find("264 blocks (2 per SM)") != std::string::npos);
  CHECK(text.find("64 split tiles") != std::string::npos);
}

TEST_CASE("streamk model: one tile split between two blocks, in closed form") {
  // An H100 of two SMs, one block each: Stream-K splits the tile's 16 k-steps 8 and 8. Both compute
  // at once; block 0 then writes its partial alone (64 KB at the SM's 64 bytes per clock); block 1,
  // the fixup, waits for it, reads it, and stores C, each an L2 latency and 64 KB.
  GpuPerfSpec spec = GpuPerfSpec::h100();
  spec.device.sms = 2;
  const GpuGemmResources r = streamk_model_resources();
  const StreamKGemm g = streamk_model_kernel(128, 128, 1024, spec, Decomposition::StreamK, 1);
  REQUIRE(g.plan.workers.size() == 2);
  REQUIRE(g.plan.workers[0].size() == 1);
  REQUIRE(g.plan.workers[1].size() == 1);
  CHECK(g.plan.workers[0][0].iterations() == 8);
  const StreamKPrediction p = predict_streamk_gemm(g, spec, r);
  const GpuGemm gg = gpu_gemm(128, 128, 1024, f16);
  const double round = gpu_gemm_round_cycles(gg, spec, p.main_loop, 1, 2);
  const double l2_per_clock = spec.l2_tbps * 1e3 / spec.clock_ghz;  // bytes per SM clock
  const double start = spec.l2_latency + (128.0 + 128) * 64 * 2 / (l2_per_clock / 2);
  const double move = spec.l2_latency + 128.0 * 128 * 4 / 64;
  CHECK(p.unit_start_cycles == doctest::Approx(start));
  CHECK(p.longest_wait_cycles == doctest::Approx(move));
  CHECK(p.makespan_cycles == doctest::Approx(start + 8 * round + 3 * move));
  CHECK(p.busiest_worker_cycles == doctest::Approx(start + 8 * round + 2 * move));
  CHECK(p.split_tiles == 1);
  CHECK(p.units == 2);
  // Data-parallel on the same two SMs: one block runs the whole tile alone, faster per k-step.
  const StreamKPrediction dp = predict_streamk_gemm(
      streamk_model_kernel(128, 128, 1024, spec, Decomposition::DataParallel, 1), spec, r);
  const double alone = gpu_gemm_round_cycles(gg, spec, dp.main_loop, 1, 1);
  CHECK(dp.makespan_cycles ==
        doctest::Approx(spec.l2_latency + (128.0 + 128) * 64 * 2 / (l2_per_clock / 2) + 16 * alone + move));
}

TEST_CASE("streamk model: the DRAM floor decides a product too short for the SMs") {
  // K of 64: one k-step per tile, while A, B and C still cross DRAM once.
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  const GpuGemmResources r = streamk_model_resources();
  const StreamKPrediction p = predict_streamk_gemm(
      streamk_model_kernel(8192, 8192, 64, spec, Decomposition::DataParallel, 2), spec, r);
  const double bytes = (8192.0 + 8192.0) * 64 * 2 + 8192.0 * 8192 * 4;
  CHECK(p.dram_cycles ==
        doctest::Approx(spec.dram_latency + bytes / (spec.dram_tbps * 1e3 / spec.clock_ghz)));
  CHECK(p.seconds * spec.clock_ghz * 1e9 == doctest::Approx(std::max(p.dram_cycles, p.makespan_cycles)));
  CHECK(p.limiter == (p.dram_cycles > p.makespan_cycles ? "dram" : "compute"));
}

TEST_CASE("streamk model: refuses a grid the SMs cannot hold at once") {
  const GpuPerfSpec spec = GpuPerfSpec::h100();
  const GpuGemmResources r = streamk_model_resources();
  const StreamKGemm crowded = streamk_model_kernel(2048, 2048, 2048, spec, Decomposition::StreamK, 3);
  CHECK_THROWS_WITH(
      predict_streamk_gemm(crowded, spec, r),
      doctest::Contains("the grid's 396 blocks need 3 per SM of H100-SXM5 (132 SMs), which holds 2"));
  CHECK_THROWS_WITH(predict_streamk_gemm(crowded, spec, r),
                    doctest::Contains("use StreamKConfig::blocks_per_sm = 2 or fewer"));
  CHECK_THROWS_WITH(predict_streamk_gemm(crowded, "sm_75"), doctest::Contains("sm_75"));
  CHECK_THROWS_WITH(
      predict_streamk_gemm(crowded, GpuPerfSpec::a100(), r),
      doctest::Contains("the kernel's grid was sized for 132 SMs and A100-SXM4-80GB has 108; build "
                        "it with StreamKConfig::sms = 108"));
  const GpuGemm gg = gpu_gemm(2048, 2048, 2048, f16);
  const GpuGemmPrediction q = predict_gpu_gemm(gg, spec, r);
  CHECK_THROWS_WITH(gpu_gemm_round_cycles(gg, spec, q, 3, 2),
                    doctest::Contains("3 blocks on the SM and 2 on the GPU; give at least one block"));
}
