// The definitions of backend/build.hpp: dispatch on the target's kind.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/backend/build.hpp");

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "loom/backend/build.hpp"
#include "loom/backend/cuda/cuda_backend.hpp"
#include "loom/backend/lint.hpp"
#include "loom/runtime/cpu_backend.hpp"
#include "loom/runtime/kernel_state.hpp"

namespace loom {

namespace detail {
/// LOOM_LINT=1: the kernel's lint findings (backend/lint.hpp) go to stderr as it is built.
inline void lint_if_asked(const LoweredFunc& f) {
  const char* env = std::getenv("LOOM_LINT");
  if (!env || !*env || std::string(env) == "0") return;
  for (const LintFinding& finding : lint(f)) std::fprintf(stderr, "loom lint: %s\n", finding.message.c_str());
}
}  // namespace detail

LOOM_DECL Kernel build(const LoweredFunc& f, const Target& target) {
  if (target.kind() != TargetKind::CPU) return runtime::cuda::build_cuda(f, target);
  runtime::CpuBackend& backend = runtime::cpu_backend();
  detail::lint_if_asked(f);
  return runtime::make_kernel(f, target, backend.compile(f, target, PassContext().dump_dir), &backend);
}

LOOM_DECL Kernel build(const Schedule& s, const std::vector<LowerArg>& args, const Target& target,
                       const std::string& name, PassContext ctx) {
  ctx.target = target;  // the Device phase splits host and kernels for a GPU target
  if (target.kind() != TargetKind::CPU)
    return runtime::cuda::build_cuda(detail::lower_for("build", s, args, name, std::move(ctx)), target);
  runtime::CpuBackend& backend = runtime::cpu_backend();
  std::string dump_dir = ctx.dump_dir;
  LoweredFunc f = detail::lower_for("build", s, args, name, std::move(ctx));
  detail::lint_if_asked(f);
  runtime::CpuBackend::Result result = backend.compile(f, target, dump_dir);
  return runtime::make_kernel(std::move(f), target, std::move(result), &backend);
}

}  // namespace loom
