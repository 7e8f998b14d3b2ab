// The C functions JIT-compiled kernels call at run time (heap allocation, errors, the thread pool,
// extern stages, emulated AMX tiles), and the per-call context they report errors into. Generated code refers
// to them by name; the JIT binds the names to these addresses in every process, so cached object files stay
// valid across processes.
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "loom/runtime/amx_emulation.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/runtime/thread_pool.hpp"
#include "loom/runtime/workspace_pool.hpp"
#include "loom/te/extern_registry.hpp"

namespace loom::runtime {

/// What one kernel call shares with the code it runs: the first error any thread reports.
struct CallContext {
  std::mutex mutex;
  bool failed = false;
  std::string message;

  void fail(std::string text) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed) return;  // the first error is the one the caller sees
    failed = true;
    message = std::move(text);
  }
};

/// Heap allocations above this size are refused, as the interpreter refuses them.
inline constexpr int64_t kMaxAllocationBytes = int64_t{1} << 40;

// The generated code calls these with the C calling convention. They never throw: an exception
// cannot unwind through JIT-compiled frames, so every failure becomes a status.
extern "C" {

/// Records `message` (a NUL-terminated string in the kernel's constant data) as the call's error.
inline void loom_rt_error(void* ctx, const char* message) { static_cast<CallContext*>(ctx)->fail(message); }

/// 64-byte aligned memory for an Allocate of `rank` extents of `element_bytes` each, zero-filled
/// unless `zero_fill` is 0 (the code generator proved that the kernel writes all of it before
/// reading any: codegen/written_before_read.hpp), or null after recording why (a negative extent, a
/// size beyond kMaxAllocationBytes, no memory). `name` is the buffer's name for the message. From the
/// WorkspacePool, which keeps large blocks for the next call.
inline void* loom_rt_alloc(void* ctx, const char* name, int64_t element_bytes, int32_t rank,
                           const int64_t* extents, int32_t zero_fill) {
  auto* context = static_cast<CallContext*>(ctx);
  int64_t bytes = element_bytes;
  for (int32_t d = 0; d < rank; ++d) {
    if (extents[d] < 0) {
      context->fail(cat("allocate of buffer '", name, "': extent ", d, " is negative (", extents[d], ")"));
      return nullptr;
    }
    if (__builtin_mul_overflow(bytes, extents[d], &bytes) || bytes > kMaxAllocationBytes) {
      context->fail(cat("allocate of buffer '", name, "' asks for more than ", kMaxAllocationBytes,
                        " bytes; Loom refuses allocations this large"));
      return nullptr;
    }
  }
  void* memory = WorkspacePool::global().allocate(static_cast<size_t>(bytes), zero_fill != 0);
  if (!memory) {
    context->fail(cat("allocate of buffer '", name, "': out of memory for ", bytes, " bytes"));
    return nullptr;
  }
  return memory;
}

inline void loom_rt_free(void* memory) { WorkspacePool::global().free(memory); }

/// Runs a parallel loop's outlined body over [0, n) on the thread pool.
inline int32_t loom_rt_parallel_for(void* ctx, int64_t n, ParallelBody body, void* closure) {
  return ThreadPool::global().parallel_for(n, body, closure, ctx);
}

/// Calls extern stage `function_id` of the ExternRegistry. `encoded` holds, for every input then
/// every output buffer: its address, packed dtype (ExternStageCall::pack_dtype), rank r, r extents
/// and r strides, as int64 values.
inline int32_t loom_rt_extern_stage(void* ctx, int64_t function_id, int32_t num_inputs, int32_t num_outputs,
                                    const int64_t* encoded) {
  try {
    std::vector<BufferView> inputs, outputs;
    size_t pos = 0;
    auto take = [&]() {
      void* data = reinterpret_cast<void*>(static_cast<uintptr_t>(encoded[pos++]));
      int64_t packed = encoded[pos++];
      DType dtype(static_cast<TypeCode>(packed & 0xff), static_cast<int>((packed >> 8) & 0xff),
                  static_cast<int>(packed >> 16));
      int64_t rank = encoded[pos++];
      std::vector<int64_t> shape(encoded + pos, encoded + pos + rank);
      pos += static_cast<size_t>(rank);
      std::vector<int64_t> strides(encoded + pos, encoded + pos + rank);
      pos += static_cast<size_t>(rank);
      return BufferView(data, dtype, std::move(shape), std::move(strides));
    };
    for (int32_t i = 0; i < num_inputs; ++i) inputs.push_back(take());
    for (int32_t i = 0; i < num_outputs; ++i) outputs.push_back(take());
    (*ExternRegistry::global().function(function_id))(inputs, outputs);
    return 0;
  } catch (const std::exception& e) {
    static_cast<CallContext*>(ctx)->fail(
        cat("extern stage '", ExternRegistry::global().name(function_id), "' failed: ", e.what()));
  } catch (...) {
    static_cast<CallContext*>(ctx)->fail(cat("extern stage '", ExternRegistry::global().name(function_id),
                                             "' threw a non-standard exception"));
  }
  return -1;
}

/// Target::set_amx_emulation()'s stand-ins for the AMX tile instructions (runtime/amx_emulation.hpp):
/// a tile is 1 KiB of the kernel's stack; `instruction` an AmxInstruction.
/// @{
inline void loom_rt_amx_load(void* tile, int32_t rows, const void* base, int64_t stride_bytes) {
  amx_load(*static_cast<AmxTile*>(tile), rows, static_cast<const std::byte*>(base), stride_bytes);
}
inline void loom_rt_amx_zero(void* tile) { std::memset(tile, 0, sizeof(AmxTile)); }
inline void loom_rt_amx_store(const void* tile, int32_t rows, void* base, int64_t stride_bytes) {
  amx_store(*static_cast<const AmxTile*>(tile), rows, static_cast<std::byte*>(base), stride_bytes);
}
inline void loom_rt_amx_dot(int32_t instruction, void* out, const void* acc, const void* a, const void* b,
                            int32_t rows) {
  amx_dot(static_cast<AmxInstruction>(instruction), *static_cast<AmxTile*>(out),
          *static_cast<const AmxTile*>(acc), *static_cast<const AmxTile*>(a), *static_cast<const AmxTile*>(b),
          rows);
}
/// @}

}  // extern "C"

/// One runtime function: the name generated code calls and its address in this process.
struct RuntimeSymbol {
  const char* name;
  void* address;
};

/// Every runtime function the JIT makes visible to kernels.
inline std::vector<RuntimeSymbol> runtime_symbols() {
  return {
      {"loom_rt_error", reinterpret_cast<void*>(&loom_rt_error)},
      {"loom_rt_alloc", reinterpret_cast<void*>(&loom_rt_alloc)},
      {"loom_rt_free", reinterpret_cast<void*>(&loom_rt_free)},
      {"loom_rt_parallel_for", reinterpret_cast<void*>(&loom_rt_parallel_for)},
      {"loom_rt_extern_stage", reinterpret_cast<void*>(&loom_rt_extern_stage)},
      {"loom_rt_amx_load", reinterpret_cast<void*>(&loom_rt_amx_load)},
      {"loom_rt_amx_zero", reinterpret_cast<void*>(&loom_rt_amx_zero)},
      {"loom_rt_amx_store", reinterpret_cast<void*>(&loom_rt_amx_store)},
      {"loom_rt_amx_dot", reinterpret_cast<void*>(&loom_rt_amx_dot)},
  };
}

}  // namespace loom::runtime
