// Checks a schedule must pass before its loops are built, with errors that name the stages,
// loops and values involved: attachments that still make sense, consistent thread extents, shared
// stages that the block's threads compute together, fragments that whole warps hold.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/lower/bound_inference.hpp"
#include "loom/schedule/axis_lookup.hpp"

namespace loom {

/// Checks that every compute_at still names a loop that exists and encloses all readers.
inline void validate_attachments(const ScheduleNode& sch) {
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->attach_type == AttachType::ReverseScope) {
      if (!s->attach_stage->is_leaf(s->attach_ivar))
        throw ScheduleError(cat("reverse_compute_at: stage '", s->name(), "' is computed inside loop '",
                                s->attach_ivar.name(), "' of stage '", s->attach_stage->name(),
                                "', which is no longer one of its loops (",
                                detail::loop_list(*s->attach_stage), ")"));
      for (const Ref<StageNode>& other : sch.stages)
        if (other->attach_type == AttachType::Scope && other->attach_stage == s.get())
          throw ScheduleError(
              cat("reverse_compute_at: stage '", other->name(), "' is computed at a loop of '", s->name(),
                  "', which is itself placed inside '", s->attach_stage->name(), "'; compute '",
                  other->name(), "' at the root or inside '", s->attach_stage->name(), "' instead"));
      continue;
    }
    if (s->attach_type != AttachType::Scope) continue;
    StageNode* parent = s->attach_stage;
    if (!parent->is_leaf(s->attach_ivar)) {
      std::string why = parent->owns(s->attach_ivar) ? detail::replaced_by(*parent, s->attach_ivar)
                                                     : std::string("is not a loop of that stage");
      throw ScheduleError(cat("compute_at: stage '", s->name(), "' is computed at loop '",
                              s->attach_ivar.name(), "' of stage '", parent->name(), "', but that loop ", why,
                              "; call compute_at again with one of the loops of '", parent->name(),
                              "': ", detail::loop_list(*parent)));
    }
    std::vector<AttachPoint> legal = legal_attach_points(sch, s.get());
    if (std::find(legal.begin(), legal.end(), AttachPoint{parent, s->attach_ivar}) == legal.end())
      throw ScheduleError(cat("compute_at: stage '", s->name(), "' is computed at loop '",
                              s->attach_ivar.name(), "' of stage '", parent->name(),
                              "', which no longer encloses every use of it; legal locations are: ",
                              describe_attach_points(legal)));
  }
}

namespace detail {

/// The innermost blockIdx/threadIdx-bound loop enclosing stage `s`, if it is inside a kernel.
inline const AttachPoint* innermost_gpu_loop(const std::vector<AttachPoint>& path) {
  for (const AttachPoint& p : path) {  // attach_path lists the loops from the innermost outward
    const IterVarAttr* a = p.stage->attr(p.iv);
    if (a && a->bind_thread.defined() && is_gpu_thread_tag(a->bind_thread->thread_tag)) return &p;
  }
  return nullptr;
}

/// A threadIdx loop of extent other than 1 in the kernel whose outermost stage is `root`, if any.
inline const IterVarAttr* multi_thread_binding(const ScheduleNode& sch, const StageNode* root,
                                               const BoundResult& bounds) {
  Analyzer analyzer;
  for (const Ref<StageNode>& t : sch.stages) {
    std::vector<AttachPoint> path = attach_path(t.get());
    if (t.get() != root && (path.empty() || path.back().stage != root)) continue;
    for (const IterVar& leaf : t->leaf_iter_vars) {
      const IterVarAttr* a = t->attr(leaf);
      if (!a || !a->bind_thread.defined() || !is_thread_index_tag(a->bind_thread->thread_tag)) continue;
      auto it = bounds.ranges.find(leaf.get());
      if (it == bounds.ranges.end() || !analyzer.can_prove_equal(it->second.extent, 1)) return a;
    }
  }
  return nullptr;
}

}  // namespace detail

