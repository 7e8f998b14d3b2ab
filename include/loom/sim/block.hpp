// The state one simulated thread block shares among its warps: its index, its shared buffers (with
// race and uninitialized-read checks; planned buffers in one memory, as the CUDA kernel places
// them), the current barrier interval and each warp's __syncwarp epoch, the synchronization points
// and the grid-flag wait that suspends it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/interp/frame.hpp"
#include "loom/sim/coroutine.hpp"
#include "loom/sim/flag_signals.hpp"
#include "loom/sim/kernel_info.hpp"
#include "loom/sim/session.hpp"
#include "loom/sim/shared_memory.hpp"

namespace loom::sim {

class BlockState;

/// A place where all threads of a block wait for each other: a barrier or a thread_allreduce.
class SyncPoint {
 public:
  virtual ~SyncPoint() = default;
  /// Runs once every warp of the block has arrived, before any of them continues.
  virtual void on_all_arrived(BlockState&) const {}
  /// Names the point for messages: "barrier #2 of kernel main_kernel0 (in: for k.outer)".
  virtual const std::string& where() const = 0;
};

class BlockState {
 public:
  BlockState(Session& session, const KernelInfo& kernel, SimDim3 grid, SimDim3 block,
             std::vector<int64_t> loop_extents)
      : session(session),
        kernel(kernel),
        grid_dim(grid),
        block_dim(block),
        num_threads(static_cast<int>(block.count())),
        loop_extents(std::move(loop_extents)),
        warp_epochs_(static_cast<size_t>((num_threads + kWarpSize - 1) / kWarpSize), 1),
        shared_(kernel.shared_buffers.size()) {}

  Session& session;
  const KernelInfo& kernel;
  const SimDim3 grid_dim, block_dim;
  const int num_threads;
  const std::vector<int64_t> loop_extents;  // by KernelInfo::loops index
  SimDim3 index;                            // blockIdx
  int64_t block_index[3] = {0, 0, 0};       // the same, by launch index - kFirstBlockIndex
  /// Numbers the stretches of execution between the block's synchronization points, from 1.
  uint32_t interval = 1;
  int64_t peak_shared_bytes = 0;
  /// A frame to evaluate combiners in (thread 0's): see sim/allreduce.hpp.
  interp::Frame* scratch_frame = nullptr;
  /// thread_allreduce contributions and results, by value and thread; see sim/allreduce.hpp.
  std::vector<int64_t> reduce_ints;
  std::vector<double> reduce_floats;

  /// Grid flags: the block's own coroutine when the kernel waits on flags (null otherwise), the
  /// wait it is suspended at, the launch's signal times, and the cycles it has spent waiting.
  Coroutine* coroutine = nullptr;
  FlagWait waiting;
  FlagSignals* flag_signals = nullptr;
  int64_t waited_cycles = 0;

  /// Suspends the whole block (its warps with it) until the scheduler resumes it, once `wait`
  /// may be satisfied (sim/grid_scheduler.hpp).
  void suspend_until(const FlagWait& wait) {
    internal_check(coroutine != nullptr, "kernel ", kernel.name,
                   " waits on a grid flag but its blocks were not made able to suspend");
    waiting = wait;
    coroutine->yield();
    waiting.address = nullptr;
  }

  void begin(SimDim3 block_idx) {
    index = block_idx;
    block_index[0] = block_idx.x;
    block_index[1] = block_idx.y;
    block_index[2] = block_idx.z;
    interval = 1;
    std::fill(warp_epochs_.begin(), warp_epochs_.end(), 1u);
    waited_cycles = 0;
    waiting.address = nullptr;
    live_shared_bytes_ = 0;
    async_pending_.clear();
    for (SharedMemory& m : shared_) m.release();
    planned_.release();
  }

  void complete_sync(const SyncPoint& point) {
    point.on_all_arrived(*this);
    ++interval;
  }

  /// Warp `warp` passed a __syncwarp: its lanes' shared accesses before it are ordered before
  /// their accesses after it (other warps' are not).
  void sync_warp(int warp) { ++warp_epochs_[static_cast<size_t>(warp)]; }

  /// The first byte of shared buffer `buffer` in this block: all threads that execute its Allocate
  /// share one allocation, made fresh (poisoned) by the first of them. A planned buffer lives at
  /// its offset in the planned memory, made fresh once per block.
  std::byte* allocate_shared(int buffer, int64_t bytes, int element_bytes) {
    if (const int64_t planned = info(buffer).planned_offset; planned >= 0) {
      if (!planned_.live()) {
        planned_.reset(kernel.planned_bytes, kernel.planned_granule);
        live_shared_bytes_ += kernel.planned_bytes;
        peak_shared_bytes = std::max(peak_shared_bytes, live_shared_bytes_);
      }
      return planned_.data() + planned;
    }
    SharedMemory& m = shared_[static_cast<size_t>(buffer)];
    if (!m.live()) {
      m.reset(bytes, element_bytes);
      live_shared_bytes_ += bytes;
      peak_shared_bytes = std::max(peak_shared_bytes, live_shared_bytes_);
    } else if (m.bytes() != bytes) {
      throw Error(cat("shared buffer '", info(buffer).name, "' of kernel ", kernel.name,
                      " is allocated with ", m.bytes(), " bytes by one thread and ", bytes,
                      " bytes by another in block ", index.str(),
                      "; a shared allocation's size must be the same for the whole block"));
    }
    return m.data();
  }

