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

/// The schedule of one operation. Every primitive checks its arguments and throws a
/// loom::ScheduleError that names the stage and axis and says how to fix the call.
class Stage {
 public:
  Stage() = default;
  explicit Stage(StageNode* node) : node_(node) {}

  StageNode* get() const { return node_.get(); }
  StageNode* operator->() const { return node_.get(); }
  bool defined() const { return static_cast<bool>(node_); }
  const std::string& name() const { return node_->name(); }
  friend bool operator==(const Stage& a, const Stage& b) { return a.node_ == b.node_; }

  // Loops (schedule/loop_primitives.hpp)
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
  /// what it computes (schedule/tensorize.hpp; checked when lowering).
  Stage& tensorize(const IterVar& iv, const TensorIntrin& intrin);

  // Placement (schedule/placement_primitives.hpp)
  Stage& compute_at(const Stage& parent, const IterVar& scope);
  Stage& compute_inline();
  Stage& compute_root();
  /// Computes this consumer inside loop `scope` of its producer `producer`, right after each
  /// iteration has produced its tile (TensorIR's reverse_compute_at).
  Stage& reverse_compute_at(const Stage& producer, const IterVar& scope);

  // Memory (schedule/memory_primitives.hpp)
  Stage& set_scope(const std::string& scope);
  Stage& storage_align(const IterVar& axis, int64_t factor, int64_t offset);
  Stage& double_buffer();
  /// XOR-swizzles the shared buffer's flat offsets, CuTe's Swizzle<bits, base, shift> (schedule/swizzle.hpp).
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
  Stage operator[](const Operation& op) const {
    StageNode* s = node_->find(op.get());
    if (!s) {
      std::string names;
      for (const Ref<StageNode>& st : node_->stages) names += (names.empty() ? "" : ", ") + st->name();
      throw ScheduleError(cat("'", op->name, "' is not part of this schedule; its stages are: ", names,
                              ". Create the schedule from the outputs that depend on it"));
    }
    return Stage(s);
  }
  const std::vector<Ref<StageNode>>& stages() const { return node_->stages; }

  // Stages that cache a tensor (schedule/cache.hpp)
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

  // Reductions (schedule/rfactor.hpp)
  /// Factors the reduction of `tensor` over its reduce loop `axis` into a new stage that keeps
  /// `axis` as a data-parallel dimension (at position `factor_axis`).
  Tensor rfactor(const Tensor& tensor, const IterVar& axis, int factor_axis = 0);
  std::vector<Tensor> rfactor_all(const Tensor& tensor, const IterVar& axis, int factor_axis = 0);

  /// A deep copy: scheduling the copy leaves this schedule unchanged.
  Schedule copy() const {
    auto fresh = make_ref<ScheduleNode>();
    fresh->outputs = node_->outputs;
    std::unordered_map<const StageNode*, StageNode*> remap;
    auto clone = [&](const Ref<StageNode>& s) {
      auto c = make_ref<StageNode>(*s);
      c->schedule = fresh.get();
      remap[s.get()] = c.get();
      return c;
    };
    for (const Ref<StageNode>& s : node_->stages) fresh->stages.push_back(clone(s));
    for (const Ref<StageNode>& g : node_->groups) fresh->groups.push_back(clone(g));
    auto fix = [&](StageNode* s) {
      if (s->attach_stage) s->attach_stage = remap.at(s->attach_stage);
      if (s->group) s->group = remap.at(s->group);
    };
    for (const Ref<StageNode>& s : fresh->stages) {
      fix(s.get());
      fresh->stage_map[s->op.get()] = s.get();
      if (s->origin_op.get() != s->op.get()) fresh->stage_map[s->origin_op.get()] = s.get();
    }
    for (const Ref<StageNode>& g : fresh->groups) fix(g.get());
    return Schedule(fresh);
  }

 private:
  Ref<ScheduleNode> node_;
};

namespace detail {

inline Ref<StageNode> make_stage(const Operation& op, const ScheduleNode* owner) {
  auto s = make_ref<StageNode>();
  s->op = op;
  s->origin_op = op;
  s->all_iter_vars = op->root_iter_vars();
  s->leaf_iter_vars = s->all_iter_vars;
  s->schedule = owner;
  return s;
}

}  // namespace detail

/// The schedule of everything `outputs` depend on, every stage at its default: computed at
/// the root, in order, with one loop per axis.
inline Schedule create_schedule(const std::vector<Tensor>& outputs) {
  if (outputs.empty()) throw ScheduleError("create_schedule: give at least one output tensor");
  auto sch = make_ref<ScheduleNode>();
  std::unordered_map<const OperationNode*, bool> visited;
  // Post-order depth-first walk: every stage comes after the stages it reads.
  std::function<void(const Operation&)> visit = [&](const Operation& op) {
    if (visited.count(op.get())) return;
    visited[op.get()] = true;
    for (const Tensor& t : op->input_tensors()) visit(t.op());
    Ref<StageNode> stage = detail::make_stage(op, sch.get());
    sch->stage_map[op.get()] = stage.get();
    sch->stages.push_back(stage);
  };
  for (const Tensor& t : outputs) {
    if (!t.defined()) throw ScheduleError("create_schedule: an output tensor is undefined");
    bool seen = false;
    for (const Operation& o : sch->outputs) seen = seen || o.same_as(t.op());
    if (!seen) sch->outputs.push_back(t.op());
    visit(t.op());
  }
  for (const Operation& o : sch->outputs) sch->stage_map.at(o.get())->is_output = true;
  // A scan computes its init rows before, and its update inside, its time loop.
  for (const Ref<StageNode>& s : sch->stages) {
    if (s->op->kind != OpKind::Scan) continue;
    const auto* scan = static_cast<const ScanOpNode*>(s->op.get());
    for (const Tensor& t : scan->init) {
      StageNode* init = sch->stage_map.at(t.op().get());
      init->attach_type = AttachType::ScanInit;
      init->attach_stage = s.get();
    }
    for (const Tensor& t : scan->update) {
      StageNode* update = sch->stage_map.at(t.op().get());
      update->attach_type = AttachType::ScanUpdate;
      update->attach_stage = s.get();
      update->attach_ivar = scan->scan_axis;
    }
  }
  return Schedule(sch);
}
inline Schedule create_schedule(const Tensor& output) { return create_schedule(std::vector<Tensor>{output}); }

}  // namespace loom
