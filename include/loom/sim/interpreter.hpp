// The reference interpreter's entry points: runs any lowered function on the CPU, one statement at
// a time, with every memory access checked; host code on the interpreter (interp/), kernel regions
// on the GPU simulator. It is the oracle that every schedule and backend is tested against.
#pragma once

#include <memory>
#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/support/config.hpp"

namespace loom {

namespace interp {
struct CompiledBody;  // interp/compiler.hpp
}  // namespace interp
namespace sim {
class Session;  // sim/session.hpp
}  // namespace sim

/// A lowered function compiled once for the interpreter (see interp/compiler.hpp) and runnable
/// many times. Runs are sequential: parallel, vectorized and vthread loops execute their
/// iterations in order. A run owns its frame, so one InterpretedFunc may run on several threads.
///
/// Semantics worth knowing (the rest is C's): integers wrap at their width; division by zero
/// throws loom::Error; float32/float16/bfloat16 round after every operation; float->int casts
/// truncate and saturate where C is undefined (NaN -> 0); masked vector lanes load 0.
///
/// Kernel regions (an outermost loop bound to blockIdx/threadIdx and everything inside it) run
/// with CUDA's semantics on the GPU simulator: blocks dispatched in index order onto the SMs of a
/// modelled GPU (a block waiting on a grid flag suspends while others run), warps of 32 threads in
/// lock step, exact barriers, shared memory per block, race detection, and a clock per warp that
/// times the launch in a cost model (see sim/simulator.hpp, SimLaunch).
class InterpretedFunc {
 public:
  /// Prepares `f` to run in the interpreter (and, for kernel regions, the GPU simulator).
  LOOM_DECL explicit InterpretedFunc(LoweredFunc f);

  /// The lowered function this runs.
  const LoweredFunc& func() const { return func_; }

  /// Checks the arguments (throwing ArgumentError before touching memory), then runs.
  void operator()(const std::vector<KernelArg>& args) const { run(bind_arguments(func_, args)); }

  /// Runs with arguments that bind_arguments already checked. Kernel regions run on the GPU
  /// simulator with the default SimOptions (a shared-memory race is an error).
  LOOM_DECL void run(const BoundArgs& args) const;

  /// Runs kernel regions with `options` and returns what the simulation saw.
  LOOM_DECL SimReport simulate(const BoundArgs& args, SimOptions options = {}) const;

  /// Runs with arguments that bind_arguments already checked; kernel regions report into
  /// `session`, which must be set when the program has any.
  LOOM_DECL void run(const BoundArgs& args, sim::Session* session) const;

 private:
  LoweredFunc func_;
  std::shared_ptr<const interp::CompiledBody> program_;
};

/// Checks the arguments, compiles f and runs it once.
LOOM_DECL void interpret(const LoweredFunc& f, const std::vector<KernelArg>& args);

/// Compiles f and runs it once with already-checked arguments.
LOOM_DECL void interpret(const LoweredFunc& f, const BoundArgs& args);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/sim/impl/interpreter.hpp"
#endif
