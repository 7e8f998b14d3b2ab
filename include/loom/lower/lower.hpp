// lower(): turns a schedule and its arguments into a LoweredFunc by running the pipeline,
// with IR dumps after every pass (LOOM_DUMP_IR=dir) and pass timing (LOOM_TIME_PASSES=1).
#pragma once

#include <string>
#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/lower/pass_context.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// An argument of the lowered function: a tensor, or a symbolic size passed as a scalar.
struct LowerArg {
  /// The tensor, or undefined for a scalar argument.
  Tensor tensor;
  /// The size variable, or undefined for a tensor argument.
  Var var;
  /// A tensor argument (a buffer parameter), or a size variable passed as a scalar parameter.
  /// @{
  LowerArg(const Tensor& t) : tensor(t) {}
  LowerArg(const Var& v) : var(v) {}
  /// @}
};

/// Lowers schedule `s` to a function of `args` (tensors and scalar size variables): runs the
/// pipeline (lower/pipeline.hpp) phase by phase, with `ctx`'s own passes after the phases they name.
LOOM_DECL LoweredFunc lower(const Schedule& s, const std::vector<LowerArg>& args,
                            const std::string& name = "main", PassContext ctx = PassContext());

namespace detail {
/// lower() for a caller: `entry` ("lower" or "build") is the call its messages name.
LOOM_DECL LoweredFunc lower_for(const char* entry, const Schedule& s, const std::vector<LowerArg>& args,
                                const std::string& name, PassContext ctx);
}  // namespace detail

/// Runs the recipe from phase `from` (loops, memory or device) on a function built by hand, such as
/// lib's Stream-K kernel, with `ctx`'s passes after those phases; its size_vars are kept as given.
LOOM_DECL LoweredFunc lower_from(LoweredFunc f, Phase from, PassContext ctx = PassContext());

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/lower/impl/lower.hpp"
#endif
