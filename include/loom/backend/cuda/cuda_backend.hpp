// build() for Target::cuda() and Target::cuda_sim(): CUDA codegen and build-time launch checks,
// then NVRTC + the Driver API (both dlopen'ed), or the GPU simulator. No CUDA or LLVM headers.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/backend/cuda/driver.hpp"
#include "loom/backend/cuda/host_program.hpp"
#include "loom/backend/cuda/launch_limits.hpp"
#include "loom/backend/cuda/nvrtc.hpp"
#include "loom/codegen/cuda/codegen_cuda.hpp"
#include "loom/runtime/device_runner.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/kernel_state.hpp"
#include "loom/sim/simulator.hpp"

namespace loom::runtime::cuda {

/// PTX and cubin of a module, through the disk cache (LOOM_CACHE_DIR/cuda) when enabled: the key
/// covers the source, the architecture, the options and NVRTC's version.
inline NvrtcOutput compile_cached(const std::string& source, const std::string& name, const std::string& arch,
                                  bool fast_math, CacheOutcome& outcome) {
  const Nvrtc* api = nvrtc();
  outcome = CacheOutcome::Compiled;
  std::optional<std::filesystem::path> dir = DiskKernelCache::directory();
  DiskKernelCache::Key key;
  if (api && dir) {
    *dir /= "cuda";
    const std::string id =
        cat(arch, fast_math ? " fast" : " exact", " nvrtc", api->major, ".", api->minor, "\n", source);
    key.key = checksum64(id.data(), id.size());
    const std::string salted = "confirm:" + id;
    key.confirm = checksum64(salted.data(), salted.size());
    key.target = cat("cuda ", arch, fast_math ? " fast-math" : "", " nvrtc ", api->major, ".", api->minor);
    if (std::optional<std::string> payload = DiskKernelCache::load(*dir, key);
        payload && payload->size() >= 8) {
      uint64_t ptx_size = 0;
      std::memcpy(&ptx_size, payload->data(), 8);
      if (ptx_size <= payload->size() - 8) {
        NvrtcOutput out;
        out.arch = arch;
        out.ptx = payload->substr(8, ptx_size);
        out.cubin = payload->substr(8 + ptx_size);
        outcome = CacheOutcome::DiskHit;
        return out;
      }
    }
  }
  NvrtcOutput out = nvrtc_compile(source, name, arch, /*want_cubin=*/true, fast_math);
  if (api && dir) {
    std::string payload(8, '\0');
    const uint64_t ptx_size = out.ptx.size();
    std::memcpy(payload.data(), &ptx_size, 8);
    payload += out.ptx;
    payload += out.cubin;
    DiskKernelCache::store(*dir, key, payload);
  }
  return out;
}

/// Runs calls on the GPU simulator (Target::cuda_sim()).
class SimRunner final : public DeviceRunner {
 public:
  SimRunner(loom::cuda::CudaModule m, loom::cuda::ArchLimits limits, bool fast_math)
      : module_(std::move(m)), limits_(std::move(limits)), fast_math_(fast_math) {}

  void run(const LoweredFunc& f, const std::vector<KernelArg>& args, const BoundArgs&) const override {
    SimReport report = simulate(f, args);
    // The simulator checks CUDA's thread and grid limits; the architecture's shared memory here.
    for (const SimLaunch& l : report.launches)
      if (l.shared_bytes_per_block > limits_.max_dynamic_shared)
        throw Error(cat("kernel ", l.kernel, " used ", l.shared_bytes_per_block,
                        " bytes of shared memory per block, more than the ", limits_.max_dynamic_shared,
                        " bytes ", limits_.arch, " allows"));
    std::lock_guard<std::mutex> lock(mutex_);
    last_ = std::move(report);
  }
  const std::string& source() const override { return module_.source; }
  const std::string& ptx() const override {
    std::call_once(ptx_once_, [&] {
      if (nvrtc()) ptx_ = nvrtc_compile(module_.source, module_.name, limits_.arch, false, fast_math_).ptx;
    });
    return ptx_;
  }
  std::string description() const override {
    return cat("cuda_sim -arch=", limits_.arch, " (GPU simulator, ", module_.kernels.size(), " kernel",
               module_.kernels.size() == 1 ? "" : "s", ")");
  }
  std::optional<SimReport> last_report() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

