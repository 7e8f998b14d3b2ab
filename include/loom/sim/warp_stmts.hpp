// Compiled statements of a kernel region: each runs for a whole warp under an active-lane mask,
// evaluating its expressions (ordinary compiled expressions) in each active lane's own frame.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/interp/stmt_nodes.hpp"
#include "loom/sim/warp.hpp"

namespace loom::sim {

using interp::ExprPtr;
using interp::Frame;
using interp::IntExprPtr;

class WarpStmt {
 public:
  virtual ~WarpStmt() = default;
  /// Runs the statement for the lanes of `mask` (never empty) of warp w. A statement first
  /// evaluates its expressions in every active lane, then ends that instruction (end_statement),
  /// then acts: that order is the warp's lock step, and it groups each shared access's lanes.
  virtual void run(Warp& w, LaneMask mask) const = 0;

  /// The arithmetic operations of the statement's own expressions (sim/op_count.hpp), which
  /// its end_statement charges to the warp's clock.
  void set_arith_ops(int ops) { ops_ = ops; }

 protected:
  int ops_ = 0;
};
using WarpStmtPtr = std::unique_ptr<const WarpStmt>;

class WarpNoOp final : public WarpStmt {
 public:
  void run(Warp&, LaneMask) const override {}
};

class WarpSeq final : public WarpStmt {
 public:
  explicit WarpSeq(std::vector<WarpStmtPtr> stmts) : stmts_(std::move(stmts)) {}
  void run(Warp& w, LaneMask mask) const override {
    for (const WarpStmtPtr& s : stmts_) s->run(w, mask);
  }

 private:
  std::vector<WarpStmtPtr> stmts_;
};

/// A loop not bound to a launch index. Bounds are evaluated per lane once, at entry; iteration i
/// runs with the lanes whose trip count exceeds i, so lanes with shorter loops drop out and the
/// others go on together (they reconverge after the loop).
class WarpLoop final : public WarpStmt {
 public:
  WarpLoop(int slot, IntExprPtr min, IntExprPtr extent, WarpStmtPtr body)
      : slot_(slot), min_(std::move(min)), extent_(std::move(extent)), body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    int64_t mins[kWarpSize], extents[kWarpSize], longest = 0;
    for_each_lane(mask, [&](int l) {
      mins[l] = min_->eval(w.frames[l]);
      extents[l] = extent_->eval(w.frames[l]);
      longest = std::max(longest, extents[l]);
    });
    w.end_statement(ops_);
    for (int64_t i = 0; i < longest; ++i) {
      w.clock += w.costs->loop_iteration;
      LaneMask active = 0;
      for_each_lane(mask, [&](int l) {
        if (i >= extents[l]) return;
        active |= 1u << l;
        w.frames[l].ints[slot_] = mins[l] + i;
      });
      body_->run(w, active);
    }
  }

 private:
  int slot_;
  IntExprPtr min_, extent_;
  WarpStmtPtr body_;
};

/// A loop bound to threadIdx or blockIdx: not a loop. Its variable is the lane's thread (or the
/// block's) index plus the loop's min, and the body runs where that index is below the extent.
class WarpLaunchIndex final : public WarpStmt {
 public:
  WarpLaunchIndex(int slot, int launch_index, int loop, IntExprPtr min, WarpStmtPtr body)
      : slot_(slot), launch_index_(launch_index), loop_(loop), min_(std::move(min)), body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    const int64_t extent = w.block->loop_extents[static_cast<size_t>(loop_)];
    LaneMask active = 0;
    for_each_lane(mask, [&](int l) {
      const int64_t index = launch_index_ < kFirstBlockIndex
                                ? w.thread_index[launch_index_][l]
                                : w.block->block_index[launch_index_ - kFirstBlockIndex];
      if (index >= extent) return;
      active |= 1u << l;
      w.frames[l].ints[slot_] = min_->eval(w.frames[l]) + index;
    });
    w.end_statement(ops_);
    if (active) body_->run(w, active);
  }

 private:
  int slot_, launch_index_, loop_;
  IntExprPtr min_;
  WarpStmtPtr body_;
};

