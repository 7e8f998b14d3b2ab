// inject_virtual_thread: a loop bound to "vthread" (or "vthread.x|y|z") of constant extent V is V
// virtual threads of one real thread. The pass interleaves them: code that does not depend on the
// virtual thread (shared-tile loads, the reduction loop) is emitted once, the rest V times.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/rewrite_loops.hpp"
#include "loom/lower/unroll_loops.hpp"

namespace loom {

namespace detail {

using VarNodeSet = std::unordered_set<const VarNode*>;

/// Above this many IR nodes in all V copies of a statement together, the copies become a serial
/// loop over the virtual thread instead: straight-line code grows with V, a loop does not.
inline constexpr int64_t kMaxVirtualThreadCopyNodes = 2048;

/// Every variable an expression reads, buffers of loads included.
inline void collect_vars(const Expr& e, VarNodeSet& out) {
  for_each_expr(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) out.insert(v);
    if (const auto* l = x.as<LoadNode>()) out.insert(l->buffer.get());
  });
}

/// Whether a statement reads or writes any of `vars` (buffers of loads and stores count).
inline bool mentions_any(const Stmt& s, const VarNodeSet& vars) {
  struct Finder : IRVisitor {
    const VarNodeSet& vars;
    bool found = false;
    explicit Finder(const VarNodeSet& v) : vars(v) {}
    void visit(const VarNode* op) override { found = found || vars.count(op) > 0; }
    void visit(const LoadNode* op) override {
      found = found || vars.count(op->buffer.get()) > 0;
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      found = found || vars.count(op->buffer.get()) > 0;
      IRVisitor::visit(op);
    }
  } finder(vars);
  finder.visit_stmt(s);
  return finder.found;
}

inline bool mentions_any(const Expr& e, const VarNodeSet& vars) {
  if (!e.defined()) return false;
  VarNodeSet used;
  collect_vars(e, used);
  for (const VarNode* v : used)
    if (vars.count(v)) return true;
  return false;
}

inline int64_t count_nodes(const Stmt& s) {
  struct Counter : IRVisitor {
    int64_t n = 0;
    void visit_expr(const Expr& e) override {
      if (e.defined()) ++n;
      IRVisitor::visit_expr(e);
    }
    void visit_stmt(const Stmt& st) override {
      if (st.defined()) ++n;
      IRVisitor::visit_stmt(st);
    }
  } counter;
  counter.visit_stmt(s);
  return counter.n;
}

/// Which values inside a virtual-thread body differ between virtual threads. A variable (a let,
/// a loop variable, a buffer allocated in the body) depends on what its definition or its stores
/// read, and on the conditions and loop bounds around them; the virtual thread variable starts
/// the chain. Shared buffers are left out: all virtual threads of a thread see one copy.
class VirtualThreadTouch : public IRVisitor {
 public:
  /// The touched variables (the thread variable included) and the buffers that must get one copy
  /// per virtual thread, with their flat sizes.
  struct Result {
    VarNodeSet touched;
    std::unordered_map<const VarNode*, Expr> expanded;  // buffer -> elements of one copy
    /// A buffer allocated in the body is handed to a call as a pointer (an extern function, a
    /// tensor intrinsic's code): its writes cannot be seen nor its copies addressed.
    bool opaque_private_buffer = false;
  };

