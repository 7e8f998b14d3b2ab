// The definitions of lib/streamk_model.hpp: the Stream-K plan played out phase by phase on the
// modelled GPU, with the main loop's round from lib::gpu_gemm's model.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/streamk_model.hpp");

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/streamk_gemm.hpp"
#include "loom/lib/streamk_model.hpp"
#include "loom/lib/streamk_simt_model.hpp"
#include "loom/support/error.hpp"

namespace loom::lib {

namespace detail {

/// The bytes per clock one SM moves to or from L2 (its port: 64 bytes per clock on sm_80 and sm_90
/// in NVIDIA's architecture descriptions, an assumption here, not measured by Loom). A tile of
/// floats moved by a few blocks goes at this rate; by many, at their share of the GPU's L2.
inline constexpr double kSmL2BytesPerClock = 64;

/// A worker's place in its units: the unit, the phase and what is left of it.
struct StreamKWorkerState {
  enum class Phase { Start, Compute, Wait, Latency, Transfer, Done };
  size_t unit = 0;
  Phase phase = Phase::Start;
  double until = 0;      // the end of a Start or Latency phase
  double remaining = 0;  // Compute: iterations left; Transfer: bytes left (fractional while rates change)
  double wait_from = 0;  // Wait: when it began
  double own = 0;        // time spent in its own phases (not waiting)
  size_t gathered = 0;   // a fixup unit: the other units' partials read so far
};

/// What the play of a plan needs of the GPU: one iteration's cycles with a blocks computing on the
/// SM and n on the GPU (`round`), a unit's start, an L2 latency, and the bandwidths a transfer
/// shares.
struct StreamKPlayCosts {
  int sms = 0;
  double start_cycles = 0, l2_latency = 0;
  double tile_bytes = 0;    // one tile of f32: C, or a partial sum
  double l2_per_clock = 0;  // the GPU's, shared by every block transferring
  double sm_per_clock = 0;  // one SM's port to L2, shared by its blocks transferring
};

/// Plays `plan` out: returns the makespan; fills the busiest worker's own time and the longest wait.
template <typename Round>
double play_streamk_plan(const DecompositionPlan& plan, const StreamKPlayCosts& costs, Round&& round,
                         double* busiest, double* longest_wait) {
  using Phase = StreamKWorkerState::Phase;
  const size_t workers = plan.workers.size(), sms = static_cast<size_t>(costs.sms);
  // Each tile's units in worker, then unit order: the last is its fixup unit, which reads the
  // others' partials in that order (the kernel's: consecutive lower-numbered blocks for Stream-K).
  std::vector<std::vector<std::pair<size_t, size_t>>> units_of(static_cast<size_t>(plan.tiles()));
  std::vector<std::vector<char>> published(workers);
  for (size_t w = 0; w < workers; ++w) {
    published[w].assign(plan.workers[w].size(), 0);
    for (size_t i = 0; i < plan.workers[w].size(); ++i)
      units_of[static_cast<size_t>(plan.workers[w][i].tile)].emplace_back(w, i);
  }
  std::vector<StreamKWorkerState> state(workers);
  double now = 0;
  *longest_wait = 0;

  auto tile_of = [&](size_t w) { return static_cast<size_t>(plan.workers[w][state[w].unit].tile); };
  auto split = [&](size_t w) { return units_of[tile_of(w)].size() > 1; };
  auto is_fixup = [&](size_t w) {
    return units_of[tile_of(w)].back() == std::pair<size_t, size_t>{w, state[w].unit};
  };
  // A fixup unit's partials still to read.
  auto to_gather = [&](size_t w) {
    return is_fixup(w) ? units_of[tile_of(w)].size() - 1 - state[w].gathered : 0;
  };
  auto begin_unit = [&](size_t w) {
    StreamKWorkerState& s = state[w];
    if (s.unit >= plan.workers[w].size()) {
      s.phase = Phase::Done;
      return;
    }
    s.phase = Phase::Start;
    s.until = now + costs.start_cycles;
    s.own += costs.start_cycles;
    s.gathered = 0;
  };
  // After its iterations, a tile of floats moved: a fixup unit first reads the others' partials one
  // by one, each once it is published, then stores C; any other unit stores C or writes its partial.
  auto begin_transfer = [&](size_t w) {
    StreamKWorkerState& s = state[w];
    if (to_gather(w) > 0) {
      const auto [pw, pi] = units_of[tile_of(w)][s.gathered];
      if (!published[pw][pi]) {
        if (s.phase != Phase::Wait) s.wait_from = now;
        s.phase = Phase::Wait;
        return;
      }
      if (s.phase == Phase::Wait) *longest_wait = std::max(*longest_wait, now - s.wait_from);
    }
    s.phase = Phase::Latency;
    s.until = now + costs.l2_latency;
    s.own += costs.l2_latency;
    s.remaining = costs.tile_bytes;
  };
  auto end_transfer = [&](size_t w) {
    StreamKWorkerState& s = state[w];
    if (to_gather(w) > 0) {
      ++s.gathered;
      begin_transfer(w);
      return;
    }
    if (split(w) && !is_fixup(w)) published[w][s.unit] = 1;
    ++s.unit;
    begin_unit(w);
  };
  for (size_t w = 0; w < workers; ++w) begin_unit(w);

  constexpr double kEps = 1e-9;
  std::vector<int> computing(sms, 0), transferring(sms, 0);
  std::vector<double> rate(workers, 0);
  for (;;) {
    // Phases that end now, and waits whose partials have all been published.
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t w = 0; w < workers; ++w) {
        StreamKWorkerState& s = state[w];
        const Phase before = s.phase;
        if (s.phase == Phase::Start && s.until <= now + kEps) {
          s.phase = Phase::Compute;
          s.remaining = static_cast<double>(plan.workers[w][s.unit].iterations());
        } else if (s.phase == Phase::Compute && s.remaining <= kEps) {
          begin_transfer(w);
        } else if (s.phase == Phase::Wait) {
          begin_transfer(w);
        } else if (s.phase == Phase::Latency && s.until <= now + kEps) {
          s.phase = Phase::Transfer;
        } else if (s.phase == Phase::Transfer && s.remaining <= kEps) {
          end_transfer(w);
        }
        if (s.phase != before) changed = true;
      }
    }
    // The blocks computing and transferring on each SM and on the GPU set this interval's rates.
    std::fill(computing.begin(), computing.end(), 0);
    std::fill(transferring.begin(), transferring.end(), 0);
    int64_t active = 0, moving = 0;
    bool all_done = true;
    for (size_t w = 0; w < workers; ++w) {
      if (state[w].phase != Phase::Done) all_done = false;
      if (state[w].phase == Phase::Compute) {
        ++computing[w % sms];
        ++active;
      }
      if (state[w].phase == Phase::Transfer) {
        ++transferring[w % sms];
        ++moving;
      }
    }
    if (all_done) break;
    double step = std::numeric_limits<double>::infinity();
    for (size_t w = 0; w < workers; ++w) {
      const StreamKWorkerState& s = state[w];
      if (s.phase == Phase::Start || s.phase == Phase::Latency) step = std::min(step, s.until - now);
      if (s.phase == Phase::Compute) {
        rate[w] = 1.0 / round(computing[w % sms], active);  // iterations per cycle
        step = std::min(step, s.remaining / rate[w]);
      }
      if (s.phase == Phase::Transfer) {
        rate[w] =
            std::min(costs.l2_per_clock / static_cast<double>(moving),
                     costs.sm_per_clock / static_cast<double>(transferring[w % sms]));  // bytes per cycle
        step = std::min(step, s.remaining / rate[w]);
      }
    }
    internal_check(std::isfinite(step), "the Stream-K model's plan waits for a partial sum nobody publishes");
    for (size_t w = 0; w < workers; ++w)
      if (state[w].phase == Phase::Compute || state[w].phase == Phase::Transfer) {
        state[w].remaining -= step * rate[w];
        state[w].own += step;
      }
    now += step;
  }
  *busiest = 0;
  for (const StreamKWorkerState& s : state) *busiest = std::max(*busiest, s.own);
  return now;
}

}  // namespace detail

