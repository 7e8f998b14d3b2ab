// Extras for the schedule tests on top of check_schedule.hpp (which compares a schedule with the
// unscheduled computation): seeded random buffers for hand-run checks, and counting in IR text.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "check_schedule.hpp"

namespace loom::test {

/// What an output holds before a hand-run check: an element the schedule forgets stays at this.
inline constexpr float kSentinel = 1.0e30f;

inline Buffer<float> random_buffer(const std::vector<int64_t>& shape, uint32_t seed) {
  Buffer<float> b(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = dist(rng);
  return b;
}

/// How many times `what` occurs in `text` (non-overlapping).
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

}  // namespace loom::test
