// PassContext: how a lowering runs: the user's own passes inserted at phase boundaries, IR
// dumps (LOOM_DUMP_IR=dir) and pass timing (LOOM_TIME_PASSES=1).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "loom/ir/stmt.hpp"

namespace loom {

/// The phases of lowering, in order (docs/architecture.md, "From a Tensor to a running Kernel").
enum class Phase : uint8_t {
  Schedule,  // infer bounds, build loop nests from the schedule
  Flatten,   // multi-dimensional tensors to flat buffers
  Loops,     // loop transformations and simplification
  Memory,    // storage planning
  Device,    // host/device split, launch parameters
};

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

inline Phase phase_of(PassPosition p) { return static_cast<Phase>(static_cast<uint8_t>(p)); }

class PassContext;
struct LowerState;
using PassFunction = std::function<Stmt(Stmt, const PassContext&)>;

struct NamedPass {
  std::string name;
  PassFunction fn;
};

class PassContext {
 public:
  PassContext() {
    if (const char* dir = std::getenv("LOOM_DUMP_IR"); dir && *dir) dump_dir = dir;
    if (const char* t = std::getenv("LOOM_TIME_PASSES"); t && *t && std::string(t) != "0") time_passes = true;
  }

  /// Runs `fn` after the phase `where`, e.g. add_pass(PassPosition::AfterFlatten, "count", f).
  PassContext& add_pass(PassPosition where, std::string name, PassFunction fn) {
    user_passes.push_back(UserPass{where, NamedPass{std::move(name), std::move(fn)}});
    return *this;
  }

  struct UserPass {
    PassPosition where;
    NamedPass pass;
  };
  std::vector<UserPass> user_passes;
  std::string dump_dir;      // write the IR after every pass into this directory
  bool time_passes = false;  // print each pass's time to stderr
  /// Simplify with the bound analyzer after flattening (tests may switch it off to see raw IR).
  bool simplify = true;
  /// The lowering in progress (set by lower() while passes run).
  LowerState* state = nullptr;
};

}  // namespace loom
