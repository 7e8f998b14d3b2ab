// Whether an allocation's body writes every element of its buffer before anything can read it. The
// CPU code generator zero-fills allocations (as the interpreter does, so that a schedule that reads
// an element it never wrote gets the same zero in both), and skips the fill where this analysis
// proves it unobservable: a packed GEMM panel or a softmax row that the next loop nest overwrites
// whole would otherwise be written twice.
//
// The proof is deliberately narrow: the first statement that names the buffer must be a tree of
// loops with constant bounds and sequences whose leaves are stores (none masked, none reading the
// buffer), the stores to the buffer indexed affinely by the loop variables (scalars or contiguous
// ramps); walking the tree marks every element they write, and all of [0, elements) must be marked.
// The walk visits each loop iteration and store execution, so it gives up (keeping the fill) beyond
// kMaxWalkSteps of them. Anything else keeps the fill too.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/ir/linear_form.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/ir/visitor.hpp"

namespace loom::codegen {

namespace detail {

/// Whether `buffer` is used in `s` or `e`: an access to it, or its handle passed along (a call's
/// argument, a let's value).
template <typename Node>
bool names_buffer(const Node& node, const VarNode* buffer) {
  for (const Var& v : free_vars(node, FreeVarOptions{/*handles=*/true, /*buffer_accesses=*/true}))
    if (v.get() == buffer) return true;
  return false;
}

/// Whether `s` binds `var` anywhere: as a loop variable, a let's variable or an allocation's buffer.
inline bool binds(const Stmt& s, const VarNode* var) {
  struct Finder : IRVisitor {
    using IRVisitor::visit;
    const VarNode* var;
    bool found = false;
    void visit(const ForNode* op) override {
      found = found || op->loop_var.get() == var;
      IRVisitor::visit(op);
    }
    void visit(const LetStmtNode* op) override {
      found = found || op->var.get() == var;
      IRVisitor::visit(op);
    }
    void visit(const LetNode* op) override {
      found = found || op->var.get() == var;
      IRVisitor::visit(op);
    }
    void visit(const AllocateNode* op) override {
      found = found || op->buffer.get() == var;
      IRVisitor::visit(op);
    }
  } finder;
  finder.var = var;
  finder.visit_stmt(s);
  return finder.found;
}

/// Marks the elements that a statement tree writes to the buffer; fails on anything it cannot
/// follow exactly.
class WriteCover {
 public:
  /// Beyond this many steps (loop iterations and store executions) the walk stops and the fill
  /// stays: compile time must not grow with the buffer or the loops (2^18 steps take a few ms).
  static constexpr int64_t kMaxWalkSteps = int64_t{1} << 18;

  WriteCover(const VarNode* buffer, DType element, int64_t elements)
      : buffer_(buffer), element_(element), written_(static_cast<size_t>(elements), false) {}

  /// Walks `s` (the loops' variables bound in `values_`); false when it cannot say what `s` writes.
  bool walk(const Stmt& s) {
    if (const SeqNode* seq = s.as<SeqNode>()) {
      for (const Stmt& part : seq->seq)
        if (!walk(part)) return false;
      return true;
    }
    if (const ForNode* loop = s.as<ForNode>()) {
      const int64_t* min = as_const_int(loop->min);
      const int64_t* extent = as_const_int(loop->extent);
      if (!min || !extent || loop->kind == ForKind::ThreadBinding || !counts_as_written(*loop, *min, *extent))
        return false;
      for (int64_t i = 0; i < *extent; ++i) {
        if (++steps_ > kMaxWalkSteps) return false;
        values_[loop->loop_var.get()] = *min + i;
        if (!walk(loop->body)) return false;
      }
      values_.erase(loop->loop_var.get());
      return true;
    }
    const StoreNode* store = s.as<StoreNode>();
    if (!store || ++steps_ > kMaxWalkSteps) return false;
    auto [it, added] = stores_seen_.try_emplace(store);
    if (added) it->second = read(*store);
    const StoreIndex& index = it->second;
    if (!index.followed) return false;
    return store->buffer.get() != buffer_ || mark(index);
  }

  /// Whether every element has been written.
  bool complete() const { return std::find(written_.begin(), written_.end(), false) == written_.end(); }

 private:
  /// A store's index, read once: constant + sum(coeff * variable) + [0, lanes).
  struct StoreIndex {
    bool followed = false;  // a store this walk can follow: unmasked, not reading the buffer, affine
    int64_t constant = 0, lanes = 1;
    std::vector<std::pair<const VarNode*, int64_t>> terms;
  };

