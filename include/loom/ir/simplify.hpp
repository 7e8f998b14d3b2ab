// simplify(): expressions with a fresh Analyzer, and statements by a pass that learns each loop's
// range and each let's value on the way down, simplifies every expression under that knowledge
// and removes control flow it proves dead. Lowering runs it after most passes.
#pragma once

#include "loom/ir/stmt.hpp"
#include "loom/support/config.hpp"

namespace loom {

class Analyzer;

/// e with constants folded and rewritten by the Analyzer's rules (see ir/rewrite_simplify.hpp).
LOOM_DECL Expr simplify(const Expr& e);
/// s simplified: expressions as above, loops that never run and unused pure lets removed, branches
/// the Analyzer can decide taken.
LOOM_DECL Stmt simplify(const Stmt& s);
/// The same with `analyzer`'s knowledge of the variables around s.
LOOM_DECL Stmt simplify(const Stmt& s, Analyzer& analyzer);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/ir/impl/simplify.hpp"
#endif
