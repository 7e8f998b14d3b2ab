// Prefetch requests (Stage::prefetch(tensor, axis, offset[, spread_over])) turned into code: at the
// start of each iteration of the loop, touch every cache line of the region of `tensor` that the
// iteration `offset` steps ahead will read; or, spread over inner loops, one line at a time across
// those loops' iterations. The region is the stage's own reads, or those of a stage attached at the
// loop (a copy of the next block, made while this one computes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/lower/interval_set.hpp"
#include "loom/schedule/iter_values.hpp"
#include "loom/te/compute.hpp"

namespace loom {

/// What make_prefetches needs to know of the rest of the schedule.
struct PrefetchScope {
  /// The stages attached (compute_at) at a leaf loop of the stage being built.
  std::function<std::vector<const StageNode*>(const IterVar& leaf)> attached;
  /// Whether a tensor's stage was inlined into its readers (compute_inline after the prefetch
  /// request): nothing reads it any more, and its prefetch is dropped.
  std::function<bool(const Tensor&)> inlined;
  /// The leaf loop of the stage being built inside which a tensor's stage is computed (compute_at,
  /// directly or through other attached stages); undefined when it is stored outside that stage.
  std::function<IterVar(const Tensor&)> computed_at;
};

namespace detail {

/// The part of `tensor` that iteration `loop + offset` of leaf `at` of stage `s` reads, the loops
/// inside it relaxed over all their values: per dimension an interval, none where nothing reads it
/// or the region depends on data.
inline std::vector<IntervalSet> prefetch_region(const StageNode& s, size_t at, const Tensor& tensor,
                                                const Expr& offset, const RangeMap& ranges,
                                                const ValueMap& values, const PrefetchScope& scope,
                                                Analyzer& analyzer) {
  Var loop_var = loop_var_of(s, s.leaf_iter_vars[at]);
  IntervalMap relax;
  for (size_t l = at + 1; l < s.leaf_iter_vars.size(); ++l) {
    const IterVar& leaf = s.leaf_iter_vars[l];
    const Range& r = ranges.at(leaf.get());
    relax[loop_var_of(s, leaf).get()] = IntervalSet{
        make_zero(r.extent.dtype()), analyzer.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
  }
  VarMap ahead{{loop_var.get(), loop_var + cast(loop_var.dtype(), offset)}};
  std::vector<IntervalSet> region(static_cast<size_t>(tensor.ndim()));
  bool found = false;
  // The loads of `tensor` in `body`, its own variables replaced by `root`.
  auto add_reads = [&](const std::vector<Expr>& bodies, const VarMap& root, IntervalEvaluator& ev) {
    for (const Expr& b : bodies)
      for_each_expr(b, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || !(TensorKey(load->producer) == TensorKey(tensor))) return;
        for (size_t d = 0; d < region.size(); ++d) {
          IntervalSet set = ev.eval(substitute(load->indices[d], root));
          region[d] = found ? ev.unite(region[d], set) : set;
        }
        found = true;
      });
  };
  const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
  {
    VarMap root;
    for (const IterVar& iv : c->root_iter_vars())
      root[iv.var().get()] = substitute(values.at(iv.get()), ahead);
    IntervalEvaluator ev(relax, analyzer);
    add_reads(c->body, root, ev);
  }
  // A stage attached at the loop: its own iteration space, as bound inference sized it for this
  // iteration of the loop, moved `offset` iterations ahead.
  if (scope.attached)
    for (const StageNode* a : scope.attached(s.leaf_iter_vars[at])) {
      if (a->op->kind != OpKind::Compute) continue;
      const auto* ac = static_cast<const ComputeOpNode*>(a->op.get());
      IntervalMap inner = relax;
      for (const IterVar& iv : ac->root_iter_vars()) {
        const Range& r = ranges.at(iv.get());
        Expr mn = substitute(r.min, ahead);
        inner[iv.var().get()] = IntervalSet{
            analyzer.simplify(mn), analyzer.simplify(mn + r.extent - make_int_const(r.extent.dtype(), 1))};
      }
      IntervalEvaluator ev(inner, analyzer);
      add_reads(ac->body, VarMap{}, ev);
    }
  bool bounded = found;
  for (const IntervalSet& r : region) bounded = bounded && r.bounded();
  return bounded ? region : std::vector<IntervalSet>{};
}

/// The index of cache line `line` of `region` (lines counted row-major, the innermost dimension in
/// lines of `per_line` elements), limited to the tensor's extent: the region of the iteration after
/// the last is past the end, and a prefetch stays within the buffer.
inline std::vector<Expr> region_line(const Tensor& tensor, const std::vector<IntervalSet>& region,
                                     const std::vector<int64_t>& lines_per_dim, int64_t per_line, Expr line,
                                     Analyzer& analyzer) {
  std::vector<Expr> index(region.size());
  for (size_t d = region.size(); d-- > 0;) {
    const DType t = region[d].min.dtype();
    const int64_t n = lines_per_dim[d];
    Expr step = d == 0 ? line : floormod(line, make_int_const(line.dtype(), n));
    if (d > 0) line = floordiv(line, make_int_const(line.dtype(), n));
    if (d + 1 == region.size()) step = step * make_int_const(step.dtype(), per_line);
    Expr i = region[d].min + cast(t, step);
    index[d] = analyzer.simplify(min(i, cast(t, tensor.shape()[d]) - make_int_const(t, 1)));
  }
  return index;
}

}  // namespace detail