 private:
  loom::cuda::CudaModule module_;
  loom::cuda::ArchLimits limits_;
  bool fast_math_;
  mutable std::mutex mutex_;
  mutable std::optional<SimReport> last_;
  mutable std::once_flag ptx_once_;
  mutable std::string ptx_;
};

/// Runs calls on a GPU through the Driver API: copies the buffer arguments in host memory to
/// device memory (those already in CUDA memory, kDLCUDA DLTensors, are used in place), runs the
/// host program (scratch allocations, launches) and copies written host buffers back.
class DriverRunner final : public DeviceRunner {
 public:
  DriverRunner(loom::cuda::CudaModule m, loom::cuda::ArchLimits limits, NvrtcOutput code,
               std::string compiler)
      : module_(std::move(m)),
        limits_(std::move(limits)),
        code_(std::move(code)),
        compiler_(std::move(compiler)) {}

  ~DriverRunner() override {
    if (!driver_available()) return;
    const Driver& drv = driver();
    for (const auto& [bytes, ptr] : scratch_free_) drv.mem_free(ptr);
    if (loaded_) drv.module_unload(cu_module_);
  }

  int assumed_alignment(const VarNode* buffer) const override {
    int most = 0;
    for (const loom::cuda::KernelCode& k : module_.kernels)
      if (auto it = k.assumed_alignment.find(buffer); it != k.assumed_alignment.end())
        most = std::max(most, it->second);
    return most;
  }

