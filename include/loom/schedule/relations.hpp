// How the loops of a stage derive from its operation's axes: split, fuse, rebase and
// singleton relations between IterVars, recorded in the order the schedule applied them.
#pragma once

#include <variant>
#include <vector>

#include "loom/ir/iter_var.hpp"

namespace loom {

/// parent = outer * factor + inner. Exactly one of factor and nparts is given.
struct SplitRelation {
  /// The loop split, and the two loops it became.
  /// @{
  IterVar parent, outer, inner;
  /// @}
  /// The inner loop's extent, when split by factor (else undefined).
  Expr factor;
  /// The outer loop's extent, when split by nparts (else undefined).
  Expr nparts;
};

/// fused = outer * extent(inner) + inner.
struct FuseRelation {
  /// The two loops fused, and the loop they became.
  /// @{
  IterVar outer, inner, fused;
  /// @}
};

/// rebased = parent - min(parent): the same loop starting at zero.
struct RebaseRelation {
  /// The loop rebased, and the zero-based loop that replaced it.
  /// @{
  IterVar parent, rebased;
  /// @}
};

/// A loop of extent one created out of nothing (fusing zero axes).
struct SingletonRelation {
  /// The new loop.
  IterVar iv;
};

/// One step of a stage's loop history: split, fuse, rebase or a singleton loop.
using IterVarRelation = std::variant<SplitRelation, FuseRelation, RebaseRelation, SingletonRelation>;

}  // namespace loom
