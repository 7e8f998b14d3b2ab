// Counting statements of lowered IR in tests: barriers placed, stores into a buffer, loops left,
// with one visitor instead of one per question.
#pragma once

#include <loom/ir/visitor.hpp>

namespace loom::test {

/// How many statements of `s` (at any depth) satisfy `pred(const Stmt&)`.
template <typename Pred>
int count_stmts(const Stmt& s, Pred pred) {
  struct Counter : IRVisitor {
    Pred& pred;
    int n = 0;
    explicit Counter(Pred& p) : pred(p) {}
    void visit_stmt(const Stmt& st) override {
      if (st.defined() && pred(st)) ++n;
      IRVisitor::visit_stmt(st);
    }
  } counter(pred);
  counter.visit_stmt(s);
  return counter.n;
}

/// Barriers (__syncthreads) in `s`.
inline int count_barriers(const Stmt& s) {
  return count_stmts(s, [](const Stmt& st) { return st.as<BarrierNode>() != nullptr; });
}

}  // namespace loom::test
