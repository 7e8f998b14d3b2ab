// Runs the blocks of one launch on the modelled GPU: dispatched in linear block-index order onto the
// SMs' residency slots (as many per SM as the occupancy allows), each into the slot that frees
// earliest; blocks suspended on a grid flag hold their slot while others run; a state where every
// resident block waits and none can be dispatched is a deadlock, reported as such.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "loom/ir/grid_flags.hpp"
#include "loom/sim/block_context.hpp"
#include "loom/sim/sm_slots.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom::sim {

class GridScheduler {
 public:
  GridScheduler(const LaunchShape& launch, const WarpStmt& body)
      : launch_(launch), options_(launch.session.options()), pool_(launch, body) {}

  /// Runs every block and fills the timing of `record` (see SimLaunch).
  void run(SimLaunch& record) {
    const int64_t blocks = launch_.grid.count();
    record.block_start.assign(static_cast<size_t>(blocks), 0);
    record.block_end.assign(static_cast<size_t>(blocks), 0);
    if (!launch_.kernel.has_flag_wait) {
      // No block ever suspends: one context runs them all, each to its end, in dispatch order.
      BlockContext& c = pool_.take();
      for (int64_t b = 0; b < blocks; ++b) {
        dispatch(c, b);
        c.run_warps();
        finish(c, record);
      }
    } else {
      run_suspendable(record);
    }
    if (!slots_.configured()) configure();
    record.device = options_.device.name;
    record.sms = slots_.sms();
    record.blocks_per_sm = slots_.per_sm();
    record.limiter = limiter_;
    record.registers_per_thread = registers_;
  }

  /// What all block contexts saw: data races, the most shared memory one block held.
  int64_t races_found() const {
    int64_t n = 0;
    for (const auto& c : pool_.all()) n += c->state.races_found;
    return n;
  }
  int64_t peak_shared_bytes() const {
    int64_t peak = 0;
    for (const auto& c : pool_.all()) peak = std::max(peak, c->state.peak_shared_bytes);
    return peak;
  }

