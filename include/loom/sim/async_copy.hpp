// cp.async in the simulator: a copy from global to shared memory that a thread issues and that
// lands later. Each lane keeps its copies in flight with the commit group they belong to; the
// bytes reach shared memory (and count as the lane's write for the race detector) only when a
// cp.async.wait_group lets that group complete. Until then the destination bytes are pending in
// the block (sim/block.hpp): reading or writing them is reported as a use before the wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace loom::sim {

/// One copy in flight: its source bytes (read when issued: global memory a kernel copies from does
/// not change while the copy is in flight), where they go, and how many of them are real (the
/// rest is zero-filled: cp.async's src-size).
struct AsyncCopy {
  int64_t group = 0;   // the lane's commit group (the number of commits before it)
  int shared = 0;      // KernelInfo::shared_buffers index of the destination
  int64_t offset = 0;  // byte offset in that buffer
  std::byte* dst = nullptr;
  int bytes = 0, src_bytes = 0;
  std::byte data[16] = {};
};

/// Every lane's copies in flight and commit count (the index of its open, uncommitted group).
struct AsyncCopyState {
  std::vector<AsyncCopy> in_flight[32];
  int64_t committed[32] = {};
  bool any = false;

  void reset() {
    if (!any) return;
    for (auto& v : in_flight) v.clear();
    for (int64_t& c : committed) c = 0;
    any = false;
  }
};

}  // namespace loom::sim
