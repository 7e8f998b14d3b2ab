// The CUDA Driver API, loaded with dlopen at run time (libcuda.so.1): device discovery, module
// loading, kernel launch and memory copies. Declares the few entry points itself, so building
// Loom never needs cuda.h; a machine without a driver or GPU gets a loom::Error that says so.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/support/error.hpp"
#include "loom/support/library_symbols.hpp"

namespace loom::runtime::cuda {

/// The Driver API entry points Loom uses (their _v2 ABIs, as cuda.h maps them).
struct Driver {
  using Result = int;
  using Device = int;
  using Context = void*;
  using Module = void*;
  using Function = void*;
  using DevicePtr = unsigned long long;
  using Event = void*;
  using Stream = void*;  // CUstream; null: the default stream

  Result (*init)(unsigned) = nullptr;
  Result (*device_get_count)(int*) = nullptr;
  Result (*device_get)(Device*, int) = nullptr;
  Result (*device_get_attribute)(int*, int, Device) = nullptr;
  Result (*device_get_name)(char*, int, Device) = nullptr;
  Result (*primary_ctx_retain)(Context*, Device) = nullptr;
  Result (*ctx_set_current)(Context) = nullptr;
  Result (*ctx_synchronize)() = nullptr;
  Result (*module_load_data)(Module*, const void*) = nullptr;
  Result (*module_unload)(Module) = nullptr;
  Result (*module_get_function)(Function*, Module, const char*) = nullptr;
  Result (*func_set_attribute)(Function, int, int) = nullptr;
  Result (*func_get_attribute)(int*, int, Function) = nullptr;
  Result (*occupancy_max_active_blocks)(int*, Function, int, size_t) = nullptr;
  Result (*launch_kernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          void*, void**, void**) = nullptr;
  Result (*mem_alloc)(DevicePtr*, size_t) = nullptr;
  Result (*mem_free)(DevicePtr) = nullptr;
  Result (*memcpy_htod)(DevicePtr, const void*, size_t) = nullptr;
  Result (*memcpy_dtoh)(void*, DevicePtr, size_t) = nullptr;
  // Calls on a user's stream (Kernel::set_cuda_stream): copies queued on it, and waiting for it.
  Result (*memcpy_htod_async)(DevicePtr, const void*, size_t, Stream) = nullptr;
  Result (*memcpy_dtoh_async)(void*, DevicePtr, size_t, Stream) = nullptr;
  Result (*stream_synchronize)(Stream) = nullptr;
  Result (*get_error_string)(Result, const char**) = nullptr;
  // Events on the call's stream: how a call's GPU time is measured without its host copies.
  Result (*event_create)(Event*, unsigned) = nullptr;
  Result (*event_record)(Event, void*) = nullptr;
  Result (*event_synchronize)(Event) = nullptr;
  Result (*event_elapsed_ms)(float*, Event, Event) = nullptr;
  Result (*event_destroy)(Event) = nullptr;

  // cuda.h's enumerators that Loom passes.
  static constexpr int kAttrComputeCapabilityMajor = 75;
  static constexpr int kAttrComputeCapabilityMinor = 76;
  static constexpr int kAttrMaxSharedPerBlockOptin = 97;
  static constexpr int kAttrMultiprocessorCount = 16;
  static constexpr int kFuncAttrMaxDynamicSharedBytes = 8;
  static constexpr int kFuncAttrNumRegs = 4;

  std::string path;
  Device device = 0;
  Context context = nullptr;
  int cc_major = 0, cc_minor = 0;
  int max_shared_optin = 0;
  int multiprocessors = 0;  // SMs of the device (Stream-K sizes its persistent grid by them)
  std::string name;         // the device's name ("NVIDIA H100 80GB HBM3"): measured tuning records carry it

  std::string arch() const { return cat("sm_", cc_major, cc_minor); }

