// build(): lowers a schedule (or takes a lowered function) and compiles it for a target into a
// Kernel: the CPU through the LLVM backend that loom::jit (or, header-only, <loom/loom.hpp>)
// provides, GPU targets through NVRTC and the driver (loaded at run time) or the simulator.
#pragma once

#include <string>
#include <vector>

#include "loom/lower/lower.hpp"
#include "loom/runtime/kernel.hpp"
#include "loom/support/config.hpp"
#include "loom/support/target.hpp"

namespace loom {

/// Compiles a lowered function. Thread-safe; the machine code is cached in memory (by structural
/// hash of the function and the target) and on disk (LOOM_CACHE_DIR, default ~/.cache/loom).
/// LOOM_DUMP_IR=dir also writes the LLVM IR to `dir/<name>/`.
LOOM_DECL Kernel build(const LoweredFunc& f, const Target& target);

/// Lowers schedule `s` with `args` (as lower() does) and compiles the result.
LOOM_DECL Kernel build(const Schedule& s, const std::vector<LowerArg>& args, const Target& target,
                       const std::string& name = "main", PassContext ctx = PassContext());

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/backend/impl/build.hpp"
#endif
