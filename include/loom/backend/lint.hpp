// loom::lint: the silent performance cliffs of a CPU kernel, read from its lowered IR. Each finding
// names the kernel, the loop (as the printed IR names it: the schedule's axis names) and the
// buffer, says what the code does there and how to avoid it. build() prints them to stderr, one
// "loom lint:" line each, when LOOM_LINT=1. The checks:
//   masked-vector      a vector store guarded on every iteration of its loop (the vectorized
//                      extent is not a multiple of the lanes, or a guard varies across lanes)
//   scalar-vector-loop a loop marked vectorized whose body could not become vector code
//   scalar-math        a math call in vector code that runs as one libm call per lane
//   strided-access     a vector access whose lanes are not contiguous (a gather or scatter; not
//                      a few contiguous runs, which load whole: ir/lane_runs.hpp), or
//                      an innermost serial loop that steps through memory by more than one element
//   parallel-few-iterations  a parallel loop with fewer iterations than the thread pool has threads
// Only CPU kernels are linted: a function lowered for a GPU target gives no findings (use
// sim_report() for bank conflicts and coalescing there).
#pragma once

#include <string>
#include <vector>

#include "loom/lower/lower.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// One finding of lint(): which kernel, which check, which loop, and a message with the fix.
struct LintFinding {
  std::string kernel;   ///< the lowered function's name
  std::string check;    ///< one of the check names above
  std::string loop;     ///< the loop it concerns
  std::string message;  ///< what happens there and what to do, starting with "kernel '<name>': "
};

/// The findings for a lowered function; `threads` is the parallel loops' thread count (0: the
/// thread pool's, LOOM_NUM_THREADS or the machine's cores).
LOOM_DECL std::vector<LintFinding> lint(const LoweredFunc& f, int threads = 0);

/// Lowers `s` with `args` (as lower() does) and lints the result.
LOOM_DECL std::vector<LintFinding> lint(const Schedule& s, const std::vector<LowerArg>& args,
                                        const std::string& name = "main");

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/backend/impl/lint.hpp"
#endif
