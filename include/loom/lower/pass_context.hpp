// PassContext: how a lowering runs: the user's own passes inserted at phase boundaries with the
// options they read, the target it is for (build() sets it), IR dumps (LOOM_DUMP_IR=dir) and pass
// timing (LOOM_TIME_PASSES=1). While a pass runs, it also gives a read-only view of the lowering.
#pragma once

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/stmt.hpp"
#include "loom/support/target.hpp"

namespace loom {

/// The phases of lowering, in order (docs/architecture.md, "From a Tensor to a running Kernel").
enum class Phase : uint8_t {
  Schedule,  ///< resolve groups, inline, check attachments, infer bounds, build loop nests
  Flatten,   ///< multi-dimensional tensors to flat buffers
  Loops,     ///< loop transformations and simplification
  Memory,    ///< storage planning
  Device,    ///< host/device split and launch dimensions (for a GPU target)
};

/// The name of a Phase ("schedule", "flatten", "loops", "memory", "device"), as LOOM_DUMP_IR files use it.
inline const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Schedule: return "schedule";
    case Phase::Flatten: return "flatten";
    case Phase::Loops: return "loops";
    case Phase::Memory: return "memory";
    case Phase::Device: return "device";
  }
  return "?";
}

/// Where a user pass runs: after the named phase.
enum class PassPosition : uint8_t { AfterSchedule, AfterFlatten, AfterLoops, AfterMemory, AfterDevice };

/// The phase after which a pass at `p` runs.
inline Phase phase_of(PassPosition p) { return static_cast<Phase>(static_cast<uint8_t>(p)); }

class PassContext;
class LoweringView;
namespace detail {
class PassRunner;
}
/// A user pass: takes the function body and returns the new one (return it unchanged to only inspect it).
using PassFunction = std::function<Stmt(Stmt, const PassContext&)>;

/// A pass and the name that LOOM_DUMP_IR and LOOM_TIME_PASSES print for it.
struct NamedPass {
  /// The name LOOM_DUMP_IR and LOOM_TIME_PASSES print.
  std::string name;
  /// The pass.
  PassFunction fn;
};

/// How lower() runs: user passes, options for them, IR dumps and timings, the target.
/// Pass one to lower() or build() to change the defaults.
class PassContext {
 public:
  /// The defaults, with the environment's LOOM_DUMP_IR (a directory) and LOOM_TIME_PASSES (not "0").
  PassContext() {
    if (const char* dir = std::getenv("LOOM_DUMP_IR"); dir && *dir) dump_dir = dir;
    if (const char* t = std::getenv("LOOM_TIME_PASSES"); t && *t && std::string(t) != "0") time_passes = true;
  }

  /// Runs `fn` after the phase `where`, e.g. add_pass(PassPosition::AfterFlatten, "count", f).
  PassContext& add_pass(PassPosition where, std::string name, PassFunction fn) {
    user_passes.push_back(UserPass{where, NamedPass{std::move(name), std::move(fn)}});
    return *this;
  }

  /// A pass added with add_pass().
  struct UserPass {
    /// The phase after which it runs.
    PassPosition where;
    /// The pass.
    NamedPass pass;
  };
  /// Sets an option that user passes read with option(): a pass's own settings travel with the
  /// context it is lowered with, e.g. set_option("count_loads.verbose", "1").
  PassContext& set_option(const std::string& key, std::string value) {
    options_[key] = std::move(value);
    return *this;
  }
  /// The option `key`, or `fallback` when it was never set.
  std::string option(const std::string& key, const std::string& fallback = "") const {
    auto it = options_.find(key);
    return it == options_.end() ? fallback : it->second;
  }

  /// The lowering a pass runs in, read-only (lower/lower_state.hpp): the function's name, its copy
  /// of the schedule, the argument buffers and the inferred bounds. Null outside lower().
  const LoweringView* lowering() const { return lowering_; }

  /// The passes added with add_pass(), in order.
  std::vector<UserPass> user_passes;
  std::string dump_dir;      ///< write the IR after every pass into this directory
  bool time_passes = false;  ///< print each pass's time to stderr
  /// Simplify with the bound analyzer after flattening (tests may switch it off to see raw IR).
  bool simplify = true;
  /// Record the region of each input that the computation reads (lower/input_regions.hpp), which
  /// every call checks against its buffers. Off: the caller guarantees the buffers are large
  /// enough (a read past the end is then undefined behaviour in compiled kernels).
  bool check_input_regions = true;
  /// The target the function is lowered for; build() sets it. For a GPU target the Device phase
  /// splits the function into host code and kernels; without a target that phase does nothing.
  std::optional<Target> target;

 private:
  friend class detail::PassRunner;  // points lowering_ at the lowering while a pass runs
  std::map<std::string, std::string> options_;
  const LoweringView* lowering_ = nullptr;
};

}  // namespace loom
