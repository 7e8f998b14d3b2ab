// Run-time checks of symbolic split factors: split(x, Factor{f}) or NParts{f} with f a variable
// cannot be checked when scheduling, so the lowered function asserts f > 0 before it runs.
#pragma once

#include <variant>

#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/support/error.hpp"

namespace loom {

/// Wraps body in one assertion per split whose factor or part count is not a constant: a value
/// <= 0 would make the outer loop's extent zero or negative, so nothing would be computed and the
/// call would return normally with its output unwritten.
inline Stmt assert_positive_split_factors(const ScheduleNode& sch, Stmt body) {
  for (const Ref<StageNode>& s : sch.stages) {
    for (const IterVarRelation& rel : s->relations) {
      const auto* split = std::get_if<SplitRelation>(&rel);
      if (!split) continue;
      const bool by_factor = split->factor.defined();
      const Expr& by = by_factor ? split->factor : split->nparts;
      if (!by.defined() || is_const(by)) continue;
      body = AssertStmtNode::make(by > make_zero(by.dtype()),
                                  cat("stage '", s->name(), "': the split of axis '", split->parent.name(),
                                      "' by ", by_factor ? "Factor{" : "NParts{", by,
                                      "} needs a positive value when the function runs; pass ", by, " > 0"),
                                  body);
    }
  }
  return body;
}

}  // namespace loom
