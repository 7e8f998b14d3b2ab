// What an NVIDIA GPU can hold at once: its SM count and the per-SM limits on resident threads,
// blocks, registers and shared memory, and the occupancy (resident blocks per SM) of a kernel
// with a given block size, register count and shared memory. The persistent Stream-K grid is sized
// from it when no driver can be asked, and the timed simulator dispatches blocks by it.
//
// The numbers are those of the CUDA C Programming Guide's table of compute capabilities and the
// occupancy calculator's allocation rules (registers per warp in units of 256, warps allocated per
// SM sub-partition, 1 KB of shared memory reserved per block from sm_80 on). They are a model:
// where a driver is present, cuOccupancyMaxActiveBlocksPerMultiprocessor is the authority.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "loom/support/error.hpp"

namespace loom {

/// One GPU model: how many SMs it has and what one SM can hold.
struct GpuDeviceSpec {
  /// The model's name, e.g. "A100".
  std::string name;
  int compute_capability = 80;  ///< major * 10 + minor
  /// Streaming multiprocessors.
  int sms = 108;
  /// Resident threads per SM.
  int max_threads_per_sm = 2048;
  /// Resident blocks per SM.
  int max_blocks_per_sm = 32;
  /// 32-bit registers per SM.
  int registers_per_sm = 65536;
  /// The most registers one thread may use.
  int max_registers_per_thread = 255;
  int register_unit = 256;  ///< registers are given to a warp in multiples of this
  int sub_partitions = 4;   ///< an SM's warp schedulers; each owns a quarter of the registers
  int64_t shared_bytes_per_sm = 164 * 1024;         ///< the largest shared-memory carveout
  int64_t max_shared_bytes_per_block = 163 * 1024;  ///< with the dynamic-shared opt-in
  int64_t shared_reserved_per_block = 1024;         ///< the driver's own, sm_80 and newer
  int shared_unit = 128;                            ///< shared memory is given in multiples of this
  double clock_ghz = 1.41;                          ///< boost clock, to turn cycles into time

  /// The most resident warps per SM (max_threads_per_sm / 32).
  int max_warps_per_sm() const { return max_threads_per_sm / 32; }

  /// NVIDIA A100 SXM4 (sm_80): 108 SMs.
  static GpuDeviceSpec a100() {
    GpuDeviceSpec d;
    d.name = "A100-SXM4";
    return d;
  }

  /// NVIDIA H100 SXM5 (sm_90): 132 SMs, 228 KB of shared memory per SM.
  static GpuDeviceSpec h100() {
    GpuDeviceSpec d;
    d.name = "H100-SXM5";
    d.compute_capability = 90;
    d.sms = 132;
    d.shared_bytes_per_sm = 228 * 1024;
    d.max_shared_bytes_per_block = 227 * 1024;
    d.clock_ghz = 1.98;
    return d;
  }

