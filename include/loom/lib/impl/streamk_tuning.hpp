// The definitions of lib/streamk_tuning.hpp: the workload key and knobs of the Stream-K GEMM's
// records (tensor-core and SIMT main loops), the exhaustive loop over candidate configurations that its model
// predicts, and the lookup of the best recorded one.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/streamk_tuning.hpp");

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "loom/backend/cuda/driver.hpp"
#include "loom/lib/gemm_device_timer.hpp"
#include "loom/lib/gpu_gemm_tuning.hpp"
#include "loom/lib/gpu_tuning_records.hpp"
#include "loom/lib/impl/streamk_gemm.hpp"
#include "loom/lib/streamk_tuning.hpp"
#include "loom/tune/tune.hpp"

namespace loom::lib {

namespace detail {

/// The knob `name` of a record, when present and within [low, high].
inline std::optional<int> streamk_knob(const tune::Assignment& knobs, const char* name, int64_t low,
                                       int64_t high) {
  auto it = knobs.find(name);
  if (it == knobs.end() || it->second < low || it->second > high) return std::nullopt;
  return static_cast<int>(it->second);
}

/// The configuration a record's knobs hold, for `arch`; nothing when a knob is missing or out of
/// range (a record of another search space, or of lib::gpu_gemm's). A SIMT record holds thread_m.
inline std::optional<StreamKConfig> streamk_config_from_knobs(const tune::Assignment& knobs,
                                                              const std::string& arch) {
  const auto d = streamk_knob(knobs, "decomposition", 0, static_cast<int>(Decomposition::StreamKHybrid));
  const auto split = streamk_knob(knobs, "split_k", 0, 1024);
  const auto per_sm = streamk_knob(knobs, "blocks_per_sm", 1, 64);
  if (!d || !split || !per_sm) return std::nullopt;
  // Reads the named knobs into fields, each within [1, 1024]; false when one is not.
  auto read = [&](std::initializer_list<std::pair<const char*, int*>> fields) {
    for (auto [name, field] : fields) {
      const auto v = streamk_knob(knobs, name, 1, 1024);
      if (!v) return false;
      *field = *v;
    }
    return true;
  };
  StreamKConfig c;
  if (knobs.count("thread_m") > 0) {
    int bm = 0, bn = 0, bk = 0;
    if (!read({{"bm", &bm}, {"bn", &bn}, {"bk", &bk}, {"thread_m", &c.thread_m}, {"thread_n", &c.thread_n}}))
      return std::nullopt;
    c.tile = GemmTile{bm, bn, bk};
  } else {
    GpuGemmConfig tile;
    if (!read({{"block_m", &tile.block_m},
               {"block_n", &tile.block_n},
               {"block_k", &tile.block_k},
               {"warp_m", &tile.warp_m},
               {"warp_n", &tile.warp_n},
               {"stages", &tile.stages}}))
      return std::nullopt;
    const auto rounded = streamk_knob(knobs, "tf32_round", 0, 1);
    if (!rounded) return std::nullopt;
    tile.tf32_round = *rounded == 1;
    c.tensor_cores = tile;
  }
  c.decomposition = static_cast<Decomposition>(*d);
  c.split_k = *split;
  c.blocks_per_sm = *per_sm;
  c.arch = arch;
  return c;
}

/// Whether streamk_gemm takes `c` for the problem: its checks, without lowering the kernel. A record
/// it would refuse (edited by hand, or of an older kernel's limits) is passed over for the next.
inline bool streamk_config_accepted(const GemmShape& s, DType input, const StreamKConfig& c, Layout a_layout,
                                    Layout b_layout) {
  try {
    check_streamk_config(s, c);
    int64_t bk = c.tile.bk;
    if (c.tensor_cores)
      bk = streamk_mma_problem(s, input, *c.tensor_cores, a_layout, b_layout).config.block_k;
    // The plan's one refusal of a configuration these checks pass: more split-K parts than k-steps.
    return c.decomposition != Decomposition::SplitK || c.split_k <= (s.k + bk - 1) / bk;
  } catch (const Error&) {
    return false;
  }
}

/// Refuses the SIMT main loop for inputs it does not read (streamk_gemm would refuse every
/// candidate, and the workload key's kernel, with advice about StreamKConfig).
inline void require_simt_problem(const char* caller, DType input, Layout a_layout, Layout b_layout) {
  if (input == bf16)
    throw Error(cat(caller,
                    ": the SIMT main loop reads f32 or f16, not bfloat16; tune "
                    "StreamKTuneOptions::main_loop = StreamKMainLoop::TensorCores for it"));
  if (input != f32 && input != f16)
    throw Error(cat(caller, ": the Stream-K GEMM reads f32 or f16 (and bfloat16 on tensor cores), not ",
                    input.str()));
  if (a_layout != Layout::RowMajor || b_layout != Layout::RowMajor)
    throw Error(cat(caller, ": the SIMT main loop reads row-major A and B only; for a column-major ",
                    a_layout != Layout::RowMajor ? "A" : "B",
                    " tune StreamKTuneOptions::main_loop = "
                    "StreamKMainLoop::TensorCores",
                    input == f32 ? ", which reads f32 as tf32" : ""));
}

/// Which main loop a configuration runs.
inline StreamKMainLoop streamk_main_loop_of(const StreamKConfig& c) {
  return c.tensor_cores ? StreamKMainLoop::TensorCores : StreamKMainLoop::Simt;
}

/// A candidate built and predicted with its main loop's `resources`, or the reason it is skipped.
inline StreamKTuneCandidate predict_streamk_candidate(const GemmShape& s, DType input, Layout a_layout,
                                                      Layout b_layout, const StreamKConfig& config,
                                                      const GpuPerfSpec& spec,
                                                      const GpuGemmResources& resources) {
  StreamKTuneCandidate c;
  c.config = config;
  StreamKGemm g;
  try {
    g = streamk_gemm(s.m, s.n, s.k, input, config, a_layout, b_layout);
  } catch (const Error& e) {
    c.skipped = "refused";
    c.detail = e.what();
    return c;
  }
  c.config = g.config;
  try {
    c.prediction = predict_streamk_gemm(g, spec, resources);
  } catch (const Error& e) {
    // A valid kernel's one refusal: a block, or the grid, does not fit on the SMs.
    c.skipped = "does not fit";
    c.detail = e.what();
  }
  return c;
}

/// `values` without repeats; refuses a value below `low`.
inline std::vector<int> streamk_candidate_values(const char* field, const std::vector<int>& values, int low) {
  std::vector<int> out;
  for (int v : values) {
    if (v < low)
      throw Error(cat("StreamKTuneOptions::", field, " holds ", v, "; give values of ", low, " or more"));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

/// The default's configuration for the modelled GPU: the hybrid on the main loop's default tile
/// (gpu_gemm's, or StreamKConfig's SIMT one), with the grid left to the kernel's residency.
inline StreamKConfig streamk_default_config(const GpuPerfSpec& spec, StreamKMainLoop main_loop) {
  StreamKConfig c;
  if (main_loop == StreamKMainLoop::TensorCores) c.tensor_cores = GpuGemmConfig{};
  c.sms = spec.device.sms;
  c.arch = spec.arch;
  return c;
}

}  // namespace detail

LOOM_DECL std::string streamk_gemm_workload_key(int64_t m, int64_t n, int64_t k, DType input,
                                                const std::string& arch, Layout a_layout, Layout b_layout,
                                                StreamKMainLoop main_loop) {
  StreamKConfig c = detail::streamk_default_config(GpuPerfSpec::for_arch(arch), main_loop);
  c.decomposition = Decomposition::DataParallel;
  c.blocks_per_sm = 1;
  return detail::memoized_key(
      cat("streamk_gemm ", m, "x", n, "x", k, " ", input.str(), " ", arch, " ", static_cast<int>(a_layout),
          static_cast<int>(b_layout), " ", static_cast<int>(main_loop)),
      [&] { return tune::lowered_func_key(streamk_gemm(m, n, k, input, c, a_layout, b_layout).func); });
}

LOOM_DECL tune::Assignment streamk_config_knobs(const StreamKConfig& config) {
  tune::Assignment knobs;
  if (config.tensor_cores) {
    knobs = gpu_gemm_config_knobs(*config.tensor_cores);
    knobs["tf32_round"] = config.tensor_cores->tf32_round ? 1 : 0;
  } else {
    knobs = {{"bm", config.tile.bm},
             {"bn", config.tile.bn},
             {"bk", config.tile.bk},
             {"thread_m", config.thread_m},
             {"thread_n", config.thread_n}};
  }
  knobs["decomposition"] = static_cast<int64_t>(config.decomposition);
  knobs["split_k"] = config.split_k;
  knobs["blocks_per_sm"] = config.blocks_per_sm;
  return knobs;
}

LOOM_DECL StreamKTuneResult tune_streamk_gemm(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout, Layout b_layout,
                                              const StreamKTuneOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const GpuPerfSpec spec = GpuPerfSpec::for_arch(arch);
  if (options.decompositions.empty())
    throw Error("StreamKTuneOptions::decompositions is empty; give it at least one decomposition");
  const bool simt = options.main_loop == StreamKMainLoop::Simt;
  if (simt) detail::require_simt_problem("tune_streamk_gemm", input, a_layout, b_layout);
  if (!simt && options.tiles.empty())
    throw Error(
        "StreamKTuneOptions::tiles is empty; give it at least one GpuGemmConfig (GpuGemmConfig{} is "
        "gpu_gemm's default)");
  if (simt && options.simt_tiles.empty())
    throw Error(
        "StreamKTuneOptions::simt_tiles is empty; give it at least one StreamKSimtTile (StreamKSimtTile{} "
        "is the default)");
  const std::vector<int> split_factors = detail::streamk_candidate_values("split_k", options.split_k, 2);
  const std::vector<int> per_sm_given =
      detail::streamk_candidate_values("blocks_per_sm", options.blocks_per_sm, 1);
  if (split_factors.empty() &&
      std::count(options.decompositions.begin(), options.decompositions.end(), Decomposition::SplitK) > 0)
    throw Error(
        "StreamKTuneOptions::split_k is empty but decompositions asks for split-K; give factors of 2 or "
        "more");
  if (options.min_blocks_per_sm < 1)
    throw Error(cat("StreamKTuneOptions::min_blocks_per_sm = ", options.min_blocks_per_sm,
                    " must be at least 1 (1: rank every prediction)"));
  if (options.measure_top < 0)
    throw Error(cat("StreamKTuneOptions::measure_top = ", options.measure_top,
                    " must be 0 or more (0: predictions only, no GPU run)"));
  const GemmShape shape{m, n, k};
  StreamKTuneResult result;
  result.target = gpu_gemm_model_target(arch);
  result.workload = streamk_gemm_workload_key(m, n, k, input, arch, a_layout, b_layout, options.main_loop);
  std::vector<StreamKTuneCandidate> skipped;
  auto add = [&](StreamKTuneCandidate c) {
    if (c.skipped.empty()) {
      ++result.ranked;
      result.candidates.push_back(std::move(c));
      return;
    }
    ++(c.skipped == "refused"      ? result.refused
       : c.skipped == "few blocks" ? result.few_blocks
                                   : result.does_not_fit);
    skipped.push_back(std::move(c));
  };
  // A prediction in the model's least trusted regime is kept but not ranked.
  auto rank_or_keep = [&](StreamKTuneCandidate c) {
    if (c.skipped.empty() && c.prediction.blocks_per_sm < options.min_blocks_per_sm) {
      c.skipped = "few blocks";
      c.detail = cat(c.prediction.blocks_per_sm, " blocks per SM; the model is trusted from ",
                     options.min_blocks_per_sm);
    }
    add(std::move(c));
  };
  // One base configuration per tile of the main loop tuned: the hybrid on that tile, its grid left
  // to the kernel's residency.
  const StreamKConfig default_config = detail::streamk_default_config(spec, options.main_loop);
  std::vector<StreamKConfig> bases;
  if (simt) {
    for (const StreamKSimtTile& t : options.simt_tiles) {
      StreamKConfig base = default_config;
      base.tile = t.tile;
      base.thread_m = t.thread_m;
      base.thread_n = t.thread_n;
      bases.push_back(base);
    }
  } else {
    for (const GpuGemmConfig& tile : options.tiles) {
      StreamKConfig base = default_config;
      base.tensor_cores = tile;
      bases.push_back(base);
    }
  }
  // A tile as resolved by streamk_gemm (block_k 0 is 32 for tf32).
  auto tile_name = [](const StreamKConfig& c) {
    return c.tensor_cores ? c.tensor_cores->str()
                          : cat(c.tile.bm, "x", c.tile.bn, "x", c.tile.bk, ", ", c.thread_m, "x", c.thread_n,
                                " per thread");
  };
  const std::string default_tile =
      simt ? tile_name(default_config)
           : gpu_gemm(m, n, k, input, GpuGemmConfig{}, a_layout, b_layout).config.str();
  bool default_predicted = false;
  std::vector<std::string> tiles_seen;
  for (const StreamKConfig& base : bases) {
    // The tile's kernel with the grid its residency sizes: the candidates' resources and, for the
    // default tile, the default's prediction. A tile that resolves like an earlier one is tried once.
    StreamKGemm probe;
    try {
      probe = streamk_gemm(m, n, k, input, base, a_layout, b_layout);
    } catch (const Error& e) {
      StreamKTuneCandidate c;
      c.config = base;
      c.skipped = "refused";
      c.detail = e.what();
      add(std::move(c));
      continue;
    }
    const std::string resolved = tile_name(probe.config);
    if (std::find(tiles_seen.begin(), tiles_seen.end(), resolved) != tiles_seen.end()) continue;
    tiles_seen.push_back(resolved);
    const GpuGemmResources resources = streamk_main_loop_resources(probe, spec.arch);
    if (!default_predicted && resolved == default_tile) {
      try {
        result.default_prediction = predict_streamk_gemm(probe, spec, resources);
      } catch (const Error&) {
        // Its grid (sized by the GPU present, when one is) does not fit the modelled one: zero.
      }
      default_predicted = true;
    }
    // What an SM of the modelled GPU holds, by the model's occupancy.
    int holds = 0;
    try {
      holds = simt
                  ? predict_streamk_simt_loop(probe, spec, resources).occupancy.blocks_per_sm
                  : predict_gpu_gemm(gpu_gemm(m, n, k, input, *probe.config.tensor_cores, a_layout, b_layout),
                                     spec, resources)
                        .occupancy.blocks_per_sm;
    } catch (const Error& e) {
      StreamKTuneCandidate c;
      c.config = probe.config;
      c.skipped = "does not fit";
      c.detail = e.what();
      add(std::move(c));
      continue;
    }
    std::vector<int> per_sm = per_sm_given;
    if (per_sm.empty())
      for (int b = 1; b <= holds; ++b) per_sm.push_back(b);
    for (int b : per_sm)
      for (Decomposition d : options.decompositions) {
        StreamKConfig config = base;
        config.blocks_per_sm = b;
        config.decomposition = d;
        if (d != Decomposition::SplitK) {
          rank_or_keep(
              detail::predict_streamk_candidate(shape, input, a_layout, b_layout, config, spec, resources));
          continue;
        }
        for (int s : split_factors) {
          config.split_k = s;
          rank_or_keep(
              detail::predict_streamk_candidate(shape, input, a_layout, b_layout, config, spec, resources));
        }
      }
  }
  if (!default_predicted) {
    // gpu_gemm's default tile was not among the candidates: predict it on its own.
    try {
      StreamKGemm d = streamk_gemm(m, n, k, input, default_config, a_layout, b_layout);
      result.default_prediction = predict_streamk_gemm(d, spec, streamk_main_loop_resources(d, spec.arch));
    } catch (const Error&) {
      // Refused, or does not fit: default_prediction stays all zero, as its comment says.
    }
  }
  if (result.candidates.empty())
    throw Error(
        cat("tune_streamk_gemm: none of the ", skipped.size(), " candidate configurations of ", m, "x", n,
            "x", k, " ", input.str(), " can be ranked on ", spec.name, " (", result.refused, " refused, ",
            result.does_not_fit, " do not fit, ", result.few_blocks,
            " have fewer than min_blocks_per_sm = ", options.min_blocks_per_sm,
            " blocks per SM); give StreamKTuneOptions smaller tiles, fewer blocks per SM or a smaller "
            "min_blocks_per_sm",
            skipped.empty() ? "" : cat(". The first: ", skipped.front().detail)));
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [](const StreamKTuneCandidate& a, const StreamKTuneCandidate& b) {
                     return a.prediction.seconds < b.prediction.seconds;
                   });
  const std::string problem =
      cat("lib::streamk_gemm ", m, "x", n, "x", k, " ", input.str(), " A ",
          a_layout == Layout::RowMajor ? "row" : "col", "-major, B ",
          b_layout == Layout::RowMajor ? "row" : "col", "-major, ", simt ? "SIMT" : "tensor cores");
  {
    std::vector<std::pair<tune::Assignment, double>> predictions;
    for (const StreamKTuneCandidate& c : result.candidates)
      predictions.emplace_back(streamk_config_knobs(c.config), c.prediction.seconds);
    detail::append_records(options.database, result.workload,
                           cat(problem, ": predicted by the performance model, not measured"), result.target,
                           predictions);
  }
  result.best = result.candidates.front().config;
  result.best_prediction = result.candidates.front().prediction;
  // The GPU, where one of the architecture is present, times the best predictions and the default,
  // each with its grid on the GPU's own SMs.
  auto on_gpu = [](StreamKConfig c) {
    c.sms = 0;
    return c;
  };
  // Both are built where they are measured (a worker, when this process has not loaded the driver):
  // the GPU's SMs and occupancy size their grids.
  const detail::MeasuredRanking measured = detail::measure_ranked(
      m, n, k, input, a_layout, b_layout, spec.arch, options.measure_top,
      [&] {
        StreamKGemm g;
        try {
          g = streamk_gemm(m, n, k, input, on_gpu(default_config), a_layout, b_layout);
        } catch (const Error& e) {
          throw Error(cat("the default configuration could not be made for this GPU: ", e.what()));
        }
        return std::pair{g.func, streamk_config_knobs(g.config)};
      },
      result.candidates,
      [&](const StreamKTuneCandidate& c) {
        return streamk_gemm(m, n, k, input, on_gpu(c.config), a_layout, b_layout).func;
      });
  // The default as built for the GPU (block_k and blocks_per_sm resolved), its grid on the GPU's SMs.
  StreamKConfig measured_default = default_config;
  if (auto c = detail::streamk_config_from_knobs(measured.default_knobs, spec.arch)) measured_default = *c;
  result.device = measured.device;
  result.default_measured_ms = measured.default_ms;
  result.measured = measured.measured;
  result.measure_failure = measured.failure;
  result.measured_in = measured.measured_in;
  const detail::MeasuredChoice choice =
      detail::choose_measured(measured, measured.default_knobs, result.candidates,
                              [](const StreamKTuneCandidate& c) { return streamk_config_knobs(c.config); });
  if (!choice.times.empty()) {
    detail::append_records(options.database, result.workload, cat(problem, ": measured on ", measured.device),
                           measured_gpu_target(spec.arch, measured.device), choice.times);
    result.best = choice.use_first ? result.candidates.front().config : measured_default;
    result.best_prediction =
        choice.use_first ? result.candidates.front().prediction : result.default_prediction;
  }
  for (StreamKTuneCandidate& c : skipped) result.candidates.push_back(std::move(c));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

namespace detail {

/// tuned_streamk_config's choice, or nullopt where the database records nothing for the problem and
/// LOOM_TUNE=1 does not ask to tune it.
inline std::optional<StreamKConfig> streamk_record(int64_t m, int64_t n, int64_t k, DType input,
                                                   const std::string& arch, Layout a_layout, Layout b_layout,
                                                   const StreamKTuneOptions& options) {
  const std::string target = gpu_gemm_model_target(arch);  // refuses an unknown architecture first
  const GpuRecordLookup lookup(options.database);
  if (!lookup.asked && !lookup.readable) return std::nullopt;
  const std::string key =
      streamk_gemm_workload_key(m, n, k, input, arch, a_layout, b_layout, options.main_loop);
  const std::string model_arch = GpuPerfSpec::for_arch(arch).arch;
  const std::optional<tune::Record> best = lookup.preferred(
      key, model_arch, target,
      [&](const tune::Assignment& knobs) {
        const std::optional<StreamKConfig> c = streamk_config_from_knobs(knobs, arch);
        return c && streamk_main_loop_of(*c) == options.main_loop &&
               streamk_config_accepted(GemmShape{m, n, k}, input, *c, a_layout, b_layout);
      },
      [&] {
        const std::string device = options.measure_top > 0 ? gpu_present_for(model_arch) : "";
        return device.empty() ? std::string() : measured_gpu_target(model_arch, device);
      });
  StreamKConfig chosen;
  if (best)
    chosen = *streamk_config_from_knobs(best->knobs, arch);
  else if (lookup.asked)
    chosen = tune_streamk_gemm(m, n, k, input, arch, a_layout, b_layout, options).best;
  else
    return std::nullopt;
  // The GPU's SMs where one runs it (its own count, which may differ from the model's); without one,
  // the modelled GPU's, so that the kernel built is the one predicted.
  chosen.sms = gpu_identity().empty() ? GpuPerfSpec::for_arch(arch).device.sms : 0;
  chosen.arch = arch;
  return chosen;
}

}  // namespace detail

LOOM_DECL StreamKConfig tuned_streamk_config(int64_t m, int64_t n, int64_t k, DType input,
                                             const std::string& arch, Layout a_layout, Layout b_layout,
                                             const StreamKTuneOptions& options) {
  if (options.main_loop == StreamKMainLoop::Simt)
    detail::require_simt_problem("tuned_streamk_config", input, a_layout, b_layout);
  if (std::optional<StreamKConfig> recorded =
          detail::streamk_record(m, n, k, input, arch, a_layout, b_layout, options))
    return *recorded;
  StreamKConfig fallback;
  if (options.main_loop == StreamKMainLoop::TensorCores) fallback.tensor_cores = GpuGemmConfig{};
  return fallback;
}

LOOM_DECL StreamKConfig recorded_streamk_config(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout,
                                                Layout b_layout) {
  if (input != f16 && input != bf16 && input != f32) return StreamKConfig{};
  // The SIMT loop reads row-major A and B only: f32 in another layout has nothing to look up.
  if (input == f32 && (a_layout != Layout::RowMajor || b_layout != Layout::RowMajor)) return StreamKConfig{};
  const std::optional<std::string> arch = detail::default_lookup_arch();
  if (!arch) return StreamKConfig{};
  // The SIMT loop multiplies f32 exactly; the tensor cores' records would round it to tf32.
  StreamKTuneOptions options;
  if (input == f32) options.main_loop = StreamKMainLoop::Simt;
  return detail::streamk_record(m, n, k, input, *arch, a_layout, b_layout, options).value_or(StreamKConfig{});
}

}  // namespace loom::lib
