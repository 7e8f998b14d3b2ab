// Prefetch requests (Stage::prefetch(tensor, axis, offset)) turned into code: at the start of
// each iteration of the loop, touch every cache line of the region of `tensor` that the
// iteration `offset` steps ahead will read.
#pragma once

#include <string>
#include <vector>

#include "loom/lower/interval_set.hpp"
#include "loom/schedule/iter_values.hpp"
#include "loom/te/compute.hpp"

namespace loom {

/// The prefetches for loop `leaves[at]` of compute stage `s`; `values` gives every IterVar of
/// the stage in loop counters. Undefined when nothing is requested at that loop.
inline Stmt make_prefetches(const StageNode& s, size_t at, const RangeMap& ranges, const ValueMap& values) {
  const IterVarAttr* attr = s.attr(s.leaf_iter_vars[at]);
  if (!attr || attr->prefetch.empty() || s.op->kind != OpKind::Compute) return Stmt();
  const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
  Analyzer analyzer;
  std::vector<Stmt> out;
  for (const auto& [tensor, offset] : attr->prefetch) {
    // The loop runs `offset` iterations ahead; the loops inside it range over everything.
    Var loop_var = loop_var_of(s, s.leaf_iter_vars[at]);
    IntervalMap relax;
    for (size_t l = at + 1; l < s.leaf_iter_vars.size(); ++l) {
      const IterVar& leaf = s.leaf_iter_vars[l];
      const Range& r = ranges.at(leaf.get());
      relax[loop_var_of(s, leaf).get()] = IntervalSet{
          make_zero(r.extent.dtype()), analyzer.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
    }
    VarMap ahead{{loop_var.get(), loop_var + cast(loop_var.dtype(), offset)}};
    VarMap root;
    for (const IterVar& iv : c->root_iter_vars())
      root[iv.var().get()] = substitute(values.at(iv.get()), ahead);
    std::vector<IntervalSet> region(static_cast<size_t>(tensor.ndim()));
    bool found = false;
    IntervalEvaluator ev(relax, analyzer);
    for (const Expr& b : c->body) {
      for_each_expr(b, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || !(TensorKey(load->producer) == TensorKey(tensor))) return;
        for (size_t d = 0; d < region.size(); ++d) {
          IntervalSet set = ev.eval(substitute(load->indices[d], root));
          region[d] = found ? ev.unite(region[d], set) : set;
        }
        found = true;
      });
    }
    bool bounded = found;
    for (const IntervalSet& r : region) bounded = bounded && r.bounded();
    if (!bounded) continue;  // a data-dependent region: nothing sensible to prefetch
    // One prefetch per cache line along the innermost dimension.
    const int64_t per_line = std::max<int64_t>(1, 64 / tensor.dtype().bytes());
    std::vector<Expr> index;
    std::vector<std::pair<Var, Expr>> loops;
    for (size_t d = 0; d < region.size(); ++d) {
      Expr extent =
          analyzer.simplify(region[d].max - region[d].min + make_int_const(region[d].min.dtype(), 1));
      bool innermost = d + 1 == region.size();
      if (innermost)
        extent = analyzer.simplify(floordiv(extent + make_int_const(extent.dtype(), per_line - 1),
                                            make_int_const(extent.dtype(), per_line)));
      Var v("prefetch." + tensor.name() + "." + std::to_string(d), region[d].min.dtype());
      Expr step = innermost ? v * make_int_const(v.dtype(), per_line) : Expr(v);
      if (is_one(extent)) step = make_zero(v.dtype());
      index.push_back(analyzer.simplify(region[d].min + step));
      if (!is_one(extent)) loops.emplace_back(v, extent);
    }
    Stmt body = PrefetchNode::make(tensor(index));
    for (auto it = loops.rbegin(); it != loops.rend(); ++it)
      body = ForNode::make(it->first, make_zero(it->first.dtype()), it->second, ForKind::Serial, body);
    out.push_back(body);
  }
  return SeqNode::make(out);
}

}  // namespace loom
