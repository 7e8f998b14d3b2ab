// How many blocks of the Stream-K GEMM kernel one SM holds at once: the persistent grid is that
// many blocks per SM, so that an SM whose registers and shared memory allow four blocks does not
// run one (8 warps where 32 could hide latency). Asked of the driver where a GPU is present
// (cuOccupancyMaxActiveBlocksPerMultiprocessor on the compiled kernel); else the occupancy model of
// support/gpu_device.hpp with ptxas's register count when the CUDA toolkit is installed; else
// with an estimate of the registers. Internal to lib/impl/streamk_gemm.hpp.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "loom/backend/cuda/driver.hpp"
#include "loom/backend/cuda/launch_limits.hpp"
#include "loom/backend/cuda/nvrtc.hpp"
#include "loom/backend/cuda/ptxas.hpp"
#include "loom/codegen/cuda/codegen_cuda.hpp"
#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/lib/streamk_gemm.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom::lib::detail {

/// Whether the driver's GPU sizes the grid and measures occupancy: when the config asks for the
/// GPU's own SMs (sms 0), or the process has loaded the driver anyway. A config with its SM count
/// given (the tuners' model GPU) does not load it: lib's GPU tuners measure in forked workers only
/// while this process has not (lib/gemm_device_timer.hpp).
inline bool streamk_uses_driver(const StreamKConfig& config) {
  return (config.sms == 0 || runtime::cuda::driver_loaded()) && runtime::cuda::driver_available();
}

/// The GPU the grid is sized for: the one the driver sees (streamk_uses_driver), else the
/// architecture the config names (sm_90 by default) with the config's SM count.
inline GpuDeviceSpec streamk_device(const StreamKConfig& config) {
  if (streamk_uses_driver(config)) {
    const runtime::cuda::Driver& d = runtime::cuda::driver();
    GpuDeviceSpec spec =
        GpuDeviceSpec::for_compute_capability(d.cc_major * 10 + d.cc_minor, d.multiprocessors);
    spec.name = d.arch();
    return spec;
  }
  // streamk_gemm checked config.arch: it names sm_70 or newer.
  const int cc = cuda::arch_number(config.arch.empty() ? "sm_90" : config.arch);
  GpuDeviceSpec spec = GpuDeviceSpec::for_compute_capability(cc, config.sms);
  if (cc == 90 && config.sms == 132) spec = GpuDeviceSpec::h100();
  if (cc == 80 && config.sms == 108) spec = GpuDeviceSpec::a100();
  return spec;
}

/// Registers per thread when ptxas cannot say: the thread_m x thread_n accumulators, a fragment
/// of A and of B per k step, and about 32 for addresses, loop counters and the flag protocol.
/// ptxas gave 64 for the default 4x4 configuration (f32 and f16, sm_80 and sm_90), which this
/// matches; larger per-thread tiles are an extrapolation.
inline int estimated_streamk_registers(const StreamKConfig& c) {
  // The tensor-core main loop's registers are estimated in streamk_residency.
  const int regs = c.thread_m * c.thread_n + 2 * (c.thread_m + c.thread_n) + 32;
  return std::min(255, (regs + 7) / 8 * 8);
}

/// The GEMM kernel of the module: the last one (the kernel that clears the flags, when there is
/// one, runs first; it may have as many threads as the GEMM's, 128 for four warps of tensor cores).
inline const cuda::KernelCode& streamk_main_kernel(const cuda::CudaModule& m) {
  internal_check(!m.kernels.empty(), "Stream-K module without kernels");
  return m.kernels.back();
}

