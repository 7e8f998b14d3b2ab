// The definitions of runtime/kernel.hpp: a call checks its arguments, then runs the machine code
// (or hands the call to the GPU target's DeviceRunner); the text accessors regenerate on request.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/runtime/kernel.hpp");

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/dtype_arith.hpp"
#include "loom/runtime/amx_permission.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/jit_runtime.hpp"
#include "loom/runtime/kernel.hpp"
#include "loom/runtime/kernel_state.hpp"

namespace loom {

LOOM_DECL const char* cache_outcome_name(CacheOutcome o) {
  switch (o) {
    case CacheOutcome::Compiled: return "compiled";
    case CacheOutcome::MemoryHit: return "memory-hit";
    case CacheOutcome::DiskHit: return "disk-hit";
  }
  return "?";
}

namespace detail {

inline const runtime::KernelState& kernel_state(const std::shared_ptr<const runtime::KernelState>& s) {
  if (!s) throw Error("this loom::Kernel is empty: get one from build(...) before calling it");
  return *s;
}

inline const runtime::DeviceRunner& kernel_device(const runtime::KernelState& s, const char* what) {
  if (!s.device)
    throw Error(cat("kernel '", s.func.name, "': ", what, " is for kernels built for Target::cuda() or ",
                    "Target::cuda_sim(); this one is built for ", s.target.str(),
                    " (see llvm_ir(), assembly())"));
  return *s.device;
}

inline const std::string& kernel_text(const runtime::KernelState& s, runtime::CodeText what) {
  if (s.device)
    throw Error(cat("kernel '", s.func.name, "' is built for ", s.target.str(),
                    ", which has no LLVM IR or host assembly; see source() and ptx()"));
  const int i = static_cast<int>(what);
  std::call_once(s.text_once[i], [&] { s.text[i] = s.backend->text(s.func, s.target, what); });
  return s.text[i];
}

/// The code assumes each element is naturally aligned (an LLVM load of a float says align 4).
inline void check_alignment(const runtime::KernelState& s, const std::vector<KernelArg>& args) {
  for (size_t i = 0; i < s.func.params.size(); ++i) {
    const FuncParam& p = s.func.params[i];
    if (p.kind != FuncParam::Kind::Buffer) continue;
    const uintptr_t address = reinterpret_cast<uintptr_t>(args[i].buffer.data);
    const uintptr_t align = static_cast<uintptr_t>(p.buffer.dtype.bytes());
    if (address % align != 0)
      throw ArgumentError(cat("argument '", p.buffer.name, "' of kernel '", s.func.name,
                              "' has its data at address ", args[i].buffer.data, ", which is not aligned to ",
                              align, " bytes (one ", p.buffer.dtype.str(),
                              " element): pass memory aligned to its element type"));
  }
}

/// CUDA device memory used in place (a kDLCUDA DLTensor) must also meet what the GPU code assumes
/// of element 0 (16 bytes for a float4 or a 16-byte cp.async): cuMemAlloc's memory does, a view
/// at an odd offset into it may not, and a misaligned vector access fails the whole launch.
inline void check_device_alignment(const runtime::KernelState& s, const std::vector<KernelArg>& args,
                                   const BoundArgs& bound) {
  for (size_t i = 0; i < s.func.params.size(); ++i) {
    const FuncParam& p = s.func.params[i];
    if (p.kind != FuncParam::Kind::Buffer || !bound.buffers.at(p.buffer.data.get()).on_cuda_device) continue;
    const int align = s.device->assumed_alignment(p.buffer.data.get());
    const uintptr_t address = reinterpret_cast<uintptr_t>(args[i].buffer.data);
    if (align > p.buffer.dtype.bytes() && address % static_cast<uintptr_t>(align) != 0)
      throw ArgumentError(
          cat("argument '", p.buffer.name, "' of kernel '", s.func.name,
              "' is CUDA device memory at address ", args[i].buffer.data, ", which is not aligned to ", align,
              " bytes, and the kernel's code accesses it ", align,
              " bytes at a time (vector loads/stores or cp.async) from a ", align,
              "-byte aligned element 0: pass a tensor whose data (with its byte_offset) is ", align,
              "-byte aligned, as cuMemAlloc's is, or host memory (Loom then copies it)"));
  }
}

/// The code gives distinct tensors distinct alias scopes (noalias), which is only sound when the
/// memory a kernel writes through one parameter does not overlap another parameter's memory.
inline void check_overlaps(const runtime::KernelState& s, const BoundArgs& bound) {
  const std::vector<FuncParam>& params = s.func.params;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!s.param_written[i]) continue;
    const BoundBuffer& w = bound.buffers.at(params[i].buffer.data.get());
    for (size_t j = 0; j < params.size(); ++j) {
      if (j == i || params[j].kind != FuncParam::Kind::Buffer) continue;
      const BoundBuffer& o = bound.buffers.at(params[j].buffer.data.get());
      if (w.begin == w.end || o.begin == o.end) continue;
      if (w.on_cuda_device != o.on_cuda_device) continue;  // host memory is copied to memory of its own
      auto lo = [](const BoundBuffer& b) {
        return reinterpret_cast<uintptr_t>(b.data) + b.begin * b.dtype.bytes();
      };
      auto hi = [](const BoundBuffer& b) {
        return reinterpret_cast<uintptr_t>(b.data) + b.end * b.dtype.bytes();
      };
      if (lo(w) < hi(o) && lo(o) < hi(w))
        throw ArgumentError(cat("arguments '", params[i].buffer.name, "' and '", params[j].buffer.name,
                                "' of kernel '", s.func.name, "' overlap in memory, and the kernel writes '",
                                params[i].buffer.name,
                                "': compiled kernels assume distinct tensors do not alias; pass separate "
                                "buffers (copy one of them first)"));
    }
  }
}

}  // namespace detail