  /// The per-SM limits of compute capability `cc` (major * 10 + minor, from sm_70 on) with `sms`
  /// SMs: what a GPU found through the driver, or named by a target's architecture, holds.
  static GpuDeviceSpec for_compute_capability(int cc, int sms) {
    if (cc < 70)
      throw Error(cat("no GPU description for compute capability ", cc / 10, ".", cc % 10,
                      ": Loom models sm_70 and newer"));
    if (sms <= 0) throw Error(cat("a GPU description needs a positive SM count, not ", sms));
    GpuDeviceSpec d = cc >= 90 ? h100() : a100();
    d.name = cat("sm_", cc, " with ", sms, " SMs");
    d.compute_capability = cc;
    d.sms = sms;
    if (cc >= 120) {  // GeForce/workstation Blackwell
      d.max_threads_per_sm = 1536;
      d.shared_bytes_per_sm = 100 * 1024;
      d.max_shared_bytes_per_block = 99 * 1024;
    } else if (cc >= 90) {  // Hopper, data-center Blackwell
    } else if (cc == 80 || cc == 87) {
    } else if (cc >= 86) {  // GA10x, AD10x
      d.max_threads_per_sm = 1536;
      d.max_blocks_per_sm = cc == 89 ? 24 : 16;
      d.shared_bytes_per_sm = 100 * 1024;
      d.max_shared_bytes_per_block = 99 * 1024;
    } else if (cc >= 75) {  // Turing
      d.max_threads_per_sm = 1024;
      d.max_blocks_per_sm = 16;
      d.shared_bytes_per_sm = 64 * 1024;
      d.max_shared_bytes_per_block = 64 * 1024;
      d.shared_reserved_per_block = 0;
    } else {  // Volta
      d.shared_bytes_per_sm = 96 * 1024;
      d.max_shared_bytes_per_block = 96 * 1024;
      d.shared_reserved_per_block = 0;
    }
    return d;
  }
};

/// What one block of a kernel asks of an SM.
struct BlockResources {
  /// Threads per block.
  int64_t threads = 0;
  int registers_per_thread = 0;  ///< ptxas's count; 0 when unknown (then registers do not limit)
  int64_t shared_bytes = 0;      ///< static and dynamic together
};

/// How many blocks of a kernel one SM holds at once, and by each limit.
struct Occupancy {
  /// Resident blocks per SM: the least of the limits below.
  int blocks_per_sm = 0;
  /// Blocks per SM each limit alone allows (threads, registers, shared memory, the block limit).
  /// @{
  int by_threads = 0, by_registers = 0, by_shared = 0, by_blocks = 0;
  /// @}
  /// "threads", "registers", "shared memory" or "blocks": the limit that decides (the first of
  /// them in this order when several give the same count; a resource the block does not use
  /// is never the limiter).
  std::string limiter;

  /// A sentence for messages: the blocks per SM, the limiter and what each limit allows.
  std::string str() const {
    return cat(blocks_per_sm, " blocks per SM (limited by ", limiter, ": threads allow ", by_threads,
               ", registers ", by_registers, ", shared memory ", by_shared, ", blocks ", by_blocks, ")");
  }
};

namespace detail {
inline int64_t round_up(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }
}  // namespace detail

/// The occupancy of blocks asking `block` of an SM of `device`. 0 blocks per SM means the block
/// does not fit at all (too many threads, registers or bytes of shared memory).
inline Occupancy occupancy(const GpuDeviceSpec& device, const BlockResources& block) {
  if (block.threads <= 0) throw Error(cat("occupancy of a block of ", block.threads, " threads"));
  Occupancy o;
  const int64_t warps = (block.threads + 31) / 32;
  o.by_threads = static_cast<int>(device.max_warps_per_sm() / warps);
  o.by_blocks = device.max_blocks_per_sm;

  if (block.registers_per_thread <= 0) {
    o.by_registers = o.by_blocks;
  } else if (block.registers_per_thread > device.max_registers_per_thread) {
    o.by_registers = 0;
  } else {
    // Each warp gets its registers in units of `register_unit` from one sub-partition's file.
    const int64_t per_warp = detail::round_up(int64_t{block.registers_per_thread} * 32, device.register_unit);
    const int64_t warps_per_partition = device.registers_per_sm / device.sub_partitions / per_warp;
    o.by_registers = static_cast<int>(warps_per_partition * device.sub_partitions / warps);
  }

  if (block.shared_bytes <= 0) {
    o.by_shared = o.by_blocks;
  } else if (block.shared_bytes > device.max_shared_bytes_per_block) {
    o.by_shared = 0;
  } else {
    const int64_t per_block =
        detail::round_up(block.shared_bytes + device.shared_reserved_per_block, device.shared_unit);
    o.by_shared = static_cast<int>(device.shared_bytes_per_sm / per_block);
  }

  o.blocks_per_sm = std::min({o.by_threads, o.by_registers, o.by_shared, o.by_blocks});
  // A resource the block does not use (unknown registers, no shared memory) limits nothing.
  o.limiter = o.blocks_per_sm == o.by_threads                                       ? "threads"
              : block.registers_per_thread > 0 && o.blocks_per_sm == o.by_registers ? "registers"
              : block.shared_bytes > 0 && o.blocks_per_sm == o.by_shared            ? "shared memory"
                                                                                    : "blocks";
  return o;
}

}  // namespace loom
