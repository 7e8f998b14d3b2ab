// thread_allreduce in the simulator: every thread contributes its values and receives the
// combination over its group, in a fixed tree order. As on a GPU (AllreducePlan,
// ir/thread_allreduce.hpp) it is a block-wide synchronization point unless its groups are lanes of
// one warp: then each warp combines its own lanes, and the block does not wait.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/thread_allreduce.hpp"
#include "loom/sim/warp_stmts.hpp"

namespace loom::sim {

/// The threads of a block are grouped by their indices along the dimensions NOT reduced (so with
/// threadIdx.x reduced and a block of 32 x 4 threads there are 4 groups of 32). Each group's values
/// are combined by a binary tree over its threads in linear order: at step s = 1, 2, 4, ... the
/// element at position i (a multiple of 2s) becomes combine(v[i], v[i + s]). The order is fixed,
/// so float results are deterministic; every thread of the group receives v[0] in element 0 of
/// each results buffer. A group always holds at least its own thread, so the identity is never
/// needed (the lowering already puts it in `values` for threads whose condition is false).
class WarpAllreduce final : public WarpStmt, public SyncPoint {
 public:
  /// The most values one allreduce combines (a reducer of more is refused when compiled).
  static constexpr size_t kMaxValues = 16;

  /// One reduced value: its contribution, its combiner over (lhs, rhs) and the frame slots
  /// (ints or floats, as is_float says) of lhs, rhs and the variable that carries the result to
  /// the results store.
  struct Value {
    bool is_float = false;
    interp::IntExprPtr int_value, int_combine;
    interp::FloatExprPtr float_value, float_combine;
    int lhs_slot = 0, rhs_slot = 0, result_slot = 0;
  };

  WarpAllreduce(std::vector<Value> values, std::array<bool, 3> reduced, WarpStmtPtr store_results,
                std::string where)
      : values_(std::move(values)),
        reduced_(reduced),
        store_results_(std::move(store_results)),
        where_(std::move(where)) {}

  const std::string& where() const override { return where_; }

  void run(Warp& w, LaneMask mask) const override {
    w.end_statement();
    w.check_converged(*this, mask);
    BlockState& b = *w.block;
    const size_t threads = static_cast<size_t>(b.num_threads), n = values_.size();
    if (b.reduce_ints.size() < n * threads) b.reduce_ints.resize(n * threads);
    if (b.reduce_floats.size() < n * threads) b.reduce_floats.resize(n * threads);
    for_each_lane(mask, [&](int l) {
      const size_t t = static_cast<size_t>(w.first_thread + l);
      for (size_t k = 0; k < n; ++k) {
        const Value& v = values_[k];
        if (v.is_float) {
          b.reduce_floats[k * threads + t] = v.float_value->eval(w.frames[l]);
        } else {
          b.reduce_ints[k * threads + t] = v.int_value->eval(w.frames[l]);
        }
      }
    });
    const SimDim3 dim = b.block_dim;
    if (plan_allreduce({dim.x, dim.y, dim.z}, reduced_).synchronizes_block()) {
      w.sync(*this, mask);  // on_all_arrived has replaced every contribution by its group's result
    } else {
      // Warp shuffles: the groups lie within this warp, which combines them now; the other warps
      // neither wait nor pass a barrier here.
      combine_groups(b, static_cast<size_t>(w.first_thread), static_cast<size_t>(w.num_lanes));
    }
    // The clock: one shuffle step per halving of the group, for each value.
    const int64_t group = (reduced_[0] ? dim.x : 1) * (reduced_[1] ? dim.y : 1) * (reduced_[2] ? dim.z : 1);
    int64_t steps = 0;
    while ((int64_t{1} << steps) < group) ++steps;
    w.clock += steps * static_cast<int64_t>(n) * w.costs->shuffle;
    for_each_lane(mask, [&](int l) {
      const size_t t = static_cast<size_t>(w.first_thread + l);
      for (size_t k = 0; k < n; ++k) {
        const Value& v = values_[k];
        if (v.is_float) {
          w.frames[l].floats[v.result_slot] = b.reduce_floats[k * threads + t];
        } else {
          w.frames[l].ints[v.result_slot] = b.reduce_ints[k * threads + t];
        }
      }
    });
    store_results_->run(w, mask);
  }

