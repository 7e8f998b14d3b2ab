// The CPU code generator behind build(), as the LLVM-free rest of Loom sees it: an interface the
// LLVM backend (backend/cpu/llvm_backend.hpp) implements and registers, so that the front end and
// the runtime need no LLVM headers.
#pragma once

#include <memory>
#include <string>

#include "loom/codegen/kernel_abi.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/kernel.hpp"
#include "loom/support/error.hpp"
#include "loom/support/target.hpp"

namespace loom::runtime {

/// The machine code of one lowered function for one target, shared by every Kernel built from it
/// and by the in-memory cache. `owner` keeps the code mapped (the JIT's JITDylib) while referenced.
struct CompiledCode {
  KernelEntry entry = nullptr;
  std::shared_ptr<void> owner;
  /// The resolved target: triple, CPU and features (part of the cache key).
  std::string target_description;
  /// CPU features the target needs and this host lacks ("" when the code can run here).
  std::string missing_host_features;
  /// Whether the code uses AMX tiles: the runtime asks Linux for the tile state before it runs.
  bool uses_amx_tiles = false;
};

/// What an inspection asks the backend to regenerate.
enum class CodeText : uint8_t { LLVMIR, Assembly };

/// A CPU code generator: the LLVM backend implements it and registers itself (see
/// register_cpu_backend); build() dispatches to it, so translation units that only call kernels
/// need no LLVM headers.
class CpuBackend {
 public:
  virtual ~CpuBackend() = default;
  struct Result {
    std::shared_ptr<const CompiledCode> code;
    CacheOutcome outcome = CacheOutcome::Compiled;
  };
  /// Compiles f for target (or finds it in a cache). dump_dir: where to write the LLVM IR ("": no).
  virtual Result compile(const LoweredFunc& f, const Target& target, const std::string& dump_dir) = 0;
  /// The optimized LLVM IR or the assembly of f for target, generated again on request.
  virtual std::string text(const LoweredFunc& f, const Target& target, CodeText what) = 0;
};

inline CpuBackend*& cpu_backend_slot() {
  static CpuBackend* backend = nullptr;
  return backend;
}

/// Called once by the backend's header (through an inline variable's initializer).
inline bool register_cpu_backend(CpuBackend* backend) {
  cpu_backend_slot() = backend;
  return true;
}

inline CpuBackend& cpu_backend() {
  CpuBackend* backend = cpu_backend_slot();
  if (!backend)
    throw Error(
        "build(): this program has no CPU backend: link the CMake target loom::jit (it needs LLVM 19, "
        "Debian package llvm-19-dev); without CMake, include <loom/loom.hpp> header-only in one of the "
        "program's source files, or compile <loom/impl/src_jit.hpp> into it, and link LLVM 19");
  return *backend;
}

}  // namespace loom::runtime