/// The prefetches placed at the top of leaf loop `leaves[l]` of compute stage `s`: those requested
/// at that loop without a spread, and those requested at an outer loop spread down to it. `values`
/// gives every IterVar of the stage in loop counters. Undefined when there are none.
inline Stmt make_prefetches(const StageNode& s, size_t l, const RangeMap& ranges, const ValueMap& values,
                            const PrefetchScope& scope = {}) {
  if (s.op->kind != OpKind::Compute) return Stmt();
  Analyzer analyzer;
  std::vector<Stmt> out;
  const int64_t none = -1;
  for (size_t at = 0; at <= l; ++at) {
    const IterVarAttr* attr = s.attr(s.leaf_iter_vars[at]);
    if (!attr) continue;
    for (const PrefetchRequest& request : attr->prefetch) {
      const bool spread = request.spread.defined();
      if (spread ? request.spread.get() != s.leaf_iter_vars[l].get() : at != l) continue;
      const Tensor& tensor = request.tensor;
      if (scope.computed_at) {
        // Made inside the loop: the iteration ahead has not computed it yet, and its storage exists
        // only within the loop's body.
        const IterVar inside = scope.computed_at(tensor);
        for (size_t k = at; inside.defined() && k < s.leaf_iter_vars.size(); ++k)
          if (s.leaf_iter_vars[k].get() == inside.get())
            throw ScheduleError(cat("prefetch of '", tensor.name(), "' at axis '",
                                    s.leaf_iter_vars[at].name(), "' of stage '", s.op->name, "': '",
                                    tensor.name(), "' is computed inside that loop (compute_at axis '",
                                    inside.name(),
                                    "'), so the iteration ahead has not made it; prefetch a tensor stored "
                                    "outside the loop, such as the one it is computed from"));
      }
      std::vector<IntervalSet> region = detail::prefetch_region(s, at, tensor, request.offset, ranges, values,
                                                                spread ? scope : PrefetchScope(), analyzer);
      const std::string where = cat("prefetch of '", tensor.name(), "' at axis '",
                                    s.leaf_iter_vars[at].name(), "' of stage '", s.op->name, "'");
      if (region.empty()) {
        // A data-dependent region (nothing sensible to prefetch), or a tensor inlined since.
        if (!spread || (scope.inlined && scope.inlined(tensor))) continue;
        throw ScheduleError(cat(where, ": neither the stage nor a stage attached at that axis reads '",
                                tensor.name(),
                                "' in a region known before it runs; prefetch a tensor they read"));
      }
      const int64_t per_line = std::max<int64_t>(1, 64 / tensor.dtype().bytes());
      // Lines per dimension (the innermost in lines), constant where the region's size is.
      std::vector<int64_t> lines(region.size(), none);
      std::vector<Expr> extents(region.size());
      for (size_t d = 0; d < region.size(); ++d) {
        Expr extent =
            analyzer.simplify(region[d].max - region[d].min + make_int_const(region[d].min.dtype(), 1));
        if (d + 1 == region.size())
          extent = analyzer.simplify(floordiv(extent + make_int_const(extent.dtype(), per_line - 1),
                                              make_int_const(extent.dtype(), per_line)));
        extents[d] = extent;
        if (const int64_t* c = as_const_int(extent)) {
          lines[d] = *c;
        } else if (spread) {
          // A region whose size depends on the iteration (a partial block): spread its largest size;
          // the lines past its end are clamped into the tensor.
          const ConstIntBound b = analyzer.const_int_bound(extent);
          if (b.is_finite() && b.max_value >= 0) lines[d] = b.max_value;
        }
      }
      if (!spread) {
        // Every line at once: a loop per dimension.
        std::vector<Expr> index;
        std::vector<std::pair<Var, Expr>> loops;
        for (size_t d = 0; d < region.size(); ++d) {
          const bool innermost = d + 1 == region.size();
          Var v("prefetch." + tensor.name() + "." + std::to_string(d), region[d].min.dtype());
          Expr step = innermost ? v * make_int_const(v.dtype(), per_line) : Expr(v);
          if (is_one(extents[d])) step = make_zero(v.dtype());
          index.push_back(analyzer.simplify(region[d].min + step));
          if (!is_one(extents[d])) loops.emplace_back(v, extents[d]);
        }
        Stmt body = PrefetchNode::make(tensor(index));
        for (auto it = loops.rbegin(); it != loops.rend(); ++it)
          body = ForNode::make(it->first, make_zero(it->first.dtype()), it->second, ForKind::Serial, body);
        out.push_back(body);
        continue;
      }
      // Spread: iteration t of the loops inside `at` down to `l` (row-major) issues line t / stride
      // when stride iterations divide t, or `per_iteration` lines where there are fewer iterations
      // than lines.
      int64_t total_lines = 1, iterations = 1;
      for (int64_t n : lines) total_lines = n == none ? none : total_lines * n;
      // Counted in the loops' own type where the counts fit it.
      const DType index_type = s.leaf_iter_vars[l].var().dtype();
      Expr t = make_int_const(index_type, 0);
      for (size_t k = at + 1; k <= l; ++k) {
        const IterVar& leaf = s.leaf_iter_vars[k];
        const int64_t* extent = as_const_int(ranges.at(leaf.get()).extent);
        if (!extent || iterations == none) {
          iterations = none;
          continue;
        }
        iterations *= *extent;
        t = t * make_int_const(index_type, *extent) + cast(index_type, leaf_counter(s, leaf, ranges));
      }
      if (total_lines == none || iterations == none)
        throw ScheduleError(cat(where, " spread over axis '", s.leaf_iter_vars[l].name(),
                                "' needs constant loop extents and a region of constant size; prefetch "
                                "without spreading, or split the loops by constant factors"));
      if (total_lines == 0) continue;
      if (index_type.bits < 64 && std::max(iterations, total_lines) >= (int64_t{1} << (index_type.bits - 1)))
        throw ScheduleError(cat(where, " spread over axis '", s.leaf_iter_vars[l].name(), "': ", iterations,
                                " iterations or ", total_lines, " lines overflow the loops' ",
                                index_type.str(), " counters; spread over fewer loops"));
      const DType it = index_type;
      t = analyzer.simplify(t);
      const int64_t stride = iterations / total_lines;
      if (stride >= 1) {
        Expr line = stride == 1 ? t : floordiv(t, make_int_const(it, stride));
        Stmt p =
            PrefetchNode::make(tensor(detail::region_line(tensor, region, lines, per_line, line, analyzer)));
        Expr due = make_const(boolean, 1);
        if (stride > 1) due = floormod(t, make_int_const(it, stride)) == make_int_const(it, 0);
        if (stride * total_lines < iterations) due = due && line < make_int_const(it, total_lines);
        out.push_back(is_one(due) ? p : IfThenElseNode::make(analyzer.simplify(due), p));
      } else {
        const int64_t per_iteration = (total_lines + iterations - 1) / iterations;
        Var u("prefetch." + tensor.name() + ".line", it);
        Expr line = t * make_int_const(it, per_iteration) + u;
        Stmt p =
            PrefetchNode::make(tensor(detail::region_line(tensor, region, lines, per_line, line, analyzer)));
        p = IfThenElseNode::make(line < make_int_const(it, total_lines), p);
        out.push_back(
            ForNode::make(u, make_int_const(it, 0), make_int_const(it, per_iteration), ForKind::Serial, p));
      }
    }
  }
  if (out.empty()) return Stmt();
  return SeqNode::make(out);
}

}  // namespace loom
