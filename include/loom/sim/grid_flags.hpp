// The grid-flag intrinsics (ir/grid_flags.hpp) in the GPU simulator. Blocks run one after another
// in increasing index, so a wait can only succeed on a flag an earlier block set; a wait on an
// unset flag would never end, and is reported as an error that explains the block order instead.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "loom/ir/grid_flags.hpp"
#include "loom/sim/warp_stmts.hpp"

namespace loom::sim {

/// loom.flag_signal / loom.flag_wait for the active lanes of a warp, each lane in its own frame.
class WarpGridFlag final : public WarpStmt {
 public:
  WarpGridFlag(bool signal, int flags_slot, IntExprPtr index, IntExprPtr value, interp::AccessSite site,
               std::string kernel)
      : signal_(signal),
        slot_(flags_slot),
        index_(std::move(index)),
        value_(std::move(value)),
        site_(std::move(site)),
        kernel_(std::move(kernel)) {}

  void run(Warp& w, LaneMask mask) const override {
    int64_t index[kWarpSize], value[kWarpSize];
    for_each_lane(mask, [&](int l) {
      index[l] = index_->eval(w.frames[l]);
      value[l] = value_->eval(w.frames[l]);
    });
    w.end_statement();
    using Codec = interp::IntCodec<int32_t>;
    for_each_lane(mask, [&](int l) {
      const interp::BufferSlot& flags = w.frames[l].buffers[slot_];
      if (signal_) {
        interp::store_element<Codec>(flags, index[l], value[l], site_, i32);
        return;
      }
      const int64_t seen = interp::load_element<Codec>(flags, index[l], site_, i32);
      if (seen == static_cast<int32_t>(value[l])) return;
      throw Error(
          cat("kernel ", kernel_, ": block ", w.block->index.str(), " (thread ", w.first_thread + l,
              ") waits until ", site_.buffer_name, "[", index[l], "] == ", value[l], " (",
              intrinsic::flag_wait, "), but it is ", seen,
              " and no block before it set it. The simulator runs blocks one after another in increasing "
              "index, so a block may only wait on flags that lower-numbered blocks signal (on a GPU the "
              "wait would hang unless the signalling block is co-resident): make the block that waits the "
              "highest-numbered of the blocks it waits for, or check that the flags start at 0"));
    });
  }

 private:
  bool signal_;
  int slot_;
  IntExprPtr index_, value_;
  interp::AccessSite site_;
  std::string kernel_;
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