LOOM_DECL void Kernel::call(const std::vector<KernelArg>& args) const {
  const runtime::KernelState& s = detail::kernel_state(state_);
  if (s.device) {  // a GPU target: the same checks, then the device backend runs it
    BoundArgs bound =
        bind_arguments(s.func, args, /*accept_cuda_memory=*/s.target.kind() == TargetKind::CUDA);
    detail::check_alignment(s, args);
    detail::check_device_alignment(s, args, bound);
    detail::check_overlaps(s, bound);
    s.device->run(s.func, args, bound);
    return;
  }
  if (!s.code->missing_host_features.empty()) {
    throw Error(cat("kernel '", s.func.name, "' was built for ", s.target.str(), " (",
                    s.code->target_description, "), which needs CPU features this host lacks (",
                    s.code->missing_host_features,
                    "); its assembly() can be inspected, but to run it build for Target::cpu()"));
  }
  if (s.code->uses_amx_tiles) {
    if (const std::string& refusal = runtime::request_amx_permission(); !refusal.empty())
      throw Error(cat("kernel '", s.func.name, "' uses AMX tiles, but this process cannot: ", refusal));
  }
  BoundArgs bound = bind_arguments(s.func, args);
  detail::check_alignment(s, args);
  detail::check_overlaps(s, bound);

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

LOOM_DECL const LoweredFunc& Kernel::lowered() const { return detail::kernel_state(state_).func; }
LOOM_DECL const Target& Kernel::target() const { return detail::kernel_state(state_).target; }
LOOM_DECL CacheOutcome Kernel::cache_outcome() const { return detail::kernel_state(state_).outcome; }

LOOM_DECL const void* Kernel::code_address() const {
  const runtime::KernelState& s = detail::kernel_state(state_);
  return s.device ? static_cast<const void*>(s.device.get()) : reinterpret_cast<const void*>(s.code->entry);
}

LOOM_DECL const std::string& Kernel::target_description() const {
  const runtime::KernelState& s = detail::kernel_state(state_);
  if (s.device) {
    std::call_once(s.text_once[0], [&] { s.text[0] = s.device->description(); });
    return s.text[0];
  }
  return s.code->target_description;
}

LOOM_DECL const std::string& Kernel::source() const {
  return detail::kernel_device(detail::kernel_state(state_), "source()").source();
}

LOOM_DECL const std::string& Kernel::ptx() const {
  return detail::kernel_device(detail::kernel_state(state_), "ptx()").ptx();
}

LOOM_DECL SimReport Kernel::sim_report() const {
  const runtime::KernelState& s = detail::kernel_state(state_);
  std::optional<SimReport> r = detail::kernel_device(s, "sim_report()").last_report();
  if (!r)
    throw Error(cat("kernel '", s.func.name, "': sim_report() is for kernels built for Target::cuda_sim()",
                    " and called at least once; this one is built for ", s.target.str()));
  return *r;
}

LOOM_DECL double Kernel::last_device_ms() const {
  const runtime::KernelState& s = detail::kernel_state(state_);
  std::optional<double> ms = detail::kernel_device(s, "last_device_ms()").last_device_ms();
  if (!ms)
    throw Error(cat("kernel '", s.func.name, "': last_device_ms() is for kernels built for Target::cuda()",
                    " and called at least once on a GPU; this one is built for ", s.target.str(),
                    s.target.kind() == TargetKind::CUDA ? " and has no completed call yet" : ""));
  return *ms;
}

LOOM_DECL void Kernel::set_cuda_stream(void* stream) {
  const runtime::KernelState& s = detail::kernel_state(state_);
  if (!s.device || !s.device->set_stream(stream))
    throw Error(cat("kernel '", s.func.name,
                    "': set_cuda_stream() is for kernels built for Target::cuda(); this ",
                    "one is built for ", s.target.str(),
                    ", whose calls run one after another on the CPU, with no CUDA streams"));
}

LOOM_DECL const std::string& Kernel::llvm_ir() const {
  return detail::kernel_text(detail::kernel_state(state_), runtime::CodeText::LLVMIR);
}

LOOM_DECL const std::string& Kernel::assembly() const {
  return detail::kernel_text(detail::kernel_state(state_), runtime::CodeText::Assembly);
}

}  // namespace loom