LOOM_DECL StreamKPrediction predict_streamk_gemm(const StreamKGemm& g, const GpuPerfSpec& spec,
                                                 const GpuGemmResources& resources) {
  if (g.config.sms != spec.device.sms)
    throw Error(cat("predict_streamk_gemm: the kernel's grid was sized for ", g.config.sms, " SMs and ",
                    spec.name, " has ", spec.device.sms,
                    "; build it with StreamKConfig::sms = ", spec.device.sms, " to model it there"));
  StreamKPrediction p;
  p.device = spec.name;
  p.arch = spec.arch;
  // The main loop's model: lib::gpu_gemm's for the tensor-core loop, lib/streamk_simt_model.hpp's
  // for the SIMT one. Both throw when no block fits.
  std::optional<GpuGemm> problem;
  Occupancy holds;
  if (g.config.tensor_cores) {
    problem =
        gpu_gemm(g.shape.m, g.shape.n, g.shape.k, g.input, *g.config.tensor_cores, g.a_layout, g.b_layout);
    p.main_loop = predict_gpu_gemm(*problem, spec, resources);
    holds = p.main_loop.occupancy;
  } else {
    p.simt_loop = predict_streamk_simt_loop(g, spec, resources);
    holds = p.simt_loop.occupancy;
  }
  p.workers = static_cast<int64_t>(g.plan.workers.size());
  const int sms = spec.device.sms;
  p.blocks_per_sm = static_cast<int>((p.workers + sms - 1) / sms);
  if (p.blocks_per_sm > holds.blocks_per_sm)
    throw Error(cat("predict_streamk_gemm: the grid's ", p.workers, " blocks need ", p.blocks_per_sm,
                    " per SM of ", spec.name, " (", sms, " SMs), which holds ", holds.blocks_per_sm, " (",
                    holds.str(),
                    "); the model assumes the whole persistent grid resident: "
                    "use StreamKConfig::blocks_per_sm = ",
                    holds.blocks_per_sm, " or fewer"));
  p.split_tiles = g.plan.split_tiles();
  for (const auto& w : g.plan.workers) p.units += static_cast<int64_t>(w.size());

  const double l2_per_clock = spec.l2_bytes_per_clock();
  const int eb = g.input.bytes();
  // With tensor cores, `tile` is their block tile.
  const GemmTile& tile = g.config.tile;
  const int64_t sms_busy = std::min<int64_t>(sms, p.workers);
  detail::StreamKPlayCosts costs;
  costs.sms = sms;
  // A unit's first tiles: the tensor-core loop's copies run stages ahead, so the first ones are
  // exposed; the SIMT loop waits for every step's copies, and its round counts that wait.
  costs.start_cycles = p.unit_start_cycles =
      problem ? spec.l2_latency + p.blocks_per_sm * static_cast<double>(tile.bm + tile.bn) * tile.bk * eb /
                                      (l2_per_clock / static_cast<double>(sms_busy))
              : 0.0;
  costs.l2_latency = spec.l2_latency;
  costs.tile_bytes = static_cast<double>(tile.bm) * tile.bn * 4;
  costs.l2_per_clock = l2_per_clock;
  costs.sm_per_clock = detail::kSmL2BytesPerClock;
  // For the summary: one tile moved with every block of the grid moving one.
  p.tile_transfer_cycles =
      spec.l2_latency + costs.tile_bytes / std::min(l2_per_clock / static_cast<double>(p.workers),
                                                    costs.sm_per_clock / p.blocks_per_sm);
  auto round_of = [&](int blocks, int64_t active) {
    return problem ? gpu_gemm_round_cycles(*problem, spec, p.main_loop, blocks, active)
                   : streamk_simt_round_cycles(g, spec, p.simt_loop, blocks, active);
  };
  p.full_round_cycles = round_of(p.blocks_per_sm, p.workers);

  std::map<std::pair<int, int64_t>, double> rounds;
  auto round = [&](int blocks, int64_t active) {
    auto [it, fresh] = rounds.try_emplace({blocks, active}, 0.0);
    if (fresh) it->second = round_of(blocks, active);
    return it->second;
  };
  p.makespan_cycles =
      detail::play_streamk_plan(g.plan, costs, round, &p.busiest_worker_cycles, &p.longest_wait_cycles);
  const double operand_bytes = (static_cast<double>(g.shape.m) + static_cast<double>(g.shape.n)) *
                                   static_cast<double>(g.shape.k) * eb +
                               static_cast<double>(g.shape.m) * static_cast<double>(g.shape.n) * 4;
  p.dram_cycles = spec.dram_latency + operand_bytes / spec.dram_bytes_per_clock();
  p.limiter = p.dram_cycles > p.makespan_cycles ? "dram" : "compute";
  p.seconds = std::max(p.makespan_cycles, p.dram_cycles) / (spec.clock_ghz * 1e9);
  p.tflops = 2.0 * static_cast<double>(g.shape.m) * static_cast<double>(g.shape.n) *
             static_cast<double>(g.shape.k) / p.seconds / 1e12;
  p.peak_tflops = problem ? spec.dense_tflops(g.input) : spec.fp32_tflops();
  p.fraction_of_peak = p.tflops / p.peak_tflops;
  return p;
}

