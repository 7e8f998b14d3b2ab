// The LLVM CPU backend behind build(): looks a lowered function up in the memory cache, then the
// disk cache, and otherwise generates LLVM IR, runs O3, emits an object file (stored on disk) and
// links it into the ORC JIT. Including this header registers the backend with build().
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "loom/backend/cpu/orc_jit.hpp"
#include "loom/codegen/llvm/codegen.hpp"
#include "loom/codegen/llvm/optimize.hpp"
#include "loom/codegen/llvm/target_machine.hpp"
#include "loom/runtime/cpu_backend.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/support/file_name.hpp"

namespace loom::codegen {

class LlvmCpuBackend final : public runtime::CpuBackend {
 public:
  /// Bump when generated code changes for the same IR: it is part of every cache key, so old
  /// entries on disk stop matching instead of running stale code. 2-4: float exp, log, tanh, erf as
  /// inline polynomials; 5: copies of 16-bit floats move their bits; 6: double exp, log, tanh as
  /// inline polynomials; 7: double erf too; 8: log's reduction in integer arithmetic; 9: prefetches
  /// in their buffer's alias scope; 10: exp rounds n with one instruction; 11: allocations written
  /// whole before any read are not zero-filled (loom_rt_alloc takes a sixth argument); 12: float
  /// log's reduction to [3/4, 3/2), by vgetmantps / vgetexpps on 16 lanes of AVX-512; 13: a masked
  /// load of one address is a scalar load, and masked accesses inside a stack slot are whole ones;
  /// 16: float tanh and erf from tables of polynomials; 17: loops marked nontemporal_stores stream
  /// their whole-vector stores to parameters; 19: gathers and scatters of a few contiguous runs are
  /// vector accesses and shuffles; 20: a buffer an AMX tile product from zero writes whole is not
  /// zero-filled; 21: masked runs take plain loads where every lane is active, and a ramp under a
  /// border's clamp or select one vector load where every lane is inside.
  static constexpr int kCodegenVersion = 21;

  static LlvmCpuBackend& instance() {
    static LlvmCpuBackend* backend = new LlvmCpuBackend();
    return *backend;
  }

  Result compile(const LoweredFunc& f, const Target& target, const std::string& dump_dir) override {
    const ResolvedTarget resolved = resolve_target(target);
    const std::string description = resolved.description();
    const std::string salt = cat("loom-cpu-codegen-v", kCodegenVersion, "|", description);
    const runtime::FunctionKeyParts parts(f);
    const uint64_t key = parts.hash(salt);

    runtime::MemoryKernelCache& memory = runtime::MemoryKernelCache::global();
    runtime::MemoryKernelCache::Lookup found = memory.find_or_reserve(key, f, description);
    if (!found.reservation) {
      Result hit{found.code.get(), CacheOutcome::MemoryHit};  // waits if another thread compiles it
      if (!dump_dir.empty()) dump(f, dump_dir, "", text(f, target, runtime::CodeText::LLVMIR));
      return hit;
    }
    try {
      Result result = compile_or_load(
          f, resolved, runtime::DiskKernelCache::Key{key, parts.hash(salt + "|confirm"), description},
          dump_dir);
      memory.fulfil(*found.reservation, result.code);
      return result;
    } catch (...) {
      memory.abandon(*found.reservation, std::current_exception());
      throw;
    }
  }

  std::string text(const LoweredFunc& f, const Target& target, runtime::CodeText what) override {
    return text_for(f, resolve_target(target), what);
  }

 private:
  LlvmCpuBackend()
      : time_phases_(std::getenv("LOOM_TIME_PASSES") && std::string(std::getenv("LOOM_TIME_PASSES")) != "0") {
  }

  /// Extern stages are called by their ExternRegistry id, which depends on the order this process
  /// registered them: such object code is only valid here, so it stays out of the disk cache.
  static bool disk_cacheable(const LoweredFunc& f) {
    bool extern_stage = false;
    for_each_expr(f.body, [&](const Expr& e) {
      if (const CallNode* c = e.as<CallNode>(); c && c->name == intrinsic::extern_stage) extern_stage = true;
    });
    return !extern_stage;
  }