/// A stage stored in shared memory is visible to every thread of the block; unless one of its own
/// loops is bound to threadIdx, every thread computes all of it and writes every element. TVM
/// accepts that (the threads write the same values), but it is a write/write race by CUDA's rules,
/// repeats the block's work once per thread, and the simulator can only report the race with advice
/// that cannot fix it. Say what to bind instead, before anything is built.
inline void validate_shared_stages(const ScheduleNode& sch, const BoundResult& bounds) {
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->is_group || s->attach_type != AttachType::Scope || !is_shared_scope(effective_scope(*s))) continue;
    std::vector<AttachPoint> path = attach_path(s.get());
    const AttachPoint* gpu_loop = detail::innermost_gpu_loop(path);
    if (!gpu_loop) continue;  // not inside a kernel
    bool thread_bound = false;
    for (const IterVar& leaf : s->leaf_iter_vars) {
      const IterVarAttr* a = s->attr(leaf);
      if (a && a->bind_thread.defined() && is_thread_index_tag(a->bind_thread->thread_tag))
        thread_bound = true;
    }
    if (thread_bound) continue;
    const IterVarAttr* threads = detail::multi_thread_binding(sch, path.back().stage, bounds);
    if (!threads) continue;  // one thread per block: nobody to race with
    const std::string& gpu_tag = gpu_loop->stage->attr(gpu_loop->iv)->bind_thread->thread_tag;
    std::string where = gpu_loop->iv.same_as(s->attach_ivar)
                            ? cat("which is bound to ", gpu_tag)
                            : cat("inside loop '", gpu_loop->iv.name(), "' bound to ", gpu_tag);
    // With the default scope, computing it inside a thread loop makes it local instead; a scope set
    // by the user (set_scope, cache_read) stays shared wherever it is computed.
    std::string alternative =
        s->scope.empty() ? cat(", or compute it at a loop of '", s->attach_stage->name(),
                               "' bound to threadIdx, where each thread keeps its own copy in local memory")
                         : std::string();
    throw ScheduleError(
        cat("compute_at: stage '", s->name(), "' is stored in shared memory (it is computed at loop '",
            s->attach_ivar.name(), "' of stage '", s->attach_stage->name(), "', ", where,
            "), but none of its loops is bound to threadIdx, so every thread of the block would "
            "compute all of '",
            s->name(),
            "' and write each element (a data race, and the work repeated by every "
            "thread). Bind one of its loops (",
            detail::loop_list(*s), ") to ", threads->bind_thread->thread_tag,
            ", splitting it by the number of threads first if it is longer", alternative));
  }
}

