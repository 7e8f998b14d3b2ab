// What CUDA code generation produces: the module's source, its host program, and per kernel its
// parameters, launch extents and shared memory (static, dynamic, planned).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/lower/split_host_device.hpp"

namespace loom::cuda {

/// Static shared memory above this needs the dynamic-shared opt-in (cudaFuncSetAttribute).
inline constexpr int64_t kStaticSharedLimit = 48 * 1024;

/// One shared buffer of a kernel, for reports and messages.
struct SharedBufferUse {
  std::string name;
  Expr bytes;           // host expression
  int64_t offset = -1;  // in the dynamic shared block, or -1 when static
};

/// A generated kernel and how to launch it.
struct KernelCode {
  DeviceKernel kernel;  // region, parameters, launch extents
  int64_t static_shared_bytes = 0;
  /// Bytes of dynamic shared memory (a host expression; 0 when the kernel uses none).
  Expr dynamic_shared_bytes;
  std::vector<SharedBufferUse> shared_buffers;
  /// Threads per block when the block dimensions are constants, else -1.
  int64_t threads_per_block = -1;
  /// Shared memory the planner saved by letting buffers with disjoint live ranges overlap.
  int64_t shared_bytes_saved = 0;
  /// The oldest architecture the kernel's warp intrinsics exist on (80: sm_80), and the first
  /// intrinsic that needs it; 0 when it uses none.
  int min_sm = 0;
  std::string min_sm_reason;
  /// The alignment in bytes the code assumes of element 0 of a buffer, beyond its element size:
  /// the widest whole vector access it emits (ir/vector_access.hpp) or warp-intrinsic operand
  /// alignment on it. Memory Loom allocates meets it; device memory a caller passes in place is
  /// checked against it at the call. Buffers without such accesses are absent.
  std::unordered_map<const VarNode*, int> assumed_alignment;
};

/// The CUDA translation of one lowered function.
struct CudaModule {
  std::string name;
  std::string source;
  Stmt host;  // see DeviceSplit
  std::vector<KernelCode> kernels;
};

}  // namespace loom::cuda
