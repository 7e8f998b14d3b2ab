// Tensorize, carried out: checks that the loop nest under the tensorized loop computes what
// the intrinsic computes (same loop extents, same expression once each input is seen through
// the window the nest reads), then replaces the nest with a call that flattening expands into
// the intrinsic's body for the operands' buffer windows.
#pragma once

#include <string>
#include <vector>

#include "loom/ir/expr_deep_equal.hpp"
#include "loom/ir/structural_equal.hpp"
#include "loom/lower/interval_set.hpp"
#include "loom/schedule/iter_values.hpp"
#include "loom/te/tensor_intrin.hpp"

namespace loom {

namespace intrinsic {
/// Before flattening: args are intrinsic id, which builder (0 body, 1 reduce_init,
/// 2 reduce_update), #inputs, #outputs, then per operand a ProducerLoad at the window's
/// origin and the number of leading tensor dimensions the window drops.
inline constexpr const char* tensorize_call = "loom.tensorize_call";
}  // namespace intrinsic

enum class IntrinPart : int { Body = 0, ReduceInit = 1, ReduceUpdate = 2 };

struct TensorizePlan {
  Stmt main;  // replaces the nest under the tensorized loop
  Stmt init;  // for a reduction split around the intrinsic: runs where the reduction's init goes
};

namespace detail {

/// The first place where two expressions differ, printed, for tensorize's error message.
inline std::string first_difference(const Expr& a, const Expr& b) {
  if (a.defined() && b.defined() && a.kind() == b.kind() && a.dtype() == b.dtype()) {
    std::vector<Expr> ca, cb;
    auto children = [](const Expr& e, std::vector<Expr>& out) {
      switch (e.kind()) {
#define LOOM_CHILDREN(name, node)                       \
  case IRNodeKind::name: {                              \
    const auto* op = static_cast<const node*>(e.get()); \
    out = {op->a, op->b};                               \
    break;                                              \
  }
        LOOM_BINARY_EXPR_NODES(LOOM_CHILDREN)
#undef LOOM_CHILDREN
        case IRNodeKind::ProducerLoad: {
          const auto* op = e.as<ProducerLoadNode>();
          out = op->indices;
          break;
        }
        case IRNodeKind::Cast: out = {e.as<CastNode>()->value}; break;
        case IRNodeKind::Call: out = e.as<CallNode>()->args; break;
        default: break;
      }
    };
    children(a, ca);
    children(b, cb);
    bool same_head = true;
    if (const auto* la = a.as<ProducerLoadNode>())
      same_head = la->producer->producer_name() == b.as<ProducerLoadNode>()->producer->producer_name();
    if (const auto* fa = a.as<CallNode>()) same_head = fa->name == b.as<CallNode>()->name;
    if (same_head && !ca.empty() && ca.size() == cb.size())
      for (size_t i = 0; i < ca.size(); ++i)
        if (!expr_deep_equal(ca[i], cb[i])) return first_difference(ca[i], cb[i]);
  }
  return cat("'", to_string(a), "' where the intrinsic has '", to_string(b), "'");
}

class TensorizeMatcher {
 public:
  TensorizeMatcher(const StageNode& s, size_t at, const RangeMap& ranges, const ValueMap& values,
                   Analyzer& analyzer)
      : s_(s), at_(at), ranges_(ranges), values_(values), analyzer_(analyzer) {
    intrin_ = s.attr(s.leaf_iter_vars[at])->tensor_intrin;
    op_ = static_cast<const ComputeOpNode*>(s.op.get());
    ic_ = static_cast<const ComputeOpNode*>(intrin_->op.get());
    where_ = cat("tensorize: the loops of stage '", s.name(), "' under '", s.leaf_iter_vars[at].name(),
                 "' and intrinsic '", intrin_->name, "'");
  }