/// A "local.fragment" stage is one warp's tile spread over its 32 lanes, and the tensor intrinsics
/// that fill and read it find their lane with loom.lane_id. That holds only where a warp is the 32
/// threads of threadIdx.x (its warps on threadIdx.y/z), and where every lane runs the same loops
/// over the fragment: a loop bound to threadIdx.x would give each lane tiles of its own, and the
/// warp-wide instructions would mix 32 different tiles without any error. A fragment's slots
/// cannot rotate either (double_buffer, pipeline): its registers are indexed by constants.
inline void validate_fragment_stages(const ScheduleNode& sch, const BoundResult& bounds) {
  std::unordered_map<const OperationNode*, const StageNode*> fragments;
  const StageNode* first = nullptr;  // in schedule order, for messages
  for (const Ref<StageNode>& s : sch.stages)
    if (!s->is_group && s->attach_type != AttachType::Inline && effective_scope(*s) == scope::fragment) {
      fragments[s->op.get()] = s.get();
      if (!first) first = s.get();
    }
  if (!first) return;
  for (const Ref<StageNode>& s : sch.stages) {
    if (!fragments.count(s->op.get())) continue;
    if (s->double_buffer || s->pipeline_stages)
      throw ScheduleError(cat(s->double_buffer ? "double_buffer" : "pipeline", ": stage '", s->name(),
                              "' is in scope ", scope::fragment,
                              ", whose registers are indexed by constants; rotating slots would move it to "
                              "local memory. Pipeline the shared-memory tiles it is loaded from instead"));
  }
  // The kernel's threadIdx.x must be exactly one warp.
  Analyzer analyzer;
  bool lanes_bound = false;
  for (const Ref<StageNode>& s : sch.stages)
    for (const IterVar& leaf : s->leaf_iter_vars) {
      const IterVarAttr* a = s->attr(leaf);
      if (!a || !a->bind_thread.defined() || a->bind_thread->thread_tag != thread_tag::threadIdx_x) continue;
      lanes_bound = true;
      auto it = bounds.ranges.find(leaf.get());
      if (it != bounds.ranges.end() && !analyzer.can_prove_equal(it->second.extent, 32))
        throw ScheduleError(cat("stage '", first->name(), "' is in scope ", scope::fragment,
                                ", a tile the 32 lanes of a warp hold together, but threadIdx.x has extent ",
                                to_string(it->second.extent), " (loop '", leaf.name(), "' of stage '",
                                s->name(),
                                "'); bind loops of extent 32 to threadIdx.x (the lanes) and number the warps "
                                "with threadIdx.y and threadIdx.z"));
    }
  if (!lanes_bound)
    throw ScheduleError(
        cat("stage '", first->name(), "' is in scope ", scope::fragment,
            ", a tile the 32 lanes of a warp hold together, but no loop is bound to threadIdx.x; "
            "bind a loop of extent 32 to threadIdx.x (e.g. in the shared-memory copies) and "
            "number the warps with threadIdx.y and threadIdx.z"));
  // Every lane runs the same loops over a fragment: none of them is threadIdx.x.
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->is_group || s->attach_type == AttachType::Inline) continue;
    const StageNode* fragment = fragments.count(s->op.get()) ? s.get() : nullptr;
    for (const Tensor& in : s->op->input_tensors())
      if (auto it = fragments.find(in.op().get()); !fragment && it != fragments.end()) fragment = it->second;
    if (!fragment) continue;
    auto refuse = [&](const StageNode& owner, const IterVar& loop) {
      throw ScheduleError(cat("stage '", s->name(), "' ", fragment == s.get() ? "computes" : "reads", " '",
                              fragment->name(), "' (scope ", scope::fragment,
                              ", a tile the warp's 32 lanes hold together) ",
                              &owner == s.get() ? "in its loop '" : "inside loop '", loop.name(), "'",
                              &owner == s.get() ? "" : cat(" of stage '", owner.name(), "'"),
                              ", which is bound to threadIdx.x: each lane would take tiles of its own. Every "
                              "lane must run the same loops over a fragment; bind the warps' loops to "
                              "threadIdx.y or threadIdx.z instead"));
    };
    for (const IterVar& leaf : s->leaf_iter_vars) {
      const IterVarAttr* a = s->attr(leaf);
      if (a && a->bind_thread.defined() && a->bind_thread->thread_tag == thread_tag::threadIdx_x)
        refuse(*s, leaf);
    }
    for (const AttachPoint& p : attach_path(s.get())) {
      const IterVarAttr* a = p.stage->attr(p.iv);
      if (a && a->bind_thread.defined() && a->bind_thread->thread_tag == thread_tag::threadIdx_x)
        refuse(*p.stage, p.iv);
    }
  }
}

/// Every loop bound to one thread tag must have the same extent (one launch dimension), and
/// the extent a thread axis was declared with.
inline void validate_thread_extents(const ScheduleNode& sch, const BoundResult& bounds) {
  struct Binding {
    const StageNode* stage;
    IterVar leaf;
    Expr extent;
  };
  std::unordered_map<std::string, Binding> seen;
  Analyzer analyzer;
  for (const Ref<StageNode>& s : sch.stages) {
    for (const IterVar& leaf : s->leaf_iter_vars) {
      const IterVarAttr* a = s->attr(leaf);
      if (!a || !a->bind_thread.defined()) continue;
      auto it = bounds.ranges.find(leaf.get());
      if (it == bounds.ranges.end()) continue;
      const IterVar& thread = a->bind_thread;
      Expr extent = it->second.extent;
      if (thread.dom().defined() && !analyzer.can_prove_equal(thread.dom().extent, extent))
        throw ScheduleError(cat("bind: loop '", leaf.name(), "' of stage '", s->name(), "' has extent ",
                                to_string(extent), " but thread axis '", thread->thread_tag,
                                "' was declared with extent ", to_string(thread.dom().extent),
                                "; split the loop by that extent before binding"));
      auto [prev, inserted] = seen.emplace(thread->thread_tag, Binding{s.get(), leaf, extent});
      if (!inserted && !analyzer.can_prove_equal(prev->second.extent, extent))
        throw ScheduleError(cat(
            "bind: thread tag '", thread->thread_tag, "' is bound with two different extents: ",
            to_string(prev->second.extent), " (loop '", prev->second.leaf.name(), "' of stage '",
            prev->second.stage->name(), "') and ", to_string(extent), " (loop '", leaf.name(), "' of stage '",
            s->name(), "'); a launch has one extent per thread tag, so split both loops to the same extent"));
    }
  }
}

}  // namespace loom
