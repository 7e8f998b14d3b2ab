// What the GPU simulator reports about a run: its kernel launches (with their modelled timing),
// shared-memory bank statistics per buffer (as Nsight Compute counts them), data races and reads of
// never-written shared memory; and the options a simulation runs with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "loom/runtime/sim_clock_model.hpp"
#include "loom/support/error.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom {

/// How a simulation treats what it finds.
struct SimOptions {
  /// A data race (on shared memory, or on global memory between threads of one launch: see
  /// SimRace) ends the launch that has it with a loom::Error listing the races
  /// (after the launch has run to its end, so the message can list all of them). Off: the races
  /// are only recorded in the report. interpret() always runs with the default, on.
  bool races_are_errors = true;
  /// The GPU whose SMs the blocks of a launch are dispatched onto (see SimLaunch): its SM count
  /// and the per-SM limits that decide how many blocks are resident at once. H100 by default;
  /// GpuDeviceSpec::a100() or for_compute_capability(cc, sms) model others.
  GpuDeviceSpec device = GpuDeviceSpec::h100();
  /// Registers per thread for the occupancy. 0: estimated from the kernel as 32 (indices,
  /// addresses, loop counters) plus one per 4 bytes of its constant-size "local" allocations (the
  /// accumulators a thread keeps in registers), at most the device's 255. ptxas's figure, where
  /// known, is better.
  int registers_per_thread = 0;
  /// The cycles each class of instruction costs a warp.
  SimClockModel clock;
};

/// A launch dimension (grid or block), x fastest.
struct SimDim3 {
  /// The extents in x, y and z.
  /// @{
  int64_t x = 1, y = 1, z = 1;
  /// @}
  /// x * y * z.
  int64_t count() const { return x * y * z; }
  /// "(x, y, z)".
  std::string str() const { return cat("(", x, ", ", y, ", ", z, ")"); }
  friend bool operator==(const SimDim3&, const SimDim3&) = default;
};

/// One execution of a kernel region, and its timing in the simulator's clock model
/// (runtime/sim_clock_model.hpp): blocks are dispatched in linear block-index order (x fastest)
/// onto the SMs of SimOptions::device, at most blocks_per_sm resident on each, every block into
/// the slot that frees earliest. Cycles are model cycles, not a prediction of a real GPU's time.
struct SimLaunch {
  std::string kernel;  ///< "<function>_kernel<i>", i counting the regions in program order
  /// The launch's grid (blocks) and block (threads) dimensions.
  /// @{
  SimDim3 grid, block;
  /// @}
  /// Warps per block, (threads + 31) / 32.
  int64_t warps_per_block = 0;
  int64_t shared_bytes_per_block = 0;  ///< the most shared memory one block had allocated at once

  std::string device;            ///< the modelled GPU (GpuDeviceSpec::name)
  int sms = 0;                   ///< its SM count
  int blocks_per_sm = 0;         ///< resident blocks per SM (gpu_device.hpp's occupancy)
  std::string limiter;           ///< what limits blocks_per_sm: "threads", "registers", ...
  int registers_per_thread = 0;  ///< the figure the occupancy used (SimOptions::registers_per_thread)
  /// The makespan: the cycle the last block ends, the launch starting at cycle 0. It is the
  /// critical path of the launch through dispatch, barriers and grid-flag waits.
  int64_t simulated_cycles = 0;
  /// Per block, by linear block index: the cycle it was dispatched and the cycle its last warp
  /// finished.
  /// @{
  std::vector<int64_t> block_start, block_end;
  /// @}
  /// The largest of the blocks' own busy cycles: end - start less the cycles it spent waiting on
  /// grid flags. The makespan of a perfectly balanced, never-waiting schedule is at least this.
  int64_t busiest_block_cycles = 0;
  int64_t flag_wait_cycles = 0;  ///< all blocks' cycles spent waiting on grid flags, summed
};

/// Nsight Compute's shared-memory counters for one buffer and direction: an access instruction
/// is one warp-wide Load or Store; it takes one wavefront per phase when conflict-free (the ideal)
/// and more when lanes of one phase touch different words of one bank.
struct SimBankStats {
  /// The shared-memory access instructions, the wavefronts they took, and the wavefronts they would have
  /// taken without bank conflicts.
  /// @{
  int64_t instructions = 0;
  int64_t wavefronts = 0;
  int64_t ideal_wavefronts = 0;
  /// @}
  /// l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}: wavefronts beyond the ideal.
  int64_t conflicts() const { return wavefronts - ideal_wavefronts; }
  /// Adds another buffer's (or access's) counts.
  SimBankStats& operator+=(const SimBankStats& o) {
    instructions += o.instructions;
    wavefronts += o.wavefronts;
    ideal_wavefronts += o.ideal_wavefronts;
    return *this;
  }
};