  static Result analyze(const Var& thread_var, const Stmt& body) {
    VirtualThreadTouch t;
    t.visit_stmt(body);
    Result r;
    r.touched.insert(thread_var.get());
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [var, deps] : t.deps_) {
        if (r.touched.count(var)) continue;
        for (const VarNode* d : deps)
          if (r.touched.count(d)) {
            r.touched.insert(var);
            changed = true;
            break;
          }
      }
    }
    for (const auto& [buffer, size] : t.private_buffers_) {
      if (r.touched.count(buffer)) r.expanded.emplace(buffer, size);
      if (t.bare_vars_.count(buffer)) r.opaque_private_buffer = true;
    }
    return r;
  }

 protected:
  using IRVisitor::visit;

  // Loads and stores name their buffer outside the expressions visited: a buffer met here is
  // used as a pointer value.
  void visit(const VarNode* op) override { bare_vars_.insert(op); }
  void visit(const StoreNode* op) override {
    VarNodeSet& d = deps_[op->buffer.get()];
    collect_vars(op->value, d);
    collect_vars(op->index, d);
    if (op->predicate.defined()) collect_vars(op->predicate, d);
    d.insert(context_.begin(), context_.end());
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    VarNodeSet& d = deps_[op->var.get()];
    collect_vars(op->value, d);
    d.insert(context_.begin(), context_.end());
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    VarNodeSet bounds;
    collect_vars(op->min, bounds);
    collect_vars(op->extent, bounds);
    VarNodeSet& d = deps_[op->loop_var.get()];
    d.insert(bounds.begin(), bounds.end());
    d.insert(context_.begin(), context_.end());
    with_context(bounds, [&] { visit_stmt(op->body); });
  }
  void visit(const IfThenElseNode* op) override {
    VarNodeSet cond;
    collect_vars(op->condition, cond);
    with_context(cond, [&] {
      visit_stmt(op->then_case);
      visit_stmt(op->else_case);
    });
  }
  void visit(const AllocateNode* op) override {
    if (!is_shared_scope(op->scope)) {  // "shared" and "shared.dyn" are the block's, not a thread's
      const DType t = op->extents.empty() ? i32 : op->extents[0].dtype();
      Expr size = make_int_const(t, 1);
      for (const Expr& e : op->extents) size = size * cast(t, e);
      private_buffers_.emplace(op->buffer.get(), simplify(size));
    }
    IRVisitor::visit(op);
  }

 private:
  template <typename F>
  void with_context(const VarNodeSet& vars, F&& f) {
    std::vector<const VarNode*> added;
    for (const VarNode* v : vars)
      if (context_.insert(v).second) added.push_back(v);
    f();
    for (const VarNode* v : added) context_.erase(v);
  }

  std::unordered_map<const VarNode*, VarNodeSet> deps_;
  VarNodeSet context_;
  std::unordered_map<const VarNode*, Expr> private_buffers_;
  VarNodeSet bare_vars_;
};

/// One virtual thread's copy of a statement: the thread variable becomes `value` (a constant or a
/// serial loop's variable) and accesses of an expanded buffer move to this thread's copy of it.
class VirtualThreadCopy : public IRMutator {
 public:
  VirtualThreadCopy(const Var& thread_var, Expr value, Expr lane,
                    std::unordered_map<const VarNode*, Expr> expanded)
      : thread_var_(thread_var),
        value_(std::move(value)),
        lane_(std::move(lane)),
        expanded_(std::move(expanded)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op) override { return op == thread_var_.get() ? value_ : self(op); }
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    auto it = expanded_.find(op->buffer.get());
    if (it == expanded_.end()) return e;
    const auto* load = e.as<LoadNode>();
    return LoadNode::make(load->dtype.element_of(), load->buffer, offset(load->index, it->second),
                          load->predicate);
  }
  Stmt visit(const StoreNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = expanded_.find(op->buffer.get());
    if (it == expanded_.end()) return s;
    const auto* store = s.as<StoreNode>();
    return StoreNode::make(store->buffer, store->value, offset(store->index, it->second), store->predicate);
  }
  Stmt visit(const AllocateNode* op) override {
    // A buffer allocated inside the copied statement belongs to this copy alone.
    auto it = expanded_.find(op->buffer.get());
    if (it == expanded_.end()) return IRMutator::visit(op);
    Expr size = it->second;
    expanded_.erase(it);
    Stmt s = IRMutator::visit(op);
    expanded_.emplace(op->buffer.get(), size);
    return s;
  }

 private:
  Expr offset(const Expr& index, const Expr& size) const {
    const DType t = index.dtype().element_of();
    Expr base = simplify(cast(t, lane_) * cast(t, size));
    if (is_zero(base)) return index;
    if (index.dtype().lanes > 1) base = BroadcastNode::make(base, index.dtype().lanes);
    return index + base;
  }

  const Var& thread_var_;
  Expr value_, lane_;
  std::unordered_map<const VarNode*, Expr> expanded_;
};

/// Injects one virtual-thread loop into its body, which holds no virtual-thread loop any more.
class VirtualThreadInjector {
 public:
  VirtualThreadInjector(const ForNode* loop, int64_t count)
      : loop_(loop), count_(count), info_(VirtualThreadTouch::analyze(loop->loop_var, loop->body)) {}

  Stmt run() {
    // Copies of a buffer only code through pointers can reach would alias: keep the serial loop.
    if (info_.opaque_private_buffer)
      return ForNode::make(loop_->loop_var, loop_->min, loop_->extent, ForKind::Serial, loop_->body);
    return inject(loop_->body);
  }

