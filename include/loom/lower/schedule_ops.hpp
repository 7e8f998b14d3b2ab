// Builds the loop IR of a schedule: one loop nest per stage from its leaf loops, producers
// placed at their attach points inside consumers' loops, each produced tensor Realize'd around
// the code that writes and reads it, guards where a split overshoots an axis (TVM's
// ScheduleOps + MakeLoopNest, with bounds from bound inference).
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/lower/bound_inference.hpp"
#include "loom/lower/prefetch.hpp"
#include "loom/lower/tensorize.hpp"
#include "loom/te/extern_op.hpp"

namespace loom {

namespace intrinsic {
/// Before flattening, an extern stage names its buffers by tensor (flattening rewrites it to
/// extern_stage).
inline constexpr const char* extern_stage_tensors = "loom.extern_stage_tensors";
}  // namespace intrinsic

using TensorSet = std::unordered_set<TensorKey, TensorKeyHash>;
using TensorAliasMap = std::unordered_map<TensorKey, Tensor, TensorKeyHash>;

/// Tensors that share another tensor's storage: a scan's init, update and state are all the
/// scan's output.
inline TensorAliasMap storage_aliases(const ScheduleNode& sch) {
  TensorAliasMap alias;
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->origin_op->kind != OpKind::Scan) continue;
    const auto* scan = static_cast<const ScanOpNode*>(s->origin_op.get());
    for (size_t k = 0; k < scan->update.size(); ++k) {
      Tensor out = s->origin_op->output(static_cast<int>(k));
      alias[TensorKey(scan->init[k])] = out;
      alias[TensorKey(scan->update[k])] = out;
      alias[TensorKey(scan->state_placeholder[k])] = out;
    }
  }
  return alias;
}

namespace detail {

class ScheduleOpsBuilder {
 public:
  ScheduleOpsBuilder(const ScheduleNode& sch, const BoundResult& bounds, const TensorSet& params)
      : sch_(sch), bounds_(bounds), params_(params), aliases_(storage_aliases(sch)) {
    for (const Ref<StageNode>& s : sch.stages) {
      if (!lowered(*s)) continue;
      if (s->attach_type == AttachType::Scope || s->attach_type == AttachType::ScanUpdate) {
        attached_[s->attach_stage][s->attach_ivar.get()].push_back(s.get());
      } else if (s->attach_type == AttachType::ScanInit) {
        scan_inits_[s->attach_stage].push_back(s.get());
      } else if (s->attach_type == AttachType::ReverseScope) {
        reverse_attached_[s->attach_stage][s->attach_ivar.get()].push_back(s.get());
      }
      // Every loop counter ranges over [0, extent): what the guards are proven against.
      for (const IterVar& leaf : s->leaf_iter_vars) {
        const Range& r = bounds_.ranges.at(leaf.get());
        analyzer_.bind(loop_var_of(*s, leaf), Range(make_zero(r.extent.dtype()), r.extent));
      }
    }
  }

  Stmt build() {
    Stmt body;
    for (auto it = sch_.stages.rbegin(); it != sch_.stages.rend(); ++it) {
      StageNode* s = it->get();
      if (!lowered(*s) || s->attach_type != AttachType::Root) continue;
      body = realize(*s, SeqNode::make({build_stage(*s), body}));
    }
    return body;
  }

 private:
  static bool lowered(const StageNode& s) {
    return !s.is_placeholder() && s.attach_type != AttachType::Inline &&
           s.attach_type != AttachType::InlinedAlready;
  }

  /// Wraps `body` in a Realize for each output of `s` that needs storage of its own (and for
  /// the consumers computed inside `s`'s loops, whose storage must outlive `s`'s code).
  Stmt realize(const StageNode& s, Stmt body) {
    if (auto it = reverse_attached_.find(&s); it != reverse_attached_.end())
      for (const auto& [iv, stages] : it->second)
        for (const StageNode* c : stages) body = realize(*c, body);
    for (int k = s.origin_op->num_outputs() - 1; k >= 0; --k) {
      Tensor t = s.origin_op->output(k);
      if (params_.count(TensorKey(t)) || aliases_.count(TensorKey(t))) continue;
      body = RealizeNode::make(t.producer(), bounds_.regions.at(TensorKey(t)), effective_scope(s), body);
    }
    return body;
  }

