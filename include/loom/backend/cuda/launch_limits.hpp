// CUDA's launch limits per architecture and the build-time check of a module against them:
// threads per block, block and grid dimensions, static and dynamic shared memory per block.
#pragma once

#include <cstdint>
#include <string>

#include "loom/codegen/cuda/codegen_cuda.hpp"

namespace loom::cuda {

struct ArchLimits {
  std::string arch = "sm_80";
  int64_t max_threads_per_block = 1024;
  int64_t max_block[3] = {1024, 1024, 64};
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  int64_t max_static_shared = 48 * 1024;
  /// The most shared memory one block may have with the dynamic-shared opt-in.
  int64_t max_dynamic_shared = 48 * 1024;
};

/// sm_XY -> its compute capability times ten (sm_80 -> 80), or -1.
inline int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  int v = 0;
  for (size_t i = 3; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9') break;  // sm_90a
    v = v * 10 + (arch[i] - '0');
  }
  return v > 0 ? v : -1;
}

/// The limits of an architecture, from the CUDA C Programming Guide's table of compute
/// capabilities (maximum shared memory per block with the opt-in).
inline ArchLimits arch_limits(const std::string& arch) {
  ArchLimits l;
  l.arch = arch;
  const int n = arch_number(arch);
  if (n < 0)
    throw Error(cat("unknown CUDA architecture '", arch, "': name one as sm_<major><minor>, e.g. sm_80"));
  if (n >= 120) {  // the GeForce/workstation Blackwell parts (sm_120, sm_121)
    l.max_dynamic_shared = 99 * 1024;
  } else if (n >= 90) {  // Hopper, data-center Blackwell (sm_100, sm_103)
    l.max_dynamic_shared = 227 * 1024;
  } else if (n == 80 || n == 87) {
    l.max_dynamic_shared = 163 * 1024;
  } else if (n >= 86) {
    l.max_dynamic_shared = 99 * 1024;
  } else if (n >= 75) {
    l.max_dynamic_shared = 64 * 1024;
  } else if (n >= 70) {
    l.max_dynamic_shared = 96 * 1024;
  }
  return l;
}

/// The cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) value a launch needs, or -1 for none: a
/// block may have 48 KB of shared memory, static and dynamic together, unless its kernel opts in to
/// more by declaring the dynamic bytes it will ask for (the default allows 48 KB less the static).
inline int64_t dynamic_shared_optin(int64_t static_bytes, int64_t dynamic_bytes) {
  return static_bytes + dynamic_bytes > 48 * 1024 ? dynamic_bytes : -1;
}

namespace detail {

/// A size for a message: the number when it is one, else the expression.
inline std::string show(const Expr& e) {
  if (const int64_t* c = as_const_int(e)) return cat(*c);
  return to_string(e);
}

/// "loop 'i.inner' (stage 'C')": the loop and the buffer its body first stores to.
inline std::string describe_loop(const ForNode* loop) {
  std::string stage;
  struct Finder : IRVisitor {
    std::string& name;
    explicit Finder(std::string& n) : name(n) {}
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      if (name.empty()) name = op->buffer.name();
    }
  } finder(stage);
  finder.visit_stmt(loop->body);
  // Lowering names a bound loop after its tag ("threadIdx.x"), which the message says already.
  const bool named_after_tag = loop->loop_var.name().rfind(loop->thread_tag, 0) == 0;
  if (named_after_tag) return stage.empty() ? std::string() : cat("stage '", stage, "'");
  return stage.empty() ? cat("loop '", loop->loop_var.name(), "'")
                       : cat("loop '", loop->loop_var.name(), "' (stage '", stage, "')");
}

inline std::string describe_dim(const KernelCode& k, int d) {
  const auto& loops = k.kernel.loops[static_cast<size_t>(d)];
  std::string text = cat(launch_index_name(d), " = ", show(k.kernel.extents[static_cast<size_t>(d)]));
  const std::string loop = loops.empty() ? std::string() : describe_loop(loops.front());
  if (!loop.empty()) text += cat(" (", loop, ")");
  return text;
}

}  // namespace detail

/// The dimensions one launch uses (all known).
struct LaunchDims {
  int64_t block[3] = {1, 1, 1};
  int64_t grid[3] = {1, 1, 1};
  int64_t dynamic_shared = 0;
};