  TensorizePlan plan() {
    match_loops();
    // Inner loop counters range over their loops; the outer ones are fixed.
    for (size_t l = at_; l < s_.leaf_iter_vars.size(); ++l) {
      const IterVar& leaf = s_.leaf_iter_vars[l];
      Expr counter = leaf_counter(s_, leaf, ranges_);
      if (const VarNode* v = counter.as<VarNode>()) {
        const Range& r = ranges_.at(leaf.get());
        relax_[v] = IntervalSet{make_zero(r.extent.dtype()),
                                analyzer_.simplify(r.extent - make_int_const(r.extent.dtype(), 1))};
      }
    }
    check_no_guards();
    VarMap root;
    for (const IterVar& iv : op_->root_iter_vars()) root[iv.var().get()] = values_.at(iv.get());

    // Inputs correspond by order of first use, as in the intrinsic's compute.
    std::vector<Tensor> inputs = op_->input_tensors(), intrin_inputs = ic_->input_tensors();
    if (inputs.size() != intrin_inputs.size())
      throw ScheduleError(cat(where_, " do not match: the loops read ", inputs.size(),
                              " tensor(s), the intrinsic ", intrin_inputs.size()));
    std::vector<Expr> call_operands;
    std::vector<std::vector<Expr>> input_mins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<Expr> mins = window(inputs[i], intrin_inputs[i], root);
      input_mins.push_back(mins);
      call_operands.push_back(ProducerLoadNode::make(inputs[i].producer(), mins));
      call_operands.push_back(Expr(inputs[i].ndim() - intrin_inputs[i].ndim()));
    }
    // The expressions must agree once the loops' inputs are seen through their windows.
    VarMap intrin_vars = intrinsic_var_map();
    for (int k = 0; k < op_->num_outputs(); ++k) {
      Expr mine = op_->body[static_cast<size_t>(k)], theirs = ic_->body[static_cast<size_t>(k)];
      const auto* rm = mine.as<ReduceNode>();
      const auto* rt = theirs.as<ReduceNode>();
      if (static_cast<bool>(rm) != static_cast<bool>(rt))
        throw ScheduleError(cat(where_, " do not match: one is a reduction and the other is not"));
      if (rm) {
        if (!combiners_equal(*rm->combiner, *rt->combiner))
          throw ScheduleError(cat(where_, " do not match: they reduce with different combiners (",
                                  rm->combiner->name, " and ", rt->combiner->name, ")"));
        compare(rm->source[static_cast<size_t>(k)], rt->source[static_cast<size_t>(k)], root, inputs,
                intrin_inputs, input_mins, intrin_vars);
        compare(rm->condition, rt->condition, root, inputs, intrin_inputs, input_mins, intrin_vars);
      } else {
        compare(mine, theirs, root, inputs, intrin_inputs, input_mins, intrin_vars);
      }
    }
    // The outputs: the window of each output that the nest writes.
    std::vector<Expr> axis_values;
    for (const IterVar& iv : op_->axis) axis_values.push_back(values_.at(iv.get()));
    for (int k = 0; k < op_->num_outputs(); ++k) {
      Tensor out = s_.origin_op->output(k);
      std::vector<Expr> mins = output_window(axis_values, out.ndim() - static_cast<int>(ic_->shape.size()));
      call_operands.push_back(ProducerLoadNode::make(out.producer(), mins));
      call_operands.push_back(Expr(out.ndim() - static_cast<int>(ic_->shape.size())));
    }

    bool reduction = op_->is_reduction();
    bool outer_reduce = false;
    for (size_t l = 0; l < at_; ++l) outer_reduce = outer_reduce || s_.leaf_iter_vars[l].is_reduce();
    TensorizePlan plan;
    if (reduction && outer_reduce) {
      if (!intrin_->reduce_update)
        throw ScheduleError(
            cat(where_, ": the reduction continues outside '", s_.leaf_iter_vars[at_].name(),
                "', so the intrinsic needs reduce_init and reduce_update builders (declare them with "
                "decl_tensor_intrin), or tensorize at a loop outside every reduce loop"));
      plan.main = call(IntrinPart::ReduceUpdate, call_operands, inputs.size());
      plan.init = call(IntrinPart::ReduceInit, call_operands, inputs.size());
    } else {
      plan.main = call(IntrinPart::Body, call_operands, inputs.size());
    }
    return plan;
  }

