// The shared-memory bank model of NVIDIA GPUs since Maxwell: how many wavefronts one warp-wide
// access instruction takes with 32 banks of 4 bytes, counted the way Nsight Compute counts them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace loom::sim {

inline constexpr int kWarpSize = 32;
inline constexpr int kNumBanks = 32;
inline constexpr int kBankBytes = 4;

/// One lane's part of an access instruction: `width` bytes (the instruction's width) from byte
/// `offset` of the buffer. A buffer's base address is a multiple of 4 bytes, and moving every
/// address by whole words renames banks without changing any count, so offsets are enough.
struct LaneAccess {
  int lane = 0;
  int64_t offset = 0;
};

struct Wavefronts {
  int64_t total = 0;
  int64_t ideal = 0;
};

/// The wavefronts of one instruction in which each listed lane accesses `width` bytes (1, 2, 4,
/// 8 or 16). The warp is served in phases: one of 32 lanes for widths up to 4 bytes, two half-warps
/// for 8 bytes, four quarter-warps for 16 bytes. A phase takes as many wavefronts as the largest
/// number of distinct words it touches in one bank (lanes reading one word share it: a broadcast);
/// the ideal is one wavefront per phase that has any lane. `accesses` are sorted by lane.
inline Wavefronts count_wavefronts(const LaneAccess* accesses, size_t count, int width) {
  // 32, 16 or 8 lanes per phase: lane >> phase_shift is the phase.
  const int phase_shift = width <= kBankBytes ? 5 : (width == 8 ? 4 : 3);
  Wavefronts result;
  uint64_t words[kWarpSize * 2];  // a phase touches at most 32 words (plus unaligned spill-over)
  size_t begin = 0;
  while (begin < count) {
    const int phase = accesses[begin].lane >> phase_shift;
    size_t end = begin;
    int n = 0;
    for (; end < count && accesses[end].lane >> phase_shift == phase; ++end) {
      const uint64_t first = static_cast<uint64_t>(accesses[end].offset) / kBankBytes;
      const uint64_t last = static_cast<uint64_t>(accesses[end].offset + width - 1) / kBankBytes;
      for (uint64_t w = first; w <= last && n < kWarpSize * 2; ++w) words[n++] = w;
    }
    // Fast path, the common case: every bank holds at most one distinct word.
    uint64_t word_in_bank[kNumBanks];
    uint32_t used = 0;
    bool conflict = false;
    for (int i = 0; i < n && !conflict; ++i) {
      const unsigned bank = static_cast<unsigned>(words[i] % kNumBanks);
      if (!(used >> bank & 1u)) {
        used |= 1u << bank;
        word_in_bank[bank] = words[i];
      } else {
        conflict = word_in_bank[bank] != words[i];
      }
    }
    int64_t phase_wavefronts = 1;
    if (conflict) {
      std::sort(words, words + n);
      n = static_cast<int>(std::unique(words, words + n) - words);
      int per_bank[kNumBanks] = {};
      for (int i = 0; i < n; ++i) {
        int& c = per_bank[words[i] % kNumBanks];
        phase_wavefronts = std::max<int64_t>(phase_wavefronts, ++c);
      }
    }
    result.total += phase_wavefronts;
    result.ideal += 1;
    begin = end;
  }
  return result;
}

inline Wavefronts count_wavefronts(const std::vector<LaneAccess>& accesses, int width) {
  return count_wavefronts(accesses.data(), accesses.size(), width);
}

}  // namespace loom::sim