  /// Places the consumers computed inside loop `iv` of `s` after `body`, the iteration's work.
  Stmt append_reverse_attached(const StageNode& s, const IterVar& iv, Stmt body) {
    auto sit = reverse_attached_.find(&s);
    if (sit == reverse_attached_.end()) return body;
    auto it = sit->second.find(iv.get());
    if (it == sit->second.end()) return body;
    std::vector<Stmt> seq{body};
    for (const StageNode* c : it->second) seq.push_back(build_stage(*c));
    return SeqNode::make(seq);
  }

  /// Places the stages attached at loop `iv` of `s` (and their storage) before `body`.
  Stmt wrap_attached(const StageNode& s, const IterVar& iv, Stmt body) {
    auto sit = attached_.find(&s);
    if (sit == attached_.end()) return body;
    auto it = sit->second.find(iv.get());
    if (it == sit->second.end()) return body;
    const std::vector<StageNode*>& stages = it->second;
    for (auto p = stages.rbegin(); p != stages.rend(); ++p)
      body = realize(**p, SeqNode::make({build_stage(**p), body}));
    return body;
  }

  /// The stages attached at each leaf loop of `s` and of the stages attached inside it (for
  /// prefetches of what they will read), and which tensors were inlined.
  PrefetchScope prefetch_scope(const StageNode& s) {
    PrefetchScope scope;
    scope.attached = [this](const StageNode& owner, const IterVar& leaf) {
      std::vector<const StageNode*> out;
      if (auto sit = attached_.find(&owner); sit != attached_.end())
        if (auto it = sit->second.find(leaf.get()); it != sit->second.end())
          out.assign(it->second.begin(), it->second.end());
      return out;
    };
    scope.inlined = [this](const Tensor& t) {
      const StageNode* stage = sch_.find(t.op().get());
      return stage &&
             (stage->attach_type == AttachType::Inline || stage->attach_type == AttachType::InlinedAlready);
    };
    scope.computed_at = [this, &s](const Tensor& t) {
      for (const StageNode* stage = sch_.find(t.op().get()); stage && stage->attach_type == AttachType::Scope;
           stage = stage->attach_stage)
        if (stage->attach_stage == &s) return stage->attach_ivar;
      return IterVar();
    };
    return scope;
  }

  Stmt build_stage(const StageNode& s) {
    switch (s.op->kind) {
      case OpKind::Compute: return build_compute(s);
      case OpKind::Scan: return build_scan(s);
      case OpKind::Extern: return build_extern(s);
      case OpKind::Placeholder: break;
    }
    return Stmt();
  }

  struct LoopNest {
    std::vector<IterVar> leaves;
    ValueMap values;  // value of every IterVar of the stage
  };

  LoopNest loop_values(const StageNode& s) {
    LoopNest nest;
    nest.leaves = s.leaf_iter_vars;
    ValueMap counters;
    for (const IterVar& leaf : s.leaf_iter_vars) counters[leaf.get()] = leaf_counter(s, leaf, bounds_.ranges);
    nest.values = pass_up_index(s, bounds_.ranges, counters);
    for (auto& [iv, value] : nest.values) value = analyzer_.simplify(value);
    return nest;
  }

  /// The index of the loop the stage is tensorized at, or the number of loops.
  static size_t tensorized_loop(const StageNode& s) {
    for (size_t l = 0; l < s.leaf_iter_vars.size(); ++l) {
      const IterVarAttr* a = s.attr(s.leaf_iter_vars[l]);
      if (a && a->tensor_intrin) return l;
    }
    return s.leaf_iter_vars.size();
  }

  static bool bound_to_thread(const StageNode& s, const IterVar& leaf) {
    const IterVarAttr* a = s.attr(leaf);
    return a && a->bind_thread.defined();
  }

  /// The loop of one leaf around `body` (none for an extent-one serial loop).
  Stmt make_loop(const StageNode& s, const IterVar& leaf, Stmt body) {
    const Range& r = bounds_.ranges.at(leaf.get());
    const IterVarAttr* a = s.attr(leaf);
    Expr zero = make_zero(r.extent.dtype());
    if (a && a->bind_thread.defined())
      return ForNode::make(a->bind_thread.var(), zero, r.extent, ForKind::ThreadBinding, body,
                           a->bind_thread->thread_tag);
    if (is_one(r.extent)) return body;
    ForKind kind = a ? a->for_kind : ForKind::Serial;
    std::vector<LoopAnnotation> annotations = a ? a->pragmas : std::vector<LoopAnnotation>{};
    return ForNode::make(leaf.var(), zero, r.extent, kind, body, "", annotations);
  }

