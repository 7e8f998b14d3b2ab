// Schedule: the stages of every operation that the outputs depend on, in topological order,
// and Stage, the handle the user schedules one operation through (s[C].split(...)).
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/schedule/stage.hpp"
#include "loom/support/config.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/scan.hpp"

namespace loom {

class ScheduleNode : public Object {
 public:
  std::vector<Operation> outputs;
  std::vector<Ref<StageNode>> stages;  // producers before consumers
  std::unordered_map<const OperationNode*, StageNode*> stage_map;
  std::vector<Ref<StageNode>> groups;

  StageNode* find(const OperationNode* op) const {
    auto it = stage_map.find(op);
    return it == stage_map.end() ? nullptr : it->second;
  }
};

/// split(x, Factor{32}) and split(x, NParts{4}) say which way a loop is split.
struct Factor {
  Expr value;
};
struct NParts {
  Expr value;
};

class Schedule;

/// The schedule of one operation. Every primitive checks its arguments and throws a loom::ScheduleError
/// that names the stage and axis and says how to fix the call, leaving the schedule as it was.
class Stage {
 public:
  Stage() = default;
  explicit Stage(StageNode* node) : node_(node) {}

  StageNode* get() const { return node_.get(); }
  StageNode* operator->() const { return node_.get(); }
  bool defined() const { return static_cast<bool>(node_); }
  const std::string& name() const { return node_->name(); }
  friend bool operator==(const Stage& a, const Stage& b) { return a.node_ == b.node_; }
  /// The stage's current loops, outermost first (after split, fuse, reorder, rfactor): the axes
  /// the primitives take now.
  const std::vector<IterVar>& leaf_axes() const { return node_->leaf_iter_vars; }

  // Loops (schedule/impl/loop_primitives.hpp)
  std::pair<IterVar, IterVar> split(const IterVar& parent, Factor factor);
  std::pair<IterVar, IterVar> split(const IterVar& parent, NParts nparts);
  /// Splits by factor, as TVM's split(parent, factor=...).
  std::pair<IterVar, IterVar> split(const IterVar& parent, Expr factor) {
    return split(parent, Factor{factor});
  }
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  IterVar fuse(const std::vector<IterVar>& axes);
  Stage& reorder(const std::vector<IterVar>& order);
  std::tuple<IterVar, IterVar, IterVar, IterVar> tile(const IterVar& x, const IterVar& y, Expr x_factor,
                                                      Expr y_factor);
  Stage& parallel(const IterVar& iv);
  Stage& vectorize(const IterVar& iv);
  Stage& unroll(const IterVar& iv);
  Stage& bind(const IterVar& iv, const IterVar& thread);
  Stage& pragma(const IterVar& iv, const std::string& key, Expr value = Expr(1));
  /// The loops from `iv` inward are replaced by `intrin`, after checking that they compute
  /// what it computes (schedule/impl/tensorize.hpp; checked when lowering).
  Stage& tensorize(const IterVar& iv, const TensorIntrin& intrin);

  // Placement (schedule/impl/placement_primitives.hpp)
  Stage& compute_at(const Stage& parent, const IterVar& scope);
  Stage& compute_inline();
  Stage& compute_root();
  /// Computes this consumer inside loop `scope` of its producer `producer`, right after each
  /// iteration has produced its tile (TensorIR's reverse_compute_at).
  Stage& reverse_compute_at(const Stage& producer, const IterVar& scope);

  // Memory (schedule/impl/memory_primitives.hpp)
  Stage& set_scope(const std::string& scope);
  Stage& storage_align(const IterVar& axis, int64_t factor, int64_t offset);
  Stage& double_buffer();
  /// XOR-swizzles the shared buffer's flat offsets, CuTe's Swizzle<bits, base, shift>
  /// (schedule/impl/swizzle.hpp).
  Stage& swizzle(int bits, int base, int shift);
  Stage& set_store_predicate(Expr predicate);
  Stage& prefetch(const Tensor& tensor, const IterVar& iv, Expr offset);

  /// The leaf IterVar that `iv` names in this stage (the user's reduce_axis handle maps to
  /// this compute's copy); throws a ScheduleError that explains what happened to it otherwise.
  IterVar resolve(const IterVar& iv, const char* primitive) const;

 private:
  Ref<StageNode> node_;
};

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(Ref<ScheduleNode> node) : node_(std::move(node)) {}

  ScheduleNode* get() const { return node_.get(); }
  ScheduleNode* operator->() const { return node_.get(); }

  Stage operator[](const Tensor& t) const { return (*this)[t.op()]; }
  LOOM_DECL Stage operator[](const Operation& op) const;

  const std::vector<Ref<StageNode>>& stages() const { return node_->stages; }

  // Stages that cache a tensor (schedule/impl/cache.hpp)
  /// A copy of `tensor` in `scope` that `readers` read instead of `tensor`.
  Tensor cache_read(const Tensor& tensor, const std::string& scope, const std::vector<Tensor>& readers);
  /// `tensor` is computed into a cache in `scope`, then copied out.
  Tensor cache_write(const Tensor& tensor, const std::string& scope);
  std::vector<Tensor> cache_write(const std::vector<Tensor>& tensors, const std::string& scope);

  // Groups (schedule/group.hpp)
  /// A group of the stages between `inputs` (excluded unless include_inputs) and `outputs`,
  /// scheduled together: compute_at on the group places all of them.
  Stage create_group(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                     bool include_inputs = false);

  // Reductions (schedule/impl/rfactor.hpp)
  /// Factors the reduction of `tensor` over its reduce loop `axis` into a new stage that keeps
  /// `axis` as a data-parallel dimension (at position `factor_axis`).
  Tensor rfactor(const Tensor& tensor, const IterVar& axis, int factor_axis = 0);
  std::vector<Tensor> rfactor_all(const Tensor& tensor, const IterVar& axis, int factor_axis = 0);

  /// A deep copy: scheduling the copy leaves this schedule unchanged.
  LOOM_DECL Schedule copy() const;

 private:
  Ref<ScheduleNode> node_;
};

/// The schedule of everything `outputs` depend on, every stage at its default: computed at
/// the root, in order, with one loop per axis.
LOOM_DECL Schedule create_schedule(const std::vector<Tensor>& outputs);
LOOM_DECL Schedule create_schedule(const Tensor& output);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/schedule/impl/cache.hpp"
#include "loom/schedule/impl/group.hpp"
#include "loom/schedule/impl/loop_primitives.hpp"
#include "loom/schedule/impl/memory_primitives.hpp"
#include "loom/schedule/impl/placement_primitives.hpp"
#include "loom/schedule/impl/rfactor.hpp"
#include "loom/schedule/impl/schedule.hpp"
#include "loom/schedule/impl/swizzle.hpp"
#include "loom/schedule/impl/tensorize.hpp"
#endif
