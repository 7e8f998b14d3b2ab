// One run's GPU simulation: the options it was asked for and the report it fills, launch after
// launch. Every kernel launch of the run writes into the same Session.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/runtime/sim_report.hpp"

namespace loom::sim {

/// A shared buffer as the compiler knows it: its Allocate's variable name and its kernel.
/// `id` numbers the shared Allocate nodes of one program.
struct SharedBufferInfo {
  int id = 0;
  std::string name;
  std::string kernel;
  /// Its byte offset in the block's planned shared memory (lower/plan_shared_memory.hpp), where
  /// buffers never live together overlap; -1: memory of its own.
  int64_t planned_offset = -1;
  int element_bytes = 4;
};

class Session {
 public:
  explicit Session(SimOptions options = {}) : options_(options) {}

  const SimOptions& options() const { return options_; }
  const SimReport& report() const { return report_; }
  SimReport take_report() { return std::move(report_); }

  void add_launch(SimLaunch launch) { report_.launches.push_back(std::move(launch)); }
  SimLaunch& last_launch() { return report_.launches.back(); }

  /// The report row of a shared buffer, created on first use.
  SimSharedBuffer& buffer(const SharedBufferInfo& info) {
    auto [it, inserted] = row_of_buffer_.try_emplace(info.id, report_.shared_buffers.size());
    if (inserted) report_.shared_buffers.push_back(SimSharedBuffer{info.name, info.kernel, {}, {}, 0});
    return report_.shared_buffers[it->second];
  }

  /// Records a race unless one was already recorded for this element of this buffer.
  void add_race(const SharedBufferInfo& info, int64_t element, int64_t byte_offset, SimRaceKind kind,
                const SimThread& first, const SimThread& second, bool second_wrote) {
    if (!raced_.insert(key(info.id, element)).second) return;
    report_.races.push_back(
        SimRace{info.name, info.kernel, element, byte_offset, kind, first, second, second_wrote});
  }

  /// Records a race on a global buffer (sim/global_races.hpp) unless one was already recorded for
  /// this element of this buffer in this kernel.
  void add_global_race(const std::string& buffer, const std::string& kernel, int64_t element,
                       int64_t byte_offset, SimRaceKind kind, const SimThread& first, const SimThread& second,
                       bool second_wrote) {
    if (!global_raced_.insert(cat(kernel, '\0', buffer, '\0', element)).second) return;
    report_.races.push_back(SimRace{buffer, kernel, element, byte_offset, kind, first, second, second_wrote,
                                    SimMemorySpace::Global});
  }

  /// Counts a read of a never-written element; lists the first such read of each element.
  void add_uninitialized_read(const SharedBufferInfo& info, int64_t element, int64_t byte_offset,
                              const SimThread& reader) {
    ++buffer(info).uninitialized_reads;
    if (!uninitialized_.insert(key(info.id, element)).second) return;
    report_.uninitialized_reads.push_back(
        SimUninitializedRead{info.name, info.kernel, element, byte_offset, reader});
  }

 private:
  static uint64_t key(int id, int64_t element) {
    return (static_cast<uint64_t>(id) << 40) ^ static_cast<uint64_t>(element);
  }

  SimOptions options_;
  SimReport report_;
  std::unordered_map<int, size_t> row_of_buffer_;
  std::unordered_set<uint64_t> raced_, uninitialized_;
  std::unordered_set<std::string> global_raced_;
};

}  // namespace loom::sim
