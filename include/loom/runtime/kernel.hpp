// Kernel: a compiled lowered function, callable as f(a, b, c) with loom::Buffer<T>, BufferView,
// DLTensor* and scalars. Cheap to copy (shared state); every call checks its arguments first.
// LLVM-free: the machine code comes from a CpuBackend (backend/cpu/llvm_backend.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/codegen/kernel_abi.hpp"
#include "loom/ir/dtype_arith.hpp"
#include "loom/ir/extern_call.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/device_runner.hpp"
#include "loom/runtime/jit_runtime.hpp"
#include "loom/support/target.hpp"

namespace loom {

/// Where build() found the machine code of a kernel.
enum class CacheOutcome : uint8_t {
  Compiled,   // generated and compiled by LLVM in this call
  MemoryHit,  // an earlier build in this process compiled the same function for the same target
  DiskHit,    // loaded from an object file in LOOM_CACHE_DIR
};

inline const char* cache_outcome_name(CacheOutcome o) {
  switch (o) {
    case CacheOutcome::Compiled: return "compiled";
    case CacheOutcome::MemoryHit: return "memory-hit";
    case CacheOutcome::DiskHit: return "disk-hit";
  }
  return "?";
}

namespace runtime {

/// The machine code of one lowered function for one target, shared by every Kernel built from it
/// and by the in-memory cache. `owner` keeps the code mapped (the JIT's JITDylib) while referenced.
struct CompiledCode {
  KernelEntry entry = nullptr;
  std::shared_ptr<void> owner;
  /// The resolved target: triple, CPU and features (part of the cache key).
  std::string target_description;
  /// CPU features the target needs and this host lacks ("" when the code can run here).
  std::string missing_host_features;
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
        "build(): this program has no CPU backend: include <loom/loom.hpp> in at least one of its source "
        "files and link the CMake target loom::jit (it needs LLVM 19, Debian package llvm-19-dev)");
  return *backend;
}

/// The buffer parameters whose memory the body writes (stores, extern stage outputs), by index.
inline std::vector<bool> written_buffer_params(const LoweredFunc& f) {
  std::unordered_set<const VarNode*> written;
  std::unordered_map<const VarNode*, const VarNode*> alias;  // LetStmt handle aliases
  struct Finder : IRVisitor {
    std::unordered_set<const VarNode*>& written;
    std::unordered_map<const VarNode*, const VarNode*>& alias;
    Finder(std::unordered_set<const VarNode*>& w, std::unordered_map<const VarNode*, const VarNode*>& a)
        : written(w), alias(a) {}
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      written.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const LetStmtNode* op) override {
      if (const VarNode* source = op->value.as<VarNode>(); source && op->var.dtype().is_handle())
        alias[op->var.get()] = source;
      IRVisitor::visit(op);
    }
    void visit(const CallNode* op) override {
      if (op->name == intrinsic::extern_stage) {
        for (const ExternBufferArg& b : ExternStageCall::decode(op).outputs) written.insert(b.data.get());
      } else if (op->call_kind == CallKind::Extern) {
        // A C function may write through any handle it receives.
        for (const Expr& a : op->args)
          if (const VarNode* v = a.as<VarNode>(); v && v->dtype.is_handle()) written.insert(v);
      }
      IRVisitor::visit(op);
    }
  } finder(written, alias);
  finder.visit_stmt(f.body);
  auto root = [&](const VarNode* v) {
    for (int guard = 0; guard < 64 && alias.count(v); ++guard) v = alias.at(v);
    return v;
  };
  std::unordered_set<const VarNode*> written_roots;
  for (const VarNode* v : written) written_roots.insert(root(v));
  std::vector<bool> out;
  for (const FuncParam& p : f.params)
    out.push_back(p.kind == FuncParam::Kind::Buffer && written_roots.count(p.buffer.data.get()) != 0);
  return out;
}

}  // namespace runtime

class Kernel;

namespace detail {
Kernel make_kernel(LoweredFunc f, Target target, runtime::CpuBackend::Result result,
                   runtime::CpuBackend* backend);
Kernel make_device_kernel(LoweredFunc f, Target target, std::shared_ptr<const runtime::DeviceRunner> device,
                          CacheOutcome outcome);
}  // namespace detail

class Kernel {
 public:
  /// An empty kernel; calling it throws. Get real ones from build().
  Kernel() = default;

  bool defined() const { return static_cast<bool>(state_); }

  /// Calls the kernel: f(a, b, c, n) with one argument per parameter, in order.
  template <typename... Args>
  requires(std::is_constructible_v<KernelArg, Args&&>&&...) void operator()(Args&&... args) const {
    call(std::vector<KernelArg>{KernelArg(std::forward<Args>(args))...});
  }
  void operator()(const std::vector<KernelArg>& args) const { call(args); }

