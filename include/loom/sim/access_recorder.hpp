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
      count(p, info.vector_bytes, stats);
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

  /// An access that generated code moves as a vector (`vector_bytes` > 0, ir/vector_access.hpp) is
  /// one instruction per piece of that many bytes, when every lane's elements still form one run of
  /// the same length, aligned to the piece (a layout map in the bank analysis's replay can break
  /// that, and then so would generated code). Everything else is one instruction per element
  /// position: per lane for scalars, lane by lane for gathers and guarded vectors, as CUDA code
  /// does it.
  void count(Pending& p, int vector_bytes, SimBankStats& stats) {
    const int e = p.bytes;
    std::vector<LaneAccess>& r = p.records;
    if (!p.several_per_lane) {  // the common case: one element per lane, in lane order
      add(stats, count_wavefronts(r, e));
      return;
    }
    size_t run_length = 0;
    bool runs = vector_bytes > 0;
    for (size_t begin = 0; begin < r.size();) {
      size_t end = begin;
      while (end < r.size() && r[end].lane == r[begin].lane) ++end;
      std::sort(r.begin() + static_cast<std::ptrdiff_t>(begin), r.begin() + static_cast<std::ptrdiff_t>(end),
                [](const LaneAccess& a, const LaneAccess& b) { return a.offset < b.offset; });
      for (size_t i = begin + 1; i < end && runs; ++i)
        runs &= r[i].offset == r[begin].offset + int64_t{e} * static_cast<int64_t>(i - begin);
      if (begin == 0) run_length = end - begin;
      runs = runs && run_length == end - begin && r[begin].offset % vector_bytes == 0;
      begin = end;
    }
    const int64_t run_bytes = static_cast<int64_t>(run_length) * e;
    if (runs && run_bytes % vector_bytes == 0) {  // runs implies vector_bytes > 0
      for (int64_t k = 0; k < run_bytes / vector_bytes; ++k) {
        lanes_.clear();
        for (size_t i = 0; i < r.size(); i += run_length)
          lanes_.push_back({r[i].lane, r[i].offset + k * vector_bytes});
        add(stats, count_wavefronts(lanes_, vector_bytes));
      }
      return;
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
