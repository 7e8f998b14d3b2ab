// The reference interpreter's entry points: runs any lowered function on the CPU, one statement at
// a time, with every memory access checked; host code on the interpreter (interp/), kernel regions
// on the GPU simulator. It is the oracle that every schedule and backend is tested against.
#pragma once

#include <vector>

#include "loom/interp/compiler.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/sim/kernel_compiler.hpp"
#include "loom/sim/session.hpp"

namespace loom {

/// A lowered function compiled once for the interpreter (see interp/compiler.hpp) and runnable
/// many times. Runs are sequential: parallel, vectorized and vthread loops execute their
/// iterations in order. A run owns its frame, so one InterpretedFunc may run on several threads.
///
/// Semantics worth knowing (the rest is C's): integers wrap at their width; division by zero
/// throws loom::Error; float32/float16/bfloat16 round after every operation; float->int casts
/// truncate and saturate where C is undefined (NaN -> 0); masked vector lanes load 0.
///
/// Kernel regions (an outermost loop bound to blockIdx/threadIdx and everything inside it) run
/// with CUDA's semantics on the GPU simulator: blocks one after another, warps of 32 threads in
/// lock step, exact barriers, shared memory per block, race detection (see sim/simulator.hpp).
class InterpretedFunc {
 public:
  explicit InterpretedFunc(LoweredFunc f) : func_(std::move(f)), program_(compile(func_)) {}

  const LoweredFunc& func() const { return func_; }

  /// Checks the arguments (throwing ArgumentError before touching memory), then runs.
  void operator()(const std::vector<KernelArg>& args) const { run(bind_arguments(func_, args)); }

  /// Runs with arguments that bind_arguments already checked. Kernel regions run on the GPU
  /// simulator with the default SimOptions (a shared-memory race is an error).
  void run(const BoundArgs& args) const {
    if (!program_.has_kernels) return run(args, nullptr);
    sim::Session session;
    run(args, &session);
  }

  /// Runs kernel regions with `options` and returns what the simulation saw.
  SimReport simulate(const BoundArgs& args, SimOptions options = {}) const {
    sim::Session session(options);
    run(args, &session);
    return session.take_report();
  }

  /// Runs with arguments that bind_arguments already checked; kernel regions report into
  /// `session`, which must be set when the program has any.
  void run(const BoundArgs& args, sim::Session* session) const {
    internal_check(session || !program_.has_kernels, "kernel '", func_.name,
                   "' has kernel regions: run it with a simulation session");
    std::vector<int64_t> ints(static_cast<size_t>(program_.num_ints));
    std::vector<double> floats(static_cast<size_t>(program_.num_floats));
    std::vector<interp::BufferSlot> buffers(static_cast<size_t>(program_.num_buffers));
    for (const auto& [var, slot] : program_.int_params)
      ints[static_cast<size_t>(slot)] = value_of(args.scalars, var);
    for (const auto& [var, slot] : program_.float_params) {
      floats[static_cast<size_t>(slot)] =
          interp::round_double_to(value_of(args.float_scalars, var), interp::float_format_of(var->dtype));
    }
    for (const auto& [var, slot] : program_.buffer_params) {
      const BoundBuffer& b = value_of(args.buffers, var);
      const int64_t size = b.dtype.bytes();
      buffers[static_cast<size_t>(slot)] =
          interp::BufferSlot{static_cast<std::byte*>(b.data), b.begin * size, b.end * size};
    }
    interp::Frame frame{ints.data(), floats.data(), buffers.data()};
    frame.session = session;
    program_.body->run(frame);
  }

 private:
  static interp::CompiledBody compile(const LoweredFunc& f) {
    sim::RegionCompiler kernels;
    return interp::Compiler(f, &kernels).compile();
  }

  template <typename Map>
  const typename Map::mapped_type& value_of(const Map& map, const VarNode* var) const {
    auto it = map.find(var);
    internal_check(it != map.end(), "BoundArgs for kernel '", func_.name, "' lack a value for '", var->name,
                   "': bind them with bind_arguments on this function");
    return it->second;
  }

  LoweredFunc func_;
  interp::CompiledBody program_;
};

/// Checks the arguments, compiles f and runs it once.
inline void interpret(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  BoundArgs bound = bind_arguments(f, args);  // argument errors come before any compile error
  InterpretedFunc(f).run(bound);
}

/// Compiles f and runs it once with already-checked arguments.
inline void interpret(const LoweredFunc& f, const BoundArgs& args) { InterpretedFunc(f).run(args); }

}  // namespace loom
