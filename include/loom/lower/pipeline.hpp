// The lowering recipe: Loom's passes in order, grouped in phases (docs/architecture.md). A pass of
// the recipe is a free function Stmt(Stmt, LowerState&, const PassContext&): the steps of phase
// schedule work on the lowering's copy of the schedule before any loop exists, the Device phase
// records the host/device split. User passes run after any phase (PassContext::add_pass).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/simplify.hpp"
#include "loom/lower/hoist_guards.hpp"
#include "loom/lower/inject_pipeline.hpp"
#include "loom/lower/inject_virtual_thread.hpp"
#include "loom/lower/inline_stages.hpp"
#include "loom/lower/lower_state.hpp"
#include "loom/lower/pass_context.hpp"
#include "loom/lower/plan_shared_memory.hpp"
#include "loom/lower/split_factor_checks.hpp"
#include "loom/lower/split_host_device.hpp"
#include "loom/lower/thread_sync.hpp"
#include "loom/lower/unroll_loops.hpp"
#include "loom/lower/validate_schedule.hpp"
#include "loom/lower/vectorize_loops.hpp"
#include "loom/schedule/group.hpp"

namespace loom {

namespace passes {

/// Phase schedule: members of a group (create_group) at the group's root take its placement.
inline Stmt resolve_groups(Stmt body, LowerState& state, const PassContext&) {
  loom::resolve_groups(*state.schedule.get());
  return body;
}

/// Phase schedule: stages marked compute_inline are substituted into their readers.
inline Stmt inline_stages(Stmt body, LowerState& state, const PassContext&) {
  loom::inline_stages(*state.schedule.get());
  return body;
}

/// Phase schedule: every compute_at names a loop of a stage that is itself computed somewhere.
inline Stmt validate_attachments(Stmt body, LowerState& state, const PassContext&) {
  loom::validate_attachments(*state.schedule.get());
  return body;
}

/// Phase schedule: the range of every loop and the region of every tensor that is realized.
inline Stmt infer_bounds(Stmt body, LowerState& state, const PassContext&) {
  state.bounds = loom::infer_bounds(*state.schedule.get());
  return body;
}

/// Phase schedule: loops bound to one thread tag agree on their extent.
inline Stmt validate_thread_extents(Stmt body, LowerState& state, const PassContext&) {
  loom::validate_thread_extents(*state.schedule.get(), state.bounds);
  return body;
}

/// Phase schedule: a shared-memory stage is computed inside its block, where its readers are.
inline Stmt validate_shared_stages(Stmt body, LowerState& state, const PassContext&) {
  loom::validate_shared_stages(*state.schedule.get(), state.bounds);
  return body;
}

/// Phase schedule: fragments are held by whole warps, the lanes on threadIdx.x.
inline Stmt validate_fragment_stages(Stmt body, LowerState& state, const PassContext&) {
  loom::validate_fragment_stages(*state.schedule.get(), state.bounds);
  return body;
}

/// Phase schedule: the loop nests of every stage, with Realize/Provide for tensors.
inline Stmt schedule_ops(Stmt, LowerState& state, const PassContext&) {
  return loom::schedule_ops(*state.schedule.get(), state.bounds, state.param_tensors);
}

/// Phase schedule: symbolic split factors are asserted positive before the loops run.
inline Stmt assert_positive_split_factors(Stmt body, LowerState& state, const PassContext&) {
  return loom::assert_positive_split_factors(*state.schedule.get(), std::move(body));
}

/// Phase flatten: tensors to flat buffers.
inline Stmt storage_flatten(Stmt body, LowerState& state, const PassContext&) {
  return loom::storage_flatten(body, *state.schedule.get(), state.params, state.entry, state.func.name);
}

/// Phase loops: virtual-thread loops become their interleaved threads (before barriers are placed).
inline Stmt inject_virtual_thread(Stmt body, LowerState&, const PassContext&) {
  return loom::inject_virtual_thread(body);
}

/// Phase loops: fold constants, canonicalise indices, drop guards that always hold.
inline Stmt simplify(Stmt body, LowerState&, const PassContext& ctx) {
  return ctx.simplify ? loom::simplify(body) : body;
}

/// Phase loops: guards leave the loops they do not depend on, where a schedule asks for it.
inline Stmt hoist_guards(Stmt body, LowerState&, const PassContext&) { return loom::hoist_guards(body); }

/// Phase loops: vectorized loops of constant extent become vector IR.
inline Stmt vectorize_loops(Stmt body, LowerState&, const PassContext&) {
  return loom::vectorize_loops(body);
}

/// Phase loops: unrolled loops of constant extent become copies of their body.
inline Stmt unroll_loops(Stmt body, LowerState&, const PassContext&) { return loom::unroll_loops(body); }

/// Phase memory: pipelined allocations get a slot per stage, filled ahead by cp.async where it can.
inline Stmt inject_pipeline(Stmt body, LowerState&, const PassContext&) {
  return loom::inject_pipeline(body);
}

/// Phase memory: double-buffered allocations get two halves used alternately.
inline Stmt inject_double_buffer(Stmt body, LowerState&, const PassContext&) {
  return loom::inject_double_buffer(body);
}

/// Phase memory: shared buffers never live together share bytes (before the barriers are placed).
inline Stmt merge_shared_memory(Stmt body, LowerState&, const PassContext&) {
  return loom::merge_shared_memory(body);
}

/// Phase memory: barriers where threads of a GPU block share memory they write.
inline Stmt insert_thread_sync(Stmt body, LowerState&, const PassContext&) {
  return loom::insert_thread_sync(body);
}

/// Phase device: for a GPU target, the host program and the kernels with their parameters and
/// launch dimensions (lower/split_host_device.hpp). The body itself is unchanged; the split
/// travels with the LoweredFunc to the CUDA backend.
inline Stmt split_host_device(Stmt body, LowerState& state, const PassContext& ctx) {
  if (!ctx.target || ctx.target->kind() == TargetKind::CPU) return body;
  LoweredFunc f = state.func;
  f.body = body;
  state.device = std::make_shared<const cuda::DeviceSplit>(cuda::split_host_device(f));
  return body;
}

}  // namespace passes

/// A pass of the recipe: it may change the lowering's state (LowerState) as well as the body.
struct PipelinePass {
  std::string name;
  std::function<Stmt(Stmt, LowerState&, const PassContext&)> fn;
};

struct PhasePasses {
  Phase phase;
  std::vector<PipelinePass> passes;
};

/// Loom's own passes, phase by phase: the whole recipe from a schedule to a function.
inline std::vector<PhasePasses> default_pipeline() {
  return {
      {Phase::Schedule,
       {{"resolve_groups", passes::resolve_groups},
        {"inline_stages", passes::inline_stages},
        {"validate_attachments", passes::validate_attachments},
        {"infer_bounds", passes::infer_bounds},
        {"validate_thread_extents", passes::validate_thread_extents},
        {"validate_shared_stages", passes::validate_shared_stages},
        {"validate_fragment_stages", passes::validate_fragment_stages},
        {"schedule_ops", passes::schedule_ops},
        {"assert_positive_split_factors", passes::assert_positive_split_factors}}},
      {Phase::Flatten, {{"storage_flatten", passes::storage_flatten}}},
      {Phase::Loops,
       {{"inject_virtual_thread", passes::inject_virtual_thread},
        {"simplify", passes::simplify},
        {"hoist_guards", passes::hoist_guards},
        {"vectorize_loops", passes::vectorize_loops},
        {"unroll_loops", passes::unroll_loops},
        {"simplify", passes::simplify}}},
      {Phase::Memory,
       {{"inject_pipeline", passes::inject_pipeline},
        {"inject_double_buffer", passes::inject_double_buffer},
        {"merge_shared_memory", passes::merge_shared_memory},
        {"insert_thread_sync", passes::insert_thread_sync},
        {"simplify", passes::simplify}}},
      {Phase::Device, {{"split_host_device", passes::split_host_device}}},
  };
}

}  // namespace loom