  void run(const LoweredFunc& f, const std::vector<KernelArg>&, const BoundArgs& bound) const override {
    const Driver& drv = driver();  // throws, pointing to cuda_sim, without a driver or GPU
    load(drv);
    std::lock_guard<std::mutex> lock(run_mutex_);
    last_ms_.reset();  // a call that fails has no time, and must not report its predecessor's
    // The default stream keeps the synchronous copies and the context-wide wait (what ran on real
    // GPUs); a user's stream gets everything queued on it, and only it is waited for.
    Driver::Stream const stream = stream_;
    auto to_device = [&](Driver::DevicePtr to, const void* from, size_t bytes) {
      return stream ? drv.memcpy_htod_async(to, from, bytes, stream) : drv.memcpy_htod(to, from, bytes);
    };
    auto to_host = [&](void* to, Driver::DevicePtr from, size_t bytes) {
      return stream ? drv.memcpy_dtoh_async(to, from, bytes, stream) : drv.memcpy_dtoh(to, from, bytes);
    };
    auto wait = [&] { return stream ? drv.stream_synchronize(stream) : drv.ctx_synchronize(); };
    HostEnv env;
    for (const auto& [var, value] : bound.scalars) env.ints[var] = value;
    for (const auto& [var, value] : bound.float_scalars) env.floats[var] = value;
    struct Allocation {
      Driver::DevicePtr ptr = 0;
      const BoundBuffer* host = nullptr;
      bool written = false;
    };
    std::vector<Allocation> allocations;
    struct FreeAll {
      const Driver& drv;
      std::vector<Allocation>& list;
      ~FreeAll() {
        for (const Allocation& a : list) drv.mem_free(a.ptr);
      }
    } free_all{drv, allocations};
    const std::vector<bool> written = written_buffer_params(f);
    for (size_t i = 0; i < f.params.size(); ++i) {
      const FuncParam& p = f.params[i];
      if (p.kind != FuncParam::Kind::Buffer) continue;
      const BoundBuffer& b = bound.buffers.at(p.buffer.data.get());
      if (b.on_cuda_device) {  // already on the GPU (a kDLCUDA DLTensor): used in place, no copies
        env.buffers[p.buffer.data.get()] = reinterpret_cast<uint64_t>(b.data);
        continue;
      }
      const int64_t bytes = (b.end - b.begin) * b.dtype.bytes();
      Allocation a;
      drv.check(drv.mem_alloc(&a.ptr, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
                cat("cuMemAlloc of ", bytes, " bytes for argument '", p.buffer.name, "'"));
      a.host = &b;
      a.written = written[i];
      allocations.push_back(a);
      const char* host = static_cast<const char*>(b.data) + b.begin * b.dtype.bytes();
      if (bytes > 0)
        drv.check(to_device(a.ptr, host, static_cast<size_t>(bytes)),
                  cat("copying argument '", p.buffer.name, "' to the GPU"));
      // The kernel indexes from the buffer's element 0, which may precede the copied range.
      env.buffers[p.buffer.data.get()] = a.ptr - static_cast<uint64_t>(b.begin * b.dtype.bytes());
    }
    HostOps ops;
    ops.allocate = [&](int64_t bytes, const std::string& name) {
      Driver::DevicePtr ptr = 0;
      if (auto kept = scratch_free_.find(bytes); kept != scratch_free_.end()) {
        ptr = kept->second;
        scratch_free_.erase(kept);
      } else {
        drv.check(drv.mem_alloc(&ptr, static_cast<size_t>(bytes)),
                  cat("cuMemAlloc of ", bytes, " bytes for '", name, "'"));
      }
      scratch_in_use_[ptr] = bytes;
      return static_cast<uint64_t>(ptr);
    };
    ops.free = [&](uint64_t ptr) {
      auto used = scratch_in_use_.find(ptr);
      if (used == scratch_in_use_.end()) return;
      scratch_free_.emplace(used->second, used->first);
      scratch_in_use_.erase(used);
    };
    // Not checked here (it runs in a destructor): a failed kernel is reported by the
    // synchronization after the host program.
    ops.synchronize = [&] { wait(); };
    ops.launch = [&](size_t index, const LaunchDims& d, const std::vector<uint64_t>& buffers,
                     const std::vector<uint64_t>& scalars) {
      const KernelCode& k = module_.kernels[index];
      // Parameter values in declaration order, each in the C type the kernel declares.
      std::vector<uint64_t> storage(k.kernel.params.size());
      std::vector<void*> params;
      size_t b = 0, n = 0;
      for (size_t i = 0; i < k.kernel.params.size(); ++i) {
        storage[i] = k.kernel.params[i].is_buffer ? buffers[b++] : scalars[n++];
        params.push_back(&storage[i]);
      }
      Driver::Function fn = functions_[index];
      if (const int64_t optin = loom::cuda::dynamic_shared_optin(k.static_shared_bytes, d.dynamic_shared);
          optin >= 0)
        drv.check(drv.func_set_attribute(fn, Driver::kFuncAttrMaxDynamicSharedBytes, static_cast<int>(optin)),
                  cat("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = ", d.dynamic_shared, ") of ",
                      k.kernel.name));
      drv.check(drv.launch_kernel(fn, static_cast<unsigned>(d.grid[0]), static_cast<unsigned>(d.grid[1]),
                                  static_cast<unsigned>(d.grid[2]), static_cast<unsigned>(d.block[0]),
                                  static_cast<unsigned>(d.block[1]), static_cast<unsigned>(d.block[2]),
                                  static_cast<unsigned>(d.dynamic_shared), stream, params.data(), nullptr),
                cat("cuLaunchKernel of ", k.kernel.name));
    };
    ops.extern_stage = [&](int64_t id, const std::vector<DeviceBufferView>& inputs,
                           const std::vector<DeviceBufferView>& outputs) {
      drv.check(wait(),
                cat("waiting for the kernels before extern stage '", ExternRegistry::global().name(id), "'"));
      DeviceCopies copies;
      copies.to_host = [&](void* host, uint64_t device, size_t bytes) {
        drv.check(to_host(host, device, bytes), "copying an extern stage's buffer to the host");
        if (stream) drv.check(wait(), "copying an extern stage's buffer to the host");
      };
      copies.to_device = [&](uint64_t device, const void* host, size_t bytes) {
        drv.check(to_device(device, host, bytes), "copying an extern stage's result to the GPU");
      };
      run_extern_stage_on_host(id, inputs, outputs, copies);
    };
    DeviceTimer timer(drv, stream);
    run_host_program(module_, module_.host, env, ops, limits_);
    timer.stop();  // behind the last launch: the host's wait below is not GPU time
    drv.check(wait(), cat("running kernel '", f.name, "'"));
    last_ms_ = timer.elapsed_ms();
    for (const Allocation& a : allocations) {
      if (!a.written) continue;
      const int64_t bytes = (a.host->end - a.host->begin) * a.host->dtype.bytes();
      if (bytes > 0)
        drv.check(to_host(static_cast<char*>(a.host->data) + a.host->begin * a.host->dtype.bytes(), a.ptr,
                          static_cast<size_t>(bytes)),
                  "copying a result back from the GPU");
    }
    // The copies back were queued on the stream: the host buffers hold the results only now.
    if (stream) drv.check(drv.stream_synchronize(stream), "copying the results back from the GPU");
  }

  bool set_stream(void* stream) const override {
    std::lock_guard<std::mutex> lock(run_mutex_);
    stream_ = stream;
    return true;
  }

  const std::string& source() const override { return module_.source; }
  const std::string& ptx() const override { return code_.ptx; }
  std::optional<double> last_device_ms() const override {
    std::lock_guard<std::mutex> lock(run_mutex_);
    return last_ms_;
  }
  std::string description() const override {
    return cat("cuda -arch=", limits_.arch, " (", compiler_, ", ", module_.kernels.size(), " kernel",
               module_.kernels.size() == 1 ? "" : "s", ")");
  }

 private:
  /// Loads the module once: the cubin when the device is the architecture it was built for,
  /// otherwise the PTX, which the driver compiles for the device.
  void load(const Driver& drv) const {
    std::call_once(load_once_, [&] {
      const bool exact = drv.arch() == limits_.arch && !code_.cubin.empty();
      const void* image = exact ? static_cast<const void*>(code_.cubin.data()) : code_.ptx.c_str();
      drv.check(drv.module_load_data(&cu_module_, image),
                cat("loading the ", exact ? "cubin" : "PTX", " of '", module_.name, "' (built for ",
                    limits_.arch, ") on a device of ", drv.arch()));
      for (const KernelCode& k : module_.kernels) {
        Driver::Function fn = nullptr;
        drv.check(drv.module_get_function(&fn, cu_module_, k.kernel.name.c_str()),
                  "cuModuleGetFunction " + k.kernel.name);
        functions_.push_back(fn);
      }
      loaded_ = true;
    });
  }

  loom::cuda::CudaModule module_;
  loom::cuda::ArchLimits limits_;
  NvrtcOutput code_;
  std::string compiler_;
  mutable std::once_flag load_once_;
  mutable Driver::Module cu_module_ = nullptr;
  mutable std::vector<Driver::Function> functions_;
  mutable bool loaded_ = false;
  mutable std::mutex run_mutex_;
  mutable std::optional<double> last_ms_;    // the latest call's GPU time (guarded by run_mutex_)
  mutable Driver::Stream stream_ = nullptr;  // Kernel::set_cuda_stream's (guarded by run_mutex_)
  // Scratch buffers of the host program (Stream-K's partial sums and flags), kept from one call
  // to the next by size: a cuMemAlloc and a cuMemFree cost tens of microseconds, and the free
  // waits for the device, which at small sizes took longer than the kernels (measured on an
  // H200: 0.09 to 0.18 ms per call). Every call waits for its stream before it returns, so a
  // buffer handed out again is never still in use. Guarded by run_mutex_; freed with the kernel.
  mutable std::multimap<int64_t, Driver::DevicePtr> scratch_free_;
  mutable std::map<Driver::DevicePtr, int64_t> scratch_in_use_;
};

/// Generates, checks and (for Target::cuda) compiles `f`.
inline Kernel build_cuda(const LoweredFunc& f, const Target& target) {
  std::string arch = target.arch();
  if (target.kind() == TargetKind::CUDA && arch.empty()) arch = driver().arch();  // throws without a GPU
  const std::string where =
      cat("build '", f.name, "' for ", target_kind_name(target.kind()), " -arch=", arch);
  loom::cuda::ArchLimits limits = loom::cuda::arch_limits(arch);
  if (target.kind() == TargetKind::CUDA && driver_available() && driver().arch() == arch &&
      driver().max_shared_optin > 0)
    limits.max_dynamic_shared = driver().max_shared_optin;
  loom::cuda::CudaModule m = loom::cuda::codegen_cuda(f);
  loom::cuda::validate_module(m, limits, where);
  if (target.kind() == TargetKind::CUDASim)
    return runtime::make_device_kernel(f, target,
                                       std::make_shared<SimRunner>(std::move(m), limits, target.fast_math()),
                                       CacheOutcome::Compiled);
  CacheOutcome outcome = CacheOutcome::Compiled;
  NvrtcOutput code = compile_cached(m.source, m.name, arch, target.fast_math(), outcome);
  const Nvrtc* api = nvrtc();
  std::string compiler = cat("NVRTC ", api->major, ".", api->minor);
  return runtime::make_device_kernel(
      f, target, std::make_shared<DriverRunner>(std::move(m), limits, std::move(code), std::move(compiler)),
      outcome);
}

}  // namespace loom::runtime::cuda