/// let var = value in body, in every lane; a vector value binds one slot per vector lane.
template <typename V>
class WarpLet final : public WarpStmt {
 public:
  WarpLet(std::vector<int> slots, std::vector<ExprPtr<V>> lanes, WarpStmtPtr body)
      : slots_(std::move(slots)), lanes_(std::move(lanes)), body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    // The slots are fresh and the values cannot read them, so each may be written at once.
    for_each_lane(mask, [&](int l) {
      Frame& f = w.frames[l];
      for (size_t i = 0; i < lanes_.size(); ++i) f.slots<V>()[slots_[i]] = lanes_[i]->eval(f);
    });
    w.end_statement(ops_);
    body_->run(w, mask);
  }

 private:
  std::vector<int> slots_;
  std::vector<ExprPtr<V>> lanes_;
  WarpStmtPtr body_;
};

/// let p = other_buffer in body: a second name for the same memory, in every lane.
class WarpBufferAlias final : public WarpStmt {
 public:
  WarpBufferAlias(int slot, int source_slot, WarpStmtPtr body)
      : slot_(slot), source_slot_(source_slot), body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    for_each_lane(mask, [&](int l) { w.frames[l].buffers[slot_] = w.frames[l].buffers[source_slot_]; });
    body_->run(w, mask);
  }

 private:
  int slot_, source_slot_;
  WarpStmtPtr body_;
};

class WarpAssert final : public WarpStmt {
 public:
  WarpAssert(IntExprPtr condition, std::string message, WarpStmtPtr body)
      : condition_(std::move(condition)), message_(std::move(message)), body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    int failed = -1;
    for_each_lane(mask, [&](int l) {
      if (!condition_->eval(w.frames[l]) && failed < 0) failed = l;
    });
    w.end_statement(ops_);
    if (failed >= 0)
      throw Error(cat(message_, " (in GPU ", w.block->thread_at(w.first_thread + failed).str(), ")"));
    body_->run(w, mask);
  }

 private:
  IntExprPtr condition_;
  std::string message_;
  WarpStmtPtr body_;
};

/// A divergent branch runs both sides, each with the lanes that take it (then first).
class WarpIf final : public WarpStmt {
 public:
  WarpIf(IntExprPtr condition, WarpStmtPtr then_case, WarpStmtPtr else_case)
      : condition_(std::move(condition)),
        then_case_(std::move(then_case)),
        else_case_(std::move(else_case)) {}
  void run(Warp& w, LaneMask mask) const override {
    LaneMask taken = 0;
    for_each_lane(mask, [&](int l) {
      if (condition_->eval(w.frames[l])) taken |= 1u << l;
    });
    w.end_statement(ops_);
    if (taken) then_case_->run(w, taken);
    if (else_case_ && (mask & ~taken)) else_case_->run(w, mask & ~taken);
  }

 private:
  IntExprPtr condition_;
  WarpStmtPtr then_case_, else_case_;  // else_case_ may be null
};

/// Evaluate: every lane computes the value for its side effects (checks) and drops it.
template <typename V>
class WarpEvaluate final : public WarpStmt {
 public:
  explicit WarpEvaluate(std::vector<ExprPtr<V>> lanes) : lanes_(std::move(lanes)) {}
  void run(Warp& w, LaneMask mask) const override {
    for_each_lane(mask, [&](int l) {
      for (const ExprPtr<V>& lane : lanes_) (void)lane->eval(w.frames[l]);
    });
    w.end_statement(ops_);
  }

 private:
  std::vector<ExprPtr<V>> lanes_;
};

