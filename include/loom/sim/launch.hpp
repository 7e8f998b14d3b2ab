// A kernel region run as a CUDA launch: the host statement that evaluates the launch dimensions,
// checks them against CUDA's limits, runs the blocks on the modelled GPU and records the launch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/grid_flags.hpp"
#include "loom/sim/global_races.hpp"
#include "loom/sim/grid_scheduler.hpp"
#include "loom/sim/kernel_info.hpp"
#include "loom/sim/warp_stmts.hpp"

namespace loom::sim {

/// The host statement of one kernel region: evaluates the launch dimensions, runs the blocks on
/// the modelled GPU (sim/grid_scheduler.hpp) and records the launch.
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
    SimLaunch record;
    record.kernel = k.name;
    record.grid = grid;
    record.block = block;
    record.warps_per_block = (block.count() + kWarpSize - 1) / kWarpSize;
    if (grid.x <= 0 || grid.y <= 0 || grid.z <= 0 || block.x <= 0 || block.y <= 0 || block.z <= 0) {
      record.warps_per_block = 0;
      session.add_launch(record);  // an empty launch runs nothing
      return;
    }
    check_limits(grid, block);

    std::vector<BankTally> tallies(k.shared_buffers.size());
    FlagSignals signals;
    // The global race check's shadows, fresh for every launch: a kernel boundary orders all
    // accesses of earlier launches (and the host's) before this one's.
    std::optional<GlobalRaces> global_races;
    if (!k.tracked_globals.empty()) global_races.emplace(k, host, session, grid, block);
    GlobalRaces* races = global_races ? &*global_races : nullptr;
    const LaunchShape shape{k, host, session, grid, block, std::move(extents), &tallies, &signals, races};
    GridScheduler scheduler(shape, *body_);
    const size_t first_race = session.report().races.size();
    scheduler.run(record);

    record.shared_bytes_per_block = scheduler.peak_shared_bytes();
    session.add_launch(std::move(record));
    for (size_t b = 0; b < k.shared_buffers.size(); ++b) {
      SimSharedBuffer& row = session.buffer(k.shared_buffers[b]);
      row.load += tallies[b].load;
      row.store += tallies[b].store;
    }
    const int64_t shared_races = scheduler.races_found(), global = races ? races->races_found() : 0;
    if (shared_races + global > 0 && session.options().races_are_errors)
      throw race_error(session, first_race, shared_races, global);
  }

 private:
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

  /// `races_found` shared-memory and `global_found` global-memory racing accesses; the report's
  /// races from `first_race` on are this launch's (each element once).
  Error race_error(const Session& session, size_t first_race, int64_t races_found,
                   int64_t global_found) const {
    const std::vector<SimRace>& races = session.report().races;
    std::string list;
    constexpr size_t kListed = 8;
    for (size_t i = first_race; i < races.size() && i < first_race + kListed; ++i)
      list += "\n  " + races[i].str();
    if (races.size() > first_race + kListed)
      list += cat("\n  ... and ", races.size() - first_race - kListed, " more");
    if (list.empty()) list = "\n  (on elements already reported by an earlier launch)";
    const std::string shared_what =
        cat(races_found,
            " accesses touched an element that another thread of the block wrote (or read, for a write) "
            "with no barrier in between");
    const std::string global_what =
        cat(global_found,
            " accesses touched an element of a global buffer that another thread (of this block or another) "
            "wrote (or read, for a write) with no barrier or grid flag signal/wait ordering the two");
    const std::string shared_fix =
        "Put a barrier between the write and the other threads' accesses (or let the lowering insert one)";
    const std::string global_fix = cat(
        "Blocks are ordered only by grid flags: the writing block passes a barrier after all its threads' "
        "writes, then one thread calls ",
        intrinsic::flag_signal, "; the reading block waits with ", intrinsic::flag_wait,
        " before it reads, and threads other than the waiter read only after a barrier that follows the "
        "wait. "
        "An element that two blocks write needs one writer (or a later kernel to combine them); within a "
        "block, put a barrier between the accesses");
    const std::string off = "; with SimOptions::races_are_errors = false the simulator only reports races";
    if (global_found == 0)
      return Error(cat("kernel ", kernel_->name, " has shared-memory data races: ", shared_what, ":", list,
                       "\n", shared_fix, off));
    if (races_found == 0)
      return Error(cat("kernel ", kernel_->name, " has global-memory data races: ", global_what, ":", list,
                       "\n", global_fix, off));
    return Error(cat("kernel ", kernel_->name, " has shared- and global-memory data races: in shared memory ",
                     shared_what, "; in global memory ", global_what, ":", list, "\n", shared_fix, ". ",
                     global_fix, off));
  }

  std::unique_ptr<KernelInfo> kernel_;
  WarpStmtPtr body_;
};

}  // namespace loom::sim