 private:
  void match_loops() {
    std::vector<IterVar> data, reduce;
    for (size_t l = at_; l < s_.leaf_iter_vars.size(); ++l)
      (s_.leaf_iter_vars[l].is_reduce() ? reduce : data).push_back(s_.leaf_iter_vars[l]);
    auto describe = [&](const std::vector<IterVar>& ivs, bool mine) {
      std::string out;
      for (const IterVar& iv : ivs) {
        Expr ext = mine ? ranges_.at(iv.get()).extent : iv.dom().extent;
        out += cat(out.empty() ? "" : ", ", iv.name(), ": ", to_string(ext));
      }
      return out.empty() ? std::string("none") : out;
    };
    bool ok = data.size() == ic_->axis.size() && reduce.size() == ic_->reduce_axis.size();
    for (size_t i = 0; ok && i < data.size(); ++i)
      ok = analyzer_.can_prove_equal(ranges_.at(data[i].get()).extent, ic_->axis[i].dom().extent);
    for (size_t i = 0; ok && i < reduce.size(); ++i)
      ok = analyzer_.can_prove_equal(ranges_.at(reduce[i].get()).extent, ic_->reduce_axis[i].dom().extent);
    if (!ok)
      throw ScheduleError(cat(where_, " do not match: the loops are data-parallel [", describe(data, true),
                              "] and reduce [", describe(reduce, true),
                              "], the intrinsic's axes are data-parallel [", describe(ic_->axis, false),
                              "] and reduce [", describe(ic_->reduce_axis, false),
                              "]; split and reorder the loops so the nest under the tensorized loop has the "
                              "intrinsic's shape"));
    data_ = data;
    reduce_ = reduce;
  }

  void check_no_guards() {
    for (const IterVar& iv : op_->root_iter_vars()) {
      Expr v = values_.at(iv.get());
      if (!analyzer_.can_prove(v < iv.dom().min + iv.dom().extent))
        throw ScheduleError(
            cat(where_, ": axis '", iv.name(),
                "' is split unevenly, so the tensorized nest would need a guard the intrinsic "
                "cannot honour; choose split factors that divide the extent"));
    }
  }

  VarMap intrinsic_var_map() {
    VarMap map;
    for (size_t i = 0; i < data_.size(); ++i)
      map[ic_->axis[i].var().get()] = leaf_counter(s_, data_[i], ranges_);
    for (size_t i = 0; i < reduce_.size(); ++i)
      map[ic_->reduce_axis[i].var().get()] = leaf_counter(s_, reduce_[i], ranges_);
    return map;
  }

  /// The region of `t` the nest reads; checks it fits the intrinsic operand `p` and returns
  /// the window's origin (per dimension of t).
  std::vector<Expr> window(const Tensor& t, const Tensor& p, const VarMap& root) {
    IntervalEvaluator ev(relax_, analyzer_);
    std::vector<IntervalSet> region(static_cast<size_t>(t.ndim()));
    bool first = true;
    for (const Expr& b : op_->body) {
      for_each_expr(b, [&](const Expr& e) {
        const auto* load = e.as<ProducerLoadNode>();
        if (!load || !(TensorKey(load->producer) == TensorKey(t))) return;
        for (size_t d = 0; d < region.size(); ++d) {
          IntervalSet set = ev.eval(analyzer_.simplify(substitute(load->indices[d], root)));
          region[d] = first ? set : ev.unite(region[d], set);
        }
        first = false;
      });
    }
    return fit_window(t.name(), region, p.shape(), t.ndim() - p.ndim(), p.name());
  }

  std::vector<Expr> output_window(const std::vector<Expr>& axis_values, int dropped) {
    IntervalEvaluator ev(relax_, analyzer_);
    std::vector<IntervalSet> region;
    for (const Expr& v : axis_values) region.push_back(ev.eval(v));
    return fit_window(s_.name(), region, ic_->shape, dropped, intrin_->name + "'s output");
  }