  /// Guards for the axes whose loops may run past the axis' extent (non-dividing splits, a
  /// producer computed for a consumer's overshooting tile).
  /// Data-parallel axes are checked against their declared domain (their inferred range may
  /// be a larger tile) and against their inferred range (it may be a smaller region, e.g. of a
  /// producer computed at a consumer's loop, that a split of the producer overshoots: its
  /// storage holds only that region). TVM's MakeBoundCheck checks both too. Reduce axes are
  /// checked against their inferred range, which is their domain expressed in loop counters.
  std::vector<Expr> bound_checks(const std::vector<IterVar>& axes, const ValueMap& values) {
    std::vector<Expr> conds;
    auto check = [&](const Expr& value, const Range& r) {
      Expr end = analyzer_.simplify(r.min + r.extent);
      if (!analyzer_.can_prove(value < end)) conds.push_back(likely(value < end));
      if (!analyzer_.can_prove(value >= r.min)) conds.push_back(likely(value >= r.min));
    };
    for (const IterVar& iv : axes) {
      const Expr& value = values.at(iv.get());
      const Range& inferred = bounds_.ranges.at(iv.get());
      if (iv.is_reduce() || !iv.dom().defined()) {  // reduce axes; loops made by split or fuse
        check(value, inferred);
        continue;
      }
      check(value, iv.dom());
      if (!analyzer_.can_prove_equal(inferred.min, iv.dom().min) ||
          !analyzer_.can_prove_equal(inferred.extent, iv.dom().extent))
        check(value, inferred);
    }
    return conds;
  }

  /// The root axes of kind `reduce` (data-parallel or reduce), then the loops of that kind that
  /// a split cut further. The latter need guards of their own: when an inner loop is split again
  /// with an uneven factor, its overshoot repeats the next points of the parent's range, and a
  /// reduction would count them twice (TVM's MakeBoundCheck checks every split parent too).
  static std::vector<IterVar> checked_axes(const StageNode& s, bool reduce) {
    const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
    std::vector<IterVar> axes = reduce ? c->reduce_axis : c->axis;
    const std::vector<IterVar> roots = c->root_iter_vars();
    for (const IterVarRelation& rel : s.relations) {
      const auto* split = std::get_if<SplitRelation>(&rel);
      if (!split || split->parent.is_reduce() != reduce) continue;
      if (std::find_if(roots.begin(), roots.end(), IterVarSameAsFn{split->parent}) == roots.end())
        axes.push_back(split->parent);
    }
    return axes;
  }

  static Stmt guard(const std::vector<Expr>& conds, Stmt body) {
    if (conds.empty() || !body.defined()) return body;
    return IfThenElseNode::make(all(conds), body);
  }

