// The compiled Load of a kernel's global buffer: a checked load like any other, which also tells its
// warp the address it read, so the clock model can count the 32-byte sectors of the instruction.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include "loom/interp/expr_nodes.hpp"
#include "loom/sim/warp.hpp"

namespace loom::sim {

template <typename Codec>
class GlobalLoadLane final : public interp::CompiledExpr<typename Codec::Value> {
 public:
  GlobalLoadLane(int slot, interp::IntExprPtr index, interp::AccessSite site, DType element, int access)
      : slot_(slot), index_(std::move(index)), site_(std::move(site)), element_(element), access_(access) {}

  typename Codec::Value eval(interp::Frame& frame) const override {
    using Raw = typename Codec::Raw;
    const std::byte* address =
        interp::checked_address<Raw>(frame.buffers[slot_], index_->eval(frame), site_, element_);
    frame.lane->warp->access_global(access_, frame.lane->lane, address, static_cast<int>(sizeof(Raw)));
    Raw raw;
    std::memcpy(&raw, address, sizeof(raw));
    return Codec::decode(raw);
  }

 private:
  int slot_;
  interp::IntExprPtr index_;
  interp::AccessSite site_;
  DType element_;
  int access_;  // KernelInfo::global_access_id: one instruction per warp and statement
};

}  // namespace loom::sim
