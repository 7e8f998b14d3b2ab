// rewrite_loops: the walk shared by the passes that rewrite each loop of one kind (unrolled,
// vectorized, virtual-thread, serial loops with a double-buffered stage). Loops are rewritten
// innermost first, so a rewrite sees its body with every inner loop already done.
#pragma once

#include <functional>
#include <utility>

#include "loom/ir/mutator.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {

/// What to do with one loop of the kind asked for: the statement that replaces it, or an
/// undefined Stmt to keep the loop as it is (with its body rewritten).
using LoopRewrite = std::function<Stmt(const ForNode* loop)>;

namespace detail {

class LoopKindRewriter : public IRMutator {
 public:
  LoopKindRewriter(ForKind kind, const LoopRewrite& rewrite) : kind_(kind), rewrite_(rewrite) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op) override {
    Stmt inner = IRMutator::visit(op);
    const auto* loop = inner.as<ForNode>();
    if (!loop || loop->kind != kind_) return inner;
    Stmt out = rewrite_(loop);
    return out.defined() ? out : inner;
  }

 private:
  ForKind kind_;
  const LoopRewrite& rewrite_;
};

}  // namespace detail

/// Replaces every loop of `kind` in `body` by what `rewrite` returns for it, innermost first.
inline Stmt rewrite_loops(const Stmt& body, ForKind kind, const LoopRewrite& rewrite) {
  return detail::LoopKindRewriter(kind, rewrite).mutate(body);
}

}  // namespace loom