/// A shared buffer (one Allocate node of a kernel) and what the simulation saw of it.
struct SimSharedBuffer {
  std::string name;    ///< the allocated variable's name
  std::string kernel;  ///< the kernel that allocates it
  /// Bank statistics of the loads from and stores to the buffer.
  /// @{
  SimBankStats load, store;
  /// @}
  int64_t uninitialized_reads = 0;  ///< every read of a never-written element, all blocks
};

/// A simulated thread: its block's index and its index within the block.
struct SimThread {
  /// The thread's block index in the grid, and its index within the block.
  /// @{
  SimDim3 block, thread;
  /// @}
  /// "thread (x, y, z) of block (x, y, z)".
  std::string str() const { return cat("thread ", thread.str(), " of block ", block.str()); }
};

/// Whether a race's two accesses were a read and a write, or two writes.
enum class SimRaceKind { ReadWrite, WriteWrite };

/// The memory a race is on.
enum class SimMemorySpace { Shared, Global };

/// Two threads touched one element, at least one of them writing, with nothing ordering the two
/// accesses. In shared memory: two threads of one block between the same two barriers. In global
/// memory: two threads of one launch, of the same block between the same two barriers or of two
/// blocks with no grid flag signal/wait ordering them. `first` made the earlier access, `second`
/// the later one; in a read/write race `second_wrote` says which of them wrote.
struct SimRace {
  /// The buffer and the kernel.
  /// @{
  std::string buffer, kernel;
  /// @}
  /// Index in the buffer's element type (the 4-byte word for float32); in a global buffer, in the
  /// smallest element type the kernel accesses it with.
  int64_t element = 0;
  int64_t byte_offset = 0;  ///< of that element
  /// Read/write or write/write.
  SimRaceKind kind = SimRaceKind::ReadWrite;
  /// The two threads, the earlier access first.
  /// @{
  SimThread first, second;
  /// @}
  /// For a read/write race: whether the second access was the write.
  bool second_wrote = true;
  /// Shared (within one block) or global memory.
  SimMemorySpace space = SimMemorySpace::Shared;
  /// A sentence describing the race, for messages.
  std::string str() const {
    const bool first_wrote = kind == SimRaceKind::WriteWrite || !second_wrote;
    if (space == SimMemorySpace::Global) {
      return cat("global-memory ", kind == SimRaceKind::ReadWrite ? "read/write" : "write/write", " race on ",
                 buffer, "[", element, "] (byte ", byte_offset, ") in kernel ", kernel, ": ", first.str(),
                 first_wrote ? " wrote" : " read", " it, then ", second.str(),
                 second_wrote ? " wrote" : " read", " it, with no barrier or flag signal/wait between");
    }
    return cat(kind == SimRaceKind::ReadWrite ? "read/write" : "write/write", " race on ", buffer, "[",
               element, "] (byte ", byte_offset, ") in kernel ", kernel, ": thread ", first.thread.str(),
               first_wrote ? " wrote" : " read", " it, then thread ", second.thread.str(),
               second_wrote ? " wrote" : " read", " it, in block ", second.block.str(),
               " with no barrier between");
  }
};

/// The first read of a shared element that no thread of the block had written yet: it returns
/// the poison the simulator fills fresh shared memory with (SimReport::kSharedPoisonWord).
struct SimUninitializedRead {
  /// The shared buffer and the kernel.
  /// @{
  std::string buffer, kernel;
  /// @}
  /// The element read, in the buffer's element type.
  int64_t element = 0;
  /// Its byte offset.
  int64_t byte_offset = 0;
  /// The thread that read it.
  SimThread reader;
};

/// What build(..., Target::cuda_sim()) observed while running a kernel: each launch, each shared buffer's
/// bank conflicts, and the races and uninitialised reads it found. Print it with to_string().
struct SimReport {
  /// Every 4-byte word of fresh shared memory holds this: a quiet NaN as float32 (and as float64
  /// with both halves), 2147475117 as int32; easy to spot in a dump.
  static constexpr uint32_t kSharedPoisonWord = 0x7FFFDEADu;