/// The occupancy of the kernel `g` (built for one block per SM) on `device`, and where its
/// figures came from. Results are kept per kernel source and device for the process: registers
/// depend on the kernel's code, which the problem's sizes change too (a K the tile does not divide
/// adds guards; kept per configuration, the first size built decided the grid of the others).
inline StreamKResidency streamk_residency(const StreamKGemm& g, const GpuDeviceSpec& device) {
  const LoweredFunc& func = g.func;
  const StreamKConfig& config = g.config;
  const DType input = g.input;
  const cuda::CudaModule module = cuda::codegen_cuda(func);
  const cuda::KernelCode& kernel = streamk_main_kernel(module);
  StreamKResidency r;
  r.device = device.name;
  // Shared memory over 48 KB (the tensor-core main loop's stages) is dynamic: it counts too.
  const int64_t* dynamic = as_const_int(kernel.dynamic_shared_bytes);
  const int64_t dynamic_bytes = dynamic ? *dynamic : 0;
  BlockResources block{kernel.threads_per_block, 0, kernel.static_shared_bytes + dynamic_bytes};

  // The source by its hash and length (an entry per problem's kernel, so not the 13 KB text itself).
  using Key = std::tuple<std::string, size_t, size_t>;
  static std::mutex mutex;
  static std::map<Key, StreamKResidency> known;
  const Key key{device.name, std::hash<std::string>{}(module.source), module.source.size()};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }

  // A block over the GPU's opt-in shared memory per block cannot be loaded (the driver answers
  // "invalid argument"): the model below says why, 0 blocks limited by shared memory.
  const bool on_driver = streamk_uses_driver(config);
  const bool loadable = !on_driver || block.shared_bytes <= runtime::cuda::driver().max_shared_optin;
  if (on_driver && loadable) {
    const runtime::cuda::Driver& d = runtime::cuda::driver();
    const runtime::cuda::NvrtcOutput out =
        runtime::cuda::nvrtc_compile(module.source, func.name, d.arch(), true);
    runtime::cuda::Driver::Module mod = nullptr;
    runtime::cuda::Driver::Function fn = nullptr;
    d.check(d.module_load_data(&mod, out.cubin.data()), "cuModuleLoadData (Stream-K occupancy)");
    int blocks = 0, registers = 0;
    d.check(d.module_get_function(&fn, mod, kernel.kernel.name.c_str()), "cuModuleGetFunction");
    // As the launch does: opt in to the dynamic shared memory, then ask with it.
    if (const int64_t optin = cuda::dynamic_shared_optin(kernel.static_shared_bytes, dynamic_bytes);
        optin >= 0)
      d.check(d.func_set_attribute(fn, runtime::cuda::Driver::kFuncAttrMaxDynamicSharedBytes,
                                   static_cast<int>(optin)),
              "cuFuncSetAttribute (Stream-K occupancy)");
    d.check(d.occupancy_max_active_blocks(&blocks, fn, static_cast<int>(block.threads),
                                          static_cast<size_t>(dynamic_bytes)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    d.check(d.func_get_attribute(&registers, runtime::cuda::Driver::kFuncAttrNumRegs, fn),
            "cuFuncGetAttribute");
    d.module_unload(mod);
    block.registers_per_thread = registers;
    r.occupancy = occupancy(device, block);
    r.occupancy.blocks_per_sm = blocks;  // the driver's word over the model's
    r.registers_per_thread = registers;
    r.source = "driver";
  } else if (runtime::cuda::nvrtc() && !runtime::cuda::find_ptxas().empty()) {
    const std::string arch = cat("sm_", device.compute_capability);
    const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(module.source, func.name, arch);
    const std::optional<runtime::cuda::PtxasReport> report =
        runtime::cuda::run_ptxas(out.ptx, arch, kernel.kernel.name);
    internal_check(report.has_value(), "ptxas was found but gave no report");
    block.registers_per_thread = report->registers;
    r.occupancy = occupancy(device, block);
    r.registers_per_thread = report->registers;
    r.source = "ptxas";
  } else {
    // The tensor-core kernel: the data-parallel gpu_gemm's estimate for the same main loop.
    block.registers_per_thread =
        config.tensor_cores
            ? gpu_gemm_estimated_registers(gpu_gemm(g.shape.m, g.shape.n, g.shape.k, input,
                                                    *config.tensor_cores, g.a_layout, g.b_layout))
            : estimated_streamk_registers(config);
    r.occupancy = occupancy(device, block);
    r.registers_per_thread = block.registers_per_thread;
    r.source = "estimate";
  }
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, r);
  return r;
}

}  // namespace loom::lib::detail
