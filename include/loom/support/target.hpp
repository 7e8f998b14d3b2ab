// Target: what build() compiles for. Target::cpu() is the host CPU with its detected features;
// Target::cpu("x86-64-v3") names an LLVM CPU instead. No LLVM headers: the backend resolves it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace loom {

/// The kinds of targets Loom knows; build() for CPU is the LLVM ORC JIT backend.
enum class TargetKind : uint8_t {
  CPU,      ///< LLVM ORC JIT on the host
  CUDA,     ///< NVRTC + CUDA Driver API (another backend)
  CUDASim,  ///< CUDA lowering run by the interpreter (another backend)
};

/// The name of a TargetKind: "cpu", "cuda" or "cuda_sim".
inline const char* target_kind_name(TargetKind k) {
  switch (k) {
    case TargetKind::CPU: return "cpu";
    case TargetKind::CUDA: return "cuda";
    case TargetKind::CUDASim: return "cuda_sim";
  }
  return "?";
}

/// What build() compiles for: the host CPU (LLVM JIT, optionally another CPU or feature set),
/// an NVIDIA GPU (NVRTC), or the GPU simulator. Make one with cpu(), cuda() or cuda_sim().
class Target {
 public:
  /// The host CPU: LLVM's name for it and every feature it has (AVX-512 where present).
  static Target cpu() { return Target(TargetKind::CPU, "host", ""); }

  /// A named LLVM CPU ("x86-64-v3", "skylake-avx512", "znver4", or "host"), optionally with
  /// features added or removed in LLVM syntax ("+avx2,-avx512f"). A kernel built for features the
  /// host lacks can still be inspected (assembly()), but calling it throws instead of crashing.
  static Target cpu(std::string cpu_name, std::string features = "") {
    return Target(TargetKind::CPU, cpu_name.empty() ? "host" : std::move(cpu_name), std::move(features));
  }

  /// An NVIDIA GPU through NVRTC and the CUDA Driver API. `arch` ("sm_80", "sm_90") names the
  /// architecture to compile for; "" means the current device's (which needs a driver and a GPU).
  static Target cuda(std::string arch = "") { return Target(TargetKind::CUDA, std::move(arch), ""); }

  /// The CUDA lowering run on the CPU by the GPU simulator (no GPU, driver or toolkit needed);
  /// launch limits are checked as for `arch`.
  static Target cuda_sim(std::string arch = "sm_80") {
    return Target(TargetKind::CUDASim, std::move(arch), "");
  }

  /// Which backend builds for this target.
  TargetKind kind() const { return kind_; }
  /// For CUDA targets: the architecture ("sm_80"), or "" for the current device's.
  const std::string& arch() const {
    static const std::string none;
    return kind_ == TargetKind::CPU ? none : cpu_name_;
  }
  /// "host" or an LLVM CPU name (for CUDA targets: the architecture).
  const std::string& cpu_name() const { return cpu_name_; }
  /// Feature overrides in LLVM syntax, applied after the CPU's own features ("" for none).
  const std::string& features() const { return features_; }
  /// True for a CPU target for the host as detected (cpu_name "host"), not a named CPU or a GPU.
  bool is_host() const { return cpu_name_ == "host"; }

  /// Lets LLVM reassociate and contract float arithmetic (results then differ from the
  /// interpreter's per-operation rounding). Off by default.
  Target& set_fast_math(bool on = true) {
    fast_math_ = on;
    return *this;
  }
  /// Whether set_fast_math() is on.
  bool fast_math() const { return fast_math_; }

  /// CPU targets: AMX tile products (x86::amx_intrin) call Loom's runtime instead of the AMX
  /// instructions, computing what the SDM's pseudo-code says they compute through the same
  /// loops, addresses and strides, on any x86-64 CPU and without AMX features in the target. For
  /// testing AMX kernels where no CPU has AMX; slow. Off by default.
  Target& set_amx_emulation(bool on = true) {
    amx_emulation_ = on;
    return *this;
  }
  /// Whether set_amx_emulation() is on.
  bool amx_emulation() const { return amx_emulation_; }

  /// "cpu -mcpu=host", "cpu -mcpu=x86-64-v3 -mattr=+avx2 -fast-math": the request as written.
  std::string str() const {
    std::string s = target_kind_name(kind_);
    if (kind_ != TargetKind::CPU) {
      s += " -arch=" + (cpu_name_.empty() ? std::string("device") : cpu_name_);
      if (fast_math_) s += " -fast-math";
      return s;
    }
    s += " -mcpu=" + cpu_name_;
    if (!features_.empty()) s += " -mattr=" + features_;
    if (fast_math_) s += " -fast-math";
    if (amx_emulation_) s += " -amx-emulation";
    return s;
  }

  /// Equal when kind, CPU or architecture, features, fast-math and AMX emulation all agree.
  friend bool operator==(const Target& a, const Target& b) {
    return a.kind_ == b.kind_ && a.cpu_name_ == b.cpu_name_ && a.features_ == b.features_ &&
           a.fast_math_ == b.fast_math_ && a.amx_emulation_ == b.amx_emulation_;
  }

 protected:
  /// Used by the named constructors cpu(), cuda() and cuda_sim().
  Target(TargetKind kind, std::string cpu_name, std::string features)
      : kind_(kind), cpu_name_(std::move(cpu_name)), features_(std::move(features)) {}

 private:
  TargetKind kind_ = TargetKind::CPU;
  std::string cpu_name_;
  std::string features_;
  bool fast_math_ = false;
  bool amx_emulation_ = false;
};

}  // namespace loom
