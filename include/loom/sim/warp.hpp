// A simulated warp: up to 32 threads, each with its own interpreter frame, that execute every
// statement together under an active-lane mask. Shared-memory accesses and barriers go through it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/interp/frame.hpp"
#include "loom/runtime/sim_clock_model.hpp"
#include "loom/sim/access_recorder.hpp"
#include "loom/sim/async_copy.hpp"
#include "loom/sim/block.hpp"
#include "loom/sim/coroutine.hpp"
#include "loom/sim/global_access_recorder.hpp"
#include "loom/sim/global_races.hpp"

namespace loom::sim {

/// Bit l set: lane l takes part.
using LaneMask = uint32_t;

/// Calls fn(lane) for every lane of mask, in increasing order.
template <typename Fn>
inline void for_each_lane(LaneMask mask, Fn&& fn) {
  while (mask) {
    fn(__builtin_ctz(mask));
    mask &= mask - 1;
  }
}

/// "lanes 0-15, 20", for messages.
inline std::string describe_lanes(LaneMask mask) {
  std::string out;
  for (int l = 0; l < kWarpSize;) {
    if (!(mask >> l & 1u)) {
      ++l;
      continue;
    }
    int end = l;
    while (end + 1 < kWarpSize && (mask >> (end + 1) & 1u)) ++end;
    out += (out.empty() ? "" : ", ") + (end == l ? std::to_string(l) : cat(l, "-", end));
    l = end + 1;
  }
  return out.empty() ? "no lanes" : (__builtin_popcount(mask) == 1 ? "lane " : "lanes ") + out;
}

class Warp;

/// Set in a simulated thread's frame (Frame::lane), so compiled expressions can find their warp.
struct LaneContext {
  Warp* warp = nullptr;
  int lane = 0;
};

class Warp {
 public:
  int index = 0;         // in the block
  int first_thread = 0;  // linear thread index of lane 0
  int num_lanes = 0;     // 32 but for a last, partial warp
  LaneMask full_mask = 0;
  interp::Frame* frames = nullptr;  // lane l's frame is frames[l]
  LaneContext lanes[kWarpSize];
  int64_t thread_index[3][kWarpSize] = {};  // threadIdx.x/y/z of each lane
  BlockState* block = nullptr;
  AccessRecorder recorder;
  GlobalAccessRecorder global;
  /// The block's global race check (sim/global_races.hpp); null when the kernel writes no global buffer.
  GlobalRaceBlock* races = nullptr;
  /// The warp's clock (runtime/sim_clock_model.hpp), in cycles since the launch began.
  int64_t clock = 0;
  const SimClockModel* costs = nullptr;
  Coroutine* coroutine = nullptr;  // null: the warp runs alone, without switching stacks
  /// Its lanes' cp.async copies in flight (sim/warp_intrinsic_stmt.hpp).
  AsyncCopyState async;
  const SyncPoint* waiting_at = nullptr;
  /// Scratch for warp-wide stores: per (lane, vector lane) index, value and mask.
  std::vector<int64_t> store_index, store_ints, store_active;
  std::vector<double> store_floats;

  /// A shared-memory read by one lane, from a compiled Load (see sim/shared_load.hpp).
  void load_shared(int access, int buffer, int lane, int64_t offset, int bytes) {
    block->read_shared(buffer, offset, bytes, first_thread + lane);
    recorder.record(access, lane, offset, bytes);
  }
  /// A shared-memory write by one lane, from a warp-wide store (see sim/warp_stmts.hpp).
  void store_shared(int access, int buffer, int lane, int64_t offset, int bytes) {
    block->write_shared(buffer, offset, bytes, first_thread + lane);
    recorder.record(access, lane, offset, bytes);
  }

  /// A global-memory access by lane `lane` at host address `address`, from a compiled Load (see
  /// sim/global_load.hpp), a warp-wide store or a warp intrinsic's operand.
  void access_global(int access, int lane, const void* address, int bytes) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    global.record(access, at, bytes);
    if (races) {
      const GlobalRaceSite& site = block->kernel.global_race_sites[static_cast<size_t>(access)];
      if (site.tracked >= 0) races->access(site.tracked, at, bytes, first_thread + lane, site.is_write);
    }
  }

  /// Ends the instruction(s) of the statement whose expressions the lanes just evaluated, and
  /// advances the clock by them: `arith_ops` arithmetic operations (counted when the statement
  /// was compiled, sim/op_count.hpp), the shared wavefronts and the global sectors it touched.
  void end_statement(int arith_ops = 0) {
    clock += arith_ops * costs->arith;
    if (recorder.pending()) clock += recorder.flush() * costs->shared_wavefront;
    if (global.pending()) clock += global.flush() * costs->global_sector;
  }

  /// Waits at `point` until every warp of the block has arrived. The whole warp must be there:
  /// a barrier reached by some lanes only is in divergent control flow.
  void sync(const SyncPoint& point, LaneMask mask) {
    end_statement();
    check_converged(point, mask);
    if (!coroutine) {  // the block's only warp: everyone has arrived
      block->complete_sync(point);
      clock += costs->barrier;
      return;
    }
    waiting_at = &point;
    coroutine->yield();
    waiting_at = nullptr;
  }

  void check_converged(const SyncPoint& point, LaneMask mask) const {
    if (mask != full_mask) {
      throw Error(
          cat("barrier in divergent control flow: ", point.where(), " was reached by ", describe_lanes(mask),
              " of warp ", index, " (threads ", first_thread, "-", first_thread + num_lanes - 1,
              ") of block ", block->index.str(), ", but not by ", describe_lanes(full_mask & ~mask),
              ". Every thread of a block must reach each barrier (CUDA's __syncthreads): move it out of "
              "the branch or loop whose condition differs between threads, or make that condition "
              "the same for the whole block"));
    }
  }
};

}  // namespace loom::sim
