// The compiled Load of a kernel's shared buffer: a checked load like any other, which also tells
// its warp about the access, for the bank model, the race detector and uninitialized reads.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include "loom/interp/expr_nodes.hpp"
#include "loom/sim/warp.hpp"

namespace loom::sim {

template <typename Codec>
class SharedLoadLane final : public interp::CompiledExpr<typename Codec::Value> {
 public:
  SharedLoadLane(int slot, interp::IntExprPtr index, interp::AccessSite site, DType element, int access,
                 int buffer)
      : slot_(slot),
        index_(std::move(index)),
        site_(std::move(site)),
        element_(element),
        access_(access),
        buffer_(buffer) {}

  typename Codec::Value eval(interp::Frame& frame) const override {
    using Raw = typename Codec::Raw;
    const int64_t index = index_->eval(frame);
    const std::byte* address = interp::checked_address<Raw>(frame.buffers[slot_], index, site_, element_);
    const LaneContext& lane = *frame.lane;
    lane.warp->load_shared(access_, buffer_, lane.lane, index * static_cast<int64_t>(sizeof(Raw)),
                           static_cast<int>(sizeof(Raw)));
    Raw raw;
    std::memcpy(&raw, address, sizeof(raw));
    return Codec::decode(raw);
  }

 private:
  int slot_;
  interp::IntExprPtr index_;
  interp::AccessSite site_;
  DType element_;
  int access_;  // KernelInfo::accesses index: one instruction per warp and statement
  int buffer_;  // KernelInfo::shared_buffers index
};

}  // namespace loom::sim
