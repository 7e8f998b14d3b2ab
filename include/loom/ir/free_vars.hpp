// The free variables of a statement or expression: those it uses without binding them, in the
// order of their first use. lower() takes a function's size variables from them, the host/device
// split a kernel's parameters (so their order is the kernel's parameter order), and a kernel's
// argument slots and the interpreter's frame the variables of buffer shapes. One collector, so
// that all of them agree on what binds a variable.
#pragma once

#include <unordered_set>
#include <vector>

#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

/// What counts as a use besides a variable of integer or float type.
struct FreeVarOptions {
  /// Handle-typed variables (buffer data pointers) too. Size variables are values, so lower()
  /// leaves buffers out; a kernel's parameters include the buffers it touches.
  bool handles = false;
  /// The buffer of every Load and Store, as a use before the access's index and value. It is a
  /// field of the access, not one of its expressions, so a walk over expressions never meets it.
  bool buffer_accesses = false;
};

/// Walks statements and expressions and records each variable used where the walk has not met
/// its binding. The binding forms: a For's loop variable, a LetStmt's and a Let's variable, an
/// Allocate's buffer, and the combiner parameters (lhs, rhs) of a thread_allreduce call
/// (ir/thread_allreduce.hpp). What a binding computes from (a loop's min and extent, a let's
/// value, an allocation's extents) is visited before its variable is bound. Lowered IR binds a
/// Var at one place, so the bound set is not scoped: a variable bound earlier in the walk stays
/// bound. Subclasses override visits (calling these) to record more, e.g. which buffers are
/// written.
class FreeVarCollector : public IRVisitor {
 public:
  explicit FreeVarCollector(FreeVarOptions options = {}) : options_(options) {}

  /// The free variables met so far, in order of first use; walks accumulate.
  const std::vector<Var>& vars() const { return free_; }

 protected:
  using IRVisitor::visit;

  void use(const VarNode* v) {
    if (!options_.handles && v->dtype.is_handle()) return;
    if (!bound_.count(v) && seen_.insert(v).second) free_.push_back(Var(Ref<const ExprNode>(v)));
  }
  void bind(const VarNode* v) { bound_.insert(v); }

  void visit(const VarNode* op) override { use(op); }
  void visit(const LoadNode* op) override {
    if (options_.buffer_accesses) use(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    if (options_.buffer_accesses) use(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    bind(op->loop_var.get());
    visit_stmt(op->body);
  }
  void visit(const LetStmtNode* op) override {
    visit_expr(op->value);
    bind(op->var.get());
    visit_stmt(op->body);
  }
  void visit(const LetNode* op) override {
    visit_expr(op->value);
    bind(op->var.get());
    visit_expr(op->body);
  }
  void visit(const AllocateNode* op) override {
    for (const Expr& e : op->extents) visit_expr(e);
    bind(op->buffer.get());
    visit_stmt(op->body);
  }
  void visit(const CallNode* op) override {
    // The combiner's parameters are bound within the call; its result buffers are stored to, a
    // use ahead of the arguments (they are among the arguments too, so a walk meets them again).
    if (op->name == intrinsic::thread_allreduce) {
      const ThreadAllreduce r = ThreadAllreduce::decode(op);
      for (const Var& v : r.lhs) bind(v.get());
      for (const Var& v : r.rhs) bind(v.get());
      for (const Var& v : r.results) use(v.get());
    }
    IRVisitor::visit(op);
  }

 private:
  FreeVarOptions options_;
  std::vector<Var> free_;
  std::unordered_set<const VarNode*> bound_, seen_;
};

/// The free variables of `s`, in order of first use.
inline std::vector<Var> free_vars(const Stmt& s, FreeVarOptions options = {}) {
  FreeVarCollector c(options);
  c.visit_stmt(s);
  return c.vars();
}

/// The free variables of `e`, in order of first use.
inline std::vector<Var> free_vars(const Expr& e, FreeVarOptions options = {}) {
  FreeVarCollector c(options);
  c.visit_expr(e);
  return c.vars();
}

/// Appends the free variables of `e` that are not in `seen` to `out`, in order of first use,
/// and adds them to `seen`: one list over several expressions (the shapes of a function's buffers).
inline void append_free_vars(const Expr& e, std::vector<Var>& out, std::unordered_set<const VarNode*>& seen,
                             FreeVarOptions options = {}) {
  for (const Var& v : free_vars(e, options))
    if (seen.insert(v.get()).second) out.push_back(v);
}

}  // namespace loom
