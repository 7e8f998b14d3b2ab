// LowerState: what one call of lower() works on: the function being built (name, parameters,
// body), its own copy of the schedule, the argument tensors' flat layouts, the bounds once
// inferred, and the host/device split once the Device phase made it. Loom's own passes change it; a user's
// pass reads it through the LoweringView that PassContext::lowering() returns.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/lower/split_host_device.hpp"
#include "loom/lower/storage_flatten.hpp"

namespace loom {

struct LowerState {
  LoweredFunc func;   // name and parameters; body is the program as of the last pass
  Schedule schedule;  // a copy: lowering never changes the user's schedule
  std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash> params;
  TensorSet param_tensors;
  BoundResult bounds;
  std::shared_ptr<const cuda::DeviceSplit> device;  // set by the Device phase for a GPU target
  /// The call the user made, "lower" or "build": messages name it, as the user wrote it.
  std::string entry = "lower";
};

/// A read-only view of the lowering in progress, for passes a user adds (PassContext::add_pass).
/// A user pass changes the program only through the Stmt it returns.
class LoweringView {
 public:
  explicit LoweringView(const LowerState& state) : state_(state) {}

  const std::string& func_name() const { return state_.func.name; }
  /// The lowering's copy of the schedule; null for a function built by hand (lower_from()).
  const ScheduleNode* schedule() const { return state_.schedule.get(); }
  /// The flat layout of each argument tensor.
  const std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash>& params() const { return state_.params; }
  /// The ranges of every loop and the realized region of every tensor (after phase schedule).
  const BoundResult& bounds() const { return state_.bounds; }
  /// The host program and kernels (after phase device, for a GPU target); null otherwise.
  const cuda::DeviceSplit* device_split() const { return state_.device.get(); }

 private:
  const LowerState& state_;
};

}  // namespace loom
