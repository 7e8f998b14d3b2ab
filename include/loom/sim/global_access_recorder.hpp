// Collects the 32-byte sectors of global memory that each global load or store instruction of a
// warp touches while the warp executes one statement, for the simulator's clock model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace loom::sim {

/// As the shared-memory AccessRecorder does for banks: every global Load node a lane evaluates (and
/// every global store) records its address under the node's access id; when the statement ends,
/// flush() counts each id's distinct sectors over all active lanes, which is what a warp's memory
/// instruction costs the memory system (a coalesced float load by 32 lanes: 4 sectors).
class GlobalAccessRecorder {
 public:
  static constexpr int kSectorShift = 5;  // 32-byte sectors

  /// `accesses`: the kernel's number of global access ids (KernelInfo::num_global_accesses).
  void prepare(int accesses) {
    pending_.assign(static_cast<size_t>(accesses), Pending{});
    touched_.clear();
  }

  /// A lane accesses `bytes` bytes at host address `address` with instruction `access`.
  void record(int access, uintptr_t address, int bytes) {
    Pending& p = pending_[static_cast<size_t>(access)];
    if (p.sectors.empty()) {
      touched_.push_back(access);
      p.sorted = true;
    }
    const uintptr_t first = address >> kSectorShift,
                    last = (address + static_cast<uintptr_t>(bytes) - 1) >> kSectorShift;
    for (uintptr_t s = first; s <= last; ++s) {
      // Lanes usually go up through memory: then a sector repeats only right after itself.
      if (!p.sectors.empty()) {
        if (p.sectors.back() == s) continue;
        p.sorted &= p.sectors.back() < s;
      }
      p.sectors.push_back(s);
    }
  }

  bool pending() const { return !touched_.empty(); }

  /// The distinct sectors of every instruction recorded since the last flush, summed.
  int64_t flush() {
    int64_t sectors = 0;
    for (int access : touched_) {
      Pending& p = pending_[static_cast<size_t>(access)];
      if (!p.sorted) {
        std::sort(p.sectors.begin(), p.sectors.end());
        p.sectors.erase(std::unique(p.sectors.begin(), p.sectors.end()), p.sectors.end());
      }
      sectors += static_cast<int64_t>(p.sectors.size());
      p.sectors.clear();
    }
    touched_.clear();
    return sectors;
  }

 private:
  struct Pending {
    std::vector<uintptr_t> sectors;
    bool sorted = true;  // strictly increasing so far: no duplicates to remove
  };
  std::vector<Pending> pending_;  // by access id
  std::vector<int> touched_;
};

}  // namespace loom::sim
