// interpret_checked for builds without LLVM 19 (no loom::jit): the interpreter alone.
// The JIT comparison is then only skipped, never faked: interpret_checked_runs_jit() says so.
#include "interpret_checked.hpp"

#include <loom/sim/interpreter.hpp>

namespace loom::test {

bool interpret_checked_runs_jit() { return false; }

void interpret_checked(const LoweredFunc& f, const std::vector<KernelArg>& args) { interpret(f, args); }

}  // namespace loom::test
