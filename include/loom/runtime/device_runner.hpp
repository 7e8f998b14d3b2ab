// DeviceRunner: how a Kernel built for a GPU target (Target::cuda or Target::cuda_sim) runs a
// call after its arguments are checked. Free of CUDA and LLVM headers (kernel.hpp includes it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/sim_report.hpp"

namespace loom::runtime {

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  /// Runs the function for one call; `bound` holds the checked arguments.
  virtual void run(const LoweredFunc& f, const std::vector<KernelArg>& args,
                   const BoundArgs& bound) const = 0;
  /// The CUDA C of the kernels.
  virtual const std::string& source() const = 0;
  /// The PTX NVRTC made of source() ("" when it was not compiled, as for the simulator without NVRTC).
  virtual const std::string& ptx() const = 0;
  /// What runs the kernels: "cuda_sim -arch=sm_80 (GPU simulator)", "cuda -arch=sm_90 (NVRTC 13.0)".
  virtual std::string description() const = 0;
  /// The simulator's report of the most recent call (only the simulator has one).
  virtual std::optional<SimReport> last_report() const { return std::nullopt; }
  /// The GPU time of the most recent call, without its argument copies (only a real GPU has one).
  virtual std::optional<double> last_device_ms() const { return std::nullopt; }
  /// Runs later calls on CUDA stream `stream` (a CUstream; null: the default stream); false for a
  /// runner without streams (only a real GPU has them).
  virtual bool set_stream(void* /*stream*/) const { return false; }
  /// The alignment in bytes the code assumes of element 0 of buffer parameter `buffer` when it is
  /// device memory used in place (the widest vector access on it); 0 when nothing beyond its
  /// element size, or when the runner never uses a caller's memory in place.
  virtual int assumed_alignment(const VarNode* /*buffer*/) const { return 0; }
};

}  // namespace loom::runtime
