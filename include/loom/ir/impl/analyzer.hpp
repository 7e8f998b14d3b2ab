// Analyzer::simplify (ir/analyzer.hpp), defined after the rewriter (ir/rewrite_simplify.hpp) that
// asks the Analyzer what it knows: the two depend on each other.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/ir/analyzer.hpp");

#include "loom/ir/analyzer.hpp"
#include "loom/ir/rewrite_simplify.hpp"

namespace loom {

LOOM_DECL Expr Analyzer::simplify(const Expr& e) {
  RewriteSimplifier rewriter(*this);
  return rewriter.mutate(e);
}

}  // namespace loom
