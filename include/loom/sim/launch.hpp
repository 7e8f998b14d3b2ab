// A kernel region run as a CUDA launch: the host statement that evaluates the launch dimensions,
// gives every simulated thread a frame, and runs the blocks one after another, warp by warp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
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
/// never uses, so the copies are made once per launch and reused by every block.
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

/// The host statement of one kernel region. Within a block, warps run one after another; when
/// the kernel has barriers (or allreduces) each warp is a coroutine that runs until it reaches
/// one, and once all warps of the block wait at the same one they all continue.
class KernelLaunch final : public interp::CompiledStmt {
 public:
  KernelLaunch(std::unique_ptr<KernelInfo> kernel, WarpStmtPtr body)
      : kernel_(std::move(kernel)), body_(std::move(body)) {}

  void run(Frame& host) const override {
    internal_check(host.session != nullptr, "kernel ", kernel_->name, " run without a simulation session");
    Session& session = *host.session;
    const KernelInfo& k = *kernel_;
    for (const SharedBufferInfo& b : k.shared_buffers) (void)session.buffer(b);  // rows even if unused

    std::vector<int64_t> extents;
    SimDim3 grid, block;
    launch_dimensions(host, extents, grid, block);
    SimLaunch record{k.name, grid, block, (block.count() + kWarpSize - 1) / kWarpSize, 0};
    if (grid.x <= 0 || grid.y <= 0 || grid.z <= 0 || block.x <= 0 || block.y <= 0 || block.z <= 0) {
      record.warps_per_block = 0;
      session.add_launch(record);  // an empty launch runs nothing
      return;
    }
    check_limits(grid, block);

    ThreadFrames threads(host, *k.layout, static_cast<int>(block.count()), session);
    BlockState state(session, k, grid, block, std::move(extents));
    state.scratch_frame = &threads.frames[0];
    std::vector<BankTally> tallies(k.shared_buffers.size());
    std::vector<std::unique_ptr<Warp>> warps = make_warps(state, threads, tallies);
    std::vector<std::unique_ptr<Coroutine>> coroutines;
    if (k.has_sync && warps.size() > 1) {
      for (const std::unique_ptr<Warp>& w : warps) {
        coroutines.push_back(std::make_unique<Coroutine>());
        w->coroutine = coroutines.back().get();
      }
    }

    const size_t first_race = session.report().races.size();
    for (int64_t z = 0; z < grid.z; ++z) {
      for (int64_t y = 0; y < grid.y; ++y) {
        for (int64_t x = 0; x < grid.x; ++x) {
          state.begin(SimDim3{x, y, z});
          run_block(state, warps);
        }
      }
    }

    record.shared_bytes_per_block = state.peak_shared_bytes;
    session.add_launch(record);
    for (size_t b = 0; b < k.shared_buffers.size(); ++b) {
      SimSharedBuffer& row = session.buffer(k.shared_buffers[b]);
      row.load += tallies[b].load;
      row.store += tallies[b].store;
    }
    if (state.races_found > 0 && session.options().races_are_errors)
      throw race_error(session, first_race, state);
  }

