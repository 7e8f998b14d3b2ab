// A warp intrinsic (te/warp_intrinsic.hpp) in the simulator. Every lane's operand addresses are
// checked (bounds, alignment, memory space); its shared and global accesses go to the bank model,
// race detector and clock like ordinary loads and stores. A collective intrinsic (mma, ldmatrix)
// then runs its semantics function over the 32 lanes; cp.async's copy, commit and wait are
// modelled here, with the copies landing at the wait (sim/async_copy.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "loom/sim/async_copy.hpp"
#include "loom/sim/warp_stmts.hpp"
#include "loom/te/warp_intrinsic.hpp"

namespace loom::sim {

class WarpIntrinsicStmt final : public WarpStmt {
 public:
  struct Operand {
    const WarpOperandSpec* spec = nullptr;
    int slot = 0;      // the buffer's frame slot (not for a value operand)
    IntExprPtr index;  // the element index, or the value of a value operand
    interp::AccessSite site;
    int element_bytes = 1;
    int shared = -1;                          // KernelInfo::shared_buffers index, for a shared operand
    int read_access = -1, write_access = -1;  // shared access ids, or the global access id in read_access
  };

  WarpIntrinsicStmt(const WarpIntrinsic& intrinsic, std::vector<Operand> operands, std::string kernel)
      : intrinsic_(intrinsic), operands_(std::move(operands)), kernel_(std::move(kernel)) {}

  void run(Warp& w, LaneMask mask) const override {
    if (intrinsic_.collective && (w.num_lanes != kWarpSize || mask != w.full_mask)) {
      throw Error(cat("kernel ", kernel_, ": warp intrinsic ", intrinsic_.name, " is executed by ",
                      describe_lanes(mask), " of warp ", w.index, " (threads ", w.first_thread, "-",
                      w.first_thread + w.num_lanes - 1, ") of block ", w.block->index.str(),
                      "; all 32 lanes of a warp execute it together (.sync.aligned): give the block a "
                      "multiple of 32 threads and call it outside branches whose condition differs "
                      "between the lanes of a warp"));
    }
    WarpLanes lanes;
    int64_t dst_offset[kWarpSize] = {};  // operand 0's byte offset per lane, for issue()
    for (size_t o = 0; o < operands_.size(); ++o)
      if (operands_[o].spec->value)
        for_each_lane(mask, [&](int l) {
          lanes.set_value(l, static_cast<int>(o), operands_[o].index->eval(w.frames[l]));
        });
    for (size_t o = 0; o < operands_.size(); ++o) {
      const Operand& op = operands_[o];
      const WarpOperandSpec& spec = *op.spec;
      if (spec.value) continue;
      for_each_lane(mask & spec.lanes, [&](int l) {
        const int bytes = spec.bytes_from >= 0 ? used_bytes(lanes, l, spec) : spec.bytes;
        if (bytes == 0) return;  // reads nothing (a zero-filling cp.async)
        const interp::BufferSlot& slot = w.frames[l].buffers[op.slot];
        const int64_t index = op.index->eval(w.frames[l]);
        const int64_t offset = index * op.element_bytes;
        if (offset < slot.begin_byte || offset + bytes > slot.end_byte)
          throw Error(cat("kernel ", kernel_, ": operand ", spec.name, " of warp intrinsic ", intrinsic_.name,
                          " in lane ", l, " of warp ", w.index, " of block ", w.block->index.str(),
                          " uses bytes ", offset, " to ", offset + bytes - 1, " of buffer '",
                          op.site.buffer_name, "', which holds bytes ", slot.begin_byte, " to ",
                          slot.end_byte - 1, " (index ", to_string(op.site.index), " = ", index, ")"));
        if (offset % spec.align != 0)
          throw Error(cat("kernel ", kernel_, ": operand ", spec.name, " of warp intrinsic ", intrinsic_.name,
                          " in lane ", l, " is at byte ", offset, " of buffer '", op.site.buffer_name,
                          "', not a multiple of ", spec.align, " bytes as the instruction requires (index ",
                          to_string(op.site.index), " = ", index, ")"));
        // A cp.async's write to shared memory happens when it lands (complete() below).
        if (op.shared >= 0) {
          if (spec.reads) w.load_shared(op.read_access, op.shared, l, offset, bytes);
          if (spec.writes && intrinsic_.async != WarpAsyncRole::Copy)
            w.store_shared(op.write_access, op.shared, l, offset, bytes);
        } else if (op.read_access >= 0) {
          w.access_global(op.read_access, l, slot.data + offset, bytes);
        }
        lanes.set(l, static_cast<int>(o), slot.data + offset);
        if (o == 0) dst_offset[l] = offset;
      });
    }
    w.end_statement(ops_);
    w.clock += intrinsic_.cycles;
    switch (intrinsic_.async) {
      case WarpAsyncRole::None: intrinsic_.simulate(lanes); break;
      case WarpAsyncRole::Copy: issue(w, mask, lanes, dst_offset); break;
      case WarpAsyncRole::Commit: for_each_lane(mask, [&](int l) { ++w.async.committed[l]; }); break;
      case WarpAsyncRole::Wait:
        for_each_lane(mask, [&](int l) { complete(w, l, w.async.committed[l] - intrinsic_.wait_groups); });
        break;
    }
  }

 private:
  int used_bytes(const WarpLanes& lanes, int lane, const WarpOperandSpec& spec) const {
    const int64_t v = lanes.value(lane, spec.bytes_from);
    if (v < 0 || v > spec.bytes)
      throw Error(cat("kernel ", kernel_, ": warp intrinsic ", intrinsic_.name, " in lane ", lane, " reads ",
                      v, " bytes of its ", spec.name, "; it reads 0 to ", spec.bytes));
    return static_cast<int>(v);
  }

  /// cp.async: the source bytes are read now, and land with the lane's open group.
  void issue(Warp& w, LaneMask mask, const WarpLanes& lanes, const int64_t* dst_offset) const {
    const Operand& dst = operands_[0];
    const int bytes = dst.spec->bytes;
    for_each_lane(mask, [&](int l) {
      AsyncCopy c;
      c.group = w.async.committed[l];
      c.shared = dst.shared;
      c.offset = dst_offset[l];
      c.dst = lanes.at(l, 0);
      c.bytes = bytes;
      c.src_bytes = used_bytes(lanes, l, *operands_[1].spec);
      if (c.src_bytes > 0) std::memcpy(c.data, lanes.at(l, 1), static_cast<size_t>(c.src_bytes));
      w.block->begin_async_write(c.shared, c.offset, bytes, w.first_thread + l);
      w.async.in_flight[l].push_back(c);
      w.async.any = true;
    });
  }

  /// Lands lane l's copies of the groups before `group`, in issue order.
  void complete(Warp& w, int l, int64_t group) const {
    std::vector<AsyncCopy>& copies = w.async.in_flight[l];
    size_t kept = 0;
    for (AsyncCopy& c : copies) {
      if (c.group >= group) {
        copies[kept++] = c;
        continue;
      }
      w.block->end_async_write(c.shared, c.offset, c.bytes);
      std::memcpy(c.dst, c.data, static_cast<size_t>(c.bytes));
      w.block->write_shared(c.shared, c.offset, c.bytes, w.first_thread + l);
    }
    copies.resize(kept);
  }

  const WarpIntrinsic& intrinsic_;
  std::vector<Operand> operands_;
  std::string kernel_;
};

}  // namespace loom::sim