LOOM_DECL GpuGemmResources streamk_main_loop_resources(const StreamKGemm& g, const std::string& arch) {
  if (!g.config.tensor_cores) return streamk_simt_resources(g);
  GpuGemmResources resources = gpu_gemm_resources(
      gpu_gemm(g.shape.m, g.shape.n, g.shape.k, g.input, *g.config.tensor_cores, g.a_layout, g.b_layout),
      arch);
  resources.registers = std::max(resources.registers, g.residency.registers_per_thread);
  return resources;
}

LOOM_DECL StreamKPrediction predict_streamk_gemm(const StreamKGemm& g, const std::string& arch) {
  const GpuPerfSpec spec = GpuPerfSpec::for_arch(arch);
  return predict_streamk_gemm(g, spec, streamk_main_loop_resources(g, arch));
}

LOOM_DECL std::string StreamKPrediction::str() const {
  auto fixed = [](double x) { return cat(static_cast<int64_t>(std::llround(x))); };
  std::ostringstream os;
  os.precision(3);
  os << device << " (" << arch << "): " << workers << " blocks (" << blocks_per_sm << " per SM), " << units
     << " work units, " << split_tiles << " split tiles; a full round " << fixed(full_round_cycles)
     << " cycles (" << (simt_loop.limiter.empty() ? main_loop.limiter : "SIMT, " + simt_loop.limiter)
     << "), a unit's start " << fixed(unit_start_cycles) << ", a tile of floats moved "
     << fixed(tile_transfer_cycles) << "; busiest block " << fixed(busiest_worker_cycles)
     << " cycles of its own, longest wait " << fixed(longest_wait_cycles) << ", makespan "
     << fixed(makespan_cycles) << ", DRAM floor " << fixed(dram_cycles) << " (" << limiter
     << "): " << seconds * 1e3 << " ms, " << tflops << " TFLOP/s, " << fraction_of_peak << " of "
     << peak_tflops;
  return os.str();
}

}  // namespace loom::lib
