// Prefetch requests (Stage::prefetch(tensor, axis, offset[, spread_over])) turned into code: at the
// start of each iteration of the loop, touch every cache line of the region of `tensor` that the
// iteration `offset` steps ahead will read; or, spread over inner loops, one line at a time across
// those loops' iterations. The region is the stage's own reads, or those of a stage attached at the
// loop or inside it (a copy of the next block, made while this one computes).
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/lower/interval_set.hpp"
#include "loom/schedule/iter_values.hpp"
#include "loom/te/compute.hpp"

namespace loom {

/// What make_prefetches needs to know of the rest of the schedule.
struct PrefetchScope {
  /// The stages attached (compute_at) at a leaf loop of `owner`: the stage being built, or a stage
  /// attached inside it.
  std::function<std::vector<const StageNode*>(const StageNode& owner, const IterVar& leaf)> attached;
  /// Whether a tensor's stage was inlined into its readers (compute_inline after the prefetch
  /// request): nothing reads it any more, and its prefetch is dropped.
  std::function<bool(const Tensor&)> inlined;
  /// The leaf loop of the stage being built inside which a tensor's stage is computed (compute_at,
  /// directly or through other attached stages); undefined when it is stored outside that stage.
  std::function<IterVar(const Tensor&)> computed_at;
};

namespace detail {

/// What a stage (and the stages attached at one of its loops) read of a tensor in an iteration.
struct PrefetchRegion {
  /// Per dimension, over the reads whose indices have bounds; empty where there are none.
  std::vector<IntervalSet> dims;
  bool read = false;  ///< whether anything reads the tensor there
};

/// The part of `tensor` that iteration `loop + offset` of leaf `at` of stage `s` reads, the loops
/// inside it relaxed over all their values, with the reads of the stages attached at that loop or
/// inside it (and of those attached inside them) when `scope` names them. A read whose indices have
/// no bound before the kernel runs (indices read from data) is left out: it cannot be prefetched, the
/// others still can.
inline PrefetchRegion prefetch_region(const StageNode& s, size_t at, const Tensor& tensor, const Expr& offset,
                                      const RangeMap& ranges, const ValueMap& values,
                                      const PrefetchScope& scope, Analyzer& analyzer) {
  Var loop_var = loop_var_of(s, s.leaf_iter_vars[at]);
  IntervalMap relax;
  for (size_t l = at + 1; l < s.leaf_iter_vars.size(); ++l) {
    const IterVar& leaf = s.leaf_iter_vars[l];
    const Range& r = ranges.at(leaf.get());
    relax[loop_var_of(s, leaf).get()] = IntervalSet{
        make_zero(r.extent.dtype()), analyzer.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
  }
  VarMap ahead{{loop_var.get(), loop_var + cast(loop_var.dtype(), offset)}};
  PrefetchRegion out;
  std::vector<IntervalSet> region(static_cast<size_t>(tensor.ndim()));
  bool bounded = false;  // whether `region` holds a read yet
  // Variables that must not remain in a region: the loops inside `at` and the variables of the
  // attached stages, which the region ranges over. A read whose bounds keep one (a range the
  // evaluation below cannot express in the outer loops) is left out, as one read from data is.
  std::unordered_set<const VarNode*> inside;
  for (const auto& [var, set] : relax) inside.insert(var);
  auto in_scope = [&](const IntervalSet& set) {
    for (const Expr& bound : {set.min, set.max})
      for (const Var& v : free_vars(bound))
        if (inside.count(v.get())) return false;
    return true;
  };
  // The loads of `tensor` in `body`, its own variables replaced by `root`.
  auto add_reads = [&](const std::vector<Expr>& bodies, const VarMap& root, IntervalEvaluator& ev) {
    for (const Expr& b : bodies)
      for_each_expr(b, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || !(TensorKey(load->producer) == TensorKey(tensor))) return;
        out.read = true;
        std::vector<IntervalSet> sets(region.size());
        for (size_t d = 0; d < region.size(); ++d) {
          sets[d] = ev.eval(substitute(load->indices[d], root));
          if (!sets[d].bounded() || !in_scope(sets[d])) return;
        }
        for (size_t d = 0; d < region.size(); ++d)
          region[d] = bounded ? ev.unite(region[d], sets[d]) : sets[d];
        bounded = true;
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
  // A stage attached at the loop or inside it: its own iteration space, as bound inference sized it
  // for an iteration of the loop it is attached at (in that loop's variable and the outer ones),
  // moved `offset` iterations ahead of `at`, over all the values of the loops between. `outer` holds
  // those loops: the stage's own inside `at`, and every loop of the attached stages it lies in.
  std::function<void(const StageNode&, const IntervalMap&)> add_attached = [&](const StageNode& a,
                                                                               const IntervalMap& outer) {
    if (a.op->kind != OpKind::Compute) return;
    const auto* ac = static_cast<const ComputeOpNode*>(a.op.get());
    // [mn, mx] over the values of the variables in `vars`.
    auto over = [&](const IntervalMap& vars, const Expr& mn, const Expr& mx) {
      IntervalEvaluator ev(vars, analyzer);
      const Expr lo = ev.eval(substitute(mn, ahead)).min, hi = ev.eval(substitute(mx, ahead)).max;
      return IntervalSet{lo.defined() ? analyzer.simplify(lo) : lo,
                         hi.defined() ? analyzer.simplify(hi) : hi};
    };
    auto last = [](const Range& r) { return r.min + r.extent - make_int_const(r.extent.dtype(), 1); };
    for (const IterVar& iv : ac->root_iter_vars()) inside.insert(iv.var().get());
    for (const IterVar& leaf : a.leaf_iter_vars) inside.insert(loop_var_of(a, leaf).get());
    // Its data axes (their values), then its loops (counters from 0; an extent may depend on a data
    // axis, as a triangular reduce loop's does), then its reduce axes, whose ranges may depend on
    // both. An unsplit axis is its own loop: its variable is a value in the body, a counter in the
    // ranges of the stages attached at it, so the two sets are kept apart.
    IntervalMap values = outer;
    for (const IterVar& iv : ac->axis) {
      const Range& r = ranges.at(iv.get());
      values[iv.var().get()] = over(values, r.min, last(r));
    }
    IntervalMap loops = values;
    for (const IterVar& leaf : a.leaf_iter_vars) {
      const Range& r = ranges.at(leaf.get());
      loops[loop_var_of(a, leaf).get()] =
          over(values, make_zero(r.extent.dtype()), r.extent - make_int_const(r.extent.dtype(), 1));
    }
    IntervalMap both = loops;  // an unsplit axis as its value
    for (const auto& [var, set] : values) both[var] = set;
    for (const IterVar& iv : ac->reduce_axis) {
      const Range& r = ranges.at(iv.get());
      both[iv.var().get()] = values[iv.var().get()] = over(both, r.min, last(r));
    }
    IntervalEvaluator ev(values, analyzer);
    add_reads(ac->body, VarMap{}, ev);
    // Stages attached at its loops: those loops' counters over all their values.
    for (const IterVar& leaf : a.leaf_iter_vars)
      for (const StageNode* nested : scope.attached(a, leaf)) add_attached(*nested, loops);
  };
  if (scope.attached)
    for (size_t k = at; k < s.leaf_iter_vars.size(); ++k)
      for (const StageNode* a : scope.attached(s, s.leaf_iter_vars[k])) add_attached(*a, relax);
  if (!bounded) return out;
  // Only the tensor's own elements, where the interval and the shape are constants (a read guarded at
  // an edge, x - 1 where x > 0, starts before the first): clipped, the lines counted from the start
  // cover the end. Symbolic intervals (a block's, whose size is then a constant) keep their size;
  // their indices are clamped where the lines are made.
  for (size_t d = 0; d < region.size(); ++d) {
    const int64_t *lo = as_const_int(region[d].min), *hi = as_const_int(region[d].max),
                  *shape = as_const_int(tensor.shape()[d]);
    if (!lo || !hi || !shape || *shape <= 0) continue;
    const DType t = region[d].min.dtype();
    region[d] = IntervalSet{make_int_const(t, std::clamp<int64_t>(*lo, 0, *shape - 1)),
                            make_int_const(t, std::clamp<int64_t>(*hi, 0, *shape - 1))};
  }
  out.dims = std::move(region);
  return out;
}

/// Elements of `dtype` in a 64-byte cache line (at least 1; sub-byte types count their bits).
inline int64_t elements_per_line(DType dtype) {
  const int64_t bits = std::max<int64_t>(1, int64_t{dtype.bits} * dtype.lanes);
  return std::max<int64_t>(1, 512 / bits);
}

/// a * b, or -1 when either is -1 (unknown) or the product passes 2^62.
inline int64_t times_or_unknown(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return -1;
  if (b != 0 && a > (int64_t{1} << 62) / b) return -1;
  return a * b;
}

/// The tensor as its lines are counted. An input's rows are compact: where a region covers whole rows
/// (its innermost dimension entire), those rows are one run of memory, and the lines run on from row
/// to row (16 rows of 5 floats: 6 lines, not one per row). The innermost dimension then merges into
/// the one before it. Only one merge, of an innermost dimension of constant extent: the tensor's
/// indices come back as a division and a remainder by a constant, which flattening the storage
/// cancels (more levels leave divisions in the address that the simplifier does not undo). A
/// computed tensor keeps its dimensions (its rows may be padded).
struct PrefetchSpace {
  const Tensor* tensor = nullptr;
  std::vector<Expr> shape;          ///< the extents, the merged ones as one
  std::vector<IntervalSet> region;  ///< the region in them
  bool merged = false;              ///< whether the tensor's innermost dimension is in the last one

  /// The tensor's element at `index` (one per dimension of `shape`), for its prefetch.
  Expr load(std::vector<Expr> index, Analyzer& analyzer) const {
    if (merged) {
      const Expr flat = index.back();
      const Expr row = cast(flat.dtype(), tensor->shape().back());
      index.back() = analyzer.simplify(floordiv(flat, row));
      index.push_back(analyzer.simplify(floormod(flat, row)));
    }
    return (*tensor)(index);
  }
};

inline PrefetchSpace prefetch_space(const Tensor& tensor, const std::vector<IntervalSet>& region,
                                    Analyzer& analyzer) {
  PrefetchSpace space{&tensor, tensor.shape(), region, false};
  const size_t last = region.size() - 1;
  const int64_t* row = as_const_int(tensor.shape()[last]);
  if (tensor.op()->kind != OpKind::Placeholder || last == 0 || !row ||
      !is_zero(analyzer.simplify(region[last].min)) ||
      !is_zero(analyzer.simplify(region[last].max - make_int_const(region[last].max.dtype(), *row - 1))))
    return space;
  const DType t = region[last - 1].min.dtype();
  const Expr w = make_int_const(t, *row);
  space.shape.pop_back();
  space.shape.back() = analyzer.simplify(cast(t, space.shape.back()) * w);
  space.region.pop_back();
  space.region.back() =
      IntervalSet{analyzer.simplify(region[last - 1].min * w),
                  analyzer.simplify(region[last - 1].max * w + make_int_const(t, *row - 1))};
  space.merged = true;
  return space;
}

/// Whether every row of the space's region starts on a cache line: an input's region whose innermost
/// start is a multiple of a line's `per_line` elements, as is the innermost extent (a row's pitch),
/// in a buffer whose data starts on a line (Buffer<T> allocates on 64 bytes).
inline bool rows_start_on_lines(const PrefetchSpace& space, int64_t per_line, Analyzer& analyzer) {
  // A computed tensor's buffer may be padded (storage_align) or hold a window of it.
  if (space.tensor->op()->kind != OpKind::Placeholder) return false;
  const size_t last = space.region.size() - 1;
  const Expr start = space.region[last].min;
  if (!is_zero(analyzer.simplify(floormod(start, make_int_const(start.dtype(), per_line))))) return false;
  if (last == 0) return true;
  const int64_t* pitch = as_const_int(space.shape[last]);
  return pitch && *pitch % per_line == 0;
}

/// The cache lines along dimension d of a region `extent` elements long (the innermost dimension:
/// the lines those elements cover from a line's start when `aligned`, else the most they can touch
/// however the first is placed; the others: one per index).
inline Expr lines_along(Expr extent, bool innermost, bool aligned, int64_t per_line, Analyzer& analyzer) {
  if (!innermost || per_line == 1) return extent;
  const int64_t spill = aligned ? per_line - 1 : 2 * per_line - 2;
  return analyzer.simplify(
      floordiv(extent + make_int_const(extent.dtype(), spill), make_int_const(extent.dtype(), per_line)));
}

/// Index `i` along dimension d of the space, kept inside its extent (a region ahead of the last
/// iteration, or behind the first for a negative offset, lies outside): a prefetch is a hint, and it
/// touches only the tensor's own memory.
inline Expr clamp_into(const PrefetchSpace& space, size_t d, Expr i, Analyzer& analyzer) {
  const DType t = i.dtype();
  return analyzer.simplify(max(min(i, cast(t, space.shape[d]) - make_int_const(t, 1)), make_zero(t)));
}

/// The element of the tensor at cache line `line` of the space's region (lines counted row-major,
/// `lines_per_dim` of them along each dimension, the innermost in lines of `per_line` elements).
inline Expr region_line(const PrefetchSpace& space, const std::vector<int64_t>& lines_per_dim,
                        int64_t per_line, Expr line, Analyzer& analyzer) {
  const std::vector<IntervalSet>& region = space.region;
  std::vector<Expr> index(region.size());
  for (size_t d = region.size(); d-- > 0;) {
    const DType t = region[d].min.dtype();
    Expr step = d == 0 ? line : floormod(line, make_int_const(line.dtype(), lines_per_dim[d]));
    if (d > 0) line = floordiv(line, make_int_const(line.dtype(), lines_per_dim[d]));
    step = cast(t, step);
    if (d + 1 == region.size()) step = step * make_int_const(t, per_line);
    index[d] = clamp_into(space, d, region[d].min + step, analyzer);
  }
  return space.load(index, analyzer);
}

/// Every line of the space's region at once: a loop per dimension (`extents` in lines along each).
inline Stmt all_lines_prefetch(const PrefetchSpace& space, const std::vector<Expr>& extents, int64_t per_line,
                               Analyzer& analyzer) {
  const Tensor& tensor = *space.tensor;
  const std::vector<IntervalSet>& region = space.region;
  std::vector<Expr> index;
  std::vector<std::pair<Var, Expr>> loops;
  for (size_t d = 0; d < region.size(); ++d) {
    const bool innermost = d + 1 == region.size();
    Var v("prefetch." + tensor.name() + "." + std::to_string(d), region[d].min.dtype());
    Expr step = innermost ? v * make_int_const(v.dtype(), per_line) : Expr(v);
    if (is_one(extents[d])) step = make_zero(v.dtype());
    index.push_back(clamp_into(space, d, region[d].min + step, analyzer));
    if (!is_one(extents[d])) loops.emplace_back(v, extents[d]);
  }
  Stmt body = PrefetchNode::make(space.load(index, analyzer));
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    body = ForNode::make(it->first, make_zero(it->first.dtype()), it->second, ForKind::Serial, body);
  return body;
}

/// The lines of the space's region spread over the iterations of leaves at + 1 .. l of stage `s` (see
/// Stage::prefetch); undefined when the region has no lines. `where` names the request in errors.
inline Stmt spread_prefetch(const StageNode& s, size_t at, size_t l, const PrefetchSpace& space,
                            const std::vector<Expr>& extents, int64_t per_line, const RangeMap& ranges,
                            const std::string& where, Analyzer& analyzer) {
  const Tensor& tensor = *space.tensor;
  const std::vector<IntervalSet>& region = space.region;
  const int64_t unknown = -1;
  // The lines along each dimension: constant, or (a partial block, whose size depends on
  // the outer loops) the most there can be, from those loops' ranges, and no more than the tensor
  // has; the lines past a partial block's end land in the tensor (clamped) and cost little.
  Analyzer bounds;
  std::unordered_set<const VarNode*> bound_vars;
  for (size_t k = 0; k <= at; ++k) {
    const Range& r = ranges.at(s.leaf_iter_vars[k].get());
    if (!as_const_int(r.extent)) continue;
    const Var v = loop_var_of(s, s.leaf_iter_vars[k]);
    bounds.bind(v, Range(make_zero(r.extent.dtype()), r.extent));
    bound_vars.insert(v.get());
  }
  std::vector<int64_t> lines(region.size(), unknown);
  for (size_t d = 0; d < region.size(); ++d) {
    // A bound from the loops' ranges only: a size variable's bound would be its type's range.
    bool loops_only = true;
    for (const Var& v : free_vars(extents[d])) loops_only = loops_only && bound_vars.count(v.get());
    const ConstIntBound b = bounds.const_int_bound(extents[d]);
    if (loops_only && b.is_finite() && b.max_value >= 0) lines[d] = b.max_value;
    if (const int64_t* shape = as_const_int(space.shape[d])) {
      const int64_t all = d + 1 == region.size() ? (*shape + per_line - 1) / per_line + 1 : *shape;
      lines[d] = lines[d] == unknown ? all : std::min(lines[d], all);
    }
  }
  // Iteration t of the loops inside `at` down to `l` (row-major) issues line t / stride when
  // stride iterations divide t, or `per_iteration` lines where there are fewer iterations than
  // lines.
  int64_t total_lines = 1, iterations = 1;
  for (int64_t n : lines) total_lines = times_or_unknown(total_lines, n);
  const DType it = s.leaf_iter_vars[l].var().dtype();  // the loops' own type, where the counts fit
  Expr t = make_int_const(it, 0);
  for (size_t k = at + 1; k <= l; ++k) {
    const IterVar& leaf = s.leaf_iter_vars[k];
    const int64_t* extent = as_const_int(ranges.at(leaf.get()).extent);
    iterations = times_or_unknown(iterations, extent ? *extent : unknown);
    if (iterations != unknown) t = t * make_int_const(it, *extent) + cast(it, leaf_counter(s, leaf, ranges));
  }
  if (total_lines == unknown || iterations == unknown)
    throw ScheduleError(cat(where, " spread over axis '", s.leaf_iter_vars[l].name(),
                            "' needs constant loop extents and a region of bounded size; prefetch "
                            "without spreading, or split the loops by constant factors"));
  if (total_lines == 0) return Stmt();
  // The largest value computed: a line number, or t * per_iteration + u, times per_line.
  const int64_t largest = total_lines > (int64_t{1} << 61) || iterations > (int64_t{1} << 61)
                              ? unknown
                              : times_or_unknown(total_lines + iterations, per_line);
  if (largest == unknown || (it.bits < 64 && largest >= (int64_t{1} << (it.bits - 1))))
    throw ScheduleError(cat(where, " spread over axis '", s.leaf_iter_vars[l].name(), "': ", iterations,
                            " iterations and ", total_lines, " lines overflow the loops' ", it.str(),
                            " counters; spread over fewer loops or a smaller region"));
  t = analyzer.simplify(t);
  // A power of two: t / stride and t % stride are then a shift and a mask in the loop.
  int64_t stride = iterations / total_lines;
  while (stride & (stride - 1)) stride &= stride - 1;
  if (stride >= 1) {
    Expr line = stride == 1 ? t : floordiv(t, make_int_const(it, stride));
    Stmt p = PrefetchNode::make(region_line(space, lines, per_line, line, analyzer));
    Expr due = make_const(boolean, 1);
    if (stride > 1) due = floormod(t, make_int_const(it, stride)) == make_int_const(it, 0);
    if (stride * total_lines < iterations) due = due && line < make_int_const(it, total_lines);
    return is_one(due) ? p : IfThenElseNode::make(analyzer.simplify(due), p);
  } else {
    const int64_t per_iteration = (total_lines + iterations - 1) / iterations;
    Var u("prefetch." + tensor.name() + ".line", it);
    Expr line = t * make_int_const(it, per_iteration) + u;
    Stmt p = PrefetchNode::make(region_line(space, lines, per_line, line, analyzer));
    p = IfThenElseNode::make(line < make_int_const(it, total_lines), p);
    return ForNode::make(u, make_int_const(it, 0), make_int_const(it, per_iteration), ForKind::Serial, p);
  }
}

}  // namespace detail

/// Checks the prefetch requests of compute stage `s` against its final loops: each request's axis
/// must still be a loop of the stage (not split or fused after the request), and a spread's inner
/// axis a loop inside it with no vectorized loop down to it. Throws a ScheduleError naming the stage
/// and axis otherwise.
inline void check_prefetch_requests(const StageNode& s) {
  auto position = [&](const IterVarNode* iv) {
    for (size_t k = 0; k < s.leaf_iter_vars.size(); ++k)
      if (s.leaf_iter_vars[k].get() == iv) return static_cast<int64_t>(k);
    return int64_t{-1};
  };
  // Loops from a tensorized one inward become the intrinsic's code: no prefetch goes there.
  int64_t tensorized = static_cast<int64_t>(s.leaf_iter_vars.size());
  for (size_t k = 0; k < s.leaf_iter_vars.size(); ++k)
    if (const IterVarAttr* a = s.attr(s.leaf_iter_vars[k]); a && a->tensor_intrin) {
      tensorized = static_cast<int64_t>(k);
      break;
    }
  for (const auto& [iv, attr] : s.iter_var_attrs)
    for (const PrefetchRequest& request : attr.prefetch) {
      const std::string where = cat("prefetch of '", request.tensor.name(), "' at axis '", iv->var.name(),
                                    "' of stage '", s.op->name, "'");
      const int64_t at = position(iv);
      if (at < 0)
        throw ScheduleError(
            cat(where, ": the axis is no longer one of the stage's loops (split, fused or ",
                "tensorized after the request); ask for the prefetch once the loops are final"));
      const int64_t inner = request.spread.defined() ? position(request.spread.get()) : at;
      if (std::max(at, inner) >= tensorized)
        throw ScheduleError(
            cat(where, ": axis '", s.leaf_iter_vars[static_cast<size_t>(std::max(at, inner))].name(),
                "' is the tensorized loop '", s.leaf_iter_vars[static_cast<size_t>(tensorized)].name(),
                "' or inside it, which the intrinsic replaces; prefetch at a loop outside it"));
      if (!request.spread.defined()) continue;
      if (inner <= at)
        throw ScheduleError(
            cat(where, ": the spread axis '", request.spread.name(),
                "' is no longer a loop inside it (split, fused or reordered after the request); ",
                "ask for the prefetch once the loops are final"));
      for (int64_t k = at + 1; k <= inner; ++k)
        if (const IterVarAttr* a = s.attr(s.leaf_iter_vars[static_cast<size_t>(k)]);
            a && a->for_kind == ForKind::Vectorized)
          throw ScheduleError(cat(where, ": axis '", s.leaf_iter_vars[static_cast<size_t>(k)].name(),
                                  "', from it down to the spread axis '", request.spread.name(),
                                  "', is vectorized; spread over a loop outside the vector"));
    }
}

/// The prefetches placed at the top of leaf loop `leaves[l]` of compute stage `s`: those requested
/// at that loop without a spread, and those requested at an outer loop spread down to it. `values`
/// gives every IterVar of the stage in loop counters. Undefined when there are none.
inline Stmt make_prefetches(const StageNode& s, size_t l, const RangeMap& ranges, const ValueMap& values,
                            const PrefetchScope& scope = {}) {
  if (s.op->kind != OpKind::Compute) return Stmt();
  Analyzer analyzer;
  std::vector<Stmt> out;
  for (size_t at = 0; at <= l; ++at) {
    const IterVarAttr* attr = s.attr(s.leaf_iter_vars[at]);
    if (!attr) continue;
    for (const PrefetchRequest& request : attr->prefetch) {
      const bool spread = request.spread.defined();
      if (spread ? request.spread.get() != s.leaf_iter_vars[l].get() : at != l) continue;
      const Tensor& tensor = request.tensor;
      const std::string where = cat("prefetch of '", tensor.name(), "' at axis '",
                                    s.leaf_iter_vars[at].name(), "' of stage '", s.op->name, "'");
      if (scope.computed_at) {
        // Made at a loop of this stage: inside `axis`, the iteration ahead has not computed it yet;
        // outside, its buffer holds only the window of the current iterations. Either way its
        // storage is not the tensor's whole extent, which the indices are clamped to.
        const IterVar inside = scope.computed_at(tensor);
        if (inside.defined())
          throw ScheduleError(cat(where, ": '", tensor.name(), "' is computed at loop '", inside.name(),
                                  "' of this stage (compute_at), so its buffer holds only what the current ",
                                  "iterations use; prefetch a tensor stored outside the stage's loops, such "
                                  "as the one it is computed from"));
      }
      const detail::PrefetchRegion found =
          detail::prefetch_region(s, at, tensor, request.offset, ranges, values, scope, analyzer);
      const std::vector<IntervalSet>& region = found.dims;
      if (region.empty()) {
        // A tensor inlined since (nothing reads it any more), or, without a spread, a region with
        // no bound: nothing sensible to prefetch.
        if ((scope.inlined && scope.inlined(tensor)) || (found.read && !spread)) continue;
        if (found.read)
          throw ScheduleError(
              cat(where, ": the region of '", tensor.name(),
                  "' read ahead has no bound before the kernel runs (indices read from data, or "
                  "products of symbolic sizes); prefetch without spreading (it is then skipped)"));
        throw ScheduleError(cat(
            where, ": neither the stage nor a stage attached at or inside that axis reads '", tensor.name(),
            "' (a cache_read after the request, for one, moves the stage's reads into the copy); "
            "prefetch a tensor they read"));
      }
      const detail::PrefetchSpace space = detail::prefetch_space(tensor, region, analyzer);
      const std::vector<IntervalSet>& lined = space.region;
      const int64_t per_line = detail::elements_per_line(tensor.dtype());
      const bool aligned = detail::rows_start_on_lines(space, per_line, analyzer);
      std::vector<Expr> extents(lined.size());
      for (size_t d = 0; d < lined.size(); ++d)
        extents[d] = detail::lines_along(
            analyzer.simplify(lined[d].max - lined[d].min + make_int_const(lined[d].min.dtype(), 1)),
            d + 1 == lined.size(), aligned, per_line, analyzer);
      Stmt p = spread ? detail::spread_prefetch(s, at, l, space, extents, per_line, ranges, where, analyzer)
                      : detail::all_lines_prefetch(space, extents, per_line, analyzer);
      if (p.defined()) out.push_back(p);
    }
  }
  if (out.empty()) return Stmt();
  return SeqNode::make(out);
}

}  // namespace loom
