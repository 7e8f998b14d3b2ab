// Whether an allocation's body writes every element of its buffer before anything can read it. The
// CPU code generator zero-fills allocations (as the interpreter does, so that a schedule that reads
// an element it never wrote gets the same zero in both), and skips the fill where this analysis
// proves it unobservable: a packed GEMM panel or a softmax row that the next loop nest overwrites
// whole would otherwise be written twice.
//
// The proof is deliberately narrow: the first statement that names the buffer must be a tree of
// loops with constant bounds and sequences whose leaves are stores (none masked, none reading the
// buffer), the stores to the buffer indexed affinely by the loop variables (scalars or contiguous
// ramps, of the buffer's element type), the loops' variables 32 or 64 bits wide. An AMX tile product
// that starts from zero counts as its tiles' stores (16 elements of each row of each C tile, at
// constant strides): it writes the block it computes without reading it. Walking the tree
// marks every element they write, and all of [0, elements) must be marked. What writes nothing to
// the buffer (other buffers' stores, loops of those) is checked for reads of it and left out of the
// walk, whose length (store executions) is counted before it starts: beyond kMaxWalkSteps the fill
// stays. Anything else keeps the fill too. lib::gemm's 1024^3 f32
// kernel spends 1.2 ms here (its two packed panels, both proven), against about 55 ms in LLVM.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/amx_tile_product.hpp"
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
/// follow exactly. The tree is read once into a compact form (loops by depth, stores as affine
/// indices over the loops' depths), whose walk is a few nanoseconds per step.
class WriteCover {
 public:
  /// Beyond this many steps the walk is not started and the fill stays: compile time must not grow
  /// with the buffer or the loops (2^18 steps take about 1.5 ms). A step is the execution of a store
  /// to the buffer; what writes nothing to it (other buffers' stores, loops of those) is checked for
  /// reads of the buffer and then left out of the walk.
  static constexpr int64_t kMaxWalkSteps = int64_t{1} << 18;

  WriteCover(const VarNode* buffer, DType element, int64_t elements)
      : buffer_(buffer), element_(element), elements_(elements) {}

  /// Whether `s` writes every element of the buffer, as far as this analysis can tell.
  bool covers(const Stmt& s) {
    Node root;
    int64_t steps = 0;
    if (!read(s, 0, root) || !count_steps(root, steps)) return false;
    written_.assign(static_cast<size_t>((elements_ + 63) / 64), 0);
    values_.assign(static_cast<size_t>(max_depth_) + 1, 0);
    if (!run(root)) return false;
    for (int64_t e = 0; e < elements_; e += 64)
      if (~written_[static_cast<size_t>(e / 64)] &
          (elements_ - e >= 64 ? ~uint64_t{0} : (uint64_t{1} << (elements_ - e)) - 1))
        return false;
    return true;
  }

 private:
  /// One statement of the tree: a sequence, a loop, or a store to the buffer (another buffer's store
  /// reads as an empty sequence: it writes nothing here).
  struct Node {
    enum Kind { Sequence, Loop, Store } kind = Sequence;
    std::vector<Node> body;           // a sequence's statements, a loop's body
    int64_t min = 0, extent = 0;      // a loop
    int depth = 0;                    // a loop: the depth its variable's value is kept at
    int64_t constant = 0, lanes = 1;  // a store: constant + sum(coeff * value at depth) + [0, lanes)
    std::vector<std::pair<int, int64_t>> terms;
  };

  bool read(const Stmt& s, int depth, Node& out) {
    if (const SeqNode* seq = s.as<SeqNode>()) {
      for (const Stmt& part : seq->seq) {
        Node n;
        if (!read(part, depth, n)) return false;
        if (!writes_nothing(n)) out.body.push_back(std::move(n));
      }
      return true;
    }
    if (const ForNode* loop = s.as<ForNode>()) {
      const int64_t* min = as_const_int(loop->min);
      const int64_t* extent = as_const_int(loop->extent);
      if (!min || !extent || loop->kind == ForKind::ThreadBinding ||
          !counts_as_written(*loop, *min, *extent) || depths_.count(loop->loop_var.get()))
        return false;
      out.kind = Node::Loop;
      out.min = *min;
      out.extent = *extent;
      out.depth = depth + 1;
      max_depth_ = std::max(max_depth_, out.depth);
      depths_[loop->loop_var.get()] = out.depth;
      out.body.resize(1);
      const bool ok = read(loop->body, depth + 1, out.body[0]);
      depths_.erase(loop->loop_var.get());
      if (out.extent == 0 || writes_nothing(out.body[0])) out = Node();  // checked, then left out
      return ok;
    }
    if (const EvaluateNode* eval = s.as<EvaluateNode>()) return read_tile_product(*eval, out);
    const StoreNode* store = s.as<StoreNode>();
    if (!store || store->predicate.defined() || names_buffer(store->value, buffer_) ||
        names_buffer(store->index, buffer_))
      return false;
    if (store->buffer.get() != buffer_) return true;  // another buffer's store: only its reads matter
    // Elements are counted in the allocation's type: a store of another type (8-bit values into a
    // float buffer) writes other bytes than its index says.
    if (store->value.dtype().element_of() != element_) return false;
    out.kind = Node::Store;
    Expr base = store->index;
    if (const RampNode* ramp = store->index.as<RampNode>()) {
      const int64_t* stride = as_const_int(ramp->stride);
      if (!stride || *stride != 1) return false;
      if (ramp->lanes != store->index.dtype().lanes) return false;  // ill-formed: trust neither
      base = ramp->base;
      out.lanes = ramp->lanes;
    } else if (store->index.dtype().lanes != 1) {
      return false;  // a scatter
    }
    return read_affine(base, out);
  }

