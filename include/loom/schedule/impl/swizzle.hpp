// The swizzle primitive: s[stage].swizzle(bits, base, shift) lays out a shared-memory buffer with
// CuTe's Swizzle<B,M,S> on its flat element offsets (see swizzle_layout.hpp); storage_flatten
// applies it to every Load and Store of the buffer, so CUDA code and the simulator both see it.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/schedule/axis_lookup.hpp"
#include "loom/schedule/graph.hpp"
#include "loom/schedule/schedule.hpp"

namespace loom {

LOOM_DECL Stage& Stage::swizzle(int bits, int base, int shift) {
  StageNode& s = *node_;
  detail::check_not_group(s, "swizzle");
  const std::string where = cat("swizzle(", bits, ", ", base, ", ", shift, ") on stage '", s.name(), "'");
  if (s.op->kind != OpKind::Compute)
    throw ScheduleError(cat(
        where, ": the stage is not a compute (", s.is_placeholder() ? "a placeholder" : "an extern or scan",
        "); only buffers the schedule allocates can be swizzled, e.g. a cache_read(..., \"shared\")"));
  if (!is_shared_scope(s.scope))
    throw ScheduleError(
        cat(where, ": its buffer is in scope '", s.scope.empty() ? scope::global : s.scope,
            "', but a swizzle spreads a shared-memory tile over the banks; make it shared with "
            "cache_read(tensor, \"shared\", readers) or set_scope(\"shared\")"));
  if (bits < 1 || bits > 16)
    throw ScheduleError(cat(where, ": bits (B, how many offset bits change) must be in [1, 16], got ", bits));
  if (base < 0 || base > 16)
    throw ScheduleError(
        cat(where, ": base (M, log2 of the elements that move together) must be in [0, 16], got ", base));
  if (shift < bits || base + shift + bits > 40)
    throw ScheduleError(cat(where, ": shift (S) must be at least bits (", bits,
                            ") so that the bits it reads do not overlap the bits it changes, got ", shift));
  if (!s.storage_align.empty())
    throw ScheduleError(cat(where,
                            ": the stage already has storage_align padding; use either padding or a "
                            "swizzle for one buffer, not both"));
  s.swizzle = SwizzleLayout{bits, base, shift};
  return *this;
}

}  // namespace loom