  Stmt build_compute(const StageNode& s) {
    const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
    if (c->is_reduction())
      for (const IterVar& leaf : s.leaf_iter_vars)
        if (leaf.is_reduce() && bound_to_thread(s, leaf)) return build_cross_thread_reduction(s);
    check_prefetch_requests(s);
    LoopNest nest = loop_values(s);
    VarMap root;
    for (const IterVar& iv : c->root_iter_vars()) root[iv.var().get()] = nest.values.at(iv.get());
    std::vector<Expr> index;
    for (const IterVar& iv : c->axis) index.push_back(nest.values.at(iv.get()));
    std::vector<Expr> data_par_checks = bound_checks(checked_axes(s, false), nest.values);
    std::vector<Expr> checks = data_par_checks;
    for (const Expr& e : bound_checks(checked_axes(s, true), nest.values)) checks.push_back(e);
    // The predicate may name the stage's original axes, which splits and fuses replaced by loops.
    if (s.store_predicate.defined()) checks.push_back(substitute(s.store_predicate, root));

    Stmt inner, init;
    size_t tensorize_at = tensorized_loop(s);
    if (tensorize_at < nest.leaves.size()) {
      // The loops from the tensorized one inward become the intrinsic.
      for (size_t l = tensorize_at; l < nest.leaves.size(); ++l) {
        auto sit = attached_.find(&s);
        if (sit != attached_.end() && sit->second.count(nest.leaves[l].get()))
          throw ScheduleError(cat("tensorize: a stage is computed at loop '", nest.leaves[l].name(),
                                  "' of stage '", s.name(), "', inside the tensorized loop '",
                                  nest.leaves[tensorize_at].name(), "'; compute it at an outer loop"));
      }
      TensorizePlan plan = plan_tensorize(s, tensorize_at, bounds_.ranges, nest.values, analyzer_);
      inner = plan.main;
      init = plan.init;
      nest.leaves.resize(tensorize_at);
    } else if (!c->is_reduction()) {
      std::vector<Stmt> provides;
      for (int k = 0; k < c->num_outputs(); ++k)
        provides.push_back(ProvideNode::make(s.origin_op->output(k).producer(), index,
                                             substitute(c->body[static_cast<size_t>(k)], root)));
      inner = guard(checks, SeqNode::make(provides));
    } else {
      const auto* r = c->body[0].as<ReduceNode>();
      std::vector<Stmt> init_provides;
      for (int k = 0; k < c->num_outputs(); ++k)
        init_provides.push_back(ProvideNode::make(s.origin_op->output(k).producer(), index,
                                                  r->combiner->identity[static_cast<size_t>(k)]));
      init = SeqNode::make(init_provides);
      inner = guard(checks, reduction_update(s, *r, index, root));
    }

    // The first loop that walks a reduction: the init goes just outside it, in a nest of the
    // data-parallel loops that follow.
    size_t init_pos = nest.leaves.size();
    if (init.defined()) {
      for (size_t l = 0; l < nest.leaves.size(); ++l)
        if (nest.leaves[l].is_reduce()) {
          init_pos = l;
          break;
        }
      Stmt init_nest = guard(data_par_checks, init);
      for (size_t l = nest.leaves.size(); l-- > init_pos;)
        if (!nest.leaves[l].is_reduce()) init_nest = make_loop(s, nest.leaves[l], init_nest);
      init = init_nest;
    }
    Stmt body = inner;
    const PrefetchScope scope = prefetch_scope(s);
    for (size_t l = nest.leaves.size(); l-- > 0;) {
      if (init.defined() && init_pos == l + 1) body = SeqNode::make({init, body});
      body = wrap_attached(s, nest.leaves[l], body);
      body = append_reverse_attached(s, nest.leaves[l], body);
      body = SeqNode::make({make_prefetches(s, l, bounds_.ranges, nest.values, scope), body});
      body = make_loop(s, nest.leaves[l], body);
    }
    if (init.defined() && init_pos == 0) body = SeqNode::make({init, body});
    return body;
  }

