// Resolves a loom::Target to what LLVM needs (triple, CPU name, feature string) and creates the
// TargetMachine for it. The host's CPU name and features are detected; a named CPU such as
// "x86-64-v3" brings its own features. The resolved description is part of the cache keys.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "loom/codegen/llvm/llvm_includes.hpp"
#include "loom/support/error.hpp"
#include "loom/support/target.hpp"

namespace loom::codegen {

/// Registers LLVM's native target, once per process.
inline void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

struct ResolvedTarget {
  std::string triple;
  std::string cpu;
  std::string features;  // as given to LLVM: "+avx2,+avx512f,..." for the host, overrides otherwise
  bool fast_math = false;
  bool amx_emulation = false;  // Target::set_amx_emulation(): AMX tile products call the runtime
  /// Features the target enables and this host lacks, comma-separated ("" when it runs here).
  std::string missing_host_features;
  bool has_f16c = false;  // float16 <-> float32 conversions in hardware
  int vector_bits = 128;  // the widest vector register
  /// AVX-512 instructions on 512-bit registers (avx512f with evex512): not so on an AVX10/256-style
  /// target, where LLVM cannot lower a 512-bit x86 intrinsic.
  bool has_avx512_zmm = false;
  /// Every feature LLVM knows for the triple that the resolved subtarget enables ("avx512bf16", ...).
  std::vector<std::string> enabled_features;

  /// Whether the subtarget enables `feature` (LLVM's name, without a sign).
  bool enables(const std::string& feature) const {
    return std::find(enabled_features.begin(), enabled_features.end(), feature) != enabled_features.end();
  }

  /// The first feature of the comma-separated `list` ("avx512bf16,evex512"; a leading + is ignored)
  /// that the subtarget does not enable, or "" when it enables them all.
  std::string first_missing(const std::string& list) const {
    std::stringstream items(list);
    for (std::string f; std::getline(items, f, ',');) {
      f.erase(0, f.find_first_not_of(" +"));
      f.erase(f.find_last_not_of(' ') + 1);
      if (!f.empty() && !enables(f)) return f;
    }
    return "";
  }

  /// The cache-key description: LLVM version, triple, CPU, features, options.
  std::string description() const {
    std::string d = "llvm-" LLVM_VERSION_STRING " " + triple + " -mcpu=" + cpu;
    if (!features.empty()) d += " -mattr=" + features;
    if (fast_math) d += " -fast-math";
    if (amx_emulation) d += " -amx-emulation";
    return d;
  }
};

namespace detail {

inline const llvm::Target& llvm_target_for(const std::string& triple) {
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw Error(cat("the LLVM CPU backend cannot target ", triple, ": ", error));
  return *target;
}

/// "+a,-b" split into its items, each checked for a leading + or -.
inline std::vector<std::string> feature_items(const std::string& features, const std::string& request) {
  std::vector<std::string> items;
  std::stringstream ss(features);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item[0] != '+' && item[0] != '-')
      throw Error(cat("Target ", request, ": feature '", item,
                      "' must start with + (enable) or - (disable), e.g. \"+avx2,-avx512f\""));
    items.push_back(item);
  }
  return items;
}

