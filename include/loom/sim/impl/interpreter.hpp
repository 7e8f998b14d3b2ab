// The definitions of sim/interpreter.hpp: the interpreter's Compiler with the simulator's
// KernelRegionCompiler, and a run's frame filled from the checked arguments.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/sim/interpreter.hpp");

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "loom/interp/compiler.hpp"
#include "loom/sim/interpreter.hpp"
#include "loom/sim/kernel_compiler.hpp"
#include "loom/sim/session.hpp"

namespace loom {

namespace detail {

template <typename Map>
const typename Map::mapped_type& bound_value(const Map& map, const VarNode* var, const LoweredFunc& f) {
  auto it = map.find(var);
  internal_check(it != map.end(), "BoundArgs for kernel '", f.name, "' lack a value for '", var->name,
                 "': bind them with bind_arguments on this function");
  return it->second;
}

}  // namespace detail

LOOM_DECL InterpretedFunc::InterpretedFunc(LoweredFunc f) : func_(std::move(f)) {
  sim::RegionCompiler kernels;
  program_ = std::make_shared<const interp::CompiledBody>(interp::Compiler(func_, &kernels).compile());
}

LOOM_DECL void InterpretedFunc::run(const BoundArgs& args) const {
  if (!program_->has_kernels) return run(args, nullptr);
  sim::Session session;
  run(args, &session);
}

LOOM_DECL SimReport InterpretedFunc::simulate(const BoundArgs& args, SimOptions options) const {
  sim::Session session(options);
  run(args, &session);
  return session.take_report();
}

LOOM_DECL void InterpretedFunc::run(const BoundArgs& args, sim::Session* session) const {
  const interp::CompiledBody& program = *program_;
  internal_check(session || !program.has_kernels, "kernel '", func_.name,
                 "' has kernel regions: run it with a simulation session");
  std::vector<int64_t> ints(static_cast<size_t>(program.num_ints));
  std::vector<double> floats(static_cast<size_t>(program.num_floats));
  std::vector<interp::BufferSlot> buffers(static_cast<size_t>(program.num_buffers));
  for (const auto& [var, slot] : program.int_params)
    ints[static_cast<size_t>(slot)] = detail::bound_value(args.scalars, var, func_);
  for (const auto& [var, slot] : program.float_params) {
    floats[static_cast<size_t>(slot)] = arith::round_double_to(
        detail::bound_value(args.float_scalars, var, func_), arith::float_format_of(var->dtype));
  }
  for (const auto& [var, slot] : program.buffer_params) {
    const BoundBuffer& b = detail::bound_value(args.buffers, var, func_);
    const int64_t size = b.dtype.bytes();
    buffers[static_cast<size_t>(slot)] =
        interp::BufferSlot{static_cast<std::byte*>(b.data), b.begin * size, b.end * size};
  }
  interp::Frame frame{ints.data(), floats.data(), buffers.data()};
  frame.session = session;
  program.body->run(frame);
}

LOOM_DECL void interpret(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  BoundArgs bound = bind_arguments(f, args);  // argument errors come before any compile error
  InterpretedFunc(f).run(bound);
}

LOOM_DECL void interpret(const LoweredFunc& f, const BoundArgs& args) { InterpretedFunc(f).run(args); }

}  // namespace loom