  std::string error_text(Result r) const {
    const char* s = nullptr;
    if (get_error_string) get_error_string(r, &s);
    return s ? cat(s, " (", r, ")") : cat("CUDA driver error ", r);
  }

  /// Throws a loom::Error for a failed call.
  void check(Result r, const std::string& what) const {
    if (r != 0) throw Error(cat(what, " failed: ", error_text(r)));
  }
};

/// Measures GPU time on `stream` (null: the default stream) with a pair of events: the start is
/// recorded when the timer is made, the end by elapsed_ms(), which waits for it. When an event call
/// fails, elapsed_ms() returns nothing rather than a guess.
class DeviceTimer {
 public:
  explicit DeviceTimer(const Driver& drv, Driver::Stream stream = nullptr) : drv_(drv), stream_(stream) {
    if (!drv.event_create || drv.event_create(&start_, 0) != 0 || drv.event_create(&stop_, 0) != 0 ||
        drv.event_record(start_, stream) != 0)
      failed_ = true;
  }
  ~DeviceTimer() {
    if (start_) drv_.event_destroy(start_);
    if (stop_) drv_.event_destroy(stop_);
  }
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  /// Records the end on the stream, behind the work queued so far (elapsed_ms() does it when this
  /// was not called): called right after the launches, the interval is the GPU's time alone, not
  /// the host's wait for it.
  void stop() {
    if (!failed_ && !stopped_) failed_ = drv_.event_record(stop_, stream_) != 0;
    stopped_ = true;
  }

  std::optional<double> elapsed_ms() {
    stop();
    float ms = 0;
    if (failed_ || drv_.event_synchronize(stop_) != 0 || drv_.event_elapsed_ms(&ms, start_, stop_) != 0)
      return std::nullopt;
    return ms;
  }

