// LowerState: what one call of lower() works on: its own copy of the schedule, the argument
// tensors' flat layouts, and the bounds once inferred. Passes reach it through PassContext.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "loom/lower/storage_flatten.hpp"

namespace loom {

struct LowerState {
  std::string func_name;
  Schedule schedule;  // a copy: lowering never changes the user's schedule
  std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash> params;
  TensorSet param_tensors;
  BoundResult bounds;
};

}  // namespace loom
