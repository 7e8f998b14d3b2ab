// What the interpreter's compiler records about one kernel region for the GPU simulator: its
// launch loops (one per thread-bound loop, with extents evaluated at launch), shared buffers and
// shared-memory access instructions.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/runtime/interp_expr_nodes.hpp"
#include "loom/runtime/sim_session.hpp"

namespace loom::sim {

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

/// A loop bound to a launch index. Its extent is a host expression, evaluated when the kernel
/// is launched; together the extents give the grid and block dimensions.
struct LaunchLoop {
  int launch_index = 0;
  std::string var_name;
  interp::IntExprPtr extent;
};

/// One shared-memory Load or Store node of the kernel: every time a warp executes it, that is one
/// access instruction of the bank model.
struct SharedAccessInfo {
  int buffer = 0;  // index in KernelInfo::shared_buffers
  bool is_store = false;
};

/// The sizes of the interpreter's frame, known once the whole program is compiled; a launch
/// gives every simulated thread a frame of this size.
struct FrameLayout {
  int num_ints = 0, num_floats = 0, num_buffers = 0;
};

struct KernelInfo {
  std::string name;
  std::vector<LaunchLoop> loops;
  std::vector<SharedBufferInfo> shared_buffers;  // one per shared Allocate node of the kernel
  /// The planned shared memory the buffers with a planned_offset share: its size, and the
  /// granule of its race shadow (the smallest element size among them).
  int64_t planned_bytes = 0;
  int planned_granule = 16;
  std::vector<SharedAccessInfo> accesses;  // by access id
  bool has_sync = false;                   // any barrier or thread_allreduce
  std::shared_ptr<const FrameLayout> layout;

  /// The access id of a Load or Store node (the same node compiled for several vector lanes or
  /// several times is one instruction).
  int access_id(const void* node, int buffer, bool is_store) {
    auto [it, inserted] = access_of_node_.try_emplace(node, static_cast<int>(accesses.size()));
    if (inserted) accesses.push_back(SharedAccessInfo{buffer, is_store});
    return it->second;
  }

 private:
  std::unordered_map<const void*, int> access_of_node_;
};

}  // namespace loom::sim
