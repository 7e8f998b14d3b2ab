// A stand-in for libcuda.so.1 with the entry points Loom's driver loader needs (backend/cuda/
// driver.hpp), for tests on machines without a GPU: one sm_80 device, host memory as device
// memory, kernels that are recorded but not run. Every call that orders or moves work (launches,
// copies, waits, events) is appended to a log the test reads through loom_fake_cuda_log(), so the
// test can check on which stream each was queued and what was waited for.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

std::mutex log_mutex;
std::string call_log;

void log_call(const std::string& entry) {
  std::lock_guard<std::mutex> lock(log_mutex);
  call_log += entry + "\n";
}

std::string pointer_text(const void* p) { return p ? std::to_string(reinterpret_cast<uintptr_t>(p)) : "0"; }

}  // namespace

extern "C" {

using CUresult = int;

/// The calls so far, one per line ("launch main_kernel0 stream=4096"); cleared by the next call
/// with `clear` set.
const char* loom_fake_cuda_log(int clear) {
  static std::string copy;
  std::lock_guard<std::mutex> lock(log_mutex);
  copy = call_log;
  if (clear) call_log.clear();
  return copy.c_str();
}

CUresult cuInit(unsigned) { return 0; }
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return 0;
}
CUresult cuDeviceGet(int* d, int) {
  *d = 0;
  return 0;
}
CUresult cuDeviceGetAttribute(int* v, int attribute, int) {
  switch (attribute) {
    case 75: *v = 8; break;           // compute capability major
    case 76: *v = 0; break;           // minor
    case 97: *v = 163 * 1024; break;  // shared memory per block, opt-in
    case 16: *v = 108; break;         // multiprocessors
    default: *v = 0;
  }
  return 0;
}
CUresult cuDeviceGetName(char* name, int length, int) {
  std::strncpy(name, "Fake A100", static_cast<size_t>(length));
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int context;
  *ctx = &context;
  return 0;
}
CUresult cuCtxSetCurrent(void*) { return 0; }
CUresult cuCtxSynchronize() {
  log_call("ctx_synchronize");
  return 0;
}
CUresult cuModuleLoadData(void** module, const void*) {
  static int loaded;
  *module = &loaded;
  return 0;
}
CUresult cuModuleUnload(void*) { return 0; }
CUresult cuModuleGetFunction(void** fn, void*, const char* name) {
  *fn = strdup(name);  // the function is its name, for the log (a few bytes per kernel, kept)
  return 0;
}
CUresult cuFuncSetAttribute(void*, int, int) { return 0; }
CUresult cuFuncGetAttribute(int* v, int, void*) {
  *v = 32;
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void*, int, size_t) {
  *n = 4;
  return 0;
}
CUresult cuLaunchKernel(void* fn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void* stream, void**, void**) {
  log_call(std::string("launch ") + static_cast<const char*>(fn) + " stream=" + pointer_text(stream));
  return 0;
}
CUresult cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
  *p = reinterpret_cast<unsigned long long>(std::malloc(bytes));
  return *p ? 0 : 2;  // CUDA_ERROR_OUT_OF_MEMORY
}
CUresult cuMemFree_v2(unsigned long long p) {
  std::free(reinterpret_cast<void*>(p));
  return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long to, const void* from, size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(to), from, bytes);
  log_call("copy_to_device");
  return 0;
}
CUresult cuMemcpyDtoH_v2(void* to, unsigned long long from, size_t bytes) {
  std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
  log_call("copy_to_host");
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long to, const void* from, size_t bytes, void* stream) {
  std::memcpy(reinterpret_cast<void*>(to), from, bytes);
  log_call("copy_to_device stream=" + pointer_text(stream));
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void* to, unsigned long long from, size_t bytes, void* stream) {
  std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
  log_call("copy_to_host stream=" + pointer_text(stream));
  return 0;
}
CUresult cuStreamSynchronize(void* stream) {
  log_call("stream_synchronize stream=" + pointer_text(stream));
  return 0;
}
CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "fake driver error";
  return 0;
}
CUresult cuEventCreate(void** event, unsigned) {
  *event = new int(0);
  return 0;
}
CUresult cuEventRecord(void*, void* stream) {
  log_call("event stream=" + pointer_text(stream));
  return 0;
}
CUresult cuEventSynchronize(void*) { return 0; }
CUresult cuEventElapsedTime(float* ms, void*, void*) {
  *ms = 0.25f;
  return 0;
}
CUresult cuEventDestroy_v2(void* event) {
  delete static_cast<int*>(event);
  return 0;
}

}  // extern "C"