 private:
  Stmt inject(const Stmt& s) {
    if (!s.defined() || !mentions_any(s, info_.touched)) return s;  // the same for every virtual thread
    switch (s.kind()) {
      case IRNodeKind::Seq: {
        std::vector<Stmt> parts;
        for (const Stmt& part : s.as<SeqNode>()->seq) parts.push_back(inject(part));
        return SeqNode::make(parts);
      }
      case IRNodeKind::For: {
        // Virtual threads are independent, so a loop that is the same for all of them may run
        // outside them: the copies go into its body.
        const ForNode* op = s.as<ForNode>();
        if (info_.touched.count(op->loop_var.get())) break;
        return ForNode::make(op->loop_var, op->min, op->extent, op->kind, inject(op->body), op->thread_tag,
                             op->annotations);
      }
      case IRNodeKind::IfThenElse: {
        const IfThenElseNode* op = s.as<IfThenElseNode>();
        if (mentions_any(op->condition, info_.touched)) break;
        return IfThenElseNode::make(op->condition, inject(op->then_case), inject(op->else_case));
      }
      case IRNodeKind::LetStmt: {
        const LetStmtNode* op = s.as<LetStmtNode>();
        if (info_.touched.count(op->var.get())) break;
        return LetStmtNode::make(op->var, op->value, inject(op->body));
      }
      case IRNodeKind::AttrStmt: {
        const AttrStmtNode* op = s.as<AttrStmtNode>();
        if (mentions_any(op->node, info_.touched) || mentions_any(op->value, info_.touched)) break;
        return AttrStmtNode::make(op->key, op->node, op->value, inject(op->body));
      }
      case IRNodeKind::AssertStmt: {
        const AssertStmtNode* op = s.as<AssertStmtNode>();
        if (mentions_any(op->condition, info_.touched)) break;
        return AssertStmtNode::make(op->condition, op->message, inject(op->body));
      }
      case IRNodeKind::Allocate: {
        const AllocateNode* op = s.as<AllocateNode>();
        bool extents_touched = false;
        for (const Expr& e : op->extents) extents_touched = extents_touched || mentions_any(e, info_.touched);
        if (extents_touched) break;
        auto it = info_.expanded.find(op->buffer.get());
        if (it == info_.expanded.end())
          return AllocateNode::make(op->buffer, op->dtype, op->extents, op->scope, inject(op->body));
        // One copy per virtual thread, side by side: thread t uses elements [t * size, (t + 1) * size).
        const Expr& size = it->second;
        Expr total = simplify(make_int_const(size.dtype(), count_) * size);
        return AllocateNode::make(op->buffer, op->dtype, {total}, op->scope, inject(op->body));
      }
      default: break;
    }
    return replicate(s);
  }

  /// V copies of a statement that differs between virtual threads, or a serial loop over them.
  Stmt replicate(const Stmt& s) const {
    const Var& v = loop_->loop_var;
    const DType t = v.dtype();
    if (count_nodes(s) * count_ > kMaxVirtualThreadCopyNodes) {
      Var lane = v.copy_with_name(v.name());
      Stmt body = VirtualThreadCopy(v, simplify(loop_->min + lane), lane, info_.expanded).mutate(s);
      return ForNode::make(lane, make_zero(t), make_int_const(t, count_), ForKind::Serial, body);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < count_; ++i) {
      Expr lane = make_int_const(t, i);
      Stmt copy = VirtualThreadCopy(v, simplify(loop_->min + lane), lane, info_.expanded).mutate(s);
      copies.push_back(FreshBinders().mutate(copy));
    }
    return SeqNode::make(copies);
  }

  const ForNode* loop_;
  int64_t count_;
  VirtualThreadTouch::Result info_;
};

/// One virtual-thread loop interleaved (other loops bound to a thread are kept).
inline Stmt inject_virtual_thread_loop(const ForNode* loop) {
  if (!is_virtual_thread_tag(loop->thread_tag)) return Stmt();
  const int64_t* extent = as_const_int(loop->extent);
  // A virtual thread count known only at run time cannot size the per-thread copies of the
  // buffers; running the virtual threads one after another is one of their legal interleavings.
  // An empty one runs nothing, not even the code that is the same for all threads.
  if (!extent || *extent <= 0)
    return ForNode::make(loop->loop_var, loop->min, loop->extent, ForKind::Serial, loop->body);
  return VirtualThreadInjector(loop, *extent).run();
}

}  // namespace detail

/// Replaces every virtual-thread loop of constant extent by its body with the virtual threads
/// interleaved (TVM's InjectVirtualThread semantics): code independent of the virtual thread is
/// emitted once, loops independent of it keep their place with the copies inside them, local and
/// global buffers allocated inside get one copy per virtual thread (shared buffers stay one, as
/// the virtual threads of a GPU thread share its block's shared memory). A virtual-thread loop of
/// non-constant extent becomes a serial loop.
/// Inner virtual threads go first: an outer one then sees their expanded buffers as its own data.
inline Stmt inject_virtual_thread(const Stmt& body) {
  return rewrite_loops(body, ForKind::ThreadBinding, detail::inject_virtual_thread_loop);
}

}  // namespace loom