/// Checks one launch of kernel `k` against `limits`; `where` starts the message ("build 'gemm'
/// for cuda -arch=sm_80"). Values that are still symbolic at build time are passed as -1 and
/// checked when the kernel is launched.
inline void check_launch(const KernelCode& k, const LaunchDims& dims, const ArchLimits& limits,
                         const std::string& where) {
  const std::string kernel = k.kernel.name;
  int64_t threads = 1;
  bool known = true;
  for (int d = 0; d < 3; ++d) {
    if (dims.block[d] < 0) {
      known = false;
      continue;
    }
    threads *= dims.block[d];
    if (dims.block[d] > limits.max_block[d])
      throw Error(cat(where, ": kernel ", kernel, " has ", detail::describe_dim(k, d), ", more than the ",
                      limits.max_block[d], " threads CUDA allows along ", "xyz"[d],
                      "; split that axis by a smaller factor (and bind the outer part to blockIdx)"));
  }
  if (known && threads > limits.max_threads_per_block) {
    std::string dims_text;
    for (int d = 0; d < 3; ++d)
      if (!k.kernel.loops[static_cast<size_t>(d)].empty())
        dims_text += (dims_text.empty() ? "" : ", ") + detail::describe_dim(k, d);
    throw Error(cat(where, ": kernel ", kernel, " has ", threads, " threads per block (", dims_text,
                    "), more than the ", limits.max_threads_per_block,
                    " CUDA allows; split the axes bound to threadIdx by smaller factors"));
  }
  for (int d = 0; d < 3; ++d) {
    if (dims.grid[d] > limits.max_grid[d])
      throw Error(cat(where, ": kernel ", kernel, " has ", detail::describe_dim(k, d + 3), ", more than the ",
                      limits.max_grid[d], " blocks CUDA allows along ", "xyz"[d],
                      d == 0 ? "; bind a larger split factor to threadIdx"
                             : "; bind the larger axis to blockIdx.x, which allows 2^31-1 blocks"));
  }
  auto buffers = [&] {
    std::string list;
    for (const SharedBufferUse& b : k.shared_buffers)
      list += cat(list.empty() ? "" : ", ", b.name, " (", detail::show(b.bytes), " bytes)");
    return list.empty() ? std::string() : " for " + list;
  };
  if (k.static_shared_bytes > limits.max_static_shared)
    throw Error(cat(where, ": kernel ", kernel, " uses ", k.static_shared_bytes,
                    " bytes of static shared memory per block", buffers(), ", more than the ",
                    limits.max_static_shared, " bytes CUDA allows without the dynamic-shared opt-in"));
  if (dims.dynamic_shared >= 0) {
    const int64_t total = k.static_shared_bytes + dims.dynamic_shared;
    if (total > limits.max_dynamic_shared)
      throw Error(cat(where, ": kernel ", kernel, " needs ", total, " bytes of shared memory per block",
                      buffers(), ", more than the ", limits.max_dynamic_shared, " bytes ", limits.arch,
                      " allows (with the dynamic-shared opt-in); use smaller tiles (smaller split factors of "
                      "the axes the cached stages are computed at)"));
  }
}

/// The launch dimensions of `k` that are constants (-1 for the others).
inline LaunchDims static_dims(const KernelCode& k) {
  LaunchDims dims;
  for (int d = 0; d < kNumLaunchIndices; ++d) {
    const int64_t* c = as_const_int(k.kernel.extents[static_cast<size_t>(d)]);
    (d < kFirstBlockIndex ? dims.block[d] : dims.grid[d - kFirstBlockIndex]) = c ? *c : -1;
  }
  const int64_t* s = as_const_int(k.dynamic_shared_bytes);
  dims.dynamic_shared = s ? *s : -1;
  return dims;
}

/// Checks every kernel whose dimensions are known at build time.
inline void validate_module(const CudaModule& m, const ArchLimits& limits, const std::string& where) {
  for (const KernelCode& k : m.kernels) {
    if (k.min_sm > arch_number(limits.arch))
      throw Error(cat(where, ": kernel ", k.kernel.name, " uses warp intrinsic ", k.min_sm_reason,
                      ", which needs sm_", k.min_sm,
                      " or newer; build for a newer architecture (Target::cuda(\"sm_", k.min_sm,
                      "\")) or leave the instruction out"));
    check_launch(k, static_dims(k), limits, where);
  }
}

}  // namespace loom::cuda
