// The definitions of lib/gemm_tuning.hpp.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gemm_tuning.hpp");

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/lib/gemm_tuning.hpp"
#include "loom/runtime/thread_pool.hpp"

namespace loom::lib {

namespace detail {

// lib/impl/gemm.hpp: the configuration the cache-size model picks, AMX tiles where the CPU has them
// unless `allow_amx` is false (defined there; header-only mode includes this file from that one,
// before the definition).
inline GemmConfig heuristic_gemm_config(const GemmProblem& problem, bool allow_amx);

/// `first`, then the other values that are not `first`.
inline std::vector<int64_t> options_with_default(int64_t first, std::vector<int64_t> others) {
  std::vector<int64_t> out{first};
  for (int64_t v : others)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

}  // namespace detail

LOOM_DECL GemmConfig model_gemm_config(const GemmProblem& problem) {
  return detail::heuristic_gemm_config(problem, true);
}

LOOM_DECL GemmConfig gemm_config_knobs(tune::Config& cfg, const GemmConfig& model,
                                       const GemmProblem& problem) {
  // An AMX configuration (the model's where the CPU has AMX) may give way to the vector model's: its
  // mr and nr count tiles' rows and columns, which the vector register tiles do not share, so the
  // other knobs then vary around the vector model.
  const bool keeps_amx = model.dot != DotInstruction::Amx || cfg.choice("amx", {1, 0}) != 0;
  const GemmConfig base = keeps_amx ? model : detail::heuristic_gemm_config(problem, false);
  GemmConfig c = base;
  const bool wide = problem.dtype == f32 || problem.dtype == f64;
  // kc rows of a B micro-panel; mc rows of A (a multiple of mr) in L2; nc columns of B (a multiple
  // of nr) in L3: the sizes the cache model picks from sysfs, which the search may overrule. Long K
  // blocks save passes of C's tile through memory (up to all of K: the narrow types' model takes up
  // to 4096), short ones keep B's micro-panel in L1. A block longer than K is K: one option for all.
  std::vector<int64_t> kc_options = {base.kc};
  const std::vector<int64_t> kc_sizes = wide ? std::vector<int64_t>{128, 256, 512, 1024, 2048}
                                             : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  for (int64_t v : kc_sizes)
    if (v < problem.k && v != base.kc) kc_options.push_back(v);
  c.kc = cfg.choice("kc", kc_options);
  c.mc = cfg.choice(
      "mc", detail::options_with_default(base.mc, {4 * base.mr, 8 * base.mr, 16 * base.mr, 32 * base.mr}));
  c.nc = cfg.choice(
      "nc", detail::options_with_default(base.nc, {8 * base.nr, 16 * base.nr, 32 * base.nr, 64 * base.nr}));
  c.pack_a = cfg.choice("pack_a", {base.pack_a ? 1 : 0, base.pack_a ? 0 : 1}) != 0;
  // The micro-kernel's instruction, where this CPU has a dot instruction for the input types: the
  // model widens and multiply-adds when few rows of C do not pay for B's packed copy, and that
  // boundary is a guess the search may overrule either way.
  const CpuCacheInfo& cpu = CpuCacheInfo::host();
  const DType a = problem.a_type(), b = problem.b_type();
  const DotInstruction dot = detail::vector_dot_for(a, b, cpu);
  if (dot != DotInstruction::MultiplyAdd && base.dot != DotInstruction::Amx) {
    const int64_t uses_dot = base.dot == dot ? 1 : 0;
    c.dot = cfg.choice("dot", {uses_dot, 1 - uses_dot}) != 0 ? dot : DotInstruction::MultiplyAdd;
  }
  // How the threads share the work: blocks of rows (data-parallel) or equal shares of the MAC-loop
  // iterations (Stream-K, which pays a fixup where a tile is split; float32 and float64 only);
  // gemm() refuses Stream-K where it does not apply (batched products), and the tuner counts those
  // as invalid.
  if (base.parallel && wide) {
    const int64_t stream_k = base.decomposition == Decomposition::StreamK ? 1 : 0;
    c.decomposition = cfg.choice("stream_k", {stream_k, 1 - stream_k}) != 0 ? Decomposition::StreamK
                                                                            : Decomposition::DataParallel;
  }
  return c;
}

LOOM_DECL tune::Result tune_gemm(const GemmProblem& problem, tune::Options options) {
  // The heuristic's configuration, as gemm(problem) would pick it without a database.
  const GemmConfig base = detail::heuristic_gemm_config(problem, true);
  if (options.name == tune::Options().name)
    options.name = cat("lib::gemm ", problem.m, "x", problem.n, "x", problem.k, " ", problem.dtype.str());
  return tune::tune(
      [&](tune::Config& cfg) {
        const GemmConfig c = gemm_config_knobs(cfg, base, problem);
        // Blocks that leave fewer MAC-loop iterations than threads (C in one tile and K in one block,
        // as the model's blocks are for some two-thread shapes) give Stream-K fewer workers than
        // threads: a slower copy of a data-parallel candidate, refused so the search spends no trial
        // on it. (Only here: a record made with fewer threads still applies in a later process.)
        if (c.decomposition == Decomposition::StreamK) {
          const int64_t threads = c.workers > 0 ? c.workers : runtime::ThreadPool::global().num_threads();
          const StreamKLayout layout = streamk_layout(problem, c);
          if (layout.workers < threads)
            throw Error(cat("lib::gemm tuning: Stream-K with mc = ", c.mc, ", nc = ", c.nc, ", kc = ", c.kc,
                            " has ", layout.iterations(), " MAC-loop iterations (", layout.tiles(),
                            " tiles x ", layout.iterations_per_tile, " blocks of K) for ", threads,
                            " threads; smaller blocks give it work to share"));
        }
        Gemm g = gemm(problem, c);
        return tune::Candidate{g.schedule, g.args()};
      },
      options);
}

LOOM_DECL GemmConfig tuned_gemm_config(const GemmProblem& problem, const GemmConfig& base,
                                       const std::string& database) {
  const tune::Database db(database);
  const bool asked = tune::tuning_requested();
  // Most programs have no database: do not lower anything to look one up.
  std::error_code ec;
  if (!asked && (db.path().empty() || !std::filesystem::exists(db.path(), ec))) return base;
  const std::string key =
      tune::workload_key(gemm(problem, detail::heuristic_gemm_config(problem, true)).args());
  std::optional<tune::Assignment> knobs = tune::best_knobs(key, Target::cpu(), db.path());
  if (!knobs && asked) {
    tune::Options options;
    options.database = db.path().empty() ? "off" : db.path();
    // LOOM_TUNE_TRIALS bounds the search (default 32 configurations).
    const char* trials = std::getenv("LOOM_TUNE_TRIALS");
    options.max_trials = trials && std::atoi(trials) > 0 ? std::atoi(trials) : 32;
    tune::Result r = tune_gemm(problem, options);
    knobs = r.best;
  }
  if (!knobs) return base;
  tune::Config cfg(*knobs);
  try {
    return gemm_config_knobs(cfg, base, problem);
  } catch (const Error&) {
    // A record of an older search space (a value no longer among a knob's options): the model's
    // configuration, as without a record, rather than a GEMM that fails over a stale database.
    return base;
  }
}

}  // namespace loom::lib