  /// Checks every argument (throwing ArgumentError before any memory is touched), then runs the
  /// machine code. A failure inside the kernel (an assert, an integer division by zero, an extern
  /// stage that throws) becomes a loom::Error; what the kernel wrote until then stays written.
  void call(const std::vector<KernelArg>& args) const {
    const State& s = state();
    if (s.device) {  // a GPU target: the same checks, then the device backend runs it
      BoundArgs bound = bind_arguments(s.func, args);
      check_alignment(s, args);
      check_overlaps(s, bound);
      s.device->run(s.func, args, bound);
      return;
    }
    if (!s.code->missing_host_features.empty()) {
      throw Error(cat("kernel '", s.func.name, "' was built for ", s.target.str(), " (",
                      s.code->target_description, "), which needs CPU features this host lacks (",
                      s.code->missing_host_features,
                      "); its assembly() can be inspected, but to run it build for Target::cpu()"));
    }
    BoundArgs bound = bind_arguments(s.func, args);
    check_alignment(s, args);
    check_overlaps(s, bound);

    std::vector<void*> buffers(s.signature.buffers.size());
    std::vector<int64_t> ints(s.signature.ints.size());
    std::vector<double> floats(s.signature.floats.size());
    for (size_t i = 0; i < buffers.size(); ++i)
      buffers[i] = bound.buffers.at(s.signature.buffers[i].get()).data;
    for (size_t i = 0; i < ints.size(); ++i) {
      auto it = bound.scalars.find(s.signature.ints[i].get());
      internal_check(it != bound.scalars.end(), "kernel '", s.func.name, "': no value bound for '",
                     s.signature.ints[i].name(), "'");
      ints[i] = it->second;
    }
    for (size_t i = 0; i < floats.size(); ++i) {
      const Var& v = s.signature.floats[i];
      // As the interpreter: a double argument rounds once to the parameter's type (16-bit types
      // without double rounding); the kernel then narrows an exact value.
      floats[i] = arith::round_double_to(bound.float_scalars.at(v.get()), arith::float_format_of(v.dtype()));
    }
    runtime::CallContext context;
    int32_t status = s.code->entry(buffers.data(), ints.data(), floats.data(), &context);
    if (status != 0) {
      std::lock_guard<std::mutex> lock(context.mutex);
      throw Error(context.failed ? context.message
                                 : cat("kernel '", s.func.name, "' failed with status ", status));
    }
  }

  /// The lowered function this kernel was compiled from.
  const LoweredFunc& lowered() const { return state().func; }
  const Target& target() const { return state().target; }
  /// Whether build() compiled this kernel or found it in the memory or disk cache.
  CacheOutcome cache_outcome() const { return state().outcome; }
  /// The address of the machine code: equal for kernels that share compiled code.
  const void* code_address() const {
    const State& s = state();
    return s.device ? static_cast<const void*>(s.device.get()) : reinterpret_cast<const void*>(s.code->entry);
  }
  /// The resolved target: LLVM triple, CPU and features (for GPU targets: arch and compiler).
  const std::string& target_description() const {
    const State& s = state();
    if (s.device) {
      std::call_once(s.text_once[0], [&] { s.text[0] = s.device->description(); });
      return s.text[0];
    }
    return s.code->target_description;
  }

  /// The CUDA C of a kernel built for Target::cuda() or Target::cuda_sim().
  const std::string& source() const { return device("source()").source(); }
  /// The PTX NVRTC compiled source() to ("" for cuda_sim when NVRTC is absent).
  const std::string& ptx() const { return device("ptx()").ptx(); }
  /// The GPU simulator's report of the latest call of a Target::cuda_sim() kernel.
  SimReport sim_report() const {
    std::optional<SimReport> r = device("sim_report()").last_report();
    if (!r)
      throw Error(cat("kernel '", state().func.name,
                      "': sim_report() is for kernels built for Target::cuda_sim()",
                      " and called at least once; this one is built for ", state().target.str()));
    return *r;
  }

  /// The optimized LLVM IR (generated again from lowered() on first request, then kept).
  const std::string& llvm_ir() const { return text(runtime::CodeText::LLVMIR); }
  /// The machine code as assembly text (generated on first request, then kept).
  const std::string& assembly() const { return text(runtime::CodeText::Assembly); }

 private:
  friend Kernel detail::make_kernel(LoweredFunc, Target, runtime::CpuBackend::Result, runtime::CpuBackend*);
  friend Kernel detail::make_device_kernel(LoweredFunc, Target, std::shared_ptr<const runtime::DeviceRunner>,
                                           CacheOutcome);