  /// Whether the loop runs min, ..., min + extent - 1 as counted here: the code generator computes a
  /// loop's bounds in its variable's type, so a narrow type could wrap them.
  static bool counts_as_written(const ForNode& loop, int64_t min, int64_t extent) {
    const DType t = loop.loop_var.dtype();
    if (!t.is_scalar() || !t.is_int() || (t.bits != 32 && t.bits != 64)) return false;
    const int64_t limit = t.bits == 32 ? int64_t{INT32_MAX} : INT64_MAX;
    return extent >= 0 && min >= -limit && min <= limit - extent;
  }

  StoreIndex read(const StoreNode& store) const {
    StoreIndex r;
    if (store.predicate.defined() || names_buffer(store.value, buffer_) || names_buffer(store.index, buffer_))
      return r;
    if (store.buffer.get() != buffer_) {
      r.followed = true;  // another buffer's store: only its reads matter
      return r;
    }
    // Elements are counted in the allocation's type: a store of another type (8-bit values into a
    // float buffer) writes other bytes than its index says.
    if (store.value.dtype().element_of() != element_) return r;
    Expr base = store.index;
    if (const RampNode* ramp = store.index.as<RampNode>()) {
      const int64_t* stride = as_const_int(ramp->stride);
      if (!stride || *stride != 1) return r;
      base = ramp->base;
      r.lanes = ramp->lanes;
    } else if (store.index.dtype().lanes != 1) {
      return r;  // a scatter
    }
    if (!LinearForm::applies_to(base.dtype())) return r;
    const LinearForm form = LinearForm::parse(base);
    r.constant = form.constant();
    for (const LinearTerm& t : form.terms()) {
      const VarNode* v = t.atom.as<VarNode>();
      if (!v) return r;
      r.terms.emplace_back(v, t.coeff);
    }
    r.followed = true;
    return r;
  }

  /// Marks what one execution of a store to the buffer writes, its loops' variables at `values_`.
  bool mark(const StoreIndex& index) {
    int64_t first = index.constant;
    for (const auto& [var, coeff] : index.terms) {
      auto it = values_.find(var);
      int64_t term = 0;
      if (it == values_.end() || __builtin_mul_overflow(coeff, it->second, &term) ||
          __builtin_add_overflow(first, term, &first))
        return false;  // a variable bound outside the tree (a let, an outer loop): unknown here
    }
    if (first < 0 || first > static_cast<int64_t>(written_.size()) - index.lanes) return false;
    std::fill_n(written_.begin() + first, index.lanes, true);
    return true;
  }

  const VarNode* buffer_;
  DType element_;
  std::vector<bool> written_;
  std::unordered_map<const VarNode*, int64_t> values_;
  std::unordered_map<const StoreNode*, StoreIndex> stores_seen_;
  int64_t steps_ = 0;
};

}  // namespace detail

/// Whether `op`'s body writes all of its buffer before anything reads it (see the file comment);
/// false whenever that is not proven.
inline bool written_before_read(const AllocateNode& op) {
  if (op.dtype.lanes != 1) return false;
  int64_t elements = 1;
  for (const Expr& e : op.extents) {
    const int64_t* v = as_const_int(e);
    if (!v || *v <= 0 || __builtin_mul_overflow(elements, *v, &elements)) return false;
  }
  // A store of 64 lanes (the widest there is) per walk step at most: a larger buffer cannot be covered
  // within the walk, and the marks take 2 MB at most.
  if (elements > detail::WriteCover::kMaxWalkSteps * 64) return false;
  const VarNode* buffer = op.buffer.get();
  // A binding of the same variable inside the body (ill-formed, but the JIT would take it) would hide
  // accesses to this buffer from names_buffer, whose bound set is not scoped.
  if (detail::binds(op.body, buffer)) return false;

  // The first statement that names the buffer; statements before it do not touch it.
  Stmt first = op.body;
  while (true) {
    if (const SeqNode* seq = first.as<SeqNode>()) {
      auto it = std::find_if(seq->seq.begin(), seq->seq.end(),
                             [&](const Stmt& s) { return detail::names_buffer(s, buffer); });
      if (it == seq->seq.end()) return false;  // never used: nothing to save either
      first = *it;
    } else if (const AllocateNode* inner = first.as<AllocateNode>()) {
      for (const Expr& e : inner->extents)
        if (detail::names_buffer(e, buffer)) return false;
      first = inner->body;
    } else {
      break;
    }
  }
  detail::WriteCover cover(buffer, op.dtype, elements);
  return cover.walk(first) && cover.complete();
}

}  // namespace loom::codegen
