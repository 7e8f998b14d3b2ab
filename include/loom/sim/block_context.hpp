// What one resident block of a launch owns while it runs: its threads' frames, its warps (with
// their clocks and, with barriers, their coroutines), its BlockState and, when the kernel waits on
// grid flags, its own coroutine; how its warps run to the end of the block; and the pool that
// reuses these between blocks, so that a launch whose blocks never suspend allocates them once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/sim/coroutine.hpp"
#include "loom/sim/kernel_info.hpp"
#include "loom/sim/warp_stmts.hpp"

namespace loom::sim {

/// The frames of a block's simulated threads. Each starts as a copy of the host's frame: kernel
/// code reads host variables from its own frame and binds its own variables in slots the host
/// never uses, so the copies are made once per block context and reused by every block it runs.
struct ThreadFrames {
  ThreadFrames(const Frame& host, const interp::FrameLayout& layout, int threads, Session& session) {
    copy(host.ints, layout.num_ints, threads, ints);
    copy(host.floats, layout.num_floats, threads, floats);
    copy(host.buffers, layout.num_buffers, threads, buffers);
    for (int t = 0; t < threads; ++t) {
      frames.push_back(Frame{ints.data() + layout.num_ints * t, floats.data() + layout.num_floats * t,
                             buffers.data() + layout.num_buffers * t});
      frames.back().session = &session;
    }
  }

  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<interp::BufferSlot> buffers;
  std::vector<Frame> frames;

 private:
  template <typename T>
  static void copy(const T* host, int count, int threads, std::vector<T>& storage) {
    storage.resize(static_cast<size_t>(count) * static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) std::copy(host, host + count, storage.data() + count * t);
  }
};

/// What every block of one launch shares: where its frames come from, its dimensions, the bank
/// tallies and grid-flag signal times all blocks add to.
struct LaunchShape {
  const KernelInfo& kernel;
  const Frame& host;
  Session& session;
  SimDim3 grid, block;
  std::vector<int64_t> loop_extents;
  std::vector<BankTally>* tallies;
  FlagSignals* flag_signals;
  GlobalRaces* global_races = nullptr;  // null: the kernel writes no global buffer
};

class BlockContext {
 public:
  BlockContext(const LaunchShape& launch, const WarpStmt& body)
      : threads(launch.host, *launch.kernel.layout, static_cast<int>(launch.block.count()), launch.session),
        state(launch.session, launch.kernel, launch.grid, launch.block, launch.loop_extents),
        body_(body) {
    const KernelInfo& k = launch.kernel;
    state.scratch_frame = &threads.frames[0];
    state.flag_signals = launch.flag_signals;
    make_warps(launch);
    if (launch.global_races) {
      races_ = std::make_unique<GlobalRaceBlock>(*launch.global_races, state.interval);
      for (const std::unique_ptr<Warp>& w : warps) w->races = races_.get();
    }
    if (k.has_sync && warps.size() > 1) {
      for (const std::unique_ptr<Warp>& w : warps) {
        warp_coroutines.push_back(std::make_unique<Coroutine>());
        w->coroutine = warp_coroutines.back().get();
      }
    }
    if (k.has_flag_wait) {
      coroutine = std::make_unique<Coroutine>();
      state.coroutine = coroutine.get();
    }
  }

  ThreadFrames threads;
  BlockState state;
  std::vector<std::unique_ptr<Warp>> warps;
  std::vector<std::unique_ptr<Coroutine>> warp_coroutines;
  std::unique_ptr<Coroutine> coroutine;  // the block's own: set when the kernel waits on flags
  int64_t linear = 0;                    // the block's linear index (x fastest)
  int64_t slot = 0;                      // its residency slot (sim/sm_slots.hpp)
  int64_t start = 0;                     // the cycle it was dispatched

  /// Makes the context run block `index` from cycle `start_cycle`.
  void begin(SimDim3 index, int64_t linear_index, int64_t slot_index, int64_t start_cycle) {
    state.begin(index);
    if (races_) races_->begin(linear_index);
    linear = linear_index;
    slot = slot_index;
    start = start_cycle;
    for (const std::unique_ptr<Warp>& w : warps) {
      w->clock = start_cycle;
      w->async.reset();
    }
  }

  /// The cycle the block's last warp finished.
  int64_t end() const {
    int64_t end = start;
    for (const std::unique_ptr<Warp>& w : warps) end = std::max(end, w->clock);
    return end;
  }

