// The GPU simulator's entry point: runs a lowered CUDA function on the CPU with exact barrier and
// warp semantics and reports launches (with their modelled cycles), shared-memory bank conflicts,
// races and uninitialized reads.
#pragma once

#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// Runs `f` like interpret() (host code as the interpreter does, kernel regions as CUDA would:
/// see InterpretedFunc) and returns the simulation's report. A shared-memory race throws
/// loom::Error unless options.races_are_errors is off; then it is only listed in the report.
///
///   SimReport report = simulate(lower(s, {A, B}), {a, b});
///   std::cout << report.to_string();
///   CHECK(report.buffer("A.shared").load.conflicts() == 0);
LOOM_DECL SimReport simulate(const LoweredFunc& f, const std::vector<KernelArg>& args,
                             SimOptions options = {});

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/sim/impl/simulator.hpp"
#endif
