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

/// What a Schedule holds: the output operations, a stage per operation in topological order (producers
/// first), and the groups made by create_group(). Reach it through Schedule::operator-> to inspect a
/// schedule.
class ScheduleNode : public Object {
 public:
  /// The output operations create_schedule() was given.
  std::vector<Operation> outputs;
  std::vector<Ref<StageNode>> stages;  ///< producers before consumers
  /// The stage of each operation, for find().
  std::unordered_map<const OperationNode*, StageNode*> stage_map;
  /// The groups made by create_group().
  std::vector<Ref<StageNode>> groups;

  /// The stage of operation `op`, or nullptr when `op` is not part of this schedule.
  StageNode* find(const OperationNode* op) const {
    auto it = stage_map.find(op);
    return it == stage_map.end() ? nullptr : it->second;
  }
};

/// split(x, Factor{32}) and split(x, NParts{4}) say which way a loop is split.
struct Factor {
  /// The inner loop's extent.
  Expr value;
};
/// See Factor: split(x, NParts{4}) makes the outer loop 4 iterations long.
struct NParts {
  /// The outer loop's extent.
  Expr value;
};

class Schedule;

/// The schedule of one operation. Every primitive checks its arguments and throws a loom::ScheduleError
/// that names the stage and axis and says how to fix the call, leaving the schedule as it was.
class Stage {
 public:
  Stage() = default;
  /// A handle to `node`, owned by its schedule; users get stages from Schedule::operator[].
  explicit Stage(StageNode* node) : node_(node) {}

  /// Node access: defined() is false for a default-constructed Stage; name() is the operation's (or group's)
  /// name; two Stages are equal when they are the same stage.
  /// @{
  StageNode* get() const { return node_.get(); }
  StageNode* operator->() const { return node_.get(); }
  bool defined() const { return static_cast<bool>(node_); }
  const std::string& name() const { return node_->name(); }
  friend bool operator==(const Stage& a, const Stage& b) { return a.node_ == b.node_; }
  /// @}
  /// The stage's current loops, outermost first (after split, fuse, reorder, rfactor): the axes
  /// the primitives take now.
  const std::vector<IterVar>& leaf_axes() const { return node_->leaf_iter_vars; }

  // Loops (schedule/impl/loop_primitives.hpp)

  /// Splits loop `parent` into (outer, inner): inner runs `factor` iterations (a positive integer or a
  /// symbolic Expr); a factor that does not divide the extent adds a guard. Throws loom::ScheduleError naming
  /// the stage and axis otherwise.
  std::pair<IterVar, IterVar> split(const IterVar& parent, Factor factor);
  /// Splits loop `parent` into (outer, inner) with `nparts` outer iterations; throws loom::ScheduleError
  /// naming the stage and axis otherwise.
  std::pair<IterVar, IterVar> split(const IterVar& parent, NParts nparts);
  /// Splits by factor, as TVM's split(parent, factor=...).
  std::pair<IterVar, IterVar> split(const IterVar& parent, Expr factor) {
    return split(parent, Factor{factor});
  }
  /// Fuses adjacent loops (outer directly around inner, or a list outermost first) into one loop of the
  /// product extent; fuse({}) adds a loop of one iteration. Throws loom::ScheduleError naming the stage and
  /// axis otherwise.
  /// @{
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  IterVar fuse(const std::vector<IterVar>& axes);
  /// @}
  /// Puts the given leaf loops in `order`, outermost first; the stage's other loops keep their places.
  /// Throws loom::ScheduleError naming the stage and axis otherwise.
  Stage& reorder(const std::vector<IterVar>& order);
  /// Splits `x` by `x_factor` and `y` by `y_factor` and orders the loops (x_outer, y_outer, x_inner,
  /// y_inner), which it returns; `x` and `y` must differ. Checks everything before changing the stage.
  std::tuple<IterVar, IterVar, IterVar, IterVar> tile(const IterVar& x, const IterVar& y, Expr x_factor,
                                                      Expr y_factor);
  /// Marks loop `iv`: parallel runs its iterations on the CPU thread pool, vectorize turns it into vector
  /// lanes (not a reduction axis), unroll repeats the body. Throws loom::ScheduleError naming the
  /// stage and axis otherwise.
  /// @{
  Stage& parallel(const IterVar& iv);
  Stage& vectorize(const IterVar& iv);
  Stage& unroll(const IterVar& iv);
  /// @}
  /// Binds loop `iv` to GPU thread axis `thread` (thread_axis("threadIdx.x"), "blockIdx.y", "vthread", ...).
  /// Throws loom::ScheduleError naming the stage and axis otherwise.
  Stage& bind(const IterVar& iv, const IterVar& thread);
  /// Annotates loop `iv` with pragma `key` (lowered to an AttrStmt "pragma_<key>"); "unroll" and "vectorize"
  /// are the primitives of that name. Throws loom::ScheduleError for an empty key.
  Stage& pragma(const IterVar& iv, const std::string& key, Expr value = Expr(1));
  /// The loops from `iv` inward are replaced by `intrin`, after checking that they compute
  /// what it computes (schedule/impl/tensorize.hpp; checked when lowering).
  Stage& tensorize(const IterVar& iv, const TensorIntrin& intrin);

  // Placement (schedule/impl/placement_primitives.hpp)

