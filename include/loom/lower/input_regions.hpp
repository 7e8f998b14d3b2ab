// The region of every input tensor that a computation reads, as Halide's bounds inference finds
// it: from the outputs back through the tensor expressions, each read's indices evaluated over
// the region its stage computes. A call checks these regions against the buffers it is given
// (runtime/arg_check.hpp), so a compute that reads A(i + 1) cannot run past the end of A.
//
// The analysis reads the tensor expressions as the user wrote them (the operations the schedule
// was created for), not the scheduled loops: a schedule changes how the points are computed,
// not which elements of an input they read. A read inside if_then_else's taken branch, or in a
// reduction under its `where` condition, is only counted where the condition can hold (so a
// padded convolution's if_then_else(0 <= y - 1 && y - 1 < h, A(y - 1), 0) needs A only over
// [0, h)); Select evaluates both of its values, so both count. Reads under a guard are checked
// only where the guard confines them to a box (is_box_guard: bounds on single variables, as a
// padding guard is); under other guards they are left unchecked rather than risk refusing a valid
// call.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/printer.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/interval_set.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/scan.hpp"
#include "loom/te/tensor.hpp"

namespace loom {

/// The placeholders a function takes, each with the index of its parameter.
using InputParams = std::unordered_map<TensorKey, size_t, TensorKeyHash>;

namespace detail {

/// Narrows the intervals of `vars` to the points where `cond` is `holds` (true or false), for
/// the conditions a guard is made of: && and ||, !, and comparisons of one variable plus or
/// minus a term against an expression of other variables. Anything else leaves them as they are,
/// which is sound (the intervals only ever shrink to points that satisfy the condition).
class ConditionNarrower {
 public:
  ConditionNarrower(IntervalMap& vars, Analyzer& analyzer) : vars_(vars), analyzer_(analyzer) {}

  void narrow(const Expr& cond, bool holds) {
    if (const auto* op = cond.as<AndNode>()) {
      if (holds) {
        narrow(op->a, true);
        narrow(op->b, true);
      }
      return;
    }
    if (const auto* op = cond.as<OrNode>()) {
      if (!holds) {
        narrow(op->a, false);
        narrow(op->b, false);
      }
      return;
    }
    if (const auto* op = cond.as<NotNode>()) return narrow(op->a, !holds);
    if (const auto* op = cond.as<CallNode>(); op && op->name == intrinsic::likely)
      return narrow(op->args[0], holds);
    // a < b etc., as "a - b compared with 0" read from each side.
    Cmp cmp;
    Expr a, b;
    if (const auto* op = cond.as<LTNode>())
      cmp = Cmp::LT, a = op->a, b = op->b;
    else if (const auto* op = cond.as<LENode>())
      cmp = Cmp::LE, a = op->a, b = op->b;
    else if (const auto* op = cond.as<GTNode>())
      cmp = Cmp::LT, a = op->b, b = op->a;
    else if (const auto* op = cond.as<GENode>())
      cmp = Cmp::LE, a = op->b, b = op->a;
    else if (const auto* op = cond.as<EQNode>())
      cmp = Cmp::EQ, a = op->a, b = op->b;
    else
      return;
    if (!a.dtype().is_integral() || !b.dtype().is_integral()) return;
    if (!holds) {  // !(a < b) is b <= a; !(a <= b) is b < a; !(a == b) says nothing usable
      if (cmp == Cmp::EQ) return;
      std::swap(a, b);
      cmp = cmp == Cmp::LT ? Cmp::LE : Cmp::LT;
    }
    // a < b: an upper bound for a variable in a, a lower bound for one in b.
    bound(a, b, cmp, /*var_on_left=*/true);
    bound(b, a, cmp, /*var_on_left=*/false);
  }

 private:
  enum class Cmp { LT, LE, EQ };

