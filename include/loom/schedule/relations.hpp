// How the loops of a stage derive from its operation's axes: split, fuse, rebase and
// singleton relations between IterVars, recorded in the order the schedule applied them.
#pragma once

#include <variant>
#include <vector>

#include "loom/ir/iter_var.hpp"

namespace loom {

/// parent = outer * factor + inner. Exactly one of factor and nparts is given.
struct SplitRelation {
  IterVar parent, outer, inner;
  Expr factor;
  Expr nparts;
};

/// fused = outer * extent(inner) + inner.
struct FuseRelation {
  IterVar outer, inner, fused;
};

/// rebased = parent - min(parent): the same loop starting at zero.
struct RebaseRelation {
  IterVar parent, rebased;
};

/// A loop of extent one created out of nothing (fusing zero axes).
struct SingletonRelation {
  IterVar iv;
};

/// One step of a stage's loop history: split, fuse, rebase or a singleton loop.
using IterVarRelation = std::variant<SplitRelation, FuseRelation, RebaseRelation, SingletonRelation>;

}  // namespace loom
