// Kernel: a compiled lowered function, callable as f(a, b, c) with loom::Buffer<T>, BufferView,
// DLTensor* and scalars. Cheap to copy (shared state); every call checks its arguments first.
// LLVM-free: the machine code comes from a CpuBackend (runtime/cpu_backend.hpp), or a GPU target's
// DeviceRunner runs the call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/support/config.hpp"
#include "loom/support/target.hpp"

namespace loom {

/// Where build() found the machine code of a kernel.
enum class CacheOutcome : uint8_t {
  Compiled,   ///< generated and compiled by LLVM in this call
  MemoryHit,  ///< an earlier build in this process compiled the same function for the same target
  DiskHit,    ///< loaded from an object file in LOOM_CACHE_DIR
};

/// The name of a CacheOutcome ("compiled", "memory-hit", "disk-hit") for messages.
LOOM_DECL const char* cache_outcome_name(CacheOutcome o);

namespace runtime {
struct KernelState;  // runtime/kernel_state.hpp
}  // namespace runtime

/// A compiled function, ready to call: made by build(). Copies share the compiled code. Every call checks its
/// arguments first (ArgumentError).
class Kernel {
 public:
  /// An empty kernel; calling it throws. Get real ones from build().
  Kernel() = default;
  /// What backends make a kernel from (runtime/kernel_state.hpp: make_kernel, make_device_kernel).
  explicit Kernel(std::shared_ptr<const runtime::KernelState> state) : state_(std::move(state)) {}

  /// False for a default-constructed Kernel.
  bool defined() const { return static_cast<bool>(state_); }

  /// Calls the kernel: f(a, b, c, n) with one argument per parameter, in order.
  template <typename... Args>
  requires(std::is_constructible_v<KernelArg, Args&&>&&...) void operator()(Args&&... args) const {
    call(std::vector<KernelArg>{KernelArg(std::forward<Args>(args))...});
  }
  /// Calls the kernel with one argument per parameter, in order (see call()).
  void operator()(const std::vector<KernelArg>& args) const { call(args); }

  /// Checks every argument (throwing ArgumentError before any memory is touched), then runs the
  /// machine code. A failure inside the kernel (an assert, an integer division by zero, an extern
  /// stage that throws) becomes a loom::Error; what the kernel wrote until then stays written.
  LOOM_DECL void call(const std::vector<KernelArg>& args) const;

  /// The lowered function this kernel was compiled from.
  LOOM_DECL const LoweredFunc& lowered() const;
  /// The target the kernel was built for.
  LOOM_DECL const Target& target() const;
  /// Whether build() compiled this kernel or found it in the memory or disk cache.
  LOOM_DECL CacheOutcome cache_outcome() const;
  /// The address of the machine code: equal for kernels that share compiled code.
  LOOM_DECL const void* code_address() const;
  /// The resolved target: LLVM triple, CPU and features (for GPU targets: arch and compiler).
  LOOM_DECL const std::string& target_description() const;

  /// The CUDA C of a kernel built for Target::cuda() or Target::cuda_sim().
  LOOM_DECL const std::string& source() const;
  /// The PTX NVRTC compiled source() to ("" for cuda_sim when NVRTC is absent).
  LOOM_DECL const std::string& ptx() const;
  /// The GPU simulator's report of the latest call of a Target::cuda_sim() kernel.
  LOOM_DECL SimReport sim_report() const;
  /// For a kernel built for Target::cuda() and run on a GPU: the milliseconds of its latest call
  /// on the GPU, from just before the first launch to the end of the last kernel (CUDA events),
  /// so the kernels and any scratch allocations between them, without the copies of host-memory
  /// arguments to and from the device that every call makes. Throws for other targets, before
  /// the first call and after a call that failed.
  LOOM_DECL double last_device_ms() const;
  /// For a kernel built for Target::cuda(): runs its later calls (and those of its copies) on CUDA
  /// stream `stream`, a CUstream / cudaStream_t of the primary context of device 0 (PyTorch's
  /// current stream, say); nullptr goes back to the default stream. Its copies of host-memory
  /// arguments and its launches are queued on that stream, after the work already there, and the
  /// call returns once the stream has finished them (it waits for the stream, not the device:
  /// work on other streams may overlap). Throws for other targets, which have no streams.
  LOOM_DECL void set_cuda_stream(void* stream);

  /// The optimized LLVM IR (generated again from lowered() on first request, then kept).
  LOOM_DECL const std::string& llvm_ir() const;
  /// The machine code as assembly text (generated on first request, then kept).
  LOOM_DECL const std::string& assembly() const;

 private:
  std::shared_ptr<const runtime::KernelState> state_;
};

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/runtime/impl/kernel.hpp"
#endif