 private:
  /// Blocks are coroutines: a block that waits on an unset flag suspends, holding its slot, and
  /// the next block is dispatched (or a suspended one whose flag is now set resumes: those go
  /// first, lowest block index first, so slots free as early as they can).
  void run_suspendable(SimLaunch& record) {
    const int64_t blocks = launch_.grid.count();
    std::vector<BlockContext*> suspended;
    int64_t next = 0;
    std::exception_ptr error;
    try {
      while (true) {
        BlockContext* ready = nullptr;
        for (BlockContext* c : suspended)
          if (c->state.waiting.satisfied() && (!ready || c->linear < ready->linear)) ready = c;
        if (ready) {
          suspended.erase(std::find(suspended.begin(), suspended.end(), ready));
          resume(*ready, suspended, record);
          continue;
        }
        if (next < blocks) {
          if (next > 0 && !slots_.configured()) configure();
          if (slots_.has_free()) {
            BlockContext& c = pool_.take();
            dispatch(c, next++);
            c.coroutine->start([&c] { c.run_warps(); });
            resume(c, suspended, record);
            continue;
          }
        }
        if (suspended.empty()) break;
        if (!slots_.configured()) configure();
        throw deadlock_error(suspended, next);
      }
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {  // outside the handler: unwinding the suspended blocks' stacks throws and catches
      for (BlockContext* c : suspended) c->coroutine->cancel();
      std::rethrow_exception(error);
    }
  }

  void resume(BlockContext& c, std::vector<BlockContext*>& suspended, SimLaunch& record) {
    if (!c.coroutine->resume()) {
      suspended.push_back(&c);
      return;
    }
    finish(c, record);
    pool_.give(c);
  }

  void dispatch(BlockContext& c, int64_t linear) {
    if (linear > 0 && !slots_.configured()) configure();
    const SimDim3 g = launch_.grid;
    const SimDim3 index{linear % g.x, linear / g.x % g.y, linear / (g.x * g.y)};
    const auto [slot, cycle] = slots_.take();
    c.begin(index, linear, slot, cycle);
  }

  void finish(BlockContext& c, SimLaunch& record) {
    const int64_t end = c.end();
    record.block_start[static_cast<size_t>(c.linear)] = c.start;
    record.block_end[static_cast<size_t>(c.linear)] = end;
    record.simulated_cycles = std::max(record.simulated_cycles, end);
    record.busiest_block_cycles =
        std::max(record.busiest_block_cycles, end - c.start - c.state.waited_cycles);
    record.flag_wait_cycles += c.state.waited_cycles;
    slots_.release(c.slot, end);
  }

  /// The occupancy of the launch's blocks, from the shared memory the kernel allocates
  /// statically or the first block(s) allocated, whichever is more.
  void configure() {
    const GpuDeviceSpec& device = options_.device;
    const int64_t threads = launch_.block.count();
    const int64_t shared = std::max(launch_.kernel.static_shared_bytes, peak_shared_bytes());
    Occupancy o;
    if (options_.registers_per_thread > 0) {
      registers_ = options_.registers_per_thread;
      o = occupancy(device, BlockResources{threads, registers_, shared});
      if (o.by_registers == 0) {
        int fits = std::min(registers_, device.max_registers_per_thread);
        while (fits > 1 && occupancy(device, BlockResources{threads, fits, 0}).by_registers == 0) --fits;
        throw Error(cat("kernel ", launch_.kernel.name, ": SimOptions::registers_per_thread = ", registers_,
                        " does not fit a block of ", threads, " threads on one SM of ", device.name, " (",
                        device.registers_per_sm, " registers, at most ", device.max_registers_per_thread,
                        " per thread): give at most ", fits,
                        " registers per thread, or 0 to let the simulator estimate them"));
      }
    } else {
      // The estimate (SimOptions::registers_per_thread): capped, as ptxas caps what it gives a
      // thread (spilling the rest), so that at least one block fits.
      registers_ = static_cast<int>(
          std::min<int64_t>(32 + launch_.kernel.local_words, device.max_registers_per_thread));
      o = occupancy(device, BlockResources{threads, registers_, shared});
      while (o.by_registers == 0 && registers_ > 8) {
        registers_ -= 8;
        o = occupancy(device, BlockResources{threads, registers_, shared});
      }
    }
    limiter_ = o.limiter;
    int per_sm = o.blocks_per_sm;
    if (per_sm == 0) {  // too much shared memory: CUDA refuses the launch; the model runs one
      per_sm = 1;
      limiter_ += " (a block does not fit on an SM; modelled as 1 per SM)";
    }
    slots_.configure(device.sms, per_sm);
  }

  Error deadlock_error(std::vector<BlockContext*> waiting, int64_t dispatched) const {
    std::sort(waiting.begin(), waiting.end(),
              [](const BlockContext* a, const BlockContext* b) { return a->linear < b->linear; });
    std::string list;
    constexpr size_t kListed = 8;
    for (size_t i = 0; i < waiting.size() && i < kListed; ++i) {
      const BlockContext& c = *waiting[i];
      const FlagWait& w = c.state.waiting;
      list += cat(i ? "; " : "", "block ", c.state.index.str(), " (thread ", w.thread, ") waits until ",
                  *w.flags, "[", w.index, "] == ", w.value, " (it is ", w.seen(), ")");
    }
    if (waiting.size() > kListed) list += cat("; and ", waiting.size() - kListed, " more blocks wait");
    const int64_t blocks = launch_.grid.count(), resident = slots_.total();
    const std::string why =
        dispatched < blocks
            ? cat("so the grid's other ", blocks - dispatched, " blocks (of ", blocks,
                  ") can never be dispatched: the grid is larger than what is co-resident (", resident,
                  " blocks), and the flags waited on are signalled only by blocks not yet dispatched")
            : cat("and every other block of the grid has finished: no block signals the flags waited on");
    return Error(cat(
        "kernel ", launch_.kernel.name, " deadlocks on grid flags (", intrinsic::flag_wait, "): ", list,
        ". Every resident block waits and none can run: ", waiting.size(), " blocks are resident on ",
        options_.device.name, " (", slots_.sms(), " SMs x ", slots_.per_sm(), " blocks per SM, limited by ",
        limiter_, "), ", why, ". On a GPU this launch would hang. Launch at most ", resident,
        " blocks (fewer blocks than SMs x occupancy: a persistent grid whose blocks loop over the work), "
        "or make every block wait only on flags that lower-numbered blocks signal; if a flag is never "
        "signalled, check the index and value of its ",
        intrinsic::flag_signal, " and that the flags start at 0"));
  }

  const LaunchShape& launch_;
  const SimOptions& options_;
  BlockPool pool_;
  SmSlots slots_;
  std::string limiter_;
  int registers_ = 0;
};

}  // namespace loom::sim
