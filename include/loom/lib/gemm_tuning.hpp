// lib::gemm with loom::tune: the blocking of the CPU GEMM as knobs (kc, mc, nc, packing of A, each
// with the cache-size heuristic's choice first), a search over them for one problem, and the
// lookup that lib::gemm(problem) makes: when the tuning database holds a measurement for the
// problem on this CPU, gemm(problem) uses the fastest configuration instead of the heuristic's;
// with LOOM_TUNE=1 and no measurement yet, it tunes the problem first (seconds to a minute).
#pragma once

#include "loom/lib/gemm.hpp"
#include "loom/support/config.hpp"
#include "loom/tune/tune.hpp"

namespace loom::lib {

/// The configuration the cache-size model picks for `problem` on this machine, whatever the
/// tuning database holds (what gemm(problem) uses when it holds nothing for the problem).
LOOM_DECL GemmConfig model_gemm_config(const GemmProblem& problem);

/// The GEMM configuration a Config's knobs select for `problem`, around `base` (the default of
/// each knob): the cache blocks and packing of A; the decomposition for float32/float64 (Stream-K
/// computes no other types); for bfloat16 and 8-bit inputs, the micro-kernel's instruction where
/// this CPU has a dot instruction for them (AMX tiles or the vector model's configuration, where
/// `base` is an AMX one), and cache blocks of K up to the whole of it.
LOOM_DECL GemmConfig gemm_config_knobs(tune::Config& cfg, const GemmConfig& base, const GemmProblem& problem);

/// Tunes the blocking of `problem` (the heuristic's configuration is the default candidate) and
/// records the measurements in the tuning database, which later gemm(problem) calls read. Stream-K
/// over blocks with fewer MAC-loop iterations than threads is counted invalid, not measured. They
/// are filed under the workload key of the model configuration's gemm (tune::workload_key of
/// gemm(problem, model_gemm_config(problem)).args()): a tuned configuration may add or drop
/// packing stages, which changes its own graph.
LOOM_DECL tune::Result tune_gemm(const GemmProblem& problem, tune::Options options = tune::Options());

/// The configuration recorded as fastest for `problem` on this CPU (the database of `options`),
/// or `base` when there is none; with LOOM_TUNE=1 and none recorded, tunes first.
LOOM_DECL GemmConfig tuned_gemm_config(const GemmProblem& problem, const GemmConfig& base,
                                       const std::string& database = "");

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gemm_tuning.hpp"
#endif
