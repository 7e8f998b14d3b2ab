// The GPU simulator's entry point: runs a lowered CUDA function on the CPU with exact barrier and
// warp semantics and reports launches, shared-memory bank conflicts, races and uninitialized reads.
#pragma once

#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/sim/interpreter.hpp"

namespace loom {

/// Runs `f` like interpret() (host code as the interpreter does, kernel regions as CUDA would:
/// see InterpretedFunc) and returns the simulation's report. A shared-memory race throws
/// loom::Error unless options.races_are_errors is off; then it is only listed in the report.
///
///   SimReport report = simulate(lower(s, {A, B}), {a, b});
///   std::cout << report.to_string();
///   CHECK(report.buffer("A.shared").load.conflicts() == 0);
inline SimReport simulate(const LoweredFunc& f, const std::vector<KernelArg>& args, SimOptions options = {}) {
  BoundArgs bound = bind_arguments(f, args);  // argument errors come before any compile error
  return InterpretedFunc(f).simulate(bound, options);
}

}  // namespace loom
