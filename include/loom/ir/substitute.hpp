// Replaces variables by expressions throughout an expression or statement.
// Used to inline stages, to express root axes through split/fused loop variables, and more.
#pragma once

#include <unordered_map>

#include "loom/ir/mutator.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

using VarMap = std::unordered_map<const VarNode*, Expr>;

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? self(op) : it->second;
  }
  // Buffers named by Load/Store are variables too; they may only be renamed to variables.
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    auto it = map_.find(op->buffer.get());
    if (it == map_.end()) return e;
    const LoadNode* load = e.as<LoadNode>();
    return LoadNode::make(load->dtype.element_of(), Var(Ref<const ExprNode>(it->second.get())), load->index,
                          load->predicate);
  }
  Stmt visit(const StoreNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = map_.find(op->buffer.get());
    if (it == map_.end()) return s;
    const StoreNode* store = s.as<StoreNode>();
    return StoreNode::make(Var(Ref<const ExprNode>(it->second.get())), store->value, store->index,
                           store->predicate);
  }

 private:
  const VarMap& map_;
};

inline Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  Substituter s(map);
  return s.mutate(e);
}
inline Stmt substitute(const Stmt& st, const VarMap& map) {
  if (map.empty()) return st;
  Substituter s(map);
  return s.mutate(st);
}
inline Expr substitute(const Expr& e, const Var& var, const Expr& value) {
  VarMap map{{var.get(), value}};
  return substitute(e, map);
}
inline Stmt substitute(const Stmt& s, const Var& var, const Expr& value) {
  VarMap map{{var.get(), value}};
  return substitute(s, map);
}

/// True when `e` mentions any variable for which `pred(var)` holds.
template <typename Pred>
bool uses_var_if(const Expr& e, Pred&& pred) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (const VarNode* v = x.as<VarNode>(); v && pred(v)) found = true;
  });
  return found;
}
inline bool uses_var(const Expr& e, const Var& var) {
  return uses_var_if(e, [&](const VarNode* v) { return v == var.get(); });
}

}  // namespace loom