  std::vector<Expr> fit_window(const std::string& name, const std::vector<IntervalSet>& region,
                               const std::vector<Expr>& shape, int dropped, const std::string& operand) {
    if (dropped < 0)
      throw ScheduleError(cat(where_, " do not match: '", name,
                              "' has fewer dimensions than the intrinsic's operand '", operand, "'"));
    std::vector<Expr> mins;
    for (size_t d = 0; d < region.size(); ++d) {
      if (!region[d].bounded())
        throw ScheduleError(cat(where_, ": the nest reads '", name, "' at data-dependent positions"));
      Expr extent =
          analyzer_.simplify(region[d].max - region[d].min + make_int_const(region[d].min.dtype(), 1));
      Expr want = static_cast<int>(d) < dropped ? make_int_const(extent.dtype(), 1)
                                                : shape[d - static_cast<size_t>(dropped)];
      if (!analyzer_.can_prove_equal(extent, want))
        throw ScheduleError(cat(where_, " do not match: the nest covers ", to_string(extent),
                                " elements of '", name, "' along dimension ", d,
                                ", the intrinsic's operand '", operand, "' has ", to_string(want)));
      mins.push_back(region[d].min);
    }
    return mins;
  }

  bool combiners_equal(const CommReducerNode& a, const CommReducerNode& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (!structural_equal(a.result[k], b.result[k]) || !structural_equal(a.identity[k], b.identity[k]))
        return false;
    return true;
  }

  /// Compares one expression of the nest with the intrinsic's, inputs seen through windows.
  void compare(const Expr& mine, const Expr& theirs, const VarMap& root, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& intrin_inputs, const std::vector<std::vector<Expr>>& mins,
               const VarMap& intrin_vars) {
    struct Rewindow : IRMutator {
      const std::vector<Tensor>& in;
      const std::vector<Tensor>& to;
      const std::vector<std::vector<Expr>>& mins;
      Analyzer& an;
      Rewindow(const std::vector<Tensor>& i, const std::vector<Tensor>& t,
               const std::vector<std::vector<Expr>>& m, Analyzer& a)
          : in(i), to(t), mins(m), an(a) {}
      using IRMutator::visit;
      Expr visit(const ProducerLoadNode* op) override {
        for (size_t i = 0; i < in.size(); ++i) {
          if (!(TensorKey(op->producer) == TensorKey(in[i]))) continue;
          size_t dropped = op->indices.size() - static_cast<size_t>(to[i].ndim());
          std::vector<Expr> idx;
          for (size_t d = dropped; d < op->indices.size(); ++d)
            idx.push_back(an.simplify(op->indices[d] - mins[i][d]));
          return ProducerLoadNode::make(to[i].producer(), idx);
        }
        return self(op);
      }
    } rewindow(inputs, intrin_inputs, mins, analyzer_);
    Expr a = analyzer_.simplify(rewindow.mutate(analyzer_.simplify(substitute(mine, root))));
    Expr b = analyzer_.simplify(substitute(theirs, intrin_vars));
    if (!expr_deep_equal(a, b))
      throw ScheduleError(cat(where_, " do not match: the loops compute '", to_string(a),
                              "' but the intrinsic computes '", to_string(b), "'; they first differ at ",
                              first_difference(a, b)));
  }

  Stmt call(IntrinPart part, const std::vector<Expr>& operands, size_t n_inputs) {
    std::vector<Expr> args{Expr(static_cast<int64_t>(intrin_->id)), Expr(static_cast<int>(part)),
                           Expr(static_cast<int>(n_inputs)), Expr(op_->num_outputs())};
    args.insert(args.end(), operands.begin(), operands.end());
    return EvaluateNode::make(CallNode::make(i32, intrinsic::tensorize_call, args, CallKind::Intrinsic));
  }

  const StageNode& s_;
  size_t at_;
  const RangeMap& ranges_;
  const ValueMap& values_;
  Analyzer& analyzer_;
  TensorIntrin intrin_;
  const ComputeOpNode* op_;
  const ComputeOpNode* ic_;
  std::string where_;
  std::vector<IterVar> data_, reduce_;
  IntervalMap relax_;
};

}  // namespace detail

/// Checks the nest under `s.leaf_iter_vars[at]` against its intrinsic and returns its calls.
inline TensorizePlan plan_tensorize(const StageNode& s, size_t at, const RangeMap& ranges,
                                    const ValueMap& values, Analyzer& analyzer) {
  return detail::TensorizeMatcher(s, at, ranges, values, analyzer).plan();
}

}  // namespace loom
