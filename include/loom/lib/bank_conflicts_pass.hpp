// The automatic mode of bank-conflict avoidance: two passes a user adds to a PassContext. After the
// schedule phase one notes every shared tile's shape; after the memory phase the other analyses the
// final IR and re-lays out each conflicted shared buffer (padding or swizzle) by rewriting its indices.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/lib/bank_conflicts.hpp"
#include "loom/lower/lower_state.hpp"

namespace loom::attr {
/// On an Allocate the automatic mode re-laid out: the value says how (padding or swizzle).
inline constexpr const char* bank_conflict_fix = "bank_conflict_fix";
}  // namespace loom::attr

namespace loom::lib {

/// What the automatic mode did in the lowerings it took part in.
struct AutoBankConflicts {
  std::vector<BankConflictFix> fixes;  // one per shared buffer that had conflicts
};

namespace detail {

/// Rewrites the Loads, Stores and Allocates of the buffers in `layouts` (by name) to a new layout.
class BankLayoutRewriter : public IRMutator {
 public:
  struct Layout {
    BankCandidate choice;
    int64_t row = 0;
  };
  explicit BankLayoutRewriter(std::unordered_map<std::string, Layout> layouts)
      : layouts_(std::move(layouts)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr remap(const Layout& l, const Expr& x) const {
    // A dense ramp inside one block that moves as a whole (2^M swizzled elements, or a row)
    // stays a ramp: only its base moves, and the backends keep it one vector access.
    if (const RampNode* ramp = x.as<RampNode>()) {
      const int64_t* stride = as_const_int(ramp->stride);
      const int64_t block =
          l.choice.kind == BankConflictFix::Kind::Swizzle ? int64_t{1} << l.choice.swizzle.base : l.row;
      Analyzer analyzer;
      const DType t = ramp->base.dtype();
      if (stride && *stride == 1 &&
          analyzer.can_prove(floormod(ramp->base, make_int_const(t, block)) +
                                 make_int_const(t, ramp->lanes) <=
                             make_int_const(t, block)))
        return RampNode::make(analyzer.simplify(remap(l, ramp->base)), ramp->stride, ramp->lanes);
    }
    if (l.choice.kind == BankConflictFix::Kind::Swizzle) return l.choice.swizzle.apply(x);
    Expr row = make_int_const(x.dtype().element_of(), l.row);
    Expr stride = make_int_const(x.dtype().element_of(), l.row + l.choice.padding);
    return floordiv(x, row) * stride + floormod(x, row);
  }

  Stmt visit(const AllocateNode* op) override {
    auto it = layouts_.find(op->buffer.name());
    if (it == layouts_.end() || !is_shared_scope(op->scope)) return IRMutator::visit(op);
    const Layout& l = it->second;
    active_[op->buffer.get()] = &l;
    Stmt body = mutate(op->body);
    active_.erase(op->buffer.get());
    std::vector<Expr> extents = op->extents;
    std::string how = l.choice.swizzle.str();
    if (l.choice.kind == BankConflictFix::Kind::Padding) {
      const int64_t* size = extents.size() == 1 ? as_const_int(extents[0]) : nullptr;
      if (!size || *size % l.row != 0)
        throw Error(cat("automatic bank-conflict fix: shared buffer '", op->buffer.name(),
                        "' is not a whole number of rows of ", l.row,
                        " elements; pad it with storage_align instead"));
      extents[0] = make_int_const(extents[0].dtype(), *size / l.row * (l.row + l.choice.padding));
      how = cat("row stride ", l.row + l.choice.padding, " (", l.row, " + padding ", l.choice.padding, ")");
    }
    Stmt alloc = AllocateNode::make(op->buffer, op->dtype, extents, op->scope, body);
    return AttrStmtNode::make(loom::attr::bank_conflict_fix, op->buffer, StringImmNode::make(how), alloc);
  }

  Expr visit(const LoadNode* op) override {
    Expr index = mutate(op->index);
    Expr predicate = op->predicate.defined() ? mutate(op->predicate) : Expr();
    auto it = active_.find(op->buffer.get());
    if (it != active_.end()) index = remap(*it->second, index);
    return LoadNode::make(op->dtype, op->buffer, index, predicate);
  }

  Stmt visit(const StoreNode* op) override {
    Expr value = mutate(op->value), index = mutate(op->index);
    Expr predicate = op->predicate.defined() ? mutate(op->predicate) : Expr();
    auto it = active_.find(op->buffer.get());
    if (it != active_.end()) index = remap(*it->second, index);
    return StoreNode::make(op->buffer, value, index, predicate);
  }

 private:
  std::unordered_map<std::string, Layout> layouts_;
  std::unordered_map<const VarNode*, const Layout*> active_;
};

/// The free variables of `body` whose names `options.sizes` gives values.
inline std::unordered_map<const VarNode*, int64_t> size_values(const Stmt& body,
                                                               const BankAnalysisOptions& options) {
  std::unordered_map<const VarNode*, int64_t> out;
  if (options.sizes.empty()) return out;
  for_each_expr(body, [&](const Expr& e) {
    if (const VarNode* v = e.as<VarNode>()) {
      auto it = options.sizes.find(v->name);
      if (it != options.sizes.end()) out[v] = it->second;
    }
  });
  return out;
}

}  // namespace detail

/// Opts a lowering in to automatic bank-conflict avoidance: every shared buffer whose loads or
/// stores conflict gets the layout avoid_bank_conflicts would choose (buffers the schedule already
/// pads or swizzles are left alone). The returned record lists what was done.
///
///   PassContext ctx;
///   auto done = lib::add_bank_conflict_passes(ctx);
///   Kernel k = build(s, {A, B}, Target::cuda_sim(), "transpose", ctx);
///   for (const lib::BankConflictFix& f : done->fixes) std::cout << f.str() << "\n";
inline std::shared_ptr<AutoBankConflicts> add_bank_conflict_passes(PassContext& ctx,
                                                                   BankAnalysisOptions options = {}) {
  auto done = std::make_shared<AutoBankConflicts>();
  auto shapes = std::make_shared<detail::RealizedShapes>();
  auto user_layouts = std::make_shared<std::set<std::string>>();
  ctx.add_pass(PassPosition::AfterSchedule, "bank_conflicts_shapes",
               [shapes, user_layouts](Stmt body, const PassContext& c) {
                 shapes->extents.clear();
                 shapes->scope.clear();
                 user_layouts->clear();
                 if (c.lowering() && c.lowering()->schedule())
                   for (const Ref<StageNode>& stage : c.lowering()->schedule()->stages)
                     if (!stage->storage_align.empty() || stage->swizzle.defined())
                       for (int k = 0; k < stage->origin_op->num_outputs(); ++k)
                         user_layouts->insert(stage->origin_op->output(k).name());
                 return (*shapes)(std::move(body), c);
               });
  ctx.add_pass(PassPosition::AfterMemory, "avoid_bank_conflicts",
               [done, shapes, user_layouts, options](Stmt body, const PassContext& c) {
                 const std::string func = c.lowering() ? c.lowering()->func_name() : "main";
                 const auto sizes = detail::size_values(body, options);
                 BankTrace trace = trace_bank_accesses(body, func, sizes);
                 std::unordered_map<std::string, detail::BankLayoutRewriter::Layout> layouts;
                 std::vector<BankConflictFix> fixes;
                 std::set<std::string> names;
                 for (const BankTrace::Buffer& b : trace.buffers) names.insert(b.name);
                 for (const std::string& name : names) {
                   auto shape = shapes->extents.find(name);
                   if (shape == shapes->extents.end() || user_layouts->count(name)) continue;
                   const std::vector<int> rows = detail::rows_named(trace, name);
                   const detail::BankCandidate before = detail::score_layout(trace, rows, nullptr);
                   if (before.conflicts == 0) continue;
                   const int64_t row = detail::constant_row_length(
                       shape->second, cat("automatic bank-conflict fix of '", name, "'"));
                   const int bytes = trace.buffers[static_cast<size_t>(rows[0])].dtype.bytes();
                   detail::BankCandidate best =
                       detail::choose_layout(trace, rows, row, bytes, shape->second.size() >= 2);
                   BankConflictFix fix;
                   fix.buffer = name;
                   fix.row_length = fix.row_stride = row;
                   fix.before_load = before.load;
                   fix.before_store = before.store;
                   fix.kind = best.kind;
                   if (best.kind == BankConflictFix::Kind::Padding) fix.row_stride = row + best.padding;
                   if (best.kind == BankConflictFix::Kind::Swizzle) fix.swizzle = best.swizzle;
                   if (best.kind != BankConflictFix::Kind::None) layouts[name] = {best, row};
                   fixes.push_back(fix);
                 }
                 if (!layouts.empty()) body = detail::BankLayoutRewriter(layouts).mutate(body);
                 BankTrace after = layouts.empty() ? trace : trace_bank_accesses(body, func, sizes);
                 for (BankConflictFix& fix : fixes) {
                   const detail::BankCandidate m =
                       detail::score_layout(after, detail::rows_named(after, fix.buffer), nullptr);
                   fix.after_load = m.load;
                   fix.after_store = m.store;
                   fix.conflict_free = m.conflicts == 0;
                   done->fixes.push_back(fix);
                 }
                 return body;
               });
  return done;
}

}  // namespace loom::lib