  /// A reduction over loops bound to threads: each thread reduces its share over the serial
  /// reduce loops into a local accumulator, then all threads combine their accumulators with
  /// a thread_allreduce, and the result is stored.
  Stmt build_cross_thread_reduction(const StageNode& s) {
    const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
    const auto* r = c->body[0].as<ReduceNode>();
    const CommReducerNode& comb = *r->combiner;
    check_prefetch_requests(s);
    LoopNest nest = loop_values(s);
    VarMap root;
    for (const IterVar& iv : c->root_iter_vars()) root[iv.var().get()] = nest.values.at(iv.get());
    std::vector<Expr> index;
    for (const IterVar& iv : c->axis) index.push_back(nest.values.at(iv.get()));
    std::vector<Expr> store_checks = bound_checks(checked_axes(s, false), nest.values);
    if (s.store_predicate.defined()) store_checks.push_back(substitute(s.store_predicate, root));
    // A thread contributes only points inside both the reduction and the output: the partial
    // sums of rows past an uneven split must not read past the input either.
    Expr cond = substitute(r->condition, root);
    for (const Expr& e : bound_checks(checked_axes(s, true), nest.values))
      cond = is_const_int(cond, 1) ? e : (cond && e);
    for (const Expr& e : bound_checks(checked_axes(s, false), nest.values))
      cond = is_const_int(cond, 1) ? e : (cond && e);

    std::vector<IterVar> serial_reduce;
    ThreadAllreduce allreduce;
    for (const IterVar& leaf : s.leaf_iter_vars) {
      if (!leaf.is_reduce()) continue;
      if (bound_to_thread(s, leaf)) {
        allreduce.threads.push_back(loop_var_of(s, leaf));
      } else {
        serial_reduce.push_back(leaf);
      }
    }
    const size_t n = comb.size();
    std::vector<Expr> source;
    for (size_t k = 0; k < n; ++k) source.push_back(substitute(r->source[k], root));
    std::vector<Var> partial_bufs, result_bufs;
    std::vector<Stmt> steps;
    if (!serial_reduce.empty()) {
      // This thread's share: an ordinary reduction into local accumulators.
      std::vector<Stmt> init, writes;
      VarMap bind;
      for (size_t k = 0; k < n; ++k) {
        DType t = comb.result[k].dtype();
        partial_bufs.push_back(Var("normal_reduce_temp" + std::to_string(k), handle_type));
        init.push_back(StoreNode::make(partial_bufs[k], comb.identity[k], Expr(0)));
        bind[comb.lhs[k].get()] = LoadNode::make(t, partial_bufs[k], Expr(0));
        bind[comb.rhs[k].get()] = source[k];
      }
      std::vector<Var> temps;
      for (size_t k = 0; k < n; ++k) {
        temps.push_back(Var(s.origin_op->name + ".v" + std::to_string(k), comb.result[k].dtype()));
        writes.push_back(StoreNode::make(partial_bufs[k], temps[k], Expr(0)));
      }
      Stmt update = SeqNode::make(writes);
      for (size_t k = n; k-- > 0;)
        update = LetStmtNode::make(temps[k], substitute(comb.result[k], bind), update);
      if (!is_const_int(cond, 1)) update = IfThenElseNode::make(cond, update);
      for (auto it = serial_reduce.rbegin(); it != serial_reduce.rend(); ++it)
        update = make_loop(s, *it, update);
      steps.push_back(SeqNode::make(init));
      steps.push_back(update);
      for (size_t k = 0; k < n; ++k)
        allreduce.values.push_back(LoadNode::make(comb.result[k].dtype(), partial_bufs[k], Expr(0)));
    } else {
      for (size_t k = 0; k < n; ++k)
        // Lazily: a thread outside the domain must not even read its source.
        allreduce.values.push_back(is_const_int(cond, 1) ? source[k]
                                                         : if_then_else(cond, source[k], comb.identity[k]));
    }
    for (size_t k = 0; k < n; ++k) {
      result_bufs.push_back(Var("reduce_temp" + std::to_string(k), handle_type));
      allreduce.lhs.push_back(comb.lhs[k]);
      allreduce.rhs.push_back(comb.rhs[k]);
      allreduce.combine.push_back(comb.result[k]);
      allreduce.identity.push_back(comb.identity[k]);
      allreduce.results.push_back(result_bufs[k]);
    }
    steps.push_back(EvaluateNode::make(allreduce.encode()));
    // Every reducing thread holds the result; the first stores it (TVM's thread head check). All
    // storing the same value to one global or shared element would be a data race by CUDA's rules
    // (write/write, which the simulator reports). A per-thread output needs every thread's store.
    if (const std::string scope = effective_scope(s); scope != scope::local && scope != scope::warp)
      for (const Var& v : allreduce.threads) store_checks.push_back(v == make_zero(v.dtype()));
    std::vector<Stmt> stores;
    for (size_t k = 0; k < n; ++k)
      stores.push_back(ProvideNode::make(s.origin_op->output(static_cast<int>(k)).producer(), index,
                                         LoadNode::make(comb.result[k].dtype(), result_bufs[k], Expr(0))));
    steps.push_back(guard(store_checks, SeqNode::make(stores)));
    Stmt body = SeqNode::make(steps);
    for (size_t k = n; k-- > 0;) {
      body = AllocateNode::make(result_bufs[k], comb.result[k].dtype(), {Expr(1)}, scope::local, body);
      if (!partial_bufs.empty())
        body = AllocateNode::make(partial_bufs[k], comb.result[k].dtype(), {Expr(1)}, scope::local, body);
    }
    for (size_t l = nest.leaves.size(); l-- > 0;) {
      const IterVar& leaf = nest.leaves[l];
      if (leaf.is_reduce() && !bound_to_thread(s, leaf)) continue;
      body = wrap_attached(s, leaf, body);
      body = make_loop(s, leaf, body);
    }
    return body;
  }

