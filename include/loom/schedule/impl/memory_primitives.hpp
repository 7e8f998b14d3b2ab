// Memory primitives of a Stage: set_scope, storage_align, double_buffer, and the store-side
// ones, set_store_predicate and prefetch.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <algorithm>
#include <string>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/schedule/axis_lookup.hpp"
#include "loom/schedule/graph.hpp"

namespace loom {

inline bool is_valid_scope(const std::string& scope) {
  for (const char* s :
       {scope::global, scope::shared, scope::local, scope::warp, scope::shared_dyn, scope::fragment})
    if (scope == s) return true;
  return false;
}

namespace detail {
inline void check_scope(const std::string& scope, const std::string& where) {
  if (!is_valid_scope(scope))
    throw ScheduleError(cat(where, ": unknown storage scope '", scope,
                            "'; use one of global, shared, local, warp, shared.dyn, local.fragment"));
}
}  // namespace detail

LOOM_DECL Stage& Stage::set_scope(const std::string& scope) {
  detail::check_not_group(*node_, "set_scope");
  detail::check_scope(scope, cat("set_scope on stage '", name(), "'"));
  if (node_->is_placeholder())
    throw ScheduleError(cat("set_scope: '", name(), "' is a placeholder, whose storage the caller owns"));
  node_->scope = scope;
  return *this;
}

LOOM_DECL Stage& Stage::storage_align(const IterVar& axis_in, int64_t factor, int64_t offset) {
  StageNode& s = *node_;
  detail::check_not_group(s, "storage_align");
  if (s.op->kind != OpKind::Compute)
    throw ScheduleError(
        cat("storage_align: stage '", s.name(), "' is not a compute; only computed buffers are laid out"));
  const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
  int dim = -1;
  for (size_t d = 0; d < c->axis.size(); ++d)
    if (c->axis[d].same_as(axis_in)) dim = static_cast<int>(d);
  if (dim < 0) {
    std::string axes;
    for (const IterVar& iv : c->axis) axes += (axes.empty() ? "" : ", ") + iv.name();
    throw ScheduleError(cat("storage_align: '", axis_in.defined() ? axis_in.name() : "?",
                            "' is not a dimension of '", s.name(), "'; pass one of its axes (", axes,
                            "), e.g. ", s.name(), ".axis(0)"));
  }
  if (factor <= 0)
    throw ScheduleError(cat("storage_align: factor for axis '", axis_in.name(), "' of stage '", s.name(),
                            "' must be positive, got ", factor));
  if (offset < 0 || offset >= factor)
    throw ScheduleError(cat("storage_align: offset for axis '", axis_in.name(), "' of stage '", s.name(),
                            "' must be in [0, factor), got ", offset, " with factor ", factor));
  if (s.swizzle.defined())
    throw ScheduleError(cat("storage_align: stage '", s.name(), "' is already swizzled (", s.swizzle.str(),
                            "); use either padding or a swizzle for one buffer, not both"));
  s.storage_align.push_back(StorageAlign{dim, factor, offset});
  return *this;
}

LOOM_DECL Stage& Stage::double_buffer() {
  detail::check_not_group(*node_, "double_buffer");
  if (node_->is_placeholder())
    throw ScheduleError(
        cat("double_buffer: '", name(), "' is a placeholder; only computed buffers can be doubled"));
  if (node_->pipeline_stages > 0)
    throw ScheduleError(
        cat("double_buffer: '", name(), "' is already pipelined with ", node_->pipeline_stages,
            " stages; pipeline(2) is the double buffer with cp.async copies: use one of them"));
  node_->double_buffer = true;
  return *this;
}

LOOM_DECL Stage& Stage::pipeline(int stages) {
  detail::check_not_group(*node_, "pipeline");
  if (node_->is_placeholder())
    throw ScheduleError(cat("pipeline: '", name(),
                            "' is a placeholder; pipeline a computed buffer (a cache_read ",
                            "of it, placed with compute_at inside the loop that reads it)"));
  if (stages < 2 || stages > 8)
    throw ScheduleError(
        cat("pipeline: stage '", name(), "' asks for ", stages,
            " stages; give 2 to 8 (2: double buffering; cp.async waits count at most 7 groups)"));
  if (node_->double_buffer)
    throw ScheduleError(cat("pipeline: '", name(),
                            "' is already double-buffered; double_buffer() is pipeline(2) ",
                            "without cp.async: use one of them"));
  node_->pipeline_stages = stages;
  return *this;
}

LOOM_DECL Stage& Stage::set_store_predicate(Expr predicate) {
  detail::check_not_group(*node_, "set_store_predicate");
  if (!predicate.defined() || !predicate.dtype().is_bool() || predicate.dtype().lanes != 1)
    throw ScheduleError(cat("set_store_predicate: stage '", name(), "' needs a scalar boolean predicate"));
  node_->store_predicate = predicate;
  return *this;
}

namespace detail {
/// Refuses a tensor that the stage's result cannot depend on (its own output, or an unrelated one).
/// Whether the stage, or a copy attached at or inside the axis, reads it in the end is known only
/// when the schedule is complete: lower() checks that (lower/prefetch.hpp).
inline void check_prefetch_source(const std::string& stage, const Operation& op, const IterVar& iv,
                                  const Tensor& tensor) {
  if (!tensor.defined() || !depends_on(op, tensor.op()))
    throw ScheduleError(cat("prefetch at axis '", iv.name(), "' of stage '", stage,
                            "': the stage does not read '", tensor.defined() ? tensor.name() : "?",
                            "', directly or through the stages it reads; prefetch a tensor it reads"));
}

inline void check_prefetch_offset(const std::string& stage, const IterVar& iv, const Expr& offset) {
  if (!offset.defined() || !offset.dtype().is_integral())
    throw ScheduleError(cat("prefetch: the offset for axis '", iv.name(), "' of stage '", stage,
                            "' must be an integer number of iterations"));
}

/// Refuses `primitive` (cache_write, rfactor), which moves the reads of `stage` into a new stage
/// `moved_to` describes, while the stage has prefetch requests: they would be left on a stage that
/// no longer reads their tensors.
inline void check_no_prefetch(const StageNode& stage, const std::string& where, const std::string& moved_to) {
  for (const auto& [iv, attr] : stage.iter_var_attrs)
    if (!attr.prefetch.empty())
      throw ScheduleError(cat(where, ": stage '", stage.op->name, "' has a prefetch of '",
                              attr.prefetch.front().tensor.name(), "' at axis '", iv->var.name(),
                              "', and its reads move into ", moved_to,
                              "; request the prefetch there, after this call"));
}
}  // namespace detail

LOOM_DECL Stage& Stage::prefetch(const Tensor& tensor, const IterVar& iv_in, Expr offset) {
  IterVar iv = resolve(iv_in, "prefetch");
  detail::check_prefetch_source(name(), node_->op, iv, tensor);
  detail::check_prefetch_offset(name(), iv, offset);
  node_->attr_mut(iv).prefetch.push_back({tensor, offset, IterVar()});
  return *this;
}

LOOM_DECL Stage& Stage::prefetch(const Tensor& tensor, const IterVar& iv_in, Expr offset,
                                 const IterVar& spread_in) {
  IterVar iv = resolve(iv_in, "prefetch");
  IterVar spread = resolve(spread_in, "prefetch");
  detail::check_prefetch_source(name(), node_->op, iv, tensor);
  detail::check_prefetch_offset(name(), iv, offset);
  const std::vector<IterVar>& leaves = node_->leaf_iter_vars;
  auto position = [&](const IterVar& v) {
    return std::find_if(leaves.begin(), leaves.end(), [&](const IterVar& l) { return l.get() == v.get(); });
  };
  const auto at = position(iv), inner = position(spread);
  if (inner <= at)
    throw ScheduleError(cat("prefetch: axis '", spread.name(), "' of stage '", name(),
                            "' is not inside axis '", iv.name(),
                            "'; spread the prefetches over a loop nested in it"));
  if (const IterVarAttr* a = node_->attr(spread); a && a->for_kind == ForKind::Vectorized)
    throw ScheduleError(cat("prefetch: axis '", spread.name(), "' of stage '", name(),
                            "' is vectorized; spread the prefetches over a loop outside the vector"));
  node_->attr_mut(iv).prefetch.push_back({tensor, offset, spread});
  return *this;
}

}  // namespace loom