  struct State {
    LoweredFunc func;
    Target target;
    runtime::KernelSignature signature;
    std::vector<bool> param_written;
    std::shared_ptr<const runtime::CompiledCode> code;
    CacheOutcome outcome = CacheOutcome::Compiled;
    runtime::CpuBackend* backend = nullptr;
    std::shared_ptr<const runtime::DeviceRunner> device;  // GPU targets
    mutable std::once_flag text_once[2];
    mutable std::string text[2];
    State(LoweredFunc f, Target t) : func(std::move(f)), target(std::move(t)) {}
  };

  const State& state() const {
    if (!state_) throw Error("this loom::Kernel is empty: get one from build(...) before calling it");
    return *state_;
  }

  const runtime::DeviceRunner& device(const char* what) const {
    const State& s = state();
    if (!s.device)
      throw Error(cat("kernel '", s.func.name, "': ", what, " is for kernels built for Target::cuda() or ",
                      "Target::cuda_sim(); this one is built for ", s.target.str(),
                      " (see llvm_ir(), assembly())"));
    return *s.device;
  }

  const std::string& text(runtime::CodeText what) const {
    const State& s = state();
    if (s.device)
      throw Error(cat("kernel '", s.func.name, "' is built for ", s.target.str(),
                      ", which has no LLVM IR or host assembly; see source() and ptx()"));
    const int i = static_cast<int>(what);
    std::call_once(s.text_once[i], [&] { s.text[i] = s.backend->text(s.func, s.target, what); });
    return s.text[i];
  }

  /// The code assumes each element is naturally aligned (an LLVM load of a float says align 4).
  static void check_alignment(const State& s, const std::vector<KernelArg>& args) {
    for (size_t i = 0; i < s.func.params.size(); ++i) {
      const FuncParam& p = s.func.params[i];
      if (p.kind != FuncParam::Kind::Buffer) continue;
      const uintptr_t address = reinterpret_cast<uintptr_t>(args[i].buffer.data);
      const uintptr_t align = static_cast<uintptr_t>(p.buffer.dtype.bytes());
      if (address % align != 0)
        throw ArgumentError(cat("argument '", p.buffer.name, "' of kernel '", s.func.name,
                                "' has its data at address ", args[i].buffer.data,
                                ", which is not aligned to ", align, " bytes (one ", p.buffer.dtype.str(),
                                " element): pass memory aligned to its element type"));
    }
  }

  /// The code gives distinct tensors distinct alias scopes (noalias), which is only sound when the
  /// memory a kernel writes through one parameter does not overlap another parameter's memory.
  static void check_overlaps(const State& s, const BoundArgs& bound) {
    const std::vector<FuncParam>& params = s.func.params;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!s.param_written[i]) continue;
      const BoundBuffer& w = bound.buffers.at(params[i].buffer.data.get());
      for (size_t j = 0; j < params.size(); ++j) {
        if (j == i || params[j].kind != FuncParam::Kind::Buffer) continue;
        const BoundBuffer& o = bound.buffers.at(params[j].buffer.data.get());
        if (w.begin == w.end || o.begin == o.end) continue;
        auto lo = [](const BoundBuffer& b) {
          return reinterpret_cast<uintptr_t>(b.data) + b.begin * b.dtype.bytes();
        };
        auto hi = [](const BoundBuffer& b) {
          return reinterpret_cast<uintptr_t>(b.data) + b.end * b.dtype.bytes();
        };
        if (lo(w) < hi(o) && lo(o) < hi(w))
          throw ArgumentError(cat("arguments '", params[i].buffer.name, "' and '", params[j].buffer.name,
                                  "' of kernel '", s.func.name,
                                  "' overlap in memory, and the kernel writes '", params[i].buffer.name,
                                  "': compiled kernels assume distinct tensors do not alias; pass separate "
                                  "buffers (copy one of them first)"));
      }
    }
  }

  std::shared_ptr<const State> state_;
};

namespace detail {
inline Kernel make_kernel(LoweredFunc f, Target target, runtime::CpuBackend::Result result,
                          runtime::CpuBackend* backend) {
  auto state = std::make_shared<Kernel::State>(std::move(f), std::move(target));
  state->signature = runtime::kernel_signature(state->func);
  state->param_written = runtime::written_buffer_params(state->func);
  state->code = std::move(result.code);
  state->outcome = result.outcome;
  state->backend = backend;
  Kernel k;
  k.state_ = std::move(state);
  return k;
}

inline Kernel make_device_kernel(LoweredFunc f, Target target,
                                 std::shared_ptr<const runtime::DeviceRunner> device, CacheOutcome outcome) {
  auto state = std::make_shared<Kernel::State>(std::move(f), std::move(target));
  state->param_written = runtime::written_buffer_params(state->func);
  state->device = std::move(device);
  state->outcome = outcome;
  Kernel k;
  k.state_ = std::move(state);
  return k;
}
}  // namespace detail

}  // namespace loom
