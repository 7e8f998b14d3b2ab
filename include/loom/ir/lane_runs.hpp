// A vector index that is not a ramp but reads a few contiguous runs of memory: the lanes of an
// interleave (a packed panel's pairs of bfloat16 from two rows of B: lane 2i from row k, lane 2i+1
// from row k+1), of a concatenation or of a permutation of whole runs. Such an index splits into a
// base that every lane shares and a constant offset per lane; when the offsets, sorted, form a few
// runs of equal length, the access is that many contiguous vector accesses and one shuffle
// instead of a gather (which x86 code generation scalarizes: a load or store per lane).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "loom/ir/expr.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/vector_access.hpp"

namespace loom {

/// A vector index as `base` (a scalar, the same in every lane) plus `offsets[lane]`.
struct LaneOffsets {
  Expr base;
  std::vector<int64_t> offsets;
};

/// `index` (an integer vector) as base + constant lane offsets, from its shape: broadcasts, ramps
/// with a constant stride, sums, differences, products with a broadcast constant, floordiv and
/// floormod by a positive constant where the base is a multiple of it (or every offset is 0),
/// widening casts. Nothing when some lane's offset is not a constant.
inline std::optional<LaneOffsets> lane_offsets(const Expr& index) {
  const int lanes = index.dtype().lanes;
  if (!index.dtype().is_int()) return std::nullopt;
  if (lanes == 1) return LaneOffsets{index, {0}};
  auto constant_of = [](const std::optional<LaneOffsets>& f) -> const int64_t* {
    const bool uniform =
        f && std::all_of(f->offsets.begin(), f->offsets.end(), [](int64_t o) { return o == 0; });
    return uniform ? as_const_int(f->base) : nullptr;
  };
  auto all_zero = [](const LaneOffsets& f) {
    return std::all_of(f.offsets.begin(), f.offsets.end(), [](int64_t o) { return o == 0; });
  };
  auto binary = [](const auto* op) { return std::pair{lane_offsets(op->a), lane_offsets(op->b)}; };
  if (const auto* b = index.as<BroadcastNode>()) return LaneOffsets{b->value, std::vector<int64_t>(lanes, 0)};
  if (const auto* r = index.as<RampNode>()) {
    const int64_t* stride = as_const_int(r->stride);
    if (!stride || !r->base.dtype().is_scalar()) return std::nullopt;
    LaneOffsets f{r->base, std::vector<int64_t>(lanes)};
    for (int i = 0; i < lanes; ++i) f.offsets[i] = i * *stride;
    return f;
  }
  if (const auto* add = index.as<AddNode>()) {
    auto [x, y] = binary(add);
    if (!x || !y) return std::nullopt;
    for (int i = 0; i < lanes; ++i) x->offsets[i] += y->offsets[i];
    x->base = x->base + y->base;
    return x;
  }
  if (const auto* sub = index.as<SubNode>()) {
    auto [x, y] = binary(sub);
    if (!x || !y) return std::nullopt;
    for (int i = 0; i < lanes; ++i) x->offsets[i] -= y->offsets[i];
    x->base = x->base - y->base;
    return x;
  }
  if (const auto* mul = index.as<MulNode>()) {
    auto [x, y] = binary(mul);
    if (!x || !y) return std::nullopt;
    if (constant_of(x)) std::swap(x, y);
    if (const int64_t* c = constant_of(y)) {  // (base + o) * c
      for (int64_t& o : x->offsets) o *= *c;
      x->base = x->base * y->base;
      return x;
    }
    if (all_zero(*x) && all_zero(*y)) return LaneOffsets{x->base * y->base, x->offsets};
    return std::nullopt;
  }
  const bool div = index.as<FloorDivNode>() != nullptr;
  if (div || index.as<FloorModNode>()) {
    auto [x, y] = div ? binary(index.as<FloorDivNode>()) : binary(index.as<FloorModNode>());
    const int64_t* c = constant_of(y);
    if (!x || !c || *c <= 0) return std::nullopt;
    if (all_zero(*x))
      return LaneOffsets{div ? floordiv(x->base, y->base) : floormod(x->base, y->base), x->offsets};
    // floor((base + o) / c) = base / c + floor(o / c) when c divides base (likewise the remainder).
    if (!is_multiple_of(x->base, *c)) return std::nullopt;
    for (int64_t& o : x->offsets) {
      const int64_t q = o / *c - (o % *c < 0 ? 1 : 0);
      o = div ? q : o - q * *c;
    }
    x->base = div ? floordiv(x->base, y->base) : make_zero(x->base.dtype());
    return x;
  }
  if (const auto* widen = index.as<CastNode>()) {
    const DType from = widen->value.dtype();
    if (!from.is_int() || from.bits > index.dtype().bits) return std::nullopt;  // widening only: exact
    auto x = lane_offsets(widen->value);
    if (x) x->base = cast(index.dtype().element_of(), x->base);
    return x;
  }
  return std::nullopt;
}

/// The lanes' offsets as `starts.size()` runs of `length` consecutive elements each: run r covers
/// starts[r] .. starts[r] + length - 1, and lane l reads element `source[l]` of the runs laid end to
/// end (run r's element p is r * length + p); `lane_of` is the inverse: the lane of each element.
struct LaneRuns {
  int64_t length = 0;
  std::vector<int64_t> starts;
  std::vector<int> source, lane_of;
};

/// `offsets` as at most `max_runs` runs of equal length, a power of two in number, every element
/// read by exactly one lane (so the runs touch just the memory the lanes do). Nothing otherwise:
/// repeated offsets, runs of one element, or more runs than `max_runs`.
inline std::optional<LaneRuns> contiguous_runs(const std::vector<int64_t>& offsets, int max_runs) {
  const int lanes = static_cast<int>(offsets.size());
  std::vector<int64_t> sorted = offsets;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  // The maximal runs of consecutive offsets; every run splits into runs of their lengths' gcd.
  int64_t length = 0, run = 1;
  for (int i = 1; i <= lanes; ++i) {
    if (i < lanes && sorted[i] == sorted[i - 1] + 1) {
      ++run;
      continue;
    }
    length = std::gcd(length, run);
    run = 1;
  }
  const int64_t count = lanes / length;
  if (length < 2 || count > max_runs || (count & (count - 1)) != 0) return std::nullopt;
  LaneRuns r;
  r.length = length;
  for (int64_t i = 0; i < count; ++i) r.starts.push_back(sorted[static_cast<size_t>(i * length)]);
  for (int64_t o : offsets) {
    const size_t at =
        static_cast<size_t>(std::upper_bound(r.starts.begin(), r.starts.end(), o) - r.starts.begin()) - 1;
    r.source.push_back(static_cast<int>(static_cast<int64_t>(at) * length + (o - r.starts[at])));
  }
  r.lane_of.resize(static_cast<size_t>(lanes));
  for (int l = 0; l < lanes; ++l) r.lane_of[static_cast<size_t>(r.source[static_cast<size_t>(l)])] = l;
  return r;
}

/// How a vector access at `index` can be made of contiguous accesses (the base its runs start from,
/// and the runs), or nothing: a gather or scatter. At most 8 runs: beyond, the shuffles joining them
/// cost about what the gather does.
inline std::optional<std::pair<LaneOffsets, LaneRuns>> access_as_runs(const Expr& index) {
  constexpr int kMostRuns = 8;
  std::optional<LaneOffsets> offsets = lane_offsets(index);
  if (!offsets) return std::nullopt;
  std::optional<LaneRuns> runs = contiguous_runs(offsets->offsets, kMostRuns);
  if (!runs) return std::nullopt;
  return std::pair{std::move(*offsets), std::move(*runs)};
}

}  // namespace loom
