// The GPU vocabulary every layer shares: the memory scopes of a GPU (which ones one block shares,
// which ones each thread owns), the thread tags whose loops are kernel regions, and the launch
// indices (threadIdx.x .. blockIdx.z) they bind. Spelled once here so that passes, code
// generators and the simulator cannot disagree about a name.
#pragma once

#include <string>

#include "loom/support/error.hpp"

namespace loom {

/// Memory scopes of a buffer (Allocate::scope, Stage::set_scope). Empty means global.
namespace scope {
inline constexpr const char* global = "global";
inline constexpr const char* shared = "shared";          // one buffer per block, static size
inline constexpr const char* shared_dyn = "shared.dyn";  // one buffer per block, size set at launch
inline constexpr const char* local = "local";            // one buffer per thread (registers)
inline constexpr const char* warp = "warp";              // per thread, for warp-level intrinsics
}  // namespace scope

inline bool is_shared_scope(const std::string& s) { return s == scope::shared || s == scope::shared_dyn; }

/// Per-thread memory: "local", "warp" and the "local.*" scopes of intrinsics (local.fragment, ...).
inline bool is_local_scope(const std::string& s) {
  return s == scope::local || s == scope::warp || s.rfind("local.", 0) == 0;
}

inline bool is_global_scope(const std::string& s) { return s.empty() || s == scope::global; }

/// threadIdx.* and blockIdx.* (not vthread): a loop bound to one of them is a GPU launch index.
inline bool is_gpu_thread_tag(const std::string& tag) {
  return tag.rfind("threadIdx", 0) == 0 || tag.rfind("blockIdx", 0) == 0;
}

/// Virtual threads ("vthread", "vthread.x|y|z"): loops that lowering interleaves
/// (lower/inject_virtual_thread.hpp), not launch indices.
inline bool is_virtual_thread_tag(const std::string& tag) { return tag.rfind("vthread", 0) == 0; }

/// The six launch indices: threadIdx.x/y/z are 0..2, blockIdx.x/y/z are 3..5.
inline constexpr int kNumLaunchIndices = 6;
inline constexpr int kFirstBlockIndex = 3;

/// The launch index a thread tag binds, or -1 for tags that are not kernel regions ("vthread",
/// "cthread", ""). A loop bound to one of these tags is where a kernel region starts.
inline int launch_index_of_tag(const std::string& tag) {
  static const char* const names[kNumLaunchIndices] = {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                                                       "blockIdx.x",  "blockIdx.y",  "blockIdx.z"};
  for (int i = 0; i < kNumLaunchIndices; ++i)
    if (tag == names[i]) return i;
  if (tag.rfind("threadIdx", 0) == 0 || tag.rfind("blockIdx", 0) == 0)
    throw Error(cat("unknown thread tag '", tag, "': use blockIdx.x/y/z or threadIdx.x/y/z"));
  return -1;
}

inline const char* launch_index_name(int index) {
  static const char* const names[kNumLaunchIndices] = {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                                                       "blockIdx.x",  "blockIdx.y",  "blockIdx.z"};
  return names[index];
}

}  // namespace loom
