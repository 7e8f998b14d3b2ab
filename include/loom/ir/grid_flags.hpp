// Flags in global memory through which the blocks of one GPU kernel hand data to each other
// (Stream-K's partial tiles): a release-signal and an acquire-wait, as Loom intrinsics that the
// CUDA codegen and the GPU simulator implement and the CPU interpreter rejects.
#pragma once

#include <string>

#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {

namespace intrinsic {
/// loom.flag_signal(flags, index, value): makes every global write the block did before (all its
/// threads, after a barrier) visible device-wide, then sets the i32 flags[index] = value.
inline constexpr const char* flag_signal = "loom.flag_signal";
/// loom.flag_wait(flags, index, value): spins until the i32 flags[index] == value; global reads
/// after it see what the signalling block wrote before its signal.
inline constexpr const char* flag_wait = "loom.flag_wait";
}  // namespace intrinsic

inline bool is_grid_flag_call(const CallNode* call) {
  return call && (call->name == intrinsic::flag_signal || call->name == intrinsic::flag_wait);
}

namespace detail {
inline Stmt grid_flag_call(const char* name, const Var& flags, Expr index, Expr value) {
  if (!flags.defined() || !flags.dtype().is_handle())
    throw Error(cat(name, ": the flags must be a buffer (a handle variable of an i32 allocation)"));
  return EvaluateNode::make(CallNode::make(
      i32, name, {flags, cast(i32, std::move(index)), cast(i32, std::move(value))}, CallKind::Intrinsic));
}
}  // namespace detail

/// Sets flags[index] = value with release semantics (after a device-wide fence). Call it from one
/// thread, after a barrier that follows the block's writes of the data the flag publishes.
inline Stmt flag_signal(const Var& flags, Expr index, Expr value) {
  return detail::grid_flag_call(intrinsic::flag_signal, flags, std::move(index), std::move(value));
}

/// Waits until flags[index] == value (acquire loads). A thread that reads the published data
/// either waits itself, or passes a barrier after a thread of its block that waited (one thread
/// spinning and a barrier, as Stream-K's fixup does, keeps the other threads off the flag).
inline Stmt flag_wait(const Var& flags, Expr index, Expr value) {
  return detail::grid_flag_call(intrinsic::flag_wait, flags, std::move(index), std::move(value));
}

}  // namespace loom
