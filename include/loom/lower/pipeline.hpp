// The lowering recipe: Loom's passes in order, grouped in phases (docs/architecture.md). Each pass
// is a free function Stmt(Stmt, const PassContext&); user passes run after any phase.
#pragma once

#include <vector>

#include "loom/ir/simplify.hpp"
#include "loom/lower/hoist_guards.hpp"
#include "loom/lower/inject_virtual_thread.hpp"
#include "loom/lower/inline_stages.hpp"
#include "loom/lower/lower_state.hpp"
#include "loom/lower/pass_context.hpp"
#include "loom/lower/plan_shared_memory.hpp"
#include "loom/lower/split_factor_checks.hpp"
#include "loom/lower/thread_sync.hpp"
#include "loom/lower/unroll_loops.hpp"
#include "loom/lower/validate_schedule.hpp"
#include "loom/lower/vectorize_loops.hpp"
#include "loom/schedule/group.hpp"

namespace loom {

namespace passes {

/// Phase schedule: inline stages, check attachments, infer bounds, build the loop nests.
inline Stmt schedule_ops(Stmt, const PassContext& ctx) {
  LowerState& state = *ctx.state;
  ScheduleNode& sch = *state.schedule.get();
  resolve_groups(sch);
  inline_stages(sch);
  validate_attachments(sch);
  state.bounds = infer_bounds(sch);
  validate_thread_extents(sch, state.bounds);
  validate_shared_stages(sch, state.bounds);
  return assert_positive_split_factors(sch, loom::schedule_ops(sch, state.bounds, state.param_tensors));
}

/// Phase flatten: tensors to flat buffers.
inline Stmt storage_flatten(Stmt body, const PassContext& ctx) {
  return loom::storage_flatten(body, *ctx.state->schedule.get(), ctx.state->params);
}

/// Phase loops: virtual-thread loops become their interleaved threads (before barriers are placed).
inline Stmt inject_virtual_thread(Stmt body, const PassContext&) { return loom::inject_virtual_thread(body); }

/// Phase loops: fold constants, canonicalise indices, drop guards that always hold.
inline Stmt simplify(Stmt body, const PassContext& ctx) { return ctx.simplify ? loom::simplify(body) : body; }

/// Phase loops: guards leave the loops they do not depend on, where a schedule asks for it.
inline Stmt hoist_guards(Stmt body, const PassContext&) { return loom::hoist_guards(body); }

/// Phase loops: vectorized loops of constant extent become vector IR.
inline Stmt vectorize_loops(Stmt body, const PassContext&) { return loom::vectorize_loops(body); }

/// Phase memory: double-buffered allocations get two halves used alternately.
inline Stmt inject_double_buffer(Stmt body, const PassContext&) { return loom::inject_double_buffer(body); }

/// Phase memory: shared buffers never live together share bytes (before the barriers are placed).
inline Stmt merge_shared_memory(Stmt body, const PassContext&) { return loom::merge_shared_memory(body); }

/// Phase memory: barriers where threads of a GPU block share memory they write.
inline Stmt insert_thread_sync(Stmt body, const PassContext&) { return loom::insert_thread_sync(body); }

/// Phase loops: unrolled loops of constant extent become copies of their body.
inline Stmt unroll_loops(Stmt body, const PassContext&) { return loom::unroll_loops(body); }

}  // namespace passes

struct PhasePasses {
  Phase phase;
  std::vector<NamedPass> passes;
};

/// Loom's own passes, phase by phase.
inline std::vector<PhasePasses> default_pipeline() {
  return {
      {Phase::Schedule, {{"schedule_ops", passes::schedule_ops}}},
      {Phase::Flatten, {{"storage_flatten", passes::storage_flatten}}},
      {Phase::Loops,
       {{"inject_virtual_thread", passes::inject_virtual_thread},
        {"simplify", passes::simplify},
        {"hoist_guards", passes::hoist_guards},
        {"vectorize_loops", passes::vectorize_loops},
        {"unroll_loops", passes::unroll_loops},
        {"simplify", passes::simplify}}},
      {Phase::Memory,
       {{"inject_double_buffer", passes::inject_double_buffer},
        {"merge_shared_memory", passes::merge_shared_memory},
        {"insert_thread_sync", passes::insert_thread_sync},
        {"simplify", passes::simplify}}},
      {Phase::Device, {}},
  };
}

}  // namespace loom
