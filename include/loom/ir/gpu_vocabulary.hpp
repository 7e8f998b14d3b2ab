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
/// The scope names Stage::set_scope() accepts.
/// @{
inline constexpr const char* global = "global";
inline constexpr const char* shared = "shared";          ///< one buffer per block, static size
inline constexpr const char* shared_dyn = "shared.dyn";  ///< one buffer per block, size set at launch
inline constexpr const char* local = "local";            ///< one buffer per thread (registers)
inline constexpr const char* warp = "warp";              ///< per thread, for warp-level intrinsics
/// One warp's tile spread over the registers of its 32 lanes, each lane holding 1/32 of it in
/// the order a tensor intrinsic's fragment layout gives (te/ptx_tensor_intrins.hpp); only
/// tensorized loops read or write it.
inline constexpr const char* fragment = "local.fragment";
/// @}
}  // namespace scope

/// "shared" or "shared.dyn": memory that all threads of a block share.
inline bool is_shared_scope(const std::string& s) { return s == scope::shared || s == scope::shared_dyn; }

/// Per-thread memory: "local", "warp" and the "local.*" scopes of intrinsics (local.fragment, ...).
inline bool is_local_scope(const std::string& s) {
  return s == scope::local || s == scope::warp || s.rfind("local.", 0) == 0;
}

/// Global memory: "global" or the empty scope.
inline bool is_global_scope(const std::string& s) { return s.empty() || s == scope::global; }

namespace intrinsic {
/// The calling thread's lane in its warp (0-31), an i32: what CUDA's %laneid holds. GPU kernels
/// only; tensor intrinsic bodies use it for the addresses each lane passes (ldmatrix rows) and
/// the fragment elements it holds.
inline constexpr const char* lane_id = "loom.lane_id";
}  // namespace intrinsic

/// Thread tags (IterVar::thread_tag, For::thread_tag): what thread_axis() makes and Stage::bind
/// binds a loop to. The launch indices are CUDA's names, which the CUDA code generator emits as
/// they are.
namespace thread_tag {
/// The launch indices, threadIdx.x/y/z and blockIdx.x/y/z, as Stage::bind() takes them through thread_axis().
/// @{
inline constexpr const char* threadIdx_x = "threadIdx.x";
inline constexpr const char* threadIdx_y = "threadIdx.y";
inline constexpr const char* threadIdx_z = "threadIdx.z";
inline constexpr const char* blockIdx_x = "blockIdx.x";
inline constexpr const char* blockIdx_y = "blockIdx.y";
inline constexpr const char* blockIdx_z = "blockIdx.z";
/// @}
/// A virtual thread: one thread's loop that lowering interleaves; "vthread.x|y|z" are too.
inline constexpr const char* vthread = "vthread";
/// Accepted by thread_axis() as in TVM, which spells a virtual thread so too; Loom's passes take
/// only the "vthread" tags for virtual threads.
inline constexpr const char* cthread = "cthread";
/// The prefixes of the launch-index tags. The predicates below test these, so a misspelt index
/// ("threadIdx.w") still counts as a thread or block index, and launch_index_of_tag reports it.
inline constexpr const char* thread_index_prefix = "threadIdx";
/// See thread_index_prefix.
inline constexpr const char* block_index_prefix = "blockIdx";
}  // namespace thread_tag

/// threadIdx.*: each thread of a block has its own value.
inline bool is_thread_index_tag(const std::string& tag) {
  return tag.rfind(thread_tag::thread_index_prefix, 0) == 0;
}

/// blockIdx.*: all threads of a block share the value.
inline bool is_block_index_tag(const std::string& tag) {
  return tag.rfind(thread_tag::block_index_prefix, 0) == 0;
}

/// threadIdx.* and blockIdx.* (not vthread): a loop bound to one of them is a GPU launch index.
inline bool is_gpu_thread_tag(const std::string& tag) {
  return is_thread_index_tag(tag) || is_block_index_tag(tag);
}

/// Virtual threads ("vthread", "vthread.x|y|z"): loops that lowering interleaves
/// (lower/inject_virtual_thread.hpp), not launch indices.
inline bool is_virtual_thread_tag(const std::string& tag) { return tag.rfind(thread_tag::vthread, 0) == 0; }

/// The six launch indices: threadIdx.x/y/z are 0..2, blockIdx.x/y/z are 3..5.
inline constexpr int kNumLaunchIndices = 6;
/// The index of blockIdx.x among the launch indices; those below it are thread indices.
inline constexpr int kFirstBlockIndex = 3;

/// The tag of launch index `index` (0 <= index < kNumLaunchIndices), which is also its CUDA name.
inline const char* launch_index_name(int index) {
  static const char* const names[kNumLaunchIndices] = {thread_tag::threadIdx_x, thread_tag::threadIdx_y,
                                                       thread_tag::threadIdx_z, thread_tag::blockIdx_x,
                                                       thread_tag::blockIdx_y,  thread_tag::blockIdx_z};
  return names[index];
}

/// The launch index a thread tag names exactly, or -1 for every other tag, a misspelt
/// threadIdx/blockIdx one included. The host/device split (lower/split_host_device.hpp) and the
/// CUDA code generator use this lenient form: a loop with any other tag stays an ordinary loop.
inline int find_launch_index(const std::string& tag) {
  for (int i = 0; i < kNumLaunchIndices; ++i)
    if (tag == launch_index_name(i)) return i;
  return -1;
}

/// The launch index a thread tag binds, or -1 for tags that are not kernel regions ("vthread",
/// "cthread", ""). A loop bound to one of these tags is where a kernel region starts. Unlike
/// find_launch_index, throws on a threadIdx/blockIdx tag that names no index ("threadIdx.w").
inline int launch_index_of_tag(const std::string& tag) {
  const int index = find_launch_index(tag);
  if (index < 0 && is_gpu_thread_tag(tag))
    throw Error(cat("unknown thread tag '", tag, "': use blockIdx.x/y/z or threadIdx.x/y/z"));
  return index;
}

}  // namespace loom