  /// Each kernel launch, in order.
  std::vector<SimLaunch> launches;
  std::vector<SimSharedBuffer> shared_buffers;            ///< in order of first launch
  std::vector<SimRace> races;                             ///< each (buffer, element) once
  std::vector<SimUninitializedRead> uninitialized_reads;  ///< each (buffer, element) once

  /// The statistics of the shared buffer called `name` (the first, when kernels reuse names).
  const SimSharedBuffer& buffer(const std::string& name) const {
    for (const SimSharedBuffer& b : shared_buffers)
      if (b.name == name) return b;
    std::string known;
    for (const SimSharedBuffer& b : shared_buffers) known += (known.empty() ? "" : ", ") + b.name;
    throw Error(cat("the simulation report has no shared buffer '", name,
                    "'; it has: ", known.empty() ? "none" : known));
  }

  /// A readable multi-line summary: the launches, the shared buffers' conflicts, the races and uninitialised
  /// reads.
  std::string to_string() const {
    std::ostringstream os;
    os << "GPU simulation: " << launches.size() << " launch" << (launches.size() == 1 ? "" : "es") << "\n";
    for (const SimLaunch& l : launches) {
      os << "  " << l.kernel << ": grid " << l.grid.str() << ", block " << l.block.str() << " ("
         << l.block.count() << " threads, " << l.warps_per_block << " warps), shared memory "
         << l.shared_bytes_per_block << " B per block\n";
      if (l.blocks_per_sm > 0) {
        os << "    on " << l.device << ": " << l.blocks_per_sm << " blocks per SM (limited by " << l.limiter
           << ") on " << l.sms << " SMs, " << l.simulated_cycles << " simulated cycles (busiest block "
           << l.busiest_block_cycles << ", flag waits " << l.flag_wait_cycles << ")\n";
      }
    }
    if (!shared_buffers.empty()) {
      os << "shared-memory bank conflicts (32 banks of 4 bytes):\n";
      size_t width = 6;
      for (const SimSharedBuffer& b : shared_buffers) width = std::max(width, b.name.size());
      os << "  " << std::left << std::setw(static_cast<int>(width)) << "buffer" << std::right
         << "  op     instructions    wavefronts         ideal     conflicts  ways\n";
      for (const SimSharedBuffer& b : shared_buffers) {
        for (int op = 0; op < 2; ++op) {
          const SimBankStats& s = op == 0 ? b.load : b.store;
          os << "  " << std::left << std::setw(static_cast<int>(width)) << b.name << std::right << "  "
             << (op == 0 ? "load " : "store") << std::setw(15) << s.instructions << std::setw(14)
             << s.wavefronts << std::setw(14) << s.ideal_wavefronts << std::setw(14) << s.conflicts()
             << std::setw(6) << std::fixed << std::setprecision(1)
             << (s.ideal_wavefronts
                     ? static_cast<double>(s.wavefronts) / static_cast<double>(s.ideal_wavefronts)
                     : 0.0)
             << "\n";
        }
      }
    }
    constexpr size_t kListed = 20;
    os << "data races: " << (races.empty() ? "none" : std::to_string(races.size())) << "\n";
    for (size_t i = 0; i < races.size() && i < kListed; ++i) os << "  " << races[i].str() << "\n";
    if (races.size() > kListed) os << "  ... and " << races.size() - kListed << " more\n";
    int64_t uninitialized = 0;
    for (const SimSharedBuffer& b : shared_buffers) uninitialized += b.uninitialized_reads;
    os << "reads of uninitialized shared memory: "
       << (uninitialized ? std::to_string(uninitialized) : "none");
    if (uninitialized) os << " (" << uninitialized_reads.size() << " distinct elements)";
    os << "\n";
    for (size_t i = 0; i < uninitialized_reads.size() && i < kListed; ++i) {
      const SimUninitializedRead& r = uninitialized_reads[i];
      os << "  " << r.buffer << "[" << r.element << "] (byte " << r.byte_offset << ") in kernel " << r.kernel
         << ", first read by " << r.reader.str() << "\n";
    }
    if (uninitialized_reads.size() > kListed)
      os << "  ... and " << uninitialized_reads.size() - kListed << " more\n";
    return os.str();
  }
};

}  // namespace loom