  /// `side` is `v`, `v + t`, `t + v` or `v - t` for a variable v of the map and a term t that
  /// does not use v; `other` is the other side of the comparison.
  void bound(const Expr& side, const Expr& other, Cmp cmp, bool var_on_left) {
    Expr offset;  // side = v + offset
    const VarNode* v = side.as<VarNode>();
    if (v) {
      offset = make_zero(side.dtype());
    } else if (const auto* add = side.as<AddNode>()) {
      if ((v = add->a.as<VarNode>()))
        offset = add->b;
      else if ((v = add->b.as<VarNode>()))
        offset = add->a;
    } else if (const auto* sub = side.as<SubNode>()) {
      if ((v = sub->a.as<VarNode>())) offset = make_zero(sub->b.dtype()) - sub->b;
    }
    if (!v || !vars_.count(v)) return;
    auto is_v = [v](const VarNode* x) { return x == v; };
    if (uses_var_if(offset, is_v) || uses_var_if(other, is_v)) return;
    // v compared with other - offset, whose interval comes from the other variables.
    IntervalSet limit = IntervalEvaluator(vars_, analyzer_).eval(analyzer_.simplify(other - offset));
    IntervalSet& iv = vars_[v];
    const Expr one = make_int_const(side.dtype(), 1);
    if (var_on_left || cmp == Cmp::EQ) {  // v < limit, v <= limit, v == limit: v is at most limit.max
      if (limit.max.defined()) {
        Expr hi = cmp == Cmp::LT ? limit.max - one : limit.max;
        iv.max = analyzer_.simplify(iv.max.defined() ? loom::min(iv.max, hi) : hi);
      }
    }
    if (!var_on_left || cmp == Cmp::EQ) {  // limit < v, limit <= v, v == limit: v is at least limit.min
      if (limit.min.defined()) {
        Expr lo = cmp == Cmp::LT ? limit.min + one : limit.min;
        iv.min = analyzer_.simplify(iv.min.defined() ? loom::max(iv.min, lo) : lo);
      }
    }
  }

  IntervalMap& vars_;
  Analyzer& analyzer_;
};

/// Whether `cond` being `holds` confines the variables of `vars` to a box that the
/// ConditionNarrower finds exactly: a conjunction of comparisons, each of one variable of the map
/// (plus or minus a term) against an expression that uses no variable of the map. The points where
/// such a guard holds are exactly the narrowed intervals' product, so the reads under it can be
/// checked as exactly as unguarded ones; any other guard (a disjunction, two variables compared,
/// a guard on data) may hold on fewer points than the narrowed intervals, and checking its reads
/// could refuse a valid call.
inline bool is_box_guard(const Expr& cond, bool holds, const IntervalMap& vars) {
  if (const auto* op = cond.as<AndNode>())
    return holds && is_box_guard(op->a, true, vars) && is_box_guard(op->b, true, vars);
  if (const auto* op = cond.as<OrNode>())
    return !holds && is_box_guard(op->a, false, vars) && is_box_guard(op->b, false, vars);
  if (const auto* op = cond.as<NotNode>()) return is_box_guard(op->a, !holds, vars);
  if (const auto* op = cond.as<CallNode>(); op && op->name == intrinsic::likely)
    return is_box_guard(op->args[0], holds, vars);
  Expr a, b;
  if (const auto* op = cond.as<LTNode>())
    a = op->a, b = op->b;
  else if (const auto* op = cond.as<LENode>())
    a = op->a, b = op->b;
  else if (const auto* op = cond.as<GTNode>())
    a = op->a, b = op->b;
  else if (const auto* op = cond.as<GENode>())
    a = op->a, b = op->b;
  else if (const auto* op = cond.as<EQNode>(); op && holds)
    a = op->a, b = op->b;
  else
    return false;
  if (!a.dtype().is_integral() || !b.dtype().is_integral()) return false;
  auto in_map = [&](const VarNode* v) { return vars.count(v) != 0; };
  // `side` is v, v + t, t + v or v - t with v in the map and t free of the map's variables.
  auto one_variable = [&](const Expr& side) {
    if (const auto* v = side.as<VarNode>()) return in_map(v);
    if (const auto* add = side.as<AddNode>()) {
      if (const auto* v = add->a.as<VarNode>(); v && in_map(v)) return !uses_var_if(add->b, in_map);
      if (const auto* v = add->b.as<VarNode>(); v && in_map(v)) return !uses_var_if(add->a, in_map);
      return false;
    }
    if (const auto* sub = side.as<SubNode>())
      if (const auto* v = sub->a.as<VarNode>(); v && in_map(v)) return !uses_var_if(sub->b, in_map);
    return false;
  };
  return (one_variable(a) && !uses_var_if(b, in_map)) || (one_variable(b) && !uses_var_if(a, in_map));
}

/// Walks the tensor expressions from the outputs to the inputs, keeping the region each
/// operation computes and, for each input, what each reading operation needs of it.
class InputRegionInference {
 public:
  InputRegionInference(const std::vector<Operation>& outputs, const InputParams& inputs) : inputs_(inputs) {
    for (const Operation& op : outputs) visit_order(op);
    for (const Operation& op : outputs) {
      std::vector<IntervalSet>& region = regions_[op.get()];
      region.clear();
      for (const Expr& e : op->output_shape(0)) region.push_back(whole(e));
    }
  }

  /// What each operation reads of each input, per dimension; in consumer-before-producer order.
  std::vector<InputRead> run() {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) infer(*it);
    return std::move(reads_);
  }

 private:
  /// Post-order over producers: order_ ends with the outputs, producers come first.
  void visit_order(const Operation& op) {
    if (!seen_.insert(op.get()).second) return;
    for (const Tensor& t : op->input_tensors()) visit_order(t.op());
    order_.push_back(op);
  }