/// A "local" (or "warp") allocation: private memory for each thread, zero-filled like the
/// interpreter's other allocations. One block of memory holds the lanes' parts, 64-byte aligned.
class WarpLocalAllocate final : public WarpStmt {
 public:
  WarpLocalAllocate(int slot, std::string name, DType element, std::vector<IntExprPtr> extents,
                    WarpStmtPtr body)
      : slot_(slot),
        name_(std::move(name)),
        element_(element),
        extents_(std::move(extents)),
        body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    int64_t bytes[kWarpSize], stride = 64;
    for_each_lane(mask, [&](int l) {
      bytes[l] = interp::allocation_bytes(name_, element_, extents_, w.frames[l]);
      stride = std::max(stride, (bytes[l] + 63) / 64 * 64);
    });
    w.end_statement(ops_);
    const size_t total = static_cast<size_t>(stride) * kWarpSize;
    Memory memory(static_cast<std::byte*>(::operator new (total, std::align_val_t{64})));
    std::memset(memory.get(), 0, total);
    for_each_lane(mask, [&](int l) {
      w.frames[l].buffers[slot_] = interp::BufferSlot{memory.get() + stride * l, 0, bytes[l]};
    });
    body_->run(w, mask);
    for_each_lane(mask, [&](int l) { w.frames[l].buffers[slot_] = interp::BufferSlot{}; });
  }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{64}); }
  };
  using Memory = std::unique_ptr<std::byte, AlignedDelete>;

  int slot_;
  std::string name_;
  DType element_;
  std::vector<IntExprPtr> extents_;
  WarpStmtPtr body_;
};

/// A "shared" allocation: one buffer per block, the same memory for every thread that executes
/// this Allocate in the block (see BlockState::allocate_shared).
class WarpSharedAllocate final : public WarpStmt {
 public:
  WarpSharedAllocate(int slot, int buffer, std::string name, DType element, std::vector<IntExprPtr> extents,
                     WarpStmtPtr body)
      : slot_(slot),
        buffer_(buffer),
        name_(std::move(name)),
        element_(element),
        extents_(std::move(extents)),
        body_(std::move(body)) {}
  void run(Warp& w, LaneMask mask) const override {
    int64_t bytes = -1;
    for_each_lane(mask, [&](int l) {
      const int64_t b = interp::allocation_bytes(name_, element_, extents_, w.frames[l]);
      if (bytes >= 0 && b != bytes)
        throw Error(cat("shared buffer '", name_, "' is allocated with ", bytes, " bytes by one thread and ",
                        b, " by another (", w.block->thread_at(w.first_thread + l).str(),
                        "); a shared allocation's extents must be the same for the whole block"));
      bytes = b;
    });
    w.end_statement(ops_);
    std::byte* memory = w.block->allocate_shared(buffer_, bytes, element_.bytes());
    for_each_lane(mask, [&](int l) { w.frames[l].buffers[slot_] = interp::BufferSlot{memory, 0, bytes}; });
    body_->run(w, mask);
    for_each_lane(mask, [&](int l) { w.frames[l].buffers[slot_] = interp::BufferSlot{}; });
  }

 private:
  int slot_, buffer_;
  std::string name_;
  DType element_;
  std::vector<IntExprPtr> extents_;
  WarpStmtPtr body_;
};

/// A warp-wide store (scalar or vector per lane). Every lane's index, value and mask is computed
/// before anything is written, and every address is checked before the first write, so a failing
/// store writes nothing. A store to a shared buffer is one access instruction.
template <typename Codec>
class WarpStore final : public WarpStmt {
 public:
  using V = typename Codec::Value;
  struct Lane {
    IntExprPtr index;
    ExprPtr<V> value;
    IntExprPtr predicate;  // may be null
  };
  /// access and buffer: the shared access id and buffer index, or -1 for other memory;
  /// global_access: the global access id (KernelInfo::global_access_id), or -1 for other memory.
  WarpStore(int slot, std::vector<Lane> lanes, interp::AccessSite site, DType element, int access, int buffer,
            int global_access)
      : slot_(slot),
        lanes_(std::move(lanes)),
        site_(std::move(site)),
        element_(element),
        access_(access),
        buffer_(buffer),
        global_access_(global_access) {}

