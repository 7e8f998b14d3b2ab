// build(): lowers a schedule (or takes a lowered function) and compiles it for a target into a
// Kernel. LLVM-free: it dispatches to the CPU backend that <loom/loom.hpp> registers, or to the
// CUDA backend (NVRTC and the driver are loaded at run time; cuda_sim needs neither).
#pragma once

#include <string>
#include <vector>

#include "loom/backend/cuda/cuda_backend.hpp"
#include "loom/lower/lower.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom {

namespace detail {
inline void require_cpu_target(const Target& target, const std::string& name) {
  if (target.kind() != TargetKind::CPU)
    throw Error(cat("build '", name, "': this build() compiles for the CPU (Target::cpu()), not for ",
                    target_kind_name(target.kind()), "; use the backend of that target"));
}
}  // namespace detail

/// Compiles a lowered function (GPU targets: backend/cuda/cuda_backend.hpp). Thread-safe; the machine
/// code is cached in memory (by structural hash of the function and the target) and on disk
/// (LOOM_CACHE_DIR, default ~/.cache/loom).
/// LOOM_DUMP_IR=dir also writes the LLVM IR to dir/<name>/.
inline Kernel build(const LoweredFunc& f, const Target& target) {
  if (target.kind() != TargetKind::CPU) return runtime::cuda::build_cuda(f, target);
  detail::require_cpu_target(target, f.name);
  runtime::CpuBackend& backend = runtime::cpu_backend();
  return detail::make_kernel(f, target, backend.compile(f, target, PassContext().dump_dir), &backend);
}

/// Lowers schedule `s` with `args` (as lower() does) and compiles the result.
inline Kernel build(const Schedule& s, const std::vector<LowerArg>& args, const Target& target,
                    const std::string& name = "main", PassContext ctx = PassContext()) {
  if (target.kind() != TargetKind::CPU)
    return runtime::cuda::build_cuda(lower(s, args, name, std::move(ctx)), target);
  detail::require_cpu_target(target, name);
  runtime::CpuBackend& backend = runtime::cpu_backend();
  std::string dump_dir = ctx.dump_dir;
  LoweredFunc f = lower(s, args, name, std::move(ctx));
  runtime::CpuBackend::Result result = backend.compile(f, target, dump_dir);
  return detail::make_kernel(std::move(f), target, std::move(result), &backend);
}

}  // namespace loom
