// Grid flags in the simulator's time model: the cycle each flag element was last signalled, and
// what a block suspended at a loom.flag_wait waits for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

namespace loom::sim {

/// A block waits until the int32 flag at `address` (element `index` of buffer `flags`) equals
/// `value`; `thread` is the waiting thread (linear in the block).
struct FlagWait {
  const std::byte* address = nullptr;  // null: not waiting
  int32_t value = 0;
  const std::string* flags = nullptr;
  int64_t index = 0;
  int thread = 0;

  bool satisfied() const {
    int32_t seen;
    std::memcpy(&seen, address, sizeof(seen));
    return seen == value;
  }
  int32_t seen() const {
    int32_t v;
    std::memcpy(&v, address, sizeof(v));
    return v;
  }
};

/// When each flag element was signalled during one launch, in cycles of the launch's clock. A wait
/// completes at the latest of its own clock and the signal's time: a block that reaches the wait
/// after the signal does not wait, one that reaches it before waits for it. A flag set before the
/// launch (by an earlier kernel) counts as signalled at cycle 0.
class FlagSignals {
 public:
  void signal(const std::byte* address, int64_t cycle) { cycle_of_[address] = cycle; }
  int64_t cycle_of(const std::byte* address) const {
    auto it = cycle_of_.find(address);
    return it == cycle_of_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<const std::byte*, int64_t> cycle_of_;
};

}  // namespace loom::sim