  static IntervalSet whole(const Expr& extent) {
    return IntervalSet{make_zero(extent.dtype()), extent - make_int_const(extent.dtype(), 1)};
  }

  void infer(const Operation& op) {
    auto found = regions_.find(op.get());
    if (found == regions_.end()) return;  // nothing reads it
    if (op->kind == OpKind::Placeholder) return;
    if (op->kind != OpKind::Compute) {  // extern and scan stages read their inputs whole
      const auto* scan = op->kind == OpKind::Scan ? static_cast<const ScanOpNode*>(op.get()) : nullptr;
      for (const Tensor& t : op->input_tensors()) {
        std::vector<IntervalSet> all;
        for (const Expr& e : t.shape()) all.push_back(whole(e));
        // A scan computes its update only over the scan axis, after the init rows.
        if (scan && !all.empty())
          for (const Tensor& u : scan->update)
            if (TensorKey(u) == TensorKey(t)) {
              const Range& r = scan->scan_axis.dom();
              all[0] = IntervalSet{
                  r.min, analyzer_.simplify(r.min + r.extent - make_int_const(r.extent.dtype(), 1))};
            }
        need(t, all);
      }
      return;
    }
    const auto* c = static_cast<const ComputeOpNode*>(op.get());
    // The region is clamped to the operation's domain: Loom computes no point outside it.
    IntervalMap vars;
    for (size_t d = 0; d < c->axis.size(); ++d) {
      IntervalSet r = found->second[d];
      const Expr last = c->shape[d] - make_int_const(c->shape[d].dtype(), 1);
      r.min = r.min.defined() ? analyzer_.simplify(loom::max(r.min, make_zero(last.dtype())))
                              : make_zero(last.dtype());
      r.max = r.max.defined() ? analyzer_.simplify(loom::min(r.max, last)) : analyzer_.simplify(last);
      vars[c->axis[d].var().get()] = r;
    }
    for (const IterVar& iv : c->reduce_axis) add_domain(vars, iv);
    reader_ = c->name;
    for (const Expr& body : c->body) ReadWalker(*this, vars).visit_expr(body);
  }

  /// A read as the user wrote it, "A(i + 1, j)" (the printer's form is "A[(i + 1), j]").
  static std::string access_text(const Tensor& t, const std::vector<Expr>& indices) {
    std::string out = t.name() + "(";
    for (size_t d = 0; d < indices.size(); ++d) {
      std::string index = to_string(indices[d]);
      // Drop one pair of parentheses around the whole index, when they are one pair.
      if (index.size() >= 2 && index.front() == '(' && index.back() == ')') {
        int depth = 0;
        bool outer = true;
        for (size_t c = 0; c + 1 < index.size(); ++c) {
          depth += index[c] == '(' ? 1 : index[c] == ')' ? -1 : 0;
          if (depth == 0) outer = false;
        }
        if (outer) index = index.substr(1, index.size() - 2);
      }
      out += (d ? ", " : "") + index;
    }
    return out + ")";
  }

  /// An iteration domain [min, min + extent - 1] whose ends may depend on other variables of vars.
  void add_domain(IntervalMap& vars, const IterVar& iv) {
    IntervalEvaluator ev(vars, analyzer_);
    const Range& dom = iv.dom();
    IntervalSet lo = ev.eval(dom.min);
    IntervalSet hi =
        ev.eval(analyzer_.simplify(dom.min + dom.extent - make_int_const(dom.extent.dtype(), 1)));
    vars[iv.var().get()] = IntervalSet{lo.min, hi.max};
  }

  /// A read of `t` over `region`: widens what its operation must compute, and records it when
  /// `t` is an input.
  void need(const Tensor& t, const std::vector<IntervalSet>& region, const std::string& access = "") {
    auto [it, first] = regions_.try_emplace(t.op().get(), region);
    if (!first) {
      IntervalEvaluator ev(no_vars_, analyzer_);
      for (size_t d = 0; d < region.size() && d < it->second.size(); ++d)
        it->second[d] = ev.unite(it->second[d], region[d]);
    }
    auto param = inputs_.find(TensorKey(t));
    if (param == inputs_.end() || access.empty()) return;
    for (size_t d = 0; d < region.size(); ++d) {
      if (!region[d].bounded()) continue;  // e.g. an index read from data: not checkable
      InputRead* r = nullptr;
      for (InputRead& existing : reads_)
        if (existing.param == param->second && existing.dim == static_cast<int>(d) &&
            existing.reader == reader_ && existing.access == access)
          r = &existing;
      if (!r) {
        reads_.push_back(
            InputRead{param->second, static_cast<int>(d), reader_, access, region[d].min, region[d].max});
        continue;
      }
      IntervalSet merged =
          IntervalEvaluator(no_vars_, analyzer_).unite(IntervalSet{r->min, r->max}, region[d]);
      r->min = merged.min;
      r->max = merged.max;
    }
  }