  /// `index` as `store`'s constant and terms over the enclosing loops' depths; false where it is not
  /// affine in those loops' variables.
  bool read_affine(const Expr& index, Node& store) {
    if (!LinearForm::applies_to(index.dtype())) return false;
    const LinearForm form = LinearForm::parse(index);
    store.constant = form.constant();
    for (const LinearTerm& t : form.terms()) {
      const VarNode* v = t.atom.as<VarNode>();
      auto it = v ? depths_.find(v) : depths_.end();
      if (it == depths_.end()) return false;  // not a variable of an enclosing loop of the tree
      store.terms.emplace_back(it->second, t.coeff);
    }
    return true;
  }

  /// An AMX tile product into the buffer from zero (tilezero, then tilestored of each C tile): a
  /// sequence of stores of 16 elements, one per row of each tile. It must name the buffer only as C,
  /// at constant strides of the buffer's element type; anything else evaluated fails.
  bool read_tile_product(const EvaluateNode& eval, Node& out) {
    const CallNode* call = eval.value.as<CallNode>();
    if (!call || call->name != intrinsic::amx_tile_product) return false;
    const AmxTileProduct p = AmxTileProduct::decode(call);
    // C's elements are 32-bit (float32 or int32): a tile row is 16 of them.
    if (p.accumulate || p.c.data.get() != buffer_ || p.c.dtype != element_ || element_.bytes() != 4)
      return false;
    for (size_t i = 0; i < call->args.size(); ++i)
      if (i != AmxTileProduct::kFirstOperand && names_buffer(call->args[i], buffer_)) return false;
    const int64_t* row = as_const_int(p.c.row_stride);
    const int64_t* tile = as_const_int(p.c.tile_stride);
    Node first;
    first.kind = Node::Store;
    first.lanes = 16;  // a tile row's columns
    if (!row || !tile || !read_affine(p.c.offset, first)) return false;
    for (int mi = 0; mi < p.m_tiles; ++mi)
      for (int nj = 0; nj < p.n_tiles; ++nj)
        for (int r = 0; r < p.rows; ++r) {
          Node st = first;
          st.constant += mi * *tile + r * *row + nj * 16;  // C's n-tiles are 16 elements apart
          out.body.push_back(std::move(st));
        }
    return true;
  }

  /// A node the tree can leave out: an empty sequence (what a loop or store that writes nothing to
  /// the buffer is read as).
  static bool writes_nothing(const Node& n) { return n.kind == Node::Sequence && n.body.empty(); }

  /// Adds the stores to the buffer that walking `n` executes to `steps`; false beyond kMaxWalkSteps.
  /// Every node left in the tree leads to a store, so the walk's work is at most this count times
  /// the nesting depth.
  static bool count_steps(const Node& n, int64_t& steps) {
    if (n.kind == Node::Store) return ++steps <= kMaxWalkSteps;
    int64_t inner = 0;
    for (const Node& b : n.body)
      if (!count_steps(b, inner)) return false;
    if (n.kind == Node::Loop && __builtin_mul_overflow(inner, n.extent, &inner)) return false;
    return !__builtin_add_overflow(steps, inner, &steps) && steps <= kMaxWalkSteps;
  }

  /// Whether the loop runs min, ..., min + extent - 1 as counted here: the code generator computes a
  /// loop's bounds in its variable's type, so a narrow type could wrap them.
  static bool counts_as_written(const ForNode& loop, int64_t min, int64_t extent) {
    const DType t = loop.loop_var.dtype();
    if (!t.is_scalar() || !t.is_int() || (t.bits != 32 && t.bits != 64)) return false;
    const int64_t limit = t.bits == 32 ? int64_t{INT32_MAX} : INT64_MAX;
    return extent >= 0 && min >= -limit && min <= limit - extent;
  }

  bool run(const Node& n) {
    switch (n.kind) {
      case Node::Sequence:
        for (const Node& b : n.body)
          if (!run(b)) return false;
        return true;
      case Node::Loop:
        for (int64_t i = 0; i < n.extent; ++i) {
          values_[static_cast<size_t>(n.depth)] = n.min + i;
          if (!run(n.body[0])) return false;
        }
        return true;
      case Node::Store: break;
    }
    int64_t first = n.constant;
    for (const auto& [depth, coeff] : n.terms) {
      int64_t term = 0;
      if (__builtin_mul_overflow(coeff, values_[static_cast<size_t>(depth)], &term) ||
          __builtin_add_overflow(first, term, &first))
        return false;
    }
    if (first < 0 || first > elements_ - n.lanes) return false;  // out of bounds: not ours to judge
    for (int64_t e = first; e < first + n.lanes;) {              // a word at a time
      const int64_t bit = e % 64, count = std::min<int64_t>(64 - bit, first + n.lanes - e);
      written_[static_cast<size_t>(e / 64)] |=
          (count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1) << bit);
      e += count;
    }
    return true;
  }

  const VarNode* buffer_;
  DType element_;
  int64_t elements_;
  std::unordered_map<const VarNode*, int> depths_;  // the enclosing loops' variables while reading
  int max_depth_ = 0;
  std::vector<int64_t> values_;    // each depth's loop value while walking
  std::vector<uint64_t> written_;  // one bit per element
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
  // The marks, one bit per element, take 2 MB at most: larger buffers keep the fill.
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
  return detail::WriteCover(buffer, op.dtype, elements).covers(first);
}

}  // namespace loom::codegen
