// The grid-flag intrinsics (ir/grid_flags.hpp) in the GPU simulator. A wait on a flag not yet set
// suspends its block (BlockState::suspend_until) and lets the scheduler run other resident blocks
// (sim/grid_scheduler.hpp), which reports a wait that can never end as a deadlock. Signals record
// their cycle, and a wait completes no earlier than the signal it waited for.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <algorithm>

#include "loom/ir/grid_flags.hpp"
#include "loom/sim/warp_stmts.hpp"

namespace loom::sim {

/// loom.flag_signal / loom.flag_wait for the active lanes of a warp, each lane in its own frame.
class WarpGridFlag final : public WarpStmt {
 public:
  WarpGridFlag(bool signal, int flags_slot, IntExprPtr index, IntExprPtr value, interp::AccessSite site)
      : signal_(signal),
        slot_(flags_slot),
        index_(std::move(index)),
        value_(std::move(value)),
        site_(std::move(site)) {}

  void run(Warp& w, LaneMask mask) const override {
    int64_t index[kWarpSize], value[kWarpSize];
    for_each_lane(mask, [&](int l) {
      index[l] = index_->eval(w.frames[l]);
      value[l] = value_->eval(w.frames[l]);
    });
    w.end_statement();
    using Codec = interp::IntCodec<int32_t>;
    BlockState& b = *w.block;
    int64_t signalled = 0;  // the latest signal this warp's lanes waited for
    for_each_lane(mask, [&](int l) {
      const interp::BufferSlot& flags = w.frames[l].buffers[slot_];
      const std::byte* address = interp::checked_address<int32_t>(flags, index[l], site_, i32);
      if (signal_) {
        interp::store_element<Codec>(flags, index[l], value[l], site_, i32);
        b.flag_signals->signal(address, w.clock + w.costs->flag);  // visible after the fence
        if (w.races) w.races->signal(address, static_cast<int32_t>(value[l]), w.first_thread + l);
        return;
      }
      const FlagWait wait{address, static_cast<int32_t>(value[l]), &site_.buffer_name, index[l],
                          w.first_thread + l};
      while (!wait.satisfied()) b.suspend_until(wait);
      if (w.races) w.races->wait(address, wait.value, wait.thread);
      signalled = std::max(signalled, b.flag_signals->cycle_of(address));
    });
    if (signalled > w.clock) {
      b.waited_cycles += signalled - w.clock;
      w.clock = signalled;
    }
    w.clock += w.costs->flag;
  }

 private:
  bool signal_;
  int slot_;
  IntExprPtr index_, value_;
  interp::AccessSite site_;
};

/// Checks the arguments of a grid-flag call of kernel `kernel`: (flags, index, value), the flags a
/// buffer outside shared memory (`shared` says whether the simulator sees it as a shared buffer).
inline void check_grid_flag_call(const CallNode* call, const std::string& kernel, bool shared) {
  if (call->args.size() != 3)
    throw Error(cat("kernel ", kernel, ": ", call->name, " takes (flags, index, value), not ",
                    call->args.size(), " arguments"));
  const VarNode* flags = call->args[0].as<VarNode>();
  if (!flags || !flags->dtype.is_handle())
    throw Error(cat("kernel ", kernel, ": the first argument of ", call->name, " must be a buffer, not ",
                    to_string(call->args[0])));
  if (shared)
    throw Error(cat("kernel ", kernel, ": ", call->name, " on shared buffer '", flags->name,
                    "'; grid flags live in global memory (a buffer allocated outside the kernel)"));
}

}  // namespace loom::sim
