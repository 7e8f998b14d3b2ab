// The definitions of lib/streamk_simt_model.hpp: the SIMT main loop's counts from its configuration,
// the shared-memory wavefronts of its loads from the lanes' addresses, and the round.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/streamk_simt_model.hpp");

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "loom/lib/streamk_gemm.hpp"
#include "loom/lib/streamk_residency.hpp"
#include "loom/lib/streamk_simt_model.hpp"
#include "loom/support/error.hpp"

namespace loom::lib {

namespace detail {

/// Refuses a kernel on tensor cores, which lib/gpu_gemm_model.hpp describes.
inline void require_simt(const StreamKGemm& g, const char* caller) {
  if (g.config.tensor_cores)
    throw Error(cat(caller,
                    ": the kernel runs the tensor-core main loop; predict_streamk_gemm models it "
                    "with lib::gpu_gemm's model"));
}

/// The threads of the SIMT kernel's block.
inline int64_t simt_threads(const StreamKConfig& c) {
  return (c.tile.bm / c.thread_m) * (c.tile.bn / c.thread_n);
}

/// Refuses a GPU with a rate that is not positive (NaN included) or a negative latency, and a block
/// of another thread count than `g`'s: the model would give rounds of no meaning.
inline void check_simt_inputs(const char* caller, const StreamKGemm& g, const GpuPerfSpec& spec,
                              const GpuGemmResources& resources) {
  if (!(spec.clock_ghz > 0) || !(spec.l2_tbps > 0) || !(spec.dram_tbps > 0) ||
      !(spec.fp32_lanes_per_sm > 0) || !(spec.shared_bytes_per_clock > 0) || !(spec.device.sms > 0) ||
      !(spec.device.sub_partitions > 0))
    throw Error(
        cat(caller, ": the GpuPerfSpec '", spec.name,
            "' needs a positive clock, L2 and DRAM bandwidth, FP32 lane count, shared-memory bytes per "
            "clock, SM count and schedulers per SM"));
  if (!(spec.dram_latency >= 0) || !(spec.barrier_latency >= 0) || !(spec.shared_latency >= 0))
    throw Error(cat(caller, ": the GpuPerfSpec '", spec.name,
                    "' needs DRAM, barrier and shared-memory latencies of 0 cycles or more"));
  if (resources.threads != simt_threads(g.config))
    throw Error(cat(caller, ": the resources give ", resources.threads,
                    " threads per block and the kernel's block has ", simt_threads(g.config),
                    " (streamk_simt_resources gives the kernel's own)"));
}

/// The wavefronts a warp's load of one element per lane takes: the most distinct 32-bit words its
/// lanes read in one bank (lanes reading the same word share it). `element` gives thread (tx, ty)'s
/// element index for k offset kb. Averaged over the block's warps (where bn / thread_n does not
/// divide 32 they span different rows) and over kb in [0, bk) (16-bit elements pair differently).
template <typename Element>
double simt_load_wavefronts(const StreamKGemm& g, Element&& element) {
  const int64_t tx_n = g.config.tile.bn / g.config.thread_n, threads = simt_threads(g.config);
  const int64_t bk = g.config.tile.bk, eb = g.input.bytes();
  double sum = 0;
  int64_t warps = 0;
  for (int64_t first = 0; first < threads; first += 32, ++warps)
    for (int64_t kb = 0; kb < bk; ++kb) {
      std::map<int64_t, std::set<int64_t>> words_of_bank;
      for (int64_t t = first; t < std::min(first + 32, threads); ++t) {
        const int64_t word = element(t % tx_n, t / tx_n, kb) * eb / 4;
        words_of_bank[word % 32].insert(word);
      }
      size_t most = 0;
      for (const auto& [bank, words] : words_of_bank) most = std::max(most, words.size());
      sum += static_cast<double>(most);
    }
  return sum / static_cast<double>(warps * bk);
}

/// One round's terms (SM cycles) with `blocks` blocks computing on the SM and `active` on the GPU.
struct SimtRound {
  double fma = 0, shared = 0, l2 = 0, issue = 0, exposed = 0, round = 0;
  std::string limiter;
};

inline SimtRound simt_round(const StreamKGemm& g, const GpuPerfSpec& spec, const SimtLoopPrediction& loop,
                            int64_t blocks, int64_t active) {
  const SimtStepCounts& c = loop.per_warp;
  const double bw = static_cast<double>(blocks * ((loop.resources.threads + 31) / 32));  // warps
  const int schedulers = spec.device.sub_partitions;
  // Clocks of a scheduler's FP32 pipe per warp instruction: 32 lanes over the scheduler's share.
  const double lane_clocks = 32.0 / (static_cast<double>(spec.fp32_lanes_per_sm) / schedulers);
  SimtRound r;
  r.fma = std::ceil(bw / schedulers) * static_cast<double>(c.ffma) * lane_clocks;
  r.shared = bw * c.shared_wavefronts * 128.0 / spec.shared_bytes_per_clock;
  const GemmTile& t = g.config.tile;
  r.l2 = static_cast<double>(active) * static_cast<double>((t.bm + t.bn) * t.bk * g.input.bytes()) /
         spec.l2_bytes_per_clock();
  r.issue = bw * c.instructions / schedulers;
  // The blocks wait for their copies together (the header comment says why): once a round.
  r.exposed = spec.dram_latency + 2 * spec.barrier_latency + spec.shared_latency;
  const std::pair<double, const char*> terms[] = {
      {r.fma, "fma"}, {r.shared, "shared"}, {r.l2, "l2"}, {r.issue, "issue"}};
  const auto largest = std::max_element(std::begin(terms), std::end(terms),
                                        [](const auto& x, const auto& y) { return x.first < y.first; });
  r.limiter = largest->second;
  r.round = largest->first + r.exposed;
  return r;
}

}  // namespace detail

LOOM_DECL SimtStepCounts streamk_simt_step_counts(const StreamKGemm& g) {
  detail::require_simt(g, "streamk_simt_step_counts");
  const StreamKConfig& c = g.config;
  const int64_t bm = c.tile.bm, bn = c.tile.bn, bk = c.tile.bk, tm = c.thread_m, tn = c.thread_n;
  const int64_t threads = detail::simt_threads(c);
  SimtStepCounts s;
  s.ffma = bk * tm * tn;
  s.shared_loads = bk * (tm + tn);
  // Thread (tx, ty) reads A's row ty (+ i * ty_n) at column kb, and B's row kb at column tx
  // (+ j * tx_n): the offsets i * ty_n * bk and j * tx_n shift every lane alike.
  const double a_wavefronts =
      detail::simt_load_wavefronts(g, [&](int64_t, int64_t ty, int64_t kb) { return ty * bk + kb; });
  const double b_wavefronts =
      detail::simt_load_wavefronts(g, [&](int64_t tx, int64_t, int64_t kb) { return kb * bn + tx; });
  const int64_t copies = (bm * bk + threads - 1) / threads + (bk * bn + threads - 1) / threads;
  s.global_loads = s.shared_stores = copies;
  // A warp's stores of consecutive elements: one wavefront each.
  s.shared_wavefronts = static_cast<double>(bk * tm) * a_wavefronts +
                        static_cast<double>(bk * tn) * b_wavefronts + static_cast<double>(copies);
  s.barriers = 2;
  // A copy is a load, a store and about 3 address instructions; an f16 element read is converted
  // to f32; 8 more run the loop.
  const int64_t conversions = g.input == f16 ? s.shared_loads : 0;
  s.instructions = static_cast<double>(s.ffma + s.shared_loads + conversions + 5 * copies + s.barriers + 8);
  return s;
}

LOOM_DECL GpuGemmResources streamk_simt_resources(const StreamKGemm& g) {
  detail::require_simt(g, "streamk_simt_resources");
  const StreamKConfig& c = g.config;
  GpuGemmResources r;
  r.threads = static_cast<int>(detail::simt_threads(c));
  r.shared_bytes = (c.tile.bm * c.tile.bk + c.tile.bk * c.tile.bn) * g.input.bytes();
  if (g.residency.registers_per_thread > 0) {
    r.registers = g.residency.registers_per_thread;
    r.registers_from = g.residency.source;
  } else {
    // A grid given by the configuration: the residency counted no registers.
    r.registers = detail::estimated_streamk_registers(c);
    r.registers_from = "estimate";
  }
  return r;
}

LOOM_DECL SimtLoopPrediction predict_streamk_simt_loop(const StreamKGemm& g, const GpuPerfSpec& spec,
                                                       const GpuGemmResources& resources) {
  detail::require_simt(g, "predict_streamk_simt_loop");
  detail::check_simt_inputs("predict_streamk_simt_loop", g, spec, resources);
  SimtLoopPrediction p;
  p.per_warp = streamk_simt_step_counts(g);
  p.resources = resources;
  p.occupancy =
      occupancy(spec.device, BlockResources{resources.threads, resources.registers, resources.shared_bytes});
  if (p.occupancy.blocks_per_sm <= 0)
    throw Error(cat("predict_streamk_simt_loop: one block of the SIMT Stream-K kernel (", resources.threads,
                    " threads, ", resources.registers, " registers per thread, ", resources.shared_bytes,
                    " bytes of shared memory) does not fit on an SM of ", spec.name, " (", p.occupancy.str(),
                    ")"));
  const int64_t b = p.occupancy.blocks_per_sm;
  const detail::SimtRound r = detail::simt_round(g, spec, p, b, b * spec.device.sms);
  p.fma_cycles = r.fma;
  p.shared_cycles = r.shared;
  p.l2_cycles = r.l2;
  p.issue_cycles = r.issue;
  p.exposed_cycles = r.exposed;
  p.round_cycles = r.round;
  p.limiter = r.limiter;
  return p;
}

LOOM_DECL double streamk_simt_round_cycles(const StreamKGemm& g, const GpuPerfSpec& spec,
                                           const SimtLoopPrediction& loop, int64_t blocks, int64_t active) {
  if (blocks < 1 || active < blocks)
    throw Error(cat("streamk_simt_round_cycles: ", blocks, " blocks on the SM and ", active,
                    " on the GPU; give at least one block, and no more on the SM than on the GPU"));
  detail::require_simt(g, "streamk_simt_round_cycles");
  detail::check_simt_inputs("streamk_simt_round_cycles", g, spec, loop.resources);
  return detail::simt_round(g, spec, loop, blocks, active).round;
}

LOOM_DECL std::string SimtLoopPrediction::str() const {
  auto fixed = [](double x) { return cat(static_cast<int64_t>(std::llround(x))); };
  std::ostringstream os;
  os.precision(3);
  os << "SIMT loop per warp-step: " << per_warp.ffma << " FFMA, " << per_warp.shared_loads
     << " shared loads (" << per_warp.shared_wavefronts << " wavefronts with the copies' stores), "
     << per_warp.global_loads << " copies, " << per_warp.instructions << " instructions; "
     << resources.threads << " threads, " << resources.registers << " registers (" << resources.registers_from
     << "), " << occupancy.str() << "; a full round: fma " << fixed(fma_cycles) << ", shared "
     << fixed(shared_cycles) << ", l2 " << fixed(l2_cycles) << ", issue " << fixed(issue_cycles) << " ("
     << limiter << ") + exposed " << fixed(exposed_cycles) << " = " << fixed(round_cycles) << " cycles";
  return os.str();
}

}  // namespace loom::lib
