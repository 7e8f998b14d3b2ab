// The SMs of the modelled GPU as slots for resident blocks: SMs x blocks per SM of them, each free
// from some cycle on; the simulator dispatches every block into the slot that frees earliest.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "loom/support/gpu_device.hpp"

namespace loom::sim {

/// Block 0 always starts on slot 0 at cycle 0, so the number of slots is settled only when the
/// second block is dispatched (configure()): by then the first block has shown how much shared
/// memory it allocates, which a kernel's static allocations may not tell.
class SmSlots {
 public:
  bool configured() const { return total_ > 0; }

  /// `sms` x `per_sm` slots; slot 0 is the first block's, the others are free from cycle 0.
  void configure(int sms, int per_sm) {
    sms_ = sms;
    per_sm_ = per_sm;
    total_ = static_cast<int64_t>(sms) * per_sm;
    for (int64_t s = 1; s < total_; ++s) free_.push({0, s});
    if (!first_taken_) free_.push({0, 0});
  }

  int sms() const { return sms_; }
  int per_sm() const { return per_sm_; }
  int64_t total() const { return total_; }
  /// Slots not held by a block (running, suspended or not yet released).
  bool has_free() const { return !first_taken_ || !free_.empty(); }

  /// The slot that frees earliest (the lowest-numbered of equals) and the cycle it frees.
  std::pair<int64_t, int64_t> take() {
    if (!first_taken_) {
      first_taken_ = true;
      return {0, 0};
    }
    const auto [cycle, slot] = free_.top();
    free_.pop();
    return {slot, cycle};
  }

  /// The block on `slot` ended at `cycle`: the next block may start there from then on.
  void release(int64_t slot, int64_t cycle) { free_.push({cycle, slot}); }

 private:
  using Entry = std::pair<int64_t, int64_t>;  // (free from cycle, slot)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> free_;
  int sms_ = 0, per_sm_ = 0;
  int64_t total_ = 0;
  bool first_taken_ = false;
};

}  // namespace loom::sim
