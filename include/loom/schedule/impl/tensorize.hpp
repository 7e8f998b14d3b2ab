// Stage::tensorize: marks the loop nest under an axis to be replaced by a tensor intrinsic.
// Whether the nest really computes what the intrinsic computes is checked when lowering
// (lower/tensorize.hpp), when the loops' extents are known.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include "loom/schedule/axis_lookup.hpp"

namespace loom {

LOOM_DECL Stage& Stage::tensorize(const IterVar& iv_in, const TensorIntrin& intrin) {
  IterVar iv = resolve(iv_in, "tensorize");
  if (!intrin) throw ScheduleError(cat("tensorize: stage '", name(), "' was given an undefined intrinsic"));
  if (node_->op->kind != OpKind::Compute)
    throw ScheduleError(cat("tensorize: stage '", name(), "' is a ", op_kind_name(node_->op->kind),
                            "; only compute stages can be tensorized"));
  for (const auto& [other, attr] : node_->iter_var_attrs)
    if (other != iv.get() && attr.tensor_intrin)
      throw ScheduleError(cat("tensorize: stage '", name(),
                              "' is already tensorized at another loop; one intrinsic per stage"));
  node_->attr_mut(iv).tensor_intrin = intrin;
  return *this;
}

}  // namespace loom