  /// Visits one body, narrowing the variables' intervals inside guarded branches.
  class ReadWalker : public IRVisitor {
   public:
    ReadWalker(InputRegionInference& self, IntervalMap vars)
        : self_(self), vars_(vars), plain_(std::move(vars)) {}

   protected:
    using IRVisitor::visit;
    void visit(const ProducerLoadNode* op) override {
      for (const Expr& index : op->indices) visit_expr(index);
      Tensor t = as_tensor(op->producer);
      // Guards narrow only reads of inputs: the lowering computes an intermediate over
      // everything its consumers name, guarded or not (bound_inference.hpp).
      const bool input = self_.inputs_.count(TensorKey(t)) != 0;
      IntervalEvaluator ev(input ? vars_ : plain_, self_.analyzer_);
      std::vector<IntervalSet> region;
      for (const Expr& index : op->indices) region.push_back(ev.eval(index));
      // A read of an input under a guard that is not a box (is_box_guard) is not recorded: the
      // narrowing may leave points where the guard fails, and checking them could refuse a valid
      // call. Reads under box guards, and reads that no guard encloses, are exact.
      self_.need(t, region, input && inexact_guards_ > 0 ? std::string() : access_text(t, op->indices));
    }
    void visit(const CallNode* op) override {
      if (op->name != intrinsic::if_then_else) return IRVisitor::visit(op);
      visit_expr(op->args[0]);
      guarded(op->args[0], true, op->args[1]);
      guarded(op->args[0], false, op->args[2]);
    }
    void visit(const ReduceNode* op) override {
      IntervalMap outer = vars_, outer_plain = plain_;
      for (const IterVar& iv : op->axis)
        if (!vars_.count(iv.var().get())) {
          self_.add_domain(vars_, iv);
          self_.add_domain(plain_, iv);
        }
      visit_expr(op->condition);
      const int64_t* always = as_const_int(op->condition);
      const bool where = op->condition.defined() && !(always && *always != 0);  // not a where: true
      const int inexact = where && !is_box_guard(op->condition, true, vars_) ? 1 : 0;
      if (op->condition.defined()) ConditionNarrower(vars_, self_.analyzer_).narrow(op->condition, true);
      inexact_guards_ += inexact;
      for (const Expr& e : op->source) visit_expr(e);
      inexact_guards_ -= inexact;
      vars_ = std::move(outer);
      plain_ = std::move(outer_plain);
    }
    void visit(const LetNode* op) override {
      visit_expr(op->value);
      IntervalMap outer = vars_, outer_plain = plain_;
      vars_[op->var.get()] = IntervalEvaluator(vars_, self_.analyzer_).eval(op->value);
      plain_[op->var.get()] = IntervalEvaluator(plain_, self_.analyzer_).eval(op->value);
      visit_expr(op->body);
      vars_ = std::move(outer);
      plain_ = std::move(outer_plain);
    }

   private:
    void guarded(const Expr& cond, bool holds, const Expr& branch) {
      IntervalMap outer = vars_;
      const int inexact = is_box_guard(cond, holds, vars_) ? 0 : 1;
      ConditionNarrower(vars_, self_.analyzer_).narrow(cond, holds);
      inexact_guards_ += inexact;
      visit_expr(branch);
      inexact_guards_ -= inexact;
      vars_ = std::move(outer);
    }

    InputRegionInference& self_;
    IntervalMap vars_;        // narrowed by the guards around the current expression
    IntervalMap plain_;       // the same variables, not narrowed
    int inexact_guards_ = 0;  // guards around the current expression that are not boxes (is_box_guard)
  };

  const InputParams& inputs_;
  Analyzer analyzer_;
  const IntervalMap no_vars_;  // for unite(), which reads no variable
  std::unordered_set<const OperationNode*> seen_;
  std::vector<Operation> order_;
  std::unordered_map<const OperationNode*, std::vector<IntervalSet>> regions_;
  std::string reader_;
  std::vector<InputRead> reads_;
};

}  // namespace detail

/// What the operations reachable from `outputs` read of the tensors in `inputs` (placeholders
/// passed as arguments), per read (a ProducerLoad, told apart by its text) and dimension: the index range
/// over every point each operation computes, in terms of the size variables. Dimensions whose range depends
/// on data (A(B(i))) are left out: they cannot be checked before the call.
inline std::vector<InputRead> infer_input_reads(const std::vector<Operation>& outputs,
                                                const InputParams& inputs) {
  return detail::InputRegionInference(outputs, inputs).run();
}

}  // namespace loom
