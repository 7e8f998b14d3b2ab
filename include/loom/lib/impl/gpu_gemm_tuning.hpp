// The definitions of lib/gpu_gemm_tuning.hpp: the workload key and target of gpu_gemm's records, the
// exhaustive loop over the candidate configurations that the performance model predicts, and the
// lookup of the best recorded one.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gpu_gemm_tuning.hpp");

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "loom/lib/gemm_device_timer.hpp"
#include "loom/lib/gpu_gemm_tuning.hpp"
#include "loom/lib/gpu_tuning_records.hpp"
#include "loom/tune/tune.hpp"

namespace loom::lib {

namespace detail {

/// The configuration a record's knobs hold; nothing when one of the six is missing or outside
/// 1-1024 (a record of another search space).
inline std::optional<GpuGemmConfig> config_from_knobs(const tune::Assignment& knobs) {
  GpuGemmConfig c;
  for (auto [name, field] :
       {std::pair{"block_m", &c.block_m}, std::pair{"block_n", &c.block_n}, std::pair{"block_k", &c.block_k},
        std::pair{"warp_m", &c.warp_m}, std::pair{"warp_n", &c.warp_n}, std::pair{"stages", &c.stages}}) {
    auto it = knobs.find(name);
    if (it == knobs.end() || it->second <= 0 || it->second > 1024) return std::nullopt;
    *field = static_cast<int>(it->second);
  }
  return c;
}

/// The values of the GpuGemmTuneOptions field `field` without repeats, in their order; 0 stands for
/// `zero_means` where the field allows it (block_k), else it is refused, as are negative values.
inline std::vector<int> candidate_values(const char* field, const std::vector<int>& values,
                                         int zero_means = 0) {
  if (values.empty())
    throw Error(cat("GpuGemmTuneOptions::", field, " is empty; give it at least one value"));
  std::vector<int> out;
  for (int v : values) {
    if (v < 0 || (v == 0 && zero_means == 0))
      throw Error(cat("GpuGemmTuneOptions::", field, " holds ", v, "; give positive values",
                      zero_means ? " (or 0 for the default)" : ""));
    const int resolved = v == 0 ? zero_means : v;
    if (std::find(out.begin(), out.end(), resolved) == out.end()) out.push_back(resolved);
  }
  return out;
}

/// Predicts one candidate, or says why it is skipped.
inline GpuGemmTuneCandidate predict_candidate(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout,
                                              Layout b_layout, const GpuGemmConfig& config,
                                              const GpuPerfSpec& spec, int min_blocks_per_sm) {
  GpuGemmTuneCandidate c;
  c.config = config;
  GpuGemm g;
  try {
    g = gpu_gemm(m, n, k, input, config, a_layout, b_layout);
  } catch (const Error& e) {
    c.skipped = "refused";
    c.detail = e.what();
    return c;
  }
  // The stages hold at least stages x (A's and B's tiles) bytes, padding aside: a candidate whose
  // tiles alone exceed a block's shared memory does not fit, and is not worth NVRTC and ptxas.
  const int64_t tile_bytes =
      int64_t{config.stages} * (config.block_m + config.block_n) * config.block_k * input.bytes();
  if (tile_bytes > spec.device.max_shared_bytes_per_block) {
    c.skipped = "does not fit";
    c.detail = cat("its stages take at least ", tile_bytes, " bytes of shared memory; a block of ", spec.name,
                   " has ", spec.device.max_shared_bytes_per_block);
    return c;
  }
  GpuGemmResources resources;
  try {
    resources = gpu_gemm_resources(g, spec.arch);
  } catch (const Error& e) {
    c.skipped = "refused";
    c.detail = e.what();
    return c;
  }
  if (resources.registers_from == "ptxas" && (resources.spill_bytes > 0 || resources.registers > 255)) {
    c.skipped = "spills";
    c.detail = cat("ptxas: ", resources.registers, " registers, ", resources.spill_bytes,
                   " bytes of spill stores and loads");
    return c;
  }
  try {
    c.prediction = predict_gpu_gemm(g, spec, resources);
  } catch (const Error& e) {
    // The one refusal of a valid GpuPerfSpec: no block fits on an SM (threads, registers or
    // shared memory).
    c.skipped = "does not fit";
    c.detail = e.what();
    return c;
  }
  if (c.prediction.occupancy.blocks_per_sm < min_blocks_per_sm) {
    c.skipped = "few blocks";
    c.detail = cat(c.prediction.occupancy.str(), "; the model is trusted from ", min_blocks_per_sm);
  }
  return c;
}

}  // namespace detail

LOOM_DECL std::string gpu_gemm_workload_key(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout,
                                            Layout b_layout) {
  return detail::memoized_key(
      cat("gpu_gemm ", m, "x", n, "x", k, " ", input.str(), " ", static_cast<int>(a_layout),
          static_cast<int>(b_layout)),
      [&] {
        return tune::lowered_func_key(gpu_gemm(m, n, k, input, GpuGemmConfig{}, a_layout, b_layout).func);
      });
}

LOOM_DECL std::string gpu_gemm_model_target(const std::string& arch) {
  const GpuPerfSpec spec = GpuPerfSpec::for_arch(arch);
  return cat("cuda -arch=", spec.arch, " model:", spec.name);
}

LOOM_DECL std::string measured_gpu_target(const std::string& arch, const std::string& device) {
  return cat("cuda -arch=", arch, " device:", device);
}

LOOM_DECL tune::Assignment gpu_gemm_config_knobs(const GpuGemmConfig& config) {
  return {{"block_m", config.block_m}, {"block_n", config.block_n}, {"block_k", config.block_k},
          {"warp_m", config.warp_m},   {"warp_n", config.warp_n},   {"stages", config.stages}};
}

LOOM_DECL GpuGemmTuneResult tune_gpu_gemm(int64_t m, int64_t n, int64_t k, DType input,
                                          const std::string& arch, Layout a_layout, Layout b_layout,
                                          const GpuGemmTuneOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const GpuPerfSpec spec = GpuPerfSpec::for_arch(arch);
  if (options.min_blocks_per_sm < 1)
    throw Error(cat("GpuGemmTuneOptions::min_blocks_per_sm = ", options.min_blocks_per_sm,
                    " must be at least 1 (1: rank every prediction)"));
  if (options.measure_top < 0)
    throw Error(cat("GpuGemmTuneOptions::measure_top = ", options.measure_top,
                    " must be 0 or more (0: predictions only, no GPU run)"));
  GpuGemmTuneResult result;
  result.target = gpu_gemm_model_target(arch);
  // The default configuration: the workload's key, the block_k that 0 stands for, and the
  // prediction the tuned one is compared with.
  const GpuGemm default_gemm = gpu_gemm(m, n, k, input, GpuGemmConfig{}, a_layout, b_layout);
  result.workload = tune::lowered_func_key(default_gemm.func);
  const std::vector<int> block_ms = detail::candidate_values("block_m", options.block_m),
                         block_ns = detail::candidate_values("block_n", options.block_n),
                         block_ks = detail::candidate_values("block_k", options.block_k,
                                                             default_gemm.config.block_k),
                         warp_ms = detail::candidate_values("warp_m", options.warp_m),
                         warp_ns = detail::candidate_values("warp_n", options.warp_n),
                         stage_counts = detail::candidate_values("stages", options.stages);
  result.default_prediction =
      detail::predict_candidate(m, n, k, input, a_layout, b_layout, default_gemm.config, spec, 1).prediction;
  std::vector<GpuGemmTuneCandidate> skipped;
  for (int block_m : block_ms)
    for (int block_n : block_ns)
      for (int block_k : block_ks)
        for (int warp_m : warp_ms)
          for (int warp_n : warp_ns)
            for (int stages : stage_counts) {
              const GpuGemmConfig config{block_m, block_n, block_k, warp_m, warp_n, stages};
              GpuGemmTuneCandidate c = detail::predict_candidate(m, n, k, input, a_layout, b_layout, config,
                                                                 spec, options.min_blocks_per_sm);
              if (c.skipped.empty()) {
                ++result.ranked;
                result.candidates.push_back(std::move(c));
                continue;
              }
              if (c.skipped == "refused")
                ++result.refused;
              else if (c.skipped == "spills")
                ++result.spills;
              else if (c.skipped == "does not fit")
                ++result.does_not_fit;
              else
                ++result.few_blocks;
              skipped.push_back(std::move(c));
            }
  result.invalid = result.refused + result.does_not_fit + result.spills;
  if (result.candidates.empty())
    throw Error(cat("tune_gpu_gemm: none of the ", skipped.size(), " candidate configurations of ",
                    default_gemm.describe(), " can be ranked on ", spec.name, " (", result.refused,
                    " refused, ", result.does_not_fit, " do not fit, ", result.spills, " spill, ",
                    result.few_blocks, " have fewer than min_blocks_per_sm = ", options.min_blocks_per_sm,
                    " blocks per SM); give GpuGemmTuneOptions smaller tiles, fewer stages or a smaller "
                    "min_blocks_per_sm"));
  // Fastest first; equal predictions keep the order they were tried in.
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [](const GpuGemmTuneCandidate& a, const GpuGemmTuneCandidate& b) {
                     return a.prediction.seconds < b.prediction.seconds;
                   });
  const std::string problem = cat("lib::gpu_gemm ", m, "x", n, "x", k, " ", input.str(), " A ",
                                  a_layout == Layout::RowMajor ? "row" : "col", "-major, B ",
                                  b_layout == Layout::RowMajor ? "row" : "col", "-major");
  {
    std::vector<std::pair<tune::Assignment, double>> predictions;
    for (const GpuGemmTuneCandidate& c : result.candidates)
      predictions.emplace_back(gpu_gemm_config_knobs(c.config), c.prediction.seconds);
    detail::append_records(options.database, result.workload,
                           cat(problem, ": predicted by the performance model, not measured (registers from ",
                               result.candidates.front().prediction.resources.registers_from, ")"),
                           result.target, predictions);
  }
  result.best = result.candidates.front().config;
  result.best_prediction = result.candidates.front().prediction;
  // The GPU, where one of the architecture is present, times the best predictions and the default.
  const detail::MeasuredRanking measured = detail::measure_ranked(
      m, n, k, input, a_layout, b_layout, spec.arch, options.measure_top,
      [&] {
        return std::pair{default_gemm.func, gpu_gemm_config_knobs(default_gemm.config)};
      },
      result.candidates,
      [&](const GpuGemmTuneCandidate& c) {
        return gpu_gemm(m, n, k, input, c.config, a_layout, b_layout).func;
      });
  result.device = measured.device;
  result.default_measured_ms = measured.default_ms;
  result.measured = measured.measured;
  result.measure_failure = measured.failure;
  result.measured_in = measured.measured_in;
  const detail::MeasuredChoice choice =
      detail::choose_measured(measured, measured.default_knobs, result.candidates,
                              [](const GpuGemmTuneCandidate& c) { return gpu_gemm_config_knobs(c.config); });
  if (!choice.times.empty()) {
    detail::append_records(options.database, result.workload, cat(problem, ": measured on ", measured.device),
                           measured_gpu_target(spec.arch, measured.device), choice.times);
    // A candidate that failed is never chosen: the default stands where none ran faster.
    result.best = choice.use_first ? result.candidates.front().config : default_gemm.config;
    result.best_prediction =
        choice.use_first ? result.candidates.front().prediction : result.default_prediction;
  }
  for (GpuGemmTuneCandidate& c : skipped) result.candidates.push_back(std::move(c));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

LOOM_DECL GpuGemmConfig tuned_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout, Layout b_layout,
                                              const GpuGemmTuneOptions& options) {
  const std::string target = gpu_gemm_model_target(arch);  // refuses an unknown architecture first
  const detail::GpuRecordLookup lookup(options.database);
  // Most programs have no database: do not lower anything to look one up.
  if (!lookup.asked && !lookup.readable) return GpuGemmConfig{};
  const std::string key = gpu_gemm_workload_key(m, n, k, input, a_layout, b_layout);
  auto usable = [](const tune::Assignment& knobs) { return detail::config_from_knobs(knobs).has_value(); };
  const std::string model_arch = GpuPerfSpec::for_arch(arch).arch;
  const std::optional<tune::Record> best = lookup.preferred(key, model_arch, target, usable, [&] {
    const std::string device = options.measure_top > 0 ? detail::gpu_present_for(model_arch) : "";
    return device.empty() ? std::string() : measured_gpu_target(model_arch, device);
  });
  if (best) return *detail::config_from_knobs(best->knobs);
  if (lookup.asked) return tune_gpu_gemm(m, n, k, input, arch, a_layout, b_layout, options).best;
  return GpuGemmConfig{};
}

LOOM_DECL GpuGemmConfig tuned_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout, Layout b_layout,
                                              const std::string& database) {
  GpuGemmTuneOptions options;
  options.database = database;
  return tuned_gpu_gemm_config(m, n, k, input, arch, a_layout, b_layout, options);
}

LOOM_DECL GpuGemmConfig recorded_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                                 Layout a_layout, Layout b_layout) {
  const std::optional<std::string> arch = detail::default_lookup_arch();
  if (!arch) return GpuGemmConfig{};
  return tuned_gpu_gemm_config(m, n, k, input, *arch, a_layout, b_layout, std::string());
}

}  // namespace loom::lib