  /// Runs every warp of the block to its end. Within a block, warps run one after another; when
  /// the kernel has barriers (or allreduces) each warp is a coroutine that runs until it reaches
  /// one, and once all warps of the block wait at the same one they all continue, at the latest
  /// arrival's cycle plus the barrier's cost.
  void run_warps() {
    if (!warps.front()->coroutine) {  // no barrier can stop a warp: run them one after another
      for (const std::unique_ptr<Warp>& w : warps) body_.run(*w, w->full_mask);
      return;
    }
    for (const std::unique_ptr<Warp>& w : warps) {
      Warp* warp = w.get();
      warp->coroutine->start([this, warp] { body_.run(*warp, warp->full_mask); });
    }
    // Rounds: every warp runs until it waits at a sync point or finishes; then either all wait
    // at the same point, which completes, or the block has diverged.
    std::exception_ptr error;
    while (!error) {
      try {
        for (const std::unique_ptr<Warp>& w : warps)
          if (w->coroutine->suspended()) w->coroutine->resume();
        const SyncPoint* point = nullptr;
        bool all_finished = true, divergent = false;
        int64_t arrival = 0;
        for (const std::unique_ptr<Warp>& w : warps) {
          if (!w->coroutine->suspended()) {
            divergent = true;  // matters only if another warp waits
            continue;
          }
          all_finished = false;
          if (point && w->waiting_at != point) divergent = true;
          point = w->waiting_at;
          arrival = std::max(arrival, w->clock);
        }
        if (all_finished) break;
        if (divergent) throw divergence_error();
        for (const std::unique_ptr<Warp>& w : warps) w->clock = arrival + w->costs->barrier;
        state.complete_sync(*point);
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) {  // outside the handler: unwinding the other warps' stacks throws and catches
      for (const std::unique_ptr<Warp>& w : warps) w->coroutine->cancel();
      std::rethrow_exception(error);
    }
  }

 private:
  /// Warps of 32 consecutive threads (x fastest, then y, z); the last may be partial.
  void make_warps(const LaunchShape& launch) {
    const int num_threads = state.num_threads;
    for (int first = 0; first < num_threads; first += kWarpSize) {
      auto w = std::make_unique<Warp>();
      w->index = first / kWarpSize;
      w->first_thread = first;
      w->num_lanes = std::min(kWarpSize, num_threads - first);
      w->full_mask = w->num_lanes == kWarpSize ? ~LaneMask{0} : (LaneMask{1} << w->num_lanes) - 1;
      w->frames = &threads.frames[static_cast<size_t>(first)];
      w->block = &state;
      w->costs = &launch.session.options().clock;
      w->recorder.prepare(launch.kernel, launch.tallies);
      w->global.prepare(launch.kernel.num_global_accesses);
      for (int l = 0; l < w->num_lanes; ++l) {
        w->lanes[l] = LaneContext{w.get(), l};
        w->frames[l].lane = &w->lanes[l];
        const SimDim3 idx = state.thread_index(first + l);
        w->thread_index[0][l] = idx.x;
        w->thread_index[1][l] = idx.y;
        w->thread_index[2][l] = idx.z;
      }
      warps.push_back(std::move(w));
    }
  }

  Error divergence_error() const {
    // Warps grouped by where they are, in order of first appearance.
    std::vector<std::pair<const SyncPoint*, std::vector<int>>> groups;
    for (const std::unique_ptr<Warp>& w : warps) {
      const SyncPoint* at = w->coroutine->suspended() ? w->waiting_at : nullptr;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == at; });
      if (it == groups.end()) it = groups.insert(groups.end(), {at, {}});
      it->second.push_back(w->index);
    }
    std::string states;
    for (const auto& [at, ids] : groups) {
      std::string list;
      for (int id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
      states +=
          cat(states.empty() ? "" : "; ", ids.size() == 1 ? "warp " : "warps ", list,
              at ? (ids.size() == 1 ? " waits at " : " wait at ") + at->where() : " finished the kernel");
    }
    return Error(
        cat("barrier in divergent control flow: in block ", state.index.str(), " of kernel ",
            state.kernel.name, ", the warps do not all reach the same barrier: ", states,
            ". Every thread of a block must reach each barrier (CUDA's __syncthreads), in the same order: "
            "move it out of the branch or loop whose condition differs between threads"));
  }

  const WarpStmt& body_;
  std::unique_ptr<GlobalRaceBlock> races_;  // the global race check's per-block state, if any
};

/// Block contexts of one launch: one for a launch whose blocks run to their end one at a time, one
/// more for every block that is suspended (on a grid flag) while others run.
class BlockPool {
 public:
  BlockPool(const LaunchShape& launch, const WarpStmt& body) : launch_(launch), body_(body) {}

  BlockContext& take() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<BlockContext>(launch_, body_));
      return *all_.back();
    }
    BlockContext* c = free_.back();
    free_.pop_back();
    return *c;
  }
  void give(BlockContext& c) { free_.push_back(&c); }

  const std::vector<std::unique_ptr<BlockContext>>& all() const { return all_; }

 private:
  const LaunchShape& launch_;
  const WarpStmt& body_;
  std::vector<std::unique_ptr<BlockContext>> all_;
  std::vector<BlockContext*> free_;
};

}  // namespace loom::sim