 private:
  const Driver& drv_;
  Driver::Stream stream_;
  Driver::Event start_ = nullptr, stop_ = nullptr;
  bool failed_ = false, stopped_ = false;
};

namespace detail {

struct DriverLoad {
  Driver api;
  bool ok = false;
  std::string error;
};

/// Set once this process has begun loading the driver (driver_loaded()).
inline std::atomic<bool>& driver_load_begun() {
  static std::atomic<bool> begun{false};
  return begun;
}

/// The driver libraries to load, in order: LOOM_CUDA_DRIVER_PATH alone when it is set.
inline std::vector<const char*> driver_library_names() {
  if (const char* forced = std::getenv("LOOM_CUDA_DRIVER_PATH"); forced && *forced) return {forced};
  return {"libcuda.so.1", "libcuda.so"};
}

inline DriverLoad load_driver() {
  driver_load_begun().store(true);
  DriverLoad out;
  void* handle = nullptr;
  std::string tried;
  for (const char* name : driver_library_names()) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      out.api.path = name;
      break;
    }
    tried += cat(tried.empty() ? "" : ", ", name);
  }
  const std::string hint =
      "; to run GPU kernels on this machine without a GPU, build for Target::cuda_sim() (the GPU simulator)";
  if (!handle) {
    out.error = cat("no CUDA driver: libcuda could not be loaded (tried ", tried, ")", hint);
    return out;
  }
  LibrarySymbols symbols(handle);
  auto sym = [&](auto& fn, const char* name) { symbols.resolve(fn, name); };
  Driver& a = out.api;
  sym(a.init, "cuInit");
  sym(a.device_get_count, "cuDeviceGetCount");
  sym(a.device_get, "cuDeviceGet");
  sym(a.device_get_attribute, "cuDeviceGetAttribute");
  sym(a.device_get_name, "cuDeviceGetName");
  sym(a.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  sym(a.ctx_set_current, "cuCtxSetCurrent");
  sym(a.ctx_synchronize, "cuCtxSynchronize");
  sym(a.module_load_data, "cuModuleLoadData");
  sym(a.module_unload, "cuModuleUnload");
  sym(a.module_get_function, "cuModuleGetFunction");
  sym(a.func_set_attribute, "cuFuncSetAttribute");
  sym(a.func_get_attribute, "cuFuncGetAttribute");
  sym(a.occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  sym(a.launch_kernel, "cuLaunchKernel");
  sym(a.mem_alloc, "cuMemAlloc_v2");
  sym(a.mem_free, "cuMemFree_v2");
  sym(a.memcpy_htod, "cuMemcpyHtoD_v2");
  sym(a.memcpy_dtoh, "cuMemcpyDtoH_v2");
  sym(a.memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
  sym(a.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
  sym(a.stream_synchronize, "cuStreamSynchronize");
  sym(a.get_error_string, "cuGetErrorString");
  sym(a.event_create, "cuEventCreate");
  sym(a.event_record, "cuEventRecord");
  sym(a.event_synchronize, "cuEventSynchronize");
  sym(a.event_elapsed_ms, "cuEventElapsedTime");
  sym(a.event_destroy, "cuEventDestroy_v2");
  if (!symbols.complete()) {
    out.error = cat("the CUDA driver ", a.path, " lacks ", symbols.first_missing(), hint);
    return out;
  }
  if (Driver::Result r = a.init(0); r != 0) {
    out.error = cat("the CUDA driver ", a.path, " could not initialize: ", a.error_text(r),
                    r == 34 ? " (this is the toolkit's stub library, not a real driver)" : "", hint);
    return out;
  }
  int count = 0;
  if (a.device_get_count(&count) != 0 || count == 0) {
    out.error = cat("the CUDA driver found no GPU", hint);
    return out;
  }
  // The first device, through its primary context (shared with the CUDA runtime, if used).
  if (Driver::Result r = a.device_get(&a.device, 0); r != 0) {
    out.error = cat("cuDeviceGet failed: ", a.error_text(r), hint);
    return out;
  }
  a.device_get_attribute(&a.cc_major, Driver::kAttrComputeCapabilityMajor, a.device);
  a.device_get_attribute(&a.cc_minor, Driver::kAttrComputeCapabilityMinor, a.device);
  a.device_get_attribute(&a.max_shared_optin, Driver::kAttrMaxSharedPerBlockOptin, a.device);
  a.device_get_attribute(&a.multiprocessors, Driver::kAttrMultiprocessorCount, a.device);
  char name[256] = {};
  if (a.device_get_name(name, static_cast<int>(sizeof name) - 1, a.device) == 0) a.name = name;
  if (Driver::Result r = a.primary_ctx_retain(&a.context, a.device); r != 0) {
    out.error = cat("cuDevicePrimaryCtxRetain failed: ", a.error_text(r), hint);
    return out;
  }
  out.ok = true;
  return out;
}

inline const DriverLoad& driver_load() {
  static const DriverLoad load = load_driver();
  return load;
}

}  // namespace detail

/// The initialized driver with device 0's primary context current on this thread; throws a
/// loom::Error (pointing to Target::cuda_sim()) when there is no driver or no GPU.
inline const Driver& driver() {
  const detail::DriverLoad& load = detail::driver_load();
  if (!load.ok) throw Error(load.error);
  load.api.check(load.api.ctx_set_current(load.api.context), "cuCtxSetCurrent");
  return load.api;
}

/// Whether a driver and a GPU are present (never throws).
inline bool driver_available() { return detail::driver_load().ok; }

/// Whether this process has loaded (or tried to load) the driver, or holds it loaded by other code (a
/// framework that initialized CUDA itself), without loading it. A process made by fork() after that
/// cannot use CUDA (the driver's state does not survive a fork), so lib's GPU tuners measure in
/// forked workers only while this is false (lib/gemm_device_timer.hpp).
inline bool driver_loaded() {
  if (detail::driver_load_begun().load()) return true;
  for (const char* name : detail::driver_library_names()) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {  // a reference only if already loaded
      dlclose(handle);
      return true;
    }
  }
  return false;
}

}  // namespace loom::runtime::cuda
