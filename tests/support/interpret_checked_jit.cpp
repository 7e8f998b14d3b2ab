// interpret_checked for test programs linked with the LLVM JIT: the interpreter's result is the
// oracle and the JIT must match it, so every interpreter-based test is also a JIT test.
#include "interpret_checked.hpp"

#include <loom/ir/gpu_vocabulary.hpp>
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "jit_harness.hpp"

namespace loom::test {

namespace {

/// GPU kernels (threadIdx/blockIdx loops) run on the interpreter's simulator, not on the CPU JIT.
bool binds_gpu_threads(const Stmt& body) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;

   protected:
    void visit(const ForNode* op) override {
      if (op->kind == ForKind::ThreadBinding && is_gpu_thread_tag(op->thread_tag)) found = true;
      IRVisitor::visit(op);
    }
  } finder;
  finder.visit_stmt(body);
  return finder.found;
}

}  // namespace

bool interpret_checked_runs_jit() { return true; }

void interpret_checked(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  if (binds_gpu_threads(f.body)) {
    interpret(f, args);
    return;
  }
  OwnedArgs jit = copy_arguments(args);  // before the interpreter writes its outputs
  try {
    interpret(f, args);
  } catch (const ArgumentError& e) {
    const std::string interp_error = e.what();
    std::optional<std::string> jit_error;
    try {
      build(f, Target::cpu())(jit.args);
    } catch (const Error& j) {
      jit_error = j.what();
    }
    CHECK_MESSAGE(jit_error == interp_error,
                  "kernel '" << f.name << "': the interpreter rejected its arguments: " << interp_error
                             << "\nthe JIT's Kernel: " << jit_error.value_or("ran"));
    throw;
  }
  INFO("kernel '" << f.name << "' through the JIT:\n" << f);
  try {
    build(f, Target::cpu())(jit.args);
  } catch (const Error& e) {
    FAIL_CHECK("the interpreter ran it, the JIT failed: " << e.what());
    return;
  }
  check_buffers_match(f, args, jit.args, JitCheckOptions());
}

}  // namespace loom::test