  void run(Warp& w, LaneMask mask) const override {
    using Raw = typename Codec::Raw;
    const size_t n = lanes_.size();
    std::vector<int64_t>& index = w.store_index;
    std::vector<int64_t>& active = w.store_active;
    std::vector<V>& value = values(w);
    for (auto* scratch : {&index, &active})
      if (scratch->size() < n * kWarpSize) scratch->resize(n * kWarpSize);
    if (value.size() < n * kWarpSize) value.resize(n * kWarpSize);
    for_each_lane(mask, [&](int l) {
      Frame& f = w.frames[l];
      for (size_t v = 0, k = l * n; v < n; ++v, ++k) {
        const Lane& lane = lanes_[v];
        active[k] = !lane.predicate || lane.predicate->eval(f);
        if (!active[k]) continue;
        value[k] = lane.value->eval(f);
        index[k] = lane.index->eval(f);
      }
    });
    w.end_statement(ops_);
    auto for_each_element = [&](auto&& fn) {
      for_each_lane(mask, [&](int l) {
        for (size_t v = 0, k = l * n; v < n; ++v, ++k)
          if (active[k]) fn(l, k);
      });
    };
    for_each_element([&](int l, size_t k) {
      (void)interp::checked_address<Raw>(w.frames[l].buffers[slot_], index[k], site_, element_);
    });
    if (access_ >= 0) {
      for_each_element([&](int l, size_t k) {
        w.store_shared(access_, buffer_, l, index[k] * static_cast<int64_t>(sizeof(Raw)),
                       static_cast<int>(sizeof(Raw)));
      });
      w.end_statement();
    } else if (global_access_ >= 0) {
      for_each_element([&](int l, size_t k) {
        const interp::BufferSlot& b = w.frames[l].buffers[slot_];
        w.access_global(global_access_, l, b.data + index[k] * static_cast<int64_t>(sizeof(Raw)),
                        static_cast<int>(sizeof(Raw)));
      });
      w.end_statement();
    }
    for_each_element([&](int l, size_t k) {
      interp::store_element<Codec>(w.frames[l].buffers[slot_], index[k], value[k], site_, element_);
    });
  }

 private:
  static std::vector<V>& values(Warp& w) {
    if constexpr (std::is_same_v<V, double>) {
      return w.store_floats;
    } else {
      return w.store_ints;
    }
  }

  int slot_;
  std::vector<Lane> lanes_;
  interp::AccessSite site_;
  DType element_;
  int access_, buffer_, global_access_;
};

/// Barrier("shared"), CUDA's __syncthreads(): the warp waits until every warp of its block is
/// here (Warp::sync), which also ends the block's barrier interval for the race detector.
class WarpBarrier final : public WarpStmt, public SyncPoint {
 public:
  explicit WarpBarrier(std::string where) : where_(std::move(where)) {}
  void run(Warp& w, LaneMask mask) const override { w.sync(*this, mask); }
  const std::string& where() const override { return where_; }

 private:
  std::string where_;
};

/// Barrier("warp"), CUDA's __syncwarp(): the warp's lanes, all of which must reach it, order their
/// shared accesses before it before their accesses after it. Lanes of one warp are independent
/// threads (since Volta), so without it one lane reading what another wrote is a race.
class WarpSyncwarp final : public WarpStmt {
 public:
  explicit WarpSyncwarp(std::string where) : where_(std::move(where)) {}
  void run(Warp& w, LaneMask mask) const override {
    w.end_statement();
    if (mask != w.full_mask)
      throw Error(cat("__syncwarp in divergent control flow: ", where_, " was reached by ",
                      describe_lanes(mask), " of warp ", w.index, " of block ", w.block->index.str(),
                      ", but not by ", describe_lanes(w.full_mask & ~mask),
                      ". __syncwarp() waits for every lane of the warp: move it out of the branch or loop "
                      "whose condition differs between the warp's threads"));
    w.block->sync_warp(w.index);
    w.clock += w.costs->shuffle;
  }

 private:
  std::string where_;
};

}  // namespace loom::sim
