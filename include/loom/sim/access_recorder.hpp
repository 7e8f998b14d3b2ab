// Collects the lanes' addresses of each shared-memory access instruction while a warp executes
// one statement, then turns each instruction into wavefronts with the bank model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/runtime/sim_report.hpp"
#include "loom/sim/bank_model.hpp"
#include "loom/sim/kernel_info.hpp"

namespace loom::sim {

/// Bank statistics of one shared buffer during one launch.
struct BankTally {
  SimBankStats load, store;
};

/// A warp evaluates a statement's expressions lane after lane; every shared Load node it meets
/// records (lane, offset) under the node's access id. When the statement's expressions are done,
/// flush() sees each access id as one instruction with all its lanes, as the hardware does.
class AccessRecorder {
 public:
  void prepare(const KernelInfo& kernel, std::vector<BankTally>* tallies) {
    kernel_ = &kernel;
    tallies_ = tallies;
    pending_.assign(kernel.accesses.size(), Pending{});
    touched_.clear();
  }

  /// Lane `lane` accesses `bytes` bytes at byte `offset`. Lanes record in increasing order; a
  /// lane that reaches the same address twice (one scalar load broadcast into a vector, say)
  /// accesses it once.
  void record(int access, int lane, int64_t offset, int bytes) {
    Pending& p = pending_[static_cast<size_t>(access)];
    if (p.records.empty()) {
      touched_.push_back(access);
      p.several_per_lane = false;
    }
    for (auto it = p.records.rbegin(); it != p.records.rend() && it->lane == lane; ++it) {
      if (it->offset == offset) return;
      p.several_per_lane = true;
    }
    p.bytes = bytes;
    p.records.push_back(LaneAccess{lane, offset});
  }

  bool pending() const { return !touched_.empty(); }

  /// Counts the pending instructions into the tallies; returns their wavefronts (for the clock).
  int64_t flush() {
    int64_t wavefronts = 0;
    for (int access : touched_) {
      Pending& p = pending_[static_cast<size_t>(access)];
      const SharedAccessInfo& info = kernel_->accesses[static_cast<size_t>(access)];
      BankTally& tally = (*tallies_)[static_cast<size_t>(info.buffer)];
      SimBankStats& stats = info.is_store ? tally.store : tally.load;
      const int64_t before = stats.wavefronts;
      count(p, stats);
      wavefronts += stats.wavefronts - before;
      p.records.clear();
    }
    touched_.clear();
    return wavefronts;
  }

 private:
  struct Pending {
    std::vector<LaneAccess> records;
    int bytes = 4;
    bool several_per_lane = false;  // a vector access (or a gather)
  };

  /// One IR access is one instruction when every lane reads one contiguous, aligned run of the
  /// same length (a scalar, or a vector load of stride 1: float2, float4), split into 16-byte
  /// pieces when longer, as CUDA code does. Otherwise (a gather, a partly masked vector) it is one
  /// scalar instruction per element position.
  void count(Pending& p, SimBankStats& stats) {
    const int e = p.bytes;
    std::vector<LaneAccess>& r = p.records;
    if (!p.several_per_lane) {  // the common case: one element per lane, in lane order
      add(stats, count_wavefronts(r, e));
      return;
    }
    size_t run_length = 0;
    bool uniform = true;
    int64_t alignment = 0;  // the OR of all run starts: its low bits say which powers of 2 divide all
    for (size_t begin = 0; begin < r.size();) {
      size_t end = begin;
      while (end < r.size() && r[end].lane == r[begin].lane) ++end;
      std::sort(r.begin() + static_cast<std::ptrdiff_t>(begin), r.begin() + static_cast<std::ptrdiff_t>(end),
                [](const LaneAccess& a, const LaneAccess& b) { return a.offset < b.offset; });
      for (size_t i = begin + 1; i < end; ++i)
        uniform &= r[i].offset == r[begin].offset + int64_t{e} * static_cast<int64_t>(i - begin);
      if (begin == 0) run_length = end - begin;
      uniform &= run_length == end - begin;
      alignment |= r[begin].offset;
      begin = end;
    }
    if (uniform) {
      const int64_t bytes = static_cast<int64_t>(run_length) * e;
      int64_t chunk = 16;
      while (chunk > e && (chunk > bytes || bytes % chunk != 0 || alignment % chunk != 0)) chunk /= 2;
      if (chunk >= e) {
        for (int64_t k = 0; k < bytes / chunk; ++k) {
          lanes_.clear();
          for (size_t i = 0; i < r.size(); i += run_length)
            lanes_.push_back({r[i].lane, r[i].offset + k * chunk});
          add(stats, count_wavefronts(lanes_, static_cast<int>(chunk)));
        }
        return;
      }
    }
    for (size_t k = 0;; ++k) {
      lanes_.clear();
      for (size_t begin = 0; begin < r.size();) {
        size_t end = begin;
        while (end < r.size() && r[end].lane == r[begin].lane) ++end;
        if (begin + k < end) lanes_.push_back(r[begin + k]);
        begin = end;
      }
      if (lanes_.empty()) return;
      add(stats, count_wavefronts(lanes_, e));
    }
  }

  static void add(SimBankStats& stats, Wavefronts w) {
    stats.instructions += 1;
    stats.wavefronts += w.total;
    stats.ideal_wavefronts += w.ideal;
  }

  const KernelInfo* kernel_ = nullptr;
  std::vector<BankTally>* tallies_ = nullptr;
  std::vector<Pending> pending_;
  std::vector<int> touched_;
  std::vector<LaneAccess> lanes_;
};

}  // namespace loom::sim