  Result compile_or_load(const LoweredFunc& f, const ResolvedTarget& resolved,
                         const runtime::DiskKernelCache::Key& key, const std::string& dump_dir) {
    const std::string symbol = entry_symbol(f);
    std::optional<std::filesystem::path> dir;
    if (disk_cacheable(f)) dir = runtime::DiskKernelCache::directory();
    if (dir) {
      Stopwatch watch(time_phases_, "disk cache lookup (+ link on a hit)");
      if (std::optional<std::string> object = runtime::DiskKernelCache::load(*dir, key)) {
        try {
          Result hit{link(*object, symbol, f, resolved), CacheOutcome::DiskHit};
          if (!dump_dir.empty()) dump(f, dump_dir, "", text_for(f, resolved, runtime::CodeText::LLVMIR));
          return hit;
        } catch (const Error&) {
          // An entry that does not link (written by an incompatible build): compile it again.
        }
      }
    }
    std::string object = compile_to_object(f, resolved, dump_dir);
    if (dir) runtime::DiskKernelCache::store(*dir, key, object);
    Stopwatch watch(time_phases_, "link");
    return Result{link(object, symbol, f, resolved), CacheOutcome::Compiled};
  }

  std::shared_ptr<const runtime::CompiledCode> link(const std::string& object, const std::string& symbol,
                                                    const LoweredFunc& f, const ResolvedTarget& resolved) {
    runtime::OrcJit::Linked linked = runtime::OrcJit::global().link(object, symbol, f.name);
    auto code = std::make_shared<runtime::CompiledCode>();
    code->entry = linked.entry;
    code->owner = std::move(linked.owner);
    code->target_description = resolved.description();
    code->missing_host_features = resolved.missing_host_features;
    for_each_expr(f.body, [&](const Expr& e) {
      if (const CallNode* c = e.as<CallNode>(); c && c->name == intrinsic::amx_tile_product)
        code->uses_amx_tiles = !resolved.amx_emulation;
    });
    return code;
  }

  std::unique_ptr<llvm::Module> generate(llvm::LLVMContext& context, const LoweredFunc& f,
                                         const ResolvedTarget& resolved, llvm::TargetMachine& tm) {
    Stopwatch watch(time_phases_, "codegen (loop IR -> LLVM IR)");
    std::unique_ptr<llvm::Module> module =
        CodeGenLLVM(context, f, resolved, tm.createDataLayout()).generate();
    verify_module(*module);
    return module;
  }

  std::string compile_to_object(const LoweredFunc& f, const ResolvedTarget& resolved,
                                const std::string& dump_dir) {
    QuietContext context;
    std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(resolved);
    std::unique_ptr<llvm::Module> module = generate(context.get(), f, resolved, *tm);
    if (!dump_dir.empty()) dump(f, dump_dir, "_unoptimized", print_module(*module));
    {
      Stopwatch watch(time_phases_, "LLVM O3");
      optimize_module(*module, *tm);
    }
    if (!dump_dir.empty()) dump(f, dump_dir, "", print_module(*module));
    Stopwatch watch(time_phases_, "LLVM machine code");
    std::string object = emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
    context.check(f.name);
    return object;
  }

  std::string text_for(const LoweredFunc& f, const ResolvedTarget& resolved, runtime::CodeText what) {
    QuietContext context;
    std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(resolved);
    std::unique_ptr<llvm::Module> module = generate(context.get(), f, resolved, *tm);
    optimize_module(*module, *tm);
    std::string text = what == runtime::CodeText::LLVMIR
                           ? print_module(*module)
                           : emit_machine_code(*module, *tm, llvm::CodeGenFileType::AssemblyFile);
    context.check(f.name);
    return text;
  }

  /// LOOM_DUMP_IR: dir/<kernel>/llvm_ir<suffix>.ll, next to the loop IR lower() writes there.
  static void dump(const LoweredFunc& f, const std::string& dump_dir, const std::string& suffix,
                   const std::string& text) {
    std::filesystem::path dir = std::filesystem::path(dump_dir) / loom::detail::sanitize_file_name(f.name);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream(dir / ("llvm_ir" + suffix + ".ll")) << text;
  }

  /// Prints a phase's time to stderr when LOOM_TIME_PASSES is set, like lower() does for passes.
  struct Stopwatch {
    bool on;
    const char* what;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    Stopwatch(bool enabled, const char* name) : on(enabled), what(name) {}
    ~Stopwatch() {
      if (!on) return;
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "loom jit  %-38s %9.3f ms\n", what, ms);
    }
  };

  const bool time_phases_;
};

namespace detail {
/// Registers the backend when any translation unit of the program includes this header.
inline const bool llvm_cpu_backend_registered = runtime::register_cpu_backend(&LlvmCpuBackend::instance());
}  // namespace detail

}  // namespace loom::codegen