  void on_all_arrived(BlockState& b) const override {
    combine_groups(b, 0, static_cast<size_t>(b.num_threads));
  }

 private:
  /// Replaces the contributions of threads [first, first + count) by their groups' results; the
  /// groups must lie within those threads (the whole block, or one warp for warp shuffles).
  void combine_groups(BlockState& b, size_t first, size_t count) const {
    const size_t threads = static_cast<size_t>(b.num_threads), n = values_.size();
    // Threads sorted by group, in linear order within a group.
    std::vector<std::pair<int64_t, int>> order(count);
    for (size_t i = 0; i < count; ++i) {
      const size_t t = first + i;
      const SimDim3 idx = b.thread_index(static_cast<int>(t));
      const int64_t x = reduced_[0] ? 0 : idx.x, y = reduced_[1] ? 0 : idx.y, z = reduced_[2] ? 0 : idx.z;
      order[i] = {x + b.block_dim.x * (y + b.block_dim.y * z), static_cast<int>(t)};
    }
    std::sort(order.begin(), order.end());
    std::vector<int64_t> ints(n * threads);
    std::vector<double> floats(n * threads);
    for (size_t begin = 0; begin < count;) {
      size_t end = begin;
      while (end < count && order[end].first == order[begin].first) ++end;
      const size_t size = end - begin;
      for (size_t k = 0; k < n; ++k) {  // gather the group's values, position i = i-th member
        for (size_t i = 0; i < size; ++i) {
          const size_t t = static_cast<size_t>(order[begin + i].second);
          ints[k * threads + i] = b.reduce_ints[k * threads + t];
          floats[k * threads + i] = b.reduce_floats[k * threads + t];
        }
      }
      for (size_t s = 1; s < size; s *= 2)
        for (size_t i = 0; i + s < size; i += 2 * s)
          combine(*b.scratch_frame, ints, floats, threads, i, i + s);
      for (size_t k = 0; k < n; ++k) {  // every member receives position 0
        for (size_t i = 0; i < size; ++i) {
          const size_t t = static_cast<size_t>(order[begin + i].second);
          b.reduce_ints[k * threads + t] = ints[k * threads];
          b.reduce_floats[k * threads + t] = floats[k * threads];
        }
      }
      begin = end;
    }
  }

  /// Position i becomes combine(position i, position j), for every value at once: a combiner
  /// of several values (argmax) reads all of its old lhs and rhs before any is replaced.
  void combine(interp::Frame& frame, std::vector<int64_t>& ints, std::vector<double>& floats, size_t stride,
               size_t i, size_t j) const {
    const size_t n = values_.size();
    for (size_t k = 0; k < n; ++k) {
      const Value& v = values_[k];
      if (v.is_float) {
        frame.floats[v.lhs_slot] = floats[k * stride + i];
        frame.floats[v.rhs_slot] = floats[k * stride + j];
      } else {
        frame.ints[v.lhs_slot] = ints[k * stride + i];
        frame.ints[v.rhs_slot] = ints[k * stride + j];
      }
    }
    int64_t new_ints[kMaxValues] = {};
    double new_floats[kMaxValues] = {};
    for (size_t k = 0; k < n; ++k) {
      const Value& v = values_[k];
      if (v.is_float) {
        new_floats[k] = v.float_combine->eval(frame);
      } else {
        new_ints[k] = v.int_combine->eval(frame);
      }
    }
    for (size_t k = 0; k < n; ++k) {
      if (values_[k].is_float) {
        floats[k * stride + i] = new_floats[k];
      } else {
        ints[k * stride + i] = new_ints[k];
      }
    }
  }

  std::vector<Value> values_;
  std::array<bool, 3> reduced_;  // threadIdx.x/y/z reduced over
  WarpStmtPtr store_results_;
  std::string where_;
};

}  // namespace loom::sim