inline ResolvedTarget resolve_uncached(const Target& t) {
  initialize_llvm();
  ResolvedTarget r;
  r.triple = llvm::sys::getProcessTriple();
  r.fast_math = t.fast_math();
  r.amx_emulation = t.amx_emulation();
  const llvm::Target& target = llvm_target_for(r.triple);
  const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();

  std::vector<std::string> items;
  if (t.is_host()) {
    r.cpu = llvm::sys::getHostCPUName().str();
    // Sorted, so that the description (and with it the cache key) does not depend on map order.
    for (const auto& f : host) items.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(items.begin(), items.end(),
              [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  } else {
    r.cpu = t.cpu_name();
  }
  // Probe with the default CPU: LLVM prints a warning when asked for a subtarget of an unknown one.
  std::unique_ptr<llvm::MCSubtargetInfo> probe(target.createMCSubtargetInfo(r.triple, "", ""));
  if (!probe || !probe->isCPUStringValid(r.cpu))
    throw Error(cat("Target::cpu(\"", t.cpu_name(), "\"): LLVM ", LLVM_VERSION_STRING,
                    " does not know this CPU; use \"host\" (Target::cpu()), a micro-architecture level "
                    "(x86-64, x86-64-v2, x86-64-v3, x86-64-v4) or a CPU name such as skylake-avx512, "
                    "icelake-server, znver3, znver4 (llc -mcpu=help lists them)"));
  std::vector<std::string> known;
  for (const llvm::SubtargetFeatureKV& kv : probe->getAllProcessorFeatures()) known.push_back(kv.Key);
  for (const std::string& item : feature_items(t.features(), t.str())) {
    if (std::find(known.begin(), known.end(), item.substr(1)) == known.end())
      throw Error(cat("Target ", t.str(), ": '", item.substr(1), "' is not a feature LLVM knows for ",
                      r.triple, " (examples: avx2, avx512f, fma, f16c)"));
    items.push_back(item);
  }
  // LLVM 19's X86 backend can give an AVX-512 gather with 64-bit indices (vgatherqps) the same
  // register as index and destination, an encoding that raises #UD (SIGILL; found by the schedule
  // fuzzer). Gathers are also slow on CPUs with the 2023 GDS microcode. Loom asks LLVM to
  // scalarize them, unless the target names gathers explicitly ("-prefer-no-gather").
  const bool user_chose_gathers = std::any_of(
      items.begin(), items.end(), [](const std::string& f) { return f.substr(1) == "prefer-no-gather"; });
  if (!user_chose_gathers && std::find(known.begin(), known.end(), "prefer-no-gather") != known.end())
    items.push_back("+prefer-no-gather");
  for (size_t i = 0; i < items.size(); ++i) r.features += (i ? "," : "") + items[i];

  // What the resolved subtarget enables: the vector width, F16C, and what this host lacks.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target.createMCSubtargetInfo(r.triple, r.cpu, r.features));
  auto enabled = [&](const char* feature) { return sti->checkFeatures(std::string("+") + feature); };
  r.has_f16c = enabled("f16c");
  r.vector_bits = enabled("avx512f") ? 512 : enabled("avx") ? 256 : 128;
  r.has_avx512_zmm = enabled("avx512f") && enabled("evex512");
  std::string missing;
  for (const std::string& f : known) {
    if (sti->checkFeatures("+" + f)) r.enabled_features.push_back(f);
    auto h = host.find(f);
    if (h != host.end() && !h->second && sti->checkFeatures("+" + f))
      missing += (missing.empty() ? "" : ",") + f;
  }
  r.missing_host_features = missing;
  return r;
}

}  // namespace detail

/// The resolved form of `t`, computed once per distinct target in a process (host detection
/// reads /proc and cpuid; the feature list is long).
inline ResolvedTarget resolve_target(const Target& t) {
  static std::mutex mutex;
  static std::map<std::string, ResolvedTarget>* resolved = new std::map<std::string, ResolvedTarget>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = resolved->find(t.str());
  if (it == resolved->end()) it = resolved->emplace(t.str(), detail::resolve_uncached(t)).first;
  return it->second;
}

/// A TargetMachine for `r`: O3 code generation, position-independent code (the objects are cached
/// and loaded at any address), float contraction only with fast math.
inline std::unique_ptr<llvm::TargetMachine> create_target_machine(const ResolvedTarget& r) {
  initialize_llvm();
  llvm::TargetOptions options;
  if (r.fast_math) {
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  }
  llvm::TargetMachine* tm = detail::llvm_target_for(r.triple).createTargetMachine(
      r.triple, r.cpu, r.features, options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive);
  if (!tm) throw Error(cat("LLVM could not create a target machine for ", r.description()));
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

}  // namespace loom::codegen
