// StageNode: the schedule of one operation: its loops (all and leaf IterVars, relations),
// per-loop attributes (parallel, bound to a thread, pragmas), where it is computed (attach),
// and where its result is stored (scope, alignment).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "loom/ir/stmt.hpp"
#include "loom/schedule/relations.hpp"
#include "loom/schedule/swizzle_layout.hpp"
#include "loom/te/tensor_intrin.hpp"

namespace loom {

class ScheduleNode;
class StageNode;

/// Where a stage is computed, as compute_at, compute_inline, compute_root and the groups set it.
enum class AttachType : uint8_t {
  Root,            ///< computed at the outermost level of the function
  Inline,          ///< substituted into its consumers
  InlinedAlready,  ///< a stage that inlining has consumed
  Scope,           ///< computed inside a loop of another stage (compute_at)
  GroupRoot,       ///< at the root of its group
  ScanInit,        ///< the initial rows of a scan, written before its time loop
  ScanUpdate,      ///< the update of a scan, inside its time loop
  ReverseScope,    ///< a consumer computed inside a loop of its producer (reverse_compute_at)
};

/// The name of an AttachType as messages write it ("root", "inline", "compute_at", ...).
inline const char* attach_type_name(AttachType t) {
  switch (t) {
    case AttachType::Root: return "root";
    case AttachType::Inline: return "inline";
    case AttachType::InlinedAlready: return "inlined";
    case AttachType::Scope: return "compute_at";
    case AttachType::GroupRoot: return "group root";
    case AttachType::ScanInit: return "scan init";
    case AttachType::ScanUpdate: return "scan update";
    case AttachType::ReverseScope: return "reverse_compute_at";
  }
  return "?";
}

/// prefetch(tensor, axis, offset[, spread_over]) at one loop.
struct PrefetchRequest {
  Tensor tensor;  ///< read by the stage, or by a stage attached at the loop or inside it
  Expr offset;    ///< iterations of the loop ahead
  /// Undefined: every line at the start of each iteration. Else an inner loop of the stage: the
  /// lines are issued one at a time across the iterations of the loops down to it (lower/prefetch.hpp).
  IterVar spread;
};

/// What the schedule says about one loop.
struct IterVarAttr {
  /// How the loop runs: serial, parallel, vectorized, unrolled, or bound to a thread.
  ForKind for_kind = ForKind::Serial;
  IterVar bind_thread;                    ///< the thread axis this loop is bound to
  std::vector<LoopAnnotation> pragmas;    ///< pragma(axis, key, value)
  std::vector<PrefetchRequest> prefetch;  ///< prefetched each iteration
  TensorIntrin tensor_intrin;             ///< the loop nest from here inward is this intrinsic
};

/// storage_align(axis, factor, offset) on the stage's output buffer dimension `dim`.
struct StorageAlign {
  /// The buffer dimension padded.
  int dim = 0;
  /// Its stride is padded to a multiple of factor, plus offset.
  int64_t factor = 0;
  /// See factor.
  int64_t offset = 0;
};

/// The schedule of one operation (what a Stage handle points to): its loops, their attributes, where it
/// is computed and where its output is stored. The primitives of Stage maintain it; read it to inspect a
/// schedule.
class StageNode : public Object {
 public:
  Operation op;         ///< the operation as currently scheduled (inlining may rewrite it)
  Operation origin_op;  ///< the operation the stage was created for
  /// Every loop the stage has had, replaced ones included (split parents, fused loops).
  std::vector<IterVar> all_iter_vars;
  /// The current loops, outermost first.
  std::vector<IterVar> leaf_iter_vars;
  /// How the loops derive from one another: split, fuse, rebase.
  std::vector<IterVarRelation> relations;
  /// The schedule's attributes of each loop, by loop.
  std::unordered_map<const IterVarNode*, IterVarAttr> iter_var_attrs;
  /// Where the stage is computed.
  AttachType attach_type = AttachType::Root;
  /// For compute_at: the loop of attach_stage that the stage is computed in.
  IterVar attach_ivar;
  StageNode* attach_stage = nullptr;  ///< owned by the same schedule
  StageNode* group = nullptr;         ///< the group stage this stage belongs to, if any
  std::string scope;                  ///< storage scope of the output; empty means "global"
  /// True for the stages of the schedule's outputs.
  bool is_output = false;
  /// Stores only where this holds (set_store_predicate()); undefined: everywhere.
  Expr store_predicate;
  /// Whether double_buffer() was applied.
  bool double_buffer = false;
  /// pipeline()'s number of slots; 0 when it was not applied.
  int pipeline_stages = 0;
  /// The storage_align() requests, in order.
  std::vector<StorageAlign> storage_align;
  SwizzleLayout swizzle;  ///< swizzle(bits, base, shift) of the output buffer (schedule/impl/swizzle.hpp)
  const ScheduleNode* schedule = nullptr;  ///< the owning schedule
  /// Handles that name an axis of this stage under another identity (the original compute's
  /// reduce axes after cache_write moved the reduction here).
  std::unordered_map<const IterVarNode*, IterVar> axis_alias;
  /// Axes that left the stage (rfactor, cache_write) and a sentence saying where they went.
  std::unordered_map<const IterVarNode*, std::string> retired;

  /// A group (create_group) is a stage without an operation that places its member stages.
  bool is_group = false;
  /// The group's name, for groups.
  std::string group_name;

  /// The stage's name (the operation's, or the group's), and whether it is an input (placeholder).
  /// @{
  const std::string& name() const { return is_group ? group_name : op->name; }
  bool is_placeholder() const { return !is_group && op->kind == OpKind::Placeholder; }
  /// @}
  /// The schedule's attributes of loop `iv`, or nullptr when it has none.
  const IterVarAttr* attr(const IterVar& iv) const {
    auto it = iter_var_attrs.find(iv.get());
    return it == iter_var_attrs.end() ? nullptr : &it->second;
  }
  /// The attributes of loop `iv`, created empty if needed.
  IterVarAttr& attr_mut(const IterVar& iv) { return iter_var_attrs[iv.get()]; }
  /// True when `iv` is one of the stage's current loops.
  bool is_leaf(const IterVar& iv) const {
    for (const IterVar& l : leaf_iter_vars)
      if (l.same_as(iv)) return true;
    return false;
  }
  /// True when `iv` is any loop or axis of this stage, current or replaced (split, fused).
  bool owns(const IterVar& iv) const {
    for (const IterVar& a : all_iter_vars)
      if (a.same_as(iv)) return true;
    return false;
  }
};

namespace detail {

/// A fresh stage of `op` in schedule `owner`: at the root, one loop per axis.
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

}  // namespace loom