  /// out = combiner(out, source) for each output, reading all old values before writing.
  Stmt reduction_update(const StageNode& s, const ReduceNode& r, const std::vector<Expr>& index,
                        const VarMap& root) {
    const CommReducerNode& comb = *r.combiner;
    VarMap bind;
    for (size_t k = 0; k < comb.size(); ++k) {
      bind[comb.lhs[k].get()] =
          ProducerLoadNode::make(s.origin_op->output(static_cast<int>(k)).producer(), index);
      bind[comb.rhs[k].get()] = substitute(r.source[k], root);
    }
    Expr cond = substitute(r.condition, root);
    if (comb.size() == 1) {
      Stmt update =
          ProvideNode::make(s.origin_op->output(0).producer(), index, substitute(comb.result[0], bind));
      return is_const_int(cond, 1) ? update : IfThenElseNode::make(cond, update);
    }
    std::vector<Var> temps;
    std::vector<Stmt> writes;
    for (size_t k = 0; k < comb.size(); ++k) {
      temps.push_back(Var(s.origin_op->name + ".v" + std::to_string(k), comb.result[k].dtype()));
      writes.push_back(
          ProvideNode::make(s.origin_op->output(static_cast<int>(k)).producer(), index, temps.back()));
    }
    Stmt body = SeqNode::make(writes);
    for (size_t k = comb.size(); k-- > 0;)
      body = LetStmtNode::make(temps[k], substitute(comb.result[k], bind), body);
    return is_const_int(cond, 1) ? body : IfThenElseNode::make(cond, body);
  }

  Stmt build_scan(const StageNode& s) {
    const auto* scan = static_cast<const ScanOpNode*>(s.op.get());
    Stmt body;
    for (size_t l = s.leaf_iter_vars.size(); l-- > 0;) {
      body = wrap_attached(s, s.leaf_iter_vars[l], body);
      internal_check(body.defined(), "scan '", scan->name, "' has no update stage attached");
      body = make_loop(s, s.leaf_iter_vars[l], body);
    }
    std::vector<Stmt> seq;
    auto it = scan_inits_.find(&s);
    if (it != scan_inits_.end())
      for (StageNode* init : it->second) seq.push_back(build_stage(*init));
    seq.push_back(body);
    return SeqNode::make(seq);
  }

  Stmt build_extern(const StageNode& s) {
    const auto* ext = static_cast<const ExternOpNode*>(s.op.get());
    std::vector<Expr> args{IntImmNode::make(i64, ext->function_id),
                           IntImmNode::make(i32, static_cast<int64_t>(ext->inputs.size())),
                           IntImmNode::make(i32, ext->num_outputs())};
    auto whole = [](const Tensor& t) {
      std::vector<Expr> zeros;
      for (const Expr& e : t.shape()) zeros.push_back(make_zero(e.dtype()));
      return ProducerLoadNode::make(t.producer(), zeros);
    };
    for (const Tensor& t : ext->inputs) args.push_back(whole(t));
    for (int k = 0; k < ext->num_outputs(); ++k) args.push_back(whole(s.origin_op->output(k)));
    return EvaluateNode::make(
        CallNode::make(i32, intrinsic::extern_stage_tensors, std::move(args), CallKind::Intrinsic));
  }

  const ScheduleNode& sch_;
  const BoundResult& bounds_;
  const TensorSet& params_;
  TensorAliasMap aliases_;
  std::unordered_map<const StageNode*, std::unordered_map<const IterVarNode*, std::vector<StageNode*>>>
      attached_;
  std::unordered_map<const StageNode*, std::vector<StageNode*>> scan_inits_;
  std::unordered_map<const StageNode*, std::unordered_map<const IterVarNode*, std::vector<StageNode*>>>
      reverse_attached_;
  Analyzer analyzer_;
};

}  // namespace detail

/// The loop IR of the schedule, before storage flattening. `params` are the tensors passed as
/// arguments: they are written in place rather than realized.
inline Stmt schedule_ops(const ScheduleNode& sch, const BoundResult& bounds, const TensorSet& params) {
  return detail::ScheduleOpsBuilder(sch, bounds, params).build();
}

}  // namespace loom
