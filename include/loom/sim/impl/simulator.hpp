// The definition of simulate() (sim/simulator.hpp).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/sim/simulator.hpp");

#include <vector>

#include "loom/runtime/arg_check.hpp"
#include "loom/sim/interpreter.hpp"
#include "loom/sim/simulator.hpp"

namespace loom {

LOOM_DECL SimReport simulate(const LoweredFunc& f, const std::vector<KernelArg>& args, SimOptions options) {
  BoundArgs bound = bind_arguments(f, args);  // argument errors come before any compile error
  return InterpretedFunc(f).simulate(bound, options);
}

}  // namespace loom