  /// A cp.async of thread `thread` will write `size` bytes at byte `offset` of a shared buffer when
  /// it lands (sim/async_copy.hpp); until end_async_write, any other access to them is reported.
  void begin_async_write(int buffer, int64_t offset, int size, int thread) {
    SharedMemory& m = memory_of(buffer, offset);
    if (!async_pending_.empty()) check_async(buffer, m, offset, size, thread, true);
    async_pending_[{&m, offset}] = AsyncPending{offset + size, thread};
  }
  void end_async_write(int buffer, int64_t offset, int) {
    SharedMemory& m = memory_of(buffer, offset);
    async_pending_.erase({&m, offset});
  }

  /// Thread `thread` (linear in the block) reads `size` bytes at byte `offset` of a shared buffer.
  void read_shared(int buffer, int64_t offset, int size, int thread) {
    SharedMemory& m = memory_of(buffer, offset);
    if (!async_pending_.empty()) check_async(buffer, m, offset, size, thread, false);
    const SharedAccessor now = accessor(thread);
    for (int64_t e = m.first_element(offset), last = m.last_element(offset, size); e <= last; ++e) {
      ShadowFinding f = m.read(e, now, buffer);
      if (f.kind != ShadowFinding::None) report(buffer, m, e, f, thread, false);
    }
  }

  void write_shared(int buffer, int64_t offset, int size, int thread) {
    SharedMemory& m = memory_of(buffer, offset);
    if (!async_pending_.empty()) check_async(buffer, m, offset, size, thread, true);
    const SharedAccessor now = accessor(thread);
    for (int64_t e = m.first_element(offset), last = m.last_element(offset, size); e <= last; ++e) {
      ShadowFinding f = m.write(e, now, buffer);
      if (f.kind != ShadowFinding::None) report(buffer, m, e, f, thread, true);
    }
  }

  /// threadIdx of a linear thread index (x fastest).
  SimDim3 thread_index(int thread) const {
    const int64_t t = thread;
    return SimDim3{t % block_dim.x, t / block_dim.x % block_dim.y, t / (block_dim.x * block_dim.y)};
  }
  SimThread thread_at(int thread) const { return SimThread{index, thread_index(thread)}; }

  int64_t races_found = 0;  // in this launch, including repeats of an already reported element

 private:
  SharedAccessor accessor(int thread) const {
    return SharedAccessor{thread, interval, warp_epochs_[static_cast<size_t>(thread / kWarpSize)]};
  }

  const SharedBufferInfo& info(int buffer) const {
    return kernel.shared_buffers[static_cast<size_t>(buffer)];
  }

  /// The memory that holds `buffer`, with `offset` (bytes into the buffer) made an offset into it.
  SharedMemory& memory_of(int buffer, int64_t& offset) {
    if (const int64_t planned = info(buffer).planned_offset; planned >= 0) {
      offset += planned;
      return planned_;
    }
    return shared_[static_cast<size_t>(buffer)];
  }

  /// Out of line: every access checks the shadow, few find anything. `e` is a shadow element of
  /// memory `m`; the report names the buffer's own element.
  [[gnu::noinline, gnu::cold]] void report(int buffer, const SharedMemory& m, int64_t shadow_element,
                                           ShadowFinding f, int thread, bool is_write) {
    const int64_t planned = std::max<int64_t>(info(buffer).planned_offset, 0);
    const int64_t byte_offset = shadow_element * m.element_bytes() - planned;
    const int64_t e = byte_offset / info(buffer).element_bytes;
    if (f.kind == ShadowFinding::Uninitialized) {
      session.add_uninitialized_read(info(buffer), e, byte_offset, thread_at(thread));
      return;
    }
    ++races_found;
    session.add_race(
        info(buffer), e, byte_offset,
        f.kind == ShadowFinding::WriteWriteRace ? SimRaceKind::WriteWrite : SimRaceKind::ReadWrite,
        thread_at(f.other), thread_at(thread), is_write);
  }

  /// Refuses an access to bytes [offset, offset + size) of memory `m` while a cp.async to them is
  /// in flight: the access would see (or be overwritten by) data that has not landed yet.
  void check_async(int buffer, const SharedMemory& m, int64_t offset, int size, int thread, bool is_write) {
    auto it = async_pending_.upper_bound({&m, offset + size - 1});
    if (it == async_pending_.begin()) return;
    --it;
    if (it->first.first != &m || it->second.end <= offset) return;
    const int64_t planned = std::max<int64_t>(info(buffer).planned_offset, 0);
    throw Error(
        cat("kernel ", kernel.name, ": ", thread_at(thread).str(), " ", is_write ? "writes" : "reads",
            " bytes ", offset - planned, " to ", offset - planned + size - 1, " of shared buffer '",
            info(buffer).name, "' while a cp.async of ", thread_at(it->second.thread).str(), " to bytes ",
            it->first.second - planned, " to ", it->second.end - planned - 1,
            " is in flight: the copy lands only at that thread's cp.async.wait_group for its group. "
            "Wait for the group (and pass a barrier, for other threads' copies) before using the bytes"));
  }

  struct AsyncPending {
    int64_t end = 0;  // one past the last byte
    int thread = 0;
  };
  /// cp.async destinations in flight, by (memory, first byte).
  std::map<std::pair<const SharedMemory*, int64_t>, AsyncPending> async_pending_;
  std::vector<uint32_t> warp_epochs_;  // by warp index in the block
  std::vector<SharedMemory> shared_;   // by KernelInfo::shared_buffers index
  SharedMemory planned_;               // the buffers with a planned_offset
  int64_t live_shared_bytes_ = 0;
};

}  // namespace loom::sim
