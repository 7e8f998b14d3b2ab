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
// The walk visits each store once per iteration of its loops, so it gives up (keeping the fill)
// beyond kMaxWalkedStores of them. Anything else keeps the fill too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/ir/linear_form.hpp"
#include "loom/ir/stmt.hpp"

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

/// Marks the elements that a statement tree writes to the buffer; fails on anything it cannot
/// follow exactly.
class WriteCover {
 public:
  /// Beyond this many store executions the walk stops: the fill stays (a memset of the buffer costs
  /// about as much as writing it, and compile time must not grow with the buffer).
  static constexpr int64_t kMaxWalkedStores = int64_t{1} << 18;

  WriteCover(const VarNode* buffer, int64_t elements)
      : buffer_(buffer), written_(static_cast<size_t>(elements), false) {}

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
      if (!min || !extent || loop->kind == ForKind::ThreadBinding) return false;
      for (int64_t i = 0; i < *extent; ++i) {
        values_[loop->loop_var.get()] = *min + i;
        if (!walk(loop->body)) return false;
      }
      values_.erase(loop->loop_var.get());
      return true;
    }
    const StoreNode* store = s.as<StoreNode>();
    if (!store || ++stores_ > kMaxWalkedStores) return false;
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

  StoreIndex read(const StoreNode& store) const {
    StoreIndex r;
    if (store.predicate.defined() || names_buffer(store.value, buffer_) || names_buffer(store.index, buffer_))
      return r;
    if (store.buffer.get() != buffer_) {
      r.followed = true;  // another buffer's store: only its reads matter
      return r;
    }
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
  std::vector<bool> written_;
  std::unordered_map<const VarNode*, int64_t> values_;
  std::unordered_map<const StoreNode*, StoreIndex> stores_seen_;
  int64_t stores_ = 0;
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
  // A store writes at least one element per execution: a larger buffer cannot be covered in the walk.
  if (elements > detail::WriteCover::kMaxWalkedStores * 64) return false;  // 2 MB of marks at most
  const VarNode* buffer = op.buffer.get();

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
  detail::WriteCover cover(buffer, elements);
  return cover.walk(first) && cover.complete();
}

}  // namespace loom::codegen
