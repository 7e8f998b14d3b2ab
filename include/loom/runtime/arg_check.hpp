// Checks a kernel call's arguments against the lowered function's parameters before anything runs
// (shared by the interpreter and the JIT backends) and binds the symbolic sizes they determine.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// The memory of one buffer argument and the element offsets its shape and strides reach:
/// [begin, end), with begin < 0 only for negative strides.
struct BoundBuffer {
  /// The memory of the buffer (its first element at offset 0).
  void* data = nullptr;
  /// Its element type.
  DType dtype;
  /// The lowest element offset the buffer's shape and strides reach.
  int64_t begin = 0;
  /// One past the highest element offset they reach.
  int64_t end = 0;
  bool on_cuda_device = false;  ///< CUDA device memory (a kDLCUDA DLTensor), used in place by Target::cuda
};

/// The values a checked call binds, keyed by the parameter's variable: every integer scalar
/// parameter and size variable, every float scalar parameter, and every buffer's memory.
struct BoundArgs {
  /// Integer scalar parameters and size variables, by variable.
  std::unordered_map<const VarNode*, int64_t> scalars;
  /// Floating-point scalar parameters, by variable.
  std::unordered_map<const VarNode*, double> float_scalars;
  std::unordered_map<const VarNode*, BoundBuffer> buffers;  ///< keyed by BufferParam::data

  /// The bound value of integer scalar parameter or size variable `v`; throws std::out_of_range if unbound.
  int64_t scalar(const Var& v) const { return scalars.at(v.get()); }
  /// The memory bound to buffer parameter `buffer` (its data Var); throws std::out_of_range if unbound.
  void* data(const Var& buffer) const { return buffers.at(buffer.get()).data; }
};

/// Checks every argument of a call of `f` and binds its sizes, or throws ArgumentError naming the
/// kernel, the parameter, the mismatch and the fix. Reads the arguments only: when a check fails,
/// no memory has been written. Buffers must be in memory the CPU can access, or, with
/// `accept_cuda_memory` (kernels built for Target::cuda()), in CUDA memory of device 0.
LOOM_DECL BoundArgs bind_arguments(const LoweredFunc& f, const std::vector<KernelArg>& args,
                                   bool accept_cuda_memory = false);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/runtime/impl/arg_check.hpp"
#endif
