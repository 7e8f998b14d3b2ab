// Bound inference (TVM semantics): the range of every loop of every stage, derived from the
// outputs back to the producers. A producer computes the region its consumers read, with the
// consumers' loops that enclose the producer held fixed and all other loops relaxed.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/lower/interval_set.hpp"
#include "loom/schedule/graph.hpp"
#include "loom/schedule/iter_values.hpp"

namespace loom {

struct BoundResult {
  RangeMap ranges;  // every IterVar of every stage that is lowered
  /// The region of each produced tensor that must be materialised, per dimension.
  std::unordered_map<TensorKey, std::vector<Range>, TensorKeyHash> regions;
};

/// Thread tags order memory visibility: blockIdx (shared by a block's threads) above
/// threadIdx and vthread (private to a thread).
inline int thread_rank(const std::string& tag) {
  if (is_block_index_tag(tag)) return 0;
  if (is_thread_index_tag(tag)) return 1;
  return 2;  // vthread
}

/// The storage scope a stage's output lives in: the one set by the schedule, else "local"
/// when computed inside a thread loop, "shared" inside a block loop, "global" otherwise.
inline std::string effective_scope(const StageNode& s) {
  if (!s.scope.empty()) return s.scope;
  int rank = -1;
  for (const AttachPoint& p : attach_path(&s)) {
    const IterVarAttr* a = p.stage->attr(p.iv);
    if (a && a->bind_thread.defined())
      rank = std::max(rank, thread_rank(a->bind_thread->thread_tag) >= 1 ? 1 : 0);
  }
  return rank == 1 ? scope::local : rank == 0 ? scope::shared : scope::global;
}

namespace detail {

/// Is a thread variable private to the storage of `scope`? Private ones stay fixed when a
/// producer's region is inferred; shared ones are relaxed over all their threads.
inline bool thread_fixed_for_scope(const std::string& tag, const std::string& scope) {
  if (is_local_scope(scope)) return true;  // "local", "warp", "local.fragment" (one warp's tile)
  if (is_shared_scope(scope)) return thread_rank(tag) == 0;  // "shared" and "shared.dyn"
  return false;  // global memory is shared by every thread of every block
}

class BoundInferrer {
 public:
  explicit BoundInferrer(const ScheduleNode& sch) : sch_(sch) {}

  BoundResult run() {
    for (auto it = sch_.stages.rbegin(); it != sch_.stages.rend(); ++it) {
      StageNode* s = it->get();
      if (skipped(*s)) continue;
      infer_stage(*s);
    }
    // A consumer placed inside its producer's loop covers the producer's tile there. Its
    // producers were sized for everything it reads (above, as if it were at the root).
    for (const Ref<StageNode>& s : sch_.stages)
      if (s->attach_type == AttachType::ReverseScope) infer_reverse_attached(*s);
    return std::move(result_);
  }

 private:
  static bool skipped(const StageNode& s) {
    return s.is_placeholder() || s.attach_type == AttachType::Inline ||
           s.attach_type == AttachType::InlinedAlready;
  }

  void infer_stage(StageNode& s) {
    // Tensors are named by the original operation; the body comes from the current one.
    const Operation& op = s.origin_op;
    if (op->kind == OpKind::Compute) {
      const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
      std::vector<Range> region;
      std::vector<StageNode*> readers = readers_of(sch_, &s);
      if (s.is_output || readers.empty()) {
        for (const IterVar& iv : c->axis) region.push_back(iv.dom());
      } else {
        for (int k = 0; k < c->num_outputs(); ++k) {
          std::vector<IntervalSet> sets = needed_region(s, op->output(k), readers);
          for (size_t d = 0; d < sets.size(); ++d) {
            if (k == 0) {
              region_sets_.push_back(sets[d]);
            } else {
              region_sets_[d] = evaluator_for({}).unite(region_sets_[d], sets[d]);
            }
          }
        }
        for (size_t d = 0; d < c->axis.size(); ++d)
          region.push_back(to_range(clamp_to_domain(region_sets_[d], c->axis[d].dom()), c->axis[d].dom()));
        region_sets_.clear();
      }
      for (size_t d = 0; d < c->axis.size(); ++d) result_.ranges[c->axis[d].get()] = region[d];
      for (const IterVar& iv : c->reduce_axis) result_.ranges[iv.get()] = iv.dom();
      for (int k = 0; k < c->num_outputs(); ++k) result_.regions[TensorKey(op->output(k))] = region;
    } else {
      for (const IterVar& iv : op->root_iter_vars()) result_.ranges[iv.get()] = iv.dom();
      for (int k = 0; k < op->num_outputs(); ++k) {
        std::vector<Range> full;
        for (const Expr& e : op->output_shape(k)) full.push_back(Range(make_zero(e.dtype()), e));
        result_.regions[TensorKey(op->output(k))] = full;
      }
    }
    pass_down_domain(s, result_.ranges);
    if (op->kind == OpKind::Compute) express_reduce_ranges_in_loops(s);
  }