 private:
  /// Warps of 32 consecutive threads (x fastest, then y, z); the last may be partial.
  std::vector<std::unique_ptr<Warp>> make_warps(BlockState& state, ThreadFrames& threads,
                                                std::vector<BankTally>& tallies) const {
    const int num_threads = state.num_threads;
    std::vector<std::unique_ptr<Warp>> warps;
    for (int first = 0; first < num_threads; first += kWarpSize) {
      auto w = std::make_unique<Warp>();
      w->index = first / kWarpSize;
      w->first_thread = first;
      w->num_lanes = std::min(kWarpSize, num_threads - first);
      w->full_mask = w->num_lanes == kWarpSize ? ~LaneMask{0} : (LaneMask{1} << w->num_lanes) - 1;
      w->frames = &threads.frames[static_cast<size_t>(first)];
      w->block = &state;
      w->recorder.prepare(*kernel_, &tallies);
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
    return warps;
  }

  /// Evaluates every launch loop's extent; loops of one tag must agree.
  void launch_dimensions(Frame& host, std::vector<int64_t>& extents, SimDim3& grid, SimDim3& block) const {
    const KernelInfo& k = *kernel_;
    int64_t dims[kNumLaunchIndices] = {1, 1, 1, 1, 1, 1};
    int first_loop[kNumLaunchIndices] = {-1, -1, -1, -1, -1, -1};
    for (size_t i = 0; i < k.loops.size(); ++i) {
      const LaunchLoop& loop = k.loops[i];
      const int64_t extent = loop.extent->eval(host);
      extents.push_back(extent);
      const int d = loop.launch_index;
      if (first_loop[d] < 0) {
        first_loop[d] = static_cast<int>(i);
        dims[d] = extent;
      } else if (extent != dims[d]) {
        throw Error(cat("kernel ", k.name, ": two loops bound to ", launch_index_name(d),
                        " have different extents, ", dims[d], " (loop '", k.loops[first_loop[d]].var_name,
                        "') and ", extent, " (loop '", loop.var_name,
                        "'). All loops bound to one thread tag "
                        "share one launch dimension, so their extents must be equal: split the stages by the "
                        "same factor, or bind the shorter one under a guard of its own"));
      }
    }
    block = SimDim3{dims[0], dims[1], dims[2]};
    grid = SimDim3{dims[3], dims[4], dims[5]};
  }

  /// CUDA refuses launches beyond these (cudaErrorInvalidConfiguration).
  void check_limits(const SimDim3& grid, const SimDim3& block) const {
    auto fail = [&](const std::string& what) {
      throw Error(cat("kernel ", kernel_->name, " cannot be launched with grid ", grid.str(), " and block ",
                      block.str(), ": ", what,
                      " (CUDA's limits: at most 1024 threads per block, block "
                      "dimensions up to (1024, 1024, 64), grid dimensions up to (2^31-1, 65535, 65535))"));
    };
    if (block.count() > 1024) fail(cat("a block of ", block.count(), " threads is more than 1024"));
    if (block.x > 1024 || block.y > 1024 || block.z > 64) fail("a block dimension is too large");
    if (grid.x > 2147483647 || grid.y > 65535 || grid.z > 65535) fail("a grid dimension is too large");
  }

  void run_block(BlockState& state, std::vector<std::unique_ptr<Warp>>& warps) const {
    if (!warps.front()->coroutine) {  // no barrier can stop a warp: run them one after another
      for (const std::unique_ptr<Warp>& w : warps) body_->run(*w, w->full_mask);
      return;
    }
    for (const std::unique_ptr<Warp>& w : warps) {
      Warp* warp = w.get();
      warp->coroutine->start([this, warp] { body_->run(*warp, warp->full_mask); });
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
        for (const std::unique_ptr<Warp>& w : warps) {
          if (!w->coroutine->suspended()) {
            divergent = true;  // matters only if another warp waits
            continue;
          }
          all_finished = false;
          if (point && w->waiting_at != point) divergent = true;
          point = w->waiting_at;
        }
        if (all_finished) break;
        if (divergent) throw divergence_error(state, warps);
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

  Error divergence_error(const BlockState& state, const std::vector<std::unique_ptr<Warp>>& warps) const {
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
        cat("barrier in divergent control flow: in block ", state.index.str(), " of kernel ", kernel_->name,
            ", the warps do not all reach the same barrier: ", states,
            ". Every thread of a block must reach each barrier (CUDA's __syncthreads), in the same order: "
            "move it out of the branch or loop whose condition differs between threads"));
  }

  Error race_error(const Session& session, size_t first_race, const BlockState& state) const {
    const std::vector<SimRace>& races = session.report().races;
    std::string list;
    constexpr size_t kListed = 8;
    for (size_t i = first_race; i < races.size() && i < first_race + kListed; ++i)
      list += "\n  " + races[i].str();
    if (races.size() > first_race + kListed)
      list += cat("\n  ... and ", races.size() - first_race - kListed, " more");
    if (list.empty()) list = "\n  (on elements already reported by an earlier launch)";
    return Error(
        cat("kernel ", kernel_->name, " has shared-memory data races: ", state.races_found,
            " accesses touched an element that another thread of the block wrote (or read, for a write) "
            "with no barrier in between:",
            list,
            "\nPut a barrier between the write and the other threads' accesses (or let the lowering insert "
            "one); with SimOptions::races_are_errors = false the simulator only reports races"));
  }

  std::unique_ptr<KernelInfo> kernel_;
  WarpStmtPtr body_;
};

}  // namespace loom::sim
