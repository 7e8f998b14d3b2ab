// interpret_checked(f, args): the tests' way to run a lowered function on the reference interpreter.
// In test programs linked with the JIT it also runs f through the LLVM JIT on copies of the
// arguments and fails the test if the results (or the argument errors) differ.
#pragma once

#include <loom/lower/lowered_func.hpp>
#include <loom/runtime/buffer.hpp>

#include <vector>

namespace loom::test {

/// Interprets f on `args` (its effects and errors are the interpreter's). When the JIT is linked
/// and f runs on the CPU (no GPU thread bindings), also builds f for Target::cpu(), runs it on
/// copies of the arguments taken before the interpreter ran, and checks every buffer (bit-exact
/// for integers, 1e-5 relative for floats). If the interpreter rejects the arguments, the JIT's
/// Kernel must reject them with the same message. Errors the interpreter finds while running
/// (out-of-bounds accesses, division by zero) are rethrown without running the JIT, which does
/// not check them.
void interpret_checked(const LoweredFunc& f, const std::vector<KernelArg>& args);

/// Whether interpret_checked also runs the JIT in this test program.
bool interpret_checked_runs_jit();

}  // namespace loom::test