  void infer_reverse_attached(StageNode& c) {
    const StageNode& b = *c.attach_stage;
    const auto* cop = static_cast<const ComputeOpNode*>(c.op.get());
    std::string where = cat("reverse_compute_at: stage '", c.name(), "' inside loop '", c.attach_ivar.name(),
                            "' of stage '", b.name(), "'");
    if (b.op->kind != OpKind::Compute)
      throw ScheduleError(cat(where, ": '", b.name(), "' is not a compute stage"));
    const auto* bop = static_cast<const ComputeOpNode*>(b.op.get());
    // The tile: the producer's axes with its loops inside the attach loop relaxed.
    IntervalMap inner;
    bool inside = false;
    for (const IterVar& leaf : b.leaf_iter_vars) {
      if (inside) {
        Var lv = loop_var_of(b, leaf);
        const Range& r = result_.ranges.at(leaf.get());
        inner[lv.get()] = IntervalSet{make_zero(lv.dtype()),
                                      analyzer_.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
      }
      if (leaf.same_as(c.attach_ivar)) inside = true;
    }
    ValueMap b_values = root_values(b);
    IntervalEvaluator ev(inner, analyzer_);
    std::vector<IntervalSet> tile;
    for (const IterVar& iv : bop->axis) tile.push_back(ev.eval(b_values.at(iv.get())));
    // Which axis of the consumer walks which dimension of the producer's tile.
    Tensor produced = b.origin_op->output(0);
    std::vector<int> axis_of_dim(tile.size(), -1);
    bool mapped_any = false;
    for (const Expr& body : cop->body) {
      for_each_expr(body, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || as_tensor(load->producer).op().get() != b.origin_op.get()) return;
        for (size_t d = 0; d < load->indices.size(); ++d)
          for (size_t a = 0; a < cop->axis.size(); ++a)
            if (load->indices[d].same_as(cop->axis[a].var())) {
              if (axis_of_dim[d] >= 0 && axis_of_dim[d] != static_cast<int>(a))
                throw ScheduleError(cat(where, ": dimension ", d, " of '", b.name(),
                                        "' is read through two different axes of '", c.name(), "'"));
              axis_of_dim[d] = static_cast<int>(a);
              mapped_any = true;
            }
      });
    }
    if (!mapped_any)
      throw ScheduleError(cat(where, ": no axis of '", c.name(), "' reads '", b.name(),
                              "' directly by its own index, so the tile cannot be mapped to a part of '",
                              c.name(), "'; reverse_compute_at needs an element-wise consumer"));
    for (size_t d = 0; d < tile.size(); ++d) {
      if (axis_of_dim[d] < 0) continue;
      const IterVar& axis = cop->axis[static_cast<size_t>(axis_of_dim[d])];
      result_.ranges[axis.get()] = to_range(tile[d], axis.dom());
    }
    // Everything the consumer reads of the producer there must be in the tile.
    IntervalMap mine;
    for (const IterVar& iv : cop->root_iter_vars()) {
      const Range& r = result_.ranges.at(iv.get());
      mine[iv.var().get()] =
          IntervalSet{r.min, analyzer_.simplify(r.min + r.extent - make_int_const(r.extent.dtype(), 1))};
    }
    IntervalEvaluator need_ev(mine, analyzer_);
    for (const Expr& body : cop->body) {
      for_each_expr(body, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || as_tensor(load->producer).op().get() != b.origin_op.get()) return;
        for (size_t d = 0; d < load->indices.size(); ++d) {
          IntervalSet need = need_ev.eval(load->indices[d]);
          if (!need.bounded() || !tile[d].bounded() || !analyzer_.can_prove(need.min >= tile[d].min) ||
              !analyzer_.can_prove(need.max <= tile[d].max))
            throw ScheduleError(
                cat(where, ": '", c.name(), "' reads ", to_string(e), ", which along dimension ", d,
                    " reaches outside the tile that one iteration of '", c.attach_ivar.name(),
                    "' produces; place it at an outer loop of '", b.name(), "' or use compute_at"));
        }
      });
    }
    pass_down_domain(c, result_.ranges);
  }

  /// A reduce axis may range over an extent that depends on data-parallel axes (a triangular
  /// reduction, k in [0, i]). Once the data-parallel axes are loops, their variables are no
  /// longer bound; express such ranges in the loop counters instead.
  void express_reduce_ranges_in_loops(const StageNode& s) {
    const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
    ValueMap values = root_values(s);
    VarMap axis_values;
    for (const IterVar& iv : c->axis) axis_values[iv.var().get()] = values.at(iv.get());
    for (const IterVar& iv : s.all_iter_vars) {
      if (!iv.is_reduce()) continue;
      Range& r = result_.ranges.at(iv.get());
      r = Range(analyzer_.simplify(substitute(r.min, axis_values)),
                analyzer_.simplify(substitute(r.extent, axis_values)));
    }
  }

  /// A consumer tiled by a factor that does not divide its extent reads past the producer's
  /// shape only in the iterations its guards skip. Where the relaxed region provably reaches
  /// past the producer's domain, the domain's bound is the tighter one (TVM gives a split's
  /// parent its whole range when both halves are relaxed); without this, a 13-row intermediate
  /// read by tiles of 4 would be allocated, and computed, for 16 rows.
  /// A bound is only tightened where the other end provably stays inside the domain: in the
  /// iterations a guard skips entirely, the region may start past the domain's end, and clamping
  /// its end alone would give a negative extent.
  IntervalSet clamp_to_domain(IntervalSet set, const Range& dom) {
    if (!set.bounded()) return set;
    Expr last = analyzer_.simplify(dom.min + dom.extent - make_int_const(dom.extent.dtype(), 1));
    const IntervalSet original = set;
    if (analyzer_.can_prove(original.max >= last) && analyzer_.can_prove(original.min <= last))
      set.max = last;
    if (analyzer_.can_prove(original.min <= dom.min) && analyzer_.can_prove(original.max >= dom.min))
      set.min = dom.min;
    return set;
  }

  /// Converts an inferred interval to a Range, falling back to the whole axis when unbounded.
  Range to_range(const IntervalSet& set, const Range& full) {
    if (!set.bounded()) return full;
    Analyzer analyzer;
    return Range(set.min, analyzer.simplify(set.max - set.min + make_int_const(set.min.dtype(), 1)));
  }

  IntervalEvaluator evaluator_for(const IntervalMap& map) { return IntervalEvaluator(map, analyzer_); }

  /// The variables to relax when inferring what `s` must produce: every loop counter except
  /// those of the loops enclosing `s` (thread loops of shared storage are relaxed anyway).
  IntervalMap relax_map_for(const StageNode& s) {
    std::unordered_set<const VarNode*> fixed;
    std::string scope = effective_scope(s);
    for (const AttachPoint& p : attach_path(&s)) {
      const IterVarAttr* a = p.stage->attr(p.iv);
      if (a && a->bind_thread.defined()) {
        if (thread_fixed_for_scope(a->bind_thread->thread_tag, scope))
          fixed.insert(a->bind_thread.var().get());
      } else {
        fixed.insert(p.iv.var().get());
      }
    }
    IntervalMap relax;
    for (const Ref<StageNode>& other : sch_.stages) {
      if (skipped(*other)) continue;
      for (const IterVar& leaf : other->leaf_iter_vars) {
        auto it = result_.ranges.find(leaf.get());
        if (it == result_.ranges.end()) continue;  // not inferred yet: a producer of s
        Var lv = loop_var_of(*other, leaf);
        if (fixed.count(lv.get())) continue;
        const Range& r = it->second;
        relax[lv.get()] = IntervalSet{make_zero(lv.dtype()),
                                      analyzer_.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
      }
    }
    return relax;
  }

  /// Evaluates `e` over the relaxed variables until no relaxed variable remains in it.
  IntervalSet relax(const Expr& e, const IntervalMap& map) {
    IntervalEvaluator ev = evaluator_for(map);
    IntervalSet set = ev.eval(e);
    auto mentions_relaxed = [&](const Expr& x) {
      return x.defined() && uses_var_if(x, [&](const VarNode* v) { return map.count(v) > 0; });
    };
    for (int round = 0; round < 16 && (mentions_relaxed(set.min) || mentions_relaxed(set.max)); ++round) {
      IntervalSet lo = set.min.defined() ? ev.eval(set.min) : IntervalSet::everything();
      IntervalSet hi = set.max.defined() ? ev.eval(set.max) : IntervalSet::everything();
      set = IntervalSet{lo.min, hi.max};
    }
    return set;
  }

  /// The region of `t` that `readers` read, as seen from where `s` is computed.
  std::vector<IntervalSet> needed_region(const StageNode& s, const Tensor& t,
                                         const std::vector<StageNode*>& readers) {
    IntervalMap map = relax_map_for(s);
    IntervalEvaluator ev = evaluator_for(map);
    std::vector<IntervalSet> region(static_cast<size_t>(t.ndim()));
    std::vector<bool> first(region.size(), true);
    auto add = [&](size_t d, const IntervalSet& set) {
      region[d] = first[d] ? set : ev.unite(region[d], set);
      first[d] = false;
    };
    auto add_full = [&]() {
      for (size_t d = 0; d < region.size(); ++d) {
        const Expr& e = t.shape()[d];
        add(d, IntervalSet{make_zero(e.dtype()), analyzer_.simplify(e - make_int_const(e.dtype(), 1))});
      }
    };
    for (StageNode* r : readers) {
      ValueMap values = root_values(*r);
      if (r->op->kind == OpKind::Compute) {
        const auto* c = static_cast<const ComputeOpNode*>(r->op.get());
        VarMap subst;
        for (const IterVar& iv : c->root_iter_vars()) subst[iv.var().get()] = values.at(iv.get());
        for (const Expr& body : c->body) {
          for_each_expr(body, [&](const Expr& e) {
            const ProducerLoadNode* load = e.as<ProducerLoadNode>();
            if (!load || !(TensorKey(load->producer) == TensorKey(t))) return;
            for (size_t d = 0; d < load->indices.size(); ++d)
              add(d, relax(substitute(load->indices[d], subst), map));
          });
        }
      } else if (r->op->kind == OpKind::Scan) {
        const auto* scan = static_cast<const ScanOpNode*>(r->op.get());
        bool is_update = false;
        for (const Tensor& u : scan->update) is_update = is_update || u == t;
        if (is_update) {
          add(0, relax(values.at(scan->scan_axis.get()), map));
          for (size_t d = 1; d < region.size(); ++d) {
            const Expr& e = t.shape()[d];
            add(d, IntervalSet{make_zero(e.dtype()), analyzer_.simplify(e - make_int_const(e.dtype(), 1))});
          }
        } else {
          add_full();
        }
      } else {
        add_full();  // an extern stage reads its inputs whole
      }
    }
    // An unbounded dimension (a data-dependent index) needs the whole tensor.
    for (size_t d = 0; d < region.size(); ++d) {
      const Expr& e = t.shape()[d];
      if (!region[d].min.defined()) region[d].min = make_zero(e.dtype());
      if (!region[d].max.defined()) region[d].max = analyzer_.simplify(e - make_int_const(e.dtype(), 1));
    }
    return region;
  }

  /// The value of each IterVar of a stage whose ranges are known, in loop counters.
  ValueMap root_values(const StageNode& r) {
    ValueMap counters;
    for (const IterVar& leaf : r.leaf_iter_vars) counters[leaf.get()] = leaf_counter(r, leaf, result_.ranges);
    return pass_up_index(r, result_.ranges, counters);
  }

  const ScheduleNode& sch_;
  BoundResult result_;
  Analyzer analyzer_;
  std::vector<IntervalSet> region_sets_;
};

}  // namespace detail

/// Infers the range of every loop of every stage of `sch`.
inline BoundResult infer_bounds(const ScheduleNode& sch) { return detail::BoundInferrer(sch).run(); }

}  // namespace loom