  /// Computes this stage inside loop `scope` of stage `parent`, only the region the enclosing iterations need
  /// (bound inference); throws loom::ScheduleError when parent does not consume it or would create a cycle.
  Stage& compute_at(const Stage& parent, const IterVar& scope);
  /// Substitutes this stage's expression into its consumers, so it has no loops or buffer of its own;
  /// only for a compute without reduction. Throws loom::ScheduleError otherwise.
  Stage& compute_inline();
  /// Moves the stage back to the outermost level (undoes compute_at and compute_inline).
  Stage& compute_root();
  /// Computes this consumer inside loop `scope` of its producer `producer`, right after each
  /// iteration has produced its tile (TensorIR's reverse_compute_at).
  Stage& reverse_compute_at(const Stage& producer, const IterVar& scope);

  // Memory (schedule/impl/memory_primitives.hpp)

  /// Stores the stage's output in memory `scope`: "global", "shared", "shared.dyn", "local" or "warp";
  /// throws loom::ScheduleError for another scope or a placeholder.
  Stage& set_scope(const std::string& scope);
  /// Pads dimension `axis` of the stage's buffer so its stride is `factor * k + offset` elements
  /// (to avoid shared-memory bank conflicts); only for computes.
  Stage& storage_align(const IterVar& axis, int64_t factor, int64_t offset);
  /// Doubles the stage's buffer so that loading the next tile overlaps computing on the current one
  /// (a computed buffer inside a loop; not a placeholder).
  Stage& double_buffer();
  /// Gives the stage's buffer `stages` slots (2 to 8) inside the loop that fills it at the start of
  /// each iteration: iteration i fills the slot of iteration i + stages - 1, so stages - 1 tiles are
  /// in flight while one is read. Copies from global to shared memory become cp.async (4, 8 or 16
  /// bytes per copy: f32 elements, or vectorized copies), awaited one iteration's group at a time;
  /// other copies stay plain stores (lower/inject_pipeline.hpp). Not with double_buffer().
  Stage& pipeline(int stages);
  /// XOR-swizzles the shared buffer's flat offsets, CuTe's Swizzle<bits, base, shift>
  /// (schedule/impl/swizzle.hpp).
  Stage& swizzle(int bits, int base, int shift);
  /// Stores a value only where `predicate` (a scalar bool) holds; throws loom::ScheduleError otherwise.
  Stage& set_store_predicate(Expr predicate);
  /// Prefetches `tensor` (read by this stage, or by a stage attached at `iv` or inside it) `offset`
  /// iterations of loop `iv` ahead of its use; the offset is an integer Expr. Throws
  /// loom::ScheduleError naming the stage and axis otherwise.
  Stage& prefetch(const Tensor& tensor, const IterVar& iv, Expr offset);
  /// The same, with the cache lines issued one at a time across the iterations of the loops inside
  /// `iv` down to `spread_over` (a later leaf, not vectorized) instead of all at once: for a region
  /// larger than the hardware keeps in flight, read while this iteration computes. The region may
  /// also be one that a stage attached (compute_at) at `iv` or inside it reads: a copy of the next
  /// block.
  Stage& prefetch(const Tensor& tensor, const IterVar& iv, Expr offset, const IterVar& spread_over);

  /// The leaf IterVar that `iv` names in this stage (the user's reduce_axis handle maps to
  /// this compute's copy); throws a ScheduleError that explains what happened to it otherwise.
  IterVar resolve(const IterVar& iv, const char* primitive) const;

 private:
  Ref<StageNode> node_;
};

/// A schedule: a stage per operation that its outputs depend on, made by create_schedule(). Copying a
/// Schedule shares it; copy() makes an independent one.
class Schedule {
 public:
  Schedule() = default;
  /// Wraps a schedule node.
  explicit Schedule(Ref<ScheduleNode> node) : node_(std::move(node)) {}

  /// The ScheduleNode (outputs, stages, groups).
  /// @{
  ScheduleNode* get() const { return node_.get(); }
  ScheduleNode* operator->() const { return node_.get(); }
  /// @}

  /// The stage of the operation that produces `t` (s[C]); throws loom::ScheduleError when it is not in this
  /// schedule.
  Stage operator[](const Tensor& t) const { return (*this)[t.op()]; }
  /// The stage of `op`; throws loom::ScheduleError when it is not in this schedule.
  LOOM_DECL Stage operator[](const Operation& op) const;

  /// Every stage, producers before consumers.
  const std::vector<Ref<StageNode>>& stages() const { return node_->stages; }

  // Stages that cache a tensor (schedule/impl/cache.hpp)

  /// A copy of `tensor` in `scope` that `readers` read instead of `tensor`.
  Tensor cache_read(const Tensor& tensor, const std::string& scope, const std::vector<Tensor>& readers);
  /// `tensor` is computed into a cache in `scope`, then copied out.
  Tensor cache_write(const Tensor& tensor, const std::string& scope);
  /// cache_write of several outputs of one multi-output operation at once; returns their caches in order.
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
  /// rfactor for every output of a multi-output reduction (argmax's index and value); returns the new tensors
  /// in output order.
  std::vector<Tensor> rfactor_all(const Tensor& tensor, const IterVar& axis, int factor_axis = 0);

  /// A deep copy: scheduling the copy leaves this schedule unchanged.
  LOOM_DECL Schedule copy() const;

 private:
  Ref<ScheduleNode> node_;
};

/// The schedule of everything `outputs` depend on, every stage at its default: computed at
/// the root, in order, with one loop per axis.
LOOM_DECL Schedule create_schedule(const std::vector<Tensor>& outputs);
/// create_schedule({output}).
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
